"""The episode dependency DAG (networkx): order, cycles, dependency groups, text/Mermaid/DOT."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True)
class Group:
    id: str
    members: tuple[str, ...]
    """Topological order."""
    final: str


def build_dag(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> nx.DiGraph:
    """Edges go from a dependency to its dependent (parent → child)."""
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from(edges)
    return g


def find_cycles(g: nx.DiGraph) -> list[list[str]]:
    """Each cycle once, as a node list starting at its smallest node (stable output)."""
    out: list[list[str]] = []
    seen: set[frozenset[str]] = set()
    for comp in nx.strongly_connected_components(g):
        if len(comp) == 1:
            (n,) = comp
            if g.has_edge(n, n):
                out.append([n])
            continue
        sub = g.subgraph(comp)
        try:
            cyc = [u for u, _ in nx.find_cycle(sub, source=min(comp))]
        except nx.NetworkXNoCycle:  # pragma: no cover - a strong component always has one
            continue
        key = frozenset(cyc)
        if key not in seen:
            seen.add(key)
            i = cyc.index(min(cyc))
            out.append(cyc[i:] + cyc[:i])
    return sorted(out)


def stable_order(g: nx.DiGraph, rank: Mapping[str, int]) -> list[str]:
    """Topological order that keeps authored order wherever the dependencies allow."""
    return list(nx.lexicographical_topological_sort(g, key=lambda n: (rank.get(n, 0), n)))


def dependency_groups(g: nx.DiGraph, order: Sequence[str], prefix: str = "group") -> list[Group]:
    """Weakly connected components with two or more sessions; the final member is the one the
    others lead to (the last sink in order when there are several)."""
    pos = {n: i for i, n in enumerate(order)}
    groups: list[Group] = []
    for comp in nx.weakly_connected_components(g):
        if len(comp) < 2:
            continue
        members = tuple(sorted(comp, key=lambda n: pos[n]))
        sinks = [n for n in members if g.out_degree(n) == 0]
        final = sinks[-1] if sinks else members[-1]
        groups.append(Group(id=f"{prefix}.{final}", members=members, final=final))
    return sorted(groups, key=lambda gr: pos[gr.members[0]])


def render_text(episodes: Mapping[str, Sequence[str]], parents: Mapping[str, Sequence[str]],
                labels: Mapping[str, str]) -> str:
    """An indented tree per episode: each session with the sessions it depends on."""
    lines: list[str] = []
    for ep, sessions in episodes.items():
        lines.append(f"episode {ep}")
        for i, sid in enumerate(sessions):
            last = i == len(sessions) - 1
            branch = "└── " if last else "├── "
            lines.append(f"  {branch}{labels.get(sid, sid)}")
            deps = parents.get(sid, [])
            for j, dep in enumerate(deps):
                pad = "    " if last else "│   "
                mark = "└─" if j == len(deps) - 1 else "├─"
                lines.append(f"  {pad}{mark} depends on {labels.get(dep, dep)}")
    return "\n".join(lines) + "\n"


def render_mermaid(episodes: Mapping[str, Sequence[str]], parents: Mapping[str, Sequence[str]],
                   labels: Mapping[str, str]) -> str:
    # Node ids are positional: ids made from names collide (`a-b` and `a_b` both give `a_b`).
    ids = {sid: f"s{i}" for i, sid in enumerate(s for ss in episodes.values() for s in ss)}
    lines = ["flowchart LR"]
    for i, (ep, sessions) in enumerate(episodes.items()):
        lines.append(f'  subgraph e{i}["episode {_mermaid_text(ep)}"]')
        for sid in sessions:
            lines.append(f'    {ids[sid]}["{_mermaid_text(labels.get(sid, sid))}"]')
        lines.append("  end")
    for sid, deps in parents.items():
        for dep in deps:
            if sid in ids and dep in ids:
                lines.append(f"  {ids[dep]} --> {ids[sid]}")
    return "\n".join(lines) + "\n"


def _mermaid_text(s: str) -> str:
    return s.replace('"', "#quot;")


def render_dot(episodes: Mapping[str, Sequence[str]], parents: Mapping[str, Sequence[str]],
               labels: Mapping[str, str]) -> str:
    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["digraph benchpack {", "  rankdir=LR;", "  node [shape=box];"]
    for i, (ep, sessions) in enumerate(episodes.items()):
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f"    label={q('episode ' + ep)};")
        for sid in sessions:
            lines.append(f"    {q(sid)} [label={q(labels.get(sid, sid))}];")
        lines.append("  }")
    for sid, deps in parents.items():
        for dep in deps:
            lines.append(f"  {q(dep)} -> {q(sid)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
