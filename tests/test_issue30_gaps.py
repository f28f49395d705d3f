"""Issue 30, the corpus's known gaps: the general rules they needed, each on the real line of its entry.

Every quoted line comes from a log of tests/fixtures/real_logs (the entry is named beside it; its SOURCE.md says
where the log comes from). Each rule is for the family a user's never-seen log would print, never one file, and
gives the same reading on every read path (tests/helpers.READ_PATHS).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows.reader import RunReader
from tests.helpers import READ_PATHS

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"


def _rows(folder: Path, path: str) -> pd.DataFrame:
    reader = RunReader(folder, settings=READ_PATHS[path], one_shot=True)
    reader.refresh()
    return reader.snapshot().metrics


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.log").write_text(text, encoding="utf-8")
    return folder


# ----------------------------------------------------------------------------- a NaN loss redrawn by a progress bar

# dreamfields-tqdm-desc-loss-nan-paren-warnings-glued_dreamfields-torch-7: the bar's description carries the loss,
# drawn twice per counter (one line after the other), tensorboardX's warning glued behind each draw
DREAMFIELDS = "loss=nan (nan): :   {n}% {n}/100 [00:00<{eta}, {rate}]NaN or Inf found in input tensor.\n"
DREAMFIELDS_LOG = CORPUS / "dreamfields-tqdm-desc-loss-nan-paren-warnings-glued_dreamfields-torch-7" / "log"
NOISE = "[WARNING] ME(1234:5678,MainProcess):2026-11-27-05:00:{s:02d}.000.000 [mindspore/x.py:1] noise {s}\n"


def _dreamfields(counters: list[int], noise: bool = False) -> str:
    return "".join(
        (NOISE.format(s=i % 60) if noise else "")
        + DREAMFIELDS.format(n=n, eta="?" if n == 0 else "00:07", rate="?it/s" if n == 0 else "12.49it/s")
        for i, n in enumerate(counters)
    )


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_nan_bar_gives_one_row_per_counter_on_every_path(path: str) -> None:
    """The real log: counters 0, 2, 2, 4, 4, 6, 6, 8 -> 5 rows, every loss NaN (a NaN loss is no evidence the
    values stayed: the counter decides, and a draw at the same counter on the next line is a redraw)."""
    rows = _rows(DREAMFIELDS_LOG, path)
    assert len(rows) == 5
    assert rows["loss"].isna().all()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 99), min_size=1, max_size=30), st.booleans())
@example([0, 2, 2, 4, 4, 6, 6, 8], False)
@example([3, 3, 3], False)
@example([3, 3, 3], True)
def test_nan_bar_rows_are_the_counter_changes(counters: list[int], noise: bool) -> None:
    """For any sequence of NaN draws, on every path alike: drawn one line after another, one row per run of one
    counter; with other lines between the draws, one row per draw (a line printed again is a step again)."""
    want = len(counters) if noise else 1 + sum(a != b for a, b in itertools.pairwise(counters))
    with tempfile.TemporaryDirectory() as tmp:
        folder = _write(Path(tmp) / "log", _dreamfields(counters, noise))
        for path in READ_PATHS:
            assert len(_rows(folder, path)) == want, path


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=20), st.integers(0, 40))
def test_nan_redraws_are_dropped_across_any_read_boundary(counters: list[int], cut: int) -> None:
    """A live tick cut anywhere (between a draw and its redraw too) reads what one read of the whole file does."""
    data = _dreamfields(counters).encode()
    lines = data.splitlines(keepends=True)
    head = b"".join(lines[: min(cut, len(lines))])
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "log"
        folder.mkdir()
        path = folder / "train.log"
        path.write_bytes(head)
        reader = RunReader(folder)
        reader.refresh()
        reader.snapshot()
        with path.open("ab") as f:
            f.write(data[len(head) :])
        reader.refresh()
        assert len(reader.snapshot().metrics) == 1 + sum(a != b for a, b in itertools.pairwise(counters))


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_finite_bar_keeps_the_rule_it_had(tmp_path: Path, path: str) -> None:
    """The NaN rule leaves finite values as they were: equal values at a moved counter are one row (VeOmni's
    `set_postfix` then `update(1)`), an identical line twice is two."""
    text = "".join(f"loss=2.5 (2.6): :   {n}% {n}/100 [00:0{n}<00:07, 12.49it/s]\n" for n in (1, 2))
    text += "loss=2.4 (2.5): :   3% 3/100 [00:03<00:07, 12.49it/s]\n" * 2
    rows = _rows(_write(tmp_path / "log", text), path)
    assert rows["loss"].tolist() == [2.5, 2.4, 2.4]


# ----------------------------------------------------------------------------- a loss printed inside its wrapper

# Lines users print when they format the loss object itself: torch's `tensor(...)` (`loss: tensor(0.5448,
# device='mps:0', grad_fn=<NllLossBackward0>)` and `Loss: tensor(0.3130)`, as public READMEs' training output shows
# them), numpy's `array(...)` / `np.float32(...)`, MindSpore's `Tensor(shape=[], dtype=Float32, value= ...)`.
WRAPPED = [
    ("step {s}, loss: tensor({v}, device='mps:0', grad_fn=<NllLossBackward0>)", "{v}"),
    ("step {s}, Loss: tensor({v})", "{v}"),
    ("step {s} loss=tensor({v}, device='cuda:0')", "{v}"),
    ("step {s} loss tensor({v}, device='cuda:0', grad_fn=<AddBackward0>)", "{v}"),
    ("step {s}, loss: tensor([{v}], device='npu:0')", "{v}"),
    ("epoch 1 step {s} loss: array({v}, dtype=float32)", "{v}"),
    ("step {s} loss: np.float32({v})", "{v}"),
    ("epoch: 1 step: {s}, loss is Tensor(shape=[], dtype=Float32, value= {v})", "{v}"),
]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("shape", [w for w, _ in WRAPPED])
def test_a_wrapped_loss_is_the_row_on_every_path(tmp_path: Path, path: str, shape: str) -> None:
    """The wrapped value is the loss (NaN too); the wrapper's own numbers (`cuda:0`) are no metric columns."""
    values = [3.2207, 2.5, float("nan"), 1.25] * 6
    text = "".join(shape.format(s=i + 1, v=v) + "\n" for i, v in enumerate(values))
    rows = _rows(_write(tmp_path / "log", text), path)
    assert rows["loss"].tolist() == pytest.approx(values, nan_ok=True)
    assert rows["step"].tolist() == list(range(1, len(values) + 1))
    assert not {"cuda", "npu", "mps", "device", "dtype"} & set(rows.columns)


