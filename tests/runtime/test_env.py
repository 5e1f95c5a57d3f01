"""The environment and the ToolBox: event streams, corpora, episode environments, tool specs,
argument validation, dispatch, records, snapshots, and a real compiled pack."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime import load_plan
from benchpack.runtime.env import (
    BUILTIN_SPECS,
    CorpusIndex,
    EpisodeEnvironment,
    ToolBox,
    ToolError,
    read_stream,
    render_result,
)
from benchpack.runtime.types import ToolHandle, ToolRecord
from benchpack.specs.plan import Plan, PlanCorpus, PlanEventStream

TASKPACKS = Path(__file__).resolve().parents[2] / "taskpacks"

PACK = """\
benchpack: 1
name: envtest
version: 0.1.0
personas:
  - id: dana
    profile: {role: Pharmacist}
services:
  - name: todo
    tables:
      tasks:
        key: id
        id_prefix: T-
        row_schema:
          type: object
          properties:
            id: {type: string}
            title: {type: string}
            priority: {type: string, enum: [urgent, normal, low]}
            done: {type: boolean, default: false}
        rows:
          - {id: T-1, title: Restock insulin fridge, priority: normal, done: false}
          - {id: T-2, title: Call Mr Brennan about INR, priority: urgent, done: false}
    operations:
      - {name: list, kind: list, table: tasks, filter_fields: [done, priority]}
      - {name: get, kind: get, table: tasks}
      - {name: create, kind: create, table: tasks, fields: [title, priority], required: [title]}
      - {name: delete, kind: delete, table: tasks}
event_streams:
  - name: activity
    description: Activity log.
    events:
      - {at: "2026-04-06T08:52:10", source: mail, action: receive_message, ref: MSG-1,
         text: Digest arrived, noise: true}
      - {at: "2026-04-06T11:30:02", source: mail, action: receive_message, ref: MSG-2,
         text: Vendor confirms maintenance Wed 09:00-13:00}
      - {at: "2026-04-07T10:02:55", source: calendar, action: edit_event, ref: EVT-3,
         text: Booking moved, data: {room: B12}, conflicts_with: MSG-2}
corpora:
  - name: web
    documents:
      - {id: d1, title: Warfarin and fluconazole interaction,
         url: "https://example.org/warfarin-fluconazole",
         text: "Fluconazole inhibits CYP2C9 and raises the INR of patients on warfarin."}
      - {id: d2, title: Insulin storage, url: "https://example.org/insulin",
         text: "Keep insulin in the fridge between 2 and 8 degrees."}
tools:
  - name: search
    description: Search the web.
    impl: {kind: corpus, corpus: web, operation: search}
    parameters: {type: object, properties: {query: {type: string}, topn: {type: integer}},
                 required: [query]}
  - name: visit
    description: Visit pages.
    impl: {kind: corpus, corpus: web, operation: visit}
    parameters: {type: object, required: [urls],
                 properties: {urls: {type: array, items: {type: string}}, goal: {type: string}}}
  - name: rules
    description: The rules.
    impl: {kind: static, result: {opening: "09:00"}}
  - name: calc
    description: A python tool.
    impl: {kind: python, entry: "tools/calc.py:run"}
    effect: write
  - name: reader
    description: read_file under another name.
    impl: {kind: builtin, name: read_file}
    parameters: {type: object, properties: {path: {type: string}}, required: [path]}
environments:
  - id: shop
    clock: "2026-04-08T09:00:00"
    files:
      - {path: notes/refills.md, content: "# Refills\\nwarfarin for P-1042\\n"}
    services: [todo]
    event_streams: [activity]
    tools: [search, visit, rules, calc, reader]
episodes:
  - id: week
    persona: dana
    environment: shop
    sessions:
      - id: first
        protocol: intent_tracking
        request: What needs attention?
        hidden_intents: [{text: Flag the INR call}]
        files:
          - {path: session/brief.md, content: "Session brief"}
        checklist: [{text: Something happens}]
