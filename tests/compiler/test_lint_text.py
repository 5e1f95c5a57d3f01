"""lint: the text tests behind the leakage and bundling lints."""

from __future__ import annotations

import pytest

from benchpack.compiler.lint import bundles, content_tokens, leaks, normalise


def test_normalise_and_tokens() -> None:
    assert normalise("The INR-check, overdue!") == "the inr check overdue"
    # stop words and short words go; digits and non-ASCII words stay
    assert content_tokens("The INR check is due on 3 June, ok? 薬") == {
        "inr", "check", "due", "3", "june", "薬"}


@pytest.mark.parametrize(("secret", "visible", "expected"), [
    ("Put the overdue INR check first", "Please put the overdue INR check first today", True),
    ("Put the overdue INR check first", "put the overdue inr-check FIRST.", True),
    ("Be brief", "be brief", False),  # too short to count as a leak
    ("Keep it short", "keep it short", True),
    ("Put the overdue INR check first", "Go through the refill queue", False),
    ("Flag the warfarin refill because INR is overdue",
     "Please flag the warfarin refill, because the INR is overdue.", True),
    # near-verbatim only: a reordered paraphrase is not flagged
    ("Flag the warfarin refill because INR is overdue",
     "the INR value for the warfarin refill is overdue so flag it", False),
    ("Flag the warfarin refill because INR is overdue", "warfarin refill list", False),
    # Chinese, written without spaces: the same verdicts as the English rows above
    ("先处理逾期的凝血检查", "请先处理逾期的凝血检查，今天就做", True),
    ("先处理逾期的凝血检查", "先处理逾期的 凝血检查。", True),
    ("简短", "简短", False),
    ("先处理逾期的凝血检查", "先把续药队列过一遍", False),
])
def test_leaks(secret: str, visible: str, expected: bool) -> None:
    assert leaks(secret, visible) is expected


@pytest.mark.parametrize(("text", "expected"), [
    ("The answer names the warfarin patient", False),
    ("The answer names the patient and the drug", False),
    ("The answer names the patient and also lists the drug", True),
    ("The reply must name the patient. It should also state the dose.", True),
    ("The note is short. Substantially similar wording is fine.", False),
    ("Includes (1) the patient and (2) the dose", True),
    # an alternative is one requirement met either way, not two
    ("The reply must name the patient. Alternatively, it should state the dose.", False),
    ("The reply must name the patient. Or else it should state the dose.", False),
    ("The reply must name the patient; alternatively it may list the ward.", False),
    ("回复必须写明患者姓名。此外还必须说明剂量。", True),
    ("回复必须写明患者姓名。或者，回复应说明剂量。", False),
    ("回复必须写明患者姓名；或应说明剂量。", False),
])
def test_bundles(text: str, expected: bool) -> None:
    assert bundles(text) is expected