def test_a_wrapped_loss_keeps_the_lines_other_metrics_and_refuses_a_vector() -> None:
    from core.logs.rows.general import read_line

    read = read_line("loss: tensor(2.1, device='cuda:0'), lr: 0.01, step: 3")
    assert read is not None and read.fields["loss"] == 2.1 and read.fields["lr"] == 0.01 and read.fields["step"] == 3
    assert read_line("loss: tensor([2.1, 3.0])") is None  # a vector: no one loss
    assert read_line("loss: tensor(") is None
    assert read_line("loss: tensor(2.1e)") is None  # not a whole number


@settings(max_examples=60, deadline=None)
@given(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([w for w, _ in WRAPPED]),
    st.integers(0, 10**6),
)
@example(float("inf"), WRAPPED[0][0], 0)
def test_any_wrapped_value_reads_as_printed(value: float, shape: str, step: int) -> None:
    """For every value a wrapper prints (repr: exponents, nan, inf), the loss is that value and the step the step."""
    from core.logs.rows.general import read_line

    read = read_line(shape.format(s=step, v=repr(value)))
    assert read is not None and not read.eval
    got = read.fields["loss"]
    assert (math.isnan(got) and math.isnan(value)) or got == value
    assert read.fields["step"] == step


def test_a_tensor_built_in_source_code_is_no_row() -> None:
    """megatron-deepspeed-lm-loss-then-ctrl-c-sigterm_microsoft-megatron-deepspeed-random-ltd: a traceback quotes the
    code that builds a tensor; `torch.tensor(...)` is a call, never what printing a value shows."""
    from core.logs.rows.general import read_line

    line = "    moe_loss = torch.tensor(0.0, device=layernorm_output.device, dtype=layernorm_output.dtype)    "
    assert read_line(line) is None


