"""Environment policies (issue 12 part 3): `environments[].policy` is compiled into the plan and
the fingerprint, and every agent adapter shows it as the system prompt instead of the generic
assistant prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan

PACK = """\
benchpack: 1
name: policy-case
vars: {{shop: Lumen Books}}
personas: [{{id: ana, profile: {{role: customer}}}}]
environments:
  - id: store
    builtin_tools: []
    clock: 2026-04-08T09:00:00
{policy}
episodes:
  - id: e
    persona: ana
    environment: store
    sessions:
      - id: s
        protocol: verified_outcome
        request: Where is my order?
"""


def _pack(tmp_path: Path, policy: str, files: dict[str, str] | None = None) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir(parents=True, exist_ok=True)
    (pack / "pack.yaml").write_text(PACK.format(policy=policy), encoding="utf-8")
    for name, text in (files or {}).items():
        (pack / name).write_text(text, encoding="utf-8")
    return pack


def _compile(pack: Path, out: Path) -> tuple[Any, dict[str, Any]]:
    res = compile_pack(pack, out, use_cache=False)
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8")) if res.ok else {}
    return res, plan


def test_policy_file_is_rendered_into_the_plan_and_the_fingerprint(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "    policy: {file: policy.md}",
                 {"policy.md": "You serve {{ vars.shop }} customers.\n"})
    res, plan = _compile(pack, tmp_path / "a")
    assert res.ok, [d.format() for d in res.diagnostics]
    assert plan["environments"]["store"]["policy"] == "You serve Lumen Books customers.\n"
    before = next(iter(plan["sessions"].values()))["fingerprint"]
    (pack / "policy.md").write_text("You serve {{ vars.shop }} customers politely.\n",
                                    encoding="utf-8")
    _, plan2 = _compile(pack, tmp_path / "b")
    assert next(iter(plan2["sessions"].values()))["fingerprint"] != before


def test_literal_policy_file_keeps_braces_and_no_policy_is_left_out(tmp_path: Path) -> None:
    pack = _pack(tmp_path, "    policy: {file: policy.md, literal: true}",
                 {"policy.md": "Quote {{ order_id }} as written.\n"})
    res, plan = _compile(pack, tmp_path / "a")
    assert res.ok, [d.format() for d in res.diagnostics]
    assert plan["environments"]["store"]["policy"] == "Quote {{ order_id }} as written.\n"
    res, plan = _compile(_pack(tmp_path / "x", ""), tmp_path / "b")
    assert res.ok and "policy" not in plan["environments"]["store"]


def test_policy_mistakes_are_located(tmp_path: Path) -> None:
    res, _ = _compile(_pack(tmp_path, "    policy: {file: missing.md}"), tmp_path / "a")
    assert not res.ok
    lines = [d.format() for d in res.diagnostics]
    assert any("pack.yaml:9:" in t and "missing.md" in t for t in lines), lines
    res, _ = _compile(_pack(tmp_path / "y", '    policy: "Hello {{ vars.nope }}"'),
                      tmp_path / "b")
    assert not res.ok and any("pack.yaml:9:" in d.format() for d in res.diagnostics), \
        [d.format() for d in res.diagnostics]


def test_litellm_agent_gets_the_policy_as_its_system_message(fake_openai: FakeOpenAI,
                                                             tmp_path: Path) -> None:
    pack = _pack(tmp_path, '    policy: "You serve {{ vars.shop }} customers. 只说中文。"')
    res, _ = _compile(pack, tmp_path / "plan")
    assert res.ok, [d.format() for d in res.diagnostics]
    fake_openai.route("agent-model", lambda body: "Your order ships tomorrow.")
    summary = run_plan(RunOptions(
        plan=tmp_path / "plan", agent="litellm:openai/agent-model",
        api_base=fake_openai.base_url, db=tmp_path / "b.duckdb", progress=False,
        cache_dir=tmp_path / "cache", max_retries=0, run_id="r"))
    assert summary.errors == 0
    first = fake_openai.requests[0]["messages"][0]
    assert first == {"role": "system", "content": "You serve Lumen Books customers. 只说中文。"
                                                  "\n\nThe current time is 2026-04-08T09:00:00."}
    assert "capable personal assistant" not in json.dumps(fake_openai.requests,
                                                          ensure_ascii=False)
