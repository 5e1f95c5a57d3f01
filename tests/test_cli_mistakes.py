"""User mistakes outside pack authoring: every one ends with a one-line `✗ what: why (hint)`
(or a click usage error), a non-zero exit code and never a traceback or `internal error`.

One scaffolded pack is compiled and run once (`r1`, a scripted agent, rules roles) into a
store that the cases copy; each case names the words its message must contain."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from benchpack.cli import cli
from benchpack.compiler import compile_pack, init_pack

Case = tuple[Callable[["World"], list[str]], int, tuple[str, ...]]


class World:
    """Input files every case may use (shared, read-only) and a fresh directory per case."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root  # replaced per test

    def __truediv__(self, name: str) -> str:
        return str(self.root / name)

    def out(self, name: str) -> str:
        return str(self.tmp / name)

    def db(self) -> str:
        """A copy of the store holding run `r1`."""
        copy = self.tmp / "bench.duckdb"
        if not copy.exists():
            shutil.copyfile(self.root / "bench.duckdb", copy)
        return str(copy)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("mistakes")
    init_pack(root / "pack", "p")
    assert compile_pack(root / "pack", root / "build", use_cache=False).ok
    init_pack(root / "other-pack", "q")
    assert compile_pack(root / "other-pack", root / "other", use_cache=False).ok
    plan = json.loads((root / "build" / "plan.json").read_text())
    _write(root, {
        # the starter pack's sessions have two hidden intents each: the rules simulator
        # volunteers one a turn, so a plain agent needs three turns
        "agent.yaml": 'default:\n  - say: "OK."\n  - say: Noted.\n  - say: Thanks, noted.\n',
        "agent2.yaml": 'default:\n  - say: "Done."\n',
        "empty.yaml": "",
        "broken.yaml": "sessions: [\n",
        "broken.json": "{not json",
        "list.yaml": "- a\n- b\n",
        "turns-not-list.yaml": "sessions:\n  refill-triage: 5\n",
        "bad-tool-call.yaml": "default:\n  - say: hi\n    tool_calls: [5]\n",
        "empty.jsonl": "",
        "broken.jsonl": "{bad\n",
        "list.jsonl": "[1, 2]\n",
        "no-session.jsonl": '{"role": "assistant", "turn": 1}\n',
        "bad-turn.jsonl": '{"role": "assistant", "session_id": "s", "turn": "x"}\n',
        "truncated/plan.json": (root / "build" / "plan.json").read_text()[:200],
        "notjson/plan.json": "hello\n",
        "badschema/plan.json": json.dumps({**plan, "sessions": 5}),
        "future/plan.json": json.dumps({**plan, "plan_version": 99}),
        "toplist/plan.json": "[1, 2]\n",
        "text.duckdb": "not a database\n",
        "notcallable.py": "AGENT = 42\n",
        "raising.py": "raise RuntimeError('no config')\n",
        # read the `start` line, answer with something else, wait to be closed
        "garbage.py": "import sys\nsys.stdin.readline()\nprint('garbage', flush=True)\n"
                      "sys.stdin.read()\n",
        "nonprotocol.py": "import sys\nsys.stdin.readline()\nprint('{\"foo\": 1}', flush=True)"
                          "\nsys.stdin.read()\n",
        "ratings/empty.csv": "",
        "ratings/columns.csv": "who,what\nann,PASS\n",
        "ratings/values.csv": "session,kind,item,rater,label\nrefill-triage,checklist,ITEM,ann,"
                              "maybe\n",
        "ratings/unknown.csv": "session,kind,item,rater,label\nno-such-session,checklist,ITEM,"
                               "ann,YES\n",
        "ratings/empty.jsonl": "",
        "ratings/broken.jsonl": "{oops\n",
        "ratings/wrong.txt": "session,item,rater,label\n",
    })
    (root / "empty-dir").mkdir()
    (root / "nodb").mkdir()
    con = duckdb.connect(str(root / "foreign.duckdb"))
    con.execute("CREATE TABLE customers (id INTEGER, name VARCHAR)")
    con.close()
    duckdb.connect(str(root / "blank.duckdb")).close()
    res = CliRunner().invoke(cli, ["run", str(root / "build"), "--agent",
                                   f"scripted:{root / 'agent.yaml'}", "--db",
                                   str(root / "bench.duckdb"), "--run-id", "r1", "--quiet",
                                   "--cache-dir", str(root / "cache")])
    assert res.exit_code == 0, res.output
    return World(root)


