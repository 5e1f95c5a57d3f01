"""τ²-bench banking_knowledge's discoverable tools over bank accounts, card disputes and
replacement cards, written for benchpack to answer and change the database as τ²'s do (none
of its code is copied). Inlined into banking.py before banking_discoverable.py, whose
`DISCOVERABLE` lists them.

Balances are τ²'s: a number, or text such as "$2,850.00" (`current_holdings`, else `balance`);
a credit to a checking account or a transfer writes "$…", a credit to a savings account writes
the digits alone, as τ² does.
"""

import datetime

# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----

CLOCK = datetime.datetime(2025, 11, 14, 3, 40)
"""τ²'s locked clock, as a datetime (account ages are counted from it)."""
EARLY_CLOSURE = {
    "checking": {"Light Blue Account": (15, 30), "Light Green Account": (15, 30),
                 "Green Fee-Free Account": (15, 30), "Blue Account": (25, 60),
                 "Green Account": (25, 60), "Evergreen Account": (50, 90),
                 "Bluest Account": (100, 180)},
    "savings": {"Bronze Account": (20, 60), "Silver Account": (35, 90),
                "Silver Plus Account": (35, 90), "Gold Account": (75, 180),
                "Gold Plus Account": (75, 180), "Gold Years Account": (75, 180),
                "Platinum Account": (150, 270), "Platinum Plus Account": (150, 270),
                "Diamond Elite Account": (150, 270)},
}
"""Closing early: account class → level → (fee in USD, days from opening it applies)."""


def _money(value):
    if isinstance(value, int | float):  # a bool too, as in τ²
        return float(value)
    if isinstance(value, str):
        return float(value.replace("$", "").replace(",", ""))
    return 0.0


def _held(account):
    return _money(account.get("current_holdings", account.get("balance", 0)))


def _account(db, account_id):
    hash(account_id)  # τ² looks it up in a dict: an unhashable id raises TypeError
    rows = db.find("accounts", _id=account_id)
    return rows[0] if rows else None


def _title(code):
    return code.replace("_", " ").title()


def _close_account_7392(db, account_id, reason="Customer requested closure",
                        waive_early_closure_fee=False):
    if not account_id:
        return "Error: Missing required parameter (account_id)."
    account = _account(db, account_id)
    if account is None:
        return f"Error: Account '{account_id}' not found."
    if account.get("status") == "CLOSED":
        return f"Error: Account '{account_id}' is already closed."
    balance = _held(account)
    fee = 0.0
    if not waive_early_closure_fee:
        rule = EARLY_CLOSURE.get(account.get("class", ""), {}).get(account.get("level", ""))
        opened = account.get("date_opened", "")
        if rule and opened:
            try:
                age = (CLOCK - datetime.datetime.strptime(opened, "%m/%d/%Y")).days
            except ValueError:
                age = None
            if age is not None and age < rule[1]:
                if balance < rule[0]:
                    return "Error: Account unable to be closed."
                fee = rule[0]
    if balance - fee != 0:
        return ("Error: Account balance must be $0.00 before closing. Current balance: "
                f"${balance:.2f}")
    db.put("accounts", {**account, "status": "CLOSED", "date_closed": TODAY,
                        "closure_reason": reason,
                        "early_closure_fee_waived": waive_early_closure_fee})
    return ("Bank account closed successfully!\n"
            f"  - Account ID: {account_id}\n"
            f"  - Account Type: {account.get('account_type', 'N/A')}\n"
            f"  - Account Class: {account.get('account_class', 'N/A')}\n"
            "  - Status: CLOSED\n"
            f"  - Date Closed: {TODAY}\n"
            f"  - Reason: {reason}\n"
            f"  - Early Closure Fee Waived: {'Yes' if waive_early_closure_fee else 'No'}")


