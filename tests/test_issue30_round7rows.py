"""Issue 30, round 7's build set (r7rows' part): the general rules its misread rows and losses asked for, on the real
lines of the logs they were written from (each test names its source), read on every path the parser has, with the
input each rule must leave alone. The notations' own samples (a logger's line after a bar's cursor-up, W&B's run
summary, the losses of a PPO row) are entries in core.logs.rows.notations, read by tests/test_grammar_entries.py.

- one process's stdout and stderr side by side (`train.out` / `train.err`, `train_log.log` / `train_error.log`) are
  rank 0's log, as one file alone is (core.logs.bytes.discover);
- a log that just ends, its last line without a newline (tensorpack's last step row): a one-shot read takes that
  line once the file is still; a file being written, and a watcher, wait for its newline (core.logs.rows.reader).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.bytes.discover import LogRole, discover
from core.logs.rows.general import read_line
from core.logs.rows.reader import QUIET_S, RunReader
from tests.helpers import READ_PATHS, entry_lines, one_log

# github.com/HjyGb/MsFreB/blob/b6f73d5777c6fd79bf206b92b55bce3653bf8b28/train_log.log (stdout) and train_error.log
MSFREB_OUT = (
    b"[15:54:01.625553] Epoch: [30]  [2520/2561]  eta: 0:01:18  lr: 0.000010  focal_loss: 0.0408  edge_loss: 0.0405  "
    b"dice_loss: 0.9988  clf_loss: 0.0000  cons_loss: 0.0000  total_loss: 0.0857 (0.2642)  time: 1.9132  data: 0.0585  "
    b"max mem: 8526\n"
)
MSFREB_ERR = b"[rank0]: TypeError: save_model() got an unexpected keyword argument 'is_best'\n"
# github.com/Ascend/ModelZoo-TensorFlow/blob/fc79459574cfa298b2b009f589b7b65223eb5d0f/TensorFlow/contrib/cv/
# PCN_ID0997_for_TensorFlow/run.log: its last two lines, the file ending without a newline
PCN = (
    b"epoch 1  step 275  loss 0.02640418 - time per batch 19.4206\n"
    b"epoch 1  step 276  loss 0.02740633 - time per batch 19.2787"
)


def _workers(folder: Path) -> list[tuple[int | None, str]]:
    return [(f.rank, f.rel) for f in discover(folder).files if f.role == LogRole.WORKER]


@pytest.mark.parametrize("names", [("train.out", "train.err"), ("train_log.log", "train_error.log")])
def test_one_process_stdout_and_stderr_are_rank_zero(tmp_path: Path, names: tuple[str, str]) -> None:
    """The rows of the stdout file and the failure of the stderr file are rank 0's (before: neither read as a
    rank's log, both a launcher's output: no rows, the failure the job's)."""
    (tmp_path / names[0]).write_bytes(MSFREB_OUT)
    (tmp_path / names[1]).write_bytes(MSFREB_ERR)
    assert sorted(_workers(tmp_path)) == sorted((0, n) for n in names)
    snap = read_run(tmp_path)
    assert snap.metrics["loss"].notna().sum() == 1 and set(snap.metrics["rank"]) == {0}
    assert snap.errors is not None and 0 in set(snap.errors["rank"])


@pytest.mark.parametrize(
    "names",
    [
        ("train.out", "train.log"),  # two stdout names: two logs, which is whose is not said
        ("a.out", "b.err"),  # different stems: two programs
        ("train.out", "train.err", "eval.out"),  # three files
        ("msrun.out", "msrun.err"),  # a launcher's own output
    ],
)
def test_other_pairs_of_files_are_no_ones_rank(tmp_path: Path, names: tuple[str, ...]) -> None:
    for name in names:
        (tmp_path / name).write_bytes(MSFREB_OUT)
    assert _workers(tmp_path) == []


def _still(path: Path, seconds: float) -> None:
    """`path` last written `seconds` ago."""
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.mark.parametrize("how", list(READ_PATHS))
def test_a_log_that_just_ends_gives_its_last_line_to_a_one_shot_read(tmp_path: Path, how: str) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(PCN)
    _still(log, 10 * QUIET_S)
    m = read_run(tmp_path, settings=READ_PATHS[how]).metrics
    assert m["step"].tolist() == [275, 276] and m["loss"].tolist() == [0.02640418, 0.02740633]


@pytest.mark.parametrize("how", list(READ_PATHS))
def test_a_last_line_being_written_waits_for_its_newline(tmp_path: Path, how: str) -> None:
    """A file written just now may be mid-line (`loss 0.027` of `loss 0.02740633`): not taken, on any path."""
    log = tmp_path / "run.log"
    log.write_bytes(PCN)
    _still(log, QUIET_S / 4)
    assert read_run(tmp_path, settings=READ_PATHS[how]).metrics["step"].tolist() == [275]


