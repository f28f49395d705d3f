"""Another loop's rows (core.logs.rows.perfile): rows with a step and no epoch, counted to a total none of the file's
epoch rows counts to, in a file of mostly epoch rows, are an evaluation pass's, on every read path and a live tick
cut anywhere.

Real lines: GluonNLP's BERT fine-tuning on RTE (https://github.com/dmlc/web-data/blob/5d3059942a4d2f476763c879ba00dc33bc1
21ccf/gluonnlp/logs/bert/finetune_RTE_base_mx1.6.0rc1.log): `[Epoch 1 Batch 80/82] loss=0.6469, ...` training rows,
then after `Now we are doing evaluation on dev with gpu(0).` the dev pass's `[Batch 10/35] loss=0.6475, ...`."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import read_run
from tests.helpers import READ_PATHS, cut_tick_and_once

TRAIN = "INFO:root:06:32:11 [Epoch {e} Batch {b}/82] loss={x}, lr=0.0000177, metrics:accuracy:0.5674\n"
ANNOUNCE = "INFO:root:06:32:11 Now we are doing evaluation on dev with gpu(0).\n"
DEV = "INFO:root:06:32:12 [Batch {b}/35] loss={x}, metrics:accuracy:0.6500\n"
VALID = "INFO:root:06:32:47 validation metrics:accuracy:0.6715\n"


def _finetune(epochs: int = 3) -> tuple[str, list[float], list[float]]:
    text, train, dev = "", [], []
    for e in range(1, epochs + 1):
        for b in range(10, 90, 10):
            train.append(round(0.8 / (e + b / 100), 4))
            text += TRAIN.format(e=e, b=b, x=train[-1])
        text += ANNOUNCE
        for b in (10, 20, 30):
            dev.append(round(0.6 + e / 10 + b / 1000, 4))
            text += DEV.format(b=b, x=dev[-1])
        text += VALID
    return text, train, dev


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_dev_pass_counted_to_its_own_total_is_no_training_row(tmp_path: Path, path: str) -> None:
    text, train, dev = _finetune()
    (tmp_path / "finetune.log").write_text(text)
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(train), path
    assert snap.ranks.iloc[0]["last_loss"] == pytest.approx(train[-1])
    assert snap.evals[snap.evals["name"] == "loss"]["value"].tolist() == pytest.approx(dev)


def test_rows_without_an_epoch_on_the_training_total_stay_rows(tmp_path: Path) -> None:
    """Only another total says another loop: a row that drops its epoch but counts to the training's total stays."""
    text, train, _ = _finetune(epochs=2)
    text += DEV.format(b=40, x=0.5).replace("/35]", "/82]")
    (tmp_path / "finetune.log").write_text(text)
    snap = read_run(tmp_path)
    assert snap.metrics["loss"].tolist() == pytest.approx([*train, 0.5])


def test_a_file_mostly_of_rows_without_an_epoch_keeps_them(tmp_path: Path) -> None:
    """The rule is for a file whose epoch rows outnumber them: a file of such rows alone keeps them."""
    (tmp_path / "eval.log").write_text("".join(DEV.format(b=b, x=0.5 + b / 1000) for b in range(10, 40, 10)))
    assert len(read_run(tmp_path).metrics) == 3


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_a_live_tick_cut_anywhere_sets_the_same_rows_aside(tmp_path_factory: pytest.TempPathFactory, cut: int) -> None:
    text, train, _ = _finetune(epochs=2)
    data = text.encode()
    cut %= len(data) + 1
    live, once = cut_tick_and_once(tmp_path_factory.mktemp("ticks"), "finetune.log", data, cut)
    cols = ["rank", "epoch", "step", "loss"]
    pd.testing.assert_frame_equal(live.metrics[cols], once.metrics[cols], check_dtype=False)
    assert once.metrics["loss"].tolist() == pytest.approx(train)
