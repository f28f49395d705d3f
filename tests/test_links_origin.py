"""Issue 31 items 3 and 4: no write of the product follows a planted link, and only the dashboard's own
pages (its Origin) may use its WebSocket, uploads and other routes.

Item 3: the replay folder was `$TMPDIR/shardscope_replays/<recording>-<YYYYmmdd-HHMMSS>`, reused, and
its files truncated and appended by calls that follow links: a planted `worker_0.log -> FILE` had FILE
overwritten. Item 4: Streamlit accepted an Origin of localhost / 127.0.0.1 / 0.0.0.0 on any port, so a
page served from 127.0.0.1:9999 could open the WebSocket that drives Launch and Stop, and upload.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from app.host_check import LOOPBACK_NAMES, LoopbackHostMiddleware, origin_problem
from core.errors import UserError
from core.logs.live.replay import load_recording, record, replay, synthetic_recording
from core.run.exit_status import write_status
from core.run.registry import RUN_FILE, RunRecord, read_record, write_record
from core.sharding.design import save_design
from core.sharding.edits import default_design
from core.workspace import SETTINGS_FILE, read_settings, remember
from tests.browser import dashboard

REAL_OK = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"
SECRET = b"the victim's own bytes\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_bytes(SECRET)
    return victim


def _recording(tmp_path: Path, rel: str = "worker_0.log") -> Path:
    """A two-line recording holding `rel` (may be below a subfolder)."""
    rec = tmp_path / "rec"
    (rec / rel).parent.mkdir(parents=True, exist_ok=True)
    lines = b"epoch: 1 step: 1, loss is 2.0\nepoch: 1 step: 2, loss is 1.0\n"
    (rec / rel).write_bytes(lines)
    (rec / "timing.json").write_text(json.dumps({"files": {rel: [[0.0, 31], [0.01, len(lines)]]}}))
    return rec


# --- item 3: the replay --------------------------------------------------------------------------------


def test_a_planted_link_in_the_replay_folder_is_never_written_through(tmp_path: Path) -> None:
    """Before: the replay truncated FILE (write_bytes through the link) and appended the recording to it."""
    victim = _victim(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "worker_0.log").symlink_to(victim)
    with pytest.raises(UserError) as caught:
        replay(_recording(tmp_path), out, speed=100.0)
    assert victim.read_bytes() == SECRET
    assert (out / "worker_0.log").is_symlink()
    message = str(caught.value)
    assert "\n" not in message and "worker_0.log" in message and "already exists" in message


def test_a_planted_link_for_a_subfolder_or_the_folder_is_never_written_through(tmp_path: Path) -> None:
    """A log below a folder (mpirun's 1/rank.0/stdout) is created below descriptors opened without following
    a link: a planted `out/1 -> elsewhere` (or `out -> elsewhere`) gets nothing written into elsewhere."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rec = _recording(tmp_path, "1/rank.0/stdout")
    out = tmp_path / "out"
    out.mkdir()
    (out / "1").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError, match="link"):
        replay(rec, out, speed=100.0)
    linked_out = tmp_path / "linked_out"
    linked_out.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError, match="link"):
        replay(rec, linked_out, speed=100.0)
    assert list(elsewhere.iterdir()) == []


def test_a_recording_path_with_dot_dot_is_refused(tmp_path: Path) -> None:
    """`a/../worker_0.log` resolves inside the recording but would climb out of the replay's folder."""
    rec = _recording(tmp_path)
    (rec / "a").mkdir()
    (rec / "timing.json").write_text(json.dumps({"files": {"a/../worker_0.log": [[0, 31]]}}))
    with pytest.raises(ValueError, match="outside the recording"):
        load_recording(rec)


