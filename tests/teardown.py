"""MindSpore's known crash at process exit, told apart from a crash in training by its own evidence.

A worker segfaults in teardown after it unregistered from the scheduler (its training done), and the
launcher ends the others: srun says `task K: Segmentation fault` (slurm-J.out), mpirun `process rank K ...
exited on signal 11 (Segmentation fault)` (launcher.log). Task / rank K is MindSpore node K in the jobs
ShardScope generates, so the scheduler's "Node K has unregistered" shows K had finished. Seen in 2 of ~6
loaded suite runs under srun, once on an idle machine, and once under mpirun; upstream:
mindspore-ai/hyper-parallel#397 (an msrun worker segfaults in exit / GC after its test passed).
"""

from __future__ import annotations

from pathlib import Path

from core.logs.rows.failures import task_end
from core.run.registry import launcher_outputs, read_record


def teardown_crash(run_dir: Path) -> bool:
    """Whether the run failed only by MindSpore's crash at exit (its launchers' outputs found and read as the
    product finds and reads them: core.run.registry.launcher_outputs, core.logs.rows.failures.task_end)."""
    text = b"".join(p.read_bytes() for p in launcher_outputs(read_record(run_dir).log_dir))
    crashed = {
        rank
        for line in text.splitlines()
        if (ended := task_end(line)) is not None and ended.reason == "Segmentation fault"
        for rank in ended.ranks
    }
    scheduler = run_dir / "log_output" / "scheduler.log"
    unregistered = scheduler.read_text(errors="replace") if scheduler.is_file() else ""
    return bool(crashed) and all(f"Node {rank} has unregistered" in unregistered for rank in crashed)
