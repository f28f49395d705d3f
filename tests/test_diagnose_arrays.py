"""core.logs.judgement.diagnose on column arrays (issue 30, the real-corpus folder's live tick): each rank's step
time and the norm spikes are computed on the few columns they need, not by pandas selections of the whole table
(a column per metric any log names: 60 on the real-corpus folder, each selection took every one of them).
Held here to the pandas statements they replaced, for any table: ranks in any order and interleaved (a live
table's rows), NaN and infinite values, ranks with no rows or only some sources."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.judgement.diagnose import DiagnoseSettings, diagnose, hung_ranks, rank_step_times
from core.logs.judgement.status import first_of_each_rank, nonfinite_by_rank
from core.logs.rows.cells import as_float
from core.logs.rows.snapshot import ERROR_COLUMNS, RANK_COLUMNS, TIMING_COLUMNS, RunSnapshot

_NAN = float("nan")


def _definition_step_times(snap: RunSnapshot) -> tuple[pd.Series, pd.Series]:
    """`rank_step_times` as it was written with pandas selections (the statement the array version keeps)."""
    m = snap.metrics
    has = m["step_time_ms"].notna() if not m.empty else None
    per_row = (
        m.loc[has, ["rank", "step_time_ms"]].groupby("rank")["step_time_ms"].median()
        if has is not None and has.any()
        else pd.Series(dtype=float)
    )
    t = snap.timings
    timed = t.groupby("rank")["step_time_ms"].median() if not t.empty else pd.Series(dtype=float)
    gaps = pd.Series(dtype=float)
    better = set(per_row.dropna().index) | set(timed.dropna().index)
    need = [int(r) for r in snap.ranks["rank"] if int(r) not in better]
    if need and not m.empty and m["time"].notna().any():
        sub = m.loc[m["time"].notna(), ["rank", "step", "time"]]
        sub = sub if len(better) == 0 else sub[sub["rank"].isin(need)]
        d = sub.groupby("rank")[["step", "time"]].diff()
        ok = (d["step"] > 0) & (d["time"] >= 0)
        gaps = (d.loc[ok, "time"] * 1000.0 / d.loc[ok, "step"]).groupby(sub.loc[ok, "rank"]).median()
    ranks = pd.Index(snap.ranks["rank"].astype(int))
    value = pd.Series(_NAN, index=ranks, dtype=float)
    source = pd.Series("", index=ranks, dtype=object)
    for series, name in ((gaps, "line times"), (timed, "TimeMonitor"), (per_row, "per_step_time")):
        have = series.dropna()
        have = have[have.index.isin(ranks)]
        value[have.index] = have.to_numpy()
        source[have.index] = name
    return value, source


def _definition_spikes(m: pd.DataFrame, s: DiagnoseSettings) -> list[tuple[int, float, float, float]]:
    """`_norm_spikes` as it was written (a selection and a sort of the whole table)."""
    if m.empty or m["global_norm"].isna().all():
        return []
    norms = m["global_norm"]
    finite = norms[np.isfinite(norms)]
    if finite.empty:
        return []
    median = float(finite.median())
    bad = m[(~np.isfinite(norms) & norms.notna()) | (norms > s.spike_factor * median)]
    bad = bad.sort_values("global_norm", ascending=False).head(s.max_listed)
    return [(int(r.rank), float(r.step), float(r.global_norm), median) for r in bad.itertuples()]


def _definition_stragglers(times: pd.Series, sources: pd.Series, s: DiagnoseSettings) -> list[tuple]:
    """The stragglers as `_stragglers` listed them (three label lookups per slow rank), nothing skipped."""
    ok = times.dropna()
    if len(ok) < 2:
        return []
    median = float(ok.median())
    if median <= 0:
        return []
    ratio = ok / median
    slow = ratio[ratio >= s.straggler_ratio].sort_values(ascending=False)
    return [(int(r), float(ok[r]), median, round(float(slow[r]), 3), str(sources[r])) for r in slow.index]


def _definition_last_rows(m: pd.DataFrame, ranks: list[int]) -> np.ndarray:
    """Each of `ranks`' last row, as `nonfinite_by_rank` found it (a search over every row)."""
    rank = m["rank"].to_numpy()
    return first_of_each_rank(rank, np.flatnonzero(np.isin(rank, ranks))[::-1])


_VALUE = st.one_of(
    st.just(_NAN),
    st.sampled_from([0.0, 1.0, 2.5, 100.0, 1e9, float("inf"), float("-inf"), -0.0]),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)


