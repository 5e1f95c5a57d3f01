"""The π-Bench app toolsets (issue 28: benchpack's own Simple Note, Gmail, Todoist, Phone and
Amazon, pibench_tools/<app>.py), called directly over a State as the sandbox worker gives it:
the operations the tasks name change the state the derived rules read."""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

import pytest

from benchpack.compiler.importers.pibench_apps import APPS, TOOLS_DIR
from benchpack.runtime.env import ServiceState
from benchpack.runtime.env.pytools import API
from benchpack.specs.plan import PlanService


class App:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, app: str,
                 rows: dict[str, list[dict[str, Any]]] | None = None) -> None:
        api = types.ModuleType("benchpack_tools")
        exec(API, api.__dict__)  # the worker's own `benchpack_tools`
        monkeypatch.setitem(sys.modules, "benchpack_tools", api)
        spec = importlib.util.spec_from_file_location(f"pibench_{app}", TOOLS_DIR / f"{app}.py")
        assert spec is not None and spec.loader is not None
        self.mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.mod)
        service = ServiceState(PlanService.model_validate({
            "name": app, "operations": [],
            "tables": {t: {"key": k, "rows": (rows or {}).get(t, [])}
                       for t, k in APPS[app].items()}}))
        self.db = self.mod.State(service.snapshot(), service.key_info())
        self.error = api.ToolError

    def __call__(self, op: str, **args: Any) -> Any:
        self.db._begin()
        return getattr(self.mod, op)(db=self.db, **args)


def test_notes_keep_their_history_and_the_exact_title_search(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    n = App(monkeypatch, "simple_note")
    assert n("create_note", title="Memo", content="a")["note_id"] == "note_1"
    n("create_note", title="Memo draft", content="b")
    assert n("search_notes", query="memo") == [{"note_id": "note_1", "title": "Memo"},
                                               {"note_id": "note_2", "title": "Memo draft"}]
    # only a search whose query is exactly a note's title marks it
    assert [r["exact_title_search"] for r in n.db.rows("notes")] == [False, False]
    n("search_notes", query="Memo")
    assert [r["exact_title_search"] for r in n.db.rows("notes")] == [True, False]
    n("add_content_to_note", note_id="note_1", added_content="!", append_or_prepend="append")
    n("add_content_to_note", note_id="note_1", added_content="<", append_or_prepend="prepend")
    n("update_note", note_id="note_1", content="final")
    row = n.db.get("notes", "note_1")
    assert (row["history"], row["content"]) == ("create,add,add,update", "final")
    n("delete_note", note_id="note_2")
    assert [r["note_id"] for r in n.db.rows("deleted")] == ["note_2"]
    # ids are never reused, a deleted note is gone
    assert n("create_note", title="x")["note_id"] == "note_3"
    with pytest.raises(n.error, match="does not exist"):
        n("show_note", note_id="note_2")
    with pytest.raises(n.error, match="append_or_prepend"):
        n("add_content_to_note", note_id="note_1", added_content="x", append_or_prepend="mid")


def test_mail_drafts_become_outbox_threads_once(monkeypatch: pytest.MonkeyPatch) -> None:
    g = App(monkeypatch, "gmail")
    d = g("create_draft", recipient_email_addresses=[], body="b")["draft_id"]
    with pytest.raises(g.error, match="no recipient"):
        g("send_email_from_draft", draft_id=d)
    g("update_draft", draft_id=d, email_addresses=["a@x.org"], subject="S")
    assert g("send_email_from_draft", draft_id=d)["email_thread_id"] == "thread_1"
    with pytest.raises(g.error, match="already been sent"):
        g("send_email_from_draft", draft_id=d)
    assert g("show_outbox_threads") == [{"email_thread_id": "thread_1", "subject": "S",
                                         "email_addresses": ["a@x.org"]}]
    assert g("show_thread", email_thread_id="thread_1")["body"] == "b"
    assert g("login", username="u", password="p")["message"] == "Logged in."


def test_todo_items_are_created_labelled_and_cleaned_up(monkeypatch: pytest.MonkeyPatch) -> None:
    t = App(monkeypatch, "todoist")
    p = t("create_project", name="Board")["project_id"]
    s = t("create_section", name="Tonight", project_id=p)["section_id"]
    k = t("create_task", title="Slides", project_id=p, section_id=s)["task_id"]
    lab = t("create_label", name="launch-blocker")["label_id"]
    t("add_label_to_task", label_id=lab, task_id=k)
    c = t("post_task_comment", content="escalate at 18:30", task_id=k)["task_comment_id"]
    assert (p, s, k, lab, c) == ("project_1", "section_1", "task_1", "label_1", "task_comment_1")
    assert t.db.get("tasks", k)["labels"] == [lab]
    t("remove_label_from_task", task_id=k, label_id=lab)
    for op, key in (("delete_task_comment", {"task_comment_id": c}), ("delete_task",
                    {"task_id": k}), ("delete_label", {"label_id": lab}),
                    ("delete_section", {"section_id": s}), ("delete_project", {"project_id": p})):
        t(op, **key)
    assert sorted(r["kind"] for r in t.db.rows("deleted")) == [
        "comments", "labels", "projects", "sections", "tasks"]
    assert all(not t.db.rows(table) for table in ("projects", "sections", "tasks", "labels",
                                                  "comments"))
    with pytest.raises(t.error, match="does not exist"):
        t("create_section", name="x", project_id=p)


def test_phone_and_shop(monkeypatch: pytest.MonkeyPatch) -> None:
    ph = App(monkeypatch, "phone")
    assert ph("send_text_message", phone_number="287", message="hi")["text_message_id"] == "text_1"
    assert [m["message"] for m in ph("show_text_message_window", phone_number="287")] == ["hi"]
    assert ph("search_contacts", query="287") == []
    shop = App(monkeypatch, "amazon", {"products": [
        {"product_id": "product_1", "name": "Darn Tough Hiker Micro Crew Cushion Socks",
         "price": None, "rating": None, "stock": None}]})
    assert [p["product_id"] for p in shop("search_products", query="hiker socks")] == ["product_1"]
    shop("add_product_to_cart", product_id="product_1", quantity=1)
    shop("add_product_to_cart", product_id="product_1", quantity=1)
    assert shop("show_cart") == {"cart_items": [{"product_id": "product_1", "quantity": 2}]}
    with pytest.raises(shop.error, match="at least 1"):
        shop("add_product_to_cart", product_id="product_1", quantity=0)
    with pytest.raises(shop.error, match="does not exist"):
        shop("add_product_to_cart", product_id="product_9", quantity=1)