def _file_card_dispute_4829(db, transaction_id, card_action, card_last_4_digits, full_name,
                            user_id, phone, email, address, contacted_merchant, purchase_date,
                            issue_noticed_date, dispute_reason, resolution_requested,
                            eligible_for_provisional_credit, partial_refund_amount=None):
    if not transaction_id or not user_id:
        return "Error: Missing required parameters."
    actions = ["keep_active", "cancel_and_reissue"]
    if card_action not in actions:
        return f"Error: Invalid card_action. Must be one of: {actions}"
    reasons = ["unauthorized_fraudulent_charge", "duplicate_charge", "incorrect_amount",
               "goods_services_not_received", "goods_services_not_as_described",
               "canceled_subscription_still_charging", "refund_never_processed"]
    if dispute_reason not in reasons:
        return f"Error: Invalid dispute_reason. Must be one of: {reasons}"
    resolutions = ["full_refund", "partial_refund"]
    if resolution_requested not in resolutions:
        return f"Error: Invalid resolution_requested. Must be one of: {resolutions}"
    if resolution_requested == "partial_refund" and partial_refund_amount is None:
        return ("Error: partial_refund_amount is required when resolution_requested is "
                "'partial_refund'.")
    dispute_id = "dsp_" + Bank.hex_id(f"dispute:{user_id}:{transaction_id}", 12)
    record = {"dispute_id": dispute_id, "transaction_id": transaction_id, "user_id": user_id,
              "card_action": card_action, "card_last_4_digits": card_last_4_digits,
              "full_name": full_name, "phone": phone, "email": email, "address": address,
              "contacted_merchant": contacted_merchant, "purchase_date": purchase_date,
              "issue_noticed_date": issue_noticed_date, "dispute_reason": dispute_reason,
              "resolution_requested": resolution_requested,
              "partial_refund_amount": partial_refund_amount,
              "eligible_for_provisional_credit": eligible_for_provisional_credit,
              "provisional_credit_given": eligible_for_provisional_credit,
              "submitted_at": TODAY, "status": "SUBMITTED"}
    if not Bank.add(db, "transaction_disputes", dispute_id, record):
        return "Error: Dispute may have already been filed for this transaction."
    lines = ["Credit card transaction dispute filed successfully. A case has been opened and "
             "will be reviewed within 10 business days.", "",
             "Executed: file_credit_card_transaction_dispute_4829",
             f"Dispute ID: {dispute_id}", f"Transaction: {transaction_id}",
             f"Reason: {_title(dispute_reason)}",
             f"Resolution Requested: {_title(resolution_requested)}"]
    if partial_refund_amount:
        lines.append(f"Partial Refund Amount: ${partial_refund_amount:.2f}")
    lines.append("Provisional Credit: ELIGIBLE - Credit will be applied within 2 business days."
                 if eligible_for_provisional_credit else
                 "Provisional Credit: Not eligible at this time.")
    return "\n".join(lines)


def _replace_card_7291(db, credit_card_account_id, user_id, shipping_address, reason,
                       expedited_shipping=False):
    if not credit_card_account_id or not user_id or not shipping_address or not reason:
        return ("Error: Missing required parameters (credit_card_account_id, user_id, "
                "shipping_address, reason).")
    reasons = ["fraud_suspected", "lost", "stolen", "damaged", "expired", "other"]
    if reason not in reasons:
        return f"Error: Invalid reason. Must be one of: {reasons}"
    cards = db.find("credit_card_accounts", account_id=credit_card_account_id)
    if not cards:
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    order_id = "ccord_" + Bank.hex_id(
        f"credit_card_order:{credit_card_account_id}:{user_id}:{reason}", 12)
    record = {"order_id": order_id, "credit_card_account_id": credit_card_account_id,
              "user_id": user_id, "shipping_address": shipping_address, "reason": reason,
              "expedited_shipping": expedited_shipping, "order_date": TODAY,
              "status": "ORDERED", "old_card_cancelled": True}
    if not Bank.add(db, "credit_card_orders", order_id, record):
        return "Error: Order may have already been placed for this card replacement."
    # τ² cancels the card whose record id is the account id (found above by its field)
    Bank.update(db, "credit_card_accounts", credit_card_account_id,
                {"status": "CLOSED", "closed_date": TODAY})
    return "\n".join([
        f"Order ID: {order_id}", f"Card Account: {credit_card_account_id}",
        f"Reason: {_title(reason)}", f"Shipping Address: {shipping_address}",
        f"Shipping Method: {'Expedited' if expedited_shipping else 'Standard'}",
        f"Expected Delivery: {'2-3' if expedited_shipping else '7-10'} business days", "",
        "The old card has been cancelled for security. The new card will have the same "
        "account number but a new card number and CVV."])


