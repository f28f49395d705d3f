"""Issue 30, round 9's tables and one-row-per-record files: a trainer's record file found by the name it writes it
under (Ultralytics' `results.csv`, detectron2's `metrics.json`, console output pasted into a `.md` named output or
results), a CSV header of `train/box_loss`-style names, and a NaN loss echoed on its step's next line (Caffe's
`Train net output #0: loss = -nan`) read as one row. The notations (TSV table, YOLOv5's bare loss parts, TF
Estimator's evaluation dict) are entries of core.logs.rows.notations_trainers, read by tests/test_grammar_entries.

Real lines, from round 9's build set:
- Ultralytics YOLO12 results.csv: https://github.com/1527171/HandRaisingDetector-YOLO12n/blob/
  2f51500a151ac3af04855ee8f9c9c232748a0a29/runs/detect/train/results.csv
- detectron2 JSONWriter metrics.json: https://github.com/Levi-Magny/Train-Detectron2/blob/
  857f1975bf6d6efa183c6d223ea6e5253bb9ee87/output/metrics.json
- Stable-Baselines3 DQN logger tables: https://github.com/ZeshiWu/ML-capstone-project-/blob/
  2f33adf820509cd8a83e190aa7099614d784d6ae/Joy_breakout_result_conclusion/
  joy_breakout_results_0.0005%20learning%20rate.md
- Caffe's solver lines: https://github.com/BVLC/caffe/issues/4449
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.bytes.discover import discover
from core.logs.judgement.status import failed_ranks
from tests.helpers import READ_PATHS

RESULTS_CSV = (
    "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
    "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n"
    "1,38.7726,1.92084,2.57206,1.82703,0.27642,0.34082,0.22955,0.09727,1.85976,2.58241,1.84569,0.000662037,"
    "0.000662037,0.000662037\n"
    "2,70.743,1.94633,2.41126,1.9055,0.2067,0.32355,0.17712,0.0635,1.97485,3.27414,1.95913,0.00131555,0.00131555,"
    "0.00131555\n"
)
METRICS_JSON = (
    '{"data_time": 0.008784004487097263, "eta_seconds": 5065.550323819043, "fast_rcnn/cls_accuracy": 0.39453125, '
    '"fast_rcnn/false_negative": 0.5419018671298307, "fast_rcnn/fg_cls_accuracy": 0.4580981328701693, '
    '"iteration": 19, "loss_box_reg": 0.5456014573574066, "loss_cls": 0.7278757691383362, "loss_mask": '
    '0.6871292293071747, "loss_rpn_cls": 0.04116789996623993, "loss_rpn_loc": 0.00676617375575006, "lr": '
    '1.60675e-05, "mask_rcnn/accuracy": 0.8547507060860059, "mask_rcnn/false_negative": 0.14134715461120045, '
    '"mask_rcnn/false_positive": 0.029457166956222018, "roi_head/num_bg_samples": 104.75, '
    '"roi_head/num_fg_samples": 23.25, "rpn/num_neg_anchors": 244.5, "rpn/num_pos_anchors": 11.5, "time": '
    '18.091251156496583, "total_loss": 2.0359768134658225}\n'
)
SB3_TABLE = """----------------------------------
| rollout/            |          |
|    ep_len_mean      | 227      |
|    ep_rew_mean      | 1.65     |
|    exploration_rate | 0.904    |
| time/               |          |
|    episodes         | 2000     |
|    fps              | 21       |
|    time_elapsed     | 744      |
|    total_timesteps  | 15981    |
| train/              |          |
|    learning_rate    | 0.0005   |
|    loss             | 0.000102 |
|    n_updates        | 1495     |
----------------------------------
"""
CAFFE = """ I0712 12:10:30.398227  3123 solver.cpp:404]     Test net output #0: accuracy = 0
I0712 12:10:30.403271  3123 solver.cpp:404]     Test net output #1: loss = 2.48997 (* 1 = 2.48997 loss)
I0712 12:10:37.058244  3123 solver.cpp:228] Iteration 0, loss = 2.46876
I0712 12:10:37.058358  3123 solver.cpp:244]     Train net output #0: loss = 2.46876 (* 1 = 2.46876 loss)
I0712 12:10:37.058405  3123 sgd_solver.cpp:106] Iteration 0, lr = 0.01
I0712 12:18:40.334496  3123 solver.cpp:228] Iteration 100, loss = -nan
I0712 12:18:40.334661  3123 solver.cpp:244]     Train net output #0: loss = -nan (* 1 = -nan loss)
"""


@pytest.mark.parametrize(
    ("name", "text", "losses"),
    [
        ("results.csv", RESULTS_CSV, [1.92084, 1.94633]),
        ("metrics.json", METRICS_JSON, [2.0359768134658225]),
        ("joy_breakout_results_0.0005 learning rate.md", SB3_TABLE, [0.000102]),
        ("terminal_output_300_epochs.md", SB3_TABLE, [0.000102]),
        ("train_log.tsv", "step\tloss\n10\t8.460716\n20\t7.688958\n", [8.460716, 7.688958]),
    ],
)
def test_a_trainers_record_file_alone_is_rank_zero(tmp_path: Path, name: str, text: str, losses: list[float]) -> None:
    """A folder whose one file is a trainer's record (Ultralytics' `results.csv`, detectron2's `metrics.json`) or
    console output pasted into a `.md` named output or results held no log: its rows are rank 0's."""
    (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "config.json").write_text('{"loss": 1.0}\n', encoding="utf-8")  # not named so: never read
    assert [(f.rel, f.rank, f.layout) for f in discover(tmp_path).files] == [(name, 0, "single")]
    assert read_run(tmp_path).metrics["loss"].tolist() == losses


