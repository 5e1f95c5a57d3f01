"""A harness writing 250 `log` lines of 10 MB each keeps the runner's peak memory bounded
(measured in the runner process itself: 140 MB; 2,140 MB when each kept log line is not cut to
`LOG_LINE_CHARS`). A line is read whole, up to `MAX_LINE_BYTES` (16 MiB), one at a time, and
only its first `LOG_LINE_CHARS` are kept."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from benchpack.compiler import compile_pack, init_pack

HARNESS = textwrap.dedent('''
    import json, sys
    big = "x" * (10 * 1024 * 1024)
    line = '{"type": "log", "message": "' + big + '"}\\n'
    first = True
    for raw in sys.stdin:
        msg = json.loads(raw)
        if msg["type"] == "end":
            break
        if msg["type"] in ("user", "event"):
            if first:
                for i in range(250):
                    sys.stdout.write('{"type": "log", "message": "line %d ' % i + big + '"}\\n')
                    sys.stdout.flush()
                first = False
            print(json.dumps({"type": "assistant", "content": "Done."}), flush=True)
''')

MEASURE = textwrap.dedent('''
    import resource, sys
    from benchpack.cli import main
    sys.argv = ["bench", *sys.argv[1:]]
    try:
        main()
    finally:
        # VmHWM: the peak of this process's own memory. ru_maxrss is not: Linux carries it
        # over exec from the parent's memory (pytest's, hundreds of MB late in a full run)
        try:
            with open("/proc/self/status") as f:
                peak = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
        except (OSError, StopIteration):
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        sys.stderr.write(f"\\nPEAK_KB {peak}\\n")
''')


@pytest.mark.slow
def test_250_log_lines_of_10_mb_keep_the_runner_small(tmp_path: Path) -> None:
    init_pack(tmp_path / "pack", "p")
    assert compile_pack(tmp_path / "pack", tmp_path / "build", use_cache=False).ok
    (tmp_path / "harness.py").write_text(HARNESS, encoding="utf-8")
    (tmp_path / "measure.py").write_text(MEASURE, encoding="utf-8")
    db = tmp_path / "bench.duckdb"
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "measure.py"), "run", str(tmp_path / "build"),
         "--agent", f"cmd:{sys.executable} {tmp_path / 'harness.py'}", "--session",
         "refill-triage", "--alone", "--db", str(db), "--quiet", "--cache-dir",
         str(tmp_path / "cache")],
        cwd=tmp_path, env={**os.environ}, capture_output=True, text=True, timeout=600)
    peak_kb = int(proc.stderr.rsplit("PEAK_KB", 1)[1].split()[0])
    assert proc.returncode == 0, proc.stderr[-2000:]
    con = duckdb.connect(str(db), read_only=True)
    try:
        extra = con.execute("SELECT status FROM sessions").fetchall()
    finally:
        con.close()
    assert extra and all(r[0] == "finished" for r in extra), extra
    assert peak_kb < 500 * 1024, f"runner peak RSS {peak_kb / 1024:.0f} MB"
