"""The report as one self-contained HTML file: plotly.js inlined once, the figures as JSON drawn by
`Plotly.newPlot`, every other piece plain HTML. It opens offline (no request leaves the file).

Why escaping everywhere: the diagnosis quotes log lines, and a log line is untrusted text (`<script>` in a
log must show as text, never run). Text goes through `html.escape`; the figures' JSON is embedded with
`<`, `>` and `&` as \\u escapes, so nothing in it can close its <script> element.
"""

from __future__ import annotations

import html
import json
import math
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from core.logs.rows.cells import as_float
from core.report.data import Chart, ReportData, Trace, TraceKind

__all__ = ["render_html"]

MAX_GROUPS = 20  # failure groups shown
MAX_EVIDENCE = 12  # evidence lines per group
MAX_LINE = 400  # characters of one quoted line
MAX_TRACEBACK = 40  # last lines of the first failing rank's traceback
MAX_LISTED = 32  # hung ranks / stragglers listed
_PALETTE = ["#dc2626", "#ea580c", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#16a34a", "#2563eb"]

_CSS = """
body{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;
background:#f8fafc;color:#0f172a;font-size:14px;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:0 0 10px}
.sub{color:#475569;margin:0 0 16px;word-break:break-all}
section{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:16px 18px;margin:0 0 16px}
.badges span{display:inline-block;border-radius:999px;padding:2px 10px;margin:0 6px 6px 0;background:#e2e8f0}
.badges .bad{background:#fee2e2;color:#991b1b}.badges .ok{background:#dcfce7;color:#166534}
.chart{height:380px}.note{color:#64748b;font-size:12px;margin:2px 0 12px}
pre{background:#0f172a;color:#e2e8f0;padding:10px 12px;border-radius:6px;overflow-x:auto;font-size:12px;
white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #f1f5f9;vertical-align:top}
th{background:#f8fafc;position:sticky;top:0}
td.n,.ranks :is(td,th):nth-child(-n+6):not(:nth-child(2)){text-align:right;font-variant-numeric:tabular-nums}
.scroll{max-height:520px;overflow:auto;border:1px solid #e2e8f0;border-radius:6px}
tr.crashed td,tr.nan td{background:#fef2f2}
.kv td:first-child{color:#475569;white-space:nowrap;width:1%}
.group{margin:0 0 14px}.exc{font-weight:600;color:#991b1b;word-break:break-word}
footer{color:#94a3b8;font-size:12px;text-align:center}
"""


def render_html(data: ReportData, plotly_js: str) -> str:
    """The report page; `plotly_js` is plotly.js itself (`plotly.offline.get_plotlyjs()`), inlined once."""
    figures = [_figure(f"chart-{i}", c) for i, c in enumerate(data.charts)]
    charts = "".join(
        f'<div id="chart-{i}" class="chart"></div><p class="note">{_e(c.note)}</p>' for i, c in enumerate(data.charts)
    )
    body = [
        f"<h1>{_e(data.title)}</h1>",
        f'<p class="sub">{_e(data.log_dir)}</p>',
        _summary(data),
        _diagnosis(data),
        f"<section><h2>Loss and step time</h2>{charts or '<p>No loss line was read.</p>'}</section>",
        _look_at(data),
        _ranks(data.ranks),
        _run(data),
        f"<footer>ShardScope report, made {_e(_when(data.generated_at))}. Opens offline.</footer>",
    ]
    js = plotly_js.replace("</script", "<\\/script")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_e(data.title)}</title><style>{_CSS}</style></head><body><main>"
        + "\n".join(body)
        + f"</main>\n<script>{js}</script>\n"
        + f'<script type="application/json" id="report-figures">{script_json(figures)}</script>\n'
        + "<script>(function(){var f=JSON.parse(document.getElementById('report-figures').textContent);"
        "f.forEach(function(g){Plotly.newPlot(g.id,g.data,g.layout,{displaylogo:false,responsive:true});});"
        "})();</script></body></html>\n"
    )


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _clip(text: object, limit: int = 200) -> str:
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _when(t: float | None) -> str:
    if not t:
        return "-"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def script_json(value: Any) -> str:
    """JSON that cannot end its <script> element (or open a comment) whatever the strings hold."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _numbers(a: np.ndarray) -> list[float | int | None]:
    """Six significant digits (what a chart shows), integers as integers, non-finite as null (a gap)."""
    out: list[float | int | None] = []
    for v in np.asarray(a, dtype=np.float64).tolist():
        if not math.isfinite(v):
            out.append(None)
        elif v == int(v) and abs(v) < 1e15:
            out.append(int(v))
        else:
            out.append(float(f"{v:.6g}"))
    return out


def _trace(t: Trace, color: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "scatter", "mode": "lines", "name": t.name, "x": _numbers(t.x), "y": _numbers(t.y)}
    if t.kind == TraceKind.BAND_HIGH:
        out |= {"line": {"width": 0}, "showlegend": False, "hoverinfo": "skip"}
    elif t.kind == TraceKind.BAND_LOW:
        out |= {"line": {"width": 0}, "fill": "tonexty", "fillcolor": "rgba(100,116,139,0.2)", "hoverinfo": "skip"}
    else:
        out["line"] = {"width": 2.2 if t.emphasis else 1.2, **({"color": color} if color else {})}
        if len(t.x) <= 60:  # a few points (TimeMonitor's per epoch): show each one
            out["mode"] = "lines+markers"
    return out


def _figure(div: str, c: Chart) -> dict[str, Any]:
    aggregate = any(t.kind != TraceKind.LINE for t in c.traces)
    data, k = [], 0
    for t in c.traces:
        color = None
        if aggregate and t.kind == TraceKind.LINE:
            color = "#111827" if t.name.startswith("mean") else _PALETTE[k % len(_PALETTE)]
            k += 0 if t.name.startswith("mean") else 1
        data.append(_trace(t, color))
    axis = {"gridcolor": "#e5e7eb", "zeroline": False}
    layout = {
        "title": {"text": c.title, "x": 0, "font": {"size": 14}},
        "margin": {"l": 60, "r": 20, "t": 60, "b": 45},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "xaxis": {"title": {"text": c.x_title}, **axis},
        "yaxis": {"title": {"text": c.y_title}, **axis},
        "hovermode": "x unified" if aggregate else "closest",
        "legend": {"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0.2, "traceorder": "normal"},
    }
    return {"id": div, "data": data, "layout": layout}


def _summary(d: ReportData) -> str:
    diag = d.diagnosis
    badges = [f"{d.n_ranks:,} ranks", f"{d.n_rows:,} loss rows"]
    if diag.last_step is not None:
        badges.append(f"last step {diag.last_step:,.0f}")
    if diag.median_step_time:
        badges.append(f"median step time {diag.median_step_time:,.1f} ms")
    spans = "".join(f"<span>{_e(b)}</span>" for b in badges)
    if diag.failed:
        bad = f"failed: rank {diag.root_cause} first" if diag.root_cause is not None else f"{len(diag.hung)} hung"
        spans += f'<span class="bad">{_e(bad)}</span>'
    else:
        spans += '<span class="ok">no failure or hang found</span>'
    return f'<div class="badges">{spans}</div>'


def _diagnosis(d: ReportData) -> str:
    diag = d.diagnosis
    parts = ["<section><h2>Diagnosis</h2>"]
    if diag.failure_groups:
        parts.append(f"<p>{len(diag.failure_groups)} failure group(s); likely root cause: rank {diag.root_cause}</p>")
    q = d.first_error
    if q is not None:
        where = f"{q.file}:{q.line}" if q.line is not None else q.file
        quoted = "\n".join(_clip(x, MAX_LINE) for x in (q.context or q.message).splitlines()[-MAX_TRACEBACK:])
        parts.append(f"<p>Rank {diag.root_cause}'s own error, {_e(where)}:</p><pre>{_e(quoted)}</pre>")
    for g in diag.failure_groups[:MAX_GROUPS]:
        ranks = ", ".join(str(r) for r in g.ranks[:16]) + (f", … ({len(g.ranks)} ranks)" if len(g.ranks) > 16 else "")
        evidence = "\n".join(_clip(e, MAX_LINE) for e in g.evidence[:MAX_EVIDENCE])
        parts.append(
            f'<div class="group"><div class="exc">{_e(_clip(g.exception))}</div>'
            f"<div>{len(g.ranks)} rank(s), first: rank {g.first_rank} at {_e(_when(g.first_time))} "
            f"({_e(g.time_source)}); ranks {_e(ranks)}</div>"
            + (f"<pre>{_e(evidence)}</pre>" if evidence else "")
            + "</div>"
        )
    if len(diag.failure_groups) > MAX_GROUPS:
        parts.append(f"<p>… and {len(diag.failure_groups) - MAX_GROUPS} more group(s)</p>")
    parts += [f'<p class="exc">job: {_e(_clip(e))}</p>' for e in diag.job_errors[:MAX_GROUPS]]
    items = [f"rank {h.rank}: hung, last step {h.last_step:.0f}; {_clip(h.reason)}" for h in diag.hung[:MAX_LISTED]]
    items += [
        f"rank {s.rank}: straggler, {s.step_time:.1f} ms/step = {s.ratio:.2f}x the median ({s.source})"
        for s in diag.stragglers[:MAX_LISTED]
    ]
    if diag.overflow_steps:
        steps = ", ".join(f"{s:.0f}" for s in diag.overflow_steps)
        items.append(f"loss-scale overflow on {diag.overflow_ranks} rank(s) at steps {steps}")
    items += [f"global_norm spike: rank {s.rank} step {s.step:.0f} = {s.global_norm:.3g}" for s in diag.norm_spikes[:8]]
    if items:
        parts.append("<ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>")
    if not (diag.failure_groups or diag.hung or diag.stragglers or diag.job_errors):
        parts.append("<p>No failure, hang or straggler found.</p>")
    return "".join(parts) + "</section>"


def _look_at(d: ReportData) -> str:
    if not d.look_at:
        return ""
    rows = "".join(f"<tr><td class=n>{a.rank}<td>{_e(a.what)}<td>{_e(_clip(a.why))}" for a in d.look_at)
    return f"<section><h2>Ranks to look at</h2><table><tr><th>rank<th>what<th>why</tr>{rows}</table></section>"


def _fmt(v: object, spec: str) -> str:
    try:
        f = as_float(v)
    except (TypeError, ValueError):
        return "-"
    return format(f, spec) if math.isfinite(f) else ("-" if math.isnan(f) else str(f))


def _ranks(t: pd.DataFrame) -> str:
    """Every rank, compact: the detail most ranks of a state share is said once above the table, a row
    shows only a detail of its own, and HTML5 needs no closing </td> (1,024 rows stay ~60 KB)."""
    common = {
        state: details.mode().iloc[0] for state, details in t.groupby("state", sort=False)["detail"] if len(details)
    }
    counts = t["state"].value_counts()
    said = "".join(
        f"<li>{_e(state)} ({counts[state]:,}): {_e(_clip(detail))}</li>" for state, detail in common.items() if detail
    )
    cols = [t[c].tolist() for c in ("rank", "state", "last_epoch", "last_step", "last_loss", "step_time_ms", "detail")]
    rows = [
        f"<tr{_row_class(state)}><td>{int(rank)}<td>{_e(state)}<td>{_fmt(ep, '.0f')}<td>{_fmt(step, '.0f')}"
        f"<td>{_fmt(loss, '.6g')}<td>{_fmt(ms, '.1f')}<td>{'' if detail == common.get(state) else _e(_clip(detail))}"
        for rank, state, ep, step, loss, ms, detail in zip(*cols, strict=True)
    ]
    head = "<tr><th>rank<th>state<th>epoch<th>step<th>last loss<th>step time (ms)<th>detail</tr>"
    return (
        f"<section><h2>Ranks ({len(rows):,})</h2>"
        + (f"<ul>{said}</ul>" if said else "")
        + f'<div class="scroll"><table class="ranks">{head}'
        + "\n".join(rows)
        + "</table></div></section>"
    )


def _row_class(state: str) -> str:
    return f" class={state}" if state in ("crashed", "nan") else ""  # the few to see among 1,024


def _kv(pairs: list[tuple[str, str]]) -> str:
    return '<table class="kv">' + "".join(f"<tr><td>{_e(k)}<td>{_e(_clip(v))}" for k, v in pairs) + "</table>"


def _value(v: object) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _run(d: ReportData) -> str:
    parts = ["<section><h2>Run</h2>"]
    if not (d.facts or d.options or d.plan):
        parts.append("<p>A log folder ShardScope did not launch: no options or plan were recorded.</p>")
    if d.facts:
        parts.append(_kv(d.facts))
    options = {k: v for k, v in d.options.items() if k != "plan"}
    if options:
        parts.append("<h2>Options</h2>" + _kv([(k, _value(v)) for k, v in sorted(options.items())]))
    if d.plan:
        parts.append("<h2>Plan</h2>" + _kv([(k, _value(v)) for k, v in d.plan.items()]))
    return "".join(parts) + "</section>"
