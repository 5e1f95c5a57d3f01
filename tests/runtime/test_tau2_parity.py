"""`bench parity tau2` (issue 23, WP-T): the call generator and the comparator on our own
τ²-shaped fixtures, our half of the harness through the real tool path, and (with a τ²
checkout: BENCH_TAU2_CHECKOUT, BENCH_TAU2_PYTHON) the whole harness against τ²'s code."""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime.tau2bench.callgen import Call, CallMaker, Tool, gold_sequences
from benchpack.runtime.tau2bench.compare import (
    Declared,
    Report,
    compare_sequence,
    declare,
    diff,
    render,
    same,
)
from benchpack.specs.pytools import read_tools
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_bwrap, needs_tau2

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tau2"
TOOLS = Path(__file__).resolve().parents[2] / "compiler" / "benchpack" / "compiler" / \
    "importers" / "tau2_tools"
WRITES = {"cancel_pending_order", "exchange_delivered_order_items",
          "modify_pending_order_address", "modify_pending_order_items",
          "modify_pending_order_payment", "modify_user_address", "return_delivered_order_items"}


def _retail() -> tuple[list[Tool], dict[str, Any], list[dict[str, Any]]]:
    spec = read_tools((TOOLS / "retail.py").read_text(encoding="utf-8"))
    tools = [Tool(t.name, t.parameters, t.name in WRITES) for t in spec.tools]
    db = json.loads((FIX / "retail" / "db.json").read_text(encoding="utf-8"))
    tasks = json.loads((FIX / "retail" / "tasks.json").read_text(encoding="utf-8"))
    return tools, db, tasks


def _maker(seed: int = 0) -> CallMaker:
    tools, db, tasks = _retail()
    gold = [c for s in gold_sequences(tasks) for c in s.calls]
    return CallMaker(tools, db, gold, seed=seed)


# ------------------------------------------------------------------------------- generator


def test_generated_calls_are_seeded_and_cover_every_tool() -> None:
    a, b = _maker(3).sequences(400), _maker(3).sequences(400)
    assert [[(c.name, c.arguments) for c in s.calls] for s in a] == \
        [[(c.name, c.arguments) for c in s.calls] for s in b]
    assert sum(len(s.calls) for s in a) == 400
    assert all(3 <= len(s.calls) <= 12 for s in a[:-1])
    assert {c.name for s in a for c in s.calls} == {t.name for t in _retail()[0]}
    hows = collections.Counter(c.how.split("+")[-1] for s in a for c in s.calls)
    for mistake in ("missing", "extra", "type", "list", "id", "case"):
        assert hows[mistake] > 0, hows
    assert hows["coherent"] > 100  # most calls are plausible
    assert _maker(4).sequences(50) != a[:len(_maker(4).sequences(50))]


def test_coherent_item_changes_take_the_orders_items_and_their_siblings() -> None:
    """A coherent change of items lists items of the anchor order and, position by position,
    another variant of the same product (so the price arithmetic is exercised)."""
    _, db, _ = _retail()
    variants = {v: p for p in db["products"].values() for v in p["variants"]}
    seen = 0
    for s in _maker(1).sequences(600):
        for c in s.calls:
            if c.name != "modify_pending_order_items" or c.how != "coherent":
                continue
            order = db["orders"][c.arguments["order_id"]]
            items = {i["item_id"] for i in order["items"]}
            assert set(c.arguments["item_ids"]) <= items
            for old, new in zip(c.arguments["item_ids"], c.arguments["new_item_ids"],
                                strict=True):
                assert variants[old] is variants[new]
            user = db["users"][order["user_id"]]
            assert c.arguments["payment_method_id"] in user["payment_methods"]
            seen += 1
    assert seen >= 5


def test_gold_lists_and_their_permutations() -> None:
    _, _, tasks = _retail()
    gold = gold_sequences(tasks)
    assert [s.id for s in gold] == [f"gold-{i}" for i in range(7)]
    assert all(s.task_id == s.id.split("-")[1] for s in gold)
    assert gold_sequences(tasks, permute_seed=0) == []  # no list to put in another order
    tasks.append({"id": "two", "evaluation_criteria": {"actions": [
        {"name": "get_order_details", "arguments": {"order_id": "#W1000001"}},
        {"name": "modify_pending_order_items", "arguments": {
            "order_id": "#W1000001", "item_ids": ["2000000001", "2000000011"],
            "new_item_ids": ["2000000002", "2000000012"], "payment_method_id": "x"}}]}})
    gold = gold_sequences(tasks)
    permuted = gold_sequences(tasks, permute_seed=0)
    assert [s.id for s in permuted] == ["permuted-two"] and permuted[0].task_id == "two"
    assert permuted[0].calls[1].arguments["item_ids"] == ["2000000011", "2000000001"]
    by_task = {s.task_id: s for s in gold}
    for s in permuted:
        for mine, orig in zip(s.calls, by_task[s.task_id].calls, strict=True):
            old = orig.arguments
            new = mine.arguments
            if "new_item_ids" in old:  # the same request, in another order
                assert sorted(zip(new["item_ids"], new["new_item_ids"], strict=True)) == \
                    sorted(zip(old["item_ids"], old["new_item_ids"], strict=True))


