"""Starting or restoring a service reads its tables' key prefixes once per table, not once per
row: a 4,000-row fixture took 5 s per session (16 M regex matches) and a 3-session × 2-repeat
run 36 s."""

from __future__ import annotations

from benchpack.runtime.env import ServiceState
from benchpack.specs.plan import PlanService


def test_prefix_is_read_once_per_table(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rows = [{"lid": f"L-{i}"} for i in range(1, 4001)]
    spec = PlanService.model_validate({"name": "crm", "tables": {"leads": {
        "key": "lid", "rows": rows}}, "operations": []})
    calls = {"n": 0}
    original = ServiceState._prefix

    def counted(self: ServiceState, table: str) -> str | None:
        calls["n"] += 1
        return original(self, table)

    monkeypatch.setattr(ServiceState, "_prefix", counted)
    state = ServiceState(spec)
    assert state.counters() == {"leads": 4000}
    state.restore(state.snapshot(), state.counters())
    assert calls["n"] <= 2, calls


def _counting_scans(monkeypatch) -> dict[str, int]:  # type: ignore[no-untyped-def]
    from benchpack.runtime.env import services

    calls = {"n": 0}
    original = services._key_facts

    def counted(*a, **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return original(*a, **kw)

    monkeypatch.setattr(services, "_key_facts", counted)
    monkeypatch.setattr(services, "_FACTS", {})  # what earlier tests' tables left
    return calls


def test_key_info_scans_a_table_again_only_when_its_keys_change(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A python tool call sends `key_info` to its worker: it scanned every row of every table
    (issue 31: ~2.5 s of the event loop in the τ² retail gold run). Now a table is scanned
    once for a given set of keys, whichever state holds them (every environment of a run
    starts from the same tables), and the answers are those of a fresh scan."""
    rows = [{"oid": f"#W{i:07d}"} for i in range(1, 1001)]
    spec = PlanService.model_validate({"name": "shop", "tables": {
        "orders": {"key": "oid", "rows": rows},
        "users": {"key": "uid", "rows": [{"uid": 1}, {"uid": 7}]}}, "operations": []})
    calls = _counting_scans(monkeypatch)
    state = ServiceState(spec)
    assert calls["n"] == 2  # one scan per table
    again = ServiceState(spec)  # the next session's environment: no scan
    first = state.key_info()
    assert again.key_info() == first and again.counters() == state.counters()
    for _ in range(50):
        assert state.key_info() == first
    state.restore(state.snapshot(), state.counters())  # equal keys, new objects
    assert calls["n"] == 2
    assert first["orders"] == {"key": "oid", "prefix": "#W", "int_keys": False, "width": 7,
                               "counter": 1000}
    assert first["users"] == {"key": "uid", "prefix": "", "int_keys": True, "width": 0,
                              "counter": 7}
    state.put_row("orders", {"oid": "#W0001500"})  # a new key: that table only, once
    info = state.key_info()
    assert calls["n"] == 3 and state.key_info() == info
    assert info["orders"]["counter"] == 1500 and info["users"] == first["users"]
    assert state._next_key("orders") == "#W0001501"
    state.put_row("orders", {"oid": "#W0001500", "note": "x"})  # same keys: no scan
    state.key_info()
    assert calls["n"] == 3
    state.delete_row("orders", "#W0001500")  # back to the first keys: known already
    # (the counter stays: a deleted row's key is never given again)
    assert state.key_info()["orders"] == {**first["orders"], "counter": 1500}
    assert calls["n"] == 3
    # between writes a state does not even read its keys again (`version` is unchanged)
    rows_read = {"n": 0}

    class Counting(dict):  # type: ignore[type-arg]
        def get(self, *a):  # type: ignore[no-untyped-def]
            rows_read["n"] += 1
            return super().get(*a)

    state._rows["users"] = [Counting(r) for r in state._rows["users"]]
    state.version += 1
    state.key_info()
    read = rows_read["n"]
    assert read >= 2
    for _ in range(20):
        state.key_info()
    assert rows_read["n"] == read


def test_keys_equal_in_python_but_of_another_type_are_scanned_again(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`1 == True == 1.0`: a table whose integer key became a boolean no longer numbers its
    keys as integers, exactly as a fresh scan says (the counter starts from 0, not 7)."""
    spec = PlanService.model_validate({"name": "s", "tables": {
        "t": {"key": "id", "rows": [{"id": 1}, {"id": 7}]}}, "operations": []})
    state = ServiceState(spec)
    assert state.counters() == {"t": 7} and state.key_info()["t"]["int_keys"]
    state.restore({"t": [{"id": True}, {"id": 7.0}]})
    fresh = ServiceState(PlanService.model_validate({"name": "s", "tables": {
        "t": {"key": "id", "rows": [{"id": True}, {"id": 7.0}]}}, "operations": []}))
    assert state.key_info() == fresh.key_info()
    assert state.counters() == fresh.counters() == {"t": 0}
    # a key Python cannot hash (pack data allows it) is worked out each time, not refused
    odd = ServiceState(PlanService.model_validate({"name": "s", "tables": {
        "t": {"key": "id", "rows": [{"id": ["L-1"]}, {"id": "L-4"}]}}, "operations": []}))
    assert odd.counters() == {"t": 4} and odd.key_info()["t"]["prefix"] == "L-"
