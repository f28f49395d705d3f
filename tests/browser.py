"""Shared pieces of the browser tests: a real dashboard server, Debian Chromium, and what a user does.

Chromium is Debian's /usr/bin/chromium driven by Playwright (never `playwright install`).
Screenshots go to test-artifacts/ (gitignored); look at them.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 900}


def require_browser() -> Any:
    """The Playwright sync API, or skip when Debian chromium / playwright are not installed."""
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian chromium at /usr/bin/chromium (apt-get install chromium)")
    return pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def dashboard(
    workspace: Path, log_file: Path | None = None, extra_env: dict[str, str] | None = None, address: str = "127.0.0.1"
) -> Iterator[str]:
    """`streamlit run app/shardscope_server.py` (the dashboard behind its Host check, as scripts/dashboard.sh
    starts it) on a free port with its own workspace, listening on `address` (0.0.0.0: as in the Docker
    image); yields the base URL (always by 127.0.0.1)."""
    workspace.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "SHARDSCOPE_WORKSPACE": str(workspace), "PYTHONUNBUFFERED": "1", **(extra_env or {})}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    argv = [
        sys.executable, "-m", "streamlit", "run", str(REPO_ROOT / "app" / "shardscope_server.py"),
        "--server.port", str(port), "--server.address", address, "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    log = (log_file or workspace / "streamlit.log").open("w")
    server = subprocess.Popen(
        argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"streamlit exited with {server.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("streamlit did not start within 90 s") from None
                time.sleep(0.3)
        yield url
    finally:
        with suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium with the flags this machine's closed network needs."""
    sync_api = require_browser()
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def wait_idle(page: Any, timeout: float = 60.0) -> None:
    """Wait until Streamlit has finished the current run (no 'Running...' status widget)."""
    deadline = time.monotonic() + timeout
    page.wait_for_timeout(300)
    while time.monotonic() < deadline:
        if page.locator('[data-testid="stStatusWidget"]').count() == 0:
            page.wait_for_timeout(400)
            if page.locator('[data-testid="stStatusWidget"]').count() == 0:
                return
        page.wait_for_timeout(200)
    raise AssertionError("streamlit kept running")


def choose(page: Any, select: Any, option: str, tries: int = 4, idle: bool = True) -> None:
    """Pick `option` in the Streamlit selectbox `select` (a locator), as a user does: once the app is idle,
    open the list and click the visible option. A rerun that lands mid-click closes the list (seen under
    load: the option never appeared in 30 s), so the list is opened again, `tries` times at most. `idle=False`
    for a page that reruns itself every second (the Monitor on a live folder) and is never idle."""
    wanted = page.get_by_role("option", name=option)
    for attempt in range(tries):
        if idle:
            wait_idle(page)
        select.click()
        try:
            wanted.first.wait_for(state="visible", timeout=15_000)
            wanted.first.click()
        except Exception:  # playwright's TimeoutError, or the option detached by a rerun
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")
            continue
        if idle:
            wait_idle(page)
        return


def shot(page: Any, name: str, full: bool = False) -> Path:
    """Screenshot to test-artifacts/NAME.png; `full` grows the viewport to the page's height first."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    if full:
        height = page.evaluate(
            '() => Math.max(...[...document.querySelectorAll(\'[data-testid="stMain"], '
            '[data-testid="stAppViewContainer"]\')].map(e => e.scrollHeight), 900)'
        )
        size = page.viewport_size
        page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 4000)})
        page.wait_for_timeout(800)
        _wait_rendered(page)
        page.screenshot(path=str(path))
        page.set_viewport_size(size)
        page.wait_for_timeout(300)
    else:
        _wait_rendered(page)
        page.screenshot(path=str(path))
    return path


def _wait_rendered(page: Any, timeout_ms: int = 15_000) -> None:
    """Charts redraw after a resize: wait until no element is still a loading skeleton."""
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stSkeleton\"]').length === 0", timeout=timeout_ms
    )
    page.wait_for_timeout(300)


def sortables_frame(page: Any, index: int = 0) -> Any:
    """The streamlit-sortables iframe holding the axis chips."""
    frame = page.frame_locator('iframe[title*="sortable"]').nth(index)
    frame.locator(".sortable-item").first.wait_for(timeout=30_000)
    return frame


def drag(page: Any, source: Any, target: Any, steps: int = 12) -> None:
    """A real pointer drag: press on the chip, move in small steps, release over the target."""
    source.scroll_into_view_if_needed()
    box = source.bounding_box()
    to = target.bounding_box()
    assert box and to, "chip or drop zone not visible"
    x0, y0 = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    # aim just below the zone's header: zones shrink when a chip leaves, so the bottom edge may move away
    x1, y1 = to["x"] + to["width"] / 2, to["y"] + min(40, to["height"] / 2)
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move(x0 + 4, y0 + 4, steps=3)
    page.mouse.move(x0 + 15, y0 + 15, steps=3)
    for i in range(1, steps + 1):
        page.mouse.move(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps)
        page.wait_for_timeout(30)
    page.mouse.move(x1, y1 + 1, steps=2)
    page.wait_for_timeout(200)
    page.mouse.up()


def live_chart_frame(page: Any, timeout: float = 60.0) -> Any:
    """The Monitor's live-chart component frame, once Plotly has drawn into it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for frame in page.frames:
            if "shardscope_live_chart" in frame.url:
                try:
                    if frame.evaluate("() => !!(window.Plotly && document.getElementById('chart').data)"):
                        return frame
                except Exception:  # the frame may still be loading
                    pass
        page.wait_for_timeout(300)
    shot(page, "live_chart_never_rendered", full=True)
    raise AssertionError(f"the live chart component never rendered; frames: {[f.url for f in page.frames]}")


def chart_state(frame: Any) -> dict[str, Any]:
    """What the live chart shows: update count, points, traces, and the axis ranges (the user's zoom)."""
    return frame.evaluate(
        """() => {
        const el = document.getElementById('chart');
        return {updates: +el.dataset.updates, points: +el.dataset.points,
                traces: el.data.map(t => t.name),
                range: el._fullLayout.xaxis.range.slice(), auto: !!el._fullLayout.xaxis.autorange,
                yrange: el._fullLayout.yaxis.range.slice()};
    }"""
    )


# A live msrun run for the Monitor's browser tests: real noise lines, and a writer appending loss lines.
NOISE = (REPO_ROOT / "tests" / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok" / "worker_0.log").read_text()

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
