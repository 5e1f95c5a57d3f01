"""τ²-bench banking_knowledge's discoverable tools for debit cards (listing, ordering,
activating a replacement, freezing and unfreezing, closing, clearing an alert or a velocity
block, resetting a PIN, a temporary limit increase) and debit-card disputes, written for
benchpack to answer and change the database as τ²'s do (none of its code is copied). Inlined
into banking.py before banking_discoverable.py, whose `DISCOVERABLE` lists them.

A debit card is a row of `debit_cards` keyed by its card id; its account is the `accounts` row
keyed by the card's `account_id`. Fees are numbers as τ² receives them (a JSON integer is a
float by then), and show as Python prints them ("$15.0").
"""

import datetime
import json

# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----


def _row(db, table, key):
    hash(key)  # τ² looks it up in a dict: an unhashable id raises TypeError
    rows = db.find(table, _id=key)
    return rows[0] if rows else None


def _title_of(code):
    return code.replace("_", " ").title()


def _digits(seed, length, keep):
    """The decimal digits among the seed's first `length` hex digits, `keep` of them, padded
    with zeros on the left (how τ² derives a new card's last four digits and its CVV)."""
    return "".join(c for c in Bank.hex_id(seed, length) if c.isdigit())[:keep].zfill(keep)


def _pin_problem(pin):
    """Why a chosen PIN is refused (None when it is fine): 4 digits, not a run up or down,
    not one digit four times."""
    if not pin or not pin.isdigit() or len(pin) != 4:
        return "PIN must be exactly 4 digits."
    steps = {int(pin[i + 1]) - int(pin[i]) for i in range(3)}
    if steps in ({1}, {-1}):
        return "PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN."
    if len(set(pin)) == 1:
        return ("PIN cannot be all the same digit (e.g., 1111). Please choose a more secure "
                "PIN.")
    return None


def _debit_cards_7823(db, account_id):
    if not account_id:
        return "Error: Missing required parameter 'account_id'."
    account = _row(db, "accounts", account_id)
    if account is None:
        return f"Error: Account '{account_id}' not found."
    if account.get("class", "").lower() not in ("checking", "business_checking"):
        return (f"Error: Account '{account_id}' is not a checking account. Debit cards are only "
                "available for checking accounts.")
    shown = []
    for card in db.find("debit_cards", account_id=account_id):
        info = {"card_id": card["_id"], **Bank.record(card)}
        # two fields renamed (moved to the end) as τ²'s listing does
        if "last_4_digits" in info and "card_number_last_4" not in info:
            info["card_number_last_4"] = info.pop("last_4_digits")
        if "issue_date" in info and "date_issued" not in info:
            info["date_issued"] = info.pop("issue_date")
        elif "created_date" in info and "date_issued" not in info:
            info["date_issued"] = info.pop("created_date")
        shown.append(info)
    if not shown:
        return f"No debit cards found for account '{account_id}'."
    # the MM/DD/YYYY text itself, latest text first (a stable sort)
    shown.sort(key=lambda c: c.get("date_issued") or "", reverse=True)
    return json.dumps(shown, indent=2)


def _expiry(date):
    """Four years on, at the end of the month (February: the 28th), MM/DD/YYYY."""
    try:
        month, _, year = date.split("/")
        later = str(int(year) + 4)
    except (ValueError, IndexError):
        return "12/31/2029"
    day = ("31" if month in ("01", "03", "05", "07", "08", "10", "12")
           else "28" if month == "02" else "30")
    return f"{month}/{day}/{later}"


def _float_or_none(value):
    return float(value) if value is not None else None


