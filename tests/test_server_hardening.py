"""The dashboard's server refuses what a hostile page or user could use against it (issue 22).

A foreign Host header (DNS rebinding) on any HTTP route or WebSocket upgrade; an upload bigger than a
design; a planted chart component folder in $TMPDIR; a container running as root; and, on the Launch
page, a job folder whose files the user edited.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from streamlit import config
from streamlit.testing.v1 import AppTest

from app.host_check import LoopbackHostMiddleware, host_problem, split_host
from app.monitor import chart as live_chart
from core.plan.mfconfig import MAX_CONFIG_BYTES
from core.sharding.design import MAX_DESIGN_BYTES
from core.sharding.edits import default_design
from core.workspace import EXAMPLES_DIR, REPO_ROOT
from tests.browser import VIEWPORT, chromium, dashboard, require_browser, shot, wait_idle

PORT = 8611
GOOD_HOSTS = ["127.0.0.1", "localhost", "[::1]", f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}",
              f"LocalHost:{PORT}"]  # fmt: skip
BAD_HOSTS = [f"evil.example:{PORT}", "evil.example", f"127.0.0.1:{PORT + 1}", f"localhost.evil.example:{PORT}",
             f"127.0.0.1.nip.io:{PORT}", f"[::2]:{PORT}", "[::1", f"[::1]x:{PORT}", f"localhost:{PORT}:{PORT}",
             "localhost:", "0.0.0.0", f"127.0.0.2:{PORT}", f"user@localhost:{PORT}", "::1", " localhost"]  # fmt: skip


# --- the Host check itself ------------------------------------------------------------------------


@pytest.mark.parametrize("host", GOOD_HOSTS)
def test_loopback_hosts_pass(host: str) -> None:
    assert host_problem(host, PORT) is None


@pytest.mark.parametrize("host", BAD_HOSTS)
def test_other_hosts_are_refused_in_one_line(host: str) -> None:
    problem = host_problem(host, PORT)
    assert problem and "\n" not in problem and "127.0.0.1, localhost or [::1]" in problem


def test_a_missing_host_is_refused() -> None:
    assert host_problem(None, PORT) == host_problem("", PORT) == "the request has no Host header"


@given(st.text(max_size=300))
@example(host="0" * 25 + "\x1f" * 8 + "\U00010bb0\U00012544\U00012544\U0001342f" * 3)  # escapes: 300 characters
def test_host_check_accepts_exactly_a_loopback_name_and_this_port(host: str) -> None:
    problem = host_problem(host, PORT)
    parts = split_host(host)
    expected_ok = (
        parts is not None
        and parts[0].lower() in {"127.0.0.1", "localhost", "[::1]"}
        and (parts[1] in (None, str(PORT)))
    )
    assert (problem is None) == expected_ok
    if problem is not None:
        assert "\n" not in problem and len(problem) < 300  # one bounded line, whatever was sent


@given(st.sampled_from(["127.0.0.1", "localhost", "[::1]"]), st.integers(1, 65535))
def test_only_the_configured_port_passes(name: str, port: int) -> None:
    assert (host_problem(f"{name}:{port}", PORT) is None) == (port == PORT)


def _through_middleware(scope: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """(messages the middleware sent, whether the app behind it was called) for one ASGI scope."""
    sent: list[dict[str, Any]] = []
    called = []

    async def inner(scope: Any, _receive: Any, _send: Any) -> None:
        called.append(scope["type"])

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    asyncio.run(LoopbackHostMiddleware(inner)(scope, receive, send))
    return sent, bool(called)


def test_middleware_refuses_before_the_app_and_passes_lifespan() -> None:
    port = config.get_option("server.port")
    evil = [(b"host", f"evil.example:{port}".encode())]
    sent, called = _through_middleware({"type": "http", "headers": evil})
    assert not called and sent[0]["status"] == 403 and b"refused" in sent[1]["body"]
    extensions = {"websocket.http.response": {}}
    sent, called = _through_middleware({"type": "websocket", "headers": evil, "extensions": extensions})
    assert not called and sent[0]["type"] == "websocket.http.response.start" and sent[0]["status"] == 403
    sent, called = _through_middleware({"type": "websocket", "headers": evil})  # a server without the extension
    assert not called and sent == [{"type": "websocket.close", "code": 1008, "reason": sent[0]["reason"]}]
    two = [(b"host", f"127.0.0.1:{port}".encode()), (b"host", f"evil.example:{port}".encode())]
    sent, called = _through_middleware({"type": "http", "headers": two})  # which one would the app believe?
    assert not called and sent[0]["status"] == 403
    assert _through_middleware({"type": "lifespan"}) == ([], True)
    for host in (f"127.0.0.1:{port}", "localhost", f"[::1]:{port}"):
        assert _through_middleware({"type": "http", "headers": [(b"host", host.encode())]}) == ([], True)


# --- a real server: every route, HTTP and WebSocket --------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with dashboard(tmp_path_factory.mktemp("workspace")) as url:
        yield url


def _request(url: str, path: str, headers: dict[str, str], method: str = "GET") -> tuple[int, str]:
    """One raw request with exactly these headers (http.client would add its own Host)."""
    port = int(url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read(2000).decode("utf-8", "replace")
    finally:
        conn.close()


def _upgrade(url: str, host: str) -> tuple[int, str]:
    """A WebSocket upgrade of Streamlit's stream with this Host and the Origin a rebinding page would send."""
    return _request(url, "/_stcore/stream", {
        "Host": host, "Origin": f"http://{host}", "Upgrade": "websocket", "Connection": "Upgrade",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Protocol": "streamlit",
    })  # fmt: skip