def test_the_monitor_replays_into_a_fresh_private_folder_never_a_planted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `$TMPDIR/shardscope_replays/<name>-<stamp>` was reused; a planted folder of that name (here
    for every second of the next minute) with `worker_0.log -> FILE` had FILE overwritten."""
    from app.monitor import source as monitor_source

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    monkeypatch.setattr(monitor_source, "get_watcher", lambda *_args: None)
    victim = _victim(tmp_path)
    planted = tmp / "shardscope_replays"
    planted.mkdir()
    now = time.time()
    for second in range(60):
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now + second))
        folder = planted / f"dp8-{stamp}"
        folder.mkdir(exist_ok=True)
        (folder / "worker_0.log").symlink_to(victim)
    rec = synthetic_recording(REAL_OK, tmp_path / "recordings" / "dp8", seconds_per_line=0.001).path
    out = monitor_source.start_replay("dp8", rec, 100.0, False, False)
    thread, _stop = monitor_source.replay_sessions()[str(out)]
    thread.join(60)
    assert victim.read_bytes() == SECRET
    assert out.parent == tmp and "dp8" in out.name  # not below the shared, predictable folder
    info = out.lstat()
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    for log in REAL_OK.iterdir():  # the replay still works
        assert (out / log.name).read_bytes() == log.read_bytes()


def test_recordings_replace_planted_links_instead_of_writing_through_them(tmp_path: Path) -> None:
    """Before: `write_bytes` / `write_text` of the recorded logs and timing.json followed a planted link."""
    victim = _victim(tmp_path)
    dst = tmp_path / "rec"
    dst.mkdir()
    for name in ("timing.json", "worker_0.log"):
        (dst / name).symlink_to(victim)
    rec = synthetic_recording(REAL_OK, dst, seconds_per_line=0.001)
    assert victim.read_bytes() == SECRET
    assert not (dst / "timing.json").is_symlink() and rec.files
    assert (dst / "worker_0.log").read_bytes() == (REAL_OK / "worker_0.log").read_bytes()
    live = tmp_path / "live"
    live.mkdir()
    (live / "worker_0.log").write_bytes(b"epoch: 1 step: 1, loss is 1.0\n")
    dst2 = tmp_path / "rec2"
    dst2.mkdir()
    (dst2 / "timing.json").symlink_to(victim)
    stop = threading.Event()
    stop.set()
    record(live, dst2, stop)
    assert victim.read_bytes() == SECRET and json.loads((dst2 / "timing.json").read_text())["version"] == 1


def test_workspace_writes_replace_planted_links(tmp_path: Path) -> None:
    """Designs, settings and run records are written to a fresh temp file and renamed over the name: a link
    planted at the name, or at the old predictable temp name (`x.json.tmp`, `run.json.<pid>.tmp`), is never
    written through."""
    victim = _victim(tmp_path)
    designs = tmp_path / "designs"
    designs.mkdir()
    (designs / "mlp.json").symlink_to(victim)
    (designs / "mlp.json.tmp").symlink_to(victim)
    save_design(default_design(), designs / "mlp.json")
    assert victim.read_bytes() == SECRET and not (designs / "mlp.json").is_symlink()
    assert json.loads((designs / "mlp.json").read_text())["name"] == default_design().name
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / f".{SETTINGS_FILE}.{os.getpid()}").symlink_to(victim)
    remember(ws, "own_python", "/usr/bin/python3")
    assert victim.read_bytes() == SECRET and read_settings(ws) == {"own_python": "/usr/bin/python3"}
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / f"{RUN_FILE}.{os.getpid()}.tmp").symlink_to(victim)
    write_record(RunRecord(run_id="r1", run_dir=run_dir, log_dir=run_dir / "log", command=["true"]))
    assert victim.read_bytes() == SECRET and read_record(run_dir).run_id == "r1"
    status = run_dir / "launcher_exit_code"
    (run_dir / f"launcher_exit_code.{os.getpid()}.tmp").symlink_to(victim)
    write_status(str(status), 3)
    assert victim.read_bytes() == SECRET and status.read_text() == "3\n"


# --- item 4: the Origin check, pure ------------------------------------------------------------------

PORT = 8611
OWN = [f"http://{name}:{PORT}" for name in LOOPBACK_NAMES] + [f"http://LocalHost:{PORT}"]
FOREIGN = [
    f"http://127.0.0.1:{PORT + 1}", "http://127.0.0.1:9999", f"http://0.0.0.0:{PORT}", f"https://127.0.0.1:{PORT}",
    "http://127.0.0.1", f"http://evil.example:{PORT}", f"http://127.0.0.1:{PORT}/", f"http://user@127.0.0.1:{PORT}",
    "null", "", f"ws://127.0.0.1:{PORT}", f"http://127.0.0.1:0{PORT}", f"http://127.0.0.2:{PORT}",
    f"http://localhost.evil.example:{PORT}", f"http://[::2]:{PORT}", f"127.0.0.1:{PORT}", f" http://127.0.0.1:{PORT}",
]  # fmt: skip


@pytest.mark.parametrize("origin", OWN)
def test_the_servers_own_origin_passes(origin: str) -> None:
    assert origin_problem(origin, PORT) is None


@pytest.mark.parametrize("origin", FOREIGN)
def test_any_other_origin_is_refused_in_one_line(origin: str) -> None:
    problem = origin_problem(origin, PORT)
    assert problem and "\n" not in problem and "refused" in problem and f"127.0.0.1:{PORT}" in problem


def test_no_origin_is_left_to_the_host_check_and_https_has_its_own() -> None:
    assert origin_problem(None, PORT) is None  # not a browser's cross-site request
    assert origin_problem(f"https://127.0.0.1:{PORT}", PORT, "https") is None
    assert origin_problem(f"http://127.0.0.1:{PORT}", PORT, "https") is not None
    assert origin_problem("http://localhost", 80) is None and origin_problem("https://localhost", 443, "https") is None


_NAMES = st.sampled_from([*LOOPBACK_NAMES, "LOCALHOST", "0.0.0.0", "127.0.0.2", "evil.example", "[::2]", ""]) | st.text(
    max_size=20
)


@given(st.sampled_from(["http", "https", "HTTP", "ws", "ftp"]), _NAMES, st.none() | st.integers(0, 99_999))
def test_origin_check_accepts_exactly_the_own_scheme_name_and_port(scheme: str, name: str, port: int | None) -> None:
    origin = f"{scheme}://{name}" + ("" if port is None else f":{port}")
    effective = port if port is not None else {"http": 80, "https": 443}.get(scheme.lower())
    own = scheme.lower() == "http" and name.lower() in LOOPBACK_NAMES and effective == PORT
    assert (origin_problem(origin, PORT) is None) == own


@given(st.text(max_size=300))
@example(f"http://127.0.0.1:{PORT}")
@example("0" * 25 + "\x1f" * 8 + "\U00010bb0\U00012544\U0001342f" * 3)
def test_any_text_passes_only_as_an_own_origin_and_is_refused_in_one_bounded_line(origin: str) -> None:
    problem = origin_problem(origin, PORT)
    if problem is None:
        assert origin.lower() in {o.lower() for o in OWN}
    else:
        assert "\n" not in problem and len(problem) < 300


def _through(scope: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """(messages the middleware sent, whether the app behind it was called) for one ASGI scope."""
    sent: list[dict[str, Any]] = []
    called: list[str] = []

    async def inner(scope: Any, _receive: Any, _send: Any) -> None:
        called.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    asyncio.run(LoopbackHostMiddleware(inner)(scope, receive, send))
    return sent, bool(called)


def test_middleware_refuses_a_foreign_origin_before_the_app() -> None:
    from streamlit import config

    port = config.get_option("server.port")
    host = (b"host", f"127.0.0.1:{port}".encode())
    for origin, scheme, allowed in [
        (f"http://127.0.0.1:{port}", "http", True),
        (f"http://localhost:{port}", "ws", True),
        (f"https://127.0.0.1:{port}", "wss", True),  # a TLS server's own pages
        ("http://127.0.0.1:9999", "http", False),
        (f"http://127.0.0.1:{port}", "wss", False),
    ]:
        kind = "websocket" if scheme.startswith("ws") else "http"
        scope = {"type": kind, "scheme": scheme, "headers": [host, (b"origin", origin.encode())]}
        scope["extensions"] = {"websocket.http.response": {}}
        sent, called = _through(scope)
        assert called == allowed, origin
        if not allowed:
            assert sent[0]["status"] == 403 and b"Origin" in sent[1]["body"]
    two = [host, (b"origin", f"http://127.0.0.1:{port}".encode()), (b"origin", b"http://127.0.0.1:9999")]
    sent, called = _through({"type": "http", "scheme": "http", "headers": two})
    assert not called and sent[0]["status"] == 403


# --- item 4: a real server ----------------------------------------------------------------------------


def _request(url: str, path: str, headers: dict[str, str], method: str = "GET", body: bytes = b"") -> tuple[int, str]:
    """One raw request with exactly these headers; (status, body)."""
    port = int(url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        if body or method in ("PUT", "POST"):
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        response = conn.getresponse()
        return response.status, response.read(2000).decode("utf-8", "replace")
    finally:
        conn.close()


def _upgrade(url: str, origin: str, host: str | None = None) -> tuple[int, str]:
    """A WebSocket upgrade of Streamlit's stream, as a page of `origin` opens it."""
    host = host or url.split("://", 1)[1]
    return _request(url, "/_stcore/stream", {
        "Host": host, "Origin": origin, "Upgrade": "websocket", "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Protocol": "streamlit",
    })  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with dashboard(tmp_path_factory.mktemp("workspace")) as url:
        yield url