@st.composite
def _snapshots(draw: st.DrawFn) -> RunSnapshot:
    """A snapshot whose metrics interleave up to 5 ranks in any order, with the columns `diagnose` reads and a
    few other metrics (the wide table), a TimeMonitor frame for some ranks and a rank table that may name
    ranks with no rows."""
    n = draw(st.integers(0, 40))
    rows = draw(
        st.lists(
            st.tuples(st.integers(0, 4), st.integers(0, 30) | st.just(-1), _VALUE, _VALUE, _VALUE, _VALUE),
            min_size=n,
            max_size=n,
        )
    )
    rank = np.array([r[0] for r in rows], dtype=np.int64)
    step = np.array([_NAN if r[1] < 0 else float(r[1]) for r in rows])
    metrics = pd.DataFrame(
        {
            "rank": rank,
            "epoch": np.ones(n),
            "step": step,
            "loss": np.array([r[5] for r in rows]),
            "step_time_ms": np.array([r[2] for r in rows]),
            "time": np.array([r[3] for r in rows]),
            "global_norm": np.array([r[4] for r in rows]),
            "offset": np.arange(n, dtype=np.int64),
            "file": pd.Categorical([f"rank_{r}.log" for r in rank]),
            "other_metric": np.full(n, _NAN),
        }
    )
    timed = draw(st.lists(st.tuples(st.integers(0, 6), _VALUE), max_size=6))
    timings = pd.DataFrame([(r, 1, 1, _NAN, v, _NAN, 0, f"rank_{r}.log") for r, v in timed], columns=TIMING_COLUMNS)
    named = sorted(set(draw(st.lists(st.integers(0, 6), max_size=7))) | set(rank.tolist()))
    ranks = pd.DataFrame(
        [(r, f"rank_{r}.log", None, 0, 0, _NAN, _NAN, _NAN, _NAN, 1.0, False, 0, 0, 0, "") for r in named],
        columns=RANK_COLUMNS,
    )
    errors = pd.DataFrame([], columns=ERROR_COLUMNS)
    return RunSnapshot(Path("."), metrics, timings, errors, ranks, [], "flat", 1, 0.0)


@settings(max_examples=300, deadline=None)
@given(_snapshots())
@example(  # a rank with stamped rows only (its line-time gaps), another with its own per-step time
    RunSnapshot(
        Path("."),
        pd.DataFrame(
            {
                "rank": np.array([0, 1, 0, 1, 0], dtype=np.int64),
                "epoch": [1.0] * 5,
                "step": [1.0, 1.0, 2.0, 2.0, 4.0],
                "loss": [1.0] * 5,
                "step_time_ms": [_NAN, 90.0, _NAN, 110.0, _NAN],
                "time": [10.0, _NAN, 10.5, _NAN, 11.5],
                "global_norm": [1.0, 1.0, 50.0, float("inf"), 1.0],
                "file": pd.Categorical(["a", "b", "a", "b", "a"]),
            }
        ),
        pd.DataFrame([], columns=TIMING_COLUMNS),
        pd.DataFrame([], columns=ERROR_COLUMNS),
        pd.DataFrame(
            [(r, "f", None, 0, 0, _NAN, _NAN, _NAN, _NAN, 1.0, False, 0, 0, 0, "") for r in (0, 1)],
            columns=RANK_COLUMNS,
        ),
        [],
        "flat",
        1,
        0.0,
    )
)
def test_step_times_and_norm_spikes_are_the_pandas_statements(snap: RunSnapshot) -> None:
    value, source = rank_step_times(snap)
    want_value, want_source = _definition_step_times(snap)
    pd.testing.assert_series_equal(value, want_value)
    pd.testing.assert_series_equal(source, want_source)
    s = DiagnoseSettings()
    d = diagnose(snap, settings=s)
    got = [(x.rank, x.step, x.global_norm, x.median) for x in d.norm_spikes]
    assert repr(got) == repr(_definition_spikes(snap.metrics, s))  # (repr: a NaN step equals a NaN step)
    if not any(g.ranks for g in d.failure_groups):  # (the definition skips no failed rank)
        slow = [(x.rank, x.step_time, x.median_step_time, x.ratio, x.source) for x in d.stragglers]
        assert slow == _definition_stragglers(want_value, want_source, s)
    nonfinite, recovered = nonfinite_by_rank(snap.metrics)
    rank, step, loss = (snap.metrics[k].to_numpy() for k in ("rank", "step", "loss"))
    last = _definition_last_rows(snap.metrics, list(nonfinite))
    want = {int(rank[i]) for i in last if np.isfinite(loss[i]) and not step[i] <= nonfinite[int(rank[i])][1]}
    assert recovered == want