ROUTES = ["/", "/_stcore/health", "/_stcore/host-config", "/monitor", "/static/index.html", "/media/x.png",
          "/component/shardscope_live_chart/index.html", "/_stcore/metrics", "/app/static/x"]  # fmt: skip


@pytest.mark.browser
def test_a_foreign_host_is_refused_on_every_http_route_and_websocket(server: str) -> None:
    """Before: `Host: evil.example:PORT` with a matching Origin got 200 and a WebSocket 101."""
    port = server.rsplit(":", 1)[1]
    evil = f"evil.example:{port}"
    for path in ROUTES:
        for method in ("GET", "POST", "OPTIONS"):
            status, body = _request(server, path, {"Host": evil, "Origin": f"http://{evil}"}, method)
            assert status == 403, (path, method, status)
            assert body.count("\n") == 1 and f"Host '{evil}' refused" in body
    status, body = _request(server, "/_stcore/upload_file/s/f", {"Host": evil, "Content-Length": "0"}, "PUT")
    assert status == 403
    status, body = _upgrade(server, evil)
    assert status == 403 and f"Host '{evil}' refused" in body
    for host in (f"127.0.0.1:{int(port) + 1}", f"localhost.evil.example:{port}"):
        assert _upgrade(server, host)[0] == 403
        assert _request(server, "/_stcore/health", {"Host": host})[0] == 403


@pytest.mark.browser
def test_two_host_headers_or_none_are_refused(server: str) -> None:
    port = int(server.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("GET", "/_stcore/health", skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{port}")
    conn.putheader("Host", f"evil.example:{port}")
    conn.endheaders()
    assert conn.getresponse().status in (400, 403)  # refused by Uvicorn or by us, never served
    conn.close()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"GET /_stcore/health HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 403") and b"no Host header" in reply


@pytest.mark.browser
def test_loopback_hosts_are_served_http_and_websocket(server: str) -> None:
    port = server.rsplit(":", 1)[1]
    for host in ("127.0.0.1", f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert _request(server, "/_stcore/health", {"Host": host}) == (200, "ok"), host
        status, body = _request(server, "/", {"Host": host})
        assert status == 200 and "<html" in body.lower()
        assert _upgrade(server, f"127.0.0.1:{port}")[0] == 101


def test_the_dashboard_started_without_the_host_check_says_so(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path))
    at = AppTest.from_file(str(REPO_ROOT / "app" / "main.py"), default_timeout=90)
    at.run()
    assert any("without the loopback Host check" in w.value and "dashboard.sh" in w.value for w in at.sidebar.warning)


# --- uploads: the design limit, not Streamlit's 200 MB ----------------------------------------------


def test_upload_limit_is_the_design_limit() -> None:
    """server.maxUploadSize is the smallest that still fits a 1 MiB design (the only upload) in the browser,
    which counts an MB as 10**6 bytes (the server: 2**20)."""
    config = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text())
    limit_mb = config["server"]["maxUploadSize"]
    assert limit_mb * 10**6 >= MAX_DESIGN_BYTES > (limit_mb - 1) * 10**6
    uploaders = [p for p in (REPO_ROOT / "pages").rglob("*.py") if "file_uploader(" in p.read_text()]
    uploaders += [p for p in (REPO_ROOT / "app").rglob("*.py") if "file_uploader(" in p.read_text()]
    # a new upload must be checked against this limit: designs (1 MiB) and MindFormers YAMLs (1 MiB) fit it
    assert sorted(str(p.relative_to(REPO_ROOT)) for p in uploaders) == ["app/designer/files.py", "pages/planner.py"]
    assert limit_mb * 10**6 >= MAX_CONFIG_BYTES


