"""Codegen: every scenario x target x launcher renders Python that compiles and shell that parses;
each scenario trains the design's own network the way its seed does; hostile text is refused or inert.

(That the network holds exactly the design's operators and strategies: tests/test_codegen_network.py.)"""

from __future__ import annotations

import ast
import json
import keyword
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.codegen import (
    LAUNCHERS,
    SCENARIOS,
    CodegenError,
    Job,
    RunOptions,
    load_job,
    read_job,
    render_job,
    write_job,
    write_rendered,
)
from core.sharding.design import Design, load_design
from core.workspace import EXAMPLES_DIR

DP = load_design(EXAMPLES_DIR / "data_parallel_8.json")
MLP = load_design(EXAMPLES_DIR / "seed004_mlp.json")


def bash_ok(text: str) -> None:
    result = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
    assert result.returncode == 0, result.stderr


TINY = EXAMPLES_DIR / "llama_tiny_cpu.json"


def design_for(scenario: str) -> Design:
    """A shipped design each scenario accepts (sapp_pipeline needs a repeat block: the tiny decoder)."""
    if scenario == "sapp_pipeline":
        if not TINY.exists():
            pytest.skip("needs the model library's tiny decoder example")
        return load_design(TINY)
    return MLP if scenario == "layout_parallel" else DP


@pytest.mark.parametrize("scenario", list(SCENARIOS))
@pytest.mark.parametrize("target", ["Ascend", "GPU"])
@pytest.mark.parametrize("launcher", list(LAUNCHERS))
@pytest.mark.parametrize("dataset", ["synthetic", "mnist"])
def test_every_combination_compiles(scenario: str, target: str, launcher: str, dataset: str) -> None:
    options = RunOptions(scenario=scenario, device_target=target, launcher=launcher, dataset=dataset)
    if launcher == "rank_table" and target == "GPU":
        with pytest.raises(CodegenError, match="Ascend-only"):
            render_job(design_for(scenario), options)
        return
    if dataset == "mnist" and scenario == "sapp_pipeline":  # the decoder reads tokens, not MNIST images
        with pytest.raises(CodegenError, match="MNIST dataset needs"):
            render_job(design_for(scenario), options)
        return
    files = render_job(design_for(scenario), options)
    assert set(files) >= {"train.py", "run.sh", "README.md"}
    compile(files["train.py"], "train.py", "exec")
    bash_ok(files["run.sh"])
    assert "bash run.sh" in files["README.md"]
    assert f'ms.set_device("{target}"' in files["train.py"]


@pytest.mark.parametrize("launcher", ["msrun", "mpirun", "rank_table"])
def test_multi_node_shows_one_command_per_node(launcher: str) -> None:
    options = RunOptions(device_target="Ascend", launcher=launcher, device_num=16, local_worker_num=8)
    files = render_job(DP, options)
    bash_ok(files["run.sh"])
    if launcher != "mpirun":
        assert "bash run.sh 0" in files["README.md"] and "bash run.sh 1" in files["README.md"]
    if launcher == "msrun":
        assert "--local_worker_num=8" in files["run.sh"] and '--node_rank="$NODE_RANK"' in files["run.sh"]


def test_cpu_only_data_parallel() -> None:
    files = render_job(DP, RunOptions(device_target="CPU"))
    compile(files["train.py"], "train.py", "exec")
    assert "DATA_PARALLEL" in files["train.py"] and "num_shards=get_group_size()" in files["train.py"]
    for scenario in set(SCENARIOS) - {"data_parallel"}:
        with pytest.raises(CodegenError, match="data-parallel mode only"):
            render_job(design_for(scenario), RunOptions(scenario=scenario, device_target="CPU"))


def test_launcher_log_layouts() -> None:
    msrun = render_job(DP, RunOptions(device_target="Ascend"))
    assert "--log_dir=log_output --join=True" in msrun["run.sh"]
    mpirun = render_job(DP, RunOptions(device_target="GPU", launcher="mpirun"))
    assert "--output-filename log_output --merge-stderr-to-stdout" in mpirun["run.sh"]
    table = render_job(DP, RunOptions(device_target="Ascend", launcher="rank_table"))
    assert "train.log$rank" in table["run.sh"] and "DEVICE_ID" in table["train.py"]


