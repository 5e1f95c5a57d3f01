"""Report name → report. Built-ins are registered here (the generic ones from `builtin` and
`agreement`, each protocol's from `protocols.PROTOCOL_REPORTS`); third parties add theirs
through the `benchpack.reports` entry-point group (loaded lazily, on the first name that is not
built in).
A plug-in is any object with `name`, `title`, `description` and `build(ctx) -> ReportResult`.
"""

from __future__ import annotations

import difflib
from typing import Protocol

from .builtin import BUILTIN, ReportContext
from .model import ReportResult


class Report(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def description(self) -> str: ...

    def build(self, ctx: ReportContext) -> ReportResult:
        ...


class UnknownReport(LookupError):
    pass


class ReportRegistry:
    def __init__(self) -> None:
        self._items: dict[str, Report] = {}
        self._entry_points_loaded = False

    def register(self, report: Report) -> None:
        self._items[report.name] = report

    def names(self) -> list[str]:
        return list(self._items)

    def items(self) -> list[Report]:
        return list(self._items.values())

    def get(self, name: str) -> Report:
        if name not in self._items and not self._entry_points_loaded:
            self._load_entry_points()
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._items, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            raise UnknownReport(f"no report `{name}`{hint} (known: "
                                f"{', '.join(self._items)})") from None

    def _load_entry_points(self) -> None:
        from importlib.metadata import entry_points

        self._entry_points_loaded = True
        self._load_protocol_plugins()
        for ep in entry_points(group="benchpack.reports"):
            try:
                self.register(ep.load())
            except Exception as exc:  # the plug-in's fault, not an unknown name
                raise UnknownReport(f"report plug-in `{ep.name}` failed to load: "
                                    f"{type(exc).__name__}: {exc}") from exc


    def _load_protocol_plugins(self) -> None:
        """The built-in reports of protocols installed as plug-ins (`specs/plugins.py`),
        looked for, as the group above, only when a report name is unknown."""
        from benchpack.specs.plugins import plugin_names

        from .protocols import plugin_reports

        for name in plugin_names():
            reports = plugin_reports(name)
            for report in reports.reports if reports is not None else ():
                self._items.setdefault(report.name, report)


REPORT_ORDER: tuple[str, ...] = (
    "summary", "proc-comp", "status", "category", "ablation", "graph", "interaction", "triggers",
    "pass-k", "cost", "judge-errors", "agreement", "simulator", "inventory", "explain")
"""The order `bench report --list` and the HTML page show the built-in reports in, kept from
before the protocols had modules; reports not listed here (a new protocol's) follow, in
registry order."""


NOT_ON_THE_PAGE = frozenset({"explain"})
"""Reports `bench report --format html` leaves out unless named: `explain` is the drill-down's
"why this score" panels again, as a table over every session."""


def default_reports() -> ReportRegistry:
    from . import protocols
    from .agreement import AGREEMENT
    from .inventory import INVENTORY
    from .simulator import SIMULATOR

    rank = {name: i for i, name in enumerate(REPORT_ORDER)}
    found = (*BUILTIN, *(r for p in protocols.PROTOCOL_REPORTS.values() for r in p.reports),
             AGREEMENT, SIMULATOR, INVENTORY)
    reg = ReportRegistry()
    for report in sorted(found, key=lambda r: rank.get(r.name, len(rank))):  # stable
        reg.register(report)
    return reg
