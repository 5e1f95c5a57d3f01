"""Start-up hygiene: commands that do not need the compiler, the runtime or the statistics do not
import them (what each costs is measured by benchmarks/startup_bench.py, never timed here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("networkx", "pydantic", "jsonschema", "jinja2", "litellm", "ruamel", "yaml",
         "benchpack.compiler", "benchpack.runtime", "benchpack.specs")

_PROBE = """
import atexit, json, linecache, sys
atexit.register(lambda: print("MODULES=" + json.dumps(sorted(sys.modules)), file=sys.__stderr__))
# the source files read so far (pydantic reads a model's to find its field docstrings)
atexit.register(lambda: print("SOURCES=" + json.dumps(sorted(linecache.cache)), file=sys.__stderr__))
import gc
atexit.register(lambda: print("GC=" + json.dumps([gc.isenabled(), gc.get_threshold()]),
                              file=sys.__stderr__))
sys.argv = ["bench", *json.loads(sys.argv[1])]
from benchpack.cli import main
main()
"""


def _probe(*args: str) -> tuple[set[str], list[str], list[object]]:
    """The modules a `bench ARGS` process imported, the source files it read and its
    collector's state at exit, its output on pipes."""
    res = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(list(args))],
                         capture_output=True, text=True, timeout=120)
    lines = res.stderr.splitlines()

    def read(key: str) -> object:
        return json.loads(next(x for x in lines if x.startswith(key)).removeprefix(key))

    mods, sources, gc_state = read("MODULES="), read("SOURCES="), read("GC=")
    assert isinstance(mods, list) and isinstance(sources, list) and isinstance(gc_state, list)
    return set(mods), sources, gc_state


def _modules(*args: str) -> set[str]:
    return _probe(*args)[0]


def _others(mods: set[str], own: str) -> list[str]:
    """Every command's module but `own` that the process imported: the group imports a
    command's module when the command is looked up (cli/main.py `COMMANDS`)."""
    from benchpack.cli.main import COMMANDS, SUBCOMMANDS

    modules = {f"benchpack.cli.{m}" for m, _ in
               (*COMMANDS.values(), *(s for subs in SUBCOMMANDS.values() for s in subs))}
    assert len(modules) >= 10 and own in modules
    return sorted(m for m in mods & modules if m != own)


# every command masks secrets and maps errors to exit codes; readers check the store file
# and its format (the specs package loads its pydantic models only when they are used); all
# stdlib only
LIGHT = {"benchpack.runtime", "benchpack.runtime.redact", "benchpack.runtime.errors",
         "benchpack.specs", "benchpack.specs.storefile", "benchpack.specs.storeformat",
         "benchpack.specs.secrets", "benchpack.specs.limits"}


def _heavy(modules: set[str], extra: tuple[str, ...] = ()) -> list[str]:
    return sorted(m for m in modules - LIGHT
                  if any(m == h or m.startswith(h + ".") for h in (*HEAVY, *extra)))


@pytest.mark.parametrize("args", [("--help",), ("compile", "--help"), ("run", "--help"),
                                  ("report", "--help")])
def test_help_imports_nothing_heavy(args: tuple[str, ...]) -> None:
    assert _heavy(_modules(*args), ("duckdb", "rich")) == []


def test_query_imports_only_duckdb_and_the_store_views(tmp_path: Path) -> None:
    from benchpack.runtime.store import connect

    db = tmp_path / "s.duckdb"
    connect(db).close()
    mods = _modules("query", "SELECT 1", "--db", str(db))
    # DuckDB's compiled core, not its package (`storefile.duckdb_core`: the package's
    # `__init__` reads its version through importlib.metadata and builds DB-API type objects)
    assert "_duckdb" in mods
    assert sorted(m for m in mods if m == "duckdb" or m.startswith("duckdb.")) == []
    assert "importlib.metadata" not in mods
    assert _heavy(mods, ("benchpack.reports.stats", "benchpack.reports.builtin")) == []
    assert _others(mods, "benchpack.cli.store") == []
    # a simple table on a pipe is drawn without rich's console (reports/plain_table.py)
    assert "benchpack.reports.plain_table" in mods
    assert sorted(m for m in mods if m in ("rich.console", "rich.table")) == []


