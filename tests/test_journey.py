"""The whole journey in a real browser, as a user does it, with a screenshot of every step.

Home -> open seed 004's example in the Layout Designer -> drag a chip and see the preview change ->
Launch the CPU data_parallel rehearsal on 8 devices (real msrun) -> the Monitor shows eight ranks'
curves growing live -> launch a second run and stop it -> open the generated layout_parallel files.
Screenshots: test-artifacts/journey_*.png.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.run import launch as runs
from core.run.processes import RunProcesses
from tests.browser import (
    VIEWPORT,
    chart_state,
    choose,
    chromium,
    dashboard,
    drag,
    live_chart_frame,
    require_browser,
    shot,
    sortables_frame,
    wait_idle,
)

pytestmark = [pytest.mark.browser, pytest.mark.integration]
ROW0 = re.compile(r"Row 0 of this view lies on ranks: ([0-9, ]+)")


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    require_browser()
    ws = tmp_path / "ws"
    yield ws
    for record in runs.list_runs(ws) if ws.exists() else []:  # never leave a job behind
        if record.is_running:
            runs.stop(record.run_id, ws, grace=5)


def row0(page: Any) -> str:
    caption = page.get_by_text(ROW0).first
    caption.wait_for(timeout=60_000)
    match = ROW0.search(caption.inner_text())
    assert match
    return match.group(1).strip()


def nav(page: Any, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    wait_idle(page)


def pick(page: Any, label: str, option: str) -> None:
    """Choose `option` in the Streamlit selectbox labelled `label`."""
    choose(page, page.get_by_label(label, exact=True), option)


def shown(page: Any) -> dict[str, Any]:
    """What the live chart shows now, from its current frame: while a just-launched run's first ranks appear,
    the page may redraw the chart in a new frame (a kept frame handle then fails as "detached")."""
    return chart_state(live_chart_frame(page, timeout=60))


def set_number(page: Any, label: str, value: str, *, first: bool = False) -> None:
    """Type into the number box `label`; `first` when a later, collapsed expander has one of the same name."""
    box = page.get_by_label(label, exact=True)
    box = box.first if first else box
    box.fill(value)
    box.press("Enter")
    wait_idle(page)


def test_the_whole_journey(workspace: Path) -> None:
    with dashboard(workspace) as url, chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)

        # 1. Home explains itself; open seed 004's example in the designer
        page.goto(url)
        page.get_by_text("Start here").wait_for(timeout=60_000)
        wait_idle(page)
        shot(page, "journey_01_home")
        page.get_by_role("button", name="Open in the Layout Designer").click()
        wait_idle(page)
        assert row0(page) == "0, 4, 2, 6"
        shot(page, "journey_02_designer_seed004", full=True)

        # 2. drag mp off dimension 0 (rows unsplit, replicated over mp): the preview changes
        frame = sortables_frame(page)
        zones = frame.locator(".sortable-container")
        drag(page, frame.locator(".sortable-item", has_text="mp·2"), zones.filter(has_text="Device axes"))
        wait_idle(page)
        page.wait_for_function(
            "() => !document.body.innerText.includes('Row 0 of this view lies on ranks: 0, 4, 2, 6')",
            timeout=30_000,
        )
        assert row0(page).startswith("0, 1, 4, 5"), "each column block is now held by both mp ranks"
        page.get_by_text("Every slice is held by 2 ranks").filter(visible=True).first.wait_for(timeout=30_000)
        shot(page, "journey_03_after_drag", full=True)

        # 3. Launch: the CPU data_parallel rehearsal on 8 devices, for real through msrun
        nav(page, "Launch")
        page.get_by_text("Preflight").wait_for(timeout=120_000)
        assert page.get_by_text("seed004_dense_matmul").count() > 0, "the designer's design reaches Launch"
        pick(page, "Scenario", "Data parallel (seed 001)")
        set_number(page, "Devices", "8")
        # the design's network is tiny (x (8, 4) @ w (4, 8)): enough epochs that it still trains while we watch
        set_number(page, "Epochs", "100")
        page.get_by_role("button", name="Launch", exact=True).click()
        page.get_by_text(re.compile(r"Started run \S+")).wait_for(timeout=120_000)
        first_run = runs.list_runs(workspace)[0]
        assert first_run.status == "running" and first_run.device_num == 8
        shot(page, "journey_04_launched", full=True)

        # 4. Monitor: eight ranks' curves grow live
        page.get_by_role("link", name=f"Watch {first_run.run_id} on the Monitor").click()
        wait_idle(page)
        live_chart_frame(page, timeout=180)
        deadline = time.monotonic() + 240
        state = shown(page)
        while time.monotonic() < deadline:
            state = shown(page)
            if sum(str(name).startswith("rank ") for name in state["traces"]) == 8 and state["points"] >= 40:
                break
            page.wait_for_timeout(1000)
        assert sum(str(name).startswith("rank ") for name in state["traces"]) == 8, state["traces"]
        earlier = state["points"]
        shot(page, "journey_05_monitor_live", full=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and shown(page)["points"] <= earlier:
            page.wait_for_timeout(1000)
        assert shown(page)["points"] > earlier, "the curves did not grow while we watched"

        # 5. a second run, stopped from the Launch page
        nav(page, "Launch")
        page.get_by_text("Preflight").wait_for(timeout=120_000)
        page.get_by_text("Cluster and logging").click()
        # the own-script expander below has a "Master port" too: the generated job's is the first
        set_number(page, "Master port", "8139", first=True)
        page.get_by_role("button", name="Launch", exact=True).click()
        page.get_by_text(re.compile(r"Started run \S+")).wait_for(timeout=120_000)
        second = runs.list_runs(workspace)[0]
        assert second.run_id != first_run.run_id and second.status == "running"
        # the run just started is preselected in the Stop control. Wait until the page shows it: a click while
        # the rerun still shows the stale control sends the value shown then (the first run, if it is still
        # running), and Stop rightly stops what the user saw selected
        wait_idle(page)
        running = page.get_by_label("Running", exact=True)  # the selectbox's input holds the chosen run
        deadline = time.monotonic() + 60
        while running.input_value() != second.run_id and time.monotonic() < deadline:
            page.wait_for_timeout(200)
        assert running.input_value() == second.run_id
        page.get_by_role("button", name="Stop", exact=True).click()
        page.get_by_text(f"{second.run_id} stopped; no process of it is left.").wait_for(timeout=120_000)
        stopped = runs.get_run(second.run_id, workspace)
        assert stopped.status == "stopped" and RunProcesses.of(stopped).live() == []
        assert runs.get_run(first_run.run_id, workspace).status != "stopped"  # never another run
        shot(page, "journey_06_second_run_stopped", full=True)

        # 6. the generated layout_parallel files for the design (Ascend: generated, not runnable here)
        pick(page, "Scenario", "Layout strategies (seed 004)")
        page.get_by_text("Ascend", exact=True).click()
        wait_idle(page)
        page.get_by_text("cannot run here").filter(visible=True).first.wait_for(timeout=30_000)
        code = page.locator('[data-testid="stCode"]').first.inner_text()
        assert 'Layout((2, 2, 2), ("dp", "sp", "mp"))' in code
        assert 'layout("None", ("sp", "dp"))' in code, "the dragged strategy reaches the generated script"
        shot(page, "journey_07_layout_parallel_files", full=True)

        # the first run finishes by itself and is reported as such
        final = runs.wait(first_run.run_id, workspace, timeout=300)
        assert final.status == "succeeded", final
