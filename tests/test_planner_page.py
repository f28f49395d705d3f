"""Planner page (Streamlit AppTest): renders the trade-off, proposes a recipe, Apply makes it the current design."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.sharding.design import Design

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")


@pytest.fixture()
def planner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page("../pages/planner.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_page_renders_chart_table_proposal_and_what_is_counted(planner: AppTest) -> None:
    assert planner.title[0].value == "Planner"
    assert any("Proposed:" in s.value for s in planner.success)
    assert planner.get("plotly_chart")
    assert len(planner.dataframe) >= 3  # selected-recipe breakdown, all recipes, why not
    labels = [m.label for m in planner.metric]
    assert labels[:2] == ["recipes", "valid"]
    text = " ".join(m.value for m in planner.markdown)
    assert "Not counted" in text and "fragmentation" in text
    assert any("parallel_config:" in c.value for c in planner.code)


def test_apply_makes_the_recipe_the_current_design(planner: AppTest) -> None:
    planner.number_input(key="planner_devices").set_value(4).run()
    planner.number_input(key="planner_batch").set_value(8).run()
    assert not planner.exception, planner.exception
    pick = planner.selectbox(key="planner_pick")
    chosen = pick.options[0]
    planner.button(key="planner_apply").click().run()
    assert not planner.exception, planner.exception
    design = planner.session_state["design"]
    assert isinstance(design, Design) and design.repeat is not None
    dp = int(chosen.split()[0].removeprefix("dp"))
    mp = int(chosen.split()[1].removeprefix("mp"))
    assert design.device_num == dp * mp
    assert planner.session_state["designer_version"] >= 1
    assert any("Current design" in s.value for s in planner.success)


def test_the_applied_design_is_what_launch_generates(planner: AppTest) -> None:
    planner.number_input(key="planner_devices").set_value(4).run()
    planner.button(key="planner_apply").click().run()
    name = planner.session_state["design"].name
    planner.switch_page("../pages/launch.py")
    planner.run()
    assert not planner.exception, planner.exception
    assert any(f"Design **{name}** · 4 devices" in c.value for c in planner.caption)
    assert any("The network is the design itself" in c.value for c in planner.caption)


def test_absurd_layers_is_one_error_line_not_an_exception(planner: AppTest) -> None:
    planner.number_input(key="planner_layers@LLaMA-2 7B").set_value(1_000_000_000_000).run()
    assert not planner.exception, planner.exception
    assert any("layers 1,000,000,000,000 is more than the 100,000" in e.value for e in planner.error)


def test_custom_card_memory_is_bounded(planner: AppTest) -> None:
    planner.segmented_control(key="planner_card_preset").set_value("custom").run()
    box = planner.number_input(key="planner_card_custom")
    assert box.max == 65536.0
    box.set_value(1e308).run()
    assert not planner.exception, planner.exception


def test_not_fitting_model_says_so(planner: AppTest) -> None:
    planner.selectbox(key="planner_source").set_value("LLaMA-2 70B").run()
    planner.number_input(key="planner_devices").set_value(8).run()
    planner.segmented_control(key="planner_card_preset").set_value("32 GB").run()
    assert not planner.exception, planner.exception
    assert any("No recipe fits in 32 GB" in e.value for e in planner.error)


@pytest.mark.browser
def test_browser_planner_chart_apply_and_screenshot(tmp_path: Path) -> None:
    """A user opens the Planner, sees the Pareto chart, applies the proposal; the sidebar shows the new design."""
    from tests.browser import VIEWPORT, chromium, dashboard, shot, wait_idle

    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/planner")
        page.get_by_text("Proposed:").wait_for(timeout=90_000)
        page.get_by_text("Selected recipe").scroll_into_view_if_needed()  # charts render once on screen
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        assert page.get_by_text("card memory 64 GiB").count() >= 1
        yaml_before = page.locator("[data-testid='stCode']").first.inner_text()
        table = page.locator("[data-testid='stDataFrame']").nth(1)  # 0: the selected recipe's breakdown
        table.scroll_into_view_if_needed()
        code = page.locator("[data-testid='stCode']").first
        for _attempt in range(3):  # the grid is a canvas: a click before it has drawn its rows selects nothing
            box = table.bounding_box()
            page.mouse.click(box["x"] + 14, box["y"] + 35 + 2 * 35 + 17)  # the third row's selection box
            wait_idle(page)
            deadline = time.time() + 20
            while code.inner_text() == yaml_before and time.time() < deadline:
                page.wait_for_timeout(250)
            if code.inner_text() != yaml_before:
                break
        assert code.inner_text() != yaml_before  # its YAML now
        page.get_by_role("button", name="Apply: make it the current design").click()
        # the message, not the Apply button ("... the current design", still drawn while a loaded page reruns)
        page.get_by_text(re.compile(r"^Current design ")).wait_for(timeout=60_000)
        wait_idle(page)
        assert page.get_by_text("Design: **", exact=False).count() == 0  # markdown rendered, not raw
        assert page.locator("[data-testid='stSidebar']").get_by_text("llama_").count() >= 1
        path = shot(page, "planner", full=True)
        assert path.stat().st_size > 20_000


def test_after_apply_the_current_designs_model_is_offered(planner: AppTest) -> None:
    planner.number_input(key="planner_devices").set_value(4).run()
    planner.button(key="planner_apply").click().run()
    planner.run()
    assert not planner.exception, planner.exception
    source = planner.selectbox(key="planner_source")
    assert source.options[0] == "the current design's model"
    source.set_value("the current design's model").run()
    assert not planner.exception, planner.exception
    assert planner.number_input(key="planner_hidden@the current design's model").value == 4096


FIXTURES = Path(__file__).resolve().parent / "fixtures" / "mindformers"


def _open_yaml(planner: AppTest, part: str) -> None:
    (path,) = [p for p in FIXTURES.glob("*.yaml") if part in p.name]
    planner.selectbox(key="planner_source").set_value("a MindFormers YAML").run()
    planner.text_input(key="planner_yaml_path").set_value(str(path)).run()
    assert not planner.exception, planner.exception


def test_a_mindformers_yaml_gives_its_recipe_marked_choices_and_second_opinion(planner: AppTest) -> None:
    _open_yaml(planner, "llama2_70b_bf16_64p")
    assert any(
        "runs **dp2 mp4 pp8 sp os rc-selective m256×b1** on 64 cards" in s.value and "fits" in s.value
        for s in planner.success
    )
    pick = planner.selectbox(key="planner_pick")
    assert pick.options[pick.index].startswith("dp2 mp4 pp8 sp os rc-selective m256×b1")  # starts on the YAML's
    frames = [d.value for d in planner.dataframe]
    tables = [t.value for t in planner.table]
    choices = next(f for f in tables if "choice" in f.columns)
    assert dict(zip(choices["choice"], choices["value"], strict=True))["embedding"] == "split"
    assert "vocab_emb_dp: False" in " ".join(choices["from"])
    assert any("Megatron-LM (GiB)" in f.columns for f in tables)
    assert any("counted as" in f.columns for f in tables)
    assert any("YAML" in f.columns and (f["YAML"] == "◆").sum() == 1 for f in frames)
    assert any("vocab_emb_dp: False" in c.value for c in planner.code)  # the export keeps the YAML's choice


def test_new_design_from_this_config(planner: AppTest) -> None:
    _open_yaml(planner, "pretrain_llama2_7b")
    planner.button(key="planner_yaml_apply").click().run()
    assert not planner.exception, planner.exception
    design = planner.session_state["design"]
    assert isinstance(design, Design) and design.device_num == 8 and design.repeat.count == 32


def test_a_bad_yaml_path_is_one_error(planner: AppTest, tmp_path: Path) -> None:
    planner.selectbox(key="planner_source").set_value("a MindFormers YAML").run()
    planner.text_input(key="planner_yaml_path").set_value(str(tmp_path)).run()
    assert not planner.exception, planner.exception
    assert any("Cannot read the YAML" in e.value and "is a folder, not a regular" in e.value for e in planner.error)


def test_switching_a_choice_changes_the_estimate(planner: AppTest) -> None:
    def memory() -> list[float]:
        table = next(d.value for d in planner.dataframe if "memory/card (GiB)" in d.value.columns)
        return sorted(table["memory/card (GiB)"])

    before = memory()
    planner.selectbox(key="planner_choice_attention_scores@bfloat16").set_value("flash").run()
    assert not planner.exception, planner.exception
    after = memory()
    assert len(after) == len(before) and sum(after) < sum(before)  # the scores are no longer stored


@pytest.mark.browser
def test_browser_planner_with_a_mindformers_yaml_and_screenshots(tmp_path: Path) -> None:
    """A user opens a real MindFormers YAML by path: its recipe is marked and fits, the choices table and the
    Megatron-LM second opinion are on the page (screenshots in test-artifacts/)."""
    from tests.browser import VIEWPORT, choose, chromium, dashboard, shot, wait_idle

    (path,) = [p for p in FIXTURES.glob("*.yaml") if "llama2_70b_bf16_64p" in p.name]
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{url}/planner")
        page.get_by_text("Proposed:").wait_for(timeout=90_000)
        choose(page, page.locator("[data-testid='stSelectbox']").first, "a MindFormers YAML")
        box = page.get_by_label("…or its path on this machine")
        box.wait_for(timeout=30_000)
        box.fill(str(path))
        box.press("Enter")
        page.get_by_text("runs dp2 mp4 pp8 sp os rc-selective m256×b1 on 64 cards").wait_for(timeout=90_000)
        wait_idle(page)
        assert page.get_by_text("fits.", exact=False).count() >= 1
        assert shot(page, "planner_yaml_top").stat().st_size > 20_000
        page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
        page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        wait_idle(page)
        assert page.get_by_text("YAML", exact=True).count() >= 1
        assert shot(page, "planner_yaml_opened", full=True).stat().st_size > 20_000
        page.get_by_text("Modelling choices", exact=False).first.scroll_into_view_if_needed()
        assert shot(page, "planner_choices").stat().st_size > 10_000
        page.get_by_text("Second opinion: Megatron-LM").scroll_into_view_if_needed()
        wait_idle(page)
        assert shot(page, "planner_second_opinion").stat().st_size > 10_000
