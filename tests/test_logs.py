"""core.logs: layouts, every loss format on real lines, failures, incremental reads, the watcher."""

from __future__ import annotations

import math
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs import (
    MAX_PARTIAL_LINE,
    LogFormatError,
    RunWatcher,
    compile_user_regex,
    discover_logs,
    parse_loss_line,
    rank_status,
    read_run,
    tail_lines,
)
from core.logs.rows.reader import RunReader

FIX = Path(__file__).parent / "fixtures"
REAL = FIX / "real_msrun_logs"
LOGS = FIX / "logs"
NOISE = (REAL / "dp8_cpu_ok" / "worker_0.log").read_bytes().splitlines(keepends=True)[:26]


def _wait_for(pred, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


# ----------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("epoch: 1 step: 100, loss is 4.528182506561279", {"epoch": 1, "step": 100, "loss": 4.528182506561279}),
        ("epoch: 0, step: 10, loss is 2.2889402", {"epoch": 0, "step": 10, "loss": 2.2889402}),
        ("global_step: 194, loss: 1.997", {"step": 194, "loss": 1.997}),
        ("loss is Tensor(shape=[], dtype=Float32, value= 2.30)", {"loss": 2.30}),
        (
            "epoch: 2 step: 5, loss is Tensor(shape=[], dtype=Float32, value= 0.125)",
            {"epoch": 2, "step": 5, "loss": 0.125},
        ),
        (
            "epoch: 1 step: 7, loss is (Tensor(shape=[], dtype=Float32, value= 3.5), "
            "Tensor(shape=[], dtype=Bool, value= False), Tensor(shape=[], dtype=Float32, value= 65536))",
            {"epoch": 1, "step": 7, "loss": 3.5},
        ),
        (
            "2024-05-07 10:01:35,678 - mindformers[mindformers/core/callback/callback.py:337] - INFO - "
            "{ Epoch:[  1/  2], step:[    1/   19], loss: 10.649, per_step_time: 103328ms, lr: 1e-05, "
            "overflow cond: False, loss_scale: 1.0",
            {
                "epoch": 1,
                "epochs_total": 2,
                "step": 1,
                "steps_total": 19,
                "loss": 10.649,
                "step_time_ms": 103328,
                "lr": 1e-05,
            },
        ),
        (
            "Epoch:[  1/  1], step:[    4/  125], loss:[2.244/2.244], time:507844.205 ms, lr:0.0001",
            {
                "epoch": 1,
                "epochs_total": 1,
                "step": 4,
                "steps_total": 125,
                "loss": 2.244,
                "step_time_ms": 507844.205,
                "lr": 0.0001,
            },
        ),
        ("epoch: 3 step: 1, loss is nan", {"epoch": 3, "step": 1, "loss": math.nan}),
        ("epoch: 3 step: 2, loss is inf", {"epoch": 3, "step": 2, "loss": math.inf}),
        ("epoch: 3 step: 3, loss is -inf", {"epoch": 3, "step": 3, "loss": -math.inf}),
        ("epoch: 1 step: 4, loss is 1.5e-03\r", {"epoch": 1, "step": 4, "loss": 1.5e-3}),
    ],
)
def test_loss_formats(line: str, expected: dict[str, float]) -> None:
    row = parse_loss_line(line)
    assert row is not None
    for key, value in expected.items():
        got = row[key]
        if math.isnan(value):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(value), key


@pytest.mark.parametrize(
    "line",
    [
        "[WARNING] ME(1:2,MainProcess):2026-11-22 [x.py:1] loss scale manager is deprecated, loss: 1",
        "ValueError: In epoch: 1 step: 3, loss is NAN or INF, training process cannot continue, terminating.",
        "loss_scale: 1024",
        "val_loss: 0.3",
        "nothing to see here",
    ],
)
def test_not_loss_lines(line: str) -> None:
    assert parse_loss_line(line) is None


