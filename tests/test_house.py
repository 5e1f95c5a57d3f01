"""The house rules that a reader cannot see break (issue 30): no editor or merge leftovers in
the repository, no module borrowing another module's private names, and messages that say
what they mean (the Ray note named a literal `{run_id}`)."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.runner import RunOptions, run_plan
from conftest import ROOT

STAGES = ["specs", "compiler", "runtime", "reports", "cli"]
LEFTOVER = re.compile(r"\.(orig|rej|swp|swo|bak)$|~$|(^|/)\.#")
CASE = ROOT / "tests" / "fixtures" / "pibench_case"


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                             check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.stdout.decode().split("\0") if p]


def test_no_editor_or_merge_leftovers_are_tracked() -> None:
    leftovers = [p for p in _tracked() if LEFTOVER.search(p)]
    assert leftovers == []


@pytest.mark.parametrize("name", ["cli/benchpack/cli/run.py.orig", "a/b.rej", "x.py~",
                                  "pkg/.mod.py.swp", "docs/.#notes.md"])
def test_the_leftover_pattern_catches_each_kind(name: str) -> None:
    assert LEFTOVER.search(name)


def private_imports(source: str) -> list[tuple[int, str]]:
    """(line, name) of every `from m import _name` (dunders are public protocol names)."""
    return [(node.lineno, a.name) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ImportFrom)
            for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]


def test_the_private_import_finder_sees_both_forms() -> None:
    assert private_imports("from .x import _a, b\ndef f():\n    from ..y import _c as c\n"
                           "from z import __version__\n") == [(1, "_a"), (3, "_c")]


PACK_CODE = re.compile(r"/importers/\w+_tools/")
"""Toolset sources an importer copies into the packs it writes, inlining the parts they import
(`# ---- inline x.py ----`): in a pack they are one module, so their imports are not borrowing."""


def test_no_module_imports_a_private_name_of_another() -> None:
    """A helper two modules need is public in a module of its own (inspect_ai's rule): a
    private name borrowed across modules is a contract nobody knows they signed."""
    found = [f"{path.relative_to(ROOT)}:{line}: {name}"
             for stage in STAGES for path in sorted((ROOT / stage / "benchpack").rglob("*.py"))
             if not PACK_CODE.search(path.as_posix())
             for line, name in private_imports(path.read_text(encoding="utf-8"))]
    assert found == []


def test_lost_ray_sessions_name_the_real_run_id(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions a Ray worker lost at every attempt are reported with the `--resume` that runs
    them, naming the run (it printed `--resume {run_id}` literally)."""
    from benchpack.runtime import ray_executor

    async def lose_everything(ctx: Any, chains: list[Any], finished: Any, progress: Any,
                              stats: dict[str, int]) -> None:
        stats["lost"] = sum(len(c[2]) for c in chains)

    monkeypatch.setattr(ray_executor, "check_options", lambda options: None)
    monkeypatch.setattr(ray_executor, "run_chains", lose_everything)
    plan = tmp_path / "plan"
    assert compile_pack(CASE, plan, use_cache=False).ok
    summary = run_plan(RunOptions(
        plan=plan, agent=f"scripted:{CASE / 'claude_agent.yaml'}",
        judge=f"scripted:{CASE / 'claude_judge.yaml'}", simulator="rules",
        db=tmp_path / "s.duckdb", progress=False, cache_dir=tmp_path / "cache",
        executor="ray", run_id="lost-run"))
    assert summary.first_errors[0] == ("3 session runs not run: their Ray worker died at every "
                                       "attempt; --resume lost-run runs them")


# ---------------------------------------------------------------- protocol knowledge

PROTOCOL_NAMES = ("intent_tracking", "staged_disclosure", "trigger_rubric", "verified_outcome",
                  "instructed_user")
OWNED = re.compile(r"/(protocols|importers|imports|tau2bench|judges)/")
"""Where a protocol's name belongs: its own modules in each stage, and the modules that are
about one protocol by nature (a benchmark importer writes packs of a given protocol, a judge
judges one protocol's question)."""
NAMED_BY_NATURE = {
    "compiler/benchpack/compiler/scaffold.py": "`bench init` writes a starter pack of one protocol",
    "reports/benchpack/reports/tau2_submission.py": "τ²'s submission format: its two protocols",
}
DEBT: dict[str, str] = {}
"""Files that still name protocols in code (issue 30 item 1): the list may only shrink — a new
file naming a protocol fails, and so does one listed here that no longer does. Empty since
`pack.py` takes the protocols' models and prompt names from `specs/protocols/` and its
`protocol` set is open to plug-ins (tests/test_protocol_plugin.py)."""


def _docstring_ids(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for stmt in body if isinstance(body, list) else []:  # a lambda's body is one expr
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                out.add(id(stmt.value))  # module, class, function and attribute docstrings
    return out


def protocols_named(source: str) -> set[str]:
    """The protocol names a module's code uses: in strings (not docstrings or comments), in
    what it imports, as identifiers."""
    rx = re.compile(r"\b(" + "|".join(PROTOCOL_NAMES) + r")\b")
    tree = ast.parse(source)
    docs = _docstring_ids(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found.update(rx.findall(node.value))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(rx.findall(node.module))
        elif isinstance(node, ast.alias):
            found.update(rx.findall(node.name))
        elif isinstance(node, ast.Attribute) and node.attr in PROTOCOL_NAMES:
            found.add(node.attr)
    return found


def test_the_protocol_name_finder_reads_code_not_prose() -> None:
    source = ('"""About trigger_rubric."""\n# intent_tracking\nfrom .protocols.staged_disclosure '
              'import x\nif p == "verified_outcome":\n    pass\n')
    assert protocols_named(source) == {"staged_disclosure", "verified_outcome"}


def test_no_core_module_names_a_protocol() -> None:
    """`protocols/base.py` promises adding a protocol needs no special case in the core."""
    from benchpack.specs.protocols import PROTOCOLS

    assert set(PROTOCOLS) == set(PROTOCOL_NAMES)  # a new built-in is searched for too
    naming = {str(path.relative_to(ROOT)) for stage in STAGES
              for path in (ROOT / stage / "benchpack").rglob("*.py")
              if not OWNED.search(str(path.relative_to(ROOT)))
              and protocols_named(path.read_text(encoding="utf-8"))}
    assert naming - set(NAMED_BY_NATURE) == set(DEBT)


def test_the_sessions_columns_of_protocols_are_declared_by_the_protocols() -> None:
    """The metric columns, score columns and pass@k protocols used to be lists in
    session.py and summary.py; they are the union of what each interpreter declares, the same
    as those lists were (so stored rows are unchanged), and every column is in the DDL."""
    import duckdb

    from benchpack.runtime.protocols.base import default_protocols
    from benchpack.specs.storeformat import DDL

    reg = default_protocols()
    assert reg.metric_columns() == (
        "intents", "completed", "inferred", "provided", "unresolved", "proc", "proc_group",
        "recall", "precision", "f1", "triples_gt", "triples_predicted", "kg_status", "stages",
        "stages_disclosed", "trigger_mode", "triggers", "trigger_pass_rate", "trigger_score",
        "heartbeats")
    assert reg.score_columns() == {"proc", "proc_group", "recall", "precision", "f1",
                                   "trigger_pass_rate", "trigger_score"}
    assert reg.pass_k_protocols() == ["verified_outcome", "instructed_user"]
    con = duckdb.connect()
    con.execute(DDL)
    stored = {r[0] for r in con.execute("DESCRIBE sessions").fetchall()}
    assert set(reg.metric_columns()) <= stored


def test_a_protocol_without_columns_keeps_its_metrics_and_worst_scores_to_itself() -> None:
    """A plug-in protocol declares nothing it does not fill: no columns (its metrics go to
    `extra`), no pass@k, no worst scores; the checklist's worst score is shared."""
    from types import SimpleNamespace

    from benchpack.runtime.protocols.base import ProtocolDefaults, ProtocolRegistry
    from benchpack.runtime.session_rows import worst_scores

    class Toy(ProtocolDefaults):
        name = "toy"

        async def run(self, ctx: Any) -> Any:
            raise AssertionError("not run here")

    reg = ProtocolRegistry()
    reg.register(Toy())
    assert (reg.metric_columns(), reg.score_columns(), reg.pass_k_protocols()) == \
        ((), frozenset(), [])
    with_checklist = SimpleNamespace(protocol="toy", checklist=[object()])
    without = SimpleNamespace(protocol="toy", checklist=[])
    assert worst_scores(None, with_checklist, {}, reg) == {"comp": 0.0}  # type: ignore[arg-type]
    assert worst_scores(None, without, {}, reg) == {}  # type: ignore[arg-type]


def test_the_protocol_registry_reads_entry_points_only_for_a_protocol_not_built_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A built-in protocol never reads the `benchpack.protocols` group (~0.1 s); an unknown
    one reads it once and is one LookupError naming the known ones and the installed
    plug-ins (tests/test_protocol_plugin.py installs one)."""
    import importlib.metadata

    from benchpack.runtime.protocols.base import default_protocols
    from benchpack.specs import plugins

    real = importlib.metadata.entry_points  # pydantic may read its own group meanwhile

    def no(group: str) -> Any:
        assert group != plugins.GROUP, "entry points read"
        return real(group=group)

    plugins.plugin_entry_points.cache_clear()
    monkeypatch.setattr(importlib.metadata, "entry_points", no)
    reg = default_protocols()
    assert reg.get("intent_tracking").name == "intent_tracking"
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: (
        [] if group == plugins.GROUP else real(group=group)))
    try:
        with pytest.raises(LookupError, match=r"known: instructed_user, intent_tracking.*; "
                                              r"plug-ins: none installed\)"):
            reg.get("toy")
    finally:
        plugins.plugin_entry_points.cache_clear()  # what the fake group said must not stay


# ---------------------------------------------------------------- the store format


def test_the_store_format_is_one_definition_both_sides_read() -> None:
    """The tables the runtime creates, the tables reports export, the session tables a rerun
    replaces and the schema version reports accept come from `specs/storeformat.py`."""
    import duckdb

    from benchpack.reports import api, calltexts, views
    from benchpack.runtime import calltexts as written
    from benchpack.runtime import store
    from benchpack.specs import storeformat as fmt

    assert (store.DDL, store.SCHEMA_VERSION, store.SESSION_TABLES) == \
        (fmt.DDL, fmt.SCHEMA_VERSION, fmt.SESSION_TABLES)
    assert views.STORE_SCHEMA == fmt.SCHEMA_VERSION and api.TABLES == fmt.EXPORTED_TABLES
    assert calltexts.CHAIN_MAX == written.CHAIN_MAX == fmt.CHAIN_MAX
    con = duckdb.connect()
    con.execute(fmt.DDL)
    made = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert made - set(fmt.EXPORTED_TABLES) == {"meta", "score_components"}
    assert set(fmt.EXPORTED_TABLES) <= made and set(fmt.SESSION_TABLES) <= made
    for table in fmt.SESSION_TABLES:  # what a rerun deletes by
        cols = {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}
        assert {"run_id", "session_id", "repeat"} <= cols, table


def test_compare_units_are_the_protocols_own_in_the_old_order() -> None:
    """`bench compare`'s metrics come from each protocol's `ProtocolReports.compare`; a key two
    protocols declare (the verified score) pools both, and the order is the one compare's
    tables always had."""
    from benchpack.reports.compare import METRICS

    assert [(m.key, m.protocols, m.triggers) for m in METRICS] == [
        ("proc", ("intent_tracking",), False), ("comp", ("intent_tracking",), False),
        ("f1", ("staged_disclosure",), False),
        ("score", ("verified_outcome", "instructed_user"), False),
        ("pass", ("verified_outcome", "instructed_user"), False),
        ("trigger_score", ("trigger_rubric",), True), ("trigger_pass", ("trigger_rubric",), True)]
