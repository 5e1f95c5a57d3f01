"""schemas/ is generated from the specs; this fails when someone forgets `bench schema`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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


def test_descriptions_reach_every_kind_of_model() -> None:
    """The docstrings are read in the child `json_schemas` starts: the pack's models (`Spec`),
    the plan's (`PlanModel`) and the compiled-only ones of knowledge.py and toolsets.py, each
    configured in its own module (discoverable.py's `UnlockImpl` has no field docstring)."""
    schemas = json_schemas()
    plan = schemas["plan.schema.json"]["$defs"]
    assert plan["PlanPack"]["properties"]["content_hash"]["description"] == \
        "sha256 over every input file of the pack (paths and bytes)."
    assert plan["PyToolImpl"]["properties"]["toolset"]["description"] == \
        "Key of `Plan.toolsets`."
    assert plan["KnowledgeImpl"]["properties"]["top_k"]["description"] == \
        "Documents a call returns."


def test_plain_model_use_reads_no_source() -> None:
    """Only the schema child reads docstrings: a process importing and using the models (the
    compiler, `bench run`) neither tokenises their source nor carries the descriptions."""
    probe = ("import linecache, json\n"
             "from benchpack.specs.pack import Pack\n"
             "from benchpack.specs.plan import PlanPack\n"
             "Pack.model_validate({'benchpack': 1, 'name': 'p'})\n"
             "print(json.dumps([Pack.model_fields['name'].description,\n"
             "                  PlanPack.model_fields['content_hash'].description,\n"
             "                  [k for k in linecache.cache if 'specs' in k]]))\n")
    env = {k: v for k, v in os.environ.items() if k != "BENCHPACK_FIELD_DOCS"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert json.loads(out) == [None, None, []]


def test_the_schema_child_refuses_to_run_without_docstrings() -> None:
    env = {k: v for k, v in os.environ.items() if k != "BENCHPACK_FIELD_DOCS"}
    res = subprocess.run([sys.executable, "-m", "benchpack.specs.schema"], capture_output=True,
                         text=True, env=env, check=False)
    assert res.returncode == 1 and "BENCHPACK_FIELD_DOCS=1" in res.stderr and res.stdout == ""
