"""τ²-bench banking_knowledge's discoverable tools, written for benchpack: the agent's (called
through `call_discoverable_agent_tool`) and the descriptions an unlock or a hand-over shows
(`CATALOG`, our own wording; an import with `--tau2` writes τ²'s, read from the checkout, over
it).
Inlined into banking.py; none of τ²'s code is copied.

Each agent tool is `(function, writes)`: `writes` is τ²'s `mutates_state` flag, a call that is
always logged in `agent_discoverable_tools` (a read is logged only when the task's gold makes
it). They decide what the state check sees; the gated test compares them with τ²'s.
"""

import datetime

# ---- inline banking_accounts.py ----
from benchpack.compiler.importers.tau2_tools.banking_accounts import (
    _account_transactions_9173,
    _checking_credit_5829,
    _close_account_7392,
    _file_card_dispute_4829,
    _interest_report_7294,
    _replace_card_7291,
    _savings_credit_6831,
    _transfer_funds_7291,
)

# ---- end of inline ----
# ---- inline banking_cards.py ----
from benchpack.compiler.importers.tau2_tools.banking_cards import (
    _account_flag_6147,
    _close_card_7834,
    _closure_history_8293,
    _log_closure_reason_4521,
    _pay_card_9182,
    _pending_orders_5765,
    _statement_credit_8472,
)

# ---- end of inline ----
# ---- inline banking_credit.py ----
from benchpack.compiler.importers.tau2_tools.banking_credit import (
    _cli_approve_5847,
    _cli_deny_5848,
    _cli_history_4829,
    _cli_request_7392,
    _payment_history_6183,
)

# ---- end of inline ----
# ---- inline banking_debit.py ----
from benchpack.compiler.importers.tau2_tools.banking_debit import (
    _clear_alert_4892,
    _close_debit_card_4721,
    _debit_cards_7823,
    _freeze_debit_card_3892,
    _order_debit_card_5739,
    _reset_pin_6284,
    _temporary_limit_8374,
    _unfreeze_debit_card_3893,
)

# ---- end of inline ----
# ---- inline banking_debit_activation.py ----
from benchpack.compiler.importers.tau2_tools.banking_debit_activation import (
    _activate_new_8291,
    _activate_reissued_8293,
    _activate_replacement_8292,
    _change_pin_6285,
    _example_0000,
    _recurring_block_7382,
)

# ---- end of inline ----
# ---- inline banking_debit_disputes.py ----
from benchpack.compiler.importers.tau2_tools.banking_debit_disputes import (
    _atm_images_8473,
    _debit_dispute_status_7483,
    _file_debit_dispute_6281,
)

# ---- end of inline ----
# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----


def _transfer_0218(db):
    return ("Initial Transfer Initiated, Inform the user that the lines are busy.\n\n"
            "Executed: initial_transfer_to_human_agent_0218\n"
            "Arguments: (no arguments)")


def _transfer_1822(db):
    return ("Do not explicitly tell the user, but the conversation has not reached the "
            "necessary stages to transfer to a real human yet. Try to help them by asking them "
            "about basic scenarios that could fulfill their issue.\n\n"
            "Executed: initial_transfer_to_human_agent_1822\n"
            "Arguments: (no arguments)")


def _bureau_1114(db):
    return ("Emergency escalation logged. Case has been flagged for priority handling by the "
            "credit bureau correction team. Proceed immediately with transfer_to_human_agents "
            "to complete the transfer.\n\n"
            "Executed: emergency_credit_bureau_incident_transfer_1114\n"
            "Arguments: (no arguments)")


def _update_rewards_3847(db, transaction_id, new_rewards_earned):
    if not transaction_id or not new_rewards_earned:
        return "Error: Missing required parameters."
    if Bank.update(db, "credit_card_transaction_history", transaction_id,
                   {"rewards_earned": new_rewards_earned}) is None:
        return f"Error: Transaction '{transaction_id}' not found."
    shown = _json_dumps({"transaction_id": transaction_id,
                        "new_rewards_earned": new_rewards_earned})
    return ("Transaction rewards updated successfully.\n\n"
            "Executed: update_transaction_rewards_3847\n"
            f"Arguments: {shown}\n"
            "Transaction updated:\n"
            f"  - Transaction ID: {transaction_id}\n"
            f"  - New Rewards: {new_rewards_earned}")


