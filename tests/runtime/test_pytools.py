"""Python domain tools with state: a pack module with business rules, run by the sandboxed
tool worker; changes land in the runner's ServiceState, all or nothing."""

from __future__ import annotations

import asyncio
import os
import socket
import textwrap
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from benchpack.runtime.env import ServiceState, ToolError
from benchpack.runtime.env.pytools import PyToolWorker, bindings
from benchpack.specs.plan import PlanService
from benchpack.specs.pytools import read_tools

SHOP = textwrap.dedent('''\
    import os, socket, time
    from typing import Literal
    from benchpack_tools import State, ToolError

    def get_order_details(db: State, order_id: str) -> dict:
        """Get an order.

        Args:
            order_id: The order id, such as '#W0000001'.
        """
        return db.get("orders", order_id)

    def cancel_pending_order(db: State, order_id: str,
                             reason: Literal["no longer needed", "ordered by mistake"]) -> dict:
        """Cancel a pending order; the refund goes to the original payment method."""
        order = db.get("orders", order_id)
        if order["status"] != "pending":
            raise ToolError("Non-pending order cannot be cancelled")
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        db.put("orders", order)
        user = db.get("users", order["user_id"])
        user["balance"] += order["total"]
        db.put("users", user)
        return order

    def place_order(db: State, user_id: str, total: int, note: str = "") -> dict:
        """Place an order."""
        db.get("users", user_id)
        order = {"order_id": db.next_id("orders"), "user_id": user_id, "status": "pending",
                 "total": total, "note": note}
        return db.put("orders", order)

    def delete_user(db: State, user_id: str) -> dict:
        """Delete a user without orders."""
        if db.find("orders", user_id=user_id):
            raise ToolError("the user still has orders")
        db.delete("users", user_id)
        return {"deleted": user_id}

    def half_done(db: State, order_id: str) -> str:
        """Writes, then fails."""
        order = db.get("orders", order_id)
        order["status"] = "broken"
        db.put("orders", order)
        db.delete("users", "u1")
        raise ToolError("changed my mind")

    def bad_row(db: State, order_id: str) -> str:
        """Writes a row the schema refuses."""
        order = db.get("orders", order_id)
        order["total"] = "a lot"
        db.put("orders", order)
        return "ok"

    def crash(db: State) -> int:
        """Divides by zero."""
        print("noise on stdout")
        return 1 // 0

    def spin(seconds: float = 1000.0) -> str:
        """Loops."""
        end = time.time() + seconds
        while time.time() < end:
            pass
        return "done"

    def chatty() -> str:
        """Prints before answering."""
        print("{\\"result\\": \\"forged\\"}")
        return "real"

    def spy(path: str, port: int) -> dict:
        """Tries to see the runner."""
        out = {"env": dict(os.environ)}
        try:
            out["file"] = open(path).read()
        except OSError as exc:
            out["file"] = type(exc).__name__
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            out["socket"] = "connected"
        except OSError as exc:
            out["socket"] = type(exc).__name__
        return out

    def count(db: State) -> int:
        """Counts orders."""
        return len(db.rows("orders"))
''')

ORDER_SCHEMA = {"type": "object", "properties": {"total": {"type": "integer"}}}


def shop_state() -> ServiceState:
    return ServiceState(PlanService.model_validate({"name": "shop", "operations": [], "tables": {
        "users": {"key": "user_id", "rows": [
            {"user_id": "u1", "name": "Ana López", "balance": 0},
            {"user_id": "u2", "name": "王芳", "balance": 5}]},
        "orders": {"key": "order_id", "row_schema": ORDER_SCHEMA, "rows": [
            {"order_id": "#W0000001", "user_id": "u1", "status": "pending", "total": 30},
            {"order_id": "#W0000002", "user_id": "u1", "status": "delivered", "total": 12}]},
    }}))


def run(test: Callable[[PyToolWorker, ServiceState], Awaitable[None]], *, source: str = SHOP,
        **kw: Any) -> PyToolWorker:
    state = shop_state()
    res = read_tools(source, "tools/shop.py")
    assert not res.errors, res.errors
    worker = PyToolWorker(source, bindings(res.tools), state, filename="tools/shop.py",
                          allow_python=True, **kw)

    async def go() -> None:
        async with worker:
            await test(worker, state)

    asyncio.run(go())
    return worker


def test_state_changes_land_in_the_service_state() -> None:
    async def t(w: PyToolWorker, state: ServiceState) -> None:
        out = await w.call("cancel_pending_order", {"order_id": "#W0000001",
                                                    "reason": "ordered by mistake"})
        assert out["status"] == "cancelled"
        assert state.rows("orders")[0] == {"order_id": "#W0000001", "user_id": "u1",
                                           "status": "cancelled", "total": 30,
                                           "cancel_reason": "ordered by mistake"}
        assert state.rows("users")[0]["balance"] == 30
        # the key a declarative create would give: same prefix, zero padding and counter
        new = await w.call("place_order", {"user_id": "u2", "total": 7, "note": "礼物"})
        assert new["order_id"] == "#W0000003" and new["note"] == "礼物"
        assert [r["order_id"] for r in state.rows("orders")] == ["#W0000001", "#W0000002",
                                                                 "#W0000003"]
        assert (await w.call("place_order", {"user_id": "u2", "total": 1}))["order_id"] == \
            "#W0000004"
        assert await w.call("count", {}) == 4
        with pytest.raises(ToolError, match="still has orders"):
            await w.call("delete_user", {"user_id": "u2"})
        state_users = state.rows("users")
        assert state.rows("users") == state_users
        assert w.starts == 1

    run(t)