@pytest.mark.browser
def test_the_websocket_opens_only_for_the_servers_own_origin(server: str) -> None:
    """Before: a page of http://127.0.0.1:9999 got the WebSocket (101) that drives Launch and Stop."""
    port = int(server.rsplit(":", 1)[1])
    for origin in ("http://127.0.0.1:9999", f"http://127.0.0.1:{port + 1}", f"http://0.0.0.0:{port}", "null"):
        status, body = _upgrade(server, origin)
        assert status == 403, (origin, status)
        assert body.count("\n") == 1 and "refused" in body
    for name in ("127.0.0.1", "localhost", "[::1]"):  # a page opened by each loopback name
        assert _upgrade(server, f"http://{name}:{port}", f"{name}:{port}")[0] == 101, name
    assert _upgrade(server, f"http://localhost:{port}")[0] == 101  # Host 127.0.0.1: still this server


def _upload(url: str, origin: str) -> tuple[int, str]:
    """An upload PUT with a valid XSRF cookie and token (the port-agnostic cookie a foreign page can read)."""
    host = url.split("://", 1)[1]
    conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1]), timeout=30)
    conn.request("GET", "/_stcore/health", headers={"Host": host})
    response = conn.getresponse()
    response.read()
    cookie = response.getheader("Set-Cookie", "").split(";", 1)[0]
    conn.close()
    assert cookie.startswith("_streamlit_xsrf=")
    boundary = "shardscope"
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="d.json"\r\n'
            f"Content-Type: application/json\r\n\r\n{{}}\r\n--{boundary}--\r\n").encode()  # fmt: skip
    return _request(url, "/_stcore/upload_file/no-such-session/f1", {
        "Host": host, "Origin": origin, "Cookie": cookie, "X-Xsrftoken": cookie.split("=", 1)[1],
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }, "PUT", body)  # fmt: skip


