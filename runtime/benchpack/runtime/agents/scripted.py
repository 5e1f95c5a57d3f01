"""Scripted and replayed agents: deterministic turns for tests, demos and offline re-scoring.

`scripted:<file>` reads authored turns (YAML or JSON):

```yaml
sessions:
  <session name or plan id>:          # e.g. refill-triage, or session.pack.ep.refill-triage
    - say: "Here is the triage…"       # one entry per agent turn
      tool_calls:                      # executed for real, in order, before the reply
        - {name: read_file, args: {path: notes/refills.md}}
    - say: "Done."
default:                               # optional: turns for sessions not listed (without
                                       # it, an unlisted session ends in an error)
  - say: "OK."
```

A session needing more turns than its list holds (a user who keeps talking, a staged-disclosure
graph request) ends in an error naming the session and the turn: an empty reply would be scored
as the agent's answer. An agent that says nothing is written as `- say: ""` turns.

`replay:<file>` reads a JSONL transcript exported from a previous run (one message per line:
`{"session_id", "repeat", "turn", "role", "content", "tool_calls"}`) and replays the assistant
side turn by turn, re-executing its tool calls so the environment state is rebuilt. A transcript
that ends stops the agent (`script_end`): the recorded agent said nothing more.

Tool calls go through the same `ToolHandle` as any agent, so rule graders see real records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..types import AgentReply, Message, SessionBrief, ToolRecord
from . import tool_call_messages

if TYPE_CHECKING:
    from .registry import AgentContext


class ScriptError(UsageError):
    pass


def read_text(path: Path, what: str) -> str:
    """The text of a file the user named, or a `ScriptError` saying why it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptError(f"{path}: no such {what}") from None
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:  # a directory, no permission
        raise ScriptError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None


def load_script(path: Path) -> Any:
    """A YAML (.yaml/.yml) or JSON script file, or a `ScriptError` with its place."""
    text = read_text(path, "script file")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ScriptError(f"{path}{where}: not valid YAML ({problem})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); "
                          "a .yaml/.yml file is read as YAML") from None


class _TurnsSession:
    def __init__(self, brief: SessionBrief, turns: list[dict[str, Any]],
                 script: str | None = None, source: str = "the script") -> None:
        self.brief = brief
        self.turns = turns
        # a script's author wrote its turns for this session, so a turn it lacks is a mistake in
        # the script (an empty reply would be scored as the agent's answer); a replayed
        # transcript simply ends (`script_end`): the recorded agent said nothing more
        self.script, self.source = script, source
        # a conversation resumed from a fixed dialogue (offline replay) continues the script at
        # the dialogue's next turn: entry k answers user turn k + 1
        self.index = sum(1 for m in brief.history if m.role == "user")

    async def turn(self, message: str | None, event: dict[str, Any] | None) -> AgentReply:
        if self.index >= len(self.turns):
            if self.script is not None:
                raise ScriptError(f"{self.script}: no turn {self.index + 1} for session "
                                  f"`{self.brief.name}` ({self.source} has {len(self.turns)}; "
                                  "add the turns the agent should say)")
            return AgentReply(text="", stop_reason="script_end")
        spec = self.turns[self.index]
        self.index += 1
        records: list[ToolRecord] = []
        messages: list[Message] = []
        budget = self.brief.budget
        for step, call in enumerate(spec.get("tool_calls") or [], start=1):
            tools = self.brief.tools
            tools.step = step  # type: ignore[attr-defined]
            rec = await tools.call(str(call["name"]), dict(call.get("args") or {}),
                                   call.get("id"))
            if getattr(tools, "ended", False):  # solo mode's ending tool: the session is over
                messages.append(Message("assistant", "", 0, tool_calls=[
                    {"id": rec.call_id, "name": rec.tool_name, "arguments": rec.call}]))
                return AgentReply(text="", tool_records=records, messages=messages,
                                  steps=len(records) + 1, stop_reason="end_tool")
            records.append(rec)
            messages.extend(tool_call_messages(rec))
            if budget is not None and budget.reason is not None:
                # the session's message or tool-error limit: τ² stops after this result
                return AgentReply(text="", tool_records=records, messages=messages,
                                  steps=len(records), stop_reason="session_limit")
        text = str(spec.get("say") or "")
        messages.append(Message("assistant", text, 0))
        return AgentReply(text=text, tool_records=records, messages=messages,
                          steps=len(records) + 1, compactions=int(spec.get("compactions") or 0))

    async def close(self) -> None:
        return None


