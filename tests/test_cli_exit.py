"""How the `bench` process ends (`cli.main._leave`): the exit code, the output and the `atexit`
handlers exactly as a normal exit gives them, without the interpreter's teardown (12 ms after
every command had finished); the normal way out whenever a non-daemon thread still runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

_RUN = """
import atexit, sys, threading, time
atexit.register(lambda: print("atexit handler ran", file=sys.stderr, flush=True))
if sys.argv[1] == "thread":
    def late():
        time.sleep(0.3)
        print("non-daemon thread finished", flush=True)
    threading.Thread(target=late).start()
sys.argv = ["bench", *sys.argv[2:]]
from benchpack.cli.main import main
main()
print("not reached: main() exits", flush=True)
"""


def _bench(*args: str, mode: str = "plain") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _RUN, mode, *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(("args", "code", "said"), [
    (("--version",), 0, "bench, version"),
    (("validate", "/nonexistent/pack"), 1, "no such file or directory"),
    (("no-such-command",), 2, "No such command"),
])
def test_exit_code_output_and_atexit_handlers(args: tuple[str, ...], code: int,
                                              said: str) -> None:
    done = _bench(*args)
    assert done.returncode == code, done.stderr
    assert said in done.stdout + done.stderr
    assert done.stderr.rstrip().endswith("atexit handler ran")
    assert "not reached" not in done.stdout


def test_a_running_non_daemon_thread_is_waited_for() -> None:
    done = _bench("--version", mode="thread")
    assert done.returncode == 0, done.stderr
    assert "non-daemon thread finished" in done.stdout
    assert "atexit handler ran" in done.stderr


def test_a_closed_pipe_is_not_an_error() -> None:
    """`bench … | head -1`: the reader went away; exit 0 as before, no traceback."""
    proc = subprocess.Popen([sys.executable, "-c", _RUN, "plain", "--help"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0
    assert "Traceback" not in err and "atexit handler ran" in err
