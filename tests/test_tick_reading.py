"""A live reader's ticks against one read of the same bytes, on every read path (tests/helpers.READ_PATHS), for
what round 11 keeps between ticks (issue 30, the real-corpus folder's tick): the TimeMonitor frame
(snapshot.TimingTable), the batch's bar and named-row lookups (filestate.add_rows), the table's ranks and file
codes written per batch (table.MetricTable._take) and the hung ranks read by position (judgement.diagnose.hung_ranks).
Logs with rows set aside and choices that flip (Paddle's epoch summaries, nanoGPT's step printed twice, TFLearn's
echo: tests/test_kept_rows.py's lines), LossMonitor rows with MindSpore's TimeMonitor line after them (corpus
mindearth-graphcast_mindspore-docs) and HF Trainer's eval dicts (mindnlp-hf-trainer-eval-heavy_bit-flowers),
written in ticks cut anywhere, a rank relaunched (its log truncated and written again) or its log rotated (renamed,
a new one begun), a tick's refresh and snapshot run as the watcher runs them (the collector paused). After a
rotation a fresh read of the folder is no reference (it takes the rotated log for no rank's), so from then on each
tick's TimeMonitor frame is held to `timing_frame` of every tuple the reader holds (what snapshots built before)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogRole
from core.logs.judgement.diagnose import diagnose
from core.logs.live.heap import paused_collector
from core.logs.rows.reader import RunReader, file_order
from core.logs.rows.snapshot import RunSnapshot, timing_frame
from tests.helpers import READ_PATHS, bits, same_reading, series_line, sorted_reading

LOSS_MONITOR = "epoch: {e} step: {s}, loss is {x}\n"
TIME_MONITOR = "Train epoch time: {t}.547 ms, per step time: 191.800 ms\n"
HF_EVAL = "{{'eval_loss': {x}, 'eval_accuracy': 0.921875, 'eval_runtime': 1.394, 'epoch': {e}.0}}\n"


def _line(kind: int, i: int, shift: float = 0.0) -> str:
    """Kinds 0-5: `series_line`'s (tests/helpers.py); 6 a LossMonitor row, 7 the TimeMonitor line, 8 an eval dict.
    Each kind's text changes with `shift` (a relaunch whose first line repeated the old one's would look like the
    same log, not a truncated one, to any reader)."""
    if kind < 6:
        return series_line(kind, i, shift)
    x, e = round(2.0 - i / 1000 + shift, 4), 1 + i // 40
    t = 7000 + i + round(100 * shift)
    return [LOSS_MONITOR.format(e=e, s=i + 1, x=x), TIME_MONITOR.format(t=t), HF_EVAL.format(x=x, e=e)][kind - 6]


def _log(runs: list[tuple[int, int]], shift: float = 0.0) -> bytes:
    kinds = [kind for kind, count in runs for _ in range(count)]
    return "".join(_line(kind, i, shift) for i, kind in enumerate(kinds)).encode()


def _same(live: RunSnapshot, once: RunSnapshot) -> None:
    """The training rows, evaluation entries and rank facts (tests/test_kept_rows.py), the TimeMonitor rows (their
    observation time left out: a tick gives the time it saw a line) and what the diagnosis names."""
    same_reading(live, once)
    keys = ["file", "offset"]
    assert bits(sorted_reading(live.timings, keys)) == bits(sorted_reading(once.timings, keys))
    a, b = diagnose(live), diagnose(_seen_when_live_saw_it(once, live))
    assert [(g.exception, g.ranks) for g in a.failure_groups] == [(g.exception, g.ranks) for g in b.failure_groups]
    assert [s.rank for s in a.stragglers] == [s.rank for s in b.stragglers]


def _seen_when_live_saw_it(once: RunSnapshot, live: RunSnapshot) -> RunSnapshot:
    """`once` with the live reader's time on each row whose line gives none (a one-shot read has no observation
    time: NaN; a tick gives the time it saw the line, and the diagnosis takes step times from those gaps when a
    rank has no other). Rows with a time of their own keep it. Without it a log of unstamped lines ticked in
    twice named a straggler the one read could not (hypothesis: a relaunched rank's `01/02/2022 23:11:00 - INFO -
    Epoch: [1], step: [10]` rows, whose stamp no reader reads, beside a nanoGPT rank's `time 1096.65ms`; main too)."""
    key = ["rank", "file", "offset"]
    seen = {(r, str(f), o): t for r, f, o, t in live.metrics[[*key, "time"]].itertuples(index=False)}
    own = once.metrics["time"].to_numpy(dtype=float)
    rows = once.metrics[key].itertuples(index=False)
    times = [t if t == t else seen[(r, str(f), o)] for t, (r, f, o) in zip(own.tolist(), rows, strict=True)]
    return replace(once, metrics=once.metrics.assign(time=np.array(times, dtype=float)))


_FILE_LINES = st.lists(st.tuples(st.integers(0, 8), st.integers(1, 6)), min_size=1, max_size=10)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    files=st.lists(_FILE_LINES, min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 4000), min_size=1, max_size=4),
    events=st.dictionaries(st.integers(0, 4), st.sampled_from(["relaunch", "rotate"]), max_size=2),
)
@example(  # summaries kept, then set aside; TimeMonitor lines after LossMonitor rows; a log rotated mid-run
    files=[[(1, 4), (0, 3), (1, 1), (0, 6)], [(6, 3), (7, 1), (6, 3), (7, 1), (8, 2)]],
    cuts=[300, 900],
    events={1: "rotate"},
)
@example(  # a rank relaunched: its rows dropped, its TimeMonitor rows read again
    files=[[(6, 2), (7, 1), (6, 2), (7, 1)], [(2, 5), (3, 1), (2, 5)]], cuts=[200, 500], events={1: "relaunch"}
)
def test_each_tick_reads_what_one_read_of_the_same_bytes_reads(
    tmp_path_factory: pytest.TempPathFactory,
    path: str,
    files: list[list[tuple[int, int]]],
    cuts: list[int],
    events: dict[int, str],
) -> None:
    datas = [_log(runs) for runs in files]
    root = tmp_path_factory.mktemp("live")
    reader = RunReader(root, settings=READ_PATHS[path])
    written = [0] * len(datas)
    end = max(map(len, datas))
    rotated = False
    for tick, edge in enumerate([*sorted(set(cuts)), end, end]):
        again = tick % len(datas)
        event = events.get(tick) if datas[again][: written[again]].count(b"\n") >= 2 else None
        if event == "relaunch" and files[again][0][0] not in (0, 2, 4, 6):  # its first line no step row: a reader
            event = None  # cannot tell a relaunch from a copytruncate (the rows before the cut stay, as designed)
        log = root / f"worker_{again}.log"
        if event == "relaunch":  # reopened with "w", rewritten with other values: this tick sees its first line
            datas[again] = _log(files[again], shift=tick)
            written[again] = datas[again].index(b"\n") + 1
            log.write_bytes(datas[again][: written[again]])
        elif event == "rotate":  # logrotate: renamed beside it, a new log begun (its rows go on where they were)
            os.rename(log, root / f"worker_{again}.log.{tick}")
            datas[again] = datas[again][written[again] :]
            log.write_bytes(b"")
            written[again] = 0
        for rank, data in enumerate(datas):
            if rank == again and event == "relaunch":
                continue
            with (root / f"worker_{rank}.log").open("ab") as f:
                f.write(data[written[rank] : max(edge, written[rank])])
            written[rank] = max(edge, written[rank])
        with paused_collector():
            reader.refresh()
        with paused_collector():
            live = reader.snapshot()
        workers = sorted((s for s in reader.files.values() if s.info.role == LogRole.WORKER), key=file_order)
        pd.testing.assert_frame_equal(live.timings, timing_frame(workers), check_exact=True)  # every tuple again
        rotated = rotated or event == "rotate"
        if rotated:  # a fresh read takes the rotated log for no rank's: its rows are the live reader's alone
            continue
        once_dir = tmp_path_factory.mktemp("once")
        for p in root.iterdir():
            (once_dir / p.name).write_bytes(p.read_bytes())
        once = RunReader(once_dir, one_shot=True, settings=READ_PATHS[path])
        once.refresh()
        _same(live, once.snapshot())


def test_a_rotated_logs_timemonitor_rows_stay_under_its_new_name(tmp_path: Path) -> None:
    """The rows read before a rotation keep their place in the TimeMonitor frame, under the rotated file's name."""
    log = tmp_path / "worker_0.log"
    log.write_bytes(_log([(6, 1), (7, 1)]))
    reader = RunReader(tmp_path)
    reader.refresh()
    first = reader.snapshot()
    os.rename(log, tmp_path / "worker_0.log.1")
    log.write_bytes(_log([(6, 1), (7, 1)], shift=1))
    reader.refresh()
    second = reader.snapshot()
    assert first.timings["file"].tolist() == ["worker_0.log"]
    assert second.timings["file"].tolist() == ["worker_0.log.1", "worker_0.log"]
    assert second.timings["step"].tolist() == [1.0, 1.0] and second.timings["rank"].tolist() == [0, 0]
    pd.testing.assert_frame_equal(first.timings, first.timings.copy(deep=True))
