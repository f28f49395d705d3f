"""Where any of a few literals starts in a window of bytes, in one compiled pass (core.logs.tokens.anchors).

Why: a failure printed at a chatter level is found by its kind's anchors at the end of every read block
(core.logs.rows.failures.chatter_failures); one `bytes.find` per anchor searched the window 4 times, ~6 % of a
1,024-file synthetic read's CPU. This pass is a Wu-Manber search: a window as long as the shortest literal
slides along the bytes, skipping by its last two bytes (hashed into a 4 KiB table) as far as no literal's opening
could be passed (most steps move the whole window less one byte), and every literal is compared where those bytes
may end one's opening. It finds exactly the starts `bytes.find` finds (tests/test_chatter_anchors.py holds the two
equal). ~27 us for a MindCV log's last 32 KiB against ~40 us for the 4 finds.

numba is imported only by a read that already loaded it (core.logs.rows.templated.compiled_passes).
"""

from __future__ import annotations

import numba
import numpy as np

from core.logs.tokens import jitcache  # noqa: F401  (numba's cache folder, set before any decoration)

__all__ = ["anchor_starts"]


@numba.njit(cache=True, nogil=True, boundscheck=False)
def anchor_starts(
    a: np.ndarray, flat: np.ndarray, bounds: np.ndarray, skip: np.ndarray, lo: int, end: int
) -> np.ndarray:
    """The ascending starts in a[lo:end] of every literal wholly inside it (literal `k` is flat[bounds[k] :
    bounds[k + 1]], each at least 2 bytes; `skip[h]`: how far a window as long as the shortest literal, `m`, may
    move when its last two bytes `b`, `c` hash to `h = (b << 5 ^ c) & 4095`; 0 where they may end some literal's
    opening of `m` bytes). A start where two literals open is listed once."""
    m = bounds[1] - bounds[0]
    for k in range(1, bounds.size - 1):
        m = min(m, bounds[k + 1] - bounds[k])
    out = np.empty(16, dtype=np.int64)  # (grown when full: hits are rare, a window may hold many)
    n = 0
    i = lo
    while i + m <= end:
        step = skip[((np.int64(a[i + m - 2]) << 5) ^ a[i + m - 1]) & 4095]
        if step:
            i += step
            continue
        for k in range(bounds.size - 1):
            s, e = bounds[k], bounds[k + 1]
            if i + (e - s) > end:
                continue
            same = True
            for j in range(e - s):
                if a[i + j] != flat[s + j]:
                    same = False
                    break
            if same:
                if n == out.size:
                    out = np.concatenate((out, np.empty(n, dtype=np.int64)))
                out[n] = i
                n += 1
                break
        i += 1
    return out[:n]
