"""Issue 30 item 2, the training series decided per file (core.logs.rows.perfile, applied at snapshot time by
`MetricTable.set_aside` and `core.logs.rows.snapshot.split_series`): an epoch's summary loss line beside step
rows is its own series, not a training row, while a file whose only rows are such lines keeps them; a step
printed twice in a rarer shape is an evaluation row; a step's echo in a shape naming fewer values is one row.
Lines from the corpus (tests/fixtures/real_logs): Oscar-Paddle's workerlog (paddle-2-workerlogs-...-epoch-
summaries_oscar-paddle), models-cmf-fscil-3d's training.log, nanoGPT's (nanogpt-iter-loss-turns-nan-quoted_
nanogpt-215), TFLearn's TermLogger (tflearn-termlogger-two-lines-per-step_tflearn-486), mpirun's tag (UNITER)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.cli.watch import summary as watch_summary
from core.logs import ReaderSettings
from core.logs.rows.reader import RunReader
from core.logs.rows.snapshot import RunSnapshot, pass_summaries
from tests.helpers import READ_PATHS, cut_tick_and_once

STEP = "01/02/2022 23:11:34 - INFO - Epoch: [{e}], step: [{s}], lr: 0.000010, batch_loss: {b}, avg_loss: 0.0669\n"
DONE = "01/03/2022 02:19:43 - INFO - ** ** Epoch [{e}] done! Training loss: {x} ** **\n"
CMF = "2024-10-14 18:35:40,330 - __main__ - INFO - Epoch {e} completed with avg loss: {x}, learning rate: 0.003000\n"
PATHS = READ_PATHS  # every way the parser reads a file (tests/helpers.py)


def _paddle(epochs: int = 2, steps: int = 30) -> tuple[str, list[float], list[float]]:
    """A workerlog of `epochs` epochs of `steps` step lines, each epoch ended by its summary line."""
    text, train, summaries = "", [], []
    for e in range(1, epochs + 1):
        for s in range(1, steps + 1):
            b = round(0.5 / (e * s), 4)
            text += STEP.format(e=e, s=100 * s, b=b)
            train.append(b)
        summaries.append(round(0.01 / e, 5))
        text += DONE.format(e=e, x=summaries[-1])
    return text, train, summaries


def _snapshot(folder: Path, conf: ReaderSettings | None = None) -> RunSnapshot:
    reader = RunReader(folder, settings=conf or ReaderSettings(), one_shot=True)
    reader.refresh()
    return reader.snapshot()


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_epoch_summary_beside_step_rows_is_no_training_row(tmp_path: Path, path: str) -> None:
    text, train, summaries = _paddle()
    (tmp_path / "workerlog.0").write_text(text)
    snap = _snapshot(tmp_path, PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(train), path
    assert not snap.metrics["step"].isna().any()
    losses = snap.evals[snap.evals["name"] == "loss"]
    assert losses["value"].tolist() == pytest.approx(summaries)
    assert losses["epoch"].tolist() == [1.0, 2.0]
    row = snap.ranks.iloc[0]  # the status table's count and last loss are the training rows'
    assert row["n_loss"] == len(train)
    assert row["last_loss"] == pytest.approx(train[-1])
    assert row["last_step"] == 3000


def test_epoch_lines_that_are_a_files_only_rows_stay_its_rows(tmp_path: Path) -> None:
    lines = (CMF.format(e=e, x=x) for e, x in ((1, "nan"), (1, 2.4179), (2, 2.1)))
    (tmp_path / "training.log").write_text("".join(lines))
    snap = _snapshot(tmp_path)
    got = snap.metrics["loss"].tolist()
    assert math.isnan(got[0]) and got[1:] == pytest.approx([2.4179, 2.1])
    assert snap.evals.empty


def test_a_summary_in_one_file_leaves_anothers_epoch_rows_alone(tmp_path: Path) -> None:
    """The choice is per file: rank 1's epoch-only rows stay rows although rank 0 has step rows."""
    text, train, _ = _paddle(epochs=1, steps=5)
    (tmp_path / "workerlog.0").write_text(text)
    (tmp_path / "workerlog.1").write_text(DONE.format(e=1, x=0.5) + DONE.format(e=2, x=0.25))
    snap = _snapshot(tmp_path)
    m = snap.metrics
    assert m[m["rank"] == 0]["loss"].tolist() == pytest.approx(train)
    assert m[m["rank"] == 1]["loss"].tolist() == pytest.approx([0.5, 0.25])
    assert snap.ranks.set_index("rank").loc[1, "n_loss"] == 2


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_a_live_tick_cut_anywhere_gives_the_same_series(tmp_path_factory: pytest.TempPathFactory, cut: int) -> None:
    """Read in two ticks cut at any byte (a summary seen before any step row of its file, too), the rows and
    the summaries are those of one read."""
    text, _, _ = _paddle(epochs=2, steps=20)
    text = DONE.format(e=0, x=0.9) + text  # a summary before any step row: a summary once step rows come
    data = text.encode()
    cut %= len(data) + 1
    live, once = cut_tick_and_once(tmp_path_factory.mktemp("ticks"), "workerlog.0", data, cut)
    cols = ["rank", "epoch", "step", "loss"]
    pd.testing.assert_frame_equal(live.metrics[cols], once.metrics[cols], check_dtype=False)
    assert live.evals["value"].tolist() == once.evals["value"].tolist()
    assert len(once.evals[once.evals["name"] == "loss"]) == 3


