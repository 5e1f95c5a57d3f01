"""`bench report --format html`: one self-contained static page with every report's tables and
charts, and a per-session drill-down (transcript with what was judged at each turn).

Self-contained: Chart.js (vendored in `assets/`, see the README there), our CSS and our JS are
inlined, so the file opens offline and requests nothing. Every stored text is escaped; chart data
travels as JSON in a `<script type="application/json">` block with `<`, `>`, `&` escaped, so no
stored text can close a tag.

The page is assembled here from the report tables (below) and the sessions section; the rest
lives beside it: `drilldown.py` (which sessions, read from the store), `html_transcript.py` (one
session attempt), `html_charts.py` (chart data, and the `Chart.data` shape of each kind),
`html_common.py` (escaping, assets). Their names other modules and tests use stay importable
from here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from .access import open_store
from .drilldown import MESSAGES_PER_SESSION as MESSAGES_PER_SESSION
from .drilldown import SESSIONS_PER_RUN, Drilldown, RunInfo, SessionTrace, load_drilldown
from .html_charts import chart_spec, json_script
from .html_common import asset_text, chart_js, esc, link_addresses, prose
from .html_transcript import ARGS_LIMIT as ARGS_LIMIT
from .html_transcript import FOLD_AT as FOLD_AT
from .html_transcript import RESULT_LIMIT as RESULT_LIMIT
from .html_transcript import TEXT_LIMIT as TEXT_LIMIT
from .html_transcript import metric_chips as metric_chips
from .html_transcript import session_anchor, session_html
from .model import Column, Estimate, ReportResult, Table
from .render import DASH, FEW, UNTRUSTED, cell_text, format_number, pct_note, sample_text

PAGE_BUDGET = 10_000_000
"""Characters of transcripts in one page, shared equally by the runs; past a run's share its
sessions keep only their summary line."""

_GENERATED = "\x00generated\x00"
_DIGEST = "\x00digest\x00"


# --------------------------------------------------------------------------- tables


def _estimate_html(value: Estimate, column: Column) -> str:
    if value.value is None:
        return DASH
    kind = column.kind if column.kind != "text" else "float"
    out = f'<span class="v">{esc(format_number(value.value, kind))}</span>'
    if value.std is not None:
        out += f' <span class="sd">± {esc(format_number(value.std, kind))}</span>'
    units = value.clusters or value.n
    if value.low is not None and value.high is not None and units > 1:
        out += (f'<span class="ci" title="{esc(value.method or "CI")} over {units} units">'
                f"[{esc(format_number(value.low, kind))}, {esc(format_number(value.high, kind))}]</span>")
        if value.caution:
            out += f'<span class="few" title="{esc(value.caution)}">{UNTRUSTED}</span>'
    if value.se is not None or value.clusters is not None:
        out += f' <span class="se">({esc(sample_text(value, kind))})</span>'
    if value.few:
        out += f'<span class="few" title="fewer than 10 independent units">{FEW}</span>'
    return out


def table_html(table: Table, anchor: str) -> str:
    out = [f'<h3 id="{anchor}">{esc(table.title)}</h3>']
    if not table.rows:
        out.append('<p class="empty">No data in these runs.</p>')
    else:
        head = "".join(
            f'<th class="{"txt" if c.kind == "text" else "num"}"'
            + (f' title="{esc(c.doc)}"' if c.doc else "") + f">{esc(c.title)}</th>"
            for c in table.columns)
        body = []
        for row in table.rows:
            cells = []
            for value, col in zip(row, table.columns, strict=True):
                numeric = col.kind != "text" or isinstance(value, Estimate)
                text = (_estimate_html(value, col) if isinstance(value, Estimate)
                        else link_addresses(esc(cell_text(value, col))))
                # short labels stay on one line; long ones (run ids, errors) may wrap
                cls = "num" if numeric else "txt" if len(text) > 24 else "txt nowrap"
                cells.append(f'<td class="{cls}">{text}</td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        out.append('<div class="table-wrap"><table><thead><tr>' + head + "</tr></thead><tbody>"
                   + "".join(body) + "</tbody></table></div>")
    notes = [*table.notes, *pct_note(table)]
    if notes:
        out.append('<ul class="notes">' + "".join(f"<li>{prose(n)}</li>" for n in notes)
                   + "</ul>")
    return "\n".join(out)


# --------------------------------------------------------------------------- sessions


def _panel(t: SessionTrace) -> str:
    """The session's "why this score" (as on `bench view`'s session page)."""
    from .explain import explain
    from .html_explain import panel_html

    return panel_html(explain(t.session, checklist=t.checklist, components=t.components,
                              intents=t.intents, triples=t.triples, support=t.support,
                              triggers=t.triggers), anchor=None)


def _drilldown_html(d: Drilldown, labels: dict[str, str], budget: int) -> str:
    out = ['<section id="sessions" class="report"><h2>Sessions</h2>',
           '<p class="lede">Each session attempt: its transcript by turn; under each turn what '
           "was decided there — intent statuses, trigger-point scores with the judge's "
           "rationale and evidence quote (marked in the reply), stage events — and the checklist "
           "graded at the end. Sessions with errors are marked. A run shows at most "
           f"{SESSIONS_PER_RUN} session attempts and long texts are shortened, so the page stays "
           "quick to open.</p>"]
    share = budget // max(1, len(d.runs))
    by_run: dict[str, list[SessionTrace]] = {}
    for t in d.sessions:
        by_run.setdefault(t.key[0], []).append(t)
    for run in d.runs:
        traces = by_run.get(run.run_id, [])
        out.append(f'<h3 id="sessions-{session_anchor((run.run_id, "", 0))}">'
                   f'{esc(labels.get(run.run_id, run.agent))} '
                   f'<span class="dim">{esc(run.run_id)}</span></h3>')
        if run.run_id in d.notes:
            out.append(f'<p class="note">{prose(d.notes[run.run_id])}</p>')
        if not traces:
            out.append('<p class="empty">No sessions ran.</p>')
        episode = None
        used = 0
        for t in traces:
            ep = t.session.get("episode")
            if ep != episode:
                episode = ep
                out.append(f"<h4>episode {esc(ep)}</h4>" if ep is not None
                           else "<h4>no episode</h4>")
            block = session_html(t, transcript=used < share, panel=_panel(t))
            used += len(block)
            out.append(block)
    out.append("</section>")
    return "\n".join(out)


# --------------------------------------------------------------------------- page


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def _when(ts: float | None) -> str:
    if ts is None:
        return DASH
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _labels(runs: list[RunInfo]) -> dict[str, str]:
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.agent] = seen.get(r.agent, 0) + 1
    return {r.run_id: r.agent if seen[r.agent] == 1 else f"{r.agent} ({r.run_id})" for r in runs}


def _header_html(results: list[ReportResult], d: Drilldown | None) -> str:
    runs = d.runs if d else [RunInfo(r, r) for r in dict.fromkeys(
        run for res in results for run in res.runs)]
    packs = sorted({f"{r.pack} {r.pack_version or ''}".strip() for r in runs if r.pack})
    agents = sorted({r.agent for r in runs})
    title = f"benchpack report — {', '.join(packs)}" if packs else "benchpack report"
    facts = [f"{len(runs)} run{'s' * (len(runs) != 1)}"]
    if d:
        facts.append(f"{len(agents)} agent{'s' * (len(agents) != 1)}: "
                     + ", ".join(esc(a) for a in agents))
    facts.append(f"generated {_GENERATED}")
    out = [f"<header><h1>{esc(title)}</h1><p class=\"facts\">{' · '.join(facts)}</p>"]
    if d and runs:
        out.append('<div class="table-wrap"><table class="runs"><thead><tr>'
                   + "".join(f'<th class="txt">{h}</th>' for h in (
                       "run", "agent", "pack", "simulator", "judge", "repeats", "status",
                       "started"))
                   + "</tr></thead><tbody>")
        for r in runs:
            out.append("<tr>" + "".join(f'<td class="txt">{esc(v)}</td>' for v in (
                r.run_id, r.agent, f"{r.pack or DASH} {r.pack_version or ''}".strip(),
                r.simulator or DASH, r.judge or DASH,
                DASH if r.repeats is None else r.repeats, r.status or DASH,
                _when(r.created_at))) + "</tr>")
        out.append("</tbody></table></div>")
    out.append("</header>")
    return "\n".join(out)


def render_page(results: Sequence[ReportResult], con: Any = None, *,
                generated_at: datetime | None = None, budget: int = PAGE_BUDGET) -> str:
    """`bench report --format html` (and `render(result, "html")`): the reports with the
    drill-down of their runs, read from the store they were built from (`ReportResult.store`;
    `con`: a connection to it that is already open). Results made without a store give the
    page without drill-down."""
    stores = {r.store for r in results if r.store is not None}
    if len(stores) > 1:
        raise ValueError(f"one page shows one store, got {len(stores)}: {sorted(stores)}")
    if not stores:
        return to_html(list(results), None, generated_at=generated_at, budget=budget)
    store = stores.pop()
    runs = list(dict.fromkeys(run for r in results for run in r.runs))
    # the sessions section is the same for every report over these runs of an unchanged
    # file: kept once built (`html_cache`)
    from .html_cache import keep_section, load_section, section_key

    key, identity = section_key(store, runs, {"budget": budget,
                                              **(load_drilldown.__kwdefaults__ or {})})
    kept = load_section(store, key)
    if kept is not None:  # with the header's run descriptions: the store is not opened
        section, count, header = kept
        try:
            infos = [RunInfo(**r) for r in header]
        except TypeError:  # kept by another shape of RunInfo
            infos = None
        if infos is not None:
            return to_html(list(results), Drilldown(infos, []), generated_at=generated_at,
                           budget=budget, sessions=(section, count))
    if con is not None:
        drilldown = load_drilldown(con, runs)
    else:  # the drill-down reads the store's tables, none of the views (~60 ms to create)
        with open_store(store, views=False) as own:
            drilldown = load_drilldown(own, runs)
    section = _drilldown_html(drilldown, _labels(drilldown.runs), budget)
    keep_section(store, key, identity, section, len(drilldown.sessions),
                 [asdict(r) for r in drilldown.runs])
    return to_html(list(results), drilldown, generated_at=generated_at, budget=budget,
                   sessions=(section, len(drilldown.sessions)))


def to_html(results: list[ReportResult], drilldown: Drilldown | None = None, *,
            generated_at: datetime | None = None, budget: int = PAGE_BUDGET,
            sessions: tuple[str, int] | None = None) -> str:
    """The reports (and, with `drilldown`, the sessions) as one self-contained HTML page.

    The page is a pure function of its inputs except for the generation time, which is left out
    of the content digest shown in the footer: same store, same digest. Transcripts stop (the
    sessions' summaries stay) once a run has used its share of `budget` characters."""
    labels = _labels(drilldown.runs) if drilldown else {}
    toc, sections, charts = [], [], []
    used: set[str] = set()
    for res in results:
        anchor = _slug(res.name)
        while anchor in used:
            anchor += "-x"
        used.add(anchor)
        empty = not any(t.rows for t in res.tables)
        toc.append(f'<li><a href="#{anchor}">{esc(res.title)}</a>'
                   + (' <span class="dim">no data</span>' if empty else "") + "</li>")
        body = [f'<section class="report{" empty-report" if empty else ""}" id="{anchor}">'
                f"<h2>{esc(res.title)}</h2><p class=\"lede\">{esc(res.description)}</p>"]
        body += [f'<p class="note">{prose(n)}</p>' for n in res.notes]
        figures = []
        for chart in res.charts:
            spec = chart_spec(res, chart)
            cid = f"chart-{anchor}-{_slug(chart.id)}"
            if spec is None:
                figures.append(f'<figure class="chart no-data"><figcaption>{esc(chart.title)}'
                               '</figcaption><p class="empty">No data to plot.</p></figure>')
                continue
            charts.append({"canvas": cid, **spec})
            height = 90 + 44 * len(spec["labels"]) if spec["kind"] == "stacked" else 320
            stacked = spec["kind"] == "scatter" and any(
                p["n"] > 1 for ds in spec["datasets"] for p in ds["points"])
            figures.append(f'<figure class="chart"><figcaption>{esc(chart.title)}</figcaption>'
                           f'<div class="canvas-box" style="height:{height}px">'
                           f'<canvas id="{cid}" role="img" aria-label="{esc(chart.title)}">'
                           "</canvas></div>"
                           + ('<p class="chart-note">Sessions at the same spot share one '
                              "marker; its area grows with their number (hover for the "
                              "count).</p>" if stacked else "") + "</figure>")
        parts = ['<div class="charts">' + "".join(figures) + "</div>"] if figures else []
        parts += [table_html(t, f"{anchor}-{k}") for k, t in enumerate(res.tables)]
        if empty:  # keep the notes (they say how to get data) but out of the way
            body.append(f'<details class="no-data"><summary>No data in these runs '
                        f'({len(res.tables)} empty table{"s" * (len(res.tables) != 1)})'
                        f"</summary>{''.join(parts)}</details>")
        else:
            body += parts
        body.append("</section>")
        sections.append("\n".join(body))
    if drilldown is not None:
        # `sessions`: the section of `drilldown`'s sessions and their number, already built
        section, count = sessions or (_drilldown_html(drilldown, labels, budget),
                                      len(drilldown.sessions))
        toc.append(f'<li><a href="#sessions">Sessions</a> <span class="dim">'
                   f"{count} transcripts</span></li>")
        sections.append(section)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        f"<title>{esc('benchpack report')}</title>",
        f"<style>{asset_text('report.css')}</style></head><body>",
        '<div class="page">', _header_html(results, drilldown),
        '<nav class="toc"><h2>Contents</h2><ol>' + "".join(toc) + "</ol></nav>",
        "<main>", *sections, "</main>",
        f'<footer>benchpack report · content digest <code>{_DIGEST}</code> (sha256 of this '
        "page without its generation time) · charts by Chart.js (MIT)</footer></div>",
        f'<script type="application/json" id="bp-charts">{json_script(charts)}</script>',
        f"<script>{chart_js()}</script>",
        f"<script>{asset_text('report.js')}</script>",
        "</body></html>", ""]
    # the digest and the time written into the parts that hold their places, not by two
    # replaces over the joined page (4 MB on 1 M turns, ~10 ms of a 35 ms render): the same
    # text, as no place spans two parts (the joins are line breaks, the places have none)
    sha = hashlib.sha256()
    for k, part in enumerate(parts):
        sha.update(("\n" + part if k else part).encode("utf-8"))
    digest = sha.hexdigest()
    when = esc((generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC"))
    return "\n".join(part.replace(_DIGEST, digest[:16]).replace(_GENERATED, when)
                      if _DIGEST in part or _GENERATED in part else part for part in parts)
