"""core.logs.judgement.selection (rank expressions) and the rank x step grids of core.logs.judgement.metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs.judgement.metrics import block_rows, lagging_ranks, rank_grid
from core.logs.judgement.selection import RankSelectionError, nodes_of, select_ranks

RANKS = list(range(32))


def test_terms_and_union() -> None:
    assert select_ranks("0-2, 5", RANKS) == [0, 1, 2, 5]
    assert select_ranks("node 1", RANKS) == list(range(8, 16))
    assert select_ranks("node 1", RANKS, per_node=4) == [4, 5, 6, 7]
    assert select_ranks("failed, 30..31", RANKS, {"failed": [9, 99]}) == [9, 30, 31]  # 99 has no log
    assert select_ranks("all", [3, 1]) == [1, 3]
    assert select_ranks("", RANKS) == [] and select_ranks(" , ", RANKS) == []
    assert select_ranks("FAILED", RANKS, {"failed": [1]}) == [1]


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("40", "rank 40 has no log"),
        ("9-3", "runs backwards"),
        ("node 4", "there are 4 nodes"),
        ("hung", "'hung' is not a rank"),
        ("1;2", "is not a rank"),
        ("-3", "is not a rank"),
        ("²", "is not a rank"),
    ],
)
def test_bad_terms_name_themselves(expr: str, message: str) -> None:
    with pytest.raises(RankSelectionError, match=message):
        select_ranks(expr, RANKS)


def test_nodes_of_needs_a_positive_size() -> None:
    assert nodes_of([0, 1, 2], 2) == {0: [0, 1], 1: [2]}
    with pytest.raises(RankSelectionError):
        nodes_of([0], 0)


@settings(max_examples=200, deadline=None)
@given(lo=st.integers(0, 40), hi=st.integers(0, 40), have=st.sets(st.integers(0, 40), min_size=1))
def test_ranges_select_exactly_the_ranks_inside(lo: int, hi: int, have: set[int]) -> None:
    if lo > hi:
        with pytest.raises(RankSelectionError):
            select_ranks(f"{lo}-{hi}", have)
    else:
        assert select_ranks(f"{lo}-{hi}", have) == sorted(r for r in have if lo <= r <= hi)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_any_text_selects_or_raises_the_named_error(expr: str) -> None:
    try:
        out = select_ranks(expr, RANKS, {"failed": [1]})
    except RankSelectionError:
        return
    assert set(out) <= set(RANKS)


def test_rank_grid_means_per_cell() -> None:
    grid, ranks, x = rank_grid(np.array([0, 0, 1]), np.array([1.0, 2.0, 1.0]), np.array([2.0, 4.0, 6.0]), 1)
    assert grid.tolist() == [[3.0], [6.0]] and ranks.tolist() == [0, 1] and x.tolist() == [1.5]
    grid, _, x = rank_grid(np.array([0, 0, 1]), np.array([1.0, 2.0, 1.0]), np.array([2.0, 4.0, 6.0]), 10)
    assert grid.shape == (2, 2) and np.isnan(grid[1, 1]) and grid[0].tolist() == [2.0, 4.0]
    grid, ranks, x = rank_grid(np.array([0]), np.array([np.nan]), np.array([1.0]))
    assert grid.shape == (1, 0) and len(x) == 0


@settings(max_examples=60, deadline=None)
@given(n_ranks=st.integers(1, 40), n_steps=st.integers(1, 300), cols=st.integers(1, 50))
def test_rank_grid_is_bounded_and_keeps_every_rank(n_ranks: int, n_steps: int, cols: int) -> None:
    rank = np.repeat(np.arange(n_ranks), n_steps)
    x = np.tile(np.arange(n_steps, dtype=float), n_ranks)
    grid, _ranks, _ = rank_grid(rank, x, np.ones(len(x)), cols)
    assert grid.shape == (n_ranks, min(cols, n_steps)) and np.allclose(grid, 1.0)


def test_block_rows_keeps_the_outlier_of_each_block() -> None:
    grid = np.ones((10, 3))
    grid[7, 1] = 50.0
    rows, labels = block_rows(grid, np.arange(10), 3)
    assert len(rows) == 3 and labels == ["ranks 0-3", "ranks 4-7", "ranks 8-9"]
    assert rows[1, 1] == 50.0 and rows[0].tolist() == [1.0, 1.0, 1.0]
    same, lab = block_rows(grid, np.arange(10), 10)
    assert same is grid and lab[0] == "rank 0"


def test_lagging_ranks_finds_the_diverging_one() -> None:
    grid = np.tile(np.linspace(3, 1, 20), (16, 1)) + np.random.default_rng(0).normal(0, 0.01, (16, 20))
    grid[5, -1] = 9.0
    assert lagging_ranks(grid, np.arange(16)) == [5]
    assert lagging_ranks(grid[:2], np.arange(2)) == []


def test_block_rows_shows_a_stopped_rank_as_a_gap_and_padding_as_nothing() -> None:
    grid = np.tile(np.linspace(2.0, 1.0, 6), (10, 1))  # 10 ranks, 6 steps, all alike
    grid[4, 3:] = np.nan  # rank 4 hung after step 3
    rows, labels = block_rows(grid, np.arange(10), 3)  # blocks of 4: ranks 0-3, 4-7, 8-9 (+2 padding)
    assert labels == ["ranks 0-3", "ranks 4-7", "ranks 8-9"]
    assert np.isnan(rows[1, 3:]).all() and not np.isnan(rows[1, :3]).any()
    assert not np.isnan(rows[0]).any() and not np.isnan(rows[2]).any()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (119, "119 s"), (120, "2 min"), (7199, "120 min"), (7200, "2.0 h"), (5_429_162, "62.8 days")],
)
def test_durations_read_at_a_glance(seconds: float, text: str) -> None:
    from core.logs.judgement.status import duration_text

    assert duration_text(seconds) == text


def test_rank_state_takes_the_last_exception_over_other_fatal_errors(tmp_path) -> None:
    import dataclasses

    from core.logs import read_run
    from core.logs.judgement.status import rank_status
    from core.logs.rows.reader import ERROR_COLUMNS

    for rank in range(4):
        (tmp_path / f"worker_{rank}.log").write_text("epoch: 1 step: 1, loss is 2.5\n")
    snap = read_run(tmp_path)

    def err(rank: int, kind: str, message: str) -> dict:
        return {**dict.fromkeys(ERROR_COLUMNS), "rank": rank, "kind": kind, "message": message}

    errors = pd.DataFrame(
        [
            err(1, "worker_exit", "msrun: exit"),
            err(1, "exception", "RuntimeError: first"),
            err(1, "timeout", "timed out"),
            err(1, "exception", "RuntimeError: last"),
            err(2, "timeout", "scheduler: timed out"),
            err(3, "nan", "loss is NAN"),
            err(0, "error_log", "[ERROR] not fatal"),
        ],
        columns=ERROR_COLUMNS,
    )
    errors["rank"] = errors["rank"].astype("Int64")
    table = rank_status(dataclasses.replace(snap, errors=errors), run_status="running").set_index("rank")
    assert table.loc[1, "state"] == "crashed" and table.loc[1, "detail"] == "RuntimeError: last"
    assert table.loc[2, "state"] == "crashed" and table.loc[2, "detail"] == "scheduler: timed out"
    assert table.loc[3, "state"] == "nan"
    assert table.loc[0, "state"] != "crashed"


@settings(max_examples=80, deadline=None)
@given(
    points=st.lists(
        st.tuples(st.sampled_from([-1, 0, 3, 7, 1023, 4096]), st.integers(0, 40), st.floats(-5, 5, allow_nan=False)),
        min_size=1,
        max_size=60,
    ),
    cols=st.integers(1, 12),
)
def test_rank_grid_is_the_mean_per_rank_and_step_bin(points: list, cols: int) -> None:
    rank = np.array([p[0] for p in points], dtype=np.int64)
    x = np.array([p[1] for p in points], dtype=np.float64)
    value = np.array([p[2] for p in points])
    grid, ranks, _ = rank_grid(rank, x, value, cols)
    assert ranks.tolist() == sorted(set(rank.tolist()))
    lo, hi = x.min(), x.max()
    n = int(min(cols, max(1, hi - lo + 1)))
    width = (hi - lo) / n if hi > lo else 1.0
    col = np.minimum(((x - lo) / width).astype(int), n - 1)
    expected = pd.DataFrame({"r": rank, "c": col, "v": value}).groupby(["r", "c"])["v"].mean()
    for (r, c), mean in expected.items():
        assert grid[ranks.tolist().index(r), c] == pytest.approx(mean)
    assert np.isnan(grid).sum() == grid.size - len(expected)


@settings(max_examples=120, deadline=None)
@given(
    values=st.lists(
        st.lists(st.one_of(st.floats(-1e6, 1e6), st.just(float("nan"))), min_size=4, max_size=4),
        min_size=1,
        max_size=12,
    ),
    qs=st.lists(st.floats(0, 1), min_size=1, max_size=5),
)
def test_nan_quantiles_match_numpy(values: list[list[float]], qs: list[float]) -> None:
    import warnings

    from core.logs.judgement.metrics import nan_quantiles

    grid = np.array(values, dtype=np.float64)  # rows = ranks, columns = steps
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.nanquantile(grid, qs, axis=0)
    np.testing.assert_allclose(nan_quantiles(grid, qs), expected, rtol=1e-9, atol=1e-6, equal_nan=True)
