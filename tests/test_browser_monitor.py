"""Monitor page in a real browser: curves grow while a writer appends, and the user's zoom survives updates."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
NOISE = (Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok" / "worker_0.log").read_text()

WRITER = r"""
import math, sys, time
from pathlib import Path
root = Path(sys.argv[1]); noise = Path(sys.argv[2]).read_text().splitlines(keepends=True)[:6]
files = [open(root / f"worker_{r}.log", "a", buffering=1) for r in range(4)]
step = 0
end = time.time() + float(sys.argv[3])
while time.time() < end:
    step += 1
    for r, f in enumerate(files):
        f.write(noise[step % len(noise)])
        loss = 2.3 * math.exp(-step / 60) + 0.05 * math.sin(step * (r + 1)) + 0.1 * r
        f.write(f"epoch: {1 + (step - 1) // 50} step: {(step - 1) % 50 + 1}, loss is {loss:.6f}\n")
    time.sleep(0.15)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError("streamlit did not start")


@pytest.fixture
def live_run(tmp_path: Path):
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian chromium at /usr/bin/chromium")
    pytest.importorskip("playwright.sync_api")
    logs = tmp_path / "log_output"
    logs.mkdir()
    noise_file = tmp_path / "noise.log"
    noise_file.write_text(NOISE)
    for r in range(4):
        (logs / f"worker_{r}.log").write_text(NOISE.split("epoch:")[0][:2000])
    ws = tmp_path / "ws"
    ws.mkdir()
    port = _free_port()
    env = dict(os.environ, SHARDSCOPE_WORKSPACE=str(ws), PYTHONUNBUFFERED="1")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(REPO / "app" / "main.py"), "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    writer = None
    try:
        _wait_http(port, server)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(logs), str(noise_file), "90"])
        yield port, logs
    finally:
        for proc in (writer, server):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _chart_frame(page):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for frame in page.frames:
            if "shardscope_live_chart" in frame.url:
                try:
                    if frame.evaluate("() => !!(window.Plotly && document.getElementById('chart').data)"):
                        return frame
                except Exception:  # the frame may still be loading
                    pass
        page.wait_for_timeout(int(0.3 * 1000))
    page.screenshot(path=str(ARTIFACTS / "monitor_failed.png"), full_page=True)
    raise AssertionError(f"the live chart component never rendered; frames: {[f.url for f in page.frames]}")


def _state(frame) -> dict:
    return frame.evaluate("""() => {
        const el = document.getElementById('chart');
        return {updates: +el.dataset.updates, points: +el.dataset.points,
                range: el._fullLayout.xaxis.range.slice(), auto: !!el._fullLayout.xaxis.autorange,
                yrange: el._fullLayout.yaxis.range.slice()};
    }""")


def test_live_curves_grow_and_zoom_survives_updates(live_run) -> None:
    from playwright.sync_api import sync_playwright

    port, logs = live_run
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"http://127.0.0.1:{port}/monitor?logdir={logs}", wait_until="domcontentloaded")
        frame = _chart_frame(page)
        first = _state(frame)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _state(frame)["points"] <= first["points"] + 8:
            page.wait_for_timeout(int(0.3 * 1000))
        grown = _state(frame)
        assert grown["points"] > first["points"], (first, grown)
        assert grown["updates"] > first["updates"]
        page.screenshot(path=str(ARTIFACTS / "monitor_live.png"), full_page=True)

        # drag a zoom box inside the plot area (real mouse moves, like a user)
        box = page.locator("iframe[title*='shardscope_live_chart']").first.bounding_box()
        assert box is not None
        x0, y0 = box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.45
        page.mouse.move(x0, y0)
        page.mouse.down()
        for i in range(1, 11):
            page.mouse.move(x0 + i * box["width"] * 0.02, y0 + i * 8)
        page.mouse.up()
        page.wait_for_timeout(int(0.3 * 1000))
        zoomed = _state(frame)
        assert not zoomed["auto"], zoomed
        assert zoomed["range"] != grown["range"]
        # two more live updates (the writer keeps appending): the zoom must still be there
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _state(frame)["updates"] < zoomed["updates"] + 2:
            page.wait_for_timeout(int(0.2 * 1000))
        after = _state(frame)
        assert after["updates"] >= zoomed["updates"] + 2, (zoomed, after)
        assert after["points"] >= zoomed["points"]
        assert after["range"] == zoomed["range"] and not after["auto"]
        assert after["yrange"] == zoomed["yrange"]
        page.screenshot(path=str(ARTIFACTS / "monitor_zoomed.png"), full_page=True)
        page.get_by_text("Raw log tail").click()
        page.get_by_text("Download all points (CSV)").scroll_into_view_if_needed()
        page.wait_for_timeout(800)
        page.screenshot(path=str(ARTIFACTS / "monitor_bottom.png"))
        browser.close()
