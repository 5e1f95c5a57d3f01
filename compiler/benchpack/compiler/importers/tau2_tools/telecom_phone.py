"""The customer's phone of the telecom user tools: its two rows and how τ²'s mock phone
behaves (network search, status bar, speed test, MMS check). `bench import tau2` inlines this
file into `tools/telecom_user.py` in place of its `# ---- inline telecom_phone.py` block.

Written for benchpack from τ²'s documented behaviour; none of τ²'s code is copied here. Values
are stored as τ²'s models dump them (enums as their values).
"""

from benchpack_tools import State

# ---- inline prelude.py ----
from benchpack.compiler.importers.tau2_tools.prelude import PYDANTIC_DOCS, Tau2

# ---- end of inline ----

MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")
"""The network mode preferences, in τ²'s order."""
APN_DEFAULT = {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
               "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None,
               "mms_port": None}
"""τ²'s default APN settings, in its field order."""
VPN_DEFAULT = {"server_address": "192.168.1.1", "protocol": "OpenVPN",
               "server_performance": "excellent"}
_SIGNAL_BARS = {"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair",
                "good": "📶³ Good", "excellent": "📶⁴ Excellent"}
_NO_SERVICE = {"network_connection_status": "no_service", "network_technology_connected": "none",
               "network_signal_strength": "none"}
_PERFORMANCE = {"unknown": "UNKNOWN", "poor": "POOR", "fair": "FAIR", "good": "GOOD",
                "excellent": "EXCELLENT"}


