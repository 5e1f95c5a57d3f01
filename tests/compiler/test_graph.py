"""graph: cycles, stable order, dependency groups, and the three renderings."""

from __future__ import annotations

from benchpack.compiler.graph import (
    build_dag,
    dependency_groups,
    find_cycles,
    render_dot,
    render_mermaid,
    render_text,
    stable_order,
)


def test_cycles_are_reported_once_each_from_their_smallest_node() -> None:
    g = build_dag(list("abcdef"), [("b", "c"), ("c", "a"), ("a", "b"), ("d", "e"), ("e", "d"),
                                   ("f", "f")])
    assert find_cycles(g) == [["a", "b", "c"], ["d", "e"], ["f"]]
    assert find_cycles(build_dag(["a", "b"], [("a", "b")])) == []


def test_order_keeps_the_authored_order_where_dependencies_allow() -> None:
    nodes = ["w", "x", "y", "z"]
    rank = {n: i for i, n in enumerate(nodes)}
    assert stable_order(build_dag(nodes, []), rank) == nodes
    # z must come before x; everything else keeps its place
    assert stable_order(build_dag(nodes, [("z", "x")]), rank) == ["w", "y", "z", "x"]


def test_groups_and_their_final_session() -> None:
    nodes = ["a", "b", "c", "d", "e"]
    g = build_dag(nodes, [("a", "b"), ("b", "c"), ("d", "e")])
    groups = dependency_groups(g, nodes, prefix="group.ep")
    assert [(gr.id, gr.members, gr.final) for gr in groups] == [
        ("group.ep.c", ("a", "b", "c"), "c"), ("group.ep.e", ("d", "e"), "e")]
    # two sinks: the later one in order is the final session
    g2 = build_dag(["a", "b", "c"], [("a", "b"), ("a", "c")])
    assert dependency_groups(g2, ["a", "b", "c"])[0].final == "c"


EPISODES = {"mon": ["s.a", "s.b-c"], "tue": ["s.b_c"]}
PARENTS = {"s.a": [], "s.b-c": ["s.a"], "s.b_c": []}
LABELS = {"s.a": "a", "s.b-c": 'b-c "quoted"', "s.b_c": "b_c"}


def test_text_tree() -> None:
    assert render_text(EPISODES, PARENTS, LABELS) == (
        "episode mon\n"
        "  ├── a\n"
        '  └── b-c "quoted"\n'
        "      └─ depends on a\n"
        "episode tue\n"
        "  └── b_c\n")


def test_mermaid_ids_never_collide() -> None:
    # `s.b-c` and `s.b_c` would both become `s_b_c` if ids were made from names
    assert render_mermaid(EPISODES, PARENTS, LABELS) == (
        "flowchart LR\n"
        '  subgraph e0["episode mon"]\n'
        '    s0["a"]\n'
        '    s1["b-c #quot;quoted#quot;"]\n'
        "  end\n"
        '  subgraph e1["episode tue"]\n'
        '    s2["b_c"]\n'
        "  end\n"
        "  s0 --> s1\n")


def test_dot_quotes_labels() -> None:
    assert render_dot(EPISODES, PARENTS, LABELS) == (
        "digraph benchpack {\n"
        "  rankdir=LR;\n"
        "  node [shape=box];\n"
        "  subgraph cluster_0 {\n"
        '    label="episode mon";\n'
        '    "s.a" [label="a"];\n'
        '    "s.b-c" [label="b-c \\"quoted\\""];\n'
        "  }\n"
        "  subgraph cluster_1 {\n"
        '    label="episode tue";\n'
        '    "s.b_c" [label="b_c"];\n'
        "  }\n"
        '  "s.a" -> "s.b-c";\n'
        "}\n")
