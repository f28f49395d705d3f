"""Issue 30 ("one judgement serves watch, diagnose and the Monitor"): a rank named as failed or as the likely root
cause is a rank of the run in every view, so no view contradicts another.

Found in stop 46's review of the Monitor on the corpus entry
`torchrun-childfailed-failures-ranks-3-0-2-root-cause-rank-1-npu_speculators-1115` (torchrun's ChildFailedError
report naming ranks 3, 0, 2 under `Failures:` and rank 1 as `Root Cause`): the page said "rank 1 failed first" while
its headline counted 1 rank and its rank list held rank 0 alone.

The run's ranks are the rows of `rank_status` (the rank table `watch --once` prints and the Monitor shows) and
`snap.ranks` (the Monitor's headline count and rank pills, `diagnose --json`'s `ranks`). The ranks named as failed:
watch's `failed ranks:` line and the rank it quotes (core.cli.watch.failed_line), diagnose's failure groups, their
first ranks, its hung ranks and its root cause (`root_cause_rank`; the Monitor's "rank N failed first" strip and its
failure panel read the same `Diagnosis`), and the Monitor's "look at first" list (core.logs.judgement.lookat).

The 25 entries where they disagreed until stop 47 named a failing rank only in a launcher's report (torchrun's
ChildFailedError / `local_rank: N` lines, mpirun's `rank N ... exited on signal`, Paddle's `ABORT!!!` trainer list,
srun's `task N` lines, a spawn's `process N terminated`, msrun's worker report, an LSF job report). The convention
changed (tests/fixtures/real_logs/README.md, core.logs.rows.runranks): a rank a launcher's report names is a rank of
the run, with its status; the file's own rank stays one when the file has lines of its own. Their expect.json say so
(each SOURCE.md: "Corrected (stop 47, launchranks2)"), and every entry is held to it here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.cli.watch import failed_line
from core.logs import RunSnapshot, rank_status, read_run
from core.logs.judgement.diagnose import Diagnosis, diagnose
from core.logs.judgement.lookat import look_at
from core.logs.judgement.status import failed_ranks
from tests.helpers import READ_PATHS, cut_tick_and_once, read_entry

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"
SPECULATORS = "torchrun-childfailed-failures-ranks-3-0-2-root-cause-rank-1-npu_speculators-1115"


def _entries() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/expect.json"))


def _params() -> list[Any]:
    return [pytest.param(e, id=e.name) for e in _entries()]


def _snapshot(entry: Path) -> RunSnapshot:
    exp = json.loads((entry / "expect.json").read_text(encoding="utf-8"))
    return read_run(entry / exp["watch_path"])


def named_as_failed(snap: RunSnapshot, diag: Diagnosis) -> dict[str, set[int]]:
    """Every rank a view names as failed, hung or the root cause, by the view that names it."""
    quoted = re.search(r"\(rank (\d+):", failed_line(snap))
    empty = np.empty((0, 0))
    return {
        "watch failed ranks": set(failed_ranks(snap)),
        "watch's quoted rank": {int(quoted.group(1))} if quoted else set(),
        "diagnose failure groups": {r for g in diag.failure_groups for r in g.ranks},
        "diagnose groups' first ranks": {g.first_rank for g in diag.failure_groups},
        "diagnose hung": {h.rank for h in diag.hung},
        "root cause (Monitor's 'failed first')": set() if diag.root_cause is None else {diag.root_cause},
        "Monitor's look-at list": {a.rank for a in look_at(diag, empty, np.empty(0))},
    }


@pytest.mark.parametrize("entry", _params())
def test_a_rank_named_failed_is_a_rank_of_the_run_in_every_view(entry: Path) -> None:
    snap = _snapshot(entry)
    table = rank_status(snap)
    run = {int(r) for r in table["rank"]} if not table.empty else set()
    listed = {int(r) for r in snap.ranks["rank"]} if not snap.ranks.empty else set()
    diag = diagnose(snap)
    assert run == listed and diag.ranks == len(run), f"rank table {sorted(run)}, snapshot {sorted(listed)}"
    outside = {view: sorted(ranks - run) for view, ranks in named_as_failed(snap, diag).items() if ranks - run}
    assert not outside, f"the run's ranks are {sorted(run)}, yet {outside}"


# ----------------------------------------------------------------------------- the rule on the real lines

# each a lone stream of a launcher's words only (the lines read in each SOURCE.md): the reported ranks are its ranks
PASTES = {
    # github.com/Kay1794/Aware-of-the-history/issues/2: `Primary job  terminated normally, ...`, then mpirun's
    # `mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed).`
    "mpirun-rank-1-killed-signal-9-masked-pid_aware-of-the-history-2": [1],
    # github.com/horovod/horovod/issues/469: the same report behind a pasted `/-----` rule, rank 7
    "mpirun-rank-7-killed-signal-9_horovod-469": [7],
    # github.com/horovod/horovod/issues/1350: rank 1's `[1,1]<stderr>:` backtrace lines, then mpirun's report of rank 1
    "mpirun-tagged-backtrace-rank-1-signal-6-aborted_horovod-1350": [1],
    # github.com/PaddlePaddle/Paddle/issues/33074: `launch_utils.py:307] terminate all the procs`, then `ABORT!!!`
    "paddle-launch-abort-rank-3-train-job-failed_paddle-33074": [3],
    # github.com/ZhehengJiangLancaster/AMVUR/issues/2: the `ChildFailedError:` header, the report flattened, rank 2
    "childfailederror-report-flattened-rank2-sigkill-no-rows_amvur-2": [2],
    # github.com/OpenGVLab/EgoVLP/issues/21: `failed (exitcode: -9) local_rank: 3`, then `raise ChildFailedError(`
    "torchrun-local-rank-3-killed_egovlp-21": [3],
    # the glog-prefixed `failed (exitcode: -9) local_rank: 2`, then torchrun's own traceback (Time-R1#9)
    "torch-glog-E-failed-exitcode-minus-9-local-rank-2-chinese-title_time-r1-9": [2],
}
# each with lines of its own (a rank 0's init lines, rows, its own traceback) before the report: rank 0 stays
OWN = {
    # hpcaitech/ColossalAI#3514: ColossalAI's wrapped `environment is initialized, data parallel size: 4` lines
    "colossalai-rich-wrapped-init-then-sigterm-and-exitcode-minus-9-local-rank-3_colossalai-3514": [0, 3],
    # DeiT-style `Epoch: [7]  [   0/1251] ... loss: 5.2755` rows, then `failed (exitcode: 1) local_rank: 2` (RepViT#65)
    "deit-style-metric-logger-rows-then-launch-failed-exitcode-1-local-rank-2_repvit-65": [0, 2],
    # a traceback's tail `torch.cuda.OutOfMemoryError: CUDA out of memory...`, then `local_rank: 1` (BELLE#257)
    "torchrun-oom-local-rank-1-exitcode-1_belle-257": [0, 1],
}


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize(("entry", "ranks"), sorted({**PASTES, **OWN}.items()))
def test_the_run_s_ranks_are_the_reported_ones_and_the_file_s_own_with_lines_of_its_own(
    tmp_path: Path, path: str, entry: str, ranks: list[int]
) -> None:
    snap = read_entry(tmp_path, entry, path)
    assert sorted(int(r) for r in rank_status(snap)["rank"]) == ranks
    reported = [r for r in ranks if r != 0 or entry in PASTES]
    assert set(reported) <= set(failed_ranks(snap)) <= set(ranks)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_report_block_s_traceback_field_is_its_rank_s_and_the_launcher_s_traceback_the_job_s(
    tmp_path: Path, path: str
) -> None:
    """speculators#1115 (lines 1-3 the launcher's `launcher/api.py` frame cut at the start, `raise ChildFailedError(`,
    the header; rank 0's block `traceback : Signal 9 (SIGKILL) received by PID 14689`, rank 2's `traceback : Signal
    15 (SIGTERM) received by PID 14691`): each field is its block's rank's reason, the traceback the job's."""
    snap = read_entry(tmp_path, SPECULATORS, path)
    table = rank_status(snap).set_index("rank")
    assert list(table.index) == [0, 1, 2, 3] and set(table["state"]) == {"crashed"}
    assert "Signal 9 (SIGKILL)" in table.loc[0, "detail"] and "Signal 15 (SIGTERM)" in table.loc[2, "detail"]
    diag = diagnose(snap)
    assert diag.root_cause == 1  # the Root Cause block's, the earliest time (13:02:58, with rank 3)
    assert any("ChildFailedError" in j for j in diag.job_errors)
    assert not any(g.exception.startswith("torch.distributed.elastic") for g in diag.failure_groups)


