"""A model that answers with one huge tool-call argument: what `bench run` keeps of it, what
it costs, and that the run ends as it should (issue 27).

A local OpenAI-compatible endpoint answers every agent call with a `write_file` call whose
`content` argument is `--mb` megabytes, streamed in 1 MB chunks with chunked transfer encoding
(no Content-Length: the client cannot know the size before reading), so the endpoint itself
holds 1 MB at a time. `bench run` (a fresh process, the direct HTTP path) runs one
pharmacist-week session against it; the script reports the process's exit code, wall time
and peak RSS (`wait4`), what the store recorded (the session's status, error kind and error,
tool calls executed) and the store's size.

    python benchmarks/big_reply_bench.py --mb 2048     # the issue's 2 GB argument
    python benchmarks/big_reply_bench.py --mb 32       # what the smoke test runs

Targets: exit 1 (the session errored: the agent's error), the error names the limit
`model_reply_bytes`, no tool call executed, peak RSS under 1 GB whatever `--mb` (exit 1 here
when missed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 1 << 20


def _head(mb: int) -> tuple[bytes, bytes]:
    """The reply's JSON before and after the argument's `content` string."""
    before = ('{"id":"chatcmpl-big","object":"chat.completion","created":0,"model":"big-model",'
              '"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",'
              '"content":null,"tool_calls":[{"id":"call_big","type":"function","function":'
              '{"name":"write_file","arguments":"{\\"path\\": \\"big.txt\\", \\"content\\": \\"')
    after = ('\\"}"}}]}}],"usage":{"prompt_tokens":10,"completion_tokens":' + str(mb * 250_000)
             + ',"total_tokens":' + str(mb * 250_000 + 10) + "}}")
    return before.encode(), after.encode()


def serve(mb: int) -> tuple[str, Any]:
    """Start the endpoint on a free port in a thread; returns its base URL and a stopper."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}
    before, after = _head(mb)
    filler = b"A" * CHUNK

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                for part in (before, *([filler] * mb), after):
                    writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                    await writer.drain()
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client stopped reading (the limit) or left
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        box["port"] = server.sockets[0].getsockname()[1]
        box["server"] = server
        ready.set()
        async with server:
            await server.serve_forever()

    def run() -> None:
        with contextlib.suppress(asyncio.CancelledError):  # `stop`: serve_forever ends so
            loop.run_until_complete(main())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)

    def stop() -> None:
        loop.call_soon_threadsafe(box["server"].close)

    return f"http://127.0.0.1:{box['port']}/v1", stop


def measure(mb: int, work: Path) -> dict[str, Any]:
    """Run one session against the endpoint; what happened and what it cost."""
    plan = work / "plan"
    if not plan.exists():
        done = subprocess.run([sys.executable, "-m", "benchpack.cli", "compile",
                               str(ROOT / "taskpacks" / "pharmacist-week"), "-o", str(plan)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr)
    db = work / f"big-{mb}.duckdb"
    db.unlink(missing_ok=True)
    url, stop = serve(mb)
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-not-a-key"}
    env.pop("BENCH_LITELLM_ONLY", None)
    started = time.monotonic()
    with open(work / "stderr.txt", "wb") as err_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchpack.cli", "run", str(plan), "--agent",
             "litellm:openai/big-model", "--api-base", url, "--simulator", "rules", "--judge",
             "rules", "--session", "inr-clinic-review", "--db", str(db), "--quiet",
             "--no-cache", "--max-retries", "0", "--timeout", "600"],
            stdout=subprocess.DEVNULL, stderr=err_file, env=env, cwd=work)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak RSS
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    stop()
    err = (work / "stderr.txt").read_bytes()
    rss_mb = usage.ru_maxrss / 1024
    row: dict[str, Any] = {"mb": mb, "exit": code, "wall_s": round(wall, 2),
                           "peak_rss_mb": round(rss_mb, 1),
                           "stderr_last": err.decode("utf-8", "replace").strip()
                           .splitlines()[-1:] or [""]}
    if db.exists():
        import duckdb

        con = duckdb.connect(str(db), read_only=True)
        try:
            row["session"] = con.execute("SELECT status, error_kind, left(error, 300) FROM "
                                         "sessions").fetchall()
            row["tool_calls"] = con.execute("SELECT count(*) FROM tool_calls").fetchone()[0]
            row["run_status"] = con.execute("SELECT status FROM runs").fetchall()
        finally:
            con.close()
        row["store_mb"] = round(db.stat().st_size / 2**20, 2)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=2048, help="the argument's size in MB")
    ap.add_argument("--keep", type=Path, help="work directory to keep (default: a temporary one)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="big-reply-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        row = measure(args.mb, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(row, indent=2, default=str))
    ok = (row["exit"] == 1 and row.get("tool_calls") == 0 and row["peak_rss_mb"] < 1024
          and any("model_reply_bytes" in str(s) for s in row.get("session", [])))
    print("target met" if ok else "TARGET MISSED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