def test_every_format_through_a_log_file(tmp_path: Path) -> None:
    lines = [
        "epoch: 1 step: 100, loss is 4.528182506561279",
        "Train epoch time: 1464.630 ms, per step time: 146.463 ms",
        "epoch: 0, step: 10, loss is 2.2889402",
        "global_step: 194, loss: 1.997",
        "loss is Tensor(shape=[], dtype=Float32, value= 2.30)",
        "epoch: 2 step: 1, loss is nan",
    ]
    (tmp_path / "worker_0.log").write_text("".join(n.decode() for n in NOISE[:3]) + "\n".join(lines) + "\n")
    snap = read_run(tmp_path)
    assert snap.metrics["loss"].tolist()[:4] == pytest.approx([4.528182506561279, 2.2889402, 1.997, 2.30])
    assert math.isnan(snap.metrics["loss"].iloc[-1])
    assert snap.timings[["epoch_time_ms", "step_time_ms"]].iloc[0].tolist() == pytest.approx([1464.630, 146.463])
    assert rank_status(snap).iloc[0]["state"] == "nan"


def test_mindformers_fixture() -> None:
    snap = read_run(LOGS / "mindformers")
    m = snap.metrics
    assert m["loss"].iloc[:3].tolist() == pytest.approx([10.649, 10.502, 2.244])
    assert m["steps_total"].iloc[0] == 19
    assert m["step_time_ms"].iloc[:3].tolist() == pytest.approx([103328, 334, 507844.205])
    assert m["time"].notna().all()  # MindFormers lines carry their own timestamp
    assert math.isnan(m["loss"].iloc[-1])
    assert bool(snap.ranks.iloc[0]["finished"])  # epoch 2/2, step 19/19


def test_user_regex(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text("it 1 l=0.5\nit 2 l=0.25\n[WARNING] it 3 l=9\n")
    snap = read_run(tmp_path, loss_regex=r"it (?P<step>\d+) l=(?P<loss>[\d.]+)")
    # issue 18 item 7: the user's regex sees every line, `[`-prefixed ones too (it skipped them before)
    assert snap.metrics["loss"].tolist() == [0.5, 0.25, 9.0]
    assert snap.metrics["step"].tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("loss=(?P<loss>[\\d.]+", "does not compile"),
        ("loss=([\\d.]+)", "named group `loss`"),
        ("", "empty"),
        ("(?P<loss>x)(?P<foo>y)", "Unknown named group"),
    ],
)
def test_user_regex_errors(pattern: str, message: str) -> None:
    with pytest.raises(LogFormatError, match=message):
        compile_user_regex(pattern)


# ----------------------------------------------------------------------------- layouts


def test_layouts() -> None:
    mpi = discover_logs(LOGS / "mpirun")
    assert [(f.rank, f.rel, f.layout) for f in mpi] == [
        (0, "1/rank.00/stdout", "mpirun"),
        (1, "1/rank.01/stderr", "mpirun"),
        (1, "1/rank.01/stdout", "mpirun"),
    ]
    rt = discover_logs(LOGS / "rank_table")
    assert [(f.rank, f.layout) for f in rt] == [(0, "rank_table"), (1, "rank_table")]
    ms = discover_logs(REAL / "dp8_cpu_ok")
    assert [f.rank for f in ms if f.role == "worker"] == list(range(8))
    assert [f.rel for f in ms if f.role == "scheduler"] == ["scheduler.log"]


def test_mpirun_run_with_nan_error_on_stderr() -> None:
    snap = read_run(LOGS / "mpirun")
    assert snap.layout == "mpirun"
    assert sorted(snap.metrics["rank"].unique()) == [0, 1]
    err = snap.errors.iloc[0]
    assert (err["rank"], err["kind"]) == (1, "nan")
    assert "Traceback" in err["context"]
    states = rank_status(snap).set_index("rank")["state"]
    assert states[1] == "nan"


def test_rank_table_old_format() -> None:
    snap = read_run(LOGS / "rank_table")
    assert snap.metrics.groupby("rank")["loss"].last().tolist() == pytest.approx([1.997, 1.990])
    assert snap.metrics["step"].tolist() == [193, 194, 193, 194]


# ----------------------------------------------------------------------------- real fixtures


