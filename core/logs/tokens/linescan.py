"""The bulk reader's compiled passes: one over a block's bytes (every newline, the candidate lines, the
keyword lines), one over its candidate lines (which known line shape each has), one over the number
spans of those lines (exact decimals).

Why compiled: three C-speed passes per block (a newline scan, an `re` search per keyword over a lower-cased
copy), each about grep's whole pass, put ingest at 0.06-0.26x `grep -c` (issue 18 wants 0.5x). This loop
tests eight bytes at a time (SWAR: a word holding no newline, `v`, `x` or `ss` pair is skipped in a few
integer operations) and looks at single bytes only in the words that hold one.

What it finds is exactly what the reference definitions give (tests/test_logs_fastpath.py holds it to
them with hypothesis):
- candidates: the start of every line after a newline that `core.logs.tokens.bulk.RE_SCAN` matches (a line
  that does not begin with `[` or a newline, or begins with `[E` / `[C` or a launcher's tag) or that holds
  one of `core.logs.tokens.lexicon.KEYWORDS` in any case or begins as its KEYED_START (llm.c's, Marian's or
  build-nanogpt's row, kwletters.keyed_start; only when `keywords`; `KEYWORDS_TESTED` names the ones this loop
  tests: a test holds it to the lexicon's); the first line is the caller's to read, as before;
- newlines: every `\\n` in `chunk[:end]`;
- keyword lines: the start of each candidate line holding a keyword (what `plain.WorthScan.look` must keep).

numba is imported only by a read of a block of `ReaderSettings.compiled_min` (1 MB) or more (smaller
ones, a live tick's few lines among them, take the definitions' path: `core.logs.tokens.bulk.scan_by_definition`),
so a small read never pays its import (~0.3 s) or its cached-code load (~0.2 s); the dashboard pays them
once, on a thread at start (`warm_up`). `stamps.stamped_error` and `kwletters`' checks are compiled into the
kernel here; numba's cache folder is keyed by the whole package's source (jitcache.py), so a change to them is seen.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from core.logs.tokens import jitcache  # noqa: F401  (numba's cache folder, set before any decoration)
from core.logs.tokens.kwletters import ENT, PERPLE, cross_entropy, follows, keyed_start
from core.logs.tokens.numscan import column_numbers, fixed_numbers
from core.logs.tokens.stamps import stamp_parts, stamped_error

__all__ = [
    "column_numbers",
    "fixed_numbers",
    "match_shapes",
    "scan_block",
    "stamp_parts",
    "warm_up",
    "words_of",
    "worth_lines",
]

_LO = np.uint64(0x0101010101010101)
_HI = np.uint64(0x8080808080808080)
_NL = np.uint64(0x0A0A0A0A0A0A0A0A)
_S = np.uint64(0x7373737373737373)  # "s"
_V = np.uint64(0x7676767676767676)  # "v"
_X = np.uint64(0x7878787878787878)  # "x"
_CASE = np.uint64(0x2020202020202020)  # OR-ed in: "S" -> "s", "V" -> "v", ... (no other byte becomes one of them)
_LAST = np.uint64(0x8000000000000000)  # the flag bit of a word's last byte
_EIGHT = np.uint64(8)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_SEVEN = np.uint64(7)
_TOP = np.uint64(56)
_BYTE_FLAG = np.uint64(0x80)  # the flag bit of a word's first byte
_INDEX = np.uint64(0x0001020304050607)  # (flag >> 7) * this: the flagged byte's index in the top byte


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _zero_bytes(x: np.uint64) -> np.uint64:
    """The high bit of every zero byte of `x` is set (and maybe a byte above one: a superset, never less)."""
    return (x - _LO) & ~x & _HI


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _host_char(c: int) -> bool:
    """A byte of a host name in OpenMPI's `[host:pid] ` tag: a letter, digit, `_`, `.` or `-`."""
    return 48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122 or c == 95 or c == 46 or c == 45


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _candidate(a: np.ndarray, line: int, end: int) -> bool:
    """Whether the line starting at `line` is a candidate by its first bytes (core.logs.tokens.bulk.CANDIDATE_START):
    not `[` nor empty, or `[E` / `[C`, or a launcher's tag `[1,2]...`, `[6]<...`, `[rank6...`, `[host:pid] `, a line
    number `[1763] `, a process group's `[Rank 6 ...`, or a `[date]` stamp before an error level (`Error:` too)."""
    if line >= end:
        return False
    first = a[line]
    if first != 91:
        return first != 10
    if line + 1 >= end:
        return False
    b = a[line + 1]
    if b == 69 or b == 67:
        return True
    if b == 114 or b == 82:  # [rank + a digit, or [Rank + a space + a digit (torch's `[Rank 0] Watchdog ...`)
        p = line + 5 + (b == 82)
        return (
            p < end
            and a[line + 2] == 97
            and a[line + 3] == 110
            and a[line + 4] == 107
            and (b == 114 or a[line + 5] == 32)
            and 48 <= a[p] <= 57
        )
    if not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122):
        return False
    p = line + 1
    while p < end and 48 <= a[p] <= 57:
        p += 1
    if p > line + 1 and p < end and a[p] == 44:  # [digits,
        return True
    if p > line + 1 and p + 1 < end and a[p] == 93 and (a[p + 1] == 60 or (a[p + 1] == 32 and 2 < p - line < 11)):
        return True  # [digits]< (horovodrun's `[6]<stderr>:`), [2-9 digits]<space> (a log viewer's line number)
    p = line + 2
    while p < end and _host_char(a[p]):
        p += 1
    if p < end and a[p] == 58:  # [host:
        q = p + 1
        p = q
        while p < end and 48 <= a[p] <= 57:
            p += 1
        if p > q and p + 1 < end and a[p] == 93 and a[p + 1] == 32:  # [host:digits]<space>
            return True
    return 48 <= b <= 57 and stamped_error(a, line, end)