def _transfer_funds_7291(db, source_account_id, destination_account_id, amount):
    if not source_account_id or not destination_account_id or amount is None:
        return ("Error: Missing required parameters (source_account_id, "
                "destination_account_id, amount).")
    try:
        amount = float(amount)
    except (ValueError, TypeError):
        return f"Error: Invalid amount '{amount}'. Must be a number."
    if amount <= 0:
        return "Error: Transfer amount must be positive."
    if source_account_id == destination_account_id:
        return "Error: Source and destination accounts cannot be the same."
    source = _account(db, source_account_id)
    if source is None:
        return f"Error: Source account '{source_account_id}' not found."
    dest = _account(db, destination_account_id)
    if dest is None:
        return f"Error: Destination account '{destination_account_id}' not found."
    if source.get("status") not in ("ACTIVE", "OPEN"):
        return f"Error: Source account '{source_account_id}' is not active."
    if dest.get("status") not in ("ACTIVE", "OPEN"):
        return f"Error: Destination account '{destination_account_id}' is not active."
    before = _held(source)
    if before < amount:
        return (f"Error: Insufficient funds. Source account balance is ${before:.2f}, but "
                f"transfer amount is ${amount:.2f}.")
    new_source, new_dest = before - amount, _held(dest) + amount
    db.put("accounts", {**source, "current_holdings": f"${new_source:.2f}"})
    db.put("accounts", {**dest, "current_holdings": f"${new_dest:.2f}"})
    return ("Transfer completed successfully!\n"
            f"  - Amount: ${amount:.2f}\n"
            f"  - From: {source_account_id} (new balance: ${new_source:.2f})\n"
            f"  - To: {destination_account_id} (new balance: ${new_dest:.2f})")


def _credit(db, account_id, amount, credit_type, side):
    """A credit to a checking (`side` "checking") or savings account, and its transaction."""
    if not account_id or amount is None or not credit_type:
        return "Error: Missing required parameters."
    try:
        amount = float(amount)
    except (TypeError, ValueError):
        return "Error: Invalid credit amount. Must be a number."
    if amount <= 0:
        return "Error: Credit amount must be positive."
    kinds = {"checking": {"rebate_credit": "REBATE CREDIT", "fee_refund": "FEE REFUND"},
             "savings": {"interest_correction": "INTEREST CORRECTION",
                         "fee_refund": "FEE REFUND", "goodwill_credit": "GOODWILL CREDIT"}}[side]
    if credit_type not in kinds:
        return f"Error: Invalid credit_type. Must be one of: {list(kinds)}"
    account = _account(db, account_id)
    if account is None:
        return f"Error: Account '{account_id}' not found."
    cls = account.get("class", "").lower()
    if side == "checking" and cls != "checking":
        return (f"Error: Account '{account_id}' is not a checking account. Credits can only be "
                "applied to checking accounts.")
    if side == "savings" and cls not in ("saving", "savings"):
        return (f"Error: Account '{account_id}' is not a savings account. This tool only "
                "applies to savings accounts.")
    if account.get("status") not in ("ACTIVE", "OPEN"):
        return f"Error: Account '{account_id}' is not active."
    before = _held(account)
    after = before + amount
    held = f"${after:.2f}" if side == "checking" else f"{after:.2f}"
    db.put("accounts", {**account, "current_holdings": held})
    txn = "txn_" + Bank.hex_id(f"{side}_credit:{account_id}:{credit_type}:{amount}:{TODAY}")
    db.put("bank_account_transaction_history", {
        "_id": txn, "transaction_id": txn, "account_id": account_id, "date": TODAY,
        "description": f"{kinds[credit_type]} - CUSTOMER SERVICE", "amount": amount,
        "type": credit_type, "status": "posted"})
    return ("\nCredit applied successfully!\n"
            f"  - Transaction ID: {txn}\n"
            f"  - Account: {account_id}\n"
            f"  - Credit Type: {credit_type}\n"
            f"  - Amount: ${amount:.2f}\n"
            f"  - Previous Balance: ${before:.2f}\n"
            f"  - New Balance: ${after:.2f}")


