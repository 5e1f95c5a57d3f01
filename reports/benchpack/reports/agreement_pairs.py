"""What the `agreement` report reads of a judge pair (judge against judge): the items two runs
judged on the same dialogues, counted per (kind, group, session) in SQL (`PAIR_CELLS`), and
the cheaper statement for the usual pair, a run and its one rejudge (`PAIR_CELLS_ONE_AUDIT`).

The intent-check audit is what costs: `bench rejudge` stores each check once, with the
original run's decision beside the new judge's, and `judge_labels` lists the original run's
labels as the DISTINCT `original`s of every rejudge of its dialogues, so the general
statement de-duplicates them and joins them back to the rejudge's rows (0.10 s of a pair's
0.15 s of CPU on 1 M turns). When the pair's audit rows are one run's — the rejudge's, and no
other run of the pair, and no other rejudge of the original, holds any — and that run checks
each (session, repeat, kind, intent, turn) once, each of its rows *is* one pair, (original,
decision): its rows are counted as they are (0.015 s). Whether that holds is asked of the
store first (`AUDIT_FACTS`: rows and distinct keys per run, one statement for all pairs);
otherwise the general statement answers. `tests/reports/test_agreement_reads.py` checks both
against the `judge_pairs` view, on stores where the short path holds and where it must not be
taken (a second rejudge whose originals differ; a key checked twice in one audit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .ratings import SCALES
from .sqltext import literals

LABELS = max(len(s) for s in (*SCALES.values(), ("NO", "YES")))
"""The most labels a kind's scale has: the width of the SQL rows that count label pairs."""


def label_at(i: int) -> str:
    """SQL for the i-th label of the row's kind (worst first), NULL past its scale."""
    whens = " ".join(f"WHEN '{kind}' THEN '{scale[i]}'" for kind, scale in SCALES.items()
                     if i < len(scale))
    default = f"'{('NO', 'YES')[i]}'" if i < 2 else "NULL"
    return f"CASE kind {whens} ELSE {default} END"


def _code(kind: str, label: str) -> str:
    """SQL for a `kind` label's place on its scale (worst first; NULL off the scale)."""
    scale = SCALES.get(kind, ("NO", "YES"))
    return "CASE " + label + " " + " ".join(f"WHEN '{x}' THEN {i}" for i, x in enumerate(scale)) \
        + " END"


def _yes_no(kind: str, v: str) -> str:
    """SQL for the place on a YES / NO kind's scale of a boolean (NULL: a judge error)."""
    scale = SCALES.get(kind, ("NO", "YES"))
    return f"CASE WHEN {v} THEN {scale.index('YES')} WHEN NOT {v} THEN {scale.index('NO')} END"


def _cell(first: str, second: str) -> str:
    """The row's cell of the flattened k × k grid (`LABELS` wide) from the two places."""
    return f"({first}) * {LABELS} + ({second})"


