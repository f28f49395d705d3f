"""The design is the model, in a real browser: a LLaMA-style decoder from the model library ->
its attention operators previewed in the Layout Designer -> Launch -> "Check on CPU" green.
Screenshots: test-artifacts/model_*.png (look at them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser import VIEWPORT, choose, chromium, dashboard, require_browser, shot, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.integration]


def nav(page: Any, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    wait_idle(page)


def fill(page: Any, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True).first
    box.fill(value)
    box.press("Enter")
    wait_idle(page)


def test_model_library_decoder_to_a_green_cpu_check(tmp_path: Path) -> None:
    require_browser()
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url)
        wait_idle(page, 120)
        nav(page, "Layout Designer")
        page.get_by_text("New design from a model").filter(visible=True).first.click()
        wait_idle(page)
        for label, value in {
            "hidden": "64",
            "heads": "8",
            "kv_heads": "4",
            "ffn": "128",
            "seq": "16",
            "batch": "8",
            "layers": "2",
            "vocab": "128",
            "dp": "2",
            "mp": "4",
        }.items():
            fill(page, label, value)
        shot(page, "model_01_new_design_form", full=True)
        page.get_by_role("button", name="Create design").click()
        wait_idle(page, 120)
        page.get_by_role("tab", name="Operators").click()
        wait_idle(page)
        ops = page.locator('[data-testid="stRadio"]').filter(has_text="Operators (in order)")
        ops.get_by_text("scores · BatchMatMul × 2").filter(visible=True).first.wait_for(timeout=60_000)
        listing = ops.inner_text()
        for op_type in ("Gather", "RMSNorm × 2", "Softmax × 2", "Transpose × 2", "Reshape", "SiLU × 2"):
            assert op_type in listing, op_type
        ops.get_by_text("attn_out · MatMul × 2").filter(visible=True).first.click()  # the row-split output projection
        wait_idle(page)
        shot(page, "model_02_decoder_attention_in_designer", full=True)
        assert "AllReduce" in page.locator('[data-testid="stMain"]').inner_text()
        nav(page, "Launch")
        choose(page, page.get_by_label("Scenario", exact=True), "Layout strategies (seed 004)")
        page.get_by_text("Ascend", exact=True).filter(visible=True).first.click()
        wait_idle(page)
        page.get_by_role("button", name="Check on CPU").click()
        wait_idle(page, 300)
        verdict = page.locator('[data-testid="stAlert"]').filter(has_text="Check passed in")
        verdict.first.wait_for(timeout=300_000)  # the train.py panel also says CHECK PASSED: wait for the alert
        wait_idle(page, 120)
        verdict.first.scroll_into_view_if_needed()
        shot(page, "model_03_check_on_cpu_green", full=True)
        text = verdict.first.inner_text()
        assert "CHECK PASSED" in text and "2 layer(s)" in text and "losses" in text
