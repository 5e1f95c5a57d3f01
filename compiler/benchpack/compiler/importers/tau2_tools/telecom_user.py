"""τ²-bench telecom user tools (the customer's own phone, dual control), written for benchpack
to behave as τ²'s do; copied into every pack `bench import tau2` writes for the telecom
domain, as the environment's `user_toolsets`. Tables: device, surroundings (one row each, key
`id`: τ²'s user database); its `State` also holds the operator's tables (`services:
[telecom]`), and `sync_sides` runs after every call (see telecom_shared.py).

As in τ²: every change of the radio settings re-runs the network search (SIM, preferred mode,
signal where the user is, airplane mode, APN, whether the line is active); the status bar,
speed test and MMS check are computed from the device as τ² computes them, emoji included.
"""

from benchpack_tools import State

# ---- prelude (tau2_tools/prelude.py; `bench import tau2` inlines it here) ----
from benchpack.compiler.importers.tau2_tools.prelude import Tau2

# ---- end of prelude ----
# ---- inline telecom_phone.py ----
from benchpack.compiler.importers.tau2_tools.telecom_phone import (
    APN_DEFAULT,
    MODES,
    Phone,
    _network_search,
    _speed_test,
)

# ---- end of inline ----
# ---- inline telecom_shared.py ----
from benchpack.compiler.importers.tau2_tools.telecom_shared import sync_sides  # noqa: F401

# ---- end of inline ----

FIXES = frozenset()
"""Differences from τ² switched on by `bench import tau2 --fix` (none for this domain)."""
HELPERS = ("sync_sides", "set_user_info", "set_user_location", "turn_airplane_mode_on",
           "turn_airplane_mode_off", "unseat_sim_card", "lock_sim_card", "turn_data_on",
           "turn_data_off", "turn_roaming_on", "turn_roaming_off", "turn_data_saver_mode_on",
           "turn_data_saver_mode_off", "break_apn_settings", "break_apn_mms_setting",
           "set_wifi_calling", "break_vpn", "remove_app_permission", "simulate_network_search",
           "assert_airplane_mode_status", "assert_service_status", "assert_mobile_data_status",
           "assert_mobile_roaming_status", "assert_mobile_data_saver_mode_status",
           "assert_internet_speed", "assert_internet_not_excellent", "assert_can_send_mms",
           "assert_mobile_data_usage_exceeded")
"""Public functions that are not the user's tools: the `after_call`, and τ²'s set-up and
assertion methods that `initial_state.actions` and `score.env_assertions` call."""


def _change(db: State, fn, *args):
    """Run `fn(phone, *args)` on the phone's rows and store them; its return value."""
    phone = Phone(db)
    try:
        return fn(phone, *args)
    finally:  # τ²'s tools change the phone in place: a failing one keeps what it changed
        phone.save()


def _bar(phone):
    return f"Status Bar: {phone.status_bar()}"


# ---- the user's tools ----

def check_status_bar(db: State) -> str:
    """Shows what icons are visible in the phone's status bar: signal, mobile data, Wi-Fi,
    airplane mode and battery."""
    return _bar(Phone(db))


def check_network_status(db: State) -> str:
    """Checks the phone's connection to cellular networks and Wi-Fi."""
    return Phone(db).network_status()


def check_network_mode_preference(db: State) -> str:
    """Shows the current network mode preference."""
    return f"Network Mode Preference: {Phone(db).dev['network_mode_preference']}"


def set_network_mode_preference(db: State, mode: str) -> str:
    """Changes the type of cellular network the phone prefers (5G, 4G, 3G, 2G).

    Args:
        mode: One of 4g_5g_preferred, 4g_only, 3g_only, 2g_only.
    """
    def run(p):
        failed = (f"Failed to set network mode: '{mode}' is not a valid option. Please use "
                  f"one of: {', '.join(MODES)}")
        if isinstance(mode, str) and mode not in MODES:
            return f"{failed}\n{_bar(p)}"
        # τ² converts only text: anything else is stored as it is and searched with
        p.dev["network_mode_preference"] = mode
        _network_search(p)
        if mode is None:
            return f"{failed}\n{_bar(p)}"
        if not isinstance(mode, str):
            raise AttributeError(f"'{type(mode).__name__}' object has no attribute 'value'")
        return f"Preferred Network Mode set to: {mode}\n{_bar(p)}"
    return _change(db, run)


def run_speed_test(db: State) -> str:
    """Measures the current internet download speed and what it is good for."""
    speed, desc = _speed_test(Phone(db))
    if speed is None:
        return f"Speed test failed: {desc or 'Could not determine speed'}."
    advice = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
              "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
              "Fair": "Connection is okay for web browsing and some standard definition "
                      "streaming.",
              "Good": "Connection is good for most activities, including HD streaming.",
              "Excellent": "Connection is very fast."}.get(desc, "")
    return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {advice}"


