"""τ²-bench mock-domain tools (a tiny task list), written for benchpack to behave as τ²'s do;
copied into every pack `bench import tau2` writes for the mock domain. Tables: tasks, users.

The conventions of tau2_tools (see retail.py): τ²'s result texts and error texts in τ²'s order
of checks, writes where τ² changes its objects. As in τ²: a new task's id is `task_<number of
tasks + 1>` (an existing task of that id is replaced), a task's title and description are
checked as its model does (strings; the description may be null), and a status is stored as
given, whatever it is (τ² assigns it without a check).
"""

from benchpack_tools import State

# ---- prelude (tau2_tools/prelude.py; `bench import tau2` inlines it here) ----
from benchpack.compiler.importers.tau2_tools.prelude import Model, Tau2

# ---- end of prelude ----

FIXES = frozenset()
"""Differences from τ² switched on by `bench import tau2 --fix` (none for this domain)."""


def create_task(db: State, user_id: str, title: str, description: str | None = None) -> str:
    """Create a pending task for an existing user.

    Args:
        user_id: The user who will own the task, such as 'user_1'.
        title: The task's title.
        description: What the task is about (optional).
    """
    user = Tau2.row(db, "users", user_id, f"User {user_id} not found")
    task_id = f"task_{len(db.rows('tasks')) + 1}"
    fields = [("task_id", task_id), ("title", title), ("description", description),
              ("status", "pending")]
    Tau2.strings("Task", fields[:3], optional={"description"})
    task = dict(fields)
    db.put("tasks", task)
    user["tasks"].append(task_id)
    db.put("users", user)
    return Tau2.text(Model(task))


def get_users(db: State) -> str:
    """Every user, with the ids of their tasks."""
    return Tau2.text([Model(u) for u in db.rows("users")])


def update_task_status(db: State, task_id: str, status: str) -> str:
    """Set a task's status.

    Args:
        task_id: The task, such as 'task_1'.
        status: 'pending' or 'completed'.
    """
    task = Tau2.row(db, "tasks", task_id, f"Task {task_id} not found")
    task["status"] = status
    db.put("tasks", task)
    return Tau2.text(Model(task))


def transfer_to_human_agents(summary: str) -> str:
    """Hand the user over to a human agent with a summary of the issue: only when the user asks
    for one, or when the policy and these tools cannot solve the issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"


# ---- not tools: τ²'s helpers for initialization_actions and env_assertions (issue 24) ----
HELPERS = ("assert_number_of_tasks", "assert_task_status")
"""Public functions that are not offered to the agent (`bench import tau2` leaves them out of
the toolset's `include:`): `initial_state.actions` and `score.env_assertions` call them."""


def assert_number_of_tasks(db: State, user_id: str, expected_number: int) -> bool:
    """Environment assertion: the user owns this many tasks. An unknown user does not hold
    (τ²'s raises ValueError, which ends its evaluation with an error)."""
    user = next((u for u in db.rows("users") if u["user_id"] == user_id), None)
    return user is not None and len(user["tasks"]) == expected_number


def assert_task_status(db: State, task_id: str, expected_status: str) -> bool:
    """Environment assertion: the task has this status. An unknown task does not hold (τ²'s
    raises ValueError, which ends its evaluation with an error)."""
    task = next((t for t in db.rows("tasks") if t["task_id"] == task_id), None)
    return task is not None and task["status"] == expected_status


Tau2.toolkit("MockTools", globals())
