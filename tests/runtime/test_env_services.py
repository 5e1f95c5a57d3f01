"""Declarative services: every operation kind, key generation, schema validation, errors,
snapshots."""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchpack.runtime.env import ServiceState, ToolError
from benchpack.specs.plan import PlanService

TASK_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "priority": {"type": "string", "enum": ["urgent", "normal", "low"]},
        "done": {"type": "boolean", "default": False},
        "notes": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


def service(**tables: Any) -> ServiceState:
    ops = [
        {"name": "list", "kind": "list", "table": "tasks", "filter_fields": ["done", "priority"]},
        {"name": "get", "kind": "get", "table": "tasks"},
        {"name": "search", "kind": "search", "table": "tasks", "search_fields": ["title"]},
        {"name": "search_all", "kind": "search", "table": "tasks"},
        {"name": "create", "kind": "create", "table": "tasks",
         "fields": ["title", "priority", "notes"], "required": ["title"]},
        {"name": "create_any", "kind": "create", "table": "tasks"},
        {"name": "update", "kind": "update", "table": "tasks",
         "fields": ["title", "priority", "done"]},
        {"name": "delete", "kind": "delete", "table": "tasks"},
    ]
    default = {"tasks": {"key": "id", "id_prefix": "T-", "row_schema": TASK_SCHEMA, "rows": [
        {"id": "T-101", "title": "Restock insulin fridge", "priority": "normal", "done": False,
         "notes": "", "tags": ["fridge"]},
        {"id": "T-102", "title": "Call Mr Brennan about INR", "priority": "urgent",
         "done": False, "notes": "warfarin + fluconazole", "tags": ["inr", "warfarin"]},
        {"id": "T-103", "title": "Order labels", "priority": "low", "done": True, "notes": "",
         "tags": []},
    ]}}
    return ServiceState(PlanService.model_validate(
        {"name": "todo", "tables": tables or default, "operations": ops}))


def test_list_filters_and_limit() -> None:
    s = service()
    assert [r["id"] for r in s.call("list", {})] == ["T-101", "T-102", "T-103"]
    assert [r["id"] for r in s.call("list", {"done": False})] == ["T-101", "T-102"]
    assert [r["id"] for r in s.call("list", {"priority": "URGENT"})] == ["T-102"]
    assert [r["id"] for r in s.call("list", {"done": True, "priority": "low"})] == ["T-103"]
    assert s.call("list", {"done": "false"}) == []  # booleans only equal booleans
    assert len(s.call("list", {"limit": 2})) == 2
    with pytest.raises(ToolError, match="cannot filter `tasks` on `title`; filterable fields: "
                                        "done, priority"):
        s.call("list", {"title": "x"})
    with pytest.raises(ToolError, match="limit"):
        s.call("list", {"limit": 0})


def test_get_by_key_and_unknown_key_lists_known_ids() -> None:
    s = service()
    assert s.call("get", {"id": "T-102"})["title"] == "Call Mr Brennan about INR"
    with pytest.raises(ToolError) as err:
        s.call("get", {"id": "T-9"})
    assert str(err.value) == "no row of `tasks` with id T-9; known ids: T-101, T-102, T-103"
    with pytest.raises(ToolError, match="give `id`"):
        s.call("get", {})
    with pytest.raises(ToolError, match="does not take `title`"):
        s.call("get", {"id": "T-101", "title": "x"})


def test_search() -> None:
    s = service()
    assert [r["id"] for r in s.call("search", {"query": "brennan"})] == ["T-102"]
    assert [r["id"] for r in s.call("search", {"query": "INR brennan"})] == ["T-102"]
    # `search` only looks at `title`; `search_all` at every string field, lists included
    assert s.call("search", {"query": "fluconazole"}) == []
    assert [r["id"] for r in s.call("search_all", {"query": "fluconazole"})] == ["T-102"]
    assert [r["id"] for r in s.call("search_all", {"query": "fridge"})] == ["T-101"]
    assert len(s.call("search_all", {"query": "r", "limit": 1})) == 1
    with pytest.raises(ToolError, match="query"):
        s.call("search", {"query": "  "})


def test_create_generates_keys_validates_and_fills_defaults() -> None:
    s = service()
    row = s.call("create", {"title": "P-1042 – INR check", "priority": "urgent"})
    assert row == {"id": "T-104", "title": "P-1042 – INR check", "priority": "urgent",
                   "done": False}
    assert s.call("create", {"title": "another"})["id"] == "T-105"
    assert s.rows("tasks")[-1]["id"] == "T-105"
    with pytest.raises(ToolError, match="needs `title`"):
        s.call("create", {"priority": "low"})
    with pytest.raises(ToolError, match="does not take `done`"):
        s.call("create", {"title": "x", "done": True})
    with pytest.raises(ToolError, match="does not take `id`"):
        s.call("create", {"title": "x", "id": "T-999"})
    with pytest.raises(ToolError, match="not valid for `tasks`: priority: 'asap' is not one of"):
        s.call("create", {"title": "x", "priority": "asap"})
    assert len(s.rows("tasks")) == 5  # failed creates change nothing
    # fields omitted: any schema field, the key included
    assert s.call("create_any", {"id": "T-500", "title": "own key"})["id"] == "T-500"
    with pytest.raises(ToolError, match="already has a row with id T-500"):
        s.call("create_any", {"id": "T-500", "title": "dup"})
    with pytest.raises(ToolError, match="does not take `colour`"):
        s.call("create_any", {"title": "x", "colour": "red"})
    assert s.call("create", {"title": "after"})["id"] == "T-501"