# ----------------------------------------------------------------------------- an epoch's summary naming its step count

# informer-ms-tab-iters-loss-and-epoch-summaries_competition-modelrain (the Time-Series-Library family: Informer,
# Autoformer, TimesNet... print these two shapes): step rows `\titers: N, epoch: E | loss: X`, then after each epoch
# `Epoch: E, Steps: M | Train Loss: ... Vali Loss: ... Test Loss: ...` (M: how many steps the epoch had)
INFORMER = CORPUS / "informer-ms-tab-iters-loss-and-epoch-summaries_competition-modelrain" / "log"
ITERS = "\titers: {n}, epoch: {e} | loss: {v:.7f}\n\tspeed: 0.3635s/iter; left time: 25871.3362s\n"
SUMMARY = (
    "Epoch: {e} cost time: 1353.8684768676758\nEpoch: {e}, Steps: {m} | Train Loss: {v:.7f} Vali Loss: 0.0998509 "
    "Test Loss: 0.1338928\n"
)


def test_the_real_lines_name_a_step_and_a_step_count() -> None:
    from core.logs.rows.general import read_line

    row = read_line("\titers: 50, epoch: 1 | loss: 0.0434697")
    assert row is not None and row.fields["step"] == 50 and row.fields["epoch"] == 1
    summary = read_line("Epoch: 1, Steps: 3741 | Train Loss: 0.1153923 Vali Loss: 0.0998509 Test Loss: 0.1338928")
    assert summary is not None and "step" not in summary.fields
    assert summary.fields["steps_total"] == 3741 and summary.fields["epoch"] == 1
    # a count only beside an epoch, and a `steps: N/M` pair stays the step and its total
    assert read_line("steps: 120, loss: 0.5").fields["step"] == 120  # type: ignore[union-attr]
    pair = read_line("Epoch: 1, Steps: 5/100, loss: 0.3")
    assert pair is not None and pair.fields["step"] == 5 and pair.fields["steps_total"] == 100


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_informer_log_reads_its_step_rows_only(path: str) -> None:
    rows = _rows(INFORMER, path)
    assert len(rows) == 1480
    assert rows["loss"].iloc[0] == pytest.approx(0.0434697) and rows["loss"].iloc[-1] == pytest.approx(0.0283318)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(2, 12), st.integers(1, 99999), st.floats(0.0, 10.0))
def test_epoch_summaries_with_a_step_count_are_no_training_rows(epochs: int, per: int, m: int, base: float) -> None:
    """For any number of epochs and step rows per epoch, every path keeps the step rows and sets the summaries
    aside (a summary is rarer than the rows it sums up)."""
    text, want = "", []
    for e in range(1, epochs + 1):
        for n in range(1, per + 1):
            v = round(base + e + n / 100, 7)
            text += ITERS.format(n=50 * n, e=e, v=v)
            want.append(v)
        text += SUMMARY.format(e=e, m=m, v=base)
    with tempfile.TemporaryDirectory() as tmp:
        folder = _write(Path(tmp) / "log", text)
        for path in READ_PATHS:
            rows = _rows(folder, path)
            assert rows["loss"].tolist() == pytest.approx(want), path
