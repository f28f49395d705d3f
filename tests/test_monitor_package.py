"""The Monitor as a package (issue 32 item 1): one home for its session keys, the watcher's inputs passed in,
figures computed before they are drawn, rank states counted by value and run statuses typed."""

from __future__ import annotations

import io
import time
import tokenize
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from app.monitor import state
from app.monitor.figure_data import (
    ChartOptions,
    aggregates,
    heat_cells,
    loss_data,
    prepare,
    state_counts,
    y_range,
)
from app.monitor.figures import STATE_LABELS, loss_figure
from app.monitor.source import LIVE_STATUSES, Source, get_watcher
from core.logs import RunWatcher
from core.logs.judgement.status import RankState
from core.run.states import RunStatus

ROOT = Path(__file__).resolve().parent.parent
PAGE = str(ROOT / "pages" / "monitor.py")


def _strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal of a module (an f-string is one STRING token on Python 3.11)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.STRING]


def test_every_monitor_session_key_is_spelled_only_in_state() -> None:
    """`"mon_..."`, `f"mon_{...}"` and `"_mon_..."` literals anywhere in app/ or pages/ but app/monitor/state.py."""
    found = []
    for path in sorted([*(ROOT / "app").rglob("*.py"), *(ROOT / "pages").rglob("*.py")]):
        if path == ROOT / "app" / "monitor" / "state.py":
            continue
        for line, text in _strings(path):
            body = text.lstrip("rbfuRBFU").strip("'\"")
            if body.startswith(("mon_", "_mon_")):
                found.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert found == []


def test_the_state_keys_are_distinct_and_prefixed() -> None:
    keys = {name: value for name, value in vars(state).items() if name.isupper() and isinstance(value, str)}
    widget_keys = [v for n, v in keys.items() if n not in ("MEMO", "ALERT_KEYS", "ALERT_NOTICES", "TIME_BOX")]
    assert len(set(keys.values())) == len(keys)  # no two names for one key
    assert all(v.startswith(state.PREFIX) for v in widget_keys)
    assert state.ranks_key(8) == "mon_ranks_8" and state.ranks_key(8) != state.ranks_key(16)


def _linked_log(tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere.log"
    outside.write_text("".join(f"epoch: 1 step: {i}, loss is {3.0 - i / 10}\n" for i in range(1, 6)))
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "worker_0.log").symlink_to(outside)
    return folder


def _read(watcher: RunWatcher) -> int:
    """Loss rows of the watcher once its first read (in the background) is done."""
    deadline = time.monotonic() + 60
    while watcher.catching_up is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(watcher.snapshot(refresh=True).metrics)


def test_get_watcher_follows_links_only_when_told(tmp_path: Path) -> None:
    """`follow_links` is an argument (it was the session key "mon_follow_links", read behind the caller's back)."""
    folder = str(_linked_log(tmp_path))
    refused = get_watcher(folder, False, None, (), follow_links=False)
    followed = get_watcher(folder, False, None, (), follow_links=True)
    assert followed is not refused  # one watcher per choice, shared by every session that makes it
    assert _read(refused) == 0
    assert _read(followed) == 5
    assert get_watcher(folder, False, None, (), follow_links=True) is followed
    with pytest.raises(TypeError):
        get_watcher(folder, False, None, ())  # type: ignore[call-arg]  # the call this test refuses: no hidden default


@pytest.mark.parametrize("status", [*RunStatus, None])
def test_a_source_may_grow_while_its_run_is_not_over(status: RunStatus | None) -> None:
    """Typed statuses, no slicing of a string tuple: a plain folder (None) and a queued, starting or running
    run may still write; a succeeded, failed or stopped one does not."""
    assert all(isinstance(s, RunStatus) for s in LIVE_STATUSES)
    over = {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.STOPPED}
    assert Source(Path("x"), status=status).may_grow is (status not in over)
    assert (status in LIVE_STATUSES) is (status is not None and status not in over)


