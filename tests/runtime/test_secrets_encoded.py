"""Issue 27: one redaction path (`benchpack.specs.secrets`) for every byte that leaves the
process — the store, the response cache, exports, HTML reports, the viewer, the console — and
it knows a secret's encoded forms (base64 at any offset, URL-encoded, JSON-escaped). Before: a
provider that echoed the key in its reply left it in plain text in `responses.sqlite3`, and the
base64 form of `user:KEY@` in an `--api-base` URL (the Basic authorization header) was stored
and printed unmasked everywhere."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401

from benchpack.cli import cli
from benchpack.compiler import compile_pack
from benchpack.specs.secrets import Redactor

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-proj-CACHELEAK0123456789abcdef"
PASSWORD = "urlpass-SECRET-4242"


def _forms(secret: str) -> list[str]:
    """What a leak looks like: the secret, its base64 alone and after a user name (Basic
    auth), URL-encoded."""
    out = [secret, base64.b64encode(secret.encode()).decode().rstrip("="),
           base64.b64encode(f"user:{secret}".encode()).decode().rstrip("=")]
    if quote(secret, safe="") != secret:
        out.append(quote(secret, safe=""))
    return out


def test_encoded_forms_are_masked_at_any_offset() -> None:
    r = Redactor({KEY, "p@ss/w+rd=long!"})
    for prefix in ("", "a", "ab", "abc", "user:", "Bearer "):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            blob = encode((prefix + KEY + " tail").encode()).decode()
            out = r(f"Authorization: Basic {blob}")
            assert blob not in out and "***" in out, (prefix, out)
    assert r(quote("p@ss/w+rd=long!", safe="")) == "***"
    assert r(json.dumps({"k": "p@ss/w+rd=long!"})) == '{"k": "***"}'
    assert r("no secret here, dXNlcjpwYXNz") == "no secret here, dXNlcjpwYXNz"


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    out = tmp_path / "plan"
    assert compile_pack(ROOT / "taskpacks" / "pharmacist-week", out, use_cache=False).ok
    return out


def _seen(tmp: Path, db: Path, runner: CliRunner) -> str:
    """Every byte a user could see besides the console: store, cache, export, HTML."""
    out = [db.read_bytes().decode("latin-1")]
    for f in (tmp / "cache").rglob("*"):
        if f.is_file():
            out.append(f.read_bytes().decode("latin-1"))
    res = runner.invoke(cli, ["export", "--db", str(db), "-o", str(tmp / "export"),
                              "--format", "csv"])
    assert res.exit_code == 0, res.output
    out += [p.read_text(errors="replace") for p in (tmp / "export").iterdir()]
    res = runner.invoke(cli, ["report", "--db", str(db), "--run", "all", "--format", "html",
                              "-o", str(tmp / "r.html")])
    assert res.exit_code == 0, res.output
    out.append((tmp / "r.html").read_text())
    return "\n".join(out)


def test_an_echoed_key_is_not_in_the_cache(fake_openai: FakeOpenAI, plan: Path,
                                           tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    fake_openai.route("agent-model", lambda body: f"Your key is {KEY}, in base64 "
                      f"{base64.b64encode(KEY.encode()).decode()}.")
    db = tmp_path / "b.duckdb"
    runner = CliRunner()
    res = runner.invoke(cli, ["run", str(plan), "--agent", "litellm:openai/agent-model",
                              "--api-base", fake_openai.base_url, "--simulator", "rules",
                              "--judge", "rules", "--db", str(db), "--cache-dir",
                              str(tmp_path / "cache"), "--session", "inr-clinic-review",
                              "--quiet"])
    assert res.exit_code == 0, res.output
    assert list((tmp_path / "cache").rglob("responses.sqlite3"))
    seen = res.output + _seen(tmp_path, db, runner)
    assert "Your key is ***" in seen
    for form in _forms(KEY):
        assert form not in seen, form


def test_the_basic_auth_form_of_an_api_base_password(fake_openai: FakeOpenAI, plan: Path,
                                                     tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`--api-base http://user:PASSWORD@host/v1`: the client sends `Authorization: Basic
    base64(user:PASSWORD)`; a provider that echoes the header leaks the base64 form."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def echo(body: dict[str, Any]) -> str:
        return f"I saw: {fake_openai.headers[-1].get('authorization')}"

    fake_openai.route("agent-model", echo)
    base = fake_openai.base_url.replace("http://", f"http://user:{PASSWORD}@")
    db = tmp_path / "b.duckdb"
    runner = CliRunner()
    res = runner.invoke(cli, ["run", str(plan), "--agent", "litellm:openai/agent-model",
                              "--api-base", base, "--simulator", "rules", "--judge", "rules",
                              "--db", str(db), "--cache-dir", str(tmp_path / "cache"),
                              "--session", "inr-clinic-review", "--quiet"])
    assert res.exit_code == 0, res.output
    assert any("basic" in (h.get("authorization") or "").lower()
               for h in fake_openai.headers), "the client sent no Basic authorization"
    seen = res.output + _seen(tmp_path, db, runner)
    assert "I saw: " in seen
    for form in _forms(PASSWORD):
        assert form not in seen, form


def test_readers_mask_what_an_older_writer_stored(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written unredacted (an older benchpack, another environment): HTML reports,
    exports and the viewer mask every secret of the reader's environment on the way out."""
    from starlette.testclient import TestClient

    from benchpack.reports.view.app import create_app
    from benchpack.runtime.store import SessionRows, Store

    db = tmp_path / "old.duckdb"
    store = Store(db, redactor=Redactor(()))
    store.upsert_run({"run_id": "r", "created_at": 0.0, "agent": "a", "status": "finished",
                      "config": {}})
    store.write_now(SessionRows("r", "s", 0, {
        "run_id": "r", "session_id": "s", "repeat": 0, "name": "s", "status": "error",
        "error_kind": "agent", "agent": "a", "protocol": "verified_outcome",
        "error": f"provider said {KEY}"}, {
        "messages": [("r", "s", 0, 0, 1, "assistant", f"key {KEY}", None, None, None)]}))
    store.close()
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", KEY)
    runner = CliRunner()
    seen = _seen(tmp_path, tmp_path / "old.duckdb", runner).replace(
        db.read_bytes().decode("latin-1"), "")  # the store itself is as it was written
    client = TestClient(create_app(db), base_url="http://127.0.0.1")
    for url in ("/", "/runs/r", "/session?run=r&session=s&repeat=0"):
        page = client.get(url)
        assert page.status_code == 200
        seen += page.text
    assert "provider said ***" in seen
    for form in _forms(KEY):
        assert form not in seen, form
