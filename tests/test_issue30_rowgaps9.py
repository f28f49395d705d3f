"""Issue 30's row-reading known gaps closed in round 9 (gaps9rows), each by a rule stated by the line's shape and
checked on the real lines of its corpus entry (tests/fixtures/real_logs/<entry>/SOURCE.md); the grammar entries
(core.logs.rows.notations_trainers) read the same samples on every path (tests/test_grammar_entries.py).

- swin-style-log-rank0-rank1-files-seven-launches-one-tab-row-each_xclip-log-rank: `mem 0MB`, an integer glued to a
  unit of bytes, is the metric `mem`; a hex number, a dtype, an error code or a clock time in its place is none;
- keras-csvlogger-training-log-csv-header-loss-fourth-column-24-epochs_brats2020-training-log: a CSV table's other
  columns (`accuracy`, `lr`, ...) are the row's metrics; a space-aligned table's counts (`Instances`) stay none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs.rows.columns import header_of, read_row
from core.logs.rows.general import read_line
from tests.helpers import READ_PATHS, REAL_LOGS, read_both_ways, read_entry

SWIN = "swin-style-log-rank0-rank1-files-seven-launches-one-tab-row-each_xclip-log-rank"
KERAS = "keras-csvlogger-training-log-csv-header-loss-fourth-column-24-epochs_brats2020-training-log"


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


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_csv_tables_other_columns_are_metrics_on_every_path(tmp_path: Path, path: str) -> None:
    """Keras' CSVLogger file (4hmetcakmak/BraTS2020CapstoneProject@4e61e46 training.log, 24 epochs): each row's
    `accuracy`, `dice_coef`, `mean_io_u_5`, `precision` and the `val_` columns are metrics, `lr` its lr column."""
    snap = read_entry(tmp_path, KERAS, path)
    m = snap.metrics
    assert len(m) == 24
    assert m["accuracy"].iloc[0] == pytest.approx(0.9847438335418701)
    assert m["lr"].iloc[0] == pytest.approx(0.001)
    for name in ("accuracy", "dice_coef", "mean_io_u_5", "precision", "val_accuracy", "val_loss"):
        assert m[name].notna().all(), name
    assert {"accuracy", "lr", "precision"} <= set(snap.metric_keys.values())


def test_a_space_aligned_tables_counts_stay_no_metric() -> None:
    """Ultralytics' epoch table (ultralytics/ultralytics#1654): `Instances` and `Size` are counts, no metric; only
    its loss columns are (the CSV rule is a logger's table of values, not a terminal's)."""
    header = header_of(b"      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size")
    assert header is not None
    read = read_row(header, b"     20/300      16.1G      1.477     0.7796      1.028        120        800")
    assert read is not None and read.fields["loss"] == pytest.approx(1.477)
    assert set(read.extras) == {"cls_loss", "dfl_loss"}
