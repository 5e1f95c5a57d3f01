"""Values written into SQL text rather than bound: DuckDB binds a Python list parameter at
~0.2 ms an element, and each bound parameter makes it try `import pandas` twice (issue 31), so
reports name run ids, plan sessions and keys as literals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def literal(value: Any) -> str:
    """`value` as a DuckDB string literal (a quote doubled is its only escape)."""
    return "'" + str(value).replace("'", "''") + "'"


def literals(values: Iterable[Any]) -> str:
    """`values` as comma-separated string literals, for `IN (…)`."""
    return ", ".join(map(literal, values))
