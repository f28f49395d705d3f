"""What differs between launchers is asked of the launcher objects (issue 32): preflight's tool check,
per-node commands, and what the Launch page shows of an own script's start. Nothing branches on a name."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from core.codegen import RunOptions
from core.run.launch import node_plan
from core.run.launchers import LAUNCHERS, launcher_for
from core.run.own import OwnJob, own_note, shown_command
from core.run.preflight import check_launcher
from core.run.states import LaunchError

LOGS = Path("<run folder>/log_output")


def own(launcher: str, target: str = "CPU") -> OwnJob:
    return OwnJob(script="/work/train.py", args=("--lr", "0.1"), launcher=launcher, device_num=4, device_target=target)


def test_each_launcher_object_says_what_the_callers_used_to_ask_of_its_name() -> None:
    assert {name: launcher.of_interpreter for name, launcher in LAUNCHERS.items()} == {
        "msrun": True,
        "mpirun": False,
        "rank_table": False,
        "slurm": False,
    }
    assert [name for name, launcher in LAUNCHERS.items() if launcher.node_exec] == ["msrun"]


def test_a_user_interpreter_runs_msrun_itself_but_not_another_launcher_s_tool(tmp_path: Path) -> None:
    python = str(tmp_path / "bin" / "python")
    check = check_launcher(RunOptions(launcher="msrun"), python)
    assert check.ok and check.message.startswith(f"msrun of {python}")
    other = check_launcher(RunOptions(launcher="rank_table"), python)  # bash: looked up on PATH, not the interpreter's
    assert other.ok and "of " + python not in other.message and other.message.startswith("bash at ")


def test_per_node_commands_need_a_launcher_that_starts_nodes_here() -> None:
    msrun = RunOptions(launcher="msrun", device_num=4, local_worker_num=2)
    assert [entry["node"] for entry in node_plan(msrun, {1: ["ip", "netns", "exec", "ns1"]})] == [0, 1]
    for name in ("mpirun", "slurm"):
        with pytest.raises(LaunchError, match="per-node commands need a multi-node msrun job"):
            node_plan(RunOptions(launcher=name, device_num=4, local_worker_num=2), {1: ["x"]})


def test_the_launch_page_shows_what_the_launcher_starts() -> None:
    msrun = shown_command(own("msrun"), LOGS)
    assert msrun is not None and "msrun" in msrun and msrun.endswith("/work/train.py --lr 0.1")
    gpu = shown_command(own("mpirun", "GPU"), LOGS)
    assert gpu is not None and gpu.startswith("mpirun ") and "python /work/train.py --lr 0.1" in gpu
    cpu = shown_command(own("mpirun", "CPU"), LOGS)  # MindSpore's scheduler, then mpirun: the wrapper script
    assert cpu is not None and cpu.startswith("#!/usr/bin/env bash\n") and "mpirun" in cpu
    assert shown_command(own("slurm"), LOGS) is None  # job.sbatch runs the script


def test_the_launch_page_notes_come_from_the_launcher() -> None:
    assert own_note(own("msrun")) == ""
    assert own_note(own("mpirun", "GPU")) == ""
    assert "mpirun_cpu.sh" in own_note(own("mpirun", "CPU"))
    assert "job.sbatch" in own_note(own("slurm"))
    assert launcher_for(RunOptions(launcher="slurm")).own_note(RunOptions(launcher="slurm")) == own_note(own("slurm"))


def test_the_mpirun_tool_check_is_open_mpi_s_version(tmp_path: Path) -> None:
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\necho 'mpirun (MPICH) 4.1'\n")
    fake.chmod(0o755)
    check = launcher_for(RunOptions(launcher="mpirun")).check_tool(str(fake))
    assert not check.ok and "is not Open MPI" in check.message
    plain = launcher_for(RunOptions(launcher="msrun")).check_tool(sys.executable)
    assert plain.ok and plain.message == f"msrun at {sys.executable}"
