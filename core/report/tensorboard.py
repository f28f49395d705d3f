"""A run's metrics as TensorBoard event files: one run folder per rank (OUT/rank_0003), one tag per metric.

Why tensorboardX: it writes TensorBoard's own event format without TensorFlow or torch, and is kept up
to date. Steps are the Monitor's global step (epochs x steps per epoch + step when steps restart each
epoch), so epochs do not fold onto each other; the wall time is the log line's own time when it has one
(else the time of the export, as tensorboardX stamps it). TensorBoard keeps scalars as float32.
"""

from __future__ import annotations

import io
import math
import os
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.logs import METRIC_COLUMNS, RunSnapshot
from core.logs.judgement.metrics import global_step_values
from core.report.make import ReportWriteError
from core.workspace import short

__all__ = ["ExportSummary", "check_out_dir", "export_tensorboard", "metric_columns", "rank_folder", "tensorboard_zip"]

_NOT_METRICS = {"rank", "epoch", "step", "epochs_total", "steps_total", "time", "offset", "file"}


@dataclass(frozen=True)
class ExportSummary:
    """What was written: rank folders, scalar points, and the tags."""

    out: Path
    ranks: int
    scalars: int
    tags: tuple[str, ...]


def check_out_dir(out: Path | str) -> Path:
    """`out` if it is a new folder or an empty one in a writable place, else a ReportWriteError naming
    it: an export never mixes its event files with another run's (TensorBoard would merge them)."""
    out = Path(out)
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise ReportWriteError(f"{short(str(out))} exists and is not a folder: give a new or empty folder")
        if any(out.iterdir()):
            raise ReportWriteError(f"{short(str(out))} exists and is not empty: give a new or empty folder")
        if not os.access(out, os.W_OK | os.X_OK):
            raise ReportWriteError(f"cannot write in {short(str(out))}: permission denied")
        return out
    parent = out.parent
    if not parent.is_dir():
        raise ReportWriteError(f"cannot create {short(str(out))}: {short(str(parent))} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ReportWriteError(f"cannot create {short(str(out))}: no write permission in {short(str(parent))}")
    return out


def rank_folder(rank: int) -> str:
    """rank_0003 (sorted in rank order by TensorBoard's run list); rank_unknown for a file without a rank."""
    return f"rank_{rank:04d}" if rank >= 0 else "rank_unknown"


def metric_columns(metrics: pd.DataFrame) -> list[str]:
    """The metric columns of the loss rows: loss, step time, lr, and every other metric the lines carry."""
    extra = [c for c in metrics.columns if c not in METRIC_COLUMNS]
    return [c for c in ("loss", "step_time_ms", "lr") if c in metrics] + extra


def export_tensorboard(snap: RunSnapshot, out: Path | str) -> ExportSummary:
    """Write every rank's metrics under `out` (checked by `check_out_dir`); loss points are written even
    when not finite (a NaN loss is what a reader looks for), other metrics where the line has them."""
    from tensorboardX.proto.summary_pb2 import Summary
    from tensorboardX.writer import FileWriter

    out = check_out_dir(out)
    m = snap.metrics
    gs = global_step_values(m).astype(np.int64) if not m.empty else np.empty(0, dtype=np.int64)
    cols = metric_columns(m)
    values = {c: m[c].to_numpy(dtype=np.float64) for c in cols}
    times = m["time"].to_numpy(dtype=np.float64) if not m.empty else np.empty(0)
    rank_of = m["rank"].to_numpy() if not m.empty else np.empty(0, dtype=np.int64)
    tags: set[str] = set()
    count = 0
    try:
        out.mkdir(exist_ok=True)
        for rank in sorted({int(r) for r in snap.ranks["rank"]}):
            writer = FileWriter(out / rank_folder(rank), max_queue=4096, flush_secs=3600)
            try:
                for i in np.flatnonzero(rank_of == rank).tolist():
                    summary = Summary()
                    for c in cols:
                        v = values[c][i]
                        if c == "loss" or not math.isnan(v):
                            summary.value.add(tag=c, simple_value=v)
                            tags.add(c)
                            count += 1
                    t = times[i]
                    writer.add_summary(summary, int(gs[i]), t if math.isfinite(t) else None)
                count += _evals(writer, snap, rank, tags, Summary)
            finally:
                writer.close()
    except OSError as exc:
        raise ReportWriteError(f"cannot write the event files in {short(str(out))}: {exc.strerror or exc}") from None
    return ExportSummary(out, len(snap.ranks), count, tuple(sorted(tags)))


def tensorboard_zip(snap: RunSnapshot) -> bytes:
    """The export as one zip (rank_0000/events..., ...) for a download: the Monitor has no folder to write to."""
    with tempfile.TemporaryDirectory(prefix="shardscope-tb-") as tmp:
        export_tensorboard(snap, Path(tmp) / "tb")
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted((Path(tmp) / "tb").rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(Path(tmp) / "tb").as_posix())
        return buffer.getvalue()


def _evals(writer: Any, snap: RunSnapshot, rank: int, tags: set[str], summary_type: type) -> int:
    """Evaluation scalars (`eval/<name>`) and TimeMonitor's per-epoch times (`time_monitor/...`, step =
    the epoch) of one rank; returns the points written. `writer`: tensorboardX's FileWriter (no types)."""
    count = 0
    ev = snap.evals
    rows: list[tuple[str, float, float, float]] = []
    if not ev.empty:
        mine = ev[ev["rank"] == rank]
        rows += [
            (f"eval/{n}", float(v), float(s), float(t))
            for n, v, s, t in zip(mine["name"], mine["value"], mine["step"], mine["time"], strict=True)
        ]
    tm = snap.timings
    if not tm.empty:
        mine = tm[tm["rank"] == rank]
        for col in ("epoch_time_ms", "step_time_ms"):
            rows += [
                (f"time_monitor/{col}", float(v), float(e), float(t))
                for v, e, t in zip(mine[col], mine["epoch"], mine["time"], strict=True)
                if not math.isnan(v)
            ]
    for tag, value, step, t in rows:
        summary = summary_type()
        summary.value.add(tag=tag, simple_value=value)
        writer.add_summary(summary, int(step) if math.isfinite(step) else None, t if math.isfinite(t) else None)
        tags.add(tag)
        count += 1
    return count
