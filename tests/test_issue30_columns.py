"""Issue 30, corpus gaps ultralytics-1654 and ultralytics-21765: the YOLO column table (core.logs.rows.columns).

Ultralytics' trainers print their training rows with no key: a header line names the columns
(`Epoch GPU_mem box_loss cls_loss dfl_loss Instances Size`), each epoch's row gives the numbers under it, and a
`Class ... mAP` header names the `all` validation line's. Every read path gave no row before (the rows hold no loss
word; the bulk paths dropped them as lines worth nothing). Now a header line of names holding a loss key names the
keyless rows under it, on every read path (tests/helpers.READ_PATHS), a live read's later ticks included.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.rows.columns import ColumnHeader, header_of, header_shape, read_row
from core.logs.rows.linetemplates import shape_key
from core.logs.rows.reader import RunReader
from tests.helpers import READ_PATHS, entry_lines, read_entry

PATHS = READ_PATHS
Y1654 = "ultralytics-yolov8-epoch-table-three-epochs-val-all-lines_ultralytics-1654"
Y21765 = "yolov8-column-table-negative-box-loss-two-epochs-three-all-lines_ultralytics-21765"
LINES = entry_lines(Y1654)  # the entry's real lines: header, row, Class header, `all` line, blank, three times
HEADER, ROW, CLASS, ALL = LINES[0], LINES[1], LINES[2], LINES[3]


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(
    ("entry", "losses", "evals"),
    [(Y1654, [1.477, 1.468, 1.466], 3), (Y21765, [-0.2338, -0.2286], 3)],
)
def test_the_entries_rows_metrics_and_evaluations(
    tmp_path: Path, path: str, entry: str, losses: list[float], evals: int
) -> None:
    snap = read_entry(tmp_path, entry, path)
    assert snap.metrics["loss"].tolist() == losses
    assert {"cls_loss", "dfl_loss"} <= set(snap.metrics.columns)
    assert not {"GPU_mem", "Instances", "Size"} & set(snap.metrics.columns)  # a memory, counts: no metric
    assert {"cls_loss", "dfl_loss"} <= set(snap.metric_keys)  # (listed by `watch`)
    assert snap.evals["offset"].nunique() == evals
    assert set(snap.evals["name"]) >= {"Box/P", "Box/R", "Box/mAP50", "Box/mAP50-95"}


def test_the_evaluation_is_of_the_epoch_before_it(tmp_path: Path) -> None:
    snap = read_entry(tmp_path, Y1654, "line_by_line")
    m50 = snap.evals[snap.evals["name"] == "Box/mAP50"]
    assert m50["epoch"].tolist() == [20, 21, 22]
    assert m50["value"].tolist() == [0.677, 0.68, 0.678]
    assert snap.metrics["epoch"].tolist() == [20, 21, 22]
    assert snap.metrics["epochs_total"].tolist() == [300, 300, 300]


def _epochs(n: int, ranks: int, folder: Path) -> Path:
    """`ranks` worker logs of `n` epochs in the entry's real lines (epoch and loss varied), among plain text."""
    for rank in range(ranks):
        out = [b"Starting training for %d epochs..." % n, b"Plotting labels to runs/detect/train/labels.jpg... "]
        for e in range(1, n + 1):
            row = ROW.replace(b"20/300", b"%d/%d" % (e, n)).replace(b"1.477", b"%.4f" % (2 + rank - e / 100))
            out += [b"", HEADER, row, CLASS, ALL, b"Validating runs/detect/train/weights/best.pt..."]
        (folder / f"worker_{rank}.log").write_bytes(b"\n".join(out) + b"\n")
    return folder


@pytest.mark.parametrize("path", sorted(PATHS))
def test_many_epochs_of_several_ranks_read_alike_on_every_path(tmp_path: Path, path: str) -> None:
    snap = read_run(_epochs(60, 3, tmp_path), settings=PATHS[path])
    for rank in range(3):
        rows = snap.metrics[snap.metrics["rank"] == rank]
        assert rows["epoch"].tolist() == list(range(1, 61))
        assert math.isclose(rows["loss"].iloc[0], 2 + rank - 0.01) and math.isclose(rows["loss"].iloc[-1], 1.4 + rank)
        assert snap.evals[snap.evals["rank"] == rank]["offset"].nunique() == 60


@pytest.mark.parametrize("path", sorted(PATHS))
def test_rows_after_a_header_read_in_an_earlier_tick(tmp_path: Path, path: str) -> None:
    """A live read: the header in one read, its rows appended later (the file keeps its table)."""
    log = tmp_path / "worker_0.log"
    log.write_bytes(b"\n".join([b"Starting training for 300 epochs...", HEADER]) + b"\n")
    reader = RunReader(tmp_path, settings=PATHS[path])
    reader.refresh()
    assert reader.snapshot().metrics.empty
    with log.open("ab") as f:
        f.write(b"\n".join([ROW, CLASS, ALL]) + b"\n")
    reader.refresh()
    snap = reader.snapshot()
    assert snap.metrics["loss"].tolist() == [1.477]
    assert snap.evals["offset"].nunique() == 1


