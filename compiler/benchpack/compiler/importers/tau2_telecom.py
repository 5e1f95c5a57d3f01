"""`bench import tau2` for τ²'s telecom domain: its databases as τ²'s models load them, and its
agent policy as τ²'s environment composes it.

τ² keeps telecom's databases in TOML (`db.toml`, `user_db.toml`) and fills in what they leave
out from its models' defaults; the rows a pack starts from must be those loaded rows, fields in
the models' order, numbers as they load (a float field makes `5` into `5.0`) and dates as τ²
prints them (`2025-01-20 14:30:00`, `2025-02-25`). `SHAPES` says, per table, each field's
default and kind (written from τ²'s documented data model; none of its code is copied). With
`--tau2` the rows come from τ²'s own loaded databases instead (the τ² driver's `extract`, keyed
the same way) and none of this is used.

The user's database is not tables of rows but two objects, the phone (`device`) and where the
user is (`surroundings`): each becomes a table of one row whose key `id` is the table's name.
"""

from __future__ import annotations

import datetime
import tomllib
from pathlib import Path
from typing import Any

from . import ImportError_

REQUIRED = object()
FLOAT, DATE, DATETIME = "float", "date", "datetime"
_LINE_ITEM = [("description", REQUIRED, None), ("amount", REQUIRED, FLOAT),
              ("date", REQUIRED, DATE), ("item_type", REQUIRED, None)]
_APN = [("apn_name", "internet", None), ("reset_at_reboot", False, None),
        ("mms_apn", "mms", None), ("mmsc_url", "http://mms.carrier.com/mms/wapenc", None),
        ("mms_proxy", None, None), ("mms_port", None, None)]
_PERMISSIONS = [("sms", False, None), ("storage", False, None), ("phone", False, None),
                ("network", False, None)]
_APP = [("app_name", REQUIRED, None), ("permissions", {}, ("model", _PERMISSIONS))]
_VPN = [("server_address", None, None), ("protocol", None, None),
        ("server_performance", "unknown", None)]
_APPS_DEFAULT = {"messaging": {"app_name": "messaging", "permissions": {
    "sms": True, "storage": True, "phone": True, "network": False}},
    "browser": {"app_name": "browser", "permissions": {
        "sms": False, "storage": True, "phone": False, "network": True}}}

SHAPES: dict[str, list[tuple[str, Any, Any]]] = {
    "plans": [("plan_id", REQUIRED, None), ("name", REQUIRED, None),
              ("data_limit_gb", REQUIRED, FLOAT), ("price_per_month", REQUIRED, FLOAT),
              ("data_refueling_price_per_gb", REQUIRED, FLOAT)],
    "customers": [("customer_id", REQUIRED, None), ("full_name", REQUIRED, None),
                  ("date_of_birth", REQUIRED, None), ("email", REQUIRED, None),
                  ("phone_number", REQUIRED, None),
                  ("address", REQUIRED, ("model", [("street", REQUIRED, None),
                                                   ("city", REQUIRED, None),
                                                   ("state", REQUIRED, None),
                                                   ("zip_code", REQUIRED, None)])),
                  ("account_status", "Pending Verification", None),
                  ("payment_methods", [], ("list", [("method_type", REQUIRED, None),
                                                    ("account_number_last_4", REQUIRED, None),
                                                    ("expiration_date", REQUIRED, None)])),
                  ("line_ids", [], None), ("bill_ids", [], None),
                  # τ²'s default is a date in a datetime field (not validated): it prints so
                  ("created_at", "2025-01-01", DATETIME), ("last_extension_date", None, DATE),
                  ("goodwill_credit_used_this_year", 0.0, FLOAT)],
    "lines": [("line_id", REQUIRED, None), ("phone_number", REQUIRED, None),
              ("status", "Pending Activation", None), ("plan_id", REQUIRED, None),
              ("device_id", None, None), ("data_used_gb", 0.0, FLOAT),
              ("data_refueling_gb", 0.0, FLOAT), ("roaming_enabled", False, None),
              ("contract_end_date", None, DATE), ("last_plan_change_date", None, DATE),
              ("last_sim_replacement_date", None, DATE), ("suspension_start_date", None, DATE)],
    "bills": [("bill_id", REQUIRED, None), ("customer_id", REQUIRED, None),
              ("period_start", REQUIRED, DATE), ("period_end", REQUIRED, DATE),
              ("issue_date", REQUIRED, DATE), ("total_due", REQUIRED, FLOAT),
              ("due_date", REQUIRED, DATE), ("line_items", [], ("list", _LINE_ITEM)),
              ("status", "Draft", None)],
    "devices": [("device_id", REQUIRED, None), ("device_type", REQUIRED, None),
                ("model", REQUIRED, None), ("imei", None, None),
                ("is_esim_capable", REQUIRED, None), ("activated", False, None),
                ("activation_date", None, DATETIME), ("last_esim_transfer_date", None, DATETIME)],
    # the user's database: one row each
    "device": [("sim_card_status", "active", None), ("sim_card_missing", False, None),
               ("airplane_mode", False, None), ("network_signal_strength", "good", None),
               ("network_technology_connected", "5G", None),
               ("network_connection_status", "connected", None), ("battery_level", 80, None),
               ("data_enabled", True, None), ("roaming_enabled", False, None),
               ("network_mode_preference", "4g_5g_preferred", None),
               ("active_apn_settings", {}, ("model", _APN)), ("wifi_enabled", False, None),
               ("wifi_connected", False, None), ("wifi_ssid", None, None),
               ("wifi_signal_strength", "none", None), ("wifi_calling_enabled", False, None),
               ("wifi_calling_mms_over_wifi", False, None), ("data_saver_mode", False, None),
               ("vpn_enabled_setting", False, None), ("vpn_connected", False, None),
               ("vpn_details", None, ("model", _VPN)),
               ("app_statuses", _APPS_DEFAULT, ("dict", _APP))],
    "surroundings": [("name", None, None), ("phone_number", None, None),
                     ("is_abroad", False, None), ("roaming_allowed", False, None),
                     ("signal_strength", {"2G": "poor", "3G": "fair", "4G": "good",
                                          "5G": "excellent"}, None),
                     ("mobile_data_usage_exceeded", False, None), ("line_active", True, None),
                     ("payment_request", None, ("model", [("bill_id", REQUIRED, None),
                                                          ("amount_due", REQUIRED, FLOAT),
                                                          ("paid", False, None)]))],
}
AGENT_TABLES = ("plans", "customers", "lines", "bills", "devices")
USER_TABLES = ("device", "surroundings")


