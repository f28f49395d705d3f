"""Issue 30, round 6 (rules6a): the rules written from this round's build logs, each on its real lines.

- icefall's logger names the rank as `(rank/world)` after its `[file:line]` tag (icefall.utils.setup_logger): a
  stream of several ranks whose rows all landed on rank 0 (icefall-569, icefall-603);
- the legacy torch.distributed.launch raises `subprocess.CalledProcessError` with the command of the worker that
  ended: its `--local_rank=N` names the task (Swin-Transformer#267), as DeepSpeed's launcher report is read;
- icefall's `Saving batch to .../batch-<uuid>.pt` is its dump of the batch a rank raised on (icefall-603);
- torch's watchdog line cut before `timeout`, and a log viewer's `[N] ` line numbers that hid a paste's lines from
  the scans (LlamaFactory#8261).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason
from core.logs.rows.lineranks import line_rank
from core.logs.rows.taskends import task_end
from core.logs.tokens.bulk import RE_CANDIDATE_AT
from tests.helpers import READ_PATHS, entry_lines, read_entry

ICEFALL_569 = "icefall-rank-of-world-paren-rows-ranks-0-6-4-last-cut_icefall-569"
ICEFALL_603 = "icefall-rank-3-row-then-rank-1-saving-batch-and-spawn-traceback-cut_icefall-603"
SWIN_267 = "markdown-italic-calledprocesserror-local-rank-3-died-with-sigkill_swin-transformer-267"


# ----------------------------------------------------------------------------- icefall's (rank/world)


def test_icefall_rank_of_world_names_the_rank_on_the_real_lines() -> None:
    assert [line_rank(line).rank for line in entry_lines(ICEFALL_569)] == [0, 6, 4]  # type: ignore[union-attr]
    ranks = [named.rank if (named := line_rank(line)) else None for line in entry_lines(ICEFALL_603)]
    assert ranks[:4] == [3, 1, 1, 1] and set(ranks[4:]) == {None}  # the untagged traceback names none


@pytest.mark.parametrize(
    "line",
    [
        b"2022-10-23 14:53:29,352 INFO [train.py:907] (8/8) Epoch 3, batch 1",  # a count at its end, no rank
        b"2022-10-23 14:53:29,352 INFO [train.py:907] (12/10) Epoch 3",  # past the world: no rank of it
        b"2022-10-23 14:53:29,352 INFO [train.py:907] Epoch (3/8), loss 0.2",  # not after the tag
        b"Epoch (3/8) batch 2 loss 0.21",  # a progress count without a logger's tag
        b"2022-10-23 14:53:29,352 INFO [train.py:907] (3/8)Epoch 3",  # no space after it
    ],
)
def test_a_fraction_that_is_no_icefall_rank_names_none(line: bytes) -> None:
    assert line_rank(line) is None


@given(st.integers(0, 4095), st.integers(1, 4096))
def test_icefall_rank_is_read_below_the_world_size_only(rank: int, world: int) -> None:
    named = line_rank(f"2022-10-05 23:42:56,919 INFO [train.py:814] ({rank}/{world}) Epoch 0, batch 1".encode())
    if rank < world:
        assert named is not None and named.rank == rank
    else:
        assert named is None


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_icefall_rows_go_to_the_ranks_their_lines_name(tmp_path: Path, path: str) -> None:
    m = read_entry(tmp_path, ICEFALL_569, path).metrics
    assert m.groupby("rank")["loss"].apply(list).to_dict() == {0: [0.2266], 4: [0.2727], 6: [0.2765]}


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_icefall_one_row_of_rank_3_then_rank_1_saving_its_batch(tmp_path: Path, path: str) -> None:
    m = read_entry(tmp_path, ICEFALL_603, path).metrics
    assert m.groupby("rank")["loss"].apply(list).to_dict() == {3: [0.2133]}


# ----------------------------------------------------------------------------- torch.distributed.launch (legacy)


def test_the_legacy_launchers_calledprocesserror_names_its_task() -> None:
    [line] = entry_lines(SWIN_267)
    ended = task_end(line)
    assert ended is not None and ended.ranks == (3,) and ended.launcher == "torch.distributed.launch"
    assert "SIGKILL" in ended.reason
    exited = task_end(
        b"subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local_rank=1', "
        b"'--epochs', '3']' returned non-zero exit status 1."
    )
    assert exited is not None and exited.ranks == (1,) and exited.reason == "exit code 1"


@pytest.mark.parametrize(
    "line",
    [
        # a build step's command (torch.utils.cpp_extension): no `--local_rank`, no launcher's task
        b"subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
        # `--use_env` launches pass no `--local_rank`
        b"subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py']' died with "
        b"<Signals.SIGKILL: 9>.",
        b"the command '--local_rank=3' died with <Signals.SIGKILL: 9>.",  # no exception
    ],
)
def test_a_calledprocesserror_without_a_local_rank_is_no_task_report(line: bytes) -> None:
    assert task_end(line) is None


# ----------------------------------------------------------------------------- icefall's batch dump


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_icefall_saving_its_batch_fails_the_rank_its_line_names(tmp_path: Path, path: str) -> None:
    """`(1/4) Saving batch to .../batch-<uuid>.pt` is icefall's dump of the batch rank 1 raised on; the parent's
    traceback through `mp.spawn` after it is cut before the rank it would name (it stays the file's, rank 0)."""
    failed = failed_ranks(read_entry(tmp_path, ICEFALL_603, path))
    assert 1 in failed and "Saving batch to" in failed[1]
    assert 3 not in failed  # the rank with the row trained on


def test_a_saving_line_that_is_no_batch_dump_is_no_failure() -> None:
    assert (
        fatal_reason(b"2022-10-05 23:43:02,341 INFO [checkpoint.py:75] (0/4) Saving checkpoint to exp/epoch-3.pt")
        is None
    )
    assert fatal_reason(b"Saving batch to the cache") is None
    line = entry_lines(ICEFALL_603)[1]
    assert fatal_reason(line) == "icefall batch dump"


# ----------------------------------------------------------------------------- a watchdog cut, line numbers

LLAMAFACTORY_8261 = "line-numbered-paste-hf-dict-row-bars-then-rank5-watchdog-cut_llamafactory-8261"


def test_the_watchdog_cut_before_timeout_is_still_its_time_out() -> None:
    line = entry_lines(LLAMAFACTORY_8261)[-1]
    body = line[line.index(b"[rank5]:") + len(b"[rank5]:") :]
    assert body.endswith(b"Watchdog caught collective operati")
    assert fatal_reason(body) == "collective time-out (cut)"
    whole = body + b"on timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE) ran for 600061 milliseconds before timing out."
    assert fatal_reason(whole) == "collective time-out"  # the whole line stays the time-out kind's


def test_a_line_numbered_line_is_a_candidate_of_the_scans() -> None:
    for line in entry_lines(LLAMAFACTORY_8261):
        assert RE_CANDIDATE_AT.match(line) is not None, line
    assert RE_CANDIDATE_AT.match(b"[INFO] a chatter line") is None  # chatter stays skipped
    assert RE_CANDIDATE_AT.match(b"[12]abc") is None


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_line_numbered_traceback_is_read_behind_its_numbers(tmp_path: Path, path: str) -> None:
    """A paste numbered `[N] ` line by line (a log viewer's, LlamaFactory#8261's notation) around a traceback: the
    exception is the rank's failure, as without the numbers."""
    lines = [
        b"[1757] {'loss': 0.5, 'grad_norm': 1.41, 'learning_rate': 4.3e-06, 'epoch': 0.01}",
        b"[1758] Traceback (most recent call last):",
        b'[1759]   File "src/train.py", line 28, in <module>',
        b"[1760]     main()",
        b"[1761] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "train.log").write_bytes(b"\n".join(lines) + b"\n")
    snap = read_run(folder, settings=READ_PATHS[path])
    failed = failed_ranks(snap)
    assert list(failed) == [0] and "CUDA out of memory" in failed[0]
    assert snap.metrics["loss"].tolist() == [0.5]
