"""Several ranks writing one untagged stream: told from the rows alone, so `watch` and the Monitor can say why a
chart shows one rank with a vertical line at each step.

`mpirun -n 8 python train.py` without `--tag-output` (or `--output-filename`) interleaves every rank's LossMonitor
line into one stream with nothing naming the rank: the reader cannot tell them apart, so they are all the file's
rank (rank 0 of a single file), several rows per step. Real sample (tests/fixtures/real_logs/lossmonitor-8-ranks-
one-stream_mindaudio-105, mindspore-lab/mindaudio#105, `mpirun -n 8`):

    epoch: 1 step: 402, loss is 482.6315612792969
    epoch: 1 step: 402, loss is 418.2529296875
    ... (8 lines of step 402, each loss its own)

The rule: in one file whose rows name one rank, the same (epoch, step) comes K >= 2 times close together (within
3 K rows: ranks run at slightly different speeds) with K different losses, on at least half the file's steps. A
job restarted into the same file repeats its steps far apart (a run's length later), and a line printed twice
repeats its value: neither is this.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["SharedStream", "shared_streams"]

_CLOSE = 3  # the rows of one step lie within this many times its count


@dataclass(frozen=True)
class SharedStream:
    """A file whose rows repeat each step with different losses and name no rank."""

    rank: int
    file: str
    step: float  # the first step seen repeated
    times: int  # how many times its steps come (the most common count)

    def message(self) -> str:
        """The one line `watch` and the Monitor print."""
        return (
            f"rank {self.rank}'s log {self.file} repeats step {self.step:.0f} {self.times} times with different "
            "losses: several ranks seem to write one untagged stream; tag lines with msrun's/mpirun's rank output "
            "(mpirun --tag-output) or give each rank its own file"
        )


def shared_streams(metrics: pd.DataFrame) -> list[SharedStream]:
    """Every file of the rows (`metrics`: rank, file, epoch, step, loss, offset) that several ranks seem to write
    untagged, by the rule above; [] when none (or no step is printed)."""
    if metrics.empty or not {"file", "rank", "step", "loss", "offset"} <= set(metrics.columns):
        return []
    if not _twins_common(metrics):
        return []  # the common case, one pass: a Monitor tick of a million rows costs no group-by
    m = metrics[metrics["step"].notna()].sort_values(["file", "offset"], kind="stable")
    if m.empty:
        return []
    m = m.assign(
        at=m.groupby("file", sort=False).cumcount(),
        epoch_key=m["epoch"].fillna(-1.0) if "epoch" in m else -1.0,
    )
    keys = m.groupby(["file", "epoch_key", "step"], sort=False).agg(
        count=("at", "size"), first=("at", "min"), last=("at", "max"), values=("loss", "nunique")
    )
    keys["close"] = (
        (keys["count"] >= 2)
        & (keys["last"] - keys["first"] + 1 <= _CLOSE * keys["count"])
        & (keys["values"] == keys["count"])
    )
    ranks = m.groupby("file", sort=False)["rank"].agg(["nunique", "first"])
    first_rank: dict[object, int] = {f: int(r) for f, r in ranks["first"].items()}
    out = []
    for file, per_file in keys.groupby(level="file", sort=False):
        close = per_file[per_file["close"]]
        if close.empty or 2 * len(close) < len(per_file) or ranks.at[file, "nunique"] != 1:
            continue
        step = float(close.sort_values("first").index[0][2])
        out.append(SharedStream(first_rank[file], str(file), step, int(close["count"].mode().iloc[0])))
    return out


def _twins_common(metrics: pd.DataFrame) -> bool:
    """Whether a quarter of the rows or more follow a row of the same file and step (the rows come file by file,
    in offset order): a stream of K ranks has about (K - 1) / K of them, an ordinary log next to none."""
    step = metrics["step"].to_numpy(dtype=np.float64)
    at = np.flatnonzero(step[1:] == step[:-1])  # a float compare of the steps first; the file names only there
    if 4 * len(at) < len(metrics):
        return False
    files = metrics["file"].to_numpy()
    return 4 * int((files[at + 1] == files[at]).sum()) >= len(metrics)
