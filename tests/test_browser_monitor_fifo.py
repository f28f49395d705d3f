"""Issue 22 item 2 in a browser: a Monitor session on a folder holding a FIFO beside normal logs
must not blank the other sessions (the watcher registry held its lock while that watcher started,
and the start blocked opening the FIFO), so a second session on another folder keeps drawing."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.browser import NOISE, WRITER, chart_state, chromium, dashboard, live_chart_frame, require_browser, shot

pytestmark = pytest.mark.browser


def test_a_fifo_folder_in_one_session_leaves_another_session_drawing(tmp_path: Path) -> None:
    require_browser()
    fifo_dir, live_dir = tmp_path / "with_fifo", tmp_path / "live"
    fifo_dir.mkdir()
    live_dir.mkdir()
    for r in range(6):  # normal logs, then the FIFO: the read-ahead opened it while worker_5 was read
        (fifo_dir / f"worker_{r}.log").write_text(NOISE)
    fifo = fifo_dir / "worker_6.log"
    os.mkfifo(fifo)
    noise_file = tmp_path / "noise.log"
    noise_file.write_text(NOISE)
    for r in range(4):
        (live_dir / f"worker_{r}.log").write_text(NOISE.split("epoch:")[0][:2000])
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(live_dir), str(noise_file), "120"])
        try:
            first = browser.new_page(viewport={"width": 1280, "height": 900})
            first.goto(f"{url}/monitor?logdir={fifo_dir}", wait_until="domcontentloaded")
            first.wait_for_timeout(4000)  # its watcher is starting (or blocked on the FIFO) now
            second = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
            t0 = time.monotonic()
            second.goto(f"{url}/monitor?logdir={live_dir}", wait_until="domcontentloaded")
            frame = live_chart_frame(second, timeout=90)
            painted = time.monotonic() - t0
            start = chart_state(frame)
            deadline = time.monotonic() + 45
            while time.monotonic() < deadline and chart_state(frame)["updates"] < start["updates"] + 3:
                second.wait_for_timeout(300)
            later = chart_state(frame)
            shot(second, "monitor_fifo_other_session")
            shot(first, "monitor_fifo_session")
            assert later["updates"] >= start["updates"] + 3, (start, later)
            assert later["points"] > start["points"], (start, later)
            print(f"second session painted in {painted:.1f} s while the FIFO folder was open in the first")
        finally:
            writer.terminate()
            writer.wait(10)
            with contextlib.suppress(OSError):  # a reader blocked on the FIFO gets its writer, then EOF
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