KEYWORDS_TESTED = (
    b"loss",
    b"xent",
    b"cross_entropy",
    b"cross entropy",
    b"crossentropy",
    b"perplexity",
    b"val",
)  # scan_kernel's


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _word_hits(v: np.uint64, keywords: bool) -> np.uint64:
    """The flag bits of the bytes to look at: a newline, an `s` before an `s` or last, and (keywords) a `v` or an
    `x` (any case; a superset)."""
    low = v | _CASE
    s = _zero_bytes(low ^ _S)
    hits = _zero_bytes(v ^ _NL) | (s & ((s >> _EIGHT) | _LAST))
    if keywords:
        hits |= _zero_bytes(low ^ _V) | _zero_bytes(low ^ _X)
    return hits


@numba.njit(cache=True, nogil=True, boundscheck=False)
def scan_kernel(
    a: np.ndarray,
    words: np.ndarray,
    lo: int,
    hi: int,
    end: int,
    keywords: bool,
    newlines: np.ndarray,
    starts: np.ndarray,
    kw_lines: np.ndarray,
) -> tuple[int, int, int]:
    """Fill the three outputs for the bytes [lo, hi) of `a[:end]`; their lengths, or (-1, -1, -1) when one is
    too small (call again, bigger). `lo` is 0 (the first line is the caller's) or just after a newline, `hi`
    just after one: two ranges that meet at a newline give, end to end, what the whole gives. In a word that
    holds something only its flagged bytes are looked at, lowest first (its eight one by one cost 25 % more)."""
    n_nl = 0
    n_st = 0
    n_kw = 0
    line = lo  # start of the current line
    cand = lo > 0 and _candidate(a, lo, end)  # the current line is a candidate by its first bytes
    kw = lo > 0 and keywords and keyed_start(a, lo, end)  # the current line holds a keyword (or begins as one)
    stop = hi // 8  # words [.., stop) lie inside the range
    p = lo
    while p < hi:
        if (p & 7) == 0 and p + 8 <= hi:  # whole words: skip those that hold nothing to look at
            w = p >> 3
            hits = _ZERO
            while w < stop:
                hits = _word_hits(words[w], keywords)
                if hits != _ZERO:
                    break
                w += 1
            if w >= stop:
                p = stop * 8
                continue
            base = w * 8
            p = base + 8
        else:  # a byte before the first whole word or after the last: flagged alone
            base = p & ~7
            hits = _BYTE_FLAG << np.uint64(8 * (p & 7))
            p += 1
        while hits != _ZERO:
            bit = hits & (~hits + _ONE)  # the lowest flagged byte
            hits ^= bit
            i = base + int(((bit >> _SEVEN) * _INDEX) >> _TOP)
            c = a[i]
            if c == 10:
                if n_nl >= newlines.size:
                    return -1, -1, -1
                newlines[n_nl] = i
                n_nl += 1
                if line > 0 and (cand or kw):
                    if n_st >= starts.size or n_kw >= kw_lines.size:
                        return -1, -1, -1
                    starts[n_st] = line
                    n_st += 1
                    if kw:
                        kw_lines[n_kw] = line
                        n_kw += 1
                line = i + 1
                kw = keywords and keyed_start(a, line, end)  # llm.c's `s:0 trl:` (lexicon.KEYED_START)
                cand = _candidate(a, line, end)
            elif keywords and not kw:
                low8 = c | 32
                if low8 == 118:  # "val" from its v
                    if i + 2 < end and (a[i + 1] | 32) == 97 and (a[i + 2] | 32) == 108:
                        kw = True
                elif low8 == 115 and i >= 2:  # "loss" / "cross" ending here, or at the next byte (first s flagged)
                    first = i - 1 if (a[i - 1] | 32) == 115 else (i if i + 1 < end and (a[i + 1] | 32) == 115 else -1)
                    if first >= 2 and (a[first - 1] | 32) == 111:  # an `o` before the `ss` pair
                        kw = (a[first - 2] | 32) == 108 or cross_entropy(a, first, end)
                elif low8 == 120:  # "xent" from its x, "perplexity" at its x
                    kw = follows(a, i + 1, end, ENT) or (i >= 6 and follows(a, i - 6, end, PERPLE))

    return n_nl, n_st, n_kw


