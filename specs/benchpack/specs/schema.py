"""JSON Schema generation from the models (written to `schemas/` by `bench schema`)."""

from __future__ import annotations

import json
from typing import Any

from .pack import Fragment, Pack
from .plan import PLAN_SCHEMA_ID, Plan

SCHEMA_BASE = "https://benchpack.dev/schemas"


def _schema(model: type[Any], schema_id: str, title: str, mode: str = "validation") -> dict[str, Any]:
    body: dict[str, Any] = model.model_json_schema(by_alias=True, mode=mode)
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
    }
    out.update(body)
    out["title"] = title
    return out


def json_schemas() -> dict[str, dict[str, Any]]:
    """File name → JSON Schema, for every schema benchpack publishes."""
    pack = _schema(Pack, f"{SCHEMA_BASE}/pack/v1", "benchpack task pack (pack.yaml)")
    fragment = _schema(Fragment, f"{SCHEMA_BASE}/fragment/v1", "benchpack included pack file")
    plan = _schema(Plan, PLAN_SCHEMA_ID, "benchpack compiled plan", mode="serialization")
    return {
        "pack.schema.json": pack,
        "fragment.schema.json": fragment,
        "plan.schema.json": plan,
    }


def render_schema(schema: dict[str, Any]) -> str:
    """Stable text form (what is committed under `schemas/`)."""
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