@pytest.mark.parametrize("name", ["results.json", "train.csv", "notes.md", "predictions.csv", "outputs.json"])
def test_a_file_named_as_no_record_is_never_read(tmp_path: Path, name: str) -> None:
    """The record names are a trainer's: a dataset's `train.csv`, a predictions file or a document is no log."""
    (tmp_path / name).write_text(RESULTS_CSV, encoding="utf-8")
    assert discover(tmp_path).files == []


def test_a_record_file_beside_a_log_is_not_read(tmp_path: Path) -> None:
    """A run's text log comes first: Ultralytics' `results.csv` beside its console log is the same epochs again."""
    (tmp_path / "train.log").write_text("epoch 1 loss 1.5\n", encoding="utf-8")
    (tmp_path / "results.csv").write_text(RESULTS_CSV, encoding="utf-8")
    assert [f.rel for f in discover(tmp_path).files] == ["train.log"]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_results_csv_reads_its_first_loss_part_with_the_others_as_metrics(tmp_path: Path, path: str) -> None:
    """Names with a namespace (`train/box_loss`, `metrics/precision(B)`) are a CSV header's names: the first loss
    column is the loss (the corpus's YOLO convention), the other loss columns its metrics, `epoch` its place."""
    (tmp_path / "results.csv").write_text(RESULTS_CSV, encoding="utf-8")
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert m["loss"].tolist() == [1.92084, 1.94633] and m["epoch"].tolist() == [1, 2]
    assert m["train/cls_loss"].tolist() == [2.57206, 2.41126] and m["val/box_loss"].tolist() == [1.85976, 1.97485]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_nan_loss_echoed_on_its_steps_next_line_is_one_row(tmp_path: Path, path: str) -> None:
    """Caffe prints each iteration's loss twice (`Iteration 100, loss = -nan`, then `Train net output #0: loss =
    -nan`): two NaNs are the same loss, so the echo naming fewer values is dropped as a number's is. Before, the NaN
    echo stayed a third row."""
    (tmp_path / "output.log").write_text(CAFFE, encoding="utf-8")
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    m = snap.metrics
    assert m["step"].tolist() == [0, 100]
    assert m["loss"].iloc[0] == 2.46876 and math.isnan(m["loss"].iloc[1])
    assert set(failed_ranks(snap)) == {0}