def _order_debit_card_5739(db, account_id, user_id, delivery_option, delivery_fee, card_design,
                           design_fee, shipping_address, excess_replacement_fee=None):
    try:
        delivery_fee = _float_or_none(delivery_fee)
    except (TypeError, ValueError):
        return "Error: delivery_fee must be a number."
    try:
        design_fee = _float_or_none(design_fee)
    except (TypeError, ValueError):
        return "Error: design_fee must be a number."
    try:
        excess = float(excess_replacement_fee or 0)
    except (TypeError, ValueError):
        excess = 0
    if not (account_id and user_id and delivery_option and delivery_fee is not None
            and card_design and design_fee is not None and shipping_address):
        return ("Error: Missing required parameters. Required: account_id, user_id, "
                "delivery_option, delivery_fee, card_design, design_fee, shipping_address.")
    speeds = {"STANDARD": "7-10 business days", "EXPEDITED": "3-5 business days",
              "RUSH": "1-2 business days"}
    if delivery_option.upper() not in speeds:
        return f"Error: Invalid delivery_option. Must be one of: {list(speeds)}"
    delivery_option = delivery_option.upper()
    designs = ["CLASSIC", "PREMIUM", "CUSTOM"]
    if card_design.upper() not in designs:
        return f"Error: Invalid card_design. Must be one of: {designs}"
    card_design = card_design.upper()
    account = _row(db, "accounts", account_id)
    if account is None:
        return f"Error: Account '{account_id}' not found."
    kind, status = account.get("class"), account.get("status")
    if kind != "checking":
        return (f"Error: Debit cards can only be ordered for checking accounts. Account "
                f"'{account_id}' is a {Bank.py_str(kind)} account.")
    if status != "OPEN":
        return (f"Error: Account must be OPEN. Account '{account_id}' has status: "
                f"{Bank.py_str(status)}")
    if account.get("user_id") != user_id:
        return f"Error: Account '{account_id}' does not belong to user '{user_id}'."
    try:
        held = float(Bank.py_str(account.get("current_holdings", "0")).replace(",", ""))
    except ValueError:
        held = 0.0
    if held < 25.0:
        return f"Error: Account must have a minimum balance of $25. Current balance: ${held:.2f}"
    if any(o.get("account_id") == account_id and o.get("status") == "PENDING"
           for o in db.rows("debit_card_orders")):
        return f"Error: There is already a pending debit card order for account '{account_id}'."
    cards = db.find("debit_cards", account_id=account_id)
    if any(c.get("status") == "ACTIVE" for c in cards):
        return (f"Error: Account '{account_id}' already has an active debit card. Maximum 1 "
                "active card per checking account.")
    total = delivery_fee + design_fee + excess
    if total > 0 and held < total:
        return (f"Error: Insufficient funds for fees. Total fees: ${total:.2f}. Current "
                f"balance: ${held:.2f}")
    order_id = "dcord_" + Bank.hex_id(
        f"debit_card_order:{account_id}:{user_id}:{delivery_option}", 12)
    if not Bank.add(db, "debit_card_orders", order_id, {
            "order_id": order_id, "account_id": account_id, "user_id": user_id,
            "delivery_option": delivery_option, "card_design": card_design,
            "shipping_address": shipping_address, "delivery_fee": delivery_fee,
            "design_fee": design_fee, "excess_replacement_fee": excess, "total_fee": total,
            "order_date": TODAY, "expected_delivery": speeds[delivery_option],
            "status": "PENDING"}):
        return "Error: Failed to create debit card order. Order may already exist."
    fees = []
    if delivery_fee > 0:
        fees.append(("Delivery", f"${delivery_fee}"))
    if design_fee > 0:
        fees.append(("Design", f"${design_fee}"))
    if excess > 0:
        fees.append(("Excess Replacement", f"${excess:.0f}"))
    if total > 0:
        db.put("accounts", {**account, "current_holdings": f"{held - total:.2f}"})
        fee_id = f"btxn_dcfee_{order_id[-8:]}"
        Bank.add(db, "bank_account_transaction_history", fee_id, {
            "transaction_id": fee_id, "account_id": account_id, "date": TODAY,
            "description": "DEBIT CARD ORDER FEE - " + ", ".join(f"{k} {v}" for k, v in fees),
            "amount": -total, "type": "debit_card_fee", "status": "posted"})
    card_id = "dbc_" + Bank.hex_id(f"debit_card:{account_id}:{user_id}:{TODAY}", 12)
    owner = _row(db, "users", user_id)
    closed = next((c for c in cards if c.get("status") == "CLOSED"), None)
    if closed is not None:
        was = closed.get("closure_reason", "first_card")
        reason = ("fraud" if was == "fraud_suspected" else was) \
            if was in ("lost", "stolen", "fraud", "fraud_suspected") else "first_card"
    else:
        reason = "first_card" if cards else "new_account"
    Bank.add(db, "debit_cards", card_id, {
        "card_id": card_id, "account_id": account_id, "user_id": user_id,
        "cardholder_name": owner.get("name", "CARDHOLDER").upper() if owner else "CARDHOLDER",
        "last_4_digits": _digits(f"card_details:{card_id}:last4", 8, 4),
        "cvv": _digits(f"card_details:{card_id}:cvv", 6, 3), "status": "PENDING",
        "issue_date": TODAY, "expiration_date": _expiry(TODAY), "card_design": card_design,
        "issue_reason": reason})
    lines = ["Debit Card Order Confirmed", f"Order ID: {order_id}", f"Card ID: {card_id}",
             f"Linked Account: {account_id}", f"Delivery Option: {delivery_option}",
             f"Card Design: {card_design}", f"Shipping Address: {shipping_address}",
             f"Expected Delivery: {speeds[delivery_option]}", "",
             "Note: Card will arrive with status PENDING. Customer must call to activate after "
             "receiving the card."]
    if total > 0:
        lines.append(f"Total Fees: ${total:.2f} ("
                     + ", ".join(f"{k}: {v}" for k, v in fees)
                     + f") - CHARGED to account {account_id}")
        lines.append(f"New Account Balance: ${held - total:.2f}")
    else:
        lines.append("Total Fees: $0 (No additional charges)")
    return "\n".join(lines)