def test_line_time_gaps_of_interleaved_ranks_are_each_ranks_own() -> None:
    """A live table interleaves ranks: each rank's gaps are between its own consecutive stamped rows, a step
    back (a restart) or a time back gives no gap, and a rank with a per-step time keeps it."""
    nan = _NAN
    metrics = pd.DataFrame(
        {
            "rank": np.array([0, 1, 0, 1, 0, 1, 2], dtype=np.int64),
            "step": [1.0, 1.0, 3.0, 2.0, 2.0, 4.0, 1.0],
            "loss": [1.0] * 7,
            "step_time_ms": [nan, nan, nan, nan, nan, nan, 70.0],
            "time": [100.0, 200.0, 101.0, 200.5, 102.0, 201.0, nan],
            "global_norm": [nan] * 7,
        }
    )
    ranks = pd.DataFrame(
        [(r, "f", None, 0, 0, nan, nan, nan, nan, 1.0, False, 0, 0, 0, "") for r in (0, 1, 2, 3)],
        columns=RANK_COLUMNS,
    )
    snap = RunSnapshot(
        Path("."),
        metrics,
        pd.DataFrame([], columns=TIMING_COLUMNS),
        pd.DataFrame([], columns=ERROR_COLUMNS),
        ranks,
        [],
        "flat",
        1,
        0.0,
    )
    value, source = rank_step_times(snap)
    # rank 0: 1 s over 2 steps (the step back to 2 gives none); rank 1: 0.5 s / 1 step, 0.5 s / 2 steps
    assert value[0] == 500.0 and source[0] == "line times"
    assert value[1] == 375.0 and source[1] == "line times"
    assert value[2] == 70.0 and source[2] == "per_step_time"
    assert value[3] != value[3] and source[3] == ""


def _definition_hung_rows(alive: pd.DataFrame, hung: pd.Series, behind: pd.Series, gap: pd.Series) -> list[tuple]:
    """`hung_ranks`' listed ranks as it read them before: a label lookup per rank (rank, behind, step, gap, time)."""
    out = []
    for rank in alive.index[hung.to_numpy()]:
        last_t = as_float(alive.at[rank, "last_time"])
        out.append((int(rank), float(behind[rank]), as_float(alive.at[rank, "last_step"]), gap[rank], last_t))
    return out


_PROGRESS_VALUE = st.one_of(st.just(_NAN), st.sampled_from([0.0, 1.0, 50.0, 100.0, 200.0, 1e9]))


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(_PROGRESS_VALUE, _PROGRESS_VALUE, st.booleans()), min_size=1, max_size=12),
    order=st.randoms(use_true_random=False),
    failed=st.sets(st.integers(0, 11), max_size=3),
    median_ms=st.one_of(st.none(), st.sampled_from([0.0, 1.0, 1000.0])),
)
def test_hung_ranks_are_read_by_position_as_by_label(
    rows: list[tuple[float, float, bool]], order: object, failed: set[int], median_ms: float | None
) -> None:
    """Ranks in any order (the index is the ranks, not positions), NaN steps and times, finished ranks: each
    hung rank's step, time, lag and reason are the ones the label lookups gave."""
    ranks = list(range(len(rows)))
    order.shuffle(ranks)  # type: ignore[attr-defined]
    progress = pd.DataFrame(
        {"last_step": [r[0] for r in rows], "last_time": [r[1] for r in rows], "finished": [r[2] for r in rows]},
        index=pd.Index(ranks, dtype=np.int64),
    )
    got, _, _ = hung_ranks(progress, failed, median_ms, None, DiagnoseSettings())
    ok = progress[~progress.index.isin(list(failed))]
    steps = ok["last_step"].dropna()
    if steps.empty:
        assert got == []
        return
    done = ok.loc[ok["finished"], "last_step"].dropna()
    reference = max(float(steps.median()), float(done.max())) if not done.empty else float(steps.median())
    alive = ok[~ok["finished"]]
    latest = float(ok["last_time"].max()) if ok["last_time"].notna().any() else None
    behind = reference - alive["last_step"]
    gap = (latest - alive["last_time"]) if latest is not None else pd.Series(_NAN, index=alive.index)
    need = 5.0 * (median_ms or 0.0) / 1000.0
    hung = (behind >= 3) & (gap.isna() | ((gap > need) & (gap > 0)))
    want = sorted(_definition_hung_rows(alive, hung, behind, gap), key=lambda r: (-r[1], r[0]))
    assert [(h.rank, h.behind_steps, h.last_step) for h in got] == [(r[0], r[1], r[2]) for r in want]
    assert [h.last_time for h in got] == [None if r[4] != r[4] else r[4] for r in want]
    for h, r in zip(got, want, strict=True):
        g = r[3]
        assert (f"{g:.0f} s before" in h.reason) == (done.empty and g == g)
