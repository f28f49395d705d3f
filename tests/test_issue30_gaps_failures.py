"""Issue 30's known gaps on the judgement side, each closed by a general rule and checked on the real lines of
its corpus entry (tests/fixtures/real_logs/<entry>/SOURCE.md says where each log comes from):

- nccl-watchdog-rank3-then-frames_trl-1405: torch's generic `Some NCCL operations have failed or timed out` notice
  named the failure; the line that says which (`taking the entire process down`, the watchdog's exception) must;
- nccl-watchdog-behind-host-prefix-rank5_llamafactory-5558: std::terminate behind a pod's host prefix, its
  `what():  [PG 1 Rank 5] ...` naming the rank: rank 5 failed, not the stream's rank 0;
- deepspeed-launcher-return-code-minus-9-during-build_deepspeed-3512 (and torchrun behind python logging's
  `[date]`): a launcher's report behind a `[date]` stamp is a candidate of the scans on every path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import failure_weight, fatal_reason
from core.logs.rows.lineranks import line_rank
from tests.helpers import READ_PATHS

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"
# every way the parser reads a file (as tests/test_grammar_entries.py: line by line, the compiled bulk path,
# small files batched by `bytes.find` or compiled)
PATHS = READ_PATHS  # every way the parser reads a file (tests/helpers.py)
LM = "epoch: 1 step: {s}, loss is 1.5\n"


def _entry(tmp_path: Path, name: str) -> Path:
    """A copy of the corpus entry's log folder (a fresh mtime does not matter to these readings)."""
    return Path(shutil.copytree(CORPUS / name / "log", tmp_path / "log"))


# ----------------------------------------------------------------------------- the most telling line (trl-1405)

TRL = "nccl-watchdog-rank3-then-frames_trl-1405"


def test_a_process_group_notice_names_less_than_the_line_that_says_which() -> None:
    """torch prints its generic notice first; the abort and the watchdog's exception say what failed."""
    notice = "[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the asynchronous"
    abort = "[E ProcessGroupNCCL.cpp:543] To avoid data inconsistency, we are taking the entire process down."
    watchdog = (
        "[E ProcessGroupNCCL.cpp:1182] [Rank 3] NCCL watchdog thread terminated with exception: [Rank 3] Watchdog "
        "caught collective operation."
    )
    assert 0 < failure_weight(notice) < failure_weight(abort) == failure_weight(watchdog)
    assert fatal_reason(notice.encode()) == "collective notice"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_watchdog_failure_is_named_by_its_telling_line(tmp_path: Path, path: str) -> None:
    snap = read_run(_entry(tmp_path, TRL), settings=PATHS[path])
    [group] = diagnose(snap).failure_groups
    assert group.ranks == [3]
    assert "taking the entire process down" in group.exception or "watchdog thread" in group.exception
    assert "Some NCCL operations" not in group.exception


# -------------------------------------------------------------------------- std::terminate's what() (llamafactory-5558)

LLAMA = "nccl-watchdog-behind-host-prefix-rank5_llamafactory-5558"


def test_a_pod_name_with_digits_inside_is_a_host_prefix() -> None:
    named = line_rank(b"mpi-rc1ou1aw-launcher: terminate called after throwing an instance of 'c10::DistBackendError'")
    assert named is not None and (named.rank, named.host) == (None, "mpi-rc1ou1aw-launcher")
    # a config key with a digit only before its hyphen is no host
    assert line_rank(b"fp16-mode: true") is None


@pytest.mark.parametrize("path", sorted(PATHS))
def test_terminate_behind_a_host_prefix_fails_the_rank_its_what_line_names(tmp_path: Path, path: str) -> None:
    snap = read_run(_entry(tmp_path, LLAMA), settings=PATHS[path])
    assert set(failed_ranks(snap)) == {5}
    [group] = diagnose(snap).failure_groups
    assert group.ranks == [5] and "DistBackendError" in group.exception
    assert not group.exception.startswith("mpi-")  # the host prefix is not part of the message


def test_what_names_the_rank_only_of_the_terminate_line_before_it(tmp_path: Path) -> None:
    """One stream of several ranks: a terminate line whose `what():` names no rank stays the stream's; the next
    one, whose `what():` names rank 2, is rank 2's."""
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "train.log").write_text(
        "terminate called after throwing an instance of 'std::bad_alloc'\n"
        "  what():  std::bad_alloc\n"
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG 0 Rank 2] Process group watchdog thread terminated with exception: boom\n"
    )
    errors = read_run(folder).errors
    assert errors["rank"].tolist() == [0, 0, 2, 2]
    assert set(failed_ranks(read_run(folder))) == {0, 2}


@settings(max_examples=200, deadline=None)
@given(
    rank=st.integers(0, 100_000),
    pg=st.integers(0, 99),
    host=st.from_regex(r"mpi-[a-z0-9]{0,8}[0-9][a-z0-9-]{0,8}", fullmatch=True),
)
def test_what_line_rank_is_read_for_any_rank_and_host(
    tmp_path_factory: pytest.TempPathFactory, rank: int, pg: int, host: str
) -> None:
    folder = tmp_path_factory.mktemp("what") / "log"
    folder.mkdir()
    (folder / "train.log").write_text(
        f"{host}: terminate called after throwing an instance of 'c10::DistBackendError'\n"
        f"{host}:   what():  [PG {pg} Rank {rank}] Process group watchdog thread terminated with exception: x\n"
    )
    assert set(failed_ranks(read_run(folder))) == {rank}