@pytest.mark.parametrize("path", sorted(PATHS))
def test_keyless_rows_without_a_header_are_no_rows(tmp_path: Path, path: str) -> None:
    (tmp_path / "train.log").write_bytes(b"\n".join([ROW, ALL, ROW]) + b"\n")
    snap = read_run(tmp_path, settings=PATHS[path])
    assert snap.metrics.empty and snap.evals.empty


def test_yolo_bare_loss_parts_read_their_total_else_their_first_part() -> None:
    """Round 9 (r9tables): YOLOv3/v5/v7 name their loss parts bare beside `gpu_mem` (their `mloss`: box, obj, cls
    and, before v6, total). `total` is the loss, not a guess; with none, the first part (box), as the corpus reads
    Ultralytics' `box_loss cls_loss dfl_loss` table. Before, this YOLOv7 header was no header (its rows unread)."""
    v7 = header_of(b"     Epoch   gpu_mem       box       obj       cls     total    labels  img_size")
    assert v7 is not None and v7.names[v7.loss or 0] == "total" and v7.parts
    v5 = header_of(b"     Epoch   gpu_mem       box       obj       cls    labels  img_size")
    assert v5 is not None and v5.names[v5.loss or 0] == "box"
    # a real row (peshmerge/ml_2_project, yolov5/runs/terminal_output_300_epochs.md at 8600b52, round 9's build set)
    row = read_row(v5, b"     0/299     5.05G   0.06359   0.03304         0         0      1280: 100%| 213/213")
    assert row is not None and row.fields["loss"] == 0.06359 and row.extras["obj"] == 0.03304
    assert "labels" not in row.extras and "gpu_mem" not in row.extras and row.fields["epoch"] == 0


def test_headers_without_a_loss_key_or_a_class_map_table_are_none() -> None:
    # a table of bare words with no loss key and no `gpu_mem` beside them is no YOLO table: unread
    assert header_of(b"     Epoch       box       obj       cls     total    labels  img_size") is None
    assert header_of(b"Class Images Instances P R") is None  # no mAP: any table's words
    assert header_of(b"train loss") is None  # two words are any text's
    assert header_of(b"Using loss function CrossEntropyLoss with label smoothing") is None  # a sentence: no table
    assert header_of(b"epoch 3 loss 2.5 lr 0.1") is None  # numbers: a keyed line, not a header
    # llm.c's `trl` / `tel` name a loss only as a whole name, never inside one (`Intel`, `ctrl`, `hotel`)
    assert header_of(b"step,Intel_score,hotel_ctrl") is None
    assert header_of(b"      step      Intel       ctrl      hotel") is None
    assert header_of(b"step,trl,lr") == ColumnHeader(("step", "trl", "lr"), 1, b",")
    assert header_of(HEADER) == ColumnHeader(
        ("Epoch", "GPU_mem", "box_loss", "cls_loss", "dfl_loss", "Instances", "Size"), 2
    )
    assert header_shape(shape_key(CLASS)) and header_shape(shape_key(HEADER)) and not header_shape(shape_key(ROW))


def test_a_row_of_another_count_or_with_words_is_no_row() -> None:
    header = header_of(HEADER)
    assert header is not None
    assert read_row(header, ROW.replace(b"  120  ", b"  ")) is None  # six cells under seven names
    assert read_row(header, ROW.replace(b"16.1G", b"cuda")) is None
    assert read_row(header, ALL) is None  # the `all` line is an evaluation table's row only
    redrawn = read_row(header, ROW.replace(b"1.477", b"1.9") + b"\r" + ROW)  # a terminal's redraw: its last draw
    assert redrawn is not None and redrawn.fields["loss"] == 1.477


_NAME = st.from_regex(r"\A[A-Za-z][A-Za-z_]{0,8}\Z")


@given(
    names=st.lists(_NAME, min_size=2, max_size=8, unique=True),
    at=st.integers(0, 8),
    values=st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=10, max_size=10),
)
def test_a_row_under_any_header_gives_its_loss_column_exactly(names: list[str], at: int, values: list[float]) -> None:
    names.insert(min(at, len(names)), "x_loss")
    header = header_of(("  ".join(f"{n:>11}" for n in names)).encode())
    assert header is not None and "loss" in header.names[header.loss or 0].lower()
    cells = [repr(v) for v in values[: len(names)]]
    read = read_row(header, "  ".join(cells).encode() + b": 100%|##| 3/3 [00:01<00:00,  2.1it/s]")
    assert read is not None and read.fields["loss"] == float(cells[header.loss or 0])
    assert read_row(header, " ".join(cells[:-1]).encode()) is None  # a cell short


@given(st.binary(max_size=200))
def test_any_bytes_are_a_header_or_none_and_never_raise(line: bytes) -> None:
    header = header_of(line)
    if header is not None:
        assert len(header.names) >= 3
        assert read_row(header, line) is None or header.loss is not None