def _close_debit_card_4721(db, card_id, reason):
    if not card_id or not reason:
        return "Error: Missing required parameters. Required: card_id, reason."
    reasons = ["lost", "stolen", "fraud_suspected", "damaged", "no_longer_needed",
               "account_closing"]
    if reason.lower() not in reasons:
        return f"Error: Invalid reason. Must be one of: {reasons}"
    reason = reason.lower()
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    was = card.get("status")
    if was not in ("ACTIVE", "PENDING"):
        return (f"Error: Debit card '{card_id}' cannot be closed. Current status: "
                f"{Bank.py_str(was)}. Only ACTIVE or PENDING cards can be closed.")
    db.put("debit_cards", {**card, "status": "CLOSED", "closed_date": TODAY,
                           "closure_reason": reason})
    lines = ["Debit Card Closed Successfully", f"Card ID: {card_id}", f"Previous Status: {was}",
             "New Status: CLOSED", f"Closure Reason: {_title_of(reason)}",
             f"Closure Date: {TODAY}", ""]
    if reason in ("lost", "stolen", "fraud_suspected"):
        lines += ["IMPORTANT: This card has been immediately deactivated for security.",
                  "Any pending transactions may still be processed."]
        if reason == "fraud_suspected":
            lines += ["Please advise the customer to review recent transactions and file "
                      "disputes for any unauthorized charges.",
                      "Also recommend changing their online banking password."]
    lines += ["", "Note: This card cannot be reactivated. If the customer needs a new card, "
              "they can order one through the standard ordering process.",
              "Any recurring payments linked to this card will need to be updated with new "
              "payment information."]
    return "\n".join(lines)


def _freeze_debit_card_3892(db, card_id):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") == "FROZEN":
        return f"Error: Debit card '{card_id}' is already frozen."
    if card.get("status") != "ACTIVE":
        return (f"Error: Debit card '{card_id}' cannot be frozen. Current status: "
                f"{Bank.py_str(card.get('status'))}. Only ACTIVE cards can be frozen.")
    db.put("debit_cards", {**card, "status": "FROZEN", "frozen_date": TODAY})
    return "\n".join([
        "Debit Card Frozen Successfully", f"Card ID: {card_id}", "Status: FROZEN",
        f"Frozen Date: {TODAY}", "", "While frozen:",
        "- All new purchase transactions will be declined",
        "- Recurring payments and subscriptions will be declined",
        "- Pending transactions already authorized may still process", "",
        "To unfreeze, the customer can call customer service or use the mobile app.",
        "If the card is confirmed lost or stolen, recommend closing the card permanently "
        "instead."])


