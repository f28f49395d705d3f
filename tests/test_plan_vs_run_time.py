"""Plan vs run on time (issue 33 item 4): a run whose plan is known shows its measured median step beside the
planned one, in `diagnose --json` (`time`) and in the Monitor, with the achieved MFU against the preset's peak."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.cli import diagnose as cli_diagnose
from core.codegen import RunOptions, read_job_plan, write_job
from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.plan.activations import Recompute
from core.plan.explore import apply_recipe
from core.plan.hardware import PRESETS
from core.plan.planned import achieved_time, plan_for_config, plan_for_design
from core.plan.recipes import PlanModel, Recipe
from core.plan.steptime import model_flops_per_step
from core.run.registry import runs_root

REAL = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"
CONFIG = (
    Path(__file__).parent
    / "fixtures"
    / "mindformers"
    / "mindspore-lab__mindformers@v1.3.0__configs__llama2__pretrain_llama2_7b_bf16.yaml"
)
MAIN = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
SMALL = PlanModel(hidden=512, heads=8, ffn=1536, layers=4, vocab=1000, seq=128, kv_heads=None, dtype="float16")


def _diagnose(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli_diagnose.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["diagnose", *argv])
    return args.func(args)


def test_diagnose_json_sets_the_measured_median_step_beside_the_planned(capsys: pytest.CaptureFixture[str]) -> None:
    _diagnose(str(REAL), "--json", "--mindformers-config", str(CONFIG))
    out = json.loads(capsys.readouterr().out)
    plan = plan_for_config(CONFIG)
    measured = diagnose(read_run(REAL)).median_step_time / 1000
    time = out["time"]
    assert time["planned_step_s"] == plan["time"]["step_s"] > 0
    assert time["measured_step_s"] == pytest.approx(measured)
    flops = plan["time"]["model_flops_per_card_step"]
    assert time["achieved_mfu"] == pytest.approx(flops / measured / (PRESETS["atlas-800t-a2"].peak_tflops * 1e12))
    _diagnose(str(REAL), "--mindformers-config", str(CONFIG))
    text = capsys.readouterr().out
    assert f"step time planned: {plan['time']['step_s']:.3g} s (planned on the atlas-800t-a2 preset" in text
    assert f"measured median: {measured:.3g} s" in text


def test_diagnose_without_a_plan_has_no_time_block(capsys: pytest.CaptureFixture[str]) -> None:
    _diagnose(str(REAL), "--json")
    assert "time" not in json.loads(capsys.readouterr().out)


def test_a_planner_design_run_on_cpu_is_planned_on_the_cpu_preset_per_train_py_step(tmp_path: Path) -> None:
    recipe = Recipe(2, 2, 2, True, True, Recompute.SELECTIVE, 4, 1)
    design = apply_recipe(SMALL, recipe)
    plan = plan_for_design(design, "CPU")
    assert plan is not None and plan["time"]["hardware"] == "cpu"
    one_step = Recipe(2, 2, 1, True, True, Recompute.SELECTIVE, 1, 1)  # train.py: one micro-batch, no pipeline
    flops = model_flops_per_step(SMALL, one_step, True) / one_step.devices
    assert plan["time"]["model_flops_per_card_step"] == pytest.approx(flops)
    assert plan_for_design(design, "Ascend")["time"]["hardware"] == "atlas-800t-a2"
    out = write_job(design, RunOptions(device_num=design.device_num, device_target="CPU"), tmp_path / "job")
    assert read_job_plan(out)["time"] == plan["time"]


def test_achieved_time_is_none_without_a_planned_step_and_has_no_mfu_without_a_measure() -> None:
    assert achieved_time(None, 100.0) is None
    assert achieved_time({"memory_bytes": 1}, 100.0) is None
    timed = achieved_time({"time": {"step_s": 2.0, "hardware": "cpu", "source": "x"}}, None)
    assert timed == {
        "planned_step_s": 2.0,
        "measured_step_s": None,
        "achieved_mfu": None,
        "hardware": "cpu",
        "source": "x",
    }


def test_the_monitor_shows_planned_and_measured_step_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = tmp_path / "ws"
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(workspace))
    design = apply_recipe(SMALL, Recipe(2, 2, 1, False, False, Recompute.NONE, 1, 4))
    plan = plan_for_design(design, "CPU")
    run_dir = runs_root(workspace) / "planned"
    shutil.copytree(REAL, run_dir / "log_output")
    record = {
        "run_id": "planned",
        "status": "succeeded",
        "scenario": "semi_auto",
        "started_at": 1.0,
        "ended_at": 2.0,
        "log_dir": "log_output",
        "launcher": "msrun",
        "options": {"plan": plan},
    }
    (run_dir / "run.json").write_text(json.dumps(record))
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page("../pages/monitor.py")
    at.query_params["run"] = "planned"
    at.run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    measured = diagnose(read_run(REAL)).median_step_time / 1000
    assert metrics["planned step"] == f"{plan['time']['step_s']:.3g} s"
    assert metrics["measured median step"] == f"{measured:.3g} s"
    assert metrics["achieved MFU"].endswith("%")
    assert any(c.value.startswith("Planned on the cpu preset") for c in at.caption)
