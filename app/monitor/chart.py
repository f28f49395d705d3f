"""A Plotly chart that keeps the user's zoom across live updates (st.plotly_chart remounts and loses it).

A tiny Streamlit component (app/monitor/chart_assets/index.html, no npm build) calls `Plotly.react` with a
constant `layout.uirevision`. The html and the Plotly bundle are copied into a private per-process
folder at runtime, so it works offline: plotly.js's own "cartesian" bundle (scatter, bar, heatmap,
...; 1.5 MB, vendored from npm `plotly.js-cartesian-dist-min`, MIT) when it is the same plotly.js
version as the installed plotly package's full bundle (4.8 MB), else that full bundle, so it always
matches plotly.py's JSON. Each chart frame parses the bundle: the small one draws a first chart ~2 s
sooner on a busy 2-core machine.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import stat
import tempfile
from functools import cache
from pathlib import Path

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit.components.v1 as components

from core.files import open_checked

CHART_ASSETS = Path(__file__).resolve().parent / "chart_assets"


CARTESIAN_BUNDLE = CHART_ASSETS / "plotly-cartesian.min.js"  # npm pack plotly.js-cartesian-dist-min@4.1.1
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
    return CARTESIAN_BUNDLE if bundle_version(CARTESIAN_BUNDLE) == bundle_version(full) is not None else full


_PREFIX = "shardscope_live_chart_"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_build_dirs(tmp: Path) -> list[Path]:
    """Remove this user's chart folders whose process has exited (a server stopped by SIGTERM skips atexit).

    Only `<prefix><pid>_*` directories owned by us, never a link or another user's folder.
    """
    removed = []
    for path in tmp.glob(f"{_PREFIX}*_*"):
        pid = path.name.removeprefix(_PREFIX).split("_", 1)[0]
        try:
            info = path.lstat()
        except OSError:
            continue
        ours = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()
        if ours and pid.isascii() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


@cache
def build_dir() -> Path:
    """A private folder (mode 0700, new for this process) holding index.html + the plotly bundle.

    Never a fixed name under $TMPDIR: another user could create that folder first and have the
    dashboard serve their index.html. Removed at exit, or by the next process when we were killed.
    """
    remove_stale_build_dirs(Path(tempfile.gettempdir()))
    build = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}_"))  # 0700, created by us or fails
    atexit.register(shutil.rmtree, build, ignore_errors=True)
    bundle = plotly_bundle()
    name = f"plotly-{hashlib.sha256(bundle.read_bytes()).hexdigest()[:16]}.min.js"  # app/bundle_cache.py
    html = (CHART_ASSETS / "index.html").read_bytes()
    assert html.count(b'src="./plotly.min.js"') == 1, "index.html loads the bundle by this name"
    (build / "index.html").write_bytes(html.replace(b'src="./plotly.min.js"', f'src="./{name}"'.encode()))
    shutil.copyfile(bundle, build / name)
    return build


@cache
def _component():
    return components.declare_component("shardscope_live_chart", path=str(build_dir()))


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
