"""τ²-bench telecom tools (the operator's side), written for benchpack to behave as τ²'s do;
copied into every pack `bench import tau2` writes for the telecom domain. Tables: plans,
customers, lines, bills, devices (τ²'s rows; dates as τ² prints them, `2025-01-20 14:30:00`);
its `State` also holds the phone's `device` and `surroundings` (`services: [telecom_user]`),
and `sync_sides` runs after every call (see telecom_shared.py).

The conventions of tau2_tools (see retail.py): τ²'s result texts and error texts after the same
checks in the same order; rows are found by scanning in order, as τ²'s helpers do. One
difference: where τ² names a new draft bill with a random `B` + 8 hex digits (a refuel for a
customer with no draft bill), ours derives the 8 digits from the customer and the number of
bills, so that a gold replay and the agent's run name it alike (`draft-bill-id`).
"""

import hashlib

from benchpack_tools import State

# ---- prelude (tau2_tools/prelude.py; `bench import tau2` inlines it here) ----
from benchpack.compiler.importers.tau2_tools.prelude import Model, Tau2

# ---- end of prelude ----
# ---- inline telecom_shared.py ----
from benchpack.compiler.importers.tau2_tools.telecom_shared import (  # noqa: F401
    TODAY,
    Rows,
    sync_sides,
)

# ---- end of inline ----

FIXES = frozenset()
"""Differences from τ² switched on by `bench import tau2 --fix` (none for this domain)."""
HELPERS = ("sync_sides", "get_available_plan_ids", "set_data_usage", "suspend_line_for_overdue_bill",
           "assert_data_refueling_amount", "assert_line_status", "assert_overdue_bill_exists",
           "assert_no_overdue_bill")
"""Public functions that are not the agent's tools: the `after_call`, and τ²'s set-up and
assertion methods that `initial_state.actions` and `score.env_assertions` call."""


def _target_line(db: State, customer_id, line_id):
    customer = Rows.customer(db, customer_id)
    if line_id not in customer["line_ids"]:
        raise ValueError(f"Line {line_id} not found for customer {customer_id}")
    return Rows.line(db, line_id)


def _next_month(day):
    """The first day of the month after `day` (ISO text), as τ²'s date arithmetic gives it."""
    y, m = int(day[:4]), int(day[5:7])
    return f"{y + (m == 12):04d}-{m % 12 + 1:02d}-01"


def _add_days(day, n):
    import datetime

    return str(datetime.date.fromisoformat(day) + datetime.timedelta(days=n))


def get_customer_by_phone(db: State, phone_number: str) -> str:
    """Finds a customer by their primary contact or line phone number.

    Args:
        phone_number: The phone number to search for.
    """
    return Tau2.text(Model(Rows.customer_by_phone(db, phone_number)))


def get_customer_by_id(db: State, customer_id: str) -> str:
    """Retrieves a customer directly by their unique ID.

    Args:
        customer_id: The unique identifier of the customer.
    """
    return Tau2.text(Model(Rows.customer(db, customer_id)))


def get_customer_by_name(db: State, full_name: str, dob: str) -> str:
    """Searches for customers by name and date of birth (which disambiguates similar names).

    Args:
        full_name: The full name of the customer.
        dob: Date of birth for verification, in the format YYYY-MM-DD.
    """
    return Tau2.text([Model(c) for c in db.rows("customers")
                      if c["full_name"].lower() == full_name.lower()
                      and c["date_of_birth"] == dob])


def get_details_by_id(db: State, id: str) -> str:
    """Retrieves the details of a Customer, Line, Device, Bill or Plan by its ID.

    Args:
        id: The ID of the object to retrieve.
    """
    for prefix, lookup in (("L", Rows.line), ("D", Rows.device), ("B", Rows.bill),
                           ("C", Rows.customer), ("P", Rows.plan)):
        if id.startswith(prefix):
            return Tau2.text(Model(lookup(db, id)))
    raise ValueError(f"Unknown ID format or type: {id}")


def suspend_line(db: State, customer_id: str, line_id: str, reason: str) -> str:
    """Suspends an active line (at most 6 months); a $5/month holding fee applies.

    Args:
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to suspend.
        reason: Reason for suspension.
    """
    line = _target_line(db, customer_id, line_id)
    if line["status"] != "Active":
        raise ValueError("Line must be active to suspend")
    line["status"] = "Suspended"
    line["suspension_start_date"] = TODAY
    db.put("lines", line)
    return Tau2.text({"message": "Line suspended successfully. $5/month holding fee will apply.",
                      "line": Model(line)})


