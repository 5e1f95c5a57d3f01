"""τ²'s banking_knowledge tasks (issue 24) imported and run over benchpack's own rewrite of its
toolset (tau2_tools/banking*.py).

Offline, on benchpack's own small domain folder in τ²'s shapes (`fixtures/tau2_banking`): a
task whose gold uses a tool not written yet is left out with the tool named; the gold agent and
user score 1.0 on every imported task, doing nothing 0, and the gold agent whose customer never
acts scores 0 exactly where the customer's own call is needed; the tools, called directly
as the pack holds them (inlined), leave the records computed here by hand. Gated
(BENCH_TAU2_CHECKOUT, BENCH_TAU2_PYTHON): on the real release, every imported task's gold
actions, replayed through τ²'s own toolkits and through ours, leave the same database and
return the same texts (but for the descriptions, which are ours)."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from tau2_helpers import import_domain, run_scores

from benchpack.compiler.importers import run_import
from benchpack.runtime.env import ServiceState
from benchpack.runtime.env.pytools import API
from benchpack.runtime.user_side import patch_tables
from benchpack.specs.plan import PlanService
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_bwrap, needs_tau2

DOMAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tau2_banking" / "banking_knowledge"
IDS = ("task_a", "task_c", "task_d", "task_e")
TWO = {"max_concurrency": 2}  # sessions at once in these runs


@needs_bwrap
def test_gold_scores_one_and_adversaries_what_they_deserve(tmp_path: Path) -> None:
    pack = import_domain(tmp_path, DOMAIN)
    gold_agent = f"scripted:{pack / 'demo' / 'gold_agent.yaml'}"
    gold = run_scores(tmp_path, "gold", gold_agent, f"scripted:{pack / 'demo' / 'gold_user.yaml'}",
                      **TWO)
    assert gold == dict.fromkeys(IDS, 1.0)
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    nothing = run_scores(tmp_path, "nothing", f"scripted:{done}", "rules", **TWO)
    assert nothing == dict.fromkeys(IDS, 0.0)
    # the customer never acts: the application (a) and the dispute (d) are theirs to make
    alone = run_scores(tmp_path, "alone", gold_agent, "rules", **TWO)
    assert alone == {"task_a": 0.0, "task_c": 1.0, "task_d": 0.0, "task_e": 1.0}
    echo = run_scores(tmp_path, "echo", "adversary:echo", "rules", **TWO)
    assert echo == dict.fromkeys(IDS, 0.0)


class Bank:
    """The pack's two toolsets (as written into it, helpers inlined) over one State."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, pack: Path,
                 patch: dict[str, Any] | None = None) -> None:
        api = types.ModuleType("benchpack_tools")
        exec(API, api.__dict__)  # the worker's own `benchpack_tools`
        monkeypatch.setitem(sys.modules, "benchpack_tools", api)
        self.mods = {}
        for side, name in (("agent", "banking"), ("user", "banking_user")):
            spec = importlib.util.spec_from_file_location(f"bk_{name}",
                                                          pack / "tools" / f"{name}.py")
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            self.mods[side] = mod
        tables = {p.stem: {"key": "_id", "rows": json.loads(p.read_text(encoding="utf-8"))}
                  for p in sorted((pack / "data").glob("*.json"))}
        service = ServiceState(PlanService.model_validate(
            {"name": "banking", "operations": [], "tables": tables}))
        snap = {"services": {"banking": service.snapshot()}}
        if patch:
            snap = patch_tables(snap, patch, {"banking": dict.fromkeys(tables, "_id")})
        self.db = self.mods["agent"].State(snap["services"]["banking"], service.key_info())

    def __call__(self, tool: str, side: str = "agent", **args: Any) -> str:
        self.db._begin()
        return getattr(self.mods[side], tool)(db=self.db, **args)

    def rows(self, table: str) -> list[dict[str, Any]]:
        return self.db.rows(table)


