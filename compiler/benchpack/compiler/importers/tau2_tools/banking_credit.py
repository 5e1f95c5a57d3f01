"""τ²-bench banking_knowledge's discoverable tools for credit limit increases (requests, their
history, payment history, approval, denial), written for benchpack to answer and change the
database as τ²'s do (none of its code is copied). Inlined into banking.py before
banking_discoverable.py, whose `DISCOVERABLE` lists them.
"""

# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----


def _cli_id(card_id, user_id, amount):
    return "cli_" + Bank.hex_id(f"cli_request:{card_id}:{user_id}:{amount:.2f}", 12)


def _own_card(db, card_id, user_id):
    """(card row, error text): the card whose record id is `card_id`, if it is the user's."""
    rows = db.find("credit_card_accounts", _id=card_id)
    if not rows:
        return None, f"Error: Credit card account '{card_id}' not found."
    if rows[0].get("user_id") != user_id:
        return None, (f"Error: Credit card account '{card_id}' does not belong to user "
                      f"'{user_id}'.")
    return rows[0], None


def _dollars(value):
    try:
        return float(Bank.py_str(value).replace("$", "").replace(",", ""))
    except (ValueError, TypeError):
        return 0.0


def _cli_request_7392(db, credit_card_account_id, user_id, requested_increase_amount):
    if not credit_card_account_id or not user_id or requested_increase_amount is None:
        return "Error: Missing required parameters."
    try:
        amount = float(requested_increase_amount)
    except (TypeError, ValueError):
        return "Error: Invalid requested_increase_amount. Must be a whole number."
    if not amount.is_integer():
        return "Error: Invalid requested_increase_amount. Must be a whole number of dollars."
    amount = int(amount)
    if amount <= 0:
        return "Error: Requested increase amount must be positive."
    _, error = _own_card(db, credit_card_account_id, user_id)
    if error:
        return error
    request_id = _cli_id(credit_card_account_id, user_id, amount)
    if not Bank.add(db, "credit_limit_increase_requests", request_id, {
            "request_id": request_id, "credit_card_account_id": credit_card_account_id,
            "user_id": user_id, "requested_increase_amount": amount, "submitted_at": TODAY,
            "status": "PENDING"}):
        return "Error: A similar request may already exist."
    return ("Credit limit increase request submitted successfully.\n\n"
            "Executed: submit_credit_limit_increase_request_7392\n"
            f"  - Request ID: {request_id}\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Requested Increase: ${amount:,}\n"
            "  - Status: PENDING")


def _cli_history_4829(db, credit_card_account_id):
    if not credit_card_account_id:
        return "Error: Missing required parameter: credit_card_account_id"
    found = Bank.query(db, "credit_limit_increase_requests",
                       {"credit_card_account_id": credit_card_account_id})
    empty = "No records found" in found or "No results found" in found
    return "\n".join(["Credit limit increase history retrieved.", "",
                      "Executed: get_credit_limit_increase_history_4829",
                      f"Credit limit increase history for account {credit_card_account_id}:",
                      "\nNo credit limit increase requests found for this account." if empty
                      else found])


def _payment_history_6183(db, credit_card_account_id, months):
    if not credit_card_account_id or months is None:
        return "Error: Missing required parameters (credit_card_account_id, months)."
    try:
        months = int(months)
    except (ValueError, TypeError):
        return "Error: Invalid months value. Must be a positive integer."
    if months <= 0:
        return "Error: months must be a positive integer."
    paid = db.find("payment_history", credit_card_account_id=credit_card_account_id)
    if not paid:
        return f"No payment history found for account '{credit_card_account_id}'."
    # τ² sorts the MM/DD/YYYY text itself, latest text first (a stable sort)
    paid = sorted(paid, key=lambda p: p.get("payment_date") or "", reverse=True)[:months]
    streak = 0
    for p in paid:
        if p.get("status") != "ON_TIME":
            break
        streak += 1
    parts = [f"Payment history for account '{credit_card_account_id}' (last {months} months):",
             f"Consecutive on-time payments: {streak}"]
    parts += [f"\n  - Payment Date: {Bank.py_str(p.get('payment_date'))}\n"
              f"    Amount: {Bank.py_str(p.get('amount'))}\n"
              f"    Status: {Bank.py_str(p.get('status'))}" for p in paid]
    return "\n".join(parts)


def _cli_approve_5847(db, credit_card_account_id, user_id, new_credit_limit):
    if not credit_card_account_id or not user_id or new_credit_limit is None:
        return "Error: Missing required parameters."
    card, error = _own_card(db, credit_card_account_id, user_id)
    if error:
        return error
    blocked = any(d.get("user_id") == user_id and d.get("status") in
                  ("SUBMITTED", "UNDER_REVIEW", "PENDING")
                  for d in db.rows("transaction_disputes"))
    blocked = blocked or any(o.get("credit_card_account_id") == credit_card_account_id and
                             o.get("status") in ("PENDING", "PROCESSING", "SHIPPED")
                             for o in db.rows("credit_card_orders"))
    blocked = blocked or card.get("account_status", "").upper() in (
        "PAST_DUE", "DELINQUENT", "COLLECTIONS", "CLOSED")
    if blocked:
        return "Error: Credit limit increase request cannot be approved at this time."
    current = _dollars(card.get("credit_limit", "$0.00"))
    new = float(new_credit_limit)
    db.put("credit_card_accounts", {**card, "credit_limit": f"${new:.2f}"})
    request_id = _cli_id(credit_card_account_id, user_id, new - current)
    Bank.add(db, "credit_limit_increase_requests", request_id, {
        "request_id": request_id, "credit_card_account_id": credit_card_account_id,
        "user_id": user_id, "previous_limit": f"${current:.2f}", "new_limit": f"${new:.2f}",
        "increase_amount": f"${new - current:.2f}", "decision_date": TODAY,
        "status": "APPROVED"})
    return ("Credit limit increase approved!\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Previous Limit: ${current:.2f}\n"
            f"  - New Limit: ${new:.2f}\n"
            f"  - Increase: ${new - current:.2f}\n"
            f"  - Effective Date: {TODAY}\n"
            "The customer will receive a confirmation email.")


def _cli_deny_5848(db, credit_card_account_id, user_id, denial_reason):
    if not credit_card_account_id or not user_id or not denial_reason:
        return "Error: Missing required parameters."
    reasons = ["insufficient_account_age", "cooldown_period_active", "pending_disputes",
               "pending_replacement_card", "past_due_balance", "high_utilization",
               "insufficient_payment_history", "requested_amount_exceeds_limit", "other"]
    if denial_reason not in reasons:
        return "Error: Invalid denial_reason. Must be one of: " + ", ".join(reasons)
    if not db.find("credit_card_accounts", _id=credit_card_account_id):
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    request_id = _cli_id(credit_card_account_id, user_id, 0.0)
    Bank.add(db, "credit_limit_increase_requests", request_id, {
        "request_id": request_id, "credit_card_account_id": credit_card_account_id,
        "user_id": user_id, "denial_reason": denial_reason, "decision_date": TODAY,
        "status": "DENIED"})
    return ("Credit limit increase request denied.\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Denial Reason: {denial_reason}\n"
            f"  - Date: {TODAY}\n"
            "The customer will receive a notification explaining the denial.")