def resume_line(db: State, customer_id: str, line_id: str) -> str:
    """Resumes a suspended (or pending activation) line.

    Args:
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to resume.
    """
    line = _target_line(db, customer_id, line_id)
    if line["status"] not in ("Suspended", "Pending Activation"):
        raise ValueError("Line must be suspended to resume")
    line["status"] = "Active"
    line["suspension_start_date"] = None
    db.put("lines", line)
    return Tau2.text({"message": "Line resumed successfully", "line": Model(line)})


def get_bills_for_customer(db: State, customer_id: str, limit: int = 12) -> str:
    """The customer's bills, newest issue date first.

    Args:
        customer_id: ID of the customer.
        limit: Maximum number of bills to return.
    """
    customer = Rows.customer(db, customer_id)
    bills = [Rows.bill(db, i) for i in customer["bill_ids"]]
    bills = sorted(bills, key=lambda b: b["issue_date"], reverse=True)
    return Tau2.text([Model(b) for b in bills[:limit]])


def send_payment_request(db: State, customer_id: str, bill_id: str) -> str:
    """Sends the customer a payment request for one of their bills (it awaits payment then);
    refused while another bill awaits payment. It does not check whether the bill is paid.

    Args:
        customer_id: ID of the customer who owns the bill.
        bill_id: ID of the bill to send payment request for.
    """
    customer = Rows.customer(db, customer_id)
    if Rows.awaiting_payment(db, customer):
        raise ValueError("A bill is already awaiting payment for this customer")
    if bill_id not in customer["bill_ids"]:
        raise ValueError(f"Bill {bill_id} not found for customer {customer_id}")
    bill = Rows.bill(db, bill_id)
    bill["status"] = "Awaiting Payment"
    db.put("bills", bill)
    return f"Payment request sent to the customer for bill {bill['bill_id']}"


def _charge(db: State, customer_id, amount, description):
    """Add a line item to the customer's draft bill (made for next month when there is none)."""
    customer = Rows.customer(db, customer_id)
    draft = None
    for bill_id in customer["bill_ids"]:
        bill = Rows.bill(db, bill_id)
        if bill["status"] == "Draft":
            draft = bill
            break
    if draft is None:
        start = _next_month(TODAY)
        seed = f"{customer_id}:{len(db.rows('bills'))}".encode()
        draft = {"bill_id": "B" + hashlib.sha256(seed).hexdigest()[:8],
                 "customer_id": customer_id, "period_start": start,
                 "period_end": _add_days(_next_month(start), -1), "issue_date": start,
                 "total_due": 0.0, "due_date": _add_days(start, 14), "line_items": [],
                 "status": "Draft"}
        customer["bill_ids"].append(draft["bill_id"])
        db.put("customers", customer)
    draft["line_items"].append({"description": description, "amount": amount, "date": TODAY,
                                "item_type": "Credit" if amount < 0 else "Charge"})
    draft["total_due"] += amount
    db.put("bills", draft)


def get_data_usage(db: State, customer_id: str, line_id: str) -> str:
    """A line's data use in the current billing cycle: used, limit, refuelled, cycle end.

    Args:
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to check usage for.
    """
    line = _target_line(db, customer_id, line_id)
    plan = Rows.plan(db, line["plan_id"])
    return Tau2.text({"line_id": line_id, "data_used_gb": line["data_used_gb"],
                      "data_limit_gb": plan["data_limit_gb"],
                      "data_refueling_gb": line["data_refueling_gb"],
                      "cycle_end_date": _add_days(_next_month(TODAY), -1)})


def enable_roaming(db: State, customer_id: str, line_id: str) -> str:
    """Enables international roaming on a line.

    Args:
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to enable roaming for.
    """
    line = _target_line(db, customer_id, line_id)
    if line["roaming_enabled"]:
        return "Roaming was already enabled"
    line["roaming_enabled"] = True
    db.put("lines", line)
    return "Roaming enabled successfully"


def disable_roaming(db: State, customer_id: str, line_id: str) -> str:
    """Disables international roaming on a line.

    Args:
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to disable roaming for.
    """
    line = _target_line(db, customer_id, line_id)
    if not line["roaming_enabled"]:
        return "Roaming was already disabled"
    line["roaming_enabled"] = False
    db.put("lines", line)
    return "Roaming disabled successfully"


