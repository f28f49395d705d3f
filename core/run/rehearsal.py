"""The CPU rehearsal: a real 8-worker MindSpore data-parallel job through msrun, runnable anywhere.

It is what a new user launches first (Home page, one click). It trains the design's own network
(by default examples/data_parallel_8.json, seed 001's MNIST MLP): on CPU MindSpore runs distributed
jobs in data-parallel mode only, so the rehearsal is always `data_parallel`, every worker running the
whole network on its own shard of the synthetic data (no download).
"""

from __future__ import annotations

import time
from pathlib import Path

from core.codegen import RunOptions, write_job
from core.run.launch import launch
from core.run.registry import RunRecord
from core.sharding.design import Design, load_design
from core.workspace import EXAMPLES_DIR, child

REHEARSAL_DESIGN = EXAMPLES_DIR / "data_parallel_8.json"


def rehearsal_options(device_num: int = 8, master_port: int = 8118) -> RunOptions:
    """About a minute on a 2-core machine; Adam at 3e-3 so the loss visibly falls within the 5 epochs."""
    return RunOptions(
        scenario="data_parallel",
        device_target="CPU",
        device_num=device_num,
        master_port=master_port,
        dataset="synthetic",
        synthetic_samples=192 * device_num,
        epochs=5,
        batch_size=8,
        learning_rate=0.003,
        loss_interval=2,
    )


def start_rehearsal(workspace: Path, design: Design | None = None, options: RunOptions | None = None) -> RunRecord:
    """Generate the rehearsal job under workspace/jobs/ and launch it; raises LaunchError/CodegenError."""
    design = design or load_design(REHEARSAL_DESIGN)
    options = options or rehearsal_options()
    job_dir = child(workspace / "jobs", f"cpu-rehearsal-{time.strftime('%Y%m%d-%H%M%S')}", "job name")
    write_job(design, options, job_dir)
    return launch(job_dir, workspace)
