"""`bench import tau2` (issue 13): a τ² domain folder becomes a pack that compiles with zero
errors, re-imports byte for byte, accounts for every source field in IMPORT_REPORT.md, and
whose gold agent reaches reward 1.0 on every task while a do-nothing agent fails every task
that changes the database. Fixtures of our own in τ²'s shape (tests/fixtures/tau2/); the
released data in ../shared/peer-data is used when it is there (skipped otherwise)."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.compiler.importers import ImportError_, run_import
from benchpack.compiler.importers.tau2 import FIELDS
from benchpack.runtime.runner import RunOptions, run_plan
from benchpack.runtime.sandbox import find_bwrap

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tau2"

def _peer_root() -> Path:
    if os.environ.get("BENCH_PEER_DATA"):
        return Path(os.environ["BENCH_PEER_DATA"])
    # ../shared/peer-data next to the checkout (or next to a folder holding worktrees)
    here = Path(__file__).resolve()
    found = [p / "shared" / "peer-data" for p in here.parents if (p / "shared" / "peer-data").is_dir()]
    return found[0] if found else here.parent / "no-peer-data"


PEER = _peer_root() / "tau2-bench" / "data" / "tau2" / "domains"
needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not available")
needs_peer = pytest.mark.skipif(not (PEER / "retail" / "db.json").is_file(),
                                reason="../shared/peer-data (τ² release) is not here")


def _import(src: Path, out: Path) -> Path:
    run_import("tau2", src, out)
    return out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _compile(pack: Path, out: Path) -> Path:
    """Compiled with no diagnostic but W321 (issue 25): τ²'s data holds tasks an agent doing
    nothing passes (no gold write, nothing to communicate — the fixture's task 5), and the
    lint says which; the reward stays τ²'s, for parity."""
    result = compile_pack(pack, out, use_cache=False)
    assert result.ok and all(d.code == "W321" for d in result.diagnostics), \
        [d.format() for d in result.diagnostics]
    return out


def _run(plan: Path, tmp: Path, agent: str, sessions: list[str] | None = None,
         simulator: str = "rules") -> Path:
    db = tmp / "bench.duckdb"
    run_plan(RunOptions(plan=plan, agent=agent, judge="rules", simulator=simulator, db=db,
                        run_id="r", progress=False, cache_dir=tmp / "cache", allow_python=True,
                        sessions=sessions or []))  # type: ignore[arg-type]
    return db


def _results(db: Path) -> dict[str, tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT name, score, passed, CAST(json_extract(extra, "
                           "'$.reward.components.state') AS DOUBLE), termination "
                           "FROM sessions").fetchall()
    finally:
        con.close()
    return {str(r[0]): r[1:] for r in rows}


# ------------------------------------------------------------------------- the written pack


def test_import_writes_a_pack_that_compiles_and_reimports_byte_identical(tmp_path: Path) -> None:
    a = _import(FIX / "retail", tmp_path / "a")
    b = _import(FIX / "retail", tmp_path / "b")
    first = _files(a)
    assert first == _files(b)
    _import(FIX / "retail", a)  # over itself
    assert _files(a) == first
    assert set(first) == {"pack.yaml", "tasks.yaml", "policy.md", "IMPORT_REPORT.md",
                          "tools/retail.py", "demo/gold_agent.yaml", "data/products.json",
                          "data/users.json", "data/orders.json"}
    _compile(a, tmp_path / "plan")


def test_tasks_map_to_instructed_user_sessions(tmp_path: Path) -> None:
    pack = _import(FIX / "retail", tmp_path / "p")
    text = (pack / "tasks.yaml").read_text(encoding="utf-8")
    assert text.startswith("# benchpack: literal\n")
    sessions = {e["sessions"][0]["id"]: e["sessions"][0]
                for e in yaml.safe_load(text)["episodes"]}
    assert sorted(sessions) == ["0", "1", "2", "3", "4", "5", "6"]
    # 6 starts from a prior conversation (issue 24): τ²'s message history, as written
    assert sessions["6"]["initial_state"] == {"history": [{"role": "user", "content": "Hi"}]}
    s0 = sessions["0"]
    assert s0["user"] == {"reason": "You want to cancel your pending order #W1000001 because "
                          "you no longer need it.", "known": ["You are Ana López in zip code "
                          "94110."], "unknown": ["You do not remember your email address."]}
    assert [a["id"] for a in s0["gold"]["actions"]] == ["0_0", "0_1", "0_2"]
    # NL_ASSERTION with no assertions checks nothing (τ² scores it 1): left out, not failed
    assert s0["score"] == {"reward": ["state"]}
    # τ²'s checks: a lower-cased substring of a message without commas, one judge call
    assert sessions["1"]["score"] == {"reward": ["state", "communicate"], "communicate": ["5.5"],
                                      "communicate_match": "tau2"}
    assert sessions["2"]["score"]["reward"] == ["state", "assertions"]
    assert sessions["2"]["score"]["assertions_judge"] == "tau2"
    # each gold action is matched as τ² matches it, compare_args kept
    assert {a.get("match") for s in sessions.values() for a in s["gold"]["actions"]} == {"tau2"}
    assert sessions["1"]["gold"]["actions"][0]["compare"] == ["email"]
    assert sessions["3"]["user"]["instructions"] == ["If the agent asks for confirmation, say yes."]
    assert "# open τ² issue issue_1: An open issue of our own." in text
    pack_yaml = yaml.safe_load((pack / "pack.yaml").read_text(encoding="utf-8"))
    # τ²'s run rules; without a checkout the texts are ours and the pack says so
    assert pack_yaml["defaults"]["limits"]["max_messages"] == 200
    assert pack_yaml["defaults"]["limits"]["max_tool_errors"] == 10
    conv = pack_yaml["defaults"]["conversation"]
    assert (conv["simulator"], conv["stop_tokens"], conv["unfinished"]) == (
        "chat", "anywhere", "fail")
    assert pack_yaml["defaults"]["seed"] == 300
    draw = random.Random(300)  # τ²'s batch runner: random.seed(300), one randint per trial
    assert pack_yaml["defaults"]["repeat_seeds"][:2] == [draw.randint(0, 1000000)
                                                         for _ in range(2)]
    assert pack_yaml["origin"]["benchmark"] == "tau2-bench"
    assert pack_yaml["origin"]["differences"][0].startswith("no τ² checkout was read")
    assert "prompts" not in pack_yaml
    pol = (pack / "policy.md").read_text(encoding="utf-8")
    assert "{{ not a template }}" in pol and "literal: true" in (pack / "pack.yaml").read_text()


def test_report_lists_every_source_field_and_every_task_not_imported(tmp_path: Path) -> None:
    pack = _import(FIX / "mock", tmp_path / "m")
    report = (pack / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    for field, fate, _ in FIELDS:
        assert f"| `{field}` | {fate} |" in report
    # issue 24: env assertions, initial states and the user's own tools are imported
    assert "Tasks: 4 in tasks.json, 4 imported, 0 not imported" in report
    assert "not implemented" not in report and "dropped" not in report.split("## Tasks")[1]
    # the mock task names no reward basis: τ²'s default [DB, COMMUNICATE]; its NL assertions
    # are then not part of the reward, and the report says so
    assert "- `create`: nl_assertions are not in the reward basis" in report
    retail = (_import(FIX / "retail", tmp_path / "r") / "IMPORT_REPORT.md").read_text()
    assert "Tasks: 7 in tasks.json, 7 imported, 0 not imported" in retail


@pytest.mark.parametrize("case,message", [
    ("missing", "not a directory"),
    ("airlines", "no toolset for the τ² domain `airlines`"),
    ("telecom", "db.toml: not found (τ²'s telecom folder holds tasks.json or"),
    ("nodb", "db.json: not found"),
    ("badjson", "tasks.json: not valid JSON"),
])
def test_source_mistakes_are_one_line_errors(tmp_path: Path, case: str, message: str) -> None:
    src = tmp_path / ("retail" if case in ("nodb", "badjson") else case)
    if case != "missing":
        shutil.copytree(FIX / "retail", src)
    if case == "nodb":
        (src / "db.json").unlink()
    if case == "badjson":
        (src / "tasks.json").write_text("[{", encoding="utf-8")
    result = CliRunner().invoke(cli, ["import", "tau2", str(src), "-o", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    line = result.output.strip()
    assert line.startswith("✗ ") and message in line and "\n" not in line


def test_refuses_to_write_into_a_directory_that_is_not_an_import(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.md").write_text("mine", encoding="utf-8")
    with pytest.raises(ImportError_, match="exists and is not an imported pack"):
        run_import("tau2", FIX / "retail", tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.md").read_text() == "mine"


def test_cli_import(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["import", "tau2", str(FIX / "mock"), "-o",
                                      str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert "4 sessions" in result.output
    # a pack with user-side gold actions names its gold user too
    assert f"--simulator scripted:{tmp_path / 'm'}/demo/gold_user.yaml" in result.output


# ------------------------------------------------------------------------------- running it


@needs_bwrap
def test_gold_agent_reaches_reward_1_and_do_nothing_fails_every_change(tmp_path: Path) -> None:
    pack = _import(FIX / "retail", tmp_path / "p")
    plan = _compile(pack, tmp_path / "plan")
    gold = _results(_run(plan, tmp_path / "g", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}"))
    assert {k: v[0] for k, v in gold.items()} == {str(i): 1.0 for i in range(7)}
    assert gold["5"][3] == "transfer"
    done = tmp_path / "done.yaml"
    # two entries: task 6 starts from a prior conversation, whose user message the first
    # entry answers (a scripted agent's entry k answers user message k + 1)
    done.write_text("default:\n  - say: Done.\n  - say: Done.\n", encoding="utf-8")
    nothing = _results(_run(plan, tmp_path / "d", f"scripted:{done}"))
    # 0, 1, 3 and 4 change the database; 2, 5 and 6 only read (5 fails on nothing but state,
    # 6's reward is its state alone: τ² passes doing nothing there too)
    assert {k: v[2] for k, v in nothing.items()} == {
        "0": 0.0, "1": 0.0, "2": 1.0, "3": 0.0, "4": 0.0, "5": 1.0, "6": 1.0}
    assert {k: v[0] for k, v in nothing.items()} == {
        "0": 0.0, "1": 0.0, "2": 0.0, "3": 0.0, "4": 0.0, "5": 1.0, "6": 1.0}


@needs_bwrap
def test_mock_gold_agent(tmp_path: Path) -> None:
    pack = _import(FIX / "mock", tmp_path / "m")
    plan = _compile(pack, tmp_path / "plan")
    # `notify` (issue 24) starts from patched tables, a user-side set-up call and a prior
    # conversation; its gold has a user-side action, made by the gold user with its own tool
    gold = _results(_run(plan, tmp_path / "g", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}",
                         simulator=f"scripted:{pack / 'demo' / 'gold_user.yaml'}"))
    assert {k: v[0] for k, v in gold.items()} == {
        "create": 1.0, "complete": 1.0, "only_env": 1.0, "notify": 1.0}
    # the rules user never acts on its own phone: the agent's half alone is no pass
    half = _results(_run(plan, tmp_path / "h", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}"))
    assert half["notify"][:3] == (0.0, False, 0.0)
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - say: Done.\n  - say: Done.\n", encoding="utf-8")
    nothing = _results(_run(plan, tmp_path / "d", f"scripted:{done}"))
    # only_env asserts what already holds (nothing to change): τ² passes doing nothing too
    assert {k: v[0] for k, v in nothing.items()} == {
        "create": 0.0, "complete": 0.0, "only_env": 1.0, "notify": 0.0}


# ------------------------------------------------------------------ the released τ² domains


@needs_peer
@pytest.mark.parametrize("domain,tasks", [("retail", 114), ("mock", 10)])
def test_peer_release_imports_and_compiles(tmp_path: Path, domain: str, tasks: int) -> None:
    pack = _import(PEER / domain, tmp_path / domain)
    report = (pack / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    assert f"Tasks: {tasks} in tasks.json" in report
    _compile(pack, tmp_path / "plan")
    if domain == "retail":
        assert "Tasks: 114 in tasks.json, 114 imported, 0 not imported" in report
        db = json.loads((PEER / "retail" / "db.json").read_text(encoding="utf-8"))
        assert [len(db[t]) for t in ("products", "users", "orders")] == [50, 500, 1000]
        for t in ("products", "users", "orders"):
            rows = json.loads((pack / "data" / f"{t}.json").read_text(encoding="utf-8"))
            assert rows == list(db[t].values())


def _retail_sample(n: int | None) -> list[str]:
    tasks = json.loads((PEER / "retail" / "tasks.json").read_text(encoding="utf-8"))
    ids = [str(t["id"]) for t in tasks]
    # always the tasks whose gold includes a failing read, plus a fixed random sample
    return ids if n is None else sorted({"2", "35", "46", *random.Random(13).sample(ids, n)})


def _peer_gold_run(tmp_path: Path, sample: list[str]) -> None:
    pack = _import(PEER / "retail", tmp_path / "retail")
    plan = _compile(pack, tmp_path / "plan")
    gold = _results(_run(plan, tmp_path / "g", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}",
                         sessions=sample))
    assert len(gold) == len(sample)
    assert {k: v[0] for k, v in gold.items() if v[0] != 1.0} == {}


@needs_peer
@needs_bwrap
def test_peer_retail_gold_agent_sample(tmp_path: Path) -> None:
    _peer_gold_run(tmp_path, _retail_sample(5))


@needs_peer
@needs_bwrap
@pytest.mark.slow
def test_peer_retail_gold_agent_all_114(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("all 114 retail tasks take minutes: run with -m slow")
    _peer_gold_run(tmp_path, _retail_sample(None))


_RETAIL_WRITES = {"cancel_pending_order", "exchange_delivered_order_items",
                  "modify_pending_order_address", "modify_pending_order_items",
                  "modify_pending_order_payment", "modify_user_address",
                  "return_delivered_order_items"}


def _peer_nothing_run(tmp_path: Path, sample: list[str]) -> None:
    """A do-nothing agent: the state check fails exactly the tasks whose gold changes the
    database (a gold write that fails changes nothing, so those count as no change)."""
    tasks = {str(t["id"]): t for t in
             json.loads((PEER / "retail" / "tasks.json").read_text(encoding="utf-8"))}
    pack = _import(PEER / "retail", tmp_path / "retail")
    plan = _compile(pack, tmp_path / "plan")
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    nothing = _results(_run(plan, tmp_path / "d", f"scripted:{done}", sessions=sample))
    assert len(nothing) == len(sample)
    writes = {i for i in sample if any(a["name"] in _RETAIL_WRITES for a in
                                       tasks[i]["evaluation_criteria"].get("actions") or [])}
    assert writes, "the sample must hold tasks that change the database"
    # τ² task 105's one gold write is refused by τ²'s own rule (gift card balance 17.00 <
    # price difference 21.10): its gold final state is the released database
    writes -= {"105"}
    failed_state = {i for i, v in nothing.items() if v[2] == 0.0}
    assert failed_state == writes, (sorted(failed_state - writes), sorted(writes - failed_state))
    assert all(nothing[i][0] == 0.0 for i in writes)


@needs_peer
@needs_bwrap
def test_peer_retail_do_nothing_sample(tmp_path: Path) -> None:
    _peer_nothing_run(tmp_path, _retail_sample(5))


@needs_peer
@needs_bwrap
@pytest.mark.slow
def test_peer_retail_do_nothing_all_114(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if "slow" not in (request.config.getoption("-m") or ""):
        pytest.skip("all 114 retail tasks take minutes: run with -m slow")
    _peer_nothing_run(tmp_path, _retail_sample(None))

# ----------------------------------------------------------------------------- airline


def _tool_params(module: Path) -> dict[str, tuple[set[str], set[str]]]:
    """Each tool's (all parameters, required parameters), from our reader of pack tools."""
    from benchpack.specs.pytools import read_tools

    spec = read_tools(module.read_text(encoding="utf-8"), str(module))
    out = {}
    for tool in spec.tools:
        props = tool.parameters.get("properties", {})
        out[tool.name] = (set(props), set(tool.parameters.get("required", [])))
    return out


@needs_bwrap
def test_airline_gold_agent_reaches_1_and_do_nothing_fails_every_change(tmp_path: Path) -> None:
    pack = _import(FIX / "airline", tmp_path / "a")
    plan = _compile(pack, tmp_path / "plan")
    gold = _results(_run(plan, tmp_path / "g", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}"))
    assert {k: v[0] for k, v in gold.items()} == {str(i): 1.0 for i in range(7)}
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    nothing = _results(_run(plan, tmp_path / "d", f"scripted:{done}"))
    # 0–5 change the database (cancel, book, bags, flight change, passengers, certificate);
    # 6 is a refusal: the database must stay as it is, but its assertion is not said
    assert {k: v[2] for k, v in nothing.items()} == {
        **{str(i): 0.0 for i in range(6)}, "6": 1.0}
    assert {k: v[0] for k, v in nothing.items()} == {str(i): 0.0 for i in range(7)}


def _airline_state_after(tmp_path: Path, calls: list[tuple[str, dict]]) -> dict:
    """The airline tables after `calls`, made through the real tool worker (sandboxed)."""
    pack = _import(FIX / "airline", tmp_path / "a")
    plan = _compile(pack, tmp_path / "plan")
    agent = tmp_path / "agent.yaml"
    agent.write_text(yaml.safe_dump({"sessions": {"0": [{"tool_calls": [
        {"name": n, "args": a} for n, a in calls], "say": "Done."}]}}), encoding="utf-8")
    db = _run(plan, tmp_path / "r", f"scripted:{agent}", sessions=["0"])
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT tool_name, error IS NULL, CASE WHEN error IS NULL THEN "
                           "CAST(result AS VARCHAR) ELSE error END FROM tool_calls ORDER BY seq").fetchall()
    finally:
        con.close()
    return {"calls": rows}


def _tool_json(stored: str) -> object:
    """A stored tool result: the airline tools return τ²'s JSON text, which the run stores as
    a JSON string."""
    value = json.loads(stored)
    return json.loads(value) if isinstance(value, str) and value[:1] in "[{" else value


@needs_bwrap
def test_airline_rules_by_hand(tmp_path: Path) -> None:
    """Refunds, charges and refusals computed by hand from the fixture's prices."""
    res = _airline_state_after(tmp_path, [
        # economy 120 → 150 on May 21, paid by the 300 gift card: 30 charged, 270 left
        ("update_reservation_flights", {"reservation_id": "ABC123", "cabin": "economy",
                                        "flights": [{"flight_number": "HAT101",
                                                     "date": "2024-05-21"}],
                                        "payment_id": "gift_card_2222222"}),
        ("get_user_details", {"user_id": "ana_silva_101"}),
        # a certificate cannot pay for a change
        ("update_reservation_baggages", {"reservation_id": "ABC123", "total_baggages": 2,
                                         "nonfree_baggages": 1,
                                         "payment_id": "certificate_3333333"}),
        # 1 passenger × 200 + insurance 30 + 2 paid bags × 50 = 330; paying 300 is refused
        ("book_reservation", {"user_id": "ana_silva_101", "origin": "SEA", "destination": "JFK",
                              "flight_type": "one_way", "cabin": "economy",
                              "flights": [{"flight_number": "HAT104", "date": "2024-05-25"}],
                              "passengers": [{"first_name": "Ana", "last_name": "Silva",
                                              "dob": "1985-03-14", "seat": "12A"}],
                              "payment_methods": [{"payment_id": "credit_card_1111111",
                                                   "amount": 300}],
                              "total_baggages": 2, "nonfree_baggages": 2, "insurance": "yes"}),
        # the same paid with the 150 certificate + 180 by card: the certificate is used up
        ("book_reservation", {"user_id": "ana_silva_101", "origin": "SEA", "destination": "JFK",
                              "flight_type": "one_way", "cabin": "economy",
                              "flights": [{"flight_number": "HAT104", "date": "2024-05-25"}],
                              "passengers": [{"first_name": "Ana", "last_name": "Silva",
                                              "dob": "1985-03-14", "seat": "12A"}],
                              "payment_methods": [{"payment_id": "certificate_3333333",
                                                   "amount": 150},
                                                  {"payment_id": "credit_card_1111111",
                                                   "amount": 180}],
                              "total_baggages": 2, "nonfree_baggages": 2, "insurance": "yes"}),
        ("get_user_details", {"user_id": "ana_silva_101"}),
        ("cancel_reservation", {"reservation_id": "HATHAT"}),
        ("get_flight_status", {"flight_number": "HAT103", "date": "2024-05-20"}),
        ("search_onestop_flight", {"origin": "JFK", "destination": "SEA",
                                   "date": "2024-05-20"}),
    ])
    calls = res["calls"]
    assert [c[1] for c in calls] == [True, True, False, False, True, True, True, True, True]
    changed = _tool_json(calls[0][2])
    assert changed["payment_history"][-1] == {"payment_id": "gift_card_2222222", "amount": 30}
    assert changed["flights"][0]["price"] == 150
    assert _tool_json(calls[1][2])["payment_methods"]["gift_card_2222222"]["amount"] == 270
    assert "Certificate cannot be used" in calls[2][2]
    assert "total price is 330, but paid 300" in calls[3][2]
    booked = _tool_json(calls[4][2])
    assert booked["reservation_id"] == "HATHAT"
    assert booked["passengers"] == [{"first_name": "Ana", "last_name": "Silva",
                                     "dob": "1985-03-14"}]  # extra fields dropped
    user = _tool_json(calls[5][2])
    assert "certificate_3333333" not in user["payment_methods"]
    assert user["reservations"] == ["ABC123", "HATHAT"]
    cancelled = _tool_json(calls[6][2])
    assert cancelled["status"] == "cancelled"
    assert [p["amount"] for p in cancelled["payment_history"]] == [150, 180, -150, -180]
    assert _tool_json(calls[7][2]) == "cancelled"
    pairs = _tool_json(calls[8][2])
    assert [[p[0]["flight_number"], p[1]["flight_number"]] for p in pairs] == [
        ["HAT101", "HAT102"]]


def test_airline_without_its_database_says_where_to_get_it(tmp_path: Path) -> None:
    src = tmp_path / "airline"
    src.mkdir()
    for name in ("tasks.json", "policy.md"):
        shutil.copy(FIX / "airline" / name, src / name)
    with pytest.raises(ImportError_, match=r"db.json: not found .*full clone"):
        run_import("tau2", src, tmp_path / "out")


@needs_peer
def test_peer_airline_gold_actions_fit_our_tools() -> None:
    """The released airline tasks (their db.json is not in peer-data): every gold action names
    one of our tools, gives only parameters it has and every parameter it requires."""
    from benchpack.compiler.importers.tau2 import DOMAINS, TOOLS_DIR

    params = _tool_params(TOOLS_DIR / DOMAINS["airline"])
    tasks = json.loads((PEER / "airline" / "tasks.json").read_text(encoding="utf-8"))
    assert len(tasks) == 50
    checked = 0
    for task in tasks:
        for action in task["evaluation_criteria"].get("actions") or []:
            names, required = params[action["name"]]
            args = set(action["arguments"])
            assert args <= names and required <= args, (task["id"], action)
            checked += 1
    assert checked == 142