"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    src = tmp_path_factory.mktemp("pack")
    (src / "pack.yaml").write_text(PACK, encoding="utf-8")
    (src / "tools").mkdir()
    (src / "tools" / "calc.py").write_text("def run(args):\n    return 1\n", encoding="utf-8")
    out = tmp_path_factory.mktemp("plan")
    res = compile_pack(src, out, use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    return load_plan(out)


@pytest.fixture
def env(plan: Plan, tmp_path: Path) -> EpisodeEnvironment:
    return EpisodeEnvironment.create(plan, "shop", tmp_path / "episode")


@pytest.fixture
def box(plan: Plan, env: EpisodeEnvironment) -> ToolBox:
    session = next(iter(plan.sessions.values()))
    env.add_session_files(session.files)
    return ToolBox(plan, session, env)


def call(box: ToolBox, name: str, args: Any, call_id: str | None = None) -> ToolRecord:
    return asyncio.run(box.call(name, args, call_id))


# ---------------------------------------------------------------------- streams


def _stream(plan: Plan) -> PlanEventStream:
    return plan.event_streams["activity"]


def test_stream_filters(plan: Plan) -> None:
    st = _stream(plan)
    assert [e["ref"] for e in read_stream(st)] == ["MSG-1", "MSG-2", "EVT-3"]
    assert [e["ref"] for e in read_stream(st, since="2026-04-06T11:30:02")] == ["MSG-2", "EVT-3"]
    assert [e["ref"] for e in read_stream(st, until="2026-04-06T11:30:02")] == ["MSG-1"]
    assert [e["ref"] for e in read_stream(st, since="2026-04-07")] == ["EVT-3"]
    assert [e["ref"] for e in read_stream(st, until="2026-04-07")] == ["MSG-1", "MSG-2"]
    assert [e["ref"] for e in read_stream(st, since="2026-04-06 09:00Z",
                                          until="2026-04-07T10:02:55+00:00")] == ["MSG-2"]
    assert [e["ref"] for e in read_stream(st, source="Calendar")] == ["EVT-3"]
    assert [e["ref"] for e in read_stream(st, query="VENDOR")] == ["MSG-2"]
    assert [e["ref"] for e in read_stream(st, query="b12")] == ["EVT-3"]  # data is searched
    assert [e["ref"] for e in read_stream(st, query="edit_event")] == ["EVT-3"]
    assert [e["ref"] for e in read_stream(st, limit=1)] == ["MSG-1"]
    with pytest.raises(ToolError, match="not an ISO time"):
        read_stream(st, since="yesterday")
    with pytest.raises(ToolError, match="limit"):
        read_stream(st, limit=0)


def test_stream_never_shows_author_annotations(plan: Plan) -> None:
    events = read_stream(_stream(plan))
    assert all("noise" not in e and "conflicts_with" not in e for e in events)
    assert set(events[2]) == {"at", "source", "action", "ref", "text", "data"}
    # the plan itself is untouched
    assert _stream(plan).events[0].noise is True


def test_stream_limit_caps_at_500() -> None:
    st = PlanEventStream.model_validate({"name": "s", "events": [
        {"at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}", "source": "x", "action": "a",
         "data": {}, "noise": False} for i in range(700)]})
    assert len(read_stream(st)) == 100
    assert len(read_stream(st, limit=10_000)) == 500


# ---------------------------------------------------------------------- corpus


def _corpus() -> CorpusIndex:
    filler = " ".join(["pharmacy opening hours staff rota delivery"] * 30)
    docs: list[dict[str, Any]] = [
        {"id": "d1", "title": "Weekly staff rota", "url": "https://ex.org/rota", "text": filler},
        {"id": "d2", "title": "Warfarin and fluconazole",
         "url": "https://ex.org/warfarin-fluconazole",
         "text": filler + " Fluconazole inhibits CYP2C9, so the INR of a patient on warfarin "
                          "rises within days; recheck the INR in 3 to 5 days. " + filler},
        {"id": "d3", "title": "Insulin storage", "url": None,
         "text": "Keep insulin in the fridge. Warfarin is mentioned once here."},
        {"id": "d4", "title": "Unrelated", "url": "https://ex.org/x", "text": "Nothing here."},
    ]
    return CorpusIndex(PlanCorpus.model_validate({"name": "web", "documents": docs}))


def test_corpus_ranks_the_relevant_document_first() -> None:
    c = _corpus()
    hits = c.search("warfarin fluconazole INR")
    assert [h["title"] for h in hits][:2] == ["Warfarin and fluconazole", "Insulin storage"]
    assert "Unrelated" not in [h["title"] for h in hits]
    assert set(hits[0]) == {"title", "url", "snippet"}
    assert hits[0]["url"] == "https://ex.org/warfarin-fluconazole"
    assert hits[1]["url"] == "d3"  # no URL: the id stands in
    snippet = hits[0]["snippet"]
    assert "Fluconazole inhibits CYP2C9" in snippet and len(snippet) <= 310
    assert snippet.startswith("…") and snippet.endswith("…")
    assert c.search("insulin")[0]["title"] == "Insulin storage"
    assert c.search("zebra") == []
    assert len(c.search("warfarin", topn=1)) == 1
    with pytest.raises(ToolError, match="query"):
        c.search("   ")


def test_corpus_title_boost() -> None:
    c = CorpusIndex(PlanCorpus.model_validate({"name": "w", "documents": [
        {"id": "body", "title": "Notes", "text": "rota rota and more words here"},
        {"id": "title", "title": "Rota", "text": "the plan and more words here too"}]}))
    assert c.search("rota")[0]["url"] == "title"


def test_corpus_visit() -> None:
    c = _corpus()
    out = c.visit(["https://ex.org/rota", "d3", "http://www.ex.org/warfarin-fluconazole/",
                   "https://nowhere.example/x"], goal="INR recheck")
    assert [o.get("title") for o in out[:3]] == ["Weekly staff rota", "Insulin storage",
                                                 "Warfarin and fluconazole"]
    assert out[1]["text"].startswith("Keep insulin") and "truncated" not in out[1]
    assert "error" in out[3] and out[3]["url"] == "https://nowhere.example/x"
    small = c.visit(["https://ex.org/warfarin-fluconazole"], goal="recheck the INR", budget=600)
    assert small[0]["truncated"] is True and len(small[0]["text"]) <= 610
    assert "recheck the INR" in small[0]["text"]
    assert c.visit("d4")[0]["text"] == "Nothing here."
    with pytest.raises(ToolError, match="urls"):
        c.visit([])


# ---------------------------------------------------------------------- environment


def test_environment_create_materialises_files_and_services(plan: Plan, tmp_path: Path) -> None:
    root = tmp_path / "episode"
    root.mkdir()
    (root / "stale.txt").write_text("from a crashed run", encoding="utf-8")
    env = EpisodeEnvironment.create(plan, "shop", root)
    assert env.workspace.files() == {"notes/refills.md": "# Refills\nwarfarin for P-1042\n"}
    assert list(env.services) == ["todo"]
    assert env.clock == "2026-04-08T09:00:00"
    env.add_session_files(plan.sessions[next(iter(plan.sessions))].files)
    assert env.workspace.files()["session/brief.md"] == "Session brief"
    with pytest.raises(KeyError, match="no environment `nope`"):
        EpisodeEnvironment.create(plan, "nope", tmp_path / "x")


def test_snapshot_restore_round_trip(plan: Plan, box: ToolBox, tmp_path: Path) -> None:
    env = box.env
    call(box, "write_file", {"path": "out/handover.md", "content": "INR call open"})
    call(box, "todo__create", {"title": "P-1042 – INR"})
    call(box, "todo__delete", {"id": "T-1"})
    call(box, "send_message", {"to": "Dr Okonjo", "text": "INR result", "channel": "email"})
    call(box, "ask_user", {"question": "Which prescriber?"})
    snap = json.loads(json.dumps(env.snapshot()))  # JSON-serialisable
    fresh = EpisodeEnvironment.create(plan, "shop", tmp_path / "resumed")
    fresh.restore(snap)
    assert fresh.snapshot() == snap
    assert fresh.workspace.files()["out/handover.md"] == "INR call open"
    assert [r["id"] for r in fresh.services["todo"].rows("tasks")] == ["T-2", "T-3"]
    assert fresh.outbox == env.outbox and fresh.asked == ["Which prescriber?"]
    # the restored environment keeps working, keys continue
    session = next(iter(plan.sessions.values()))
    rec = call(ToolBox(plan, session, fresh), "todo__create", {"title": "next"})
    assert rec.result["id"] == "T-4"


# ---------------------------------------------------------------------- toolbox


def test_specs_offer_exactly_the_session_tools(plan: Plan, box: ToolBox) -> None:
    session = next(iter(plan.sessions.values()))
    handle: ToolHandle = box  # structurally a ToolHandle (checked by mypy in toolbox.py)
    assert inspect.iscoroutinefunction(handle.call)
    names = [s["function"]["name"] for s in box.specs]
    assert names == session.tools
    for spec in box.specs:
        assert spec["type"] == "function"
        assert set(spec["function"]) == {"name", "description", "parameters"}
        assert spec["function"]["parameters"]["type"] == "object"
    by_name = {s["function"]["name"]: s["function"] for s in box.specs}
    assert by_name["read_file"]["parameters"] == BUILTIN_SPECS["read_file"]["parameters"]
    assert by_name["todo__create"]["parameters"]["required"] == ["title"]
    assert set(BUILTIN_SPECS) == {"read_file", "write_file", "edit_file", "list_files", "glob",
                                  "grep", "ask_user", "send_message", "shell"}
    assert "shell" not in names  # opt-in (`builtin_tools: [shell]`), never a default
    # specs are copies: an adapter editing them changes nothing
    by_name["read_file"]["parameters"]["properties"].clear()
    assert BUILTIN_SPECS["read_file"]["parameters"]["properties"]


def test_unknown_and_unavailable_tools_are_error_records(plan: Plan, env: EpisodeEnvironment,
                                                         box: ToolBox) -> None:
    rec = call(box, "todo__creat", {"title": "x"})
    assert rec.result is None and rec.error is not None
    assert "unknown tool `todo__creat`" in rec.error and "did you mean `todo__create`" in rec.error
    session = next(iter(plan.sessions.values())).model_copy(update={"tools": ["read_file"]})
    small = ToolBox(plan, session, env)
    assert [s["function"]["name"] for s in small.specs] == ["read_file"]
    rec = call(small, "write_file", {"path": "x", "content": "y"})
    assert rec.error is not None and "not available in this session" in rec.error
    assert not (env.workspace.root / "x").exists()
    assert len(small.records) == 1


@pytest.mark.parametrize("name,args,needle", [
    ("todo__create", {}, "'title' is a required property"),
    ("todo__create", {"title": 5}, "title: 5 is not of type 'string'"),
    ("todo__create", {"title": "x", "priority": "asap"}, "priority: 'asap' is not one of"),
    ("read_file", {"path": "notes/refills.md", "file": "x"}, "Additional properties"),
    ("read_file", {"path": "notes/refills.md", "limit": 0}, "limit: 0 is less than"),
    ("search", {"query": ["a"]}, "query: ['a'] is not of type 'string'"),
    ("todo__list", "not a dict", "must be a JSON object"),
])
def test_arguments_are_validated(box: ToolBox, name: str, args: Any, needle: str) -> None:
    rec = call(box, name, args)
    assert rec.error is not None and needle in rec.error, rec.error
    assert rec.error.startswith(f"invalid arguments for `{name}`") or "JSON object" in rec.error
    assert rec.result is None
    assert len(box.env.services["todo"].rows("tasks")) == 2


def test_records_are_stamped(box: ToolBox) -> None:
    box.turn, box.step = 3, 7
    r1 = call(box, "read_file", {"path": "notes/refills.md"}, call_id="c-1")
    box.step = 8
    r2 = call(box, "todo__create", {"title": "P-1042 – INR"})
    r3 = call(box, "nope", {})
    r4 = call(box, "calc", {})
    assert box.records == [r1, r2, r3, r4]
    assert (r1.call_id, r1.turn, r1.step, r1.effect, r1.error) == ("c-1", 3, 7, "read", None)
    assert (r2.call_id, r2.turn, r2.step, r2.effect) == ("call-2", 3, 8, "write")
    assert r2.result == {"id": "T-3", "title": "P-1042 – INR", "done": False}
    assert r3.effect == "read" and r3.error is not None
    assert r4.effect == "write"  # the plan's effect for pack tools
    assert r1.tool_name == "read_file" and r1.call == {"path": "notes/refills.md"}
    assert all(r.started_at > 0 and r.duration >= 0 for r in box.records)
    json.dumps([r.as_dict() for r in box.records])  # everything JSON-serialisable


def test_recorded_arguments_are_copies(box: ToolBox) -> None:
    args: dict[str, Any] = {"title": "x"}
    rec = call(box, "todo__create", args)
    args["title"] = "changed"
    assert rec.call == {"title": "x"}


def test_builtin_dispatch(box: ToolBox) -> None:
    env = box.env
    assert call(box, "list_files", {}).result["files"] == ["notes/refills.md",
                                                           "session/brief.md"]
    assert call(box, "write_file", {"path": "a.md", "content": "x y"}).result["created"] is True
    assert call(box, "edit_file", {"path": "a.md", "old": "y", "new": "z"}).error is None
    assert call(box, "glob", {"pattern": "*.md"}).result["matches"] == ["a.md"]
    assert call(box, "grep", {"pattern": "warfarin"}).result["matches"][0]["line"] == 2
    assert call(box, "reader", {"path": "a.md"}).result["content"] == "x z"
    rec = call(box, "read_file", {"path": "../../etc/passwd"})
    assert rec.error is not None and "leaves the workspace" in rec.error
    box.turn = 2
    assert call(box, "ask_user", {"question": "Which patient?"}).result["status"] == "asked"
    assert env.asked == ["Which patient?"]
    sent = call(box, "send_message", {"to": "Dr Okonjo", "text": "hello"})
    assert sent.result == {"status": "sent", "id": "msg-1"}
    assert env.outbox == [{"id": "msg-1", "to": "Dr Okonjo", "text": "hello", "channel": None,
                           "session": box.session.id, "turn": 2}]
    assert call(box, "send_message", {"to": " ", "text": "x"}).error == "give `to`, the recipient"
    read, written = env.workspace.take_io()
    assert read == {"a.md", "notes/refills.md"} and written == {"a.md"}


def test_service_stream_corpus_static_dispatch(box: ToolBox) -> None:
    assert [r["id"] for r in call(box, "todo__list", {"priority": "urgent"}).result] == ["T-2"]
    rec = call(box, "todo__get", {"id": "T-9"})
    assert rec.error == "no row of `tasks` with id T-9; known ids: T-1, T-2"
    events = call(box, "activity__read", {"source": "mail"}).result
    assert [e["ref"] for e in events] == ["MSG-1", "MSG-2"]
    assert all("noise" not in e and "conflicts_with" not in e for e in events)
    hits = call(box, "search", {"query": "fluconazole warfarin"}).result
    assert hits[0]["url"] == "https://example.org/warfarin-fluconazole"
    pages = call(box, "visit", {"urls": [hits[0]["url"], "https://nope"], "goal": "INR"}).result
    assert pages[0]["title"] == "Warfarin and fluconazole interaction" and "error" in pages[1]
    static = call(box, "rules", {})
    assert static.result == {"opening": "09:00"}
    static.result["opening"] = "changed"
    assert call(box, "rules", {}).result == {"opening": "09:00"}


def test_python_tools(plan: Plan, env: EpisodeEnvironment) -> None:
    session = next(iter(plan.sessions.values()))
    rec = call(ToolBox(plan, session, env), "calc", {})
    assert rec.error is not None and "python tools need --allow-python" in rec.error
    rec = call(ToolBox(plan, session, env, allow_python=True), "calc", {})
    assert (rec.error, rec.result) == (None, 1)  # tools/calc.py, embedded, run in the sandbox

    async def calc(args: dict[str, Any]) -> dict[str, Any]:
        return {"answer": 42}

    box = ToolBox(plan, session, env, allow_python=True, python_tools={"calc": calc})
    assert call(box, "calc", {}).result == {"answer": 42}
    box = ToolBox(plan, session, env, allow_python=True, python_tools={"calc": lambda a: object()})
    rec = call(box, "calc", {})
    assert rec.error is not None and "not JSON" in rec.error


def test_tool_bugs_become_error_records(box: ToolBox, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any) -> Any:
        raise RuntimeError("kaputt")

    monkeypatch.setattr(box.env.services["todo"], "call", boom)
    rec = call(box, "todo__list", {})
    assert rec.error == "internal error in `todo__list`: RuntimeError: kaputt"


def test_render_result() -> None:
    def rec(result: Any, error: str | None = None) -> ToolRecord:
        return ToolRecord("c", "t", {}, result, error, 0.0, 0.0)

    assert render_result(rec(None, "bad path")) == "Error: bad path"
    assert render_result(rec("plain text")) == "plain text"
    assert render_result(rec({"a": "é"})) == '{"a": "é"}'
    long = render_result(rec({"content": "x" * 50_000}))
    assert len(long) < 20_200 and "truncated: showing 20000 of 50015 characters" in long
    assert render_result(rec("y" * 50), limit=10).startswith("y" * 10 + "\n[… truncated")


# ---------------------------------------------------------------------- a real pack


def test_toolbox_over_the_compiled_pharmacist_week_plan(tmp_path: Path) -> None:
    res = compile_pack(TASKPACKS / "pharmacist-week", tmp_path / "plan", use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    plan = load_plan(tmp_path / "plan")
    session = next(iter(plan.sessions.values()))
    env = EpisodeEnvironment.create(plan, session.environment, tmp_path / "episode")
    env.add_session_files(session.files)
    box = ToolBox(plan, session, env)
    assert [s["function"]["name"] for s in box.specs] == session.tools
    patient = call(box, "records__get_patient", {"id": "P-1042"})
    assert patient.error is None and patient.result["name"] == "Walter Brennan"
    assert patient.effect == "read"
    task = call(box, "todo__create", {"title": "P-1042 – Call about INR", "due": "2026-03-12",
                                      "priority": "urgent"})
    assert task.error is None and task.result["id"] == "T-105" and task.effect == "write"
    assert "handbook/house-rules.md" in call(box, "list_files", {}).result["files"]
    assert call(box, "records__get_patient", {"id": "P-0000"}).error.startswith(  # type: ignore[union-attr]
        "no row of `patients` with id P-0000; known ids: P-1042")


def test_specs_are_shared_across_sessions_but_each_session_may_change_its_own(
        plan: Plan, env: EpisodeEnvironment) -> None:
    session = next(iter(plan.sessions.values()))
    a, b = ToolBox(plan, session, env), ToolBox(plan, session, env)
    assert a.shared_specs is b.shared_specs  # serialised and hashed once a run
    assert a.specs == a.shared_specs and a.specs is not a.shared_specs
    pristine = json.loads(json.dumps(a.shared_specs))
    a.specs[0]["function"]["description"] = "changed by a harness"  # its own copy only
    a.specs.append({"type": "function", "function": {"name": "extra"}})
    assert b.specs == pristine and b.shared_specs == pristine == a.shared_specs
    a.specs = [{"type": "function", "function": {"name": "only"}}]
    assert a.shared_specs is a.specs  # replaced for this session: what it now offers


def test_litellm_gets_a_copy_of_the_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm adapts tool schemas for some providers in place: the shared specs must not
    change under the next session."""
    import asyncio

    from benchpack.runtime import llm as llm_mod

    shared = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    seen: list[Any] = []

    class FakeLitellm:
        async def acompletion(self, **kw: Any) -> Any:
            kw["tools"][0]["function"]["parameters"]["additionalProperties"] = False
            seen.append(kw["tools"])
            raise RuntimeError("stop here")

    monkeypatch.setattr(llm_mod, "import_litellm", lambda: FakeLitellm())
    req = llm_mod.BackendRequest(model="openai/x", messages=[], tools=shared, params={},
                                 seed=None, timeout_s=1.0, api_base=None)
    with pytest.raises(RuntimeError):
        asyncio.run(llm_mod.LiteLLMBackend()(req))
    assert seen and seen[0] is not shared
    assert shared[0]["function"]["parameters"] == {"type": "object"}
