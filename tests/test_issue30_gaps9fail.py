"""Issue 30, round 9: failure and rank known gaps of the real-log corpus closed, each by a rule on a line's shape and
checked on the real lines of its log (the source beside each), on every read path:

- torchelastic's JSON event record `{"name": "torchelastic.worker.status.FAILED", ..., "global_rank": 2, ...}`
  (ultralytics/yolov5#4409): the `torchelastic` launcher report, naming that global rank;
- a lone stream opening with a launcher's reports of failed tasks and holding nothing of a rank but them
  (yolov5#4409's events, Lightning-AI/litData#340's flattened ChildFailedError rows for ranks 2-7): its ranks are the
  reported tasks, so watch counts the ranks the judgement names (not a rank 0 of its own beside them); lines of its
  own before the report (PaddleClas#727) or a report naming the file's own rank (SLRT#66) keep the file's rank among
  the run's ranks, beside the reported ones (since stop 47 the reported ranks are ranks of the run there too:
  core.logs.rows.runranks);
- a traceback after a hole of NULs (a file truncated under a running writer: the bytes before the hole are another
  launch's) supersedes one before it (github.com/269652/neuroslm training.err).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import rank_status, read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.taskends import task_end
from tests.helpers import READ_PATHS, REAL_LOGS, entry_lines, one_log, read_entry

PATHS = READ_PATHS
# github.com/ultralytics/yolov5/issues/4409: the two whole JSON event lines of the pasted output
YOLO_4409 = "torchelastic-json-events-global-ranks-2-3-failed_yolov5-4409"
# github.com/Lightning-AI/litData/issues/340: CloudWatch's export of torchrun's report, one row per failed rank
LITDATA_340 = "cloudwatch-pipe-prefixed-childfailed-report-ranks-2-7-sigabrt_litdata-340"
# github.com/FangyunWei/SLRT/issues/66: torchrun's ChildFailedError report, entries [4]-[7] and the Root Cause [0]
SLRT_66 = "childfailederror-report-middle-ranks-4-7-root-cause-rank-0_slrt-66"
# github.com/PaddlePaddle/PaddleClas/issues/727: paddle.distributed.launch's config echo, then its ABORT report
PADDLE_727 = "paddle-launch-abort-ranks-1-2-3_paddleclas-727"
# a loss line before the reports (MindSpore's LossMonitor shape): the stream then has a rank of its own
LOSS = b"epoch: 1 step: 1, loss is 2.5"


def test_a_torchelastic_failed_event_names_its_global_rank() -> None:
    lines = entry_lines(YOLO_4409)
    ends = [task_end(line) for line in lines]
    assert [(e.launcher, e.ranks, e.reason) for e in ends if e] == [
        ("torchelastic", (2,), "worker.status.FAILED"),
        ("torchelastic", (3,), "worker.status.FAILED"),
    ]
    assert ends[0] is not None and ends[0].node == "job-155b782d-12d0-457b-ada3-ee678ed0e091"
    # the same record of a worker that ended well names no failure
    assert task_end(lines[0].replace(b"status.FAILED", b"status.SUCCEEDED")) is None


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(("entry", "ranks"), [(YOLO_4409, [2, 3]), (LITDATA_340, [2, 3, 4, 5, 6, 7])])
def test_a_stream_of_launcher_reports_alone_counts_the_reported_ranks(
    tmp_path: Path, path: str, entry: str, ranks: list[int]
) -> None:
    snap = read_run(one_log(tmp_path, entry_lines(entry)), settings=PATHS[path])
    assert sorted(failed_ranks(snap)) == ranks
    assert sorted(int(r) for r in rank_status(snap)["rank"]) == ranks  # no rank 0 beside them


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(("entry", "failed"), [(SLRT_66, [0, 4, 5, 6, 7]), (PADDLE_727, [1, 2, 3])])
def test_a_stream_of_its_own_rank_keeps_that_rank_beside_the_reported_ones(
    tmp_path: Path, path: str, entry: str, failed: list[int]
) -> None:
    """SLRT#66: torchrun's report cut to entries 4-7 and its `Root Cause` rank 0 (a report naming the file's rank);
    PaddleClas#727: the config echo before `ABORT!!! ... rank=[1, 2, 3]` (lines of its own before the report): the
    file's rank 0 is a rank of the run, as a single file's is, and so is every rank the report names (stop 47)."""
    snap = read_run(one_log(tmp_path, entry_lines(entry)), settings=PATHS[path])
    assert sorted(failed_ranks(snap)) == failed
    assert sorted(int(r) for r in rank_status(snap)["rank"]) == sorted({0, *failed})


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_stream_with_a_row_of_its_own_keeps_its_own_rank(tmp_path: Path, path: str) -> None:
    """The rule is for a stream of reports alone: with a row of its own the stream's rank is a rank of the run (as
    before this round), and the ranks its reports name fail beside it, ranks of the run too (stop 47)."""
    snap = read_run(one_log(tmp_path, [LOSS, *entry_lines(YOLO_4409)]), settings=PATHS[path])
    assert sorted(failed_ranks(snap)) == [2, 3]
    assert sorted(int(r) for r in rank_status(snap)["rank"]) == [0, 2, 3]
    assert rank_status(snap).set_index("rank").loc[0, "n_loss"] == 1


# github.com/269652/neuroslm/blob/db478cd567ca54784b74b71b13f4cd3f92892ddd/training.err: a relaunch's IndentationError,
# then 11 kB of NULs (the file truncated under the running job), then that job's torch.save failure
NEUROSLM = "pipe-step-rows-loss-lm-ppl-then-stderr-torch-save-enforce-fail_neuroslm-training-log-err"


def _err_lines() -> tuple[list[bytes], list[bytes]]:
    """training.err's relaunch traceback (through its exception line) and the job's own (after the hole)."""
    raw = (REAL_LOGS / NEUROSLM / "log" / "training.err").read_bytes()
    before, _, after = raw.partition(b"\x00")
    return before.splitlines(), after.lstrip(b"\x00").splitlines()


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_traceback_after_a_hole_of_nuls_supersedes_the_one_before(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, NEUROSLM, path)
    assert "enforce fail at inline_container.cc" in failed_ranks(snap)[0]
    [group] = diagnose(snap).failure_groups
    # named by its chain's last exception (round 11, core.logs.judgement.naming): the enforce fail was raised while
    # the `ios_base::badbit set` one was handled (`During handling of the above exception, ...`) and ended the run
    assert group.ranks == [0] and group.exception.startswith("RuntimeError: [enforce fail at inline_container.cc")
    assert "IndentationError" in " ".join(snap.errors.loc[snap.errors["kind"] == "error_log", "message"])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_one_launch_s_tracebacks_keep_the_first_as_its_cause(tmp_path: Path, path: str) -> None:
    """The same tracebacks with no hole between them: one launch's, the best-named first stays the group's."""
    before, after = _err_lines()
    [group] = diagnose(read_run(one_log(tmp_path, [*before, *after]), settings=PATHS[path])).failure_groups
    assert group.exception.startswith("IndentationError")


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_traceback_before_a_hole_with_none_after_it_stays_the_failure(tmp_path: Path, path: str) -> None:
    before, _ = _err_lines()
    """A hole with no traceback after it supersedes nothing: the file's one failure stays its rank's end."""
    snap = read_run(one_log(tmp_path, [*before, b"\x00" * 64 + b"[train] saved checkpoints"]), settings=PATHS[path])
    assert failed_ranks(snap)[0].startswith("IndentationError")
