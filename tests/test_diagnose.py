"""core.logs.judgement.diagnose + `python -m core diagnose`: stragglers, hung ranks, failure groups at 8-1,024 ranks.

Synthetic folders come from benchmarks/synth_logs.py (real MindSpore noise, full float repr losses,
file mtimes set to each rank's last write); the real failed run is tests/fixtures/real_msrun_logs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.cli import diagnose as cli_diagnose
from core.logs import read_run
from core.logs.judgement.diagnose import DiagnoseSettings, diagnose

REPO = Path(__file__).resolve().parent.parent
REAL = Path(__file__).parent / "fixtures" / "real_msrun_logs"
_spec = importlib.util.spec_from_file_location("synth_logs", REPO / "benchmarks" / "synth_logs.py")
synth = importlib.util.module_from_spec(_spec)
sys.modules["synth_logs"] = synth  # dataclasses look their module up there
_spec.loader.exec_module(synth)


def _cli(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_diagnose.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["diagnose", *argv])


@pytest.mark.parametrize("ranks", [256, 1024])
def test_straggler_hung_and_crashed_rank_are_each_named(tmp_path: Path, ranks: int) -> None:
    straggler, hung, crashed = ranks // 3, ranks // 2, 2 * ranks // 3 + 1
    synth.write_run(
        tmp_path, ranks, 30, straggler=straggler, hung=hung, crashed=[crashed], noise_per_step=1, steps_per_epoch=10
    )
    d = diagnose(read_run(tmp_path))
    assert d.ranks == ranks
    assert [s.rank for s in d.stragglers] == [straggler]
    assert d.stragglers[0].ratio == pytest.approx(1.6, rel=0.02) and d.stragglers[0].source == "TimeMonitor"
    assert [h.rank for h in d.hung] == [hung]
    assert d.hung[0].last_step == 15 and d.hung[0].behind_steps == 15 and d.hung[0].last_time is not None
    assert [g.ranks for g in d.failure_groups] == [[crashed]]
    assert d.failure_groups[0].exception == synth.EXCEPTION and d.root_cause == crashed
    assert d.failed


def test_same_exception_on_128_ranks_is_one_group_with_the_first_rank_marked(tmp_path: Path) -> None:
    synth.write_run(tmp_path, 128, 12, crashed=list(range(128)), first_crashed=37, noise_per_step=1, steps_per_epoch=4)
    d = diagnose(read_run(tmp_path))
    assert len(d.failure_groups) == 1
    g = d.failure_groups[0]
    assert g.ranks == list(range(128)) and g.first_rank == 37 and g.time_source == "log time"
    assert d.root_cause == 37 and not d.hung  # failed ranks are not also "hung"


def test_real_failed_semi_auto_run() -> None:
    """8 ranks, 7 identical RuntimeErrors, rank 3 killed without a traceback, scheduler times out node 1.
    Rank 5's traceback follows the earliest stamped line (07:04:41.935), so it is the likely root cause."""
    d = diagnose(read_run(REAL / "semi_auto_on_cpu_error"))
    assert d.ranks == 8
    assert len(d.failure_groups) == 1
    g = d.failure_groups[0]
    assert g.exception.startswith("RuntimeError: Invalid communication backend: CPU for semi_auto_parallel")
    assert g.ranks == [0, 1, 2, 4, 5, 6, 7] and g.first_rank == 5 and g.time_source == "log time"
    assert "scheduler: node 1 timed out" in g.evidence
    assert any("worker 1 is the first one timed out" in e for e in d.job_errors)
    assert d.failed


def test_healthy_real_run_has_nothing_to_report() -> None:
    d = diagnose(read_run(REAL / "dp8_cpu_ok"))
    assert (d.ranks, d.stragglers, d.hung, d.failure_groups, d.failed) == (8, [], [], [], False)
    assert d.median_step_time == pytest.approx(148, rel=0.1) and d.step_time_source == "TimeMonitor"


def test_silent_job_is_hung_only_when_said_alive(tmp_path: Path) -> None:
    synth.write_run(tmp_path, 4, 10, noise_per_step=0, steps_per_epoch=5)
    snap = read_run(tmp_path)
    assert not diagnose(snap).hung
    d = diagnose(snap, now=synth.START + 10 * 0.5 + 600)
    assert sorted(h.rank for h in d.hung) == [0, 1, 2, 3] and d.silent_s == pytest.approx(600)
    assert "whole job silent" in d.hung[0].reason