def test_a_query_rich_must_draw_still_imports_it(tmp_path: Path) -> None:
    """The guard above must not pass because no table was drawn: a cell of two lines goes
    through rich."""
    from benchpack.runtime.store import connect

    db = tmp_path / "s.duckdb"
    connect(db).close()
    mods = _modules("query", "SELECT 'a' || chr(10) || 'b' AS t", "--db", str(db))
    assert "rich.console" in mods and "rich.table" in mods


def test_a_rules_scripted_run_does_not_import_litellm(tmp_path: Path) -> None:
    """Importing litellm costs seconds and ~170 MB; a run that makes no LLM call (scripted
    agent, rules judge and simulator) must not pay for it, nor for the openai SDK."""
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.yaml").write_text(
        "benchpack: 1\nname: lean\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
        "episodes:\n  - id: e1\n    persona: p\n    sessions:\n      - id: s\n"
        "        protocol: intent_tracking\n        request: 总结一下笔记。\n", encoding="utf-8")
    (tmp_path / "agent.yaml").write_text("default:\n  - say: Done.\n", encoding="utf-8")
    plan = tmp_path / "plan"
    from click.testing import CliRunner

    from benchpack.cli import cli

    res = CliRunner().invoke(cli, ["compile", str(pack), "-o", str(plan)])
    assert res.exit_code == 0, res.output
    mods, sources, gc_state = _probe(
        "run", str(plan), "--agent", f"scripted:{tmp_path / 'agent.yaml'}", "--judge", "rules",
        "--simulator", "rules", "--quiet", "--db", str(tmp_path / "run.duckdb"),
        "--cache-dir", str(tmp_path / "c"))
    assert "benchpack.runtime.runner" in mods  # the run did happen in this process
    assert "benchpack.runtime.env.toolbox" in mods  # and its session held tools
    assert sorted(m for m in mods if m.split(".")[0] in ("litellm", "openai")) == []
    # issue 31, start-up: no JSON Schema validator before a tool is called (the plan's own
    # check explains a failed plan only), no Jinja without a prompt to render, no other
    # command's module, and no model source read for field docstrings (specs/base.py
    # FIELD_DOCS: only the schema generation reads them)
    assert sorted(m for m in mods if m.split(".")[0] in ("jsonschema", "jinja2")) == []
    assert _others(mods, "benchpack.cli.run") == []
    assert [f for f in sources if "benchpack" in f] == []
    # the collector, off during the run's imports, is back (with the run's thresholds)
    assert gc_state == [True, [20_000, 10, 10]]


def test_the_duckdb_core_a_reader_uses_is_the_package_s() -> None:
    """`duckdb_core()` stands for the package on the read path: every name the readers use must
    be the very object the package exports (an exception caught as `duckdb.Error` elsewhere is
    the same class), or a newer duckdb changed its layout and the core must not be used."""
    code = ("import sys; from benchpack.specs.storefile import duckdb_core; core = duckdb_core();"
            " print(core.__name__, 'duckdb' in sys.modules); import duckdb;"
            " names = ['connect', 'extract_statements', 'Error', 'IOException',"
            " 'CatalogException', 'InternalException', 'SerializationException',"
            " 'FatalException', 'DuckDBPyConnection'];"
            " print([n for n in names if getattr(core, n) is not getattr(duckdb, n)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split("\n")
    assert out[0] == "_duckdb False"
    assert out[1] == "[]"
    import duckdb

    from benchpack.specs.storefile import duckdb_core

    assert duckdb_core() is duckdb  # the package, once something has loaded it
