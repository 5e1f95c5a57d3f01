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