def test_rank_states_are_counted_by_value_most_first() -> None:
    states = pd.DataFrame(
        {"rank": range(6), "state": ["running", "crashed", "running", "stalled", "running", "crashed"]}
    )
    counts = state_counts(states)
    assert counts == {RankState.RUNNING: 3, RankState.CRASHED: 2, RankState.STALLED: 1}
    assert list(counts) == [RankState.RUNNING, RankState.CRASHED, RankState.STALLED]
    assert all(isinstance(s, RankState) for s in counts)
    assert state_counts(pd.DataFrame(columns=["rank", "state"])) == {}
    with pytest.raises(ValueError):  # a display label is not a state
        state_counts(pd.DataFrame({"rank": [0], "state": [STATE_LABELS[RankState.RUNNING]]}))


def _metrics(values: dict[int, list[float]]) -> pd.DataFrame:
    rows = [
        {"rank": r, "epoch": 1.0, "step": float(i + 1), "loss": v, "time": 1000.0 + i, "file": f"w{r}", "offset": i}
        for r, vs in values.items()
        for i, v in enumerate(vs)
    ]
    return prepare(pd.DataFrame(rows))


def test_loss_data_computes_the_band_the_lines_and_the_range_before_any_drawing() -> None:
    df = _metrics({0: [4.0, 3.0, 2.0, 1.0], 1: [2.0, 1.0, 1000.0, 0.5]})
    data = loss_data(df, ChartOptions(smoothing=0.0, ignore_outliers=True))
    assert data.band is not None
    assert data.band.lo.tolist() == [2.0, 1.0, 2.0, 0.5] and data.band.hi.tolist() == [4.0, 3.0, 1000.0, 1.0]
    assert data.band.mean.tolist() == [3.0, 2.0, 501.0, 0.75]
    assert [line.rank for line in data.ranks] == [0, 1] and data.ranks[1].smooth.tolist() == [2.0, 1.0, 1000.0, 0.5]
    assert data.y_range is not None and data.y_range[1] < 1000.0  # the spike is left out of the range
    one = loss_data(df, ChartOptions(ranks=(1,), show_band=True, show_ranks=False))
    assert one.band is None and one.ranks == ()  # one rank: no band; per-rank lines off
    fig, n_points, note = loss_figure(df, ChartOptions(smoothing=0.0, ignore_outliers=True))
    assert list(fig.layout.yaxis.range) == list(data.y_range) and note is None
    assert n_points == sum(len(t.x) for t in fig.data) == 3 * 4 + 2 * 4  # band (min, max, mean) + two ranks


def test_a_rank_of_one_point_is_drawn_as_a_marker() -> None:
    """A line through one point draws nothing: a log of one row per rank (ms-swift#3264) looked like an empty chart."""
    one_row = _metrics({0: [-0.032], 3: [0.2446]})
    fig, _, _ = loss_figure(one_row, ChartOptions(smoothing=0.0))
    drawn = [t for t in fig.data if t.name and (t.name.startswith("rank") or t.name == "mean of ranks")]
    assert drawn and all(len(t.x) == 1 and "markers" in t.mode for t in drawn)
    fig, _, _ = loss_figure(_metrics({0: [4.0, 3.0], 1: [2.0, 1.0]}), ChartOptions(smoothing=0.0))
    assert all(t.mode == "lines" for t in fig.data if t.name and t.name.startswith("rank"))


def test_y_range_of_nothing_or_of_non_positive_values_on_a_log_axis_is_none() -> None:
    assert y_range([], log_y=False) is None
    assert y_range([np.array([-1.0, 0.0])], log_y=True) is None


