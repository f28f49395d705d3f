"""Loss lines with terminal codes of a shape read before are read by a template of what the general reader reads of
them (core.logs.rows.ansishapes), and give the rows the general reader gives (`add_read` of `read_loss`): the same
columns and values bit for bit, time, rank, metric spellings. Issue 30: verl's coloured step line (~3 KB, ~75
metrics) went through the general reader at every copy, a third of the parse of a live tick of the real-corpus
folder."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogFile, LogRole
from core.logs.rows.ansishapes import AnsiShapes
from core.logs.rows.filestate import FileState, add_read, row_rank
from core.logs.rows.formats import read_loss
from core.logs.rows.general import read_line, without_ansi
from core.logs.rows.linetemplates import shape_key
from core.logs.rows.parser import Parser
from core.logs.rows.redraws import bar_of
from tests.helpers import cut_tick_and_once

REAL = Path(__file__).parent / "fixtures" / "real_logs"
VERL = REAL / "verl-npu-ray-taskrunner-ansi-step-dash-metrics-pg-loss-5-rows_mindrlhf-sync-training-log" / "log"
VERL_GRPO = REAL / "verl-grpo-ray-taskrunner-21-steps-then-actorunavailableerror_verl-fork-train-out" / "log"
POSEFIX = REAL / "ansi-epoch-itr-loss-h-loss-c-rows-then-geop-doRunAsync-E19999_posefix-ascend-train-0" / "log"
RICH = REAL / "lightning-rich-epoch-lines-sci-notation-plus-wandb-summary-err_tmr-train-out-err" / "log"
ANSI_LOGS = (
    VERL / "sync_training_log_20260105_171127.txt",
    VERL_GRPO / "train.out",
    POSEFIX / "train_0.log",
    RICH / "train.out",
)


def _first(path: Path, start: bytes) -> bytes:
    """The first line of a real log that starts with `start` (the long ones are not copied here)."""
    return next(line for line in path.read_bytes().split(b"\n") if line.startswith(start))


# real lines with terminal codes, from tests/fixtures/real_logs (entry in brackets)
ROW_LINES = [
    # ansi-epoch-itr-loss-h-loss-c-rows-then-geop-doRunAsync-E19999_posefix-ascend-train-0 (train_0.log line 62)
    b"\x1b[92m08-19 02:03:01\x1b[0m Epoch 0 itr 1/9364: lr: 5e-05 speed: 0.00(0.00s r0.00)s/itr 0.00h/epoch "
    b"loss_h: 5.7336 loss_c: 7.9299",
    # lightning-rich-epoch-lines-sci-notation-plus-wandb-summary-err_tmr-train-out-err (train.out line 28: a bar's
    # draw, a cursor-up, then rich's coloured epoch line)
    _first(RICH / "train.out", b"\rValidation: |          | 0/? [00:00<?, ?it/s]\x1b[A[\x1b[37m12/09/24"),
    # verl-npu-ray-taskrunner-ansi-step-dash-metrics-pg-loss-5-rows_mindrlhf-sync-training-log (~3 KB step line)
    _first(VERL / "sync_training_log_20260105_171127.txt", b"\x1b[36m(TaskRunner pid=34683)\x1b[0m step:1 - "),
    # verl-grpo-ray-taskrunner-21-steps-then-actorunavailableerror_verl-fork-train-out
    _first(VERL_GRPO / "train.out", b"\x1b[36m(TaskRunner pid=625502)\x1b[0m step:1 - "),
]
NO_ROW_LINES = [
    # verl-npu-ray-taskrunner-ansi-step-dash-metrics-pg-loss-5-rows_mindrlhf-sync-training-log
    b"\x1b[36m(TaskRunner pid=34683)\x1b[0m (\"Initial validation metrics: {'val-aux/openai/gsm8k/reward/mean@1': "
    b'0.0, "',
    # detr-style-metric-logger-train-and-test-rows_rtd-paddle (paddle_train_3.log line 76)
    b"\x1b[31mevaluate\x1b[0m",
    # pcn-tf-npu-tensorpack-ansi-276-loss-rows-log-just-ends_ascend-modelzoo-tf-pcn (run.log line 52)
    b"\x1b[32m[0523 09:10:14 @format.py:92]\x1b[0m Found 800 entries in /home/test_user01/dataset/shapenet/valid.lmdb",
]

# digits outside words (a code's too, `\x1b[36m`, and those glued to a code, `\x1b[92m08-19`, a word's only there)
_RE_NUMBER_DIGITS = re.compile(rb"(?<![A-Za-z_@0-9])\d+|(?<=\x1b\[[0-9][0-9]m)\d+")


def _state() -> FileState:
    return FileState(LogFile(Path("worker_0.log"), "worker_0.log", LogRole.WORKER, 0, "msrun"))


def _rows(st_: FileState) -> tuple[bytes, list[tuple[str, bytes, bytes]], dict[str, str], dict[str, int]]:
    """A file's rows bit for bit: the block, each other metric's rows and values, the spellings, the hosts."""
    block, extras = st_.rows.take_all()
    more = [(name, idx.astype(np.int64).tobytes(), vals.tobytes()) for name, (idx, vals) in extras.items()]
    return block.tobytes(), more, dict(st_.metric_keys), dict(st_.hosts)


def _by_general_reader(line: bytes, off: int, obs_time: float = 7.0) -> tuple[bool, FileState]:
    """What `Parser.metric_line` did with every copy of a line with terminal codes before: `add_read` of `read_loss`."""
    st_ = _state()
    read = read_loss(line)
    if read is not None:
        add_read(st_, read, off, obs_time, row_rank(st_, line), bar_of(line), -1)
    return read is not None, st_


@st.composite
def _same_shape(draw: st.DrawFn, lines: list[bytes]) -> tuple[bytes, bytes]:
    """A real line with terminal codes, and a copy of it with other digits outside words (the same shape)."""
    line = draw(st.sampled_from(lines))
    digits = st.text("0123456789", min_size=1, max_size=1)
    other = _RE_NUMBER_DIGITS.sub(lambda m: b"".join(draw(digits).encode() for _ in m.group(0)), line)
    return line, other


@settings(max_examples=300, deadline=None)
@given(pair=_same_shape(ROW_LINES + NO_ROW_LINES))
@example(pair=(ROW_LINES[0], ROW_LINES[0].replace(b"5.7336", b"0.0000").replace(b"[92m", b"[31m")))
@example(pair=(ROW_LINES[2], ROW_LINES[2]))
def test_a_line_of_a_known_shape_with_terminal_codes_gives_the_general_reader_s_row(pair: tuple[bytes, bytes]) -> None:
    learnt, line = pair
    assert shape_key(learnt) == shape_key(line)
    shapes = AnsiShapes()
    shapes.learn(shape_key(learnt), learnt, read_loss(learnt))
    st_ = _state()
    taken = shapes.take(st_, shape_key(line), line, 42, 7.0)
    assert taken is not None  # every real shape here has a template (or none: no row)
    read, want = _by_general_reader(line, 42)
    assert taken == read == (learnt in ROW_LINES)
    assert _rows(st_) == _rows(want)


def test_the_reader_reads_what_is_left_of_a_line_without_its_codes() -> None:
    """`without_ansi` is what `read_line` reads (a bar's draw before a cursor-up dropped, the codes dropped)."""
    for line in ROW_LINES:
        text = without_ansi(line)
        assert b"\x1b" not in text and read_line(text) == read_line(line)
    assert without_ansi(ROW_LINES[1]).startswith(b"[12/09/24 14:03:31] INFO   Epoch 0: v_recons 4.545e-01")


def test_a_shape_read_as_an_evaluation_or_a_plain_line_stays_with_the_general_reader() -> None:
    """No template of an evaluation line (nor of a line without codes: the parser's own templates): `take` says None."""
    shapes = AnsiShapes()
    evaluation = b"\x1b[32mINFO\x1b[0m Epoch 3: val_loss: 0.512 val_acc: 0.81"  # (a coloured eval line, made here)
    read = read_loss(evaluation)
    assert read is not None and read.eval
    shapes.learn(shape_key(evaluation), evaluation, read)
    assert shapes.take(_state(), shape_key(evaluation), evaluation, 0, 7.0) is None
    plain = without_ansi(ROW_LINES[0])
    shapes.learn(shape_key(plain), plain, read_loss(plain))
    assert shapes.take(_state(), shape_key(plain), plain, 0, 7.0) is None


@settings(max_examples=40, deadline=None)
@given(path=st.sampled_from(ANSI_LOGS), data=st.data())
def test_a_real_log_s_lines_give_one_parser_the_rows_a_fresh_parser_gives_each(path: Path, data: st.DataObject) -> None:
    """Every line of a real log with terminal codes from a drawn line on, into one parser (its shapes learnt from the
    first copies) and each into a fresh parser (the general reader, as every copy was read before): the same rows."""
    lines = path.read_bytes().split(b"\n")
    first = data.draw(st.integers(0, len(lines) - 1))
    one, shared, each = _state(), Parser(), _state()
    off = 0
    for line in lines[first:]:
        line = line.removesuffix(b"\r")
        shared.metric_line(one, line, off, 7.0, off + len(line))
        Parser().metric_line(each, line, off, 7.0, off + len(line))
        off += len(line) + 1
    assert _rows(one) == _rows(each)


@settings(max_examples=25, deadline=None)
@given(path=st.sampled_from(ANSI_LOGS), data=st.data())
def test_a_live_read_cut_anywhere_gives_the_rows_of_one_read(
    path: Path, data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A real log with terminal codes read live in two ticks cut at any byte (the second tick's copies read by the
    shapes the first learnt) and read once: the same table."""
    raw = path.read_bytes()
    cut = data.draw(st.integers(0, len(raw)))
    live, once = cut_tick_and_once(tmp_path_factory.mktemp("ansi"), "worker_0.log", raw, cut)
    got = live.metrics.drop(columns=["file"]).reset_index(drop=True)
    want = once.metrics.drop(columns=["file"]).reset_index(drop=True)
    assert list(got.columns) == list(want.columns) and len(got) == len(want) > 0
    for column in got.columns:
        assert np.array_equal(got[column].to_numpy(), want[column].to_numpy(), equal_nan=True), column
