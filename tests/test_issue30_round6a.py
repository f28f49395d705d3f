"""Issue 30, round 6 (rules6a): the rules written from this round's build logs, each on its real lines.

- icefall's logger names the rank as `(rank/world)` after its `[file:line]` tag (icefall.utils.setup_logger): a
  stream of several ranks whose rows all landed on rank 0 (icefall-569, icefall-603);
- the legacy torch.distributed.launch raises `subprocess.CalledProcessError` with the command of the worker that
  ended: its `--local_rank=N` names the task (Swin-Transformer#267), as DeepSpeed's launcher report is read.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs.rows.lineranks import line_rank
from core.logs.rows.taskends import task_end
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
