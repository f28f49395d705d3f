"""Round 10's build set, rows (issue 30): rules from logs read wrong, each stated for logs in general.

- a step's side rows (core.logs.rows.perfile): WS-DAN's trainer prints, after each `Epoch: [e][i/250] ... Loss X (avg)`
  row, its part losses on lines of their own with no step (`cos_sim_loss  0.296 (0.296)`, `neg_cos_sim_loss ...`,
  `loss1,loss2,loss3,feature_center_loss v1 v2 v3 v4`): those are the step's other losses, not training rows, where
  most steps are followed by as many of them (17314796423/WS_DAN_SAC train.log); a file whose step-less rows come
  before its first step row, or in varying numbers, keeps them (KotlinDL's `Batch stat: { lossValue: NaN ...}` before
  each `Training batch N ends with loss NaN.`: tests/fixtures/real_logs/kotlindl-debug-batch-stat-...).
- an epoch printed twice (core.logs.rows.perfile, the step printed twice told by epoch where rows have no step):
  TorchGT prints `Epoch: 010, Loss: 3.5123, Epoch Time: 0.423s`, and every fifth epoch its evaluation `Epoch: 010,
  Loss: 3.512267, Train acc: 13.07%, Val acc: 13.17%, Test acc: 13.12%, Epoch Time: 0.423s` (nihaopeng/torchgt_npu
  metis_log3.txt): the rarer line naming more metrics is an evaluation row; one row per epoch.
- a Keras History saved by pandas (`pd.DataFrame(history.history).to_csv(...)`: ShaurGaur/ResTS's
  `ResTS15epochs-full.csv`) is discovered by its name (history, epochs: core.logs.bytes.discover) and read as a CSV
  table whose unnamed first column is the row index.
The notations of this round (`losses: X`, a CSV's unnamed index column) are entries of
core.logs.rows.notations_spellings, read on every path by tests/test_grammar_entries.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.rows.reader import RunReader
from tests.helpers import READ_PATHS, read_entry

# 17314796423/WS_DAN_SAC train.log (https://github.com/17314796423/WS_DAN_SAC/blob/
# 28d0080336db5eeff7d009236abf77d1012cd412/train.log), lines 7-36: three steps, each with its six `Prec@` lines and
# its three part-loss lines (the epoch in the row made a field, to print several epochs)
WSDAN_BLOCKS = [
    (
        "Epoch: [{e}][0/250]\tTime 3.923 (3.923)\tData 0.411 (0.411)\tLoss 13.0603 (13.0603)",
        [
            "cos_sim_loss  0.296 (0.296)",
            "neg_cos_sim_loss  0.171 (0.171)",
            "loss1,loss2,loss3,feature_center_loss 5.456034183502197 5.509551525115967 5.5163116455078125 1.0",
        ],
    ),
    (
        "Epoch: [{e}][10/250]\tTime 1.154 (1.408)\tData 0.371 (0.374)\tLoss 12.6626 (12.3890)",
        [
            "cos_sim_loss  0.293 (0.294)",
            "neg_cos_sim_loss  0.160 (0.165)",
            "loss1,loss2,loss3,feature_center_loss 6.236130237579346 6.238488674163818 6.233316898345947 "
            "0.6827139258384705",
        ],
    ),
    (
        "Epoch: [{e}][20/250]\tTime 1.155 (1.292)\tData 0.361 (0.373)\tLoss 12.3146 (12.2996)",
        [
            "cos_sim_loss  0.291 (0.293)",
            "neg_cos_sim_loss  0.165 (0.165)",
            "loss1,loss2,loss3,feature_center_loss 5.9618072509765625 5.985386371612549 5.973276615142822 "
            "0.5097463726997375",
        ],
    ),
]
PREC = ["Prec@1     0.000 (0.379)\tPrec@5     0.000 (3.030)", "Prec@1   k 0.000 (1.136)\tPrec@5   k 0.000 (1.894)"]
ROW_LOSSES = [13.0603, 12.6626, 12.3146]


def _wsdan(epochs: int, sides: list[int] | None = None) -> str:
    """`epochs` epochs of the three real steps; `sides`: how many part-loss lines each step prints (all three)."""
    lines, k = ["nohup: ignoring input", "Start epoch 0 ==========,lr=0.001000"], 0
    for e in range(epochs):
        for row, parts in WSDAN_BLOCKS:
            n = 3 if sides is None else sides[k % len(sides)]
            lines += [row.format(e=e), *PREC, *parts[:n]]
            k += 1
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_steps_part_losses_on_lines_of_their_own_are_no_training_rows(tmp_path: Path, path: str) -> None:
    (tmp_path / "train.log").write_text(_wsdan(8))
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert m["loss"].tolist() == pytest.approx(ROW_LOSSES * 8), path
    assert m["step"].notna().all() and m["epoch"].tolist() == [float(e) for e in range(8) for _ in range(3)]


def test_a_live_read_cut_inside_a_steps_side_lines_decides_as_the_whole_read(tmp_path: Path) -> None:
    text = _wsdan(6)
    log = tmp_path / "train.log"
    cut = text.index("neg_cos_sim_loss", len(text) // 2)  # between a step's first and second part line
    log.write_text(text[:cut])
    reader = RunReader(tmp_path)
    reader.refresh()
    first = text[:cut].count("Epoch: [")  # the steps read so far, the last with one of its part lines
    assert reader.snapshot().metrics["loss"].tolist() == pytest.approx((ROW_LOSSES * 6)[:first])
    with log.open("a") as f:
        f.write(text[cut:])
    reader.refresh()
    assert reader.snapshot().metrics["loss"].tolist() == pytest.approx(ROW_LOSSES * 6)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_step_less_rows_in_varying_numbers_stay_rows(tmp_path: Path, path: str) -> None:
    """Three steps in ten followed by none of the part lines, the others by one to three: no steady count, so the
    step-less lines may be a trainer's own rows between occasional step rows; every row stays."""
    sides = [3, 1, 0, 2, 0, 3, 1, 0, 2, 1]
    (tmp_path / "train.log").write_text(_wsdan(10, sides))
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert len(m) == 30 + sum(sides) * 3, path


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_step_less_rows_before_the_first_step_row_stay_rows(tmp_path: Path, path: str) -> None:
    """KotlinDL prints each batch's `Batch stat: { lossValue: NaN ...}` before its `Training batch N ends with loss
    NaN.`: one step-less row per step, but the first before any step row; all 16 stay (its expect.json)."""
    m = read_entry(tmp_path, "kotlindl-debug-batch-stat-and-ends-with-loss-nan-lines_kotlindl-8", path).metrics
    assert len(m) == 16 and m["step"].notna().sum() == 8


