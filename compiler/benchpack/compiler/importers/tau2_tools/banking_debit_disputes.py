"""τ²-bench banking_knowledge's discoverable tools for debit-card disputes (filing one under
Regulation E, a customer's dispute history), written for benchpack to answer and change the
database as τ²'s do (none of its code is copied). Inlined into banking.py before
banking_discoverable.py, whose `DISCOVERABLE` lists them.
"""

# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----

DEBIT_DISPUTE_CHOICES = (
    ("dispute_category", ["unauthorized_transaction", "atm_cash_discrepancy",
                          "atm_deposit_not_credited", "duplicate_charge", "incorrect_amount",
                          "goods_services_not_received", "recurring_charge_after_cancellation",
                          "card_present_fraud", "card_not_present_fraud"]),
    ("transaction_type", ["pin_purchase", "signature_purchase", "online_purchase",
                          "atm_withdrawal", "atm_deposit", "recurring_payment",
                          "person_to_person"]),
    ("pin_compromised", ["yes_shared", "yes_observed", "no", "unknown"]),
    ("card_action", ["keep_active", "freeze_pending_investigation", "close_and_reissue"]),
)
"""The coded fields of a debit-card dispute and their codes, in the order τ² checks them."""
FRAUD = ("unauthorized_transaction", "card_present_fraud", "card_not_present_fraud")


def _file_debit_dispute_6281(db, transaction_id, account_id, card_id, user_id,
                             dispute_category, transaction_date, discovery_date,
                             disputed_amount, transaction_type, card_in_possession,
                             pin_compromised, contacted_merchant, police_report_filed,
                             written_statement_provided, provisional_credit_eligible,
                             customer_max_liability_amount, card_action):
    given = locals()
    if not all([transaction_id, account_id, card_id, user_id, dispute_category,
                transaction_date, discovery_date, disputed_amount, transaction_type,
                pin_compromised, card_action]):
        return "Error: Missing required parameters."
    if customer_max_liability_amount is None:
        return "Error: customer_max_liability_amount is required."
    if None in (card_in_possession, contacted_merchant, police_report_filed,
                written_statement_provided):
        return ("Error: card_in_possession, contacted_merchant, police_report_filed, and "
                "written_statement_provided are required boolean fields.")
    for field, codes in DEBIT_DISPUTE_CHOICES:
        if given[field] not in codes:
            return f"Error: Invalid {field}. Must be one of: {codes}"
    if disputed_amount <= 0:  # a text amount: TypeError, worded by the caller as τ²'s
        return "Error: disputed_amount must be a positive number."
    dispute_id = "dsp_" + Bank.hex_id(f"dispute:{user_id}:{transaction_id}", 12)
    fraud = dispute_category in FRAUD
    shared = pin_compromised == "yes_shared"
    record = {
        "dispute_id": dispute_id, "transaction_id": transaction_id, "account_id": account_id,
        "card_id": card_id, "user_id": user_id, "dispute_category": dispute_category,
        "transaction_date": transaction_date, "discovery_date": discovery_date,
        "disputed_amount": disputed_amount, "transaction_type": transaction_type,
        "card_in_possession": card_in_possession, "pin_compromised": pin_compromised,
        "contacted_merchant": contacted_merchant, "police_report_filed": police_report_filed,
        "written_statement_provided": written_statement_provided,
        "provisional_credit_eligible": provisional_credit_eligible,
        "provisional_credit_issued": provisional_credit_eligible,
        "provisional_credit_amount": disputed_amount if provisional_credit_eligible else None,
        "customer_max_liability_amount": customer_max_liability_amount,
        "card_action": card_action, "is_fraud_category": fraud,
        "pin_shared_voluntarily": shared, "submitted_at": TODAY, "status": "OPEN"}
    if not Bank.add(db, "debit_card_disputes", dispute_id, record):
        return "Error: Dispute may have already been filed for this transaction."
    lines = [f"Dispute ID: {dispute_id}", f"Transaction: {transaction_id}",
             f"Account: {account_id}",
             f"Category: {dispute_category.replace('_', ' ').title()}",
             f"Disputed Amount: ${disputed_amount:.2f}",
             f"Card Action: {card_action.replace('_', ' ').title()}"]
    if provisional_credit_eligible:
        lines.append(f"Provisional Credit: ISSUED - ${disputed_amount:.2f} credited within 10 "
                     "business days per Regulation E.")
    else:
        lines.append("Provisional Credit: Not eligible - see Debit Card Provisional Credit "
                     "Guidelines for details.")
    if shared:
        lines.append("WARNING: Customer indicated PIN was shared voluntarily. This may affect "
                     "liability determination.")
    if fraud and not police_report_filed and disputed_amount > 500:
        lines.append("RECOMMENDATION: For fraud disputes over $500, filing a police report is "
                     "recommended.")
    return "\n".join(lines)


def _debit_dispute_status_7483(db, user_id):
    if not user_id:
        return "Error: Missing required parameter: user_id"
    found = Bank.query(db, "debit_card_disputes", {"user_id": user_id})
    empty = "No records found" in found or "No results found" in found
    return "\n".join(["Debit card dispute history retrieved successfully.", "",
                      "Executed: get_debit_dispute_status_7483",
                      f"Debit card dispute history for user {user_id}:",
                      "\nNo debit card disputes found for this user." if empty else found])


def _atm_images_8473(db, transaction_id):
    """τ²'s code holds envelope scans for three transaction ids that are in none of the
    release's data (not copied here): every Rho-Bank ATM deposit of the release has no images."""
    if not transaction_id:
        return "Error: Missing required parameter: transaction_id"
    hash(transaction_id)  # τ² looks it up in a dict: an unhashable id raises TypeError
    rows = db.find("bank_account_transaction_history", _id=transaction_id)
    if not rows:
        return f"Error: Transaction '{transaction_id}' not found."
    txn = rows[0]
    if txn.get("type") != "atm_deposit":
        return (f"Error: Transaction '{transaction_id}' is not an ATM deposit. This tool only "
                "works for ATM deposit transactions.")
    where = txn.get("description", "")
    if "RHO-BANK" not in where.upper() and "RHOBANK" not in where.upper():
        return (f"Error: Transaction '{transaction_id}' is from a third-party ATM. Deposit images "
                "are only available for Rho-Bank ATM deposits. For third-party ATM disputes, a "
                "chargeback request must be submitted to the ATM network.")
    return "\n".join([
        "ATM Deposit Image Retrieval Results", "=" * 37, f"Transaction ID: {transaction_id}",
        f"ATM: {where}", f"Deposit Date: {Bank.py_str(txn.get('date', 'Unknown'))}",
        f"Amount Recorded: ${abs(txn.get('amount', 0)):.2f}", "", "--- IMAGE STATUS ---",
        "Status: IMAGES NOT AVAILABLE",
        "Reason: Deposit images for this transaction have either expired (older than 90 days) "
        "or were not captured by the ATM system.", "",
        "For deposits without available images, the dispute will proceed based on customer "
        "statement and ATM journal records only. Investigation timeline may be extended.", ""])
