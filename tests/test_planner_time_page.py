"""Planner page, step time and context parallel (issue 33): the proposal is the shortest step and names it,
switching a time assumption on the page changes the proposal, the 128k Qwen2.5 YAML opens with its cp recipe."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
QWEN_128K = (
    Path(__file__).resolve().parent
    / "fixtures"
    / "mindformers"
    / "mindspore-lab__mindformers@v1.5.0__research__qwen2_5__finetune_qwen25_14b_128k.yaml"
)


@pytest.fixture()
def planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page("../pages/planner.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _proposal(at: AppTest) -> str:
    (text,) = [s.value for s in at.success if s.value.startswith("Proposed:")]
    return text


def test_the_proposal_is_the_shortest_step_and_a_time_assumption_changes_it(planner: AppTest) -> None:
    planner.number_input(key="planner_devices").set_value(16).run()
    planner.number_input(key="planner_batch").set_value(64).run()
    text = _proposal(planner)
    assert "the shortest step that fits" in text and "tokens/s per card" in text and "MFU" in text
    assert "Atlas 800T A2" in text
    planner.slider(key="planner_overlap").set_value(0.0).run()
    exposed = _proposal(planner).split("**")[1]
    planner.slider(key="planner_overlap").set_value(1.0).run()
    assert not planner.exception, planner.exception
    hidden = _proposal(planner).split("**")[1]
    assert exposed != hidden
    planner.selectbox(key="planner_hardware").set_value("h100-sxm").run()
    assert "NVIDIA H100" in _proposal(planner)
    table = planner.dataframe[-2].value  # the recipes table (the why-not table is last)
    assert {"step (s)", "tokens/s/card", "MFU", "cp"} <= set(table.columns)


def test_a_bad_hardware_file_is_one_error_line(planner: AppTest, tmp_path: Path) -> None:
    bad = tmp_path / "card.json"
    bad.write_text('{"name": "x"}')
    planner.selectbox(key="planner_hardware").set_value("custom JSON file").run()
    planner.text_input(key="planner_hardware_file").set_value(str(bad)).run()
    assert not planner.exception, planner.exception
    assert any(e.value == "Cannot read the hardware file: card.json: missing key 'peak_tflops'" for e in planner.error)


def test_the_128k_qwen_yaml_opens_with_its_context_parallel_recipe(planner: AppTest) -> None:
    planner.selectbox(key="planner_source").set_value("a MindFormers YAML").run()
    planner.text_input(key="planner_yaml_path").set_value(str(QWEN_128K)).run()
    assert not planner.exception, planner.exception
    assert not any("context parallel yet" in e.value for e in planner.error)
    texts = [m.value for m in [*planner.success, *planner.error]]
    assert any("runs **dp1 mp2 pp2 cp16-ring os rc-full m64×b1** on 64 cards" in t and "step" in t for t in texts)
    assert planner.selectbox(key="planner_pick").options[0].startswith("dp1 mp2 pp2 cp16-ring")


@pytest.mark.browser
def test_browser_planner_shows_step_time_and_screenshot(tmp_path: Path) -> None:
    """The Planner in a browser: the proposal with its step time, the chart of memory against step time and the
    table's time columns (screenshots test-artifacts/planner_time*.png, looked at)."""
    from tests.browser import VIEWPORT, chromium, dashboard, shot, wait_idle

    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/planner")
        page.get_by_text("Proposed:").wait_for(timeout=90_000)
        assert page.get_by_text("the shortest step that fits", exact=False).count() >= 1
        page.get_by_text("Selected recipe").scroll_into_view_if_needed()
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        wait_idle(page)
        assert page.get_by_text("step time (s) on atlas-800t-a2").count() >= 1  # the chart's y axis
        assert shot(page, "planner_time").stat().st_size > 20_000
        assert shot(page, "planner_time_full", full=True).stat().st_size > 20_000
