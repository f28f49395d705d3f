"""Round 3's set-aside logs, after their measure (issue 30 item 6): the rules their misreadings asked for, on
their real lines (tests/fixtures/real_logs/monodepth-style-pipe-rows-lr-lr-p-examples-s_lite-mono-98)."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from core.logs.rows.general import read_line

MONODEPTH = (
    b"epoch   0 | lr 0.000100 |lr_p 0.000100 | batch    250 | examples/s:  22.1 | loss: 0.13400 | "
    b"time elapsed: 00h03m34s | time left: 23h42m04s"
)


def test_a_pipe_row_with_a_batch_counter_is_a_training_row_with_its_step() -> None:
    """`| batch N |` is where the row is within its epoch: a step, so the row is no epoch summary."""
    read = read_line(MONODEPTH)
    assert read is not None and not read.eval
    assert read.fields["loss"] == 0.134 and read.fields["epoch"] == 0.0 and read.fields["step"] == 250.0


def test_a_pipe_table_reads_its_space_separated_fields_beside_its_colon_ones() -> None:
    read = read_line(MONODEPTH)
    assert read is not None
    assert read.fields["lr"] == 0.0001 and read.extras["lr_p"] == 0.0001 and read.extras["examples_s"] == 22.1


def test_a_clock_duration_is_no_value() -> None:
    """`00h03m34s` is a duration, not 0 with a unit `h`: no `time_elapsed` = 0 column."""
    read = read_line(MONODEPTH)
    assert read is not None and "time_elapsed" not in read.extras and "time_left" not in read.extras


def test_a_batch_size_or_a_per_batch_rate_is_no_step() -> None:
    """fairseq's `words/batch 906` and `batch size 32` name no position in the epoch."""
    read = read_line(b"| epoch 010 | train loss 1.44 | words/batch    906 | bsz    32 | lr 0.001000 |")
    assert read is not None and "step" not in read.fields
    read = read_line(b"epoch 1 | batch size 32 | loss: 0.5")
    assert read is not None and "step" not in read.fields


@given(
    batch=st.integers(0, 10**6),
    lr=st.floats(1e-8, 1.0, allow_nan=False),
    loss=st.floats(0, 100, allow_nan=False),
)
def test_any_monodepth_row_reads_its_numbers(batch: int, lr: float, loss: float) -> None:
    line = f"epoch   3 | lr {lr:.6f} |lr_p {lr:.6f} | batch {batch:>6} | examples/s:  9.5 | loss: {loss:.5f}".encode()
    read = read_line(line)
    assert read is not None and not read.eval
    assert read.fields["step"] == batch and math.isclose(read.fields["loss"], float(f"{loss:.5f}"))
    assert read.fields["lr"] == float(f"{lr:.6f}")