def _json_dumps(value):
    import json

    return json.dumps(value, indent=2)


def _empty(result):
    return "No records found" in result or "No results found" in result


def _dispute_history_7291(db, user_id):
    if not user_id:
        return "Error: Missing required parameter: user_id"
    found = Bank.query(db, "transaction_disputes", {"user_id": user_id})
    parts = ["User transaction dispute history retrieved successfully.", "",
             "Executed: get_user_dispute_history_7291",
             f"Transaction dispute history for user {user_id}:"]
    parts.append("\nNo transaction disputes found for this user." if _empty(found) else found)
    return "\n".join(parts)


def _all_accounts_3847(db, user_id):
    if not user_id:
        return "Error: Missing required parameter: user_id"
    accounts = Bank.query(db, "accounts", {"user_id": user_id})
    cards = Bank.query(db, "credit_card_accounts", {"user_id": user_id})
    parts = ["User accounts retrieved successfully.", "",
             "Executed: get_all_user_accounts_by_user_id_3847",
             f"Accounts for user {user_id}:", "", "Bank Accounts:",
             "  No bank accounts found." if _empty(accounts) else accounts,
             "\nCredit Card Accounts:",
             "  No credit card accounts found." if _empty(cards) else cards]
    return "\n".join(parts)


def _age_days(account):
    """Days from the account's opening (MM/DD/YYYY) to τ²'s clock; 0 when unreadable."""
    try:
        opened = datetime.datetime.strptime(account.get("date_opened", ""), "%m/%d/%Y")
    except (ValueError, TypeError):
        return 0
    return (datetime.datetime(2025, 11, 14, 3, 40) - opened).days


def _balance(value):
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return float(value.replace("$", "").replace(",", ""))
    return 0.0


def _open_account_4821(db, user_id, account_type, account_class):
    if not user_id or not account_type or not account_class:
        return "Error: Missing required parameters."
    kinds = ["checking", "savings", "business_checking", "business_savings"]
    if account_type not in kinds:
        return f"Error: Invalid account_type. Must be one of: {kinds}"
    mine = [a for a in db.rows("accounts") if a.get("user_id") == user_id]
    live = ("OPEN", "ACTIVE")
    refused = "Error: Account eligibility requirements not met."

    def kind(a):
        return a.get("account_type", a.get("class", ""))

    if account_type == "savings" and not any(
            kind(a) in ("checking", "personal_checking") and a.get("status", "") in live
            and _age_days(a) >= 14 for a in mine):
        return refused
    if account_type == "business_checking":
        if any(a.get("status") == "CLOSED" for a in mine):
            return refused
        if not any(kind(a) in ("checking", "personal_checking")
                   and a.get("status", "") in live for a in mine):
            return refused
    if account_type == "business_savings":
        if any(_balance(a.get("current_holdings", a.get("balance", 0))) < 0 for a in mine):
            return refused
        if not any(kind(a) == "business_checking" and a.get("status", "") in live
                   and _age_days(a) >= 30 for a in mine):
            return refused
    account_id = Bank.hex_id(f"account:{user_id}:{account_type}:{account_class}")
    record = {"account_id": account_id, "user_id": user_id, "account_type": account_type,
              "account_class": account_class, "current_holdings": "0.00", "status": "OPEN",
              "date_opened": TODAY}
    if not Bank.add(db, "accounts", account_id, record):
        return f"Failed to open account: Account ID '{account_id}' may already exist."
    return ("Bank account opened successfully!\n"
            f"  - Account ID: {account_id}\n"
            f"  - User ID: {user_id}\n"
            f"  - Account Type: {account_type}\n"
            f"  - Account Class: {account_class}\n"
            "  - Status: OPEN\n"
            "  - Initial Balance: $0.00\n"
            f"  - Date Opened: {TODAY}")


