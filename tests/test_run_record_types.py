"""Issue 32 item 2: a typed run record, the Planner's recipe a typed field of the design, typed statuses and roles.

The run.json files under tests/fixtures/run_records/ were written by the release at commit a7af0f3 (its own
`RunRecord` builders and `write_record`; see that folder's README): a generated run, a Planner design's run,
an own script under msrun and under Slurm, a MindFormers own script with a plan, and a watched folder.
"""

from __future__ import annotations

import json
import math
import shutil
import typing
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.run.planned as run_planned
from core.codegen import RunOptions
from core.logs.bytes.discover import LogFile, LogRole, discover
from core.plan.activations import Recompute
from core.plan.explore import apply_recipe
from core.plan.planned import design_recipe, plan_for_design
from core.plan.recipes import PlanModel, Recipe
from core.run.record_types import (
    OWN_KEYS,
    BadValue,
    OwnRun,
    PlannedRun,
    PlannedTime,
    options_from_json,
    options_to_json,
)
from core.run.registry import (
    RunKind,
    RunRecord,
    RunStatus,
    read_record,
    record_end,
    runs_root,
    scan_runs,
    write_record,
)
from core.sharding.design import DesignError, PlannerRecipe, dumps_design, loads_design

FIXTURES = Path(__file__).parent / "fixtures" / "run_records"
SMALL = PlanModel(hidden=512, heads=8, ffn=1536, layers=4, vocab=1000, seq=128, kv_heads=None, dtype="float16")


def _install(ws: Path, fixture: str) -> tuple[Path, dict]:
    """The release's run.json placed in a workspace's runs/<run_id>/, as that release left it."""
    data = json.loads((FIXTURES / f"{fixture}.json").read_text(encoding="utf-8"))
    run_dir = runs_root(ws) / data["run_id"]
    run_dir.mkdir(parents=True)
    shutil.copyfile(FIXTURES / f"{fixture}.json", run_dir / "run.json")
    return run_dir, data


# --- records of the previous release ------------------------------------------------------------


def _expect_generated(rec: RunRecord) -> None:
    assert rec.kind == RunKind.GENERATED and rec.own is None and rec.plan is None and rec.join
    assert rec.options == RunOptions(device_num=8)


def _expect_planner(rec: RunRecord) -> None:
    assert rec.own is None and rec.options.device_num == 4
    assert rec.plan == PlannedRun(
        memory_bytes=44463104,
        model_state_bytes=39219200,
        activation_bytes=5243904,
        recipe="dp2 mp2 pp2 sp os rc-selective m4×b1",
        peak_stage=0,
        source="planned from the Planner's design llama_dp2_mp2_pp2_sp "
        "(dp2 mp2 pp2 sp os rc-selective m4×b1; the busiest pipeline stage)",
    )


def _expect_own_msrun(rec: RunRecord) -> None:
    assert rec.kind == RunKind.OWN and rec.plan is None and rec.options.device_num == 4
    assert rec.own == OwnRun("/home/user/train/train.py", ("--epochs", "2"), "/home/user/venv/bin/python", join=False)
    assert not rec.join


def _expect_own_slurm(rec: RunRecord) -> None:
    assert rec.own == OwnRun("/home/user/train/train.py") and rec.join and rec.plan is None
    opts = rec.options
    assert (opts.launcher, opts.device_num, opts.local_worker_num, opts.slurm_partition) == ("slurm", 16, 8, "gpu")
    assert (opts.slurm_time, opts.slurm_gres, rec.slurm_job_id) == ("01:00:00", "gpu:8", "123456")


def _expect_own_mindformers(rec: RunRecord) -> None:
    assert rec.own is not None and rec.own.script.endswith("run_mindformer.py") and rec.own.args[0] == "--config"
    assert rec.plan is not None and rec.plan.memory_bytes == 42623923200 and rec.plan.recipe == "dp8 mp1 pp1 os m8×b1"
    assert rec.plan.time is None  # that release planned no step time


