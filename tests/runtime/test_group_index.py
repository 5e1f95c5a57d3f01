"""Dependency groups are indexed once per plan (issue 16 item 0).

`_pool_group` and `worst_scores` used to scan every group of the plan for each session, so a run
grew quadratically with its sessions (3.1 ms per session at 10 k, 5.4 ms at 50 k). The index
must give exactly the groups the scan gave, on every reference pack.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from benchpack.compiler import compile_pack
from benchpack.runtime.planfile import load_plan
from benchpack.runtime.protocols.intent_tracking import _pool_group
from benchpack.runtime.session_rows import worst_scores

ROOT = Path(__file__).resolve().parents[2]
PACKS = [*sorted(p.parent for p in (ROOT / "taskpacks").glob("*/pack.yaml")),
         ROOT / "tests" / "fixtures" / "pibench_case"]


class CountingList(list):  # type: ignore[type-arg]
    """A list that counts the items handed out by iteration."""

    yielded = 0

    def __iter__(self) -> Any:
        for item in super().__iter__():
            CountingList.yielded += 1
            yield item


def _pack(root: Path, episodes: int) -> Path:
    eps = []
    for i in range(episodes):
        eps.append(f"""\
  - id: ep{i}
    persona: p
    sessions:
      - id: a
        protocol: intent_tracking
        request: Draft note {i}.
        hidden_intents: [{{text: Keep note {i} short.}}]
      - id: b
        protocol: intent_tracking
        depends_on: [a]
        request: Send note {i}.
        hidden_intents: [{{text: Copy the lead on note {i}.}}]
""")
    (root / "pack.yaml").write_text(
        "benchpack: 1\nname: groups\npersonas:\n  - id: p\n    profile: {role: Analyst}\n"
        "episodes:\n" + "".join(eps), encoding="utf-8")
    return root


def test_group_lookups_do_not_scan_the_plan_per_session(tmp_path: Path) -> None:
    (tmp_path / "pack").mkdir()
    pack = _pack(tmp_path / "pack", 150)
    res = compile_pack(pack, tmp_path / "plan", use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    plan = load_plan(tmp_path / "plan")
    assert len(plan.groups) == 150 and len(plan.sessions) == 300
    plan.groups = CountingList(plan.groups)
    CountingList.yielded = 0
    finals = 0
    for s in plan.sessions.values():
        ctx = SimpleNamespace(session=s, plan=plan, chain=None)
        assert _pool_group(ctx, [], {"proc": 1.0}) == []  # type: ignore[arg-type]
        finals += "proc_group" in worst_scores(plan, s, {})
    assert finals == 150
    # once per plan: at most two passes over the 150 groups, not one per session (45,150 before)
    assert CountingList.yielded <= 2 * len(plan.groups)


@pytest.mark.parametrize("pack", PACKS, ids=[p.name for p in PACKS])
def test_the_index_groups_exactly_as_the_scan_did(pack: Path, tmp_path: Path) -> None:
    res = compile_pack(pack, tmp_path / "plan", use_cache=False)
    assert res.ok, [d.format() for d in res.diagnostics]
    plan = load_plan(tmp_path / "plan")
    from benchpack.runtime.planfile import group_index

    index = group_index(plan)
    assert group_index(plan) is index  # built once
    for s in plan.sessions.values():
        scanned = next((g for g in plan.groups if g.id == s.group), None)
        found = index.by_id.get(s.group) if s.group is not None else None
        assert found is scanned
        assert (s.id in index.finals) == any(g.final == s.id for g in plan.groups)


def test_the_pibench_case_has_groups_to_compare(tmp_path: Path) -> None:
    res = compile_pack(PACKS[-1], tmp_path / "plan", use_cache=False)
    assert res.ok
    plan = load_plan(tmp_path / "plan")
    from benchpack.runtime.planfile import group_index

    assert plan.groups and set(group_index(plan).finals) == {g.final for g in plan.groups}
