"""Job generator: a Design + RunOptions -> train.py, run.sh, README.md (and a small job.json).

    files = render_job(load_design("examples/seed004_mlp.json"),
                       RunOptions(scenario="layout_parallel", device_target="Ascend"))
    write_job(design, options, workspace / "jobs" / "seed004")

`render_job` refuses impossible jobs (e.g. semi-auto on CPU) with a `CodegenError` whose message
says what to change; the generated Python compiles and the shell passes `bash -n`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from core.codegen import launchers, scenarios
from core.codegen.job import Job, job_json, load_job
from core.codegen.jobfolder import JOB_FILE, JobExistsError, files_at_risk, write_files
from core.codegen.launchers import LAUNCHERS, OWN_LAUNCHERS, job_launcher
from core.codegen.network import NetworkCode
from core.codegen.options import DATASETS, DEVICE_TARGETS, SCENARIOS, CodegenError, RunOptions, validate_fields
from core.codegen.scenarios import SCENARIO_OBJECTS
from core.plan.planned import plan_for_design
from core.sharding.design import Design
from core.workspace import is_safe_name

__all__ = [
    "DATASETS",
    "DEVICE_TARGETS",
    "JOB_FILE",
    "LAUNCHERS",
    "OWN_LAUNCHERS",
    "SCENARIOS",
    "SCENARIO_OBJECTS",
    "CodegenError",
    "Job",
    "JobExistsError",
    "RunOptions",
    "files_at_risk",
    "load_job",
    "read_job",
    "read_job_plan",
    "render_job",
    "validate_options",
    "write_job",
    "write_rendered",
]


def validate_options(options: RunOptions) -> None:
    """Raise CodegenError (one clear message) for options no correct job can be generated from."""
    validate_fields(options)
    scenarios.scenario_of(options).check(options)
    job_launcher(options)


def _check_design(design: Design) -> None:
    if not isinstance(design, Design):
        raise CodegenError("design must be a core.design.Design")
    if not is_safe_name(design.name):
        raise CodegenError(f"design name {design.name!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-'")
    if not isinstance(design.description, str):
        raise CodegenError("design description must be text")


def _notes(design: Design, options: RunOptions, code: NetworkCode) -> list[str]:
    notes = [
        f"The network is the design itself: {len(design.operators)} operators, {code.parameters:,} parameters"
        + (f", the repeat block {code.layers} times" if code.has_block else "")
        + "; `python train.py --check` trains it for 2 steps on this machine's CPU."
    ]
    notes += scenarios.scenario_of(options).notes(code)
    if any(t.dtype == "bfloat16" for t in design.tensors.values()):
        notes.append("Check mode computes bfloat16 tensors in float32: MindSpore has no bfloat16 MatMul on CPU.")
    return notes


def render_job(design: Design, options: RunOptions) -> Job:
    """The job folder's files and facts. Raises CodegenError for a job that cannot work."""
    _check_design(design)
    validate_options(options)
    train_py, code = scenarios.render_train_py(design, options)
    launcher = job_launcher(options)
    notes = _notes(design, options, code)
    job = Job(
        design=design.name,
        options=options,
        files={},
        notes=tuple(notes),
        log_dir=launcher.log_dir(options),
        log_pattern=launcher.log_pattern(options),
        node_commands=tuple(launcher.node_commands(options)),
        # a Planner-made design: what it was planned to use (memory, step time on the target), for diagnose / Monitor
        plan=plan_for_design(design, options.device_target),
    )
    files = {
        "train.py": train_py,
        "run.sh": launchers.run_sh(options, design.name),
        "README.md": launchers.readme(options, design.name, design.description, notes),
        JOB_FILE: job_json(job),
        **launcher.extra_files(options, design.name),  # job.sbatch for Slurm
    }
    return dataclasses.replace(job, files=files)


def write_job(design: Design, options: RunOptions, out_dir: str | Path, force: bool = False) -> Path:
    """Render and write the job folder (run.sh executable). Returns the folder.

    Raises JobExistsError (a CodegenError naming the files) rather than overwrite a file ShardScope
    did not write or that was edited since, unless `force`.
    """
    return write_rendered(render_job(design, options), out_dir, force)


def write_rendered(job: Job, out_dir: str | Path, force: bool = False) -> Path:
    """Write a job already rendered (the Launch page's preview is what gets written). Returns the folder."""
    out = Path(out_dir)
    write_files(out, dict(job), executable=("run.sh",), force=force)
    return out


def read_job_plan(job_dir: str | Path) -> dict[str, Any] | None:
    """The plan a generated job carries (`render_job`: a Planner-made design's memory per card), or None."""
    try:
        return load_job(job_dir).plan
    except CodegenError:
        return None


def read_job(job_dir: str | Path) -> tuple[str, RunOptions]:
    """(design name, options) of a generated job folder, from its job.json."""
    job = load_job(job_dir)
    validate_options(job.options)
    return job.design, job.options
