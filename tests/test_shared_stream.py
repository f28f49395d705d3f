"""Several ranks writing one untagged stream (core.logs.judgement.streams): `mpirun -n 8` without `--tag-output`
interleaves eight LossMonitor lines per step that name no rank, so the reader gives them all to rank 0 and the chart
showed one vertical line at one step with no word why. The real log: tests/fixtures/real_logs/lossmonitor-8-ranks-
one-stream_mindaudio-105 (mindspore-lab/mindaudio#105). `watch --once` and the Monitor now say so in one line."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from core.__main__ import main
from core.logs import read_run
from core.logs.judgement.streams import SharedStream, shared_streams

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"
MINDAUDIO = CORPUS / "lossmonitor-8-ranks-one-stream_mindaudio-105" / "log"
PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "monitor.py")
SAID = "repeats step 402 8 times with different losses: several ranks seem to write one untagged stream"


def _rows(steps: list[float], losses: list[float], file: str = "train.log", rank: int = 0) -> pd.DataFrame:
    n = len(steps)
    return pd.DataFrame(
        {"file": [file] * n, "rank": [rank] * n, "epoch": [1.0] * n, "step": steps, "loss": losses, "offset": range(n)}
    )


def test_the_real_eight_rank_stream_is_told() -> None:
    [shared] = shared_streams(read_run(MINDAUDIO).metrics)
    assert shared == SharedStream(0, "train.log", 402.0, 8)
    assert SAID in shared.message() and "mpirun --tag-output" in shared.message()


@pytest.mark.parametrize(
    "entry",
    [
        "lossmonitor-appended-runs_ali-edcn",  # a job restarted into the same file: its steps repeat far apart
        "msrun-dp8-cpu_ok",  # one file per rank
        "wenet-train-and-cv-batches-rank-suffix_wenet-941",  # one stream whose lines name their ranks
    ],
)
def test_ordinary_logs_are_not_told_a_shared_stream(entry: str) -> None:
    import json

    expect = json.loads((CORPUS / entry / "expect.json").read_text(encoding="utf-8"))
    assert shared_streams(read_run(CORPUS / entry / expect["watch_path"]).metrics) == []


def test_a_line_printed_twice_or_steps_without_numbers_are_not_told() -> None:
    assert shared_streams(_rows([1, 1, 2, 2, 3, 3], [2.0, 2.0, 1.5, 1.5, 1.2, 1.2])) == []  # same value again
    assert shared_streams(_rows([float("nan")] * 4, [2.0, 1.9, 1.8, 1.7])) == []  # no step printed
    assert shared_streams(pd.DataFrame()) == []


@settings(max_examples=100, deadline=None)
@given(ranks=st.integers(2, 16), steps=st.integers(1, 30), drift=st.floats(0.0, 0.9), seed=st.integers(0, 2**32 - 1))
def test_k_interleaved_ranks_are_told_k_times(ranks: int, steps: int, drift: float, seed: int) -> None:
    """K ranks printing each step once, each a little late by its own delay (up to `drift` of a step): their
    rows of neighbouring steps mix in the stream, and the stream is told, K times a step."""
    rng = np.random.default_rng(seed)
    delay = rng.random(ranks) * drift
    printed = sorted((s + delay[r], s) for s in range(1, steps + 1) for r in range(ranks))
    [shared] = shared_streams(_rows([float(s) for _, s in printed], list(rng.random(len(printed)) + 1.0)))
    assert (shared.times, shared.rank) == (ranks, 0)


@settings(max_examples=100, deadline=None)
@given(steps=st.lists(st.integers(0, 10**6), min_size=1, max_size=200, unique=True))
def test_one_row_a_step_is_never_told(steps: list[int]) -> None:
    assert shared_streams(_rows([float(s) for s in sorted(steps)], [1.0 + i for i in range(len(steps))])) == []


def test_watch_once_says_it_in_one_line(capsys: pytest.CaptureFixture) -> None:
    main(["watch", str(MINDAUDIO), "--once"])
    said = [line for line in capsys.readouterr().out.splitlines() if "untagged stream" in line]
    assert len(said) == 1 and SAID in said[0]


def test_the_monitor_says_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("SHARDSCOPE_RECORDINGS", str(tmp_path / "recordings"))
    folder = Path(shutil.copytree(MINDAUDIO, tmp_path / "log"))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params["logdir"] = str(folder)
    at.run()
    assert not at.exception, at.exception
    assert [w.value for w in at.warning if "untagged stream" in w.value] == [
        SharedStream(0, "train.log", 402.0, 8).message()
    ]


def test_a_live_watch_says_it_with_its_status_table(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from core.cli.watch import follow
    from core.logs import RunWatcher

    folder = Path(shutil.copytree(MINDAUDIO, tmp_path / "log"))
    watcher = RunWatcher(folder, polling=True)
    watcher.start()
    deadline = time.monotonic() + 30
    while watcher.catching_up is not None and time.monotonic() < deadline:  # the log read to its end
        time.sleep(0.05)
    ticks = iter([False, True])
    try:
        follow(watcher, 0.1, 60.0, until=lambda: next(ticks))
    finally:
        watcher.stop()
    out = capsys.readouterr().out.splitlines()
    said = [i for i, line in enumerate(out) if SAID in line]
    assert len(said) == 1 and out[said[0] + 1].startswith("rank  state")  # the line, then the table
