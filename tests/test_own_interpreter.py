"""An own script under the user's own Python (--python), and own scripts under mpirun on CPU.

The integration tests run real msrun / Open MPI + MindSpore with a second real virtualenv; each worker
prints its MindSpore rank, its MPI rank and `sys.executable`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.run.own import OwnJob, check_own, mpirun_cpu_script
from core.workspace import REPO_ROOT, read_settings, remember
from tests.browser import free_port
from tests.helpers import other_venv

WORKER = """\
import os, sys
import mindspore as ms
from mindspore.communication import get_group_size, get_rank, init
ms.set_context(mode=ms.GRAPH_MODE)
ms.set_device("CPU")
init()
print(f"RANK {get_rank()}/{get_group_size()} MPI {os.environ.get('OMPI_COMM_WORLD_RANK')} EXE {sys.executable}",
      flush=True)
print("epoch: 1 step: 1, loss is 1.0", flush=True)
"""
SEEN = re.compile(r"RANK (\d+)/(\d+) MPI (\S+) EXE (\S+)")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return other_venv(tmp_path_factory.mktemp("trainenv") / "venv")


def worker_script(tmp_path: Path) -> Path:
    script = tmp_path / "my job" / "train.py"  # a space in the path: every argv item stays one word
    script.parent.mkdir()
    script.write_text(WORKER)
    return script


def seen(log_dir: Path) -> list[tuple[int, int, str, str]]:
    found = []
    for path in sorted(log_dir.rglob("*")):
        if path.is_file() and path.name != "scheduler.log":
            found += [(int(m[1]), int(m[2]), m[3], m[4]) for m in SEEN.finditer(path.read_text(errors="replace"))]
    return sorted(found)


def test_a_bad_interpreter_is_refused_before_anything_starts(tmp_path: Path) -> None:
    script = worker_script(tmp_path)
    result = cli(
        "launch",
        "--script",
        str(script),
        "--devices",
        "2",
        "--python",
        str(tmp_path / "nope"),
        "--workspace",
        str(tmp_path / "ws"),
    )
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "does not exist" in result.stderr
    assert not (tmp_path / "ws" / "runs").exists() or not any((tmp_path / "ws" / "runs").iterdir())


def test_an_interpreter_without_mindspore_is_refused_by_preflight(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    result = cli(
        "launch",
        "--script",
        str(worker_script(tmp_path)),
        "--devices",
        "2",
        "--python",
        str(bare / "bin" / "python"),
        "--workspace",
        str(tmp_path / "ws"),
    )
    assert result.returncode != 0
    assert "preflight: `import mindspore` fails in" in result.stderr and "No module named" in result.stderr
    assert not (tmp_path / "ws" / "runs").exists() or not any((tmp_path / "ws" / "runs").iterdir())


def test_the_cpu_mpirun_script_quotes_every_user_string(tmp_path: Path) -> None:
    script = worker_script(tmp_path)
    job = check_own(
        OwnJob(script=str(script), args=("--tag", "a b; rm -rf /"), device_num=4, launcher="mpirun", master_port=9311)
    )
    text = mpirun_cpu_script(job, tmp_path / "run" / "log_output")
    assert f"python {script}" not in text  # the path has a space: it must be quoted
    assert "'--tag' 'a b; rm -rf /'" in text or "--tag 'a b; rm -rf /'" in text
    assert "MS_SCHED_PORT=9311 MS_WORKER_NUM=4" in text and 'MS_NODE_ID="$OMPI_COMM_WORLD_RANK"' in text
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)


def test_the_interpreter_is_remembered_per_workspace(tmp_path: Path) -> None:
    assert read_settings(tmp_path / "ws") == {}
    remember(tmp_path / "ws", "own_python", "/opt/train/bin/python")
    assert read_settings(tmp_path / "ws") == {"own_python": "/opt/train/bin/python"}
    assert read_settings(tmp_path / "other") == {}
    (tmp_path / "ws" / "settings.json").write_text("{not json")
    assert read_settings(tmp_path / "ws") == {}  # a broken file is no settings, never an error


@pytest.mark.integration
def test_msrun_workers_run_under_the_users_python(tmp_path: Path, venv_python: Path) -> None:
    result = cli(
        "launch",
        "--script",
        str(worker_script(tmp_path)),
        "--devices",
        "2",
        "--python",
        str(venv_python),
        "--master-port",
        str(free_port()),
        "--name",
        "mine",
        "--workspace",
        str(tmp_path / "ws"),
        "--wait",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"preflight: mindspore 2.10.0 in {venv_python}" in result.stdout
    ranks = seen(tmp_path / "ws" / "runs" / "mine" / "log_output")
    assert [(r, n, exe) for r, n, _mpi, exe in ranks] == [(0, 2, str(venv_python)), (1, 2, str(venv_python))]


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI is not installed (openmpi-bin)")
def test_own_script_under_mpirun_on_cpu_keeps_mpi_rank_n_as_rank_n(tmp_path: Path, venv_python: Path) -> None:
    result = cli(
        "launch",
        "--script",
        str(worker_script(tmp_path)),
        "--devices",
        "2",
        "--launcher",
        "mpirun",
        "--python",
        str(venv_python),
        "--master-port",
        str(free_port()),
        "--name",
        "mpi",
        "--workspace",
        str(tmp_path / "ws"),
        "--wait",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    log_dir = tmp_path / "ws" / "runs" / "mpi" / "log_output"
    assert seen(log_dir) == [(0, 2, "0", str(venv_python)), (1, 2, "1", str(venv_python))]
    watched = cli("watch", str(log_dir), "--once")
    assert "layout=mpirun, ranks=2," in watched.stdout, watched.stdout + watched.stderr


def test_preflight_names_the_users_msrun(venv_python: Path) -> None:
    """With the user's interpreter, msrun is that interpreter's (the run's bin/msrun), not the dashboard's."""
    from core.codegen import RunOptions
    from core.run.preflight import run_preflight

    launcher = run_preflight(RunOptions(device_num=2), python=str(venv_python), import_check=False)[0]
    assert launcher.ok and launcher.message.startswith(f"msrun of {venv_python}")
    assert run_preflight(RunOptions(device_num=2), import_check=False)[0].message.startswith("msrun at ")