def _expect_watched(rec: RunRecord) -> None:
    assert rec.kind == RunKind.EXTERNAL and rec.log_dir == Path("/data/cluster/logs")
    assert (rec.options, rec.own, rec.plan) == (RunOptions(), None, None)


EXPECT = {
    "generated_msrun": _expect_generated,
    "planner_design": _expect_planner,
    "own_msrun": _expect_own_msrun,
    "own_slurm": _expect_own_slurm,
    "own_mindformers": _expect_own_mindformers,
    "watched_folder": _expect_watched,
}


def test_the_fixtures_are_every_record_of_the_previous_release() -> None:
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == sorted(EXPECT)


@pytest.mark.parametrize("fixture", list(EXPECT))
def test_a_record_of_the_previous_release_loads_typed_and_writes_back_readable(tmp_path: Path, fixture: str) -> None:
    run_dir, original = _install(tmp_path / "ws", fixture)
    record = read_record(run_dir)
    assert isinstance(record.options, RunOptions)
    EXPECT[fixture](record)
    write_record(record)
    written = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    if fixture == "watched_folder":  # that release kept {} for a watched folder's options: now the defaults
        assert {**written, "options": {}} == original and written["options"] == RunOptions().to_dict()
    else:  # the same object, key for key: an older dashboard sharing the workspace still reads it
        assert written == original
    assert read_record(run_dir) == record
    assert scan_runs(tmp_path / "ws").lines == []


def test_the_plan_a_record_keeps_is_found_by_its_log_folder(tmp_path: Path) -> None:
    """`diagnose` finds a run's plan by its log folder, in the planner's own form."""
    run_dir, original = _install(tmp_path / "ws", "planner_design")
    found = run_planned.plan_for_log_dir(tmp_path / "ws", run_dir / "log_output")
    assert found == original["options"]["plan"]
    assert run_planned.plan_for_log_dir(tmp_path / "ws", tmp_path / "elsewhere") is None


def test_the_dead_copy_of_plan_for_config_is_gone() -> None:
    assert not hasattr(run_planned, "plan_for_config")


# --- malformed typed fields: one line, the other runs listed -----------------------------------

BAD_OPTIONS = {
    "a count as text": ('{"device_num": "8"}', "device_num is int"),
    "a worker count as true": ('{"local_worker_num": true}', "local_worker_num is int or NoneType"),
    "an infinite rate": ('{"learning_rate": Infinity}', "learning_rate is finite"),
    "join as text": ('{"script": "t.py", "join": "yes"}', "join is true or false"),
    "an argument as a number": ('{"script": "t.py", "args": [1]}', "args is text"),
    "a plan as text": ('{"plan": "big"}', "plan is an object"),
    "a memory as a fraction": ('{"plan": {"memory_bytes": 1.5}}', "memory_bytes is an integer"),
    "a step time as text": ('{"plan": {"memory_bytes": 1, "time": {"step_s": "fast"}}}', "time.step_s is a finite"),
    "options as a list": ("[1, 2]", "not an object of at most"),
}


