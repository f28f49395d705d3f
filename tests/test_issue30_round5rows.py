"""Round 5's build set, the entries read wrong on rows (issue 30 item 6): the rules their misreadings asked for,
on their real lines, through every read path (tests/helpers.READ_PATHS). Entries under tests/fixtures/real_logs:
bigdl-distrioptimizer-loss-is-rows-inception-24-nodes_ipex-llm-2494 (a value closed by a sentence's period),
ddp-two-processes-unlabeled-loss-in-epoch-equals-lines-interleaved_pytorch-14628 (`Loss in epoch N  =  X`),
npu-910-callbacks-line-and-raw-dict-same-step-gradient-overflow-pairs_llamafactory-8514 (a step's echo naming as
many values) and nemo-lightning-bar-redraws-loss-postfix-with-nemo-w-warning-glued_nemo-5468 (a bar's redraw is
told from the bar's last draw)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.rows.general import read_line
from tests.helpers import READ_PATHS, one_log

REAL = Path(__file__).parent / "fixtures" / "real_logs"
BIGDL = (
    REAL / "bigdl-distrioptimizer-loss-is-rows-inception-24-nodes_ipex-llm-2494" / "log" / "train.log"
).read_bytes()
DDP = (
    REAL / "ddp-two-processes-unlabeled-loss-in-epoch-equals-lines-interleaved_pytorch-14628" / "log" / "train.log"
).read_bytes()
LLAMAFACTORY = (
    REAL
    / "npu-910-callbacks-line-and-raw-dict-same-step-gradient-overflow-pairs_llamafactory-8514"
    / "log"
    / "train.log"
).read_bytes()
NEMO = (
    REAL / "nemo-lightning-bar-redraws-loss-postfix-with-nemo-w-warning-glued_nemo-5468" / "log" / "train.log"
).read_bytes()


def _losses(tmp_path: Path, data: bytes, how: ReaderSettings) -> dict[int, list[float]]:
    """Each rank's training losses, in file order, of `data` as a run's one log read on the path `how`."""
    m = read_run(one_log(tmp_path, data.splitlines()), settings=how).metrics
    return {int(r): g["loss"].tolist() for r, g in m.sort_values("offset", kind="stable").groupby("rank")}


# ----------------------------------------------------------------------------- BigDL: `Loss is 1.72319.` (prose)


def test_a_value_closed_by_a_sentences_period_is_read() -> None:
    """BigDL's `... records/second. Loss is 1.72319. Current learning rate is 0.0759...`: the period ends the
    sentence, not the number; the other sentences' values are the row's columns."""
    read = read_line(BIGDL.splitlines()[0])
    assert read is not None and not read.eval
    assert read.fields["loss"] == 1.72319 and read.fields["step"] == 17442 and read.fields["epoch"] == 42
    assert read.fields["throughput"] == 2091.8926
    assert read.extras["current_learning_rate"] == 0.07595911266872037


def test_a_period_glued_to_more_text_is_still_no_number() -> None:
    """A version or an address (`1.5.2`, `1.5.x`) is no value: only a period then a space or the line's end
    closes one."""
    assert read_line(b"loss: 1.5.2 done") is None
    assert read_line(b"loss: 1.5.x") is None
    read = read_line(b"Loss is 2.5.")
    assert read is not None and read.fields["loss"] == 2.5


@given(loss=st.floats(0, 1e6, allow_nan=False), lr=st.floats(1e-9, 1.0, allow_nan=False))
def test_any_prose_sentence_value_reads_whole(loss: float, lr: float) -> None:
    line = f"Trained 3072 records in 1.4 seconds. Loss is {loss!r}. Current learning rate is {lr!r}.".encode()
    read = read_line(line)
    assert read is not None and read.fields["loss"] == loss and read.extras["current_learning_rate"] == lr


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_bigdl_rows_on_every_path(tmp_path: Path, how: ReaderSettings) -> None:
    assert _losses(tmp_path, BIGDL, how) == {0: [1.72319, 1.9208802, 1.98872, 2.7426317]}


# ----------------------------------------------------------------------------- DDP: `Loss in epoch 0  =  2.16`


def test_a_loss_key_may_name_where_in_training_before_its_separator() -> None:
    read = read_line(b"Loss in epoch 0  =  2.16241826098016")
    assert read is not None and not read.eval
    assert read.fields["loss"] == 2.16241826098016 and read.fields["epoch"] == 0
    read = read_line(b"loss at step 10: 0.5")
    assert read is not None and read.fields["loss"] == 0.5 and read.fields["step"] == 10


def test_a_loss_key_naming_where_without_a_value_is_prose_and_val_is_evaluation() -> None:
    assert read_line(b"loss in epoch 3 was bad") is None
    read = read_line(b"val loss in epoch 2 = 0.5")
    assert read is not None and read.eval


@given(epoch=st.integers(0, 10**5), loss=st.floats(0, 1e6, allow_nan=False), sep=st.sampled_from(["=", ":", "is"]))
def test_any_loss_in_epoch_line_reads_its_epoch_and_loss(epoch: int, loss: float, sep: str) -> None:
    read = read_line(f"Loss in epoch {epoch}  {sep}  {loss!r}".encode())
    assert read is not None and read.fields["epoch"] == epoch and read.fields["loss"] == loss


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_ddp_two_processes_rows_on_one_stream(tmp_path: Path, how: ReaderSettings) -> None:
    """Both processes' lines, unlabeled, are the stream's rows: two per epoch, none dropped."""
    got = _losses(tmp_path, DDP, how)
    assert list(got) == [0] and len(got[0]) == 8
    assert got[0][0] == 2.16241826098016 and got[0][-1] == 0.6598308266477382


# ----------------------------------------------------------------------------- LlamaFactory: callbacks line + dict


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_a_steps_echo_naming_as_many_values_is_dropped(tmp_path: Path, how: ReaderSettings) -> None:
    """The callbacks line (lr, throughput) and the Trainer's dict (grad_norm, lr) of one step name as many
    values: the later one, the echo, is dropped: one row per step."""
    got = _losses(tmp_path, LLAMAFACTORY, how)
    assert got == {0: [6.8404, 5.8246]}


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_neighbours_of_one_shape_with_one_loss_both_stay(tmp_path: Path, how: ReaderSettings) -> None:
    """Equal losses on rows naming the same values are two steps (a plateau), never an echo."""
    data = b"{'loss': 0.5, 'learning_rate': 1e-05, 'epoch': 1.0}\n" * 3
    assert _losses(tmp_path, data, how) == {0: [0.5, 0.5, 0.5]}


# ----------------------------------------------------------------------------- Lightning bars: a draw per counter


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_lightning_bar_gives_one_row_per_step_through_equal_rounded_losses(tmp_path: Path, how: ReaderSettings) -> None:
    """Lightning moves the counter with the last step's postfix, then draws the new postfix at that counter: a
    redraw is told from the bar's last draw, so the second draw at counter 5 (equal to the first, `loss=1.63`
    as at step 4) is step 5's row, and the draw at counter 7 repeats step 6's."""
    got = _losses(tmp_path, NEMO, how)
    assert got == {0: [1.67, 1.63, 1.66, 1.63, 1.63, 1.63]}


@pytest.mark.parametrize("how", READ_PATHS.values(), ids=READ_PATHS.keys())
def test_a_bar_moved_with_the_same_values_is_still_a_redraw(tmp_path: Path, how: ReaderSettings) -> None:
    """tqdm's `update()` after `set_postfix`: counters 1, 2, 3 drawing one state are one row."""
    data = b"".join(
        b"Epoch 0:   0%%|          | %d/517 [00:0%d<16:14,  1.89s/it, loss=1.67]\n" % (i, i) for i in (1, 2, 3)
    )
    assert _losses(tmp_path, data, how) == {0: [1.67]}
