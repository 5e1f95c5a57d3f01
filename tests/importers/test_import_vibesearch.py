"""`bench import vibesearch` (issue 13): VibeSearchBench task files become staged-disclosure
sessions with ground-truth graphs; the pack compiles with no diagnostics, re-imports byte for
byte, IMPORT_REPORT.md accounts for every source field, broken sources are one located line, and
a run scores the ground-truth answer 1.0 and "Done." 0. The site's `final_extractions` files are
a model's answer graphs, not ground truth: refused unless asked for. Fixtures of our own in the
release's shapes (tests/fixtures/vibesearch_release/); the released files in ../shared/peer-data
are used when they are there (skipped otherwise)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
import yaml
from click.testing import CliRunner

from benchpack.cli.main import cli
from benchpack.compiler import compile_pack
from benchpack.compiler.importers import ImportError_, import_pack, vibesearch
from benchpack.runtime.runner import RunOptions, run_plan

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vibesearch_release"


def _peer_root() -> Path:
    if os.environ.get("BENCH_PEER_DATA"):
        return Path(os.environ["BENCH_PEER_DATA"])
    here = Path(__file__).resolve()
    found = [p / "shared" / "peer-data" for p in here.parents
             if (p / "shared" / "peer-data").is_dir()]
    return found[0] if found else here.parent / "no-peer-data"


PEER = _peer_root() / "vibesearchbench"
needs_peer = pytest.mark.skipif(not (PEER / "data" / "final_extractions").is_dir(),
                                reason="../shared/peer-data (VibeSearchBench files) is not here")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _compile(pack: Path, out: Path) -> Path:
    """Every imported pack compiles under --strict (issue 28): what the importer knowingly
    leaves to the user is marked, not warned about."""
    result = compile_pack(pack, out, use_cache=False, strict=True)
    assert result.ok, [d.format() for d in result.diagnostics]
    assert not result.diagnostics, [d.format() for d in result.diagnostics]
    return out


def _episode(pack: Path, eid: str) -> tuple[str, dict]:
    text = (pack / "episodes" / f"{eid}.yaml").read_text(encoding="utf-8")
    return text, yaml.safe_load(text)["episodes"][0]


# ------------------------------------------------------------------------- the written pack


def test_import_compiles_clean_and_reimports_byte_identical(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    import_pack("vibesearch", FIX / "tasks", a)
    import_pack("vibesearch", FIX / "tasks", b)
    first = _files(a)
    assert first == _files(b)
    import_pack("vibesearch", FIX / "tasks", a)  # over itself
    assert _files(a) == first
    assert set(first) == {"pack.yaml", "IMPORT_REPORT.md", "episodes/daily-007.yaml",
                          "episodes/pro-012.yaml", "graphs/daily-007.json",
                          "graphs/pro-012.json"}
    _compile(a, tmp_path / "plan")


def test_tasks_map_to_staged_sessions_with_named_graphs(tmp_path: Path) -> None:
    pack = tmp_path / "p"
    res = import_pack("vibesearch", FIX / "tasks", pack)
    assert res.sessions == 2
    text, ep = _episode(pack, "daily-007")
    assert text.splitlines()[1] == "# benchpack: literal"
    assert "# user_queries[1]: 临湖镇有哪些茶馆？" in text
    s = ep["sessions"][0]
    assert s["protocol"] == "staged_disclosure"
    assert s["metadata"] == {"category": "daily", "language": "zh", "tags": ["vibesearch"]}
    assert [(st["when"]["kind"], st["line"]) for st in s["stages"]] == [
        ("start", "我想在临湖镇找个能喝茶看书的茶馆，有什么推荐吗？"),
        ("mentions", "哪几家茶馆早上八点以前开门？"),
        ("mentions", "开得早的那家，龙井一壶多少钱？")]
    # each later stage needs the reply to address the query before it
    assert s["stages"][2]["when"]["about"] == "哪几家茶馆早上八点以前开门？"
    assert s["description"].startswith("请推荐临湖镇")
    # node ids resolve to names; Chinese kept as is; source order and count kept
    graph = json.loads((pack / "graphs" / "daily-007.json").read_text(encoding="utf-8"))
    assert graph[2] == {"head": "听雨茶馆", "relation": "开门时间", "tail": "早上七点半"}
    assert len(graph) == 5
    text, ep = _episode(pack, "pro-012")
    s = ep["sessions"][0]
    assert s["metadata"] == {"category": "pro", "domain": "local history", "difficulty": "hard",
                             "language": "en", "tags": ["vibesearch"]}
    assert '# source field source_notes: "invented for benchpack tests"' in text
    personas = {p["id"]: p for p in yaml.safe_load((pack / "pack.yaml").read_text())["personas"]}
    assert personas["p-pro-012"]["profile"]["role"].startswith("A retired teacher")


def test_report_names_every_source_field(tmp_path: Path) -> None:
    pack = tmp_path / "p"
    import_pack("vibesearch", FIX, pack)  # tasks + the site's extraction and trajectory
    report = (pack / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    for field, fate, _ in (vibesearch.TASK_FIELDS + vibesearch.VIEWER_FIELDS
                           + vibesearch.EXTRACTION_FIELDS):
        assert f"| `{field}` | {fate} |" in report
    assert "2 task file(s), 1 trajectory file(s), 1 extraction file(s)" in report
    assert "9 graph triples" in report  # 5 + 4: the extraction's 3 are not ground truth
    assert "Nodes in no triple (not scored): 1." in report  # 湖心岛
    assert "- `source_notes`: task_012_tide_mills" in report
    assert ("`site/data/final_extractions/daily/task_007_tea_house.json`: dropped (a model's "
            "answer graph") in report
    assert "`README.md`: not a `.json` file" in report and "gold_agent.yaml" in report


def test_extractions_are_refused_unless_asked_for_then_labelled(tmp_path: Path) -> None:
    with pytest.raises(ImportError_, match=r"final_extractions/daily/task_007_tea_house.json:1:1"
                       r": the triplets of a `final_extractions` file are one model's answer "
                       r"graph, not VibeSearchBench's ground truth"):
        import_pack("vibesearch", FIX / "site", tmp_path / "no")
    pack = tmp_path / "p"
    res = import_pack("vibesearch", FIX / "site", pack, graphs_from_extractions=True)
    assert res.sessions == 1 and any("not the ground truth" in n for n in res.notes)
    text, ep = _episode(pack, "daily-007")
    s = ep["sessions"][0]
    assert "MODEL'S ANSWER GRAPH" in text
    assert s["metadata"]["tags"] == ["vibesearch", "graph:model-extraction"]
    assert s["title"] == "临湖镇茶馆"
    assert s["stages"] == [{"id": "st1", "title": "opening", "when": {"kind": "start"},
                            "line": "请推荐临湖镇适合喝茶看书的茶馆，告诉我哪几家早上八点以前开门。"}]
    assert len(json.loads((pack / "graphs" / "daily-007.json").read_bytes())) == 3
    # one stage only (the release's direct mode): marked as left for the user, W308 silenced
    # in the session and listed in the report, so --strict passes
    assert s["lint"] == {"ignore": ["W308"]}
    assert "lint.ignore W308 (left for you to fill)" in text
    report = (pack / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    assert "## Left for you to fill" in report and "- `daily-007`: one stage only" in report
    _compile(pack, tmp_path / "plan")


# ------------------------------------------------------------------------- broken sources


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / "src" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _task(**over: object) -> str:
    data = json.loads((FIX / "tasks" / "pro" / "task_012_tide_mills.json").read_text())
    data.update(over)
    return json.dumps({k: v for k, v in data.items() if v is not None}, ensure_ascii=False)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("t.json", '{"task_id": "x",\n "triples": [', r"t\.json:2:14: not JSON \(Expecting value\)"),
    ("t.json", "[1, 2]", r"t\.json:1:1: expected a JSON object, found list"),
    ("t.json", '{"id": 1}', r"t\.json:1:1: not a VibeSearchBench task, trajectory or extraction "
                            r"file \(keys: id\)"),
    ("t.json", _task(triples=[]), r"t\.json: field `triples` must be a non-empty list"),
    ("t.json", _task(triples=[{"head_id": "m1", "tail_id": "y1"}]),
     r"t\.json: `triples\[0\]` must be \{head_id, relation, tail_id\}"),
    ("t.json", _task(final_query=None), r"t\.json: field `final_query` must be non-empty text"),
    ("t.json", _task(sub_queries="one"), r"t\.json: field `sub_queries` must be a list of texts"),
    ("t.json", _task(nodes=[{"node_id": "m1"}]), r"t\.json: `nodes\[0\]` must be \{node_id, "
                                                 r"node_name\}"),
    ("pro/1.json", '{"qid": "1", "total": 1, "triplets": [{"head": "a", "relation": "r"}]}',
     r"1\.json:1:1: the triplets of a `final_extractions` file are one model's answer graph"),
])
def test_broken_sources_are_one_located_line(tmp_path: Path, name: str, text: str,
                                             message: str) -> None:
    path = _write(tmp_path, name, text)
    with pytest.raises(ImportError_, match=message) as exc:
        import_pack("vibesearch", path, tmp_path / "out")
    assert "\n" not in str(exc.value) and str(exc.value).startswith(str(path))
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_cli_errors_are_one_line_exit_1(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.json", "[1]")
    r = CliRunner().invoke(cli, ["import", "vibesearch", str(path), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.output.strip().splitlines() == [f"✗ {path}:1:1: expected a JSON object, found list "
                                             "(VibeSearchBench task, trajectory and extraction "
                                             "files are objects)"]
    r = CliRunner().invoke(cli, ["import", "vibesearch", str(tmp_path / "nope"), "-o",
                                 str(tmp_path / "o")])
    assert r.exit_code == 1 and r.output.startswith(f"✗ {tmp_path / 'nope'}: no such file")
    r = CliRunner().invoke(cli, ["import", "tau2", str(path), "-o", str(tmp_path / "o"),
                                 "--graphs-from-extractions"])
    assert r.exit_code == 2 and "an option of the vibesearch format" in r.output
    r = CliRunner().invoke(cli, ["import", "vibesearch", str(FIX / "tasks"), "-o",
                                 str(tmp_path / "ok")])
    assert r.exit_code == 0, r.output
    assert "2 sessions in 6 files" in r.output


# ------------------------------------------------------------------------- a run


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("vs")
    import_pack("vibesearch", FIX / "tasks", tmp / "pack")
    return _compile(tmp / "pack", tmp / "plan")


def _scores(plan: Path, tmp: Path, agent: Path) -> dict[str, tuple[object, ...]]:
    db = tmp / "bench.duckdb"
    s = run_plan(RunOptions(plan=plan, agent=f"scripted:{agent}", judge="rules",
                            simulator="rules", db=db, run_id="r", progress=False,
                            cache_dir=tmp / "cache"))
    assert s.errors == 0 and s.finished == 2
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT name, stages_disclosed, kg_status, recall, precision, f1 "
                           "FROM sessions ORDER BY name").fetchall()
    finally:
        con.close()
    return {str(r[0]): r[1:] for r in rows}


def test_ground_truth_answer_scores_full_marks(plan: Path, tmp_path: Path) -> None:
    # by hand: daily-007 predicts the 5 ground-truth triples (5/5 covered, 5/5 supporting),
    # pro-012 the 4 (4/4, 4/4): recall = precision = F1 = 1; every stage disclosed
    assert _scores(plan, tmp_path, FIX / "gold_agent.yaml") == {
        "daily-007": (2, "ok", 1.0, 1.0, 1.0), "pro-012": (1, "ok", 1.0, 1.0, 1.0)}


def test_done_only_agent_scores_zero(plan: Path, tmp_path: Path) -> None:
    agent = tmp_path / "done.yaml"
    agent.write_text("sessions:\n" + "".join(f"  {s}:\n" + "    - say: Done.\n" * 40
                                             for s in ("daily-007", "pro-012")),
                     encoding="utf-8")
    # no stage met, and "Done." is no graph: 0 of 5 and 0 of 4 covered, nothing predicted
    got = _scores(plan, tmp_path, agent)
    for name in ("daily-007", "pro-012"):
        stages, status, recall, precision, f1 = got[name]
        assert (stages, recall, precision, f1) == (0, 0.0, 0.0, 0.0)
        assert status in ("malformed", "empty")


def test_echoing_agent_scores_zero(plan: Path, tmp_path: Path) -> None:
    # an agent that repeats the user's words may advance stages (the trigger is "addresses the
    # previous query"), but its final answer is no graph: the score stays 0
    agent = tmp_path / "echo.yaml"
    agent.write_text(yaml.safe_dump({"sessions": {
        "daily-007": [{"say": "我想在临湖镇找个能喝茶看书的茶馆，有什么推荐吗"}] * 40,
        "pro-012": [{"say": "What is known about the old tide mills of the Verrin estuary"}] * 40,
    }}, allow_unicode=True), encoding="utf-8")
    got = _scores(plan, tmp_path, agent)
    assert {n: r[2:] for n, r in got.items()} == {"daily-007": (0.0, 0.0, 0.0),
                                                  "pro-012": (0.0, 0.0, 0.0)}


# ------------------------------------------------------------------------- released files


@needs_peer
def test_released_extractions_import_with_their_triple_counts(tmp_path: Path) -> None:
    with pytest.raises(ImportError_, match="one model's answer graph"):
        import_pack("vibesearch", PEER, tmp_path / "refused")
    pack = tmp_path / "p"
    res = import_pack("vibesearch", PEER, pack, graphs_from_extractions=True)
    sources = sorted((PEER / "data" / "final_extractions").rglob("*.json"))
    assert res.sessions == len(sources) >= 2
    for src in sources:
        data = json.loads(src.read_text(encoding="utf-8"))
        eid = f"{src.parent.name}-{int(''.join(c for c in data['qid'] if c.isdigit())):03d}"
        graph = json.loads((pack / "graphs" / f"{eid}.json").read_text(encoding="utf-8"))
        assert len(graph) == len(data["triplets"]) == data["total"]
        assert graph == [{k: t[k] for k in ("head", "relation", "tail")}
                         for t in data["triplets"]]
    # single-query sessions (the question is not in these files): placeholders and one stage,
    # each marked as left for the user; the pack compiles under --strict
    report = (pack / "IMPORT_REPORT.md").read_text(encoding="utf-8")
    for src in sources:
        eid = f"{src.parent.name}-{int(''.join(c for c in src.stem if c.isdigit())):03d}"
        assert f"- `{eid}`: placeholder request" in report
        assert f"- `{eid}`: one stage only" in report
    _compile(pack, tmp_path / "plan")
