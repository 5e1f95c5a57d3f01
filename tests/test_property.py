"""Property tests (hypothesis): model round-trips, mutated packs, random dependency graphs.

(a) Every pack-language model: data generated from its fields validates, dumps to JSON and to
    YAML, and validates again to an equal model (with the same fields set).
(b) Mutations of valid packs (the reference packs and the `bench init` scaffold) end in
    located diagnostics, never an exception.
(c) Random dependency graphs compile to a topological order consistent with every edge, or
    to a cycle diagnostic that prints a real cycle.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import re
import shutil
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
import networkx as nx
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from benchpack.compiler import CODES, compile_pack, init_pack, validate_pack
from benchpack.compiler.diagnostics import Diagnostics
from benchpack.compiler.loader import parse_yaml
from benchpack.compiler.yamlparse import FastLoader
from benchpack.specs import pack as P
from conftest import TASKPACKS

# more examples for a bug hunt: BENCHPACK_PROPERTY_EXAMPLES=5000 pytest tests/test_property.py
EXAMPLES = int(os.environ.get("BENCHPACK_PROPERTY_EXAMPLES", "100"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


class Yaml12Dumper(yaml.SafeDumper):
    """Quotes exactly the strings the compiler's YAML 1.2 loader would read as non-strings."""


Yaml12Dumper.yaml_implicit_resolvers = FastLoader.yaml_implicit_resolvers


def dump_yaml(data: Any) -> str:
    # non-ASCII is escaped: libyaml reads NEL and U+2028 in plain text as YAML 1.1 line breaks
    return yaml.dump(data, Dumper=Yaml12Dumper, allow_unicode=False, sort_keys=False)


def load_yaml(text: str) -> Any:
    diags = Diagnostics()
    ok, data = parse_yaml(text, "x.yaml", diags)
    assert ok, [d.format() for d in diags.items]
    return data


# --------------------------------------------------------------------------- (a) round-trips

MODELS = sorted(
    (m for m in vars(P).values()
     if isinstance(m, type) and issubclass(m, P.Spec) and m not in (P.Spec, P._Content)),
    key=lambda m: m.__name__,
)

JSON_SCALARS = (st.none() | st.booleans() | st.integers(-10**12, 10**12)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=6,
)


