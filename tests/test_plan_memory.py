"""Plan vs run: MindSpore's device-memory statistic lines, parsed per rank and reported by `diagnose --json`."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.cli import diagnose as cli_diagnose
from core.codegen import RunOptions, read_job_plan, write_job
from core.logs.rows.memory import MIB, MemoryUse, memory_report, parse_memory
from core.plan.activations import Recompute
from core.plan.explore import StructureCache, apply_recipe, evaluate
from core.plan.planned import design_recipe, plan_for_config, plan_for_design
from core.plan.recipes import PlanModel, Recipe, recipe_candidate
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR

REAL = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"
# The block as MindSpore's docs print it (docs "Simulated compilation" / dryrun page, MS_SIMULATION_LEVEL=1,
# GLOG_v=1). The first line's prefix is illustrative, in the format of the real INFO/WARNING lines of
# tests/fixtures/real_msrun_logs (level, module(pid,thread,process):time [file:line] function]).
PREFIX = "[INFO] DEVICE(7587,7f5998a3be40,python):2026-11-22-07:09:00.377.254 [ascend_dynamic_mem_adapter.cc:1] x] "
BLOCK = (
    PREFIX
    + """Device MOC memory size: 65536M
MindSpore Used memory size: 59392M
MindSpore memory base address: 0xffffe9dc1407
Used peak memory usage (without fragments): 23716M
Actual peak memory usage (with fragments): 26244M
"""
)


def test_the_documented_block_parses_in_bytes() -> None:
    use = parse_memory(BLOCK.splitlines())
    assert use == MemoryUse(65536 * MIB, 59392 * MIB, 23716 * MIB, 26244 * MIB)


def test_the_older_hbm_spelling_and_the_last_report_wins() -> None:
    lines = [
        "Device HBM memory size: 62432M",
        "Used peak memory usage (without fragments): 100M",
        "Used peak memory usage (without fragments): 48874M",
    ]
    use = parse_memory(lines)
    assert use is not None and use.device == 62432 * MIB and use.peak == 48874 * MIB and use.actual_peak is None


def test_a_log_without_the_lines_says_none() -> None:
    assert parse_memory(["epoch: 1 step: 1, loss is 2.3", "memory is fine"]) is None
    assert memory_report({0: ["nothing"], 1: BLOCK.splitlines()}) == {
        "1": {"planned": None, "measured": MemoryUse(65536 * MIB, 59392 * MIB, 23716 * MIB, 26244 * MIB).to_dict()}
    }


@given(st.lists(st.text(max_size=80), max_size=20))
def test_any_text_parses_or_gives_none(lines: list[str]) -> None:
    use = parse_memory(lines)
    assert use is None or all(v is None or v % MIB == 0 for v in use.to_dict().values())


def test_diagnose_json_has_measured_memory_per_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "log_output"
    shutil.copytree(REAL, run)
    with (run / "worker_3.log").open("a", encoding="utf-8") as f:
        f.write(BLOCK)
    parser = argparse.ArgumentParser()
    cli_diagnose.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["diagnose", str(run), "--json"])
    args.func(args)
    out = json.loads(capsys.readouterr().out)
    assert out["memory"] == {
        "3": {
            "planned": None,
            "measured": {
                "device_bytes": 65536 * MIB,
                "mindspore_bytes": 59392 * MIB,
                "peak_bytes": 23716 * MIB,
                "actual_peak_bytes": 26244 * MIB,
            },
        }
    }


CONFIG = (
    Path(__file__).parent
    / "fixtures"
    / "mindformers"
    / "mindspore-lab__mindformers@v1.3.0__configs__llama2__pretrain_llama2_7b_bf16.yaml"
)


def _diagnose(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli_diagnose.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["diagnose", *argv])
    return args.func(args)


def test_a_yaml_is_planned_as_the_planner_plans_it() -> None:
    """The figure kept for a run is the Planner's own for the YAML's recipe (`plan --mindformers-config`)."""
    plan = plan_for_config(CONFIG)
    out = subprocess.run(
        [sys.executable, "-m", "core", "plan", "--mindformers-config", str(CONFIG), "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent.parent,
    ).stdout
    want = json.loads(out)["config_recipe"]
    assert plan["memory_bytes"] == want["memory_bytes"] > 0
    assert plan["recipe"].startswith(f"dp{want['dp']} mp{want['mp']} pp{want['pp']}")
    assert "pretrain_llama2_7b_bf16.yaml" in plan["source"]


def test_an_unplannable_yaml_says_why(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n", encoding="utf-8")
    plan = plan_for_config(bad)
    assert plan["memory_bytes"] is None and plan["why"].startswith("bad.yaml: ")
    assert plan_for_config(tmp_path / "missing.yaml")["memory_bytes"] is None


def test_diagnose_pairs_planned_and_measured_memory_per_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "log_output"
    shutil.copytree(REAL, run)
    with (run / "worker_3.log").open("a", encoding="utf-8") as f:
        f.write(BLOCK)
    _diagnose(str(run), "--json", "--mindformers-config", str(CONFIG))
    out = json.loads(capsys.readouterr().out)
    planned = plan_for_config(CONFIG)["memory_bytes"]
    assert out["memory"]["3"]["planned"] == planned and out["memory"]["3"]["measured"]["peak_bytes"] == 23716 * MIB
    assert out["plan"]["recipe"] == plan_for_config(CONFIG)["recipe"]
    _diagnose(str(run), "--mindformers-config", str(CONFIG))
    text = capsys.readouterr().out
    assert f"device memory planned: {planned / (1 << 30):.1f} GiB per card" in text
    assert "device memory measured peak: 23.2 GiB (rank 3) to 23.2 GiB (rank 3) on 1 rank(s)" in text


def test_diagnose_says_when_no_rank_reports_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "log_output"
    shutil.copytree(REAL, run)
    _diagnose(str(run), "--mindformers-config", str(CONFIG))
    assert "no rank's log has MindSpore's memory statistics (printed at INFO level: GLOG_v=1" in capsys.readouterr().out


SMALL = PlanModel(hidden=512, heads=8, ffn=1536, layers=4, vocab=1000, seq=128, kv_heads=None, dtype="float16")


def test_a_planner_made_design_carries_its_plan_into_the_job(tmp_path: Path) -> None:
    """ "New design from this recipe" -> Launch: job.json keeps the planner's memory per card for that recipe
    (the run's record takes it at launch); an edited design's plan no longer applies, and says so."""
    recipe = Recipe(2, 2, 2, True, True, Recompute.SELECTIVE, 4, 1)
    design = apply_recipe(SMALL, recipe)
    assert design_recipe(design) == recipe
    plan = plan_for_design(design)
    want = evaluate(recipe_candidate(SMALL, recipe), SMALL, StructureCache(SMALL), 1 << 40)
    assert plan is not None and plan["memory_bytes"] == want.memory_bytes > 0 and plan["recipe"] == recipe.label()
    out = write_job(design, RunOptions(device_num=design.device_num), tmp_path / "job")
    assert read_job_plan(out) == plan
    edited = replace(design, operators=design.operators[:-1])
    assert plan_for_design(edited) == {
        "memory_bytes": None,
        "why": (
            "the design was edited after the Planner made it (dp2 mp2 pp2 sp os rc-selective m4×b1): "
            "its plan no longer applies"
        ),
    }


def test_a_design_the_planner_did_not_make_has_no_plan(tmp_path: Path) -> None:
    design = load_design(EXAMPLES_DIR / "llama7b_8cards.json")  # a model-library design, not the Planner's
    assert plan_for_design(design) is None
    out = write_job(design, RunOptions(), tmp_path / "job")
    assert read_job_plan(out) is None and "plan" not in json.loads((out / "job.json").read_text())
