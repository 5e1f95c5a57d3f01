"""τ²'s telecom user-side set-up and assertion methods (not the user's tools: the task's
`initial_state.actions` and `score.env_assertions` call them by name). `bench import tau2`
inlines this file into `tools/telecom_user.py` in place of its `# ---- inline
telecom_user_setup.py` block.

Written for benchpack from τ²'s documented behaviour; none of τ²'s code is copied here. One
difference: τ²'s `break_vpn` degrades the VPN details object every environment of its process
shares (so a later `connect_vpn` anywhere in that process connects to a poor server); ours
degrades this phone's own copy.
"""

from benchpack_tools import State

# ---- inline telecom_phone.py ----
from benchpack.compiler.importers.tau2_tools.telecom_phone import (
    Phone,
    _network_search,
    _speed_test,
)

# ---- end of inline ----


def _run(db: State, fn):
    phone = Phone(db)
    try:
        return fn(phone)
    finally:
        phone.save()


def set_user_info(db: State, name: str, phone_number: str) -> None:
    """Set-up: the user's name and phone number (the sync then finds their line)."""
    def run(p):
        p.sur["name"] = name
        p.sur["phone_number"] = phone_number
    return _run(db, run)


def set_user_location(db: State, abroad: bool) -> None:
    """Set-up: whether the user is abroad."""
    def run(p):
        p.sur["is_abroad"] = abroad
    return _run(db, run)


def _turn(field, on, search):
    def run(p):
        if p.toggle(field, search) != on:
            p.toggle(field, search)
    return run


def turn_airplane_mode_on(db: State) -> str:
    """Set-up: airplane mode on."""
    def run(p):
        if not p.toggle_airplane():
            p.toggle_airplane()
        return "Airplane Mode is now ON."
    return _run(db, run)


def turn_airplane_mode_off(db: State) -> str:
    """Set-up: airplane mode off."""
    def run(p):
        if p.toggle_airplane():
            p.toggle_airplane()
        return "Airplane Mode is now OFF."
    return _run(db, run)


def unseat_sim_card(db: State) -> str:
    """Set-up: the SIM card taken out (`reseat_sim_card` fixes it)."""
    def run(p):
        p.dev["sim_card_missing"] = True
        _network_search(p)
        return "SIM card un-seated successfully."
    return _run(db, run)


def lock_sim_card(db: State, mode: str) -> str:
    """Set-up: the SIM card locked with its PIN or PUK (no tool fixes it)."""
    def run(p):
        if mode in ("pin", "puk"):
            p.dev["sim_card_status"] = f"locked_{mode}"
        _network_search(p)
        return f"SIM card locked successfully in {mode} mode."
    return _run(db, run)


def turn_data_on(db: State) -> str:
    """Set-up: mobile data on (no network search, as in τ²)."""
    def run(p):
        p.dev["data_enabled"] = True
        return "Data connection restored."
    return _run(db, run)


def turn_data_off(db: State) -> str:
    """Set-up: mobile data off."""
    def run(p):
        _turn("data_enabled", False, True)(p)
        return "Data connection broken."
    return _run(db, run)


def turn_roaming_on(db: State) -> str:
    """Set-up: data roaming on."""
    def run(p):
        _turn("roaming_enabled", True, True)(p)
        return "Data Roaming is now ON."
    return _run(db, run)


def turn_roaming_off(db: State) -> str:
    """Set-up: data roaming off."""
    def run(p):
        _turn("roaming_enabled", False, True)(p)
        return "Data Roaming is now OFF."
    return _run(db, run)


def turn_data_saver_mode_on(db: State) -> str:
    """Set-up: data saver on."""
    def run(p):
        _turn("data_saver_mode", True, False)(p)
        return "Data Saver Mode is now ON."
    return _run(db, run)


def turn_data_saver_mode_off(db: State) -> str:
    """Set-up: data saver off."""
    def run(p):
        _turn("data_saver_mode", False, False)(p)
        return "Data Saver Mode is now OFF."
    return _run(db, run)