def load_toml(path: Path) -> Any:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ImportError_(str(path), "not found", FOLDER) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ImportError_(str(path), f"not valid TOML ({exc})") from None


def _value(value: Any, kind: Any, where: str) -> Any:
    if value is None:
        return None
    if kind == FLOAT:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ImportError_(where, f"expected a number, got {value!r}")
        return float(value)
    if kind in (DATE, DATETIME):
        try:
            if isinstance(value, datetime.datetime):
                day: Any = value
            elif isinstance(value, datetime.date):
                day = value if kind == DATE else datetime.datetime.combine(value,
                                                                          datetime.time())
            elif kind == DATE:
                day = datetime.date.fromisoformat(str(value))
            else:
                day = datetime.datetime.fromisoformat(str(value))
        except ValueError:
            raise ImportError_(where, f"not a date: {value!r}") from None
        return str(day)
    if isinstance(kind, tuple):
        how, shape = kind
        if how == "model":
            return _model(value, shape, where)
        if how == "list":
            return [_model(v, shape, f"{where}[{i}]") for i, v in enumerate(value)]
        return {k: _model(v, shape, f"{where}.{k}") for k, v in value.items()}
    return value


def _model(raw: Any, shape: list[tuple[str, Any, Any]], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ImportError_(where, "expected an object")
    unknown = sorted(set(raw) - {f for f, _, _ in shape})
    if unknown:
        raise ImportError_(where, "fields τ²'s model does not have: " + ", ".join(unknown))
    out: dict[str, Any] = {}
    for field, default, kind in shape:
        if field in raw:
            out[field] = _value(raw[field], kind, f"{where}.{field}")
        elif default is REQUIRED:
            raise ImportError_(where, f"missing the field `{field}`")
        elif isinstance(default, dict | list) and not isinstance(kind, tuple):
            out[field] = _copy(default)
        elif isinstance(default, dict) and kind[0] == "model":
            out[field] = _model(default, kind[1], f"{where}.{field}")
        else:
            out[field] = _copy(default)
    return out


def _copy(value: Any) -> Any:
    import copy

    return copy.deepcopy(value)


def agent_db(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """db.toml as τ²'s TelecomDB loads it, as `{table: {key: row}}` (the importer's shape)."""
    raw = load_toml(path)
    unknown = sorted(set(raw) - set(AGENT_TABLES))
    if unknown:
        raise ImportError_(str(path), "tables τ²'s telecom database does not have: "
                           + ", ".join(unknown))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for table in AGENT_TABLES:
        key = SHAPES[table][0][0]
        rows = [_model(r, SHAPES[table], f"{path}: {table}[{i}]")
                for i, r in enumerate(raw.get(table) or [])]
        out[table] = {str(r[key]): r for r in rows}
    return out


def user_db(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """user_db.toml as τ²'s TelecomUserDB loads it: `{device: {device: row}, surroundings:
    {surroundings: row}}`, each row with its key `id`."""
    raw = load_toml(path) if path.is_file() else {}
    unknown = sorted(set(raw) - set(USER_TABLES))
    if unknown:
        raise ImportError_(str(path), "parts τ²'s telecom user database does not have: "
                           + ", ".join(unknown))
    return {t: {t: {"id": t, **_model(raw.get(t) or {}, SHAPES[t], f"{path}: {t}")}}
            for t in USER_TABLES}


def policy(source: Path) -> str:
    """The agent's policy as τ²'s telecom environment composes it (main policy and the
    technical-support manual)."""
    parts = []
    for name in ("main_policy.md", "tech_support_manual.md"):
        try:
            parts.append((source / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ImportError_(str(source / name), "not found", FOLDER) from None
    return ("<main_policy>\n" + parts[0] + "\n</main_policy>\n<tech_support_policy>\n"
            + parts[1] + "\n</tech_support_policy>")


def tasks_file(source: Path) -> Path:
    """tasks.json when the folder has it (the full set), else tasks_small.json."""
    for name in ("tasks.json", "tasks_small.json"):
        if (source / name).is_file():
            return source / name
    raise ImportError_(str(source / "tasks_small.json"), "not found", FOLDER)


FOLDER = ("τ²'s telecom folder holds tasks.json or tasks_small.json, db.toml, user_db.toml, "
          "main_policy.md and tech_support_manual.md")
