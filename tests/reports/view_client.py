"""Test clients of `bench view` as a browser on this machine talks to it: under a localhost
name (the viewer refuses others, `guard.py`) and, for SQL, by the SQL page's form."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient


def local_client(app: Any) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1")


def run_sql(client: TestClient, q: str, path: str = "/sql") -> Any:
    """POST `q` as the SQL page's form does (with its token)."""
    viewer = client.app.state.viewer  # type: ignore[attr-defined]
    return client.post(path, data={"q": q, "token": viewer.form_token})
