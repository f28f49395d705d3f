"""A plain line a log prints again and again is read to nothing once, then skipped by the bulk path, and the reading
stays the line-by-line one's (issue 30, speed on shapes like the real ones).

`Number of training samples: 104` (MindCV's data loader, tests/fixtures/logs/formats) holds the failure anchor
` training`, so the bulk path's literal search hands every copy to `Parser.parse_line`, which reads it to nothing
(core.logs.rows.plainmemo). A copy that a file's state could read otherwise (a host prefix before a traceback's
frame, a keyword the metric reader learns a shape from) is never skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.rows.plainmemo import PlainMemo
from tests.helpers import read_both_ways, same_snapshot

_LOSS = (
    "[2026-09-21 14:13:{s:02d}] mindcv.utils.callbacks INFO - Epoch: [1/2], batch: [{step}/300], "
    "loss: {loss:.6f}, lr: 0.010000, time: 0.500000s"
)
_PLAIN = "Number of training samples: {n}"  # MindCV 0.3.0's data loader line (tests/fixtures/logs/formats)


def _mindcv_log(every: int = 3) -> list[str]:
    lines = []
    for step in range(1, 301):
        lines.append(_LOSS.format(s=step % 60, step=step, loss=2.3 - step / 1000))
        if step % every == 0:
            lines.append(_PLAIN.format(n=104 + step % 2))
    return lines


def test_a_plain_line_printed_again_is_read_once_then_skipped_in_bulk(tmp_path: Path) -> None:
    """100 copies per rank of two plain texts with the ` training` anchor: before, each copy went through the line
    reader (300 lines one by one); now each text is read once and the reading is the line-by-line one's."""
    one_by_one, bulk, calls = read_both_ways(tmp_path, _mindcv_log())
    assert len(bulk.metrics) == 900
    same_snapshot(bulk, one_by_one)
    assert len(calls) < 20, f"{len(calls)} lines read one by one"


def test_a_repeated_failure_line_with_the_anchor_is_a_failure_every_time(tmp_path: Path) -> None:
    """A plain line that is a failure (`Exception in main training loop`) is never remembered as read to nothing."""
    lines = _mindcv_log()
    lines[100:100] = ["Exception in main training loop: Caught RuntimeError in replica 0 on device 0."] * 3
    one_by_one, bulk, _ = read_both_ways(tmp_path, lines)
    same_snapshot(bulk, one_by_one)
    assert len(bulk.errors) == len(one_by_one.errors) >= 3


_PIECES = [
    _LOSS.format(s=7, step=7, loss=1.5),
    _PLAIN.format(n=104),
    _PLAIN.format(n=104) + "\r",
    "  " + _PLAIN.format(n=104),  # indented: a traceback's frame when one is pending
    "worker-1: " + _PLAIN.format(n=104),  # a host prefix (pdsh)
    'worker-1:   File "train.py", line 3, in <module>',  # behind it, a frame once a traceback is pending
    "[rank1]: " + _PLAIN.format(n=104),
    "Number of val samples: 12 training",  # a keyword: the metric reader's to learn from
    "Traceback (most recent call last):",
    '  File "train.py", line 9, in <module>',
    "RuntimeError: device lost during training",
    "Loss in not finite. Terminate training.",
    "Start training",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=40))
@example(pieces=[_PIECES[1], _PIECES[8], _PIECES[3], _PIECES[1], _PIECES[10], _PIECES[3], _PIECES[1]])
@example(pieces=[_PIECES[4], _PIECES[5], _PIECES[8], _PIECES[5], _PIECES[4], _PIECES[10], _PIECES[5]])
def test_skipped_copies_read_as_line_by_line_in_any_order(
    tmp_path_factory: pytest.TempPathFactory, pieces: list[str]
) -> None:
    """Whatever comes before a copy (a traceback pending, a host's series, a failure), the bulk read that skips
    copies gives the snapshot of the line-by-line read (the loss lines give the bulk path its rows)."""
    lines = [_LOSS.format(s=k % 60, step=k, loss=2.0 - k / 1000) for k in range(1, 40)]
    lines += pieces * 3
    one_by_one, bulk, _ = read_both_ways(tmp_path_factory.mktemp("memo"), lines)
    same_snapshot(bulk, one_by_one)


@pytest.mark.parametrize(
    ("line", "remembered"),
    [
        (b"Number of training samples: 104", True),
        (b"Number of val samples: 12 training", False),  # a keyword
        (b"Train loss at the end of training", False),
        (b'worker-1:   File "train.py", line 3, in <module>', False),  # a frame behind a host once one is pending
        (b"x" * 1025 + b" training", False),  # too long to remember
    ],
)
def test_only_lines_no_state_reads_otherwise_are_remembered(line: bytes, remembered: bool) -> None:
    memo = PlainMemo()
    memo.note_nothing(line)
    buf = b"\n" + line + b"\n"
    assert memo.read_nothing(buf, 1, len(buf) - 1) is remembered


def test_the_memo_is_bounded() -> None:
    """A flood of distinct lines empties it rather than growing it (4,096 lines at most)."""
    memo = PlainMemo()
    for k in range(5000):
        memo.note_nothing(b"Number of training samples: %d" % k)
    buf = b"\nNumber of training samples: 4999\nNumber of training samples: 1\n"
    assert memo.read_nothing(buf, 1, 33)
    assert not memo.read_nothing(buf, 34, len(buf) - 1)
