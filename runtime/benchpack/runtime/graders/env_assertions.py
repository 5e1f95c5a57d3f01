"""The `env_assertions` reward component (issue 24; τ²'s `EnvironmentEvaluator` semantics):
each assertion calls a public function of one of its side's toolsets with the session's final
state and its `args`, and holds when the return value equals `expect` (τ²: `res ==
assert_value`, where a non-boolean return is τ²'s error). The component is 1 when every one
holds, 0 otherwise (τ² multiplies 0/1 rewards), and unknown (None) when one could not be run
(the toolset failed, or returned something that is not a boolean): unknown is never a NO.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..env.errors import ToolError

if TYPE_CHECKING:
    from ..env import EpisodeEnvironment


async def check(env: EpisodeEnvironment, assertions: list[dict[str, Any]],
                allow_python: bool) -> list[dict[str, Any]]:
    """One verdict per assertion: `{function, side, args, expect, got, passed, error}`."""
    out = []
    for a in assertions:
        verdict: dict[str, Any] = {"function": a["function"], "side": a["side"],
                                   "args": a.get("args") or {}, "expect": a.get("expect", True),
                                   "got": None, "passed": None, "error": None}
        try:
            worker = env.pytool_worker(a["toolset"], allow_python)
            got = await worker.call_function(a["function"], a.get("args") or {}, a.get("state"))
        except ToolError as exc:
            verdict["error"] = exc.message
            out.append(verdict)
            continue
        verdict["got"] = got
        if not isinstance(got, bool):
            verdict["error"] = (f"`{a['function']}` returned {type(got).__name__}, not a "
                                "boolean")
        else:
            verdict["passed"] = got == verdict["expect"]
            if not verdict["passed"] and a.get("message"):
                verdict["error"] = None
                verdict["detail"] = a["message"]
        out.append(verdict)
    return out


def component(verdicts: list[dict[str, Any]]) -> float | None:
    if any(v["passed"] is None for v in verdicts):
        return None
    return float(all(v["passed"] for v in verdicts))
