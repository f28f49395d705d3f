"""Issue 30, round 11: a row's loss key wording in the per-file series choice (core.logs.rows.wording, applied by
core.logs.rows.perfile). Real lines, read on every path (tests/helpers.py READ_PATHS) and in live ticks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings
from core.logs.rows.reader import RunReader
from core.logs.rows.snapshot import RunSnapshot
from tests.helpers import READ_PATHS, cut_tick_and_once, read_entry

# 1025378573/T5-Finetune train.log (2da528c1), lines 215-218: an epoch's batch rows, then its average
T5_BATCH = "2025-03-02 08:16:2{t} - INFO - Epoch {e} - Batch loss: {x}\n"
T5_AVERAGE = "2025-03-02 08:16:26,281 - INFO - Epoch {e} - Average Train Loss: {x}\n"
# JunyiJ/PostTraining-LLM-Small logs/train_20251223_1.log (90cc326c), lines 87 and 532: a step's GRPO loss, then
# the running average every 50 steps
GRPO_STEP = "grpo_loss is {x} and kl is 0.0\n[timing] sample processed in 54.17s\n"
GRPO_AVERAGE = "[step {s}] avg_loss={x} acc=0.7600\n"
# Ascend-Huawei/Lip2Wav test/output/0/train_0.log (038718f9), line 66: a loss and its average on one line
# mindspore-lab/models' CMF (FSCIL 3D) training.log (corpus entry epoch-avg-loss-nan-then-finite-appended-
# restarts-chinese_models-cmf-fscil-3d): an epoch's loss worded as an average, the file's only rows
CMF = "2024-10-14 18:35:40,330 - __main__ - INFO - Epoch {e} completed with avg loss: {x}, learning rate: 0.003000\n"
# tangzyer/mixmatchonsubset nohup.log (4b7392fb), lines 6-8: an epoch's training loss, its loss on the evaluation
# split's true labels, its accuracy
MIXMATCH = "Epoch {e} Train Loss: {x}\nEpoch: {e} True Loss: {y}\nEpoch: {e} Val Acc: 0.1015\n"
KOTLINDL = "kotlindl-debug-batch-stat-and-ends-with-loss-nan-lines_kotlindl-8"
PPO_ENTRY = (
    "ppo-step-pipe-loss-kl-plus-bracket-avg-loss-plus-policy-value-dicts-gemma-lora-mps_posttraining-llm-small-ppo-log"
)
# evjeny/EAST log_train.txt (1fc92a5d), lines 3-4: a batch's loss parts on a line of their own, then the batch's row
EAST = (
    "2021-05-03 03:53:27,049 [MainThread  ] [INFO ]  classify loss is {c:.8f}, angle loss is 0.64980108, iou loss "
    "is 5.86592913\n2021-05-03 03:53:27,794 [MainThread  ] [INFO ]  Epoch is [1/600], mini-batch is [{b}/1600], "
    "time consumption is 1.32521653, batch_loss is {x:.8f}\n"
)
TACOTRON = "Step {s:7d} [65.278 sec/step, loss={x}, avg_loss={a}, load_time=0.000, train_time=65.278]\n"


def _snapshot(folder: Path, conf: ReaderSettings | None = None) -> RunSnapshot:
    reader = RunReader(folder, settings=conf or ReaderSettings(), one_shot=True)
    reader.refresh()
    return reader.snapshot()


def _t5(epochs: int = 3, batches: int = 6) -> tuple[str, list[float], list[float]]:
    text, rows, averages = "", [], []
    for e in range(1, epochs + 1):
        for b in range(batches):
            rows.append(round(10.0 / (e * (b + 1)), 4))
            text += T5_BATCH.format(t=b, e=e, x=f"{rows[-1]:.4f}")
        averages.append(round(sum(rows[-batches:]) / batches, 4))
        text += T5_AVERAGE.format(e=e, x=f"{averages[-1]:.4f}")
    return text, rows, averages


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_an_epochs_average_after_its_batch_rows_is_no_training_row(tmp_path: Path, path: str) -> None:
    text, rows, averages = _t5()
    (tmp_path / "train.log").write_text(text)
    snap = _snapshot(tmp_path, READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(rows), path
    assert snap.evals[snap.evals["name"] == "loss"]["value"].tolist() == pytest.approx(averages)
    assert snap.ranks.iloc[0]["last_loss"] == pytest.approx(rows[-1])


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_running_average_between_step_rows_is_no_training_row(tmp_path: Path, path: str) -> None:
    steps = [-0.0, -0.0, 0.09, -0.0457, -0.0, -0.0]
    text = "".join(GRPO_STEP.format(x=x) for x in steps) + GRPO_AVERAGE.format(s=50, x=-0.0054)
    (tmp_path / "train_20251223_1.log").write_text(text)
    snap = _snapshot(tmp_path, READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(steps), path
    assert snap.evals[snap.evals["name"] == "loss"]["value"].tolist() == pytest.approx([-0.0054])


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_files_only_wording_an_average_stays_its_rows(tmp_path: Path, path: str) -> None:
    """Rows all worded as an average are the series, and so are they beside fewer rows of another wording."""
    text = "".join(CMF.format(e=e, x=1.0 / e) for e in (1, 2, 3)) + T5_BATCH.format(t=0, e=4, x=0.2)
    (tmp_path / "training.log").write_text(text)
    snap = _snapshot(tmp_path, READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx([1.0, 0.5, 1.0 / 3, 0.2]), path


def test_an_average_beside_the_loss_on_its_line_leaves_the_row_alone(tmp_path: Path) -> None:
    """Step 1's loss and average are equal: the row is still the `loss=` key's, a training row."""
    losses, avgs = [10.38053, 8.26811, 9.82976], [10.38053, 9.32432, 9.4928]
    text = "".join(TACOTRON.format(s=s, x=x, a=a) for s, (x, a) in enumerate(zip(losses, avgs, strict=True), 1))
    (tmp_path / "train_0.log").write_text(GRPO_STEP.format(x=0.5) + text)  # a first row with no step: looked at
    snap = _snapshot(tmp_path)
    assert snap.metrics["loss"].tolist() == pytest.approx([0.5, *losses])


@pytest.mark.parametrize("log", ["t5", "ppo", "mixmatch", "east"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_a_live_tick_cut_anywhere_sets_the_rows_aside_alike(
    tmp_path_factory: pytest.TempPathFactory, log: str, cut: int
) -> None:
    """Read in two ticks cut at any byte, the rows and the evaluation rows are those of one read."""
    text = {"t5": _t5(2, 4)[0], "ppo": _ppo(steps=4)[0], "mixmatch": _mixmatch(4)[0], "east": _east(4)[0]}[log]
    data = text.encode()
    cut %= len(data) + 1
    live, once = cut_tick_and_once(tmp_path_factory.mktemp("ticks"), "train.log", data, cut)
    cols = ["rank", "epoch", "step", "loss"]
    pd.testing.assert_frame_equal(live.metrics[cols], once.metrics[cols], check_dtype=False)
    assert live.evals["value"].tolist() == once.evals["value"].tolist()
    assert len(once.metrics) == {"t5": 8, "ppo": 4, "mixmatch": 4, "east": 4}[log]


# JunyiJ/PostTraining-LLM-Small logs/ppo_20251228_1.log (90cc326c), lines 180-185: a step's debug dict (no step),
# its gradient check, the step row, then the running average
PPO_STEP = (
    "{{'prompt_id_length': 98, 'tokens_shape': (8, 371), 'attention_mask_shape': (8, 371), 'truncated': [False, "
    "False, False, False, False, False, False, False], 'steps_taken': 273, 'ratio_mean': tensor(1.0003, "
    "device='mps:0', grad_fn=<DivBackward0>), 'adv_mean': tensor(0.3632, device='mps:0'), 'reward_mean': "
    "tensor(-0.0006, device='mps:0'), 'policy_loss': {p}, 'value_loss': 0.4983491897583008}}\n"
    "--- Gradient Check ---\nAverage LoRA Gradient Magnitude: 0.0002310272\n"
    "Step: {s} | Loss: {x} | KL: -0.0000\n[step {s}] avg_loss={a} acc=0.5000\n"
)


def _ppo(steps: int = 5) -> tuple[str, list[float]]:
    text, rows = "", []
    for s in range(1, steps + 1):
        rows.append(round(0.004 + s / 1000, 4))
        text += PPO_STEP.format(p=-0.00027 * s, s=s, x=f"{rows[-1]:.4f}", a=f"{sum(rows) / s:.4f}")
    return text, rows


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_debug_dict_before_each_step_row_is_no_training_row(tmp_path: Path, path: str) -> None:
    text, rows = _ppo()
    (tmp_path / "ppo_20251228_1.log").write_text(text)
    snap = _snapshot(tmp_path, READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(rows), path
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4, 5]


def test_a_loss_with_no_step_after_the_last_step_row_keeps_the_dicts(tmp_path: Path) -> None:
    """Mirrored side rows hold none after the last step row: a file that prints one there keeps its rows."""
    text, rows = _ppo(steps=4)
    (tmp_path / "ppo.log").write_text(text + "{'policy_loss': 0.25, 'value_loss': 0.5}\n")
    assert len(_snapshot(tmp_path).metrics) == 2 * len(rows) + 1


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("entry", [KOTLINDL, PPO_ENTRY])
def test_rows_with_no_step_before_each_step_row_are_side_rows_only_naming_a_part(
    tmp_path: Path, path: str, entry: str
) -> None:
    """KotlinDL's `Batch stat: { lossValue: NaN ... }` before each `Training batch N ends with loss NaN.` is its
    batch's loss printed twice (16 rows, as the corpus entry counts); the PPO debug dict's `'policy_loss': X`
    before each `Step: N | Loss: L` row is a part of the loss (9 rows, one a step)."""
    snap = read_entry(tmp_path, entry, path)
    assert len(snap.metrics) == (16 if entry == KOTLINDL else 9), path
    assert snap.metrics["step"].isna().sum() == (8 if entry == KOTLINDL else 0)


def _east(batches: int) -> tuple[str, list[float]]:
    rows = [13.2807436 / b for b in range(1, batches + 1)]
    return "".join(EAST.format(c=0.9 + b / 100, b=b, x=x) for b, x in enumerate(rows, 1)), rows


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_batchs_loss_parts_on_a_line_before_each_batch_row_are_no_training_rows(tmp_path: Path, path: str) -> None:
    """EAST's `classify loss is X, angle loss is Y, iou loss is Z` (parts joined to `loss` by a space, `is` their
    separator) before each `Epoch is [1/600], mini-batch is [N/1600], ... batch_loss is L` row (the counters read
    after `is`, in brackets): one training row a batch, its step the mini-batch."""
    text, rows = _east(6)
    (tmp_path / "log_train.txt").write_text(text)
    snap = _snapshot(tmp_path, READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(rows), path
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert snap.metrics["epoch"].tolist() == [1] * 6


def _mixmatch(epochs: int) -> tuple[str, list[float], list[float]]:
    train = [711.0006169080734 / (e + 1) for e in range(epochs)]
    true = [941.9947493076324 / (e + 1) for e in range(epochs)]
    return (
        "".join(MIXMATCH.format(e=e, x=x, y=y) for e, (x, y) in enumerate(zip(train, true, strict=True))),
        train,
        true,
    )


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_an_epochs_other_loss_beside_its_train_loss_is_an_evaluation_row(tmp_path: Path, path: str) -> None:
    text, train, true = _mixmatch(5)
    (tmp_path / "nohup.log").write_text(text)
    snap = _snapshot(tmp_path, READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(train), path
    assert snap.evals[snap.evals["name"] == "loss"]["value"].tolist() == pytest.approx(true)


def test_an_epochs_loss_in_one_wording_stays_its_rows(tmp_path: Path) -> None:
    """Two rows an epoch, neither naming training: the loss printed twice stays two rows (as the corpus counts)."""
    text = "".join(f"Epoch {e} Loss: {1.0 / (e + 1)}\nEpoch: {e} True Loss: {2.0 / (e + 1)}\n" for e in range(4))
    (tmp_path / "nohup.log").write_text(text)
    assert len(_snapshot(tmp_path).metrics) == 8
