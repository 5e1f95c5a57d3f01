"""A typed field of a released record (a ProactBench row, a τ² results file), read the same way by
the importers of the compiler (packs) and of the runtime (runs), which may not import each
other: a missing or mistyped field is one located error naming the field, what it must be,
what was found and which file the user should give."""

from __future__ import annotations

import json
from typing import Any


def need(obj: Any, key: str, kind: type | tuple[type, ...], where: str,
         error: type[Exception], release: str, *, optional: bool = False,
         json_path: bool = False) -> Any:
    """`obj[key]` when it is a `kind` (a bool is no int), else `error`: "`where`: field `key`
    must be …, found … (is this `release`?)", or, with `json_path` (`where` is a JSONPath into one
    JSON document, `file: $.info`), "`where`.`key`: must be …". `optional`: missing or null is
    None."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if value is None and optional:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join(k.__name__ for k in kinds)
        found = json.dumps(value, ensure_ascii=False, default=str)[:60]
        at = f"{where}.{key}:" if json_path else f"{where}: field `{key}`"
        raise error(f"{at} must be {names}, found {found} (is this {release}?)")
    return value


__all__ = ["need"]
