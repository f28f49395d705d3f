"""The likely root cause is a rank that failed of its own, never one its launcher only SIGTERMed after it
(core.logs.judgement.victims; issue 30, round 10's build set).

Real lines: OrionZJ/Fabric-Defect-Detection, log/workerlog.0-3 at 7df581993bbdaeca2c7f321023fd32b14d63ed16
(PaddleDetection RT-DETR under `paddle.distributed.launch`, 4x V100 on AI Studio, the run of 2023-06-24 11:20;
the corpus entry paddledet-rtdetr-4-workerlogs-gather-assert-cuda-719-rank0-sigterm-others_fabric-defect-detection-
workerlog). Rank 0 fails first: a gather kernel's assertion, `CUDA error(719)`, SIGABRT raised by itself; the launcher
(PID 686) then SIGTERMs ranks 1-3. A copy's mtimes are all the first-time evidence, and they may say rank 1 ended
first: the choice must not rest on them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.alerts.rules import AlertRule, judge
from core.cli.diagnose import report
from core.cli.watch import failed_line
from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.victims import received_only

ASSERTION = (  # workerlog.0 line 31 (the first of the five kept; 120 in the original)
    "Error: /paddle/paddle/phi/kernels/funcs/gather.cu.h:68 Assertion `index_value >= 0 && index_value < "
    "input_dims[j]` failed. The index is out of bounds, please check whether the dimensions of index and input meet "
    "the requirements. It should be less than [300] and greater than or equal to 0, but received [0]"
)
CUDA_TRACEBACK = [  # workerlog.0, the traceback's head and its last frame and exception line
    "Traceback (most recent call last):",
    '  File "/home/aistudio/work/PaddleDetection/tools/train.py", line 209, in <module>',
    "    main()",
    '  File "/opt/conda/envs/python35-paddle120-env/lib/python3.9/site-packages/paddle/tensor/creation.py", line 405, '
    "in _to_tensor_non_static",
    "    return core.eager.Tensor(",
    "OSError: (External) CUDA error(719), unspecified launch failure. ",
]
SUMMARY = ["----------------------", "Error Message Summary:", "----------------------"]
ABORT = [  # workerlog.0: rank 0's own SIGABRT (sent by its own PID 766)
    "FatalError: `Process abort signal` is detected by the operating system.",
    '  [TimeInfo: *** Aborted at 1687576999 (unix time) try "date -d @1687576999" if you are using GNU date ***]',
    "  [SignalInfo: *** SIGABRT (@0x3e8000002fe) received by PID 766 (TID 0x7f9b6946c700) from PID 766 ***]",
]
TERM = {  # workerlog.1-3: the launcher's (PID 686) SIGTERM
    rank: [
        "FatalError: `Termination signal` is detected by the operating system.",
        f'  [TimeInfo: *** Aborted at {at} (unix time) try "date -d @{at}" if you are using GNU date ***]',
        f"  [SignalInfo: *** SIGTERM (@0x3e8000002ae) received by PID {pid} (TID {tid}) from PID 686 ***]",
    ]
    for rank, at, pid, tid in (
        (1, 1687577001, 768, "0x7ff0b57ad700"),
        (2, 1687577002, 770, "0x7f2c0d2d6700"),
        (3, 1687577002, 772, "0x7f5d6a3c4700"),
    )
}
HEAD = "W0624 11:20:45.802386   768 reducer.cc:622] All parameters are involved in the backward pass."  # workerlog.1


def _write(folder: Path, logs: dict[int, list[str]], mtimes: dict[int, float]) -> Path:
    """workerlog.N per rank, as Paddle's launcher writes them, each with the given mtime."""
    folder.mkdir(exist_ok=True)
    for rank, lines in logs.items():
        path = folder / f"workerlog.{rank}"
        path.write_text("\n".join([HEAD, *lines]) + "\n", encoding="utf-8")
        os.utime(path, (mtimes[rank], mtimes[rank]))
    return folder


def _paddle_run(folder: Path, mtimes: dict[int, float]) -> Path:
    rank0 = [ASSERTION, *CUDA_TRACEBACK, *SUMMARY, *ABORT]
    return _write(folder, {0: rank0, **{r: [*SUMMARY, *lines] for r, lines in TERM.items()}}, mtimes)


T0 = 1_687_577_000.0


