"""Issue 18 items 1, 2, 3, 7: one general line reader for every suite's loss lines (whatever comes before
the key), evaluation lines as their own series, every scalar a metric column, and help when nothing is read.

Real lines: tests/fixtures/logs/formats/SOURCES.md and core.logs.rows.formats.FORMATS (each with its source)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs import FORMATS, read_run
from core.logs.rows.general import read_line
from core.logs.rows.shapes import line_shapes, metric_labels
from tests.strategies import NOISE, OTHER, PLAIN, RARE, general_line

REPO = Path(__file__).resolve().parents[1]
FMT = REPO / "tests" / "fixtures" / "logs" / "formats"

# what each registry sample says, read by a person: (epoch, step, epochs_total, steps_total, loss)
SAMPLE_FIELDS = {
    "lossmonitor": (1, 2, None, None, 2.3139476776123047),
    "mindspore_print": (0, 10, None, None, 2.2889402),
    "mindformers_0x": (1, 4, 1, 125, 2.244),
    "mindformers_1x": (1, 1, 2, 19, 10.649),
    "mindformers_2x": (1, 1, 4, 16, 5.547178),
    "mindformers_docs": (1, 1, 2, 6500, 0.0),
    "mindcv": (1, 1, 3, 8, 1.533790),
    "mindocr": (12, 700, 20, 4468, 19.327375),
    "mindyolo": (146, 145 * 422 + 52, 500, 422, 3.8198),
    "megatron": (None, 122, None, 250000, 2.504220),
    "libcity": (1, None, 30, None, 7.030),
    "pytorch_style": (None, 0, None, 938, 2.302088),
    "generic": (None, 194, None, None, 1.997),
}


def test_every_suite_sample_is_a_training_row_of_the_general_reader() -> None:
    assert {f.name for f in FORMATS} == set(SAMPLE_FIELDS)
    for fmt in FORMATS:
        read = read_line(fmt.sample)
        assert read is not None and not read.eval, fmt.name
        got = tuple(read.fields.get(k) for k in ("epoch", "step", "epochs_total", "steps_total", "loss"))
        assert got == SAMPLE_FIELDS[fmt.name], fmt.name
        assert fmt.source and fmt.parse(fmt.sample.encode())["loss"] == got[-1]


@pytest.mark.parametrize(
    ("line", "loss", "epoch", "step"),
    [
        ("Epoch: [  1/ 30], Average Train Loss: [7.030], Accuracy: [0.125]", 7.030, 1, None),
        ("step 3 | lm loss: 1.034E+01 | lr 1e-4", 10.34, None, 3),
        ("total_loss = 0.25, step: 7", 0.25, None, 7),
        ("train_loss: -inf epoch 2/5", -math.inf, 2, None),
        ("LOSS: nan", math.nan, None, None),
        ("Loss is 3.5e-3", 3.5e-3, None, None),
        ("\x1b[1;32m[INFO]\x1b[0m Epoch 15/300, Step 100/101, loss: 0.5", 0.5, 15, 14 * 101 + 100),
        ("2024-01-01 10:00:00 | INFO | {'loss': 2.5, 'grad_norm': 1.5, 'epoch': 3}", 2.5, 3, None),
        ("loss | 4.25 | iteration   10/ 5000 |", 4.25, None, 10),
    ],
)
def test_keys_separators_values_and_prefixes(line: str, loss: float, epoch: int | None, step: int | None) -> None:
    read = read_line(line)
    assert read is not None and not read.eval
    got = read.fields["loss"]
    assert (math.isnan(got) and math.isnan(loss)) or got == loss
    assert read.fields.get("epoch") == epoch and read.fields.get("step") == step


@pytest.mark.parametrize(
    "line",
    [
        "Loss scale: 1.0(fixed)",  # MindCV start-up: `Loss scale`, not a loss
        " 'coords_loss_coef': 5.0,",
        "lossmonitor: 3.0",
        "loss: 4.5e",  # not a whole number
        "[WARNING] ME(7587:1400,MainProcess):2026-11-22-07:09:00.372.000 [a.py:1] loss is 3.0",  # framework chatter
        "[2026-11-23 21:24:34] mindcv.utils.callbacks INFO - The best validation Top_1_Accuracy is: 50.0% at epoch 2.",
    ],
)
def test_lines_that_are_not_loss_lines(line: str) -> None:
    from core.logs.rows.formats import read_loss

    assert read_loss(line) is None


@pytest.mark.parametrize(
    "line",
    [
        " Accuracy: 83.8%, Avg loss: 0.529534",
        "epoch 3 val_loss: 0.25",
        " validation loss at iteration 10 | lm loss value: 1.023E+01 | lm loss PPL: 2.76E+04 |",
        "[2026-11-23 21:22:20] mindcv.utils.callbacks INFO - Validation Top_1_Accuracy: 25.0000%, time: 14.791992s",
        "eval: epoch 2, loss: 0.3",
    ],
)
def test_evaluation_lines_are_eval(line: str) -> None:
    read = read_line(line)
    assert read is not None and read.eval


def test_paired_loss_keeps_the_running_average_and_every_scalar_is_a_metric() -> None:
    read = read_line(dict((f.name, f.sample) for f in FORMATS)["mindformers_2x"])
    assert read.fields["loss"] == 5.547178 and read.extras["loss_avg"] == 5.547178
    assert read.fields["step_time_ms"] == 4503 and read.fields["lr"] == 0.003
    assert read.fields["global_norm"] == 0.73903346 and read.fields["overflow"] == 0.0
    assert read.keys["throughput"] == "train_throughput_per_npu"


def test_mindcv_bracketed_timestamps_give_rows_evals_and_metrics() -> None:
    """Every MindCV line starts with `[date]`: the pre-filter dropped all of them (0 rows before)."""
    snap = read_run(FMT / "mindcv")
    m = snap.metrics
    assert len(m) == 24 and m["loss"].iloc[0] == 1.569381 and m["loss"].iloc[-1] == 1.462958
    assert m["steps_total"].unique().tolist() == [8] and m["epochs_total"].unique().tolist() == [3]
    assert m["step_time_ms"].iloc[0] == pytest.approx(18480.284)
    assert m["time"].notna().all()
    assert snap.evals["offset"].nunique() == 3
    acc = snap.evals[snap.evals["name"] == "validation_top_1_accuracy"]["value"].tolist()
    assert acc == [25.0, 50.0, 50.0]
    assert "time (step_time_ms)" in metric_labels(snap.metric_keys)


def test_mindocr_every_scalar_is_a_column() -> None:
    snap = read_run(FMT / "mindocr")
    m = snap.metrics
    assert len(m) == 7 and m["step"].iloc[0] == 700 and m["steps_total"].iloc[0] == 4468
    assert m["fps_per_card"].tolist()[0] == 4.47 and m["step_time_ms"].iloc[0] == 223.489
    assert set(metric_labels(snap.metric_keys)) >= {"lr", "per_step_time (step_time_ms)", "fps_per_card"}


def test_megatron_iterations_and_scientific_losses() -> None:
    snap = read_run(FMT / "megatron")
    m = snap.metrics
    assert m["step"].tolist() == [122, 123, 124, 125]
    assert m["loss"].iloc[0] == 2.504220 and m["loss"].iloc[-1] == 2.477393
    assert m["global_norm"].iloc[0] == 0.231 and "consumed_samples" in m.columns
    assert "learning_rate (lr)" in metric_labels(snap.metric_keys)


def test_evaluation_summaries_are_not_training_rows() -> None:
    """` Accuracy: 83.8%, Avg loss: 0.529534` after `Test:` was a training row before (issue 18 item 2)."""
    snap = read_run(FMT / "eval_lines")
    assert len(snap.metrics) == 30 and snap.metrics["loss"].iloc[-1] == 0.202862
    ev = snap.evals
    assert ev[ev["name"] == "loss"]["value"].tolist()[0] == 0.529534
    assert ev["offset"].nunique() == 3


_PREFIXES = st.sampled_from(
    [
        "",
        "[2026-11-23 19:07:06] x.y INFO - ",
        "[INFO] 2026-11-23 19:14:00,332 [a.py:1] ",
        "[WARNING] ",
        "\x1b[32m",
        "{ ",
        "2023-10-30 09:39:35,587 - INFO - ",
        " ",
        "[[x]] ",
    ]
)


@settings(max_examples=100, deadline=None)
@given(
    prefix=_PREFIXES,
    key=st.sampled_from(["loss", "Loss", "total_loss", "train_loss", "lm loss"]),
    sep=st.sampled_from([": ", " is ", "=", " | ", ":"]),
    value=st.floats(allow_nan=False, width=32),
    step=st.integers(0, 10**6),
)
def test_no_prefix_hides_a_loss_line_from_the_reader(
    tmp_path_factory: pytest.TempPathFactory, prefix: str, key: str, sep: str, value: float, step: int
) -> None:
    """The pre-filter drops no line the general reader takes, whatever comes before the key."""
    root = tmp_path_factory.mktemp("prefix")
    noise = "[WARNING] ME(1:2,MainProcess):x [a.py:1] noise\n" * 3
    line = f"{prefix}step: {step}, {key}{sep}{value!r}\n"
    (root / "worker_0.log").write_text(noise + line * 2 + noise, encoding="utf-8")
    m = read_run(root).metrics
    assert m["loss"].tolist() == [value, value] and m["step"].tolist() == [step, step]


def test_line_shapes_and_a_user_regex_for_an_unknown_format(tmp_path: Path) -> None:
    """Item 7: no loss row -> the most frequent numeric line shapes; the regex reads `[`-prefixed lines."""
    lines = "".join(f"[12:00:{i:02d}] it {i} cost={1 / (i + 1):.4f}\n" for i in range(30)) + "starting\n"
    (tmp_path / "worker_0.log").write_text(lines)
    shapes = line_shapes([tmp_path / "worker_0.log"])
    assert shapes[0].count == 30 and shapes[0].shape.startswith("[#:#:#] it # cost=#.#")
    out = subprocess.run(
        [sys.executable, "-m", "core", "watch", str(tmp_path), "--once"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "loss rows=0" in out and "30 x [#:#:#] it # cost=#.#" in out and "--loss-regex" in out
    snap = read_run(tmp_path, loss_regex=r"it (?P<step>\d+) cost=(?P<loss>[\d.]+)")
    assert len(snap.metrics) == 30 and snap.metrics["step"].iloc[-1] == 29


def test_watch_once_lists_metric_names_and_eval_rows() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "core", "watch", str(FMT / "mindcv"), "--once"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "loss rows=24, eval rows=3" in out
    metrics = next(line for line in out.splitlines() if line.startswith("metrics: "))
    assert "lr" in metrics and "time (step_time_ms)" in metrics


_SHAPES = [
    "[2026-11-23 19:07:06] mindcv.utils.callbacks INFO - Epoch: [1/3], batch: [1/8], loss: 1.533790, lr: 0.010000, "
    "time: 20.169336s",
    "{ Epoch:[  1/  4], step:[    1/   16], loss:[5.547178/5.547178], per_step_time: 4503ms, overflow cond: 0, "
    "top1_acc: 0.5, global_norm: [0.73903346]",
    " iteration      122/  250000 | lm loss: 2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 |",
    "2024-10-18 10:01:24,917 [INFO] Epoch 1/500, Step 250/1516, imgsize (640, 640), loss: 10.0633, cur_lr: 0.09",
    "step: 12, val_loss: 0.25 Avg loss: 1.5",
    "epoch 3 loss_scale_window: 1000 aux_loss_coef: 1",
    "step 1 loss: 2.5 overflow cond: 7, top1: 0.5",
]


@settings(max_examples=200, deadline=None)
@given(
    shape=st.sampled_from(_SHAPES),
    fills=st.lists(st.text("0123456789", min_size=200, max_size=200), min_size=2, max_size=6),
)
def test_lines_of_one_shape_read_like_the_general_reader(
    tmp_path_factory: pytest.TempPathFactory, shape: str, fills: list[str]
) -> None:
    """The reader reuses a line shape's parse (core.logs.rows.linetemplates.LineTemplate) for every line of the same
    text with other digits (word digits such as `top1` too): rows and metrics equal the per-line reader's."""
    from core.logs.rows.formats import ROW_FIELDS, read_loss

    lines = []
    for fill in fills:
        digits = iter(fill)
        lines.append("".join(next(digits) if c.isdigit() else c for c in shape))
    from core.logs import ReaderSettings
    from core.logs.rows.reader import RunReader

    root = tmp_path_factory.mktemp("shape")
    path = root / "worker_0.log"
    path.write_text(lines[0] + "\n", encoding="utf-8")  # the first line teaches the reader its shape,
    state = RunReader(root, settings=ReaderSettings(block_min=1, shape_min=1, compiled_min=0))
    state.refresh()
    with open(path, "a", encoding="utf-8") as f:  # the next ones are read in bulk (core.logs.rows.templated)
        f.write("\n".join(lines[1:]) + "\n")
    state.refresh()
    m = state.snapshot().metrics
    # the same rows and values, bit for bit (the bulk path may add a shape's columns in another order)
    pd.testing.assert_frame_equal(m, read_run(root).metrics, check_like=True)
    want = [read_loss(line) for line in lines]
    want = [r for r in want if r is not None and not r.eval and "loss" in r.fields]
    assert len(m) == len(want)
    for i, r in enumerate(want):
        for k in ROW_FIELDS[:-1]:
            a, b = m[k].iloc[i], r.fields.get(k, math.nan)
            assert a == b or (a != a and b != b), (k, a, b)
        for k, v in r.extras.items():
            assert m[k].iloc[i] == v or (v != v and m[k].iloc[i] != m[k].iloc[i]), k