@pytest.mark.parametrize("cut_line", [26, 28])
def test_a_field_read_a_tick_after_its_block_s_rank_line_is_still_that_rank_s(tmp_path: Path, cut_line: int) -> None:
    data = next((CORPUS / SPECULATORS / "log").glob("*.log")).read_bytes()
    cut = sum(len(line) for line in data.splitlines(keepends=True)[: cut_line - 1])  # before line `cut_line`
    live, once = cut_tick_and_once(tmp_path, "train.log", data, cut)
    for snap in (live, once):
        assert failed_ranks(snap)[2].startswith("traceback : Signal 15 (SIGTERM)")


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_report_s_header_stands_for_its_root_cause_only_while_that_rank_is_unread(
    tmp_path: Path, path: str
) -> None:
    """AMVUR#2's report names its Root Cause rank 2: the header is the job's; insightface#2182's is cut before its
    Root Cause's rank: the header stays the stream's rank 0's failure (its expectation: ranks 0-3 failed)."""
    amvur = read_entry(tmp_path / "a", "childfailederror-report-flattened-rank2-sigkill-no-rows_amvur-2", path)
    assert sorted(failed_ranks(amvur)) == [2] and diagnose(amvur).root_cause == 2
    insight = read_entry(tmp_path / "i", "torchrun-childfailed-report-4-ranks_insightface-2182", path)
    assert "ChildFailedError" in failed_ranks(insight)[0]
    assert sorted(int(r) for r in rank_status(insight)["rank"]) == [0, 1, 2, 3]