def test_aggregates_of_an_empty_grid_are_none_and_only_known_ranks_are_highlighted() -> None:
    assert aggregates(np.empty((3, 0)), np.arange(3), np.empty(0), [0], 0.0, 16) is None
    grid = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]])
    agg = aggregates(grid, np.array([0, 4, 8]), np.array([1.0, 2.0]), [8, 99, 0], 0.0, 16)
    assert agg is not None
    assert agg.lo.tolist() == [1.0, 2.0] and agg.hi.tolist() == [5.0, 6.0] and agg.mean.tolist() == [3.0, 4.0]
    assert [r for r, _ in agg.highlighted] == [8, 0] and agg.highlighted[0][1].tolist() == [5.0, 6.0]
    capped = aggregates(grid, np.array([0, 4, 8]), np.array([1.0, 2.0]), [0, 4, 8], 0.0, 2)
    assert capped is not None and len(capped.highlighted) == 2


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 60),
    cols=st.integers(0, 300),
    max_rows=st.integers(1, 40),
    max_cols=st.integers(1, 50),
)
def test_heat_cells_never_exceed_their_bounds(rows: int, cols: int, max_rows: int, max_cols: int) -> None:
    grid = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols)
    z, labels, x = heat_cells(grid, np.arange(rows), np.arange(cols, dtype=np.float64), max_rows, max_cols)
    assert z.shape[0] == len(labels) <= max_rows and (z.shape[0] == rows) is (rows <= max_rows)
    assert z.shape[1] == len(x) <= max_cols and (z.shape[1] == cols) is (cols <= max_cols)
    assert z.dtype == np.float32 and x.dtype == np.float32


def test_a_run_of_more_ranks_than_heatmap_rows_shows_before_its_first_loss_line(tmp_path: Path) -> None:
    """Before: 200 ranks with no loss line yet (every big run's first minutes) raised "cannot reshape array of
    size 0" from the heatmap, a traceback instead of the page."""
    for rank in range(200):
        (tmp_path / f"worker_{rank}.log").write_text(f"starting worker {rank}\n")
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["logdir"] = str(tmp_path)
    at.run()
    assert not at.exception, at.exception
    assert [m.value for m in at.metric][:2] == ["200", "0"]
    assert any(c.value.startswith("No loss line yet: the heatmap fills in") for c in at.caption)
    # no empty aggregate chart: what a loss line is, and the line shapes that were seen instead
    assert any(i.value.startswith("No loss lines yet. A loss line has a loss key") for i in at.info)
    assert any("starting worker #" in c.value for c in at.code)


def test_the_big_run_view_counts_ranks_by_state_and_lists_the_ones_to_look_at(tmp_path: Path) -> None:
    """34 ranks (above SCALE_RANKS): the count line names each state once with its count, and the table
    holds only the rank that is not calm."""
    for rank in range(34):
        lines = "".join(f"epoch: 1 step: {s}, loss is {3.0 - s / 10}\n" for s in range(1, 6))
        if rank == 7:
            lines += 'Traceback (most recent call last):\n  File "train.py", line 1\nRuntimeError: boom\n'
        (tmp_path / f"worker_{rank}.log").write_text(lines)
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["logdir"] = str(tmp_path)
    at.run()
    assert not at.exception, at.exception
    line = next(m.value for m in at.markdown if m.value.startswith("**Ranks** ·"))
    assert line == f"**Ranks** · {STATE_LABELS[RankState.RUNNING]}: 33 · {STATE_LABELS[RankState.CRASHED]}: 1"
    table = next(d.value for d in at.dataframe if "node" in d.value.columns)
    assert table["rank"].tolist() == [7] and table["state"].tolist() == [STATE_LABELS[RankState.CRASHED]]


def test_figure_data_neither_draws_nor_touches_the_session() -> None:
    """What the figures show is computed where neither Streamlit nor Plotly is imported (so `figures` and
    `scale` only draw, and these numbers are tested without a page)."""
    import ast

    tree = ast.parse((ROOT / "app" / "monitor" / "figure_data.py").read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] in ("streamlit", "plotly")}
