"""LossMonitor lines read by one compiled pass (`epoch: 1 step: 7, loss is 2.3139476776123047`), for a big block.

Why: numpy's form (core.logs.tokens.bulk.lm_block) takes ~40 array operations per block over (lines, 24) byte
matrices: at 1,024 ranks x 2,000 steps a block is one rank's log of 2,000 loss lines, and those operations cost
a LossMonitor read more than a third of its time, about as much as grep's whole pass. This loop walks each
candidate line once. It takes exactly the lines numpy's form takes, and gives the same numbers: a value whose
mantissa is at most 2**53 here (one correctly rounded division, as numpy does), MindSpore's 17-18 digit repr
floats by the caller's long-double division, longer ones by `float` (core.logs.tokens.bulk.lm_rows).
tests/test_logs_fastpath.py holds the two forms equal.

numba is imported only by a read that already loaded it (core.logs.rows.templated.compiled_passes).
"""

from __future__ import annotations

import numba
import numpy as np

from core.logs.tokens import jitcache  # noqa: F401  (numba's cache folder, set before any decoration)
from core.logs.tokens.exact import lm_matrix, long_double_div

__all__ = ["FAST", "LONG", "MID", "lm_kernel", "lm_rows"]

FAST = 1  # the value is computed (mantissa <= 2**53)
MID = 2  # 17-18 digits: mantissa / 10**frac in long double by the caller
LONG = 3  # more digits: `float` of the text by the caller

_POW10 = np.array([10.0**k for k in range(19)])
_MANTISSA_MAX = 1 << 53
_MAX_INT_DIGITS = (
    12  # epoch/step digit runs taken here (as numpy's `_DIGITS_W` window: 11 digits); longer ones per line
)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _literal(a: np.ndarray, p: int, end: int, text: np.ndarray) -> bool:
    if p + text.size > end:
        return False
    for k in range(text.size):  # noqa: SIM110 (numba: no generator)
        if a[p + k] != text[k]:
            return False
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _uint_at(a: np.ndarray, p: int, end: int) -> tuple[int, int, int]:
    """The decimal digits at `a[p:end]` (at most `_MAX_INT_DIGITS`): their value, how many, where they end."""
    n = 0
    value = 0
    while p < end and 48 <= a[p] <= 57 and n < _MAX_INT_DIGITS:
        value = value * 10 + (a[p] - 48)
        n += 1
        p += 1
    return value, n, p


@numba.njit(cache=True, nogil=True, boundscheck=False)
def lm_kernel(
    a: np.ndarray,
    starts: np.ndarray,
    end: int,
    epoch_text: np.ndarray,
    step_text: np.ndarray,
    loss_text: np.ndarray,
    status: np.ndarray,
    epoch: np.ndarray,
    step: np.ndarray,
    value: np.ndarray,
    mantissa: np.ndarray,
    frac: np.ndarray,
    neg: np.ndarray,
    value_at: np.ndarray,
    value_len: np.ndarray,
) -> None:
    """Per line at `starts` (in `a[:end]`): `status` 0 when it is not a whole `epoch: D[,] step: D[,] loss is V\\r?\\n`
    line of a plain decimal V (sign, digits, at most one dot), else FAST / MID / LONG with its numbers."""
    for i in range(starts.size):
        status[i] = 0
        p = starts[i]
        if not _literal(a, p, end, epoch_text):
            continue
        p += epoch_text.size
        e, n, p = _uint_at(a, p, end)
        if n == 0 or n >= _MAX_INT_DIGITS:
            continue
        if p < end and a[p] == 44:
            p += 1
        if not _literal(a, p, end, step_text):
            continue
        p += step_text.size
        s, n, p = _uint_at(a, p, end)
        if n == 0 or n >= _MAX_INT_DIGITS:
            continue
        if p < end and a[p] == 44:
            p += 1
        if not _literal(a, p, end, loss_text):
            continue
        p += loss_text.size
        at = p
        minus = False
        if p < end and (a[p] == 45 or a[p] == 43):
            minus = a[p] == 45
            p += 1
        digits = 0
        dots = 0
        after = 0  # digits after the dot
        m = 0
        while p < end:
            c = a[p]
            if 48 <= c <= 57:
                if digits < 18:
                    m = m * 10 + (c - 48)
                digits += 1
                after += dots
            elif c == 46:
                dots += 1
            else:
                break
            p += 1
        if digits == 0 or dots > 1:
            continue
        if p < end and a[p] == 13:  # \r\n
            if p + 1 >= end or a[p + 1] != 10:
                continue
        elif p >= end or a[p] != 10:
            continue
        epoch[i] = e
        step[i] = s
        neg[i] = minus
        value_at[i] = at
        value_len[i] = p - at
        if digits > 18:
            status[i] = LONG
        elif m > _MANTISSA_MAX:
            status[i] = MID
            mantissa[i] = m
            frac[i] = after
        else:
            v = m / _POW10[after]
            value[i] = -v if minus else v
            status[i] = FAST


_EPOCH_TEXT, _STEP_TEXT, _LOSS_TEXT = (np.frombuffer(t, dtype=np.uint8) for t in (b"epoch: ", b" step: ", b" loss is "))


def lm_rows(buf: bytes | bytearray, starts: np.ndarray, base: int, obs_time: float) -> tuple[np.ndarray, np.ndarray]:
    """core.logs.tokens.bulk.lm_block's (mask over `starts`, rows), by `lm_kernel`: the same lines, the same numbers."""
    chunk = np.frombuffer(buf, dtype=np.uint8)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    # only a line starting with `e` can be one (`lm_kernel` asks for `epoch: ` first): other suites' candidates
    # (MindCV, Megatron: ~14k a batch, none of them) are ruled out by one gather, not the kernel and its 9 arrays
    maybe = np.flatnonzero(chunk[np.minimum(starts, len(chunk) - 1)] == _EPOCH_TEXT[0]) if len(chunk) else starts
    if len(maybe) < len(starts):
        take = np.zeros(len(starts), dtype=bool)
        if len(maybe):
            take[maybe], rows = lm_rows(buf, starts[maybe], base, obs_time)
            return take, rows
        return take, lm_matrix(starts[:0], starts[:0], np.empty(0), obs_time, starts[:0] + base)
    n = len(starts)
    status = np.empty(n, dtype=np.uint8)
    epoch, step, mantissa, frac = (np.empty(n, dtype=np.int64) for _ in range(4))
    value_at, value_len = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    value, neg = np.empty(n), np.empty(n, dtype=np.bool_)
    lm_kernel(
        chunk,
        starts,
        len(chunk),
        _EPOCH_TEXT,
        _STEP_TEXT,
        _LOSS_TEXT,
        status,
        epoch,
        step,
        value,
        mantissa,
        frac,
        neg,
        value_at,
        value_len,
    )
    take = status != 0
    idx = np.flatnonzero(take)
    mid = idx[status[idx] == MID]
    rest = idx[status[idx] == LONG]
    if len(mid):
        d, tie = long_double_div(mantissa[mid], frac[mid])
        value[mid] = np.where(neg[mid], -d, d)
        rest = np.concatenate([rest, mid[tie]])
    for i in rest.tolist():  # a midpoint or over 18 digits: `float` itself
        value[i] = float(bytes(buf[value_at[i] : value_at[i] + value_len[i]]))
    return take, lm_matrix(epoch[idx], step[idx], value[idx], obs_time, starts[idx] + base)
