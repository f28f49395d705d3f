"""Checks before a launch: can this machine run the generated job, and if not, why not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from core.codegen import RunOptions
from core.files import expand_home
from core.run import slurm
from core.run.launchers import launcher_for
from core.run.launchers.base import Check
from core.run.processes import port_in_use
from core.run.states import LaunchError


def _venv_path() -> str:
    return os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")


def check_mindspore(python: str = sys.executable, timeout: float = 90.0) -> Check:
    """Import MindSpore in the python the workers will use (a subprocess: the import is slow and noisy)."""
    try:
        result = subprocess.run(
            [python, "-c", "import mindspore, sys; sys.stdout.write(mindspore.__version__)"],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "GLOG_v": "3"},
        )
    except subprocess.TimeoutExpired:
        return Check("MindSpore", False, f"importing mindspore took more than {timeout:.0f} s")
    except OSError as exc:
        return Check("MindSpore", False, f"cannot run {python}: {exc}")
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["unknown error"])[-1]
        return Check("MindSpore", False, f"`import mindspore` fails in {python}: {last}")
    return Check("MindSpore", True, f"mindspore {result.stdout.strip()} in {python}")


def check_launcher(options: RunOptions, python: str = sys.executable) -> Check:
    """The launcher's tool is there. With the user's own interpreter, msrun is that interpreter's
    (the run's bin/msrun wrapper runs mindspore.parallel.cluster.run with it; the MindSpore check proves it)."""
    launcher = launcher_for(options)
    if launcher.of_interpreter and python != sys.executable:
        return Check(
            "Launcher", True, f"{launcher.tool} of {python} (MindSpore's own launcher, run by that interpreter)"
        )
    found = shutil.which(launcher.tool, path=_venv_path())
    if not found:
        return Check("Launcher", False, f"{launcher.tool} is not on PATH{launcher.install_hint}")
    return launcher.check_tool(found)


def check_devices(options: RunOptions) -> Check:
    target = options.device_target
    if target == "CPU":
        cores = os.cpu_count() or 1
        note = ""
        if options.device_num > cores:
            note = f" ({options.device_num} workers share {cores} cores: slow but fine)"
        return Check("Devices", True, f"CPU: {options.device_num} worker processes{note}")
    tool = "npu-smi" if target == "Ascend" else "nvidia-smi"
    if shutil.which(tool) is None:
        return Check(
            "Devices",
            False,
            f"this machine has no {target} devices ({tool} not found): the job cannot run here (its check mode "
            f"can: Check on CPU); copy the job folder to a machine with {options.device_num} x {target}",
        )
    return Check("Devices", True, f"{tool} found: check that {options.workers_per_node} {target} devices are free")


def check_port(options: RunOptions) -> Check:
    port = launcher_for(options).scheduler_port(options)
    if port is None:
        return Check("Port", True, "no scheduler port needed")
    if port_in_use(port):
        return Check("Port", False, f"master port {port} is busy: pick another one")
    return Check("Port", True, f"master port {port} is free")


def check_dataset(options: RunOptions, job_dir: Path | None = None) -> Check:
    if options.dataset != "mnist":
        return Check("Dataset", True, "synthetic data (built into train.py)")
    path = expand_home(os.environ.get("DATA_PATH") or options.data_path)
    if not path.is_absolute() and job_dir is not None:
        path = job_dir / path
    if path.is_dir():
        return Check("Dataset", True, f"DATA_PATH {path} exists")
    return Check("Dataset", False, f"DATA_PATH {path} does not exist: download MNIST there or use synthetic data")


def check_partition(options: RunOptions) -> Check:
    """Slurm: the partition exists (sinfo) and has at least as many usable nodes as the job asks for."""
    wanted = options.slurm_partition
    label = f"partition {wanted!r}" if wanted else "the default partition"
    try:
        found = slurm.partition(wanted)
    except LaunchError as exc:
        return Check("Slurm", False, str(exc))
    if found is None:
        return Check("Slurm", False, f"Slurm has no {label} (sinfo lists none): pick one that `sinfo -s` shows")
    if found.nodes < options.node_num:
        return Check(
            "Slurm",
            False,
            f"partition {found.name!r} has {found.nodes} usable node(s) of {found.total}; the job needs "
            f"{options.node_num} ({options.device_num} workers, {options.workers_per_node} per node)",
        )
    ready = f"partition {found.name!r}: {found.nodes} usable node(s), the job needs {options.node_num}"
    return Check("Slurm", True, ready)


def run_preflight(
    options: RunOptions, job_dir: Path | None = None, python: str = sys.executable, import_check: bool = True
) -> list[Check]:
    """Every check, in the order a user fixes them. `import_check=False` skips the slow import."""
    checks = []
    if import_check:
        checks.append(check_mindspore(python))
    checks += [
        check_launcher(options, python),
        check_devices(options),
        check_port(options),
        check_dataset(options, job_dir),
    ]
    if launcher_for(options).queued and checks[-4].ok:
        checks.append(check_partition(options))
    return checks


def can_launch(checks: list[Check]) -> bool:
    return all(c.ok for c in checks)
