"""The HTML report's charts: a report's `Chart` as the JSON `report.js` draws (`chart_spec`),
and that JSON made safe inside a `<script>` block (`json_script`).

Separate because it is data shaping, not markup: its contract is with `report.js`, not with the
page around it.

`Chart.data` by `Chart.kind` (values are fractions in [0, 1] unless said otherwise):

- `scatter`: `{"series": {name: [{"x", "y", "label"?}, …]}, "diagonal": bool?}`; an axis is
  drawn as 0–100 when its label is the title of a percentage column of the same report
  (`PROC`, `COMP`, …) or `data["x_pct"]` / `data["y_pct"]` is true; points of a series at the
  same spot are drawn as one marker whose area grows with their number;
- `bar`: `{"categories": [c, …], "series": {name: {c: value}}}`;
- `stacked_bar`: `{"categories": [c, …], "bars": {bar: {c: share}}}` — one bar per key, split
  into categories;
- `errorbar`: `{"categories": [c, …], "series": {name: {c: {"value", "low", "high", "n"?}}}}`
  — a bar per (category, series) with its CI drawn as a whisker (none when `n` < 2).
"""

from __future__ import annotations

import json
import math
from typing import Any

from .model import Chart, ReportResult


def _pct(v: Any) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else round(100 * float(v), 4)


def chart_spec(result: ReportResult, chart: Chart) -> dict[str, Any] | None:
    """What `report.js` needs to draw `chart`; None when it has nothing to draw."""
    d = chart.data
    base: dict[str, Any] = {"title": chart.title, "x_label": chart.x_label,
                            "y_label": chart.y_label}
    if chart.kind == "scatter":
        # a column labelled as the rules judge's heuristic ("COMP (keyword …)") is still COMP
        pct_titles = {c.title.split(" (")[0] for t in result.tables for c in t.columns
                      if c.kind == "pct"}
        x_pct = bool(d.get("x_pct", chart.x_label in pct_titles))
        y_pct = bool(d.get("y_pct", chart.y_label in pct_titles))
        datasets = []
        finite = math.isfinite
        for name, points in d.get("series", {}).items():
            # sessions at the same spot become one marker that counts them (its area grows);
            # the finite check and `_pct` written out: a scatter of 1 M turns has 40,000 points a chart
            spots: dict[tuple[Any, Any], dict[str, Any]] = {}
            for p in points:
                x, y = p.get("x"), p.get("y")
                if x is None or y is None:
                    continue
                fx, fy = float(x), float(y)
                if not (finite(fx) and finite(fy)):
                    continue
                if x_pct:
                    x = round(100 * fx, 4)
                if y_pct:
                    y = round(100 * fy, 4)
                spot = spots.get((x, y))
                if spot is None:
                    spot = spots[(x, y)] = {"x": x, "y": y, "n": 0, "labels": []}
                spot["n"] += 1
                label = p.get("label")
                if label is not None and len(spot["labels"]) < 5:
                    spot["labels"].append(str(label))
            if spots:
                datasets.append({"label": str(name), "points": list(spots.values())})
        if not datasets:
            return None
        return {**base, "kind": "scatter", "x_pct": x_pct, "y_pct": y_pct,
                "diagonal": bool(d.get("diagonal")), "datasets": datasets}
    categories = [str(c) for c in d.get("categories", [])]
    if chart.kind == "stacked_bar":
        bars = {str(k): v for k, v in d.get("bars", {}).items()}
        if not bars:
            return None
        return {**base, "kind": "stacked", "labels": list(bars),
                "datasets": [{"label": c, "values": [_pct(bars[b].get(c)) for b in bars]}
                             for c in categories]}
    series = {str(k): v for k, v in d.get("series", {}).items()}
    # drop categories no series has a value for (e.g. a trigger type that never occurred)
    used = [c for c in categories if any(_value(s.get(c)) is not None for s in series.values())]
    if not used:
        return None
    if chart.kind == "bar":
        return {**base, "kind": "bar", "labels": used,
                "datasets": [{"label": n, "values": [_pct(_value(s.get(c))) for c in used]}
                             for n, s in series.items()]}
    if chart.kind == "errorbar":
        return {**base, "kind": "errorbar", "labels": used, "datasets": [
            {"label": n, "values": [_pct(_value(s.get(c))) for c in used],
             "low": [_ci(s.get(c), "low") for c in used],
             "high": [_ci(s.get(c), "high") for c in used]}
            for n, s in series.items()]}
    raise ValueError(f"unknown chart kind `{chart.kind}`")


def _ci(cell: Any, end: str) -> float | None:
    """A CI bound in percent; none where the cell says it rests on fewer than two units (the
    tables print no CI there either)."""
    if not isinstance(cell, dict) or int(cell.get("n", 2)) < 2:
        return None
    return _pct(cell.get(end))


def _value(cell: Any) -> Any:
    return cell.get("value") if isinstance(cell, dict) else cell


def json_script(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