class Phone:
    """The phone's `device` and `surroundings` rows, changed in place and `save`d."""

    def __init__(self, db: State):
        self.db = db
        self.dev = db.get("device", "device")
        self.sur = db.get("surroundings", "surroundings")

    def save(self):
        self.db.put("device", self.dev)
        self.db.put("surroundings", self.sur)

    def sim_status(self):
        return "missing" if self.dev["sim_card_missing"] else self.dev["sim_card_status"]

    def toggle(self, field, search=False):
        self.dev[field] = not self.dev[field]
        if search:
            _network_search(self)
        return self.dev[field]

    def wifi_off(self):
        self.dev.update(wifi_connected=False, wifi_ssid=None, wifi_signal_strength="none")

    def toggle_airplane(self):
        was_on = self.dev["airplane_mode"]
        self.dev["airplane_mode"] = not was_on
        if was_on:
            self.dev["network_connection_status"] = "searching"
            if self.dev["wifi_enabled"]:
                self.wifi_off()
        else:
            self.wifi_off()
            if self.dev["vpn_connected"]:
                self.disconnect_vpn()
        _network_search(self)
        return self.dev["airplane_mode"]

    def connect_vpn(self):
        if self.dev["vpn_connected"]:
            return False
        self.dev["vpn_connected"] = True
        self.dev["vpn_details"] = dict(VPN_DEFAULT)
        return True

    def disconnect_vpn(self):
        if not self.dev["vpn_connected"]:
            return False
        self.dev["vpn_connected"] = False
        self.dev["vpn_details"] = None
        return True

    def set_permission(self, app_name, permission, value, grant=False):
        """(ok, message) as τ²'s grant (`grant`) and remove words them."""
        app = self.dev["app_statuses"].get(app_name)
        permission = permission.lower()
        verb = "grant" if grant else "remove"
        if not app:
            return False, f"App '{app_name}' not found. Cannot {verb} permission."
        if permission not in app["permissions"]:
            if grant:
                return False, (f"Permission '{permission}' not tracked for app '{app_name}', "
                               f"available permissions: {list(app['permissions'])}")
            return False, f"Permission '{permission}' not tracked for app '{app_name}'."
        app["permissions"][permission] = value
        done = "granted to" if grant else "removed from"
        return True, f"Permission '{permission}' {done} app '{app_name}'."

    def apn_check(self, name):
        """τ²'s AttributeError for `name` when the APN settings are not settings (a
        `set_apn_settings` given something else than an object stores it as it is)."""
        apn = self.dev["active_apn_settings"]
        if not isinstance(apn, dict):
            raise AttributeError(f"'{type(apn).__name__}' object has no attribute '{name}'")

    def apn_field(self, name):
        self.apn_check(name)
        return self.dev["active_apn_settings"][name]

    def apn_set(self, name, value):
        self.apn_field(name)
        self.dev["active_apn_settings"][name] = value

    @staticmethod
    def apn(settings):
        """τ²'s APNSettings(**settings): defaults for what it leaves out, its model's lax
        conversions, a ValueError worded as pydantic's ValidationError otherwise."""
        out, errors = dict(APN_DEFAULT), []
        for name, value in settings.items():
            kind = _APN_KINDS.get(name)
            if kind is None:
                errors.append((name, value, "extra_forbidden", "Extra inputs are not permitted"))
                continue
            ok, got, why = _lax(kind, value)
            if ok:
                out[name] = got
            else:
                errors.append((name, value, *why))
        order = list(_APN_KINDS)
        errors.sort(key=lambda e: order.index(e[0]) if e[0] in order else len(order))
        if errors:
            n = len(errors)
            lines = [f"{n} validation error{'s' if n > 1 else ''} for APNSettings"]
            for name, value, kind, msg in errors:
                lines += [name, f"  {msg} [type={kind}, input_value={Tau2.short_repr(value)}, "
                                f"input_type={type(value).__name__}]",
                          f"    For further information visit https://errors.pydantic.dev/"
                          f"{PYDANTIC_DOCS}/v/{kind}"]
            raise ValueError("\n".join(lines))
        return out

    @staticmethod
    def vpn_repr(details):
        """The details as τ² prints its dumped model (a dict whose enum shows as one)."""
        perf = details["server_performance"]
        shown = {**details, "server_performance": _Enum(f"<PerformanceLevel."
                                                        f"{_PERFORMANCE[perf]}: {perf!r}>")}
        return repr(shown)

    def status_bar(self):
        dev = self.dev
        items = []
        if dev["airplane_mode"]:
            items.append("✈️ Airplane Mode")
        else:
            items.append(_SIGNAL_BARS.get(dev["network_signal_strength"], "📵 No Signal"))
            tech = dev["network_technology_connected"]
            if tech != "none":
                items.append(tech)
            if dev["data_enabled"] and tech != "none":
                items.append("📱 Data Enabled")
                if dev["data_saver_mode"]:
                    items.append("🔽 Data Saver")
            else:
                items.append("📵 Data Disabled")
        if dev["wifi_enabled"] and dev["wifi_connected"]:
            items.append(f"📡 Connected to {dev['wifi_ssid']}" if dev["wifi_ssid"]
                         else "📡 Enabled")
        if dev["vpn_connected"]:
            items.append("🔒 VPN Connected")
        items.append(f"🔋 {dev['battery_level']}%")
        return " | ".join(items)

    def network_status(self):
        dev = self.dev
        lines = [f"Airplane Mode: {'ON' if dev['airplane_mode'] else 'OFF'}",
                 f"SIM Card Status: {self.sim_status()}",
                 f"Cellular Connection: {dev['network_connection_status']}",
                 f"Cellular Signal: {dev['network_signal_strength']}",
                 f"Cellular Network Type: {dev['network_technology_connected']}",
                 f"Mobile Data Enabled: {'Yes' if dev['data_enabled'] else 'No'}",
                 f"Data Roaming Enabled: {'Yes' if dev['roaming_enabled'] else 'No'}",
                 f"Wi-Fi Radio: {'ON' if dev['wifi_enabled'] else 'OFF'}",
                 f"Wi-Fi Connected: {'Yes' if dev['wifi_connected'] else 'No'}"]
        if dev["wifi_connected"]:
            lines.append(f"Connected Wi-Fi Network: {dev['wifi_ssid']}")
        return "\n".join(lines)

    def data_works(self):
        dev, sur = self.dev, self.sur
        if dev["airplane_mode"] or dev["network_signal_strength"] == "none":
            return False
        if dev["network_connection_status"] == "no_service":
            return False
        if sur["is_abroad"] and (not dev["roaming_enabled"] or not sur["roaming_allowed"]):
            return False
        return bool(dev["data_enabled"]) and not sur["mobile_data_usage_exceeded"]

    def can_send_mms(self):
        dev = self.dev
        if not self.data_works() or dev["network_technology_connected"] == "2G":
            return False
        if dev["wifi_calling_enabled"] and dev["wifi_calling_mms_over_wifi"]:
            return False
        if self.apn_field("mmsc_url") is None:
            return False
        app = dev["app_statuses"].get("messaging")
        if app is None:
            return False
        return app["permissions"]["storage"] and app["permissions"]["sms"]


