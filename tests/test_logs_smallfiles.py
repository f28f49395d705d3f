"""Short rank logs read together (core.logs.rows.smallfiles + Parser.feed_many) give every file exactly what
reading it alone gives: rows and their offsets, other metrics, errors with their context and time,
timings, evaluation rows, pids and metric names, on random mixes of every kind of line and file end."""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.rows import linetime
from core.logs.rows.general import line_time
from core.logs.rows.parser import Parser
from tests.helpers import bits, read_both_ways, same_snapshot
from tests.strategies import NOISE, OTHER, PLAIN, RARE, general_line, log_text, loss_line

ALONE = ReaderSettings(prefetch_min=1)  # no file is smaller than 1 byte: every file read on its own
TRACEBACK = (
    b"[WARNING] ME(9:1,MainProcess):2026-11-22-07:09:00.372.000 [a.py:1] before\n"
    b'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
    b"RuntimeError: boom\n"
)
EVAL = b"2026-01-01 10:00:00,123 - mindformers - INFO - Validation Top_1_Accuracy: 25.5%, val_loss: 3.5\n"
BARE_TRACEBACK = b'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: bad\n'
FATAL_WITH_WORD = b"rank 3 eval: Segmentation fault (core dumped)\n"  # no row, yet a failure
PID = b"[WARNING] DISTRIBUTED(4242,7f5998a3be40,python):2026-11-22-07:09:00.377.254 [tcp.cc:1] x\n"


def _file() -> st.SearchStrategy[bytes]:
    line = st.one_of(
        loss_line(),
        general_line(),
        st.sampled_from(NOISE + OTHER + PLAIN + RARE),
        st.sampled_from([TRACEBACK, BARE_TRACEBACK, EVAL, PID, FATAL_WITH_WORD]),
    )
    body = st.one_of(
        log_text(),
        st.lists(line, max_size=80).map(b"".join),
        st.lists(line, max_size=20).map(lambda ls: BARE_TRACEBACK + b"".join(ls)),
    )
    tail = st.sampled_from(
        [
            b"",
            b"",
            b"epoch: 9 step: 9, loss is 1.2",
            b"partial line without newline",
            b"epoch: 9 step: 9, loss is 1.5\r",
            b"progress 1/3\rprogress 2/3\r",
            b'Traceback (most recent call last):\n  File "x.py", line 1\n',
        ]
    )
    crlf = st.booleans()
    return st.builds(lambda b, t, cr: (b + t).replace(b"\n", b"\r\n") if cr else b + t, body, tail, crlf)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(files=st.lists(_file(), min_size=1, max_size=6), batch=st.sampled_from([2048, 8 << 20]))
def test_small_files_read_together_match_each_read_alone(
    tmp_path_factory: pytest.TempPathFactory, files: list[bytes], batch: int
) -> None:
    root = tmp_path_factory.mktemp("small")
    for rank, data in enumerate(files):
        (root / f"worker_{rank}.log").write_bytes(data)
    together = read_run(root, settings=ReaderSettings(read_block=batch, compiled_min=0))  # files < `batch` together
    same_snapshot(together, read_run(root, settings=ALONE))


def test_a_thousand_short_logs_are_read_in_a_few_batches_with_every_row(tmp_path: Path) -> None:
    """1,000 logs of 40 steps: every row is there, in rank order, each file's offsets its own, and they
    were parsed in batches (not one `feed` per file: the seam counts the blocks each path read)."""
    from core.logs.rows.reader import RunReader
    from core.logs.rows.seam import ReadPath

    for rank in range(1000):
        lines = [NOISE[0], PID.replace(b"4242", b"%d" % (5000 + rank))]
        lines += [b"epoch: 1 step: %d, loss is %d.%d\n" % (s, rank, s) for s in range(1, 41)]
        (tmp_path / f"worker_{rank}.log").write_bytes(b"".join(lines))
    reader = RunReader(tmp_path, one_shot=True)  # what read_run does
    reader.refresh()
    snap = reader.snapshot()
    blocks = reader.parser.seam.blocks
    calls = {"feed": blocks[ReadPath.USER] + blocks[ReadPath.LINE] + blocks[ReadPath.BULK]}
    calls["feed_many"] = blocks[ReadPath.BATCHED]
    assert calls["feed"] == 0 and 1 <= calls["feed_many"] <= 10
    assert len(snap.metrics) == 40_000
    assert snap.metrics["rank"].tolist() == [r for r in range(1000) for _ in range(40)]
    assert snap.metrics[snap.metrics["rank"] == 999]["loss"].tolist() == [float(f"999.{s}") for s in range(1, 41)]
    first = len(NOISE[0]) + len(PID)  # the pid keeps its 4 digits (5000..5999)
    assert snap.metrics.groupby("rank")["offset"].min().eq(first).all()
    assert snap.ranks["pid"].tolist() == [5000 + r for r in range(1000)]
    assert not math.isnan(snap.metrics["loss"].iloc[-1])


