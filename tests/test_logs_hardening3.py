"""Issue 31 item 7: the log reader's smaller items. Each test reproduces a reported failure and checks
the fix: a truncated or copy-truncated log keeps its earlier rows and says so; a UTF-16 log is named;
no metric is named after binary bytes; a symbolic link loop is named in the "not read" notes; an
absurd measured memory peak is flagged, never shown as a figure."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.cli.diagnose import memory_lines
from core.logs import ReaderSettings, read_run
from core.logs.bytes import utf16
from core.logs.bytes.discover import folder_notes
from core.logs.judgement import metrics as curves
from core.logs.judgement.status import rank_status
from core.logs.live.watcher import RunWatcher
from core.logs.rows import memory
from core.logs.rows.formats import read_loss
from core.logs.rows.keys import glued_to_binary
from core.logs.rows.memory import MIB, MemoryUse, memory_report, memory_rows, parse_memory
from core.logs.rows.reader import RunReader
from core.logs.tokens.bulk import ROW_KEYS

REPO = Path(__file__).resolve().parent.parent
GIB = 1 << 30
LINE = "epoch: 1 step: {s}, loss is {v}\n"


def _lines(steps: range, v: float = 1.0) -> str:
    return "".join(LINE.format(s=s, v=v) for s in steps)


def _cut(path: Path) -> None:
    """What `truncate -s 0` and logrotate's copytruncate do: the same file, emptied in place."""
    with open(path, "r+b") as f:
        f.truncate(0)


def _notes(snap) -> list[str]:
    errs = snap.errors
    return errs.loc[errs["kind"] == "truncated", "message"].tolist()


# ----------------------------------------------------------------------------- truncation


def test_copytruncate_keeps_the_earlier_rows_from_the_copy(tmp_path: Path) -> None:
    log = tmp_path / "worker_0.log"
    log.write_text(_lines(range(1, 4)))
    state = RunReader(tmp_path)
    state.refresh()
    with open(log, "a") as f:  # written after our last read, just before logrotate copies the file
        f.write(LINE.format(s=4, v=1.0))
    shutil.copyfile(log, tmp_path / "worker_0.log.1")
    _cut(log)
    with open(log, "a") as f:
        f.write(LINE.format(s=5, v=2.0))
    state.refresh()
    snap = state.snapshot()
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4, 5]  # step 4 read from the copy, nothing twice
    assert snap.metrics["file"].astype(str).tolist() == ["worker_0.log.1"] * 4 + ["worker_0.log"]
    (note,) = _notes(snap)
    assert "copy-truncated" in note and "worker_0.log.1" in note and "4 earlier rows" in note
    assert snap.ranks.iloc[0]["restarts"] == 0 and snap.crashed_ranks() == []
    with open(log, "a") as f:
        f.write(LINE.format(s=6, v=3.0))
    state.refresh()
    assert state.snapshot().metrics["step"].tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("seen_empty", [False, True])
def test_truncate_in_place_keeps_the_earlier_rows_as_a_segment(tmp_path: Path, seen_empty: bool) -> None:
    log = tmp_path / "worker_0.log"
    log.write_text(_lines(range(1, 4)))
    state = RunReader(tmp_path)
    state.refresh()
    _cut(log)
    if seen_empty:  # a watcher may look while the file is empty
        state.refresh()
        assert state.snapshot().metrics["step"].tolist() == [1, 2, 3]
    with open(log, "a") as f:  # the writer goes on (O_APPEND): its lines land at the new start
        f.write(_lines(range(4, 6), 2.0))
    state.refresh()
    snap = state.snapshot()
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4, 5]
    files = snap.metrics["file"].astype(str).tolist()
    assert files == ["worker_0.log (before truncation 1)"] * 3 + ["worker_0.log"] * 2
    (note,) = _notes(snap)
    assert note.startswith("worker_0.log was truncated in place") and "3 earlier rows" in note
    assert snap.ranks.iloc[0]["last_step"] == 5
    with open(log, "a") as f:  # the kept part is never read again; the file goes on
        f.write(LINE.format(s=6, v=3.0))
    state.refresh()
    assert state.snapshot().metrics["step"].tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("polling", [False, True])