def _unfreeze_debit_card_3893(db, card_id):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") == "ACTIVE":
        return f"Error: Debit card '{card_id}' is already active."
    if card.get("status") != "FROZEN":
        return (f"Error: Debit card '{card_id}' cannot be unfrozen. Current status: "
                f"{Bank.py_str(card.get('status'))}. Only FROZEN cards can be unfrozen.")
    account_id = card.get("account_id")
    account = _row(db, "accounts", account_id) if account_id else None
    if account is not None and account.get("status") != "OPEN":
        return (f"Error: The linked checking account '{account_id}' is no longer open. Card "
                "cannot be unfrozen.")
    db.put("debit_cards", {**card, "status": "ACTIVE", "unfrozen_date": TODAY})
    return "\n".join([
        "Debit Card Unfrozen Successfully", f"Card ID: {card_id}", "Status: ACTIVE",
        f"Unfrozen Date: {TODAY}", "", "The card is now active and ready to use immediately.",
        "All transactions will process normally."])


def _clear_alert_4892(db, card_id, reason):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    if not reason:
        return "Error: Missing required parameter: reason."
    reasons = ["customer_verified", "velocity_clear"]
    if reason not in reasons:
        return f"Error: Invalid reason '{reason}'. Must be one of: {', '.join(reasons)}"
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if reason == "velocity_clear":
        if not card.get("velocity_blocked", False):
            return f"Error: Debit card '{card_id}' does not have an active velocity block."
        db.put("debit_cards", {**card, "velocity_blocked": False,
                               "velocity_cleared_date": TODAY})
        return "\n".join([
            "Velocity Block Cleared Successfully", f"Card ID: {card_id}",
            f"Cleared Date: {TODAY}", "", "The card is now unblocked and ready for normal use.",
            "The velocity monitoring will continue - if the same unusual patterns recur,",
            "the card may be blocked again automatically."])
    if not card.get("fraud_alert_active", False):
        return f"Error: Debit card '{card_id}' does not have an active fraud alert."
    if card.get("alert_source") == "bank_initiated":
        return ("Error: BANK_INITIATED_ALERT - This fraud alert was initiated by the bank's "
                "fraud detection system and cannot be cleared by customer service agents. "
                "Please transfer the customer to the security team using "
                "transfer_to_human_agents.")
    db.put("debit_cards", {**card, "fraud_alert_active": False, "alert_source": None,
                           "fraud_alert_cleared_date": TODAY})
    return "\n".join([
        "Fraud Alert Cleared Successfully", f"Card ID: {card_id}", f"Cleared Date: {TODAY}", "",
        "The fraud alert has been removed from the card.",
        "All transactions will process normally.", "",
        "Remind the customer to review recent transactions and report any unauthorized "
        "charges."])


def _reset_pin_6284(db, card_id, last_4_digits, new_pin):
    if not (card_id and last_4_digits and new_pin):
        return "Error: Missing required parameters. Required: card_id, last_4_digits, new_pin."
    if not last_4_digits.isdigit() or len(last_4_digits) != 4:
        return "Error: Last 4 digits must be exactly 4 digits."
    problem = _pin_problem(new_pin)
    if problem:
        return f"Error: {problem}"
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if card.get("last_4_digits") != last_4_digits:
        return "Error: Card verification failed. The last 4 digits do not match our records."
    if card.get("status") != "ACTIVE":
        return (f"Error: Cannot reset PIN. Card status is {Bank.py_str(card.get('status'))}. "
                "Only ACTIVE cards can have their PIN reset.")
    db.put("debit_cards", {**card, "pin_last_changed": TODAY, "pin_locked": False,
                           "pin_attempts_remaining": 3})
    return "\n".join([
        "Debit Card PIN Reset Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
        "The new PIN is effective immediately.",
        "Your card has been unlocked and is ready to use.",
        "Customer can use the new PIN for ATM withdrawals and point-of-sale transactions.", "",
        "Security reminder: Never share your PIN with anyone."])


ATM_LIMITS = {"blue account": 500, "green account": 600, "light blue account": 400,
              "green fee-free account": 500, "evergreen account": 750,
              "bluest account": 1500, "dark green account": 300, "gold years account": 600,
              "purple account": 1000}
"""A checking account's level (lower case) → its card's daily ATM limit when the card sets
none (τ²'s defaults)."""


