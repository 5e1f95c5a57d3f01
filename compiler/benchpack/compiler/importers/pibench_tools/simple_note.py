"""Simple Note for imported π-Bench app tasks: benchpack's own stateful notes app (not
AppWorld's code), with the operations the tasks name (search, show, create, add content,
update, delete). Table `notes`; a deleted note moves to `deleted`, so rules can say what went.

Each note keeps what rules need about how it was made: `history` (its operations in order,
e.g. `create,add,update`), `seeded` (it was there when the episode started) and
`exact_title_search` (a search whose query was exactly its title returned it)."""

from benchpack_tools import State, ToolError


def _new_id(db: State, table: str, prefix: str) -> str:
    taken = [r[f"{prefix}_id"] for t in (table, "deleted") for r in db.rows(t)]
    nums = [int(k.rsplit("_", 1)[1]) for k in taken if k.rsplit("_", 1)[-1].isdigit()]
    return f"{prefix}_{max(nums, default=0) + 1}"


def _note(db: State, note_id: str) -> dict:
    found = db.find("notes", note_id=note_id)
    if not found:
        raise ToolError(f"Note with id {note_id} does not exist.")
    return found[0]


def search_notes(db: State, query: str = "") -> list:
    """Search your notes by words in their title or content.

    Args:
        query: Text to look for (empty: every note).
    """
    q = query.strip().lower()
    out = []
    for note in db.rows("notes"):
        if q in note["title"].lower() or q in note["content"].lower():
            if query.strip() == note["title"].strip():
                note["exact_title_search"] = True
                db.put("notes", note)
            out.append({"note_id": note["note_id"], "title": note["title"]})
    return out


def show_note(db: State, note_id: str) -> dict:
    """Show one note's title and content.

    Args:
        note_id: The note's id.
    """
    note = _note(db, note_id)
    return {"note_id": note_id, "title": note["title"], "content": note["content"]}


def create_note(db: State, title: str, content: str = "") -> dict:
    """Create a note.

    Args:
        title: The note's title.
        content: Its text (Markdown allowed).
    """
    note_id = _new_id(db, "notes", "note")
    db.put("notes", {"note_id": note_id, "title": title, "content": content,
                     "history": "create", "seeded": False, "exact_title_search": False})
    return {"message": "Note created.", "note_id": note_id}


def add_content_to_note(db: State, note_id: str, added_content: str,
                        append_or_prepend: str = "append") -> dict:
    """Add text at the end (append) or the start (prepend) of a note.

    Args:
        note_id: The note's id.
        added_content: The text to add.
        append_or_prepend: `append` or `prepend`.
    """
    if append_or_prepend not in ("append", "prepend"):
        raise ToolError("append_or_prepend must be 'append' or 'prepend'.")
    note = _note(db, note_id)
    note["content"] = (note["content"] + added_content if append_or_prepend == "append"
                       else added_content + note["content"])
    note["history"] += ",add"
    db.put("notes", note)
    return {"message": "Content added to the note."}


def update_note(db: State, note_id: str, content: str | None = None,
                title: str | None = None) -> dict:
    """Replace a note's content and/or title.

    Args:
        note_id: The note's id.
        content: The new content (unchanged when not given).
        title: The new title (unchanged when not given).
    """
    note = _note(db, note_id)
    if content is not None:
        note["content"] = content
    if title is not None:
        note["title"] = title
    note["history"] += ",update"
    db.put("notes", note)
    return {"message": "Note updated."}


def delete_note(db: State, note_id: str) -> dict:
    """Delete a note.

    Args:
        note_id: The note's id.
    """
    note = _note(db, note_id)
    db.delete("notes", note_id)
    db.put("deleted", note)
    return {"message": "Note deleted."}


def login(db: State, username: str, password: str) -> dict:
    """Log in to the app (tasks give the credentials). There are no accounts to check them
    against: the release holds none, so any credentials are accepted.

    Args:
        username: The account's email or phone number.
        password: Its password.
    """
    return {"message": "Logged in.", "username": username}