def test_layout_device_count_mismatch_is_refused() -> None:
    with pytest.raises(CodegenError, match="spans 8 devices but the job has 16"):
        render_job(MLP, RunOptions(scenario="layout_parallel", device_target="Ascend", device_num=16))


def test_sapp_pipeline_follows_seed_003() -> None:
    design = design_for("sapp_pipeline")
    files = render_job(design, RunOptions(scenario="sapp_pipeline", device_target="Ascend", pipeline_stages=2))
    code = files["train.py"]
    assert design.repeat is not None
    for needle in (
        'parallel_mode="recursive_programming"',
        ".hsdp()",
        'pipeline(stages=2, scheduler="1f1b")',
        '"network.layers.0": 0',
        f'"network.layers.{design.repeat.count - 1}": 1',
        '"network.head": 1',
        "layer.recompute()",
        "no_init_parameters",
        "Pipeline(NetWithLoss(net), 4",
    ):
        assert needle in code
    assert "opt_shard=False)" not in code
    with pytest.raises(CodegenError, match="divide the device count"):
        render_job(design, RunOptions(scenario="sapp_pipeline", device_target="Ascend", pipeline_stages=3))
    with pytest.raises(CodegenError, match="no repeat block"):
        render_job(DP, RunOptions(scenario="sapp_pipeline", device_target="Ascend"))


def test_multi_copy_follows_seeds() -> None:
    code = render_job(DP, RunOptions(scenario="multi_copy", device_target="GPU", interleave_num=4))["train.py"]
    assert "MicroBatchInterleaved(NetWithLoss(net), 4)" in code
    assert 'AutoParallel(net_with_loss, parallel_mode="semi_auto")' in code
    with pytest.raises(CodegenError, match="divisible by interleave_num 5"):
        render_job(DP, RunOptions(scenario="multi_copy", device_target="GPU", interleave_num=5))


def test_write_and_read_job(tmp_path: Path) -> None:
    options = RunOptions(master_port=9001, epochs=3)
    out = write_job(DP, options, tmp_path / "job")
    assert (out / "run.sh").stat().st_mode & 0o111
    assert read_job(out) == ("data_parallel_8", options)
    with pytest.raises(CodegenError, match="not a ShardScope job folder"):
        read_job(tmp_path)


def test_a_rendered_job_is_typed_and_reads_back_the_same(tmp_path: Path) -> None:
    """render_job hands over a Job (facts + files): what the page shows is what load_job reads back."""
    options = RunOptions(launcher="mpirun", device_target="CPU", master_port=9002)
    job = render_job(DP, options)
    assert isinstance(job, Job) and set(job) >= {"train.py", "run.sh", "README.md", "job.json"}
    assert job.log_dir == "log_output" and job.log_pattern.startswith("log_output/1/rank.<rank>/stdout")
    assert job.notes and "python train.py --check" in job.notes[0]
    loaded = load_job(write_rendered(job, tmp_path / "job"))
    assert (loaded.design, loaded.options, loaded.notes) == (job.design, options, job.notes)
    assert loaded.log_dir == "log_output"
    assert loaded.node_commands == job.node_commands == ("bash run.sh",)


def test_load_job_takes_the_log_folder_from_the_checked_options_not_the_file(tmp_path: Path) -> None:
    out = write_job(DP, RunOptions(), tmp_path / "job")
    facts = json.loads((out / "job.json").read_text())
    facts["log_dir"] = "../../../etc"  # a hand-edited job.json must not move a run's logs out of its folder
    (out / "job.json").write_text(json.dumps(facts))
    assert load_job(out).log_dir == "log_output"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("master_addr", "127.0.0.1; rm -rf /", "master address"),
        ("master_addr", "$(reboot)", "master address"),
        ("log_dir", "../escape", "log folder"),
        ("data_path", "a\nb", "newline or control"),
        ("device_num", 0, "out of range"),
        ("master_port", 80, "out of range"),
        ("scenario", "evil()", "unknown scenario"),
        ("learning_rate", float("nan"), "learning rate"),
    ],
)
def test_bad_options_are_refused(field: str, value: object, message: str) -> None:
    options = RunOptions(dataset="mnist", **{field: value})  # type: ignore[arg-type]
    with pytest.raises(CodegenError, match=message):
        render_job(DP, options)


