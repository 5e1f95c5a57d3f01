"""Options declared once and shared by the commands, the user-error exception every command
raises, and small text helpers."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click


class PackErrors(click.ClickException):
    exit_code = 1

    def show(self, file: Any = None) -> None:  # diagnostics were already printed
        if self.message:
            click.echo(self.message, err=True)


# options declared once, shared by commands
pack_argument = click.argument("pack", type=click.Path(path_type=Path), default=".")
strict_option = click.option("--strict", is_flag=True,
                             help="Treat lint warnings as errors.")
format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]),
                             default="text", show_default=True,
                             help="Diagnostics as text lines or JSON.")
graph_grader_option = click.option(
    "--graph-grader", type=click.Choice(["auto", "llm", "match"]), default="auto",
    show_default=True, help="Knowledge-graph grading: LLM coverage judge or normalised matching "
                            "(auto: match with --judge rules).")
quiet_option = click.option("--quiet", is_flag=True, help="No progress bar.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
_LLM_CLIENT_OPTIONS = (
    click.option("--max-per-model", type=click.IntRange(1, 1024), default=8, show_default=True,
                 help="Concurrent requests per model endpoint."),
    click.option("--rpm", multiple=True, metavar="MODEL=N",
                 help="Requests-per-minute limit for a model (repeatable)."),
    click.option("--api-base", help="Base URL of an OpenAI-compatible server for litellm models."),
    click.option("--api-key-env", metavar="VAR",
                 help="Environment variable holding the API key (the key is never stored)."),
    click.option("--timeout", type=click.FloatRange(0, min_open=True), default=120.0,
                 show_default=True,
                 help="Per-request timeout for LLM calls, seconds."),
    click.option("--max-retries", type=click.IntRange(0, 20), default=4, show_default=True,
                 help="Retries of retryable provider errors (429, 5xx, timeouts)."),
    click.option("--no-cache", is_flag=True, help="Do not read or write the response cache."),
    click.option("--cache-dir", type=click.Path(path_type=Path), default=Path(".bench-cache"),
                 show_default=True),
)


def llm_client_options(f: Any) -> Any:
    """The LLM client options every command that calls models shares (`client_settings`)."""
    for option in reversed(_LLM_CLIENT_OPTIONS):
        f = option(f)
    return f


def client_settings(max_per_model: int, rpm: tuple[str, ...], api_base: str | None,
                     api_key_env: str | None, timeout: float, max_retries: int, no_cache: bool,
                     cache_dir: Path) -> dict[str, Any]:
    """`llm_client_options` as `runner.ClientOptions` fields."""
    limits = {}
    for item in rpm:
        model, _, n = item.rpartition("=")
        try:
            limits[model] = float(n)
        except ValueError:
            limits[model] = 0.0
        if not model or not limits[model] > 0:  # also rejects nan
            raise click.UsageError(f"--rpm expects MODEL=N with N > 0, got `{item}`")
    if api_key_env and not os.environ.get(api_key_env):  # else every call fails, after retries
        raise click.UsageError(f"--api-key-env {api_key_env}: that environment variable is "
                               "not set (or empty)")
    return {"max_concurrent_per_model": max_per_model, "requests_per_minute": limits,
            "api_base": api_base, "api_key_env": api_key_env, "timeout_s": timeout,
            "max_retries": max_retries, "use_cache": not no_cache, "cache_dir": cache_dir}


db_option = click.option("--db", type=click.Path(path_type=Path), default=Path("bench.duckdb"),
                         show_default=True, help="The run store (DuckDB file).")
wait_option = click.option("--wait", "wait_s", type=float, default=30.0, show_default=True,
                           help="Seconds to wait for a running `bench run` to let go of the "
                                "store.")


def emit(text: str, out: Path | None) -> None:
    """A rendered report: to `out` (its folders made; a one-line error if it cannot be
    written), else to stdout."""
    if out is None:
        click.echo(text, nl=False)  # the console is masked as a whole (`main`)
        return
    from benchpack.specs.secrets import Redactor

    # a store written by an older benchpack, or under other variables, may hold a secret of
    # this environment: masked on the way out like everything else (`specs.secrets`)
    text = Redactor.from_environment()(text)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PackErrors(f"✗ -o {out}: cannot write ({exc.strerror or exc})") from None
    click.echo(f"wrote {out}", err=True)


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
