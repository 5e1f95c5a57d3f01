"""Toolset options at run time (issue 23, WP-T): `check_arguments: false` lets the function
see the arguments as sent, `atomic: false` keeps what a raising call changed before it raised,
`plain_errors: true` shows `str(exc)` alone; the defaults behave as before. Through the worker
(sandboxed) and through a compiled pack's ToolBox, i.e. the text an agent would read."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.env import ServiceState, ToolError
from benchpack.runtime.env.environment import EpisodeEnvironment
from benchpack.runtime.env.pytools import PyToolWorker, bindings
from benchpack.runtime.env.toolbox import ToolBox, render_result
from benchpack.runtime.planfile import load_plan
from benchpack.runtime.sandbox import find_bwrap
from benchpack.specs.plan import PlanService
from benchpack.specs.pytools import read_tools

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap is not available")

SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "toolset_shop"

SOURCE = textwrap.dedent('''\
    from benchpack_tools import State, ToolError

    def pay(db: State, user_id: str, amounts: list[int]) -> str:
        """Adds each amount to the balance, writing after each one (τ² style, in place).

        Args:
            user_id: The user.
            amounts: Amounts to add.
        """
        for amount in amounts:
            user = db.get("users", user_id)
            user["balance"] = user["balance"] + amount  # a str amount raises TypeError here
            db.put("users", user)
        return "paid"

    def lookup(db: State, key: str) -> str:
        """A KeyError with a bare message.

        Args:
            key: Anything.
        """
        return {"a": "b"}[key]

    def refuse(db: State) -> str:
        """A ToolError without text."""
        raise ToolError()
''')


def _state() -> ServiceState:
    return ServiceState(PlanService.model_validate({"name": "s", "operations": [], "tables": {
        "users": {"key": "user_id", "rows": [{"user_id": "u1", "balance": 0}]}}}))


def _calls(calls: list[tuple[str, dict[str, Any]]], **options: Any
           ) -> tuple[list[Any], list[dict[str, Any]]]:
    state = _state()
    res = read_tools(SOURCE, "tools/t.py")
    assert not res.errors, res.errors
    worker = PyToolWorker(SOURCE, bindings(res.tools), state, filename="tools/t.py",
                          allow_python=True, **options)

    async def go() -> list[Any]:
        out: list[Any] = []
        async with worker:
            for name, args in calls:
                try:
                    out.append(await worker.call(name, args))
                except ToolError as exc:
                    out.append(("error", exc.message))
        return out

    return asyncio.run(go()), state.rows("users")


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("pay", {"user_id": "u1", "amounts": [5, "x", 7]}),
    ("pay", {"user_id": "u1", "amounts": [1]}),
    ("lookup", {"key": "zz"}),
    ("refuse", {}),
]


def test_defaults_check_arguments_roll_back_and_name_the_exception() -> None:
    out, users = _calls(CALLS)
    assert out[0][0] == "error" and out[0][1].startswith("invalid arguments for `pay`")
    assert out[1] == "paid"
    assert out[2] == ("error", "KeyError: 'zz' (line 22 of tools/t.py)")
    assert out[3] == ("error", "ToolError")
    assert users == [{"user_id": "u1", "balance": 1}]


def test_unchecked_arguments_reach_the_function_and_an_atomic_call_changes_nothing() -> None:
    out, users = _calls(CALLS, check_arguments=False)
    assert out[0] == ("error", "TypeError: unsupported operand type(s) for +: 'int' and 'str' "
                               "(line 12 of tools/t.py)")
    assert users == [{"user_id": "u1", "balance": 1}]  # the 5 added before was rolled back


def test_a_non_atomic_call_keeps_its_changes_and_plain_errors_are_str_exc() -> None:
    out, users = _calls(CALLS, check_arguments=False, atomic=False, plain_errors=True)
    assert out == [("error", "unsupported operand type(s) for +: 'int' and 'str'"), "paid",
                   ("error", "'zz'"), ("error", "")]
    assert users == [{"user_id": "u1", "balance": 6}]  # 5 stayed, then 1
    # the worker's replica agrees with the runner's state (no restart, no drift)
    out2, users2 = _calls([*CALLS, ("pay", {"user_id": "u1", "amounts": [100]})],
                          check_arguments=False, atomic=False)
    assert out2[-1] == "paid" and users2 == [{"user_id": "u1", "balance": 106}]


def test_options_of_a_compiled_pack_reach_the_toolbox(tmp_path: Path) -> None:
    """What the agent reads (`render_result`) through the real path: plan → environment →
    ToolBox → worker."""
    pack = tmp_path / "pack"
    shutil.copytree(SHOP, pack)
    yaml_path = pack / "pack.yaml"
    yaml_path.write_text(yaml_path.read_text().replace(
        "    service: shop\n", "    service: shop\n    check_arguments: false\n"
        "    atomic: false\n    plain_errors: true\n", 1))
    assert compile_pack(pack, tmp_path / "plan", use_cache=False).ok
    plan = load_plan(tmp_path / "plan" / "plan.json")
    session = next(iter(plan.sessions.values()))

    async def go() -> list[tuple[str, bool]]:
        env = EpisodeEnvironment.create(plan, session.environment, tmp_path / "ws")
        box = ToolBox(plan, session, env, allow_python=True)
        try:
            out = []
            for args in ({"order_id": 5, "reason": "x"}, {"order_id": "#W1", "reason": ["x"]},
                         {"order_id": "#W1"}):
                rec = await box.call("cancel_pending_order", args)
                out.append((render_result(rec), rec.error is None))
            rows = env.services["shop"].rows("orders")
            out.append((json.dumps([r["status"] for r in rows]), True))
            return out
        finally:
            await env.aclose()

    got = asyncio.run(go())
    assert got[0] == ("Error: no row of `orders` with order_id 5", False)
    assert got[1][1] and '"reason": ["x"]' in got[1][0]  # no schema check: it ran
    assert got[2] == ("Error: cancel_pending_order() missing 1 required positional argument: "
                      "'reason'", False)
    assert got[3] == ('["cancelled", "delivered"]', True)
