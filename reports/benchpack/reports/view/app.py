"""The `bench view` web app: Starlette routes over a read-only store, Jinja2 pages (autoescaped:
stored text is arbitrary, transcripts hold `<script>` as often as prose), one small JS file.

Live: every request gets its own read-only connection — a cursor of the one DuckDB instance
the process opens while requests are in flight and closes when the last one ends
(`access.SharedReader`): a running `bench run` is asked to step aside while requests come,
and a `bench run` that starts meanwhile is let in as soon as those in flight end (issue 27).
Holding the file open would stop the run's writer from reopening it after it stepped aside,
and a snapshot would not show sessions finishing. Opening costs a few milliseconds on the
demo's store and about 0.1 s on a store of 1 M turns (benchmarks/view_bench.py).

Every connection has the settings user SQL needs (`access.LOCKED`: no files, no extensions,
no settings): they are the instance's, fixed when it opens. Who may ask at all is decided in
front of every route (`guard.py`); the SQL box is `sqlpage.py`.

Headline figures with their intervals take the report code's time (~0.1 s a run at 1 M turns),
so the runs page does not wait for them: it names them (`/headline?run=…`, a fragment the page
fetches once shown), and they are kept while the runs' sessions do not change
(`queries.fingerprint`).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from benchpack.specs.secrets import Redactor

from ..access import LOCKED, SharedReader, StoreError
from . import queries as q
from .guard import Guard, MaskSecrets, new_token
from .sqlpage import SqlPages

PAIRS_PER_PAGE = 100
"""Session runs a page of a run pair's comparison lists."""
PAIR_SORTS = ("differs", "label", "repeat", "a", "b", "delta")
"""`differs`: discordant first, then by |Δ| (as `bench compare` lists them)."""
HEADLINE_CACHE = 64
HEADLINE_VIEWS = ("session_results", "trigger_results")
"""The views the headline reads: installing the other thirty costs ~20 ms a request."""
COMPARE_VIEWS = ("session_results",)
"""The view `bench compare` reads."""

_STATIC = Path(__file__).parent / "static"


def _when(ts: float | None) -> str:
    if ts is None:
        return "—"
    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M")


def _short(spec: Any) -> str:
    """An agent or simulator spec as a table shows it: its kind and the file name
    (`scripted:…/agent.yaml`); the cell's title holds it whole."""
    text = "" if spec is None else str(spec)
    kind, sep, rest = text.partition(":")
    if not sep or "/" not in rest:
        return text
    return f"{kind}:…/{rest.rstrip('/').rsplit('/', 1)[-1]}"


def _snippet(text: str, needle: str, width: int = 90) -> Markup:
    """`text` around the first occurrence of `needle` (case-insensitive), escaped, the match
    marked."""
    from markupsafe import escape

    at = text.lower().find(needle.lower())
    if at < 0:
        return Markup(escape(text[:2 * width]))
    start, end = max(0, at - width), at + len(needle)
    return Markup("…" * (start > 0) + str(escape(text[start:at])) + "<mark>"
                  + str(escape(text[at:end])) + "</mark>" + str(escape(text[end:end + width]))
                  + "…" * (end + width < len(text)))


def _pct(v: Any) -> str:
    return "—" if v is None else f"{100 * float(v):.1f}"


def _date(text: str | None, field: str) -> float | None:
    if not text:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    except ValueError:
        raise _BadRequest(f"{field}: {text!r} is not a date (YYYY-MM-DD)") from None


def _float(text: str | None, field: str) -> float | None:
    if text is None or text.strip() == "":
        return None
    try:
        return float(text)
    except ValueError:
        raise _BadRequest(f"{field}: {text!r} is not a number") from None


def _int(text: str | None, field: str, default: int = 0) -> int:
    if text is None or text.strip() == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise _BadRequest(f"{field}: {text!r} is not a whole number") from None
    if value < 0:
        raise _BadRequest(f"{field}: {value} is negative")
    return value


class _BadRequest(Exception):
    pass


