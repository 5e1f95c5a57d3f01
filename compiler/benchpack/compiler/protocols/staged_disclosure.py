"""staged_disclosure: disclosure stages (a `start` stage is the opening request) and the
ground-truth knowledge graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from benchpack.specs import pack as P

from ..datafiles import DataError, read_triples
from .base import LintReport, ProtocolCompiler, lacks

if TYPE_CHECKING:
    from ..build import Builder
    from ..core import Loc


def opening(b: Builder, s: P.Session, loc: Loc, r: Any, request: str | None) -> str | None:
    """The opening request: a first stage triggered by `start` says it."""
    if s.stages and s.stages[0].when.kind == "start":
        if request is not None:
            b.err("E204", "the opening is given twice: as `request` and as a `start` stage",
                  loc, ("stages", 0, "when", "kind"), "keep one of them")
        else:
            request = r(s.stages[0].line, "stages", 0, "line")
    return request


def stages(b: Builder, s: P.Session, loc: Loc, r: Any) -> list[dict[str, Any]]:
    out = []
    for i, st in enumerate(s.stages):
        sub = ("stages", i)
        if st.when.kind == "start" and i > 0:
            b.err("E204", "only the first stage can be triggered by `start`", loc,
                  (*sub, "when", "kind"), "use mentions, asks or milestone")
        if st.when.kind != "start" and not (st.when.about or "").strip():
            b.err("E102", f"a `{st.when.kind}` trigger needs `about` (what to look for)",
                  loc, (*sub, "when"), "add `about: …`")
        if st.when.kind == "start" and i == 0:
            continue  # its line is the opening request
        out.append({"id": st.id or f"st{i + 1}", "title": st.title, "kind": st.when.kind,
                    "about": r(st.when.about, *sub, "when", "about"),
                    "line": r(st.line, *sub, "line"),
                    "otherwise": r(st.otherwise, *sub, "otherwise")})
    ids = [x["id"] for x in out]
    for i, sid in enumerate(ids):
        if ids.count(sid) > 1:
            b.err("E201", f"stage id `{sid}` is used twice", loc, ("stages", i, "id"))
            break
    return out


def graph(b: Builder, s: P.Session, loc: Loc) -> dict[str, Any] | None:
    g = s.graph
    if g is None:
        return None
    triples: list[dict[str, Any]] = []
    for t in g.triples:
        if isinstance(t, tuple):
            triples.append({"head": t[0], "relation": t[1], "tail": t[2], "dimension": None})
        else:
            triples.append(t.model_dump(mode="json"))
    if g.file:
        text = b.read_text(g.file, loc, ("graph", "file"))
        if text is not None:
            triples.extend(triples_file(b, g.file, text, loc))
    seen: set[tuple[str, str, str]] = set()
    uniq = []
    for tr in triples:
        key = (tr["head"].strip().lower(), tr["relation"].strip().lower(),
               tr["tail"].strip().lower())
        if key not in seen:
            seen.add(key)
            uniq.append(tr)
    return {"triples": uniq, "batch_size": g.batch_size}


def triples_file(b: Builder, rel: str, text: str, loc: Loc) -> list[dict[str, Any]]:
    try:
        return read_triples(rel, text)
    except DataError as exc:
        b.err("E013", f"`{rel}`: {exc}", loc, ("graph", "file"),
              exc.hint or "a JSON list of {head, relation, tail} objects, or TSV lines")
        return []


def material(b: Builder, s: P.Session, loc: Loc, r: Any, tools: list[str],
             env: dict[str, Any]) -> dict[str, Any]:
    return {"stages": stages(b, s, loc, r), "graph": graph(b, s, loc)}


def lint(s: dict[str, Any], report: LintReport) -> None:
    if not s.get("stages"):
        lacks(s, report, "stages", "stages")
    if not s.get("graph") or not s["graph"]["triples"]:
        lacks(s, report, "graph", "a ground-truth graph")


COMPILER = ProtocolCompiler(
    name="staged_disclosure",
    default_limits={"max_turns": 20, "max_steps_per_turn": 40, "turn_timeout_s": 900.0},
    material=material,
    opening=opening,
    lint=lint,
)