def test_a_batched_log_that_grows_is_read_on_not_restarted(tmp_path: Path) -> None:
    """After the batch, a watcher goes on from where the batch stopped (the held partial line included):
    no restart, no row twice, none lost."""
    from core.logs.rows.reader import RunReader

    logs = [tmp_path / f"worker_{r}.log" for r in range(3)]
    for r, log in enumerate(logs):
        log.write_bytes(b"".join(b"epoch: 1 step: %d, loss is %d.5\n" % (s, r) for s in range(1, 4)) + b"epoch: 1 st")
    state = RunReader(tmp_path)
    state.refresh()
    for log in logs:
        with log.open("ab") as f:
            f.write(b"ep: 4, loss is 9.5\n" + b"epoch: 1 step: 5, loss is 7.5\n")
    state.refresh()
    snap = state.snapshot()
    assert snap.ranks["restarts"].tolist() == [0, 0, 0]
    for r in range(3):
        assert snap.metrics[snap.metrics["rank"] == r]["loss"].tolist() == [r + 0.5, r + 0.5, r + 0.5, 9.5, 7.5]


def test_shapes_learnt_from_a_sample_read_a_new_run_in_bulk_like_line_by_line(tmp_path: Path) -> None:
    """The first batch of a run has no known shapes: a sample of its lines teaches them, and the batch is
    read in bulk. Lines `parse_line` never gives to the metric reader ([ERROR] and exception lines that hold
    a loss, TimeMonitor lines) must not become templates: the snapshot equals a one-by-one read."""
    lines = []
    for step in range(1, 301):
        lines.append(
            f"[INFO] 2026-11-23 19:14:{step % 60:02d},332 [mindformers/core/callback/callback.py:747] "
            f"print_output_info: {{ Epoch:[  1/  4], step:[{step:5d}/  300], loss:[{5 - step / 100:.6f}/"
            f"{5 - step / 200:.6f}], per_step_time: {400 + step % 7}ms, lr: 0.003, }}"
        )
        if step % 3 == 0:  # one shape each (single digits), so a sample meets them
            lines.append(f"[ERROR] ME(1:1,MainProcess):2026-11-23 loss: {step % 9}.5")
            lines.append(f"ValueError: loss is {step % 9}.5")
            lines.append(f"Train epoch time: {step % 9}.5 ms, per step time: {step % 9}.25 ms")
    one_by_one, bulk, calls = read_both_ways(tmp_path, lines)
    assert len(bulk.metrics) == 900 and len(bulk.errors) == len(one_by_one.errors) == 3 * 200
    same_snapshot(bulk, one_by_one)
    assert len(calls) < 100, f"{len(calls)} lines read one by one: the sample taught no shape"


def _megatron_lines(steps: int) -> list[str]:
    """Megatron-LM / MindSpeed iteration lines: they begin with a space, like a traceback's frames."""
    return [
        f" iteration {step:8d}/     {steps} | consumed samples: {step * 8:12d} | elapsed time per iteration (ms): "
        f"{400 + step % 7}.0 | learning rate: 9.150E-06 | lm loss: {5 - step / 100:.6E} | grad norm: 0.231 |"
        for step in range(1, steps + 1)
    ]


@pytest.mark.parametrize("traceback_at", [None, 150])
def test_indented_metric_lines_are_learnt_from_a_sample_unless_a_traceback_may_hold_them(
    tmp_path: Path, traceback_at: int | None
) -> None:
    """Megatron's lines begin with a space: a sample learns their shape when no traceback header is in the
    block (stop 26 never learnt it: the first 20 files of a 1,024-rank run went one line at a time). With
    a traceback in the block, whose indented frame holds a loss, the snapshot still equals a one-by-one read."""
    lines = _megatron_lines(300)
    if traceback_at is not None:
        lines[traceback_at:traceback_at] = ["Traceback (most recent call last):", "    lm loss: 2.5 |", "ValueError: x"]
    one_by_one, bulk, calls = read_both_ways(tmp_path, lines)
    assert len(bulk.metrics) == 900
    same_snapshot(bulk, one_by_one)
    if traceback_at is None:
        assert len(calls) < 100, f"{len(calls)} lines read one by one: the sample taught no shape"