class Viewer:
    def __init__(self, db: str | Path, *, wait_s: float = 30.0) -> None:
        self.db = Path(db)
        self.wait_s = wait_s
        self.reader = SharedReader(db, wait_s=wait_s, config=LOCKED)
        self.env = Environment(loader=PackageLoader("benchpack.reports.view", "templates"),
                               autoescape=select_autoescape(default=True, default_for_string=True))
        from ..compare import session_label

        self.env.filters.update(when=_when, pct=_pct, short=_short)
        self.env.globals.update(session_label=session_label)
        self.env.globals.update(qs=self._qs, snippet=_snippet)
        self.form_token = new_token()
        """Embedded in the SQL page's form: a query runs only with it (`sqlpage.py`)."""
        self.sql: SqlPages | None = None
        self._headlines: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._compared: OrderedDict[tuple[Any, ...], Markup] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _qs(params: dict[str, Any], **changes: Any) -> str:
        merged = {**params, **changes}
        return urlencode({k: v for k, v in merged.items() if v not in (None, "")})

    @contextlib.contextmanager
    def store(self, *, views: bool | tuple[str, ...] = False) -> Iterator[Any]:
        """This request's connection: its own, of the one instance the process shares
        (`access.SharedReader`), with the settings user SQL needs (`access.LOCKED`)."""
        with self.reader.connection(views=views) as con:
            yield con

    def page(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        body = self.env.get_template(template).render(store=str(self.db), **context)
        return HTMLResponse(body, status_code=status)

    # ------------------------------------------------------------------ pages

    def runs(self, request: Request) -> Response:
        p = request.query_params
        filters = {k: p.get(k, "") for k in q.RUN_FILTERS}
        since, until = p.get("since", ""), p.get("until", "")
        page = _int(p.get("page"), "page")
        with self.store() as con:  # runs and sessions only
            data = q.runs_page(con, filters, since=_date(since, "since"),
                               until=_date(until, "until"), page=page)
        params = {**filters, "since": since, "until": until}
        headline = "/headline?" + urlencode([("run", r["run_id"]) for r in data.runs])
        return self.page("runs.html", data=data, params=params, page=page,
                         pages=max(1, -(-data.total // q.RUNS_PER_PAGE)), headline=headline,
                         title="Runs")

    def headline(self, request: Request) -> Response:
        """The headline table of the runs named: a fragment the runs page fetches (a whole
        page when opened by its link)."""
        runs = request.query_params.getlist("run")
        if not runs:
            raise _BadRequest("the address needs ?run=RUN (one or more)")
        with self.store(views=HEADLINE_VIEWS) as con:
            table = self._headline(con, runs)
        if request.headers.get("x-fragment") == "1":
            return HTMLResponse(table)
        return self.page("headline.html", table=table, runs=runs, title="Headline scores")

    def _headline(self, con: Any, runs: list[str]) -> Markup:
        if not runs:
            return Markup("")
        key = q.fingerprint(con, runs)
        with self._lock:
            cached = self._headlines.get(key)
        if cached is None:
            from ..builtin import ReportContext, headline_table
            from ..html import table_html

            ctx = ReportContext(con, runs, None, 0.95, 2000, 0, False, 1)
            cached = table_html(headline_table(ctx), "headline")
            with self._lock:
                self._headlines[key] = cached
                while len(self._headlines) > HEADLINE_CACHE:
                    self._headlines.popitem(last=False)
        return Markup(cached)

    @staticmethod
    def _list(p: Any, prefix: str = "") -> tuple[dict[str, Any], dict[str, str]]:
        """A sessions list's filters and sort from the address (`prefix`: `l.` on a session
        page, which carries the list it was opened from): the keyword arguments of
        `queries.sessions_page`/`neighbours`, and the parameters as the address has them."""
        def get(k: str, default: str = "") -> str:
            return str(p.get(prefix + k, default))

        filters = {k: get(k) for k in q.SESSION_FILTERS}
        sort = get("sort") or "name"
        desc = get("desc") == "1"
        metric = get("metric") or None
        if metric is not None and metric not in q.SCORES:
            raise _BadRequest(f"metric: {metric!r} is not one of {', '.join(q.SCORES)}")
        if sort not in q.SESSION_SORTS:
            raise _BadRequest(f"sort: {sort!r} is not one of {', '.join(q.SESSION_SORTS)}")
        low, high = _float(get("min"), "min"), _float(get("max"), "max")
        params = {**filters, "sort": sort, "desc": "1" if desc else "", "metric": metric or "",
                  "min": get("min"), "max": get("max")}
        return ({"filters": filters, "sort": sort, "desc": desc, "metric": metric,
                 "low": None if low is None else low / 100,
                 "high": None if high is None else high / 100}, params)

    def sessions(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        p = request.query_params
        args, params = self._list(p)
        page = _int(p.get("page"), "page")
        with self.store() as con:
            data = q.sessions_page(con, run_id, page=page, **args)
        if data.run is None:
            return self.page("error.html", 404, title="No such run",
                             message=f"no run {run_id!r} in {self.db}")
        listed = {f"l.{k}": v for k, v in params.items() if v and v != "name"}
        return self.page("sessions.html", data=data, run_id=run_id, params=params, page=page,
                         listed=listed,
                         pages=max(1, -(-data.total // q.SESSIONS_PER_PAGE)),
                         filters=q.SESSION_FILTERS, sorts=q.SESSION_SORTS, scores=q.SCORES,
                         title=f"Sessions of {run_id}")

    def _key(self, request: Request, run_param: str = "run") -> tuple[str, str, int]:
        p = request.query_params
        run, session = p.get(run_param), p.get("session")
        if not run or not session:
            raise _BadRequest(f"the address needs ?{run_param}=RUN&session=SESSION&repeat=N")
        return run, session, _int(p.get("repeat"), "repeat")

    def session(self, request: Request) -> Response:
        from ..explain import load as explain
        from ..html_explain import panel_html
        from .transcript import timeline_html, transcript_html

        run, session, repeat = self._key(request)
        p = request.query_params
        tpage = _int(p.get("turns"), "turns")
        args, params = self._list(p, "l.")
        listed = {f"l.{k}": v for k, v in params.items() if v and v != "name"}
        needle = (p.get("q") or "").strip()
        hits: list[dict[str, Any]] = []
        found = 0
        with self.store() as con:
            rows = q.session_rows(con, run, session, repeat, tpage)
            repeats = q.repeats_of(con, run, session)
            others = [r for r in q.runs_with_session(con, session) if r != run]
            why = None
            if rows is not None:
                # what the page read already: the checklist (never cut by page), and the
                # intents and triggers when the page holds every turn
                known = {"checklist_results": rows.tables["checklist_results"]}
                if tpage == 0 and rows.last_turn <= q.TURNS_PER_PAGE:
                    known |= {"intent_status": rows.tables["intent_status"],
                              "triggers": rows.tables["triggers"]}
                why = explain(con, run, session, repeat, session=rows.session, known=known)
            near = q.neighbours(con, run, session, repeat, **args) if rows is not None else None
            if needle and rows is not None:
                hits, found = q.search_messages(con, run, session, repeat, needle)
        if rows is None or why is None:
            return self.page("error.html", 404, title="No such session",
                             message=f"no session {session!r} repeat {repeat} in run {run!r}")
        tpages = max(1, -(-rows.last_turn // q.TURNS_PER_PAGE))
        return self.page("session.html", s=rows.session, run_id=run, repeats=repeats,
                         others=others, body=Markup(transcript_html(rows)),
                         why=Markup(panel_html(why)), near=near, listed=listed,
                         list_params={k[2:]: v for k, v in listed.items()}, needle=needle,
                         hits=hits, found=found, timeline=Markup(timeline_html(rows)),
                         tpage=tpage,
                         tpages=tpages, per=q.TURNS_PER_PAGE, last_turn=rows.last_turn,
                         title=f"{rows.session.get('name')} · {run}")

    def pair(self, request: Request) -> Response:
        from .transcript import transcript_html

        a, session, repeat = self._key(request, "a")
        b = request.query_params.get("b")
        if not b:
            raise _BadRequest("the address needs ?a=RUN&b=RUN&session=SESSION&repeat=N")
        sides = []
        with self.store() as con:
            for run in (a, b):
                rows = q.session_rows(con, run, session, repeat)
                sides.append((run, rows, Markup(transcript_html(rows)) if rows else None))
        return self.page("pair.html", sides=sides, session=session, repeat=repeat,
                         title=f"{session} · {a} vs {b}")

    def compare(self, request: Request) -> Response:
        """Run B against baseline A: `bench compare`'s table (with its banner when the runs
        are not comparable) and every session run of one metric, each linked side by side.
        `?run=X&run=Y` (the runs page's check boxes) goes to `?a=older&b=newer`."""
        from .. import compare as cmp
        from ..comparability import differences
        from ..compare import banner

        p = request.query_params
        picked = p.getlist("run")
        if picked and not p.get("a"):
            if len(set(picked)) != 2:
                raise _BadRequest(f"pick exactly two runs to compare ({len(set(picked))} "
                                  "picked)")
            with self.store() as con:
                order = q.runs_by_age(con, picked)
            missing = [r for r in picked if r not in order]
            if missing:
                return self.page("error.html", 404, title="No such run",
                                 message=f"no run {missing[0]!r} in {self.db}")
            return RedirectResponse("/compare?" + urlencode({"a": order[0], "b": order[1]}),
                                    status_code=303)
        a, b = p.get("a"), p.get("b")
        if not a or not b:
            raise _BadRequest("the address needs ?a=RUN&b=RUN (the baseline, then the run "
                              "compared with it)")
        if a == b:
            raise _BadRequest(f"a and b are both {a!r}: pick two different runs")
        sort = p.get("sort", "differs")
        if sort not in PAIR_SORTS:
            raise _BadRequest(f"sort: {sort!r} is not one of {', '.join(PAIR_SORTS)}")
        desc = p.get("desc") == "1"
        page = _int(p.get("page"), "page")
        with self.store(views=COMPARE_VIEWS) as con:
            missing = [r for r in (a, b) if r not in q.runs_by_age(con, [a, b])]
            if missing:
                return self.page("error.html", 404, title="No such run",
                                 message=f"no run {missing[0]!r} in {self.db}")
            metrics = cmp.metrics_present(con, [a, b])
            key = p.get("metric") or (metrics[0].key if metrics else None)
            metric = next((m for m in metrics if m.key == key), None)
            if key is not None and metric is None:
                raise _BadRequest(f"metric: {key!r} is not one of "
                                  f"{', '.join(m.key for m in metrics) or '(none: no scored sessions)'}")
            found = differences(con, [a, b])
            pairs = cmp.session_pairs(con, a, b, metric) if metric else []
        if sort != "differs":
            known = [x for x in pairs if getattr(x, sort) is not None]
            known.sort(key=lambda x: (getattr(x, sort), x.label, x.repeat), reverse=desc)
            pairs = known + [x for x in pairs if getattr(x, sort) is None]
        elif desc:
            pairs.reverse()
        both = sum(x.a is not None and x.b is not None for x in pairs)
        counts = {"pairs": both, "differ": sum(x.discordant for x in pairs),
                  "only_a": sum(x.b is None for x in pairs),
                  "only_b": sum(x.a is None for x in pairs)}
        params = {"a": a, "b": b, "metric": key or "", "sort": sort,
                  "desc": "1" if desc else ""}
        shown = pairs[page * PAIRS_PER_PAGE:(page + 1) * PAIRS_PER_PAGE]
        table = "/compare/table?" + urlencode({"a": a, "b": b})
        return self.page("compare.html", a=a, b=b, table=table,
                         banner=banner(found) if found else None, metrics=metrics,
                         metric=metric, pairs=shown, counts=counts, params=params, page=page,
                         pages=max(1, -(-len(pairs) // PAIRS_PER_PAGE)), sorts=PAIR_SORTS,
                         title=f"{b} against {a}")

    def compare_table(self, request: Request) -> Response:
        """`bench compare A B`'s table: a fragment the run-pair page fetches once shown (its
        bootstrap takes seconds on a large store; a whole page when opened by its link)."""
        a, b = request.query_params.get("a"), request.query_params.get("b")
        if not a or not b or a == b:
            raise _BadRequest("the address needs ?a=RUN&b=RUN (two different runs)")
        with self.store(views=COMPARE_VIEWS) as con:
            missing = [r for r in (a, b) if r not in q.runs_by_age(con, [a, b])]
            if missing:
                return self.page("error.html", 404, title="No such run",
                                 message=f"no run {missing[0]!r} in {self.db}")
            table = self._comparison(con, a, b)
        if request.headers.get("x-fragment") == "1":
            return HTMLResponse(table)
        return self.page("headline.html", table=table, runs=[a, b],
                         heading=f"{b} against {a}", command=f"bench compare {a} {b}",
                         title=f"bench compare {a} {b}")

    def _comparison(self, con: Any, a: str, b: str) -> Markup:
        """`bench compare A B --allow-incomparable`'s table and notes but the banner (the page
        shows it at once), kept while the runs' sessions do not change."""
        key = ("compare", *q.fingerprint(con, [a, b]))
        with self._lock:
            cached = self._compared.get(key)
        if cached is None:
            from ..compare import CompareOptions, build
            from ..html import table_html
            from ..html_common import prose

            res = build(con, CompareOptions([a, b], allow_incomparable=True))
            cached = Markup("".join(f'<p class="note">{prose(n)}</p>' for n in res.notes
                                    if "NOT COMPARABLE" not in n)
                            + table_html(res.tables[0], "compare"))
            with self._lock:
                self._compared[key] = cached
                while len(self._compared) > HEADLINE_CACHE:
                    self._compared.popitem(last=False)
        return cached

    def call(self, request: Request) -> Response:
        """One model call's prompt and reply: a fragment the transcript fetches on unfolding
        (a whole page when opened by its link)."""
        from ..calltexts import call_text
        from .transcript import call_html

        run, session, repeat = self._key(request)
        seq = _int(request.query_params.get("seq"), "seq")
        with self.store() as con:
            try:
                text = call_text(con, run, session, repeat, seq)
            except LookupError as exc:
                return self.page("error.html", 500, title="Damaged store", message=str(exc))
        body = call_html(text)
        if request.headers.get("x-fragment") == "1":
            return HTMLResponse(body)
        return self.page("call.html", run_id=run, session=session, repeat=repeat, seq=seq,
                         body=Markup(body), title=f"Model call {seq} of {session} · {run}")


def _report_css(request: Request) -> Response:
    from ..html_common import asset_text  # the transcript's styles, shared with the HTML report

    return Response(asset_text("report.css"), media_type="text/css; charset=utf-8")


def create_app(db: str | Path, *, wait_s: float = 30.0, hosts: frozenset[str] = frozenset(),
               token: str | None = None) -> Starlette:
    """The app over `db`, behind `guard.Guard`: served under the localhost names (and
    `hosts`), and with `token` only to who has it (`bench view --host`)."""
    viewer = Viewer(db, wait_s=wait_s)
    sql = SqlPages(viewer)
    viewer.sql = sql

    def guarded(handler: Any) -> Any:
        def endpoint(request: Request) -> Response:
            try:
                return handler(request)  # type: ignore[no-any-return]
            except _BadRequest as exc:
                return viewer.page("error.html", 400, title="Bad address", message=str(exc))
            except StoreError as exc:
                return viewer.page("error.html", 503, title="Store unavailable",
                                   message=str(exc))
        return endpoint

    app = Starlette(routes=[
        Route("/", guarded(viewer.runs)),
        Route("/runs/{run_id:path}", guarded(viewer.sessions)),
        Route("/session", guarded(viewer.session)),
        Route("/pair", guarded(viewer.pair)),
        Route("/compare", guarded(viewer.compare)),
        Route("/compare/table", guarded(viewer.compare_table)),
        Route("/call", guarded(viewer.call)),
        Route("/headline", guarded(viewer.headline)),
        Route("/sql", sql.page, methods=["GET", "POST"]),
        Route("/sql.csv", sql.csv, methods=["GET", "POST"]),
        Route("/report.css", _report_css),
        Mount("/static", StaticFiles(directory=_STATIC), name="static"),
    ], middleware=[Middleware(Guard, hosts=hosts, token=token),
                   Middleware(MaskSecrets, redact=Redactor.from_environment() or None)])
    app.state.viewer = viewer
    return app