def test_a_watcher_keeps_the_rows_of_a_log_truncated_under_it(tmp_path: Path, polling: bool) -> None:
    log = tmp_path / "worker_0.log"
    log.write_text(_lines(range(1, 4)))

    def steps(w: RunWatcher) -> list[float]:
        return w.snapshot(refresh=True).metrics["step"].tolist()

    with RunWatcher(tmp_path, polling=polling, rescan_s=0.3) as w:
        assert steps(w) == [1, 2, 3]
        _cut(log)
        with open(log, "a") as f:
            f.write(_lines(range(4, 6)))
        assert _wait_for(lambda: steps(w) == [1, 2, 3, 4, 5]), steps(w)
        assert _wait_for(lambda: len(_notes(w.snapshot(refresh=True))) == 1)


def _wait_for(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def test_repeated_steps_after_a_truncation_are_a_new_segment(tmp_path: Path) -> None:
    """Steps may repeat (a resume from a checkpoint in the same log): the earlier rows stay as their own
    file, so a chart of each file's rows never draws a line back."""
    log = tmp_path / "worker_0.log"
    log.write_text(_lines(range(1, 9)))
    state = RunReader(tmp_path)
    state.refresh()
    _cut(log)
    log.write_text(_lines(range(5, 8), 0.5))
    state.refresh()
    m = state.snapshot().metrics
    assert m["step"].tolist() == [*range(1, 9), 5, 6, 7]
    for _, part in m.groupby("file", observed=True):
        assert part["step"].is_monotonic_increasing


def test_the_chart_has_a_gap_not_a_line_back_after_a_truncation(tmp_path: Path) -> None:
    from app.monitor import figures as ui
    from app.monitor.figure_data import ChartOptions, prepare

    log = tmp_path / "worker_0.log"
    log.write_text(_lines(range(1, 9)))
    state = RunReader(tmp_path)
    state.refresh()
    _cut(log)
    log.write_text(_lines(range(5, 8), 0.5))
    state.refresh()
    df = prepare(state.snapshot().metrics)
    fig, _, _ = ui.loss_figure(df, ChartOptions(smoothing=0.0, show_band=False))
    (trace,) = fig.data
    x, y = np.asarray(trace.x, dtype=float), np.asarray(trace.y, dtype=float)
    assert x.tolist() == [*range(1, 9), 8, 5, 6, 7]
    assert np.isnan(y).tolist() == [False] * 8 + [True] + [False] * 3
    drawn = [(a, b) for a, b, ya, yb in zip(x, x[1:], y, y[1:], strict=False) if ya == ya and yb == yb]
    assert all(b >= a for a, b in drawn)  # every drawn segment goes forward


@given(
    parts=st.lists(st.lists(st.integers(0, 50), min_size=1, max_size=8), min_size=1, max_size=5),
)
def test_segment_breaks_only_where_a_new_file_goes_back(parts: list[list[int]]) -> None:
    xs = [v for part in parts for v in part]
    files = pd.Series(pd.Categorical([f"f{i}" for i, part in enumerate(parts) for _ in part]))
    x, y = pd.Series(xs, dtype=float), np.arange(len(xs), dtype=float)
    gx, gy = curves.segment_breaks(x, y, files)
    assert len(gx) == len(gy) and gy[np.isfinite(gy)].tolist() == y.tolist()  # every point kept, in order
    gaps = int(np.isnan(gy).sum())
    expected = sum(1 for i in range(1, len(parts)) if parts[i][0] < parts[i - 1][-1])
    assert gaps == expected
    assert curves.segment_breaks(x, y, None)[1] is y


def test_a_relaunch_that_starts_over_still_replaces_the_rows(tmp_path: Path) -> None:
    """msrun reopens its logs with "w": steps start over at the first one, the old attempt goes (as before)."""
    log = tmp_path / "worker_0.log"
    log.write_text(_lines(range(1, 4)))
    state = RunReader(tmp_path)
    state.refresh()
    log.write_text(LINE.format(s=1, v=9.0))
    state.refresh()
    snap = state.snapshot()
    assert snap.metrics["loss"].tolist() == [9.0]
    assert snap.ranks.iloc[0]["restarts"] == 1 and _notes(snap) == []
    assert [f.rel for f in snap.files] == ["worker_0.log"]


def test_watch_prints_the_truncation_note(tmp_path: Path) -> None:
    from core.logs.rows.filestate import note_lines

    log = tmp_path / "worker_0.log"
    log.write_text(_lines(range(1, 4)))
    state = RunReader(tmp_path)
    state.refresh()
    _cut(log)
    log.write_text(_lines(range(4, 5)))
    state.refresh()
    lines = note_lines(state.snapshot().errors)
    assert lines == [
        "note: rank 0 worker_0.log: worker_0.log was truncated in place after 90 bytes: its 3 earlier rows "
        "are kept as worker_0.log (before truncation 1); reading restarts at its start"
    ]


def test_the_monitor_shows_the_truncation_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit.testing.v1 import AppTest

    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("SHARDSCOPE_RECORDINGS", str(tmp_path / "recordings"))
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "worker_0.log"
    log.write_text(_lines(range(1, 4)))
    at = AppTest.from_file(str(REPO / "pages" / "monitor.py"), default_timeout=60)
    at.query_params["logdir"] = str(logs)
    at.run()
    assert not at.exception, at.exception
    _cut(log)
    with open(log, "a") as f:
        f.write(_lines(range(4, 6)))

    def shown() -> bool:
        at.run()
        return any("was truncated in place" in w.value for w in at.warning)

    assert _wait_for(shown, timeout=30), [w.value for w in at.warning]
    note = next(w.value for w in at.warning if "truncated" in w.value)
    assert note.startswith("note: rank 0 worker_0.log: worker_0.log was truncated in place")


# ----------------------------------------------------------------------------- UTF-16


_WITH_ERROR = (
    _lines(range(1, 4)).replace("\n", "\r\n")
    + 'Traceback (most recent call last):\r\n  File "train.py", line 3, in <module>\r\nValueError: boom\r\n'
    + "epoch: 1 step: 4, loss is 0.5, lr: 0.1\n"
)


def _same_read(a, b) -> None:
    cols = ["rank", "epoch", "step", "loss", "lr"]
    assert a.metrics[cols].equals(b.metrics[cols])
    assert a.errors[["kind", "message", "line"]].equals(b.errors[["kind", "message", "line"]])


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("small", [True, False])
def test_a_utf16_log_is_read_like_its_utf8_copy(tmp_path: Path, encoding: str, small: bool) -> None:
    utf8, utf16 = tmp_path / "utf8", tmp_path / "utf16"
    utf8.mkdir()
    utf16.mkdir()
    (utf8 / "worker_3.log").write_bytes(_WITH_ERROR.encode("utf-8"))
    (utf16 / "worker_3.log").write_bytes(_WITH_ERROR.encode(encoding))
    # small: read with the batch of short logs (core.logs.rows.smallfiles); else file by file, in tiny blocks
    settings = None if small else ReaderSettings(prefetch_min=1, read_block=128, max_partial_line=127)
    snap = read_run(utf16, settings=settings)
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4] and snap.metrics["lr"].tolist()[-1] == 0.1
    _same_read(snap, read_run(utf8))
    assert snap.errors["line"].tolist() == [6]  # ValueError is the 6th line of the file
    # judged as its UTF-8 copy is: the traceback is listed, and the run trained past it (step 4), so not crashed
    state = rank_status(snap).set_index("rank").loc[3, "state"]
    assert state == rank_status(read_run(utf8)).set_index("rank").loc[3, "state"] and state != "crashed"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    encoding=st.sampled_from(["utf-16", "utf-16-le", "utf-16-be"]),
    cuts=st.lists(st.integers(0, 400), max_size=8),
    block=st.sampled_from([128, 200, 1 << 20]),  # a block holds a whole line (90 bytes here)
)
@example(encoding="utf-16-be", cuts=[5], block=128)  # a first write too short to say UTF-16 (lost its first row)
def test_a_utf16_log_written_in_any_pieces_gives_the_same_rows(
    tmp_path_factory: pytest.TempPathFactory, encoding: str, cuts: list[int], block: int
) -> None:
    data = _WITH_ERROR.encode(encoding)
    root = tmp_path_factory.mktemp("u16")
    path = root / "worker_0.log"
    path.write_bytes(b"")
    state = RunReader(root, settings=ReaderSettings(prefetch_min=1, read_block=block, max_partial_line=block - 1))
    prev = 0
    for p in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:  # a cut may split a code unit
        with open(path, "ab") as f:
            f.write(data[prev:p])
        prev = p
        state.refresh()
    snap = state.snapshot()
    assert snap.metrics["step"].tolist() == [1, 2, 3, 4]
    assert snap.metrics["loss"].tolist() == [1.0, 1.0, 1.0, 0.5]
    assert snap.errors["message"].tolist() == ["ValueError: boom"] and snap.errors["line"].tolist() == [6]


