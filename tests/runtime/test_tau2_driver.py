"""The τ²-bench driver and its client (issue 23, WP-T): every failure is one clear line; with
a τ² checkout (BENCH_TAU2_CHECKOUT, BENCH_TAU2_PYTHON) the driver extracts, applies calls and
evaluates with τ²'s own code, never calling a model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchpack.runtime.tau2bench.client import Tau2Driver, Tau2DriverError, find_python
from conftest import TAU2_CHECKOUT as CHECKOUT
from conftest import TAU2_PYTHON as PYTHON
from conftest import needs_tau2


def _fake_checkout(tmp_path: Path, init: str = "") -> Path:
    root = tmp_path / "tau2-bench"
    (root / "src" / "tau2").mkdir(parents=True)
    (root / "data" / "tau2").mkdir(parents=True)
    (root / "src" / "tau2" / "__init__.py").write_text(init)
    return root


def test_not_a_checkout(tmp_path: Path) -> None:
    with pytest.raises(Tau2DriverError, match=r"not a τ²-bench checkout .*src/tau2"):
        Tau2Driver(tmp_path, sys.executable)


def test_no_python_for_tau2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCH_TAU2_PYTHON", raising=False)
    with pytest.raises(Tau2DriverError, match="--tau2-python"):
        find_python(_fake_checkout(tmp_path))
    monkeypatch.setenv("BENCH_TAU2_PYTHON", "/opt/py")
    assert find_python(tmp_path) == "/opt/py"
    assert find_python(tmp_path, "/x/python") == "/x/python"


def test_a_python_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(Tau2DriverError, match="cannot be run"):
        Tau2Driver(_fake_checkout(tmp_path), str(tmp_path / "nope" / "python")).start()


def test_tau2_not_importable_is_one_line(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path, "raise ImportError('no litellm here')\n")
    (root / "src" / "loguru.py").write_text(
        "class _L:\n    def remove(self):\n        pass\n\nlogger = _L()\n")
    with pytest.raises(Tau2DriverError) as err:
        Tau2Driver(root, sys.executable).start()
    text = str(err.value)
    assert "cannot be imported" in text and "no litellm here" in text and "\n" not in text


def test_a_driver_that_dies_says_so(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path, "import os, sys\nsys.stderr.write('boom: out of luck\\n')\n"
                                    "sys.stderr.flush()\nos._exit(3)\n")
    (root / "src" / "loguru.py").write_text(
        "class _L:\n    def remove(self):\n        pass\n\nlogger = _L()\n")
    with pytest.raises(Tau2DriverError, match=r"exited \(starting; exit code 3\): boom: out of "
                                              "luck"):
        Tau2Driver(root, sys.executable).start()


# ------------------------------------------------------------------ with a τ² checkout


@pytest.fixture(scope="module")
def driver() -> object:
    assert CHECKOUT and PYTHON
    with Tau2Driver(Path(CHECKOUT), PYTHON) as d:
        yield d


@needs_tau2
def test_extract_mock(driver: Tau2Driver) -> None:
    ex = driver.extract("mock")
    names = [t["name"] for t in ex["tools"]]
    assert {"create_task", "get_users", "update_task_status"} <= set(names)
    create = next(t for t in ex["tools"] if t["name"] == "create_task")
    assert create["mutates_state"] and create["schema"]["function"]["name"] == "create_task"
    assert create["schema"]["function"]["parameters"]["type"] == "object"
    assert ex["policy"] and ex["policy"] in ex["agent_system_prompt"]
    assert ex["first_agent_message"]
    for task in ex["tasks"]:
        variant = ex["user_prompts"][task["user_prompt"]]
        assert task["scenario"] and variant["prefix"] and variant["suffix"]
    judge = ex["nl_judge"]
    assert judge["markers"]["conversation"] in judge["messages"][1]["content"]
    assert ex["db"]["users"] and ex["db"]["tasks"]


@needs_tau2
def test_apply_reports_content_errors_and_changes(driver: Tau2Driver) -> None:
    out = driver.apply("mock", [
        {"name": "create_task", "arguments": {"user_id": "user_1", "title": "T"}},
        {"name": "create_task", "arguments": {"user_id": "user_1"}},
        {"name": "update_task_status", "arguments": {"task_id": "nope", "status": "pending"}},
    ])
    first, missing, unknown = out["calls"]
    assert not first["error"] and json.loads(first["content"])["title"] == "T"
    assert missing["error"] and missing["content"].startswith("Error: ") and \
        "missing 1 required positional argument: 'title'" in missing["content"]
    assert unknown == {"content": "Error: Task nope not found", "error": True, "changes": {}}
    created = first["changes"]["db"]["tasks"]
    assert list(created) == [json.loads(first["content"])["task_id"]]
    assert out["changes"]["db"]["tasks"] == created


@needs_tau2
def test_evaluate_answers_the_nl_judge_from_verdicts(driver: Tau2Driver) -> None:
    """Retail task 2 scores DB × NL_ASSERTION (one assertion): the verdict given decides."""
    messages = [{"role": "assistant", "content": "Hi!"},
                {"role": "user", "content": "Please do it. ###STOP###"}]
    with pytest.raises(Tau2DriverError, match="needs NL-assertion verdicts"):
        driver.evaluate("retail", "2", messages, "user_stop")
    for verdict in (True, False):
        info = driver.evaluate("retail", "2", messages, "user_stop", nl_verdicts=[verdict])
        assert [c["met"] for c in info["nl_assertions"]] == [verdict]
        assert info["reward"] == (1.0 if verdict and info["db_check"]["db_match"] else 0.0)
    # a dialogue not ended by the user or the agent scores 0 whatever the verdicts
    assert driver.evaluate("retail", "2", messages, "max_steps",
                           nl_verdicts=[True])["reward"] == 0.0