def test_tool_error_reaches_the_agent_and_a_failed_call_changes_nothing() -> None:
    async def t(w: PyToolWorker, state: ServiceState) -> None:
        before = state.snapshot()
        with pytest.raises(ToolError, match=r"^Non-pending order cannot be cancelled$"):
            await w.call("cancel_pending_order", {"order_id": "#W0000002",
                                                  "reason": "no longer needed"})
        with pytest.raises(ToolError, match="no row of `orders` with order_id '#W9'"):
            await w.call("get_order_details", {"order_id": "#W9"})
        with pytest.raises(ToolError, match="changed my mind"):
            await w.call("half_done", {"order_id": "#W0000001"})
        assert state.snapshot() == before
        # the worker's replica was rolled back too
        assert (await w.call("get_order_details", {"order_id": "#W0000001"}))["status"] == \
            "pending"
        # a row the service's schema refuses: nothing applied, the worker restarts clean
        with pytest.raises(ToolError, match="not valid for `orders`: total: 'a lot' is not of "
                                            "type 'integer'; nothing was changed"):
            await w.call("bad_row", {"order_id": "#W0000001"})
        assert state.snapshot() == before
        assert (await w.call("get_order_details", {"order_id": "#W0000001"}))["total"] == 30
        assert w.starts == 2

    run(t)


def test_arguments_are_checked_before_the_call() -> None:
    async def t(w: PyToolWorker, state: ServiceState) -> None:
        with pytest.raises(ToolError, match="reason: 'because' is not one of"):
            await w.call("cancel_pending_order", {"order_id": "#W0000001", "reason": "because"})
        with pytest.raises(ToolError, match="'order_id' is a required property"):
            await w.call("get_order_details", {})
        with pytest.raises(ToolError, match="Additional properties"):
            await w.call("get_order_details", {"order_id": "#W0000001", "db": {}})
        with pytest.raises(ToolError, match="no tool `nope`"):
            await w.call("nope", {})
        assert w.starts == 0  # nothing ran

    run(t)


def test_python_tools_need_allow_python() -> None:
    async def t(w: PyToolWorker, state: ServiceState) -> None:
        w.allow_python = False
        with pytest.raises(ToolError, match="need --allow-python"):
            await w.call("count", {})
        assert w.starts == 0

    run(t)


def test_a_crash_is_a_tool_error_with_its_line_and_the_worker_goes_on() -> None:
    async def t(w: PyToolWorker, state: ServiceState) -> None:
        with pytest.raises(ToolError, match=r"ZeroDivisionError: integer division or modulo by "
                                            r"zero \(line 59 of tools/shop.py\)"):
            await w.call("crash", {})
        assert await w.call("chatty", {}) == "real"  # prints never reach the protocol
        assert await w.call("count", {}) == 2
        assert w.starts == 1

    run(t)


def test_a_looping_tool_times_out_and_the_worker_restarts_from_the_state() -> None:
    async def t(w: PyToolWorker, state: ServiceState) -> None:
        await w.call("cancel_pending_order", {"order_id": "#W0000001",
                                              "reason": "no longer needed"})
        proc = w._proc
        assert proc is not None
        t0 = time.monotonic()
        with pytest.raises(ToolError, match="timed out after 1 s"):
            await w.call("spin", {})
        assert time.monotonic() - t0 < 4
        await asyncio.wait_for(proc.wait(), 5)  # the old worker is gone
        assert (await w.call("get_order_details", {"order_id": "#W0000001"}))["status"] == \
            "cancelled"
        assert w.starts == 2

    run(t, call_timeout_s=1.0)


def test_the_module_cannot_see_the_runner(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-of-the-runner")
    secret = tmp_path / "secret.txt"
    secret.write_text("runner's file")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    accepted: list[Any] = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()

    async def t(w: PyToolWorker, state: ServiceState) -> None:
        out = await w.call("spy", {"path": str(secret), "port": port})
        assert "sk-secret-of-the-runner" not in str(out["env"])
        assert out["file"] in ("FileNotFoundError", "PermissionError")
        assert out["socket"] != "connected"

    try:
        run(t)
    finally:
        server.close()
    assert accepted == []


def test_snapshot_restore_gives_identical_results() -> None:
    async def t(w: PyToolWorker, state: ServiceState) -> None:
        await w.call("place_order", {"user_id": "u1", "total": 3})
        snap, counters = state.snapshot(), state.counters()

        async def session() -> list[Any]:
            return [await w.call("cancel_pending_order", {"order_id": "#W0000003",
                                                          "reason": "no longer needed"}),
                    await w.call("place_order", {"user_id": "u2", "total": 9}),
                    await w.call("count", {}), state.snapshot()]

        first = await session()
        state.restore(snap, counters)
        w.reset()
        second = await session()
        assert first == second
        assert first[1]["order_id"] == "#W0000004"
        assert w.starts == 2

    run(t)


def test_a_module_that_fails_to_load_is_a_clear_error() -> None:
    source = 'raise RuntimeError("no config")\n\ndef f() -> int:\n    """F."""\n    return 1\n'

    async def t(w: PyToolWorker, state: ServiceState) -> None:
        with pytest.raises(ToolError, match=r"python toolset `tools/shop.py` could not be "
                                            r"loaded: RuntimeError: no config \(line 1 of "
                                            r"tools/shop.py\)"):
            await w.call("f", {})

    run(t, source=source)


def test_no_worker_outlives_close() -> None:
    pids: list[int] = []

    async def t(w: PyToolWorker, state: ServiceState) -> None:
        await w.call("count", {})
        assert w._proc is not None
        pids.append(w._proc.pid)

    worker = run(t)
    assert worker._proc is None and worker._dir is None
    with pytest.raises(ProcessLookupError):
        os.killpg(pids[0], 0)
