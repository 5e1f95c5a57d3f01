"""Located compile errors for dual control, initial states and env assertions (issue 24):
every wrong name is reported where it is written, all at once, with the nearest valid one."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchpack.compiler import compile_pack

PACK = Path(__file__).resolve().parents[1] / "fixtures" / "dual_control"


def _compile(tmp_path: Path, edits: list[tuple[str, str]]) -> list[str]:
    pack = tmp_path / "pack"
    shutil.copytree(PACK, pack)
    text = (pack / "pack.yaml").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    (pack / "pack.yaml").write_text(text, encoding="utf-8")
    result = compile_pack(pack, tmp_path / "out", use_cache=False)
    return [d.format() for d in result.diagnostics if d.severity == "error"]


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_every_wrong_name_is_located(tmp_path: Path) -> None:
    errors = _compile(tmp_path, [
        ("calls: [{tool: toggle_airplane_mode}]", "calls: [{tool: toggle_airplane}]"),
        ("{function: assert_can_browse, side: user", "{function: assert_can_brows, side: user"),
        ("{function: assert_line_status, args: {line_id: L2",
         "{function: assert_line_status, side: user, args: {line_id: L2"),
        ("data: {isp: {lines: {L1:", "data: {ips: {lines: {L1:"),
        ("- {tool: suspend_line, args: {line_id: L2}}",
         "- {tool: suspend_line, side: user, args: {line_id: L2}}"),
        ("{id: airplane, tool: toggle_airplane_mode, requestor: user}",
         "{id: airplane, tool: resume_line, requestor: user}"),
    ])
    text = (tmp_path / "pack" / "pack.yaml").read_text(encoding="utf-8")
    shown = "\n".join(errors)
    assert len(errors) == 6, shown
    want = [
        ("toggle_airplane}", "`toggle_airplane` is not one of the user's tools",
         "toggle_airplane_mode"),
        ("assert_can_brows", "no toolset of the user's has a public function", "assert_can_browse"),
        ("assert_line_status, side: user", "no toolset of the user's has a public function "
         "`assert_line_status`", "give `side: agent`"),
        ("data: {ips:", "the environment has no service `ips`", "isp"),
        ("suspend_line, side: user", "`suspend_line` is not one of the user's tools",
         "`suspend_line` is a function of the agent's toolsets: give `side: agent`"),
        ("tool: resume_line, requestor: user", "`resume_line` is not one of the user's tools",
         "one of the agent's tools"),
    ]
    for needle, message, hint in want:
        line = _line(text, needle)
        hit = [e for e in errors if f"pack.yaml:{line}:" in e and message in e]
        assert hit, (needle, message, shown)
        if hint:
            assert hint in hit[0], hit[0]


def test_reward_env_assertions_needs_some(tmp_path: Path) -> None:
    errors = _compile(tmp_path, [(
        "          env_assertions:\n            - {function: assert_line_status, args: "
        "{line_id: L2, status: active}}\n", "")])
    assert len(errors) == 1 and "E211" in errors[0] and "`score.env_assertions` is empty" \
        in errors[0], errors


def test_a_toolset_on_both_sides(tmp_path: Path) -> None:
    errors = _compile(tmp_path, [("user_toolsets: [tools/phone.py]",
                                  "user_toolsets: [tools/phone.py, tools/isp.py]")])
    assert any("offered to both the agent and the user" in e for e in errors), errors


def test_prior_tool_calls_must_be_answered(tmp_path: Path) -> None:
    errors = _compile(tmp_path, [
        ("            - {role: tool, tool_call_id: c1, content: "
         "'{\"line_id\": \"L2\", \"status\": \"suspended\"}'}\n",
         "            - {role: tool, tool_call_id: c9, content: x}\n")])
    text = (tmp_path / "pack" / "pack.yaml").read_text(encoding="utf-8")
    assert len(errors) == 2, errors
    assert any(f"pack.yaml:{_line(text, 'tool_call_id: c9')}:" in e and "answers `c9`" in e
               for e in errors), errors
    assert any(f"pack.yaml:{_line(text, '{id: c1')}:" in e and "`c1` of the history is never "
               "answered" in e for e in errors), errors


def test_a_user_tool_list_names_only_the_users_tools(tmp_path: Path) -> None:
    # `user.tools` (τ²'s per-task `user_tools`): a name that is not one of the environment's
    # user tools is an E202 where it is written, with the nearest one or the other side's hint
    errors = _compile(tmp_path, [
        ("          reason: My phone has no internet. My line is L1.\n",
         "          reason: My phone has no internet. My line is L1.\n"
         "          tools: [toggle_airplane_mod, resume_line, check_status_bar]\n"),
    ])
    text = (tmp_path / "pack" / "pack.yaml").read_text(encoding="utf-8")
    line = _line(text, "tools: [toggle_airplane_mod,")
    shown = "\n".join(errors)
    assert len(errors) == 2, shown
    assert any(f"pack.yaml:{line}:" in e and "`toggle_airplane_mod` is not one of the user's "
               "tools" in e and "toggle_airplane_mode" in e for e in errors), shown
    assert any(f"pack.yaml:{line}:" in e and "`resume_line` is not one of the user's tools"
               in e and "one of the agent's tools" in e for e in errors), shown
