"""core.alerts rules (issue 34 item 1): each rule judged from a real read of written logs, with its
evidence; dedupe of a 1,024-rank failure and of a flapping rank; the workspace's settings file."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.alerts import Alerter, AlertRule, RuleSettings, judge
from core.alerts.channels import AlertTargetError, mask
from core.alerts.rules import loss_spikes, slow_ranks
from core.alerts.settings import load, rule_settings, save
from core.logs import read_run

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("synth_logs", REPO / "benchmarks" / "synth_logs.py")
synth = importlib.util.module_from_spec(_spec)
sys.modules["synth_logs"] = synth
_spec.loader.exec_module(synth)


def _write(folder: Path, rank: int, losses: list[float], extra: str = "") -> Path:
    """One msrun rank log with LossMonitor lines (epoch 1, steps 1..n) and optional trailing text."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"worker_{rank}.log"
    lines = "".join(f"epoch: 1 step: {i}, loss is {v!r}\n" for i, v in enumerate(losses, 1))
    path.write_text(lines + extra)
    return path


def test_1024_failing_ranks_make_one_alert_with_the_first_rank_and_the_count(tmp_path: Path) -> None:
    synth.write_run(
        tmp_path, 1024, 12, crashed=list(range(1024)), first_crashed=37, noise_per_step=1, steps_per_epoch=4
    )
    alerter = Alerter("big")
    alerts = alerter.check(read_run(tmp_path))
    failed = [a for a in alerts if a.rule == AlertRule.RANK_FAILED]
    assert len(failed) == 1
    a = failed[0]
    assert a.ranks[0] == 37 and a.count == 1024 and len(a.ranks) <= 10
    assert "rank 37" in a.message and synth.EXCEPTION in a.message
    assert a.evidence[0].startswith("rank 37 worker_37.log:") and synth.EXCEPTION in a.evidence[0]
    body = a.to_dict()
    assert body["rule"] == "rank_failed" and body["ranks"][0] == 37 and body["count"] == 1024
    assert {a.rule for a in alerts} == {AlertRule.RANK_FAILED, AlertRule.RUN_ENDED}
    assert alerter.check(read_run(tmp_path)) == []  # the next tick raises nothing again


def test_a_flapping_rank_does_not_raise_again(tmp_path: Path) -> None:
    """Rank 1 fails, its log restarts clean (a relaunch), then it fails again: one rank_failed alert."""
    _write(tmp_path, 0, [2.0, 1.9, 1.8])
    trace = 'Traceback (most recent call last):\n  File "t.py", line 1\nRuntimeError: device lost\n'
    log = _write(tmp_path, 1, [2.0, 1.9], trace)
    alerter = Alerter("flap")
    first = alerter.check(read_run(tmp_path))
    assert [a.rule for a in first if a.rule == AlertRule.RANK_FAILED] == [AlertRule.RANK_FAILED]
    assert first[0].ranks == (1,) and first[0].count == 1
    log.write_text("epoch: 1 step: 1, loss is 2.0\n")
    assert [a for a in alerter.check(read_run(tmp_path)) if a.rule == AlertRule.RANK_FAILED] == []
    _write(tmp_path, 1, [2.0], trace)
    assert [a for a in alerter.check(read_run(tmp_path)) if a.rule == AlertRule.RANK_FAILED] == []


def test_nan_loss_names_rank_and_step(tmp_path: Path) -> None:
    _write(tmp_path, 0, [2.0, 1.9, 1.8, 1.7])
    _write(tmp_path, 1, [2.0, 1.9, float("nan"), float("nan")])
    alerts = judge(read_run(tmp_path), "nan-run", running=False)
    nan = [a for a in alerts if a.rule == AlertRule.NAN_LOSS]
    assert len(nan) == 1 and nan[0].ranks == (1,) and nan[0].step == 3
    assert nan[0].evidence == ("rank 1: loss nan at step 3",)


