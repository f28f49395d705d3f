"""Helpers more than one test module uses: import them from here (or tests/jobs.py, tests/browser.py,
tests/strategies.py), never from a tests/test_*.py module."""

from __future__ import annotations

import argparse
import shutil
import struct
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable
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


STEP = "01/02/2022 23:11:{t:02d} - INFO - Epoch: [{e}], step: [{s}], lr: 0.000010, batch_loss: {b}, avg_loss: 0.0669\n"
DONE = "01/03/2022 02:19:{t:02d} - INFO - ** ** Epoch [{e}] done! Training loss: {x} ** **\n"
NANOGPT = "> 2023-03-22 09:31:{t:02d} iter {s}: loss {x}, time 1096.65ms, mfu 15.34%\n"
NANOGPT_EVAL = "> 2023-03-22 09:32:{t:02d} step {s}: train loss {x}, val loss 4.0427\n"
TFLEARN_STEP = "Training Step: {s}  | total loss: {x} | time: 0.275s\n"
TFLEARN_ADAM = "| Adam | epoch: 001 | loss: {x} - acc: 0.{a} -- iter: {i:05d}/55000\n"


# Lines of logs whose rows a file's series choice sets aside (tests/test_kept_rows.py, tests/test_tick_reading.py):
# Oscar-Paddle's workerlog (corpus paddle-2-workerlogs-...-epoch-summaries_oscar-paddle), nanoGPT's
# (nanogpt-iter-loss-turns-nan-quoted_nanogpt-215), TFLearn's TermLogger
# (tflearn-termlogger-two-lines-per-step_tflearn-486)


def series_line(kind: int, i: int, shift: float = 0.0) -> str:
    """Line `kind` of a file's `i`-th line: a step row, an epoch summary (Paddle), nanoGPT's step and its
    evaluation at the same step, TFLearn's step and its echo (`shift`: a relaunch's other values)."""
    x, t, s = round(2.0 - i / 1000 + shift, 4), i % 60, 10 * (i // 2 + 1)
    return [
        STEP.format(t=t, e=1 + i // 40, s=s, b=x),
        DONE.format(t=t, e=1 + i // 40, x=x),
        NANOGPT.format(t=t, s=s, x=x),
        NANOGPT_EVAL.format(t=t, s=s, x=x),
        TFLEARN_STEP.format(s=s, x=f"{x:.5f}"),
        TFLEARN_ADAM.format(x=f"{x:.5f}", a=2720 + i, i=64 * (i // 2 + 1)),
    ][kind]


def series_log(runs: list[tuple[int, int]], shift: float = 0.0) -> list[str]:
    """A log's lines: `count` lines of each `kind` in turn."""
    kinds = [kind for kind, count in runs for _ in range(count)]
    return [series_line(kind, i, shift) for i, kind in enumerate(kinds)]


def sorted_reading(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows in file order, columns by name, numbers as float64, the observation time left out: a watcher adds
    each tick's rows after the last tick's, meets the metric names in tick order, keeps a count column it
    widened (a dropped file's fractional step) and gives a line without a time the time it saw it."""
    frame = frame.drop(columns=["time"]).astype({"file": str})
    numbers = [c for c in frame.columns if c not in keys and frame[c].dtype.kind in "iuf"]
    frame = frame.astype(dict.fromkeys(numbers, "float64"))
    return frame[sorted(frame.columns)].sort_values(keys, kind="stable").reset_index(drop=True)


def same_reading(live: RunSnapshot, once: RunSnapshot) -> None:
    """A live reader's training rows, evaluation entries and rank facts are one read's (`sorted_reading`)."""
    gone = list(set(live.metrics.columns) - set(once.metrics.columns))  # a dropped file's metric: kept, empty
    assert set(once.metrics.columns) <= set(live.metrics.columns) and live.metrics[gone].isna().all().all()
    metrics = live.metrics.drop(columns=gone)
    assert bits(sorted_reading(metrics, ["rank", "file", "offset"])) == bits(
        sorted_reading(once.metrics, ["rank", "file", "offset"])
    )
    assert bits(sorted_reading(live.evals, ["file", "offset", "name"])) == bits(
        sorted_reading(once.evals, ["file", "offset", "name"])
    )
    cols = ["rank", "n_loss", "last_epoch", "last_step", "last_loss"]
    assert bits(live.ranks[cols]) == bits(once.ranks[cols])


def frames_held_each_tick(
    ticks: Iterable[object],
    write: Callable[[int, object], None],
    refresh: Callable[[], object],
    kept: Callable[[], pd.DataFrame],
    definition: Callable[[], pd.DataFrame],
) -> None:
    """After each tick (`write(n, tick)`, then `refresh()`), the frame kept between snapshots (`kept()`) is the one
    built from everything (`definition()`), and every frame handed out before is as it was handed out."""
    handed: list[tuple[pd.DataFrame, pd.DataFrame]] = []
    for n, tick in enumerate(ticks):
        write(n, tick)
        refresh()
        got = kept()
        pd.testing.assert_frame_equal(got, definition(), check_exact=True)
        handed.append((got, got.copy(deep=True)))
    for frame, copy in handed:
        pd.testing.assert_frame_equal(frame, copy, check_exact=True)


def cut_tick_and_once(root: Path, name: str, data: bytes, cut: int) -> tuple[RunSnapshot, RunSnapshot]:
    """`data` as file `name` read live in two ticks cut at byte `cut`, and read once: (live, once). The per-file
    series rules must judge a file alike however its bytes arrived."""
    from core.logs.rows.reader import RunReader

    (root / "tick").mkdir()
    path = root / "tick" / name
    path.write_bytes(data[:cut])
    reader = RunReader(path.parent)
    reader.refresh()
    reader.snapshot()
    with path.open("ab") as f:
        f.write(data[cut:])
    reader.refresh()
    (root / "whole").mkdir()
    (root / "whole" / name).write_bytes(data)
    once = RunReader(root / "whole", one_shot=True)
    once.refresh()
    return reader.snapshot(), once.snapshot()
