"""Helpers more than one test module uses: import them from here (or tests/jobs.py, tests/browser.py,
tests/strategies.py), never from a tests/test_*.py module."""

from __future__ import annotations

import argparse
import subprocess
import sys
import sysconfig
from datetime import datetime, timedelta
from pathlib import Path

from benchmarks.synth_logs import write_run
from core.__main__ import build_parser


def bomb(levels: int, width: int = 9) -> str:
    """The issue's file: `l1: &l1 [*l0, *l0, ...]` `levels` deep, a model value and data_parallel set to the
    last level (what MindFormers' keys would read). 588 bytes at level 8."""
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * width) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return (
        "\n".join(lines)
        + f"\nmodel:\n  model_config:\n    hidden_size: *l{levels}\n    num_layers: 2\n    num_heads: 2\n"
        + f"    vocab_size: 100\n    seq_length: 16\nparallel_config:\n  data_parallel: *l{levels}\n"
    )


def mf_run(folder: Path, ranks: int, steps: int, short: dict[int, int]) -> None:
    """MindFormers-format logs (real line shape): every rank to step:[steps/steps] except `short`."""
    folder.mkdir(parents=True, exist_ok=True)
    t0 = datetime(2026, 11, 23, 19, 0, 0)
    for r in range(ranks):
        lines = []
        for s in range(1, short.get(r, steps) + 1):
            t = t0 + timedelta(seconds=s * 0.5)
            lines.append(
                f"[INFO] {t:%Y-%m-%d %H:%M:%S},332 [mindformers/core/callback/callback.py:747] "
                f"print_output_info: {{ Epoch:[  1/  1], step:[{s:5d}/{steps:5d}], "
                f"loss:[{5.5 - s * 0.01 + r * 1e-4:.6f}/5.500000], per_step_time: 500ms, lr: 0.003, }}"
            )
        (folder / f"worker_{r}.log").write_text("\n".join(lines) + "\n")


def other_venv(root: Path) -> Path:
    """A second virtualenv (its own sys.executable) that imports this one's packages through a .pth file:
    a real other interpreter that can run MindSpore without a second install."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    site = next((root / "lib").glob("python3*/site-packages"))
    (site / "dashboard_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return root / "bin" / "python"


def synth_folder(root: Path, ranks: int = 1024, steps: int = 200) -> Path:
    """A 1,024-rank msrun folder (no noise lines: ~1 s to write) with a straggler, a hung and a crashed rank."""
    write_run(root, ranks, steps, straggler=341, hung=512, crashed=[682, 683], first_crashed=682, noise_per_step=0)
    return root


def report_args(target: str, out: str) -> argparse.Namespace:
    return build_parser("report").parse_args(["report", target, "--out", out])
