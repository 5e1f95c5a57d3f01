"""Several reports built together (`bench report A B …`, the HTML page of all of them): what
every report carries — the inventory line, the origin and comparability notes — is read once,
and each report comes out as it does alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from store_fixture import build_store

from benchpack.reports import comparability, inventory, origin
from benchpack.reports.api import ReportOptions, build_reports
from benchpack.reports.builtin import ReportContext

NAMES = ["summary", "status", "cost", "inventory", "judge-errors"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_store(tmp_path_factory.mktemp("page") / "bench.duckdb")


def test_common_notes_are_read_once_and_every_report_is_as_alone(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    alone = {name: build_reports(ReportOptions(db=db, names=[name], runs=["all"]))[0]
             for name in NAMES}
    calls = {"inventory": 0, "origin": 0, "mixed": 0}

    def counted(key: str, real):  # type: ignore[no-untyped-def]
        def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
            calls[key] += 1
            return real(*args, **kwargs)
        return spy

    monkeypatch.setattr(inventory, "inventory_note",
                        counted("inventory", inventory.inventory_note))
    monkeypatch.setattr(origin, "origin_notes", counted("origin", origin.origin_notes))
    monkeypatch.setattr(comparability, "mixed_note", counted("mixed", comparability.mixed_note))
    labels: list[int] = []
    real_rows = ReportContext.rows

    def rows(self: ReportContext, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        if "coalesce(s.agent, r.agent)" in sql:  # `ReportContext.labels`' query
            labels.append(1)
        return real_rows(self, sql, params)

    monkeypatch.setattr(ReportContext, "rows", rows)
    together = build_reports(ReportOptions(db=db, names=NAMES, runs=["all"]))
    assert calls == {"inventory": 1, "origin": 1, "mixed": 1}  # 4, 5 and 5 before
    # the summary, first, reads them in its own run query and the others take them (issue
    # 31's sixth pass; read by the first report that asked before, 5 times before that)
    assert labels == []
    build_reports(ReportOptions(db=db, names=NAMES[1:] + NAMES[:1], runs=["all"]))
    assert labels == [1]  # another report first: its query, once
    for res in together:
        assert res.notes == alone[res.name].notes
        assert [t.as_dicts() for t in res.tables] == [t.as_dicts()
                                                      for t in alone[res.name].tables]
    inventory_lines = {res.notes[-1] for res in together if res.name != "inventory"}
    assert len(inventory_lines) == 1 and next(iter(inventory_lines)).startswith("Inventory — ")