HOSTILE = st.lists(
    st.sampled_from([*"abc'\"`$();|&\\\n\r\t {}#*!<>", "$(touch /tmp/pwned)", "`id`", "'''", '"""']),
    min_size=1,
    max_size=12,
).map("".join)


def _assert_inert(files: dict[str, str]) -> None:
    compile(files["train.py"], "train.py", "exec")
    bash_ok(files["run.sh"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=HOSTILE)
def test_hostile_data_path_is_a_literal_or_refused(text: str) -> None:
    options = RunOptions(dataset="mnist", data_path=text)
    try:
        files = render_job(DP, options)
    except CodegenError as exc:
        assert "DATA_PATH" in str(exc)
        return
    _assert_inert(files)
    tree = ast.parse(files["train.py"])
    literals = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert text in literals  # the path is one string constant, nothing else
    # the shell sees it as one quoted word: evaluate the assignment safely
    line = next(ln for ln in files["run.sh"].splitlines() if ln.startswith("DEFAULT_DATA_PATH="))
    echoed = subprocess.run(["bash", "-c", line + '\nprintf %s "$DEFAULT_DATA_PATH"'], capture_output=True, text=True)
    assert echoed.stdout == text


@settings(max_examples=60, deadline=None)
@given(text=HOSTILE)
def test_hostile_master_addr_and_log_dir_are_refused(text: str) -> None:
    for field in ("master_addr", "log_dir"):
        try:
            files = render_job(DP, RunOptions(**{field: text}))  # type: ignore[arg-type]
        except CodegenError as exc:
            assert ("master address" if field == "master_addr" else "log folder") in str(exc)
            continue
        assert re.fullmatch(r"[A-Za-z0-9._-]+", text)  # only plain tokens get through
        _assert_inert(files)


@settings(max_examples=60, deadline=None)
@given(text=HOSTILE)
def test_hostile_design_name_is_refused_and_description_inert(text: str) -> None:
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", text):
        _assert_inert(render_job(replace(DP, name=text), RunOptions()))
    else:
        with pytest.raises(CodegenError, match="design name"):
            render_job(replace(DP, name=text), RunOptions())
    files = render_job(replace(DP, name="ok", description=text), RunOptions())
    _assert_inert(files)
    header = ast.get_docstring(ast.parse(files["train.py"])) or ""
    assert "ok" in header


@settings(max_examples=40, deadline=None)
@given(text=HOSTILE)
def test_hostile_layout_names_are_refused(text: str) -> None:
    """A layout name reaches the script as a variable: anything but an identifier is refused."""
    dense = load_design(EXAMPLES_DIR / "seed004_dense_matmul.json")
    op = dense.operators[0]
    renamed = tuple(replace(s, layout=text) for s in op.strategy or ())
    out = replace(op.out_strategy, layout=text) if op.out_strategy else None
    design = replace(
        dense,
        layouts={text: dense.layouts["layout"]},
        operators=(replace(op, strategy=renamed, out_strategy=out), *dense.operators[1:]),
    )
    if text.isidentifier() and not keyword.iskeyword(text):
        _assert_inert(render_job(design, RunOptions(scenario="layout_parallel", device_target="Ascend")))
        return
    with pytest.raises(CodegenError, match="identifier"):
        render_job(design, RunOptions(scenario="layout_parallel", device_target="Ascend"))


def test_every_scenario_is_one_object_whose_fields_the_launch_page_asks_for() -> None:
    """A scenario's label, CPU support and own fields live in its object; the Launch page draws a field
    input for each of them (no per-scenario branch on the page)."""
    from dataclasses import fields as dataclass_fields

    from app.launch_widgets import SCENARIO_INPUTS
    from core.codegen import SCENARIO_OBJECTS

    assert list(SCENARIO_OBJECTS) == list(SCENARIOS)
    option_names = {f.name for f in dataclass_fields(RunOptions)}
    for name, scenario in SCENARIO_OBJECTS.items():
        assert scenario.label == SCENARIOS[name]
        assert set(scenario.fields) <= option_names and set(scenario.fields) <= set(SCENARIO_INPUTS)
    assert [n for n, s in SCENARIO_OBJECTS.items() if s.runs_on_cpu] == ["data_parallel"]
    with pytest.raises(CodegenError, match="unknown scenario 'hybrid'"):
        render_job(MLP, RunOptions(scenario="hybrid"))
