"""Issue 30, round 12's build set (r12blocks' part): one-key-per-line blocks, on the real lines of the build-set logs
(their SOURCE.md URLs are in core.logs.rows.notations_blocks' entries), read on every path the parser has, with the
bad input beside them (what the rules must not take).

- pointnet-mean-loss-accuracy-blocks-with-eval-mean-loss_pointnet-semseg-vkitti3d: a bare `mean loss: X` alone on its
  line is its block's whole loss, training (PPO-for-Beginners' `Average Loss: nan` too: a corpus known gap closed);
- graspnet-vertical-mean-loss-blocks-per-10-batches-many-restarts_fgc-graspnet-log-train: `mean loss/<name>: X` a
  key a line, only the `loss/` group's whole (`overall_loss`) a row;
- audiotools-rich-tables-...: argbind's typed config line `lambdas : dict = {'mel/loss': 15.0, ...}` is no row.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.rows.general import read_line
from core.logs.rows.keylines import lone_average, record_part
from tests.helpers import READ_PATHS, one_log

# PointNet's blocks (https://github.com/kargarisaac/PointNet-SemSeg-VKITTI3D, log/log_train.txt), epoch 000 twice
POINTNET = [
    b"**** EPOCH 000 ****",
    b"----",
    b"mean loss: 2.407614",
    b"accuracy: 0.289210",
    b"----",
    b"**** EPOCH 000 ****",
    b"----",
    b"mean loss: 2.537423",
    b"accuracy: 0.254990",
    b"----",
    b"eval mean loss: 43.578381",
    b"eval accuracy: 0.268188",
    b"eval avg class acc: 0.150831",
    b"Model saved in file: log/model.ckpt",
    b"**** EPOCH 001 ****",
    b"----",
    b"mean loss: 1.166659",
    b"accuracy: 0.697266",
    b"----",
    b"eval mean loss: 4.697268",
]
# graspnet-baseline's block (https://github.com/luyh20/FGC-GraspNet, log/log_train.txt), its first lines
GRASPNET = [
    b" ---- batch: 010 ----",
    b"mean loss/overall_loss: 1.777084",
    b"mean loss/stage1_objectness_loss: 0.650260",
    b"mean loss/stage1_view_loss: 0.141157",
    b"mean loss/stage2_grasp_angle_class_loss: 2.166051",
    b"mean stage1_objectness_acc: 0.626758",
    b" ---- batch: 020 ----",
    b"mean loss/overall_loss: 1.280322",
    b"mean loss/stage1_objectness_loss: 0.560989",
    b"mean loss/stage2_grasp_width_loss: 0.652509",
    b"mean stage2_grasp_depth_cls_acc: 0.834418",
]


def _losses(tmp_path: Path, lines: list[bytes], how: ReaderSettings) -> list[float]:
    """The training losses, in file order, of `lines` as a run's one log read on the path `how`."""
    tmp_path.mkdir(exist_ok=True)
    m = read_run(one_log(tmp_path, lines), settings=how).metrics
    return m.sort_values("offset", kind="stable")["loss"].tolist()


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_blocks_read_their_whole_loss_on_every_path(tmp_path: Path, how: ReaderSettings) -> None:
    """PointNet's `mean loss:` lines are its rows (its `eval mean loss:` none); graspnet's `loss/overall_loss`."""
    assert _losses(tmp_path / "p", POINTNET, how) == [2.407614, 2.537423, 1.166659]
    assert _losses(tmp_path / "g", GRASPNET, how) == [1.777084, 1.280322]


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_a_lone_nan_average_is_the_files_one_row(tmp_path: Path, how: ReaderSettings) -> None:
    """PPO-for-Beginners' whole block: its one row is NaN (a file whose only row names nothing else read)."""
    lines = [
        b"-------------------- Iteration #50 --------------------",
        b"Average Episodic Length: 1.0",
        b"Average Episodic Return: nan",
        b"Average Loss: nan",
        b"Timesteps So Far: 50",
        b"------------------------------------------------------",
    ]
    losses = _losses(tmp_path, lines, how)
    assert len(losses) == 1 and losses[0] != losses[0]


def test_what_is_no_lone_average_keeps_its_reading() -> None:
    """An average named as an evaluation's, behind a bullet (monocon's epoch summary), beside another key (the
    PyTorch example's test line) or with more on its line stays an evaluation line."""
    for line in (
        b"eval mean loss: 43.578381",
        b"- Average Loss: 7.096",
        b" Accuracy: 83.8%, Avg loss: 0.529534",
        b"mean loss: 0.5 (test)",
        b"Test set: Average loss: 0.0335",
    ):
        read = read_line(line)
        assert read is not None and read.eval, line
        assert not lone_average(line)


def test_a_loss_group_line_is_a_row_only_for_its_whole() -> None:
    """`loss/overall_loss`, `loss/total` are no parts (the first a row); `loss/rpn_cls_loss`, `loss/cls` parts; a
    group line with more on it, or a `loss/train` series name, is no part."""
    for whole in (b"mean loss/overall_loss: 1.777084", b"losses/train_loss = 0.4"):
        read = read_line(whole)
        assert read is not None and not read.eval, whole
    for whole in (b"mean loss/overall_loss: 1.777084", b"loss/total: 0.5", b"loss/train: 0.5"):
        assert not record_part(whole), whole
    for part in (b"mean loss/stage1_view_loss: 0.141157", b"loss/cls: 0.3", b"  loss/rpn_cls_loss = nan"):
        assert record_part(part) and read_line(part) is None, part
    for other in (b"loss/rpn_cls_loss: 0.3, lr: 0.1", b"step 5 loss/cls: 0.3 loss: 0.9"):
        assert not record_part(other), other


def test_a_typed_config_line_is_no_row() -> None:
    """argbind's `name : type = value` (DAC's train.out) and a dataclass field are configuration; a `loss : 0.5`
    row keeps its reading."""
    for line in (
        b"  lambdas : dict = {'mel/loss': 15.0, 'adv/feat_loss': 2.0, 'z_loss': 1.0, 'codes_loss': 0.01}",
        b"    loss_weight : float = 0.5",
        b"  weights : Optional[dict] = {'loss': 1.0}",
    ):
        assert record_part(line) and read_line(line) is None, line
    read = read_line(b"epoch : 3 loss : 0.5")
    assert read is not None and read.fields["loss"] == 0.5


@given(
    word=st.sampled_from(["mean", "avg", "average", "Mean", "Average", "AVG"]),
    sep=st.sampled_from([": ", ":", " = ", "="]),
    value=st.floats(-1e6, 1e6, allow_nan=False),
    indent=st.sampled_from(["", "  ", "\t"]),
)
@example(word="mean", sep=": ", value=2.407614, indent="")
def test_any_lone_average_is_a_training_row(word: str, sep: str, value: float, indent: str) -> None:
    """For every value: a bare average loss alone on its line is a training row of that value."""
    line = f"{indent}{word} loss{sep}{value!r}".encode()
    read = read_line(line)
    assert lone_average(line)
    assert read is not None and not read.eval and read.fields["loss"] == value
