"""The numpy fast path: find candidate lines and read LossMonitor lines in bulk, bit-identical to `float`.

Real MindSpore logs are ~90 % `[WARNING]`/`[INFO]` noise, so the hot loop never looks at every line
from Python: numpy finds every newline of a block (a SIMD compare, packed to bits) and keeps the
start of each line that is not `[...]` chatter, then turns the LossMonitor lines among them into
rows in bulk; every other candidate goes through the per-line formats (core.logs.rows.formats), and a
property test holds the two paths to the same rows.
"""

from __future__ import annotations

import re

import numpy as np

from core.logs.tokens.exact import lm_matrix
from core.logs.tokens.exact import long_double_div as _long_double_div
from core.logs.tokens.kwsearch import keyword_lines, keyword_positions, keyword_starts
from core.logs.tokens.lexicon import NUM, ROW_KEYS, number

__all__ = [
    "RE_CANDIDATE_AT",
    "RE_LM_AT",
    "RE_SCAN",
    "ROW_KEYS",
    "STAMPED_ERROR",
    "Rows",
    "decimals",
    "keyword_lines",
    "keyword_positions",
    "keyword_starts",
    "literal_at",
    "lm_block",
    "lm_row",
    "scan_by_definition",
]

_I = {k: i for i, k in enumerate(ROW_KEYS)}
_NAN = float("nan")
# A line worth parsing starts with anything but "[" (or is an [ERROR]/[CRITICAL] line, or starts with a
# launcher's tag that may stand before a failure: `[1,2]<stderr>:`, horovodrun's `[6]<stderr>:`, `[rank6]:`,
# OpenMPI's `[host:pid] `):
# `RE_SCAN` says which (a live tick's few lines); in a big block core.logs.tokens.linescan finds exactly its
# matches, skipping the [WARNING]/[INFO] noise in one compiled pass.
# A `[date]` stamp is no tag, but python logging's `[%(asctime)s] [%(levelname)s]` (DeepSpeed's launcher) and
# `[%(asctime)s] %(name)s: [%(levelname)s]` (torch's elastic agent) put the level after it, maybe after one word:
# a stamped line at error level is a candidate (`STAMPED_ERROR`), the stamped INFO/WARNING noise of MindCV and
# DeepSpeed is not. Real lines (deepspeedai/DeepSpeed#3512, xiuqhou/Salience-DETR#4):
#   [2023-05-11 07:34:44,846] [ERROR] [launch.py:434:sigkill_handler] [...] exits with return code = -9
#   [2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) ...
# Hydra's `[%(asctime)s][%(name)s][%(levelname)s] - ` glues the fields, the level bracketed (facebookresearch/
# map-anything#89):
#   [2025-10-31 05:07:11,062][__main__][ERROR] - Error executing job with overrides: ['machine=hpc_train', ...]
# A C++ trainer's logger words its error level `Error:` after the stamp (Marian's spdlog `[%Y-%m-%d %T] Error: `,
# marian-nmt/marian-dev#439; its `[date] [valid] ...` and `[date] Saving ...` lines stay out):
#   [2019-04-15 08:34:14] Error: CUDA error 2 'out of memory' - .../device.cu:32: cudaMalloc(&data_, size)
STAMPED_ERROR = (
    rb"\[\d[^\]\n]{0,40}\](?: (?:[^ \n]{1,64} )?(?:\[[EC]|ERROR|Error:|CRITICAL|FATAL)|(?:\[[^\]\n]{1,64}\])?\[[EC])"
)
# A log viewer's line number before every line of a paste (`[1763] ` then the log's own line, hiyouga/LlamaFactory#8261)
# is no chatter either: what follows it is read as any line (a failure behind it teaches the file its prefix,
# core.logs.rows.lineprefix). Two to nine digits: a one-digit `[2] ` is as likely a stamp's or a counter's.
# torch's process-group messages name their rank first, `[Rank 0] Watchdog caught collective operation timeout: ...`:
# a paste that cut the line's `[E ...ProcessGroupNCCL.cpp:N] ` prefix away starts with it (VITA-MLLM/VITA-Audio#34,
# corpus entry nccl-allreduce-watchdog-timeout-bracketed-date-rank-prefix_vita-audio-34), a candidate too
CANDIDATE_START = (
    rb"(?:[^\[\n]|\[[EC]|\[\d+,|\[\d+\]<|\[\d{2,9}\] |\[rank\d|\[Rank \d|\[[A-Za-z0-9][\w.\-]*:\d+\] |"
    + STAMPED_ERROR
    + rb")"
)
RE_SCAN = re.compile(rb"\n" + CANDIDATE_START)
RE_CANDIDATE_AT = re.compile(CANDIDATE_START)
# The LossMonitor / tutorial line, by far the most common candidate. In bulk, numpy recognises the
# plain-decimal form of it (`lm_block`); any other candidate, or a loss line it does not take
# (nan, exponents, odd spacing), goes through `parse_line`, which gives the same row for it.
_LM = rb"epoch: (\d+),? step: (\d+),? loss is (" + NUM + rb")\r?(?=\n)"
RE_LM_AT = re.compile(_LM)
_DIGITS_W = 12  # epoch/step digit runs parsed by numpy; longer ones take the exact Python path
_VALUE_W = 24  # loss values parsed by numpy; longer ones (and nan/inf/exponents) take `float`
_POW10 = np.array([10.0**k for k in range(19)])  # exact: every 10**k with k <= 22 is a double
_MANTISSA_MAX = 1 << 53  # integers up to here are exact doubles, so mantissa / 10**k is correctly rounded


