from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
TASKPACKS = ROOT / "taskpacks"

# τ²-bench's own code, for the gated parity tests: a checkout and a Python that imports it
TAU2_CHECKOUT = os.environ.get("BENCH_TAU2_CHECKOUT")
TAU2_PYTHON = os.environ.get("BENCH_TAU2_PYTHON")
needs_tau2 = pytest.mark.skipif(
    not (TAU2_CHECKOUT and TAU2_PYTHON),
    reason="set BENCH_TAU2_CHECKOUT (a τ²-bench checkout) and BENCH_TAU2_PYTHON (a Python that "
           "imports tau2 from it) to compare with τ²'s own code")


def _has_bwrap() -> bool:
    from benchpack.runtime.sandbox import find_bwrap
    return find_bwrap() is not None


needs_bwrap = pytest.mark.skipif(not _has_bwrap(), reason="bubblewrap is not available")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own compile cache so results never leak between tests."""
    monkeypatch.setenv("BENCHPACK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def write_pack(tmp_path: Path):
    """Write files {relative path: text} into a fresh pack directory and return it."""

    def _write(files: dict[str, str | bytes]) -> Path:
        for rel, content in files.items():
            p = tmp_path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")
        return tmp_path

    return _write


@pytest.fixture(scope="session")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`compiled(pack, clean=False)`: the plan directory of `pack`, compiled once per test
    session however many modules run it (read it, never write into it). `clean`: the pack
    must compile without a single diagnostic, warnings included."""
    from benchpack.compiler import compile_pack

    plans: dict[Path, tuple[Path, list[str]]] = {}

    def compile_(pack: Path, clean: bool = False) -> Path:
        key = Path(pack).resolve()
        if key not in plans:
            out = tmp_path_factory.mktemp("plan")
            res = compile_pack(key, out, use_cache=False)
            assert res.ok, [d.format() for d in res.diagnostics]
            plans[key] = (out, [d.format() for d in res.diagnostics])
        out, diagnostics = plans[key]
        assert not (clean and diagnostics), diagnostics
        return out

    return compile_


def bench_run(plan: Path, tmp: Path, **options: Any) -> tuple[Path, Any]:
    """Run `plan` in-process as `bench run` does, into `tmp/bench.duckdb` with its own response
    cache under `tmp` and no progress bar; `options` are RunOptions fields and override those
    defaults (`db=...`, `cache_dir=...`). Returns the store's path and the RunSummary.

    The one place the tests build a run, so a new required option or default changes here."""
    from benchpack.runtime.runner import RunOptions, run_plan

    fields: dict[str, Any] = {"db": tmp / "bench.duckdb", "progress": False,
                              "cache_dir": tmp / "cache", **options}
    return fields["db"], run_plan(RunOptions(plan=plan, **fields))


def finished_run(run_id: str) -> dict[str, Any]:
    """A minimal finished `runs` row for `Store.upsert_run` (agent named after the run,
    `rules` simulator and judge), for tests that write calls or sessions by hand."""
    return {"run_id": run_id, "created_at": 1.0, "updated_at": 1.0, "plan_path": "b",
            "plan_hash": "h", "pack_name": "p", "pack_version": "1", "benchpack_version": "0",
            "agent": run_id, "simulator": "rules", "judge": "rules", "repeats": 1,
            "config": {}, "status": "finished"}


def store_rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of one query on a store, read with a connection of its own (closed after)."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def bare_toolbox(env: Any, tools: dict[str, Any], timeout_s: float = 5.0,
                 box: Any = None) -> Any:
    """A ToolBox over `tools` (name → ToolDef) and `env`, without a plan or session: the state
    `ToolBox.__init__` would give a plain agent-side box with nothing locked, given or ending.
    `box`: an instance of a subclass to fill in (its own `__init__` calls this).

    The one place the tests bypass that `__init__`, so a new per-box attribute is set here
    (twice before, such an attribute broke hand-built boxes in two test modules)."""
    from benchpack.runtime.env.gifts import Gifts
    from benchpack.runtime.env.toolbox import ToolBox

    box = ToolBox.__new__(ToolBox) if box is None else box
    box.plan = box.session = None
    box.side = "agent"
    box.env = env
    box.allow_python = False
    box.python_tools = {}
    box.records = []
    box.turn = box.step = 0
    box.tool_timeout_s = timeout_s
    box.end_tool = None
    box.ended = False
    box.tools = dict(tools)
    box.locked = {}
    box.unlocked = []
    box.gifts = Gifts()
    box.ungiven = {}
    box._specs = None
    return box


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def alpha_units(*raw: tuple[str, ...], scale: tuple[str, ...] = ("NO", "YES")
                ) -> list[list[float]]:
    """Flattened coincidence matrices, one a unit (each unit one item's ratings), as
    `krippendorff_alpha` counts them: each ordered pair of a unit's m ratings adds 1/(m − 1)."""
    k = len(scale)
    index = {c: i for i, c in enumerate(scale)}
    out = []
    for vals in raw:
        cells = [0.0] * (k * k)
        m = len(vals)
        for i, a in enumerate(vals):
            for j, b in enumerate(vals):
                if i != j:
                    cells[index[a] * k + index[b]] += 1 / (m - 1)
        out.append(cells)
    return out


def benchmark_script(name: str) -> Any:
    """`benchmarks/NAME.py` loaded as the module `NAME` (registered in `sys.modules`: its
    dataclasses look their module up), for tests that keep a benchmark from rotting."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module

