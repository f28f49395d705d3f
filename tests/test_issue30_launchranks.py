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

`LAUNCHER_ONLY` lists the entries where they disagree today: each names a failing rank only in a launcher's report
(torchrun's ChildFailedError / `local_rank: N` lines, mpirun's `rank N ... exited on signal`, Paddle's `ABORT!!!`
trainer list, srun's `task N` lines, a spawn's `process N terminated`, msrun's worker report, an LSF job report),
and its expect.json counts such a rank in `line_ranks`, not in `ranks` (README: a single file is rank 0). Making
those ranks ranks of the run changes the corpus's `ranks` reading of these entries (expect.json, watch's
`ranks=N`, diagnose's `ranks`): a decision on the corpus convention, left open. Each is marked
`xfail(strict=True)`, so a rule that makes its views agree turns it red until it leaves the list.
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

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"
SPECULATORS = "torchrun-childfailed-failures-ranks-3-0-2-root-cause-rank-1-npu_speculators-1115"

LAUNCHER_ONLY = frozenset(
    {
        "childfailederror-report-flattened-rank2-sigkill-no-rows_amvur-2",
        "childfailederror-report-middle-ranks-4-7-root-cause-rank-0_slrt-66",
        "colossalai-rich-wrapped-init-then-sigterm-and-exitcode-minus-9-local-rank-3_colossalai-3514",
        "deepspeed-chat-16-ranks-device-mismatch-sigkill_deepspeedexamples-check-7b",
        "deepspeed-launcher-childfailederror-ranks-1-2-3-cut_deepspeed-4715",
        "deit-style-metric-logger-rows-then-launch-failed-exitcode-1-local-rank-2_repvit-65",
        "detectron2-launch-spawn-process-2-terminated_detr-282",
        "fairseq-oom-skipping-batch-then-spawn-process-3-terminated_fairseq-869",
        "lsf-job-report-deepspeed-4-ranks-swanlab-error-no-steps_deepseek-training-train-out",
        "mpirun-rank-1-killed-signal-9-masked-pid_aware-of-the-history-2",
        "mpirun-rank-7-killed-signal-9_horovod-469",
        "mpirun-tagged-backtrace-rank-1-signal-6-aborted_horovod-1350",
        "msrun-launcher-timeout-node-3-scheduler-grep-lines_mindnlp-1983",
        "paddle-launch-abort-rank-3-train-job-failed_paddle-33074",
        "paddle-launch-abort-ranks-1-2-3_paddleclas-727",
        "paddle-launch-abort-two-trainers-rank-0-1-one-line_paddle-26867",
        "srun-task-exit-then-killed-16-tasks_deit-102",
        "srun-task-ranges-exited-after-nccl-error_parlai-3084",
        "torch-glog-E-failed-exitcode-minus-9-local-rank-2-chinese-title_time-r1-9",
        "torch-glog-E-prefix-failed-exitcode-minus-9-local-rank-5-carets_robomamba-10",
        SPECULATORS,
        "torchrun-childfailed-report-4-ranks_insightface-2182",
        "torchrun-local-rank-3-killed_egovlp-21",
        "torchrun-oom-local-rank-1-exitcode-1_belle-257",
        "torchrun-two-childfailed-reports-ranks-0-3-4-slurm_accelerate-1519",
    }
)
GAP = (
    "a rank a launcher's report names failed has no row in the rank table: expect.json counts it in `line_ranks`, "
    "not `ranks` (the corpus convention a rule making it a rank of the run would change)"
)


def _entries() -> list[Path]:
    return sorted(p.parent for p in CORPUS.glob("*/expect.json"))


def _params() -> list[Any]:
    marks = {name: [pytest.mark.xfail(strict=True, reason=GAP)] for name in LAUNCHER_ONLY}
    return [pytest.param(e, marks=marks.get(e.name, []), id=e.name) for e in _entries()]


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


def test_the_gap_list_names_corpus_entries() -> None:
    """A renamed or removed entry leaves the list, so no mark outlives its entry."""
    assert {e.name for e in _entries()} >= LAUNCHER_ONLY