# ------------------------------------------------------------------------------ comparator


def test_same_tells_number_types_apart() -> None:
    assert same({"a": [1, {"b": 2.5}]}, {"a": [1, {"b": 2.5}]})
    assert not same(0, 0.0) and not same(1, True) and not same({"a": 0}, {"a": 0.0})
    assert same({"a": 1, "b": 2}, {"b": 2, "a": 1})  # as τ²'s hash: keys sorted


def test_diff_paths() -> None:
    a = {"orders": {"#W1": {"items": [{"price": 94.54999999999995}], "status": "pending"}}}
    b = {"orders": {"#W1": {"items": [{"price": 94.55}], "status": "pending",
                            "note": None}}}
    assert diff(a, b) == [
        'orders["#W1"].items[0].price: τ² 94.54999999999995 (float) · ours 94.55 (float)',
        'orders["#W1"].note: τ² (missing) · ours null']
    assert diff({"x": 0}, {"x": 0.0}) == ["x: τ² 0 (int) · ours 0.0 (float)"]


def _answer(*calls: tuple[str, bool, dict[str, Any] | None], final: dict[str, Any]
            ) -> dict[str, Any]:
    return {"calls": [{"content": c, "error": e, **({"changes": ch} if ch is not None else {})}
                      for c, e, ch in calls], "changes": final}


def test_compare_and_declare() -> None:
    calls = [{"name": "get_order_details", "arguments": {"order_id": "#W1"}},
             {"name": "modify_pending_order_items", "arguments": {"order_id": "#W1"}},
             {"name": "get_order_details", "arguments": {"order_id": "#W1"}}]
    row_t = {"order_id": "#W1", "total": 94.54999999999995}
    row_o = {"order_id": "#W1", "total": 94.55}
    theirs = _answer(("{}", False, None), ('{"t": 94.54999999999995}', False,
                                          {"db": {"orders": {"#W1": row_t}}}),
                     ("{...}", False, None), final={"db": {"orders": {"#W1": row_t}}})
    ours = _answer(("{}", False, None), ('{"t": 94.55}', False, {"orders": {"#W1": row_o}}),
                   ("{...}!", False, None), final={"orders": {"#W1": row_o}})
    found = compare_sequence("s1", calls, theirs, ours)
    assert [(m.index, m.tool, m.kind) for m in found] == [
        (1, "modify_pending_order_items", "content"), (1, "modify_pending_order_items", "db"),
        (2, "get_order_details", "content")]
    assert found[1].detail == ['orders["#W1"].total: τ² 94.54999999999995 (float) · ours '
                               '94.55 (float)']
    declare(found, [Declared("fix:payment-rounding", "cents",
                             frozenset({"modify_pending_order_items"}),
                             frozenset({"content", "db"}))])
    assert [m.declared for m in found] == ["fix:payment-rounding"] * 2 + [
        "fix:payment-rounding (consequence)"]
    report = Report("retail", declared=[Declared("fix:payment-rounding", "cents")])
    report.add(found, [c["name"] for c in calls])
    assert report.undeclared == []
    text = render(report)
    rows = {ln.split()[0]: ln.split()[1:] for ln in text.splitlines()[3:6]}
    assert rows == {"get_order_details": ["2", "0", "1", "0", "1"],
                    "modify_pending_order_items": ["1", "0", "1", "1", "2"],
                    "total": ["3", "0", "2", "1", "3"]}
    assert "- fix:payment-rounding (3 mismatches): cents" in text
    assert text.endswith("✓ 0 undeclared mismatches (3 declared)")


def test_an_error_against_a_success_and_a_change_only_at_the_end() -> None:
    calls = [{"name": "calculate", "arguments": {"expression": "1/0"}}]
    theirs = _answer(("Error: division by zero", True, None), final={"db": {}})
    ours = _answer(("inf", False, None), final={"orders": {"#W9": None}})
    found = compare_sequence("s2", calls, theirs, ours)
    assert [(m.tool, m.kind) for m in found] == [("calculate", "error"),
                                                 ("(end of sequence)", "db")]
    assert found[1].detail == ['orders["#W9"]: τ² (missing) · ours null']
    report = Report("retail")
    report.add(found, ["calculate"])
    assert len(report.undeclared) == 2 and "✗ 2 undeclared mismatches" in render(report)


def test_a_result_cut_for_the_agent_is_a_builtin_declared_difference() -> None:
    from benchpack.runtime.env.toolbox import MAX_RENDER_CHARS
    from benchpack.runtime.tau2bench.compare import BUILTIN

    long = "x" * (MAX_RENDER_CHARS + 10)
    cut = long[:MAX_RENDER_CHARS] + "\n[… truncated: showing 20000 of 20010 characters; ask"
    found = compare_sequence("s", [{"name": "search", "arguments": {}}],
                             _answer((long, False, None), final={"db": {}}),
                             _answer((cut, False, None), final={}))
    declare(found, BUILTIN)
    assert [m.declared for m in found] == ["render-limit"]
    report = Report("airline", declared=BUILTIN)
    assert "- none" in render(report)  # shown only when it occurs
    report.add(found, ["search"])
    assert "- render-limit (1 mismatches): benchpack shows an agent at most" in render(report)