def test_the_server_watches_no_source_file() -> None:
    """Not a development server: no reload on save, and no watch of the imported modules' files (after every
    script run Streamlit resolved the paths of all ~3,000 modules on its event loop, which held back a
    1,024-rank Monitor's first paint)."""
    server = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text())["server"]
    assert server["fileWatcherType"] == "none"
    assert server["runOnSave"] is False


def _design_bytes(size: int) -> bytes:
    """A valid design padded (JSON whitespace) to exactly `size` bytes."""
    text = (EXAMPLES_DIR / "data_parallel_8.json").read_bytes().rstrip()
    return text + b" " * (size - len(text) - 1) + b"\n"


@pytest.mark.browser
def test_an_upload_over_the_design_limit_is_refused_by_the_server(server: str, tmp_path: Path) -> None:
    """A 1 MiB design loads; a bigger file is refused by the browser, and a direct PUT of it gets 413 before
    being held (before: the 200 MB default let it through to the page's own design check)."""
    require_browser()
    ok, big = tmp_path / "ok.json", tmp_path / "big.json"
    ok.write_bytes(_design_bytes(MAX_DESIGN_BYTES))  # exactly the limit still loads
    big.write_bytes(_design_bytes(3 * MAX_DESIGN_BYTES))
    with chromium() as browser:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        uploads: list[Any] = []
        page.on("request", lambda r: uploads.append(r) if "/_stcore/upload_file/" in r.url else None)
        page.goto(f"{server}/designer")
        wait_idle(page)
        assert page.get_by_text("Started without the loopback Host check").count() == 0  # served behind it
        page.get_by_role("tab", name="Save / load").click()
        chooser = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
        chooser.set_input_files(str(ok))
        page.get_by_text("Loaded ok.json").first.wait_for(timeout=60_000)
        wait_idle(page)
        assert uploads, "the browser never uploaded the design"
        put = uploads[-1]
        chooser.set_input_files(str(big))
        page.get_by_text("File must be 2.0MB or smaller.").first.wait_for(timeout=30_000)
        shot(page, "upload_over_design_limit", full=True)
        assert page.get_by_text("a design file may be at most").count() == 0  # refused before the page saw it
        # the same upload sent past the browser (a script): the server refuses it, not the page after 2 MB
        headers = {k: v for k, v in put.headers.items() if k.lower() in ("x-xsrftoken", "cookie")}
        boundary = "----shardscope"
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.json\"\r\n"
                "Content-Type: application/json\r\n\r\n").encode()  # fmt: skip
        body = head + big.read_bytes() + f"\r\n--{boundary}--\r\n".encode()
        response = context.request.put(put.url, data=body, headers={
            **headers, "Content-Type": f"multipart/form-data; boundary={boundary}"})  # fmt: skip
        assert response.status == 413, response.status
        small = body.replace(big.read_bytes(), ok.read_bytes())
        response = context.request.put(put.url, data=small, headers={
            **headers, "Content-Type": f"multipart/form-data; boundary={boundary}"})  # fmt: skip
        assert response.status == 204  # the same request at the limit is accepted: the 413 is the size
        context.close()


# --- the chart component's folder -------------------------------------------------------------------


