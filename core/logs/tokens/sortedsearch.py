"""`np.searchsorted` for queries that come in ascending order (line starts against newlines): one compiled walk.

Why: a 1,024-rank read asks, for each ~8 MB batch, where each of ~14k candidate lines ends among ~50k newlines, and
which line each keyword is in; numpy answers each query by a binary search over the whole array (a cache miss per
step), ~0.3 ms a batch, 25-30 ms of a MindCV read. Sorted queries are answered by walking both arrays once. A query
smaller than the one before is answered by a binary search, so any queries get numpy's answer
(tests/test_sortedsearch.py holds the two equal).

numba is imported only by a read that already loaded it (core.logs.rows.templated.compiled_passes).
"""

from __future__ import annotations

import numba
import numpy as np

from core.logs.tokens import jitcache  # noqa: F401  (numba's cache folder, set before any decoration)

__all__ = ["searchsorted"]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _walk(a: np.ndarray, q: np.ndarray, right: bool, out: np.ndarray) -> None:
    """out[i]: the first index of `a` (ascending) whose value is >= q[i] (> q[i] when `right`)."""
    n = a.size
    j = 0
    for i in range(q.size):
        v = q[i]
        if i == 0 or v < q[i - 1]:  # binary search: numpy's answer whatever the order of the queries
            lo, hi = 0, n
            while lo < hi:
                mid = (lo + hi) >> 1
                if a[mid] < v or (right and a[mid] == v):
                    lo = mid + 1
                else:
                    hi = mid
            j = lo
        else:  # ascending: the answer is at or past the last one
            while j < n and (a[j] < v or (right and a[j] == v)):
                j += 1
        out[i] = j


def searchsorted(a: np.ndarray, q: np.ndarray, side: str = "left") -> np.ndarray:
    """`np.searchsorted(a, q, side)` for int64 arrays (`a` ascending), linear in len(a) + len(q) when `q` ascends."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', not {side!r}")
    if a.dtype != np.int64 or q.dtype != np.int64 or q.ndim != 1 or a.ndim != 1:
        return np.searchsorted(a, q, side="right" if side == "right" else "left")  # (another dtype: numpy's own)
    out = np.empty(q.size, dtype=np.intp)
    _walk(np.ascontiguousarray(a), np.ascontiguousarray(q), side == "right", out)
    return out
