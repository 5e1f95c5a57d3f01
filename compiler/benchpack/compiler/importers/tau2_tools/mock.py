"""τ²-bench mock-domain tools (a tiny task list), written for benchpack from τ²'s documented
behaviour; copied into every pack `bench import tau2` writes for the mock domain. Tables:
tasks, users."""

from typing import Literal

from benchpack_tools import State, ToolError


def create_task(db: State, user_id: str, title: str, description: str | None = None) -> dict:
    """Create a pending task for an existing user.

    Args:
        user_id: The user who owns the task, such as 'user_1'.
        title: The task's title (required).
        description: An optional description.
    """
    user = db.get("users", user_id) if db.find("users", user_id=user_id) else None
    if user is None:
        raise ToolError(f"User {user_id} not found")
    if not title.strip():
        raise ToolError("A task must have a title")
    task_id = f"task_{len(db.rows('tasks')) + 1}"
    task = {"task_id": task_id, "title": title, "description": description,
            "status": "pending"}
    db.put("tasks", task)
    user["tasks"] = [*user.get("tasks", []), task_id]
    db.put("users", user)
    return task


def get_users(db: State) -> list:
    """All users with their task ids."""
    return db.rows("users")


def update_task_status(db: State, task_id: str,
                       status: Literal["pending", "completed"]) -> dict:
    """Set a task's status.

    Args:
        task_id: The task, such as 'task_1'.
        status: 'pending' or 'completed'.
    """
    if status not in ("pending", "completed"):
        raise ToolError(f"Invalid status {status!r}")
    if not db.find("tasks", task_id=task_id):
        raise ToolError(f"Task {task_id} not found")
    task = db.get("tasks", task_id)
    task["status"] = status
    return db.put("tasks", task)


def transfer_to_human_agents(summary: str) -> str:
    """Transfer the user to a human agent with a summary of the issue.

    Args:
        summary: A summary of the user's issue.
    """
    return "Transfer successful"
