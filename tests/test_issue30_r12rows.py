"""Round 12's build set, rows (issue 30): rules from logs read wrong, each stated for logs in general.

- an eval split's name as a key with its own number (`val=0.558900`) is a metric, not a word making the line's loss
  an evaluation's (core.logs.rows.splitkeys.split_score): GluonCV's CIFAR trainer prints `[Epoch N] train=A val=B
  loss=X time: T` once per epoch (dmlc/web-data gluoncv/logs/classification/cifar/cifar_resnet20_v1.log), the
  splits' accuracies, then the training loss; `valid on 'valid' subset ... loss=`, `Test net output #1: loss = ` stay
  evaluation lines.
- a logger's CSV table with a date-and-time column and the loss beside its parts (core.logs.rows.columns): PyTorch
  Lightning's CSVLogger `metrics.csv` (IceClear/StableSR#161): the date is when the row was written, no metric and no
  reason to refuse the row; the column named the loss itself (`train/loss_step`) is the loss, its parts
  (`train/loss_simple_step`, `train/loss_vlb_step`) metrics; `global_step` the step.
The notations are entries of core.logs.rows.notations_rows12, read on every path by tests/test_grammar_entries.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.rows.columns import header_of, read_row
from core.logs.rows.general import read_line
from tests.helpers import READ_PATHS

# dmlc/web-data gluoncv/logs/classification/cifar/cifar_resnet20_v1.log (898b202e), lines 3-5
GLUONCV = [
    "INFO:root:[Epoch 0] train=0.467608 val=0.558900 loss=1.452417 time: 16.450441",
    "INFO:root:[Epoch 1] train=0.654387 val=0.690600 loss=0.976340 time: 16.356752",
    "INFO:root:[Epoch 2] train=0.725621 val=0.734700 loss=0.779339 time: 16.056174",
]
# IceClear/StableSR#161, the pasted metrics.csv (header and its first three rows)
STABLESR = [
    "train/loss_simple_step,train/loss_vlb_step,train/loss_step,global_step,epoch,created_at",
    "0.25144094228744507,0.001727868104353547,0.25144094228744507,49.0,0,2025-11-07 06:02:10.484610",
    "0.0960497185587883,0.0004331176169216633,0.0960497185587883,99.0,0,2025-11-07 06:09:01.771131",
    "0.10094963759183884,0.00045272731222212315,0.10094963759183884,149.0,0,2025-11-07 06:15:52.570149",
]


def test_a_split_named_as_a_metric_key_leaves_the_loss_a_training_one() -> None:
    read = read_line(GLUONCV[0])
    assert read is not None and not read.eval
    assert read.fields["loss"] == 1.452417 and read.fields["epoch"] == 0
    assert read.extras["val"] == 0.5589 and read.extras["train"] == 0.467608


@pytest.mark.parametrize(
    "line",
    [
        # fairseq-2018-running-average-epoch-summaries_fairseq-301 (facebookresearch/fairseq#301)
        "| epoch 010 | valid on 'valid' subset  1000 / 1311 loss=1.60",
        # caffe-train-net-output-duplicates-loss-then-minus-nan-with-test-lines_caffe-4449 (BVLC/caffe#4449)
        "I0712 12:10:30.403271  3123 solver.cpp:404]     Test net output #1: loss = 2.48997 (* 1 = 2.48997 loss)",
        # the split's name then `=` and no number of its own: still the word (GluonCV's line, its value cut)
        "INFO:root:[Epoch 0] train=0.467608 val= loss=1.452417",
        # a split's name with a count after `=` (`3/10`): no score of its own
        "INFO:root:[Epoch 0] val=3/10 loss=1.452417",
    ],
)
def test_an_eval_split_s_word_before_the_loss_still_makes_an_evaluation_line(line: str) -> None:
    read = read_line(line)
    assert read is not None and read.eval, line


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_gluoncv_epoch_rows_are_the_training_series_on_every_path(tmp_path: Path, path: str) -> None:
    (tmp_path / "cifar_resnet20_v1.log").write_text("\n".join(GLUONCV * 20) + "\n", encoding="utf-8")
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    assert len(snap.metrics) == 60 and snap.evals.empty
    assert snap.metrics["loss"].iloc[0] == 1.452417 and snap.metrics["loss"].iloc[-1] == 0.779339


def test_a_csv_row_with_a_date_cell_reads_the_loss_itself_not_its_first_part() -> None:
    header = header_of(STABLESR[0].encode())
    assert header is not None and header.names[header.loss or 0] == "train/loss_step"
    read = read_row(header, STABLESR[1].encode())
    assert read is not None and not read.eval
    assert read.fields["loss"] == 0.25144094228744507 and read.fields["step"] == 49 and read.fields["epoch"] == 0
    assert read.extras["train/loss_vlb_step"] == 0.001727868104353547 and "created_at" not in read.extras


def test_a_csv_s_first_loss_column_stays_the_loss_where_none_is_named_the_loss_itself() -> None:
    # Ultralytics' results.csv names only the loss's parts (tests/fixtures/real_logs/ultralytics-yolo12-results-csv-*)
    header = header_of(b"epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B)")
    assert header is not None and header.loss == 2


def test_a_date_under_the_loss_is_no_row() -> None:
    header = header_of(STABLESR[0].encode())
    assert header is not None
    cells = STABLESR[1].split(",")
    cells[2] = "2025-11-07 06:02:10.484610"  # the loss's cell a date: no row
    assert read_row(header, ",".join(cells).encode()) is None


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_lightning_metrics_csv_reads_its_rows_on_every_path(tmp_path: Path, path: str) -> None:
    (tmp_path / "metrics.csv").write_text("\n".join([STABLESR[0], *STABLESR[1:] * 10]) + "\n", encoding="utf-8")
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    assert len(snap.metrics) == 30
    assert snap.metrics["loss"].iloc[0] == 0.25144094228744507 and snap.metrics["step"].iloc[2] == 149
    assert "created_at" not in snap.metrics.columns