@pytest.fixture
def world(shared: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(shared.root))  # for the python: agent modules
    shared.tmp = tmp_path
    return shared


def run(w: World, *extra: str, agent: str | None = None, plan: str | None = None,
        db: str | None = None) -> list[str]:
    """`bench run` of the compiled plan with a working agent (into a fresh store)."""
    return ["run", plan or w / "build", "--agent", agent or f"scripted:{w / 'agent.yaml'}",
            "--db", db or w.out("run.duckdb"), "--quiet", "--cache-dir", w.out("cache"),
            *extra]


RUN: dict[str, Case] = {
    # the plan
    "missing plan dir": (lambda w: run(w, plan=w / "nowhere"), 1, ("no plan here",)),
    "dir without plan": (lambda w: run(w, plan=w / "empty-dir"), 1,
                         ("empty-dir/plan.json: no plan here", "bench compile")),
    "truncated plan": (lambda w: run(w, plan=w / "truncated"), 1, ("not a readable JSON plan",)),
    "plan not JSON": (lambda w: run(w, plan=w / "notjson"), 1, ("not a readable JSON plan",)),
    "plan fails schema": (lambda w: run(w, plan=w / "badschema"), 1,
                          ("does not match its schema at sessions",)),
    "future plan version": (lambda w: run(w, plan=w / "future"), 1,
                            ("plan version 99 is not supported", "recompile")),
    "plan is a list": (lambda w: run(w, plan=w / "toplist"), 1, ("not a plan",)),
    # agents
    "unknown scheme": (lambda w: run(w, agent="foo:bar"), 1,
                       ("unknown agent adapter `foo:`", "scripted:<file>")),
    "no scheme": (lambda w: run(w, agent="foo"), 1, ("agent `foo`: use",)),
    "scripted missing": (lambda w: run(w, agent="scripted:nope.yaml"), 1,
                         ("nope.yaml: no such script file",)),
    "scripted empty": (lambda w: run(w, agent=f"scripted:{w / 'empty.yaml'}"), 1,
                       ("empty.yaml: expected `sessions:`",)),
    "scripted bad YAML": (lambda w: run(w, agent=f"scripted:{w / 'broken.yaml'}"), 1,
                          ("broken.yaml:2:1: not valid YAML",)),
    "scripted bad JSON": (lambda w: run(w, agent=f"scripted:{w / 'broken.json'}"), 1,
                          ("broken.json:1:2: not valid JSON",)),
    "scripted a list": (lambda w: run(w, agent=f"scripted:{w / 'list.yaml'}"), 1,
                        ("list.yaml: expected `sessions:`",)),
    "scripted turns not a list": (lambda w: run(w, agent=f"scripted:{w / 'turns-not-list.yaml'}"),
                                  1, ("turns of `refill-triage` must be a list",)),
    "scripted bad tool call": (lambda w: run(w, agent=f"scripted:{w / 'bad-tool-call.yaml'}"),
                               1, ("turn 1 of `default`: tool_calls must be",)),
    "replay missing": (lambda w: run(w, agent="replay:nope.jsonl"), 1,
                       ("nope.jsonl: no such replay file",)),
    "replay empty": (lambda w: run(w, agent=f"replay:{w / 'empty.jsonl'}"), 1,
                     ("empty.jsonl: no assistant messages to replay",)),
    "replay not JSON": (lambda w: run(w, agent=f"replay:{w / 'broken.jsonl'}"), 1,
                        ("broken.jsonl:1: not JSON",)),
    "replay rows not objects": (lambda w: run(w, agent=f"replay:{w / 'list.jsonl'}"), 1,
                                ("list.jsonl:1: expected one message object per line",)),
    "replay row without session": (lambda w: run(w, agent=f"replay:{w / 'no-session.jsonl'}"),
                                   1, ("no-session.jsonl:1: not a transcript message "
                                       "(missing 'session_id')",)),
    "replay bad turn": (lambda w: run(w, agent=f"replay:{w / 'bad-turn.jsonl'}"), 1,
                        ("bad-turn.jsonl:1: not a transcript message",)),
    "cmd not found": (lambda w: run(w, agent="cmd:no-such-program-xyz --flag"), 1,
                      ("`no-such-program-xyz`: not found on PATH",)),
    "cmd missing path": (lambda w: run(w, agent="cmd:./no-such-harness"), 1,
                         ("no such executable file",)),
    # a harness that breaks the protocol errors its sessions, and the run says why
    "cmd exits at once": (lambda w: run(w, agent="cmd:true"), 1,
                          ("1 session errored; first: refill-triage: ",  # `start` or `user`:
                           "the harness exited with code 0 before ",  # reading or answering: a race
                           "SELECT name, error FROM sessions")),
    "cmd prints garbage": (lambda w: run(w, agent=f"cmd:{sys.executable} {w / 'garbage.py'}"),
                           1, ("1 session errored; first: refill-triage: ",
                               "the harness wrote a stdout line that is not JSON",
                               "'garbage'")),
    "cmd non-protocol JSON": (lambda w: run(w, agent=f"cmd:{sys.executable} "
                                                     f"{w / 'nonprotocol.py'}"), 1,
                              ("1 session errored; first: refill-triage: every stdout line "
                               "must be a JSON object with a string `type`",)),
    "python missing module": (lambda w: run(w, agent="python:no_such_module_xyz:make"), 1,
                              ("cannot import `no_such_module_xyz`", "PYTHONPATH")),
    "python missing attribute": (lambda w: run(w, agent="python:json:nope"), 1,
                                 ("`json` has no attribute `nope`",)),
    "python not callable": (lambda w: run(w, agent="python:notcallable:AGENT"), 1,
                            ("`AGENT` is a int, not callable",)),
    "python module raises": (lambda w: run(w, agent="python:raising:make"), 1,
                             ("importing `raising` failed: RuntimeError: no config",)),
    "python no callable named": (lambda w: run(w, agent="python:json"), 1,
                                 ("use python:<module>:<callable>",)),
    # other roles
    "judge script missing": (lambda w: run(w, "--judge", "scripted:nope.yaml"), 1,
                             ("--judge scripted:nope.yaml", "no such script file")),
    "simulator script broken": (lambda w: run(w, "--simulator", f"scripted:{w / 'broken.yaml'}"),
                                1, ("--simulator scripted:", "not valid YAML")),
    "judge model empty": (lambda w: run(w, "--judge", "litellm:"), 1,
                          ("--judge litellm:: name the model",)),
    "judge unknown kind": (lambda w: run(w, "--judge", "foo:bar"), 1,
                           ("--judge foo:bar: unknown kind `foo:`",)),
    # runs in the store
    "resume unknown run": (lambda w: run(w, "--resume", "nope", db=w.db()), 1, ("no run `nope` in",)),
    "run id taken": (lambda w: run(w, "--run-id", "r1", db=w.db()), 1,
                     ("run `r1` already exists", "--resume")),
    "resume a run of another pack": (lambda w: run(w, "--resume", "r1", plan=w / "other",
                                                   db=w.db()), 1,
                                     ("--resume r1: that run is of pack `p`, this plan of `q`",
                                      "pass the plan it ran")),
    "resume with another agent": (lambda w: run(w, "--resume", "r1", db=w.db(),
                                                agent=f"scripted:{w / 'agent2.yaml'}"), 1,
                                  ("run `r1` was run with --agent scripted:", "agent.yaml",
                                   "resume it with the same agent")),
    "session glob matches nothing": (lambda w: run(w, "--session", "refill-*", "--session",
                                                   "nope*"), 1,
                                     ("--session nope* matches no session",
                                      "handover, refill-triage")),
    "dialogue from missing run": (lambda w: run(w, "--dialogue-from", "nope"), 1,
                                  ("--dialogue-from: no run `nope`",)),
    "dialogue from with live mode": (lambda w: run(w, "--dialogue-from", "r1", "--trigger-mode",
                                                   "live", db=w.db()), 1,
                                     ("use --trigger-mode offline or auto",)),
    # the store file
    "db not DuckDB": (lambda w: run(w, db=w / "text.duckdb"), 1,
                      ("text.duckdb: cannot open the store", "DuckDB file")),
    "db is a directory": (lambda w: run(w, db=w / "empty-dir"), 1,
                          ("empty-dir: is a directory",)),
    "db unwritable": (lambda w: run(w, db="/proc/no/such/bench.duckdb"), 1,
                      ("cannot create the store",)),
    "db of another program": (lambda w: run(w, db=w / "foreign.duckdb"), 1,
                              ("a DuckDB database of another program (tables: customers)",)),
    # option values
    "repeats 0": (lambda w: run(w, "--repeats", "0"), 2, ("--repeats",)),
    "repeats negative": (lambda w: run(w, "--repeats", "-1"), 2, ("--repeats",)),
    "concurrency 0": (lambda w: run(w, "--max-concurrency", "0"), 2, ("--max-concurrency",)),
    "rpm 0": (lambda w: run(w, "--rpm", "gpt=0"), 2, ("--rpm expects MODEL=N with N > 0",)),
    "rpm negative": (lambda w: run(w, "--rpm", "gpt=-3"), 2, ("N > 0, got `gpt=-3`",)),
    "rpm not a number": (lambda w: run(w, "--rpm", "gpt=lots"), 2, ("--rpm expects",)),
    "rpm without model": (lambda w: run(w, "--rpm", "5"), 2, ("--rpm expects",)),
    "timeout 0": (lambda w: run(w, "--timeout", "0"), 2, ("--timeout",)),
    "api key variable unset": (lambda w: run(w, "--api-key-env", "BENCHPACK_NO_SUCH_KEY_VAR"), 2,
                               ("--api-key-env BENCHPACK_NO_SUCH_KEY_VAR: that environment "
                                "variable is not set",)),
}