def toggle_airplane_mode(db: State) -> str:
    """Toggles Airplane Mode ON or OFF (all radios off when ON)."""
    def run(p):
        on = p.toggle_airplane()
        return f"Airplane Mode is now {'ON' if on else 'OFF'}.\n{_bar(p)}"
    return _change(db, run)


def check_sim_status(db: State) -> str:
    """Checks whether the SIM card works: active, missing, or locked with a PIN or PUK."""
    return {"active": "Your SIM card is active and working.",
            "missing": "No SIM card detected in the phone.",
            "locked_pin": "The SIM card is locked with a PIN code.",
            "locked_puk": "The SIM card is locked with a PUK code."}[Phone(db).sim_status()]


def reseat_sim_card(db: State) -> str:
    """Removes and reinserts the SIM card, which can fix recognition problems."""
    def run(p):
        p.dev["sim_card_missing"] = False
        _network_search(p)
        return f"SIM card re-seated successfully.\n{_bar(p)}"
    return _change(db, run)


def toggle_data(db: State) -> str:
    """Toggles mobile data ON or OFF."""
    def run(p):
        on = p.toggle("data_enabled", search=True)
        return f"Mobile Data is now {'ON' if on else 'OFF'}.\n{_bar(p)}"
    return _change(db, run)


def toggle_roaming(db: State) -> str:
    """Toggles Data Roaming ON or OFF (data outside the carrier's coverage)."""
    def run(p):
        on = p.toggle("roaming_enabled", search=True)
        return f"Data Roaming is now {'ON' if on else 'OFF'}.\n{_bar(p)}"
    return _change(db, run)


def check_data_restriction_status(db: State) -> str:
    """Checks whether Data Saver mode is on."""
    if Phone(db).dev["data_saver_mode"]:
        return "Data Saver mode is ON (limits data usage)."
    return "Data Saver mode is OFF."


def toggle_data_saver_mode(db: State) -> str:
    """Toggles Data Saver mode ON or OFF (less data, lower speed)."""
    def run(p):
        on = p.toggle("data_saver_mode")
        return f"Data Saver Mode is now {'ON' if on else 'OFF'}.\n{_bar(p)}"
    return _change(db, run)


def check_apn_settings(db: State) -> str:
    """Checks the APN name and MMSC URL the phone uses for mobile data and MMS."""
    phone = Phone(db)
    phone.apn_check("model_copy")  # τ² copies the settings first (not settings: it fails)
    return (f"Current APN Name: {phone.apn_field('apn_name') or 'Not Set'}\nMMSC URL (for "
            f"picture messages): {phone.apn_field('mmsc_url') or 'Not Set'}\n(These are "
            "technical settings, usually best left unchanged.)")


def set_apn_settings(db: State, apn_settings: dict) -> str:
    """Sets the APN settings for the phone.

    Args:
        apn_settings: The APN settings (apn_name, reset_at_reboot, mms_apn, mmsc_url, mms_proxy,
            mms_port).
    """
    def run(p):
        if not isinstance(apn_settings, dict):  # τ² stores it as it is, then fails to read it
            p.dev["active_apn_settings"] = apn_settings
            p.save()
            p.apn_field("apn_name")
        settings = Phone.apn(apn_settings)
        p.dev["active_apn_settings"] = settings
        _network_search(p)
        return f"APN settings set to: {settings['apn_name']}\n{_bar(p)}"
    return _change(db, run)


def reset_apn_settings(db: State) -> str:
    """Resets the APN settings to the defaults (applied at the next reboot)."""
    def run(p):
        p.apn_set("reset_at_reboot", True)
        _network_search(p)
        return f"APN settings will reset at reboot.\n{_bar(p)}"
    return _change(db, run)


def check_wifi_status(db: State) -> str:
    """Checks whether Wi-Fi is on, the network it is connected to and its signal."""
    dev = Phone(db).dev
    if not dev["wifi_enabled"]:
        return "Wi-Fi is turned OFF."
    if dev["wifi_connected"]:
        return (f"Wi-Fi is ON and connected to '{dev['wifi_ssid']}'. Signal strength: "
                f"{dev['wifi_signal_strength']}.")
    return "Wi-Fi is ON but not connected to any network."


def toggle_wifi(db: State) -> str:
    """Toggles the Wi-Fi radio ON or OFF."""
    def run(p):
        if p.dev["airplane_mode"]:
            return f"Cannot change Wi-Fi settings while Airplane Mode is ON.\n{_bar(p)}"
        on = p.toggle("wifi_enabled")
        if not on:
            p.wifi_off()
        return f"Wi-Fi is now {'ON' if on else 'OFF'}.\n{_bar(p)}"
    return _change(db, run)


def check_wifi_calling_status(db: State) -> str:
    """Checks whether Wi-Fi Calling is on."""
    on = Phone(db).dev["wifi_calling_enabled"]
    return f"Wi-Fi Calling is currently turned {'ON' if on else 'OFF'}."


