"""Browser test of the Layout Designer: real Streamlit server, real Chromium, a real drag of an axis chip.

Screenshots of every state worth seeing go to test-artifacts/ (gitignored).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

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
ROW0 = re.compile(r"Row 0 of this view lies on ranks: ([0-9, ]+)")

sync_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():
    pytest.skip("Debian chromium is not installed", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workspace = tmp_path_factory.mktemp("workspace")
    port = _free_port()
    env = {**os.environ, "SHARDSCOPE_WORKSPACE": str(workspace), "PYTHONUNBUFFERED": "1"}
    log = (tmp_path_factory.mktemp("log") / "streamlit.log").open("w")
    argv = [
        sys.executable, "-m", "streamlit", "run", "app/main.py",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("streamlit did not start")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[object]:
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def designer(chromium_browser: object, server: str) -> Iterator[object]:
    ARTIFACTS.mkdir(exist_ok=True)
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.goto(f"{server}/designer")
    pg.get_by_text("Layout Designer", exact=True).first.wait_for(timeout=30_000)
    wait_idle(pg)
    yield pg
    context.close()


def wait_idle(pg: object, timeout: float = 30.0) -> None:
    """Wait until Streamlit has finished the current run (no 'Running...' status widget)."""
    deadline = time.monotonic() + timeout
    pg.wait_for_timeout(300)
    while time.monotonic() < deadline:
        if pg.locator('[data-testid="stStatusWidget"]').count() == 0:
            pg.wait_for_timeout(400)
            if pg.locator('[data-testid="stStatusWidget"]').count() == 0:
                return
        pg.wait_for_timeout(200)
    raise AssertionError("streamlit kept running")


def row0_caption(pg: object) -> str:
    caption = pg.get_by_text(ROW0).first
    caption.wait_for(timeout=30_000)
    return ROW0.search(caption.inner_text()).group(1).strip()


GRID_JS = """() => {
    const plots = [...document.querySelectorAll('.js-plotly-plot')];
    const grid = plots.find(p => p.layout && p.layout.annotations && p.layout.annotations.length);
    return grid ? grid.layout.annotations.map(a => a.text) : null;
}"""


def grid_annotations(pg: object) -> list[str]:
    """Annotation texts of the tensor-grid figure (read from the plotly div once it has rendered)."""
    pg.wait_for_function(f"() => ({GRID_JS})() !== null", timeout=30_000)
    return pg.evaluate(GRID_JS)


def shot(pg: object, name: str, full: bool = False) -> Path:
    path = ARTIFACTS / f"designer_{name}.png"
    if full:
        height = pg.evaluate(
            '() => Math.max(...[...document.querySelectorAll(\'[data-testid="stMain"], section.main, '
            '[data-testid="stAppViewContainer"]\')].map(e => e.scrollHeight), 900)'
        )
        pg.set_viewport_size({"width": 1280, "height": min(int(height) + 40, 4000)})
        pg.wait_for_timeout(800)
        pg.screenshot(path=str(path))
        pg.set_viewport_size({"width": 1280, "height": 900})
        pg.wait_for_timeout(300)
    else:
        pg.screenshot(path=str(path))
    return path


def sortables_frame(pg: object, index: int = 0) -> object:
    frame = pg.frame_locator('iframe[title*="sortable"]').nth(index)
    frame.locator(".sortable-item").first.wait_for(timeout=30_000)
    return frame


def drag(pg: object, source: object, target: object, steps: int = 12) -> None:
    """A real pointer drag: press on the chip, move in small steps, release over the target."""
    source.scroll_into_view_if_needed()
    box = source.bounding_box()
    to = target.bounding_box()
    assert box and to, "chip or drop zone not visible"
    x0, y0 = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    # aim just below the zone's header: zones shrink when a chip leaves, so the bottom edge may move away
    x1, y1 = to["x"] + to["width"] / 2, to["y"] + min(40, to["height"] / 2)
    pg.mouse.move(x0, y0)
    pg.mouse.down()
    pg.mouse.move(x0 + 4, y0 + 4, steps=3)
    pg.mouse.move(x0 + 15, y0 + 15, steps=3)
    for i in range(1, steps + 1):
        pg.mouse.move(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps)
        pg.wait_for_timeout(30)
    pg.mouse.move(x1, y1 + 1, steps=2)
    pg.wait_for_timeout(200)
    pg.mouse.up()


def click_tab(pg: object, name: str) -> None:
    pg.get_by_role("tab", name=name).click()
    pg.wait_for_timeout(600)


def load_example(pg: object, file_name: str) -> None:
    click_tab(pg, "Save / load")
    box = pg.get_by_label("Example")
    box.click()
    pg.get_by_role("option", name=file_name).click()
    wait_idle(pg)
    pg.get_by_role("button", name="Load example").click()
    wait_idle(pg)
    pg.get_by_text(f"Loaded {file_name}").wait_for(timeout=30_000)


def test_seed004_row0_and_real_drag_changes_preview(designer: object) -> None:
    pg = designer
    assert row0_caption(pg) == "0, 4, 2, 6"
    assert grid_annotations(pg)[:4] == ["r0", "r4", "r2", "r6"]
    frame = sortables_frame(pg)
    shot(pg, "01_seed004_tensors")
    shot(pg, "01_seed004_tensors_full", full=True)

    chip = frame.locator(".sortable-item", has_text="dp·2")
    zones = frame.locator(".sortable-container")
    dim0 = zones.filter(has_text="dim 0")
    drag(pg, chip, dim0)
    wait_idle(pg)
    pg.wait_for_function(
        "() => !document.body.innerText.includes('Row 0 of this view lies on ranks: 0, 4, 2, 6')", timeout=30_000
    )
    assert row0_caption(pg) == "0, 2"
    assert grid_annotations(pg)[:2] == ["r0", "r2"]
    # the new iframe shows dp in dim 0
    frame = sortables_frame(pg)
    dim0_items = frame.locator(".sortable-container").filter(has_text="dim 0").locator(".sortable-item")
    assert "dp·2" in dim0_items.all_inner_texts()
    shot(pg, "02_after_drag_dp_to_dim0", full=True)

    # drag it back out to the free axes: dim 0 keeps only mp
    chip = frame.locator(".sortable-item", has_text="dp·2")
    free = frame.locator(".sortable-container").filter(has_text="Device axes")
    drag(pg, chip, free)
    wait_idle(pg)
    pg.wait_for_function("() => document.body.innerText.includes('Every slice is held by 2 ranks')", timeout=30_000)
    shot(pg, "03_dp_back_to_free_replicated", full=True)


def test_load_seed004_example_shows_row0_on_0_4_2_6(designer: object) -> None:
    pg = designer
    load_example(pg, "cluster_128_8x4x4.json")
    click_tab(pg, "Tensors")
    shot(pg, "04_cluster128_tensors", full=True)
    load_example(pg, "seed004_dense_matmul.json")
    click_tab(pg, "Tensors")
    wait_idle(pg)
    assert row0_caption(pg) == "0, 4, 2, 6"
    assert grid_annotations(pg)[:4] == ["r0", "r4", "r2", "r6"]


def test_other_tabs_and_validation_screenshots(designer: object) -> None:
    pg = designer
    click_tab(pg, "Device matrix")
    shot(pg, "05_device_matrix", full=True)
    click_tab(pg, "Operators")
    pg.get_by_text("Implied communication").wait_for(timeout=30_000)
    shot(pg, "06_operators", full=True)
    click_tab(pg, "Save / load")
    shot(pg, "07_save_load")
    # make the design invalid: 16 devices for a 2x2x2 matrix
    click_tab(pg, "Device matrix")
    count = pg.get_by_role("spinbutton", name="Device count")
    count.fill("16")
    count.press("Enter")
    wait_idle(pg)
    pg.get_by_text("spans 8 devices but the job has 16").first.wait_for(timeout=30_000)
    shot(pg, "08_invalid_device_count", full=True)