class ScriptedAgent:
    """`scripted:<file>`: authored turns per session."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"scripted:{self.path.name}"
        data = load_script(self.path)
        if not isinstance(data, dict) or not isinstance(data.get("sessions", {}), dict):
            raise ScriptError(f"{self.path}: expected `sessions:` mapping session → turns")
        self.data = data
        self.sessions: dict[str, list[dict[str, Any]]] = data.get("sessions") or {}
        self.default: list[dict[str, Any]] = data.get("default") or []
        for key, turns in [*self.sessions.items(), ("default", self.default)]:
            if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
                raise ScriptError(f"{self.path}: turns of `{key}` must be a list of mappings")
            for n, t in enumerate(turns, start=1):
                calls = t.get("tool_calls") or []
                if not isinstance(calls, list) or not all(
                        isinstance(c, dict) and isinstance(c.get("name"), str) and
                        isinstance(c.get("args") or {}, dict) for c in calls):
                    raise ScriptError(f"{self.path}: turn {n} of `{key}`: tool_calls must be a "
                                      "list of {name: TOOL, args: {...}} mappings")

    async def open(self, brief: SessionBrief) -> _TurnsSession:
        source = "the script"
        turns = self.sessions.get(brief.session_id)
        if turns is None:
            turns = self.sessions.get(brief.name)
        if turns is None:
            base = brief.session_id.split("@")[0].split("~")[0]
            turns = self.sessions.get(base)
        if turns is None and "default" in self.data:
            turns, source = self.default, "`default:`"
        if turns is None:
            raise ScriptError(f"{self.path}: no turns for session `{brief.name}` "
                              f"({brief.session_id}) and no `default:`")
        return _TurnsSession(brief, turns, script=str(self.path), source=source)

    def check_plan(self, sessions: list[tuple[str, str]]) -> None:
        """Refuse, before anything runs, a `sessions:` key naming no session of the plan
        (`(id, name)` pairs): its turns would never play, and a typo would leave the session to
        `default:`. The error is located at the key (`file:line:col`)."""
        known = {k for pair in sessions for k in pair}
        known |= {i.split("@")[0].split("~")[0] for i, _ in sessions}
        for key in self.sessions:
            if str(key) not in known:
                names = sorted({n for _, n in sessions})
                shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
                raise ScriptError(f"{self.path}{_key_place(self.path, str(key))}: no session "
                                  f"`{key}` in the plan (its sessions: {shown})")


def _key_place(path: Path, key: str) -> str:
    """`:line:col` of `key` under `sessions:` in a YAML script ("" when it cannot be told)."""
    if path.suffix not in (".yaml", ".yml"):
        return ""
    import yaml

    try:
        root = yaml.compose(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return ""
    if not isinstance(root, yaml.MappingNode):
        return ""
    for k, v in root.value:
        if k.value == "sessions" and isinstance(v, yaml.MappingNode):
            for sk, _ in v.value:
                if sk.value == key:
                    return f":{sk.start_mark.line + 1}:{sk.start_mark.column + 1}"
    return ""


class ReplayAgent:
    """`replay:<file>`: the assistant side of a recorded transcript."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"replay:{self.path.name}"
        self.by_session: dict[tuple[str, int], dict[int, dict[str, Any]]] = {}
        for n, line in enumerate(read_text(self.path, "replay file").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScriptError(f"{self.path}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise ScriptError(f"{self.path}:{n}: expected one message object per line")
            if row.get("role") != "assistant":
                continue
            try:
                self._add(row)
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
                raise ScriptError(f"{self.path}:{n}: not a transcript message ({what}); "
                                  "expected {session_id, repeat, turn, role, content, "
                                  "tool_calls}") from None
        if not self.by_session:
            raise ScriptError(f"{self.path}: no assistant messages to replay (expected one "
                              "JSON message per line with role `assistant`)")

    def _add(self, row: dict[str, Any]) -> None:
        key = (str(row["session_id"]), int(row.get("repeat") or 0))
        turn = self.by_session.setdefault(key, {}).setdefault(
            int(row["turn"]), {"say": "", "tool_calls": []})
        calls = row.get("tool_calls") or []
        if isinstance(calls, str):  # as the `messages` table stores it
            calls = json.loads(calls)
        for tc in calls:
            args = tc.get("arguments", tc.get("args", {}))
            if isinstance(args, str):
                args = json.loads(args)
            turn["tool_calls"].append({"name": str(tc["name"]), "args": dict(args)})
        if row.get("content"):
            turn["say"] = row["content"]

    async def open(self, brief: SessionBrief) -> _TurnsSession:
        turns = self.by_session.get((brief.session_id, brief.repeat)) or \
            self.by_session.get((brief.session_id, 0))
        if turns is None:
            raise ScriptError(f"{self.path}: no assistant turns for session `{brief.name}` "
                              f"({brief.session_id})")
        return _TurnsSession(brief, [turns[k] for k in sorted(turns)])


def make_scripted(argument: str, context: AgentContext) -> ScriptedAgent:
    """Registry factory of `scripted:<file>`."""
    return ScriptedAgent(argument)


def make_replay(argument: str, context: AgentContext) -> ReplayAgent:
    """Registry factory of `replay:<file>`."""
    return ReplayAgent(argument)