def test_an_overlong_utf16_line_is_dropped_and_counted(tmp_path: Path) -> None:
    text = LINE.format(s=1, v=1.0) + "x" * 500 + " loss is 7\n" + LINE.format(s=2, v=2.0)
    (tmp_path / "worker_0.log").write_bytes(text.encode("utf-16"))
    snap = read_run(tmp_path, settings=ReaderSettings(prefetch_min=1, read_block=128, max_partial_line=127))
    assert snap.metrics["step"].tolist() == [1, 2] and snap.metrics["loss"].tolist() == [1.0, 2.0]
    assert snap.ranks.iloc[0]["dropped_lines"] == 1 and snap.ranks.iloc[0]["dropped_bytes"] >= 896


def test_watch_once_reads_a_utf16_log(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text(_lines(range(1, 3)))
    (tmp_path / "worker_3.log").write_bytes(_lines(range(1, 3)).encode("utf-16"))
    out = subprocess.run(
        [sys.executable, "-m", "core", "watch", "--once", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "ranks=2, loss rows=4" in out and "no loss line yet" not in out


@given(st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=4, max_size=200))
def test_utf16_of_any_ascii_text_is_recognised(text: str) -> None:
    assert utf16.utf16_codec(text.encode("utf-16-le")[:256]) == "utf-16-le"
    assert utf16.utf16_codec(text.encode("utf-16-be")[:256]) == "utf-16-be"
    assert utf16.utf16_codec(text.encode("utf-16")[:256]) is not None


@given(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=200))
def test_utf8_text_is_never_taken_for_utf16(text: str) -> None:
    assert utf16.utf16_codec(text.encode("utf-8")[:256]) is None


def test_nul_padding_is_not_taken_for_utf16() -> None:
    """A sparse file (a writer without O_APPEND after copytruncate) begins with NULs, not UTF-16."""
    assert utf16.utf16_codec(b"\x00" * 256) is None
    assert utf16.utf16_codec(b"\x00" * 100 + b"epoch: 1 step: 1, loss is 2.5\n") is None


# ----------------------------------------------------------------------------- binary bytes and metric names

# bytes no text has before a word: control bytes, bytes never in UTF-8, an orphan continuation byte
_GLUE = st.sampled_from(
    [bytes([b]) for b in [*range(0, 9), *range(11, 32), 127, 0xC0, 0xC1, *range(0xF5, 0x100)]]
    + [b" " + bytes([b]) for b in (0x80, 0x8F, 0xB6, 0xBF)]
)
_NO_LETTERS = st.binary(max_size=40).map(lambda b: bytes(c for c in b if not (65 <= c <= 90 or 97 <= c <= 122)))


@settings(max_examples=300)
@given(junk=_NO_LETTERS, glue=_GLUE, word=st.sampled_from([b"s", b"b6", b"x", b""]))
def test_a_key_glued_to_binary_bytes_names_no_metric(junk: bytes, glue: bytes, word: bytes) -> None:
    line = junk + glue + word + b"epoch: 1 step: 2, lr: 0.5, loss is 2.5"
    read = read_loss(line)
    assert read is not None and read.fields["loss"] == 2.5 and read.fields["step"] == 2.0
    assert set(read.keys) <= {"loss", "step", "lr"}  # never `sepoch`, `b6epoch`, nor an `epoch` glued to junk
    assert read.extras == {} and read.fields["lr"] == 0.5


@given(st.binary(max_size=120))
def test_metric_names_from_random_bytes_are_identifiers_after_a_text_boundary(data: bytes) -> None:
    read = read_loss(data + b" loss: 1.5")
    if read is None:
        return
    low = data.lower()
    for key in read.keys.values():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", key)
    for column in read.extras:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", column)
        first = re.split(r"_", column)[0].encode()
        starts = [m.start() for m in re.finditer(re.escape(first), low)]
        # the key begins at the line's start or after text that is no word: ASCII punctuation or a space, or
        # a whole UTF-8 space, punctuation or symbol; never right after a control or a stray high byte
        assert any(
            i == 0 or (not glued_to_binary(data, i) and (low[i - 1] >= 0x80 or not re.match(rb"\w", low[i - 1 : i])))
            for i in starts
        ), (column, data)


def test_binary_bytes_give_no_metric_on_both_paths(tmp_path: Path) -> None:
    junk = [b"\x00\x07s", b"\x8f\xffb6", b"\x1bx", b""]
    data = b"".join(
        junk[i % len(junk)] + b"epoch: 1 step: %d, lr: 0.25, loss is %d.5\n" % (i + 1, i % 7) for i in range(400)
    )
    (tmp_path / "worker_0.log").write_bytes(data)
    bulk = read_run(tmp_path, settings=ReaderSettings(compiled_min=0, shape_min=16, block_min=1))
    one_by_one = read_run(tmp_path, settings=ReaderSettings(block_min=1 << 30))
    for snap in (bulk, one_by_one):
        assert set(snap.metrics.columns) == {"rank", "file", *ROW_KEYS}  # no `sepoch`, `b6epoch`, `xepoch`
        assert set(snap.metric_keys) <= {"loss", "step", "lr", "epoch"}
        assert snap.metrics["step"].tolist() == list(range(1, 401))
    assert bulk.metrics.columns.tolist() == one_by_one.metrics.columns.tolist()
    assert bulk.metrics.drop(columns="time").equals(one_by_one.metrics.drop(columns="time"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.lists(st.binary(max_size=6).filter(lambda b: b"\n" not in b and b"\r" not in b), min_size=1, max_size=6))
def test_both_paths_read_binary_prefixed_lines_alike(
    tmp_path_factory: pytest.TempPathFactory, junk: list[bytes]
) -> None:
    root = tmp_path_factory.mktemp("junk")
    data = b"".join(
        junk[i % len(junk)] + b"epoch: 1 step: %d, lr: 0.25, top1: %d, loss is %d.5\n" % (i + 1, i % 3, i % 7)
        for i in range(300)
    )
    (root / "worker_0.log").write_bytes(data)
    bulk = read_run(root, settings=ReaderSettings(compiled_min=0, shape_min=16, block_min=1))
    one_by_one = read_run(root, settings=ReaderSettings(block_min=1 << 30))
    columns = sorted(set(bulk.metrics.columns) - {"time"})  # the other metrics' order is the first seen
    assert columns == sorted(set(one_by_one.metrics.columns) - {"time"})
    assert bulk.metrics[columns].equals(one_by_one.metrics[columns])
    assert bulk.metric_keys == one_by_one.metric_keys
    for name in bulk.metric_keys:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name)


# ----------------------------------------------------------------------------- symbolic link loops


def test_a_symlink_loop_is_named_in_the_not_read_notes(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text(_lines(range(1, 3)))
    os.symlink(tmp_path / "b.log", tmp_path / "a.log")
    os.symlink(tmp_path / "a.log", tmp_path / "b.log")
    notes = folder_notes(tmp_path)
    assert any(n.startswith("not read: a.log: a symbolic link loop (ELOOP") for n in notes), notes
    assert any(n.startswith("not read: b.log: a symbolic link loop (ELOOP") for n in notes), notes
    out = subprocess.run(
        [sys.executable, "-m", "core", "watch", "--once", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "not read: a.log: a symbolic link loop (ELOOP" in out


# ----------------------------------------------------------------------------- absurd measured memory

_ABSURD = "Used peak memory usage (without fragments): 999999999999M"


def test_an_absurd_measured_peak_is_flagged_not_shown() -> None:
    report = memory_report({0: ["Device MOC memory size: 65536M", _ABSURD], 1: ["Device MOC memory size: 65536M"]})
    why = report["0"]["implausible"]
    assert why.startswith("measured peak 976,562,500 GiB is not plausible: more than 1 PiB")
    (row, other) = memory_rows(report)
    assert row["peak GiB"] is None and row["peak vs plan %"] is None and row["note"] == why
    assert other["note"] == "" and "implausible" not in report["1"]
    lines = memory_lines(report, {"memory_bytes": 60 * GIB, "source": "plan"})
    assert "rank 0: measured peak 976,562,500 GiB is not plausible" in "\n".join(lines)
    assert not any("device memory measured peak" in line for line in lines)


def test_a_peak_ten_times_the_device_is_flagged_a_real_one_is_not() -> None:
    big = parse_memory(["Device MOC memory size: 65536M", "Used peak memory usage (without fragments): 700000M"])
    assert big is not None and "more than 10x the device's 64 GiB" in (memory.implausible(big) or "")
    real = parse_memory(["Device MOC memory size: 65536M", "Used peak memory usage (without fragments): 23716M"])
    assert real is not None and memory.implausible(real) is None
    (row,) = memory_rows(memory_report({0: ["Used peak memory usage (without fragments): 23716M"]}))
    assert row["peak GiB"] == 23.16 and row["note"] == ""


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    device=st.none() | st.integers(1, 10**7),
    peak=st.integers(0, 10**12 - 1),
    actual=st.none() | st.integers(0, 10**12 - 1),
)
def test_a_shown_peak_is_always_within_the_bounds(device: int | None, peak: int, actual: int | None) -> None:
    lines = [f"Used peak memory usage (without fragments): {peak}M"]
    lines += [] if device is None else [f"Device MOC memory size: {device}M"]
    lines += [] if actual is None else [f"Actual peak memory usage (with fragments): {actual}M"]
    use = parse_memory(lines)
    assert use == MemoryUse(
        None if device is None else device * MIB, None, peak * MIB, None if actual is None else actual * MIB
    )
    (row,) = memory_rows(memory_report({0: lines}))
    limit = min(1 << 50, 10 * device * MIB) if device else 1 << 50
    for column in ("peak GiB", "peak with fragments GiB"):
        assert row[column] is None or row[column] * GIB <= limit * (1 + 1e-9) + GIB
    assert (row["note"] == "") == (memory.implausible(use) is None)