def test_real_ok_run_has_8_ranks_with_losses() -> None:
    snap = read_run(REAL / "dp8_cpu_ok")
    assert snap.layout == "msrun" and snap.n_ranks == 8
    counts = snap.metrics.groupby("rank").size()
    assert counts.index.tolist() == list(range(8)) and (counts == 15).all()
    first = snap.metrics[snap.metrics["rank"] == 0].iloc[0]
    assert (first["epoch"], first["step"], first["loss"]) == (1, 2, pytest.approx(2.3139476776123047))
    assert len(snap.timings) == 24 and snap.errors.empty
    assert snap.ranks["pid"].tolist() == [7587, 7589, 7593, 7598, 7601, 7605, 7611, 7613]
    assert (rank_status(snap)["state"] == "finished").all()  # the scheduler saw every node unregister


def test_real_failed_run_reports_ranks_and_exception() -> None:
    launcher = LOGS / "msrun_launcher.log"
    snap = read_run(REAL / "semi_auto_on_cpu_error", extra_files=[launcher])
    assert snap.metrics.empty
    exc = snap.errors[snap.errors["kind"] == "exception"]
    worker_exc = exc[exc["rank"] >= 0]
    assert sorted(worker_exc["rank"].tolist()) == [0, 1, 2, 4, 5, 6, 7]
    assert all(m.startswith("RuntimeError: Invalid communication backend: CPU") for m in worker_exc["message"])
    assert all("Traceback (most recent call last)" in c for c in worker_exc["context"])
    assert worker_exc.iloc[0]["line"] == 38
    timeout = snap.errors[snap.errors["kind"] == "timeout"]
    assert timeout["rank"].tolist() == [1]
    exit_rows = snap.errors[snap.errors["kind"] == "worker_exit"]
    assert exit_rows["rank"].tolist() == [1]  # pid 2388 -> worker_1.log's DISTRIBUTED(2388,
    assert snap.crashed_ranks() == [0, 1, 2, 4, 5, 6, 7]
    states = rank_status(snap).set_index("rank")
    assert states.loc[3, "state"] == "stopped"
    assert states.loc[0, "state"] == "crashed" and "Invalid communication backend" in states.loc[0, "detail"]


