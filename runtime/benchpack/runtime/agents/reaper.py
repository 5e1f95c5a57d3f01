"""The first process of a harness's process group: it outlives nothing it started.

    python -I -S reaper.py LIFELINE_FD -- harness argv…

Run by `cmd:` and `cmd2:` as the leader of a new session (`start_new_session`), it spawns the
harness in its own process group and waits. The runner holds the write end of the lifeline
pipe; only the kernel closes it when the runner dies, even by SIGKILL, when no `finally` runs.
On that EOF the reaper SIGKILLs the whole group, harness and grandchildren. When the harness
exits, the reaper kills what is left in the group (children the harness left behind) and exits
with the harness's status (re-raising its signal), so the runner's messages stay about the
harness. A SIGTERM to the group reaches the harness; the reaper ignores it (the runner's
SIGKILL a second later reaches everyone), so a harness that ignores SIGTERM is never orphaned.

Standard library only and run with `-I -S` (no site, no benchpack import): it costs ~15 ms.
A grandchild that starts a session of its own (`setsid`, a daemon) leaves the group and is out
of reach; Linux only could chase it with a subreaper.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys


def _others_in_group(pgid: int) -> list[int]:
    """Processes of group `pgid` other than this one (Linux /proc; elsewhere none known)."""
    me = os.getpid()
    out: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: split after the last ')'
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: reaper.py LIFELINE_FD -- COMMAND…\n")
        return 2
    lifeline = int(argv[0])
    command = argv[2:]
    os.set_inheritable(lifeline, False)
    # a handler, not SIG_IGN: the harness (spawned below) must get the default back at exec
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as exc:
        sys.stderr.write(f"cannot start `{command[0]}`: {exc.strerror or exc}\n")
        return 127
    pgid = os.getpgid(0)
    status: int | None = None
    while status is None:
        try:
            ready, _, _ = select.select([lifeline], [], [], 0.05)
        except InterruptedError:
            ready = []
        if ready and not os.read(lifeline, 1):  # the runner is gone: take everything down
            os.killpg(pgid, signal.SIGKILL)
        try:
            done, status_ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            status = status_
    for other in _others_in_group(pgid):
        with contextlib.suppress(OSError):
            os.kill(other, signal.SIGKILL)
    if status is None:
        return 1
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    return os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
