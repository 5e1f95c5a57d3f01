"""The customer's own router (the user's side of dual control: the simulated customer calls
these tools, never the agent). Bound to the `home` service: one table `router` with one row,
`router`. 路由器的状态只有客户自己能看到和操作。

A router stuck on the settings it had before a line fault shows a steady red light until it is
restarted, whatever the exchange does: fixing the line at the desk is not enough, the agent has
to get the customer to restart it.
"""

from __future__ import annotations

from benchpack_tools import State, ToolError

LIGHTS = {"green": "green, steady", "red-steady": "red, steady",
          "red-blinking": "red, blinking", "off": "off"}


def _router(db: State) -> dict:
    return db.get("router", "router")


def check_router_lights(db: State) -> str:
    """What the light on the front of the router shows."""
    # `db` read directly (not through `_router`) so that the compiler sees a read-only tool
    return "The router light is " + LIGHTS[db.get("router", "router")["light"]]


def restart_router(db: State) -> str:
    """Switch the router off with its power button, wait ten seconds, switch it on again."""
    router = _router(db)
    router["stuck"], router["light"] = False, "green"
    db.put("router", router)
    return "The router restarted; its light is " + LIGHTS[router["light"]]


def set_wifi_password(db: State, new_password: str) -> str:
    """On the router's page (http://192.168.1.1), set a new Wi-Fi password and press Save.

    Args:
        new_password: The new Wi-Fi password, at least 8 characters.
    """
    if len(new_password) < 8:
        raise ToolError("The router refuses a Wi-Fi password shorter than 8 characters")
    router = _router(db)
    router["wifi_password"] = new_password
    db.put("router", router)
    return "Saved: the Wi-Fi password is changed"


def stall_router(db: State) -> str:
    """Set-up helper (not offered): the router hangs on its old settings, light steady red."""
    router = _router(db)
    router["stuck"], router["light"] = True, "red-steady"
    db.put("router", router)
    return "stalled"


def assert_router_light(db: State, light: str) -> bool:
    """Environment assertion: the router shows this light."""
    return _router(db)["light"] == light


def assert_wifi_password(db: State, password: str) -> bool:
    """Environment assertion: the router's Wi-Fi password is this one."""
    return _router(db)["wifi_password"] == password