@pytest.mark.parametrize(
    "fatal",
    [
        "rank {k} eval: Segmentation fault (core dumped)",
        "train_loss.sh: line 7: 42{k} Killed  python train.py",
        "eval loss {k}: double free or corruption (out)",
    ],
)
def test_a_failure_line_of_a_shape_without_a_row_is_a_failure_in_bulk_too(tmp_path: Path, fatal: str) -> None:
    """A line holding `loss`/`val` and a failure's signature gives no row, so its shape is learnt as one that
    gives none; in bulk, lines of that shape were taken without the failure check (stop 26: 90 segfaults read
    one by one, 0 in bulk). They go to `parse_line` now, as when read one by one."""
    lines = []
    for step in range(1, 301):
        lines.append(
            f"[INFO] 2026-11-23 19:14:{step % 60:02d},332 [callback.py:747] print_output_info: {{ Epoch:[  1/  4], "
            f"step:[{step:5d}/  300], loss:[{5 - step / 100:.6f}/{5 - step / 200:.6f}] }}"
        )
        if step % 10 == 0:
            lines.append(fatal.format(k=step % 7))
    for rank in range(3):
        (tmp_path / f"worker_{rank}.log").write_text("\n".join(lines) + "\n")
    one_by_one = read_run(tmp_path, settings=ReaderSettings(block_min=1 << 30, shape_min=1 << 30))
    bulk = read_run(tmp_path, settings=ReaderSettings(compiled_min=0, shape_min=16, block_min=1))
    assert len(one_by_one.errors) == 90
    same_snapshot(bulk, one_by_one)


def test_messages_that_differ_only_in_digits_inside_words_are_read_in_bulk(tmp_path: Path) -> None:
    """MindSpore's `DISTRIBUTED(pid,7fa0fb3a06c0,python)` messages holding `value` differ per rank and thread
    only in digits inside words: one shape without a row covers them all (stop 26 read ~8,700 of them one
    by one in a 1,024-rank LossMonitor read)."""
    lines = []
    for step in range(1, 301):
        lines.append(f"epoch: 1 step: {step}, loss is {5 - step / 100}")
        lines.append(
            f"[WARNING] DISTRIBUTED(42,7fa{step % 10}fb3a{step % 7}6c0,python):2026-11-22-07:09:00.890.608 "
            f"[connection.cc:79] SocketEventHandler] Event value fd: 9, events: 1"
        )
    one_by_one, bulk, calls = read_both_ways(tmp_path, lines)
    assert len(bulk.metrics) == 900
    same_snapshot(bulk, one_by_one)
    assert len(calls) < 100, f"{len(calls)} lines read one by one"


_PIECES = [
    b"[INFO] ",
    b"[ERROR] ",
    b"[CRITICAL] ",
    b"[WARNING] ME(1:2,MainProcess):2026-11-23 [a.py:1] ",
    b"Traceback (most recent call last)",
    b"ValueError: ",
    b"RuntimeError",
    b"  ",
    b"\t",
    b"step time: 12.5 ms",
    b"Epoch 1/2, Step 3/10, step time: 40.1 ms",
    b"Train epoch time: 1.5 ms, per step time: 2.25 ms",
    b"per step time",
    b"loss: 3.5",
    b"epoch: 1 step: 2, loss is 1.25",
    b"val_loss: 0.5",
    b", ",
    b"x",
]