READ: dict[str, Case] = {
    # missing, empty and foreign stores, for every reader
    **{f"{cmd[0]} on {kind}": (
        (lambda w, cmd=cmd, db=db: [*cmd, "--db", db(w)]), 1, (needle,))
       for cmd in (["report"], ["query", "SELECT 1"], ["export", "-o", "exp"],
                   ["views", "--install"])
       for kind, db, needle in (
           ("missing db", lambda w: w.out("none.duckdb"), "no such store"),
           ("blank db", lambda w: w / "blank.duckdb", "not a benchpack store"),
           ("foreign db", lambda w: w / "foreign.duckdb", "not a benchpack store"),
           ("text db", lambda w: w / "text.duckdb", "cannot open"),
           ("directory db", lambda w: w / "empty-dir", "is a directory"))},
    "rejudge missing db": (lambda w: ["rejudge", "r1", "--judge", "rules", "--db",
                                      w.out("none.duckdb")], 1, ("no such store",)),
    "rejudge foreign db": (lambda w: ["rejudge", "r1", "--judge", "rules", "--db",
                                      w / "foreign.duckdb"], 1, ("another program",)),
    "rejudge text db": (lambda w: ["rejudge", "r1", "--judge", "rules", "--db",
                                   w / "text.duckdb"], 1, ("cannot open the store",)),
    "rejudge unknown run": (lambda w: ["rejudge", "nope", "--judge", "rules", "--db", w.db()],
                            1, ("no run `nope`",)),
    "rejudge missing plan": (lambda w: ["rejudge", "r1", "--judge", "rules", "--db", w.db(),
                                        "--plan", w / "nowhere"], 1, ("no plan here",)),
    "rejudge judge script missing": (lambda w: ["rejudge", "r1", "--judge", "scripted:nope.yaml",
                                                "--db", w.db()], 1, ("no such script file",)),
    # reports
    "unknown report": (lambda w: ["report", "nosuch", "--db", w.db()], 1,
                       ("no report `nosuch`", "known: summary")),
    "report typo": (lambda w: ["report", "summry", "--db", w.db()], 1,
                    ("did you mean `summary`?",)),
    "report unknown run": (lambda w: ["report", "--run", "nope", "--db", w.db()], 1,
                           ("no run matches nope", "latest runs: r1")),
    "report bad --by": (lambda w: ["report", "--by", "colour", "--db", w.db()], 1,
                        ("cannot group by `colour`",)),
    "report bad format": (lambda w: ["report", "--format", "xml", "--db", w.db()], 2,
                          ("--format",)),
    "report -o unwritable": (lambda w: ["report", "--db", w.db(), "-o", "/proc/no/r.txt"], 1,
                             ("-o /proc/no/r.txt: cannot write",)),
    "report -o directory": (lambda w: ["report", "--db", w.db(), "-o", w / "empty-dir"], 1,
                            ("cannot write (Is a directory)",)),
    "report on blank store runs": (lambda w: ["report", "--db", w / "blank.duckdb"], 1,
                                   ("not a benchpack store",)),
    # queries
    "query syntax error": (lambda w: ["query", "SELEC 1", "--db", w.db()], 1,
                           ("query failed: Parser Error", "SELEC")),
    "query unknown table": (lambda w: ["query", "SELECT * FROM nosuch", "--db", w.db()], 1,
                            ("query failed: Catalog Error", "nosuch")),
    "query delete": (lambda w: ["query", "DELETE FROM runs", "--db", w.db()], 1,
                     ("read-only", "`bench query` only reads")),
    "query create": (lambda w: ["query", "CREATE TABLE t (a INT)", "--db", w.db()], 1,
                     ("`bench query` only reads",)),
    "query empty": (lambda w: ["query", "  ", "--db", w.db()], 1, ("the query is empty",)),
    "query two statements": (lambda w: ["query", "SELECT 1; SELECT 2", "--db", w.db()], 1,
                             ("the query has 2 statements",)),
    # queries read the store and nothing else: no file is read or written
    **{f"query {name}": ((lambda w, sql=sql: ["query", sql(w), "--db", w.db()]), 1,
                         ("query failed", needle))
       for name, sql, needle in (
           ("COPY TO", lambda w: f"COPY runs TO '{w.out('leak.csv')}'", "only the store"),
           ("EXPORT DATABASE", lambda w: f"EXPORT DATABASE '{w.out('dump')}'",
            "only the store"),
           ("read_csv", lambda w: f"SELECT * FROM read_csv('{w / 'agent.yaml'}')",
            "only the store"),
           ("read_text", lambda w: f"SELECT * FROM read_text('{w / 'agent.yaml'}')",
            "only the store"),
           ("file as table", lambda w: f"SELECT * FROM '{w / 'agent.yaml'}'",
            "does not exist"),
           ("glob", lambda w: f"SELECT * FROM glob('{w / '*'}')", "only the store"),
           ("ATTACH", lambda w: f"ATTACH '{w.out('other.duckdb')}' AS o", "only the store"),
           ("re-enable access", lambda w: "SET enable_external_access = true",
            "only the store"))},
    "query bad format": (lambda w: ["query", "SELECT 1", "--format", "xml", "--db", w.db()], 2,
                         ("--format",)),
    "export -o unwritable": (lambda w: ["export", "--db", w.db(), "-o", "/proc/no/exp"], 1,
                             ("-o /proc/no/exp: cannot create the directory",)),
    "export -o a file": (lambda w: ["export", "--db", w.db(), "-o", w / "text.duckdb"], 1,
                         ("cannot create the directory",)),
    "export bad format": (lambda w: ["export", "--db", w.db(), "--format", "xlsx"], 2,
                          ("--format",)),
    # ratings
    **{f"ratings {name}": ((lambda w, f=file: ["ratings", "import", w / f"ratings/{f}", "--run",
                                               "r1", "--db", w.db()]), 1, needles)
       for name, file, needles in (
           ("empty csv", "empty.csv", ("the file is empty",)),
           ("missing columns", "columns.csv", ("no `session` or `session_id` column",
                                               "nothing imported")),
           ("bad label", "values.csv", ("values.csv:2:",)),
           ("unknown session", "unknown.csv", ("unknown.csv:2:", "no-such-session")),
           ("empty jsonl", "empty.jsonl", ("no ratings in the file",)),
           ("broken jsonl", "broken.jsonl", ("broken.jsonl:1:",)),
           ("unknown extension", "wrong.txt", ("--format csv",)),
           ("missing file", "nope.csv", ("no such file",)),
           ("a directory", "", ("cannot read the file",)))},
    "ratings unknown run": (lambda w: ["ratings", "import", w / "ratings/values.csv", "--run",
                                       "nope", "--db", w.db()], 1,
                            ("no run `nope` in the store (latest: r1)",)),
    "ratings missing db": (lambda w: ["ratings", "import", w / "ratings/values.csv", "--run",
                                      "r1", "--db", w.out("none.duckdb")], 1, ("no such store",)),
    "ratings foreign db": (lambda w: ["ratings", "import", w / "ratings/values.csv", "--run",
                                      "r1", "--db", w / "foreign.duckdb"], 1,
                           ("another program",)),
    "ratings bad --field": (lambda w: ["ratings", "import", w / "ratings/values.csv", "--run",
                                       "r1", "--db", w.db(), "--field", "label"], 2,
                            ("--field expects NAME=COLUMN",)),
}


