"""Proof by execution: every generated train.py's check mode trains 2 real steps on this CPU.

Every example design x every scenario it supports x Ascend/GPU: the script is generated exactly as a
user would get it and `train.py --check` runs in a subprocess (MindSpore stand-alone, strategies
accepted and ignored). The LLaMA-7B/70B-shaped designs are checked with one layer and one sample
per step (their full size does not fit this machine's memory); check mode says so itself.
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.codegen import SCENARIOS, CodegenError, RunOptions, write_job
from core.run.check import check_job
from core.sharding.design import load_design
from core.workspace import EXAMPLES_DIR, REPO_ROOT

pytestmark = pytest.mark.integration

# Designs whose full size trains here; the others are checked with --layers 1 --batch 1.
TOO_BIG_FOR_CPU = ("llama7b", "llama2_70b")
NOT_ON_CPU_AT_ALL = ("llama2_70b",)  # one 70B layer + embeddings in float32 + Adam exceeds 24 GB


def _jobs(root: Path) -> list[tuple[str, Path, dict[str, int]]]:
    jobs = []
    for path in sorted(EXAMPLES_DIR.glob("*.json")):
        if path.name.startswith(NOT_ON_CPU_AT_ALL):
            continue
        design = load_design(path)
        for scenario in SCENARIOS:
            for target in ("Ascend", "GPU"):
                options = RunOptions(scenario=scenario, device_target=target, device_num=design.device_num)
                try:
                    job = write_job(design, options, root / f"{path.stem}-{scenario}-{target}")
                except CodegenError:
                    continue  # refused with its reason: test_codegen_network checks those
                shrink = {"layers": 1, "batch": 1} if path.name.startswith(TOO_BIG_FOR_CPU) else {}
                jobs.append((f"{path.stem} {scenario} {target}", job, shrink))
    return jobs


def test_every_supported_script_passes_its_check_mode_for_real(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    assert len(jobs) >= 20  # every example design x scenario x target that codegen accepts
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda job: (job[0], check_job(job[1], timeout=1200, **job[2])), jobs))
    failed = [f"{label}: {r.message}\n" + "\n".join(r.output_tail[-8:]) for label, r in results if not r.passed]
    assert not failed, "\n\n".join(failed)
    for label, result in results:
        assert len(result.losses) == 2, label
    print("\n".join(f"{label}: {r.seconds:.1f} s" for label, r in results))


def test_check_cli_reports_a_broken_script_with_the_reason(tmp_path: Path) -> None:
    design = load_design(EXAMPLES_DIR / "seed004_mlp.json")
    job = write_job(design, RunOptions(scenario="layout_parallel", device_target="Ascend"), tmp_path / "job")
    text = (job / "train.py").read_text()
    broken = "def check(batch_size=BATCH):\n    raise ValueError('broken on purpose')"
    (job / "train.py").write_text(text.replace("def check(batch_size=BATCH):", broken, 1))
    result = subprocess.run([sys.executable, "-m", "core", "check", str(job)], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 1
    assert "check failed" in result.stdout and "ValueError: broken on purpose" in result.stdout
    missing = subprocess.run([sys.executable, "-m", "core", "check", str(tmp_path / "nope")], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "not a folder" in missing.stderr