def test_status_running_stalled_waiting(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text("epoch: 1 step: 1, loss is 1.0\n")
    (tmp_path / "worker_1.log").write_text("starting\n")
    snap = read_run(tmp_path)
    now = snap.ranks["last_activity"].max()
    st_now = rank_status(snap, now=now + 1, stall_after_s=30).set_index("rank")["state"]
    assert st_now.tolist() == ["running", "waiting"]
    st_late = rank_status(snap, now=now + 100, stall_after_s=30).set_index("rank")["state"]
    assert st_late.tolist() == ["stalled", "stalled"]
    assert rank_status(snap, run_status="succeeded")["state"].tolist() == ["finished", "finished"]


def _quiet_run(tmp_path: Path, last_steps: dict[int, int]) -> tuple:
    for rank, last in last_steps.items():
        lines = "".join(f"epoch: 1 step: {s}, loss is {2.0 - s / 100}\n" for s in range(1, last + 1))
        (tmp_path / f"worker_{rank}.log").write_text(lines)
    snap = read_run(tmp_path)
    return snap, float(snap.ranks["last_activity"].max())


def test_a_finished_folder_read_later_is_ended_not_stalled(tmp_path: Path) -> None:
    """Yesterday's run opened as a plain folder (no launcher record, no totals on its lines): every rank
    quiet at the job's last step is "ended", said neutrally; it used to read as N stalled ranks."""
    snap, newest = _quiet_run(tmp_path, {0: 20, 1: 20, 2: 20})
    status = rank_status(snap, now=newest + 600, stall_after_s=60)
    assert status["state"].tolist() == ["ended"] * 3
    assert status["detail"].iloc[0] == (
        "log ended 10 min ago at the job's last step, like every rank: finished, or the whole job stopped"
    )
    assert rank_status(snap, now=newest + 1, stall_after_s=60)["state"].tolist() == ["running"] * 3


def test_a_rank_short_of_the_last_step_stays_stalled_beside_ended_ones(tmp_path: Path) -> None:
    snap, newest = _quiet_run(tmp_path, {0: 20, 1: 12, 2: 20})
    status = rank_status(snap, now=newest + 600, stall_after_s=60).set_index("rank")["state"]
    assert status.to_dict() == {0: "ended", 1: "stalled", 2: "ended"}


def test_quiet_ranks_are_not_ended_while_another_runs_or_has_no_loss_yet(tmp_path: Path) -> None:
    snap, newest = _quiet_run(tmp_path, {0: 20, 1: 20})
    os.utime(tmp_path / "worker_1.log", (newest + 590, newest + 590))
    snap = read_run(tmp_path)
    status = rank_status(snap, now=newest + 600, stall_after_s=60)["state"].tolist()
    assert status == ["stalled", "running"]
    (tmp_path / "worker_2.log").write_text("starting\n")
    os.utime(tmp_path / "worker_2.log", (newest, newest))
    status = rank_status(read_run(tmp_path), now=newest + 6000, stall_after_s=60)["state"].tolist()
    assert status == ["stalled", "stalled", "stalled"]  # rank 2 never printed a loss: not a finished job


def test_real_srun_run_read_as_a_folder_is_ended() -> None:
    """Real two-rank Slurm run (tests/fixtures/real_logs): both ranks reached epoch 2 step 20."""
    folder = FIX / "real_logs/slurm-srun-task-id-files-cpu_produced-here/log/logs"
    assert rank_status(read_run(folder))["state"].tolist() == ["ended", "ended"]


def test_tail_lines_filters_noise() -> None:
    tail = tail_lines(REAL / "dp8_cpu_ok" / "worker_0.log", n=5)
    assert tail[-1] == "Train epoch time: 1446.970 ms, per step time: 144.697 ms"
    assert not any(t.startswith("[WARNING]") or t.startswith("[INFO]") for t in tail)
    assert any(t.startswith("[INFO]") for t in tail_lines(REAL / "dp8_cpu_ok" / "worker_0.log", 5, False))


# ----------------------------------------------------------------------------- incremental reads


def _rows(snap) -> list[tuple]:
    m = snap.metrics
    return m[["rank", "epoch", "step", "loss", "offset"]].astype(str).values.tolist()


def _errors(snap) -> list[tuple]:
    e = snap.errors
    return e[["rank", "kind", "message", "offset", "line", "context"]].astype(str).values.tolist()


_CONTENT = b"".join(
    [
        *NOISE[:5],
        b"epoch: 1 step: 1, loss is 2.5\r\n",
        b"epoch: 1 step: 2, loss is 2.4\n",
        b"\xff\xfe bad bytes \xc3( epoch: 1 step: 3, loss is 2.3\n",
        b"Train epoch time: 10.0 ms, per step time: 5.0 ms\n",
        *NOISE[5:8],
        b"epoch: 2, step: 1, loss is Tensor(shape=[], dtype=Float32, value= 2.2)\n",
        b"global_step: 7, loss: 2.1\n",
        b'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n    x()\n',
        b"RuntimeError: boom \xe2\x9c\x97\n",
        b"[ERROR] ME(1,7f,python):2026-11-22-07:05:10.230.794 [a.cc:1] F] something bad\n",
        b"epoch: 2 step: 3, loss is nan\n",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(_CONTENT)), max_size=12))
def test_any_chunking_gives_the_one_shot_rows(tmp_path_factory: pytest.TempPathFactory, cuts: list[int]) -> None:
    root = tmp_path_factory.mktemp("chunks")
    reference_dir = tmp_path_factory.mktemp("ref")
    (reference_dir / "worker_0.log").write_bytes(_CONTENT)
    reference = read_run(reference_dir)
    path = root / "worker_0.log"
    path.write_bytes(b"")
    state = RunReader(root)
    state.refresh()
    points = [*sorted(set(cuts)), len(_CONTENT)]
    prev = 0
    for p in points:
        with open(path, "ab") as f:
            f.write(_CONTENT[prev:p])
        prev = p
        state.refresh()
    snap = state.snapshot()
    assert _rows(snap) == _rows(reference)
    assert _errors(snap) == _errors(reference)
    cols = ["epoch", "step", "step_time_ms", "offset"]
    assert snap.timings[cols].astype(str).values.tolist() == reference.timings[cols].astype(str).values.tolist()
    assert len(reference.metrics) == 6 and len(reference.errors) == 2


