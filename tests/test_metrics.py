"""core.logs.judgement.metrics: TensorBoard smoothing, global step, aggregates, downsampling, outlier range."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.logs.judgement.metrics import (
    add_global_step,
    add_time_axes,
    downsample,
    ema_smooth,
    infer_steps_per_epoch,
    outlier_range,
    rank_band,
)


def tensorboard_smooth(values: list[float], w: float) -> list[float]:
    """TensorBoard's scalar card smoothing, transcribed literally (the oracle)."""
    last, num_accum, out = 0.0, 0, []
    is_constant = all(v == values[0] for v in values)
    for v in values:
        if is_constant or not math.isfinite(v):
            out.append(v)
        else:
            last = last * w + (1 - w) * v
            num_accum += 1
            debias = 1 - w**num_accum if w != 1 else 1
            out.append(last / debias)
    return out


floats = st.one_of(st.floats(-1e6, 1e6), st.sampled_from([math.nan, math.inf, -math.inf]))


@given(st.lists(floats, min_size=1, max_size=60), st.floats(0, 0.999))
def test_ema_matches_tensorboard(values: list[float], w: float) -> None:
    got = ema_smooth(values, w)
    want = tensorboard_smooth(values, w)
    for g, x in zip(got, want, strict=True):
        if math.isnan(x):
            assert math.isnan(g)
        else:
            assert g == pytest.approx(x, rel=1e-9, abs=1e-6)


def test_ema_edges() -> None:
    assert ema_smooth([], 0.6).size == 0
    assert ema_smooth([1.0, 2.0], 0.0).tolist() == [1.0, 2.0]
    assert ema_smooth([3.0, 3.0, 3.0], 0.9).tolist() == [3.0, 3.0, 3.0]
    assert ema_smooth([1.0, 5.0], 0.5)[0] == 1.0  # debiased: the first point is not pulled to 0
    with pytest.raises(ValueError):
        ema_smooth([1.0], 1.5)


def _lossmonitor(epochs: int, steps: list[int], first_epoch: int = 1) -> pd.DataFrame:
    rows = [(r, e, s, 1.0) for r in (0, 1) for e in range(first_epoch, first_epoch + epochs) for s in steps]
    return pd.DataFrame(rows, columns=["rank", "epoch", "step", "loss"])


def test_global_step_from_epochs() -> None:
    df = _lossmonitor(3, [2, 4, 6, 8, 10])
    assert infer_steps_per_epoch(df) == 10
    gs = add_global_step(df).query("rank == 0")["global_step"].tolist()
    assert gs == [2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
    gs0 = add_global_step(_lossmonitor(2, [5, 10], first_epoch=0)).query("rank == 1")["global_step"].tolist()
    assert gs0 == [5, 10, 15, 20]


def test_global_step_totals_counter_and_global_steps() -> None:
    mf = pd.DataFrame({"rank": [0, 0], "epoch": [1, 2], "step": [19, 1], "steps_total": [19, 19], "loss": [1, 1]})
    assert add_global_step(mf)["global_step"].tolist() == [19, 20]
    old = pd.DataFrame({"rank": [0, 0], "epoch": [np.nan, np.nan], "step": [193, 194], "loss": [1, 1]})
    assert add_global_step(old)["global_step"].tolist() == [193, 194]
    bare = pd.DataFrame({"rank": [0, 1, 0], "epoch": [np.nan] * 3, "step": [np.nan] * 3, "loss": [1, 2, 3]})
    assert add_global_step(bare)["global_step"].tolist() == [1, 1, 2]
    assert add_global_step(bare.iloc[:0])["global_step"].empty


def test_time_axes() -> None:
    df = pd.DataFrame({"time": [100.0, 101.5, np.nan]})
    out = add_time_axes(df)
    assert out["relative_s"].iloc[:2].tolist() == [0.0, 1.5] and math.isnan(out["relative_s"].iloc[2])
    assert out["wall_time"].iloc[0] == pd.Timestamp(100, unit="s")


def test_rank_band() -> None:
    df = pd.DataFrame({"rank": [0, 1, 0, 1], "global_step": [1, 1, 2, 2], "loss": [1.0, 3.0, np.inf, 2.0]})
    band = rank_band(df)
    assert band["mean"].tolist() == [2.0, 2.0] and band["min"].tolist() == [1.0, 2.0]
    assert band["max"].tolist() == [3.0, 2.0] and band["n_ranks"].tolist() == [2, 2]


def test_downsample_keeps_shape_and_nans() -> None:
    n = 200_000
    x = np.arange(n, dtype=np.float64)
    y = np.sin(x / 1000)
    y[123_456] = 50.0  # a spike must survive
    y[7] = np.nan
    idx = downsample(x, y, n_out=2000)
    assert len(idx) <= 2001 + 1 and 123_456 in idx and 7 in idx
    assert (np.diff(idx) > 0).all()
    assert downsample(x[:10], y[:10]).tolist() == list(range(10))


def test_outlier_range() -> None:
    v = np.concatenate([np.linspace(1, 2, 1000), [1e6, np.nan, np.inf]])
    lo, hi = outlier_range(v)
    assert 0.8 < lo < 1.1 and 1.9 < hi < 2.2
    assert outlier_range([np.nan]) is None
    assert outlier_range([5.0, 5.0]) == pytest.approx((4.95, 5.05))
