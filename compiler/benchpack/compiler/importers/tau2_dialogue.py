"""The parts of `bench import tau2` that make a pack's dialogue and scoring run as τ²'s do: the
pack-wide `defaults` (τ²'s run defaults: 200 messages, 10 tool errors, temperature 0, the
greeting, the chat user simulator, stop tokens anywhere, a dialogue nobody ended scores 0),
the prompt templates built from τ²'s own texts (`prompts:`), each session's τ²-rule fields
(the verbatim scenario, `match: tau2`, `compare`, τ²'s communicate and assertion checks) and the
pack's `origin:` label.

τ²'s texts (agent prompt, greeting, user guidelines, judge prompt) come only from the user's
checkout through the driver's `extract`; without one the rules are the same but the texts are
benchpack's own, and `origin.differences` says so — every report then calls the runs not
comparable with τ².
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from . import ImportError_

GREETING_OWN = "Hello! How can I help you?"
"""The greeting of an import without a checkout (τ²'s own is read from the checkout)."""
MAX_MESSAGES = 200
MAX_TOOL_ERRORS = 10
"""τ²'s run defaults (`tau2 run --max-steps`, `--max-errors`); the extract's, when read."""
JUDGE_MODEL = "gpt-4.1-2025-04-14"
"""τ²'s NL-assertion judge when the extract does not say (its `DEFAULT_LLM_NL_ASSERTIONS`)."""

TAU2_SEED = 300
"""τ²'s `DEFAULT_SEED` (the extract's, when read)."""
TRIALS = 32
"""How many per-trial seeds an import writes (τ²'s leaderboard asks for 4 trials)."""


def trial_seeds(seed: int, n: int = TRIALS) -> list[int]:
    """The seed of each of τ²'s trials: its runner seeds Python's `random` with the run seed
    and draws one `randint(0, 1000000)` per trial (the first n of any run's seeds)."""
    import random

    draw = random.Random(seed)
    return [draw.randint(0, 1000000) for _ in range(n)]


NO_CHECKOUT = ("no τ² checkout was read: the tool descriptions, the agent's system prompt "
               "(the policy alone), the greeting and the user simulator's and judge's prompts "
               "are benchpack's own, and the database is db.json as released (τ²'s models add "
               "default fields when they load it)")


def _raw(text: str, what: str) -> str:
    """`text` verbatim inside a Jinja template."""
    if "{% endraw %}" in text or "{%endraw%}" in text:
        raise ImportError_(f"τ²'s {what}", "contains `{% endraw %}`, which a template cannot "
                           "quote", "edit the text in the checkout or report it")
    return "{% raw %}" + text + "{% endraw %}" if text else ""


def user_template(extract: dict[str, Any]) -> str:
    """`instructed_user.user_system`: τ²'s simulator system prompt around `{{ scenario }}`."""
    variants = extract.get("user_prompts") or []
    if not variants:
        raise ImportError_("τ² extract", "has no user simulator prompt",
                           "the checkout's driver output is incomplete")
    def text(v: dict[str, str]) -> str:
        return _raw(v["prefix"], "user simulator prompt") + "{{ scenario }}" \
            + _raw(v["suffix"], "user simulator prompt")

    # τ²'s prompt has tool guidelines only for a user offered tools: with tasks of both kinds
    # (banking_knowledge) the template chooses by the `user_tools` the session offers
    kinds: dict[bool, int] = {}
    for t in extract.get("tasks") or []:
        kinds.setdefault(bool(t.get("user_tools")), int(t.get("user_prompt") or 0))
    if len(variants) == 2 and len(kinds) == 2 and kinds[True] != kinds[False]:
        return ("{% if user_tools %}" + text(variants[kinds[True]]) + "{% else %}"
                + text(variants[kinds[False]]) + "{% endif %}")
    return text(variants[0])


def judge_template(extract: dict[str, Any]) -> str:
    """`instructed_user.assertions_judge`: τ²'s NL-assertion judge, its marked messages turned
    into a template over `trajectory` and `assertions_text` (rendered with `part`)."""
    judge = extract.get("nl_judge") or {}
    marks = judge.get("markers") or {}
    messages = judge.get("messages") or []
    parts: dict[str, str] = {}
    for m in messages:
        text = str(m.get("content") or "")
        out, rest = [], text
        for mark, var in ((marks.get("conversation"), "trajectory"),
                          (marks.get("assertions"), "assertions_text")):
            if not mark or mark not in rest:
                continue
            before, rest = rest.split(mark, 1)
            out += [_raw(before, "judge prompt"), "{{ " + var + " }}"]
        out.append(_raw(rest, "judge prompt"))
        parts[str(m.get("role"))] = "".join(out)
    if "user" not in parts or "{{ trajectory }}" not in parts["user"]:
        raise ImportError_("τ² extract", "the NL-assertion judge's prompt does not hold the "
                           "conversation where it was expected",
                           "τ²'s judge changed shape; import without --tau2 or report it")
    return ('{% if part == "system" %}' + parts.get("system", "") + "{% else %}"
            + parts["user"] + "{% endif %}")


def version(extract: dict[str, Any] | None) -> str:
    """The checkout's commit (from its .git, read without git) or its package version."""
    if extract is None or not extract.get("checkout"):
        return "unknown"
    root = Path(str(extract["checkout"]))
    head = root / ".git" / "HEAD"
    try:
        ref = head.read_text(encoding="utf-8").strip()
        if ref.startswith("ref: "):
            name = ref[5:]
            loose = root / ".git" / name
            if loose.is_file():
                return loose.read_text(encoding="utf-8").strip()[:12]
            packed = (root / ".git" / "packed-refs").read_text(encoding="utf-8")
            for line in packed.splitlines():
                if line.endswith(" " + name):
                    return line.split()[0][:12]
        elif re.fullmatch(r"[0-9a-f]{40}", ref):
            return ref[:12]
    except OSError:
        pass
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    hit = re.search(r'^version\s*=\s*"([^"]+)"', text, re.MULTILINE)
    return f"tau2 {hit.group(1)} (no git metadata)" if hit else "unknown"


def differences(extract: dict[str, Any] | None, fixes: list[dict[str, str]]) -> list[str]:
    """`origin.differences`: one sentence for each way the pack is not τ²."""
    out = [f"{d['id']}: {d['what']}" for d in fixes]
    if extract is None:
        out.insert(0, NO_CHECKOUT)
    return out


def _default(extract: dict[str, Any] | None, key: str, fallback: Any) -> Any:
    value = ((extract or {}).get("defaults") or {}).get(key)
    return fallback if value is None else value


def pack_blocks(domain: str, extract: dict[str, Any] | None, version_: str,
                differences_: list[str], if_ended: dict[str, list[str]] | None = None,
                if_vars: dict[str, dict[str, list[str]]] | None = None) -> str:
    """The pack.yaml lines for `metadata`, `origin` (`if_ended`: its differences that show
    only where a session ends so; `if_vars`: those of some values of a pack variable),
    `defaults` and `prompts`."""
    greeting = str(extract["first_agent_message"]) if extract else GREETING_OWN
    judge = _default(extract, "DEFAULT_LLM_NL_ASSERTIONS", JUDGE_MODEL)
    seed = int(_default(extract, "DEFAULT_SEED", TAU2_SEED))
    defaults = {
        "seed": seed, "repeat_seeds": trial_seeds(seed),
        "temperature": float(_default(extract, "DEFAULT_LLM_TEMPERATURE_AGENT", 0.0)),
        "models": {"judge": f"litellm:openai/{judge}" if "/" not in judge
                   else f"litellm:{judge}"},
        "limits": {"max_messages": int(_default(extract, "DEFAULT_MAX_STEPS", MAX_MESSAGES)),
                   "max_tool_errors": int(_default(extract, "DEFAULT_MAX_ERRORS",
                                                   MAX_TOOL_ERRORS)),
                   "max_tool_result_chars": 0, "max_steps_per_turn": 500,
                   "turn_timeout_s": 86400},
        "conversation": {"greeting": greeting, "simulator": "chat", "stop_tokens": "anywhere",
                         "unfinished": "fail",
                         "simulator_temperature": float(_default(
                             extract, "DEFAULT_LLM_TEMPERATURE_USER", 0.0))},
    }
    origin: dict[str, Any] = {"benchmark": "tau2-bench", "version": version_,
                              "differences": differences_}
    if if_ended:
        origin["if_ended"] = if_ended
    if if_vars:
        origin["if_vars"] = if_vars
    lines = [
        f"metadata: {{domain: {domain}}}",
        "origin:                      # what the pack reproduces; reports say whether a run is "
        "comparable",
        *("  " + ln for ln in _flow(origin)),
        "defaults:                    # τ²'s run defaults (tau2 run --max-steps 200 "
        "--max-errors 10, temperature 0)",
        *("  " + ln for ln in _flow(defaults)),
    ]
    if extract is not None:
        lines += ["prompts:                     # τ²'s own texts, read from the checkout",
                  "  instructed_user.user_system: {file: tau2/user_system.j2}",
                  "  instructed_user.assertions_judge: {file: tau2/assertions_judge.j2}"]
    return "\n".join(lines) + "\n"


def _flow(value: dict[str, Any]) -> list[str]:
    """`key: value` lines of a two-level mapping, values as JSON (valid YAML flow)."""
    lines = []
    for k, v in value.items():
        if isinstance(v, dict):
            lines.append(f"{k}:")
            lines += [f"  {k2}: {json.dumps(v2, ensure_ascii=False)}" for k2, v2 in v.items()]
        else:
            lines.append(f"{k}: {json.dumps(v, ensure_ascii=False)}")
    return lines


def session_fields(session: dict[str, Any], raw: dict[str, Any],
                   scenario: str | None, user_tools: list[str] | None = None) -> None:
    """τ²'s rules on one imported session (in place): the scenario text the simulator reads,
    the user's tools it is offered (`user_tools`, when not all), each gold action matched as τ²
    matches it, τ²'s communicate and assertion checks."""
    if scenario is not None:
        session["user"]["text"] = scenario
    if user_tools is not None:
        session["user"]["tools"] = list(user_tools)
    gold = (session.get("gold") or {}).get("actions") or []
    by_id = {str(a.get("action_id")): a for a in
             ((raw.get("evaluation_criteria") or {}).get("actions") or [])}
    for action in gold:
        src = by_id.get(action["id"], {})
        action["match"] = "tau2"
        if src.get("compare_args") is not None:
            action["compare"] = [str(k) for k in src["compare_args"]]
        if src.get("requestor") == "user":
            action["requestor"] = "user"
    score = session.get("score") or {}
    if "communicate" in score.get("reward", []):
        score["communicate_match"] = "tau2"
    if "assertions" in score.get("reward", []):
        score["assertions_judge"] = "tau2"


def scenarios(extract: dict[str, Any] | None) -> dict[str, str]:
    """task id → `str(user_scenario)` as τ²'s simulator prompt holds it."""
    return {str(t["id"]): str(t["scenario"]) for t in (extract or {}).get("tasks") or []}


def task_user_tools(extract: dict[str, Any] | None) -> dict[str, list[str]]:
    """task id → the user tools τ² offers its simulator (`get_user_tools(include=…)`), for the
    tasks offered fewer than all of them."""
    every = [t["name"] for t in (extract or {}).get("user_tools") or []]
    return {str(t["id"]): list(t.get("user_tools") or []) for t in
            (extract or {}).get("tasks") or []
            if every and list(t.get("user_tools") or []) != every}


__all__ = ["GREETING_OWN", "NO_CHECKOUT", "differences", "judge_template", "pack_blocks",
           "scenarios", "session_fields", "task_user_tools", "user_template", "version"]