@pytest.mark.parametrize(
    "mtimes",
    [
        {0: T0 + 6, 1: T0, 2: T0 + 1, 3: T0 + 2},  # the copy's order: rank 1 written first, rank 0 last
        {0: T0, 1: T0 + 1, 2: T0 + 2, 3: T0 + 3},
        {0: T0 + 9, 1: T0 + 9, 2: T0 + 9, 3: T0 + 9},
    ],
)
def test_the_rank_with_its_own_assertion_wins_over_sigtermed_ranks_whatever_the_mtimes(
    tmp_path: Path, mtimes: dict[int, float]
) -> None:
    snap = read_run(_paddle_run(tmp_path, mtimes))
    d = diagnose(snap)
    assert sorted(r for g in d.failure_groups for r in g.ranks) == [0, 1, 2, 3]
    assert d.root_cause == 0
    stopped = {tuple(g.ranks): g.stopped for g in d.failure_groups}
    assert stopped == {(0,): False, (1, 2, 3): True}
    assert "likely root cause: rank 0" in report(d)
    assert d.to_dict()["root_cause_rank"] == 0
    failed = [a for a in judge(snap, "paddle", running=False) if a.rule == AlertRule.RANK_FAILED]
    assert [a.ranks[0] for a in failed] == [0] and failed[0].message.startswith("rank 0 failed first")


def test_when_every_rank_only_got_sigterm_the_earliest_stays_the_answer(tmp_path: Path) -> None:
    logs = {r: [*SUMMARY, *lines] for r, lines in TERM.items()}
    d = diagnose(read_run(_write(tmp_path, logs, {1: T0 + 5, 2: T0, 3: T0 + 3})))
    assert [(g.ranks, g.stopped) for g in d.failure_groups] == [([1, 2, 3], True)]
    assert d.root_cause == 2  # no rank has a cause of its own: the first to end, as before


def test_a_rank_that_raised_sigabrt_itself_is_no_victim(tmp_path: Path) -> None:
    # rank 0 keeps only its signal report (no assertion, no traceback): SIGABRT from its own PID is its own failure
    logs = {0: [*SUMMARY, *ABORT], **{r: [*SUMMARY, *lines] for r, lines in TERM.items()}}
    d = diagnose(read_run(_write(tmp_path, logs, {0: T0 + 8, 1: T0, 2: T0 + 1, 3: T0 + 2})))
    assert d.root_cause == 0
    assert not received_only(ABORT)


@pytest.mark.parametrize(
    ("lines", "victim"),
    [
        (TERM[1], True),
        (TERM[1][:1], True),  # Paddle's word alone
        (TERM[1][2:], True),  # the signal report alone: SIGTERM sent by another PID
        (TERM[1][1:2], False),  # only the report's time line: it names no signal, nobody stopped the rank
        (ABORT, False),
        ([*TERM[2], ASSERTION], False),  # a failure of its own beside the SIGTERM
        ([*TERM[2], CUDA_TRACEBACK[-1]], False),
        ([], False),
    ],
)
def test_received_only_reads_each_line_by_its_kind(lines: list[str], victim: bool) -> None:
    assert received_only(lines) is victim


def test_watch_names_the_rank_that_failed_of_its_own_as_diagnose_does(tmp_path: Path) -> None:
    # as in simonsLiang/PReNet_paddle's workerlogs (corpus: paddle-workerlogs-rank1-notimplemented-rank0-sigterm_
    # prenet-paddle): rank 0 only SIGTERMed by the launcher, rank 1 failed of its own
    logs = {0: [*SUMMARY, *TERM[1]], 1: [ASSERTION, *CUDA_TRACEBACK, *SUMMARY, *ABORT]}
    snap = read_run(_write(tmp_path, logs, {0: T0, 1: T0 + 4}))
    assert diagnose(snap).root_cause == 1
    line = failed_line(snap)
    assert line.startswith("failed ranks: 0, 1 (rank 1: ") and "Termination signal" not in line
    # every rank only stopped: the lowest is named, as before
    only = read_run(_write(tmp_path / "only", {r: [*SUMMARY, *TERM[r]] for r in (2, 3)}, {2: T0, 3: T0}))
    assert failed_line(only).startswith("failed ranks: 2, 3 (rank 2: FatalError: `Termination signal`")