# ----------------------------------------------------------------------------- a launcher behind a `[date]` stamp

DEEPSPEED = "deepspeed-launcher-return-code-minus-9-during-build_deepspeed-3512"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_launcher_report_behind_a_date_stamp_fails_its_rank_on_every_path(tmp_path: Path, path: str) -> None:
    """DeepSpeed's `[2023-05-11 07:34:44,846] [ERROR] [launch.py:434:sigkill_handler] [...] exits with return code
    = -9` after a log of build chatter (no loss row): rank 0 was killed (SIGKILL)."""
    snap = read_run(_entry(tmp_path, DEEPSPEED), settings=PATHS[path])
    assert set(failed_ranks(snap)) == {0}
    assert "SIGKILL" in failed_ranks(snap)[0]


STAMPED = [
    # (line, a candidate of the scans) — real lines, then the window's bounds
    (b"[2023-05-11 07:34:44,846] [ERROR] [launch.py:434:sigkill_handler] exits with return code = -9", True),
    (b"[2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1)", True),
    (b"[2026-11-23 21:19:43] mindcv.train ERROR - boom", True),
    (b"[2026-11-23 21:19:43] mindcv.train INFO - Start training", False),  # MindCV's noise stays no candidate
    (b"[2023-05-11 07:34:44,819] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 6488", False),
    (b"[2" + b"0" * 40 + b"] [ERROR] x", True),  # the stamp's `]` 40 bytes after its first digit
    (b"[2" + b"0" * 41 + b"] [ERROR] x", False),
    (b"[2] " + b"w" * 64 + b" FATAL x", True),  # one word of 64 bytes before the level
    (b"[2] " + b"w" * 65 + b" FATAL x", False),
    (b"[2] two words CRITICAL", False),
]


@pytest.mark.parametrize(("line", "candidate"), STAMPED)
def test_a_stamped_line_is_a_candidate_at_error_level_on_both_scans(line: bytes, candidate: bool) -> None:
    """The compiled scan and the definition (core.logs.tokens.bulk.RE_SCAN) agree on every stamped line."""
    import numpy as np

    from core.logs.tokens.bulk import scan_by_definition
    from core.logs.tokens.linescan import scan_block

    data = b"first\n" + line + b"\n"
    compiled = scan_block(np.frombuffer(data, dtype=np.uint8), len(data), False)[0].tolist()
    defined = scan_by_definition(bytearray(data), len(data), False, bytearray())[0].tolist()
    assert compiled == defined == ([6] if candidate else [])


# ----------------------------------------------------------------------------- nothing to judge, said in JSON

NOTHING = [
    "megatron-deepspeed-grad-norm-nan-no-lm-loss_bigscience-396",
    "rank-files-loss-words-no-values-two-empty_openrlhf-demo",
]


@pytest.mark.parametrize("name", NOTHING)
def test_diagnose_json_gives_a_verdict_when_there_is_nothing_to_judge(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture
) -> None:
    """A log with neither rows nor failures: `diagnose --json` printed nothing (exit 2), so it could not be
    compared with `watch --once`. It prints its verdict (no failure group) and why there is nothing to judge;
    the exit stays 2 (0 rows is no success), the one-line error on stderr as before."""
    from core.__main__ import main

    expect = json.loads((CORPUS / name / "expect.json").read_text(encoding="utf-8"))
    shutil.copytree(CORPUS / name / "log", tmp_path / "log")
    folder = tmp_path / expect["watch_path"]
    assert main(["diagnose", str(folder), "--json"]) == 2
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert d["failure_groups"] == [] and d["failed"] is False and d["ranks"] == len(expect["ranks"])
    assert "no loss row and no failure" in d["nothing_to_judge"]["why"]
    assert d["nothing_to_judge"]["line_shapes"] and all(s["count"] > 0 for s in d["nothing_to_judge"]["line_shapes"])
    assert err.startswith("error: ") and "nothing to judge yet" in err


def test_megatron_iterations_without_lm_loss_are_no_rows_and_no_failure() -> None:
    """bigscience-396: `grad norm: nan` on iteration lines that carry no `lm loss` (Megatron-DeepSpeed leaves it out
    on a skipped step): no loss row (`loss scale: 1.0` is not a loss) and no failure, as its expect.json says."""
    snap = read_run(CORPUS / NOTHING[0] / "log")
    assert snap.metrics.empty and snap.errors.empty and failed_ranks(snap) == {}


def test_a_judged_log_says_it_was_judged(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from core.__main__ import main

    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "worker_0.log").write_text("".join(LM.format(s=s) for s in range(1, 6)))
    assert main(["diagnose", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nothing_to_judge"] is None