def transfer_to_human_agents(summary: str) -> str:
    """Hand the user over to a human agent with a summary of the issue: only when the user asks
    for one, or when the policy and these tools cannot solve the issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


def refuel_data(db: State, customer_id: str, line_id: str, gb_amount: float) -> str:
    """Adds data to a line, charged on the customer's next bill at the plan's refuelling rate.

    Args:
        customer_id: ID of the customer who owns the line.
        line_id: ID of the line to refuel data for.
        gb_amount: Amount of data to add in gigabytes.
    """
    line = _target_line(db, customer_id, line_id)
    if gb_amount <= 0:
        raise ValueError("Refuel amount must be positive")
    plan = Rows.plan(db, line["plan_id"])
    rate = plan["data_refueling_price_per_gb"]
    charge = gb_amount * rate
    line["data_refueling_gb"] += gb_amount
    db.put("lines", line)
    _charge(db, customer_id, charge, f"Data refueling: {gb_amount} GB at ${rate}/GB")
    return Tau2.text({"message": f"Successfully added {gb_amount} GB of data for line "
                                f"{line_id} for ${charge:.2f}",
                      "new_data_refueling_gb": line["data_refueling_gb"], "charge": charge})


# ---- not tools: τ²'s set-up and assertion methods (issue 24) ----

def get_available_plan_ids(db: State) -> list:
    """Every plan's id (τ²'s public non-tool method)."""
    return [p["plan_id"] for p in db.rows("plans")]


def set_data_usage(db: State, customer_id: str, line_id: str, data_used_gb: float) -> str:
    """Set-up helper: the line's data used this cycle."""
    line = _target_line(db, customer_id, line_id)
    line["data_used_gb"] = data_used_gb
    db.put("lines", line)
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


def suspend_line_for_overdue_bill(db: State, customer_id: str, line_id: str, new_bill_id: str,
                                  contract_ended: bool) -> str:
    """Set-up helper: an overdue bill of last month's plan price, and the line suspended."""
    line = Rows.line(db, line_id)
    if line["status"] != "Active":
        raise ValueError("Line must be active to suspend for unpaid bill")
    amount = Rows.plan(db, line["plan_id"])["price_per_month"]
    if amount <= 0:
        raise ValueError("Amount must be positive for overdue bill")
    customer = Rows.customer(db, customer_id)
    if any(Rows.bill(db, i)["status"] == "Overdue" for i in customer["bill_ids"]):
        raise ValueError("Customer already has an overdue bill")
    last_day = _add_days(TODAY[:8] + "01", -1)
    first_day = last_day[:8] + "01"
    bill = {"bill_id": new_bill_id, "customer_id": customer_id, "period_start": first_day,
            "period_end": last_day, "issue_date": first_day, "total_due": 0.0,
            "due_date": _add_days(first_day, 14),
            "line_items": [{"description": f"Charge for line {line['line_id']}",
                            "amount": amount, "date": TODAY,
                            "item_type": "Charge" if amount > 0 else "Credit"}],
            "status": "Overdue"}
    bill["total_due"] += amount
    db.put("bills", bill)
    customer["bill_ids"].append(new_bill_id)
    db.put("customers", customer)
    line["status"] = "Suspended"
    line["suspension_start_date"] = TODAY
    if contract_ended:
        line["contract_end_date"] = last_day
    db.put("lines", line)
    return (f"Line {line_id} suspended for unpaid bill {new_bill_id}. "
            f"Contract ended: {contract_ended}")


def assert_data_refueling_amount(db: State, customer_id: str, line_id: str,
                                 expected_amount: float) -> bool:
    """Environment assertion: the line's refuelled data is this amount."""
    return abs(_target_line(db, customer_id, line_id)["data_refueling_gb"]
               - expected_amount) < 1e-6


def assert_line_status(db: State, customer_id: str, line_id: str, expected_status: str) -> bool:
    """Environment assertion: the line has this status."""
    return _target_line(db, customer_id, line_id)["status"] == expected_status


def assert_overdue_bill_exists(db: State, customer_id: str, overdue_bill_id: str) -> bool:
    """Environment assertion: the customer has this bill and it is overdue (τ²'s raises
    otherwise; the assertion is then unknown)."""
    customer = Rows.customer(db, customer_id)
    if overdue_bill_id not in customer["bill_ids"]:
        raise ValueError(f"Overdue bill {overdue_bill_id} not found")
    if Rows.bill(db, overdue_bill_id)["status"] != "Overdue":
        raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
    return True


def assert_no_overdue_bill(db: State, overdue_bill_id: str) -> bool:
    """Environment assertion: the bill is gone or paid."""
    try:
        return Rows.bill(db, overdue_bill_id)["status"] == "Paid"
    except ValueError:
        return True


Tau2.toolkit("TelecomTools", globals())
