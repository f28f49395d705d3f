"""The compiled reading of decimal numbers at known spans (core.logs.tokens.linescan re-exports both passes): a
number column of lines of one shape (core.logs.rows.templated), bit for bit what `float` gives where one IEEE
operation is exact, the rest left to the caller's exact path.

Why a pass over (lines x columns): a template's columns were read through a flat list of spans built in numpy
(the lines' starts plus each column's offset, the widths broadcast, the result reshaped): at 1,024 ranks x 2,000
steps, one template per file and block, those numpy calls around the parse cost more than the parse.
"""

from __future__ import annotations

import numba
import numpy as np

from core.logs.tokens import jitcache  # noqa: F401  (numba's cache folder, set before any decoration)

__all__ = ["column_numbers", "fixed_numbers"]

_POW10_EXACT = np.array([10.0**k for k in range(23)])  # every 10**k, k <= 22, is a double exactly


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _exact_value(a: np.ndarray, p: int, e: int) -> tuple[float, bool]:
    """(`float(a[p:e])`, True) where the result is exact in one IEEE operation: `[+-]digits[.digits][(e|E)[+-]
    digits]` with a mantissa <= 2**53 and a power of ten <= 22 either way (Clinger's fast path: both operands
    exact, one correctly rounded multiply or divide, so bit for bit what `float` gives); else (0.0, False)."""
    neg = False
    if p < e and (a[p] == 45 or a[p] == 43):  # - +
        neg = a[p] == 45
        p += 1
    mantissa = 0
    digits = 0
    frac = 0
    dot = False
    good = True
    while p < e:
        c = a[p]
        if 48 <= c <= 57:
            if digits < 19:
                mantissa = mantissa * 10 + (c - 48)
            digits += 1
            if dot:
                frac += 1
        elif c == 46 and not dot:
            dot = True
        else:
            break
        p += 1
    if digits == 0 or digits > 16:
        good = False
    power = 0
    if good and p < e:
        if a[p] != 69 and a[p] != 101:  # e E
            good = False
        else:
            p += 1
            eneg = False
            if p < e and (a[p] == 45 or a[p] == 43):
                eneg = a[p] == 45
                p += 1
            edigits = 0
            while p < e and 48 <= a[p] <= 57 and edigits < 4:
                power = power * 10 + (a[p] - 48)
                edigits += 1
                p += 1
            if edigits == 0 or p != e:
                good = False
            if eneg:
                power = -power
    power -= frac
    if not good or mantissa > 9007199254740992 or power > 22 or power < -22:
        return 0.0, False
    value = float(mantissa) * _POW10_EXACT[power] if power >= 0 else float(mantissa) / _POW10_EXACT[-power]
    return (-value if neg else value), True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def fixed_numbers(a: np.ndarray, pos: np.ndarray, width: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`float(a[pos:pos + width])` of each span where the result is exact in one IEEE operation (`_exact_value`),
    and whether it was; anything else (17-digit mantissas, nan, inf) is left to the caller's exact path (`ok`
    False, its value untouched)."""
    ok = np.zeros(pos.size, dtype=np.bool_)
    for i in range(pos.size):
        value, good = _exact_value(a, pos[i], pos[i] + width[i])
        if good:
            values[i] = value
            ok[i] = True
    return ok


@numba.njit(cache=True, nogil=True, boundscheck=False)
def column_numbers(
    a: np.ndarray, starts: np.ndarray, begin: np.ndarray, width: np.ndarray, values: np.ndarray
) -> np.ndarray:
    """What `fixed_numbers` gives for the spans a[starts[i] + begin[k] : + width[k]] (line i, column k), as
    (lines, columns) arrays: `values` filled where exact, the returned `ok` saying where."""
    ok = np.zeros(values.shape, dtype=np.bool_)
    for i in range(starts.size):
        for k in range(begin.size):
            p = starts[i] + begin[k]
            value, good = _exact_value(a, p, p + width[k])
            if good:
                values[i, k] = value
                ok[i, k] = True
    return ok
