"""Refuse every request whose Host header is not this loopback server: the DNS-rebinding guard.

A page on another site can point its own DNS name at 127.0.0.1 and then talk to the dashboard with
that name in the Host header and a matching Origin, which Streamlit's origin checks accept. The
dashboard only ever listens on loopback, so a Host other than 127.0.0.1, localhost or [::1] (on the
configured port, or without a port) is refused before any route, HTTP or WebSocket, sees it.
app/shardscope_server.py installs the middleware.
"""

from __future__ import annotations

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


def host_problem(host: str | None, port: int) -> str | None:
    """Why a request with this Host header is refused (one line), or None when it names this loopback server."""
    if not host:
        return "the request has no Host header"
    parts = split_host(host)
    if parts is not None and parts[0].lower() in LOOPBACK_NAMES and parts[1] in (None, str(port)):
        return None
    shown = repr(host[:_SHOWN])  # escapes make it longer than the text: \x1f is 4 characters, \U0001342f 10
    if len(shown) > _SHOWN or len(host) > _SHOWN:
        shown = shown[: _SHOWN - 3] + "..."
    return (
        f"Host {shown} refused: ShardScope answers only to 127.0.0.1, localhost or [::1] on port {port} "
        "(open the dashboard by that address)"
    )


def request_host(scope: Scope) -> str | None:
    """The one Host header of an ASGI request ("" when there are several: that is refused too)."""
    hosts = [value for name, value in scope.get("headers", ()) if name == b"host"]
    if len(hosts) > 1:
        return ""
    return hosts[0].decode("latin-1") if hosts else None


class LoopbackHostMiddleware:
    """Refuse (403, one-line reason) every HTTP request and WebSocket upgrade whose Host is not loopback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            problem = host_problem(request_host(scope), int(config.get_option("server.port")))
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