def break_apn_settings(db: State) -> str:
    """Set-up: a broken APN (no service; `reset_apn_settings` and a reboot fix it)."""
    def run(p):
        p.apn_set("apn_name", "broken")
        _network_search(p)
        return "APN settings broken. Please call reset_apn_settings() to fix."
    return _run(db, run)


def break_apn_mms_setting(db: State) -> str:
    """Set-up: no MMSC URL (no MMS; `reset_apn_settings` and a reboot fix it)."""
    def run(p):
        p.apn_set("mmsc_url", None)
        return "APN MMS setting broken. Please call reset_apn_settings() to fix."
    return _run(db, run)


def set_wifi_calling(db: State, enabled: bool, mms_over_wifi: bool | None = None) -> str:
    """Set-up: Wi-Fi calling, and MMS over Wi-Fi when given."""
    def run(p):
        if p.dev["wifi_calling_enabled"] != enabled:
            p.toggle("wifi_calling_enabled")
        msg = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
        if mms_over_wifi is not None:
            p.dev["wifi_calling_mms_over_wifi"] = mms_over_wifi
            msg += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
        return msg
    return _run(db, run)


def break_vpn(db: State) -> str:
    """Set-up: a VPN connected to a poor server (slow data; disconnecting fixes it)."""
    def run(p):
        p.connect_vpn()
        p.dev["vpn_details"]["server_performance"] = "poor"
        return "VPN connection broken."
    return _run(db, run)


def remove_app_permission(db: State, app_name: str, permission: str) -> list:
    """Set-up: an app loses a permission."""
    return _run(db, lambda p: list(p.set_permission(app_name, permission, False)))


def simulate_network_search(db: State) -> None:
    """Set-up: the phone searches for a network again."""
    return _run(db, _network_search)


def assert_airplane_mode_status(db: State, expected_status: bool) -> bool:
    """Environment assertion: airplane mode is on or off."""
    return Phone(db).dev["airplane_mode"] == expected_status


def assert_service_status(db: State, expected_status: str) -> bool:
    """Environment assertion: the cellular connection status (an unknown status raises)."""
    if expected_status not in ("connected", "searching", "no_service", "emergency_only"):
        raise ValueError(f"'{expected_status}' is not a valid NetworkStatus")
    return Phone(db).dev["network_connection_status"] == expected_status


def assert_mobile_data_status(db: State, expected_status: bool) -> bool:
    """Environment assertion: mobile data works (or not)."""
    return Phone(db).data_works() == expected_status


def assert_mobile_roaming_status(db: State, expected_status: bool) -> bool:
    """Environment assertion: data roaming is on or off."""
    return Phone(db).dev["roaming_enabled"] == expected_status


def assert_mobile_data_saver_mode_status(db: State, expected_status: bool) -> bool:
    """Environment assertion: data saver is on or off."""
    return Phone(db).dev["data_saver_mode"] == expected_status


def assert_internet_speed(db: State, expected_speed: float,
                          expected_desc: str | None = None) -> bool:
    """Environment assertion: the speed test reaches this speed (and description)."""
    speed, desc = _speed_test(Phone(db))
    speed = speed or 0.0
    if expected_desc is None:
        return speed >= expected_speed
    return speed >= expected_speed and desc.lower() == expected_desc.lower()


def assert_internet_not_excellent(db: State) -> bool:
    """Environment assertion: the speed test is not excellent."""
    return _speed_test(Phone(db))[1].lower() != "excellent"


def assert_can_send_mms(db: State, expected_status: bool) -> bool:
    """Environment assertion: the messaging app can send MMS (or not)."""
    return Phone(db).can_send_mms() == expected_status


def assert_mobile_data_usage_exceeded(db: State, expected_status: bool) -> bool:
    """Environment assertion: the user is over their data allowance (or not)."""
    return Phone(db).sur["mobile_data_usage_exceeded"] == expected_status
