"""What a report produces: titled tables of typed cells (and charts for HTML), independent of
how they are rendered (terminal, Markdown, JSON, HTML); and the records that declare views and
reports (`View`, `BuiltinReport`), here so the protocol modules declaring them stay light to
import (`bench query` installs the views without the statistics)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .builtin import ReportContext

Kind = Literal["text", "int", "float", "pct", "money", "seconds", "pvalue"]


@dataclass(frozen=True)
class Estimate:
    """A figure with its uncertainty: mean ± std over repeats, a clustered standard error and a
    CI over the figure's independent units (clusters)."""

    value: float | None
    std: float | None = None
    """Sample std of the per-repeat figures (None with one repeat)."""
    low: float | None = None
    high: float | None = None
    """CI (method and level in the table notes; `method` names it)."""
    n: int = 0
    """Observations the figure averages (session runs, judged triggers, graded repeats)."""
    se: float | None = None
    """Clustered standard error (Miller 2024) over `clusters`."""
    clusters: int | None = None
    """Independent units (sessions, tasks) the SE and CI rest on; None: as `n`."""
    method: str | None = None
    """How the CI was made: `clopper-pearson` (a proportion, over n / design effect), `t`,
    `none` (no interval), or a resampling method."""
    few: bool = False
    """Fewer clusters than `stats.TOO_FEW_CLUSTERS`: too few for any interval to mean much."""
    caution: str | None = None
    """Why the CI cannot be trusted although it was computed (Krippendorff's α with too few
    disagreements, `stats.alpha_caution`); in JSON only when set, so every other figure's
    dict is as it was."""

    @classmethod
    def of(cls, u: Any, std: float | None = None) -> Estimate:
        """From a `stats.Uncertainty`."""
        return cls(u.estimate, std, u.low, u.high, u.n, u.se, u.clusters, u.method, u.few)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if out["caution"] is None:
            del out["caution"]
        return out


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    kind: Kind = "text"
    doc: str | None = None


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)
    """Cells are str, int, float, None (shown as –) or `Estimate`."""
    notes: list[str] = field(default_factory=list)
    more: int = 0
    """Rows left out (`bench report --limit`); a note says so and how to get them."""

    def as_dicts(self) -> list[dict[str, Any]]:
        return [{c.key: (v.as_dict() if isinstance(v, Estimate) else v)
                 for c, v in zip(self.columns, row, strict=True)} for row in self.rows]


@dataclass
class Chart:
    """A chart the HTML renderer draws (other renderers ignore it)."""

    id: str
    title: str
    kind: Literal["scatter", "bar", "stacked_bar", "errorbar"]
    data: dict[str, Any]
    """Series data; the shape depends on `kind` (see `html_charts.py`)."""
    x_label: str = ""
    y_label: str = ""


@dataclass
class ReportResult:
    name: str
    title: str
    description: str
    runs: list[str]
    tables: list[Table] = field(default_factory=list)
    charts: list[Chart] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    """More than tables, for `--format json` only (`explain`: `explanations`)."""
    store: str | None = field(default=None, repr=False, compare=False)
    """The run store the report was built from (`bench report`): an HTML page reads its
    drill-down from there. None for a result made otherwise (no drill-down)."""

    def as_dict(self) -> dict[str, Any]:
        return {"report": self.name, "title": self.title, "description": self.description,
                "runs": self.runs, "notes": self.notes,
                "tables": [{"title": t.title, "notes": t.notes,
                            "columns": [asdict(c) for c in t.columns], "rows": t.as_dicts(),
                            **({"rows_not_shown": t.more} if t.more else {})}
                           for t in self.tables], **self.data}


@dataclass(frozen=True)
class View:
    name: str
    doc: str
    sql: str
    needs: tuple[str, ...] = ()
    """Tables added after the first store schema (`CREATE TABLE IF NOT EXISTS`): a store no
    newer benchpack has written to lacks them, and the view is left out there."""


@dataclass(frozen=True)
class Metric:
    """A `bench compare` unit: a figure paired session by session (or trigger by trigger)
    between two runs, declared by the protocols whose sessions have it
    (`ProtocolReports.compare`); two protocols declaring one key share it."""

    key: str
    title: str
    protocols: tuple[str, ...]
    kind: Literal["binary", "continuous"]
    expr: str
    triggers: bool = False
    """Units are triggers (`t`), not sessions."""


@dataclass(frozen=True)
class BuiltinReport:
    name: str
    title: str
    description: str
    build: Callable[[ReportContext], ReportResult]
