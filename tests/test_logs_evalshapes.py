"""Evaluation lines of a shape read before are read by their template (core.logs.rows.evalshapes), and give the
entries the general reader gives (`add_read` of `read_loss`): the same names, values bit for bit, epoch, step,
time and rank. Issue 30: on the 1,024-rank real-corpus folder ~800 lines of each live tick went through the
general reader one at a time."""

from __future__ import annotations

import math
import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogFile, LogRole
from core.logs.rows.evalshapes import EvalShapes, make_eval_template, may_name_rank
from core.logs.rows.filestate import FileState, add_read, row_rank
from core.logs.rows.formats import read_loss
from core.logs.rows.lineranks import line_rank
from core.logs.rows.linetemplates import shape_key
from core.logs.rows.reader import RunReader

# real evaluation lines, from tests/fixtures/real_logs (entry in brackets)
EVAL_LINES = [
    # mindnlp-hf-trainer-eval-heavy_bit-flowers
    b"{'eval_loss': 0.40957605838775635, 'eval_accuracy': 0.921875, 'eval_runtime': 1.394, "
    b"'eval_samples_per_second': 0.717, 'eval_steps_per_second': 0.717, 'epoch': 1.0}",
    # detr-style-metric-logger-train-and-test-rows_rtd-paddle
    b"Test:  [162/163]  eta: 0:00:04  loss: 3.1047 (3.7816)  loss_iou: 3.1047 (3.7816)  "
    b"loss_iou_unscaled: 0.0310 (0.0378)  time: 4.1739  data: 0.0007",
    b"Averaged stats: loss: 3.1047 (3.7816)  loss_iou: 3.1047 (3.7816)  loss_iou_unscaled: 0.0310 (0.0378)",
    # megatron-deepspeed-log-ends-mid-run_microsoft-megatron-deepspeed-moe
    b" validation loss at iteration 100 | lm loss value: 9.082474E+00 | lm loss PPL: 8.799707E+03 | ",
    # deepspeed-vit-cifar-meters-tab-separated_deepspeedexamples-data-efficiency
    b"val[ 0/40]\tTime  2.171 ( 2.171)\tLoss 7.1221e-02 (7.1221e-02)\tAcc@1  98.44 ( 98.44)\tAcc@5 100.00 (100.00)",
    # mindnlp-hf-trainer-summary-dict_blenderbot-copa
    b"{'train_runtime': 1194.294, 'train_samples_per_second': 6.431, 'train_steps_per_second': 0.1, "
    b"'train_loss': 0.7326235515375932, 'epoch': 10.0}",
    # mindcv-0.3.0-cpu-resnet18_produced-here
    b"[2026-11-23 21:41:18] mindcv.utils.callbacks INFO - Validation Top_1_Accuracy: 50.0000%, time: 11.225095s",
    # mindformers-0.x-glm6b-rank1_llm-action (a stamped line: its time is the line's)
    b"[INFO] 2023-07-11 10:47:44,874 [/root/workspace/code/mindformers/scripts/mf_parallel1/mindformers/core/"
    b"callback/callback.py:146] epoch_end: Per sink_size step time: 7518.224 ms, per step time: 1879.556 ms, "
    b"avg loss: 2.499",
    # wenet-train-and-cv-batches-rank-suffix_wenet-941: a CV line naming its rank (one stream of several ranks)
    b"2023-01-30 18:49:55,773 DEBUG CV Batch 4/0 loss 28.517015 loss_att 24.142754 loss_ctc 38.723625 "
    b"history loss 27.957858 rank 2",
]

_RE_NUMBER_DIGITS = re.compile(rb"(?<![A-Za-z_@])\d+")  # digits outside words (the ones a shape masks and reads)


def _state() -> FileState:
    return FileState(LogFile(Path("worker_0.log"), "worker_0.log", LogRole.WORKER, 0, "msrun"))


def _by_general_reader(line: bytes, off: int, obs_time: float = 7.0) -> list[tuple]:
    st = _state()
    read = read_loss(line)
    if read is not None:
        add_read(st, read, off, obs_time, row_rank(st, line))
    return st.evals


def _same(a: list[tuple], b: list[tuple]) -> bool:
    """Entries equal, NaN equal to NaN and -0.0 told from 0.0 (bit for bit)."""
    return len(a) == len(b) and all(
        len(x) == len(y)
        and all(
            (u != u and v != v) or (u == v and (not isinstance(u, float) or math.copysign(1, u) == math.copysign(1, v)))
            for u, v in zip(x, y, strict=True)
        )
        for x, y in zip(a, b, strict=True)
    )