def test_partial_line_held_until_complete(tmp_path: Path) -> None:
    path = tmp_path / "worker_0.log"
    path.write_bytes(b"epoch: 1 step: 1, loss is 2.5\nepoch: 1 step: 2, loss is 2.")
    state = RunReader(tmp_path)
    state.refresh()
    assert state.snapshot().metrics["loss"].tolist() == [2.5]
    with open(path, "ab") as f:
        f.write(b"25\n")
    state.refresh()
    assert state.snapshot().metrics["loss"].tolist() == [2.5, 2.25]


def test_truncation_resets_that_rank(tmp_path: Path) -> None:
    a, b = tmp_path / "worker_0.log", tmp_path / "worker_1.log"
    a.write_bytes(b"epoch: 1 step: 1, loss is 2.5\nepoch: 1 step: 2, loss is 2.4\n")
    b.write_bytes(b"epoch: 1 step: 1, loss is 3.5\n")
    state = RunReader(tmp_path)
    state.refresh()
    assert len(state.snapshot().metrics) == 3
    a.write_bytes(b"epoch: 1 step: 1, loss is 9.0\n")  # relaunch: opened with "w"
    state.refresh()
    snap = state.snapshot()
    assert snap.metrics[snap.metrics["rank"] == 0]["loss"].tolist() == [9.0]
    assert snap.metrics[snap.metrics["rank"] == 1]["loss"].tolist() == [3.5]
    assert snap.ranks.set_index("rank").loc[0, "restarts"] == 1
    # rewritten in place to a *longer* file before we looked: detected by the changed head
    a.write_bytes(b"epoch: 7 step: 1, loss is 1.0\nepoch: 7 step: 2, loss is 0.5\nepoch: 7 step: 3, loss is 0.25\n")
    state.refresh()
    assert state.snapshot().metrics.query("rank == 0")["loss"].tolist() == [1.0, 0.5, 0.25]