def test_a_watcher_waits_for_the_last_lines_newline_and_then_reads_it_once(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(PCN)
    _still(log, 10 * QUIET_S)
    reader = RunReader(tmp_path)
    reader.refresh()
    assert reader.snapshot().metrics["step"].tolist() == [275]
    with log.open("ab") as f:
        f.write(b"\n")
    reader.refresh()
    assert reader.snapshot().metrics["step"].tolist() == [275, 276]


# github.com/karpathy/nanoGPT/issues/178 (otaviogood, 2023-02-24): the first iteration rows, the last, then the
# estimate line every eval_interval prints (the paste ends there: no `iter 250` row beside it)
NANOGPT_178 = [
    b"iter 0: loss 4.2648, time 9371.81ms, mfu -100.00%",
    b"iter 10: loss 3.2202, time 893.76ms, mfu 16.68%",
    b"iter 20: loss 2.7697, time 894.88ms, mfu 16.67%",
    b"iter 30: loss 2.6104, time 893.50ms, mfu 16.68%",
    b"iter 240: loss 1.6524, time 895.31ms, mfu 16.62%",
    b"step 250: train loss 1.5440, val loss 1.7220",
]
CGCNN2 = "cgcnn2-epoch-train-loss-valid-loss-lr-list-300-epochs_data-science-project"


@pytest.mark.parametrize("how", list(READ_PATHS))
def test_an_estimate_over_both_splits_beside_step_rows_is_evaluation(tmp_path: Path, how: str) -> None:
    """nanoGPT's `step N: train loss X, val loss Y` among its `iter N: loss X, time ..` rows: an evaluation row
    (before: the last training row, loss 1.544 where the run's last training loss is 1.6524)."""
    snap = read_run(one_log(tmp_path, NANOGPT_178), settings=READ_PATHS[how])
    assert snap.metrics["loss"].tolist() == [4.2648, 3.2202, 2.7697, 2.6104, 1.6524]
    assert 1.544 in set(snap.evals["value"]) and 1.722 in set(snap.evals["value"])


@pytest.mark.parametrize("how", list(READ_PATHS))
def test_a_log_of_only_lines_naming_both_splits_keeps_them_as_training_rows(tmp_path: Path, how: str) -> None:
    """A file whose every row names a validation loss (cgcnn2's `Epoch [001/300] - Train Loss: X, Valid Loss: Y`),
    and one where such rows are not outnumbered twice: no estimates, training rows as before."""
    lines = entry_lines(CGCNN2)
    rows = [line for line in lines if b"Train Loss" in line][:6]
    assert len(read_run(one_log(tmp_path, rows), settings=READ_PATHS[how]).metrics) == 6
    (tmp_path / "train.log").unlink()
    few = NANOGPT_178[3:]  # two step rows, one estimate: not twice as many
    assert len(read_run(one_log(tmp_path, few), settings=READ_PATHS[how]).metrics) == 3


# github.com/MukundShankar-dev/TMR/blob/50cb91917a438649daf9e12f917e907580d18f0e/train.out line 28 (after its `\r`,
# cut after `v_t2m/R01`): Lightning's
# validation bar's draw, a cursor-up (`ESC[A`), then the rich logger's epoch line (not a Notation sample: an MSVC NaN
# in its `loss` place falls back to its `v_loss` part, a gap of space-separated keys tests/test_issue30_mutations finds)
TMR_LINE = (
    b"Validation: |          | 0/? [00:00<?, ?it/s]\x1b[A[\x1b[37m12/09/24 14:03:31\x1b[0m] \x1b[34mINFO\x1b[0m   "
    b"Epoch 0: "
    b"v_recons 4.545e-01  recons 4.626e-01  v_loss 4.591e+00  loss 5.362e+00  v_latent 1.066e+00  latent 1.139e+00  "
    b"v_kl 5.804e+00  kl 5.591e+00  v_dtw 7.405e-02  dtw 8.616e-02  v_t2m/len 1368  v_t2m/R01 1.32%\x1b[0m"
)


@pytest.mark.parametrize("how", list(READ_PATHS))
def test_a_loggers_line_after_a_bars_cursor_up_is_read_alone(tmp_path: Path, how: str) -> None:
    """The bar's `Validation:` made the epoch line an evaluation line (0 of the log's 500 rows); what precedes a
    cursor-up is another screen line."""
    read = read_line(TMR_LINE)
    assert read is not None and not read.eval and read.fields["loss"] == 5.362 and read.extras["v_loss"] == 4.591
    m = read_run(one_log(tmp_path, [TMR_LINE] * 3), settings=READ_PATHS[how]).metrics
    assert m["loss"].tolist() == [5.362] * 3 and m["epoch"].tolist() == [0] * 3
    bar_only = read_line(TMR_LINE[: TMR_LINE.index(b"\x1b[A") + 3])
    assert bar_only is None or bar_only.eval  # the draw alone: no training row
