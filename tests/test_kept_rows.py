"""The training rows a file's series choice keeps, held between a live reader's snapshots
(core.logs.rows.kept.KeptRows): every snapshot's metrics, evaluation entries and rank facts are those of
`split_series` over the whole table (core.logs.rows.snapshot: what the reader computed on every tick before),
bit for bit and type for type, while rows are set aside, earlier choices flip, rows are dropped (rotation,
truncation), a column widens or a metric appears; a frame handed out never changes; and a watcher's ticks give
what one read of the same bytes gives. Lines: Oscar-Paddle's workerlog (corpus paddle-2-workerlogs-...-epoch-
summaries_oscar-paddle), nanoGPT's (nanogpt-iter-loss-turns-nan-quoted_nanogpt-215), TFLearn's TermLogger
(tflearn-termlogger-two-lines-per-step_tflearn-486), as tests/test_per_file_series.py writes them."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs.rows.kept import KeptRows
from core.logs.rows.perfile import Aside
from core.logs.rows.reader import RunReader
from core.logs.rows.snapshot import split_series
from core.logs.rows.table import EVAL_COLUMNS
from tests.helpers import bits, same_reading, series_line, series_log

_NAN_BITS = np.float64(np.nan).view(np.uint64)  # the NaN a numpy fill writes (a column of it alone holds no array)
EVENTS = ("grow", "flip", "drop", "widen", "metric", "none_aside")


@dataclass
class _Table:
    """A stand-in for the table's columns: rows only ever appended, except where an event says."""

    rng: np.random.Generator
    cols: dict[str, np.ndarray] = field(default_factory=dict)
    names: list[str] = field(default_factory=lambda: ["a.log"])
    aside: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    generation: int = 0

    def __post_init__(self) -> None:
        self.cols = {
            "rank": np.zeros(0, dtype=np.int64),
            "epoch": np.zeros(0, dtype=np.int16),
            "step": np.zeros(0, dtype=np.int32),
            "loss": np.zeros(0),
            "lr": None,  # type: ignore[dict-item]  # a column NaN on every row: the table's zero-stride view
            "time": np.zeros(0),
            "offset": np.zeros(0, dtype=np.int64),
            "file": np.zeros(0, dtype=np.int8),
        }

    def grow(self, n: int, aside_p: float) -> None:
        rng, k = self.rng, len(self.aside)
        if rng.random() < 0.3:
            self.names.append(f"{len(self.names)}.log")
        new = {
            "rank": rng.integers(-1, 4, n).astype(np.int64),
            "epoch": rng.integers(0, 5, n),
            "step": np.arange(k, k + n),
            "loss": rng.choice([0.5, -0.0, np.nan, np.inf, 1e-300, 2.25], n),
            "time": rng.choice([np.nan, 1.7e9], n),
            "offset": np.arange(k, k + n) * 10,
            "file": rng.integers(0, len(self.names), n),
        }
        for name in [c for c in self.cols if c not in new]:  # a metric some rows give
            new[name] = rng.choice([np.nan, 0.75], n)
        for name, values in new.items():
            col = self.cols[name]
            if col is not None:
                self.cols[name] = np.concatenate([col, values.astype(col.dtype)])
        choice = rng.choice([Aside.KEEP, Aside.EVAL, Aside.DROP], n, p=[1 - aside_p, aside_p / 2, aside_p / 2])
        self.aside = np.concatenate([self.aside, choice.astype(np.int8)])

    def event(self, what: str) -> None:
        rng, n = self.rng, len(self.aside)
        if what == "flip" and n:  # an earlier row's choice changes (a file's choice is decided over its rows so far)
            self.aside = self.aside.copy()
            self.aside[rng.integers(0, n)] = rng.integers(0, 3)
        elif what == "drop" and n:  # a file dropped: its rows gone, the others renumbered
            keep = np.flatnonzero(self.cols["file"] != self.cols["file"][rng.integers(0, n)])
            self.cols = {c: None if a is None else a[keep] for c, a in self.cols.items()}
            self.aside = self.aside[keep]
            self.generation += 1
        elif what == "widen":  # a count column widened to float64 (a row without a step, a fraction)
            self.cols["step"] = self.cols["step"].astype(np.float64)
        elif what == "metric" and "acc" not in self.cols:  # a metric seen for the first time: NaN before
            self.cols["acc"] = np.full(n, np.nan)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.columns(), copy=False)

    def columns(self) -> dict[str, object]:
        """The frame's columns before pandas holds them (`MetricTable.frame_columns`)."""
        n = len(self.aside)
        data: dict[str, object] = {}
        for name, col in self.cols.items():
            if name == "file":
                data[name] = pd.Categorical.from_codes(col, dtype=pd.CategoricalDtype(self.names), validate=False)
            else:
                data[name] = np.broadcast_to(np.float64(np.nan), (n,)) if col is None else col
        return data


