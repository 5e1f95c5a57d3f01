"""schemas/ is generated from the specs; this fails when someone forgets `bench schema`."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from benchpack.specs.schema import json_schemas, render_schema
from conftest import ROOT


def test_committed_schemas_match_the_models() -> None:
    for name, body in json_schemas().items():
        committed = (ROOT / "schemas" / name).read_text(encoding="utf-8")
        assert committed == render_schema(body), f"schemas/{name} is stale: run `bench schema`"


def test_schemas_are_valid_json_schema() -> None:
    for name in ("pack.schema.json", "fragment.schema.json", "plan.schema.json"):
        Draft202012Validator.check_schema(json.loads((ROOT / "schemas" / name).read_text()))


def test_field_docstrings_become_descriptions() -> None:
    pack = json_schemas()["pack.schema.json"]
    assert "Pack name" in pack["properties"]["name"]["description"]
    session = pack["$defs"]["Session"]["properties"]["hidden_intents"]
    assert "does not say" in session["description"]
