"""Issue 11 on the compiler side: pack regexes RE2 cannot run, FIFOs named by `include:`,
impossible clocks — each a located, one-line pack error, never a hang or a pass."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from benchpack.compiler import validate_pack

PACK = """\
benchpack: 1
name: demo
personas:
  - id: ana
    profile: {role: Analyst}
environments:
  - id: office
    clock: "2026-04-08T09:00:00"
episodes:
  - id: week
    persona: ana
    environment: office
    sessions:
      - id: triage
        protocol: intent_tracking
        request: Go through the queue.
        hidden_intents:
          - text: Put the overdue INR check first
        checklist:
          - text: The reply confirms it
            rule: {reply: true, regex: "^(a+)+$"}
"""


def _validate(root: Path, text: str, **extra: str) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pack.yaml").write_text(text, encoding="utf-8")
    for name, content in extra.items():
        (root / name).write_text(content, encoding="utf-8")
    return [d.format() for d in validate_pack(root).diagnostics]


def test_the_probe_pack_with_nested_quantifiers_is_fine_for_re2(tmp_path: Path) -> None:
    # RE2 runs `^(a+)+$` in linear time, so it is no longer a hazard and stays valid
    assert _validate(tmp_path / "p", PACK) == []


@pytest.mark.parametrize("pattern,needle", [
    (r"(INR)\\1", "\\1"),
    ("INR(?= check)", "(?="),
    ("(?<!no )INR", "(?<"),
])
def test_patterns_re2_refuses_are_located_pack_errors(tmp_path: Path, pattern: str,
                                                      needle: str) -> None:
    text = PACK.replace("^(a+)+$", pattern)
    diags = _validate(tmp_path / "p", text)
    assert len(diags) == 1, diags
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "regex:" in ln)
    assert diags[0].startswith(f"{tmp_path / 'p' / 'pack.yaml'}:{line}:") or \
        f"pack.yaml:{line}:" in diags[0], diags
    assert needle in diags[0] and "E205" in diags[0] and "RE2" in diags[0] and "lookaround" in diags[0], diags


def test_where_regex_is_checked_with_re2_too(tmp_path: Path) -> None:
    text = PACK.replace("hidden_intents:", "tools: [read_file]\n        hidden_intents:").replace(
        '{reply: true, regex: "^(a+)+$"}',
        '{tool: read_file, where: {args.path: {regex: "(a)\\\\1"}}}')
    diags = _validate(tmp_path / "p", text)
    assert any("E205" in d and "where" in d for d in diags), diags


@pytest.mark.parametrize("clock", ["99999-99-99T99:99:99", "2026-13-01T00:00:00",
                                   "2026-02-30T09:00:00", "2026-04-08T25:00:00", "tomorrow"])
def test_impossible_clocks_are_located_pack_errors(tmp_path: Path, clock: str) -> None:
    text = PACK.replace('"^(a+)+$"', "INR").replace("2026-04-08T09:00:00", clock)
    diags = _validate(tmp_path / "p", text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "clock:" in ln)
    assert diags and all(f"pack.yaml:{line}:" in d for d in diags), diags
    assert "clock" in diags[0], diags


@pytest.mark.parametrize("clock", ["2026-04-08T09:00:00", "2026-04-08T09:00:00+02:00",
                                   "2026-04-08T09:00:00Z", "2026-04-08"])
def test_real_clocks_stay_valid(tmp_path: Path, clock: str) -> None:
    text = PACK.replace('"^(a+)+$"', "INR").replace("2026-04-08T09:00:00", clock)
    assert _validate(tmp_path / "p", text) == []


def test_include_naming_a_fifo_is_refused_not_a_hang(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    os.mkfifo(root / "more.yaml")
    text = PACK.replace('"^(a+)+$"', "INR") + "include: [more.yaml]\n"
    box: dict[str, list[str]] = {}
    t = threading.Thread(target=lambda: box.setdefault("d", _validate(root, text)), daemon=True)
    t0 = time.perf_counter()
    t.start()
    t.join(5.0)
    if t.is_alive():  # unblock the reader so the test process can end
        fd = os.open(root / "more.yaml", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(5.0)
        pytest.fail("validating a pack that includes a FIFO hangs")
    assert time.perf_counter() - t0 < 5.0
    diags = box["d"]
    assert len(diags) == 1 and "more.yaml" in diags[0] and "not a regular file" in diags[0], diags
