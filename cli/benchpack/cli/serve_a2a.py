"""`bench serve-a2a`: benchpack as an A2A assessor (issue 26): an A2A client names a compiled
plan under `--plans` and the agent to assess; the run's scores come back as an artifact
(`benchpack.runtime.a2a_assessor`). The A2A SDK loads only inside the command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .params import PackErrors, client_settings, db_option, llm_client_options


@click.command(name="serve-a2a")
@click.option("--plans", type=click.Path(path_type=Path, file_okay=False, exists=True),
              default=Path("."), show_default=True,
              help="Requests name plans (directories with plan.json) under this directory.")
@click.option("--simulator", metavar="URI",
              help="User simulator for every run [default: the pack's].")
@click.option("--judge", metavar="URI", help="Judge for every run [default: the pack's].")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="The port (0: any free port; the URL is printed).")
@click.option("--max-concurrency", type=click.IntRange(1, 256), default=4, show_default=True,
              help="Episode chains run at once within a run.")
@db_option
@llm_client_options
def serve_a2a(plans: Path, simulator: str | None, judge: str | None, host: str, port: int,
              max_concurrency: int, db: Path, **client: Any) -> None:
    """Serve benchpack as an A2A agent that assesses other A2A agents, until Ctrl-C. A
    request (the message's data part, or JSON text): {"plan": "build", "agent":
    "http://host:port", "sessions": [...], "alone": false, "repeats": 1}. Every run is stored
    in --db; the answer is the run's scores as an artifact."""
    import asyncio
    import signal

    try:
        from benchpack.runtime.a2a_assessor import AssessorConfig, serve
        from benchpack.runtime.run_types import RunOptions
    except ImportError as exc:  # pragma: no cover - a2a-sdk is a dependency
        raise PackErrors(f"✗ serve-a2a needs the A2A SDK ({exc})") from None

    base = RunOptions(plan="", agent="", simulator=simulator, judge=judge, db=db,
                      max_concurrency=max_concurrency, progress=False,
                      **client_settings(**client))
    config = AssessorConfig(plans=plans, base=base)

    def ready(url: str) -> None:
        click.echo(f"assessor at {url} (card: {url}/.well-known/agent-card.json); "
                   f"plans under {plans.resolve()}; runs stored in {db}", err=True)
        click.echo("Ctrl-C to stop", err=True)

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await serve(config, host, port, ready)

    try:
        asyncio.run(main())
    except OSError as exc:
        raise PackErrors(f"✗ cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    except (KeyboardInterrupt, asyncio.CancelledError):
        click.echo("stopped", err=True)
