"""The keywords' letters around a byte the compiled scan flagged (core.logs.tokens.linescan.scan_kernel inlines
these): whether the bytes before and after it spell a keyword of core.logs.tokens.lexicon.KEYWORDS; and whether a
line begins as lexicon.KEYED_START (llm.c's `s:0 trl:`), tested at each line's start.

Split off linescan (at the module-length bound). numba's disk cache keys a function by its own file's stamp, and
these are compiled into linescan's kernel: jitcache.py keys the cache by the whole package's source.
"""

from __future__ import annotations

import numba
import numpy as np

from core.logs.tokens import jitcache  # noqa: F401  (numba's cache folder, set before any decoration)

__all__ = ["ENT", "PERPLE", "cross_entropy", "follows", "keyed_start"]

ENT, PERPLE, _ENTROPY = (np.frombuffer(w, dtype=np.uint8).copy() for w in (b"ent", b"perple", b"entropy"))


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def follows(a: np.ndarray, i: int, end: int, text: np.ndarray) -> bool:
    """Whether `a[i:]` begins with the lower-case `text` (a keyword's letters around a flagged byte), in any case."""
    if i + len(text) > end:
        return False
    k = 0
    while k < len(text) and (a[i + k] | 32) == text[k]:
        k += 1
    return k == len(text)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def cross_entropy(a: np.ndarray, first: int, end: int) -> bool:
    """Whether the `ss` at `a[first]` (its `o` seen) is `cross_entropy`'s / `cross entropy`'s / `crossentropy`'s: only
    an `oss` asks."""
    if first < 3 or (a[first - 2] | 32) != 114 or (a[first - 3] | 32) != 99 or first + 2 >= end:
        return False
    if a[first + 2] == 95 or a[first + 2] == 32:
        return follows(a, first + 3, end, _ENTROPY)
    return follows(a, first + 2, end, _ENTROPY)


_STAMP = np.frombuffer(b"[dddd-dd-dd dd:dd:dd] ep. ", dtype=np.uint8).copy()  # `d` a digit, a letter any case
_UP, _COLON, _TRAIN = (np.frombuffer(w, dtype=np.uint8).copy() for w in (b" : up. ", b" :", b" train "))
_PASS, _BATCH, _COMMA = (np.frombuffer(w, dtype=np.uint8).copy() for w in (b"pass", b", batch", b", "))
_TENSOR, _NAN = (np.frombuffer(w, dtype=np.uint8).copy() for w in (b"tensor(", b"nan"))
_PIPES, _PCT, _MIN, _SEC = (np.frombuffer(w, dtype=np.uint8).copy() for w in (b" || ", b"% (", b"m ", b"s) "))


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _digits_then(a: np.ndarray, j: int, end: int, text: np.ndarray) -> int:
    """Where digits at `a[j]` (one or more) then `text` (letters in any case) end, or -1."""
    k = j
    while k < end and 48 <= a[k] <= 57:
        k += 1
    if k == j or k + len(text) > end:
        return -1
    for t in range(len(text)):
        if (a[k + t] | 32 if 65 <= a[k + t] <= 90 else a[k + t]) != text[t]:
            return -1
    return k + len(text)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _marian_start(a: np.ndarray, i: int, end: int) -> bool:
    """Whether the line at `a[i]` begins as `[2017-10-24 10:08:52] Ep. 1 : Up. 590 :` (Marian's row)."""
    if i + len(_STAMP) > end or (a[i + 22] | 32) != 101 or (a[i + 23] | 32) != 112 or a[i + 24] != 46:
        return False  # (`ep.` after the stamp first: another stamped line, MindCV's, turned away at once)
    for t in range(len(_STAMP)):
        c, want = a[i + t], _STAMP[t]
        if want == 100:
            if not 48 <= c <= 57:
                return False
        elif (c | 32 if 65 <= c <= 90 else c) != want:
            return False
    j = _digits_then(a, i + len(_STAMP), end, _UP)
    return j >= 0 and _digits_then(a, j, end, _COLON) >= 0


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _colon_digits_then(a: np.ndarray, j: int, end: int, text: np.ndarray) -> int:
    """Where an optional `:`, one space, digits, then `text` (any case) at `a[j]` end, or -1 (-1 when `j` is)."""
    if 0 <= j < end and a[j] == 58:
        j += 1
    if j < 0 or j >= end or a[j] != 32:
        return -1
    return _digits_then(a, j + 1, end, text)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _paddle_start(a: np.ndarray, i: int, end: int) -> bool:
    """Whether the line at `a[i]` begins as `Pass: 0, Batch: 1, ` (PaddlePaddle v1's event handler's row; the
    colons optional: `Pass 0, Batch 0, Cost 2.30`)."""
    j = _colon_digits_then(a, i + 4 if follows(a, i, end, _PASS) else -1, end, _BATCH)
    return _colon_digits_then(a, j, end, _COMMA) >= 0


