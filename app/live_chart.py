"""A Plotly chart that keeps the user's zoom across live updates (st.plotly_chart remounts and loses it).

A tiny Streamlit component (app/live_chart/index.html, no npm build) calls `Plotly.react` with a
constant `layout.uirevision`. plotly.min.js comes from the installed plotly package and is copied
next to the html at runtime, so it works offline and always matches plotly.py's JSON.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from functools import cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit.components.v1 as components

_SRC = Path(__file__).resolve().parent / "live_chart"


@cache
def _build_dir() -> Path:
    """A folder holding index.html + plotly.min.js (rebuilt when either changes)."""
    html = (_SRC / "index.html").read_bytes()
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    tag = hashlib.sha1(html + plotly.__version__.encode()).hexdigest()[:12]
    build = Path(tempfile.gettempdir()) / f"shardscope_live_chart_{tag}"
    if not (build / "plotly.min.js").is_file() or not (build / "index.html").is_file():
        tmp = Path(tempfile.mkdtemp(prefix="shardscope_live_chart_tmp_"))
        (tmp / "index.html").write_bytes(html)
        shutil.copyfile(plotly_js, tmp / "plotly.min.js")
        try:
            tmp.rename(build)
        except OSError:  # another session built it first
            shutil.rmtree(tmp, ignore_errors=True)
    return build


@cache
def _component():
    return components.declare_component("shardscope_live_chart", path=str(_build_dir()))


def live_chart(fig: go.Figure, key: str, uirevision: str, height: int = 420, n_points: int | None = None) -> None:
    """Render `fig`; while `uirevision` stays the same, zoom/pan/legend state survive updates."""
    if n_points is None:
        n_points = sum(len(t.x) if getattr(t, "x", None) is not None else 0 for t in fig.data)
    _component()(
        figure=pio.to_json(fig, validate=False),
        uirevision=uirevision,
        height=height,
        n_points=int(n_points),
        key=key,
        default=None,
    )
