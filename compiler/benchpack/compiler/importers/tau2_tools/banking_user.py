"""τ²-bench banking_knowledge's customer tools (dual control), written for benchpack to behave
as τ²'s `KnowledgeUserTools` do; copied into every pack `bench import tau2` writes for the
domain, as the environment's `user_toolsets`. They work on the bank's own database (service
`banking`, as in τ², where both sides share one database).

The customer's discoverable tools run only once the agent has handed them over
(`give_discoverable_user_tool` writes `user_discoverable_tools`) and only through
`call_discoverable_user_tool`; each such call is logged in `user_discoverable_tool_calls`.
"""

import hashlib
import json

from benchpack_tools import State

# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import TODAY, Bank

# ---- end of inline ----

FIXES = frozenset()
"""Differences from τ² switched on by `bench import tau2 --fix` (none for this domain)."""

CARD_TYPES = ("Bronze Rewards Card", "Business Bronze Rewards Card",
              "Business Gold Rewards Card", "Business Platinum Rewards Card",
              "Business Silver Rewards Card", "Crypto-Cash Back", "Diamond Elite Card",
              "EcoCard", "Gold Rewards Card", "Green Rewards Card", "Platinum Rewards Card",
              "Silver Rewards Card", "Silver Zoom Card")
"""The card types an application accepts, in τ²'s order (its error lists them so)."""

REWARD_RATES = {
    "Bronze Rewards Card": {"default": 1.0},
    "Silver Rewards Card": {"Travel": 4.0, "Software": 4.0, "default": 1.0},
    "Gold Rewards Card": {"default": 2.5},
    "Platinum Rewards Card": {"default": 10.0},
    "Business Bronze Rewards Card": {"default": 1.0},
    "Business Silver Rewards Card": {"Travel": 10.0, "Software": 10.0, "default": 1.0},
    "Green Rewards Card": {"Sustainable": 3.0, "default": 1.0},
    "Business Gold Rewards Card": {"Operations": 2.5, "default": 1.0},
    "Business Platinum Rewards Card": {"Travel": 4.0, "Software": 4.0, "Media": 4.0,
                                       "default": 1.5},
    "Silver Zoom Card": {"Transportation": 3.0, "default": 1.0},
    "Diamond Elite Card": {"default": 5.0},
    "EcoCard": {"Green": 5.0, "default": 1.0},
    "Crypto-Cash Back": {"default": 2.0},
}
"""Percent cash back per card and category (`default` elsewhere), in τ²'s order: a
transaction earns int(amount × rate) points."""


def apply_for_credit_card(db: State, card_type: str, customer_name: str, annual_income: float,
                          rho_bank_subscription: bool = False) -> str:
    """Apply for a credit card.

    Args:
        card_type: The card's type.
        customer_name: Your full legal name.
        annual_income: Your annual income in USD.
        rho_bank_subscription: Whether you have a Rho-Bank+ subscription.
    """
    if card_type not in CARD_TYPES:
        return (f"Error: Invalid card_type '{card_type}'. Must be one of: {list(CARD_TYPES)}")
    try:
        income = float(annual_income)
    except (TypeError, ValueError):
        return "Error: Invalid annual_income. Must be a number."
    app_id = Bank.hex_id(f"credit_card:{card_type}:{customer_name}:{income}:"
                         f"{Bank.py_str(rho_bank_subscription)}")
    record = {"application_id": app_id, "card_type": card_type, "customer_name": customer_name,
              "annual_income": income, "rho_bank_subscription": rho_bank_subscription,
              "status": "PENDING", "date": TODAY}
    if not Bank.add(db, "credit_card_applications", app_id, record):
        return f"Failed to submit application: Record ID '{app_id}' may already exist."
    return ("Credit card application submitted:\nYour application has been successfully "
            "submitted. You will receive a decision within 5-7 business days via email.")


def submit_referral(db: State, user_id: str, account_type: str) -> str:
    """Refer someone to open an account.

    Args:
        user_id: Your user id (the referrer).
        account_type: The kind of account you refer them to.
    """
    # joined as τ² joins its seed: a part that is no string fails with Python's own TypeError
    referral_id = Bank.hex_id(":".join(["referral", user_id, account_type]))
    record = {"referral_id": referral_id, "referrer_id": user_id,
              "referred_account_type": account_type, "referral_status": "NO_PROGRESS",
              "date": TODAY}
    if not Bank.add(db, "referrals", referral_id, record):
        return f"Failed to submit referral: Record ID '{referral_id}' may already exist."
    return ("Referral request submitted successfully!\n"
            f"  - Referral ID: {referral_id}\n"
            f"  - Referrer ID: {user_id}\n"
            f"  - Account Type: {account_type}\n"
            "  - Status: NO_PROGRESS\n"
            f"  - Date: {TODAY}\n\n"
            "Share your referral ID with the person you're referring. They will need to use "
            "this when applying for their account.")