def _ranks() -> pd.DataFrame:
    """Rank facts as `rank_table` gives them (rank 5: no row at all)."""
    return pd.DataFrame(
        {
            "rank": [-1, 0, 1, 2, 3, 5],
            "n_loss": [7] * 6,
            "last_epoch": [1.0] * 6,
            "last_step": [9.0] * 6,
            "last_loss": [0.1] * 6,
        }
    )


def _evals(some: bool) -> pd.DataFrame:
    rows = [(0, 1.0, 2.0, "val_loss", 0.3, np.nan, 5, "a.log", False)] if some else []
    return pd.DataFrame(rows, columns=EVAL_COLUMNS)


def _equal(got: pd.DataFrame, want: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert bits(got) == bits(want)


@settings(max_examples=200, deadline=None)
@given(
    ticks=st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from(EVENTS), st.sampled_from([0.0, 0.05, 0.5])),
        min_size=1,
        max_size=10,
    ),
    seed=st.integers(0, 2**32 - 1),
    some_evals=st.booleans(),
    given_columns=st.booleans(),
)
@example(
    ticks=[(5, "grow", 0.5), (0, "flip", 0.0), (3, "drop", 0.5), (4, "widen", 0.5)],
    seed=1,
    some_evals=True,
    given_columns=False,
)
@example(
    ticks=[(5, "grow", 0.5), (0, "flip", 0.0), (3, "drop", 0.5), (4, "widen", 0.5)],
    seed=1,
    some_evals=True,
    given_columns=True,
)
@example(
    ticks=[(30, "grow", 0.05), (10, "metric", 0.05), (0, "none_aside", 0.0), (2, "grow", 0.5)],
    seed=3,
    some_evals=False,
    given_columns=True,
)
def test_kept_rows_held_between_ticks_are_the_whole_split_every_time(
    ticks: list[tuple[int, str, float]], seed: int, some_evals: bool, given_columns: bool
) -> None:
    """Ticks of new rows with rows set aside, earlier choices flipping, a file dropped, a column widened, a
    metric appearing, no rule asked: each tick's frames equal `split_series` over the whole table, and every
    frame handed out earlier still holds what it held; read through the frame or from the columns it was made of
    (`given_columns`: as the reader hands them over)."""
    table, kept = _Table(np.random.default_rng(seed)), KeptRows()
    handed: list[tuple[pd.DataFrame, list[tuple]]] = []
    for n, event, aside_p in ticks:
        table.event(event)
        table.grow(n, aside_p)
        columns = table.columns()
        metrics, evals, ranks = pd.DataFrame(columns, copy=False), _evals(some_evals), _ranks()
        aside = None if event == "none_aside" else table.aside
        got = kept.split(metrics, aside, evals, ranks, table.generation, columns if given_columns else None)
        want = split_series(metrics, aside, evals, ranks)
        for g, w in zip(got, want, strict=True):
            _equal(g, w)
        handed.append((got[0], bits(got[0])))
    for frame, held in handed:
        assert bits(frame) == held


