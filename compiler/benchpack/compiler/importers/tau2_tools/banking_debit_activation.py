"""τ²-bench banking_knowledge's discoverable tools that activate a debit card (τ² has one per
kind of card: a first card, a replacement for a lost, stolen or compromised one, a reissue)
or change a working one's PIN or recurring-payment block, written for benchpack to answer and
change the database as τ²'s do (none of its code is copied). Inlined into banking.py after
banking_debit.py and before banking_discoverable.py, whose `DISCOVERABLE` lists them.
"""

# ---- inline banking_debit.py ----
from benchpack.compiler.importers.tau2_tools.banking_debit import _pin_problem, _row, _title_of

# ---- end of inline ----
# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----


ACTIVATORS = {"new_account": "8291", "first_card": "8291", "lost": "8292", "stolen": "8292",
              "fraud": "8292", "expired": "8293", "damaged": "8293", "upgrade": "8293",
              "bank_reissue": "8293"}
"""A card's issue reason → the activation tool meant for it (activate_debit_card_<n>)."""


def _activation_refused(db, tool, reasons, card_id, last_4_digits, expiration_date, cvv, pin):
    """(error text, card row) of τ²'s checks shared by its three activation tools."""
    if not (card_id and last_4_digits and expiration_date and cvv and pin):
        return ("Error: Missing required parameters. Required: card_id, last_4_digits, "
                "expiration_date, cvv, pin."), None
    problem = _pin_problem(pin)
    if problem:
        return f"Error: {problem}", None
    if not cvv.isdigit() or len(cvv) != 3:
        return "Error: CVV must be exactly 3 digits.", None
    if not last_4_digits.isdigit() or len(last_4_digits) != 4:
        return "Error: Last 4 digits must be exactly 4 digits.", None
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found.", None
    why = card.get("issue_reason", "new_account")
    if why not in reasons:
        right = f"activate_debit_card_{ACTIVATORS[why]}" if why in ACTIVATORS else "unknown"
        return (f"Error: Wrong activation tool. This card has issue_reason='{why}'. Please use "
                f"{right} instead of {tool}."), None
    status = card.get("status")
    if status == "ACTIVE":
        return f"Error: Debit card '{card_id}' is already active.", None
    if status != "PENDING":
        return (f"Error: Debit card '{card_id}' cannot be activated. Current status: "
                f"{Bank.py_str(status)}. Only PENDING cards can be activated."), None
    if card.get("last_4_digits") != last_4_digits:
        return ("Error: Card verification failed. The last 4 digits do not match our "
                "records."), None
    account_id = card.get("account_id")
    account = _row(db, "accounts", account_id) if account_id else None
    if account is not None and account.get("status") != "OPEN":
        return (f"Error: The linked checking account '{account_id}' is no longer open. Card "
                "cannot be activated."), None
    return None, card


def _switch_over(db, card, others):
    """Activate `card` and give the account's other active cards the fields `others`; their
    ids, in table order."""
    db.put("debit_cards", {**card, "status": "ACTIVE", "activated_date": TODAY})
    changed = []
    for other in db.find("debit_cards", account_id=card.get("account_id")):
        if other["_id"] != card["_id"] and other.get("status") == "ACTIVE":
            db.put("debit_cards", {**other, **others})
            changed.append(other["_id"])
    return changed


def _activate_new_8291(db, card_id, last_4_digits, expiration_date, cvv, pin):
    error, card = _activation_refused(db, "activate_debit_card_8291",
                                      ("new_account", "first_card"), card_id, last_4_digits,
                                      expiration_date, cvv, pin)
    if error:
        return error
    retired = _switch_over(db, card, {"status": "DEACTIVATED", "deactivated_date": TODAY,
                                      "deactivation_reason": "New card activated"})
    lines = ["New Debit Card Activation Successful", f"Card ID: {card_id}", "Status: ACTIVE",
             f"Activation Date: {TODAY}", "",
             "Your card is now ready to use at any ATM or point of sale terminal.",
             "For security, please sign the back of your card."]
    if retired:
        lines.append("\nNote: Previous card(s) have been deactivated: " + ", ".join(retired))
    return "\n".join(lines)