def call_discoverable_user_tool(db: State, discoverable_tool_name: str,
                                arguments: str = "{}") -> str:
    """Run a tool the agent handed you, with the name and arguments the agent gave.

    Args:
        discoverable_tool_name: The tool's name.
        arguments: JSON object of the tool's arguments (e.g. '{"user_id": "abc123"}').
    """
    entry = _DISCOVERABLE.get(discoverable_tool_name)
    if entry is None:
        return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
    args, error = Bank.json_args(arguments)
    if error:
        return error
    fn, params = entry
    for name in params:
        if name not in args:
            return f"Error: Missing required parameter: {name}"
    for name in args:
        if name not in params:
            return f"Error: Unexpected parameter: {name}"
    if not db.find("user_discoverable_tools", tool_name=discoverable_tool_name):
        return (f"Error: Tool '{discoverable_tool_name}' has not been given to you by the "
                "agent. The agent must first use `give_discoverable_user_tool` to give this "
                "tool to you.")
    Bank.add(db, "user_discoverable_tool_calls", Bank.hex_id(
        f"user_discoverable_tool_call:{discoverable_tool_name}:"
        f"{json.dumps(args, sort_keys=True)}"),
        {"tool_name": discoverable_tool_name, "arguments": args, "called_at": TODAY,
         "status": "CALLED"})
    return fn(db, **args)


def list_discoverable_user_tools(db: State) -> str:
    """The tools the agent has handed you."""
    result = Bank.query(db, "user_discoverable_tools", {})
    if "No results found" in result:  # τ²'s own test, which its query text never meets
        return "No tools have been given to you yet by the agent."
    return f"Tools given to you by the agent:\n{result}"


def request_human_agent_transfer(db: State) -> str:
    """Ask to be transferred to a human agent (each request is logged)."""
    n = sum(1 for _ in db.rows("human_transfer_requests")) + 1
    request_id = f"transfer_request_{n}"
    Bank.add(db, "human_transfer_requests", request_id,
             {"request_id": request_id, "request_number": n, "requested_at": TODAY,
              "status": "PENDING"})
    return f"Transfer request #{n} submitted.\nThe agent will process your request."


def submit_transaction(db: State, user_id: str, credit_card_type: str, merchant_name: str,
                       amount: float, category: str) -> str:
    """Pay with a credit card.

    Args:
        user_id: Your user id.
        credit_card_type: The card used (e.g. "Gold Rewards Card").
        merchant_name: Where you paid.
        amount: The amount in USD (e.g. 127.43).
        category: The purchase's category (e.g. "Groceries", "Travel", "Software").
    """
    rates = REWARD_RATES.get(credit_card_type)
    if rates is None:
        return (f"Error: Unknown credit card type '{credit_card_type}'. Available types: "
                f"{list(REWARD_RATES)}")
    txn = "txn_" + Bank.hex_id(":".join(["transaction", user_id, credit_card_type,
                                         merchant_name, f"{amount:.2f}", category]), 12)
    rate = rates.get(category, rates["default"])
    points = int(amount * rate)
    record = {"transaction_id": txn, "user_id": user_id, "credit_card_type": credit_card_type,
              "merchant_name": merchant_name, "transaction_amount": f"${amount:.2f}",
              "transaction_date": TODAY, "category": category, "status": "COMPLETED",
              "rewards_earned": f"{points} points"}
    if not Bank.add(db, "credit_card_transaction_history", txn, record):
        return f"Failed to submit transaction: Record ID '{txn}' may already exist."
    return ("Transaction submitted successfully!\n"
            f"  - Transaction ID: {txn}\n"
            f"  - User ID: {user_id}\n"
            f"  - Card Type: {credit_card_type}\n"
            f"  - Merchant: {merchant_name}\n"
            f"  - Amount: ${amount:.2f}\n"
            f"  - Category: {category}\n"
            f"  - Date: {TODAY}\n"
            f"  - Rewards Earned: {points} points ({rate}% cashback rate)\n")


# ------------------------------------------------- the customer's discoverable tools


def _executed(name, args):
    return f"\n\nExecuted: {name}\nArguments: {json.dumps(args, indent=2)}\n"


