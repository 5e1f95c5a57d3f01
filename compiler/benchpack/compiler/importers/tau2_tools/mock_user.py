"""τ²-bench mock-domain user tools (a notification inbox on the user's side), written for
benchpack to behave as τ²'s do; copied into every pack `bench import tau2` writes for the mock
domain, as the environment's `user_toolsets` (dual control). Table: notifications.

As in τ²: dismissing marks a notification read (an unknown id is a ValueError with τ²'s
text); a new notification starts unread.
"""

from benchpack_tools import State

# ---- prelude (tau2_tools/prelude.py; `bench import tau2` inlines it here) ----
from benchpack.compiler.importers.tau2_tools.prelude import Model, Tau2

# ---- end of prelude ----

FIXES = frozenset()
"""Differences from τ² switched on by `bench import tau2 --fix` (none for this domain)."""
HELPERS = ("add_notification", "assert_notification_status")
"""Public functions that are not the user's tools: `initial_state.actions` and
`score.env_assertions` call them."""


def check_notifications(db: State) -> str:
    """Check all notifications in the user's inbox."""
    return Tau2.text([Model(n) for n in db.rows("notifications")])


def dismiss_notification(db: State, notification_id: str) -> str:
    """Dismiss (mark as read) a notification.

    Args:
        notification_id: The ID of the notification to dismiss.
    """
    note = Tau2.row(db, "notifications", notification_id,
                    f"Notification {notification_id} not found")
    note["status"] = "read"
    db.put("notifications", note)
    return f"Notification {notification_id} dismissed"


def add_notification(db: State, notification_id: str, message: str,
                     task_id: str | None = None) -> str:
    """Put a notification in the user's inbox (set-up helper)."""
    note = {"notification_id": notification_id, "message": message, "status": "unread",
            "task_id": task_id}
    db.put("notifications", note)
    return Tau2.text(Model(note))


def assert_notification_status(db: State, notification_id: str, expected_status: str) -> bool:
    """Environment assertion: the notification has this status (an unknown one does not hold;
    τ²'s raises ValueError, which ends its evaluation with an error)."""
    note = next((n for n in db.rows("notifications")
                 if n["notification_id"] == notification_id), None)
    return note is not None and note["status"] == expected_status


Tau2.toolkit("MockUserTools", globals())
