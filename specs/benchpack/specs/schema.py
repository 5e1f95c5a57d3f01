"""JSON Schema generation from the models (written to `schemas/` by `bench schema`).

The published schemas carry every field's docstring as its `description` (editors show them).
The models read their docstrings only in a process started with `base.FIELD_DOCS_ENV` set
(reading them costs every other process ~0.12 s at import), so `json_schemas` generates in a
child process started so, unless this one already was. `plan_schema` is the plan's schema as
this process's models give it, for validating: descriptions validate nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from .base import FIELD_DOCS, FIELD_DOCS_ENV

SCHEMA_BASE = "https://benchpack.dev/schemas"

# the source root holding this package's piece of the `benchpack` namespace: the child finds
# the same models even when they are not installed (specs imports nothing else of benchpack)
_SPECS_ROOT = Path(__file__).resolve().parents[2]


def _schema(model: type[Any], schema_id: str, title: str, mode: str = "validation") -> dict[str, Any]:
    body: dict[str, Any] = model.model_json_schema(by_alias=True, mode=mode)
    out: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id,
    }
    out.update(body)
    out["title"] = title
    return out


def plan_schema() -> dict[str, Any]:
    """The plan's JSON Schema from this process's models: what `json_schemas` publishes, with
    field descriptions only if this process reads docstrings (they change no validation)."""
    from .plan import PLAN_SCHEMA_ID, Plan

    return _schema(Plan, PLAN_SCHEMA_ID, "benchpack compiled plan", mode="serialization")


def _generate() -> dict[str, dict[str, Any]]:
    from .pack import Fragment, Pack

    pack = _schema(Pack, f"{SCHEMA_BASE}/pack/v1", "benchpack task pack (pack.yaml)")
    fragment = _schema(Fragment, f"{SCHEMA_BASE}/fragment/v1", "benchpack included pack file")
    return {
        "pack.schema.json": pack,
        "fragment.schema.json": fragment,
        "plan.schema.json": plan_schema(),
    }


def json_schemas() -> dict[str, dict[str, Any]]:
    """File name → JSON Schema, for every schema benchpack publishes, field docstrings as
    descriptions (a fresh copy each call)."""
    if FIELD_DOCS:
        return _generate()
    schemas: dict[str, dict[str, Any]] = json.loads(_generated_with_docs())
    return schemas


@lru_cache(maxsize=1)
def _generated_with_docs() -> str:
    env = {**os.environ, FIELD_DOCS_ENV: "1",
           "PYTHONPATH": os.pathsep.join(
               [str(_SPECS_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    res = subprocess.run([sys.executable, "-m", "benchpack.specs.schema"], env=env,
                         capture_output=True, text=True, encoding="utf-8", check=False)
    if res.returncode != 0:  # the models themselves failed: a benchpack bug, said with its cause
        raise RuntimeError(f"generating the JSON Schemas failed (exit {res.returncode}):\n"
                           f"{res.stderr.strip()}")
    return res.stdout


def render_schema(schema: dict[str, Any]) -> str:
    """Stable text form (what is committed under `schemas/`)."""
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


if __name__ == "__main__":  # the child `json_schemas` starts, with FIELD_DOCS_ENV set
    if not FIELD_DOCS:
        sys.exit(f"set {FIELD_DOCS_ENV}=1: without it the schemas lack the field descriptions")
    sys.stdout.write(json.dumps(_generate()))  # ASCII: whatever encoding the pipe has
