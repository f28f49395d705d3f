"""A torchrun report cut by a live tick is judged as one read judges it (issue 30, cutreport).

torch.distributed.elastic's report (`ChildFailedError:` header, `Failures:` blocks, `Root Cause` block) is read over
two live ticks cut at any byte between its header and the end of its Root Cause block: the errors (their ranks and
log times), the failed ranks and the failure groups `diagnose` makes are one read's (core.logs.rows.childfailed reads
a block's heading and `time` field in the tail of earlier reads too). Before this change a cut between the Root Cause
heading and its `rank` line left the header its file's rank (amvur-2: rank 0 failed with rank 2, a failure group of
its own), and a cut inside a block before its `time` line left that task without its time (speculators-1115).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.reader import RunReader
from core.logs.rows.snapshot import RunSnapshot
from tests.helpers import REAL_LOGS, bits

# real corpus logs (tests/fixtures/real_logs/<entry>/SOURCE.md) with a torchrun report: its header, then its
# `Failures:` blocks (or `<NO OTHER FAILURES>`) and its `Root Cause (first observed failure):` block
AMVUR = "childfailederror-report-flattened-rank2-sigkill-no-rows_amvur-2"  # flattened, header first
SPECULATORS = "torchrun-childfailed-failures-ranks-3-0-2-root-cause-rank-1-npu_speculators-1115"
ENTRIES = (
    AMVUR,
    SPECULATORS,
    "torchrun-childfailed-report-4-ranks_insightface-2182",
    "torchrun-two-childfailed-reports-ranks-0-3-4-slurm_accelerate-1519",
    "torchrun-311-carets-childfailed-root-cause-rank-0-sigkill_cppo-6",
    "timm-2-npu-ddp-param-mismatch-childfailederror-tbe-disappeared_ascend-pytorch-70",
    "torchrun-2-ranks-metriclogger-total-loss-then-typeerror-save-model-childfailederror_msfreb-train-log-err",
)
_MTIME = 1_700_000_000.0  # both copies' mtime: a group timed by the file's mtime has one time either way


def _log(entry: str) -> tuple[str, bytes, int, int]:
    """The entry's log file holding the report (name, bytes) and the span of the report: its header line's start,
    the end of the line after its Root Cause block's `rank` line (the file's end when the log ends before it)."""
    [path] = [p for p in (REAL_LOGS / entry / "log").rglob("*") if p.is_file() and b"Root Cause" in p.read_bytes()]
    data = path.read_bytes()
    head = data.rfind(b"\n", 0, data.index(b"ChildFailedError:")) + 1
    rank = data.find(b"rank", data.index(b"Root Cause", head))
    end = -1 if rank < 0 else data.find(b"\n", data.index(b"\n", rank) + 1)
    return path.name, data, head, len(data) if end < 0 else end + 1


def _live_and_once(root: Path, name: str, data: bytes, cut: int) -> tuple[RunSnapshot, RunSnapshot]:
    """`data` read live in two ticks cut at byte `cut` (a snapshot taken between them, as the Monitor does), and
    read once: (live, once)."""
    (root / "live").mkdir()
    (root / "once").mkdir()
    live_path, once_path = root / "live" / name, root / "once" / name
    live_path.write_bytes(data[:cut])
    os.utime(live_path, (_MTIME, _MTIME))  # (a tick that adds nothing keeps the mtime the first one saw)
    reader = RunReader(live_path.parent)
    reader.refresh()
    reader.snapshot()
    with live_path.open("ab") as f:
        f.write(data[cut:])
    once_path.write_bytes(data)
    for path in (live_path, once_path):
        os.utime(path, (_MTIME, _MTIME))
    reader.refresh()
    once = RunReader(once_path.parent, one_shot=True)
    once.refresh()
    return reader.snapshot(), once.snapshot()


def _judged(snap: RunSnapshot) -> tuple:
    """What the Monitor and `diagnose` show of a run's failures: its errors but the observation time (a live read
    stamps when it saw a line), its failed ranks, `diagnose`'s failure groups and the job's errors."""
    found = diagnose(snap)
    return bits(snap.errors.drop(columns=["time"])), failed_ranks(snap), found.failure_groups, found.job_errors


def _same_judgement(root: Path, entry: str, cut: int) -> None:
    name, data, _, _ = _log(entry)
    live, once = _live_and_once(root, name, data, cut)
    assert _judged(live) == _judged(once), f"{entry} cut at byte {cut}"


def test_a_report_cut_at_every_byte_is_judged_as_one_read(tmp_path: Path) -> None:
    """amvur-2's flattened report (its header, `<NO OTHER FAILURES>`, the Root Cause block naming rank 2), cut at
    every byte from its header to its end: the header is the job's word and rank 2 the one failed rank each time
    (before: a cut between the Root Cause heading and `rank2 (local rank: 2)` left rank 0 failed)."""
    _, data, head, end = _log(AMVUR)
    assert (head, end) == (0, len(data))
    for cut in range(head, end + 1):
        (tmp_path / str(cut)).mkdir()
        _same_judgement(tmp_path / str(cut), AMVUR, cut)


def test_the_left_out_case_holds(tmp_path: Path) -> None:
    """The cut tests/test_issue30_carry12.py left out, pinned: amvur-2 read up to inside its Root Cause block, then
    the rest; the header is the job's (rank -1) and the failed ranks are rank 2 alone, as in one read."""
    name, data, _, _ = _log(AMVUR)
    cut = data.index(b"rank2 (local rank: 2)")
    live, once = _live_and_once(tmp_path, name, data, cut)
    header = live.errors[live.errors["message"].str.endswith("ChildFailedError:")]
    assert header["rank"].tolist() == [-1]
    assert list(failed_ranks(live)) == list(failed_ranks(once)) == [2]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=st.sampled_from(ENTRIES), where=st.floats(0, 1))
@example(entry=SPECULATORS, where=0.0)  # the header's line start
@example(entry=SPECULATORS, where=1.0)  # the end of the Root Cause block
@example(entry=SPECULATORS, where=0.16)  # inside `[1]:` before its `time` line (log time lost before)
@example(entry=SPECULATORS, where=0.99)  # between the Root Cause heading and its `rank` line
def test_a_report_cut_anywhere_is_judged_as_one_read(
    tmp_path_factory: pytest.TempPathFactory, entry: str, where: float
) -> None:
    """Seven real reports, each cut at a byte between its header and the end of its Root Cause block."""
    _, _, head, end = _log(entry)
    _same_judgement(tmp_path_factory.mktemp("cutreport"), entry, head + int(where * (end - head)))


def test_the_reports_hold_what_is_cut() -> None:
    """No empty test: each log holds the header before its Root Cause block, which names a rank (but insightface-
    2182's, cut before it: its header stays the file's rank however it is read)."""
    for entry in ENTRIES:
        _, data, head, end = _log(entry)
        report = data[head:end]
        assert report.index(b"ChildFailedError:") < report.index(b"Root Cause")
        assert (report.rfind(b"rank") > report.index(b"Root Cause")) == ("insightface" not in entry)
