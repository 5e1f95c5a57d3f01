"""The rated items' coincidences for Krippendorff's α in `bench report agreement --humans`
(`agreement_humans`): `COINCIDENCES`, the statement for a store whose rated items share an item
key, and `units_of`, which sums `_PER_SESSION`'s or `COINCIDENCES`' rows into each group's
per-session coincidence units (`Units`); the kinds humans rate (`RATED_KINDS`), whose index
both statements key rows by."""

from __future__ import annotations

import math
from typing import Any

from .agreement import LABELS, label_at, scale_of
from .builtin import ReportContext
from .sqltext import literals

JUDGE_IS = [f"coalesce(judge_label = {label_at(i)}, false)::INTEGER" for i in range(LABELS)]
RATED_KINDS = ("trigger", "checklist", "triple")
"""The kinds humans rate (`items`' kinds), in the order of `COINCIDENCES`' kind code."""
COINCIDENCES = f"""
WITH per_item AS (
    SELECT run_id, kind, type, sid, sum(raters) AS hm,
           {", ".join(f"sum(n{i}) AS h{i}" for i in range(LABELS))},
           sum(raters + 1) FILTER (WHERE judge_label IS NOT NULL) AS jm,
           {", ".join(f"sum(n{i} + {JUDGE_IS[i]}) FILTER (WHERE judge_label IS NOT NULL) AS j{i}"
                      for i in range(LABELS))}
    FROM items GROUP BY run_id, kind, type, sid, repeat, item_id
), units AS (
    SELECT 0 AS who, run_id, kind, type, sid, hm AS m,
           {", ".join(f"h{i} AS n{i}" for i in range(LABELS))}
    FROM per_item
    UNION ALL
    SELECT 1, run_id, kind, type, sid, jm, {", ".join(f"j{i}" for i in range(LABELS))}
    FROM per_item WHERE jm IS NOT NULL
)
SELECT list_position($runs, run_id) - 1 AS r,
       list_position({list(RATED_KINDS)!r}, kind) - 1 AS k,
       CASE WHEN kind = 'trigger' THEN coalesce(list_position($types, type), 0) ELSE 0 END AS t,
       who AS w, sid, m,
       {", ".join(f"sum(n{c} * (n{d} - {int(c == d)}))::BIGINT AS x{c * LABELS + d}"
                  for c in range(LABELS) for d in range(LABELS))}
FROM units GROUP BY ALL
"""
"""The coincidences Krippendorff's α needs, per unit (an item's ratings, and those plus the
judge's label), summed per session (the unit α's CI resamples) and number of ratings m: cell
(c, d) is Σ n_c · (n_d − [c = d]) over the session's items with m ratings — items of one
rating too (all cells 0), as they are units that can be drawn. An item's n_c are its
ratings' counts by label (`items`' `n0`, `n1`, …), plus one for the judge's label in the unit
with the judge (only where the judge labelled it); rows of `items` with the same item key (one
rated item judged twice in a session) make one unit of all their ratings, as when every rating
was a row. One row per (session, m) with the k × k cells side by side: 46,000 rows on the
1 M-turn benchmark store. Every key is an integer: the run's index in `$runs`, the kind's in
`RATED_KINDS`, the trigger type's in `$types` plus one (0: no type — NULL or '' — and every
other kind), who (0 the humans, 1 with the judge), the session's rank by id (`items`' `sid`):
grouped on the session ids and handed to Python as strings, then coded by `np.unique` over
46,000 strings, they cost ~0.1 s of CPU on 1 M turns. The sums as BIGINT (an overflow is an
error, never a wrong number): as DuckDB's HUGEINT, handing the rows to Python took 0.3 s, as
BIGINT 0.09; read as numpy columns (`units_of`), 0.13 → 0.01 s."""


Units = dict[tuple[str, str, str, str], list[Any]]
"""(run, kind, type or `all`, who) → each session's flattened k × k coincidence matrix (a
numpy row), sorted by session id: cell (c, d) the fsum over m ≥ 2 of Σ n_c · (n_d − [c = d]) ÷ (m − 1) over the
session's items with m ratings (`COINCIDENCES`), as `krippendorff_alpha_coincidence` adds
units; a session whose items all have one rating is there, all 0 (a unit that can be drawn)."""


def rated_units(ctx: ReportContext, runs: list[str], types: list[str]) -> Units:
    """The coincidence units of `items` (`COINCIDENCES`) for `runs`, whose trigger types are
    `types` (every non-empty type of `items`)."""
    return units_of(ctx.con.execute(keyed(COINCIDENCES, runs, types)).fetchnumpy(), runs,
                     types)


def keyed(sql: str, runs: list[str], types: list[str]) -> str:
    """`sql` with the lists its keys index written in (`sqltext`: a bound list costs ~0.2 ms
    an element)."""
    return (sql.replace("$runs", f"[{literals(runs)}]::VARCHAR[]")
            .replace("$types", f"[{literals(types)}]::VARCHAR[]"))