def test_nothing_set_aside_hands_over_the_tables_own_frame() -> None:
    """No row set aside: the table's view itself, no copy (as `split_series` does)."""
    table = _Table(np.random.default_rng(0))
    table.grow(20, 0.0)
    metrics, evals, ranks = table.frame(), _evals(False), _ranks()
    got = KeptRows().split(metrics, table.aside, evals, ranks, 0)
    assert got[0] is metrics and got[1] is evals and got[2] is ranks


_FILE_LINES = st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6)), min_size=1, max_size=12)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    files=st.lists(_FILE_LINES, min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 6000), min_size=1, max_size=4),
    relaunch=st.sets(st.integers(1, 4), max_size=2),
)
@example(  # summaries kept while they outnumber the step rows, then set aside once step rows outnumber them
    files=[[(1, 6), (0, 3), (1, 1), (0, 6)]], cuts=[200, 900, 1500], relaunch=set()
)
@example(  # a rank relaunched (its log rewritten from the start): its rows dropped, the other ranks' kept
    files=[[(0, 6), (1, 1), (0, 6)], [(2, 5), (3, 1), (2, 5)]], cuts=[700, 1400], relaunch={1, 2}
)
def test_a_watchers_ticks_give_what_one_read_of_the_same_bytes_gives(
    tmp_path_factory: pytest.TempPathFactory, files: list[list[tuple[int, int]]], cuts: list[int], relaunch: set[int]
) -> None:
    """Logs with epoch summaries, a step printed twice and echoes, written in ticks cut anywhere, a rank
    relaunched before a tick (msrun reopens its log: rewritten from the start with other values, its earlier
    rows dropped): after every tick the watcher's training rows, evaluation entries and rank facts are those
    of one read of the files as they are."""
    datas = ["".join(series_log(runs)).encode() for runs in files]
    root = tmp_path_factory.mktemp("live")
    reader = RunReader(root)
    written = [0] * len(datas)
    end = max(map(len, datas))
    for tick, edge in enumerate([*sorted(set(cuts)), end, end]):
        again = tick % len(datas)
        first = series_log(files[again], shift=tick)[0].encode()
        if tick in relaunch and datas[again][: written[again]].count(b"\n") >= 2:  # past its first line
            datas[again] = "".join(series_log(files[again], shift=tick)).encode()
            (root / f"worker_{again}.log").write_bytes(first)  # reopened with "w": this tick sees its first line
            written[again] = len(first)
        else:
            again = -1
        for rank, data in enumerate(datas):
            if rank != again:
                with (root / f"worker_{rank}.log").open("ab") as f:
                    f.write(data[written[rank] : max(edge, written[rank])])
                written[rank] = max(edge, written[rank])
        reader.refresh()
        live = reader.snapshot()
        once_dir = tmp_path_factory.mktemp("once")
        for rank in range(len(datas)):
            (once_dir / f"worker_{rank}.log").write_bytes((root / f"worker_{rank}.log").read_bytes())
        once = RunReader(once_dir, one_shot=True)
        once.refresh()
        same_reading(live, once.snapshot())


def test_rows_an_earlier_choice_set_aside_come_back_when_it_flips(tmp_path: Path) -> None:
    """Paddle's epoch lines are a file's rows while they are as many as its step rows, summaries once the
    step rows outnumber them: the same watcher first shows them as rows, then as evaluation entries."""
    path = tmp_path / "workerlog.0"
    path.write_text("".join(series_line(1, i) for i in range(3)) + series_line(0, 3))
    reader = RunReader(tmp_path)
    reader.refresh()
    first = reader.snapshot()
    assert len(first.metrics) == 4 and first.evals.empty
    with path.open("a") as f:
        f.write("".join(series_line(0, i) for i in range(4, 10)))
    reader.refresh()
    second = reader.snapshot()
    assert len(second.metrics) == 7 and second.metrics["step"].notna().all()
    assert len(second.evals[second.evals["name"] == "loss"]) == 3
    assert second.ranks.iloc[0]["n_loss"] == 7
    assert len(first.metrics) == 4  # the first snapshot's frame is as it was


