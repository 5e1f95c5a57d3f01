"""Secrets never reach the store, exports, reports or the console, however they were given.

A provider error that echoes the API key (as OpenAI's "Incorrect API key provided: …" does) is
the realistic leak: the key comes from `OPENAI_API_KEY` (litellm reads it itself, benchpack never
sees it as `--api-key-env`), from `--api-key-env`, or inside an `--api-base` URL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, FakeReply, fake_openai_fixture, list_files_agent  # noqa: F401

from benchpack.cli import cli
from benchpack.compiler import compile_pack, init_pack
from benchpack.runtime.redact import Redactor, env_secrets, url_secrets

KEY = "sk-proj-LEAKME0123456789abcdef"
OTHER = "hf_tokenvalue_ABCDEFGH987"
URL_KEY = "urlsecretQWERTY42"


def _echo_key(body: dict[str, Any]) -> FakeReply:
    return FakeReply(status=401, body={"error": {
        "message": f"Incorrect API key provided: {KEY}; also {OTHER} and {URL_KEY}",
        "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})


@pytest.fixture
def plan_dir(tmp_path: Path) -> Path:
    init_pack(tmp_path / "pack", "p")
    assert compile_pack(tmp_path / "pack", tmp_path / "build", use_cache=False).ok
    return tmp_path / "build"


def _everything(db: Path, tmp_path: Path, runner: CliRunner) -> str:
    """Every byte a user could see: the store file, an export, the HTML report, console."""
    out = []
    res = runner.invoke(cli, ["export", "--db", str(db), "-o", str(tmp_path / "export"),
                              "--format", "csv"])
    assert res.exit_code == 0, res.output
    out += [p.read_text(errors="replace") for p in (tmp_path / "export").iterdir()]
    res = runner.invoke(cli, ["report", "--db", str(db), "--run", "all", "--format", "html",
                              "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    out.append((tmp_path / "r.html").read_text())
    for sql in ("SELECT * FROM llm_calls", "SELECT * FROM sessions",
                "SELECT * FROM checklist_results", "SELECT * FROM intent_status"):
        res = runner.invoke(cli, ["query", sql, "--db", str(db), "--format", "json"])
        assert res.exit_code == 0, res.output
        out.append(res.output)
    return "\n".join(out)


def test_env_key_echoed_by_provider_is_redacted_everywhere(
        fake_openai: FakeOpenAI, plan_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("HF_TOKEN", OTHER)
    fake_openai.route("agent-model", list_files_agent).route("judge-model", _echo_key) \
        .route("bad-agent", _echo_key)
    db = tmp_path / "bench.duckdb"
    base = fake_openai.base_url
    common = [str(plan_dir), "--db", str(db), "--api-base", base, "--max-retries", "0",
              "--no-cache", "--quiet"]
    runner = CliRunner()
    # the judge fails: checklist and intent errors, llm_calls errors
    first = runner.invoke(cli, ["run", *common, "--agent", "litellm:openai/agent-model",
                                "--judge", "litellm:openai/judge-model", "--run-id", "j"])
    # the agent fails: session errors, the console's "first errors"
    second = runner.invoke(cli, ["run", *common, "--agent", "litellm:openai/bad-agent",
                                 "--run-id", "a"])
    assert second.exit_code == 1, second.output
    con = duckdb.connect(str(db), read_only=True)
    errors = [r[0] for r in con.execute("SELECT error FROM llm_calls WHERE error IS NOT NULL")
              .fetchall()]
    con.close()
    assert errors and all("***" in e for e in errors), errors
    seen = first.output + second.output + _everything(db, tmp_path, runner) \
        + db.read_bytes().decode("latin-1")
    assert "Incorrect API key provided" in seen
    for secret in (KEY, OTHER):
        assert secret not in seen, secret


def test_console_redacts_what_it_prints(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    """An error message carrying a key (here: a missing store named after it) is printed
    redacted."""
    monkeypatch.setenv("MY_SERVICE_API_KEY", KEY)
    res = CliRunner().invoke(cli, ["report", "--db", str(tmp_path / KEY / "x.duckdb")])
    assert res.exit_code != 0 and KEY not in res.output and "***" in res.output, res.output


def test_redactor_units() -> None:
    env = {"OPENAI_API_KEY": KEY, "AWS_SECRET_ACCESS_KEY": "aws/secret+value9",
           "GITHUB_TOKEN": "ghp_abcdefgh1234", "HOME": "/home/someone-long",
           "SHORT_API_KEY": "abc", "MY_KEY_ENV": "not-a-secret-name-value"}
    found = env_secrets(env, extra_names=["MY_KEY_ENV"])
    assert found == {KEY, "aws/secret+value9", "ghp_abcdefgh1234", "not-a-secret-name-value"}
    assert url_secrets("https://u:pa55word-long@host/v1?api-key=QUERYKEY99&x=1") == \
        {"pa55word-long", "QUERYKEY99"}
    assert url_secrets(None) == set() and url_secrets("http://127.0.0.1:8000/v1") == set()
    r = Redactor({KEY, "ab"})  # too short to be a key: never redacted (it would eat words)
    assert r(f"x {KEY} y ab") == "x *** y ab"
    assert r.deep({"k": [KEY, 1, (KEY,)]}) == {"k": ["***", 1, ("***",)]}
    # JSON-escaped forms of a key are caught too (a key with a slash or quote)
    r2 = Redactor({'a/b"c\\defgh'})
    assert "***" in r2(json.dumps({"e": 'a/b"c\\defgh'}))
    assert Redactor(set())("unchanged") == "unchanged"
