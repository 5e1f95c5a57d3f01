"""Todoist for imported π-Bench app tasks: benchpack's own stateful to-do app (not AppWorld's
code), with the operations the tasks name: projects, sections, tasks, labels, comments, each
created, changed and deleted. A deleted row moves to `deleted` (with its `kind`), so rules can
say what was cleaned up."""

from benchpack_tools import State, ToolError

KEYS = {"projects": "project_id", "sections": "section_id", "tasks": "task_id",
        "labels": "label_id", "comments": "task_comment_id"}


def _create(db: State, table: str, row: dict) -> str:
    key = KEYS[table]
    prefix = key.removesuffix("_id")
    nums = [int(str(r["id"]).rsplit("_", 1)[1]) for r in db.rows("deleted")
            if r["kind"] == table] + [int(r[key].rsplit("_", 1)[1]) for r in db.rows(table)]
    row[key] = f"{prefix}_{max(nums, default=0) + 1}"
    db.put(table, row)
    return row[key]


def _get(db: State, table: str, value: str) -> dict:
    found = db.find(table, **{KEYS[table]: value})
    if not found:
        raise ToolError(f"{KEYS[table].removesuffix('_id').replace('_', ' ')} {value} does "
                        "not exist.")
    return found[0]


def _delete(db: State, table: str, value: str) -> dict:
    row = _get(db, table, value)
    db.delete(table, value)
    db.put("deleted", {"id": value, "kind": table, "row": row})
    return {"message": "Deleted."}


def create_project(db: State, name: str) -> dict:
    """Create a project.

    Args:
        name: The project's name.
    """
    return {"project_id": _create(db, "projects", {"name": name})}


def create_section(db: State, name: str, project_id: str) -> dict:
    """Create a section in a project.

    Args:
        name: The section's name.
        project_id: Its project.
    """
    _get(db, "projects", project_id)
    return {"section_id": _create(db, "sections", {"name": name, "project_id": project_id})}


def create_task(db: State, title: str, project_id: str, section_id: str | None = None,
                description: str = "", due_date: str | None = None) -> dict:
    """Create a task.

    Args:
        title: The task's title.
        project_id: Its project.
        section_id: Its section (optional).
        description: What it is about.
        due_date: When it is due (optional).
    """
    _get(db, "projects", project_id)
    if section_id is not None:
        _get(db, "sections", section_id)
    return {"task_id": _create(db, "tasks", {
        "title": title, "project_id": project_id, "section_id": section_id,
        "description": description, "due_date": due_date, "assignee_email": None,
        "labels": []})}


def update_task(db: State, task_id: str, title: str | None = None,
                description: str | None = None, due_date: str | None = None) -> dict:
    """Change a task's title, description or due date (what is not given stays).

    Args:
        task_id: The task.
        title: The new title.
        description: The new description.
        due_date: The new due date.
    """
    task = _get(db, "tasks", task_id)
    for field, value in (("title", title), ("description", description),
                         ("due_date", due_date)):
        if value is not None:
            task[field] = value
    db.put("tasks", task)
    return {"message": "Task updated."}


def assign_or_unassign_task(db: State, task_id: str, assignee_email: str | None = None) -> dict:
    """Assign a task to someone (by email), or unassign it (no email).

    Args:
        task_id: The task.
        assignee_email: Who does it; empty to unassign.
    """
    task = _get(db, "tasks", task_id)
    task["assignee_email"] = assignee_email or None
    db.put("tasks", task)
    return {"message": "Task assigned." if assignee_email else "Task unassigned."}


def create_label(db: State, name: str) -> dict:
    """Create a label.

    Args:
        name: The label's name.
    """
    return {"label_id": _create(db, "labels", {"name": name})}


def add_label_to_task(db: State, label_id: str, task_id: str) -> dict:
    """Put a label on a task.

    Args:
        label_id: The label.
        task_id: The task.
    """
    _get(db, "labels", label_id)
    task = _get(db, "tasks", task_id)
    if label_id not in task["labels"]:
        task["labels"].append(label_id)
    db.put("tasks", task)
    return {"message": "Label added."}


def remove_label_from_task(db: State, task_id: str, label_id: str) -> dict:
    """Take a label off a task.

    Args:
        task_id: The task.
        label_id: The label.
    """
    task = _get(db, "tasks", task_id)
    if label_id not in task["labels"]:
        raise ToolError(f"Task {task_id} has no label {label_id}.")
    task["labels"].remove(label_id)
    db.put("tasks", task)
    return {"message": "Label removed."}


def post_task_comment(db: State, content: str, task_id: str) -> dict:
    """Comment on a task.

    Args:
        content: The comment.
        task_id: The task.
    """
    _get(db, "tasks", task_id)
    return {"task_comment_id": _create(db, "comments", {"content": content,
                                                         "task_id": task_id})}


def show_task_comments(db: State, task_id: str) -> list:
    """A task's comments.

    Args:
        task_id: The task.
    """
    return db.find("comments", task_id=task_id)


def delete_task_comment(db: State, task_comment_id: str) -> dict:
    """Delete a comment.

    Args:
        task_comment_id: The comment.
    """
    return _delete(db, "comments", task_comment_id)


def delete_task(db: State, task_id: str) -> dict:
    """Delete a task.

    Args:
        task_id: The task.
    """
    return _delete(db, "tasks", task_id)


def delete_label(db: State, label_id: str) -> dict:
    """Delete a label.

    Args:
        label_id: The label.
    """
    return _delete(db, "labels", label_id)


def delete_section(db: State, section_id: str) -> dict:
    """Delete a section.

    Args:
        section_id: The section.
    """
    return _delete(db, "sections", section_id)


def delete_project(db: State, project_id: str) -> dict:
    """Delete a project.

    Args:
        project_id: The project.
    """
    return _delete(db, "projects", project_id)


def login(db: State, username: str, password: str) -> dict:
    """Log in to the app (tasks give the credentials). There are no accounts to check them
    against: the release holds none, so any credentials are accepted.

    Args:
        username: The account's email or phone number.
        password: Its password.
    """
    return {"message": "Logged in.", "username": username}
