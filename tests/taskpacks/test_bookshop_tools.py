"""The bookshop-service pack's tools, standalone: every business rule and error path against a
tiny in-test `State`, and each task's gold actions replayed on the initial tables.

The runtime's python-tool worker is not needed: `benchpack_tools` (the API module the sandbox
injects) is faked here with the same surface (design12 §1), so these tests pin the pack content
whatever the state of the engine."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
import types
from typing import Any

import pytest
import yaml

from conftest import TASKPACKS

PACK = TASKPACKS / "bookshop-service"
KEYS = {"users": "user_id", "products": "product_id", "orders": "order_id"}


class ToolError(Exception):
    """Stands in for benchpack_tools.ToolError."""


class FakeState:
    """A dict of tables with the State API; reads return copies so a missed `put` shows."""

    def __init__(self, tables: dict[str, list[dict]]) -> None:
        self.tables = {name: {row[KEYS[name]]: copy.deepcopy(row) for row in rows}
                       for name, rows in tables.items()}
        self.writes: list[tuple[str, str]] = []

    def get(self, table: str, key: str) -> dict:
        if key not in self.tables[table]:
            raise ToolError(f"{table} {key} not found")
        return copy.deepcopy(self.tables[table][key])

    def find(self, table: str, **equals: Any) -> list[dict]:
        return [copy.deepcopy(r) for r in self.tables[table].values()
                if all(r.get(k) == v for k, v in equals.items())]

    def rows(self, table: str) -> list[dict]:
        return [copy.deepcopy(r) for r in self.tables[table].values()]

    def put(self, table: str, row: dict) -> None:
        self.tables[table][row[KEYS[table]]] = copy.deepcopy(row)
        self.writes.append((table, row[KEYS[table]]))

    def delete(self, table: str, key: str) -> None:
        del self.tables[table][key]
        self.writes.append((table, key))

    def next_id(self, table: str) -> str:
        return str(len(self.tables[table]) + 1)

    def snapshot(self) -> str:
        return json.dumps(self.tables, sort_keys=True)


def _load_shop() -> types.ModuleType:
    api = types.ModuleType("benchpack_tools")
    api.State = FakeState  # type: ignore[attr-defined]
    api.ToolError = ToolError  # type: ignore[attr-defined]
    saved = sys.modules.get("benchpack_tools")
    sys.modules["benchpack_tools"] = api
    try:
        spec = importlib.util.spec_from_file_location("bookshop_shop", PACK / "tools" / "shop.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("benchpack_tools", None)
        else:
            sys.modules["benchpack_tools"] = saved
    return module


shop = _load_shop()
TABLES = {name: json.loads((PACK / "data" / f"{name}.json").read_text(encoding="utf-8")) for name in KEYS}


@pytest.fixture
def db() -> FakeState:
    return FakeState(TABLES)


def _episodes() -> dict[str, dict]:
    sessions = {}
    for path in sorted((PACK / "episodes").glob("*.yaml")):
        for episode in yaml.safe_load(path.read_text(encoding="utf-8"))["episodes"]:
            for session in episode["sessions"]:
                sessions[session["id"]] = session
    return sessions


SESSIONS = _episodes()


# ------------------------------------------------------------------------------------- data


def test_data_has_the_size_and_shapes_the_tasks_need() -> None:
    users, products, orders = TABLES["users"], TABLES["products"], TABLES["orders"]
    assert len(users) >= 20 and len(products) >= 15 and len(orders) >= 30
    assert {o["status"] for o in orders} >= {"pending", "processed", "delivered", "cancelled"}
    assert any(m["source"] == "gift_card" and "balance" in m
               for u in users for m in u["payment_methods"].values())
    user_ids = {u["user_id"] for u in users}
    items = {iid: v for p in products for iid, v in p["variants"].items()}
    for order in orders:
        assert order["user_id"] in user_ids
        owner = next(u for u in users if u["user_id"] == order["user_id"])
        assert order["order_id"] in owner["orders"]
        paid = sum(e["amount"] for e in order["payment_history"] if e["transaction_type"] == "payment")
        assert round(paid, 2) == round(sum(i["price"] for i in order["items"]), 2), order["order_id"]
        for it in order["items"]:
            assert items[it["item_id"]]["price"] == it["price"]
        for entry in order["payment_history"]:
            assert entry["payment_method_id"] in owner["payment_methods"], order["order_id"]
    assert len({u["email"] for u in users}) == len(users)


# ------------------------------------------------------------------------- identification


def test_find_user_by_email_ignores_case_and_spaces(db: FakeState) -> None:
    assert shop.find_user_id_by_email(db, " Lena.Fischer72@MAILBOX.example ") == "lena_fischer_5430"
    with pytest.raises(ToolError, match="User not found"):
        shop.find_user_id_by_email(db, "nobody@mailbox.example")


def test_find_user_by_name_and_zip(db: FakeState) -> None:
    assert shop.find_user_id_by_name_zip(db, "tomas", "REYES", "60614") == "tomas_reyes_1888"
    with pytest.raises(ToolError, match="User not found"):
        shop.find_user_id_by_name_zip(db, "Tomas", "Reyes", "60615")


def test_lookups_and_missing_ids(db: FakeState) -> None:
    assert shop.get_user_details(db, "chen_wei_1449")["address"]["zip"] == "94110"
    assert shop.get_order_details(db, "#B20417")["status"] == "pending"
    assert "11024813" in shop.get_product_details(db, "P1010")["variants"]
    assert shop.list_products(db)["Quiet Algorithms"] == "P1003"
    listed = shop.list_user_orders(db, "grace_okafor_9263")
    assert [o["order_id"] for o in listed][:2] == ["#B20480", "#B20481"]
    assert listed[0] == {"order_id": "#B20480", "status": "pending", "total": 27.0,
                         "items": ["Letters from Ninth Street"]}
    for call, arg, what in ((shop.get_user_details, "ghost_1", "User ghost_1"),
                            (shop.get_order_details, "B20417", "Order B20417"),
                            (shop.get_product_details, "11024813", "Product 11024813"),
                            (shop.list_user_orders, "ghost_1", "User ghost_1")):
        with pytest.raises(ToolError, match=f"{what} not found"):
            call(db, arg)
    assert db.writes == []


# ------------------------------------------------------------------------------- cancel


def test_cancel_refunds_a_card_and_records_the_reason(db: FakeState) -> None:
    order = shop.cancel_pending_order(db, "#B20417", "ordered by mistake")
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 52.0,
                                            "payment_method_id": "credit_card_7469615"}
    assert db.get("orders", "#B20417")["status"] == "cancelled"


def test_cancel_restores_the_gift_card_balance(db: FakeState) -> None:
    shop.cancel_pending_order(db, "#B20433", "no longer needed")
    card = db.get("users", "tomas_reyes_1888")["payment_methods"]["gift_card_7710452"]
    assert card["balance"] == 54.5                      # 12.50 + 42.00


def test_cancel_after_an_item_change_refunds_the_net_per_method(db: FakeState) -> None:
    # 31 + 18 paid by card; paperback swap refunds 13 to the gift card (5 → 18);
    # cancelling refunds 49 to the card and nothing more to the gift card: net per method.
    shop.modify_pending_order_items(db, "#B20472", ["04012066"], ["04023302"], "gift_card_2286014")
    order = shop.cancel_pending_order(db, "#B20472", "no longer needed")
    refunds = [e for e in order["payment_history"] if e["transaction_type"] == "refund"]
    assert refunds == [{"transaction_type": "refund", "amount": 13.0, "payment_method_id": "gift_card_2286014"},
                       {"transaction_type": "refund", "amount": 49.0, "payment_method_id": "credit_card_5093317"}]
    assert db.get("users", "samuel_osei_9767")["payment_methods"]["gift_card_2286014"]["balance"] == 18.0


@pytest.mark.parametrize("order_id, status", [("#B20388", "delivered"), ("#B20460", "processed"),
                                              ("#B20415", "cancelled")])
def test_only_pending_orders_can_be_cancelled(db: FakeState, order_id: str, status: str) -> None:
    with pytest.raises(ToolError, match=f"is {status}: only pending orders can be cancelled"):
        shop.cancel_pending_order(db, order_id, "no longer needed")
    assert db.writes == []


def test_cancel_reason_must_be_one_of_two(db: FakeState) -> None:
    with pytest.raises(ToolError, match="Invalid reason"):
        shop.cancel_pending_order(db, "#B20417", "found it cheaper")
    assert db.writes == []


# ------------------------------------------------------------------------------ address


def test_pending_order_address_change_and_its_refusals(db: FakeState) -> None:
    order = shop.modify_pending_order_address(db, "#B20451", " 48 Cedar Hollow Road ", "Apt 2",
                                              "Asheville", "NC", "USA", "28801")
    assert order["address"] == {"address1": "48 Cedar Hollow Road", "address2": "Apt 2", "city": "Asheville",
                                "state": "NC", "country": "USA", "zip": "28801"}
    # the user's default address is untouched
    assert db.get("users", "priya_natarajan_2944")["address"]["zip"] == "78704"
    with pytest.raises(ToolError, match="is processed: only a pending order's address"):
        shop.modify_pending_order_address(db, "#B20460", "1 A St", "", "X", "WA", "USA", "98004")
    with pytest.raises(ToolError, match="Address is missing: city, zip"):
        shop.modify_pending_order_address(db, "#B20417", "1 A St", "", " ", "WA", "USA", "")


def test_user_address_change(db: FakeState) -> None:
    user = shop.modify_user_address(db, "jun_watanabe_5658", "1507 Pine Crest Drive", "Unit 4",
                                    "Bellevue", "WA", "USA", "98004")
    assert user["address"]["zip"] == "98004"
    assert db.get("orders", "#B20460")["address"]["zip"] == "98103"     # orders keep theirs
    with pytest.raises(ToolError, match="User ghost_1 not found"):
        shop.modify_user_address(db, "ghost_1", "1 A St", "", "X", "WA", "USA", "98004")


# ------------------------------------------------------------------------ item changes


def test_upgrade_charges_the_difference_to_a_card(db: FakeState) -> None:
    order = shop.modify_pending_order_items(db, "#B20466", ["11013814"], ["11024813"], "credit_card_5247467")
    assert order["status"] == "pending (items modified)"
    assert order["items"][0]["item_id"] == "11024813" and order["items"][0]["price"] == 85.0
    assert order["items"][0]["options"]["edition"] == "deluxe slipcase"
    assert order["payment_history"][-1] == {"transaction_type": "payment", "amount": 37.0,
                                            "payment_method_id": "credit_card_5247467"}
    with pytest.raises(ToolError, match="already been modified once"):
        shop.modify_pending_order_items(db, "#B20466", ["11024813"], ["11013814"], "credit_card_5247467")
    # a modified order can still be cancelled, and its address changed
    shop.modify_pending_order_address(db, "#B20466", "2 B St", "", "Boston", "MA", "USA", "02130")


def test_downgrade_refunds_to_a_gift_card(db: FakeState) -> None:
    order = shop.modify_pending_order_items(db, "#B20472", ["04012066"], ["04023302"], "gift_card_2286014")
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 13.0,
                                            "payment_method_id": "gift_card_2286014"}
    assert db.get("users", "samuel_osei_9767")["payment_methods"]["gift_card_2286014"]["balance"] == 18.0
    assert order["items"][1]["item_id"] == "13011580"                     # the tote stays


def test_gift_card_must_cover_a_charge(db: FakeState) -> None:
    # Samuel's gift card holds 5.00; the tote natural → large costs 4.00 more (fits), but
    # hardcover → nothing pricier exists, so use Tomas: 12.50 on the card, signed edition +13.00.
    with pytest.raises(ToolError, match=r"Insufficient gift card balance: 12\.50 available, 13\.00 needed"):
        shop.modify_pending_order_items(db, "#B20433", ["02012517"], ["02037831"], "gift_card_7710452")
    assert db.writes == []
    shop.modify_pending_order_items(db, "#B20472", ["13011580"], ["13047890"], "gift_card_2286014")
    assert db.get("users", "samuel_osei_9767")["payment_methods"]["gift_card_2286014"]["balance"] == 1.0


@pytest.mark.parametrize("items, new, method, message", [
    (["11013814"], ["04023302"], "credit_card_5247467", "Item 04023302 is not a variant of product P1010"),
    (["99999999"], ["11024813"], "credit_card_5247467", "Item 99999999 is not in order #B20466"),
    (["11013814"], ["11013814"], "credit_card_5247467", "same as the old one"),
    (["11013814"], [], "credit_card_5247467", "same length"),
    ([], [], "credit_card_5247467", "No items given"),
    (["11013814"], ["11024813"], "credit_card_5093317", "does not belong to user olga_petrova_8244"),
    (["11013814", "11013814"], ["11024813", "11024813"], "credit_card_5247467", "listed too often"),
])
def test_item_change_refusals(db: FakeState, items: list[str], new: list[str], method: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        shop.modify_pending_order_items(db, "#B20466", items, new, method)
    assert db.writes == []


def test_out_of_stock_variant_and_non_pending_order(db: FakeState) -> None:
    with pytest.raises(ToolError, match="13021078 is out of stock"):
        shop.modify_pending_order_items(db, "#B20472", ["13011580"], ["13021078"], "credit_card_5093317")
    with pytest.raises(ToolError, match="is delivered: only pending orders can be modified"):
        shop.modify_pending_order_items(db, "#B20395", ["16012637"], ["16023127"], "paypal_8506975")
    assert db.writes == []


# ---------------------------------------------------------------------- returns/exchanges


def test_return_to_a_gift_card_credits_it_at_once(db: FakeState) -> None:
    order = shop.return_delivered_order_items(db, "#B20388", ["05011572"], "gift_card_6645120")
    assert order["status"] == "return requested" and order["return_items"] == ["05011572"]
    assert order["payment_history"][-1] == {"transaction_type": "refund", "amount": 30.0,
                                            "payment_method_id": "gift_card_6645120"}
    assert db.get("users", "chen_wei_1449")["payment_methods"]["gift_card_6645120"]["balance"] == 50.0
    with pytest.raises(ToolError, match="is return requested: only delivered orders can be returned"):
        shop.return_delivered_order_items(db, "#B20388", ["15019114"], "credit_card_8802145")


def test_return_to_the_original_card_and_refusals(db: FakeState) -> None:
    order = shop.return_delivered_order_items(db, "#B20402", ["09019165", "01022005"], "credit_card_8551153")
    assert order["payment_history"][-1]["amount"] == 37.5
    fresh = FakeState(TABLES)
    # Maya's credit card is hers but not the original method (PayPal) nor a gift card
    with pytest.raises(ToolError, match="original payment method or to a gift card"):
        shop.return_delivered_order_items(fresh, "#B20395", ["16012637"], "credit_card_4618788")
    with pytest.raises(ToolError, match="is pending: only delivered orders can be returned"):
        shop.return_delivered_order_items(fresh, "#B20417", ["16012637"], "credit_card_7469615")
    with pytest.raises(ToolError, match="Item 11013814 is not in order #B20395"):
        shop.return_delivered_order_items(fresh, "#B20395", ["11013814"], "paypal_8506975")
    with pytest.raises(ToolError, match="No items given"):
        shop.return_delivered_order_items(fresh, "#B20395", [], "paypal_8506975")
    assert fresh.writes == []


def test_exchange_same_price_keeps_items_and_records_the_exchange(db: FakeState) -> None:
    order = shop.exchange_delivered_order_items(db, "#B20395", ["16012637"], ["16023127"], "paypal_8506975")
    assert order["status"] == "exchange requested"
    assert order["exchange"] == {"item_ids": ["16012637"], "new_item_ids": ["16023127"], "price_difference": 0.0}
    assert [i["item_id"] for i in order["items"]] == ["16012637", "14018980"]   # what was delivered
    assert len(order["payment_history"]) == 1                                   # nothing to settle
    with pytest.raises(ToolError, match="only delivered orders can be exchanged"):
        shop.exchange_delivered_order_items(db, "#B20395", ["14018980"], ["14022207"], "paypal_8506975")


def test_exchange_with_a_price_difference_and_refusals(db: FakeState) -> None:
    # Chen: reading light white battery 16.00 → black USB 19.00: 3.00 charged to the card
    order = shop.exchange_delivered_order_items(db, "#B20388", ["15019114"], ["15026589"], "credit_card_8802145")
    assert order["payment_history"][-1] == {"transaction_type": "payment", "amount": 3.0,
                                            "payment_method_id": "credit_card_8802145"}
    fresh = FakeState(TABLES)
    with pytest.raises(ToolError, match="15031449 is out of stock"):
        shop.exchange_delivered_order_items(fresh, "#B20388", ["15019114"], ["15031449"], "credit_card_8802145")
    with pytest.raises(ToolError, match="is pending: only delivered orders can be exchanged"):
        shop.exchange_delivered_order_items(fresh, "#B20417", ["16012637"], ["16023127"], "credit_card_7469615")
    assert fresh.writes == []


# ------------------------------------------------------------------------- the rest


def test_transfer_needs_a_summary(db: FakeState) -> None:
    assert shop.transfer_to_human_agents(db, "price adjustment on #B20377") == "Transfer successful"
    with pytest.raises(ToolError, match="summary"):
        shop.transfer_to_human_agents(db, "  ")


@pytest.mark.parametrize("expression, value", [("85.00 - 48.00", 37.0), ("(31 - 18) * 2", 26.0),
                                               ("10 / 3", 3.33), ("-2.5 + +1", -1.5)])
def test_calculate(db: FakeState, expression: str, value: float) -> None:
    assert shop.calculate(db, expression) == value


@pytest.mark.parametrize("expression, message", [
    ("__import__('os').system('true')", "Only numbers"), ("2 ** 10", "Only numbers"),
    ("1 +", "Not an arithmetic expression"), ("1 / 0", "Division by zero"),
    ("'a' * 3", "Only numbers"), ("1" * 201, "too long"), ("True + 1", "Only numbers"),
])
def test_calculate_refuses_anything_else(db: FakeState, expression: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        shop.calculate(db, expression)


# --------------------------------------------------------------------- gold replays

# What each task says the final tables show, checked after replaying its gold actions.
EXPECTED: dict[str, Any] = {
    "cancel-by-mistake": lambda db: db.get("orders", "#B20417")["status"] == "cancelled",
    "cancel-gift-card": lambda db: (db.get("orders", "#B20433")["status"] == "cancelled" and
                                    db.get("users", "tomas_reyes_1888")["payment_methods"]["gift_card_7710452"]["balance"] == 54.5),
    "order-address": lambda db: (db.get("orders", "#B20451")["address"]["city"] == "Asheville" and
                                 db.get("users", "priya_natarajan_2944")["address"]["zip"] == "78704"),
    "upgrade-edition": lambda db: (db.get("orders", "#B20466")["items"][0]["price"] == 85.0 and
                                   db.get("orders", "#B20466")["payment_history"][-1]["amount"] == 37.0),
    "paperback-refund-gift-card": lambda db: (
        db.get("users", "samuel_osei_9767")["payment_methods"]["gift_card_2286014"]["balance"] == 18.0 and
        db.get("orders", "#B20472")["items"][1]["item_id"] == "13011580"),
    "cancel-then-address": lambda db: (db.get("orders", "#B20480")["status"] == "cancelled" and
                                       db.get("orders", "#B20481")["address"]["city"] == "Savannah"),
    "return-to-gift-card": lambda db: (
        db.get("orders", "#B20388")["status"] == "return requested" and
        db.get("users", "chen_wei_1449")["payment_methods"]["gift_card_6645120"]["balance"] == 50.0),
    "exchange-notebook": lambda db: db.get("orders", "#B20395")["exchange"]["new_item_ids"] == ["16023127"],
    "refuse-delivered-cancel": None,      # nothing changes
    "default-address": lambda db: (db.get("users", "jun_watanabe_5658")["address"]["city"] == "Bellevue" and
                                   db.get("orders", "#B20460")["address"]["zip"] == "98103"),
    "processed-no-change": None,
    "price-adjustment-transfer": None,
}


def test_every_task_is_listed_here_and_there_are_at_least_ten() -> None:
    assert set(SESSIONS) == set(EXPECTED)
    assert len(SESSIONS) >= 10
    for sid, session in SESSIONS.items():
        assert session["protocol"] == "instructed_user", sid
        assert {"reason", "known", "unknown"} <= set(session["user"]), sid
        assert session["score"]["reward"], sid


@pytest.mark.parametrize("session_id", sorted(EXPECTED))
def test_gold_actions_replay_and_change_what_the_task_says(session_id: str) -> None:
    db = FakeState(TABLES)
    before = db.snapshot()
    for action in SESSIONS[session_id]["gold"]["actions"]:
        args = dict(action["args"])
        if action["tool"] == "transfer_to_human_agents":
            args.setdefault("summary", "customer asks for a price adjustment")   # `subset` match
        getattr(shop, action["tool"])(db, **args)
    check = EXPECTED[session_id]
    if check is None:
        assert db.snapshot() == before, f"{session_id}: a refusal/transfer task must not change the tables"
    else:
        assert db.snapshot() != before and check(db), session_id


def test_the_delivered_cancel_refusal_holds_even_if_the_agent_tries(db: FakeState) -> None:
    before = db.snapshot()
    with pytest.raises(ToolError, match="only pending orders can be cancelled"):
        shop.cancel_pending_order(db, "#B20402", "no longer needed")
    with pytest.raises(ToolError, match="only a pending order's address"):
        shop.modify_pending_order_address(db, "#B20460", "1507 Pine Crest Drive", "Unit 4",
                                          "Bellevue", "WA", "USA", "98004")
    assert db.snapshot() == before


def test_gold_tools_exist_and_every_public_function_has_documented_args() -> None:
    import inspect
    public = {n: f for n, f in vars(shop).items() if inspect.isfunction(f) and not n.startswith("_")
              and f.__module__ == shop.__name__}
    assert len(public) >= 10
    for session in SESSIONS.values():
        for action in session["gold"]["actions"]:
            assert action["tool"] in public
    for name, func in public.items():
        params = [p for p in inspect.signature(func).parameters if p != "db"]
        doc = func.__doc__ or ""
        for p in params:
            assert f"    {p}: " in doc, f"{name}: parameter {p} has no Args: entry"


# ------------------------------------------------------------------------- the demo

DEMO_AGENT = yaml.safe_load((PACK / "demo" / "agent.yaml").read_text(encoding="utf-8"))["sessions"]
DEMO_USER = yaml.safe_load((PACK / "demo" / "simulator.yaml").read_text(encoding="utf-8"))["sessions"]


def _replay_gold(session_id: str) -> FakeState:
    db = FakeState(TABLES)
    for action in SESSIONS[session_id]["gold"]["actions"]:
        args = dict(action["args"])
        if action["tool"] == "transfer_to_human_agents":
            args.setdefault("summary", "customer asks for a price adjustment")
        getattr(shop, action["tool"])(db, **args)
    return db


@pytest.mark.parametrize("session_id", sorted(EXPECTED))
def test_demo_agent_passes_state_and_actions(session_id: str) -> None:
    """The demo agent's tool calls, run on the initial tables, end in the gold replay's state
    (the `state` component) and include every gold action (the `actions` component)."""
    db = FakeState(TABLES)
    calls = []
    for turn in DEMO_AGENT[session_id]:
        assert isinstance(turn.get("say"), str) and turn["say"].strip(), session_id
        for call in turn.get("tool_calls") or []:
            getattr(shop, call["name"])(db, **call["args"])
            calls.append(call)
    assert db.snapshot() == _replay_gold(session_id).snapshot()
    for action in SESSIONS[session_id]["gold"]["actions"]:
        subset = action.get("match") == "subset"
        assert any(c["name"] == action["tool"] and
                   (all(c["args"].get(k) == v for k, v in action["args"].items()) if subset
                    else c["args"] == action["args"]) for c in calls), (session_id, action)
    # the agent never writes before the customer has answered at least once (confirmation)
    first_write = next((i for i, t in enumerate(DEMO_AGENT[session_id])
                        if any(c["name"] not in READS for c in t.get("tool_calls") or [])), None)
    assert first_write is None or first_write >= 2, session_id


READS = {"find_user_id_by_email", "find_user_id_by_name_zip", "get_user_details", "list_user_orders",
         "get_order_details", "get_product_details", "list_products", "calculate"}


@pytest.mark.parametrize("session_id", sorted(EXPECTED))
def test_demo_customer_has_one_message_per_agent_turn_and_stops(session_id: str) -> None:
    # the opening message comes before the agent's first turn, then one reply per agent turn
    turns = DEMO_USER[session_id]["turns"]
    says = [t for t in turns if "say" in t]
    assert DEMO_USER[session_id]["opening"].strip(), session_id
    assert len(says) + 1 == len(DEMO_AGENT[session_id])
    assert turns[-1].get("stop") in {"done", "transfer", "out_of_scope"}


def test_demo_communicates_what_each_task_asks() -> None:
    import re

    def norm(text: str) -> str:   # design12 §5: case- and separator-insensitive, `#` kept
        return re.sub(r"[\s,_-]+", " ", text.lower()).strip()

    for sid, session in SESSIONS.items():
        said = " ".join(norm(t["say"]) for t in DEMO_AGENT[sid])
        for item in session["score"].get("communicate", []):
            assert norm(item) in said, (sid, item)


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


@pytest.mark.parametrize("path", sorted(str(p.relative_to(PACK)) for p in PACK.rglob("*.yaml")))
def test_no_order_id_is_eaten_by_a_yaml_comment(path: str) -> None:
    """` #B20417` in a plain YAML scalar starts a comment: the text silently ends before it."""
    import re
    text = (PACK / path).read_text(encoding="utf-8")
    loaded = " ".join(_strings(yaml.safe_load(text)))
    raw_ids = re.findall(r"#B\d{5}", "\n".join(line.split("  # ")[0] for line in text.splitlines()
                                             if not line.lstrip().startswith("#")))
    assert sorted(raw_ids) == sorted(re.findall(r"#B\d{5}", loaded))


def test_tool_signatures_use_only_types_the_compiler_derives_schemas_for() -> None:
    """design12 §1: str int float bool, list[T], dict[str, T], Literal[...], T | None; the first
    parameter is the `State`; read with `ast`, as the compiler does (no import)."""
    import ast

    def allowed(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in {"str", "int", "float", "bool"}
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id == "list":
                return allowed(node.slice)
            if node.value.id == "dict" and isinstance(node.slice, ast.Tuple):
                key, value = node.slice.elts
                return isinstance(key, ast.Name) and key.id == "str" and allowed(value)
            if node.value.id == "Literal":
                elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                return all(isinstance(e, ast.Constant) for e in elts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return (allowed(node.left) and isinstance(node.right, ast.Constant) and node.right.value is None)
        return False

    tree = ast.parse((PACK / "tools" / "shop.py").read_text(encoding="utf-8"))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    assert len(functions) >= 10
    for fn in functions:
        first, *rest = fn.args.args
        assert isinstance(first.annotation, ast.Name) and first.annotation.id == "State", fn.name
        for arg in rest:
            assert arg.annotation is not None and allowed(arg.annotation), (fn.name, arg.arg)
        assert ast.get_docstring(fn), fn.name