def _activate_replacement_8292(db, card_id, last_4_digits, expiration_date, cvv, pin):
    error, card = _activation_refused(db, "activate_debit_card_8292", ("lost", "stolen", "fraud"),
                                      card_id, last_4_digits, expiration_date, cvv, pin)
    if error:
        return error
    why = card.get("issue_reason", "lost")
    retired = _switch_over(db, card, {"status": "DEACTIVATED", "deactivated_date": TODAY,
                                      "deactivation_reason": f"Replacement card activated ({why})"})
    lines = ["Replacement Debit Card Activation Successful", f"Card ID: {card_id}",
             f"Replacement Reason: {_title_of(why)}", "Status: ACTIVE",
             f"Activation Date: {TODAY}", "", "Your replacement card is now ready to use.", "",
             "IMPORTANT SECURITY REMINDERS:",
             "- Please review your recent transactions for any unauthorized charges",
             "- Report any suspicious activity immediately"]
    if why == "fraud":
        lines.append("- Since fraud was suspected, we recommend changing your online banking "
                     "password")
    if retired:
        lines.append("\nPrevious card(s) have been deactivated for security: "
                     + ", ".join(retired))
    return "\n".join(lines)


def _activate_reissued_8293(db, card_id, last_4_digits, expiration_date, cvv, pin):
    error, card = _activation_refused(db, "activate_debit_card_8293",
                                      ("expired", "damaged", "upgrade", "bank_reissue"),
                                      card_id, last_4_digits, expiration_date, cvv, pin)
    if error:
        return error
    why = card.get("issue_reason", "expired")
    # the old card stays usable for a day (its grace period ends "today" on τ²'s clock)
    kept = _switch_over(db, card, {"status": "GRACE_PERIOD", "grace_period_ends": TODAY,
                                   "deactivation_reason": f"Reissued card activated ({why})"})
    lines = ["Reissued Debit Card Activation Successful", f"Card ID: {card_id}",
             f"Reissue Reason: {_title_of(why)}", "Status: ACTIVE",
             f"Activation Date: {TODAY}", "", "Your reissued card is now ready to use."]
    if kept:
        lines += [f"\nNote: Your previous card(s) ({', '.join(kept)}) will remain active for 24 "
                  "hours as a grace period.",
                  "After 24 hours, the old card(s) will be automatically deactivated."]
    if why in ("expired", "bank_reissue"):
        lines.append("\nReminder: If your card number changed, please update any recurring "
                     "payments with your new card details.")
    return "\n".join(lines)


def _change_pin_6285(db, card_id, current_pin, new_pin):
    if not (card_id and current_pin and new_pin):
        return "Error: Missing required parameters. Required: card_id, current_pin, new_pin."
    if not current_pin.isdigit() or len(current_pin) != 4:
        return "Error: Current PIN must be exactly 4 digits."
    problem = _pin_problem(new_pin)
    if problem:
        return f"Error: {problem}"
    if current_pin == new_pin:
        return "Error: New PIN must be different from current PIN."
    card = _row(db, "debit_cards", card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") != "ACTIVE":
        return (f"Error: Cannot change PIN. Card status is {Bank.py_str(card.get('status'))}. "
                "Only ACTIVE cards can have their PIN changed.")
    # τ² checks the new PIN's shape only: the current one is not compared with anything
    db.put("debit_cards", {**card, "pin_last_changed": TODAY})
    return "\n".join([
        "Debit Card PIN Changed Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
        "The new PIN is effective immediately.",
        "Customer can use the new PIN for ATM withdrawals and point-of-sale transactions.", "",
        "Security reminder: Never share your PIN with anyone."])


def _recurring_block_7382(db, card_id, block_recurring):
    if not card_id:
        return "Error: Missing required parameter: card_id"
    card = _row(db, "debit_cards", card_id)
    if not card or not Bank.record(card):  # τ² takes an empty record for a missing one
        return f"Error: Debit card '{card_id}' not found."
    status = card.get("status", "").upper()
    if status != "ACTIVE":
        return (f"Error: Cannot update recurring block settings for a card with status "
                f"'{status}'. Card must be ACTIVE.")
    db.put("debit_cards", {**card, "recurring_blocked": block_recurring})
    if block_recurring:
        return (f"Recurring payments BLOCKED for debit card {card_id}.\n"
                "All recurring/subscription charges will be declined.\n"
                "One-time purchases are not affected.\n"
                "This change takes effect within 24 hours.")
    return (f"Recurring payments UNBLOCKED for debit card {card_id}.\n"
            "Recurring/subscription charges will now be allowed.\n"
            "This change takes effect within 24 hours.")


def _example_0000(db):
    return "Example tool executed successfully."