def test_overflow_and_global_norm_spikes(tmp_path: Path) -> None:
    lines = [
        f"{{ Epoch:[  1/  1], step:[ {s:4d}/  10], loss: 2.0, per_step_time: 100ms, lr: 1e-05, "
        f"overflow cond: {s == 4}, loss_scale: 1024.0, global_norm: [{50.0 if s == 7 else 1.5}]\n"
        for s in range(1, 11)
    ]
    (tmp_path / "worker_0.log").write_text("".join(lines))
    d = diagnose(read_run(tmp_path))
    assert d.overflow_steps == [4] and d.overflow_ranks == 1
    assert [(s.rank, s.step, s.global_norm) for s in d.norm_spikes] == [(0, 7, 50.0)]


def test_cli_json_and_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    synth.write_run(tmp_path, 16, 20, straggler=3, hung=5, crashed=[9], noise_per_step=1, steps_per_epoch=5)
    args = _cli([str(tmp_path), "--json"])
    assert args.func(args) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["ranks"] == 16
    assert [s["rank"] for s in out["stragglers"]] == [3]
    assert set(out["stragglers"][0]) >= {"rank", "step_time", "median_step_time", "ratio"}
    assert [h["rank"] for h in out["hung"]] == [5] and set(out["hung"][0]) >= {"rank", "last_step", "last_time"}
    assert out["failure_groups"][0]["ranks"] == [9]
    assert set(out["failure_groups"][0]) >= {"exception", "ranks", "first_rank", "first_time"}
    args = _cli([str(tmp_path)])
    assert args.func(args) == 1
    text = capsys.readouterr().out
    assert "likely root cause: rank 9" in text and "rank 5: last step" in text and "rank 3:" in text


def test_cli_healthy_folder_exits_0_and_bad_input_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(REAL / "dp8_cpu_ok", tmp_path / "ok")
    args = _cli([str(tmp_path / "ok")])
    assert args.func(args) == 0
    assert "no failure, hang or straggler found" in capsys.readouterr().out
    args = _cli([str(tmp_path / "missing")])
    assert args.func(args) == 2
    args = _cli([str(tmp_path / "ok"), "--loss-regex", "no_group_here"])
    assert args.func(args) == 2
    assert "named group `loss`" in capsys.readouterr().err


def test_rank_logs_without_loss_or_failure_are_nothing_to_judge_not_healthy(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A rank log with neither a loss line nor a failure: `diagnose` said "no failure, hang or straggler
    found" and exited 0. It says what it read and why there is nothing to judge (exit 2, like no logs); a
    rank that failed before any loss line is still diagnosed (exit 1)."""
    (tmp_path / "worker_0.log").write_text("warm-up 3 of 5 done\n")
    args = _cli([str(tmp_path)])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "1 rank log(s) read, no loss row and no failure in them" in err and "line shapes" in err
    (tmp_path / "worker_0.log").write_text("Traceback (most recent call last):\nRuntimeError: boom\n")
    args = _cli([str(tmp_path)])
    assert args.func(args) == 1
    assert "RuntimeError: boom" in capsys.readouterr().out


def test_empty_folder(tmp_path: Path) -> None:
    d = diagnose(read_run(tmp_path))
    assert (d.ranks, d.failed, d.median_step_time) == (0, False, None)
    assert json.dumps(d.to_dict())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(times=st.lists(st.floats(10.0, 1000.0), min_size=2, max_size=9))
@example(times=[10.0, 10.0, 13.0])  # a ratio of exactly 1.3, the edge: a straggler (>=), as the test computes it
@example(times=[100.0, 130.0, 100.0, 100.0])
def test_stragglers_are_exactly_the_ranks_above_the_ratio(
    tmp_path_factory: pytest.TempPathFactory, times: list[float]
) -> None:
    root = tmp_path_factory.mktemp("st")
    for r, t in enumerate(times):
        path = root / f"worker_{r}.log"
        path.write_text(f"epoch: 1 step: 1, loss is 2.5\nTrain epoch time: {t:.3f} ms, per step time: {t:.3f} ms\n")
        os.utime(path, (synth.START, synth.START))
    d = diagnose(read_run(root), settings=DiagnoseSettings(straggler_ratio=1.3))
    measured = [float(f"{t:.3f}") for t in times]
    median = (
        sorted(measured)[len(measured) // 2]
        if len(measured) % 2
        else sum(sorted(measured)[len(measured) // 2 - 1 : len(measured) // 2 + 1]) / 2
    )
    assert {s.rank for s in d.stragglers} == {r for r, t in enumerate(measured) if t / median >= 1.3}