def _checking_credit_5829(db, account_id, amount, credit_type):
    return _credit(db, account_id, amount, credit_type, "checking")


def _savings_credit_6831(db, account_id, amount, credit_type):
    return _credit(db, account_id, amount, credit_type, "savings")


def _interest_report_7294(db, account_id, user_id, expected_apy, actual_apy,
                          amount_difference):
    if not account_id or not user_id or expected_apy is None or actual_apy is None \
            or amount_difference is None:
        return "Error: Missing required parameters."
    try:
        expected, actual, diff = float(expected_apy), float(actual_apy), float(amount_difference)
    except (ValueError, TypeError):
        return "Error: expected_apy, actual_apy, and amount_difference must be numbers."
    account = _account(db, account_id)
    if account is None:
        return f"Error: Account '{account_id}' not found."
    users = db.find("users", _id=user_id)
    if not users:
        return f"Error: User '{user_id}' not found."
    report = "IDR_" + Bank.hex_id(f"interest_report:{account_id}:{user_id}:{expected}:{actual}:"
                                  f"{TODAY}")
    # τ² files the report in a table its database does not have: nothing is stored
    level = account.get("level", "Unknown")
    return ("\nInterest Discrepancy Report Submitted Successfully!\n"
            f"  - Report ID: {report}\n"
            f"  - Account: {account_id} ({level})\n"
            f"  - Customer: {users[0].get('name', 'Unknown')}\n"
            f"  - Expected APY: {expected}%\n"
            f"  - Actual APY: {actual}%\n"
            f"  - APY Difference: {round(expected - actual, 4)}%\n"
            f"  - Amount Difference: ${diff:.2f}\n"
            "  - Status: PENDING_REVIEW\n"
            "\nThe backend team will investigate this discrepancy and ensure correct APY "
            "calculations are applied going forward.")


def _sort_day(row):
    day = str(row.get("date", ""))
    for fmt in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y"):
        try:
            return datetime.datetime.strptime(day, fmt)
        except ValueError:
            continue
    return datetime.datetime.min


def _account_transactions_9173(db, account_id):
    if not account_id:
        return "Error: Missing required parameter: account_id"
    if _account(db, account_id) is None:
        return f"Error: Account '{account_id}' not found."
    # most recent first; a stable sort keeps same-day records in their stored order
    rows = sorted(db.find("bank_account_transaction_history", account_id=account_id),
                  key=_sort_day, reverse=True)
    parts = ["Bank account transactions retrieved successfully.", "",
             "Executed: get_bank_account_transactions_9173",
             f"Transactions for account {account_id}:"]
    if not rows:
        parts.append("\nNo transactions found for this account.")
        return "\n".join(parts)
    lines = [f"Found {len(rows)} record(s) in 'bank_account_transaction_history':\n"]
    for i, row in enumerate(rows, 1):
        lines.append(f"{i}. Record ID: {row['_id']}")
        lines += [f"   {k}: {Bank.py_str(v)}" for k, v in Bank.record(row).items()]
        lines.append("")
    parts.append("\n".join(lines))
    return "\n".join(parts)