# nihaopeng/torchgt_npu metis_log3.txt (https://github.com/nihaopeng/torchgt_npu/blob/
# 9145e5da9a5e50094f41161c2b2047dc37d45503/metis_log3.txt), lines 17-48: epochs 5 to 11, 5 and 10 with evaluations
RULE = "-" * 84
TORCHGT = [
    "--- Epoch 5: Running Dynamic Window Adjustment ---",
    RULE,
    "Epoch: 005, Loss: 3.6855, Epoch Time: 0.409s",
    RULE,
    RULE,
    "Eval time 0.13983917236328125s",
    "Epoch: 005, Loss: 3.685533, Train acc: 16.14%, Val acc: 16.18%, Test acc: 16.06%, Epoch Time: 0.409s",
    *[
        x
        for line in (
            "Epoch: 006, Loss: 3.6827, Epoch Time: 0.405s",
            "Epoch: 007, Loss: 3.6754, Epoch Time: 0.405s",
            "Epoch: 008, Loss: 3.6555, Epoch Time: 0.431s",
            "Epoch: 009, Loss: 3.6076, Epoch Time: 0.417s",
        )
        for x in (RULE, RULE, line)
    ],
    RULE,
    "--- Epoch 10: Running Dynamic Window Adjustment ---",
    RULE,
    "Epoch: 010, Loss: 3.5123, Epoch Time: 0.423s",
    RULE,
    RULE,
    "Eval time 0.10932707786560059s",
    "Epoch: 010, Loss: 3.512267, Train acc: 13.07%, Val acc: 13.17%, Test acc: 13.12%, Epoch Time: 0.423s",
    RULE,
    RULE,
    "Epoch: 011, Loss: 3.3766, Epoch Time: 0.431s",
    RULE,
]
TORCHGT_TRAIN = [3.6855, 3.6827, 3.6754, 3.6555, 3.6076, 3.5123, 3.3766]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_an_epochs_evaluation_line_repeating_its_loss_is_no_second_row(tmp_path: Path, path: str) -> None:
    (tmp_path / "metis_log3.txt").write_text("\n".join(TORCHGT * 6) + "\n")  # the run printed six times over
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(TORCHGT_TRAIN * 6), path
    assert snap.metrics["epoch"].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0] * 6
    losses = snap.evals[snap.evals["name"] == "loss"]
    assert losses["value"].tolist() == pytest.approx([3.685533, 3.512267] * 6)
    assert losses["epoch"].tolist() == [5.0, 10.0] * 6


