"""A live tick's new lines of every rank are parsed together (core.logs.rows.smallfiles.LiveBatch ->
`Parser.feed_many` with the files' offsets), and give what reading the files at the end gives; the folder
scan of a tick is reused while no folder changed (core.logs.bytes.discover.FolderCache); a file's tail kept
for a traceback's time is its last reads, joined only when asked (core.logs.rows.filestate.carry_over)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.bytes import discover as discover_mod
from core.logs.bytes.discover import FolderCache, LogRole
from core.logs.rows.filestate import LOOKBACK, FileState, carry_over, time_before
from core.logs.rows.reader import RunReader
from core.logs.rows.seam import ReadPath
from tests.helpers import bits
from tests.strategies import NOISE, OTHER, PLAIN, RARE, general_line, loss_line

TRACEBACK = (
    b"[WARNING] ME(9:1,MainProcess):2026-11-22-07:09:00.372.000 [a.py:1] before\n"
    b'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
    b"RuntimeError: boom\n"
)
EVAL = b"2026-01-01 10:00:00,123 - mindformers - INFO - Validation Top_1_Accuracy: 25.5%, val_loss: 3.5\n"
PID = b"[WARNING] DISTRIBUTED(4242,7f5998a3be40,python):2026-11-22-07:09:00.377.254 [tcp.cc:1] x\n"
TIMEMONITOR = b"Train epoch time: 1234.567 ms, per step time: 12.345 ms\n"


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Rows rank by rank in file order, columns by name: a watcher adds each tick's rows after the last tick's,
    and meets the metric names in tick order; `read_run` reads rank after rank."""
    frame = frame.astype({"file": str}) if "file" in frame else frame
    return frame[sorted(frame.columns)].sort_values(keys, kind="stable").reset_index(drop=True)


def _same(live: object, once: object, lossmonitor_keys: bool = False) -> None:
    """`lossmonitor_keys`: the keys of a LossMonitor line may be named by one read only (`feed` notes them
    when its general reader reads the line, not when the LossMonitor match takes it: so do its LINE and
    BULK paths, before any batch), never spelt differently."""
    order = ["rank", "file", "offset"]
    assert bits(_sorted(live.metrics, order)) == bits(_sorted(once.metrics, order))
    by = ["file", "offset", "kind"]
    assert bits(_sorted(live.errors, by)) == bits(_sorted(once.errors, by))
    assert bits(live.timings) == bits(once.timings)
    assert bits(live.evals) == bits(once.evals)
    if lossmonitor_keys:
        a, b = live.metric_keys, once.metric_keys
        for column in a.keys() | b.keys():
            if a.get(column) != b.get(column):  # one read named the LossMonitor spelling, the shortest
                named = a.get(column) if a.get(column) == column else b.get(column)
                assert named == column and column in ("epoch", "step", "loss"), (column, a, b)
    else:
        assert live.metric_keys == once.metric_keys
    cols = ["rank", "pid", "bytes", "n_loss", "last_epoch", "last_step", "last_loss", "finished"]
    assert bits(live.ranks[cols]) == bits(once.ranks[cols])


