"""Our τ² telecom toolsets (issue 24), in process, on benchpack's own fixture: τ²'s behaviour
computed by hand — the phone's network search, status bar and speed test, pydantic's wording of
a refused APN, the operator's overdue bill and refuel arithmetic, and `sync_sides` carrying a
payment and a line's status between the two sides. `bench parity tau2 --domain telecom` checks
the same against τ²'s own code when a checkout is at hand; these run everywhere."""

from __future__ import annotations

import hashlib
import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler.importers import tau2_telecom as tc
from benchpack.compiler.importers.tau2_parity import TOOLS_DIR, toolset_source
from benchpack.runtime.env.pytools import API
from benchpack.runtime.env.services import ServiceState
from benchpack.specs.plan import PlanService

DOMAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tau2_telecom" / "telecom"


@pytest.fixture(scope="module")
def kit() -> Any:
    mod = types.ModuleType("benchpack_tools")
    exec(API, mod.__dict__)
    sys.modules["benchpack_tools"] = mod
    try:
        yield mod
    finally:
        del sys.modules["benchpack_tools"]


class Sides:
    """Both modules as a pack gets them, over one State of both databases (as the runtime's
    toolsets with `services:` hold them)."""

    def __init__(self, kit: Any) -> None:
        tables = {**tc.agent_db(DOMAIN / "db.toml"), **tc.user_db(DOMAIN / "user_db.toml")}
        keys = {t: (tc.SHAPES[t][0][0] if t in tc.AGENT_TABLES else "id") for t in tables}
        plan = PlanService.model_validate({"name": "both", "operations": [], "tables": {
            t: {"key": keys[t], "rows": list(rows.values())} for t, rows in tables.items()}})
        svc = ServiceState(plan)
        self.state = kit.State(svc.snapshot(), svc.key_info())
        self.mods = {}
        for name in ("telecom", "telecom_user"):
            module = types.ModuleType(name)
            exec(compile(toolset_source(TOOLS_DIR / f"{name}.py", "2.14", ()), f"{name}.py",
                         "exec"), module.__dict__)
            self.mods[name] = module

    def __call__(self, tool: str, **args: Any) -> Any:
        """A successful call then the sync, as the runtime's `after_call` does."""
        side = "telecom" if hasattr(self.mods["telecom"], tool) else "telecom_user"
        out = getattr(self.mods[side], tool)(self.state, **args)
        self.mods[side].sync_sides(self.state)
        return out

    def row(self, table: str, key: str) -> dict[str, Any]:
        return self.state.get(table, key)


def test_the_phone_searches_shows_and_measures_as_tau2s(kit: Any) -> None:
    s = Sides(kit)
    # as loaded: τ²'s default signal `good` on 5G, the fixture's battery
    assert s("check_status_bar") == "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 64%"
    s("set_user_info", name="Ana Silva", phone_number="555-000-0001")
    where = s.row("surroundings", "surroundings")
    # L1 is active, roams not, 1.5 GB used of 5.0 + 0.0
    assert (where["line_active"], where["roaming_allowed"],
            where["mobile_data_usage_exceeded"], where["payment_request"]) == (
        True, False, False, None)
    # a search finds 5G at the user's `excellent`
    assert s("toggle_data") == ("Mobile Data is now OFF.\nStatus Bar: 📶⁴ Excellent | 5G | "
                                "📵 Data Disabled | 🔋 64%")
    assert s("run_speed_test") == "Speed test failed: No Connection."
    s("toggle_data")
    # (50 + 500) / 2 × 1.0
    assert s("run_speed_test") == ("Speed Test Result: 275.00 Mbps (Excellent). Connection is "
                                   "very fast.")
    s("toggle_data_saver_mode")  # × 0.2
    assert s("run_speed_test") == ("Speed Test Result: 55.00 Mbps (Good). Connection is good "
                                   "for most activities, including HD streaming.")
    s("set_network_mode_preference", mode="3g_only")  # (1 + 5) / 2 × 0.5 (fair) × 0.2
    assert s("run_speed_test") == ("Speed Test Result: 0.30 Mbps (Very Poor). Connection is "
                                   "very slow. Basic web browsing might be difficult.")
    assert s("set_network_mode_preference", mode="5g").startswith(
        "Failed to set network mode: '5g' is not a valid option. Please use one of: "
        "4g_5g_preferred, 4g_only, 3g_only, 2g_only\nStatus Bar: ")


