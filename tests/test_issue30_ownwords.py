"""Issue 30, round 7 (gaps7): diagnose keeps the words the log printed. Where a rank has no exception line of its own
and a launcher, msrun or the scheduler said how it ended, the failure group's reason is diagnose's paraphrase (the
group's key, alike on every rank) with the first failure line quoted beside it: a user searches the log for the
reason's words. The real lines: torchrun's `failed (exitcode: -7) local_rank: 0` (said `signal 7 (SIGBUS)`,
yanqiangmiffy/InstructGLM#26) and msrun's `Worker process 130673 exit with exception.` (mindspore-lab/mindnlp#1893),
then every launcher report's real sample (core.logs.rows.failure_kinds.LAUNCHER_REPORTS).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.reasons import with_own_words
from core.logs.rows.failure_kinds import LAUNCHER_REPORTS
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

TORCHRUN = "ds-rank-minus-1-info-then-elastic-exitcode-minus-7-local-rank-0_instructglm-26"
MSRUN = "msrun-process-entity-worker-process-exit-with-exception-one-line_mindnlp-1893"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_torchrun_s_exit_code_is_quoted_beside_the_signal_it_names(tmp_path: Path, path: str) -> None:
    [group] = diagnose(read_entry(tmp_path, TORCHRUN, path)).failure_groups
    assert group.ranks == [0]
    assert group.exception.startswith("signal 7 (SIGBUS) (torchrun's word on the task")  # the paraphrase stays
    assert '"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -7) local_rank: 0' in group.exception


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_msrun_s_worker_exit_is_quoted_beside_its_paraphrase(tmp_path: Path, path: str) -> None:
    [group] = diagnose(read_entry(tmp_path, MSRUN, path)).failure_groups
    assert group.ranks == [0]
    assert group.exception == (
        'msrun: worker exited with an exception (no traceback in its log): "Worker process 130673 exit with exception."'
    )


REPORTS = [(r.launcher, sample) for r in LAUNCHER_REPORTS if not r.chatter for sample in r.samples]


@pytest.mark.parametrize(("launcher", "sample"), REPORTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(REPORTS)])
def test_every_launcher_report_s_line_is_quoted_in_its_group_s_reason(
    tmp_path: Path, launcher: str, sample: tuple
) -> None:
    line, ranks, _reason = sample
    groups = diagnose(read_run(one_log(tmp_path, [line.line.encode()]))).failure_groups
    paraphrased = [g.exception for g in groups if f"{launcher}'s word on the task" in g.exception]
    # a line that is an exception of its own (a launcher's CalledProcessError) is its reason, in its own words
    own = any(g.exception.startswith(line.line.strip()[:30]) for g in groups)
    assert paraphrased or own, [g.exception for g in groups]
    assert all(f': "{line.line.strip()[:200]}' in reason for reason in paraphrased), paraphrased
    assert set(ranks) <= {r for g in groups for r in g.ranks}


def test_an_exception_s_own_line_is_its_reason_with_nothing_quoted_beside_it(tmp_path: Path) -> None:
    # the torchrun line after the worker's own exception (its traceback's last line): the exception is the reason
    lines = [b"RuntimeError: CUDA error: out of memory", *[x for x in entry_lines(TORCHRUN) if b"(exitcode: -7)" in x]]
    [group] = diagnose(read_run(one_log(tmp_path, lines))).failure_groups
    assert group.exception == "RuntimeError: CUDA error: out of memory"


@given(said=st.text(min_size=1, max_size=600).filter(lambda s: s.strip() == s))
@example(said="x" * 240)
@example(said="x" * 241)
def test_a_quoted_line_is_whole_up_to_240_characters_and_cut_with_an_ellipsis_after(said: str) -> None:
    got = with_own_words("reason", said)
    quoted = got.removeprefix('reason: "').removesuffix('"')
    assert len(quoted) <= 240
    assert quoted == said if len(said) <= 240 else (quoted == said[:239] + "…")
    assert with_own_words("reason", "") == "reason"
