"""`bench`: thin commands over the library. Exceptions map to exit codes in one place (`main`).

Exit codes: 0 success, 1 the pack (or run) has errors, or a user or environment error (every
`benchpack.runtime.errors.BenchError`), 2 usage errors, 3 internal errors (anything else: a
bug), 4 a run stopped by `--max-cost`, 130 interrupted.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import itertools
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import click

from benchpack.runtime.errors import BenchError

from . import process
from .params import PackErrors

COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("pack", "init"),
    "validate": ("pack", "validate"),
    "compile": ("pack", "compile_cmd"),
    "graph": ("pack", "graph"),
    "schema": ("pack", "schema"),
    "run": ("run", "run"),
    "rejudge": ("run", "rejudge"),
    "report": ("store", "report"),
    "ratings": ("store", "ratings"),
    "query": ("store", "query"),
    "export": ("store", "export"),
    "views": ("store", "views"),
    "import": ("imports", "import_cmd"),  # issue 13: released benchmarks and results
    "import-run": ("imports", "import_run_cmd"),
    "compare": ("compare", "compare"),  # issue 15: paired comparisons
    "mcp": ("mcp", "mcp_cmd"),  # issue 14: a session's tools over MCP
    "merge": ("merge", "merge_cmd"),  # issue 16: stores of runs made separately
    "view": ("view", "view"),  # issue 17: the viewer over the store
    "parity": ("parity", "parity"),  # issue 23: an imported benchmark against its own code
    "serve-a2a": ("serve_a2a", "serve_a2a"),  # issue 26: benchpack as an A2A assessor
}
"""Command name → (module of this package, attribute). A command's module is imported when
the command is looked up (to run it, or by `bench --help`, which lists them all): importing
all twenty at start cost every command ~30-40 ms (`parity`'s tempfile, `view`'s socket,
`compare`…), a third of what `bench query` may take beside the click + rich floor."""

SUBCOMMANDS: dict[str, tuple[tuple[str, str], ...]] = {
    "export": (("exports", "tau2_submission"),),  # issue 23: τ²-bench's leaderboard submission
}
"""Subcommands kept in a module of their own, added to their group when it is loaded."""


def _option_values(args: list[str], name: str) -> list[str]:
    found = [b for a, b in itertools.pairwise(args) if a == name]
    return found + [a.split("=", 1)[1] for a in args if a.startswith(name + "=")]


@contextlib.contextmanager
def _redacted_console(args: list[str]) -> Iterator[None]:
    """Everything printed, by click or rich, with every configured secret masked (a provider
    error or an agent may echo a key into a message the CLI prints)."""
    from benchpack.runtime.redact import RedactingStream, Redactor

    redactor = Redactor.from_environment(extra_names=_option_values(args, "--api-key-env"),
                                         urls=_option_values(args, "--api-base"))
    if not redactor:
        yield
        return
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (RedactingStream(s, redactor) for s in streams)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams


class _Bench(click.Group):
    """The `bench` group: a file-system error on a path (an output directory that cannot be
    created, a file where a directory should be) is the user's to fix, in every command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["benchpack.argv"] = list(args)  # as typed: `bench run` repeats it on Ctrl-C
        return super().parse_args(ctx, args)

    def main(self, args: Any = None, *a: Any, **kw: Any) -> Any:
        argv = list(args) if args is not None else sys.argv[1:]
        with _redacted_console(argv):  # error messages are printed here, after `invoke`
            return super().main(argv, *a, **kw)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(_load(*COMMANDS[cmd_name]), cmd_name)
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.filename is None:  # not about a path: a bug (or a broken pipe, see `main`)
                raise
            why = ("exists and is not a directory" if isinstance(exc, FileExistsError)
                   else exc.strerror or str(exc))
            raise PackErrors(f"✗ {exc.filename}: {why} (check the path and its permissions)"
                             ) from None


@click.group(cls=_Bench, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="benchpack", prog_name="bench")
def cli() -> None:
    """benchpack: compile task packs into session plans, run them against agents, report."""
    if os.environ.get("NO_COLOR"):  # https://no-color.org: set and not empty, colour off
        # every subcommand's context inherits it, so `click.style` text is printed plain even
        # on a terminal (rich reads NO_COLOR itself)
        click.get_current_context().color = False


def _load(module: str, attribute: str) -> click.Command:
    command: click.Command = getattr(importlib.import_module(f"{__package__}.{module}"),
                                     attribute)
    if isinstance(command, click.Group):
        for sub_module, sub in SUBCOMMANDS.get(command.name or "", ()):
            command.add_command(getattr(importlib.import_module(f"{__package__}.{sub_module}"),
                                        sub))
    return command


def main() -> None:
    process.OWNED = True
    code: Any = 0
    try:
        with _redacted_console(sys.argv[1:]):
            _main()
    except SystemExit as exc:
        code = exc.code
    finally:
        # The interpreter's last garbage collection walks every object still alive (a plan of
        # 1,000 sessions, the run's rows): 0.3-0.4 s after a `bench run` has finished and
        # said so. Frozen objects are skipped; they are freed by reference counting as before,
        # and nothing of ours relies on a cycle being collected at exit.
        gc.freeze()
    if _we_are_the_program():
        _leave(code)
    sys.exit(code)


def _we_are_the_program() -> bool:
    """The `bench` script or `python -m benchpack.cli`: nobody called `main()` expecting to
    go on after it (a wrapper's `finally`, a profiler) when it exits the process at once."""
    program = sys.modules.get("__main__")
    spec = getattr(program, "__spec__", None)
    if spec is not None and spec.name == "benchpack.cli.__main__":
        return True
    return os.path.splitext(os.path.basename(getattr(program, "__file__", "") or ""))[0] == \
        "bench"


def _leave(code: Any) -> None:
    """Exit with `code` once the `atexit` handlers have run (they stop child processes, flush
    logs, remove temporary files) and the output is flushed, skipping the interpreter's
    teardown: freeing every module and object one by one took 12 ms after each command had
    said everything it had to say. The normal way out whenever a non-daemon thread still runs
    (the interpreter would wait for it) or the code is not a number."""
    others = [t for t in threading.enumerate()
              if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others or not (code is None or isinstance(code, int)):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe: nothing more can be said
            stream.flush()
    os._exit(code or 0)


def _main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except BenchError as exc:  # a command that did not catch it: still the user's to fix
        click.echo(f"✗ {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # a bug in benchpack, not in the pack: say so plainly
        from benchpack.specs.plugins import PluginError  # here: `--help` stays light

        if isinstance(exc, PluginError):  # an installed protocol plug-in's fault
            click.echo(f"✗ {exc}", err=True)
            sys.exit(1)
        click.echo(f"internal error: {type(exc).__name__}: {exc}\n"
                   "this is a benchpack bug; please report it with the pack that triggers it",
                   err=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