_LINE = st.one_of(
    loss_line(),
    general_line(),
    st.sampled_from(NOISE + OTHER + PLAIN + RARE),
    st.sampled_from([TRACEBACK, EVAL, PID, TIMEMONITOR]),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    logs=st.lists(st.lists(_LINE, min_size=1, max_size=40), min_size=1, max_size=5),
    cuts=st.lists(st.integers(0, 4000), min_size=1, max_size=4),
    compiled=st.booleans(),
)
@example(  # a NaN average (`loss:[-nan/nan]`) read in a batched tick as one row, not a block: its column stays
    logs=[
        [
            b"epoch: 372 step: 0 loss is 8.03938114694e-292 extra\n",
            b"2026-01-01 10:00:00,123 - mindformers - INFO - Validation Top_1_Accuracy: 25.5%, val_loss: 3.5\n",
            b"Number of epochs: 3\n",
        ],
        [
            b"[INFO] 2026-11-23 19:14:00,332 [mindformers/core/callback/callback.py:747] print_output_info: "
            b"{ Epoch:[  4503/  4], step:[    1700/   16], loss:[-nan/nan], per_step_time: 4503ms, lr: 0.003, "
            b"overflow cond: False, loss_scale: 1.0, global_norm: [0.73903346], train_throughput_per_npu: 0.000T\n"
        ],
    ],
    cuts=[0],
    compiled=True,
)
@example(  # a shape's metrics in its line's order, not sorted: ESPnet's line read in bulk names `trainer` before `info`
    logs=[
        [b"epoch: 0, step: 0, loss is 4.52\n"],
        [
            b"[auc-dnn3] 2021-10-02 20:13:30,249 (trainer:653) INFO: 4epoch:train:201-225batch: l1_loss=0.252, "
            b"mse_loss=0.070, loss=0.345, optim0_lr0=1.000e-03\n",
            *[b"epoch: 0, step: 0, loss is 4.52\n"] * 3,
            b"epoch: 0, step: 0, loss is nan\n",
            b"epoch: 0001, step: 123456789012, loss is 4.52\n",
            b"epoch: 0, step: 123456789012, loss is 4.52\n",
        ],
    ],
    cuts=[0],
    compiled=True,
)
@example(  # a column-table row (`train_loss=... val_loss=...` behind colour codes) and a metric of a later line
    logs=[
        [b"epoch: 0001, step: 0, loss is 4.52\n"],
        [
            b"epoch: 0, step: 0, loss is 4.52\n",
            b"[2026-11-23 19:07:06] mindcv.utils.callbacks INFO - Epoch: [0/3], batch: [0/8], loss: 4.52, lr: 4.52, "
            b"time: 4.52s\n",
            b"[WARNING] ME(7587:140022789684800,MainProcess):2026-11-22-07:09:00.372.000 [mindspore/context.py:1343] "
            b"For 'context.set_context', the parameter 'device_target' will be deprecated.\n",
            *[b"epoch: 0, step: 0, loss is 4.52\n"] * 3,
            b"epoch: 0, step: 123456789012, loss is 4.52\n",
            b"\x1b[32mstep 0/0 train_loss=4.52 val_loss=4.52\x1b[0m\n",
            *[b"epoch: 0, step: 0, loss is 4.52\n"] * 4,
            b"epoch: 0, step: 0, loss is nan\n",
            b"[INFO] 2026-11-23 19:14:00,332 [mindformers/core/callback/callback.py:747] print_output_info: "
            b"{ Epoch:[  0/  4], step:[    0/   16], loss:[4.52/4.52], per_step_time: 4503ms, lr: 0.003, "
            b"overflow cond: False, loss_scale: 1.0, global_norm: [0.73903346], train_throughput_per_npu: 0.000T\n",
        ],
    ],
    cuts=[422],
    compiled=True,
)
def test_ticks_read_together_give_what_each_file_read_alone_gives(
    tmp_path_factory: pytest.TempPathFactory, logs: list[list[bytes]], cuts: list[int], compiled: bool
) -> None:
    """Every rank's log written in pieces (cut anywhere: mid-line, inside a traceback), read tick by tick by a
    watcher whose ticks are batched and by one reading each file's new lines alone (`Parser.feed`): the same
    rows, offsets, metrics, errors with their context and time, timings, evaluation rows, pids."""
    root = tmp_path_factory.mktemp("live")
    conf = ReaderSettings(compiled_min=0, shape_min=4, block_min=2) if compiled else ReaderSettings()
    datas = [b"".join(lines) for lines in logs]
    edges = sorted(set(cuts))
    for rank, data in enumerate(datas):
        (root / f"worker_{rank}.log").write_bytes(data[: edges[0]])
    together, alone = RunReader(root, settings=conf), RunReader(root, settings=conf)
    alone._live.take = lambda *_: False  # every file's new lines parsed on their own, as before batching
    together.refresh()
    alone.refresh()
    for lo, hi in zip(edges, [*edges[1:], None], strict=True):
        for rank, data in enumerate(datas):
            with (root / f"worker_{rank}.log").open("ab") as f:
                f.write(data[lo:hi])
        together.refresh()
        alone.refresh()
    assert together.parser.seam.blocks[ReadPath.LINE] == 0
    _same(together.snapshot(), alone.snapshot(), lossmonitor_keys=True)
    assert list(together.snapshot().metrics.columns) == list(alone.snapshot().metrics.columns)


def test_a_tick_of_many_ranks_is_parsed_in_one_batch(tmp_path: Path) -> None:
    """300 ranks, one step each appended: one batched block for the tick (no `feed` per file), every new row
    at its file's own offset, the noise and the failure line read as alone."""
    logs = [tmp_path / f"worker_{r}.log" for r in range(300)]
    for r, log in enumerate(logs):
        log.write_bytes(NOISE[0] + b"".join(b"epoch: 1 step: %d, loss is %d.5\n" % (s, r) for s in range(1, 4)))
    state = RunReader(tmp_path)
    state.refresh()
    seam = state.parser.seam
    before = {p: seam.blocks[p] for p in ReadPath}
    sizes = [log.stat().st_size for log in logs]
    for r, log in enumerate(logs):
        with log.open("ab") as f:
            f.write(NOISE[1] + b"epoch: 1 step: 4, loss is %d.25\n" % r)
            if r == 7:
                f.write(b"[ERROR] 2026-01-01 10:00:00 RuntimeError: device lost\n")
    state.refresh()
    snap = state.snapshot()
    assert {p: seam.blocks[p] - before[p] for p in ReadPath} == {
        ReadPath.USER: 0,
        ReadPath.LINE: 0,
        ReadPath.BULK: 0,
        ReadPath.TEMPLATED: 0,
        ReadPath.BATCHED: 1,
    }
    new = snap.metrics[snap.metrics["step"] == 4]
    assert new["loss"].tolist() == [r + 0.25 for r in range(300)]
    assert new["offset"].tolist() == [sizes[r] + len(NOISE[1]) for r in range(300)]
    assert snap.errors["rank"].tolist() == [7]
    _same(snap, read_run(tmp_path))


