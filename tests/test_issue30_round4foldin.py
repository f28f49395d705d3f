"""Issue 30, round 4's set-aside third after its measure (folded in): one of its three misses, and two entries whose
reason was wrong, closed by general rules, each on its corpus entry's real lines (tests/fixtures/real_logs/<entry>/
SOURCE.md), on every read path:

- jupyter-tqdm-then-typeerror-traceback-in-train-step_mindnlp-1863: IPython (Jupyter) prints the exception's name on
  the traceback's header line (`TypeError                                 Traceback (most recent call last)`): a
  traceback cut off after it is that exception's failure, and its exception line, when it comes, replaces it;
- torchrun-failure-block-fields-exitcode-minus-6-sigabrt_mmpretrain-1837: torchrun's ChildFailedError block names the
  signal that killed the rank (`traceback : Signal 6 (SIGABRT) received by PID N`): diagnose names it;
- torch-launch-child-process-failed-with-no-error-file-local-rank-0_cmt-83: torch.distributed.launch's
  `Child process N (local_rank R) FAILED (exitcode C)` is a launcher report: rank R ended with exit code C.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import CUT_TRACEBACK, failure_weight, ipython_header
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

JUPYTER = "jupyter-tqdm-then-typeerror-traceback-in-train-step_mindnlp-1863"
TORCHRUN = "torchrun-failure-block-fields-exitcode-minus-6-sigabrt_mmpretrain-1837"
LAUNCH = "torch-launch-child-process-failed-with-no-error-file-local-rank-0_cmt-83"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_an_ipython_traceback_s_exception_line_replaces_its_header_s_failure(tmp_path: Path, path: str) -> None:
    lines = entry_lines(JUPYTER)
    header = next(i for i, line in enumerate(lines) if b"Traceback (most recent call last)" in line)
    whole = [*lines[header:], b"", b"TypeError: grad_fn() got an unexpected keyword argument 'labels'"]
    snap = read_run(one_log(tmp_path, whole), settings=READ_PATHS[path])
    assert failed_ranks(snap) == {0: "TypeError: grad_fn() got an unexpected keyword argument 'labels'"}
    assert len(snap.errors) == 1  # one failure, not the header's beside the exception's


def test_ipython_header_reads_only_a_header() -> None:
    header = entry_lines(JUPYTER)[2]
    assert ipython_header(header) == f"TypeError: {CUT_TRACEBACK}"
    assert failure_weight(f"TypeError: {CUT_TRACEBACK}") == 3  # it names its exception, as an exception line does
    # a name that is no `...Error` still weighs as the cut traceback it stands for, never less
    assert failure_weight(ipython_header(b"StopIteration     Traceback (most recent call last)") or "") == 1
    assert ipython_header(b"Traceback (most recent call last):") is None  # python's own: traceback_header's
    assert ipython_header(b"see the Traceback (most recent call last) below") is None  # prose quoting one
    assert ipython_header(b"TypeError Traceback (most recent call last) and more") is None


@given(st.binary(max_size=200))
def test_ipython_header_never_raises_and_names_a_word(line: bytes) -> None:
    named = ipython_header(line)
    assert named is None or (
        named.endswith(CUT_TRACEBACK) and named.split(":")[0].replace(".", "").replace("_", "").isalnum()
    )


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_torchrun_s_block_names_the_signal_that_killed_the_rank(tmp_path: Path, path: str) -> None:
    diag = diagnose(read_entry(tmp_path, TORCHRUN, path))
    [group] = diag.failure_groups
    assert group.ranks == [0]
    assert "Signal 6 (SIGABRT) received by PID 104478" in group.exception  # the cause, not only "a child failed"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_torch_distributed_launch_s_child_failed_line_is_its_rank_s_end(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, LAUNCH, path)
    ends = snap.errors[snap.errors["kind"] == "task_exit"]
    assert ends[["rank", "message"]].values.tolist() == [
        [0, "torch.distributed.launch: task 0 on local ended: exit code 1"]
    ]
    [group] = diagnose(snap).failure_groups
    assert group.ranks == [0] and "exit code 1" in " ".join(group.evidence)