def _hex(seed: str, n: int = 16) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def test_the_tools_leave_the_records_computed_by_hand(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pack = tmp_path / "pack"
    run_import("tau2", DOMAIN, pack)
    b = Bank(monkeypatch, pack, {"banking": {"task_config": {
        "dispute_settings": {"auto_resolve_disputes": True}}}})
    call = json.dumps({"user_id": "u100", "transaction_id": "txn_fix000000001"})
    # the customer cannot run a tool the agent has not handed over, nor the agent a locked one
    out = b("call_discoverable_user_tool", "user",
            discoverable_tool_name="submit_cash_back_dispute_0589", arguments=call)
    assert out.startswith("Error: Tool 'submit_cash_back_dispute_0589' has not been given")
    locked = json.dumps({"transaction_id": "txn_fix000000001", "new_rewards_earned": "1"})
    out = b("call_discoverable_agent_tool", agent_tool_name="update_transaction_rewards_3847",
            arguments=locked)
    assert out.startswith("Error: Tool 'update_transaction_rewards_3847' has not been unlocked")
    assert b.rows("cash_back_disputes") == [] and b.rows("agent_discoverable_tools") == []
    b("give_discoverable_user_tool", discoverable_tool_name="submit_cash_back_dispute_0589")
    out = b("call_discoverable_user_tool", "user",
            discoverable_tool_name="submit_cash_back_dispute_0589", arguments=call)
    dispute = "dsp_" + _hex("dispute:u100:txn_fix000000001", 12)
    assert f"Dispute ID: {dispute}\nStatus: RESOLVED" in out
    assert b.rows("cash_back_disputes") == [{
        "_id": dispute, "dispute_id": dispute, "user_id": "u100",
        "transaction_id": "txn_fix000000001", "submitted_at": "11/14/2025",
        "status": "RESOLVED", "resolution": "APPROVED"}]
    assert b.rows("user_discoverable_tools") == [{
        "_id": _hex("user_discoverable_tool:submit_cash_back_dispute_0589"),
        "tool_name": "submit_cash_back_dispute_0589", "status": "GIVEN"}]
    b("unlock_discoverable_agent_tool", agent_tool_name="update_transaction_rewards_3847")
    b("call_discoverable_agent_tool", agent_tool_name="update_transaction_rewards_3847",
      arguments=json.dumps({"transaction_id": "txn_fix000000001",
                            "new_rewards_earned": "100 points"}))
    assert b.db.get("credit_card_transaction_history", "txn_fix000000001")[
        "rewards_earned"] == "100 points"
    # a tool that writes is logged on every call (a refused one too); a read only when the
    # task's gold makes it (the allowlist, empty here): the account listing is not logged
    b("unlock_discoverable_agent_tool", agent_tool_name="open_bank_account_4821")
    out = b("call_discoverable_agent_tool", agent_tool_name="open_bank_account_4821",
            arguments=json.dumps({"user_id": "u100", "account_type": "savings",
                                  "account_class": "Harbour Savings"}))
    account = _hex("account:u100:savings:Harbour Savings")
    assert f"Account ID: {account}" in out
    assert b.db.get("accounts", account)["date_opened"] == "11/14/2025"
    # business savings needs a business checking account 30 days old: refused, nothing written
    out = b("call_discoverable_agent_tool", agent_tool_name="open_bank_account_4821",
            arguments=json.dumps({"user_id": "u100", "account_type": "business_savings",
                                  "account_class": "X"}))
    assert out == "Error: Account eligibility requirements not met."
    out = b("call_discoverable_agent_tool", agent_tool_name="open_bank_account_4821",
            arguments=json.dumps({"user_id": "u100"}))
    assert out.startswith("Error: Invalid arguments: KnowledgeTools.open_bank_account_4821() "
                          "missing 2 required positional arguments")
    b("unlock_discoverable_agent_tool", agent_tool_name="get_all_user_accounts_by_user_id_3847")
    out = b("call_discoverable_agent_tool", agent_tool_name="get_all_user_accounts_by_user_id_3847",
            arguments=json.dumps({"user_id": "u100"}))
    assert "Harbour Savings" in out
    assert sorted(r["tool_name"] for r in b.rows("agent_discoverable_tools")) == \
        ["open_bank_account_4821", "update_transaction_rewards_3847"]
    # an application: 52000 is 52000.0 in the id (τ² makes the income a float first)
    b("apply_for_credit_card", "user", card_type="Gold Rewards Card", customer_name="Ana Lima",
      annual_income=52000)
    app = _hex("credit_card:Gold Rewards Card:Ana Lima:52000.0:False")
    assert b.db.get("credit_card_applications", app)["annual_income"] == 52000.0
    # a transaction earns int(amount × rate) points: 10% of 33.33 on the Platinum card
    out = b("submit_transaction", "user", user_id="u100", credit_card_type="Platinum Rewards Card",
            merchant_name="Café", amount=33.33, category="Dining")
    assert "Rewards Earned: 333 points (10.0% cashback rate)" in out
    assert b("request_human_agent_transfer", "user").startswith("Transfer request #1 ")
    assert b("request_human_agent_transfer", "user").startswith("Transfer request #2 ")
    assert b("get_user_information_by_id", user_id="u100").splitlines()[:3] == [
        "Found 1 record(s) in 'users':", "", "1. Record ID: u100"]


def test_the_credit_limit_tools_leave_the_records_computed_by_hand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pack = tmp_path / "pack"
    run_import("tau2", DOMAIN, pack)
    b = Bank(monkeypatch, pack, {"banking": {
        "credit_card_accounts": {"cc_u100_gold": {"credit_limit": "$5,000.00",
                                                  "account_status": "ACTIVE"}},
        "payment_history": {"p1": {"credit_card_account_id": "cc_u100_gold",
                                   "payment_date": "09/20/2025", "amount": "$50.00",
                                   "status": "LATE"},
                            "p2": {"credit_card_account_id": "cc_u100_gold",
                                   "payment_date": "10/20/2025", "amount": "$60.00",
                                   "status": "ON_TIME"}}}})

    def call(tool: str, **args: Any) -> str:
        b("unlock_discoverable_agent_tool", agent_tool_name=tool)
        return b("call_discoverable_agent_tool", agent_tool_name=tool, arguments=json.dumps(args))

    out = call("get_payment_history_6183", credit_card_account_id="cc_u100_gold", months=6)
    assert out.splitlines()[1] == "Consecutive on-time payments: 1"  # the latest first
    assert out.index("10/20/2025") < out.index("09/20/2025")
    # a request of 2500 and an approval raising the limit by 2500 get the same id: the
    # approval's record is not stored (the request's stays PENDING), the limit still changes
    out = call("submit_credit_limit_increase_request_7392", credit_card_account_id="cc_u100_gold",
               user_id="u100", requested_increase_amount=2500)
    request = "cli_" + _hex("cli_request:cc_u100_gold:u100:2500.00", 12)
    assert f"Request ID: {request}\n" in out and "Requested Increase: $2,500\n" in out
    out = call("submit_credit_limit_increase_request_7392", credit_card_account_id="cc_u100_gold",
               user_id="u100", requested_increase_amount=2.5)
    assert out == "Error: Invalid requested_increase_amount. Must be a whole number of dollars."
    out = call("approve_credit_limit_increase_5847", credit_card_account_id="cc_u100_gold",
               user_id="u100", new_credit_limit=7500)
    assert "Previous Limit: $5000.00\n  - New Limit: $7500.00\n" in out
    assert b.db.get("credit_card_accounts", "cc_u100_gold")["credit_limit"] == "$7500.00"
    assert [(r["_id"], r["status"]) for r in b.rows("credit_limit_increase_requests")] == \
        [(request, "PENDING")]
    out = call("deny_credit_limit_increase_5848", credit_card_account_id="cc_u100_gold",
               user_id="u100", denial_reason="high_utilization")
    denied = "cli_" + _hex("cli_request:cc_u100_gold:u100:0.00", 12)
    assert b.db.get("credit_limit_increase_requests", denied)["denial_reason"] == \
        "high_utilization"
    out = call("get_credit_limit_increase_history_4829", credit_card_account_id="cc_u100_gold")
    assert "Found 2 record(s) in 'credit_limit_increase_requests'" in out


def test_the_debit_card_tools_leave_the_records_computed_by_hand(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pack = tmp_path / "pack"
    run_import("tau2", DOMAIN, pack)
    b = Bank(monkeypatch, pack, {"banking": {"debit_cards": {"dbc_old": {
        "card_id": "dbc_old", "account_id": "chk_u100", "user_id": "u100",
        "last_4_digits": "1111", "status": "ACTIVE", "issue_date": "10/01/2025"}}}})

    def call(tool: str, **args: Any) -> str:
        b("unlock_discoverable_agent_tool", agent_tool_name=tool)
        return b("call_discoverable_agent_tool", agent_tool_name=tool, arguments=json.dumps(args))

    listed = json.loads(call("get_debit_cards_by_account_id_7823", account_id="chk_u100"))
    assert listed == [{"card_id": "dbc_old", "account_id": "chk_u100", "user_id": "u100",
                       "status": "ACTIVE", "card_number_last_4": "1111",
                       "date_issued": "10/01/2025"}]
    # 44 days old: too young for a temporary limit; a PIN that counts up is refused
    out = call("request_temporary_debit_card_limit_increase_8374", card_id="dbc_old",
               limit_type="atm", new_limit=600)
    assert out.endswith("Account age: 44 days.")
    out = call("reset_debit_card_pin_6284", card_id="dbc_old", last_4_digits="1111",
               new_pin="3210")
    assert out.startswith("Error: PIN cannot be sequential")
    assert call("freeze_debit_card_3892", card_id="dbc_old").startswith("Debit Card Frozen")
    assert call("close_debit_card_4721", card_id="dbc_old", reason="Stolen").startswith(
        "Error: Debit card 'dbc_old' cannot be closed. Current status: FROZEN.")
    call("unfreeze_debit_card_3893", card_id="dbc_old")
    call("close_debit_card_4721", card_id="dbc_old", reason="Stolen")
    # a new card after a stolen one: $15 taken from the $120 balance, a fee transaction, the
    # card's digits from its id
    out = call("order_debit_card_5739", account_id="chk_u100", user_id="u100",
               delivery_option="expedited", delivery_fee=15, card_design="classic",
               design_fee=0, shipping_address="12 Harbour Road")
    assert "Total Fees: $15.00 (Delivery: $15.0) - CHARGED to account chk_u100\n" in out
    order = "dcord_" + _hex("debit_card_order:chk_u100:u100:EXPEDITED", 12)
    card = "dbc_" + _hex("debit_card:chk_u100:u100:11/14/2025", 12)
    last4 = "".join(c for c in _hex(f"card_details:{card}:last4", 8) if c.isdigit())[:4]
    new = b.db.get("debit_cards", card)
    assert (new["status"], new["issue_reason"], new["cardholder_name"], new["expiration_date"],
            new["last_4_digits"]) == ("PENDING", "stolen", "ANA LIMA", "11/30/2029",
                                      last4.zfill(4))
    assert b.db.get("accounts", "chk_u100")["current_holdings"] == "105.00"
    fee = b.db.get("bank_account_transaction_history", f"btxn_dcfee_{order[-8:]}")
    assert (fee["amount"], fee["description"]) == (-15.0, "DEBIT CARD ORDER FEE - Delivery $15.0")
    out = call("activate_debit_card_8292", card_id=card, last_4_digits=last4.zfill(4),
               expiration_date="11/29", cvv="123", pin="5739")
    assert "Replacement Reason: Stolen\nStatus: ACTIVE" in out
    out = call("file_debit_card_transaction_dispute_6281", transaction_id="btxn_1",
               account_id="chk_u100", card_id=card, user_id="u100",
               dispute_category="card_not_present_fraud", transaction_date="11/10/2025",
               discovery_date="11/14/2025", disputed_amount=600, transaction_type="online_purchase",
               card_in_possession=True, pin_compromised="no", contacted_merchant=False,
               police_report_filed=False, written_statement_provided=True,
               provisional_credit_eligible=True, customer_max_liability_amount=50,
               card_action="keep_active")
    assert out.endswith("RECOMMENDATION: For fraud disputes over $500, filing a police report "
                        "is recommended.")
    dispute = b.db.get("debit_card_disputes", "dsp_" + _hex("dispute:u100:btxn_1", 12))
    assert (dispute["provisional_credit_amount"], dispute["is_fraud_category"]) == (600.0, True)


TAU2_SIDE = r'''
import json, sys
from tau2.domains.banking_knowledge.environment import get_environment, get_tasks
from tau2.runner.build import _derive_read_log_allowlist
from tau2.data_model.message import ToolCall

wanted = set(json.loads(sys.argv[1]))
out = {}
for task in get_tasks():
    if task.id not in wanted:
        continue
    env = get_environment(retrieval_variant="no_knowledge",
                          read_log_allowlist=_derive_read_log_allowlist(task))
    st = task.initial_state
    if st:
        env.set_state(st.initialization_data, st.initialization_actions,
                      st.message_history or [])
    texts = []
    for i, a in enumerate(task.evaluation_criteria.actions or []):
        r = env.get_response(ToolCall(id=f"g{i}", name=a.name, arguments=a.arguments,
                                      requestor=a.requestor))
        texts.append(r.content)
    db = env.tools.db.model_dump()
    out[task.id] = {"texts": texts, "db": {t: v["data"] for t, v in db.items()
                                           if isinstance(v, dict) and "data" in v}}
print(json.dumps(out, default=str))
'''


@needs_tau2
def test_release_gold_leaves_tau2s_database(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "banking_knowledge"
    pack = tmp_path / "pack"
    run_import("tau2", domain, pack)
    import yaml

    episodes = yaml.safe_load((pack / "tasks.yaml").read_text(encoding="utf-8"))["episodes"]
    sessions = {e["sessions"][0]["id"]: e["sessions"][0] for e in episodes}
    theirs = json.loads(subprocess.run(
        [str(PYTHON), "-c", TAU2_SIDE, json.dumps(sorted(sessions))], capture_output=True,
        text=True, check=True, cwd=str(CHECKOUT), timeout=600,
        env={**os.environ, "TAU2_DATA_DIR": str(Path(str(CHECKOUT)) / "data")},
    ).stdout.strip().splitlines()[-1])
    assert sorted(theirs) == sorted(sessions)
    ours_only = {"unlocked_agent_tools", "read_log_allowlist"}
    for sid, s in sessions.items():
        b = Bank(monkeypatch, pack, (s.get("initial_state") or {}).get("data"))
        texts = [b(a["tool"], a.get("requestor", "agent") if a.get("requestor") == "user"
                   else "agent", **a["args"]) for a in s["gold"]["actions"]]
        for a, mine, tau in zip(s["gold"]["actions"], texts, theirs[sid]["texts"], strict=True):
            if a["tool"] not in ("unlock_discoverable_agent_tool",
                                 "give_discoverable_user_tool"):  # descriptions are ours
                assert mine == tau, (sid, a)
        db = {t: {r["_id"]: {k: v for k, v in r.items() if k != "_id"} for r in b.rows(t)}
              for t in b.db._tables if t not in ours_only}
        assert db == theirs[sid]["db"], sid


@needs_tau2
@needs_bwrap
def test_release_gold_scores_one_and_nothing_zero(tmp_path: Path) -> None:
    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "banking_knowledge"
    pack = import_domain(tmp_path, domain)
    gold = run_scores(tmp_path, "gold", f"scripted:{pack / 'demo' / 'gold_agent.yaml'}",
                      f"scripted:{pack / 'demo' / 'gold_user.yaml'}", **TWO)
    done = tmp_path / "done.yaml"
    done.write_text("default:\n  - say: Done.\n", encoding="utf-8")
    nothing = run_scores(tmp_path, "nothing", f"scripted:{done}", "rules", **TWO)
    # measured on τ²-bench a2c0247: all 97 tasks import
    assert len(gold) == 97 and set(gold.values()) == {1.0}
    assert nothing == dict.fromkeys(gold, 0.0)


TAU2_CALLS = r'''
import inspect, json, sys
from tau2.domains.banking_knowledge.environment import get_environment
from tau2.domains.banking_knowledge.tools import KnowledgeTools
from tau2.environment.toolkit import DISCOVERABLE_ATTR, MUTATES_STATE_ATTR
from tau2.data_model.message import ToolCall

given = json.loads(sys.argv[1])
env = get_environment(retrieval_variant="no_knowledge", read_log_allowlist=set())
for table, rows in given["patch"].items():
    getattr(env.tools.db, table).data.update(rows)
texts = []
for i, (tool, args) in enumerate(given["calls"]):
    for name, arguments in (("unlock_discoverable_agent_tool", {"agent_tool_name": tool}),
                            ("call_discoverable_agent_tool",
                             {"agent_tool_name": tool, "arguments": json.dumps(args)})):
        r = env.get_response(ToolCall(id=f"c{i}", name=name, arguments=arguments))
    texts.append(r.content)
db = env.tools.db.model_dump()
flags = {n: getattr(getattr(KnowledgeTools, n), MUTATES_STATE_ATTR) for n in dir(KnowledgeTools)
         if getattr(getattr(KnowledgeTools, n, None), DISCOVERABLE_ATTR, False)}
sigs = {n: [[p.name, repr(p.default)] for p in
            list(inspect.signature(getattr(KnowledgeTools, n)).parameters.values())[1:]]
        for n in flags}
print(json.dumps({"texts": texts, "flags": flags, "sigs": sigs,
                  "db": {t: v["data"] for t, v in db.items()
                         if isinstance(v, dict) and "data" in v}}, default=str))
'''


@needs_tau2
def test_the_tools_no_gold_uses_answer_as_tau2s(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The discoverable tools no task's gold calls (and the logging of reads and writes), called
    through τ²'s toolkit and ours on the release's database: the same texts and database, and
    every tool τ² has, with its `mutates_state` flag and its parameters."""
    domain = Path(str(CHECKOUT)) / "data" / "tau2" / "domains" / "banking_knowledge"
    pack = tmp_path / "pack"
    run_import("tau2", domain, pack)
    patch = {"debit_cards": {"dbc_spare": {"card_id": "dbc_spare", "account_id": "06",
                                           "status": "ACTIVE"}},
             "bank_account_transaction_history": {
                 "btxn_ours_1": {"transaction_id": "btxn_ours_1", "account_id": "01",
                                 "date": "11/02/2025", "description": "Rho-Bank ATM #12 deposit",
                                 "amount": 200.0, "type": "atm_deposit", "status": "posted"},
                 "btxn_ours_2": {"transaction_id": "btxn_ours_2", "account_id": "01",
                                 "date": "11/03/2025", "description": "ATM DEPOSIT - OTHER BANK",
                                 "amount": 80.0, "type": "atm_deposit", "status": "posted"}}}
    activation = {"expiration_date": "11/29", "cvv": "123", "pin": "5739"}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("activate_debit_card_8291", {"card_id": "dbc_9b1c5d7e3a", "last_4_digits": "5291",
                                      **activation}),
        ("activate_debit_card_8291", {"card_id": "dbc_7a3f9c2b1e", "last_4_digits": "2847",
                                      **activation}),
        ("activate_debit_card_8293", {"card_id": "dbc_9b1c5d7e3a", "last_4_digits": "5291",
                                      **activation}),
        ("activate_debit_card_8292", {"card_id": "dbc_4e8d2a6f9c", "last_4_digits": "1111",
                                      **activation}),
        ("activate_debit_card_8292", {"card_id": "dbc_4e8d2a6f9c", "last_4_digits": "8765",
                                      **activation, "pin": "4444"}),
        ("change_debit_card_pin_6285", {"card_id": "dbc_kj93a7b2e1_blue", "current_pin": "1357",
                                        "new_pin": "6543"}),
        ("change_debit_card_pin_6285", {"card_id": "dbc_kj93a7b2e1_blue", "current_pin": "1357",
                                        "new_pin": "2468"}),
        ("change_debit_card_pin_6285", {"card_id": "dbc_4e8d2a6f9c", "current_pin": "1357",
                                        "new_pin": "2468"}),
        ("set_debit_card_recurring_block_7382", {"card_id": "dbc_kj93a7b2e1_blue",
                                                 "block_recurring": True}),
        ("set_debit_card_recurring_block_7382", {"card_id": "dbc_4e8d2a6f9c",
                                                 "block_recurring": False}),
        ("set_debit_card_recurring_block_7382", {"card_id": "dbc_none", "block_recurring": True}),
        ("get_atm_deposit_images_8473", {"transaction_id": "btxn_ours_1"}),
        ("get_atm_deposit_images_8473", {"transaction_id": "btxn_ours_2"}),
        ("get_atm_deposit_images_8473", {"transaction_id": "btxn_bd30d42f67a2"}),
        ("get_atm_deposit_images_8473", {"transaction_id": "btxn_none"}),
        ("example_agent_tool_0000", {}),
        # reads τ² does not log unless the gold makes them; writes it always logs
        ("get_all_user_accounts_by_user_id_3847", {"user_id": "kj93a7b2e1"}),
        ("get_user_dispute_history_7291", {"user_id": "kj93a7b2e1"}),
        ("open_bank_account_4821", {"user_id": "kj93a7b2e1", "account_type": "business_savings",
                                    "account_class": "X"}),
        ("transfer_funds_between_bank_accounts_7291", {"source_account_id": "chk_kj93a7b2e1_1",
                                                       "destination_account_id": "chk_none",
                                                       "amount": 5}),
    ]
    theirs = json.loads(subprocess.run(
        [str(PYTHON), "-c", TAU2_CALLS, json.dumps({"patch": patch, "calls": calls})],
        capture_output=True, text=True, check=True, cwd=str(CHECKOUT), timeout=600,
        env={**os.environ, "TAU2_DATA_DIR": str(Path(str(CHECKOUT)) / "data")},
    ).stdout.strip().splitlines()[-1])
    b = Bank(monkeypatch, pack, {"banking": patch})
    tools = b.mods["agent"].DISCOVERABLE
    assert {n: w for n, (_, w) in tools.items()} == theirs["flags"]
    # the same parameters and defaults: a wrong call fails with τ²'s words
    assert {n: [[p.name, repr(p.default)] for p in
                list(inspect.signature(f).parameters.values())[1:]]
            for n, (f, _) in tools.items()} == theirs["sigs"]
    for (tool, args), tau in zip(calls, theirs["texts"], strict=True):
        b("unlock_discoverable_agent_tool", agent_tool_name=tool)
        mine = b("call_discoverable_agent_tool", agent_tool_name=tool, arguments=json.dumps(args))
        assert mine == tau, (tool, args)
    db = {t: {r["_id"]: {k: v for k, v in r.items() if k != "_id"} for r in b.rows(t)}
          for t in b.db._tables if t not in ("unlocked_agent_tools", "read_log_allowlist")}
    assert db == theirs["db"]
    assert {r["tool_name"] for r in b.rows("agent_discoverable_tools")} >= {
        "example_agent_tool_0000", "open_bank_account_4821",
        "transfer_funds_between_bank_accounts_7291"}


def test_the_simulator_prompt_and_tool_lists_follow_each_tasks_user_tools() -> None:
    # τ²'s prompt has tool guidelines only for a customer offered tools: with tasks of both
    # kinds the template chooses by the session's `user_tools`; each task whose list is not
    # all of the customer's tools gets its own (`user.tools`)
    from jinja2 import Environment

    from benchpack.compiler.importers import tau2_dialogue as dialogue

    extract = {"user_prompts": [{"prefix": "WITH TOOLS\n", "suffix": ""},
                                {"prefix": "PLAIN\n", "suffix": ""}],
               "user_tools": [{"name": "a"}, {"name": "b"}],
               "tasks": [{"id": "t1", "user_prompt": 0, "user_tools": ["b"]},
                         {"id": "t2", "user_prompt": 1, "user_tools": []},
                         {"id": "t3", "user_prompt": 0, "user_tools": ["a", "b"]}]}
    template = Environment().from_string(dialogue.user_template(extract))
    assert template.render(scenario="S", user_tools=["b"]) == "WITH TOOLS\nS"
    assert template.render(scenario="S", user_tools=[]) == "PLAIN\nS"
    assert dialogue.task_user_tools(extract) == {"t1": ["b"], "t2": []}
    # one kind of task: one text, as before
    one = {**extract, "user_prompts": extract["user_prompts"][:1], "tasks": extract["tasks"][:1]}
    assert dialogue.user_template(one) == "{% raw %}WITH TOOLS\n{% endraw %}{{ scenario }}"