def test_a_refused_apn_reads_as_pydantics_error(kit: Any) -> None:
    s = Sides(kit)
    with pytest.raises(ValueError) as exc:
        s("set_apn_settings", apn_settings={"apn_name": "x", "foo": 1})
    assert str(exc.value) == (
        "2 validation errors for APNSettings\napn_name\n  Input should be 'internet' or "
        "'broken' [type=enum, input_value='x', input_type=str]\n    For further information "
        "visit https://errors.pydantic.dev/2.14/v/enum\nfoo\n  Extra inputs are not permitted "
        "[type=extra_forbidden, input_value=1, input_type=int]\n    For further information "
        "visit https://errors.pydantic.dev/2.14/v/extra_forbidden")
    # not an object: stored as it is, then every search fails on it, as in τ²
    with pytest.raises(AttributeError, match="'str' object has no attribute 'apn_name'"):
        s("set_apn_settings", apn_settings="internet")
    with pytest.raises(AttributeError, match="'str' object has no attribute 'apn_name'"):
        s("toggle_roaming")


def test_an_overdue_bill_paid_on_the_phone_reaches_the_operator(kit: Any) -> None:
    s = Sides(kit)
    s("set_user_info", name="Ana Silva", phone_number="555-000-0001")
    s("suspend_line_for_overdue_bill", customer_id="C1", line_id="L1", new_bill_id="B9",
      contract_ended=False)
    bill = s.row("bills", "B9")
    # last month's plan price, issued on its first day, due 14 days later
    assert (bill["period_start"], bill["period_end"], bill["due_date"], bill["total_due"],
            bill["status"]) == ("2025-01-01", "2025-01-31", "2025-01-15", 30.0, "Overdue")
    assert s.row("lines", "L1")["suspension_start_date"] == "2025-02-25"
    assert s.row("surroundings", "surroundings")["line_active"] is False
    assert s("check_status_bar") == "Status Bar: 📶³ Good | 5G | 📱 Data Enabled | 🔋 64%"
    assert s("reboot_device").endswith("Status Bar: 📵 No Signal | 📵 Data Disabled | 🔋 64%")
    assert s("send_payment_request", customer_id="C1", bill_id="B9") == \
        "Payment request sent to the customer for bill B9"
    assert s("check_payment_request") == "You have a payment request for bill B9 of 30.0 USD."
    assert s("make_payment") == "Payment of 30.0 USD has been made for bill B9."
    assert s.row("bills", "B9")["status"] == "Paid"
    assert s.row("surroundings", "surroundings")["payment_request"] is None
    assert s("assert_no_overdue_bill", overdue_bill_id="B9") is True
    assert json.loads(s("resume_line", customer_id="C1", line_id="L1"))["line"]["status"] == \
        "Active"
    s("reboot_device")
    assert s("assert_service_status", expected_status="connected") is True


def test_refuel_charges_a_new_draft_bill(kit: Any) -> None:
    s = Sides(kit)
    out = json.loads(s("refuel_data", customer_id="C1", line_id="L1", gb_amount=2.0))
    # numbers outside a model become text, as τ²'s to_json_str makes them
    assert out == {"message": "Successfully added 2.0 GB of data for line L1 for $8.00",
                   "new_data_refueling_gb": "2.0", "charge": "8.0"}
    new_id = "B" + hashlib.sha256(b"C1:1").hexdigest()[:8]  # one bill before it
    assert s.row("customers", "C1")["bill_ids"] == ["B1", new_id]
    draft = s.row("bills", new_id)
    assert (draft["period_start"], draft["period_end"], draft["due_date"], draft["total_due"],
            draft["line_items"]) == ("2025-03-01", "2025-03-31", "2025-03-15", 8.0, [
                {"description": "Data refueling: 2.0 GB at $4.0/GB", "amount": 8.0,
                 "date": "2025-02-25", "item_type": "Charge"}])
    assert json.loads(s("get_data_usage", customer_id="C1", line_id="L1")) == {
        "line_id": "L1", "data_used_gb": "1.5", "data_limit_gb": "5.0",
        "data_refueling_gb": "2.0", "cycle_end_date": "2025-02-28"}
    assert s("assert_data_refueling_amount", customer_id="C1", line_id="L1",
             expected_amount=2.0) is True