def test_chart_folder_is_private_and_a_planted_folder_is_never_used(tmp_path: Path, monkeypatch: Any) -> None:
    """Before: `$TMPDIR/shardscope_live_chart_<tag>` (tag from public versions) was served if it existed."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    html = (live_chart.CHART_ASSETS / "index.html").read_bytes()
    bundle = live_chart.plotly_bundle()
    tag = hashlib.sha1(html + plotly.__version__.encode() + bundle.name.encode()).hexdigest()[:12]
    planted = tmp_path / f"shardscope_live_chart_{tag}"
    planted.mkdir()
    (planted / "index.html").write_text("<script>steal()</script>")
    (planted / "plotly.min.js").write_text("steal()")
    live_chart.build_dir.cache_clear()
    try:
        build = live_chart.build_dir()
        assert build.parent == tmp_path and build != planted
        assert stat.S_IMODE(build.stat().st_mode) == 0o700 and build.stat().st_uid == os.getuid()
        (served,) = build.glob("plotly-*.min.js")  # named by its hash (app/bundle_cache.py)
        assert (build / "index.html").read_bytes() == html.replace(b"./plotly.min.js", f"./{served.name}".encode())
        assert served.read_bytes() == bundle.read_bytes()
        assert sorted(p.name for p in build.iterdir()) == sorted(["index.html", served.name])
        live_chart.build_dir.cache_clear()
        assert live_chart.build_dir() != build  # another process gets its own folder, never a shared name
    finally:
        live_chart.build_dir.cache_clear()
    assert (planted / "index.html").read_text() == "<script>steal()</script>"  # not used, not touched


def test_chart_folders_of_exited_processes_are_removed_and_nothing_else(tmp_path: Path) -> None:
    """A server stopped by SIGTERM never runs atexit: the next one removes its folder, and only such folders."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"shardscope_live_chart_{dead.pid}_abc"
    live = tmp_path / f"shardscope_live_chart_{os.getpid()}_abc"
    old_style = tmp_path / "shardscope_live_chart_0df01c8e8205"  # the old fixed name: not ours to judge
    link = tmp_path / f"shardscope_live_chart_{dead.pid}_link"
    for folder in (stale, live, old_style):
        folder.mkdir()
        (folder / "index.html").write_text("x")
    link.symlink_to(live)
    assert live_chart.remove_stale_build_dirs(tmp_path) == [stale]
    assert not stale.exists() and (live / "index.html").exists() and old_style.exists() and link.is_symlink()


# --- the container ---------------------------------------------------------------------------------


def _dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (REPO_ROOT / "Dockerfile").read_text())
    rows = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(row.split(None, 1)[0].upper(), row.split(None, 1)[1] if " " in row else "") for row in rows]


def test_dockerfile_runs_the_server_as_a_non_root_user_owning_the_workspace() -> None:
    steps = _dockerfile()
    users = [i for i, (op, _) in enumerate(steps) if op == "USER"]
    assert users, "no USER: the dashboard would run as root"
    user = steps[users[-1]][1].split(":")[0]
    assert user not in {"root", "0"}
    last = users[-1]
    assert not any(op == "RUN" for op, _ in steps[last:]), "a RUN after USER would need root again"
    assert any(op == "RUN" and "useradd" in arg and user in arg for op, arg in steps[:last])
    workspace = next(m.group(1) for op, arg in steps if (m := re.search(r"SHARDSCOPE_WORKSPACE=(\S+)", arg)))
    assert any(op == "RUN" and "chown" in arg and user in arg and workspace in arg for op, arg in steps[:last])
    cmd = json.loads(next(arg for op, arg in steps if op == "CMD"))
    assert cmd[:3] == ["streamlit", "run", "app/shardscope_server.py"]  # behind the Host check


def _docker_works() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.integration
def test_docker_image_runs_as_non_root() -> None:
    if not _docker_works():
        pytest.skip("needs a running Docker daemon (`docker info` fails here)")
    subprocess.run(["docker", "build", "-t", "shardscope-test", str(REPO_ROOT)], check=True, timeout=1800)
    uid = subprocess.run(["docker", "run", "--rm", "shardscope-test", "id", "-u"], capture_output=True, text=True,
                         check=True, timeout=120).stdout.strip()  # fmt: skip
    assert uid != "0"
    touch = ["docker", "run", "--rm", "shardscope-test", "sh", "-c", "touch /app/workspace/x && ! touch /app/x"]
    assert subprocess.run(touch, timeout=120).returncode == 0  # workspace writable, the code is not


# --- the Launch page never overwrites an edited job file without asking ------------------------------


def test_launch_page_names_an_edited_job_file_and_asks_before_replacing_it(tmp_path: Path, monkeypatch: Any) -> None:
    ws = tmp_path / "ws"
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    design = default_design()  # what the Launch page starts from (the shared design's default)
    job = ws / "jobs" / f"{design.name}-data_parallel"
    job.mkdir(parents=True)
    (job / "train.py").write_text("# my own training script\n")
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "launch.py"), default_timeout=120)
    at.run()
    assert not at.exception
    assert any("train.py" in w.value and "replace" in w.value for w in at.warning)
    assert at.checkbox(key="launch_overwrite").value is False
    at.button(key="check_button").click().run()
    assert any("Cannot write the job" in e.value and "train.py" in e.value for e in at.error)
    assert (job / "train.py").read_text() == "# my own training script\n"
    assert not (job / "run.sh").exists()
