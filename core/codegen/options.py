"""Run options for a generated job, and the checks that keep user text out of code.

Every string that reaches generated Python or shell is either validated here (identifiers, host
names, plain file names) or rendered later as a literal (`repr` / `shlex.quote`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields
from typing import Any

from core.errors import UserError

SCENARIOS: dict[str, str] = {
    "data_parallel": "Data parallel (seed 001)",
    "operator_parallel": "Operator parallel, tuple strategies",
    "layout_parallel": "Layout strategies (seed 004)",
    "multi_copy": "Multi-copy, MicroBatchInterleaved (seeds 000/002)",
    "sapp_pipeline": "SAPP + pipeline + recompute + hsdp (seed 003)",
}
DEVICE_TARGETS = ("Ascend", "GPU", "CPU")
DATASETS: dict[str, str] = {
    "synthetic": "built-in synthetic data (runs anywhere)",
    "mnist": "MNIST folder from DATA_PATH",
}

_HOST = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?$")
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Slurm names (partition, account) and the --time / --gres forms sbatch accepts; nothing a shell reads.
_SLURM_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_SLURM_TIME = re.compile(r"^(?:\d{1,7}|\d{1,7}:\d{2}|\d{1,4}:\d{2}:\d{2}|\d{1,4}-\d{1,2}(?::\d{2}(?::\d{2})?)?)$")
_GRES_ONE = r"[A-Za-z0-9_]{1,32}(?::[A-Za-z0-9_.-]{1,32}){0,2}"
_SLURM_GRES = re.compile(rf"^{_GRES_ONE}(?:,{_GRES_ONE}){{0,7}}$")
MAX_PATH = 1024


class CodegenError(UserError, ValueError):
    """Options or a design the generator refuses, with a message that says what to change."""


@dataclass(frozen=True, kw_only=True)
class LaunchFields:
    """Where and how a job's workers start: the fields a generated job and the user's own script share."""

    device_target: str = "CPU"
    launcher: str = "msrun"
    device_num: int = 8  # total workers (msrun --worker_num)
    local_worker_num: int | None = None  # workers per node; None = all on one node
    master_addr: str = "127.0.0.1"
    master_port: int = 8118
    cluster_time_out: int = 600
    # Slurm (launcher "slurm"): nodes = device_num / local_worker_num, one task per worker
    slurm_partition: str = ""  # empty: the cluster's default partition
    slurm_account: str = ""
    slurm_time: str = ""  # sbatch --time: minutes, HH:MM:SS or D-HH:MM:SS; empty: the partition's limit
    slurm_cpus_per_task: int = 1
    slurm_gres: str = ""  # per node, e.g. gpu:8 or npu:8

    @property
    def workers_per_node(self) -> int:
        return self.local_worker_num or self.device_num

    @property
    def node_num(self) -> int:
        return math.ceil(self.device_num / self.workers_per_node)

    @property
    def multi_node(self) -> bool:
        return self.node_num > 1

    def launch_fields(self) -> dict[str, Any]:
        """Only the shared fields, e.g. to build a RunOptions from an own script's job (each value of its
        field's type, so `Any` per key)."""
        return {f.name: getattr(self, f.name) for f in fields(LaunchFields)}


@dataclass(frozen=True, kw_only=True)
class RunOptions(LaunchFields):
    """How to generate (and later launch) a job. Defaults give a job that runs on this CPU machine."""

    scenario: str = "data_parallel"
    log_dir: str = "log_output"
    dataset: str = "synthetic"
    data_path: str = "./MNIST_Data/train"
    synthetic_samples: int = 512
    epochs: int = 2
    batch_size: int = 32  # unused since the batch is the design's; kept so older job.json files still load
    learning_rate: float = 0.001  # Adam
    loss_interval: int = 1  # LossMonitor(per_print_times)
    time_monitor: bool = True
    interleave_num: int = 2  # multi_copy
    pipeline_stages: int = 2  # sapp_pipeline
    micro_batches: int = 4  # sapp_pipeline
    recompute: bool = True  # sapp_pipeline
    hsdp: bool = True  # sapp_pipeline: optimizer parallel

    def to_dict(self) -> dict[str, object]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOptions:
        """The options a job.json holds; values as json.loads gives them (Any: their types are not checked here)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise CodegenError(f"unknown run option(s): {', '.join(unknown)}")
        return cls(**data)


def check_int(value: object, name: str, low: int, high: int) -> int:
    """A whole number in low..high (bool refused), or a CodegenError naming the field."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise CodegenError(f"{name} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise CodegenError(f"{name} = {value} is out of range: use {low}..{high}")
    return value


