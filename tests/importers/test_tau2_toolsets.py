"""Our τ² toolsets (issue 23, WP-T), in process: τ²'s behaviour computed by hand on our own
fixtures — result texts, error texts, the unrounded payment and the last-variant prices (and
their `--fix` variants), lookups that only lower-case, pydantic's wording, what a call that
fails halfway leaves written. `bench parity tau2` checks the same against τ²'s own code when a
checkout is at hand; these run everywhere."""

from __future__ import annotations

import copy
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler.importers.tau2_parity import TOOLS_DIR, toolset_source
from benchpack.runtime.env.pytools import API
from benchpack.runtime.env.services import ServiceState
from benchpack.specs.plan import PlanService

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tau2"
KEYS = {"products": "product_id", "users": "user_id", "orders": "order_id",
        "tasks": "task_id"}


@pytest.fixture(autouse=True, scope="module")
def benchpack_tools() -> Any:
    """The sandbox's `benchpack_tools` (State, ToolError), importable in process."""
    mod = types.ModuleType("benchpack_tools")
    exec(API, mod.__dict__)
    sys.modules["benchpack_tools"] = mod
    yield mod
    del sys.modules["benchpack_tools"]


class Tools:
    """A domain module as the pack gets it (prelude inlined), over a State of `db`."""

    def __init__(self, domain: str, db: dict[str, Any], fixes: tuple[str, ...] = ()) -> None:
        source = toolset_source(TOOLS_DIR / f"{domain}.py", "2.14", fixes)
        self.module = types.ModuleType(domain)
        exec(compile(source, f"{domain}.py", "exec"), self.module.__dict__)
        plan = PlanService.model_validate({"name": domain, "operations": [], "tables": {
            t: {"key": KEYS[t], "rows": list(rows.values())} for t, rows in db.items()}})
        svc = ServiceState(plan)
        self.state = sys.modules["benchpack_tools"].State(svc.snapshot(), svc.key_info())

    def __call__(self, tool: str, **args: Any) -> Any:
        fn = getattr(self.module, tool)
        self.state._begin()
        if "db" in fn.__code__.co_varnames[:fn.__code__.co_argcount]:
            args["db"] = self.state
        return fn(**args)

    def error(self, tool: str, **args: Any) -> str:
        with pytest.raises(Exception) as exc:
            self(tool, **args)
        return str(exc.value)

    def row(self, table: str, key: str) -> dict[str, Any]:
        return dict(self.state.get(table, key))


def _retail() -> dict[str, Any]:
    return copy.deepcopy(json.loads((FIX / "retail" / "db.json").read_text(encoding="utf-8")))


def test_results_are_tau2s_texts() -> None:
    t = Tools("retail", _retail())
    order = json.loads((FIX / "retail" / "db.json").read_text())["orders"]["#W1000001"]
    # a model: json.dumps of its dump, ASCII only, numbers as numbers
    assert t("get_order_details", order_id="#W1000001") == json.dumps(order)
    assert "L\\u00f3pez" in t("get_user_details", user_id="ana_lopez_1000")
    assert t("find_user_id_by_email", email="ANA.LOPEZ@example.com") == "ana_lopez_1000"
    assert t("list_all_product_types") == '{"Desk Lamp": "1000000001", "Mug": "1000000002"}'
    assert t("calculate", expression="(40 + 10.255) * 1") == "50.26"
    assert t("transfer_to_human_agents", summary="x") == "Transfer successful"


def test_lookups_only_lower_case() -> None:
    t = Tools("retail", _retail())
    assert t("find_user_id_by_name_zip", first_name="ANA", last_name="lÓpez",
             zip="94110") == "ana_lopez_1000"
    for first, last in (("Ana", "Lopez"), (" Ana", "López"), ("Ana", "López ")):
        assert t.error("find_user_id_by_name_zip", first_name=first, last_name=last,
                       zip="94110") == "User not found"


def test_errors_are_tau2s_in_tau2s_order() -> None:
    t = Tools("retail", _retail())
    assert t.error("get_order_details", order_id="#W9") == "Order not found"
    assert t.error("get_order_details", order_id=5) == "Order not found"
    assert t.error("get_order_details", order_id=["#W1000001"]) == "unhashable type: 'list'"
    assert t.error("get_order_details") == ("RetailTools.get_order_details() missing 1 "
                                            "required positional argument: 'order_id'")
    assert t.error("get_order_details", order_id="#W1000001", x=1) == (
        "RetailTools.get_order_details() got an unexpected keyword argument 'x'")
    # the status is checked before the reason
    assert t.error("cancel_pending_order", order_id="#W1000002", reason="because") == \
        "Non-pending order cannot be cancelled"
    assert t.error("cancel_pending_order", order_id="#W1000001", reason="because") == \
        "Invalid reason"
    assert t.error("modify_pending_order_items", order_id="#W1000001",
                   item_ids=["2000000001"], new_item_ids=["2000000003"],
                   payment_method_id="credit_card_1000002") == \
        "New item 2000000003 not found or available"
    assert t.error("exchange_delivered_order_items", order_id="#W1000002",
                   item_ids=["2000000011"] * 3, new_item_ids=[], payment_method_id="x") == \
        "Number of 2000000011 not found."
    assert t.error("calculate", expression="2^3") == "Invalid characters in expression"


