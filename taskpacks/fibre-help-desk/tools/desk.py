"""Tools of the Lumen Fibre home-internet help desk.

Every public function is a tool (read with `ast`, run sandboxed with `db` bound to the `desk`
service's tables: customers, lines, visits, credits). The rules the handbook states are also
enforced here, so an agent that skips a step gets a refusal, not a silent write:
a technician visit needs a remote line reset first, on a weekday, at most once per line; an
outage credit is the handbook's daily rate times the whole days the line was down.
"""

from __future__ import annotations

from datetime import date

from benchpack_tools import State, ToolError

DAILY_CREDIT = {"fibre-150": 1.50, "fibre-500": 2.50, "fibre-1000": 4.00}


def _line(db: State, line_id: str) -> dict:
    rows = db.find("lines", line_id=line_id)
    if not rows:
        raise ToolError(f"Line {line_id} not found")
    return rows[0]


def find_customer(db: State, email: str) -> dict:
    """Find a customer by e-mail address: their customer id, name and line ids.

    Args:
        email: The customer's e-mail address.
    """
    rows = db.find("customers", email=email.strip().lower())
    if not rows:
        raise ToolError(f"No customer with e-mail {email}")
    return rows[0]


def get_line_status(db: State, line_id: str) -> dict:
    """The line's plan, status, light the router shows, and since when it is down (if it is).

    Args:
        line_id: The line id, such as 'L-1001'.
    """
    return _line(db, line_id)


def reset_line(db: State, line_id: str) -> dict:
    """Reset the line remotely from the exchange (what the handbook calls a remote reset).
    A line down because of a cable fault stays down; one down after a configuration push comes
    back.

    Args:
        line_id: The line id.
    """
    line = _line(db, line_id)
    line["resets"] = line.get("resets", 0) + 1
    if line["status"] == "down" and line.get("fault") != "cable":
        line["status"], line["light"], line["down_since"] = "up", "green", None
    db.put("lines", line)
    return {"line_id": line_id, "status": line["status"], "light": line["light"]}


def schedule_technician(db: State, line_id: str, day: str) -> dict:
    """Book a technician visit for a line that a remote reset did not bring back.

    Args:
        line_id: The line id.
        day: The visit's date, YYYY-MM-DD, a weekday.
    """
    line = _line(db, line_id)
    if line["status"] != "down":
        raise ToolError(f"Line {line_id} is up; no visit needed")
    if not line.get("resets"):
        raise ToolError(f"Line {line_id} has not been reset remotely yet")
    if db.find("visits", line_id=line_id):
        raise ToolError(f"Line {line_id} already has a visit booked")
    try:
        when = date.fromisoformat(day)
    except ValueError:
        raise ToolError(f"{day} is not a date (YYYY-MM-DD)") from None
    if when.weekday() >= 5:
        raise ToolError(f"{day} is a weekend day; technicians visit Monday to Friday")
    return db.put("visits", {"line_id": line_id, "day": day})


def apply_outage_credit(db: State, customer_id: str, line_id: str, days: int) -> dict:
    """Credit the customer's next bill for whole days a line was down (the daily rate of the
    line's plan, as the handbook's credit table gives it).

    Args:
        customer_id: The customer id, such as 'C-201'.
        line_id: The line that was down.
        days: Whole days without service.
    """
    line = _line(db, line_id)
    if line["customer_id"] != customer_id:
        raise ToolError(f"Line {line_id} does not belong to customer {customer_id}")
    if days < 1:
        raise ToolError("A credit is for at least one whole day")
    if db.find("credits", line_id=line_id):
        raise ToolError(f"Line {line_id} already has an outage credit")
    amount = round(DAILY_CREDIT[line["plan"]] * days, 2)
    return db.put("credits", {"line_id": line_id, "customer_id": customer_id, "days": days,
                              "amount": amount})


def transfer_to_human(db: State, summary: str) -> str:
    """Hand the conversation to a human colleague, with a summary of the problem.

    Args:
        summary: What the customer needs and what was already tried.
    """
    return "Transferred"


def assert_line_status(db: State, line_id: str, status: str) -> bool:
    """Environment assertion (not a tool: left out by the toolset's `include`): the line has
    this status."""
    rows = db.find("lines", line_id=line_id)
    return bool(rows) and rows[0]["status"] == status