def test_key_generation_variants() -> None:
    padded = service(tasks={"key": "id", "id_prefix": "MSG-", "rows": [
        {"id": "MSG-0871"}, {"id": "MSG-0872"}]})
    assert padded.call("create_any", {"title": "x"})["id"] == "MSG-0873"
    fresh_prefix = service(tasks={"key": "id", "id_prefix": "EVT-90", "rows": [
        {"id": "EVT-301"}]})
    assert fresh_prefix.call("create_any", {})["id"] == "EVT-901"
    ints = service(tasks={"key": "id", "rows": [{"id": 7, "title": "a"}, {"id": 9}]})
    assert ints.call("create_any", {"title": "b"})["id"] == 10
    assert ints.call("get", {"id": "9"})["id"] == 9
    inferred = service(tasks={"key": "id", "rows": [{"id": "N-3"}, {"id": "N-12"}]})
    assert inferred.call("create_any", {})["id"] == "N-13"
    empty = service(tasks={"key": "id", "rows": []})
    assert empty.call("create_any", {"x": 1})["id"] == "1"


def test_update_merges_and_validates() -> None:
    s = service()
    row = s.call("update", {"id": "T-101", "done": True})
    assert row["done"] is True and row["title"] == "Restock insulin fridge"
    assert s.call("get", {"id": "T-101"})["done"] is True
    with pytest.raises(ToolError, match="no row of `tasks` with id T-404"):
        s.call("update", {"id": "T-404", "done": True})
    with pytest.raises(ToolError, match="nothing to update"):
        s.call("update", {"id": "T-101"})
    with pytest.raises(ToolError, match="does not take `notes`"):
        s.call("update", {"id": "T-101", "notes": "x"})
    with pytest.raises(ToolError, match="done: 'yes' is not of type 'boolean'"):
        s.call("update", {"id": "T-101", "done": "yes"})
    assert s.call("get", {"id": "T-101"})["done"] is True


def test_delete_and_no_key_reuse() -> None:
    s = service()
    assert s.call("create", {"title": "temp"})["id"] == "T-104"
    assert s.call("delete", {"id": "T-104"}) == {"deleted": "T-104"}
    with pytest.raises(ToolError, match="known ids: T-101, T-102, T-103"):
        s.call("delete", {"id": "T-104"})
    assert s.call("create", {"title": "next"})["id"] == "T-105"
    # a resumed run restores the counters too
    snap, counters = s.snapshot(), s.counters()
    s.call("delete", {"id": "T-105"})
    s2 = service()
    s2.restore(snap, counters)
    s2.call("delete", {"id": "T-105"})
    assert s2.call("create", {"title": "again"})["id"] == "T-106"


def test_unknown_operation() -> None:
    with pytest.raises(ToolError, match="has no operation `archive`; it has: create"):
        service().call("archive", {})


def test_results_are_copies_and_state_snapshots_round_trip() -> None:
    s = service()
    got = s.call("get", {"id": "T-101"})
    got["title"] = "mutated"
    s.call("list", {})[0]["tags"].append("mutated")
    assert s.call("get", {"id": "T-101"})["title"] == "Restock insulin fridge"
    assert s.rows("tasks")[0]["tags"] == ["fridge"]
    s.call("create", {"title": "new"})
    snap = json.loads(json.dumps(s.snapshot()))
    assert [r["id"] for r in snap["tasks"]] == ["T-101", "T-102", "T-103", "T-104"]
    fresh = service()
    fresh.restore(snap)
    assert fresh.snapshot() == snap
    assert fresh.call("create", {"title": "next"})["id"] == "T-105"
    with pytest.raises(KeyError):
        s.rows("nope")


def test_fixture_rows_are_not_shared_between_runs() -> None:
    spec = PlanService.model_validate({"name": "todo", "tables": {"tasks": {
        "key": "id", "rows": [{"id": "a", "n": 1}]}}, "operations": [
        {"name": "update", "kind": "update", "table": "tasks"}]})
    first = ServiceState(spec)
    first.call("update", {"id": "a", "n": 2})
    assert ServiceState(spec).rows("tasks") == [{"id": "a", "n": 1}]
    assert spec.tables["tasks"].rows == [{"id": "a", "n": 1}]
