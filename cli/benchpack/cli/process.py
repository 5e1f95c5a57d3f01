"""Whether this Python process is the `bench` command itself (the console script's `main`)
rather than a program calling the CLI in-process (tests through click's runner): only then may
a command change process-wide settings such as the garbage collector's."""

OWNED = False
