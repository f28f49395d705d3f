"""Decimal to double, exactly as `float` rounds: the long-double division both bulk readers use for MindSpore's
17-18 digit repr floats (core.logs.tokens.bulk for numpy's form, core.logs.tokens.lmscan for the compiled one),
and the row matrix both hand over (`lm_matrix`)."""

from __future__ import annotations

import numpy as np

from core.logs.tokens.lexicon import ROW_KEYS

__all__ = ["long_double_div"]

_LONG_DOUBLE = np.finfo(np.longdouble).nmant >= 63  # x87 80-bit: 10**k (k <= 27) and 18-digit integers exact
_POW10_LD = np.array([10**k for k in range(19)], dtype=np.longdouble)


def long_double_div(mantissa: np.ndarray, frac: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mantissa / 10**frac rounded to double, and where that may differ from `float` (a tie).

    q = mantissa / 10**frac rounds once to the 64-bit significand Q; rounding Q to 53 bits gives the
    correctly rounded double unless Q sits exactly halfway between two doubles (then the true q may lie
    on either side): those are flagged for the exact path. Without an 80-bit long double all are.
    """
    if not _LONG_DOUBLE:
        return np.zeros(len(mantissa)), np.ones(len(mantissa), dtype=bool)
    q = mantissa.astype(np.longdouble) / _POW10_LD[frac]
    d = q.astype(np.float64)
    r = np.abs(q - d.astype(np.longdouble))  # exact: both have 64-bit significands and are close
    half = np.spacing(d).astype(np.longdouble) / 2
    return d, (r == half) | (r == half / 2)  # below a power of two the lower neighbour is half as far


_ROW_AT = {k: i for i, k in enumerate(ROW_KEYS)}


def lm_matrix(
    epoch: np.ndarray, step: np.ndarray, loss: np.ndarray, obs_time: float, offsets: np.ndarray
) -> np.ndarray:
    """LossMonitor rows as an (n, len(ROW_KEYS)) float64 array, the other fields NaN: what both readers of those
    lines (core.logs.tokens.bulk's numpy pass and lmscan's compiled one) hand over, built in one place."""
    out = np.full((len(loss), len(ROW_KEYS)), np.nan, dtype=np.float64)
    out[:, _ROW_AT["epoch"]] = epoch
    out[:, _ROW_AT["step"]] = step
    out[:, _ROW_AT["loss"]] = loss
    out[:, _ROW_AT["time"]] = obs_time
    out[:, _ROW_AT["offset"]] = offsets
    return out