@pytest.mark.parametrize("case", list(BAD_OPTIONS))
def test_a_malformed_options_own_or_plan_is_one_line_and_the_others_stay_listed(tmp_path: Path, case: str) -> None:
    ws = tmp_path / "ws"
    _install(ws, "generated_msrun")
    text, why = BAD_OPTIONS[case]
    bad = runs_root(ws) / "bad"
    bad.mkdir()
    (bad / "run.json").write_text('{"run_id": "bad", "status": "succeeded", "options": ' + text + "}")
    listing = scan_runs(ws)
    assert [r.run_id for r in listing.records] == ["20261120-101500-generated"]
    [line] = listing.lines
    assert line.startswith("not read: runs/bad/run.json: has options ") and why in line and "\n" not in line


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)
FINITE_JSON = st.recursive(  # what a design file may hold (its reader refuses NaN and Infinity as not JSON)
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
    max_leaves=8,
)
OPTION_KEYS = st.sampled_from([*RunOptions().to_dict(), *OWN_KEYS, "plan", "unknown"])
PLAN = st.fixed_dictionaries(
    {},
    optional={
        "memory_bytes": st.none() | st.integers(0, 2**50) | JSON,
        "recipe": st.text(max_size=10) | JSON,
        "why": st.text(max_size=10),
        "time": st.fixed_dictionaries({"step_s": st.floats() | JSON}, optional={"hardware": st.text(max_size=5)}),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(OPTION_KEYS, JSON, max_size=6), st.none() | PLAN)
def test_any_options_object_is_three_typed_values_or_one_bad_value(raw: dict, plan: dict | None) -> None:
    """Whatever an options object holds, it reads as (RunOptions, OwnRun | None, PlannedRun | None) that write
    back and read again unchanged, or one BadValue; never another exception."""
    if plan is not None:
        raw["plan"] = plan
    try:
        typed = options_from_json(raw)
    except BadValue as exc:
        assert str(exc).startswith("not ") and "\n" not in str(exc)
        return
    options, own, planned = typed
    assert isinstance(options, RunOptions) and (own is None) == (not any(k in raw for k in OWN_KEYS))
    assert options_from_json(json.loads(json.dumps(options_to_json(*typed)))) == typed
    if planned is not None and planned.time is not None:
        assert math.isfinite(planned.time.step_s)


def test_a_plan_without_a_step_time_and_one_with_it_keep_their_form() -> None:
    timed = {"memory_bytes": 5, "recipe": "dp1", "time": {"step_s": 0.5, "hardware": "cpu", "peak_tflops": 1.0}}
    plan = PlannedRun.from_json(timed)
    assert plan.time == PlannedTime(step_s=0.5, hardware="cpu", peak_tflops=1.0)
    assert plan.to_json()["time"]["step_s"] == 0.5
    assert PlannedRun.from_json({"memory_bytes": 5, "time": {}}).to_json() == {"memory_bytes": 5}
    refused = {"memory_bytes": None, "why": "x.yaml: cannot plan"}
    assert PlannedRun.from_json(refused).to_json() == refused


def test_an_own_script_run_with_join_false_says_the_workers_codes_are_unknown(tmp_path: Path) -> None:
    """`--join=False` is read from the typed own-run part (it was options.get("join"))."""
    rec = RunRecord("r", tmp_path, tmp_path, kind=RunKind.OWN, own=OwnRun("t.py", join=False))
    record_end(rec, [0])
    assert rec.status == RunStatus.SUCCEEDED and "--join=False" in rec.message
    plain = RunRecord("p", tmp_path, tmp_path, own=OwnRun("t.py"))
    record_end(plain, [0])
    assert plain.message == ""


# --- the Planner's recipe is a field of the design ---------------------------------------------


def test_a_planner_design_keeps_its_recipe_as_a_field_through_its_file() -> None:
    recipe = Recipe(2, 2, 2, True, True, Recompute.SELECTIVE, 4, 1)
    design = apply_recipe(SMALL, recipe)
    assert design.planner_recipe == PlannerRecipe(2, 2, 2, 4, 1, True, True, "selective")
    text = dumps_design(design)
    assert json.loads(text)["planner_recipe"] == {
        "dp": 2,
        "mp": 2,
        "pp": 2,
        "micro_batches": 4,
        "micro_batch_size": 1,
        "sp": True,
        "optimizer_shard": True,
        "recompute": "selective",
    }
    again = loads_design(text)
    assert again == design and design_recipe(again) == recipe
    plan = plan_for_design(again)
    assert plan is not None and plan["recipe"] == recipe.label()


def test_the_plan_comes_from_the_field_not_the_description() -> None:
    """The description's sentence is for people: without the field there is no plan (older Planner files);
    with the field and any description the plan is found."""
    design = apply_recipe(SMALL, Recipe(2, 2, 1, False, False, Recompute.NONE, 1, 4))
    assert "Planner recipe dp2 mp2 pp1" in design.description
    assert plan_for_design(replace(design, planner_recipe=None)) is None
    assert plan_for_design(replace(design, description="renamed by hand"))["memory_bytes"] > 0  # type: ignore[index]


BAD_RECIPES = {
    "a recompute it does not know": ({"recompute": "most"}, '$.planner_recipe.recompute: unknown recompute "most"'),
    "sp as text": ({"sp": "yes"}, "$.planner_recipe.sp: expected true or false"),
    "no pipeline stages": ({"pp": 0}, "$.planner_recipe.pp: 0 is out of range"),
    "a missing dp": ({"dp": None}, "$.planner_recipe.dp: expected a whole number"),
    "an unknown key": ({"cp": 2}, "$.planner_recipe.cp: unknown field"),
}


@pytest.mark.parametrize("case", list(BAD_RECIPES))
def test_a_malformed_planner_recipe_is_named_by_its_path(case: str) -> None:
    data = json.loads(dumps_design(apply_recipe(SMALL, Recipe(2, 2, 1, False, False, Recompute.NONE, 1, 4))))
    change, said = BAD_RECIPES[case]
    data["planner_recipe"] = {k: v for k, v in {**data["planner_recipe"], **change}.items() if v is not None}
    with pytest.raises(DesignError) as err:
        loads_design(json.dumps(data))
    assert said in str(err.value)


RECIPE_INTS = ("dp", "mp", "pp", "micro_batches", "micro_batch_size")
NEAR_RECIPES = st.fixed_dictionaries(
    {key: st.integers(-1, 1 << 30) for key in RECIPE_INTS},
    optional={"sp": st.booleans() | FINITE_JSON, "recompute": st.sampled_from(["none", "full", "most"]) | FINITE_JSON},
)


@settings(max_examples=200, deadline=None)
@given(NEAR_RECIPES | st.dictionaries(st.sampled_from([*RECIPE_INTS, "sp", "recompute", "x"]), FINITE_JSON))
def test_any_planner_recipe_is_a_design_or_a_design_error(value: dict) -> None:
    data = json.loads(dumps_design(apply_recipe(SMALL, Recipe(2, 2, 1, False, False, Recompute.NONE, 1, 4))))
    data["planner_recipe"] = value
    try:
        design = loads_design(json.dumps(data))
    except DesignError as exc:
        assert all(p.path.startswith("$.planner_recipe") for p in exc.problems)
        return
    kept = design.planner_recipe
    assert kept is not None and min(kept.dp, kept.mp, kept.pp, kept.micro_batches, kept.micro_batch_size) >= 1


# --- typed statuses and roles ------------------------------------------------------------------


def test_a_monitor_source_status_is_a_run_status() -> None:
    from app.monitor.source import Source

    assert typing.get_type_hints(Source)["status"] == RunStatus | None


def test_a_log_file_role_is_an_enum_that_still_reads_as_its_word(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text("epoch: 1 step: 1, loss is 2.0\n")
    (tmp_path / "scheduler.log").write_text("scheduler\n")
    roles = {f.rel: f.role for f in discover(tmp_path).files}
    assert roles == {"worker_0.log": LogRole.WORKER, "scheduler.log": LogRole.SCHEDULER}
    assert all(type(role) is LogRole for role in roles.values())
    assert json.dumps(LogRole.WORKER) == '"worker"' and LogRole.ERRORS == "errors"
    assert LogFile(Path("e.log"), "e.log", "errors", 0, "msrun").role is LogRole.ERRORS  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LogFile(Path("x.log"), "x.log", "boss", 0, "msrun")  # type: ignore[arg-type]
