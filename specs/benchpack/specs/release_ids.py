"""The ids a released benchmark's records get in a pack, in one place for both importers of a
release: the pack importer (`compiler/importers/`) names sessions with them and the run
importer (`runtime/imports/`) finds those sessions again by them, so the two cannot drift apart
(issue 30: runtime never imports the compiler, so this lives below both)."""

from __future__ import annotations

import hashlib
import re

from .persona import COHERENT_STYLES

_NOT_ID = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_id(text: str) -> str:
    """A pack id from a release id (ids allow letters, digits, `_ . -`; 80 characters)."""
    out = _NOT_ID.sub("-", text).strip("-_.")
    return out[:80] or "x"


# --------------------------------------------------------------------------- ProactBench


def proactbench_episode_id(unique_id_eval: str) -> str:
    """`BP_X_01_AB__style13__<uuid>` → `BP_X_01_AB.s13.<uuid[:12]>`: short, readable, unique
    (blueprint × style × persona is the corpus's primary key)."""
    m = re.fullmatch(r"(.+?)__style(\d+)__([0-9A-Za-z-]+)", unique_id_eval)
    if not m:
        return safe_id(unique_id_eval)
    return safe_id(f"{m.group(1)}.s{m.group(2)}.{m.group(3)[:12]}")


def proactbench_session_key(pack: str, unique_id_eval: str, style_index: int) -> str:
    """The plan id of the session imported for a dialogue."""
    return (f"session.{pack}.{proactbench_episode_id(unique_id_eval)}.dialogue@"
            f"{COHERENT_STYLES[style_index - 1]}")


# --------------------------------------------------------------------------- τ²-bench


def tau2_session_id(task_id: str) -> str:
    """A valid pack id for a τ² task id: itself when valid, else its runs of other characters
    made `-` (and, past 75 characters, cut and told apart by a hash). Telecom's ids
    (`[mobile_data_issue]airplane_mode_on|…`) are the ones that need it."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,74}", task_id):
        return task_id
    out = _NOT_ID.sub("-", task_id).strip("-_.") or "task"
    if len(out) > 75:
        out = out[:66] + "-" + hashlib.sha256(task_id.encode()).hexdigest()[:8]
    return out


def tau2_session_key(pack: str, task_id: str) -> str:
    """The plan id of a task's session: one episode `task-<id>` of one session `<id>`."""
    sid = tau2_session_id(task_id)
    return f"session.{pack}.task-{sid}.{sid}"


__all__ = ["proactbench_episode_id", "proactbench_session_key", "safe_id", "tau2_session_id",
           "tau2_session_key"]