@pytest.mark.browser
def test_an_upload_from_another_origin_is_refused(server: str) -> None:
    """Before: the foreign page's upload passed the XSRF check and reached the session lookup (400 here, for
    a made-up session; with the session its WebSocket gave it, the upload was taken)."""
    port = int(server.rsplit(":", 1)[1])
    status, body = _upload(server, "http://127.0.0.1:9999")
    assert status == 403 and "Origin 'http://127.0.0.1:9999' refused" in body
    status, body = _upload(server, f"http://localhost:{port}")  # its own page: on to the session lookup
    assert status == 400 and "session" in body.lower()
    for method in ("DELETE", "POST", "OPTIONS", "GET"):
        headers = {"Host": f"127.0.0.1:{port}", "Origin": "http://127.0.0.1:9999"}
        status, _ = _request(server, "/_stcore/upload_file/s/f", headers, method)
        assert status == 403, method


@pytest.mark.browser
def test_in_the_docker_setup_the_hosts_loopback_origin_still_passes(tmp_path: Path) -> None:
    """The image listens on 0.0.0.0 and the host publishes the same port on its loopback (README "Docker"):
    the browser's Origin is http://127.0.0.1:PORT or http://localhost:PORT, which must pass."""
    with dashboard(tmp_path / "ws", address="0.0.0.0") as url:
        port = int(url.rsplit(":", 1)[1])
        for name in ("127.0.0.1", "localhost"):
            assert _upgrade(url, f"http://{name}:{port}", f"{name}:{port}")[0] == 101, name
        assert _upgrade(url, "http://127.0.0.1:9999")[0] == 403
        assert _upgrade(url, f"http://0.0.0.0:{port}")[0] == 403