def test_a_refused_address_reads_as_pydantics_error() -> None:
    t = Tools("retail", _retail())
    text = t.error("modify_user_address", user_id="ana_lopez_1000", address1=12,
                   address2="", city="Verrin", state=None, country="USA", zip="94110")
    link = "    For further information visit https://errors.pydantic.dev/2.14/v/string_type"
    assert text == "\n".join([
        "2 validation errors for UserAddress", "address1",
        "  Input should be a valid string [type=string_type, input_value=12, input_type=int]",
        link, "state",
        "  Input should be a valid string [type=string_type, input_value=None, "
        "input_type=NoneType]", link])


def test_pydantic_cuts_long_inputs_by_bytes() -> None:
    t = Tools("retail", _retail())
    short = t.module.Tau2.short_repr
    assert short(list(range(15))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]"
    assert short(list(range(16))) == "[0, 1, 2, 3, 4, 5, 6, 7, ... 10, 11, 12, 13, 14, 15]"
    assert short(["é" * 60]) == "['" + "é" * 11 + "..." + "é" * 11 + "']"


def _two_item_change(fixes: tuple[str, ...] = (), lamp: float = 45.5, mug: float = 12.25,
                     pay: str = "credit_card_1000002") -> tuple[Tools, dict[str, Any]]:
    db = _retail()
    db["products"]["1000000001"]["variants"]["2000000002"]["price"] = lamp
    db["products"]["1000000002"]["variants"]["2000000012"]["price"] = mug
    db["users"]["ana_lopez_1000"]["payment_methods"]["gift_card_1000001"]["balance"] = 100.0
    t = Tools("retail", db, fixes)
    out = json.loads(t("modify_pending_order_items", order_id="#W1000001",
                       item_ids=["2000000001", "2000000011"],
                       new_item_ids=["2000000002", "2000000012"], payment_method_id=pay))
    return t, out


def test_item_changes_take_the_last_variants_price_and_options() -> None:
    _, out = _two_item_change()
    assert [(i["item_id"], i["price"], i["options"]) for i in out["items"]] == [
        ("2000000002", 12.25, {"size": "large"}), ("2000000012", 12.25, {"size": "large"})]
    assert out["payment_history"][-1] == {"transaction_type": "payment", "amount": 7.75,
                                          "payment_method_id": "credit_card_1000002"}
    assert out["status"] == "pending (item modified)"
    _, fixed = _two_item_change(("item-prices",))
    assert [(i["price"], i["options"]) for i in fixed["items"]] == [
        (45.5, {"color": "white", "power": "battery"}), (12.25, {"size": "large"})]


def test_the_price_difference_is_paid_unrounded() -> None:
    diff = (40.1 - 40.0) + (10.2 - 10.0)  # 0.29999999999999893, as τ² sums it
    assert diff != round(diff, 2)
    t, out = _two_item_change(lamp=40.1, mug=10.2, pay="gift_card_1000001")
    assert out["payment_history"][-1]["amount"] == diff
    assert t.row("users", "ana_lopez_1000")["payment_methods"]["gift_card_1000001"][
        "balance"] == round(100.0 - diff, 2)
    _, fixed = _two_item_change(("payment-rounding",), lamp=40.1, mug=10.2)
    assert fixed["payment_history"][-1]["amount"] == 0.3


def test_a_call_that_fails_halfway_leaves_what_tau2_leaves() -> None:
    """A cancellation refunds payment by payment: the gift card is credited, then the next
    payment's method is missing. τ² keeps the credit (its objects changed in place)."""
    db = _retail()
    db["orders"]["#W1000001"]["payment_history"].append(
        {"transaction_type": "payment", "amount": 5.0, "payment_method_id": "paypal_gone"})
    t = Tools("retail", db)
    assert t.error("cancel_pending_order", order_id="#W1000001",
                   reason="no longer needed") == "Payment method not found"
    [change] = t.state._journal
    assert change["table"] == "users" and \
        change["row"]["payment_methods"]["gift_card_1000001"]["balance"] == 70.0
    assert t.row("orders", "#W1000001")["status"] == "pending"


def test_mock_tools() -> None:
    db = {"tasks": {"task_1": {"task_id": "task_1", "title": "A", "description": None,
                               "status": "pending"},
                    "task_3": {"task_id": "task_3", "title": "C", "description": "c",
                               "status": "completed"}},
          "users": {"user_1": {"user_id": "user_1", "name": "U", "tasks": ["task_1",
                                                                          "task_3"]}}}
    t = Tools("mock", db)
    # the new id is task_<count + 1>: here task_3, which it replaces (as τ² does)
    assert t("create_task", user_id="user_1", title="New") == \
        '{"task_id": "task_3", "title": "New", "description": null, "status": "pending"}'
    assert t.row("users", "user_1")["tasks"] == ["task_1", "task_3", "task_3"]
    assert t.error("create_task", user_id="user_9", title="x") == "User user_9 not found"
    assert t.error("create_task", user_id="user_1", title=None).startswith(
        "1 validation error for Task\ntitle\n  Input should be a valid string")
    # a status is stored as given: τ² assigns it without a check
    assert json.loads(t("update_task_status", task_id="task_1", status="done"))["status"] == \
        "done"
    assert t.error("update_task_status", task_id="task_9", status="done") == \
        "Task task_9 not found"
    assert t("get_users") == json.dumps([t.row("users", "user_1")])
    assert t.error("get_users", x=1) == \
        "MockTools.get_users() got an unexpected keyword argument 'x'"


def test_tau2_text_of_plain_values() -> None:
    t = Tools("mock", {"tasks": {}, "users": {}})
    text = t.module.Tau2.text
    assert text({"a": 1, "b": [2.5, True, None]}) == '{"a": "1", "b": ["2.5", "True", null]}'
    assert text(t.module.Model({"a": 1})) == '{"a": 1}'
    assert text("as is") == "as is"
