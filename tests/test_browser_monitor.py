"""Monitor page in a real browser: curves grow while a writer appends, and the user's zoom survives updates."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.browser import (
    NOISE,
    WRITER,
    chart_state,
    choose,
    chromium,
    dashboard,
    live_chart_frame,
    require_browser,
    shot,
    wait_idle,
)

pytestmark = pytest.mark.browser


@pytest.fixture
def live_run(tmp_path: Path):
    require_browser()
    logs = tmp_path / "log_output"
    logs.mkdir()
    noise_file = tmp_path / "noise.log"
    noise_file.write_text(NOISE)
    for r in range(4):
        (logs / f"worker_{r}.log").write_text(NOISE.split("epoch:")[0][:2000])
    with dashboard(tmp_path / "ws") as url:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(logs), str(noise_file), "90"])
        try:
            yield url, logs
        finally:
            writer.terminate()
            writer.wait(10)


def test_live_curves_grow_and_zoom_survives_updates(live_run) -> None:
    url, logs = live_run
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{url}/monitor?logdir={logs}", wait_until="domcontentloaded")
        frame = live_chart_frame(page)
        first = chart_state(frame)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and chart_state(frame)["points"] <= first["points"] + 8:
            page.wait_for_timeout(int(0.3 * 1000))
        grown = chart_state(frame)
        assert grown["points"] > first["points"], (first, grown)
        assert grown["updates"] > first["updates"]
        shot(page, "monitor_live", full=True)

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
        zoomed = chart_state(frame)
        assert not zoomed["auto"], zoomed
        assert zoomed["range"] != grown["range"]
        # two more live updates (the writer keeps appending): the zoom must still be there
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and chart_state(frame)["updates"] < zoomed["updates"] + 2:
            page.wait_for_timeout(int(0.2 * 1000))
        after = chart_state(frame)
        assert after["updates"] >= zoomed["updates"] + 2, (zoomed, after)
        assert after["points"] >= zoomed["points"]
        assert after["range"] == zoomed["range"] and not after["auto"]
        assert after["yrange"] == zoomed["yrange"]
        shot(page, "monitor_zoomed", full=True)
        page.get_by_text("Raw log tail").click()
        page.get_by_text("Download all points (CSV)").scroll_into_view_if_needed()
        page.wait_for_timeout(800)
        shot(page, "monitor_bottom")


def test_1024_rank_monitor_names_the_straggler_and_the_failed_rank(tmp_path: Path) -> None:
    """1,024 synthetic ranks: the first screen (no scrolling) says which rank failed first, which hung
    and which straggles; the aggregate chart and the heatmap are drawn from bounded grids."""
    require_browser()
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "synth_logs", Path(__file__).resolve().parent.parent / "benchmarks" / "synth_logs.py"
    )
    synth = importlib.util.module_from_spec(spec)
    sys.modules["synth_logs"] = synth
    spec.loader.exec_module(synth)
    logs = tmp_path / "log_output"
    synth.write_run(logs, 1024, 200, straggler=341, hung=512, crashed=[683], noise_per_step=3, steps_per_epoch=20)
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.monotonic()
        page.goto(f"{url}/monitor?logdir={logs}", wait_until="domcontentloaded")
        page.get_by_text("Ranks to look at").wait_for(timeout=60_000)
        live_chart_frame(page)
        first_paint = time.monotonic() - t0
        reading = page.get_by_text("Reading the logs already written")  # the page paints while it reads
        deadline = time.monotonic() + 120
        while reading.count() and time.monotonic() < deadline:
            page.wait_for_timeout(250)
        assert reading.count() == 0, "the logs were not read to the end within 2 minutes"
        wait_idle(page)
        page.wait_for_timeout(1500)
        shot(page, "monitor_1024_ranks")
        look = page.locator('[data-testid="stDataFrame"]').first
        box = look.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 1000, box  # visible without scrolling
        strip = page.get_by_text("failed first").first
        assert strip.is_visible()
        body = page.inner_text("body")
        assert "rank 683 failed first" in body.replace("*", "") or "683" in body
        assert "hung: 512" in body and "341 (1.6" in body
        print(f"first paint of the 1,024-rank Monitor: {first_paint:.1f} s")
        shot(page, "monitor_1024_ranks_full", full=True)


FORMATS_DIR = Path(__file__).parent / "fixtures" / "logs" / "formats"


@pytest.mark.browser
def test_real_mindformers_run_and_the_metric_picker(tmp_path: Path) -> None:
    """Issue 18: the Monitor on a real MindFormers 2.1.0 run (64 loss lines behind `[INFO] <date> [...]`), then
    the metric picker drawing `per_step_time` instead of the loss. Screenshots: test-artifacts/."""
    require_browser()
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{url}/monitor?logdir={FORMATS_DIR / 'mindformers_2x'}", wait_until="domcontentloaded")
        frame = live_chart_frame(page)
        assert chart_state(frame)["points"] >= 64
        shot(page, "monitor_mindformers_real", full=True)
        choose(page, page.get_by_role("combobox", name="Metric"), "per_step_time (step_time_ms)", idle=False)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "step_time_ms" not in str(
            frame.evaluate("() => document.getElementById('chart').layout.yaxis.title.text")
        ):
            page.wait_for_timeout(300)
            frame = live_chart_frame(page)
        assert frame.evaluate("() => document.getElementById('chart').layout.yaxis.title.text") == "step_time_ms"
        shot(page, "monitor_metric_picker", full=True)


def test_one_untagged_stream_of_eight_ranks_is_explained(tmp_path: Path) -> None:
    """MindAudio's `mpirun -n 8` stream (mindspore-lab/mindaudio#105): eight loss lines of step 402 with no rank
    tag are drawn as rank 0 with eight points at one step; the page says why in one line above the chart.
    Screenshot: test-artifacts/monitor_untagged_stream.png."""
    require_browser()
    import shutil

    logs = Path(
        shutil.copytree(
            Path(__file__).parent / "fixtures" / "real_logs" / "lossmonitor-8-ranks-one-stream_mindaudio-105" / "log",
            tmp_path / "log",
        )
    )
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{url}/monitor?logdir={logs}", wait_until="domcontentloaded")
        said = page.get_by_text("several ranks seem to write one untagged stream")
        said.wait_for(timeout=60_000)
        frame = live_chart_frame(page)
        assert chart_state(frame)["points"] > 0  # the rows are drawn (as one rank), and said why
        wait_idle(page)
        assert said.is_visible() and "repeats step 402 8 times with different losses" in said.inner_text()
        shot(page, "monitor_untagged_stream", full=True)