_ITEMS = f"""
WITH s AS (
    SELECT run_id, session_id, repeat, triples_predicted FROM sessions
    WHERE run_id IN ($1, $2) AND status = 'finished'
), t AS (
    SELECT t.run_id, session_id, repeat, t.trigger_id, t.type, t.label
    FROM triggers t JOIN s USING (run_id, session_id, repeat)
    WHERE coalesce(t.label, '') <> 'SKIPPED'
), c AS (
    SELECT c.run_id, session_id, repeat, c.item_id, c.score >= 0.5 AS yes
    FROM checklist_results c JOIN s USING (run_id, session_id, repeat)
    WHERE c.grader = 'rubric'
), g AS (
    SELECT g.run_id, session_id, repeat, g.idx,
           CASE WHEN g.judge_error IS NULL THEN g.matched END AS yes
    FROM triples g JOIN s USING (run_id, session_id, repeat)
    WHERE g.side = 'ground_truth' AND s.triples_predicted > 0
)$intents
SELECT 'trigger' AS kind, a.type, session_id,
       {_cell(_code("trigger", "a.label"), _code("trigger", "b.label"))} AS cell,
       a.label IS NOT NULL AND b.label IS NOT NULL AS known, count(*) AS n
FROM t a JOIN t b USING (session_id, repeat, trigger_id)
WHERE a.run_id = $1 AND b.run_id = $2 GROUP BY a.type, session_id, a.label, b.label
UNION ALL
SELECT 'checklist', NULL, session_id,
       {_cell(_yes_no("checklist", "a.yes"), _yes_no("checklist", "b.yes"))},
       a.yes IS NOT NULL AND b.yes IS NOT NULL, count(*)
FROM c a JOIN c b USING (session_id, repeat, item_id)
WHERE a.run_id = $1 AND b.run_id = $2 GROUP BY session_id, a.yes, b.yes
UNION ALL
SELECT 'triple', NULL, session_id,
       {_cell(_yes_no("triple", "a.yes"), _yes_no("triple", "b.yes"))},
       a.yes IS NOT NULL AND b.yes IS NOT NULL, count(*)
FROM g a JOIN g b USING (session_id, repeat, idx)
WHERE a.run_id = $1 AND b.run_id = $2 GROUP BY session_id, a.yes, b.yes
UNION ALL
"""
"""The rows of `judge_pairs WHERE run_a = $1 AND run_b = $2` but the audit's (`$intents`, a
CTE, and the statement's last branch after it), counted per (kind, type, session, label
pair), with the view's conditions (`views.py`, `judge_labels`) but joined kind by kind on the
tables' own keys (trigger id, item id, triple index), where the view joins the union of every
kind on a string key built for each item: 0.30 → 0.20 s of CPU a judge pair on 1 M turns. Each
label pair is its cell of the grid (`_cell`: the two labels' places on the kind's scale, NULL
off it) and whether both labels are known: the YES / NO kinds carry their boolean through the
join and the grouping (strings built per item and grouped on cost ~20 % of the statement),
and the cells are integers compared once a row, where each of the k × k sums compared both
label strings with a CASE over the kinds (~0.02 s a pair). The two runs share their dialogues
(`judge_pairs`), hence their `source_run`, which the view also joins on."""

_GENERAL_INTENTS = ("""
, i AS (
    SELECT run_id, session_id, repeat, kind, intent_id, turn, decision AS yes
    FROM intent_checks WHERE run_id IN ($1, $2)
    UNION ALL
    SELECT DISTINCT l.source_run, i.session_id, i.repeat, i.kind, i.intent_id, i.turn,
           i.original
    FROM intent_checks i JOIN run_lineage l USING (run_id) WHERE l.source_run IN ($1, $2)
)""", f"""
SELECT 'intent_' || kind, NULL, session_id,
       {_cell(_yes_no("intent", "a.yes"), _yes_no("intent", "b.yes"))},
       a.yes IS NOT NULL AND b.yes IS NOT NULL, count(*)
FROM i a JOIN i b USING (session_id, repeat, kind, intent_id, turn)
WHERE a.run_id = $1 AND b.run_id = $2 GROUP BY kind, session_id, a.yes, b.yes
""")
"""The audit's labels as `judge_labels` lists them: a run's own decisions, and the original
run's as the DISTINCT `original`s of every run re-judging its dialogues."""

_KEYED = ("session_id IS NOT NULL AND repeat IS NOT NULL AND kind IS NOT NULL "
          "AND intent_id IS NOT NULL AND turn IS NOT NULL")
"""The audit rows that can pair at all: the view joins on every part of the key, and a NULL
equals nothing."""


def _one_audit(first: str, second: str) -> tuple[str, str]:
    return ("", f"""
SELECT 'intent_' || kind, NULL, session_id,
       {_cell(_yes_no("intent", first), _yes_no("intent", second))},
       {first} IS NOT NULL AND {second} IS NOT NULL, count(*)
FROM intent_checks WHERE run_id = $3 AND {_KEYED}
GROUP BY kind, session_id, {first}, {second}
""")


_CELLS = ", ".join(f"coalesce(sum(n) FILTER (WHERE cell = {i}), 0)::BIGINT AS x{i}"
                   for i in range(LABELS * LABELS))
