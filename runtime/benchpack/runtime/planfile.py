"""Load and validate a compiled plan (`plan.json`) before anything runs."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from pydantic import ValidationError

from benchpack.specs import PLAN_VERSION, Plan
from benchpack.specs.schema import json_schemas


class PlanError(Exception):
    """The plan cannot be used: missing, not JSON, wrong version, or not matching the schema."""


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json_schemas()["plan.schema.json"])


def load_plan(path: str | Path) -> Plan:
    """Read `plan.json` (or a directory holding it), validate it against the plan JSON Schema,
    and return the typed plan."""
    p = Path(path)
    if p.is_dir():
        p = p / "plan.json"
    try:
        data: Any = json.loads(p.read_bytes())
    except FileNotFoundError:
        raise PlanError(f"{p}: no plan here (run `bench compile PACK -o {p.parent}`)") from None
    except (OSError, ValueError) as exc:
        raise PlanError(f"{p}: not a readable JSON plan ({exc})") from None
    if not isinstance(data, dict):
        raise PlanError(f"{p}: not a plan")
    version = data.get("plan_version")
    if version != PLAN_VERSION:
        raise PlanError(f"{p}: plan version {version!r} is not supported (expected {PLAN_VERSION}); "
                        "recompile the pack with this benchpack")
    # The plan JSON Schema is generated from `Plan`, so the model validates the same contract;
    # it runs in compiled code. The jsonschema validator only runs to explain a failure.
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            where = "/".join(str(x) for x in first.absolute_path) or "(top)"
            raise PlanError(f"{p}: plan does not match its schema at {where}: {first.message} "
                            f"({len(errors)} problem{'s' if len(errors) != 1 else ''})") from None
        raise PlanError(f"{p}: plan does not match its schema: "
                        f"{str(exc).splitlines()[0]}") from None
