"""Where an alert goes: a webhook (http/https, one of `formats.Format`), e-mail over SMTP, or a command
run as an argv list (never a shell) with the alert JSON on stdin. `send` makes one attempt and raises
`DeliveryError` saying whether a retry may help (a timeout, a refused connection or a 5xx: yes)."""

from __future__ import annotations

import json
import smtplib
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import EmailMessage
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from core.alerts.formats import Format, body, encode, signed_url
from core.alerts.rules import Alert
from core.errors import UserError
from core.workspace import short

__all__ = ["AlertTargetError", "DeliveryError", "Kind", "SmtpSettings", "Target", "mask", "parse_target", "send"]


class AlertTargetError(UserError, ValueError):
    """An --alert target or its settings that cannot be used (one line naming the value)."""


class DeliveryError(UserError, RuntimeError):
    """One failed attempt; `retry` says whether trying again may succeed."""

    def __init__(self, message: str, retry: bool) -> None:
        super().__init__(message)
        self.retry = retry


class Kind(StrEnum):
    WEBHOOK = "webhook"
    EMAIL = "email"
    EXEC = "exec"


def mask(secret: str | None) -> str:
    """A secret shown back: never whole, only its last 4 characters."""
    if not secret:
        return ""
    return "…" + secret[-4:] if len(secret) > 8 else "…"


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int = 587
    user: str = ""
    password: str = ""
    sender: str = "shardscope@localhost"
    timeout_s: float = 10.0
    cafile: str = ""  # CA bundle the server's certificate is checked against (default: the system's)

    def describe(self) -> str:
        login = f", login {self.user} password {mask(self.password)}" if self.user else ""
        return f"{self.host}:{self.port}{login}"


@dataclass(frozen=True)
class Target:
    kind: Kind
    address: str  # URL, e-mail address or the command's path
    fmt: Format = Format.JSON
    secret: str | None = None  # Feishu / DingTalk signing secret
    smtp: SmtpSettings | None = None
    timeout_s: float = 10.0

    def describe(self) -> str:
        """The target as printed back: a webhook's URL without its path and query (they carry the token)."""
        if self.kind == Kind.WEBHOOK:
            u = urlsplit(self.address)
            secret = f", secret {mask(self.secret)}" if self.secret else ""
            return f"{self.fmt} webhook {u.scheme}://{u.netloc}/{mask(u.path + '?' + u.query)}{secret}"
        if self.kind == Kind.EMAIL:
            return f"mailto:{self.address} via {self.smtp.describe() if self.smtp else '?'}"
        return f"exec:{self.address}"


def parse_target(
    text: str, fmt: str = "json", secret: str | None = None, smtp: SmtpSettings | None = None, timeout_s: float = 10.0
) -> Target:
    """`http(s)://URL`, `mailto:ADDR` (needs `smtp`) or `exec:PATH` (an executable file) -> Target."""
    try:
        form = Format(fmt)
    except ValueError:
        raise AlertTargetError(
            f"--alert-format {short(fmt)} is not one of {', '.join(f.value for f in Format)}"
        ) from None
    if text.startswith(("http://", "https://")):
        if not urlsplit(text).hostname:
            raise AlertTargetError(f"--alert {short(text)}: the URL has no host")
        return Target(Kind.WEBHOOK, text, form, secret, timeout_s=timeout_s)
    if text.startswith("mailto:"):
        addr = text[len("mailto:") :]
        if "@" not in addr or any(c in addr for c in "\r\n ,;"):
            raise AlertTargetError(f"--alert {short(text)}: not one e-mail address (mailto:NAME@HOST)")
        if smtp is None:
            raise AlertTargetError(
                f"--alert {short(text)}: no SMTP server: give --smtp HOST:PORT or smtp in the workspace's alerts.json"
            )
        return Target(Kind.EMAIL, addr, smtp=smtp, timeout_s=timeout_s)
    if text.startswith("exec:"):
        path = Path(text[len("exec:") :]).expanduser()
        if not path.is_file():
            raise AlertTargetError(f"--alert {short(text)}: {short(str(path))} is not a file")
        return Target(Kind.EXEC, str(path.resolve()), timeout_s=timeout_s)
    raise AlertTargetError(f"--alert {short(text)}: give an http(s):// URL, mailto:ADDR or exec:PATH")


def parse_smtp(text: str) -> SmtpSettings:
    """`HOST:PORT` (or `HOST`, port 587) -> SmtpSettings without a login."""
    host, _, port = text.rpartition(":") if ":" in text else (text, "", "587")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise AlertTargetError(f"--smtp {short(text)}: give HOST:PORT (a port 1-65535)")
    return SmtpSettings(host, int(port))


def _post(target: Target, alert: Alert) -> str:
    url = signed_url(target.address, target.fmt, target.secret)
    data = encode(body(alert, target.fmt, target.secret))
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=target.timeout_s) as resp:
            resp.read(64 << 10)
            return f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        raise DeliveryError(f"HTTP {exc.code}", retry=exc.code >= 500 or exc.code == 429) from None
    except TimeoutError:
        raise DeliveryError(f"timed out after {target.timeout_s:g} s", retry=True) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        retry = isinstance(reason, TimeoutError | ConnectionError | socket.timeout)
        raise DeliveryError(f"cannot reach the webhook: {reason}", retry=retry) from None


def _mail(target: Target, alert: Alert) -> str:
    s = target.smtp
    assert s is not None
    msg = EmailMessage()
    msg["Subject"] = f"[ShardScope] {alert.rule}: {alert.run}"
    msg["From"] = s.sender
    msg["To"] = target.address
    msg.set_content(alert.text() + "\n\n" + json.dumps(alert.to_dict(), indent=1))
    try:
        with smtplib.SMTP(s.host, s.port, timeout=s.timeout_s) as smtp:
            smtp.ehlo()
            if smtp.has_extn("starttls"):  # STARTTLS when offered, before any login; the certificate checked
                smtp.starttls(context=ssl.create_default_context(cafile=s.cafile or None))
                smtp.ehlo()
            if s.user:
                smtp.login(s.user, s.password)
            smtp.send_message(msg)
    except smtplib.SMTPAuthenticationError:
        raise DeliveryError(f"SMTP login refused for {s.user}", retry=False) from None
    except (TimeoutError, ConnectionError, smtplib.SMTPServerDisconnected) as exc:
        raise DeliveryError(f"SMTP {s.host}:{s.port}: {exc}", retry=True) from None
    except ssl.SSLError as exc:
        raise DeliveryError(f"SMTP {s.host}:{s.port}: STARTTLS failed ({exc.reason})", retry=False) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(f"SMTP {s.host}:{s.port}: {exc}", retry=False) from None
    return f"mail to {target.address}"


def _exec(target: Target, alert: Alert) -> str:
    data = json.dumps(alert.to_dict()).encode()
    try:
        done = subprocess.run([target.address], input=data, capture_output=True, timeout=target.timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise DeliveryError(f"{target.address} timed out after {target.timeout_s:g} s", retry=True) from None
    except OSError as exc:
        raise DeliveryError(f"cannot run {target.address}: {exc.strerror}", retry=False) from None
    if done.returncode != 0:
        raise DeliveryError(f"{target.address} exited with status {done.returncode}", retry=True)
    return "exit 0"


def send(target: Target, alert: Alert) -> str:
    """One attempt to deliver `alert` to `target`; returns what the receiver said, or raises DeliveryError."""
    if target.kind == Kind.WEBHOOK:
        return _post(target, alert)
    if target.kind == Kind.EMAIL:
        return _mail(target, alert)
    return _exec(target, alert)
