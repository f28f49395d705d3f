"""Issue 30's row-reading known gaps closed in round 9 (gaps9rows), each by a rule stated by the line's shape and
checked on the real lines of its corpus entry (tests/fixtures/real_logs/<entry>/SOURCE.md); the grammar entries
(core.logs.rows.notations_trainers) read the same samples on every path (tests/test_grammar_entries.py).

- swin-style-log-rank0-rank1-files-seven-launches-one-tab-row-each_xclip-log-rank: `mem 0MB`, an integer glued to a
  unit of bytes, is the metric `mem`; a hex number, a dtype, an error code or a clock time in its place is none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs.rows.general import read_line
from tests.helpers import REAL_LOGS, read_both_ways

SWIN = "swin-style-log-rank0-rank1-files-seven-launches-one-tab-row-each_xclip-log-rank"


def _swin_row() -> bytes:
    """The real row of log_rank0.txt (krishwin/xclip@8cccc88, line 110): `... tot_loss 0.4772 (0.4772)\\tmem 0MB`."""
    lines = (REAL_LOGS / SWIN / "log" / "log_rank0.txt").read_bytes().splitlines()
    [row] = [line for line in lines if b"tot_loss" in line]
    return row


@pytest.mark.parametrize("unit", [b"MB", b"GB", b"KiB", b"GiB", b"mb"])
def test_an_integer_glued_to_a_bytes_unit_is_a_metric(tmp_path: Path, unit: bytes) -> None:
    """`mem 0MB` (and the same shape with other digits and byte units) is `mem`, line by line and in bulk."""
    row = _swin_row()
    assert row.endswith(b"\tmem 0MB")
    for digits in (b"0", b"1234"):
        line = row[: -len(b"0MB")] + digits + unit
        read = read_line(line)
        assert read is not None and read.extras.get("mem") == float(digits), line
        assert read.fields["loss"] == pytest.approx(0.4772)
    one, bulk, _ = read_both_ways(tmp_path, [row.decode()] * 40)
    for snap in (one, bulk):
        assert "mem" in snap.metrics.columns and (snap.metrics["mem"] == 0).all()


@pytest.mark.parametrize("value", [b"0x1f", b"fp16", b"E39999", b"0:08:30", b"16fp8", b"0MBx", b"7B"])
def test_words_glued_to_digits_that_are_no_unit_stay_no_value(value: bytes) -> None:
    """A hex number, a dtype, an Ascend error code, a clock time (the row's own `eta 0:08:30`), a unit followed by
    more letters, a bare `B` (a model's size, `7B`): none is the value of `mem`; the row's loss stays."""
    row = _swin_row()
    line = row[: -len(b"0MB")] + value
    read = read_line(line)
    assert read is not None and read.fields["loss"] == pytest.approx(0.4772)
    assert "mem" not in read.extras and "eta" not in read.extras, line