def words_of(a: np.ndarray) -> np.ndarray:
    """The whole 8-byte words of the bytes `a`, as the compiled passes read them (the tail bytes are not in it)."""
    return a[: (len(a) // 8) * 8].view(np.uint64)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def newline_from(a: np.ndarray, i: int, end: int) -> int:
    """The index just after the first newline at or after `i` (`end` if none)."""
    while i < end:
        if a[i] == 10:
            return i + 1
        i += 1
    return end


_SPLIT_MIN = 1 << 20  # a block this big is scanned as two halves at once (the loop releases the GIL)
_helper: ThreadPoolExecutor | None = None


def scan_range(
    a: np.ndarray, words: np.ndarray, lo: int, hi: int, end: int, keywords: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    size = (hi - lo) // 32 + 64  # lines average far more than 32 bytes; a range of short lines is done again
    while True:
        newlines = np.empty(size, dtype=np.int64)
        starts = np.empty(size, dtype=np.int64)
        kw_lines = np.empty(size, dtype=np.int64)
        n_nl, n_st, n_kw = scan_kernel(a, words, lo, hi, end, keywords, newlines, starts, kw_lines)
        if n_nl >= 0:
            return starts[:n_st], newlines[:n_nl], kw_lines[:n_kw]
        size = hi - lo + 1


def scan_block(
    chunk: np.ndarray, end: int, keywords: bool = True, split: bool | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(candidate line starts, every newline, keyword line starts) of `chunk[:end]` (`chunk[end-1]` is a
    newline; `chunk` may run past `end`). int64 arrays, ascending.

    A big block (`split`: by default from `_SPLIT_MIN` up, on a machine with two cores or more) is cut at
    a newline near its middle and the second half is scanned on a helper thread while this one scans the
    first: the scan is the largest cost of a read, and grep has nothing else to do either."""
    global _helper
    a = chunk[:end]
    words = words_of(a)
    if split is None:
        split = end >= _SPLIT_MIN and (os.cpu_count() or 1) > 1
    mid = newline_from(a, end // 2, end) if split else end
    if mid >= end:
        return scan_range(a, words, 0, end, end, keywords)
    if _helper is None:
        _helper = ThreadPoolExecutor(1, thread_name_prefix="shardscope-scan")
    second = _helper.submit(scan_range, a, words, mid, end, end, keywords)
    first = scan_range(a, words, 0, mid, end, keywords)
    rest = second.result()
    starts, newlines, words_at = (np.concatenate([x, y]) for x, y in zip(first, rest, strict=True))
    return starts, newlines, words_at


_THIRTY = np.uint64(0x3030303030303030)  # "0" in every byte
_NINES = np.uint64(0xB9B9B9B9B9B9B9B9)  # "9" | 0x80 in every byte
_HASHES = np.uint64(0x2323232323232323)  # "#" in every byte
_BYTE = np.uint64(0xFF)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def as_shape(x: np.uint64) -> np.uint64:
    """Eight bytes with every digit as `#`: exact per byte (no borrow crosses bytes: the high bits are set
    before subtracting, and bytes of 0x80 or more are never digits)."""
    low = x & ~_HI
    digit = ((x | _HI) - _THIRTY) & (_NINES - low) & ~x & _HI  # >= "0", <= "9", ASCII
    spread = (digit >> _SEVEN) * _BYTE
    return (x & ~spread) | (_HASHES & spread)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _same_bytes(a: np.ndarray, start: int, n: int, masks: np.ndarray, base: int) -> bool:
    """Whether a[start:start + n] with digits as `#` is masks[base:base + n] (a line in the bytes past the
    whole words: byte by byte)."""
    for b in range(n):
        c = a[start + b]
        if 48 <= c <= 57:
            c = 35  # a digit is "#" in a shape
        if c != masks[base + b]:
            return False
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def match_shapes(
    a: np.ndarray,
    words: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    lengths: np.ndarray,  # noqa: ARG001 (Shapes.packed's order; by_length and length_from say it now)
    offsets: np.ndarray,
    masks: np.ndarray,
    digit_from: np.ndarray,
    digit_pos: np.ndarray,
    digit_byte: np.ndarray,
    by_length: np.ndarray,
    length_from: np.ndarray,
    at_from: np.ndarray,
    at_mask: np.ndarray,
    at_care: np.ndarray,
) -> np.ndarray:
    """Per line [starts, ends), the index of the first template it matches, -1 for none.

    Template t is `masks[offsets[t]:offsets[t] + lengths[t]]` (the line shape: every digit as `#`) plus its
    digits inside words, `(digit_pos, digit_byte)[digit_from[t]:digit_from[t + 1]]`. A line matches when it
    has the template's length, its bytes with digits as `#` are the mask, and those digits are the template's.
    `words`: `a` as aligned words; a line starting at byte r of a word is compared a whole word at a time with
    the mask shifted to r (core.logs.rows.templated.aligned_masks: at_mask, its bytes; at_care, which bytes are
    the line's), a line reaching past the whole words byte by byte. Only the templates of the line's length are
    tried: `by_length[length_from[n]:length_from[n + 1]]`, in the order learnt (real noise lines carry their own
    thread ids and numbers: hundreds of shapes)."""
    out = np.full(starts.size, -1, dtype=np.int64)
    for i in range(starts.size):
        start = starts[i]
        n = ends[i] - start
        if n + 1 >= length_from.size:
            continue
        q = start >> 3
        r = start & 7
        for j in range(length_from[n], length_from[n + 1]):
            t = by_length[j]
            f = at_from[8 * t + r]
            w = at_from[8 * t + r + 1] - f
            if q + w <= words.size:
                same = True
                for k in range(w):
                    if as_shape(words[q + k]) & at_care[f + k] != at_mask[f + k]:
                        same = False
                        break
            else:
                same = _same_bytes(a, start, n, masks, offsets[t])
            if same:
                for d in range(digit_from[t], digit_from[t + 1]):
                    if a[start + digit_pos[d]] != digit_byte[d]:
                        same = False
                        break
            if same:
                out[i] = t
                break
    return out


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _digits4(a: np.ndarray, p: int) -> bool:
    return 48 <= a[p] <= 57 and 48 <= a[p + 1] <= 57 and 48 <= a[p + 2] <= 57 and 48 <= a[p + 3] <= 57


@numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
def _triple(c: int, d: int, e: int) -> np.int64:
    """core.logs.tokens.plain.triple, compiled: the table index of three bytes."""
    return ((np.int64(c) << 10) ^ (np.int64(d) << 5) ^ np.int64(e)) & 32767


@numba.njit(cache=True, nogil=True, boundscheck=False)
def worth_lines(
    a: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    literals: np.ndarray,
    lit_start: np.ndarray,
    lit_len: np.ndarray,
    first_lo: np.ndarray,
    first_hi: np.ndarray,
    triples: np.ndarray,
) -> np.ndarray:
    """Per line [starts, ends), whether it holds one of the literals or a CANN error code (`[A-Z][0-9]{4}`).

    Literal k is `literals[lit_start[k]:lit_start[k] + lit_len[k]]`; those beginning with byte c are
    k in [first_lo[c], first_hi[c]) (core.logs.tokens.plain packs them); `triples[_triple(c, d, e)]` says whether
    one may begin with the bytes c, d, e (every literal has three or more; a hash: a superset). Three bytes that
    begin none cost one table look-up, so a line without any is read at about a byte a nanosecond."""
    out = np.zeros(starts.size, dtype=np.bool_)
    for i in range(starts.size):
        e = ends[i]
        p = starts[i]
        while p + 2 < e:  # (a literal or a code needs three bytes or more)
            c = a[p]
            if 65 <= c <= 90 and p + 5 <= e and _digits4(a, p + 1):  # a CANN code: EI0002, EE9999, ...
                out[i] = True
                break
            if not triples[_triple(c, a[p + 1], a[p + 2])]:
                p += 1
                continue
            for k in range(first_lo[c], first_hi[c]):
                n = lit_len[k]
                if p + n > e:
                    continue
                base = lit_start[k]
                same = True
                for q in range(1, n):
                    if a[p + q] != literals[base + q]:
                        same = False
                        break
                if same:
                    out[i] = True
                    break
            if out[i]:
                break
            p += 1
    return out


def warm_up() -> None:
    """Load the compiled passes (numba's import, LLVM, the cached machine code: ~1 s on a busy 2-core
    machine) before the first big read needs them: the dashboard calls this on a thread at start."""
    buf = bytearray(b"first\n[INFO] loss: 1.5\n")
    chunk = np.frombuffer(buf, dtype=np.uint8)
    starts, newlines, _ = scan_block(chunk, len(buf), split=True)  # both halves' kernels
    mask = np.frombuffer(b"[INFO] loss: #.#", dtype=np.uint8).copy()  # 16 bytes: one template, as Shapes packs it
    one = np.zeros(1, dtype=np.int64)
    no_digits = np.zeros(0, dtype=np.uint8)
    at = np.zeros(9, dtype=np.int64)  # (no word at any alignment: the types only, nothing read)
    match_shapes(
        chunk,
        words_of(chunk),
        starts,
        newlines[1:],
        one + 16,
        one * 0,
        mask,
        np.zeros(2, np.int64),
        one[:0],
        no_digits,
        one * 0,
        np.concatenate([np.zeros(17, np.int64), np.ones(2, np.int64)]),
        at,
        mask.view(np.uint64),
        mask.view(np.uint64),
    )
    fixed_numbers(chunk, starts + 13, one + 3, np.empty(1))
    column_numbers(chunk, starts, one + 13, one + 3, np.empty((len(starts), 1)))
    stamp_parts(chunk, starts[:0], 0, 0, 0, one[:0], one[:0], one[:0])
    table = np.zeros(256, dtype=np.int64)
    worth_lines(chunk, starts, newlines[1:], mask, one * 0, one, table, table, np.zeros(1 << 15, dtype=np.bool_))