# ----------------------------------------------------------------------------- digits inside words


def _with_word_digits(line: bytes, digits: list[int]) -> bytes:
    """`line` with its digits inside words (`top1`, `7fa0fb3a06c0`) replaced, one by one, by `digits`."""
    from core.logs.rows.linetemplates import digits_in_words

    out = bytearray(line)
    for k, (pos, _) in enumerate(digits_in_words(line)):
        out[pos] = 48 + digits[k % len(digits)]
    return bytes(out)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(general_line(), st.sampled_from(NOISE + OTHER + PLAIN + RARE)),
    st.lists(st.integers(0, 9), min_size=1, max_size=6),
    st.sampled_from([b"", b"top1 ", b"loss2: ", b"val3 ", b"x7fa0fb3a06c0 "]),
)
def test_digits_inside_words_never_decide_whether_a_line_gives_a_row(
    line: bytes, digits: list[int], lead: bytes
) -> None:
    """A shape that gives no row is remembered without its digits inside words (core.logs.rows.general.
    NO_ROW): that holds only if no such digit can turn a line without a row into one with a row."""
    from core.logs.rows.formats import read_loss

    line = lead + line.rstrip(b"\n")
    other = _with_word_digits(line, digits)
    assert (read_loss(line) is None) == (read_loss(other) is None), (line, other)


