"""A run's evaluation entries kept as columns between snapshots (core.logs.rows.evaltable.EvalTable): each
entry converted once, the frame `table.eval_frame` builds from every entry, row for row and dtype for dtype;
a snapshot handed out never changes (issue 30: on the real-corpus folder rebuilding it was ~90 ms a tick)."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.bytes.discover import LogRole
from core.logs.rows.evaltable import EvalTable
from core.logs.rows.filestate import FileState
from core.logs.rows.reader import RunReader, file_order
from core.logs.rows.table import EVAL_COLUMNS, eval_frame
from tests.helpers import frames_held_each_tick
from tests.strategies import general_line, loss_line

# real evaluation lines (tests/fixtures/real_logs: mindnlp-hf-trainer-eval-heavy_bit-flowers,
# detr-style-metric-logger-train-and-test-rows_rtd-paddle, megatron-deepspeed-log-ends-mid-run;
# wenet-train-and-cv-batches-rank-suffix_wenet-941's CV line, naming its rank) and training lines beside them
EVAL_LINES = [
    b"{'eval_loss': 0.40957605838775635, 'eval_accuracy': 0.921875, 'eval_runtime': 1.394, 'epoch': 1.0}\n",
    b"Test:  [162/163]  eta: 0:00:04  loss: 3.1047 (3.7816)  loss_iou: 3.1047 (3.7816)  time: 4.1739  data: 0.0007\n",
    b" validation loss at iteration 100 | lm loss value: 9.082474E+00 | lm loss PPL: 8.799707E+03 | \n",
    b"2023-01-30 18:49:55,773 DEBUG CV Batch 4/0 loss 28.517015 loss_att 24.142754 history loss 27.957858 rank 3\n",
    b"[2026-11-23 21:41:18] mindcv.utils.callbacks INFO - Validation Top_1_Accuracy: 50.0000%, time: 11.225095s\n",
]


def _workers(reader: RunReader) -> list[FileState]:
    return sorted((s for s in reader.files.values() if s.info.role == LogRole.WORKER), key=file_order)


def test_a_tick_converts_only_new_entries_and_keeps_handed_out_frames(tmp_path: Path) -> None:
    for r in range(3):
        (tmp_path / f"worker_{r}.log").write_bytes(b"".join(EVAL_LINES) + b"epoch: 1 step: 1, loss is 2.5\n")
    reader = RunReader(tmp_path)
    reader.refresh()
    table = EvalTable()
    first = table.frame(_workers(reader))
    kept = first.copy(deep=True)
    pd.testing.assert_frame_equal(first, eval_frame(_workers(reader)), check_exact=True)
    assert table.frame(_workers(reader)) is first  # nothing new: the frame is not built again
    with open(tmp_path / "worker_1.log", "ab") as f:
        f.write(EVAL_LINES[0] + b"epoch: 1 step: 2, loss is 2.4\n")
    reader.refresh()
    second = table.frame(_workers(reader))
    pd.testing.assert_frame_equal(second, eval_frame(_workers(reader)), check_exact=True)
    assert len(second) == len(first) + 3  # eval_loss, eval_accuracy and eval_runtime; the step line is no entry
    assert set(second["rank"]) == {0, 1, 2, 3}  # the CV line names rank 3
    pd.testing.assert_frame_equal(first, kept, check_exact=True)  # the frame handed out before is unchanged


def test_no_entries_gives_the_empty_frame_of_eval_columns(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_bytes(b"epoch: 1 step: 1, loss is 2.5\n")
    reader = RunReader(tmp_path)
    reader.refresh()
    got = EvalTable().frame(_workers(reader))
    assert list(got.columns) == EVAL_COLUMNS and got.empty
    pd.testing.assert_frame_equal(got, eval_frame(_workers(reader)))


_LINE = st.one_of(st.sampled_from(EVAL_LINES), general_line(), loss_line())
# a tick: (rank, its new lines, whether the file restarts first: truncated, its entries read anew)
_TICK = st.lists(st.tuples(st.integers(0, 2), st.lists(_LINE, max_size=4), st.booleans()), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ticks=st.lists(_TICK, min_size=1, max_size=4))
@example(ticks=[[(0, [EVAL_LINES[3]], False)], [(0, [EVAL_LINES[0]], True)]])
@example(  # a file's entries past the room kept for them (16, then twice that), between frames handed out
    ticks=[[(0, [EVAL_LINES[0]] * 4, False)], [(0, [EVAL_LINES[0]] * 4, False)], [(0, [EVAL_LINES[1]] * 4, False)]]
)
def test_every_tick_s_frame_is_the_one_built_from_every_entry(
    tmp_path_factory: pytest.TempPathFactory, ticks: list[list[tuple[int, list[bytes], bool]]]
) -> None:
    root = tmp_path_factory.mktemp("evals")
    for r in range(3):
        (root / f"worker_{r}.log").write_bytes(EVAL_LINES[r])
    reader = RunReader(root)
    reader.refresh()
    table = EvalTable()

    def write(_: int, tick: object) -> None:
        for rank, lines, restart in tick:  # type: ignore[attr-defined]
            path = root / f"worker_{rank}.log"
            if restart:
                os.truncate(path, 0)
                reader.refresh()  # the reader sees the file shrink: a new parse state, new entries
            with open(path, "ab") as f:
                f.write(b"".join(lines))

    frames_held_each_tick(
        ticks, write, reader.refresh, lambda: table.frame(_workers(reader)), lambda: eval_frame(_workers(reader))
    )
