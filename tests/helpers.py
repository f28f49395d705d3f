"""Helpers more than one test module uses: import them from here (or tests/jobs.py, tests/browser.py,
tests/strategies.py), never from a tests/test_*.py module."""

from __future__ import annotations

import argparse
import shutil
import struct
import subprocess
import sys
import sysconfig
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

from benchmarks.synth_logs import write_run
from core.__main__ import build_parser
from core.logs import ReaderSettings, read_run
from core.logs.rows.snapshot import RunSnapshot

# every way the parser reads a file: the read-path tests run each sample through all of them
READ_PATHS = {
    # one file at a time, every candidate line through `_line` (a live tick's few lines)
    "line_by_line": ReaderSettings(prefetch_min=1, block_min=1 << 30, shape_min=1 << 30),
    # one file at a time, the compiled scans, LossMonitor rows in numpy, other shapes by templates
    "bulk": ReaderSettings(prefetch_min=1, compiled_min=0, shape_min=16, block_min=1),
    # many small files in one batch (`feed_many`): Python scans and `bytes.find` for the lines worth a look
    "batched": ReaderSettings(compiled_min=1 << 40),
    # ... and with the compiled scans and templates
    "batched_compiled": ReaderSettings(compiled_min=0, shape_min=16),
}


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


def bits(frame: pd.DataFrame) -> list[tuple]:
    """A frame's values, floats as exact bit patterns (nan == nan, -0.0 != 0.0)."""

    def cell(v: object) -> object:
        return struct.pack("<d", v) if isinstance(v, float) else v

    return [tuple(cell(v) for v in row) for row in frame.itertuples(index=False)]


def same_snapshot(a: RunSnapshot, b: RunSnapshot) -> None:
    """Two reads of the same logs give bit-identical snapshots (floats compared as bit patterns)."""
    assert list(a.metrics.columns) == list(b.metrics.columns)
    assert bits(a.metrics.astype({"file": str})) == bits(b.metrics.astype({"file": str}))
    assert bits(a.errors) == bits(b.errors)
    assert bits(a.timings) == bits(b.timings)
    assert bits(a.evals) == bits(b.evals)
    assert a.metric_keys == b.metric_keys
    cols = ["rank", "pid", "bytes", "n_loss", "last_epoch", "last_step", "last_loss", "finished"]
    assert bits(a.ranks[cols]) == bits(b.ranks[cols])


def read_both_ways(folder: Path, lines: list[str]) -> tuple[RunSnapshot, RunSnapshot, list[int]]:
    """Three ranks of `lines` read one line at a time and in bulk, and the lines bulk read one at a time
    (`Parser.metric_line`, as the seam counts them)."""
    from core.logs.rows.reader import RunReader

    for rank in range(3):
        (folder / f"worker_{rank}.log").write_text("\n".join(lines) + "\n")
    one_by_one = read_run(folder, settings=ReaderSettings(block_min=1 << 30, shape_min=1 << 30))
    reader = RunReader(folder, settings=ReaderSettings(compiled_min=0, shape_min=16, block_min=1), one_shot=True)
    reader.refresh()
    bulk = reader.snapshot()
    return one_by_one, bulk, [1] * reader.parser.seam.alone


REAL_LOGS = Path(__file__).parent / "fixtures" / "real_logs"


def entry_lines(name: str) -> list[bytes]:
    """The lines of a real-log corpus entry's one log file (tests/fixtures/real_logs/<name>/log): a rule's test reads
    the real lines it was written from."""
    [log] = [p for p in (REAL_LOGS / name / "log").rglob("*") if p.is_file()]
    return log.read_bytes().splitlines()


def read_entry(tmp_path: Path, name: str, path: str) -> RunSnapshot:
    """A real-log corpus entry's `log/` (copied under `tmp_path`) read on one of READ_PATHS."""
    return read_run(Path(shutil.copytree(REAL_LOGS / name / "log", tmp_path / "log")), settings=READ_PATHS[path])


def one_log(folder: Path, lines: list[bytes]) -> Path:
    """`folder` with `lines` as its one log file (`train.log`), for `read_run`."""
    (folder / "train.log").write_bytes(b"\n".join(lines) + b"\n")
    return folder
