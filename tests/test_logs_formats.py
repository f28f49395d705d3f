"""core.logs.rows.formats on real lines of every suite (tests/fixtures/logs/formats/SOURCES.md says where
each came from): MindFormers 2023 (behind `[INFO]`), MindFormers current, MindYOLO/MindCV/MindOCR."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs import FORMATS, ReaderSettings, parse_loss_line, read_run, tail_lines
from core.logs.rows.formats import parse_step_time_line

FMT = Path(__file__).parent / "fixtures" / "logs" / "formats"


def test_mindformers_2023_info_prefixed_lines_are_read() -> None:
    """Every metric line starts with `[INFO]`: the chatter filter must not drop them."""
    snap = read_run(FMT / "mindformers_2023")
    m = snap.metrics
    assert m["step"].tolist() == [4, 8, 116, 120, 124]
    assert m["loss"].tolist() == [2.244, 2.499, 2.220, 2.092, 2.346]
    assert m["steps_total"].unique().tolist() == [125] and m["epochs_total"].unique().tolist() == [1]
    assert m["step_time_ms"].tolist()[:2] == [507844.205, 7480.938]
    assert m["lr"].tolist()[-1] == 2.65e-06
    assert m["overflow"].tolist() == [1, 1, 0, 0, 0]
    assert m["loss_scale"].tolist()[0] == 268435460.0
    # the line's own time stamp, behind the [INFO] prefix
    assert not m["time"].isna().any() and m["time"].is_monotonic_increasing
    assert snap.errors.empty


def test_mindformers_2023_same_rows_on_the_bulk_path() -> None:
    """Lines picked out of the chatter give the same rows whatever path reads the block."""
    a = read_run(FMT / "mindformers_2023")
    b = read_run(FMT / "mindformers_2023", settings=ReaderSettings(block_min=1, compiled_min=0))
    assert a.metrics.drop(columns="time").equals(b.metrics.drop(columns="time"))


def test_tail_keeps_info_prefixed_metric_lines() -> None:
    lines = tail_lines(FMT / "mindformers_2023" / "worker_0.log", hide_noise=True)
    assert len(lines) == 5 and all("print_output_info" in line for line in lines)


def test_mindyolo_lines_give_global_steps_and_step_times() -> None:
    snap = read_run(FMT / "mindyolo")
    m = snap.metrics
    per_epoch = 422
    assert m["step"].tolist() == [145 * per_epoch + s for s in (52, 104, 156, 416)]
    assert m["loss"].tolist() == [3.8198, 4.2556, 3.3041, 2.7312]
    assert m["epoch"].unique().tolist() == [146] and m["epochs_total"].unique().tolist() == [500]
    assert m["steps_total"].unique().tolist() == [per_epoch]
    assert m["lr"].unique().tolist() == [0.007129000034183264]
    assert m["time"].notna().all()
    t = snap.timings
    assert t["step"].tolist() == m["step"].tolist()
    assert t["step_time_ms"].tolist() == [993.04, 992.82, 992.73, 988.38]


def test_mindformers_current_health_fields() -> None:
    snap = read_run(FMT / "mindformers_current")
    m = snap.metrics
    assert m["loss"].tolist() == [10.649, 10.633, 0.0]
    assert m["step_time_ms"].tolist() == [103328, 1752, 166756]
    assert m["throughput"].tolist() == [2.896, 170.738, 2.849]
    assert m["global_norm"].tolist()[2] == 44.313248
    assert m["overflow"].tolist() == [0, 0, 0] and m["loss_scale"].tolist() == [1.0, 1.0, 1.0]


def test_every_format_names_its_source_and_reads_its_sample() -> None:
    for fmt in FORMATS:
        row = parse_loss_line(fmt.sample)
        assert row is not None and math.isfinite(row["loss"]), fmt.name
        assert fmt.parse(fmt.sample.encode()) is not None


def test_yolo_step_time_line_needs_its_shape() -> None:
    assert parse_step_time_line(b"2024-09-16 17:20:40,329 [INFO] Epoch 2/5, Step 3/10, step time: 9.5 ms") == (
        2.0,
        13.0,
        9.5,
    )
    assert parse_step_time_line(b"Epoch 2/5, Step x/10, step time: 9.5 ms") is None
    assert parse_step_time_line(b"step time: 9.5 ms") is None


def test_info_lines_without_a_marker_stay_noise() -> None:
    assert parse_loss_line("[INFO] 2023-07-11 10:47:37,342 [x.py:1] avg loss: 2.244") is None
    assert parse_loss_line("[WARNING] ME(1:2,MainProcess) loss is 3.0") is None


@settings(max_examples=200, deadline=None)
@given(
    epoch=st.integers(1, 10_000),
    epochs=st.integers(1, 10_000),
    step=st.integers(0, 10**6),
    per_epoch=st.integers(1, 10**6),
    loss=st.floats(allow_nan=False, allow_infinity=False),
)
def test_yolo_global_step_property(epoch: int, epochs: int, step: int, per_epoch: int, loss: float) -> None:
    line = (
        f"2024-12-25 09:58:42,787 [INFO] Epoch {epoch}/{epochs}, Step {step}/{per_epoch}, imgsize (640, 640), "
        f"loss: {loss!r}, lbox: 1.0, cur_lr: 0.0992"
    )
    row = parse_loss_line(line)
    assert row is not None
    assert row["step"] == (epoch - 1) * per_epoch + step and row["loss"] == loss and row["lr"] == 0.0992


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_parse_loss_line_never_raises_on_garbage(data: bytes) -> None:
    row = parse_loss_line(data)
    assert row is None or "loss" in row


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.sampled_from(["Epoch:[", "Epoch ", "loss: ", "global_norm: [", "[INFO] Epoch:["]),
    tail=st.text(max_size=80),
)
def test_truncated_metric_lines_do_not_raise(prefix: str, tail: str) -> None:
    row = parse_loss_line(prefix + tail)
    assert row is None or isinstance(row["loss"], float)