@st.composite
def _same_shape(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A real evaluation line, and a copy of it with other digits where its numbers are (the same shape)."""
    line = draw(st.sampled_from(EVAL_LINES))
    digits = st.text("0123456789", min_size=1, max_size=1)
    other = _RE_NUMBER_DIGITS.sub(lambda m: b"".join(draw(digits).encode() for _ in m.group(0)), line)
    return line, other


@settings(max_examples=300, deadline=None)
@given(pair=_same_shape())
@example(pair=(EVAL_LINES[3], EVAL_LINES[3].replace(b"9.082474", b"0.000000")))
def test_a_line_of_a_known_evaluation_shape_gives_the_general_reader_s_entries(pair: tuple[bytes, bytes]) -> None:
    learnt, line = pair
    assert shape_key(learnt) == shape_key(line)
    shapes = EvalShapes()
    read = read_loss(learnt)
    shapes.learn(shape_key(learnt), learnt, read)
    st_ = _state()
    taken = shapes.take(st_, shape_key(line), line, 42, 7.0)
    assert taken  # a one-off summary too (round 12: its flag is the template's, compared below as every field)
    want = _by_general_reader(line, 42)
    assert want and _same(st_.evals, want)


# icefall's row (tests/fixtures/real_logs/icefall-rank-of-world-paren-rows-ranks-0-6-4-last-cut_icefall-569): its
# `(rank/world)` names a rank only when rank < world, so two lines of one shape may differ
ICEFALL = (
    b"2022-10-23 14:53:29,352 INFO [train.py:907] (0/8) Epoch 3, batch 115350, loss[loss=0.2266, simple_loss=0.245, "
    b"pruned_loss=0.1042, over 493.00 frames. utt_duration=220.1 frames, utt_pad_proportion=0.3638, over 9.00 "
    b"utterances.]"
)


@settings(max_examples=300, deadline=None)
@given(pair=_same_shape())
@example(pair=(EVAL_LINES[-1], EVAL_LINES[-1].replace(b"rank 2", b"rank 7")))
def test_a_shape_that_may_name_no_rank_has_no_line_that_names_one(pair: tuple[bytes, bytes]) -> None:
    learnt, line = pair
    assert may_name_rank(learnt) == may_name_rank(line)
    if not may_name_rank(learnt):
        assert line_rank(line) is None
    else:
        assert line_rank(learnt) is not None  # (no real eval line holds icefall's `] (`)


def test_a_rank_of_world_tag_may_name_a_rank_whatever_its_values() -> None:
    beyond = ICEFALL.replace(b"(0/8)", b"(9/8)")  # the same shape, a rank past the world: no rank named
    assert line_rank(ICEFALL) is not None and line_rank(beyond) is None
    assert shape_key(ICEFALL) == shape_key(beyond) and may_name_rank(ICEFALL) and may_name_rank(beyond)
    assert not may_name_rank(EVAL_LINES[0]) and may_name_rank(EVAL_LINES[-1])  # HF's eval dict; WeNet's `rank 2`


def test_every_real_evaluation_line_has_a_template() -> None:
    for line in EVAL_LINES:
        read = read_loss(line)
        assert read is not None and read.eval, line
        assert make_eval_template(line, read) is not None, line


def test_a_summary_shape_gives_summary_entries_and_an_evaluation_shape_does_not() -> None:
    """The summary flag is the shape's: HF Trainer's closing dict and DETR's `Averaged stats:` (real lines above)
    give summary entries by template, as the general reader gives them; an eval dict of the same trainer none."""
    summaries = [line for line in EVAL_LINES if line.startswith((b"{'train_runtime'", b"Averaged stats:"))]
    assert len(summaries) == 2
    for line in (*summaries, EVAL_LINES[0]):
        shapes = EvalShapes()
        shapes.learn(shape_key(line), line, read_loss(line))
        st_ = _state()
        assert shapes.take(st_, shape_key(line), line, 5, 7.0)
        assert {e[7] for e in st_.evals} == {line in summaries} and _same(st_.evals, _by_general_reader(line, 5))


def test_a_training_line_or_another_word_digit_is_not_taken() -> None:
    shapes = EvalShapes()
    train = b"epoch: 1 step: 2, loss is 2.5"
    shapes.learn(shape_key(train), train, read_loss(train))  # no evaluation line: nothing learnt
    assert not shapes.take(_state(), shape_key(train), train, 0, 7.0)
    top1 = b"Validation acc_top1: 0.5, val_loss: 2.5"
    top5 = b"Validation acc_top5: 0.5, val_loss: 2.5"  # the same masked shape, another column
    shapes.learn(shape_key(top1), top1, read_loss(top1))
    st_ = _state()
    assert not shapes.take(st_, shape_key(top5), top5, 0, 7.0) and st_.evals == []
    assert shapes.take(st_, shape_key(top1), top1, 0, 7.0) and _same(st_.evals, _by_general_reader(top1, 0))


def test_a_file_of_repeated_evaluation_lines_reads_as_line_by_line(tmp_path: Path) -> None:
    """Through the reader: the first copy teaches the shape, the others are read by it; every entry is the
    general reader's (offsets and the named rank included)."""
    lines = [
        _RE_NUMBER_DIGITS.sub(lambda m, k=k: str(k % 10).encode() * len(m.group(0)), EVAL_LINES[k % len(EVAL_LINES)])
        for k in range(40)
    ]
    (tmp_path / "worker_0.log").write_bytes(b"\n".join(lines) + b"\n")
    reader = RunReader(tmp_path)
    reader.refresh()
    want: list[tuple] = []
    off = 0
    for line in lines:
        want += _by_general_reader(line, off, float("nan"))  # a first read: no observation time
        off += len(line) + 1
    got = next(iter(reader.files.values())).evals
    assert len(want) > 40 and _same(got, want)
