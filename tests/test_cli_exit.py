"""How the `bench` process ends (`cli.main._leave`): the exit code, the output and the `atexit`
handlers exactly as a normal exit gives them, without the interpreter's teardown (12 ms after
every command had finished); the normal way out whenever a non-daemon thread still runs, and
whenever `main()` was called by another program (its `finally` must run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
try:
    main()
finally:  # skipped: the program is `bench` itself, it leaves at once (no teardown)
    print("teardown would run here", file=sys.stderr, flush=True)
"""


def _script(tmp: Path, name: str = "bench") -> Path:
    """`_RUN` as a script file: named `bench` it is the program, as the console script is."""
    path = tmp / name
    path.write_text(_RUN, encoding="utf-8")
    return path


def _bench(tmp: Path, *args: str, mode: str = "plain") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(_script(tmp)), mode, *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "code", "said"), [
    (("--version",), 0, "bench, version"),
    (("validate", "/nonexistent/pack"), 1, "no such file or directory"),
    (("no-such-command",), 2, "No such command"),
])
def test_exit_code_output_and_atexit_handlers(tmp_path: Path, args: tuple[str, ...],
                                              code: int, said: str) -> None:
    done = _bench(tmp_path, *args)
    assert done.returncode == code, done.stderr
    assert said in done.stdout + done.stderr
    assert done.stderr.rstrip().endswith("atexit handler ran")
    assert "teardown would run here" not in done.stderr


def test_a_running_non_daemon_thread_is_waited_for(tmp_path: Path) -> None:
    done = _bench(tmp_path, "--version", mode="thread")
    assert done.returncode == 0, done.stderr
    assert "non-daemon thread finished" in done.stdout
    assert "atexit handler ran" in done.stderr


def test_a_closed_pipe_is_not_an_error(tmp_path: Path) -> None:
    """`bench … | head -1`: the reader went away; exit 0 as before, no traceback."""
    proc = subprocess.Popen([sys.executable, str(_script(tmp_path)), "plain", "--help"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0
    assert "Traceback" not in err and "atexit handler ran" in err


def test_a_program_calling_main_gets_control_back(tmp_path: Path) -> None:
    """Another program's `main()` call (a wrapper measuring memory, a profiler) exits the
    normal way: SystemExit with the code, its `finally` runs."""
    wrapper = tmp_path / "measure.py"
    wrapper.write_text("import sys\nfrom benchpack.cli import main\nsys.argv = ['bench', "
                       "'validate', '/nonexistent/pack']\ntry:\n    main()\nexcept "
                       "SystemExit as exc:\n    print('exit code', exc.code)\n    raise\n"
                       "finally:\n    print('finally ran')\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(wrapper)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["exit code 1", "finally ran"]


def test_the_installed_script_and_module_exit_with_the_code() -> None:
    script = Path(sys.executable).with_name("bench")
    for argv in ([str(script)], [sys.executable, "-m", "benchpack.cli"]):
        done = subprocess.run([*argv, "validate", "/nonexistent/pack"], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 1 and "no such file or directory" in done.stdout + done.stderr