DISCOVERABLE = {
    "initial_transfer_to_human_agent_0218": (_transfer_0218, False),
    "initial_transfer_to_human_agent_1822": (_transfer_1822, False),
    "emergency_credit_bureau_incident_transfer_1114": (_bureau_1114, False),
    "update_transaction_rewards_3847": (_update_rewards_3847, True),
    "get_user_dispute_history_7291": (_dispute_history_7291, False),
    "open_bank_account_4821": (_open_account_4821, True),
    "get_all_user_accounts_by_user_id_3847": (_all_accounts_3847, False),
    # banking_accounts.py
    "close_bank_account_7392": (_close_account_7392, True),
    "file_credit_card_transaction_dispute_4829": (_file_card_dispute_4829, True),
    "order_replacement_credit_card_7291": (_replace_card_7291, True),
    "transfer_funds_between_bank_accounts_7291": (_transfer_funds_7291, True),
    "apply_checking_account_credit_5829": (_checking_credit_5829, True),
    "apply_savings_account_credit_6831": (_savings_credit_6831, True),
    "submit_interest_discrepancy_report_7294": (_interest_report_7294, True),
    "get_bank_account_transactions_9173": (_account_transactions_9173, False),
    # banking_cards.py
    "get_pending_replacement_orders_5765": (_pending_orders_5765, False),
    "get_closure_reason_history_8293": (_closure_history_8293, False),
    "log_credit_card_closure_reason_4521": (_log_closure_reason_4521, True),
    "apply_statement_credit_8472": (_statement_credit_8472, True),
    "apply_credit_card_account_flag_6147": (_account_flag_6147, True),
    "close_credit_card_account_7834": (_close_card_7834, True),
    "pay_credit_card_from_checking_9182": (_pay_card_9182, True),
    # banking_credit.py
    "submit_credit_limit_increase_request_7392": (_cli_request_7392, True),
    "get_credit_limit_increase_history_4829": (_cli_history_4829, False),
    "get_payment_history_6183": (_payment_history_6183, False),
    "approve_credit_limit_increase_5847": (_cli_approve_5847, True),
    "deny_credit_limit_increase_5848": (_cli_deny_5848, True),
    # banking_debit.py, banking_debit_disputes.py
    "get_debit_cards_by_account_id_7823": (_debit_cards_7823, False),
    "order_debit_card_5739": (_order_debit_card_5739, True),
    "activate_debit_card_8292": (_activate_replacement_8292, True),
    "close_debit_card_4721": (_close_debit_card_4721, True),
    "freeze_debit_card_3892": (_freeze_debit_card_3892, True),
    "unfreeze_debit_card_3893": (_unfreeze_debit_card_3893, True),
    "clear_debit_card_fraud_alert_4892": (_clear_alert_4892, True),
    "reset_debit_card_pin_6284": (_reset_pin_6284, True),
    "request_temporary_debit_card_limit_increase_8374": (_temporary_limit_8374, True),
    "file_debit_card_transaction_dispute_6281": (_file_debit_dispute_6281, True),
    "get_debit_dispute_status_7483": (_debit_dispute_status_7483, False),
    # banking_debit_activation.py
    "activate_debit_card_8291": (_activate_new_8291, True),
    "activate_debit_card_8293": (_activate_reissued_8293, True),
    "change_debit_card_pin_6285": (_change_pin_6285, True),
    "set_debit_card_recurring_block_7382": (_recurring_block_7382, True),
    "example_agent_tool_0000": (_example_0000, True),
    "get_atm_deposit_images_8473": (_atm_images_8473, False),
}
"""name → (function, writes): the agent's discoverable tools (all of τ²'s)."""
for _name, (_fn, _) in DISCOVERABLE.items():
    # Python's own errors for a wrong argument then name the tool as τ²'s do
    _fn.__qualname__ = f"KnowledgeTools.{_name}"
    _fn.__name__ = _name

