"""τ²-bench banking_knowledge tools (the bank agent's side), written for benchpack to behave
as τ²'s `KnowledgeTools` do; copied into every pack `bench import tau2` writes for the domain.
One service, `banking`, holds τ²'s tables (every row's record id as `_id`), shared with the
customer's tools (banking_user.py).

τ²'s discoverable tools are not offered to the agent: the knowledge base names them, the agent
unlocks one (`unlock_discoverable_agent_tool`) and calls it through
`call_discoverable_agent_tool`. They are the private functions of `DISCOVERABLE`, all of τ²'s
(were one missing, the importer would skip the tasks whose gold uses it and name it). The
descriptions an unlock returns are ours, or τ²'s when the import read a checkout (`--tau2`
writes them over `CATALOG`).

Two records τ² keeps in memory are tables here, so that a warm worker cannot carry them from
one episode to the next: `unlocked_agent_tools` (τ²'s unlocked set, outside its DB hash: the
pack's environment leaves it out of the state check, `state_ignores`) and `read_log_allowlist`
(τ²'s per-task set of read tools whose calls are logged: the task's gold reads, written by the
task's `initial_state`).
"""

import json

from benchpack_tools import State

# ---- inline banking_shared.py ----
from benchpack.compiler.importers.tau2_tools.banking_shared import NOW, Bank

# ---- end of inline ----

FIXES = frozenset()
"""Differences from τ² switched on by `bench import tau2 --fix` (none for this domain)."""

TRANSFER_REASONS = (
    "fraud_or_security_concern", "account_closure_request", "deceased_account_holder",
    "legal_or_regulatory_matter", "account_ownership_dispute", "complex_billing_dispute",
    "abusive_customer_behavior", "third_party_inquiry", "technical_system_error",
    "unconfirmed_external_communication", "customer_demands_after_unavailable_offer_refusal",
    "kb_search_unsuccessful_customer_requests_transfer", "specialized_department_required",
    "accessibility_or_special_needs", "customer_frustrated_demands_human",
    "supervisor_request_service_complaint", "customer_requests_human_no_specific_reason",
    "request_completed_customer_wants_human_followup", "other")
"""τ²'s transfer reason codes, in its order (its error lists them so)."""

USER_DISCOVERABLE = {"submit_cash_back_dispute_0589": ("user_id", "transaction_id"),
                     "get_referral_link": ("user_id", "card_name"),
                     "get_card_last_4_digits": ("credit_card_account_id",),
                     "deposit_check_3847": ("account_id", "check_amount")}
"""The customer's discoverable tools (banking_user.py) and their parameters: what
`give_discoverable_user_tool` accepts."""


def transfer_to_human_agents(db: State, summary: str, reason: str = "other") -> str:
    """Transfer the customer to a human agent. Look the right reason code up in the knowledge
    base before calling.

    Args:
        summary: What the customer needs and what was tried.
        reason: The reason code for the transfer.
    """
    if reason not in TRANSFER_REASONS:
        return (f"Error: Invalid transfer reason '{reason}'. Must be one of: "
                + ", ".join(TRANSFER_REASONS))
    return f"Transfer successful (reason: {reason}). A human agent will assist you shortly."


def get_current_time(db: State) -> str:
    """The current time, for verification records ("YYYY-MM-DD HH:MM:SS TZ")."""
    return "The current time is 2025-11-14 03:40:00 EST."


def get_user_information_by_id(db: State, user_id: str) -> str:
    """A customer's record (date of birth, email, phone number, address) by user id.

    Args:
        user_id: The customer's user id.
    """
    return Bank.query(db, "users", {"user_id": user_id})


def get_user_information_by_name(db: State, customer_name: str) -> str:
    """A customer's record by full name (case sensitive).

    Args:
        customer_name: The customer's full name.
    """
    return Bank.query(db, "users", {"name": customer_name})


def get_user_information_by_email(db: State, email: str) -> str:
    """A customer's record by email address.

    Args:
        email: The customer's email address.
    """
    return Bank.query(db, "users", {"email": email})


def change_user_email(db: State, user_id: str, new_email: str) -> str:
    """Change a customer's email address.

    Args:
        user_id: The customer's user id.
        new_email: The new email address.
    """
    if Bank.update(db, "users", user_id, {"email": new_email}) is None:
        return f"Error: User with ID '{user_id}' not found."
    return ("Email updated successfully.\n"
            f"  - User ID: {user_id}\n"
            f"  - New Email: {new_email}")