def test_a_block_too_big_for_the_batch_is_read_after_the_lines_batched_before(tmp_path: Path) -> None:
    """A file's batched lines are parsed before a bigger block of it is read alone: its rows stay in order."""
    log = tmp_path / "worker_0.log"
    log.write_bytes(b"epoch: 1 step: 1, loss is 1.5\n")
    state = RunReader(tmp_path, settings=ReaderSettings(read_block=64, prefetch_min=1 << 30))
    state.refresh()
    with log.open("ab") as f:  # blocks of 64 bytes: two lines batched, then the rest
        f.write(b"".join(b"epoch: 1 step: %d, loss is %d.5\n" % (s, s) for s in range(2, 40)))
    state.refresh()
    assert state.snapshot().metrics["step"].tolist() == list(range(1, 40))


def _settle(folder: Path) -> None:
    """The folder as if last changed a minute ago (FolderCache trusts only a folder settled for 2 s)."""
    t = time.time() - 60
    os.utime(folder, (t, t))


def test_folder_scan_is_reused_until_the_folder_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scans: list[str] = []
    real = discover_mod.discover
    monkeypatch.setattr(discover_mod, "discover", lambda *a, **k: scans.append("scan") or real(*a, **k))
    for r in range(3):
        (tmp_path / f"worker_{r}.log").write_text("epoch: 1 step: 1, loss is 1.0\n")
    _settle(tmp_path)
    cache = FolderCache()
    first = cache.files(tmp_path)
    again = cache.files(tmp_path)
    assert [f.rank for f in again] == [0, 1, 2] and again == first and again is not first
    assert len(scans) == 1  # nothing changed: no second scan
    with (tmp_path / "worker_1.log").open("a") as f:  # a file growing changes no folder
        f.write("epoch: 1 step: 2, loss is 0.5\n")
    assert len(cache.files(tmp_path)) == 3 and len(scans) == 1
    (tmp_path / "worker_3.log").write_text("")  # a new rank: the folder changed
    assert [f.rank for f in cache.files(tmp_path)] == [0, 1, 2, 3] and len(scans) == 2
    (tmp_path / "worker_0.log").unlink()
    assert [f.rank for f in cache.files(tmp_path)] == [1, 2, 3]


def test_a_folder_just_changed_or_holding_a_link_is_scanned_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scans: list[str] = []
    real = discover_mod.discover
    monkeypatch.setattr(discover_mod, "discover", lambda *a, **k: scans.append("scan") or real(*a, **k))
    (tmp_path / "worker_0.log").write_text("x\n")  # the folder changed now: a change in the same clock step
    cache = FolderCache()  # could go unseen, so the scan is not trusted yet
    cache.files(tmp_path)
    cache.files(tmp_path)
    assert len(scans) == 2
    inner = tmp_path / "real"
    inner.mkdir()
    (inner / "log.txt").write_text("y\n")
    (tmp_path / "worker_1.log").symlink_to(inner / "log.txt")  # its target may change while no folder does
    _settle(tmp_path)
    _settle(inner)
    assert [(f.rank, f.role) for f in cache.files(tmp_path)] == [(0, LogRole.WORKER), (1, LogRole.WORKER)]
    cache.files(tmp_path)
    assert len(scans) == 4


def test_the_tail_kept_for_a_traceback_time_is_the_last_reads_bounded(tmp_path: Path) -> None:
    """Many small reads: the tail holds the last LOOKBACK bytes (as one read of them would) in a bounded number
    of parts, and a traceback's time is found in it as before."""
    from core.logs.bytes.discover import LogFile

    state = FileState(LogFile(tmp_path / "worker_0.log", "worker_0.log", LogRole.WORKER, 0, "msrun"))
    data = b""
    stamp = b"[WARNING] ME(9:1,MainProcess):2026-11-22-07:09:%02d.372.000 [a.py:1] x\n"
    for i in range(2000):
        read = stamp % (i % 60) if i % 7 == 0 else b"noise line %d without a stamp\n" % i
        data += read
        carry_over(state, read, 0, len(data) - len(read), len(read), 64 << 10)
        assert b"".join(state.tail)[-LOOKBACK:] == data[-LOOKBACK:]
        assert state.tail_len == len(b"".join(state.tail)) and len(state.tail) <= 65
    assert state.tail_len - len(state.tail[0]) < LOOKBACK  # no read kept that the last LOOKBACK bytes do not need
    head = b"Traceback (most recent call last):\n"
    got = time_before(state, head, 0, 0)
    assert got == time_before(FileState(state.info), data[-LOOKBACK:] + head, 0, LOOKBACK)
    assert got == got  # a stamped line was in the window
