"""Phone for imported π-Bench app tasks: benchpack's own stateful contacts and text messages
(not AppWorld's code), with the operations the tasks name. Tables `contacts` and `texts`."""

from benchpack_tools import State


def search_contacts(db: State, query: str = "") -> list:
    """Search contacts by name or phone number.

    Args:
        query: Text to look for (empty: every contact).
    """
    q = query.strip().lower()
    return [c for c in db.rows("contacts")
            if q in c["name"].lower() or q in c["phone_number"]]


def search_text_messages(db: State, phone_number: str = "") -> list:
    """Text messages exchanged with a phone number (empty: all of them).

    Args:
        phone_number: The other party's number.
    """
    return [t for t in db.rows("texts") if not phone_number or t["phone_number"] == phone_number]


def show_text_message_window(db: State, phone_number: str) -> list:
    """The conversation with one phone number, oldest first.

    Args:
        phone_number: The other party's number.
    """
    return sorted(search_text_messages(db, phone_number), key=lambda t: t["text_message_id"])


def send_text_message(db: State, phone_number: str, message: str) -> dict:
    """Send a text message.

    Args:
        phone_number: The recipient's number.
        message: The text.
    """
    n = len(db.rows("texts")) + 1
    text_id = f"text_{n}"
    db.put("texts", {"text_message_id": text_id, "phone_number": phone_number,
                     "message": message, "direction": "sent"})
    return {"message": "Text message sent.", "text_message_id": text_id}


def login(db: State, username: str, password: str) -> dict:
    """Log in to the app (tasks give the credentials). There are no accounts to check them
    against: the release holds none, so any credentials are accepted.

    Args:
        username: The account's email or phone number.
        password: Its password.
    """
    return {"message": "Logged in.", "username": username}