@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5), st.booleans())
@example([b"RuntimeError", b"  ", b"Traceback (most recent call last)"], False)  # IPython's header (found, round 8)
@settings(max_examples=300)
def test_what_a_sample_may_learn_from_is_what_line_by_line_reading_learns_from(
    pieces: list[bytes], pending: bool
) -> None:
    """`reaches_metric_line` answers for `Parser.parse_line` (what `learn_sample` may learn a shape from), with a
    traceback pending (an indented line is then a frame) or not: the two must not drift apart."""
    from core.logs.bytes.discover import LogFile
    from core.logs.rows.filestate import FileState
    from core.logs.rows.linekinds import reaches_metric_line

    line = b"".join(pieces)
    parser = Parser()
    state = FileState(LogFile(Path("worker_0.log"), "worker_0.log", "worker", 0, "msrun"))
    state.tb_start = 0 if pending else None
    parser.parse_line(state, line + b"\n", 0, len(line), 0, math.nan, True)
    calls = parser.seam.alone  # the lines `parse_line` gave the metric reader (`metric_line`)
    assert reaches_metric_line(line, pending) == bool(calls), line


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.datetimes(min_value=datetime(1971, 1, 2), max_value=datetime(2200, 1, 1)),
    st.lists(st.integers(-400_000, 400_000), min_size=70, max_size=120),  # ms around it: many share a second
    st.sampled_from([" ", "T"]),
)
def test_line_times_in_bulk_are_line_time_of_each_line(
    tmp_path_factory: pytest.TempPathFactory, base: datetime, offsets: list[int], sep: str
) -> None:
    """Bulk reads find the distinct seconds of a shape's stamps by an integer sort: every row's time is still
    what `line_time` gives its own line (any date, either separator, out of order)."""
    folder = tmp_path_factory.mktemp("times")
    stamps = [base + timedelta(milliseconds=ms) for ms in offsets]
    lines = [
        f"[INFO] {t:%Y-%m-%d}{sep}{t:%H:%M:%S},{t.microsecond // 1000:03d} [callback.py:747] print_output_info: "
        f"{{ Epoch:[  1/  4], step:[{k % 10}/ 300], loss:[1.5/1.5] }}"
        for k, t in enumerate(stamps)
    ]
    for rank in range(3):
        (folder / f"worker_{rank}.log").write_text("\n".join(lines) + "\n")
    bulk = read_run(folder, settings=ReaderSettings(compiled_min=0, shape_min=16, block_min=1))
    expected = [line_time(line.encode()) for line in lines] * 3
    assert bits(bulk.metrics[["time"]]) == bits(pd.DataFrame({"time": expected}))


# POSIX TZ rules (no tz database needed): CET's changes at 02:00 and 03:00, a change at 02:30 (inside an
# hour) and Lord Howe's 30-minute one
@pytest.mark.parametrize(
    "zone", ["CET-1CEST,M3.5.0,M10.5.0/3", "EST5EDT,M3.2.0/2:30,M11.1.0/2:30", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"]
)
@pytest.mark.parametrize("shuffled", [False, True])
def test_line_times_in_bulk_hold_across_dst_changes_and_invalid_stamps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zone: str, shuffled: bool
) -> None:
    """Bulk reads take a second as its hour's start plus MM:SS only where the hour has one UTC offset: across
    a DST change (at the hour, inside it, by 30 minutes), with seconds 60/61, Feb 30 and hour 24, in order or
    shuffled (hundreds of runs of an hour), every row's time is still what `line_time` gives its own line."""
    import time as clock

    monkeypatch.setenv("TZ", zone)
    monkeypatch.setattr(linetime, "_TS_CACHE", {})  # seconds it cached in another zone (line_time's own cache)
    clock.tzset()
    try:
        days = ["2026-03-08", "2026-03-29", "2026-04-05", "2026-10-04", "2026-10-25", "2026-11-01"]
        stamps = [
            f"{d} {h:02d}:{m:02d}:{sec:02d}"
            for d in days
            for h in (0, 1, 2, 3)
            for m in range(0, 60, 7)
            for sec in (0, 29, 59)
        ]
        if shuffled:
            random.Random(7).shuffle(stamps)
        stamps += ["2026-03-29 02:10:60", "2026-03-29 02:10:61", "2026-02-30 10:00:00", "2026-03-08 24:00:00"]
        lines = [
            f"[{t},250] mindcv.utils.callbacks INFO - Epoch: [1/3], batch: [{k % 9}/8], loss: 1.5"
            for k, t in enumerate(stamps)
        ]
        (tmp_path / "worker_0.log").write_text("\n".join(lines) + "\n")
        bulk = read_run(tmp_path, settings=ReaderSettings(compiled_min=0, shape_min=16, block_min=1))
        one_by_one = read_run(tmp_path, settings=ReaderSettings(block_min=1 << 30))
        expected = [line_time(line.encode()) for line in lines]
        assert sum(math.isnan(t) for t in expected) == 4  # the invalid stamps: none is taken for a time
        times = bulk.metrics["time"].tolist()
        assert bits(pd.DataFrame({"time": times[:-4]})) == bits(pd.DataFrame({"time": expected[:-4]}))
        assert bits(bulk.metrics) == bits(one_by_one.metrics)
    finally:
        monkeypatch.delenv("TZ")
        clock.tzset()