def test_an_epochs_evaluation_line_read_in_a_later_tick_is_set_aside(tmp_path: Path) -> None:
    log = tmp_path / "metis_log3.txt"
    text = "\n".join(TORCHGT) + "\n"
    cut = text.index("Eval time 0.109")  # epoch 10's row read, its evaluation line not yet
    log.write_text(text[:cut])
    reader = RunReader(tmp_path)
    reader.refresh()
    assert reader.snapshot().metrics["loss"].tolist() == pytest.approx(TORCHGT_TRAIN[:6])
    with log.open("a") as f:
        f.write(text[cut:])
    reader.refresh()
    assert reader.snapshot().metrics["loss"].tolist() == pytest.approx(TORCHGT_TRAIN)


def test_an_epochs_only_line_naming_more_metrics_stays_its_row(tmp_path: Path) -> None:
    """An evaluation line with no one-line row of its epoch beside it (a copy cut between them) is that epoch's
    row: its `Loss` is the epoch's training loss (the corpus entry's corrected expectation, round 10)."""
    lines = [line for line in TORCHGT if not line.startswith("Epoch: 010, Loss: 3.5123,")]
    (tmp_path / "metis_log3.txt").write_text("\n".join(lines) + "\n")
    m = read_run(tmp_path).metrics
    assert m["loss"].tolist() == pytest.approx([3.6855, 3.6827, 3.6754, 3.6555, 3.6076, 3.512267, 3.3766])


# ShaurGaur/ResTS ResTS15epochs-full.csv (https://github.com/ShaurGaur/ResTS/blob/
# 0114ca2c54e97d3bd5e32a1346933e7916475659/ResTS15epochs-full.csv), its header and first three rows of 15
RESTS = (
    ",loss,out1_accuracy,out1_loss,out2_accuracy,out2_loss,val_loss,val_out1_accuracy,val_out1_loss,"
    "val_out2_accuracy,val_out2_loss\n"
    "0,0.7506051659584045,0.8343185782432556,0.7235159277915955,0.8005656599998474,0.7706614136695862,"
    "2.675212860107422,0.4256424009799957,2.332689046859741,0.33530306816101074,2.901031255722046\n"
    "1,0.34941336512565613,0.9196513295173645,0.2970200777053833,0.8934325575828552,0.3870766758918762,"
    "2.039602518081665,0.5626286864280701,1.5300160646438599,0.40791475772857666,2.3748106956481934\n"
    "2,0.2675201892852783,0.9373160004615784,0.21925708651542664,0.9152699708938599,0.2995750904083252,"
    "1.6593282222747803,0.6309427618980408,1.2421668767929077,0.4832124710083008,1.9356632232666016\n"
)


@pytest.mark.parametrize("name", ["ResTS15epochs-full.csv", "history.csv", "train_history.csv"])
@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_keras_history_csv_is_found_and_read_without_its_index_column(tmp_path: Path, name: str, path: str) -> None:
    (tmp_path / name).write_text(RESTS, encoding="utf-8")
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert m["loss"].tolist() == pytest.approx([0.7506051659584045, 0.34941336512565613, 0.2675201892852783]), path
    assert m["val_loss"].tolist() == pytest.approx([2.675212860107422, 2.039602518081665, 1.6593282222747803])
    assert "" not in m.columns and m["epoch"].isna().all()  # the index column is no metric, nor read as an epoch
