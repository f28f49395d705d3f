"""Home page: explains itself in one screen and its three actions lead somewhere real."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.run import launch
from core.run.processes import RunProcesses

MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")


@pytest.fixture(autouse=True)
def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    return tmp_path / "ws"


def _home() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def test_empty_workspace_explains_every_page_and_offers_three_actions() -> None:
    at = _home()
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    for phrase in (
        "drag device axes onto tensor dimensions",
        "launch and stop the job",
        "Live per-rank loss curves",
        "Run the CPU rehearsal",
        "Watch a recorded run",
    ):
        assert phrase in text, phrase
    labels = [b.label for b in at.button]
    assert labels == ["Open in the Layout Designer", "Launch the rehearsal", "Watch the replay"]
    assert not any("Recent runs" in s.value for s in at.subheader)


def test_open_example_puts_it_in_the_designer() -> None:
    at = _home()
    at.selectbox(key="home_example").set_value("seed004_mlp").run()
    assert "MLP" in " ".join(c.value for c in at.caption)
    at.button(key="home_open_example").click().run()
    assert not at.exception, at.exception
    assert at.session_state["design"].name == "seed004_mlp"
    assert at.session_state["designer_version"] >= 1


@pytest.mark.integration
def test_rehearsal_button_launches_a_real_run(_workspace: Path) -> None:
    at = _home()
    at.button(key="home_rehearsal").click().run(timeout=120)
    assert not at.exception, at.exception
    runs = launch.list_runs(_workspace)
    assert len(runs) == 1 and runs[0].scenario == "data_parallel"
    try:
        assert runs[0].status == "running"
    finally:
        stopped = launch.stop(runs[0].run_id, _workspace, grace=10)
    assert stopped.status == "stopped"
    assert RunProcesses.of(stopped).live() == []