# ----------------------------------------------------------- our half, through the tool path


@needs_bwrap
def test_our_half_runs_through_the_real_tool_path(tmp_path: Path) -> None:
    """Our side against itself finds nothing; a τ² answer that differs is found, and a start
    state (a task's initial state) is applied before the first call."""
    from benchpack.compiler import compile_pack
    from benchpack.compiler.importers import run_import
    from benchpack.runtime.planfile import load_plan
    from benchpack.runtime.tau2bench.parity import ParityRun, run_ours, run_parity

    run_import("tau2", FIX / "retail", tmp_path / "pack")
    assert compile_pack(tmp_path / "pack", tmp_path / "plan", use_cache=False).ok
    plan = load_plan(tmp_path / "plan" / "plan.json")
    tools, db, tasks = _retail()
    calls = [Call("get_order_details", {"order_id": "#W1000001"}),
             Call("cancel_pending_order", {"order_id": "#W1000001", "reason": "no longer needed"}),
             Call("cancel_pending_order", {"order_id": "#W1000001", "reason": "no longer needed"})]
    start = {"orders": {"#W1000001": {**db["orders"]["#W1000001"], "status": "pending"}}}
    ours = asyncio.run(run_ours(plan, "retail", "retail", calls, start, WRITES,
                                tmp_path / "ws"))
    assert [c["error"] for c in ours["calls"]] == [False, False, True]
    assert json.loads(ours["calls"][1]["content"])["status"] == "cancelled"
    assert list(ours["calls"][1]["changes"]["orders"]) == ["#W1000001"]
    assert ours["calls"][2]["changes"] == {}
    extract = {"tools": [{"name": t.name, "schema": {"function": {"parameters": t.parameters}},
                          "mutates_state": t.mutates} for t in tools], "db": db}

    def mirror(seq: Any) -> dict[str, Any]:  # "τ²" answers exactly as we do
        got = asyncio.run(run_ours(plan, "retail", "retail", seq.calls, {}, WRITES,
                                   tmp_path / "mirror"))
        for c in got["calls"]:
            if "changes" in c:
                c["changes"] = {"db": c["changes"]}
        return {"start": {}, "calls": got["calls"], "changes": {"db": got["changes"]}}

    run = ParityRun(plan=plan, domain="retail", extract=extract, tasks=tasks,
                    workdir=tmp_path / "w", calls=30, seed=1)
    report = asyncio.run(run_parity(run, mirror, []))
    # the fixture check compares db.json's rows with the pack's fixtures: equal
    assert report.calls >= 30 and report.undeclared == [], render(report)

    def liar(seq: Any) -> dict[str, Any]:
        out = mirror(seq)
        out["calls"][0]["content"] += " "
        return out

    report = asyncio.run(run_parity(run, liar, []))
    assert len(report.undeclared) == report.sequences - 0 and all(
        m.kind == "content" and m.index == 0 for m in report.undeclared)


# ------------------------------------------------------------------------- with τ² itself


@needs_tau2
@needs_bwrap
@pytest.mark.parametrize("domain", ["mock", "retail", "telecom"])
def test_parity_with_tau2(tmp_path: Path, domain: str) -> None:
    """The whole harness against τ²'s own code (a small run: the full one is `--calls 1000`)."""
    proc = subprocess.run(
        [sys.executable, "-m", "benchpack.cli", "parity", "tau2", "--tau2", str(CHECKOUT),
         "--tau2-python", str(PYTHON), "--domain", domain, "--calls", "120", "--json"],
        capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["undeclared"] == 0 and report["calls"] >= 120
    # mock: the user's own tools (issue 24) are compared too
    assert {t["tool"] for t in report["tools"]} >= {
        "get_users", "check_notifications", "dismiss_notification"} if domain == "mock" else True
    # telecom (issue 24): the phone's tools too, each side synced after every call
    assert {t["tool"] for t in report["tools"]} >= {
        "make_payment", "send_payment_request", "reboot_device", "set_apn_settings",
        "toggle_roaming", "enable_roaming"} if domain == "telecom" else True


def test_cli_parity_without_a_checkout_is_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from benchpack.cli.main import cli

    result = CliRunner().invoke(cli, ["parity", "tau2", "--tau2", str(tmp_path), "--domain",
                                      "retail", "--tau2-python", sys.executable])
    assert result.exit_code == 1
    line = result.output.strip().splitlines()[-1]
    assert line.startswith("✗ parity tau2: ") and "not a τ²-bench checkout" in line
    result = CliRunner().invoke(cli, ["parity", "tau2", "--tau2", str(tmp_path), "--domain",
                                      "retail", "--pack", str(tmp_path), "--fix", "x"])
    assert result.exit_code == 2 and "--fix applies when importing" in result.output