OUTPUTS: dict[str, Case] = {
    "compile -o unwritable": (lambda w: ["compile", w / "pack", "-o", "/proc/no/build"], 1,
                              ("✗ /proc/no: No such file or directory", "permissions")),
    "compile -o a file": (lambda w: ["compile", w / "pack", "-o", w / "agent.yaml"], 1,
                          ("agent.yaml: exists and is not a directory",)),
    "init unwritable": (lambda w: ["init", "/proc/no/pack"], 1, ("✗ /proc/no:",)),
    "schema -o unwritable": (lambda w: ["schema", "-o", "/proc/no/schemas"], 1,
                             ("✗ /proc/no:",)),
}


def _check(world: World, case: Case) -> None:
    build, code, needles = case
    args = build(world)
    res = CliRunner().invoke(cli, args)
    shown = f"bench {' '.join(args)}\n{res.output}"
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"{shown}\nraised {res.exception!r}")
    assert res.exit_code == code, shown
    assert "Traceback" not in res.output and "internal error" not in res.output, shown
    for needle in needles:
        assert needle in res.output, f"{needle!r} not in:\n{shown}"


@pytest.mark.parametrize("name", sorted(RUN))
def test_run_mistakes(world: World, name: str) -> None:
    _check(world, RUN[name])


@pytest.mark.parametrize("name", sorted(READ))
def test_reader_mistakes(world: World, name: str) -> None:
    _check(world, READ[name])


