"""Browser test of the Layout Designer: real Streamlit server, real Chromium, a real drag of an axis chip.

Screenshots of every state worth seeing go to test-artifacts/ (gitignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import VIEWPORT, choose, chromium, dashboard, drag, require_browser, sortables_frame, wait_idle
from tests.browser import shot as _shot

pytestmark = pytest.mark.browser
ROW0 = re.compile(r"Row 0 of this view lies on ranks: ([0-9, ]+)")
require_browser()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with dashboard(tmp_path_factory.mktemp("workspace")) as url:
        yield url


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Any]:
    with chromium() as browser:
        yield browser


@pytest.fixture
def designer(chromium_browser: Any, server: str) -> Iterator[Any]:
    context = chromium_browser.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.goto(f"{server}/designer")
    pg.get_by_text("Layout Designer", exact=True).filter(visible=True).first.wait_for(timeout=30_000)
    wait_idle(pg)
    yield pg
    context.close()


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


def shot(pg: Any, name: str, full: bool = False) -> Path:
    return _shot(pg, f"designer_{name}", full)


def click_tab(pg: object, name: str) -> None:
    pg.get_by_role("tab", name=name).click()
    pg.wait_for_timeout(600)


def load_example(pg: object, file_name: str) -> None:
    click_tab(pg, "Save / load")
    choose(pg, pg.get_by_label("Example"), file_name)
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
    pg.get_by_text("spans 8 devices but the job has 16").filter(visible=True).first.wait_for(timeout=30_000)
    shot(pg, "08_invalid_device_count", full=True)


def test_attention_block_operators_and_fields(designer: object) -> None:
    """The Transformer example: the operator list says × 2 layers, Transpose shows its perm, Softmax its axis."""
    pg = designer
    load_example(pg, "attention_block.json")
    click_tab(pg, "Operators")
    pg.get_by_text("qt · Transpose × 2").filter(visible=True).first.click()
    wait_idle(pg)
    perm = pg.get_by_role("textbox", name="perm", exact=True)
    perm.wait_for(timeout=30_000)
    assert perm.input_value() == "0, 2, 1, 3"
    shot(pg, "09_attention_transpose", full=True)
    pg.get_by_text("attn · MatMul × 2").filter(visible=True).first.click()
    wait_idle(pg)
    # The collective's heading, not the first match: that is the data grid's hidden accessibility cell.
    pg.get_by_text("AllReduce", exact=True).filter(visible=True).first.wait_for(timeout=30_000)
    shot(pg, "10_attention_row_split_allreduce", full=True)
