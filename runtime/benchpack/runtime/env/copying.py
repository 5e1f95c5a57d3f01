"""Deep copies of JSON-shaped data (tool arguments and results, service rows, tool specs)."""

from __future__ import annotations

import copy
from typing import Any, TypeVar, cast

T = TypeVar("T")

_ATOMIC: frozenset[type] = frozenset({str, int, float, bool, type(None)})


def copy_json(value: T) -> T:
    """A deep copy of dicts, lists and JSON scalars, several times faster than `copy.deepcopy`
    (no memo: JSON data has no cycles or shared parts); any other object inside is copied with
    `copy.deepcopy`, so the result is always independent of `value`."""
    return cast(T, _copy(value))


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if kind in _ATOMIC:
        return value
    return copy.deepcopy(value)
