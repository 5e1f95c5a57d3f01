"""`bench`: thin commands over the library, one module per command family:

- `main.py`   the `bench` group, exit-code mapping, `main` (the console entry point)
- `params.py` options shared by commands, `PackErrors`
- `pack.py`   init, validate, compile, graph, schema
- `run.py`    run, rejudge and the run summary
- `store.py`  report, ratings, query, export, views
- `imports.py` import, import-run; `exports.py` export tau2-submission (a subcommand of export)

Exit codes: 0 success, 1 the pack (or run) has errors, 2 usage errors, 3 internal errors.
Every heavy import (compiler, runtime, reports, pydantic, DuckDB, rich) happens inside a
command, so `bench --help` starts fast.
"""

from .main import cli, main
from .params import PackErrors

__all__ = ["PackErrors", "cli", "main"]
