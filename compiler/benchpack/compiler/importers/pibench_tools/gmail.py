"""Gmail for imported π-Bench app tasks: benchpack's own stateful mail app (not AppWorld's
code), with the operations the tasks name (drafts, sending, outbox threads). Tables `drafts`
and `threads` (a sent email opens a thread in the outbox)."""

from benchpack_tools import State, ToolError


def _next(db: State, table: str, key: str, prefix: str) -> str:
    nums = [int(r[key].rsplit("_", 1)[1]) for r in db.rows(table)
            if r[key].rsplit("_", 1)[-1].isdigit()]
    return f"{prefix}_{max(nums, default=0) + 1}"


def _draft(db: State, draft_id: str) -> dict:
    found = db.find("drafts", draft_id=draft_id)
    if not found:
        raise ToolError(f"Draft with id {draft_id} does not exist.")
    return found[0]


def create_draft(db: State, recipient_email_addresses: list[str] | None = None,
                 subject: str = "", body: str = "") -> dict:
    """Create an email draft.

    Args:
        recipient_email_addresses: Who it goes to.
        subject: The subject line.
        body: The text of the email.
    """
    draft_id = _next(db, "drafts", "draft_id", "draft")
    db.put("drafts", {"draft_id": draft_id, "email_addresses": recipient_email_addresses or [],
                      "subject": subject, "body": body, "sent": False})
    return {"message": "Draft created.", "draft_id": draft_id}


def update_draft(db: State, draft_id: str, email_addresses: list[str] | None = None,
                 subject: str | None = None, body: str | None = None) -> dict:
    """Change a draft's recipients, subject or body (what is not given stays).

    Args:
        draft_id: The draft's id.
        email_addresses: The new recipients.
        subject: The new subject line.
        body: The new text.
    """
    draft = _draft(db, draft_id)
    if draft["sent"]:
        raise ToolError("This draft has already been sent.")
    for field, value in (("email_addresses", email_addresses), ("subject", subject),
                         ("body", body)):
        if value is not None:
            draft[field] = value
    db.put("drafts", draft)
    return {"message": "Draft updated."}


def send_email_from_draft(db: State, draft_id: str) -> dict:
    """Send a draft; it becomes a thread in the outbox.

    Args:
        draft_id: The draft's id.
    """
    draft = _draft(db, draft_id)
    if draft["sent"]:
        raise ToolError("This draft has already been sent.")
    if not draft["email_addresses"]:
        raise ToolError("The draft has no recipient.")
    draft["sent"] = True
    db.put("drafts", draft)
    thread_id = _next(db, "threads", "email_thread_id", "thread")
    db.put("threads", {"email_thread_id": thread_id, "box": "outbox",
                       "email_addresses": draft["email_addresses"], "subject": draft["subject"],
                       "body": draft["body"], "draft_id": draft_id})
    return {"message": "Email sent.", "email_thread_id": thread_id}


def send_email(db: State, email_addresses: list[str], subject: str, body: str) -> dict:
    """Send an email directly.

    Args:
        email_addresses: Who it goes to.
        subject: The subject line.
        body: The text of the email.
    """
    made = create_draft(db, email_addresses, subject, body)
    return send_email_from_draft(db, made["draft_id"])


def show_outbox_threads(db: State) -> list:
    """List the threads of sent emails."""
    return [{"email_thread_id": t["email_thread_id"], "subject": t["subject"],
             "email_addresses": t["email_addresses"]}
            for t in db.rows("threads") if t["box"] == "outbox"]


def show_thread(db: State, email_thread_id: str) -> dict:
    """Show one email thread.

    Args:
        email_thread_id: The thread's id.
    """
    found = db.find("threads", email_thread_id=email_thread_id)
    if not found:
        raise ToolError(f"Thread with id {email_thread_id} does not exist.")
    return found[0]


def login(db: State, username: str, password: str) -> dict:
    """Log in to the app (tasks give the credentials). There are no accounts to check them
    against: the release holds none, so any credentials are accepted.

    Args:
        username: The account's email or phone number.
        password: Its password.
    """
    return {"message": "Logged in.", "username": username}
