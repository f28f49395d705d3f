"""The chart's plotly bundle is served cacheable under its content hash (app/bundle_cache.py); nothing else is."""

from __future__ import annotations

import asyncio
import hashlib
import re

import pytest

from app.bundle_cache import BUNDLE_PATH, IMMUTABLE, BundleCacheMiddleware

BUNDLE = "/component/app.monitor.chart.shardscope_live_chart/plotly-0123456789abcdef.min.js"


def _served(path: str, method: str = "GET", status: int = 200) -> list[tuple[bytes, bytes]]:
    """The headers a request gets through the middleware, Streamlit answering `Cache-Control: public`."""
    sent: list[dict] = []

    async def streamlit(_scope: dict, _receive: object, send: object) -> None:
        await send({"type": "http.response.start", "status": status, "headers": [(b"cache-control", b"public")]})
        await send({"type": "http.response.body", "body": b"x"})

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path}
    asyncio.run(BundleCacheMiddleware(streamlit)(scope, None, send))
    assert sent[1] == {"type": "http.response.body", "body": b"x"}
    return sent[0]["headers"]


def test_the_hashed_bundle_is_immutable_and_nothing_else_changes() -> None:
    assert _served(BUNDLE) == [(b"cache-control", IMMUTABLE)]  # one Cache-Control, Streamlit's replaced
    unchanged = [(b"cache-control", b"public")]
    assert _served(BUNDLE, method="HEAD") == unchanged
    assert _served(BUNDLE, status=404) == unchanged
    assert _served(BUNDLE.replace("plotly-0123456789abcdef", "plotly")) == unchanged  # an unhashed name
    assert _served("/component/other.component/plotly-0123456789abcdef.min.js") == unchanged
    assert _served(BUNDLE.replace(".min.js", ".min.js.map")) == unchanged
    assert _served("/component/app.monitor.chart.shardscope_live_chart/index.html") == unchanged


def test_the_chart_folder_loads_its_bundle_by_the_hash_of_its_bytes() -> None:
    """index.html names exactly the bundle beside it, and that name is the one the middleware marks."""
    pytest.importorskip("streamlit")
    from app.monitor import chart as live_chart

    build = live_chart.build_dir()
    (bundle,) = build.glob("plotly-*.min.js")
    assert bundle.name == f"plotly-{hashlib.sha256(bundle.read_bytes()).hexdigest()[:16]}.min.js"
    assert bundle.read_bytes() == live_chart.plotly_bundle().read_bytes()
    assert re.findall(rb'<script src="([^"]+)"', (build / "index.html").read_bytes()) == [f"./{bundle.name}".encode()]
    assert BUNDLE_PATH.search(f"/component/app.monitor.chart.shardscope_live_chart/{bundle.name}")
