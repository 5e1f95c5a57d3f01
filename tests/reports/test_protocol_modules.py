"""The reports stage has one module per protocol (`benchpack.reports.protocols.<name>`): its
views and its built-in reports, registered in `PROTOCOL_REPORTS`, from which `views.VIEWS` and
`default_reports()` are built. The generic views and reports stay in topical modules."""

from __future__ import annotations

import pytest

from benchpack.reports import views
from benchpack.reports.model import BuiltinReport, View
from benchpack.reports.protocols import PROTOCOL_REPORTS, ProtocolReports
from benchpack.reports.registry import default_reports

# the order `bench views` and `bench report --list` (and the HTML page) have always shown;
# the split into protocol modules must not change it
HISTORIC_VIEWS = (
    "session_results", "alone_results", "intent_status_micro", "intent_status_macro",
    "dependency_ablation", "graph_results", "trigger_results", "trigger_by_type",
    "headline_sessions", "headline", "verified_results", "verified_tasks", "llm_usage",
    "run_lineage", "judge_labels", "judge_pairs", "human_consensus", "human_pairs",
    "judge_errors",
    "score_results", "instructed_results")  # added after the split (issue 12): new views go after the historic ones
HISTORIC_REPORTS = ("summary", "proc-comp", "status", "category", "ablation", "graph",
                    "interaction", "triggers", "pass-k", "cost", "judge-errors", "agreement",
                    "simulator", "inventory",  # issue 15: generic reports listed after agreement
                    "explain")  # issue 29: per-session "why this score", last

OWNED_VIEWS = {
    "intent_tracking": {"intent_status_micro", "intent_status_macro", "dependency_ablation"},
    "staged_disclosure": {"graph_results"},
    "trigger_rubric": {"trigger_results", "trigger_by_type"},
    "verified_outcome": {"verified_results", "verified_tasks", "score_results"},
    "instructed_user": {"instructed_results"},
}
OWNED_REPORTS = {
    "intent_tracking": {"proc-comp", "status", "category", "ablation"},
    "staged_disclosure": {"graph"},
    "trigger_rubric": {"triggers"},
    "verified_outcome": {"pass-k"},  # pass@k also counts instructed-user rewards
    "instructed_user": set(),
}


def test_each_protocol_declares_its_views_and_reports() -> None:
    assert {n: {v.name for v in p.views} for n, p in PROTOCOL_REPORTS.items()} == OWNED_VIEWS
    assert {n: {r.name for r in p.reports} for n, p in PROTOCOL_REPORTS.items()} \
        == OWNED_REPORTS


def test_views_and_reports_keep_their_order() -> None:
    assert views.VIEW_NAMES == HISTORIC_VIEWS
    assert tuple(default_reports().names()) == HISTORIC_REPORTS
    # `bench views` prints them in that order
    assert [line.split("`")[1] for line in views.describe().splitlines()] \
        == list(HISTORIC_VIEWS)


def test_the_registered_objects_are_the_ones_used() -> None:
    by_name = {v.name: v for v in views.VIEWS}
    reports = {r.name: r for r in default_reports().items()}
    for p in PROTOCOL_REPORTS.values():
        for v in p.views:
            assert by_name[v.name] == v
        for r in p.reports:
            assert reports[r.name] is r


def test_a_new_protocol_is_a_module_and_a_registry_entry(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Nothing else to edit: its views follow the existing ones (after the views they may
    read), its reports follow the existing ones."""
    extra = ProtocolReports(
        "a_future_protocol",
        views=(View("instruction_results", "doc", "SELECT * FROM session_results "
                    "WHERE protocol = 'a_future_protocol'"),),
        reports=(BuiltinReport("instructions", "Instructions", "d", lambda ctx: None),))  # type: ignore[arg-type, return-value]
    registry = {**PROTOCOL_REPORTS, extra.name: extra}
    assembled = views.assemble(registry)
    assert tuple(v.name for v in assembled) == (*HISTORIC_VIEWS, "instruction_results")
    monkeypatch.setattr("benchpack.reports.protocols.PROTOCOL_REPORTS", registry)
    assert tuple(default_reports().names()) == (*HISTORIC_REPORTS, "instructions")


def test_view_placeholders_are_filled_in_every_view() -> None:
    assert not any("{FULL}" in v.sql for v in views.VIEWS)
    # the protocol views read `session_results`, which carries the --alone filter
    assert "'alone'" in next(v for v in views.VIEWS if v.name == "session_results").sql
    assert views.assemble(PROTOCOL_REPORTS) == views.VIEWS