@numba.njit(cache=True, nogil=True, boundscheck=False)  # (not inlined: rare, kept out of the hot loop)
def _bracket_count_start(a: np.ndarray, i: int, end: int) -> bool:
    """Whether the line at `a[i]` (a `[`, its `]` four bytes on) begins as `[  0]     520 || ` (YOLACT's row:
    the epoch padded to three, the iteration, `||`)."""
    j = i + 1
    while j < i + 3 and a[j] == 32:
        j += 1
    k = j
    while k < i + 4 and 48 <= a[k] <= 57:
        k += 1
    if k != i + 4 or i + 6 >= end or a[i + 5] != 32:
        return False
    k = i + 5
    while k + 1 < end and a[k + 1] == 32:
        k += 1
    return _digits_then(a, k + 1, end, _PIPES) >= 0


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _digit_start(a: np.ndarray, i: int, end: int) -> bool:
    """Whether the line at `a[i]` (a digit) begins as `0 train ` (build-nanogpt's row) or `5000 5% (0m 12s) `
    (iteration, percent done, elapsed: the PyTorch char-RNN tutorial's progress row): the digits read once."""
    k = i
    while k < end and 48 <= a[k] <= 57:
        k += 1
    if k + 2 >= end or a[k] != 32:
        return False
    if 48 <= a[k + 1] <= 57:
        j = _digits_then(a, k + 1, end, _PCT)
        j = _digits_then(a, j, end, _MIN) if j >= 0 else -1
        return j >= 0 and _digits_then(a, j, end, _SEC) >= 0
    return _digits_then(a, i, end, _TRAIN) >= 0  # (the value's spelling is the notation's: `-1.#INF`, `nan`)


@numba.njit(cache=True, nogil=True, boundscheck=False)  # (not inlined: rare, kept out of the hot loop)
def _tensor_start(a: np.ndarray, i: int, end: int) -> bool:
    """Whether the line at `a[i]` (a `t`) begins as `tensor(` then a number's first byte (`-`, a digit, `nan`): a
    torch scalar printed alone (`print(loss)`), read by notations_keyed.lone_scalar_tensor."""
    if not follows(a, i, end, _TENSOR) or i + 8 > end:
        return False
    c = a[i + 7]
    return c == 45 or 48 <= c <= 57 or follows(a, i + 7, end, _NAN)


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def keyed_start(a: np.ndarray, i: int, end: int) -> bool:
    """Whether the line at `a[i]` begins as core.logs.tokens.lexicon.KEYED_START, `s:<digits> trl:` or
    `s:<digits> tel:` in any case (llm.c's main.log), Marian's `[<stamp>] Ep. N : Up. N :`, build-nanogpt's
    `<digits> train `, PaddlePaddle v1's `Pass: N, Batch: N, `, YOLACT's `[  N] N || `, char-RNN's
    `N N% (Nm Ns) ` or a torch scalar's `tensor(N`: tested once a line, at its start."""
    if i < end and a[i] == 91:  # (a `[` then a digit first: MindSpore's `[INFO]` turned away without a call)
        if i + 4 < end and a[i + 4] == 93:  # YOLACT's `[  0]     520 || B: 3.451 | ... | T: 12.031 || ...`
            return _bracket_count_start(a, i, end)
        return i + 1 < end and 48 <= a[i + 1] <= 57 and _marian_start(a, i, end)
    if i < end and 48 <= a[i] <= 57:  # build-nanogpt's `0 train 11.226211`, char-RNN's `5000 5% (0m 12s) 2.4177`
        return _digit_start(a, i, end)
    if i < end and (a[i] | 32) == 116:  # a torch scalar printed alone, `tensor(3.2207, device='cuda:0')`
        return _tensor_start(a, i, end)
    if i < end and (a[i] | 32) == 112:  # PaddlePaddle v1's `Pass: 0, Batch: 1, TrainCost: 93.167046`
        return _paddle_start(a, i, end)
    if i + 1 >= end or (a[i] | 32) != 115 or a[i + 1] != 58:
        return False
    j = i + 2
    while j < end and 48 <= a[j] <= 57:
        j += 1
    if j == i + 2 or j + 5 > end or a[j] != 32 or (a[j + 1] | 32) != 116 or (a[j + 3] | 32) != 108:
        return False
    second = a[j + 2] | 32
    return (second == 114 or second == 101) and a[j + 4] == 58