def get_referrals_by_user(db: State, user_id: str) -> str:
    """The referrals a customer has made.

    Args:
        user_id: The referring customer's user id.
    """
    return Bank.query(db, "referrals", {"referrer_id": user_id})


def get_credit_card_transactions_by_user(db: State, user_id: str) -> str:
    """A customer's credit card transactions.

    Args:
        user_id: The customer's user id.
    """
    return Bank.query(db, "credit_card_transaction_history", {"user_id": user_id})


def get_credit_card_accounts_by_user(db: State, user_id: str) -> str:
    """A customer's credit card accounts (card type, date opened, balance, reward points).

    Args:
        user_id: The customer's user id.
    """
    return Bank.query(db, "credit_card_accounts", {"user_id": user_id})


def log_verification(db: State, name: str, user_id: str, address: str, email: str,
                     phone_number: str, date_of_birth: str, time_verified: str) -> str:
    """Record that a customer's identity was verified (2 of: date of birth, email, phone
    number, address, confirmed).

    Args:
        name: The customer's full name.
        user_id: The customer's user id.
        address: The customer's address.
        email: The customer's email.
        phone_number: The customer's phone number.
        date_of_birth: The customer's date of birth (MM/DD/YYYY).
        time_verified: When the verification happened (e.g. "2025-11-14 03:40:00 EST").
    """
    suffix = time_verified.replace(" ", "_").replace(":", "").replace("-", "")
    record = {"name": name, "user_id": user_id, "address": address, "email": email,
              "phone_number": phone_number, "date_of_birth": date_of_birth,
              "time_verified": time_verified}
    if not Bank.add(db, "verification_history", f"{user_id}_{suffix}", record):
        return "Failed to log verification: Record may already exist."
    return ("Verification logged successfully.\n"
            f"  - User: {name} (ID: {user_id})\n"
            f"  - Verified at: {time_verified}")


def give_discoverable_user_tool(db: State, discoverable_tool_name: str,
                                arguments: str = "{}") -> str:
    """Hand the customer a tool the knowledge base says they use themselves; they then run it
    with `call_discoverable_user_tool`.

    Args:
        discoverable_tool_name: The tool's name, as the knowledge base gives it.
        arguments: JSON object of arguments to pass on (e.g. '{"user_id": "abc123"}').
    """
    if not isinstance(discoverable_tool_name, str):  # τ²'s hasattr() on a name that is none
        raise TypeError("attribute name must be string, not "
                        f"'{type(discoverable_tool_name).__name__}'")
    params = USER_DISCOVERABLE.get(discoverable_tool_name)
    if params is None:
        return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
    try:
        args = json.loads(arguments)
    except json.JSONDecodeError as exc:  # τ² catches no TypeError (arguments that are no text)
        return f"Error: Invalid JSON in arguments: {exc}"
    for name in args:
        if name not in params:
            return f"Error: Unexpected parameter: {name}"
    Bank.add(db, "user_discoverable_tools",
             Bank.hex_id(f"user_discoverable_tool:{discoverable_tool_name}"),
             {"tool_name": discoverable_tool_name, "status": "GIVEN"})
    shown = json.dumps(args, indent=2) if args else "(no arguments)"
    return (f"Tool given to user: {discoverable_tool_name}\n"
            f"Description: {_describe(discoverable_tool_name)[0]}\n"
            f"Arguments: {shown}\n\n"
            "The user can now execute this action by calling `call_discoverable_user_tool` "
            f"with discoverable_tool_name='{discoverable_tool_name}' and the same arguments.")


def unlock_discoverable_agent_tool(db: State, agent_tool_name: str) -> str:
    """Unlock an internal tool the knowledge base names; then call it with
    `call_discoverable_agent_tool`.

    Args:
        agent_tool_name: The tool's name, as the knowledge base gives it.
    """
    if agent_tool_name not in DISCOVERABLE:
        return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
    if not Bank.has(db, "unlocked_agent_tools", agent_tool_name):
        db.put("unlocked_agent_tools", {"_id": agent_tool_name, "unlocked_at": NOW})
    description, params = _describe(agent_tool_name)
    # a parameter is required unless τ²'s description (`--tau2`) says it is optional
    lines = [f"  - {p}: {kind} ({'required' if not req or req[0] else 'optional'}) - {text}"
             for p, kind, text, *req in params]
    return (f"Tool unlocked: {agent_tool_name}\n"
            f"Description: {description}\n\n"
            f"Tool: {agent_tool_name}\n"
            f"Description: {description}\n"
            "Parameters:\n" + ("\n".join(lines) or "  (no parameters)") + "\n\n"
            "You can now use this tool by calling `call_discoverable_agent_tool` with "
            f"agent_tool_name='{agent_tool_name}' and the required arguments.")


