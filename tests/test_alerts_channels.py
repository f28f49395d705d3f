"""core.alerts channels and delivery (issue 34 items 2-3), against real receivers on 127.0.0.1 started and
stopped here: an HTTP server that records requests (one test per webhook format, the body the service
documents, Feishu / DingTalk signatures recomputed here), an SMTP server (aiosmtpd), a command; retries
with backoff, the attempts recorded, and an enqueue that never waits on the receiver."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import socket
import stat
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from core.alerts import Alert, AlertRule, Dispatcher, parse_target
from core.alerts.channels import AlertTargetError, DeliveryError, SmtpSettings, parse_smtp, send
from core.alerts.delivery import DeliveryPolicy

ALERT = Alert(
    AlertRule.RANK_FAILED,
    "pretrain-64",
    (37, 0, 1),
    1024,
    120.0,
    "rank 37 failed first (RuntimeError: device lost); 1024 rank(s) failed",
    ("rank 37 worker_37.log:51: RuntimeError: device lost",),
    key="rank_failed",
)


@dataclass
class Receiver:
    """An HTTP server recording every POST; `statuses` are answered in turn (then 200); while `hold` is
    clear, a request waits for it (a receiver that hangs until the test releases it)."""

    statuses: list[int] = field(default_factory=list)
    hold: threading.Event = field(default_factory=threading.Event)
    requests: list[tuple[str, dict, bytes]] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def __post_init__(self) -> None:
        self.hold.set()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            rec.requests.append((self.path, dict(self.headers), data))
            rec.arrived.set()
            rec.hold.wait(30)
            code = rec.statuses.pop(0) if rec.statuses else 200
            try:
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b'{"ok":true}')
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (the time-out tests hold the answer on purpose)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    rec.url = f"http://127.0.0.1:{server.server_port}/hook/tok?x=1"
    yield rec
    rec.hold.set()
    server.shutdown()
    server.server_close()


def _body(rec: Receiver, i: int = 0) -> dict:
    return json.loads(rec.requests[i][2])


def test_json_body_holds_rule_run_ranks_count_step_message_evidence(receiver: Receiver) -> None:
    assert send(parse_target(receiver.url), ALERT) == "HTTP 200"
    body = _body(receiver)
    assert body["rule"] == "rank_failed" and body["run"] == "pretrain-64"
    assert body["ranks"] == [37, 0, 1] and body["count"] == 1024 and body["step"] == 120.0
    assert body["message"] == ALERT.message and body["evidence"] == list(ALERT.evidence)
    assert receiver.requests[0][1]["Content-Type"] == "application/json"


def test_slack_body_is_text(receiver: Receiver) -> None:
    send(parse_target(receiver.url, "slack"), ALERT)
    body = _body(receiver)
    assert set(body) == {"text"} and "rank 37 failed first" in body["text"] and "pretrain-64" in body["text"]


def test_feishu_body_and_signature(receiver: Receiver) -> None:
    secret = "feishu-secret-1234"
    send(parse_target(receiver.url, "feishu", secret), ALERT)
    body = _body(receiver)
    assert body["msg_type"] == "text" and "rank 37" in body["content"]["text"]
    key = f"{body['timestamp']}\n{secret}".encode()
    assert body["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()
    unsigned = parse_target(receiver.url, "feishu")
    send(unsigned, ALERT)
    assert set(_body(receiver, 1)) == {"msg_type", "content"}


def test_dingtalk_body_and_signed_url(receiver: Receiver) -> None:
    secret = "SECdingtalk-5678"
    send(parse_target(receiver.url, "dingtalk", secret), ALERT)
    body = _body(receiver)
    assert body == {"msgtype": "text", "text": {"content": ALERT.text()}}
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(receiver.requests[0][0]).query)
    assert query["x"] == ["1"]  # the webhook's own query (its access_token) is kept
    ts = query["timestamp"][0]
    want = base64.b64encode(hmac.new(secret.encode(), f"{ts}\n{secret}".encode(), hashlib.sha256).digest()).decode()
    assert query["sign"] == [want] and len(ts) == 13  # milliseconds


def test_wecom_body_is_text_content_capped(receiver: Receiver) -> None:
    send(parse_target(receiver.url, "wecom"), ALERT)
    assert _body(receiver) == {"msgtype": "text", "text": {"content": ALERT.text()}}
    long = Alert(AlertRule.HANG, "r", (0,), 1, None, "x" * 5000, ())
    send(parse_target(receiver.url, "wecom"), long)
    assert len(_body(receiver, 1)["text"]["content"].encode()) <= 2048


def test_email_over_smtp_reaches_the_server() -> None:
    aiosmtpd_controller = pytest.importorskip("aiosmtpd.controller")
    got: list[bytes] = []

    class Handler:
        async def handle_DATA(self, _server, _session, envelope):
            got.append(envelope.content)
            return "250 OK"

    with socket.socket() as probe:  # a free port (aiosmtpd's Controller needs one named)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ctl = aiosmtpd_controller.Controller(Handler(), hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        target = parse_target("mailto:oncall@example.com", smtp=SmtpSettings("127.0.0.1", port))
        assert send(target, ALERT) == "mail to oncall@example.com"
    finally:
        ctl.stop()
    mail = message_from_bytes(got[0])
    assert mail["To"] == "oncall@example.com" and mail["Subject"] == "[ShardScope] rank_failed: pretrain-64"
    text = mail.get_payload(decode=True).decode()
    assert "rank 37 failed first" in text and '"count": 1024' in text


def test_exec_gets_the_alert_json_on_stdin(tmp_path: Path) -> None:
    out = tmp_path / "got.json"
    script = tmp_path / "hook.sh"
    script.write_text(f"#!/bin/sh\ncat > '{out}'\n")
    script.chmod(0o700)
    assert send(parse_target(f"exec:{script}"), ALERT) == "exit 0"
    assert json.loads(out.read_text())["ranks"][0] == 37
    bad = tmp_path / "fail.sh"
    bad.write_text("#!/bin/sh\nexit 3\n")
    bad.chmod(0o700)
    with pytest.raises(DeliveryError, match="exited with status 3"):
        send(parse_target(f"exec:{bad}"), ALERT)


def test_a_500_is_retried_with_backoff_and_every_attempt_recorded(receiver: Receiver, tmp_path: Path) -> None:
    receiver.statuses = [500, 503]
    record = tmp_path / "alerts.jsonl"
    d = Dispatcher([parse_target(receiver.url)], record, DeliveryPolicy(attempts=4, backoff_s=0.01))
    d.enqueue(ALERT)
    d.join()
    d.close()
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    assert [(x["attempt"], x["outcome"]) for x in lines] == [(1, "retry"), (2, "retry"), (3, "sent")]
    assert lines[0]["detail"] == "HTTP 500" and lines[1]["detail"] == "HTTP 503"
    assert "/hook/tok" not in record.read_text()  # the webhook's token is not written back
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    assert len(receiver.requests) == 3


def test_a_4xx_is_not_retried(receiver: Receiver, tmp_path: Path) -> None:
    receiver.statuses = [403]
    d = Dispatcher([parse_target(receiver.url)], tmp_path / "a.jsonl", DeliveryPolicy(backoff_s=0.01))
    d.enqueue(ALERT)
    d.join()
    assert [(e["attempt"], e["outcome"]) for e in d.log.entries] == [(1, "failed")]


def test_enqueue_does_not_wait_on_a_hanging_receiver_then_timeouts_are_retried(receiver: Receiver) -> None:
    receiver.hold.clear()  # every request waits until the test releases it
    target = parse_target(receiver.url, timeout_s=0.2)
    d = Dispatcher([target], None, DeliveryPolicy(attempts=2, backoff_s=0.01))
    d.enqueue(ALERT)  # returns although the receiver has not answered...
    assert receiver.arrived.wait(10)  # ...and is holding the request right now
    assert not receiver.hold.is_set() and len(d.log.entries) == 0  # no attempt has ended
    d.join()  # both attempts timed out
    receiver.hold.set()
    d.close()
    assert [(e["attempt"], e["outcome"]) for e in d.log.entries] == [(1, "retry"), (2, "failed")]
    assert "timed out" in d.log.entries[0]["detail"]


def test_rate_limit_drops_past_the_limit_and_records_it(receiver: Receiver) -> None:
    d = Dispatcher([parse_target(receiver.url)], None, DeliveryPolicy(rate=2, window_s=3600))
    for _ in range(4):
        d.enqueue(ALERT)
    d.join()
    assert [e["outcome"] for e in d.log.entries] == ["sent", "sent", "rate_limited", "rate_limited"]
    assert len(receiver.requests) == 2


def test_the_record_stays_bounded(tmp_path: Path) -> None:
    from core.alerts.delivery import AttemptLog

    log = AttemptLog(tmp_path / "alerts.jsonl", max_bytes=4096)
    for i in range(500):
        log.record(rule="hang", run="r", outcome="sent", attempt=i)
    data = (tmp_path / "alerts.jsonl").read_text().splitlines()
    assert (tmp_path / "alerts.jsonl").stat().st_size <= 4096 + 200
    assert json.loads(data[-1])["attempt"] == 499 and all(json.loads(x) for x in data)


@pytest.mark.parametrize(
    ("text", "kw", "words"),
    [
        ("ftp://x", {}, "give an http(s):// URL, mailto:ADDR or exec:PATH"),
        ("http://", {}, "the URL has no host"),
        ("mailto:nobody", {"smtp": SmtpSettings("h")}, "not one e-mail address"),
        ("mailto:a@b.c", {}, "no SMTP server"),
        ("exec:/no/such/hook", {}, "is not a file"),
        ("http://h/x", {"fmt": "teams"}, "--alert-format 'teams' is not one of"),
    ],
)
def test_bad_targets_are_one_line(text: str, kw: dict, words: str) -> None:
    with pytest.raises(AlertTargetError) as err:
        parse_target(text, **kw)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_smtp_option_and_target_descriptions_hide_secrets() -> None:
    assert parse_smtp("mail.example:2525") == SmtpSettings("mail.example", 2525)
    with pytest.raises(AlertTargetError, match="HOST:PORT"):
        parse_smtp("mail:99999")
    t = parse_target("https://open.feishu.cn/open-apis/bot/v2/hook/abcdef-123456", "feishu", "secret-ABCD")
    shown = t.describe()
    assert "abcdef-123456" not in shown and "secret-ABCD" not in shown and "…ABCD" in shown


def test_email_logs_in_with_the_workspace_user() -> None:
    controller = pytest.importorskip("aiosmtpd.controller")
    smtp_mod = pytest.importorskip("aiosmtpd.smtp")
    logins: list[tuple[bytes, bytes]] = []

    def authenticator(_server, _session, _envelope, _mechanism, auth_data):
        logins.append((auth_data.login, auth_data.password))
        return smtp_mod.AuthResult(success=auth_data.password == b"right-password")

    class Handler:
        async def handle_DATA(self, _server, _session, _envelope):
            return "250 OK"

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ctl = controller.Controller(
        Handler(), hostname="127.0.0.1", port=port, authenticator=authenticator, auth_require_tls=False
    )
    ctl.start()
    try:
        good = SmtpSettings("127.0.0.1", port, "bot", "right-password")
        assert send(parse_target("mailto:a@example.com", smtp=good), ALERT) == "mail to a@example.com"
    finally:
        ctl.stop()
    assert logins == [(b"bot", b"right-password")]


def test_email_uses_starttls_when_offered_and_checks_the_certificate(tmp_path: Path) -> None:
    """aiosmtpd offering STARTTLS with a self-signed certificate made here by openssl: trusted through the
    settings' cafile, the mail goes over TLS; without it, the unknown certificate is refused."""
    import shutil
    import ssl
    import subprocess

    controller = pytest.importorskip("aiosmtpd.controller")
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subject = ["-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), *subject],
        check=True,
        capture_output=True,
    )
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    over_tls: list[bool] = []

    class Handler:
        async def handle_DATA(self, _server, session, _envelope):
            over_tls.append(session.ssl is not None)
            return "250 OK"

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ctl = controller.Controller(
        Handler(), hostname="127.0.0.1", port=port, tls_context=server_tls, require_starttls=True
    )
    ctl.start()
    try:
        trusted = SmtpSettings("127.0.0.1", port, cafile=str(cert))
        assert send(parse_target("mailto:a@example.com", smtp=trusted), ALERT) == "mail to a@example.com"
        with pytest.raises(DeliveryError, match="STARTTLS failed") as err:
            send(parse_target("mailto:a@example.com", smtp=SmtpSettings("127.0.0.1", port)), ALERT)
        assert not err.value.retry
    finally:
        ctl.stop()
    assert over_tls == [True]
