"""Issue 31: the state check's canonical text is built row by row (each row dumped once); it
must be byte-for-byte the text of the first version (one dump of the sorted whole), or stored
hashes would change meaning between runs."""

from __future__ import annotations

import math
import random
from typing import Any

from benchpack.runtime.graders.state import _canonical_before, canonical, state_hash


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-5, 5)
    if kind == 2:
        return rng.choice([2.0, 0.1, -3.5, 1e300, 94.54999999999995, float(2 ** 60),
                           math.inf, math.nan])
    if kind in (3, 4, 5):
        return rng.choice(["a", "b", "é", "订单", "", "x\"y", "\n"])
    if kind in (6, 7):
        return {rng.choice(["k", "z", "a", "订", "1"]): _value(rng, depth + 1)
                for _ in range(rng.randrange(4))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def test_canonical_text_is_the_first_versions_byte_for_byte() -> None:
    rng = random.Random(31)
    for _ in range(300):
        state: dict[str, Any] = {}
        for s in rng.sample(["retail", "b", "航空"], rng.randrange(1, 4)):
            tables: dict[str, Any] = {}
            for t in rng.sample(["orders", "users", "a", "Z"], rng.randrange(0, 4)):
                tables[t] = [{"id": rng.randrange(6), "v": _value(rng)}
                             for _ in range(rng.randrange(6))]
            state[s] = tables if rng.random() < 0.9 else _value(rng)
        assert canonical(state) == _canonical_before(state)


def test_rows_are_a_set_and_integral_floats_are_integers() -> None:
    a = {"svc": {"t": [{"id": 1, "x": 2.0}, {"id": 2, "x": "y"}]}}
    b = {"svc": {"t": [{"x": "y", "id": 2}, {"x": 2, "id": 1}]}}
    assert state_hash(a) == state_hash(b)
    assert canonical(a) == '{"svc":{"t":[{"id":1,"x":2},{"id":2,"x":"y"}]}}'
    assert state_hash(a) != state_hash({"svc": {"t": [{"id": 1, "x": 2.5}]}})


def test_frozen_hashing_keeps_each_rows_text_and_gives_the_same_hash() -> None:
    # `frozen` (services' live rows, never changed in place): a row's text is kept by
    # identity; the hash is the unfrozen one, and a new row object is written out anew
    rows = [{"id": i, "price": float(i) / 4, "name": f"n{i}"} for i in range(50)]
    state = {"svc": {"t": rows}}
    assert state_hash(state, frozen=True) == state_hash(state)
    changed = {"svc": {"t": [*rows[:10], {**rows[10], "price": 99.5}, *rows[11:]]}}
    assert state_hash(changed, frozen=True) == state_hash(changed) != state_hash(state)
    assert state_hash(state, frozen=True) == state_hash(state)


def test_a_frozen_tables_text_is_kept_for_the_same_row_objects_only() -> None:
    """A `frozen` table's text is kept by the identities of its rows, in order: the same rows
    in another list (the next session's state) reuse it; a row replaced, removed or added,
    or the same rows reordered, is a new text equal to the unfrozen one."""
    from benchpack.runtime.graders import state as st

    rows = [{"id": i, "v": float(i) / 2} for i in range(40)]
    base = {"svc": {"t": list(rows)}}
    before = dict(st._TABLE_TEXT)
    assert canonical(base, frozen=True) == canonical(base)
    added = [k for k in st._TABLE_TEXT if k not in before]
    assert len(added) == 1 and st._TABLE_TEXT[added[0]][0] == tuple(rows)
    calls = {"n": 0}
    real = st._row_text

    def counted(row: Any) -> str:
        calls["n"] += 1
        return real(row)

    st._row_text = counted  # type: ignore[assignment]
    try:
        assert canonical({"svc": {"t": list(rows)}}, frozen=True) == canonical(base)
        assert calls["n"] == 0  # the same row objects: the kept text
        for other in ([*rows[:5], {**rows[5], "v": 7}, *rows[6:]], rows[1:],
                      [*rows, {"id": 99}], list(reversed(rows))):
            state = {"svc": {"t": other}}
            assert canonical(state, frozen=True) == canonical(state) == _canonical_before(state)
        assert calls["n"] > 0
        # the reordered rows give the same text as the original order (a table is a set)
        assert canonical({"svc": {"t": list(reversed(rows))}}, frozen=True) == canonical(base)
    finally:
        st._row_text = real  # type: ignore[assignment]