def units_of(columns: dict[str, Any], runs: list[str], types: list[str]) -> Units:
    """`COINCIDENCES`' rows (numpy columns, as `fetchnumpy` gives them; keys coded by `runs`
    and `types`) summed per group as `groups` sums the other counts (a trigger type and all
    types), then per session: each row's group and session one integer key, sorted once, the
    sums per (group, session, m) and per (group, session) runs of the sorted rows
    (`np.add.reduceat`) — where dictionaries per (session, m, cell) and an fsum per cell took
    0.8 s of `--humans` on 1 M turns, string keys coded by `np.unique` ~0.1 s and `np.add.at`
    ~0.05. The same floats: the integer sums are exact in any order; of the quotients
    n ÷ (m − 1), those by a power of two are exact and so is their sum, and with at most one
    other (m = 4 at 2-4 raters) adding it last rounds once, as fsum does — a cell with two or
    more such terms is fsum'd."""
    import numpy as np

    m_in = np.asarray(columns["m"], dtype=np.int64)
    n = len(m_in)
    if not n:
        return {}
    cells_in = np.stack([np.asarray(columns[f"x{c}"], dtype=np.int64)
                         for c in range(LABELS * LABELS)], axis=1)
    run_at, kind_at, type_at, who_at, session_at = (
        np.asarray(columns[name], dtype=np.int64) for name in ("r", "k", "t", "w", "sid"))
    # each row counts in its kind's `all` group (type code 0) and, a trigger with a type, in
    # its type's; a type named `all` is the all-types group: such a row counts in it twice,
    # as in `groups`
    typed = np.nonzero(type_at > 0)[0]
    rows_at = np.concatenate([np.arange(n), typed])
    group_type = np.concatenate([np.zeros(n, dtype=np.int64), type_at[typed]])
    if "all" in types:
        group_type[group_type == types.index("all") + 1] = 0
    width = len(types) + 1
    group = ((run_at[rows_at] * len(RATED_KINDS) + kind_at[rows_at]) * width
             + group_type) * 2 + who_at[rows_at]
    sessions, ms = int(session_at.max()) + 1, int(m_in.max()) + 1
    key = (group * sessions + session_at[rows_at]) * ms + m_in[rows_at]
    order = np.argsort(key, kind="stable")
    key = key[order]
    # integer sums per (group, session, m): exact
    starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    # (along each cell's contiguous row: along the rows' axis reduceat took ~7 ms a call)
    sums = np.add.reduceat(np.ascontiguousarray(cells_in[rows_at[order]].T), starts, axis=1).T
    key = key[starts]
    m, unit = key % ms, key // ms
    # per (group, session): the quotients by powers of two summed (exact), the others apart
    first = np.flatnonzero(np.concatenate([[True], unit[1:] != unit[:-1]]))
    bounds = [*first.tolist(), len(unit)]
    units = unit[first] // sessions  # each unit's group, ascending
    if int(sums.max()) >= 2**40:  # floats no longer exact: fsum every cell
        return _units_by_fsum(runs, types, units, bounds, sums, m)
    pairable = m >= 2
    step = np.where(pairable, m - 1, 1)
    exact = pairable & (step & (step - 1) == 0) & (step <= 1024)
    inexact = pairable & ~exact
    terms = sums / step[:, None]
    # each unit's terms added one after another in the rows' order (`bincount` adds so)
    where = np.repeat(np.arange(len(first)), np.diff(bounds))

    def summed(rows: Any, values: Any) -> Any:
        width = values.shape[1]
        bins = (where[rows][:, None] * width + np.arange(width)).ravel()
        return np.bincount(bins, weights=values[rows].ravel(),
                           minlength=len(first) * width).reshape(len(first), width)

    flat = summed(exact, terms) + summed(inexact, terms)
    many = summed(inexact, (terms != 0).astype(float))
    for u, c in zip(*np.nonzero(many > 1), strict=True):
        part = slice(bounds[u], bounds[u + 1])
        flat[u, c] = math.fsum(terms[part][pairable[part], c].tolist())
    return _by_group(runs, types, units, flat)


def _by_group(runs: list[str], types: list[str], units: Any, flat: Any) -> Units:
    """Each group's rows of `flat` (one per (group, session), sorted by group code: `units`
    holds each row's), its k × k cells: a list of numpy rows, which `krippendorff_alpha_ci`
    stacks again (as lists of floats, the 48 groups' ~90,000 rows on 1 M turns cost ~0.03 s
    more to build and to read)."""
    import numpy as np

    out: Units = {}
    first = np.flatnonzero(np.concatenate([[True], units[1:] != units[:-1]])).tolist()
    for start, stop in zip(first, [*first[1:], len(units)], strict=True):
        rest, who = divmod(int(units[start]), 2)
        rest, t = divmod(rest, len(types) + 1)
        run, kind = divmod(rest, len(RATED_KINDS))
        k = len(scale_of(RATED_KINDS[kind]))
        mine = flat[start:stop][:, [c * LABELS + d for c in range(k) for d in range(k)]]
        out[(runs[run], RATED_KINDS[kind], "all" if t == 0 else types[t - 1],
             ("humans", "with_judge")[who])] = list(mine)
    return out


def _units_by_fsum(runs: list[str], types: list[str], units: Any, bounds: list[int],
                   sums: Any, m: Any) -> Units:
    """`units_of` for counts of 2⁴⁰ and more: each cell fsum'd from the exact integer sums
    (`bounds`: each unit's rows of `sums` and `m`)."""
    import numpy as np

    flat = np.zeros((len(units), sums.shape[1]), dtype=float)
    rows, counts = sums.tolist(), m.tolist()
    for u in range(len(units)):
        mine = [(rows[i], counts[i]) for i in range(bounds[u], bounds[u + 1]) if counts[i] >= 2]
        for c in range(sums.shape[1]):
            flat[u, c] = math.fsum(row[c] / (count - 1) for row, count in mine)
    return _by_group(runs, types, units, flat)