_APN_KINDS = {"apn_name": "apn", "reset_at_reboot": "bool", "mms_apn": "str?",
              "mmsc_url": "str?", "mms_proxy": "str?", "mms_port": "int?"}
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}


def _lax(kind, v):
    """(ok, value, (error type, message)) as pydantic's lax mode converts a JSON value."""
    if kind.endswith("?") and v is None:
        return True, None, None
    if kind == "apn":
        if v in ("internet", "broken") and isinstance(v, str):
            return True, v, None
        return False, None, ("enum", "Input should be 'internet' or 'broken'")
    if kind == "bool":
        if isinstance(v, bool):
            return True, v, None
        if isinstance(v, int | float) and v in (0, 1):
            return True, bool(v), None
        if isinstance(v, str) and v.lower() in _TRUE | _FALSE:
            return True, v.lower() in _TRUE, None
        if isinstance(v, int | float | str):
            return False, None, ("bool_parsing", "Input should be a valid boolean, unable to "
                                                 "interpret input")
        return False, None, ("bool_type", "Input should be a valid boolean")
    if kind == "str?":
        if isinstance(v, str):
            return True, v, None
        return False, None, ("string_type", "Input should be a valid string")
    if isinstance(v, bool):
        return True, int(v), None
    if isinstance(v, int):
        return True, v, None
    if isinstance(v, float):
        if v.is_integer():
            return True, int(v), None
        return False, None, ("int_from_float", "Input should be a valid integer, got a number "
                                               "with a fractional part")
    if isinstance(v, str):
        try:
            return True, int(v.strip()), None
        except ValueError:
            return False, None, ("int_parsing", "Input should be a valid integer, unable to "
                                                "parse string as an integer")
    return False, None, ("int_type", "Input should be a valid integer")


class _Enum(str):
    def __repr__(self):
        return str(self)


def _network_search(p):
    """Where the phone connects: by SIM status and preferred mode with the signal where the
    user is; no service in airplane mode, with a broken APN or an inactive line."""
    dev, signal = p.dev, p.sur["signal_strength"]
    if p.sim_status() == "active":
        dev["network_connection_status"] = "connected"
        pref = dev["network_mode_preference"]
        tech = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}.get(
            pref if isinstance(pref, str) else "", "4G")
        if pref == "4g_5g_preferred" and signal.get("5G", "none") != "none":
            tech = "5G"
        dev["network_technology_connected"] = tech
        dev["network_signal_strength"] = signal.get(tech, "none")
    else:
        dev.update(_NO_SERVICE)
    # one check after the other, as τ²'s: settings that are no settings fail at the second
    if dev["airplane_mode"]:
        dev.update(_NO_SERVICE)
    if p.apn_field("apn_name") == "broken":
        dev.update(_NO_SERVICE)
    if not p.sur["line_active"]:
        dev.update(_NO_SERVICE)


def _speed_test(p):
    """(Mbps rounded to 2 places, description) or (None, "No Connection")."""
    if not p.data_works():
        return None, "No Connection"
    dev = p.dev
    factor = 1.0
    if dev["vpn_connected"] and dev["vpn_details"] \
            and dev["vpn_details"]["server_performance"] == "poor":
        factor = 0.1
    if dev["data_saver_mode"]:
        factor *= 0.2
    low, high = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0),
                 "5G": (50.0, 500.0)}.get(dev["network_technology_connected"], (0.0, 0.0))
    strength = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}.get(
        dev["network_signal_strength"], 0.0)
    speed = round((low + high) / 2.0 * strength * factor, 2)
    desc = ("Very Poor" if speed < 1 else "Poor" if speed < 5 else "Fair" if speed < 25
            else "Good" if speed < 100 else "Excellent")
    return speed, desc