def call_discoverable_agent_tool(db: State, agent_tool_name: str,
                                 arguments: str = "{}") -> str:
    """Call an internal tool unlocked before with `unlock_discoverable_agent_tool`.

    Args:
        agent_tool_name: The tool's name.
        arguments: JSON object of the tool's arguments (e.g. '{"user_id": "abc123"}').
    """
    entry = DISCOVERABLE.get(agent_tool_name)
    if entry is None:
        return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
    if not Bank.has(db, "unlocked_agent_tools", agent_tool_name):
        return (f"Error: Tool '{agent_tool_name}' has not been unlocked. You must first use "
                "`unlock_discoverable_agent_tool` to unlock this tool before calling it.")
    args, error = Bank.json_args(arguments)
    if error:
        return error
    fn, writes = entry
    try:
        result = fn(db, **args)
    except TypeError as exc:
        return f"Error: Invalid arguments: {exc}"
    # τ² logs a call of a tool that writes, and of a read the task's gold makes (its per-task
    # allowlist): extra reads leave the state alone
    if writes or Bank.has(db, "read_log_allowlist", agent_tool_name):
        Bank.add(db, "agent_discoverable_tools",
                 Bank.hex_id(f"agent_discoverable_tool:{agent_tool_name}"),
                 {"tool_name": agent_tool_name, "status": "CALLED"})
    return result


def list_discoverable_agent_tools(db: State) -> str:
    """The internal tools you have called."""
    result = Bank.query(db, "agent_discoverable_tools", {})
    if "No results found" in result:  # τ²'s own test, which its query text never meets
        return ("No agent tools have been called yet. Search the knowledge base to discover "
                "available tools.")
    return f"Your called agent tools:\n{result}"


# ---------------------------------------------------------------- the discoverable tools
# inline banking_discoverable.py holds them with their descriptions (`CATALOG`)
# ---- inline banking_accounts.py ----
from benchpack.compiler.importers.tau2_tools.banking_accounts import CLOCK  # noqa: E402, F401

# ---- end of inline ----
# ---- inline banking_cards.py ----
from benchpack.compiler.importers.tau2_tools.banking_cards import _card_found  # noqa: E402, F401

# ---- end of inline ----
# ---- inline banking_credit.py ----
from benchpack.compiler.importers.tau2_tools.banking_credit import _cli_id  # noqa: E402, F401

# ---- end of inline ----
# ---- inline banking_debit.py ----
from benchpack.compiler.importers.tau2_tools.banking_debit import ATM_LIMITS  # noqa: E402, F401

# ---- end of inline ----
# ---- inline banking_debit_activation.py ----
from benchpack.compiler.importers.tau2_tools.banking_debit_activation import ACTIVATORS  # noqa: E402, F401

# ---- end of inline ----
# ---- inline banking_debit_disputes.py ----
from benchpack.compiler.importers.tau2_tools.banking_debit_disputes import FRAUD  # noqa: E402, F401

# ---- end of inline ----
# ---- inline banking_discoverable.py ----
from benchpack.compiler.importers.tau2_tools.banking_discoverable import (  # noqa: E402
    CATALOG,
    DISCOVERABLE,
)

# ---- end of inline ----


def _describe(name):
    """(description, [(parameter, type, description[, required])]) of a discoverable tool."""
    return CATALOG[name]


# Python's own errors for a missing or unexpected argument name each tool as τ²'s do (τ²'s are
# methods of KnowledgeTools); the toolset runs with check_arguments: false, as τ² checks none
for _tool in [f for n, f in list(globals().items()) if not n.startswith("_") and callable(f)
              and not isinstance(f, type) and getattr(f, "__module__", None) == __name__]:
    _tool.__qualname__ = f"KnowledgeTools.{_tool.__name__}"
