"""A record printed by two loggers is one row (core.logs.rows.echoes), on every read path and a live tick cut anywhere.

Real lines: tensorflow/models#8593 (https://github.com/tensorflow/models/issues/8593, the Object Detection API's
Estimator: `INFO:tensorflow:loss = 4.3426676, step = 1` and absl's `I0529 ... basic_session_run_hooks.py:262]` copy),
the Ascend dscnn (corpus entry tf-npu-ge-trace-flood-cross-entropy-rows-doubled-by-absl-cut-at-step-7_ascend-
modelzoo-dscnn: `INFO:tensorflow:Step #1: ...` and `I1224 ... train.py:250] Step #1: ...`), EMCAD's train.out
(iteration-epoch-colon-loss-rows-duplicated-at-epoch-end-cut-mid-run_emcad-tom500-train-out: one prefix, the same
line twice, two rows)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import read_run
from tests.helpers import READ_PATHS, cut_tick_and_once

OD_TF = "INFO:tensorflow:loss = {x}, step = {s}\n"
OD_ABSL = "I0529 12:57:42.588260 139872418367296 basic_session_run_hooks.py:262] loss = {x}, step = {s}\n"
DSCNN_TF = "INFO:tensorflow:Step #{s}: rate 0.001000, accuracy 3.00%, cross entropy {x}\n"
DSCNN_ABSL = "I1224 23:11:47.320920 281473027969040 train.py:250] " + DSCNN_TF.removeprefix("INFO:tensorflow:")
CHATTER = "2020-12-24 23:11:47.268417: I tf_adapter/kernels/geop_npu.cc:573] [GEOP] RunGraphAsync callback, status:0\n"
EMCAD = "iteration {s}, epoch 1 : loss : {x}, lr: 0.000800\n"


def _od(steps: int) -> tuple[str, list[float]]:
    losses = [round(4.3426676 - s / 100, 7) for s in range(1, steps + 1)]
    text = "".join(OD_TF.format(x=x, s=s) + OD_ABSL.format(x=x, s=s) for s, x in enumerate(losses, 1))
    return text, losses


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_record_printed_by_tf_logging_and_absl_is_one_row(tmp_path: Path, path: str) -> None:
    text, losses = _od(12)
    (tmp_path / "output.log").write_text(text + "Killed\n")
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx(losses), path
    assert snap.metrics["step"].tolist() == list(range(1, 13))
    assert snap.ranks.iloc[0]["n_loss"] == 12


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_echo_counts_only_right_after_its_record(tmp_path: Path, path: str) -> None:
    """The dscnn's pairs amid framework chatter: one row per step; a step whose absl copy is missing stays one row,
    and a copy after another line between is no echo (its message is not the row just before's)."""
    losses = [4.509356, 3.724447, 3.929005, 3.833211]
    text = "".join(CHATTER + DSCNN_TF.format(s=s, x=x) + DSCNN_ABSL.format(s=s, x=x) for s, x in enumerate(losses, 1))
    text += DSCNN_TF.format(s=5, x=3.572436) + CHATTER + DSCNN_TF.format(s=6, x=3.12746)
    (tmp_path / "train.log").write_text(text)
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == pytest.approx([*losses, 3.572436, 3.12746]), path
    assert snap.metrics["accuracy"].notna().all()


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_one_line_printed_twice_under_one_prefix_stays_two_rows(tmp_path: Path, path: str) -> None:
    """Equal values alone never merge rows: EMCAD prints its epoch-end row twice (two rows, as its entry counts), and
    so does one logger printing one record twice."""
    rows = [(200, 8.629639), (250, 7.8928), (250, 7.8928), (300, 6.765337)]
    text = "".join(EMCAD.format(s=s, x=x) for s, x in rows)
    text += OD_TF.format(x=4.1, s=400) + OD_TF.format(x=4.1, s=400)
    (tmp_path / "train.out").write_text(text)
    snap = read_run(tmp_path, settings=READ_PATHS[path])
    assert len(snap.metrics) == 6, path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=10_000))
def test_a_live_tick_cut_anywhere_drops_the_same_echoes(tmp_path_factory: pytest.TempPathFactory, cut: int) -> None:
    """Cut between a record and its copy (or inside either), the rows are those of one read."""
    text, losses = _od(6)
    data = text.encode()
    cut %= len(data) + 1
    live, once = cut_tick_and_once(tmp_path_factory.mktemp("ticks"), "output.log", data, cut)
    cols = ["rank", "step", "loss"]
    pd.testing.assert_frame_equal(live.metrics[cols], once.metrics[cols], check_dtype=False)
    assert once.metrics["loss"].tolist() == pytest.approx(losses)
