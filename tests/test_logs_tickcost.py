"""What a live tick recomputes over the whole run, done on the new part or on the few columns it needs, with
the answers of the whole-table computation (issue 30, the 1,024-rank real-corpus folder's tick): the first
row of each rank among some rows (core.logs.judgement.status.first_of_each_rank, in place of a pandas
group-by over every column), and the ranks a file's evaluation lines name, counted from the new entries
only (core.logs.rows.snapshot)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs.judgement.status import first_of_each_rank, nonfinite_by_rank
from core.logs.rows.reader import RunReader


@given(
    ranks=st.lists(st.integers(-1, 5), max_size=60),
    pick=st.lists(st.booleans(), min_size=60, max_size=60),
    backwards=st.booleans(),
)
@example(ranks=[], pick=[False] * 60, backwards=False)
@example(ranks=[3, 1, 3, 1, 2], pick=[True] * 60, backwards=True)
def test_first_of_each_rank_is_the_group_by_s_first_row(ranks: list[int], pick: list[bool], backwards: bool) -> None:
    rank = np.array(ranks, dtype=np.int64)
    rows = np.flatnonzero(np.array(pick[: len(ranks)], dtype=bool))
    rows = rows[::-1] if backwards else rows
    frame = pd.DataFrame({"rank": rank[rows], "row": rows})
    want = np.sort(frame.groupby("rank", sort=False).head(1)["row"].to_numpy())
    got = first_of_each_rank(rank, rows)
    assert got.tolist() == want.tolist()
    assert len(set(rank[got].tolist())) == len(got)  # one row per rank


def test_nonfinite_by_rank_names_the_first_bad_loss_and_who_trained_past_it() -> None:
    nan = float("nan")
    metrics = pd.DataFrame(
        {
            "rank": [0, 1, 0, 1, 2, 0, 2, 1],
            "loss": [1.0, nan, float("inf"), 2.0, nan, 0.5, nan, nan],
            "step": [1.0, 1.0, 2.0, 2.0, 1.0, 3.0, 2.0, 2.0],
        }
    )
    out, recovered = nonfinite_by_rank(metrics)
    assert list(out) == [1, 0, 2]  # in the order their first bad loss comes
    assert out[0] == (float("inf"), 2.0) and np.isnan(out[1][0]) and out[1][1] == 1.0
    assert recovered == {0}  # rank 1's last loss is NaN again; rank 2 never trained past it


def test_a_tick_s_named_ranks_count_the_new_evaluation_lines(tmp_path: Path) -> None:
    """A rank named by an evaluation line only (WeNet's CV lines, tests/fixtures/real_logs/
    wenet-train-and-cv-batches-rank-suffix_wenet-941) gets its rank row, before and after more lines come."""
    cv = b"2023-01-30 18:49:55,773 DEBUG CV Batch 4/0 loss 28.517015 loss_att 24.142754 history loss 27.95 rank %d\n"
    log = tmp_path / "worker_0.log"
    log.write_bytes(cv % 2)
    reader = RunReader(tmp_path)
    reader.refresh()
    assert set(reader.snapshot().ranks["rank"]) == {2}
    with open(log, "ab") as f:
        f.write(cv % 2 + cv % 5)
    reader.refresh()
    assert set(reader.snapshot().ranks["rank"]) == {2, 5}
    log.write_bytes(cv % 7)  # rewritten: its entries start over (a new list)
    reader.refresh()
    assert set(reader.snapshot().ranks["rank"]) == {7}