def _constraints(meta: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in meta:
        if isinstance(m, FieldInfo):
            out.update(_constraints(list(m.metadata)))
        elif isinstance(m, annotated_types.Ge):
            out["min"] = m.ge
        elif isinstance(m, annotated_types.Gt):
            out["min"], out["exclusive_min"] = m.gt, True
        elif isinstance(m, annotated_types.Le):
            out["max"] = m.le
        elif isinstance(m, annotated_types.Lt):
            out["max"], out["exclusive_max"] = m.lt, True
        elif getattr(m, "pattern", None):
            out["pattern"] = m.pattern
    return out


def for_type(tp: Any, meta: list[Any], depth: int) -> st.SearchStrategy[Any]:
    """Data (what a pack author writes) for a field of type `tp`."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        base, *extra = get_args(tp)
        return for_type(base, meta + extra, depth)
    if origin in (Union, types.UnionType):
        return st.one_of(*[for_type(a, meta, depth) for a in get_args(tp)])
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin is list:
        return st.lists(for_type(get_args(tp)[0], [], depth + 1), max_size=2 if depth else 3)
    if origin is dict:
        key, value = get_args(tp)
        return st.dictionaries(for_type(key, [], depth + 1), for_type(value, [], depth + 1),
                               max_size=2)
    if origin is tuple:
        return st.tuples(*[for_type(a, [], depth + 1) for a in get_args(tp)]).map(list)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return model_data(tp, depth + 1)
    c = _constraints(meta)
    if tp is Any:
        return JSON_VALUES
    if tp is type(None):
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(min_value=c.get("min", -1000) + c.get("exclusive_min", 0),
                           max_value=c.get("max", 1000) - c.get("exclusive_max", 0))
    if tp is float:
        return st.floats(min_value=c.get("min", -1e6), max_value=c.get("max", 1e6),
                         exclude_min=c.get("exclusive_min", False),
                         exclude_max=c.get("exclusive_max", False), allow_nan=False)
    if tp is str:
        if "pattern" in c:
            return st.from_regex(c["pattern"], fullmatch=True)
        return st.text(max_size=30)
    if tp is dt.datetime:
        return st.datetimes(min_value=dt.datetime(1990, 1, 1)).map(lambda d: d.isoformat())
    if tp is dt.date:
        return st.dates(min_value=dt.date(1990, 1, 1)).map(lambda d: d.isoformat())
    raise AssertionError(f"no strategy for {tp!r}")  # a new field type: extend for_type


def model_data(model: type[BaseModel], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, f in model.model_fields.items():
        key = f.alias or name
        recursive = "Assertion" in repr(f.annotation) and model is P.Assertion
        if not f.is_required() and ((recursive and depth > 1) or depth > 4):
            continue  # bound the recursion (checks nest in checks)
        strat = for_type(f.annotation, list(f.metadata), depth)
        (required if f.is_required() else optional)[key] = strat
    return st.fixed_dictionaries(required, optional=optional)


def _same(a: BaseModel, b: BaseModel) -> None:
    assert a == b
    # which fields the author gave matters (a check's predicate is the field it sets)
    assert (a.model_dump(mode="json", by_alias=True, exclude_unset=True)
            == b.model_dump(mode="json", by_alias=True, exclude_unset=True))


def test_every_model_has_a_round_trip_test() -> None:
    names = {m.__name__ for m in MODELS}
    assert {"Pack", "Fragment", "Session", "Assertion", "Tool", "Persona"} <= names
    assert len(names) >= 45


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_model_round_trips_through_json_and_yaml(model: type[BaseModel], data: st.DataObject) -> None:
    raw = data.draw(model_data(model))
    try:
        first = model.model_validate(raw)
    except ValidationError:
        assume(False)  # e.g. a workspace file with both `source` and `content`
        return
    dumped = first.model_dump(mode="json", by_alias=True, exclude_unset=True)
    _same(first, model.model_validate(json.loads(json.dumps(dumped))))
    _same(first, model.model_validate(load_yaml(dump_yaml(dumped))))


# --------------------------------------------------------------------------- (b) mutations


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Writable copies of the reference packs and the scaffold."""
    base = tmp_path_factory.mktemp("seeds")
    out = []
    for pack in sorted(TASKPACKS.glob("*/pack.yaml")):
        out.append(Path(shutil.copytree(pack.parent, base / pack.parent.name)))
    init_pack(base / "starter")
    out.append(base / "starter")
    return out


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        node = node[p]
    return node


ODD_VALUES = st.sampled_from([
    None, 0, -1, 10**30, 1.5, True, "", "x", "{{ nope }}", "{{ ''.__class__ }}", "{% for %}",
    "{{ range(10**9)|list }}", "[", "(", "a\tb", "\x00", [], {}, [1, 2], [[]], {"k": "v"},
    {"type": 5}, {"properties": None}, {"kind": "nope"}, "../outside.yaml", "*.nothing",
    "data", "session.x", "E+P+V", "P+E+E", "99999m", "all", "coherent", "start", "persistent",
])


def data_mutation(draw: Callable[..., Any], data: Any) -> bytes:
    """One to three of: delete a key, change a value's type, add an unknown key, swap or
    duplicate ids."""
    data = json.loads(json.dumps(data))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        kind = draw(st.sampled_from(["delete", "retype", "unknown", "swap", "duplicate"]))
        path = draw(st.sampled_from(paths))
        parent = _get(data, path[:-1])
        if kind == "delete":
            del parent[path[-1]]
        elif kind == "retype":
            parent[path[-1]] = draw(ODD_VALUES)
        elif kind == "unknown":
            target = parent if isinstance(parent, dict) else data
            target[draw(st.sampled_from(["idd", "hidden_intent", "depend_on", "protocl"]))] = 1
        else:
            ids = [p for p in paths if p[-1] in ("id", "name") and isinstance(_get(data, p), str)]
            if len(ids) < 2:
                continue
            a, b = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
            pa, pb = _get(data, a[:-1]), _get(data, b[:-1])
            if kind == "swap":
                pa[a[-1]], pb[b[-1]] = pb[b[-1]], pa[a[-1]]
            else:
                pa[a[-1]] = pb[b[-1]]
    return dump_yaml(data).encode("utf-8")


def byte_mutation(draw: Callable[..., Any], raw: bytes) -> bytes:
    """Break the YAML text itself."""
    kind = draw(st.sampled_from(["truncate", "tab", "nul", "bytes", "drop-line", "dup-line",
                                 "indent", "bom-crlf"]))
    at = draw(st.integers(0, max(len(raw) - 1, 0)))
    lines = raw.split(b"\n")
    line = draw(st.integers(0, max(len(lines) - 1, 0)))
    if kind == "truncate":
        return raw[:at]
    if kind == "tab":
        return raw[:at] + b"\t" + raw[at:]
    if kind == "nul":
        return raw[:at] + b"\x00" + raw[at:]
    if kind == "bytes":
        return raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at:]
    if kind == "drop-line":
        return b"\n".join(lines[:line] + lines[line + 1:])
    if kind == "dup-line":
        return b"\n".join(lines[:line + 1] + lines[line:])
    if kind == "indent":
        lines[line] = b" " * draw(st.integers(1, 3)) + lines[line]
        return b"\n".join(lines)
    return b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n")