def _cash_back_dispute(db, user_id, transaction_id):
    args = {"user_id": user_id, "transaction_id": transaction_id}
    dispute_id = "dsp_" + Bank.hex_id(f"dispute:{user_id}:{transaction_id}", 12)
    settings = db.find("task_config", _id="dispute_settings")
    resolve = bool(settings and settings[0].get("auto_resolve_disputes", False))
    record = {"dispute_id": dispute_id, "user_id": user_id, "transaction_id": transaction_id,
              "submitted_at": TODAY, "status": "RESOLVED" if resolve else "SUBMITTED"}
    if resolve:
        record["resolution"] = "APPROVED"
        status = ("Status: RESOLVED - The dispute has been reviewed and approved. The "
                  "transaction rewards need to be updated.")
    else:
        status = "Status: SUBMITTED - Your dispute has been queued for review."
    out = ("Cash back dispute submitted successfully. Your case has been queued for review."
           + _executed("submit_cash_back_dispute_0589", args))
    if Bank.add(db, "cash_back_disputes", dispute_id, record):
        return out + f"Dispute ID: {dispute_id}\n{status}"
    return out + "Note: Dispute may have already been submitted for this transaction."


def _referral_link(db, user_id, card_name):
    args = {"user_id": user_id, "card_name": card_name}
    referral_id = Bank.hex_id(f"referral_link:{user_id}:{card_name}")
    record = {"referral_id": referral_id, "referrer_id": user_id,
              "referred_account_type": card_name, "referral_status": "NO_PROGRESS",
              "date": TODAY}
    out = ("Referral link generated successfully. Share this link with the person you want "
           "to refer." + _executed("get_referral_link", args))
    if Bank.add(db, "referrals", referral_id, record):
        return (out + f"Referral ID: {referral_id}\n"
                f"Referral link: https://rhobank.com/refer/{referral_id}")
    return out + "Note: A referral link for this card may have already been generated."


def _card_last_4(db, credit_card_account_id):
    args = {"credit_card_account_id": credit_card_account_id}
    if not db.find("credit_card_accounts", account_id=credit_card_account_id):
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    digest = hashlib.sha256(f"card_last4:{credit_card_account_id}".encode()).hexdigest()
    last_4 = "".join(c for c in digest if c.isdigit())[:4].ljust(4, "0")
    return ("Card information retrieved successfully." + _executed("get_card_last_4_digits",
                                                                   args)
            + f"Last 4 digits of card: {last_4}")


def _deposit_check(db, account_id, check_amount):
    args = {"account_id": account_id, "check_amount": check_amount}
    try:
        amount = float(check_amount)
    except (ValueError, TypeError):
        return f"Error: Invalid check amount '{check_amount}'. Must be a number."
    if amount <= 0:
        return "Error: Check amount must be positive."
    rows = db.find("accounts", _id=account_id)
    if not rows:
        return f"Error: Account '{account_id}' not found."
    account = rows[0]
    if account.get("status") not in ("ACTIVE", "OPEN"):
        return f"Error: Account '{account_id}' is not active."
    held = account.get("current_holdings", account.get("balance", 0))
    before = (float(held) if isinstance(held, int | float) else
              float(held.replace("$", "").replace(",", "")) if isinstance(held, str) else 0.0)
    after = before + amount
    db.put("accounts", {**account, "current_holdings": f"${after:.2f}"})
    return ("Check deposited successfully. Funds will be available according to your "
            "account's deposit policy." + _executed("deposit_check_3847", args)
            + "Check deposit processed!\n"
            f"  - Account: {account_id}\n"
            f"  - Check Amount: ${amount:.2f}\n"
            f"  - Previous Balance: ${before:.2f}\n"
            f"  - New Balance: ${after:.2f}")


_DISCOVERABLE = {
    "submit_cash_back_dispute_0589": (_cash_back_dispute, ("user_id", "transaction_id")),
    "get_referral_link": (_referral_link, ("user_id", "card_name")),
    "get_card_last_4_digits": (_card_last_4, ("credit_card_account_id",)),
    "deposit_check_3847": (_deposit_check, ("account_id", "check_amount")),
}
"""name → (function, parameters): the customer's discoverable tools."""


# Python's own errors for a missing or unexpected argument name each tool as τ²'s do (τ²'s are
# methods of KnowledgeUserTools); the toolset runs with check_arguments: false, as τ² checks none
for _tool in [f for n, f in list(globals().items()) if not n.startswith("_") and callable(f)
              and not isinstance(f, type) and getattr(f, "__module__", None) == __name__]:
    _tool.__qualname__ = f"KnowledgeUserTools.{_tool.__name__}"
