"""What both telecom toolsets share (the operator's, `telecom.py`, and the customer's phone,
`telecom_user.py`): row lookups as τ²'s telecom helpers word them, the phone's two rows, and
`sync_sides`, the `after_call` of both toolsets — τ²'s `TelecomEnvironment.sync_tools`, which
τ² runs after every successful tool call of either side, after every set-up or assertion
function and when it builds or sets up an environment.

`bench import tau2` inlines this file into each module in place of the block marked
`# ---- inline telecom_shared.py` … `# ---- end of inline` (a pack module is one file). Both toolsets' `State`
holds both services (`services:`), so the sync reads the operator's line and writes the phone.

Written for benchpack from τ²'s documented behaviour; none of τ²'s code is copied here.
"""

from benchpack_tools import State

TODAY = "2025-02-25"
"""τ²'s telecom clock (`get_today`): every date a tool writes is relative to it."""


class Rows:
    """Lookups that scan a table in order and compare with `==`, as τ²'s helpers do (static
    methods only: a class keeps them from being tools)."""

    @staticmethod
    def find(db: State, table, field, value, message):
        for row in db.rows(table):
            if row[field] == value:
                return row
        raise ValueError(message)

    @staticmethod
    def line(db: State, line_id):
        return Rows.find(db, "lines", "line_id", line_id, f"Line with ID {line_id} not found")

    @staticmethod
    def line_by_phone(db: State, phone_number):
        return Rows.find(db, "lines", "phone_number", phone_number,
                         f"Line with phone number {phone_number} not found")

    @staticmethod
    def plan(db: State, plan_id):
        return Rows.find(db, "plans", "plan_id", plan_id, f"Plan with ID {plan_id} not found")

    @staticmethod
    def bill(db: State, bill_id):
        return Rows.find(db, "bills", "bill_id", bill_id, f"Bill with ID {bill_id} not found")

    @staticmethod
    def device(db: State, device_id):
        return Rows.find(db, "devices", "device_id", device_id,
                         f"Device with ID {device_id} not found")

    @staticmethod
    def customer(db: State, customer_id):
        return Rows.find(db, "customers", "customer_id", customer_id,
                         f"Customer with ID {customer_id} not found")

    @staticmethod
    def customer_by_phone(db: State, phone_number):
        # the customer's own number first, then each of its lines (a dangling line id raises)
        for customer in db.rows("customers"):
            if customer["phone_number"] == phone_number:
                return customer
            for line_id in customer["line_ids"]:
                if Rows.line(db, line_id)["phone_number"] == phone_number:
                    return customer
        raise ValueError(f"Customer with phone number {phone_number} not found")

    @staticmethod
    def awaiting_payment(db: State, customer):
        return [b for b in (Rows.bill(db, i) for i in customer["bill_ids"])
                if b["status"] == "Awaiting Payment"]

    @staticmethod
    def phone(db: State):
        """The phone's two rows (τ²'s user database: `device`, `surroundings`)."""
        return db.get("device", "device"), db.get("surroundings", "surroundings")


def sync_sides(db: State) -> None:
    """After every call: the phone learns whether its line is active, may roam and is over its
    data allowance; a payment the phone made marks the bill paid at the operator; a bill
    awaiting payment shows on the phone as a payment request (τ²'s `sync_tools`)."""
    surroundings = db.get("surroundings", "surroundings")
    phone_number = surroundings["phone_number"]
    if phone_number is None:
        return
    line = Rows.line_by_phone(db, phone_number)
    surroundings["line_active"] = line["status"] == "Active"
    surroundings["roaming_allowed"] = bool(line["roaming_enabled"])
    plan = Rows.plan(db, line["plan_id"])
    surroundings["mobile_data_usage_exceeded"] = (
        line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"])
    request = surroundings["payment_request"]
    if request is not None and request["paid"]:
        bill = Rows.bill(db, request["bill_id"])
        bill["status"] = "Paid"
        db.put("bills", bill)
        surroundings["payment_request"] = None
    if surroundings["payment_request"] is None:
        customer = Rows.customer_by_phone(db, phone_number)
        bills = Rows.awaiting_payment(db, customer)
        if bills:
            surroundings["payment_request"] = {"bill_id": bills[0]["bill_id"],
                                               "amount_due": bills[0]["total_due"],
                                               "paid": False}
    db.put("surroundings", surroundings)
