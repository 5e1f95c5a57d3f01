"""τ²-bench banking_knowledge's discoverable tools for closing a credit card (the reason log,
replacement orders, statement credits, account flags, paying it off from checking), written
for benchpack to answer and change the database as τ²'s do (none of its code is copied).
Inlined into banking.py before banking_discoverable.py, whose `DISCOVERABLE` lists them.
"""

import json

# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----


def _card_found(db, card_id):
    return bool(db.find("credit_card_accounts", account_id=card_id))


def _history(db, table, card_id, tool, head, title, none):
    """A read of one card's rows of `table`, worded as τ²'s history tools word it."""
    if not card_id:
        return "Error: Missing required parameter: credit_card_account_id"
    found = Bank.query(db, table, {"credit_card_account_id": card_id})
    empty = "No records found" in found or "No results found" in found
    return "\n".join([head, "", f"Executed: {tool}", f"{title} {card_id}:",
                      f"\n{none}" if empty else found])


def _pending_orders_5765(db, credit_card_account_id):
    return _history(db, "credit_card_orders", credit_card_account_id,
                    "get_pending_replacement_orders_5765",
                    "Pending replacement orders check completed.",
                    "Replacement orders for credit card account",
                    "No pending replacement orders found for this credit card account.")


def _closure_history_8293(db, credit_card_account_id):
    return _history(db, "credit_card_closure_reasons", credit_card_account_id,
                    "get_closure_reason_history_8293",
                    "Closure reason history retrieved successfully.",
                    "Closure reason history for credit card account",
                    "No closure reason records found for this credit card account.")


def _log_closure_reason_4521(db, credit_card_account_id, user_id, closure_reason):
    if not credit_card_account_id or not user_id or not closure_reason:
        return "Error: Missing required parameters."
    reasons = ["annual_fee", "not_using_card", "found_better_card", "unhappy_with_rewards",
               "simplifying_finances", "negative_experience", "other"]
    if closure_reason not in reasons:
        return f"Error: Invalid closure_reason. Must be one of: {reasons}"
    record_id = "clsr_" + Bank.hex_id(f"closure_reason:{credit_card_account_id}:{user_id}", 12)
    # a second reason for the same card and customer is not stored (τ² ignores the refusal)
    Bank.add(db, "credit_card_closure_reasons", record_id, {
        "record_id": record_id, "credit_card_account_id": credit_card_account_id,
        "user_id": user_id, "closure_reason": closure_reason, "logged_at": TODAY,
        "status": "LOGGED"})
    shown = json.dumps({"credit_card_account_id": credit_card_account_id, "user_id": user_id,
                        "closure_reason": closure_reason}, indent=2)
    return ("Closure reason logged successfully.\n\n"
            "Executed: log_credit_card_closure_reason_4521\n"
            f"Arguments: {shown}\n"
            f"Closure reason '{closure_reason}' logged for account {credit_card_account_id}.")


def _statement_credit_8472(db, user_id, credit_card_account_id, amount, reason):
    if not user_id or not credit_card_account_id or amount is None or not reason:
        return ("Error: Missing required parameters (user_id, credit_card_account_id, amount, "
                "reason).")
    if amount <= 0:  # a text amount: TypeError, which the caller words as τ² does
        return "Error: Credit amount must be positive."
    reasons = ["goodwill_adjustment", "promotional_credit", "annual_fee_reversal",
               "late_fee_reversal", "interest_charge_reversal", "dispute_resolution",
               "price_match", "retention_offer", "error_correction", "other"]
    if reason not in reasons:
        return f"Error: Invalid reason. Must be one of: {reasons}"
    if not _card_found(db, credit_card_account_id):
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    txn = "txn_" + Bank.hex_id(f"transaction:{user_id}:STATEMENT_CREDIT:{reason}:{amount:.2f}:"
                               "Statement Credit", 12)
    record = {"transaction_id": txn, "user_id": user_id,
              "credit_card_account_id": credit_card_account_id, "credit_card_type": "N/A",
              "merchant_name": "Rho-Bank Statement Credit",
              "transaction_amount": f"-${amount:.2f}", "transaction_date": TODAY,
              "category": "Statement Credit", "status": "COMPLETED",
              "rewards_earned": "0 points", "credit_reason": reason}
    if not Bank.add(db, "credit_card_transaction_history", txn, record):
        return (f"Error: Failed to apply statement credit. Transaction ID '{txn}' may already "
                "exist.")
    return ("Statement credit applied successfully.\n\n"
            "Executed: apply_statement_credit_8472\n"
            f"  - Transaction ID: {txn}\n"
            f"  - User ID: {user_id}\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Credit Amount: ${amount:.2f}\n"
            f"  - Reason: {reason.replace('_', ' ').title()}\n"
            f"  - Date: {TODAY}")


