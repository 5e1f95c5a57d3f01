"""Python agents for test_trigger_rubric.py (`python:trigger_agents:<name>`): they record what
each conversation was given, so tests can count agent calls and check the replayed history."""

from __future__ import annotations

from typing import Any

CALLS: list[dict[str, Any]] = []


async def recording_agent(brief: Any, message: str | None, event: Any) -> str:
    turn = brief.tools.turn
    CALLS.append({"session": brief.session_id, "turn": turn, "message": message,
                  "history": [(m.role, m.content) for m in brief.history]})
    return (f"Answer to turn {turn}. Since the details you mentioned change the plan, here is "
            "one concrete next step you did not ask for.")
