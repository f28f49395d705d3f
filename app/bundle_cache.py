"""Let the browser keep the chart's plotly bundle: `Cache-Control: immutable` on its content-hashed name.

Streamlit serves a component's files with `Cache-Control: public` and no max-age, ETag or Last-Modified,
so a browser cannot reuse them: every chart frame downloaded the 1.5 MB bundle again (500 kB gzipped
per request), and V8, which keeps compiled code only for cached scripts, compiled it again (0.5-0.9 s
of a 1,024-rank Monitor's first chart on a 2-core machine). app/monitor/chart.py names the bundle by its
content hash (`plotly-<16 hex>.min.js`), so a changed bundle is a new name and "immutable" is true;
index.html stays `no-cache`. app/shardscope_server.py installs the middleware.
"""

from __future__ import annotations

import re

from app.host_check import ASGIApp, Message, Receive, Scope, Send

BUNDLE_PATH = re.compile(r"/component/[\w.\-]*shardscope_live_chart/plotly-[0-9a-f]{16}\.min\.js\Z")
IMMUTABLE = b"public, max-age=31536000, immutable"


class BundleCacheMiddleware:
    """Mark a successful GET of the chart's hashed plotly bundle cacheable for a year; nothing else changes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET" or not BUNDLE_PATH.search(scope.get("path", "")):
            await self.app(scope, receive, send)
            return

        async def send_cacheable(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 200:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"]
                message = {**message, "headers": [*headers, (b"cache-control", IMMUTABLE)]}
            await send(message)

        await self.app(scope, receive, send_cacheable)