def test_late_files_are_picked_up(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text("epoch: 1 step: 1, loss is 1.0\n")
    state = RunReader(tmp_path)
    state.refresh()
    (tmp_path / "worker_1.log").write_text("epoch: 1 step: 1, loss is 2.0\n")
    (tmp_path / "1" / "rank.2").mkdir(parents=True)
    (tmp_path / "1" / "rank.2" / "stdout").write_text("epoch: 1 step: 1, loss is 3.0\n")
    state.refresh()
    snap = state.snapshot()
    assert snap.metrics["rank"].tolist() == [0, 1, 2]
    assert snap.metrics["time"].isna().tolist() == [True, False, False]  # live files get observation time


def test_pathological_line_is_bounded(tmp_path: Path) -> None:
    path = tmp_path / "worker_0.log"
    path.write_bytes(b"epoch: 1 step: 1, loss is 2.5\n")
    state = RunReader(tmp_path)
    state.refresh()
    chunk = b"x" * (256 << 10)
    with open(path, "ab") as f:
        for _ in range(12):  # 3 MiB without a newline, written in pieces
            f.write(chunk)
            f.flush()
            state.refresh()
    with open(path, "ab") as f:
        f.write(b" still the same line\nepoch: 1 step: 2, loss is 2.4\n")
    state.refresh()
    snap = state.snapshot()
    assert snap.metrics["loss"].tolist() == [2.5, 2.4]
    r = snap.ranks.iloc[0]
    assert r["dropped_lines"] == 1 and r["dropped_bytes"] > MAX_PARTIAL_LINE
    assert "overlong_line" in snap.errors["kind"].tolist()
    fresh = read_run(tmp_path)
    assert fresh.metrics["loss"].tolist() == [2.5, 2.4]


# ----------------------------------------------------------------------------- watcher


@pytest.mark.parametrize("polling", [False, True])
def test_watcher_follows_appends_truncation_and_new_files(tmp_path: Path, polling: bool) -> None:
    a = tmp_path / "worker_0.log"
    a.write_bytes(b"".join(NOISE[:3]) + b"epoch: 1 step: 1, loss is 2.5\n")
    with RunWatcher(tmp_path, polling=polling, rescan_s=0.3) as w:
        assert w.snapshot().metrics["loss"].tolist() == [2.5]
        with open(a, "ab") as f:
            f.write(b"epoch: 1 step: 2, loss is 2.4\nepoch: 1 step: 3, loss")
        assert _wait_for(lambda: len(w.snapshot().metrics) == 2)
        with open(a, "ab") as f:
            f.write(b" is 2.3\n")
        assert _wait_for(lambda: len(w.snapshot().metrics) == 3)
        (tmp_path / "worker_1.log").write_bytes(b"epoch: 1 step: 1, loss is 7.0\n")
        assert _wait_for(lambda: 1 in set(w.snapshot().metrics["rank"]))
        a.write_bytes(b"epoch: 1 step: 1, loss is 5.0\n")
        assert _wait_for(lambda: w.snapshot().metrics.query("rank == 0")["loss"].tolist() == [5.0])
    assert not w.running


def test_watcher_concurrent_writer_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    n = 400
    paths = [tmp_path / f"worker_{r}.log" for r in range(3)]
    for p in paths:
        p.write_bytes(b"")

    def writer(p: Path, rank: int) -> None:
        with open(p, "ab", buffering=0) as f:
            for i in range(n):
                line = b"epoch: 1 step: %d, loss is %d.5\n" % (i + 1, rank)
                cut = i % len(line)
                f.write(NOISE[i % len(NOISE)] + line[:cut])
                f.write(line[cut:])

    w = RunWatcher(tmp_path).start()
    seen: list[int] = []
    threads = [threading.Thread(target=writer, args=(p, r)) for r, p in enumerate(paths)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        seen.append(len(w.snapshot().metrics))
        time.sleep(0.005)
    for t in threads:
        t.join()
    assert _wait_for(lambda: len(w.snapshot(refresh=True).metrics) == 3 * n)
    w.stop()
    m = w.snapshot().metrics
    assert seen == sorted(seen)
    for rank in range(3):
        steps = m[m["rank"] == rank]["step"].tolist()
        assert steps == list(range(1, n + 1))


def test_watcher_on_missing_folder_starts_when_it_appears(tmp_path: Path) -> None:
    target = tmp_path / "later"
    with RunWatcher(target, rescan_s=0.1) as w:
        assert w.snapshot().metrics.empty
        shutil.copytree(REAL / "dp8_cpu_ok", target)
        assert _wait_for(lambda: len(w.snapshot().metrics) == 120)


def test_bad_bytes_and_crlf(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_bytes(
        b"\x80\x81\xff\r\nepoch: 1 step: 1, loss is 2.5\r\n\xe4\xb8\xad\xe6\x96\x87 loss: 1.5\r\n"
        b"Traceback (most recent call last):\r\n  File \"\xff.py\"\r\nKeyError: '\xff'\r\n"
    )
    snap = read_run(tmp_path)
    assert snap.metrics["loss"].tolist() == [2.5, 1.5]
    assert snap.errors.iloc[0]["message"] == "KeyError: '\ufffd'"
    assert "\r" not in snap.errors.iloc[0]["context"]


def test_stat_failures_are_tolerated(tmp_path: Path) -> None:
    p = tmp_path / "worker_0.log"
    p.write_text("epoch: 1 step: 1, loss is 1.0\n")
    state = RunReader(tmp_path)
    state.refresh()
    os.remove(p)
    state.refresh()
    assert state.snapshot().metrics["loss"].tolist() == [1.0]


def test_every_registered_format_reads_its_own_sample() -> None:
    """Each FORMATS entry carries a real line and its source; its parser (and parse_loss_line) takes it."""
    from core.logs import FORMATS

    assert len({f.name for f in FORMATS}) == len(FORMATS)
    for fmt in FORMATS:
        assert fmt.source, fmt.name
        row = fmt.parse(fmt.sample.encode())
        assert row is not None and math.isfinite(row["loss"]), fmt.name
        assert parse_loss_line(fmt.sample) == row or math.isnan(row["time"]), fmt.name
