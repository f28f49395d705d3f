"""Issue 30, round 11: failure known gaps of the real-log corpus closed, each by a rule on a line's shape and checked
on the real lines of its log (the source beside each), on every read path:

- Open MPI's signal report (mindspore-lab/mindyolo#242): its head `*** Process received signal ***` says a signal
  came, not which ("signal received", weight 1); its next line `Signal: Segmentation fault (11)` names it, also
  behind the `[host:pid] ` prefix of a paste that indents every line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import failure_weight, fatal_reason
from tests.helpers import READ_PATHS, entry_lines, one_log

PATHS = READ_PATHS
# github.com/mindspore-lab/mindyolo/issues/242: one wrapped row, its step-time line, Open MPI's report, all indented
MINDYOLO_242 = "mindyolo-wrapped-epoch-step-row-then-segfault-signal-11_mindyolo-242"


def test_open_mpi_s_report_head_says_less_than_its_signal_line() -> None:
    lines = entry_lines(MINDYOLO_242)
    head, signal = lines[3], lines[4]  # `  [m2301007135:374576] *** Process received signal ***`, `... Signal: ...`
    assert fatal_reason(head) == "signal received" and fatal_reason(signal) == "signal"
    assert failure_weight(head.decode().strip()) < failure_weight(signal.decode().strip())
    # the prefix is Open MPI's `[host:pid] `: other brackets before `Signal:` are no report
    assert fatal_reason(b"[INFO] Signal: Segmentation fault (11)") is None
    assert fatal_reason(b"  [m2301007135:374576] Signal: handler installed for the run") is None


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_indented_report_is_named_by_its_signal_on_every_path(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, entry_lines(MINDYOLO_242)), settings=PATHS[path])
    assert list(failed_ranks(snap)) == [0]
    [group] = diagnose(snap).failure_groups
    assert "Signal: Segmentation fault (11)" in group.exception


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_report_s_head_alone_still_ends_the_rank(tmp_path: Path, path: str) -> None:
    # a paste that keeps only the report's first line (tactcomplabs/rev#78's, behind mindyolo-242's prefix)
    snap = read_run(one_log(tmp_path, entry_lines(MINDYOLO_242)[3:4]), settings=PATHS[path])
    assert "Process received signal" in failed_ranks(snap)[0]