def _check_diagnostics_only(pack: Path) -> None:
    for result in (validate_pack(pack), compile_pack(pack, None, use_cache=False)):
        for d in result.diagnostics:
            assert d.code in CODES, d
            assert d.file, d.format()
            assert d.line is not None and d.line >= 1, d.format()
            assert d.col is not None and d.col >= 1, d.format()
            assert d.message
        assert result.internal_error is None, result.internal_error
        if result.plan is not None:
            assert not result.errors


@PROPERTY
@given(data=st.data())
def test_mutated_packs_give_diagnostics_not_exceptions(seeds: list[Path], data: st.DataObject) -> None:
    pack = data.draw(st.sampled_from(seeds), label="pack")
    files = sorted(pack.rglob("*.yaml"))
    target = data.draw(st.sampled_from(files), label="file")
    original = target.read_bytes()
    # the mutations draw small choices (never the whole pack), so failures print readably
    if data.draw(st.booleans(), label="data-level"):
        mutated = data_mutation(data.draw, load_yaml(original.decode("utf-8")))
    else:
        mutated = byte_mutation(data.draw, original)
    target.write_bytes(mutated)
    try:
        _check_diagnostics_only(pack)
    finally:
        target.write_bytes(original)


# --------------------------------------------------------------------------- (c) dependency graphs


def _graph_pack(n: int, edges: set[tuple[int, int]]) -> str:
    """One episode of n sessions `s0`…; (a, b) means `s<b>` depends on `s<a>`."""
    lines = ["name: dag", "personas: [{id: p, profile: {role: r}}]",
             "episodes:", "  - id: e", "    persona: p", "    sessions:"]
    for i in range(n):
        deps = sorted(a for a, b in edges if b == i)
        lines += [f"      - id: s{i}", "        protocol: verified_outcome",
                  f"        request: task {i}", f"        depends_on: [{', '.join(f's{d}' for d in deps)}]",
                  "        checklist: [{text: done}]"]
    return "\n".join(lines) + "\n"


@st.composite
def graphs(draw: st.DrawFn, acyclic: bool) -> tuple[int, set[tuple[int, int]]]:
    n = draw(st.integers(1, 9))
    if acyclic:  # edges go forward in a random topological order, not the authored one
        order = draw(st.permutations(range(n)))
        pairs = [(order[i], order[j]) for i in range(n) for j in range(i + 1, n)]
    else:  # self-dependencies included
        pairs = [(a, b) for a in range(n) for b in range(n)]
    edges = draw(st.sets(st.sampled_from(pairs), max_size=12)) if pairs else set()
    return n, edges


def _has_cycle(n: int, edges: set[tuple[int, int]]) -> bool:
    indeg = {i: 0 for i in range(n)}
    for _, b in edges:
        indeg[b] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while ready:
        x = ready.pop()
        seen += 1
        for a, b in edges:
            if a == x:
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
    return seen < n


def _order(plan: dict[str, Any]) -> list[int]:
    return [int(s.rsplit(".s", 1)[1]) for s in plan["sessions"]]


@PROPERTY
@given(graph=st.one_of(graphs(acyclic=True), graphs(acyclic=False)))
def test_dependency_graphs_give_an_order_or_a_cycle(write_pack, graph: tuple[int, set[tuple[int, int]]]) -> None:
    n, edges = graph
    root = write_pack({"pack.yaml": _graph_pack(n, edges)})
    result = validate_pack(root)
    cycles = [d for d in result.diagnostics if d.code == "E203"]
    if not _has_cycle(n, edges):
        assert result.plan is not None, [d.format() for d in result.diagnostics]
        order = _order(result.plan)
        assert sorted(order) == list(range(n))
        pos = {s: i for i, s in enumerate(order)}
        assert all(pos[a] < pos[b] for a, b in edges)
        if all(a < b for a, b in edges):
            assert order == list(range(n))  # the authored order when it is already valid
        assert _order(validate_pack(root).plan or {}) == order  # stable
        assert not cycles
        return
    assert result.plan is None and cycles
    reported: list[set[int]] = []
    for d in cycles:
        assert d.line is not None and d.line >= 1
        itself = re.fullmatch(r"session `s(\d+)` depends on itself", d.message)
        if itself:
            assert (int(itself.group(1)),) * 2 in edges
            continue
        names = re.findall(r"\bs(\d+)\b", d.message.split(":", 1)[1])
        nodes = [int(x) for x in names]
        assert nodes[0] == nodes[-1] and len(nodes) >= 3, d.message
        for a, b in itertools.pairwise(nodes):
            assert (a, b) in edges, f"{d.message}: s{b} does not depend on s{a}"
        reported.append(set(nodes))
    # every knot of mutually dependent sessions is reported (one cycle through each)
    g = nx.DiGraph([(a, b) for a, b in edges if a != b])
    for component in nx.strongly_connected_components(g):
        if len(component) > 1:
            assert any(r <= component for r in reported), component