def check_text_path(value: object, name: str) -> str:
    """A path that is rendered as a literal: any printable text, no control characters."""
    if not isinstance(value, str) or not value.strip():
        raise CodegenError(f"{name} must be a non-empty path")
    if len(value) > MAX_PATH:
        raise CodegenError(f"{name} is longer than {MAX_PATH} characters")
    if not value.isprintable():
        raise CodegenError(f"{name} {value!r} contains a newline or control character: use a plain path")
    return value


def validate_fields(options: RunOptions) -> None:
    """Raise CodegenError (one clear message) for fields no correct job can be generated from; the launcher
    and the scenario are checked by their own objects (`core.codegen.validate_options`)."""
    if not isinstance(options, RunOptions):
        raise CodegenError("options must be a RunOptions")
    if options.scenario not in SCENARIOS:
        raise CodegenError(f"unknown scenario {options.scenario!r}: use one of {', '.join(SCENARIOS)}")
    if options.device_target not in DEVICE_TARGETS:
        raise CodegenError(f"unknown device target {options.device_target!r}: use one of {', '.join(DEVICE_TARGETS)}")
    if options.dataset not in DATASETS:
        raise CodegenError(f"unknown dataset {options.dataset!r}: use one of {', '.join(DATASETS)}")
    check_int(options.device_num, "device count", 1, 4096)
    if options.local_worker_num is not None:
        local = check_int(options.local_worker_num, "workers per node", 1, 4096)
        if options.device_num % local:
            raise CodegenError(
                f"{options.device_num} devices cannot be split evenly into nodes of {local} workers: "
                "make the device count a multiple of the workers per node"
            )
    if not isinstance(options.master_addr, str) or not _HOST.fullmatch(options.master_addr):
        raise CodegenError(
            f"master address {options.master_addr!r} is not an IPv4 address or host name (letters, digits, '-' and '.')"
        )
    check_int(options.master_port, "master port", 1024, 65535)
    if not isinstance(options.log_dir, str) or not _PLAIN.fullmatch(options.log_dir):
        raise CodegenError(f"log folder {options.log_dir!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-'")
    if options.dataset == "mnist":
        check_text_path(options.data_path, "DATA_PATH")
    check_int(options.synthetic_samples, "synthetic samples", 8, 10_000_000)
    check_int(options.epochs, "epochs", 1, 100_000)
    check_int(options.batch_size, "batch size", 1, 1_000_000)
    if isinstance(options.learning_rate, bool) or not isinstance(options.learning_rate, int | float):
        raise CodegenError(f"learning rate must be a number, got {options.learning_rate!r}")
    if not (0 < float(options.learning_rate) < 1e3) or not math.isfinite(float(options.learning_rate)):
        raise CodegenError(f"learning rate {options.learning_rate!r} must be a positive finite number below 1000")
    check_int(options.loss_interval, "loss print interval", 1, 1_000_000)
    if not isinstance(options.time_monitor, bool):
        raise CodegenError("time_monitor must be true or false")
    check_int(options.cluster_time_out, "cluster time-out", 1, 86_400)
    check_slurm(options)
    for flag in ("recompute", "hsdp"):
        if not isinstance(getattr(options, flag), bool):
            raise CodegenError(f"{flag} must be true or false")


def check_slurm_name(value: object, name: str) -> str:
    """A partition or account: Slurm's own name characters only (empty = the cluster's default)."""
    if not isinstance(value, str) or (value and not _SLURM_NAME.fullmatch(value)):
        raise CodegenError(f"Slurm {name} {value!r} is not allowed: use 1-64 letters, digits, '.', '_' or '-'")
    return value


def check_slurm(options: RunOptions) -> None:
    """The Slurm fields: names, a time limit sbatch understands, a plain gres list, a sane cpu count."""
    check_slurm_name(options.slurm_partition, "partition")
    check_slurm_name(options.slurm_account, "account")
    time_limit = options.slurm_time
    if not isinstance(time_limit, str) or (time_limit and not _SLURM_TIME.fullmatch(time_limit)):
        raise CodegenError(
            f"Slurm time limit {options.slurm_time!r} is not allowed: use minutes, MM:SS, HH:MM:SS or D-HH:MM:SS"
        )
    gres = options.slurm_gres
    if not isinstance(gres, str) or (gres and not _SLURM_GRES.fullmatch(gres)):
        raise CodegenError(f"Slurm gres {options.slurm_gres!r} is not allowed: use e.g. gpu:8 or npu:8")
    check_int(options.slurm_cpus_per_task, "CPUs per task", 1, 1024)