def test_a_big_read_freezes_the_reader_state_and_ticks_still_read(tmp_path: Path) -> None:
    """A refresh that parsed `settle_min` bytes or more moves what is alive into the collector's permanent
    generation (live ticks' full collections no longer rescan 1,024 files' state); a smaller one does not;
    a tick after it still reads its new line. The policy is its owner's (the watcher injects `settle_heap`):
    a reader given none never freezes the process's heap."""
    import gc

    from core.logs.live.heap import settle_heap
    from core.logs.rows.parser import ReaderSettings
    from core.logs.rows.reader import RunReader

    line = "2026-01-01 10:00:0{s},100 - mindformers - INFO - Epoch:[ 1/ 4], step:[{s}/9], loss: 2.{s}\n"
    for rank in range(2):
        (tmp_path / f"worker_{rank}.log").write_text("".join(line.format(s=s) for s in range(1, 6)))
    gc.unfreeze()
    try:
        small = RunReader(tmp_path, settings=ReaderSettings(settle_min=1 << 40), after_big_read=settle_heap)
        small.refresh()
        assert gc.get_freeze_count() == 0
        unowned = RunReader(tmp_path, settings=ReaderSettings(settle_min=1))
        unowned.refresh()
        assert gc.get_freeze_count() == 0
        big = RunReader(tmp_path, settings=ReaderSettings(settle_min=1), after_big_read=settle_heap)
        big.refresh()
        assert gc.get_freeze_count() > 0
        alive = {id(o) for o in gc.get_objects()}  # the permanent generation is not listed
        assert all(gc.is_tracked(st) and id(st) not in alive for st in big.files.values())
        with (tmp_path / "worker_1.log").open("a") as f:
            f.write(line.format(s=6))
        big.refresh()
        assert big.snapshot().metrics.groupby("rank").size().tolist() == [5, 6]
    finally:
        gc.unfreeze()