def test_queries_write_no_file(world: World) -> None:
    for sql in (f"COPY runs TO '{world.out('leak.csv')}'",
                f"EXPORT DATABASE '{world.out('dump')}'",
                f"ATTACH '{world.out('other.duckdb')}' AS o"):
        assert CliRunner().invoke(cli, ["query", sql, "--db", world.db()]).exit_code == 1
    assert sorted(p.name for p in world.tmp.iterdir()) == ["bench.duckdb"]


def test_foreign_and_missing_stores_are_left_untouched(world: World) -> None:
    """Refusing a store must not write into it (nor create one where none was asked for)."""
    foreign = Path(world / "foreign.duckdb")
    before = foreign.read_bytes()
    for args in (run(world, db=str(foreign)),
                 ["rejudge", "r1", "--judge", "rules", "--db", str(foreign)],
                 ["views", "--install", "--db", world.out("none.duckdb")]):
        assert CliRunner().invoke(cli, args).exit_code == 1
    assert foreign.read_bytes() == before
    assert not Path(world.out("none.duckdb")).exists()
    # a run stopped by a mistake before it began leaves no new store behind
    fresh = world.out("fresh.duckdb")
    assert CliRunner().invoke(cli, run(world, agent="foo:bar", db=fresh)).exit_code == 1
    assert not Path(fresh).exists()


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_output_path_mistakes(world: World, name: str) -> None:
    _check(world, OUTPUTS[name])
