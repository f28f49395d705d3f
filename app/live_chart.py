"""A Plotly chart that keeps the user's zoom across live updates (st.plotly_chart remounts and loses it).

A tiny Streamlit component (app/live_chart/index.html, no npm build) calls `Plotly.react` with a
constant `layout.uirevision`. The Plotly bundle is copied next to the html at runtime, so it works
offline: plotly.js's own "cartesian" bundle (scatter, bar, heatmap, ...; 1.5 MB, vendored from npm
`plotly.js-cartesian-dist-min`, MIT) when it is the same plotly.js version as the installed plotly
package's full bundle (4.8 MB), else that full bundle, so it always matches plotly.py's JSON. Each
chart frame parses the bundle: the small one draws a first chart ~2 s sooner on a busy 2-core machine.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit.components.v1 as components

from core.files import open_checked

_SRC = Path(__file__).resolve().parent / "live_chart"


_CARTESIAN = _SRC / "plotly-cartesian.min.js"  # npm pack plotly.js-cartesian-dist-min@4.1.1
_VERSION = re.compile(rb"plotly\.js (?:\([^)]*\) )?v(\d+\.\d+\.\d+)")


def bundle_version(path: Path) -> str | None:
    """The plotly.js version in a bundle's license header ("plotly.js (cartesian - minified) v4.1.1")."""
    try:
        with open_checked(path, None, "plotly bundle") as f:
            m = _VERSION.search(f.read(512))
    except OSError:
        return None
    return m.group(1).decode() if m else None


def plotly_bundle() -> Path:
    """The cartesian bundle when it matches the installed plotly's plotly.js, else the full one."""
    full = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    return _CARTESIAN if bundle_version(_CARTESIAN) == bundle_version(full) is not None else full


@cache
def _build_dir() -> Path:
    """A folder holding index.html + plotly.min.js (rebuilt when either changes)."""
    html = (_SRC / "index.html").read_bytes()
    plotly_js = plotly_bundle()
    tag = hashlib.sha1(html + plotly.__version__.encode() + plotly_js.name.encode()).hexdigest()[:12]
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