def test_loss_spike_names_rank_step_and_line(tmp_path: Path) -> None:
    steady = [2.0 - 0.01 * i for i in range(30)]
    _write(tmp_path, 0, steady)
    _write(tmp_path, 1, [*steady[:25], 40.0, *steady[26:]])
    settings = RuleSettings(spike_factor=5.0, spike_window=20)
    spikes = [a for a in judge(read_run(tmp_path), "s", settings, running=False) if a.rule == AlertRule.LOSS_SPIKE]
    assert len(spikes) == 1
    assert spikes[0].ranks == (1,) and spikes[0].step == 26 and "worker_1.log" in spikes[0].evidence[0]
    assert "loss 40" in spikes[0].message


@given(
    st.floats(min_value=1e-6, max_value=1e6, allow_nan=False),
    st.integers(min_value=0, max_value=200),
    st.floats(min_value=1.0001, max_value=100),
    st.integers(min_value=5, max_value=50),
)
def test_a_constant_loss_never_spikes(value: float, n: int, factor: float, window: int) -> None:
    assert loss_spikes(np.full(n, value), factor, window) == []


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=80), st.integers(5, 30))
def test_a_spike_is_always_above_factor_times_the_median_before_it(values: list[float], window: int) -> None:
    arr = np.array(values, dtype=np.float64)
    for i in loss_spikes(arr, 3.0, window):
        prev = arr[i - window : i]
        assert i >= window and arr[i] > 3.0 * np.median(prev[np.isfinite(prev)]) > 0


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=60), st.integers(5, 25))
def test_vectorised_spikes_match_the_plain_definition(values: list[float], window: int) -> None:
    """The sliding-window pass finds exactly the indices the one-at-a-time definition finds."""
    arr = np.array(values, dtype=np.float64)
    want = []
    for i in range(window, len(arr)):
        prev = arr[i - window : i]
        prev = prev[np.isfinite(prev)]
        if len(prev) >= 5 and np.isfinite(arr[i]) and np.median(prev) > 0 and arr[i] > 2.5 * np.median(prev):
            want.append(i)
    assert loss_spikes(arr, 2.5, window) == want


@given(st.dictionaries(st.integers(0, 64), st.lists(st.floats(1, 1e4), min_size=0, max_size=8), max_size=16))
def test_equal_step_times_never_make_a_straggler_and_a_named_one_is_slow(recent: dict[int, list[float]]) -> None:
    even = {r: [100.0] * 5 for r in recent}
    assert slow_ranks(even, 1.5, 5) == {}
    for rank, (mine, median) in slow_ranks(recent, 1.5, 3).items():
        assert min(recent[rank][-3:]) > 1.5 * median and mine > median


def test_straggler_from_timemonitor_lines(tmp_path: Path) -> None:
    synth.write_run(tmp_path, 8, 60, straggler=5, noise_per_step=0, steps_per_epoch=10, straggler_factor=2.0)
    settings = RuleSettings(straggler_factor=1.5, straggler_steps=3)
    found = [a for a in judge(read_run(tmp_path), "st", settings, running=False) if a.rule == AlertRule.STRAGGLER]
    assert [a.ranks for a in found] == [(5,)]
    assert "2.0x the job's median" in found[0].message or "1.9x" in found[0].message


def test_hang_only_once_the_run_was_seen_live_and_once(tmp_path: Path) -> None:
    _write(tmp_path, 0, [2.0, 1.9])
    _write(tmp_path, 1, [2.0])
    snap = read_run(tmp_path)
    newest = float(snap.ranks["last_activity"].max())
    alerter = Alerter("h", RuleSettings(hang_s=30))
    assert alerter.check(snap, now=newest + 5) == []  # live, quiet for 5 s only
    hang = alerter.check(snap, now=newest + 60)
    assert [a.rule for a in hang] == [AlertRule.HANG] and hang[0].count == 2
    assert alerter.check(snap, now=newest + 120) == []
    old = Alerter("yesterday", RuleSettings(hang_s=30))
    assert old.check(snap, now=newest + 3600) == []  # a folder quiet since long before the watch: no hang