class Rows:
    """A file's metric rows (ROW_KEYS) in file order until the run's table takes them (`take`):
    numpy blocks from the bulk path, tuples otherwise, plus the other metrics of the lines that have
    any (`extras`: name -> parts of (row numbers, values), in row order). Its count and last row outlive
    the take."""

    __slots__ = (
        "_before",
        "_blocks",
        "_extras",
        "_first",
        "_last",
        "_n",
        "_pending",
        "_pending_ranks",
        "_rank_parts",
        "_tail",
        "_taken",
        "averaged",
        "by_rank",
        "echo_last",
        "echoed",
        "parts",
        "shapes",
        "trained",
    )

    def __init__(self) -> None:
        self._blocks: list[np.ndarray] = []
        self._tail: list[tuple] = []
        self._extras: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._pending: dict[str, tuple[list[int], list[float]]] = {}  # the tail's other metrics
        self._n = 0
        self._taken = 0
        self._last: tuple | None = None  # kept by take()
        self._before: tuple | None = None  # the row before it, kept by take()
        self._first: tuple | None = None  # kept by the first take()
        # the ranks lines name when one stream carries several (core.logs.rows.lineranks): the rows that
        # name one, as parts of (row numbers, ranks); none at all for a stream without (its file's rank)
        self._rank_parts: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_ranks: tuple[list[int], list[int]] | None = None
        # per rank a line named (None: the rows naming none), its row count and last row, once any line named one
        self.by_rank: dict[int | None, tuple[int, tuple]] = {}
        self.averaged: list[int] = []  # file offsets of rows whose loss key says it averages (core.logs.rows.wording)
        self.parts: list[int] = []  # ... and of rows whose loss key names a part of the loss (`policy_loss`)
        self.trained: list[int] = []  # ... and of rows whose loss key names training (`Train Loss:`)
        self.shapes: dict[bytes, int] = {}  # line shape -> its wording (which list above), once looked at
        self.echoed: list[int] = []  # ... and of rows a second logger printed again (core.logs.rows.echoes)
        self.echo_last: tuple[float, int, bytes] | None = None  # the last row's loss, logger and message (echoes)

    def __len__(self) -> int:
        return self._n

    @property
    def untaken(self) -> int:
        """Rows parsed since the last `take`."""
        return self._n - self._taken

    @property
    def named_ranks(self) -> bool:
        """Whether a line of this file named its rank (the rows then are per rank: `by_rank`, `take_ranks`)."""
        return bool(self._rank_parts or self._pending_ranks is not None or self.by_rank)

    def append(self, row: tuple, extras: dict[str, float] | None = None, rank: int | None = None) -> None:
        if rank is not None:
            if self._pending_ranks is None:
                self._pending_ranks = ([], [])
            self._pending_ranks[0].append(self._n)
            self._pending_ranks[1].append(rank)
        if extras:
            for name, value in extras.items():
                rows, values = self._pending.setdefault(name, ([], []))
                rows.append(self._n)
                values.append(value)
        self._tail.append(row)
        self._n += 1

    def add_block(
        self, block: np.ndarray, extras: dict[str, np.ndarray] | None = None, ranks: np.ndarray | None = None
    ) -> None:
        """Rows in bulk; `extras` holds one value per row of the block for each metric it names (kept as
        arrays: a Python list of every value cost a 1,024 x 2,000 Megatron read 0.3 s); `ranks` the rank
        each row's line names (-1: none)."""
        self._flush()
        if ranks is not None:
            named = np.flatnonzero(ranks >= 0)
            if len(named):
                self._rank_parts.append((named + self._n, ranks[named].astype(np.int64)))
        if extras:
            rows = np.arange(self._n, self._n + len(block), dtype=np.int64)
            for name, values in extras.items():
                self._extras.setdefault(name, []).append((rows, np.array(values, dtype=np.float64)))
        self._blocks.append(block)
        self._n += len(block)

    def recent(self, start: int) -> np.ndarray:
        """Rows `start`.. (not taken yet) as a view of one block: a stage fills in what lines beside theirs say
        (core.logs.rows.sidelines); `take_all` then hands the one block over without a copy."""
        self._flush()
        if len(self._blocks) > 1:
            self._blocks = [np.concatenate(self._blocks)]
        return self._blocks[0][start - self._taken :] if self._blocks else np.empty((0, len(ROW_KEYS)))

    def add_metric(self, name: str, rows: np.ndarray, values: np.ndarray) -> None:
        """Other metrics of rows `rows` (not taken, in order, each once) that lines beside theirs print."""
        self._flush()
        self._extras.setdefault(name, []).append((rows, values))

    def last(self) -> tuple | None:
        if self._tail:
            return self._tail[-1]
        return tuple(self._blocks[-1][-1].tolist()) if self._blocks else self._last

    def before_last(self) -> tuple | None:
        """The row before the last (outlives a take): whether one row or more came after a line (a process killed
        from outside flushes at most the row it was writing: core.logs.rows.kills)."""
        seen = False
        for row in reversed(self._tail):
            if seen:
                return row
            seen = True
        for block in reversed(self._blocks):
            if len(block) > (0 if seen else 1):
                return tuple(block[-1 if seen else -2].tolist())
            seen = seen or len(block) == 1
        return self._last if seen else self._before

    def first(self) -> tuple | None:
        """The file's first row (outlives a take): where its steps began (a relaunch starts over)."""
        if self._first is not None:
            return self._first
        block = next((b for b in self._blocks if len(b)), None)
        if block is not None:
            return tuple(block[0].tolist())
        return self._tail[0] if self._tail else None

    def take(self) -> np.ndarray:
        """The rows since the last take as one (n, len(ROW_KEYS)) float64 array; they are dropped here."""
        return self.take_all()[0]

    def take_all(self) -> tuple[np.ndarray, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """`take`, with the other metrics: name -> (row numbers within the taken block, in order; values)."""
        self._flush()
        self._first = self.first()
        self._before = self.before_last()
        self._last = self.last()
        if self.named_ranks:
            self.by_rank = self.per_rank()
            self._rank_parts = []
        blocks, self._blocks = self._blocks, []
        extras = {name: _joined(parts, self._taken) for name, parts in self._extras.items()}
        self._extras = {}
        self._taken = self._n
        if len(blocks) == 1:
            return blocks[0], extras
        return (np.concatenate(blocks) if blocks else np.empty((0, len(ROW_KEYS)), dtype=np.float64)), extras

    def take_ranks(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The ranks named by the rows the next `take_all` hands over: (row numbers within them, ranks), or
        None when no line of them named one. Call it just before `take_all`."""
        self._flush()
        if not self._rank_parts:
            return None
        return _joined(self._rank_parts, self._taken)

    def per_rank(self) -> dict[int | None, tuple[int, tuple]]:
        """Per rank a line named (None: the rows naming none) its row count and last row, taken or not;
        empty while no line named a rank (the file's rows are then all its own rank's)."""
        self._flush()
        out = dict(self.by_rank)
        if not (out or self._rank_parts) or self._n == self._taken:
            return out
        block = self._blocks[0] if len(self._blocks) == 1 else np.concatenate(self._blocks)
        per_row = np.full(len(block), -1, dtype=np.int64)
        if self._rank_parts:
            rows, ranks = _joined(self._rank_parts, self._taken)
            per_row[rows] = ranks
        for rank in np.unique(per_row).tolist():
            at = np.flatnonzero(per_row == rank)
            key = None if rank < 0 else int(rank)
            n = out.get(key, (0, ()))[0]
            out[key] = (n + len(at), tuple(block[at[-1]].tolist()))
        return out

    def _flush(self) -> None:
        if self._pending_ranks is not None:
            rows_r, ranks_r = self._pending_ranks
            self._rank_parts.append((np.array(rows_r, dtype=np.int64), np.array(ranks_r, dtype=np.int64)))
            self._pending_ranks = None
        if self._tail:
            self._blocks.append(np.array(self._tail, dtype=np.float64).reshape(-1, len(ROW_KEYS)))
            self._tail = []
        if self._pending:
            for name, (rows, values) in self._pending.items():
                part = (np.array(rows, dtype=np.int64), np.array(values, dtype=np.float64))
                self._extras.setdefault(name, []).append(part)
            self._pending = {}


def _joined(parts: list[tuple[np.ndarray, np.ndarray]], taken: int) -> tuple[np.ndarray, np.ndarray]:
    """One metric's parts as (row numbers from `taken` on, values); a live tick's one part is not copied."""
    if len(parts) == 1:
        return parts[0][0] - taken, parts[0][1]
    return np.concatenate([rows for rows, _ in parts]) - taken, np.concatenate([values for _, values in parts])


def _at_least(chunk: np.ndarray, n: int) -> np.ndarray:
    """`chunk`, zero-padded to `n` bytes when shorter (a window view needs that many; callers mark
    every position of such a short chunk not ok, so the padding is never read as data)."""
    return chunk if len(chunk) >= n else np.concatenate((chunk, np.zeros(n - len(chunk), dtype=np.uint8)))


def _digit_runs(chunk: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values and lengths of the ASCII digit runs at `starts`; `ok` is False where the run is too
    long (or too near the end of the buffer) for this path, which then must use the exact one.
    """
    ok = starts <= len(chunk) - _DIGITS_W
    windows = _windows(_at_least(chunk, _DIGITS_W), _DIGITS_W)
    digits = np.ascontiguousarray(windows[np.where(ok, starts, 0)].T) - np.uint8(48)
    value = np.zeros(len(starts), dtype=np.int64)
    length = np.zeros(len(starts), dtype=np.int64)
    active = np.ones(len(starts), dtype=bool)
    for d in digits:
        active &= d < 10
        if not active.any():
            break
        value = np.where(active, value * 10 + d, value)
        length += active
    return value, length, ok & ~active


def decimals(chunk: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plain decimal (`-12.5`, `.5`, `3.`) at each `start`: value, length in bytes, ok.

    The value is `float(text)` bit for bit: mantissa <= 2**53 and 10**k (k <= 18) are both doubles
    and IEEE division rounds correctly (Clinger's fast path); 17-18 digit ones (MindSpore prints
    `repr(float)`) divide in 80-bit long double, exact after the rounding to double except on a
    midpoint, which (like > 18 digits) numpy's correctly rounded string cast reads. `ok` is False
    for anything else (nan, inf, exponents, over `_VALUE_W` bytes): those take the exact line path.
    """
    if len(start) < _MATRIX_MAX:
        return decimals_matrix(chunk, start)
    return decimals_columns(chunk, start)


_MATRIX_MAX = 2048  # below this many values the whole-matrix form wins (fixed ~30 numpy calls)


def decimals_columns(chunk: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`decimals` column by column (each step works on contiguous columns and the loop stops when
    every number has ended): fastest for tens of thousands of values, ~19 x 14 numpy calls each."""
    n = len(start)
    ok = (start >= 0) & (start <= len(chunk) - _VALUE_W)
    windows = _windows(_at_least(chunk, _VALUE_W), _VALUE_W)
    cols = np.ascontiguousarray(windows[np.where(ok, start, 0)].T)
    neg = cols[0] == ord("-")
    signed = neg | (cols[0] == ord("+"))
    mantissa = np.zeros(n, dtype=np.int64)
    frac = np.zeros(n, dtype=np.int64)
    ndigits = np.zeros(n, dtype=np.int64)
    ndots = np.zeros(n, dtype=np.int64)
    length = np.zeros(n, dtype=np.int64)
    active = np.ones(n, dtype=bool)
    for j, c in enumerate(cols):
        d = c - np.uint8(48)
        digit = d < 10
        dot = c == ord(".")
        active &= digit | dot | (signed if j == 0 else False)
        if not active.any():
            break
        length += active
        digit &= active
        dot &= active
        mantissa = np.where(digit, mantissa * 10 + d, mantissa)  # > 18 digits may wrap: rejected below
        frac += digit & (ndots > 0)
        ndots += dot
        ndigits += digit
    plain = ok & ~active & (ndigits >= 1) & (ndots <= 1)
    ok = plain & (ndigits <= 18) & (mantissa >= 0) & (mantissa <= _MANTISSA_MAX)
    value = mantissa / _POW10[np.where(ok, frac, 0)]
    value = np.where(neg, -value, value)
    slow = plain & ~ok
    if slow.any():
        mid = np.flatnonzero(slow & (ndigits <= 18) & (mantissa >= 0))  # 17-18 digits: MindSpore's repr floats
        d, tie = _long_double_div(mantissa[mid], frac[mid])
        value[mid] = np.where(neg[mid], -d, d)
        rest = np.union1d(np.flatnonzero(slow & ~((ndigits <= 18) & (mantissa >= 0))), mid[tie])
        if len(rest):
            value[rest] = _parse_texts(cols[:, rest].T, length[rest])
    return value, length, plain


def decimals_matrix(chunk: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`decimals` on the whole (n, _VALUE_W) byte matrix at once (a class lookup, cumulative sums):
    a fixed ~30 numpy calls, so a live tick or a small file does not pay the column loop's ~270."""
    ok = (start >= 0) & (start <= len(chunk) - _VALUE_W)
    windows = _windows(_at_least(chunk, _VALUE_W), _VALUE_W)
    rows = windows[np.where(ok, start, 0)]  # (n, W) copy
    cls = _CLASS[rows]  # 1 digit, 2 dot, 3 sign, 0 anything else
    tail = cls[:, 1:]
    tail[tail == 3] = 0  # a sign after the first byte ends the number
    valid = cls != 0
    runs_out = valid.all(axis=1)  # no end inside the window: too long for this path
    length = np.where(runs_out, _VALUE_W, valid.argmin(axis=1)).astype(np.int64)
    inside = length[:, None] > _COLS
    digit = (cls == 1) & inside
    dot = (cls == 2) & inside
    ndigits = digit.sum(axis=1)
    frac = (digit & (np.cumsum(dot, axis=1) > 0)).sum(axis=1)
    plain = ok & ~runs_out & (ndigits >= 1) & (dot.sum(axis=1) <= 1)
    fits = plain & (ndigits <= 18)
    exp = np.where(digit & fits[:, None], ndigits[:, None] - np.cumsum(digit, axis=1), 0)
    mantissa = (np.where(digit, rows - np.uint8(48), 0).astype(np.int64) * _POW10_INT[exp]).sum(axis=1)
    neg = rows[:, 0] == ord("-")
    fast = fits & (mantissa <= _MANTISSA_MAX)
    value = mantissa / _POW10[np.where(fast, frac, 0)]
    value = np.where(neg, -value, value)
    mid = np.flatnonzero(fits & ~fast)
    rest = np.flatnonzero(plain & ~fits)
    if len(mid):
        d, tie = _long_double_div(mantissa[mid], frac[mid])
        value[mid] = np.where(neg[mid], -d, d)
        rest = np.union1d(rest, mid[tie])
    if len(rest):
        value[rest] = _parse_texts(rows[rest], length[rest])
    return value, length, plain


_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[ord("0") : ord("9") + 1] = 1
_CLASS[ord(".")] = 2
_CLASS[ord("-")] = _CLASS[ord("+")] = 3
_COLS = np.arange(_VALUE_W)
_POW10_INT = np.array([10**k for k in range(19)], dtype=np.int64)


def _parse_texts(windows: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Plain decimals neither fast path takes (> 18 digits, long-double ties): cut each window at its
    length and let numpy's string-to-double cast (correctly rounded, the same as `float`) read them."""
    text = np.where(np.arange(windows.shape[1]) < length[:, None], windows, 0).astype(np.uint8)
    cells = np.ascontiguousarray(text).view(f"S{windows.shape[1]}").ravel()
    try:
        return cells.astype(np.float64)
    except ValueError:  # a spelling numpy does not know (MSVC's `1.#QNAN`): each as `number` reads it
        return np.array([number(bytes(c)) for c in cells], dtype=np.float64)


def _windows(chunk: np.ndarray, width: int) -> np.ndarray:
    """Every `width`-byte window of `chunk` as rows of a (len - width + 1, width) view (what
    sliding_window_view gives, without its ~40 us of argument checks per call)."""
    return np.ndarray((len(chunk) - width + 1, width), dtype=np.uint8, buffer=chunk, strides=(1, 1))


def _unaligned(chunk: np.ndarray, width: int) -> np.ndarray:
    """The `width`-byte little-endian unsigned word starting at every byte of `chunk` (a view, no copy)."""
    return np.ndarray((len(chunk) - width + 1,), dtype=f"<u{width}", buffer=chunk, strides=(1,))


def literal_at(chunk: np.ndarray, pos: np.ndarray, text: bytes) -> np.ndarray:
    """Whether `text` is at each `pos` (False too near the end of the buffer).

    Compared in 8/4/2/1-byte words gathered straight from the buffer (one gather per word, no
    (n, len(text)) byte matrix).
    """
    ok = (pos >= 0) & (pos <= len(chunk) - len(text))
    chunk = _at_least(chunk, len(text))
    at = np.where(ok, pos, 0)
    i = 0
    while i < len(text):
        width = next(w for w in (8, 4, 2, 1) if w <= len(text) - i)
        ok &= _unaligned(chunk, width)[at + i] == int.from_bytes(text[i : i + width], "little")
        i += width
    return ok


def lm_row(m: re.Match, off: int, obs_time: float) -> tuple:
    """The row of one `RE_LM_AT` match (the exact reference for what `lm_block` computes in bulk)."""
    row = [_NAN] * len(ROW_KEYS)
    row[_I["epoch"]], row[_I["step"]], row[_I["loss"]] = float(m[1]), float(m[2]), number(m[3])
    row[_I["time"]], row[_I["offset"]] = obs_time, off
    return tuple(row)


def lm_block(
    buf: bytes | bytearray, starts: np.ndarray, base: int, obs_time: float, compiled: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Find, among the candidate lines at `starts`, the LossMonitor lines numpy can read exactly and
    build their rows column-wise: returns (mask over `starts`, rows of the masked lines).

    A line is taken only if it is all of `epoch: <digits>[,] step: <digits>[,] loss is <decimal>`
    then an optional CR and the newline (so `_LM` matches it whole and `float` gives the same
    numbers); the rest is left to `parse_line`. `compiled`: by one compiled pass (core.logs.tokens.lmscan, a big
    read that loaded numba) instead of numpy's ~40 array operations.
    """
    if compiled:
        from core.logs.tokens.lmscan import lm_rows

        return lm_rows(buf, starts, base, obs_time)
    chunk = np.frombuffer(buf, dtype=np.uint8)
    top = len(chunk) - 1
    take = literal_at(chunk, starts, b"epoch: ")
    idx = np.flatnonzero(take)
    if not len(idx):  # no LossMonitor line (every other suite's log): its two dozen numpy calls cost 0.3 ms a block
        return take, np.empty((0, len(ROW_KEYS)), dtype=np.float64)
    ls = starts[idx]
    epoch, e_len, ok = _digit_runs(chunk, ls + 7)
    pos = np.minimum(ls + 7 + e_len, top)
    pos += chunk[pos] == ord(",")
    ok &= (e_len >= 1) & literal_at(chunk, pos, b" step: ")
    step, s_len, s_ok = _digit_runs(chunk, pos + 7)
    pos = np.minimum(pos + 7 + s_len, top)
    pos += chunk[pos] == ord(",")
    ok &= s_ok & (s_len >= 1) & literal_at(chunk, pos, b" loss is ")
    loss, v_len, v_ok = decimals(chunk, pos + 9)
    pos = np.minimum(pos + 9 + v_len, top - 1)
    ok &= v_ok & ((chunk[pos] == ord("\n")) | ((chunk[pos] == ord("\r")) & (chunk[pos + 1] == ord("\n"))))
    take[idx] = ok
    return take, lm_matrix(epoch[ok], step[ok], loss[ok], obs_time, ls[ok] + base)


def scan_by_definition(
    buf: bytes | bytearray, end: int, keywords: bool, scratch: bytearray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What core.logs.tokens.linescan.scan_block gives, from the definitions (RE_SCAN's matches, the lines
    holding KEYWORDS, every newline): the path of a read too small to pay for the compiled one."""
    held = keyword_lines(buf, end, scratch) if keywords else []
    starts = sorted({m.start() + 1 for m in RE_SCAN.finditer(buf, 0, end)}.union(held))
    newlines = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=end) == 10)
    return np.asarray(starts, dtype=np.int64), newlines, np.asarray(held, dtype=np.int64)
