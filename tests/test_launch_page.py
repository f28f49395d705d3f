"""Launch page: AppTest (options, errors as messages, diff, preflight, runs) and one browser screenshot."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.design_state import DESIGN_KEY
from core.codegen import RunOptions, write_job
from core.run.launch import launch, wait
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR, REPO_ROOT, remember
from tests.browser import chromium, dashboard, free_port, shot

PAGE = str(REPO_ROOT / "pages" / "launch.py")


@pytest.fixture()
def page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    at = AppTest.from_file(PAGE, default_timeout=120)
    # a free master port: the default 8118 may be another run's on this machine, and preflight would rightly
    # disable Launch (seen when the suite ran beside another test run)
    at.session_state["launch_port"] = free_port()
    at.run()
    return at


def test_defaults_render_a_runnable_cpu_job(page: AppTest) -> None:
    assert not page.exception and not page.error
    assert page.title[0].value == "Launch"
    codes = [c.value for c in page.code]
    assert any("DATA_PARALLEL" in c for c in codes) and any(c.startswith("#!/usr/bin/env bash") for c in codes)
    assert any("MindSpore" in m.value and "check_circle" in m.value for m in page.markdown)
    assert not page.button(key="launch_button").disabled


def test_cpu_semi_auto_is_explained_not_crashed(page: AppTest) -> None:
    page.selectbox(key="launch_scenario").set_value("layout_parallel").run()
    assert not page.exception
    assert any("data-parallel mode only" in e.value for e in page.error)


def test_ascend_target_says_it_cannot_run_here_and_shows_a_diff(page: AppTest) -> None:
    page.selectbox(key="launch_scenario").set_value("multi_copy").run()
    page.radio(key="launch_target").set_value("Ascend").run()
    assert not page.exception and not page.error
    assert any("no Ascend devices" in i.value for i in page.info)
    assert page.button(key="launch_button").disabled  # preflight: no npu-smi here
    diffs = [c.value for c in page.code if c.language == "diff"]
    assert diffs and any(line.startswith("+") and 'ms.set_device("Ascend")' in line for line in diffs[0].splitlines())


def test_a_scenarios_own_fields_are_asked_and_reach_train_py(page: AppTest) -> None:
    """The pipeline scenario's fields (Scenario.fields) appear only for it and end up in the generated job."""
    assert "launch_stages" not in _keys(page)  # data_parallel, the default, has no pipeline fields
    page.session_state[DESIGN_KEY] = load_design(EXAMPLES_DIR / "llama_tiny_cpu.json")  # has a repeat block
    page.selectbox(key="launch_scenario").set_value("sapp_pipeline").run()
    page.radio(key="launch_target").set_value("Ascend").run()
    page.number_input(key="launch_micro").set_value(8).run()
    page.checkbox(key="launch_hsdp").uncheck().run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    assert {"launch_stages", "launch_micro", "launch_recompute", "launch_hsdp"} <= _keys(page)
    train_py = next(c.value for c in page.code if "def run():" in c.value)
    assert "Pipeline(NetWithLoss(net), 8, stage_config=stage_config)" in train_py
    assert "parallel_net.hsdp()" not in train_py
    page.selectbox(key="launch_scenario").set_value("multi_copy").run()
    assert "launch_inter" in _keys(page) and "launch_stages" not in _keys(page)


def _keys(page: AppTest) -> set[str]:
    return {w.key for w in [*page.number_input, *page.checkbox] if w.key}


def test_bad_input_is_an_error_message(page: AppTest) -> None:
    page.text_input(key="launch_addr").set_value("127.0.0.1; rm -rf /").run()
    assert not page.exception
    assert any("master address" in e.value for e in page.error)


def test_runs_are_listed_with_monitor_links(page: AppTest, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    job = write_job(load_design(EXAMPLES_DIR / "data_parallel_8.json"), RunOptions(master_port=9555), tmp_path / "j")
    (job / "run.sh").write_text("exit 0\n")
    launch(job, ws, name="listed")
    wait("listed", ws, timeout=30)
    page.run()
    frame = page.dataframe[0].value
    assert list(frame["Run"]) == ["listed"] and "succeeded" in frame["Status"][0]
    assert frame["Monitor"][0] == "/monitor?run=listed"


@pytest.mark.browser
def test_screenshot(tmp_path: Path) -> None:
    with dashboard(tmp_path / "ws") as url, chromium() as browser:
        tab = browser.new_page(viewport={"width": 1280, "height": 1500})
        tab.goto(f"{url}/launch")
        tab.get_by_text("Preflight").wait_for(timeout=90_000)
        tab.get_by_text("Runs", exact=True).wait_for(timeout=30_000)
        tab.wait_for_timeout(2500)
        shot(tab, "launch_page")
        assert tab.locator("text=Traceback").count() == 0


def test_check_on_cpu_trains_the_design_for_real(page: AppTest) -> None:
    """The button writes the job and runs its train.py --check: 2 real steps of the design's network."""
    page.radio(key="launch_target").set_value("Ascend").run()
    page.button(key="check_button").click().run()
    assert not page.exception
    passed = [s.value for s in page.success if "Check passed" in s.value]
    assert passed and "losses" in passed[0] and "CHECK PASSED" in passed[0]
    # a different job (another scenario) hides the stale result instead of showing it as its own
    page.selectbox(key="launch_scenario").set_value("multi_copy").run()
    assert not [s for s in page.success if "Check passed" in s.value]


def test_own_script_interpreter_field_is_remembered_per_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(tmp_path / "ws", "own_python", "/opt/train/bin/python")
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    page = AppTest.from_file(PAGE, default_timeout=120)
    page.run()
    assert page.text_input(key="own_python").value == "/opt/train/bin/python"
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    page.text_input(key="own_script").set_value(str(script)).run()
    assert any("Python interpreter /opt/train/bin/python does not exist" in e.value for e in page.error)
    page.text_input(key="own_python").set_value(sys.executable).run()
    assert not page.error, [e.value for e in page.error]
    shown = [str(m.value) for m in [*page.markdown, *page.caption]]
    assert any(f"in {sys.executable}" in m and "mindspore" in m for m in shown), shown