def test_run_ended_says_how(tmp_path: Path) -> None:
    _write(tmp_path, 0, [2.0, 1.9])
    ended = [a for a in judge(read_run(tmp_path), "r", run_status="stopped") if a.rule == AlertRule.RUN_ENDED]
    assert len(ended) == 1 and ended[0].message.startswith("run stopped")
    assert not [a for a in judge(read_run(tmp_path), "r", running=False) if a.rule == AlertRule.RUN_ENDED]


def test_disabled_rules_stay_quiet(tmp_path: Path) -> None:
    synth.write_run(tmp_path, 4, 8, crashed=[2], noise_per_step=0, steps_per_epoch=4)
    only = RuleSettings(enabled=frozenset({AlertRule.NAN_LOSS}))
    assert judge(read_run(tmp_path), "r", only, running=False) == []


def test_settings_file_is_0600_and_secrets_show_last4(tmp_path: Path) -> None:
    secret = "s3cr3t-signing-key-WXYZ"
    path = save(
        tmp_path,
        {
            "rules": {"hang_s": 45, "enabled": ["hang", "rank_failed"]},
            "smtp": {"host": "mail.example", "port": 2525, "user": "bot", "password": "hunter2-password"},
            "secrets": {"https://hook.example/abc": secret},
        },
    )
    assert os.stat(path).st_mode & 0o777 == 0o600
    s = load(tmp_path)
    assert s.rules.hang_s == 45 and s.rules.enabled == frozenset({AlertRule.HANG, AlertRule.RANK_FAILED})
    assert s.smtp is not None and s.smtp.port == 2525 and s.secrets["https://hook.example/abc"] == secret
    shown = s.describe()
    assert secret not in shown and "…WXYZ" in shown and "hunter2-password" not in shown and "…word" in shown
    assert mask("abc") == "…" and mask(None) == ""


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"rules": {"hang_s": -1}}, "hang_s must be > 0"),
        ({"rules": {"nope": 1}}, "unknown rule setting 'nope'"),
        ({"rules": {"enabled": ["fire"]}}, "enabled ['fire'] is not a list"),
        ({"rules": {"spike_factor": "big"}}, "spike_factor 'big' is not a number"),
        ({"smtp": {"host": "x", "port": 70000}}, "smtp needs a host and a port"),
        ({"secrets": {"u": 3}}, "secrets must map"),
    ],
)
def test_bad_settings_are_one_line_naming_the_key(tmp_path: Path, data: dict, words: str) -> None:
    save(tmp_path, data)
    with pytest.raises(AlertTargetError) as err:
        load(tmp_path)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_settings_file_others_can_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "alerts.json").write_text(json.dumps({"secrets": {}}))
    os.chmod(tmp_path / "alerts.json", 0o644)
    with pytest.raises(AlertTargetError, match="chmod 600"):
        load(tmp_path)
    (tmp_path / "alerts.json").write_text("{not json")
    os.chmod(tmp_path / "alerts.json", 0o600)
    with pytest.raises(AlertTargetError, match="not valid JSON"):
        load(tmp_path)


def test_a_run_named_in_the_settings_gets_its_own_rules(tmp_path: Path) -> None:
    save(tmp_path, {"rules": {"hang_s": 300, "spike_factor": 7}, "runs": {"pretrain-64": {"hang_s": 1800}}})
    s = load(tmp_path)
    assert s.rules_for("pretrain-64").hang_s == 1800 and s.rules_for("pretrain-64").spike_factor == 7
    assert s.rules_for("other").hang_s == 300
    save(tmp_path, {"runs": {"r": {"hang_s": 0}}})
    with pytest.raises(AlertTargetError, match=r"runs\.'r'.*hang_s must be > 0"):
        load(tmp_path)


def test_rule_overrides_keep_the_workspace_defaults() -> None:
    base = RuleSettings(hang_s=120, spike_factor=8)
    run = rule_settings({"hang_s": 10}, base)
    assert run.hang_s == 10 and run.spike_factor == 8 and math.isclose(base.hang_s, 120)