def _limit_refused(card, account, kind):
    """(error text, current limit, field, name) for a temporary increase of `kind`."""
    if kind == "purchase":
        name = "Daily Purchase Limit"
        return None, card.get("daily_purchase_limit"), "daily_purchase_limit", name
    name = "Daily ATM Withdrawal Limit"
    current = card.get("daily_atm_limit")
    if current is None:
        level = account.get("level", "").lower()
        if "light green" in level:
            return ("Error: Light Green Account (teen checking) cards have policy-based limits "
                    "that cannot be modified. The daily ATM withdrawal limit of $150 is fixed by "
                    "account policy for safety reasons. The customer may request the "
                    "parent/guardian to withdraw cash from their own account if needed."), \
                None, None, name
        current = ATM_LIMITS.get(level)
        if current is None:
            return ("Error: Could not determine the default ATM limit for account type "
                    f"'{Bank.py_str(account.get('level'))}'. Please verify the account type."), \
                None, None, name
    return None, current, "daily_atm_limit", name


def _temporary_limit_8374(db, card_id, limit_type, new_limit):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    if not limit_type:
        return "Error: Missing required parameter: limit_type."
    if limit_type not in ("atm", "purchase"):
        return f"Error: Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'."
    if new_limit is None:
        return "Error: Missing required parameter: new_limit."
    try:
        new_limit = float(new_limit)
    except (ValueError, TypeError):
        return f"Error: new_limit must be an integer, got '{new_limit}'."
    if not new_limit.is_integer():
        return f"Error: new_limit must be an integer, got '{new_limit}'."
    new_limit = int(new_limit)
    if new_limit <= 0:
        return "Error: new_limit must be a positive amount."
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") != "ACTIVE":
        return (f"Error: Debit card '{card_id}' is not active. Current status: "
                f"{Bank.py_str(card.get('status'))}. Only ACTIVE cards can have limit "
                "increases.")
    account_id = card.get("account_id")
    account = _row(db, "accounts", account_id) if account_id else None
    if account is None:
        return f"Error: Could not find linked account for debit card '{card_id}'."
    if account.get("status") != "OPEN":
        return (f"Error: The linked account '{account_id}' is not in good standing. Account "
                f"status: {Bank.py_str(account.get('status'))}.")
    if account.get("date_opened"):
        try:
            opened = datetime.datetime.strptime(account["date_opened"], "%m/%d/%Y")
        except ValueError:
            opened = None
        age = (datetime.datetime.strptime(TODAY, "%m/%d/%Y") - opened).days if opened else 60
        if age < 60:
            return ("Error: Account must be at least 60 days old for a temporary limit increase. "
                    f"Account age: {age} days.")
    error, current, field, name = _limit_refused(card, account, limit_type)
    if error:
        return error
    if current is None:
        return (f"Error: The card does not have a {name.lower()} configured. This may be a "
                "restricted account type where limits are set by account policy and cannot be "
                "modified.")
    most = int(current * 1.5)
    if new_limit > most:
        return (f"Error: Requested limit ${new_limit} exceeds the maximum allowed temporary "
                f"increase. Maximum temporary limit is ${most} (150% of current ${current} "
                "limit).")
    if new_limit <= current:
        return (f"Error: Requested limit ${new_limit} is not higher than the current limit of "
                f"${current}.")
    db.put("debit_cards", {**card, field: new_limit,
                           f"temporary_{limit_type}_limit_increase": True,
                           f"original_{limit_type}_limit": current,
                           f"temporary_{limit_type}_limit_expires": TODAY})
    return "\n".join([
        f"Temporary {name} Increase Granted Successfully", f"Card ID: {card_id}",
        f"Previous Limit: ${current}", f"New Temporary Limit: ${new_limit}",
        f"Increase Amount: ${new_limit - current}", "", "Important Information:",
        "- This temporary increase expires in 24 hours",
        f"- After expiration, the limit will revert to ${current}",
        "- Only one temporary increase is allowed per 24-hour period", "",
        "Note: If the customer is at a third-party (non-Rho-Bank) ATM, that ATM may have its own",
        "per-transaction or daily limits that Rho-Bank cannot override. The customer may need to",
        "use a Rho-Bank ATM or make multiple smaller withdrawals at third-party ATMs."])