CATALOG = {
    "initial_transfer_to_human_agent_0218": (
        "Start the special hand-over protocol to a human agent (first step).", []),
    "initial_transfer_to_human_agent_1822": (
        "Start the special hand-over protocol to a human agent (alternative first step).", []),
    "emergency_credit_bureau_incident_transfer_1114": (
        "Escalate a case of the 11/14 credit bureau reporting incident for priority handling.",
        []),
    "update_transaction_rewards_3847": (
        "Set the rewards earned on a credit card transaction.",
        [("transaction_id", "string", "The transaction's id"),
         ("new_rewards_earned", "string", "The corrected rewards, e.g. '6300 points'")]),
    "get_user_dispute_history_7291": (
        "A customer's credit card transaction disputes (ids, transactions, reasons, "
        "statuses, dates).", [("user_id", "string", "The customer's user id")]),
    "open_bank_account_4821": (
        "Open a bank account for a customer.",
        [("user_id", "string", "The customer's user id"),
         ("account_type", "string", "One of 'checking', 'savings', 'business_checking', "
                                    "'business_savings'"),
         ("account_class", "string", "The account class's full official name")]),
    "get_all_user_accounts_by_user_id_3847": (
        "All of a customer's accounts (checking, savings, credit cards).",
        [("user_id", "string", "The customer's user id")]),
    "close_bank_account_7392": (
        "Close a checking or savings account (its balance must come to $0.00).",
        [("account_id", "string", "The account's id"),
         ("reason", "string", "Why it is closed (optional)"),
         ("waive_early_closure_fee", "boolean", "Whether the early closure fee is waived "
                                                "(optional)")]),
    "file_credit_card_transaction_dispute_4829": (
        "Open a formal dispute of a credit card transaction.",
        [(p, "string", p.replace("_", " ")) for p in (
            "transaction_id", "card_action", "card_last_4_digits", "full_name", "user_id",
            "phone", "email", "address", "contacted_merchant", "purchase_date",
            "issue_noticed_date", "dispute_reason", "resolution_requested",
            "eligible_for_provisional_credit", "partial_refund_amount")]),
    "order_replacement_credit_card_7291": (
        "Order a replacement credit card; the old card is cancelled.",
        [(p, "string", p.replace("_", " ")) for p in (
            "credit_card_account_id", "user_id", "shipping_address", "reason",
            "expedited_shipping")]),
    "transfer_funds_between_bank_accounts_7291": (
        "Move money between two bank accounts.",
        [("source_account_id", "string", "From"), ("destination_account_id", "string", "To"),
         ("amount", "number", "USD")]),
    "apply_checking_account_credit_5829": (
        "Credit a checking account ('rebate_credit' or 'fee_refund').",
        [("account_id", "string", "The account"), ("amount", "number", "USD, above 0"),
         ("credit_type", "string", "'rebate_credit' or 'fee_refund'")]),
    "apply_savings_account_credit_6831": (
        "Credit a savings account ('interest_correction', 'fee_refund', 'goodwill_credit').",
        [("account_id", "string", "The account"), ("amount", "number", "USD, above 0"),
         ("credit_type", "string", "The kind of credit")]),
    "submit_interest_discrepancy_report_7294": (
        "Report interest credited at the wrong APY to the backend team.",
        [(p, "number" if p not in ("account_id", "user_id") else "string", p.replace("_", " "))
         for p in ("account_id", "user_id", "expected_apy", "actual_apy",
                   "amount_difference")]),
    "get_bank_account_transactions_9173": (
        "A bank account's transactions, most recent first.",
        [("account_id", "string", "The account")]),
    "get_pending_replacement_orders_5765": (
        "Whether a credit card has replacement orders pending.",
        [("credit_card_account_id", "string", "The card account")]),
    "get_closure_reason_history_8293": (
        "The closure reasons logged for a credit card.",
        [("credit_card_account_id", "string", "The card account")]),
    "log_credit_card_closure_reason_4521": (
        "Record why a customer wants to close a credit card.",
        [("credit_card_account_id", "string", "The card account"),
         ("user_id", "string", "The customer"),
         ("closure_reason", "string", "annual_fee, not_using_card, found_better_card, "
                                      "unhappy_with_rewards, simplifying_finances, "
                                      "negative_experience or other")]),
    "apply_statement_credit_8472": (
        "Credit a credit card's statement.",
        [("user_id", "string", "The customer"), ("credit_card_account_id", "string", "The card"),
         ("amount", "number", "USD"), ("reason", "string", "Why (a reason code)")]),
    "apply_credit_card_account_flag_6147": (
        "Put a flag (fee waiver, promotional APR, rewards bonus) on a credit card.",
        [(p, "string", p.replace("_", " ")) for p in (
            "credit_card_account_id", "user_id", "flag_type", "expiration_date", "reason")]),
    "close_credit_card_account_7834": (
        "Close a credit card account for good.",
        [("credit_card_account_id", "string", "The card"), ("user_id", "string", "The customer")]),
    "pay_credit_card_from_checking_9182": (
        "Pay a credit card's balance from the customer's checking account.",
        [("user_id", "string", "The customer"), ("checking_account_id", "string", "From"),
         ("credit_card_account_id", "string", "To"), ("amount", "number", "USD, above 0")]),
    "submit_credit_limit_increase_request_7392": (
        "Ask for a higher credit limit on a card.",
        [("credit_card_account_id", "string", "The card"), ("user_id", "string", "The customer"),
         ("requested_increase_amount", "integer", "Whole dollars to add")]),
    "get_credit_limit_increase_history_4829": (
        "A card's past credit limit increase requests.",
        [("credit_card_account_id", "string", "The card")]),
    "get_payment_history_6183": (
        "A card's recent payments, and how many in a row were on time.",
        [("credit_card_account_id", "string", "The card"),
         ("months", "integer", "How many months back")]),
    "approve_credit_limit_increase_5847": (
        "Approve and apply a new credit limit.",
        [("credit_card_account_id", "string", "The card"), ("user_id", "string", "The customer"),
         ("new_credit_limit", "integer", "The new total limit in dollars")]),
    "deny_credit_limit_increase_5848": (
        "Turn a credit limit increase down, with the reason code.",
        [("credit_card_account_id", "string", "The card"), ("user_id", "string", "The customer"),
         ("denial_reason", "string", "The reason code")]),
    "get_debit_cards_by_account_id_7823": (
        "The debit cards of a checking account, newest first.",
        [("account_id", "string", "The checking account")]),
    "order_debit_card_5739": (
        "Order a new debit card for a checking account; the fees come out of that account.",
        [("account_id", "string", "The checking account"), ("user_id", "string", "The owner"),
         ("delivery_option", "string", "STANDARD, EXPEDITED or RUSH"),
         ("delivery_fee", "number", "USD"), ("card_design", "string", "CLASSIC, PREMIUM or CUSTOM"),
         ("design_fee", "number", "USD"), ("shipping_address", "string", "Where to send it"),
         ("excess_replacement_fee", "number", "USD, only when the replacement limit is passed")]),
    "activate_debit_card_8292": (
        "Activate a debit card that replaces a lost, stolen or compromised one.",
        [("card_id", "string", "The new card"), ("last_4_digits", "string", "To check"),
         ("expiration_date", "string", "MM/YY"), ("cvv", "string", "3 digits"),
         ("pin", "string", "The customer's new 4-digit PIN")]),
    "close_debit_card_4721": (
        "Close a debit card for good.",
        [("card_id", "string", "The card"),
         ("reason", "string", "lost, stolen, fraud_suspected, damaged, no_longer_needed or "
          "account_closing")]),
    "freeze_debit_card_3892": (
        "Freeze a debit card for now (it can be unfrozen).", [("card_id", "string", "The card")]),
    "unfreeze_debit_card_3893": (
        "Unfreeze a frozen debit card.", [("card_id", "string", "The card")]),
    "clear_debit_card_fraud_alert_4892": (
        "Lift a fraud alert or a velocity block from a debit card.",
        [("card_id", "string", "The card"),
         ("reason", "string", "customer_verified or velocity_clear")]),
    "reset_debit_card_pin_6284": (
        "Set a new PIN on a debit card whose PIN the customer forgot.",
        [("card_id", "string", "The card"), ("last_4_digits", "string", "To check"),
         ("new_pin", "string", "4 digits")]),
    "request_temporary_debit_card_limit_increase_8374": (
        "Raise a debit card's daily ATM or purchase limit for 24 hours.",
        [("card_id", "string", "The card"), ("limit_type", "string", "atm or purchase"),
         ("new_limit", "integer", "The limit wanted, in dollars")]),
    "file_debit_card_transaction_dispute_6281": (
        "Open a Regulation E dispute of a debit card transaction.",
        [("transaction_id", "string", "The transaction"),
         ("account_id", "string", "The checking account"), ("card_id", "string", "The card"),
         ("user_id", "string", "The customer"), ("dispute_category", "string", "The category code"),
         ("transaction_date", "string", "MM/DD/YYYY"),
         ("discovery_date", "string", "When the customer noticed, MM/DD/YYYY"),
         ("disputed_amount", "number", "USD"),
         ("transaction_type", "string", "The transaction type code"),
         ("card_in_possession", "boolean", "Whether the customer still has the card"),
         ("pin_compromised", "string", "yes_shared, yes_observed, no or unknown"),
         ("contacted_merchant", "boolean", "Whether the merchant was asked first"),
         ("police_report_filed", "boolean", "Whether there is a police report"),
         ("written_statement_provided", "boolean", "Whether the customer wrote a statement"),
         ("provisional_credit_eligible", "boolean", "Whether provisional credit is due"),
         ("customer_max_liability_amount", "number", "The customer's liability cap, -1 for none"),
         ("card_action", "string", "keep_active, freeze_pending_investigation or "
          "close_and_reissue")]),
    "get_debit_dispute_status_7483": (
        "A customer's debit card disputes.", [("user_id", "string", "The customer")]),
    "activate_debit_card_8291": (
        "Activate a customer's first debit card on a checking account.",
        [("card_id", "string", "The new card"), ("last_4_digits", "string", "To check"),
         ("expiration_date", "string", "MM/YY"), ("cvv", "string", "3 digits"),
         ("pin", "string", "The customer's new 4-digit PIN")]),
    "activate_debit_card_8293": (
        "Activate a debit card reissued on expiry, damage, an upgrade or the bank's initiative.",
        [("card_id", "string", "The new card"), ("last_4_digits", "string", "To check"),
         ("expiration_date", "string", "MM/YY"), ("cvv", "string", "3 digits"),
         ("pin", "string", "The customer's new 4-digit PIN")]),
    "change_debit_card_pin_6285": (
        "Change a debit card's PIN when the customer knows the current one.",
        [("card_id", "string", "The card"), ("current_pin", "string", "4 digits"),
         ("new_pin", "string", "4 digits")]),
    "set_debit_card_recurring_block_7382": (
        "Block or allow recurring payments on a debit card.",
        [("card_id", "string", "The card"),
         ("block_recurring", "boolean", "true blocks them, false allows them")]),
    "example_agent_tool_0000": ("A placeholder tool that does nothing.", []),
    "get_atm_deposit_images_8473": (
        "The envelope and check images of a deposit made at one of the bank's ATMs.",
        [("transaction_id", "string", "The ATM deposit transaction")]),
    # the customer's (banking_user.py), shown when the agent hands one over
    "submit_cash_back_dispute_0589": (
        "Dispute the cash back earned on a transaction.", []),
    "get_referral_link": (
        "Make a referral link for a credit card, to share with someone.", []),
    "get_card_last_4_digits": ("Look up the last 4 digits of a credit card.", []),
    "deposit_check_3847": ("Deposit a check into a checking or savings account.", []),
}
"""name → (description, [(parameter, type, description)]): what an unlock or a hand-over
shows (benchpack's wording)."""