_SUMMED = f"""
SELECT kind, 'all' AS grp, session_id, {_CELLS},
       coalesce(sum(n) FILTER (WHERE known), 0)::BIGINT AS known, sum(n)::BIGINT AS every
FROM pairs GROUP BY kind, session_id
UNION ALL
SELECT kind, type, session_id, {_CELLS},
       coalesce(sum(n) FILTER (WHERE known), 0)::BIGINT, sum(n)::BIGINT
FROM pairs WHERE kind = 'trigger' AND type <> '' GROUP BY kind, type, session_id
ORDER BY kind, grp, session_id
"""


def _cells(intents: tuple[str, str], what: str) -> str:
    items = _ITEMS.replace("$intents", intents[0]) + intents[1]
    return f"-- judge_pairs of two runs{what}, per kind, group and session\n" \
           f"WITH pairs AS ({items}){_SUMMED}"


PAIR_CELLS = _cells(_GENERAL_INTENTS, "")
"""A judge pair's items per kind, group (a trigger type, or all) and session: the k × k
cells of the pairs labelled on the kind's scale (`x0`…, row-major; none past a kind's
scale), the pairs with both labels known (`known`), all pairs (`every`; the difference:
judge errors). Trigger points count in their type's group and in `all`, as
`agreement.groups` counts them. One row per (kind,
group, session) — about 12,000 a judge pair on 1 M turns, where a row per label pair (29,000)
was read into Python dictionaries; the sums as BIGINT, which Python receives faster than
DuckDB's HUGEINT (an overflow is an error, never a wrong count). Parameters: the two runs."""

PAIR_CELLS_ONE_AUDIT = {
    "original first": _cells(_one_audit("original", "decision"), " (one audit)"),
    "decision first": _cells(_one_audit("decision", "original"), " (one audit)"),
}
"""`PAIR_CELLS` where the pair's audit rows are one run's, each key once (module docstring):
parameters the two runs and that run ($3), its rows (original, decision) as the pair's labels
— the original first when the pair's first run is the original, else the decision."""

AUDIT_FACTS = f"""
-- judge_pairs: the audit rows that can pair, and their distinct keys, per run
SELECT run_id, count(*)::BIGINT AS checks,
       count(DISTINCT hash(session_id, repeat, kind, intent_id, turn))::BIGINT AS keys
FROM intent_checks WHERE run_id IN ($runs) AND {_KEYED} GROUP BY run_id
"""
"""Per run of the pairs' lineage: its audit rows with a whole key, and how many distinct
hashes of the key they have — as many as rows only if no key repeats (equal keys hash
equal; a collision can only make a unique audit look repeated, which takes the general
statement: the same numbers, slower)."""


def audit_facts_sql(runs: Sequence[str]) -> str:
    return AUDIT_FACTS.replace("$runs", literals(runs) if runs else "NULL")


def family(pairs: Sequence[tuple[str, str]], sources: Mapping[str, str]) -> list[str]:
    """The runs whose audit rows a pair's labels can hold: its two runs, and every run whose
    dialogues are one of theirs (`sources`: run → `source_run`)."""
    ends = {r for p in pairs for r in p}
    return sorted(ends | {r for r, s in sources.items() if s in ends})


def one_audit(a: str, b: str, sources: Mapping[str, str],
              facts: Mapping[str, tuple[int, int]]) -> str | None:
    """The run whose audit rows are the pair's alone, each key once (module docstring), or
    None when the general statement must answer. `facts`: run → (rows, distinct keys)."""
    held = [r for r in family([(a, b)], sources) if facts.get(r, (0, 0))[0] > 0]
    if len(held) != 1 or held[0] not in (a, b):
        return None
    run = held[0]
    other = b if run == a else a
    rows, keys = facts[run]
    return run if sources.get(run) == other and rows == keys else None


def pair_statement(a: str, b: str, sources: Mapping[str, str],
                   facts: Mapping[str, tuple[int, int]]) -> tuple[str, list[str]]:
    """The statement counting the pair (a, b) and its parameters."""
    run = one_audit(a, b, sources, facts)
    if run is None:
        return PAIR_CELLS, [a, b]
    return PAIR_CELLS_ONE_AUDIT["decision first" if run == a else "original first"], [a, b, run]


__all__ = ["AUDIT_FACTS", "LABELS", "PAIR_CELLS", "PAIR_CELLS_ONE_AUDIT", "audit_facts_sql",
           "family", "label_at", "one_audit", "pair_statement"]
