"""Issue 34 item 5: `python -m core export DIR --tensorboard OUT` writes TensorBoard event files, one run
folder per rank, read back here with TensorBoard's own reader (`EventAccumulator`).

TensorBoard stores a scalar as float32 (`simple_value`), so values are compared with the logs' values
rounded to float32: exactly equal at that precision, every step and every rank."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from benchmarks.synth_logs import write_run
from core.__main__ import main
from core.logs import read_run
from core.logs.judgement.metrics import global_step_values

FIXTURE = Path(__file__).parent / "fixtures" / "real_msrun_logs" / "dp8_cpu_ok"


def read_back(folder: Path) -> EventAccumulator:
    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})  # 0: keep every point, no sampling
    acc.Reload()
    return acc


def expected_loss(log_dir: Path) -> dict[int, tuple[list[int], np.ndarray]]:
    """Per rank, the loss series the logs hold: (global steps, float32 values)."""
    m = read_run(log_dir).metrics
    gs = global_step_values(m)
    out = {}
    for rank in sorted(set(m["rank"])):
        mine = (m["rank"] == rank).to_numpy()
        out[int(rank)] = ([int(s) for s in gs[mine]], m["loss"].to_numpy()[mine].astype(np.float32))
    return out


def loss_lines(log: Path, steps_per_epoch: int) -> tuple[list[int], np.ndarray]:
    """The oracle, independent of the reader: LossMonitor's lines parsed here, global step computed here."""
    found = re.findall(r"^epoch: (\d+) step: (\d+), loss is (\S+)$", log.read_text(), re.M)
    steps = [(int(e) - 1) * steps_per_epoch + int(s) for e, s, _ in found]
    return steps, np.array([float(v) for _, _, v in found], dtype=np.float32)


def test_every_ranks_loss_series_reads_back_exactly_from_a_real_run(tmp_path: Path) -> None:
    out = tmp_path / "tb"
    assert main(["export", str(FIXTURE), "--tensorboard", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [f"rank_{r:04d}" for r in range(8)]
    want = {r: loss_lines(FIXTURE / f"worker_{r}.log", steps_per_epoch=10) for r in range(8)}
    for rank, (steps, values) in want.items():
        acc = read_back(out / f"rank_{rank:04d}")
        assert "loss" in acc.Tags()["scalars"]
        got = acc.Scalars("loss")
        assert [e.step for e in got] == steps  # the global step: 3 epochs x 10 steps, printed every 2nd
        assert np.array_equal(np.array([e.value for e in got], dtype=np.float32), values)  # float32-exact
    assert steps == list(range(2, 31, 2))
    # TimeMonitor's per-epoch figures, and the line's own time as the wall time
    acc = read_back(out / "rank_0003")
    assert {"time_monitor/epoch_time_ms", "time_monitor/step_time_ms"} <= set(acc.Tags()["scalars"])
    assert [e.step for e in acc.Scalars("time_monitor/step_time_ms")] == [1, 2, 3]


def test_every_metric_of_a_line_is_a_tag_with_its_line_time(tmp_path: Path) -> None:
    """MindFormers lines carry loss, lr, per_step_time and more; each is a tag, stamped with the line's time."""
    logs = tmp_path / "logs"
    run = write_run(logs, 3, 30, noise_per_step=0, fmt="mindformers")
    out = tmp_path / "tb"
    assert main(["export", str(logs), "--tensorboard", str(out)]) == 0
    snap = read_run(logs)
    metrics = [c for c in snap.metrics.columns if c not in ("rank", "epoch", "step", "epochs_total", "steps_total")]
    metrics = [c for c in metrics if c not in ("time", "offset", "file") and snap.metrics[c].notna().any()]
    assert {"loss", "step_time_ms", "lr"} <= set(metrics)
    for rank in range(run.ranks):
        acc = read_back(out / f"rank_{rank:04d}")
        assert set(metrics) <= set(acc.Tags()["scalars"])
        mine = snap.metrics[snap.metrics["rank"] == rank]
        for tag in metrics:
            got = acc.Scalars(tag)
            assert np.array_equal([e.value for e in got], mine[tag].to_numpy().astype(np.float32))
        times = mine["time"].to_numpy()
        assert np.isfinite(times).all()
        assert np.allclose([e.wall_time for e in acc.Scalars("loss")], times)


def test_a_1024_rank_run_gives_every_ranks_loss(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    write_run(logs, 1024, 20, crashed=[7], noise_per_step=0)
    out = tmp_path / "tb"
    assert main(["export", str(logs), "--tensorboard", str(out)]) == 0
    assert len(list(out.iterdir())) == 1024
    want = expected_loss(logs)
    for rank in (0, 7, 511, 1023):
        got = read_back(out / f"rank_{rank:04d}").Scalars("loss")
        steps, values = want[rank]
        assert [e.step for e in got] == steps and np.array_equal([e.value for e in got], values)
    assert len(want[7][0]) == 16  # the crashed rank's series stops where its log does


@pytest.mark.parametrize(
    ("target", "out", "says"),
    [
        ("{tmp}/no/such/logs", "{tmp}/tb", "does not exist"),
        ("no-such-run", "{tmp}/tb", "is neither a run of"),
        ("{fixture}", "{tmp}/full", "exists and is not empty"),
        ("{fixture}", "{tmp}/a_file", "exists and is not a folder"),
        ("{fixture}", "{tmp}/no/such/parent/tb", "is not a folder"),
        ("{fixture}", "/proc/tb", "cannot"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, target: str, out: str, says: str
) -> None:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "events.out.tfevents.other").write_text("another run's")
    (tmp_path / "a_file").write_text("x")
    fill = {"tmp": str(tmp_path), "fixture": str(FIXTURE)}
    assert main(["export", target.format(**fill), "--tensorboard", out.format(**fill)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err
    assert sorted(p.name for p in (tmp_path / "full").iterdir()) == ["events.out.tfevents.other"]  # untouched
    assert not (tmp_path / "tb").exists()


def test_an_empty_out_folder_is_used(tmp_path: Path) -> None:
    out = tmp_path / "tb"
    out.mkdir()
    shutil.rmtree(out)
    out.mkdir()
    assert main(["export", str(FIXTURE), "--tensorboard", str(out)]) == 0
    assert len(list(out.iterdir())) == 8


def test_rank_logs_without_a_point_say_what_was_read_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run that failed before its first loss line: not 'wrote 0 points' and exit 0, but exit 2 with
    what was read and the line shapes that carry numbers (as watch and diagnose say it); OUT is not made."""
    failed = FIXTURE.parent / "semi_auto_on_cpu_error"
    out = tmp_path / "tb"
    assert main(["export", str(failed), "--tensorboard", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: nothing to export: 8 rank log(s)") and "line shapes with numbers" in err
    assert "wrote" not in err and not out.exists()