def toggle_wifi_calling(db: State) -> str:
    """Toggles Wi-Fi Calling ON or OFF (calls over Wi-Fi instead of the cellular network)."""
    def run(p):
        on = p.toggle("wifi_calling_enabled")
        return f"Wi-Fi Calling is now {'ON' if on else 'OFF'}.\n{_bar(p)}"
    return _change(db, run)


def check_vpn_status(db: State) -> str:
    """Checks whether a VPN is on and connected, with its details."""
    dev = Phone(db).dev
    if dev["vpn_connected"]:
        details = dev["vpn_details"]
        if details:
            return f"VPN is ON and connected. Details: {Phone.vpn_repr(details)}"
        return "VPN is ON and connected (no specific details available)."
    if dev["vpn_enabled_setting"]:
        return "VPN is turned ON in settings, but currently not connected."
    return "VPN is turned OFF."


def connect_vpn(db: State) -> str:
    """Connects to the VPN."""
    def run(p):
        if not p.connect_vpn():
            return "VPN already connected."
        return f"VPN connected successfully.\n{_bar(p)}"
    return _change(db, run)


def disconnect_vpn(db: State) -> str:
    """Disconnects any active VPN connection."""
    def run(p):
        done = p.disconnect_vpn()
        text = "VPN disconnected successfully." if done else \
            "No active VPN connection to disconnect."
        return f"{text}\n{_bar(p)}"
    return _change(db, run)


def check_installed_apps(db: State) -> str:
    """The names of the apps installed on the phone."""
    names = ", ".join(Phone(db).dev["app_statuses"])
    return f"The following apps are installed on the phone: {names}"


def check_app_status(db: State, app_name: str) -> str:
    """Checks an app's permissions.

    Args:
        app_name: The app, such as 'messaging'.
    """
    app = Phone(db).dev["app_statuses"].get(app_name)
    if not app:
        return f"App '{app_name}' not found on this phone."
    lines = [f"Status for App: {app_name}"]
    allowed = [name.replace("_", " ").lower() for name, on in app["permissions"].items() if on]
    if not allowed:
        lines.append(" - Permissions: None granted.")
    else:
        lines.append(" - Permissions Granted:")
        lines += [f"   - {perm}" for perm in allowed]
    return "\n".join(lines)


def check_app_permissions(db: State, app_name: str) -> str:
    """Checks which permissions an app has.

    Args:
        app_name: The app, such as 'messaging'.
    """
    app = Phone(db).dev["app_statuses"].get(app_name)
    if not app:
        return f"App '{app_name}' not found on this phone."
    allowed = [name.replace("_", " ").lower() for name, on in app["permissions"].items() if on]
    if not allowed:
        return f"App '{app_name}' currently has no permissions granted."
    return f"App '{app_name}' has permission for: {', '.join(allowed)}."


def grant_app_permission(db: State, app_name: str, permission: str) -> str:
    """Gives an app a permission (such as storage or sms).

    Args:
        app_name: The name of the app to grant the permission to.
        permission: The permission to grant, should be lowercase.
    """
    def run(p):
        ok, message = p.set_permission(app_name, permission, True, grant=True)
        return f"{'Success. ' if ok else 'Error. '}{message}\n{_bar(p)}"
    return _change(db, run)


def can_send_mms(db: State) -> str:
    """Checks whether the messaging app can send MMS messages."""
    if Phone(db).can_send_mms():
        return "Your messaging app can send MMS messages."
    return "Your messaging app cannot send MMS messages."


def reboot_device(db: State) -> str:
    """Restarts the phone (APN settings reset if asked for, network services restarted)."""
    def run(p):
        lines = []
        if p.apn_field("reset_at_reboot"):
            lines.append("Resetting APN settings...")
            p.dev["active_apn_settings"] = dict(APN_DEFAULT)
        lines.append("Restarting network services...")
        p.dev["network_connection_status"] = "searching"
        _network_search(p)
        return "\n".join(lines) + f"\n{_bar(p)}"
    return _change(db, run)


def check_payment_request(db: State) -> str:
    """Checks whether the agent has sent a payment request."""
    request = Phone(db).sur["payment_request"]
    if request is None:
        return "No payment request has been made."
    return (f"You have a payment request for bill {request['bill_id']} of "
            f"{request['amount_due']} USD.")


def make_payment(db: State) -> str:
    """Pays the bill of the agent's payment request."""
    def run(p):
        request = p.sur["payment_request"]
        if request is None:
            return "You do not have a payment request."
        request["paid"] = True
        return (f"Payment of {request['amount_due']} USD has been made for bill "
                f"{request['bill_id']}.")
    return _change(db, run)


# ---- not tools: τ²'s set-up and assertion methods (issue 24) ----
# ---- inline telecom_user_setup.py ----
from benchpack.compiler.importers.tau2_tools.telecom_user_setup import *  # noqa: E402,F403

# ---- end of inline ----

Tau2.toolkit("TelecomUserTools", globals())