def test_a_tick_copies_only_its_own_new_kept_rows(tmp_path: Path) -> None:
    """While rows are set aside and no earlier choice changes, a tick's snapshot holds the earlier kept rows in
    the arrays the last snapshot held (its own rows appended after them; the first tick after a read moves
    them once into room to spare), not a copy of the whole table; an earlier choice that flips builds them
    again, and every frame handed out keeps its values."""
    path = tmp_path / "workerlog.0"
    path.write_text("".join(series_line(0, i) for i in range(1, 20)) + series_line(1, 20))
    reader = RunReader(tmp_path)
    reader.refresh()
    snaps = [reader.snapshot()]
    assert not snaps[0].evals.empty  # the summary is set aside
    for lo in (21, 23, 25):
        with path.open("a") as f:
            f.write("".join(series_line(0, i) for i in range(lo, lo + 2)))
        reader.refresh()
        snaps.append(reader.snapshot())
        assert len(snaps[-1].metrics) == len(snaps[-2].metrics) + 2
    held = [bits(s.metrics) for s in snaps]
    for before, after in itertools.pairwise(snaps[1:]):
        for column in ("loss", "step", "rank", "offset"):
            assert np.shares_memory(before.metrics[column].to_numpy(), after.metrics[column].to_numpy()), column
    with path.open("a") as f:  # summaries now as many as the step rows: every one of them a row again
        f.write("".join(series_line(1, i) for i in range(27, 52)))
    reader.refresh()
    last = reader.snapshot()
    assert len(last.metrics) == len(snaps[-1].metrics) + 1 + 25 and last.evals.empty
    assert not np.shares_memory(snaps[-1].metrics["loss"].to_numpy(), last.metrics["loss"].to_numpy())
    assert [bits(s.metrics) for s in snaps] == held


def _sparse_table(
    rng: np.random.Generator, ticks: list[tuple[int, tuple[float, ...], bool]]
) -> list[tuple[dict[str, object], np.ndarray, int]]:
    """The table's columns after each tick (rows appended; a `drop` tick first removes a file's rows and bumps the
    generation), its metrics mostly NaN: each tick gives metric j a value on a row with chance `p[j]` (0: none
    this tick), on rows kept and set aside alike; and the rows' choices."""
    n_metrics = max(len(p) for _, p, _ in ticks)
    cols: dict[str, np.ndarray] = {
        "rank": np.zeros(0, dtype=np.int64),
        "epoch": np.zeros(0, dtype=np.int16),
        "step": np.zeros(0, dtype=np.int32),
        "loss": np.zeros(0),
        "time": np.zeros(0),
        "offset": np.zeros(0, dtype=np.int64),
        "file": np.zeros(0, dtype=np.int8),
        **{f"m{j}": np.zeros(0) for j in range(n_metrics)},
    }
    aside, generation, out = np.zeros(0, dtype=np.int8), 0, []
    for n, chances, drop in ticks:
        if drop and len(aside):
            keep = np.flatnonzero(cols["file"] != cols["file"][rng.integers(0, len(aside))])
            cols, aside, generation = {c: a[keep] for c, a in cols.items()}, aside[keep], generation + 1
        k = len(aside)
        new: dict[str, np.ndarray] = {
            "rank": rng.integers(0, 3, n),
            "epoch": rng.integers(0, 3, n),
            "step": np.arange(k, k + n),
            "loss": rng.choice([0.5, np.nan, -0.0], n),
            "time": rng.choice([np.nan, 1.7e9], n),
            "offset": np.arange(k, k + n) * 10,
            "file": rng.integers(0, 3, n),
        }
        for j in range(n_metrics):
            p = chances[j] if j < len(chances) else 0.0
            new[f"m{j}"] = np.where(rng.random(n) < p, rng.choice([0.25, -0.0, np.inf, -np.nan], n), np.nan)
        cols = {c: np.concatenate([a, new[c].astype(a.dtype)]) for c, a in cols.items()}
        choice = rng.choice([Aside.KEEP, Aside.EVAL, Aside.DROP], n, p=[0.9, 0.05, 0.05]).astype(np.int8)
        aside = np.concatenate([aside, choice])
        columns: dict[str, object] = dict(cols)
        columns["file"] = pd.Categorical.from_codes(
            cols["file"], dtype=pd.CategoricalDtype(["a.log", "b.log", "c.log"]), validate=False
        )
        out.append((columns, aside, generation))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ticks=st.lists(
        st.tuples(
            st.integers(0, 2500),
            st.lists(st.sampled_from([0.0, 0.0, 0.001, 0.02, 0.6]), min_size=1, max_size=6).map(tuple),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    ),
    seed=st.integers(0, 2**32 - 1),
)
@example(  # a metric valued once, then NaN while the kept rows outgrow its room, then valued again
    ticks=[(900, (0.01, 0.0), False), (2000, (0.0, 0.0), False), (2500, (0.0, 0.0), False), (50, (0.5, 0.0), True)],
    seed=7,
)
def test_sparse_kept_columns_are_the_whole_split_and_hold_only_valued_columns(
    ticks: list[tuple[int, tuple[float, ...], bool]], seed: int
) -> None:
    """Metrics NaN on most rows, some on every kept row (valued only on rows set aside, or nowhere), grown over
    ticks past the rooms they start in, a file dropped (a new generation): every tick's frames equal
    `split_series`, frames handed out keep their values, and a metric NaN on every kept row is the zero-stride
    NaN view (no array held)."""
    kept, handed = KeptRows(), []
    for columns, aside, generation in _sparse_table(np.random.default_rng(seed), ticks):
        metrics = pd.DataFrame(columns, copy=False)
        got = kept.split(metrics, aside, _evals(False), _ranks(), generation, columns)
        want = split_series(metrics, aside, _evals(False), _ranks())
        for g, w in zip(got, want, strict=True):
            _equal(g, w)
        if aside.any() and len(got[0]):
            for c in [c for c in got[0].columns if c.startswith("m")]:
                values = got[0][c].to_numpy()
                assert (values.strides == (0,)) == (values.view(np.uint64) == _NAN_BITS).all(), c
        handed.append((got[0], bits(got[0])))
    for frame, held in handed:
        assert bits(frame) == held


