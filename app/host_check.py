"""Refuse every request whose Host header is not this loopback server: the DNS-rebinding guard.

A page on another site can point its own DNS name at 127.0.0.1 and then talk to the dashboard with
that name in the Host header and a matching Origin, which Streamlit's origin checks accept. The
dashboard only ever listens on loopback, so a Host other than 127.0.0.1, localhost or [::1] (on the
configured port, or without a port) is refused before any route, HTTP or WebSocket, sees it.

The Origin check beside it (issue 31): Streamlit accepts an Origin of localhost, 127.0.0.1 or 0.0.0.0 on
ANY port, and its `_streamlit_xsrf` cookie is shared by every port of the host, so a page served from
another local port (127.0.0.1:9999) could open the WebSocket that drives Launch and Stop and upload with
that cookie. When a request carries an Origin it must be this server's own: its scheme, a loopback name
the Host check allows, and the port it listens on (in the Docker image, 0.0.0.0 inside, the host
publishes the same port number on its loopback, so the browser's Origin is still 127.0.0.1:PORT).
A request without an Origin is not a browser's cross-site one (browsers send it on WebSocket upgrades,
uploads and every cross-origin fetch), so the Host check alone judges it.
app/shardscope_server.py installs the middleware.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from streamlit import config

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def split_host(host: str) -> tuple[str, str | None] | None:
    """(name, port or None) of a Host header value, or None when it is not `name[:port]` / `[v6][:port]`."""
    if host.startswith("["):
        name, bracket, rest = host.partition("]")
        name += bracket
        if not bracket:
            return None
    else:
        name, colon, port = host.partition(":")
        rest = colon + port
    if not rest:
        return name, None
    if not rest.startswith(":") or ":" in rest[1:]:
        return None
    return name, rest[1:]


_SHOWN = 80  # characters of a refused Host shown in the one-line reason


def _shown(value: str) -> str:
    """`value` as a bounded repr for a one-line reason."""
    shown = repr(value[:_SHOWN])  # escapes make it longer than the text: \x1f is 4 characters, \U0001342f 10
    if len(shown) > _SHOWN or len(value) > _SHOWN:
        shown = shown[: _SHOWN - 3] + "..."
    return shown


def host_problem(host: str | None, port: int) -> str | None:
    """Why a request with this Host header is refused (one line), or None when it names this loopback server."""
    if not host:
        return "the request has no Host header"
    parts = split_host(host)
    if parts is not None and parts[0].lower() in LOOPBACK_NAMES and parts[1] in (None, str(port)):
        return None
    return (
        f"Host {_shown(host)} refused: ShardScope answers only to 127.0.0.1, localhost or [::1] on port {port} "
        "(open the dashboard by that address)"
    )


_ORIGIN = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<name>\[[0-9A-Fa-f:.]*\]|[^\[\]:/?#@\\]*)(?::(?P<port>[0-9]{1,5}))?"
)
DEFAULT_PORTS = {"http": 80, "https": 443}


def split_origin(origin: str) -> tuple[str, str, int] | None:
    """(scheme, name, port) of an Origin header (`scheme://name[:port]`, names and schemes lowercased, the
    scheme's default port when none is written), or None when it is not one (`null`, a path, userinfo)."""
    match = _ORIGIN.fullmatch(origin)
    if match is None:
        return None
    scheme = match["scheme"].lower()
    if match["port"] is not None:
        if match["port"] != str(int(match["port"])):  # 08501: no browser writes it
            return None
        port = int(match["port"])
    elif scheme in DEFAULT_PORTS:
        port = DEFAULT_PORTS[scheme]
    else:
        return None
    return scheme, match["name"].lower(), port


def origin_problem(origin: str | None, port: int, scheme: str = "http") -> str | None:
    """Why a request with this Origin header is refused (one line), or None when it has none or it is this
    server's own origin: `scheme` (the connection's), a loopback name the Host check allows, `port`."""
    if origin is None:
        return None
    if split_origin(origin) in {(scheme, name, port) for name in LOOPBACK_NAMES}:
        return None
    return (
        f"Origin {_shown(origin)} refused: only the dashboard's own pages ({scheme}://127.0.0.1:{port}, "
        "localhost or [::1] on that port) may use it"
    )


def _one_header(scope: Scope, wanted: bytes) -> str | None:
    """The one `wanted` header of an ASGI request, None when absent, "" when there are several (refused)."""
    values = [value for name, value in scope.get("headers", ()) if name == wanted]
    if len(values) > 1:
        return ""
    return values[0].decode("latin-1") if values else None


def request_host(scope: Scope) -> str | None:
    """The one Host header of an ASGI request ("" when there are several: that is refused too)."""
    return _one_header(scope, b"host")


def request_origin(scope: Scope) -> str | None:
    """The one Origin header of an ASGI request ("" when there are several: that is refused too)."""
    return _one_header(scope, b"origin")


def connection_scheme(scope: Scope) -> str:
    """The scheme a page of this server has: https when the connection is TLS (https, wss), else http."""
    return "https" if scope.get("scheme") in ("https", "wss") else "http"


class LoopbackHostMiddleware:
    """Refuse (403, one-line reason) every HTTP request and WebSocket upgrade whose Host is not loopback or
    whose Origin, when it has one, is not this server's own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            port = int(config.get_option("server.port"))  # the one it listens on (Streamlit sets a fallback's)
            problem = host_problem(request_host(scope), port) or origin_problem(
                request_origin(scope), port, connection_scheme(scope)
            )
            if problem is not None:
                await refuse(scope, send, problem)
                return
        await self.app(scope, receive, send)


async def refuse(scope: Scope, send: Send, reason: str) -> None:
    """A 403 with the reason as plain text; a WebSocket gets it as the handshake's HTTP answer when it can."""
    body = (reason + "\n").encode("utf-8", "replace")
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 403, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": 403, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # the server answers a close before accept with a bare 403
        await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
