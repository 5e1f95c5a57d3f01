/* benchpack HTML report: draws the charts listed in #bp-charts with Chart.js.
   Chart specs come from html.py (chart_spec); percentages arrive already scaled to 0-100. */
(function () {
  "use strict";
  var root = document.documentElement;
  var specs = JSON.parse(document.getElementById("bp-charts").textContent);
  var instances = {};
  window.benchpackCharts = instances;

  function cssVar(name) {
    return getComputedStyle(root).getPropertyValue(name).trim();
  }
  function series(i) { return cssVar("--series-" + (i % 8)); }
  // fixed colours for the categories the reports use, so a status means the same everywhere
  var NAMED = {
    completed: "--ok", inferred: "--blue", provided: "--mid", unresolved: "--grey",
    pass: "--ok", partial: "--mid", fail: "--bad"
  };
  function categoryColor(label, i) {
    var key = NAMED[String(label).toLowerCase()];
    return key ? cssVar(key) : series(i);
  }
  function alpha(color, a) {
    var m = /^#([0-9a-f]{6})$/i.exec(color);
    if (!m) { return color; }
    var n = parseInt(m[1], 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }
  // dark text on light fills, white on dark ones (the dark theme's fills are light)
  function inkOn(color) {
    var m = /^#([0-9a-f]{6})$/i.exec(color);
    if (!m) { return "#ffffff"; }
    var n = parseInt(m[1], 16);
    var lum = (0.299 * (n >> 16) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255)) / 255;
    return lum > 0.6 ? "#111111" : "#ffffff";
  }
  function num(v, pct) {
    if (v === null || v === undefined) { return "–"; }
    if (pct) { return v.toFixed(1); }
    return Number.isInteger(v) ? String(v) : v.toFixed(2);
  }
  function axis(label, pct, extra) {
    var a = {
      title: { display: !!label, text: label + (pct ? " (%)" : "") },
      grid: { color: cssVar("--grid") },
      ticks: { color: cssVar("--muted") }
    };
    if (pct) { a.min = 0; a.max = 100; }
    extra = extra || {};
    if (extra.ticks) { Object.assign(a.ticks, extra.ticks); delete extra.ticks; }
    return Object.assign(a, extra);
  }

  // CI whiskers for bar charts: Chart.js has none built in. Each dataset carries errorBars:
  // [[low, high] | null per bar], drawn as a vertical line with caps over its bar.
  var errorBars = {
    id: "bpErrorBars",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx, y = chart.scales.y;
      chart.data.datasets.forEach(function (ds, i) {
        var meta = chart.getDatasetMeta(i);
        if (!ds.errorBars || meta.hidden) { return; }
        meta.data.forEach(function (bar, j) {
          var e = ds.errorBars[j];
          if (!e || e[0] === null || e[1] === null) { return; }
          var lo = y.getPixelForValue(e[0]), hi = y.getPixelForValue(e[1]);
          var half = Math.max(3, Math.min(8, bar.width / 4));
          ctx.save();
          ctx.strokeStyle = cssVar("--fg");
          ctx.lineWidth = 1.5;
          ctx.beginPath();
          ctx.moveTo(bar.x, lo); ctx.lineTo(bar.x, hi);
          ctx.moveTo(bar.x - half, lo); ctx.lineTo(bar.x + half, lo);
          ctx.moveTo(bar.x - half, hi); ctx.lineTo(bar.x + half, hi);
          ctx.stroke();
          ctx.restore();
        });
      });
    }
  };

  // the share written inside each stacked segment wide enough to hold it
  var segmentLabels = {
    id: "bpSegmentLabels",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      ctx.save();
      ctx.font = "600 11px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      chart.data.datasets.forEach(function (ds, i) {
        var meta = chart.getDatasetMeta(i);
        if (meta.hidden) { return; }
        meta.data.forEach(function (bar, j) {
          var v = ds.data[j];
          var width = Math.abs(bar.x - bar.base);
          if (v === null || width < 36) { return; }
          ctx.fillStyle = inkOn(ds.backgroundColor);
          ctx.fillText(v.toFixed(1), (bar.x + bar.base) / 2, bar.y);
        });
      });
      ctx.restore();
    }
  };

  // one marker per spot; its area grows with the share of the chart's busiest spot
  function radiusFor(spec) {
    var most = 1;
    spec.datasets.forEach(function (d) {
      d.points.forEach(function (p) { most = Math.max(most, p.n); });
    });
    return function (n) { return most === 1 ? 5 : 3.5 + 10.5 * Math.sqrt(n / most); };
  }
  var SHAPES = ["circle", "triangle", "rect", "rectRot", "star", "crossRot"];
  function scatter(spec) {
    var radius = radiusFor(spec);
    var datasets = spec.datasets.map(function (d, i) {
      var r = d.points.map(function (p) { return radius(p.n); });
      return {
        label: d.label, data: d.points, pointRadius: r, clip: false,
        pointHoverRadius: r.map(function (x) { return x + 2; }),
        pointStyle: SHAPES[i % SHAPES.length], borderWidth: 1.5,
        backgroundColor: alpha(series(i), i === 0 ? 0.5 : 0.3), borderColor: series(i)
      };
    });
    if (spec.diagonal) {
      var all = [];
      spec.datasets.forEach(function (d) {
        d.points.forEach(function (p) { all.push(p.x, p.y); });
      });
      var lo = spec.x_pct && spec.y_pct ? 0 : Math.min.apply(null, all);
      var hi = spec.x_pct && spec.y_pct ? 100 : Math.max.apply(null, all);
      datasets.push({
        label: "y = x", data: [{ x: lo, y: lo }, { x: hi, y: hi }], showLine: true,
        pointRadius: 0, borderDash: [6, 4], borderWidth: 1, borderColor: cssVar("--muted"),
        backgroundColor: "transparent"
      });
    }
    // a count axis (turns) starts at 0 and ticks whole numbers; a rate axis shows 0-100 with
    // a margin, so markers at 0 or 100 stay clear of the tick labels
    var pad = function (pct, key) {
      if (pct) {
        return { min: -6, max: 106, afterBuildTicks: function (scale) {
          scale.ticks = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map(function (v) {
            return { value: v };
          });
        } };
      }
      var whole = spec.datasets.every(function (d) {
        return d.points.every(function (p) { return Number.isInteger(p[key]); });
      });
      return { beginAtZero: true, grace: "5%", ticks: whole ? { precision: 0 } : {} };
    };
    return {
      type: "scatter",
      data: { datasets: datasets },
      options: {
        scales: { x: axis(spec.x_label, spec.x_pct, pad(spec.x_pct, "x")),
                  y: axis(spec.y_label, spec.y_pct, pad(spec.y_pct, "y")) },
        layout: { padding: 8 },
        plugins: {
          legend: { labels: { usePointStyle: true } },
          tooltip: {
            filter: function (item) { return item.dataset.label !== "y = x"; },
            callbacks: {
              label: function (item) {
                var p = item.raw;
                var who = p.n > 1 ? p.n + " sessions (" + p.labels.join(", ")
                  + (p.n > p.labels.length ? ", …" : "") + ")" : (p.labels[0] || "");
                return item.dataset.label + " · " + who + ": " + spec.x_label + " "
                  + num(p.x, spec.x_pct) + ", " + spec.y_label + " " + num(p.y, spec.y_pct);
              }
            }
          }
        }
      }
    };
  }

  function stacked(spec) {
    return {
      type: "bar",
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map(function (d, i) {
          return { label: d.label, data: d.values, backgroundColor: categoryColor(d.label, i),
                   borderColor: cssVar("--bg"), borderWidth: 1, maxBarThickness: 34 };
        })
      },
      plugins: [segmentLabels],
      options: {
        indexAxis: "y",
        scales: { x: axis(spec.y_label, true, { stacked: true }),
                  y: axis(spec.x_label, false, { stacked: true }) },
        plugins: {
          tooltip: {
            callbacks: {
              label: function (item) { return item.dataset.label + ": " + num(item.raw, true) + " %"; }
            }
          }
        }
      }
    };
  }

  function bars(spec, withErrors) {
    return {
      type: "bar",
      data: {
        labels: spec.labels,
        datasets: spec.datasets.map(function (d, i) {
          var ds = { label: d.label, data: d.values, backgroundColor: alpha(series(i), 0.75),
                     borderColor: series(i), borderWidth: 1, maxBarThickness: 56 };
          if (withErrors) {
            ds.errorBars = d.values.map(function (_, j) {
              return d.low[j] === null || d.high[j] === null ? null : [d.low[j], d.high[j]];
            });
          }
          return ds;
        })
      },
      plugins: withErrors ? [errorBars] : [],
      options: {
        scales: { x: axis(spec.x_label, false), y: axis(spec.y_label, true) },
        plugins: {
          tooltip: {
            callbacks: {
              label: function (item) {
                var text = item.dataset.label + ": " + num(item.raw, true) + " %";
                var e = item.dataset.errorBars && item.dataset.errorBars[item.dataIndex];
                return e ? text + " (CI " + num(e[0], true) + "–" + num(e[1], true) + ")" : text;
              }
            }
          }
        }
      }
    };
  }

  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.responsive = true;
  Chart.defaults.color = cssVar("--muted");
  Chart.defaults.borderColor = cssVar("--grid");
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  var build = { scatter: scatter, stacked: stacked,
                bar: function (s) { return bars(s, false); },
                errorbar: function (s) { return bars(s, true); } };
  specs.forEach(function (spec) {
    var canvas = document.getElementById(spec.canvas);
    try {
      instances[spec.canvas] = new Chart(canvas, build[spec.kind](spec));
    } catch (err) {
      console.error("chart " + spec.canvas + " failed: " + err);
    }
  });
  root.setAttribute("data-charts", String(Object.keys(instances).length));
})();