def test_kept_rows_hold_no_dense_copy_of_metrics_nan_on_every_kept_row() -> None:
    """2,000 metrics, each valued only on the rows set aside (an evaluation line's own metrics) but one valued on
    a few kept rows: the kept rows hold the fixed columns and that one metric, not 2,000 columns written NaN
    (~32 MB at 2,000 rows)."""
    rng, n = np.random.default_rng(0), 2000
    aside = np.where(np.arange(n) % 10 == 9, Aside.EVAL, Aside.KEEP).astype(np.int8)
    columns: dict[str, object] = {
        "rank": rng.integers(0, 4, n).astype(np.int64),
        "epoch": np.zeros(n, dtype=np.int16),
        "step": np.arange(n, dtype=np.int32),
        "loss": rng.random(n),
        "time": np.full(n, np.nan),  # no stamps: no array held either
        "offset": np.arange(n, dtype=np.int64),
        "file": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), dtype=pd.CategoricalDtype(["a.log"])),
    }
    for j in range(2000):
        columns[f"m{j}"] = np.where(aside == Aside.EVAL, 0.5, np.nan)
    columns["m0"] = np.where(np.arange(n) % 500 == 0, 0.25, np.nan)  # on 4 kept rows
    metrics = pd.DataFrame(columns, copy=False)
    kept = KeptRows()
    got = kept.split(metrics, aside, _evals(False), _ranks(), 0, columns)
    for g, w in zip(got, split_series(metrics, aside, _evals(False), _ranks()), strict=True):
        _equal(g, w)
    k = len(got[0])
    assert k == 1800
    assert kept.nbytes <= k * (8 + 2 + 4 + 8 + 8 + 1 + 8)  # rank, epoch, step, loss, offset, file codes, m0: no more
    assert got[0]["m1"].to_numpy().strides == (0,) and got[0]["m0"].to_numpy().strides == (8,)
    assert got[0]["m0"].notna().sum() == 4