def _account_flag_6147(db, credit_card_account_id, user_id, flag_type, expiration_date,
                       reason):
    if not credit_card_account_id or not user_id or not flag_type or not expiration_date \
            or not reason:
        return ("Error: Missing required parameters (credit_card_account_id, user_id, "
                "flag_type, expiration_date, reason).")
    kinds = ["annual_fee_waived", "promotional_apr", "rewards_bonus", "other"]
    if flag_type not in kinds:
        return f"Error: Invalid flag_type. Must be one of: {kinds}"
    reasons = ["retention_offer", "loyalty_benefit", "promotional", "error_correction", "other"]
    if reason not in reasons:
        return f"Error: Invalid reason. Must be one of: {reasons}"
    if not _card_found(db, credit_card_account_id):
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    flag_id = "ccflag_" + Bank.hex_id(
        f"account_flag:{credit_card_account_id}:{flag_type}:{expiration_date}", 12)
    record = {"flag_id": flag_id, "credit_card_account_id": credit_card_account_id,
              "user_id": user_id, "flag_type": flag_type, "effective_date": TODAY,
              "expiration_date": expiration_date, "reason": reason, "applied_at": TODAY,
              "status": "ACTIVE"}
    if not Bank.add(db, "credit_card_account_flags", flag_id, record):
        return f"Error: Failed to apply account flag. Flag ID '{flag_id}' may already exist."
    return ("Account flag applied successfully!\n"
            f"  - Flag ID: {flag_id}\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - User ID: {user_id}\n"
            f"  - Flag Type: {flag_type.replace('_', ' ').title()}\n"
            f"  - Effective Date: {TODAY}\n"
            f"  - Expiration Date: {expiration_date}\n"
            f"  - Reason: {reason.replace('_', ' ').title()}")


def _close_card_7834(db, credit_card_account_id, user_id):
    if not credit_card_account_id or not user_id:
        return "Error: Missing required parameters (credit_card_account_id, user_id)."
    if not _card_found(db, credit_card_account_id):
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    # found by its `account_id` field, changed by its record id: τ²'s two lookups
    if Bank.update(db, "credit_card_accounts", credit_card_account_id,
                   {"status": "CLOSED", "closed_date": TODAY, "closed_by": user_id}) is None:
        return f"Error: Failed to close credit card account '{credit_card_account_id}'."
    shown = json.dumps({"credit_card_account_id": credit_card_account_id, "user_id": user_id},
                       indent=2)
    return ("Credit card account closed successfully.\n\n"
            "Executed: close_credit_card_account_7834\n"
            f"Arguments: {shown}\n"
            f"Account {credit_card_account_id} has been closed.")


def _pay_card_9182(db, user_id, checking_account_id, credit_card_account_id, amount):
    if not user_id or not checking_account_id or not credit_card_account_id or amount is None:
        return ("Error: Missing required parameters (user_id, checking_account_id, "
                "credit_card_account_id, amount).")
    try:
        amount = float(amount)
    except (ValueError, TypeError):
        return "Error: Invalid payment amount. Must be a positive number."
    if amount <= 0:
        return "Error: Payment amount must be a positive number."
    rows = db.find("accounts", _id=checking_account_id)
    if not rows:
        return f"Error: Checking account '{checking_account_id}' not found."
    checking = rows[0]
    if checking.get("user_id") != user_id:
        return (f"Error: Checking account '{checking_account_id}' does not belong to user "
                f"'{user_id}'.")
    if checking.get("class") != "checking":
        return f"Error: Account '{checking_account_id}' is not a checking account."
    held = checking.get("current_holdings", checking.get("balance", 0))
    balance = (float(held) if isinstance(held, int | float) else
               float(held.replace("$", "").replace(",", "")) if isinstance(held, str) else 0.0)
    if amount > balance:
        return (f"Error: Insufficient funds in checking account. Available balance: "
                f"${balance:.2f}, requested payment: ${amount:.2f}.")
    cards = db.find("credit_card_accounts", _id=credit_card_account_id)
    if not cards:
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    card = cards[0]
    if card.get("user_id") != user_id:
        return (f"Error: Credit card account '{credit_card_account_id}' does not belong to "
                f"user '{user_id}'.")
    try:
        owed = float(Bank.py_str(card.get("current_balance", "$0.00")).replace("$", "")
                     .replace(",", ""))
    except (ValueError, TypeError):
        owed = 0.0
    if amount > owed:
        return (f"Error: Payment amount (${amount:.2f}) exceeds credit card balance "
                f"(${owed:.2f}). Please specify an amount up to the outstanding balance.")
    db.put("accounts", {**checking, "current_holdings": f"{balance - amount:.2f}"})
    db.put("credit_card_accounts", {**card, "current_balance": f"${owed - amount:.2f}"})
    return ("Payment processed successfully!\n"
            f"  - Payment Amount: ${amount:.2f}\n"
            f"  - From Checking Account: {checking_account_id}\n"
            f"  - To Credit Card Account: {credit_card_account_id}\n"
            f"  - New Checking Balance: ${balance - amount:.2f}\n"
            f"  - New Credit Card Balance: ${owed - amount:.2f}\n"
            "The payment has been applied immediately.")