NANOGPT = "> 2023-03-22 09:31:56 iter {s}: loss {x}, time 1096.65ms, mfu 15.34%\n"
NANOGPT_EVAL = "> 2023-03-22 09:32:32 step {s}: train loss 4.0390, val loss 4.0427\n"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_step_printed_twice_in_a_rare_shape_is_its_own_series(tmp_path: Path, path: str) -> None:
    """nanoGPT (corpus nanogpt-iter-loss-turns-nan-quoted_nanogpt-215): the evaluation line at step 3000 beside
    `iter 3000: loss ...` is no training row; the recurring `iter N` rows all stay."""
    train = [(s, round(3.9 + s / 10_000, 4)) for s in range(2920, 3070, 10)]
    text = "".join((NANOGPT_EVAL.format(s=s) if s == 3000 else "") + NANOGPT.format(s=s, x=x) for s, x in train)
    (tmp_path / "train.log").write_text(text)
    snap = _snapshot(tmp_path, PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx([x for _, x in train]), path
    assert snap.metrics["step"].tolist() == [s for s, _ in train]
    assert sorted(snap.evals["value"].tolist()) == pytest.approx([4.039, 4.0427])
    assert set(snap.evals["step"]) == {3000}


def test_a_step_printed_twice_in_shapes_as_frequent_stays_two_rows(tmp_path: Path) -> None:
    """Two shapes printed alternately at one step (neither the recurring one), each its own loss: nothing is
    moved (the same loss on both would be an echo, one row: the TFLearn test below)."""
    text = "".join(f"step {s}: loss {s / 100}\nstep {s}: loss {s / 100 + 1}, time {s}ms\n" for s in range(1, 6))
    (tmp_path / "train.log").write_text(text)
    snap = _snapshot(tmp_path)
    assert len(snap.metrics) == 10
    assert snap.evals.empty


def test_a_nan_epoch_summary_beside_step_rows_is_an_evaluation_row(tmp_path: Path) -> None:
    """The rule is the line's shape, never its value: a NaN summary leaves the training rows as a finite one
    does, and its NaN stays visible in the evaluation series."""
    text, train, _ = _paddle(epochs=1, steps=5)
    (tmp_path / "workerlog.0").write_text(text + DONE.format(e=2, x="nan"))
    snap = _snapshot(tmp_path)
    assert snap.metrics["loss"].tolist() == pytest.approx(train)
    losses = snap.evals[snap.evals["name"] == "loss"]["value"].tolist()
    assert len(losses) == 2 and math.isnan(losses[-1])


TFLEARN_STEP = "Training Step: {s}  | total loss: {x} | time: 0.275s\n"
TFLEARN_ADAM = "| Adam | epoch: 001 | loss: {x} - acc: 0.{a} -- iter: {i:05d}/55000\n"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_step_echoed_in_a_shape_naming_fewer_values_is_one_row(tmp_path: Path, path: str) -> None:
    """TFLearn prints each step twice, the same loss on both lines: one row per step, the optimizer line's
    (it names more values: epoch, its iteration and total, acc); the last step's first line, not yet echoed,
    stays a row."""
    losses = [round(2.0304 - s / 100, 5) for s in range(8, 30)]
    text = "".join(
        TFLEARN_STEP.format(s=s, x=f"{x:.5f}") + TFLEARN_ADAM.format(x=f"{x:.5f}", a=2720 + s, i=64 * s)
        for s, x in zip(range(8, 30), losses, strict=True)
    )
    (tmp_path / "train.log").write_text(text + TFLEARN_STEP.format(s=30, x="1.54950"))
    snap = _snapshot(tmp_path, PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx([*losses, 1.5495]), path
    assert snap.metrics["acc"].notna().sum() == len(losses)
    assert snap.evals.empty  # an echo is the same value: no second series
    assert snap.ranks.iloc[0]["n_loss"] == len(losses) + 1


def test_an_equal_loss_now_and_then_in_another_shape_stays_a_row(tmp_path: Path) -> None:
    """Two neighbouring rows with one loss by chance (fewer than half of a shape's rows) are two steps."""
    lines = [f"step {s}, loss: {0.5 if s in (3, 4) else s / 10}\n" for s in range(1, 10)]
    lines[3] = "step 4, loss: 0.5, lr: 0.001\n"
    (tmp_path / "train.log").write_text("".join(lines))
    snap = _snapshot(tmp_path)
    assert snap.metrics["step"].tolist() == list(range(1, 10))


def test_neighbours_are_compared_within_one_rank_of_a_stream(tmp_path: Path) -> None:
    """mpirun's `--tag-output` stream of four ranks, rank 0 also printing its learning rate: rank 0's rows
    beside the other ranks' at the same step are no step printed twice (one rank's rows are compared)."""
    text = "".join(
        f"[1,{r}]<stdout>:epoch: 1 step: {s}, loss is {2.5 - s / 100 + r / 1000}{', lr: 0.001' if r == 0 else ''}\n"
        for s in range(1, 21)
        for r in range(4)
    )
    (tmp_path / "worker_0.log").write_text(text)
    snap = _snapshot(tmp_path)
    assert snap.metrics.groupby("rank").size().to_dict() == {0: 20, 1: 20, 2: 20, 3: 20}
    assert snap.evals.empty


DETR_TRAIN = (
    "Epoch: [0]  [{i:3d}/139]  eta: 0:38:49  lr: 0.000100  loss: {x} (5.7461)  loss_iou: {x} (5.7461)  "
    "loss_iou_unscaled: 0.0575 (0.0575)  time: 16.7567  data: 4.9102\n"
)
DETR_TEST = (
    "Test:  [{i:3d}/163]  eta: 0:00:05  loss: {x} (4.6502)  loss_iou: {x} (4.6502)  loss_iou_unscaled: 0.0377 "
    "(0.0465)  time: 5.1379  data: 0.0007\n"
)
DETR_END = (
    "Test: Total time: 0:16:00 (5.8897 s / it)\n"
    "Averaged stats: loss: 3.7735 (4.6502)  loss_iou: 3.7735 (4.6502)  loss_iou_unscaled: 0.0377 (0.0465)\n"
)


def test_a_test_pass_summary_is_counted_apart_from_its_evaluation_rows(tmp_path: Path) -> None:
    """DETR's MetricLogger (corpus detr-style-metric-logger-train-and-test-rows_rtd-paddle): a test pass's
    `Test: [k/163]` rows are the evaluation rows; its `Averaged stats:` line is a summary, in the evaluation
    series (a point per pass) but counted apart, as `watch --once` prints it."""
    text = "".join(DETR_TRAIN.format(i=i, x=5.7 - i / 100) for i in range(5))
    text += "".join(DETR_TEST.format(i=i, x=4.0 + i / 100) for i in range(4)) + DETR_END
    text += "".join(DETR_TRAIN.format(i=i, x=4.7 - i / 100) for i in range(5, 8))
    (tmp_path / "train.log").write_text(text)
    snap = _snapshot(tmp_path)
    assert len(snap.metrics) == 8
    lines = snap.evals.drop_duplicates("offset")
    assert lines["summary"].tolist() == [False] * 4 + [True]
    assert snap.evals[snap.evals["summary"] & (snap.evals["name"] == "loss")]["value"].tolist() == [3.7735]
    assert "loss rows=8, eval rows=4, summary rows=1" in watch_summary(snap)


def test_a_summary_after_no_evaluation_rows_is_counted_as_one(tmp_path: Path) -> None:
    """fairseq's epoch lines (corpus fairseq-train-rows-and-valid-line_fairseq-940) and an epoch summary moved
    from the training rows are the only evaluation a file gives: counted as evaluation rows."""
    text, _, _ = _paddle(epochs=2, steps=3)
    text += "| epoch 001 | valid on 'valid' subset | valid_loss 8.11425 | valid_nll_loss 6.8834 | valid_ppl 118.06\n"
    (tmp_path / "workerlog.0").write_text(text)
    snap = _snapshot(tmp_path)
    assert not snap.evals["summary"].any()
    assert "loss rows=6, eval rows=3" in watch_summary(snap)


def test_epoch_rows_that_outnumber_a_files_step_rows_stay_its_rows(tmp_path: Path) -> None:
    """A run that prints a row per epoch (models-cmf-fscil-3d's `Epoch 1 completed with avg loss: X`) and once a
    line with a step (`global_step: 194, loss: 1.997`): its epoch rows are no summaries (a summary is rarer than
    the rows it sums up), they stay its training rows."""
    rows = [CMF.format(e=e, x=round(2.5 - e / 10, 4)) for e in range(1, 11)]
    (tmp_path / "training.log").write_text("".join(rows[:5]) + "global_step: 194, loss: 1.997\n" + "".join(rows[5:]))
    snap = _snapshot(tmp_path)
    assert len(snap.metrics) == 11
    assert snap.evals.empty


def _pass_summaries_file_by_file(metrics: pd.DataFrame, evals: pd.DataFrame) -> list[bool]:
    """The rule stated one file and one summary at a time (what pass_summaries computes all at once)."""
    flag = evals["summary"].tolist()
    out = list(flag)
    for i, (file, off) in enumerate(zip(evals["file"], evals["offset"], strict=True)):
        if not flag[i]:
            continue
        before = [
            o for f, o, s in zip(evals["file"], evals["offset"], flag, strict=True) if f == file and not s and o < off
        ]
        rows = [o for f, o in zip(metrics["file"], metrics["offset"], strict=True) if f == file and o < off]
        out[i] = bool(before) and (not rows or max(before) > max(rows))
    return out


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from(["a.log", "b.log", "c.log"]), st.integers(0, 60)), max_size=30),
    entries=st.lists(
        st.tuples(st.sampled_from(["a.log", "b.log", "d.log"]), st.integers(0, 60), st.booleans()), max_size=30
    ),
)
def test_pass_summaries_all_at_once_is_the_rule_file_by_file(
    rows: list[tuple[str, int]], entries: list[tuple[str, int, bool]]
) -> None:
    metrics = pd.DataFrame(
        {"file": pd.Categorical([f for f, _ in rows]), "offset": np.array([o for _, o in rows], dtype=np.int64)}
    )
    evals = pd.DataFrame(
        {
            "file": [f for f, _, _ in entries],
            "offset": np.array([o for _, o, _ in entries], dtype=np.int64),
            "summary": [s for _, _, s in entries],
        }
    )
    got = pass_summaries(metrics, evals)
    assert got["summary"].tolist() == _pass_summaries_file_by_file(metrics, evals)
