"""The intent-tracking audit of `bench rejudge` (`rejudge.py` module docstring): the new judge's
completion and clarification checks for every turn of a fixed transcript, over the intents the
original run still had open then, next to the original decisions."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .judges.base import JudgeError
from .judges.intent import Intent, TurnEvidence, intent_judge
from .types import ToolRecord

if TYPE_CHECKING:
    from .roles import JudgeSite

_CHECK_ERROR = re.compile(r"^turn (\d+): (completion|clarification)_check:")


async def intent_checks(site: JudgeSite, stored: dict[str, list[tuple[Any, ...]]],
                         records: list[ToolRecord], files: dict[str, str],
                         extra: dict[str, Any]
                         ) -> tuple[list[tuple[Any, ...]], dict[str, int]]:
    """The audit of an intent-tracking session's per-turn decisions (module docstring):
    `intent_checks` rows `(turn, intent_id, kind, original, decision, judge_error)`."""
    s = site.session
    decided = {str(r[0]): (str(r[3]), None if r[4] is None else int(r[4]))
               for r in stored["intent_status"] if r[6] is None}
    intents = [Intent(i.id, i.text, i.reveal) for i in s.hidden_intents]
    failed = {(int(m.group(1)), m.group(2)) for e in extra.get("judge_errors") or []
              if (m := _CHECK_ERROR.match(str(e)))}
    judge = intent_judge(site)
    jobs = []
    heard: list[str] = []
    for turn, user, reply, *_ in sorted(stored["turns"], key=lambda t: int(t[0])):
        turn = int(turn)
        heard = [*heard, str(user or "")]
        open_ = [i for i in intents if _open_at(decided.get(i.id), turn)]
        if not open_:
            break  # every intent was terminal: the original checked nothing from here on
        mine = [r for r in records if r.turn == turn]
        ev = TurnEvidence(turn=turn, text=str(reply or ""),
                          tool_calls=[{"tool_name": r.tool_name, "call": r.call,
                                       "error": r.error} for r in mine],
                          files=_turn_files(mine, files),
                          questions=[str(r.call.get("question", "")) for r in mine
                                     if r.tool_name == "ask_user"],
                          written={str(r.call.get("path")) for r in mine
                                   if r.effect == "write" and not r.error},
                          heard=heard)
        jobs.append(_check(judge.completed, ev, open_, "completion", "completed", decided,
                           (turn, "completion") in failed))
        asked = [i for i in open_ if decided.get(i.id) != ("completed", turn)]
        if asked:
            jobs.append(_check(judge.targeted, ev, asked, "clarification", "inferred", decided,
                               (turn, "clarification") in failed))
    rows = [r for batch in await asyncio.gather(*jobs) for r in batch]
    compared = [r for r in rows if r[3] is not None and r[4] is not None]
    audit = {"checks": len(rows), "agree": sum(1 for r in compared if r[3] == r[4]),
             "disagree": sum(1 for r in compared if r[3] != r[4]),
             "unknown": len(rows) - len(compared)}
    return rows, audit


def _open_at(decided: tuple[str, int | None] | None, turn: int) -> bool:
    """Whether an intent was still open when the original judged `turn` (a status is given
    at the turn it was decided; unresolved intents stay open)."""
    return decided is None or decided[1] is None or decided[1] >= turn


async def _check(ask: Callable[[TurnEvidence, list[Intent]], Any], ev: TurnEvidence,
                 open_: list[Intent], kind: str, status: str,
                 decided: dict[str, tuple[str, int | None]], failed: bool
                 ) -> list[tuple[Any, ...]]:
    error = None
    try:
        yes: set[str] | None = set(await ask(ev, open_))
    except JudgeError as exc:
        yes, error = None, exc.message
    return [(ev.turn, i.id, kind,
             None if failed else decided.get(i.id) == (status, ev.turn),
             None if yes is None else i.id in yes, error) for i in open_]


_FILE_TOOLS = ("read_file", "write_file", "edit_file")


def _turn_files(records: list[ToolRecord], final: dict[str, str]) -> dict[str, str]:
    """The files a turn read or wrote, as its tool calls show them (module docstring)."""
    out: dict[str, str] = {}
    for r in records:
        path = r.call.get("path")
        if r.error or r.tool_name not in _FILE_TOOLS or not isinstance(path, str):
            continue
        content: Any = None
        if r.tool_name == "write_file":
            content = r.call.get("content")
        elif r.tool_name == "read_file" and isinstance(r.result, dict):
            content = r.result.get("content")
        if not isinstance(content, str):
            content = final.get(path)
        if isinstance(content, str):
            out[path] = content
    return out


__all__ = ["intent_checks"]
