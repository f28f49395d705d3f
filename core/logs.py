"""Per-rank training logs: layout discovery, a fast incremental parser, `read_run` and `RunWatcher`.

Real MindSpore logs are ~90 % `[WARNING]`/`[INFO]` noise, so the hot loop never looks at every line
from Python: numpy finds every newline of a block (a SIMD compare, packed to bits) and keeps the
start of each line that is not `[...]` chatter, then turns the LossMonitor lines among them into
rows in bulk (bit-identical to `float`), and only the rare other lines (timings, tracebacks,
errors, other loss formats) are parsed one by one.
Every file is read from a saved offset to its last complete line (the next block is read on a
helper thread while one is parsed), so a watcher and a one-shot read produce exactly the same rows
however the writes were chunked.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pandas as pd

__all__ = [
    "MAX_PARTIAL_LINE",
    "METRIC_COLUMNS",
    "LogFile",
    "LogFormatError",
    "RunSnapshot",
    "RunWatcher",
    "compile_user_regex",
    "discover_logs",
    "is_noise_line",
    "parse_loss_line",
    "rank_status",
    "read_run",
    "tail_lines",
]

MAX_PARTIAL_LINE = 1 << 20
"""Longest incomplete line we hold in memory (1 MiB); past it the line is dropped and counted."""

_READ_BLOCK = 8 << 20  # bytes read and parsed per step while catching up (the next one is read meanwhile);
# small enough that a block is still in cache when numpy scans it (32 MB blocks were ~30 % slower)
_PREFETCH_MIN = 1 << 20  # a rest smaller than this is read in line, without the helper thread
_TB_CARRY_MAX = 64 << 10  # traceback context kept across reads
_KEEP_BUF = 1 << 20  # read buffer a watcher keeps between refreshes
_NOISE_PREFIXES = (b"[WARNING]", b"[INFO]", b"[DEBUG]")
_ERROR_PREFIXES = (b"[ERROR]", b"[CRITICAL]", b"[EXCEPTION]")

METRIC_COLUMNS = [
    "rank", "epoch", "step", "epochs_total", "steps_total", "loss", "step_time_ms", "lr", "time", "offset", "file",
]
TIMING_COLUMNS = ["rank", "epoch", "step", "epoch_time_ms", "step_time_ms", "time", "offset", "file"]
ERROR_COLUMNS = ["rank", "kind", "message", "context", "line", "offset", "file", "pid", "time"]


class LogFormatError(ValueError):
    """A user-supplied loss regex that cannot be used (bad syntax or no `loss` group)."""


# ----------------------------------------------------------------------------- layout discovery

@dataclass(frozen=True)
class LogFile:
    """One log file and what it is: a rank's output, the msrun scheduler, or a launcher's stdout."""

    path: Path
    rel: str
    role: str  # "worker" | "scheduler" | "launcher"
    rank: int | None
    layout: str  # "msrun" | "mpirun" | "rank_table" | "other"


_LAYOUT_RULES: list[tuple[re.Pattern[str], str, str]] = [
    (re.compile(r"^worker_(\d+)\.log$"), "worker", "msrun"),
    (re.compile(r"^scheduler\.log$"), "scheduler", "msrun"),
    (re.compile(r"^(?:[^/]+/)?rank\.(\d+)/(?:stdout|stderr)$"), "worker", "mpirun"),
    (re.compile(r"^device_?(\d+)/[^/]*\.log\d*$"), "worker", "rank_table"),
]
_LAUNCHER_NAME = re.compile(r"^[^/]+\.(?:log|out|txt|err)$")


def discover_logs(log_dir: Path | str, max_entries: int = 20000) -> list[LogFile]:
    """Find per-rank logs under `log_dir` (msrun, mpirun and rank-table layouts), sorted by rank.

    Top-level `*.log/*.out/*.txt` files that are not rank logs (e.g. msrun's own stdout) are
    returned as "launcher" files: they are only scanned for failures (`Worker process <pid> exit`).
    """
    root = Path(log_dir)
    found: list[LogFile] = []
    seen = 0
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                break
            rel = prefix + entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if depth < 2:
                    stack.append((Path(entry.path), rel + "/", depth + 1))
                continue
            for pattern, role, layout in _LAYOUT_RULES:
                m = pattern.match(rel)
                if m:
                    rank = int(m.group(1)) if m.groups() else None
                    found.append(LogFile(Path(entry.path), rel, role, rank, layout))
                    break
            else:
                if depth == 0 and _LAUNCHER_NAME.match(rel):
                    found.append(LogFile(Path(entry.path), rel, "launcher", None, "other"))
    order = {"worker": 0, "scheduler": 1, "launcher": 2}
    found.sort(key=lambda f: (order[f.role], -1 if f.rank is None else f.rank, f.rel))
    return found


# ----------------------------------------------------------------------------- line parsing

_NUM = rb"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|NAN|inf|Inf|INF|[Ii]nfinity)"
_RE_NUM = re.compile(_NUM)
_RE_TENSOR_VALUE = re.compile(rb"value=\s*\[?\s*(" + _NUM + rb")")
_RE_LOSSMONITOR = re.compile(rb"epoch:\s*(\d+),?\s+step:\s*(\d+),?\s+loss is\s*")
_RE_MF = re.compile(
    rb"Epoch:\[\s*(\d+)/\s*(\d+)\],\s*step:\[\s*(\d+)/\s*(\d+)\],\s*loss:\s*\[?\s*(" + _NUM + rb")"
)
_RE_MF_STEPTIME = re.compile(rb"(?:per_step_time:\s*(\d+(?:\.\d+)?)\s*ms|\btime:\s*(\d+(?:\.\d+)?)\s*ms)")
_RE_LR = re.compile(rb"\blr:\s*\[?\s*(" + _NUM + rb")")
_RE_LOSS_GENERIC = re.compile(rb"(?<![\w])loss(?: is|\s*[:=])\s*")
_RE_STEP_GENERIC = re.compile(rb"(?<![\w])(?:global_step|step|iter(?:ation)?)\s*[:=]?\s*\[?\s*(\d+)")
_RE_EPOCH_GENERIC = re.compile(rb"(?<![\w])epoch\s*[:=]?\s*\[?\s*(\d+)")
_RE_TIMEMONITOR = re.compile(
    rb"epoch time:\s*(" + _NUM + rb")\s*ms,\s*per step time:\s*(" + _NUM + rb")\s*ms"
)
_RE_LINE_TS = re.compile(rb"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.](\d{1,6}))?")
_RE_EXC_LINE = re.compile(
    rb"^((?:[A-Za-z_][\w]*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure)|Exception))(?::|$)"
)
_RE_MS_LOG = re.compile(rb"^\[(\w+)\]\s+(\w+)\((\d+)[,:][^)]*\):(\S+)\s+\[[^\]]*\](?:\s+\w+\])?\s?(.*)$")
_RE_TIMED_OUT = re.compile(rb"The node: (\d+) is timed out")
_RE_WORKER_EXIT = re.compile(rb"Worker process (\d+) exit with exception")
_RE_UNREGISTERED = re.compile(rb"Node (\d+) has unregistered")
_RE_PID = re.compile(rb"\] (?:[A-Z_]+)\((\d+)[,:]")
_RE_DISTRIBUTED_PID = re.compile(rb"DISTRIBUTED\((\d+),")
_TS_CACHE: dict[bytes, float] = {}


def _num(raw: bytes) -> float:
    try:
        return float(raw)
    except ValueError:
        return float("nan")


def _value_after(line: bytes, pos: int) -> float | None:
    """The loss value that follows `loss is` / `loss:`: plain number, nan/inf, or a printed Tensor."""
    head = line[pos:pos + 24]
    if head.startswith((b"Tensor(", b"(Tensor(", b"[Tensor(")):
        m = _RE_TENSOR_VALUE.search(line, pos)
    else:
        m = _RE_NUM.match(line, pos + (1 if head[:1] in (b"[", b"(") else 0))
    return _num(m.group(1) if m.lastindex else m.group(0)) if m else None


def _line_time(line: bytes) -> float:
    """Unix time from a leading `YYYY-mm-dd HH:MM:SS,mmm` (python logging / MindFormers), else NaN."""
    m = _RE_LINE_TS.match(line)
    if not m:
        return float("nan")
    key = m.group(1)
    base = _TS_CACHE.get(key)
    if base is None:
        try:
            base = datetime.strptime(key.decode().replace("T", " "), "%Y-%m-%d %H:%M:%S").timestamp()
        except ValueError:
            return float("nan")
        if len(_TS_CACHE) > 4096:
            _TS_CACHE.clear()
        _TS_CACHE[key] = base
    frac = m.group(2)
    return base + (int(frac) / 10 ** len(frac) if frac else 0.0)


def is_noise_line(line: str | bytes) -> bool:
    """True for MindSpore's `[WARNING]`/`[INFO]`/`[DEBUG]` framework chatter."""
    if isinstance(line, str):
        return line.startswith(("[WARNING]", "[INFO]", "[DEBUG]"))
    return line.startswith(_NOISE_PREFIXES)


def parse_loss_line(line: bytes | str) -> dict[str, float] | None:
    """Parse one loss line in any of the built-in formats; None when it carries no loss.

    Formats: MindSpore LossMonitor / tutorial prints (`epoch: 1 step: 100, loss is 4.52`),
    printed tensors (`loss is Tensor(shape=[], dtype=Float32, value= 2.30)`), old
    `global_step: 194, loss: 1.997`, MindFormers MFLossMonitor (current and 2023 layouts).
    """
    if isinstance(line, str):
        line = line.encode("utf-8", "replace")
    line = line.rstrip(b"\r\n")
    if line.startswith(_NOISE_PREFIXES) or _RE_EXC_LINE.match(line):
        return None
    nan = float("nan")
    if b"Epoch:[" in line:
        m = _RE_MF.search(line)
        if m:
            st = _RE_MF_STEPTIME.search(line, m.end())
            lr = _RE_LR.search(line, m.end())
            return {
                "epoch": float(m.group(1)), "epochs_total": float(m.group(2)),
                "step": float(m.group(3)), "steps_total": float(m.group(4)),
                "loss": _num(m.group(5)),
                "step_time_ms": float(st.group(1) or st.group(2)) if st else nan,
                "lr": _num(lr.group(1)) if lr else nan,
                "time": _line_time(line),
            }
    m = _RE_LOSSMONITOR.search(line)
    if m:
        value = _value_after(line, m.end())
        if value is None:
            return None
        return {"epoch": float(m.group(1)), "step": float(m.group(2)), "loss": value,
                "epochs_total": nan, "steps_total": nan, "step_time_ms": nan, "lr": nan,
                "time": _line_time(line)}
    m = _RE_LOSS_GENERIC.search(line)
    if not m:
        return None
    value = _value_after(line, m.end())
    if value is None:
        return None
    step = _RE_STEP_GENERIC.search(line)
    epoch = _RE_EPOCH_GENERIC.search(line)
    lr = _RE_LR.search(line)
    return {"epoch": float(epoch.group(1)) if epoch else nan, "step": float(step.group(1)) if step else nan,
            "loss": value, "epochs_total": nan, "steps_total": nan, "step_time_ms": nan,
            "lr": _num(lr.group(1)) if lr else nan, "time": _line_time(line)}


_USER_GROUPS = {"loss", "step", "epoch", "step_time_ms", "lr", "epochs_total", "steps_total"}


def compile_user_regex(pattern: str) -> re.Pattern[str]:
    """Validate a user loss regex: it must compile and have a named group `loss`.

    Optional named groups: step, epoch, step_time_ms, lr, epochs_total, steps_total.
    """
    if not isinstance(pattern, str) or not pattern.strip():
        raise LogFormatError("The loss regex is empty.")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise LogFormatError(f"The loss regex does not compile: {exc}") from exc
    if "loss" not in compiled.groupindex:
        raise LogFormatError(
            "The loss regex needs a named group `loss`, e.g. r'loss=(?P<loss>[-+.\\deE]+|nan|inf)'."
        )
    unknown = set(compiled.groupindex) - _USER_GROUPS
    if unknown:
        raise LogFormatError(
            f"Unknown named group(s) {sorted(unknown)}; use only {sorted(_USER_GROUPS)}."
        )
    return compiled


# ----------------------------------------------------------------------------- per-file state

_ROW_KEYS = ("epoch", "step", "epochs_total", "steps_total", "loss", "step_time_ms", "lr", "time", "offset")
_NAN = float("nan")
# A line worth parsing starts with anything but "[" (or is an [ERROR]/[CRITICAL] line): `_RE_SCAN` says
# which, and `_candidate_starts` finds exactly its matches with numpy, skipping the [WARNING]/[INFO]
# noise without a Python loop.
_RE_SCAN = re.compile(rb"\n(?:[^\[\n]|\[[EC])")
# The LossMonitor / tutorial line, by far the most common candidate. In bulk, numpy recognises the
# plain-decimal form of it (`_lm_block`); any other candidate, or a loss line it does not take
# (nan, exponents, odd spacing), goes through `_line`, which gives the same row for it.
_LM = rb"epoch: (\d+),? step: (\d+),? loss is (" + _NUM + rb")\r?(?=\n)"
_RE_LM_AT = re.compile(_LM)
_BLOCK_MIN = 64  # chunks with at least this many candidate lines are classified by numpy, others by regex
_DIGITS_W = 12  # epoch/step digit runs parsed by numpy; longer ones take the exact Python path
_VALUE_W = 24  # loss values parsed by numpy; longer ones (and nan/inf/exponents) take `float`
_POW10 = np.array([10.0 ** k for k in range(19)])  # exact: every 10**k with k <= 22 is a double
_MANTISSA_MAX = 1 << 53  # integers up to here are exact doubles, so mantissa / 10**k is correctly rounded
_FATAL_KINDS = ("exception", "nan", "worker_exit", "timeout")


class _Rows:
    """A file's metric rows (_ROW_KEYS) in file order: numpy blocks from the bulk path, tuples otherwise."""

    __slots__ = ("_blocks", "_n", "_tail")

    def __init__(self) -> None:
        self._blocks: list[np.ndarray] = []
        self._tail: list[tuple] = []
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def append(self, row: tuple) -> None:
        self._tail.append(row)
        self._n += 1

    def add_block(self, block: np.ndarray) -> None:
        self._flush()
        self._blocks.append(block)
        self._n += len(block)

    def last(self) -> tuple | None:
        if self._tail:
            return self._tail[-1]
        return tuple(self._blocks[-1][-1].tolist()) if self._blocks else None

    def array(self) -> np.ndarray:
        """All rows as one (n, len(_ROW_KEYS)) float64 array (kept, so the next call only adds the new rows)."""
        self._flush()
        if len(self._blocks) != 1:
            self._blocks = [np.concatenate(self._blocks) if self._blocks
                            else np.empty((0, len(_ROW_KEYS)), dtype=np.float64)]
        return self._blocks[0]

    def _flush(self) -> None:
        if self._tail:
            self._blocks.append(np.array(self._tail, dtype=np.float64).reshape(-1, len(_ROW_KEYS)))
            self._tail = []


def _at_least(chunk: np.ndarray, n: int) -> np.ndarray:
    """`chunk`, zero-padded to `n` bytes when shorter (a window view needs that many; callers mark
    every position of such a short chunk not ok, so the padding is never read as data)."""
    return chunk if len(chunk) >= n else np.concatenate((chunk, np.zeros(n - len(chunk), dtype=np.uint8)))


def _digit_runs(chunk: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values and lengths of the ASCII digit runs at `starts`; `ok` is False where the run is too
    long (or too near the end of the buffer) for this path, which then must use the exact one.
    """
    ok = starts <= len(chunk) - _DIGITS_W
    windows = np.lib.stride_tricks.sliding_window_view(_at_least(chunk, _DIGITS_W), _DIGITS_W)
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


def _decimals(chunk: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plain decimal (`-12.5`, `.5`, `3.`) at each `start`: value, length in bytes, ok.

    The value is `float(text)` bit for bit: mantissa <= 2**53 and 10**k (k <= 18) are both doubles
    and IEEE division rounds correctly (Clinger's fast path). `ok` is False for anything else
    (nan, inf, exponents, too many digits): those lines go through the exact path.
    """
    n = len(start)
    ok = (start >= 0) & (start <= len(chunk) - _VALUE_W)
    windows = np.lib.stride_tricks.sliding_window_view(_at_least(chunk, _VALUE_W), _VALUE_W)
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
    ok &= ~active & (ndigits >= 1) & (ndigits <= 18) & (ndots <= 1) & (mantissa >= 0) & (mantissa <= _MANTISSA_MAX)
    value = mantissa / _POW10[np.where(ok, frac, 0)]
    return np.where(neg, -value, value), length, ok


def _unaligned(chunk: np.ndarray, width: int) -> np.ndarray:
    """The `width`-byte little-endian unsigned word starting at every byte of `chunk` (a view, no copy)."""
    return np.ndarray((len(chunk) - width + 1,), dtype=f"<u{width}", buffer=chunk, strides=(1,))


def _literal_at(chunk: np.ndarray, pos: np.ndarray, text: bytes) -> np.ndarray:
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
        ok &= _unaligned(chunk, width)[at + i] == int.from_bytes(text[i:i + width], "little")
        i += width
    return ok


def _candidate_starts(chunk: np.ndarray, end: int) -> np.ndarray:
    """Start of every line after a newline in `chunk[:end]` that `_RE_SCAN` matches: a line that
    does not begin with `[` or a newline, or begins with `[E`/`[C`.

    numpy finds the newlines (SIMD compare, then nonzero over the mask packed 8 bytes to a byte, so
    it walks an eighth of the elements: several times faster than sre stepping over each newline);
    one 2-byte gather per newline then classifies the next two bytes. `chunk[end-1]` is a newline,
    so a newline at end-2 or end-1 never starts a candidate and both bytes after any earlier one are
    inside `chunk[:end]`.
    """
    packed = np.packbits(chunk[:max(end - 2, 0)] == 10)  # bit 7 - (i % 8) of byte i // 8: chunk[i] is "\n"
    hit = np.flatnonzero(packed != 0)  # bytes with at least one newline
    bits = np.flatnonzero(np.unpackbits(packed[hit]).view(bool))
    nl = hit[bits >> 3] * 8 + (bits & 7)
    pair = _unaligned(chunk[:end], 2)[nl + 1]  # byte after the newline | the one after that << 8
    first = pair & 0xFF
    keep = (first != 0x5B) & (first != 0x0A)
    keep |= (pair == 0x455B) | (pair == 0x435B)  # "[E", "[C"
    return nl[keep] + 1


def _lm_row(m: re.Match, off: int, obs_time: float) -> tuple:
    """The row of one `_RE_LM_AT` match (the exact reference for what `_lm_block` computes in bulk)."""
    return (float(m[1]), float(m[2]), _NAN, _NAN, float(m[3]), _NAN, _NAN, obs_time, off)


def _add_rows(st: _FileState, block: np.ndarray) -> None:
    if len(block) >= _BLOCK_MIN:
        st.rows.add_block(block)
    else:
        for row in block.tolist():
            st.rows.append(tuple(row))


def _lm_block(buf: bytes | bytearray, starts: np.ndarray, base: int,
              obs_time: float) -> tuple[np.ndarray, np.ndarray]:
    """Find, among the candidate lines at `starts`, the LossMonitor lines numpy can read exactly and
    build their rows column-wise: returns (mask over `starts`, rows of the masked lines).

    A line is taken only if it is all of `epoch: <digits>[,] step: <digits>[,] loss is <decimal>`
    then an optional CR and the newline (so `_LM` matches it whole and `float` gives the same
    numbers); the rest is left to `_line`.
    """
    chunk = np.frombuffer(buf, dtype=np.uint8)
    top = len(chunk) - 1
    take = _literal_at(chunk, starts, b"epoch: ")
    idx = np.flatnonzero(take)
    ls = starts[idx]
    epoch, e_len, ok = _digit_runs(chunk, ls + 7)
    pos = np.minimum(ls + 7 + e_len, top)
    pos += chunk[pos] == ord(",")
    ok &= (e_len >= 1) & _literal_at(chunk, pos, b" step: ")
    step, s_len, s_ok = _digit_runs(chunk, pos + 7)
    pos = np.minimum(pos + 7 + s_len, top)
    pos += chunk[pos] == ord(",")
    ok &= s_ok & (s_len >= 1) & _literal_at(chunk, pos, b" loss is ")
    loss, v_len, v_ok = _decimals(chunk, pos + 9)
    pos = np.minimum(pos + 9 + v_len, top - 1)
    ok &= v_ok & ((chunk[pos] == ord("\n")) | ((chunk[pos] == ord("\r")) & (chunk[pos + 1] == ord("\n"))))
    take[idx] = ok
    out = np.empty((int(ok.sum()), len(_ROW_KEYS)), dtype=np.float64)
    out[:, 0] = epoch[ok]
    out[:, 1] = step[ok]
    out[:, 2:4] = _NAN
    out[:, 4] = loss[ok]
    out[:, 5:7] = _NAN
    out[:, 7] = obs_time
    out[:, 8] = ls[ok] + base
    return take, out


@dataclass
class _FileState:
    """Everything we know about one file: read position, held partial line, parsed rows."""

    info: LogFile
    offset: int = 0  # file size when we last looked (a smaller size means truncation)
    consumed: int = 0  # absolute offset just after the last complete line parsed
    skipping: bool = False  # inside an over-long line: drop bytes until its newline
    dropped_bytes: int = 0
    dropped_lines: int = 0
    head: bytes = b""
    ino: int = -1
    size: int = 0
    mtime: float = _NAN
    last_growth: float = _NAN
    pid: int | None = None
    restarts: int = 0
    live: bool = False  # rows get the observation time (the file was read while being written)
    tb_start: int | None = None  # offset of a pending "Traceback" header
    tb_carry: bytes = b""
    rows: _Rows = field(default_factory=_Rows)  # _ROW_KEYS rows, file order
    timings: list[tuple] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    unregistered: set[int] = field(default_factory=set)

    def reset(self) -> None:
        """The file was truncated or replaced (msrun relaunch opens logs with "w"): start over."""
        restarts = self.restarts + 1
        fresh = _FileState(self.info)
        self.__dict__.update(fresh.__dict__)
        self.restarts = restarts
        self.live = True


class _Parser:
    """Parses complete-line chunks of one file into rows/errors; a pure function of the bytes."""

    def __init__(self, user_regex: re.Pattern[str] | None = None) -> None:
        self.user_regex = user_regex

    def feed(self, st: _FileState, buf: bytes | bytearray, base: int, now: float, end: int) -> None:
        """Parse `buf[:end]` (complete lines, buf[end-1] is b"\n") found at absolute offset `base`.

        `buf` may be a reused bytearray longer than `end`: nothing past `end` is looked at.
        """
        info = st.info
        if info.role == "worker" and st.pid is None:
            m = _RE_DISTRIBUTED_PID.search(buf, 0, end) or _RE_PID.search(buf, 0, end)
            if m:
                st.pid = int(m.group(1))
        if info.role == "scheduler":
            st.unregistered.update(int(m.group(1)) for m in _RE_UNREGISTERED.finditer(buf, 0, end))
        obs_time = now if st.live else _NAN
        find = buf.find
        metrics = info.role == "worker"
        fast = metrics and self.user_regex is None
        if buf[:1] != b"[" or buf[1:2] in (b"E", b"C"):  # the first line has no b"\n" before it
            m = _RE_LM_AT.match(buf, 0, end) if fast else None
            if m is not None:
                st.rows.append(_lm_row(m, base, obs_time))
            else:
                self._line(st, buf, 0, find(b"\n", 0, end), base, obs_time, metrics)
        # Every candidate line in a few numpy passes, kept as a flat array of line starts (no match
        # objects pile up; they would also wake the cyclic GC). In a big chunk numpy picks out the
        # LossMonitor lines and builds their rows at once; the block's slices are added in file order
        # around the other lines (a TimeMonitor line takes the epoch/step of the row before it).
        starts = _candidate_starts(np.frombuffer(buf, dtype=np.uint8), end)
        if fast and len(starts) >= _BLOCK_MIN:
            is_lm, block = _lm_block(buf, starts, base, obs_time)
        else:
            rows, lm = [], []
            for ls in starts.tolist() if fast else ():
                m = _RE_LM_AT.match(buf, ls, end)
                lm.append(m is not None)
                if m is not None:
                    rows.append(_lm_row(m, base + ls, obs_time))
            is_lm = np.array(lm, dtype=bool) if fast else np.zeros(len(starts), dtype=bool)
            block = np.array(rows, dtype=np.float64).reshape(-1, len(_ROW_KEYS))
        done = 0
        others = np.flatnonzero(~is_lm)
        for t, (j, ls) in enumerate(zip(others.tolist(), starts[others].tolist(), strict=True)):
            if j - t > done:  # j - t LossMonitor lines come before this one
                _add_rows(st, block[done:j - t])
                done = j - t
            self._line(st, buf, ls, find(b"\n", ls, end), base, obs_time, metrics)
        if len(block) > done:
            _add_rows(st, block[done:])
        if st.tb_start is not None:
            if st.tb_start >= base:
                st.tb_carry = bytes(buf[st.tb_start - base:end][:_TB_CARRY_MAX])
            else:
                st.tb_carry += buf[:min(end, max(0, _TB_CARRY_MAX - len(st.tb_carry)))]

    def _error(self, st: _FileState, kind: str, message: str, context: str, off: int,
               rank: int | None, pid: int | None, t: float) -> None:
        st.errors.append({"rank": rank, "kind": kind, "message": message, "context": context,
                          "line": None, "offset": off, "file": st.info.rel, "pid": pid, "time": t})

    def _line(self, st: _FileState, buf: bytes | bytearray, ls: int, le: int, base: int, obs_time: float,
              metrics: bool) -> None:
        line = bytes(buf[ls:le])
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            return
        off = base + ls
        info = st.info
        rank = info.rank if info.role == "worker" else -1
        if line.startswith(_ERROR_PREFIXES):
            m = _RE_MS_LOG.match(line)
            msg = (m.group(5) if m else line).decode("utf-8", "replace").strip()
            mt = _RE_TIMED_OUT.search(line)
            if mt:
                self._error(st, "timeout", msg, "", off, int(mt.group(1)), None, obs_time)
            elif (mw := _RE_WORKER_EXIT.search(line)) is not None:
                self._error(st, "worker_exit", msg, "", off, None, int(mw.group(1)), obs_time)
            else:
                self._error(st, "error_log", msg, "", off, rank, st.pid, obs_time)
            return
        if line.startswith(b"["):
            return
        if line.startswith(b"Traceback (most recent call last)"):
            st.tb_start = off
            st.tb_carry = b""
            return
        if st.tb_start is not None and line.startswith((b" ", b"\t")):
            return  # a frame of the pending traceback
        mexc = _RE_EXC_LINE.match(line)
        if mexc:
            text = line.decode("utf-8", "replace").strip()
            context = ""
            if st.tb_start is not None:
                end = off - base + len(line)
                raw = buf[st.tb_start - base:end] if st.tb_start >= base else st.tb_carry + buf[:end]
                context = raw[-_TB_CARRY_MAX:].decode("utf-8", "replace").replace("\r\n", "\n")
                st.tb_start = None
                st.tb_carry = b""
            kind = "nan" if b"NAN or INF" in line else "exception"
            self._error(st, kind, text, context, off, rank, st.pid, obs_time)
            return
        if not metrics:
            return
        if self.user_regex is not None:
            m = self.user_regex.search(line.decode("utf-8", "replace"))
            if m:
                values = dict.fromkeys(_ROW_KEYS, _NAN)
                for key, raw in m.groupdict().items():
                    if raw is not None:
                        try:
                            values[key] = float(raw)
                        except ValueError:
                            values[key] = _NAN
                t = _line_time(line)
                values["time"] = t if t == t else obs_time
                values["offset"] = off
                st.rows.append(tuple(values[k] for k in _ROW_KEYS))
            return
        if b"per step time" in line:
            m = _RE_TIMEMONITOR.search(line)
            if m:
                last = st.rows.last() or (_NAN, _NAN)
                st.timings.append((last[0], last[1], _num(m.group(1)), _num(m.group(2)), obs_time, off))
            return
        if b"loss" in line:
            row = parse_loss_line(line)
            if row is not None:
                t = row["time"]
                st.rows.append((row["epoch"], row["step"], row["epochs_total"], row["steps_total"],
                                row["loss"], row["step_time_ms"], row["lr"], t if t == t else obs_time, off))


# ----------------------------------------------------------------------------- run state + snapshot

@dataclass
class RunSnapshot:
    """A consistent view of a run's logs: what `read_run` returns and `RunWatcher.snapshot()` gives.

    metrics: one row per loss line per rank in file order (rank, epoch, step, loss, step_time_ms, lr,
    time = line timestamp or observation time when watched live else NaN, offset, file);
    timings: TimeMonitor lines; errors: rank, kind (exception/nan/worker_exit/timeout/error_log),
    message, context (traceback), line, offset, file; ranks: per-rank facts for `rank_status`.
    """

    log_dir: Path
    metrics: pd.DataFrame
    timings: pd.DataFrame
    errors: pd.DataFrame
    ranks: pd.DataFrame
    files: list[LogFile]
    layout: str
    version: int
    taken_at: float

    @property
    def n_ranks(self) -> int:
        return len(self.ranks)

    def crashed_ranks(self) -> list[int]:
        """Ranks with an exception, a worker-exit report, or a scheduler timeout."""
        if self.errors.empty:
            return []
        bad = self.errors[self.errors["kind"].isin(list(_FATAL_KINDS))]
        return sorted({int(r) for r in bad["rank"].dropna() if int(r) >= 0})


def _line_number(path: Path, offset: int) -> int | None:
    """1-based line number of the byte at `offset` (only used for the rare error rows)."""
    try:
        with open(path, "rb") as f:
            count = 0
            remaining = offset
            while remaining > 0:
                data = f.read(min(remaining, 8 << 20))
                if not data:
                    break
                count += data.count(b"\n")
                remaining -= len(data)
        return count + 1
    except OSError:
        return None


def _empty_metrics() -> pd.DataFrame:
    dtypes = {k: "float64" for k in METRIC_COLUMNS}
    dtypes.update(rank="int64", offset="int64", file="object")
    return pd.DataFrame({k: pd.Series(dtype=v) for k, v in dtypes.items()})


def _read_into(f: BinaryIO, buf: bytearray, n: int) -> int:
    """Read up to `n` bytes into the start of `buf` (no fresh 32 MB bytes object per block)."""
    got = 0
    with memoryview(buf) as view:
        while got < n:
            k = f.readinto(view[got:n])
            if not k:
                break
            got += k
    return got


_HAVE_PREAD = hasattr(os, "preadv")


def _pread_into(fd: int, buf: bytearray, n: int, pos: int) -> int:
    """Read up to `n` bytes at file offset `pos` into the start of `buf` (thread-safe: no seek)."""
    got = 0
    with memoryview(buf) as view:
        while got < n:
            k = os.preadv(fd, [view[got:n]], pos + got)
            if not k:
                break
            got += k
    return got


def _read_exact(f: BinaryIO, n: int) -> bytes:
    """Up to `n` bytes from an unbuffered file (a raw read may come back short)."""
    parts: list[bytes] = []
    while n > 0:
        part = f.read(n)
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


class _RunState:
    """The engine behind read_run and RunWatcher (not thread-safe by itself)."""

    def __init__(self, log_dir: Path | str, loss_regex: str | None = None,
                 extra_files: Sequence[Path | str] = ()) -> None:
        self.log_dir = Path(log_dir)
        self.parser = _Parser(compile_user_regex(loss_regex) if loss_regex else None)
        self.extra_files = [Path(p) for p in extra_files]
        self.files: dict[Path, _FileState] = {}
        self.version = 0
        self.started = False
        self._cache: RunSnapshot | None = None
        self._cache_version = -1
        self._last_discover = 0.0
        self._bufs = [bytearray(), bytearray()]  # read buffers reused across the blocks/files of a refresh
        self._pool: ThreadPoolExecutor | None = None  # reads the next block while one is parsed

    def discover(self) -> bool:
        """Add newly appeared files; True when something new was found."""
        infos = discover_logs(self.log_dir) if self.log_dir.is_dir() else []
        for extra in self.extra_files:
            if extra.is_file():
                infos.append(LogFile(extra, extra.name, "launcher", None, "other"))
        new = False
        for info in infos:
            if info.path not in self.files:
                st = _FileState(info)
                st.live = self.started  # files that appear after the first scan are live
                self.files[info.path] = st
                new = True
        self._last_discover = time.monotonic()
        return new

    def refresh(self, paths: Iterable[Path] | None = None, rediscover: bool = True) -> bool:
        """Read new complete lines of `paths` (all files when None); True when anything changed."""
        changed = self.discover() if rediscover else False
        targets = self.files.values() if paths is None else [self.files[p] for p in paths if p in self.files]
        now = time.time()
        try:
            for st in list(targets):
                changed |= self._read(st, now)
        finally:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None
            # a watcher keeps only small buffers between refreshes
            self._bufs = [b if len(b) <= _KEEP_BUF else bytearray() for b in self._bufs]
        if changed:
            self.version += 1
        self.started = True
        return changed

    def _buffer(self, slot: int, n: int) -> bytearray:
        buf = self._bufs[slot]
        if len(buf) < n:
            buf = self._bufs[slot] = bytearray(max(n, min(2 * len(buf), _READ_BLOCK)))
        return buf

    def _prefetch(self, fd: int, slot: int, pos: int, n: int) -> Future[int]:
        """Start reading `n` bytes at `pos` into buffer `slot` on the helper thread (pread releases the GIL)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="logs-read")
        return self._pool.submit(_pread_into, fd, self._buffer(slot, n), n, pos)

    def _reset(self, st: _FileState) -> None:
        st.reset()

    def _read(self, st: _FileState, now: float) -> bool:
        """Parse from the end of the last complete line to the last newline now in the file.

        The incomplete tail stays on disk (re-read next time), so memory is bounded; a tail longer
        than MAX_PARTIAL_LINE is dropped up to its newline and counted.
        """
        try:
            stat = os.stat(st.info.path)
        except OSError:
            return False
        changed = False
        size = stat.st_size
        if st.ino not in (-1, stat.st_ino) or size < st.offset:
            self._reset(st)
            changed = True
        st.ino = stat.st_ino
        st.mtime = stat.st_mtime
        if size == st.offset:
            return changed
        try:
            f = open(st.info.path, "rb", buffering=0)  # noqa: SIM115 - closed by the with below
        except OSError:
            return changed
        with f:
            if st.head and _read_exact(f, len(st.head)) != st.head:
                self._reset(st)  # rewritten in place (truncate + write before we looked)
                changed = True
            if len(st.head) < 256:
                f.seek(0)
                st.head = _read_exact(f, 256)
            pos = st.consumed
            slot = 0
            pending: tuple[int, int, Future[int]] | None = None  # (pos, slot, read) running on the helper
            try:
                while pos < size:
                    want = min(size - pos, _READ_BLOCK)
                    if pending is not None and pending[0] == pos:
                        _, slot, fut = pending
                        pending = None
                        data, got = self._bufs[slot], fut.result()
                    else:
                        if pending is not None:  # not where we are now (cannot happen): let it finish
                            pending[2].result()
                            pending = None
                        f.seek(pos)
                        data = self._buffer(slot, want)
                        got = _read_into(f, data, want)
                    if not got:
                        break
                    if st.skipping:
                        nl = data.find(b"\n", 0, got)
                        if nl == -1:
                            st.dropped_bytes += got
                            pos += got
                        else:
                            st.dropped_bytes += nl
                            st.dropped_lines += 1
                            st.skipping = False
                            pos += nl + 1
                        st.consumed = pos
                        changed = True
                        continue
                    last_nl = data.rfind(b"\n", 0, got)
                    if last_nl == -1:
                        if got > MAX_PARTIAL_LINE:
                            st.skipping = True
                            st.dropped_bytes += got
                            st.errors.append({
                                "rank": st.info.rank if st.info.role == "worker" else -1,
                                "kind": "overlong_line",
                                "message": f"a line longer than {MAX_PARTIAL_LINE} bytes was dropped",
                                "context": "", "line": None, "offset": pos, "file": st.info.rel, "pid": st.pid,
                                "time": now if st.live else _NAN})
                            pos += got
                            st.consumed = pos
                            changed = True
                            continue
                        break  # an incomplete last line: wait for its newline
                    nxt = pos + last_nl + 1
                    if size - nxt >= _PREFETCH_MIN and _HAVE_PREAD:
                        pending = (nxt, 1 - slot, self._prefetch(f.fileno(), 1 - slot, nxt,
                                                                 min(size - nxt, _READ_BLOCK)))
                    self.parser.feed(st, data, pos, now, last_nl + 1)
                    pos = nxt
                    st.consumed = pos
                    changed = True
            finally:
                if pending is not None:
                    pending[2].result()  # never close the file (or reuse its buffer) under a running read
        st.offset = size
        st.size = size
        st.last_growth = now if st.live else stat.st_mtime
        return changed

    # -- snapshot
    @staticmethod
    def _file_array(st: _FileState) -> np.ndarray:
        """Rows of one file as an (n, len(_ROW_KEYS)) float array (the rows keep it between snapshots)."""
        return st.rows.array()

    def snapshot(self) -> RunSnapshot:
        if self._cache is not None and self._cache_version == self.version:
            return self._cache
        workers = [st for st in self.files.values() if st.info.role == "worker"]
        workers.sort(key=lambda s: (s.info.rank if s.info.rank is not None else -1, s.info.rel))
        if workers:
            blocks = [self._file_array(st) for st in workers]
            n_float = len(_ROW_KEYS) - 1  # epoch .. time: the float columns, already in METRIC_COLUMNS order
            columns = np.empty((len(_ROW_KEYS), sum(len(b) for b in blocks)), dtype=np.float64)
            np.concatenate([b.T for b in blocks], axis=1, out=columns)  # one transposing copy
            # pandas keeps a 2-D float block as (columns, rows): hand it over as is instead of stacking
            metrics = pd.DataFrame(columns[:n_float].T, columns=list(_ROW_KEYS[:n_float]), copy=False)
            metrics.insert(0, "rank", np.concatenate([
                np.full(len(b), s.info.rank if s.info.rank is not None else -1, np.int64)
                for b, s in zip(blocks, workers, strict=True)]))
            metrics["offset"] = columns[n_float].astype(np.int64)
            metrics["file"] = np.concatenate([np.full(len(b), s.info.rel, dtype=object)
                                              for b, s in zip(blocks, workers, strict=True)])
        else:
            metrics = _empty_metrics()
        timings = pd.DataFrame([(st.info.rank, *t, st.info.rel) for st in workers for t in st.timings],
                               columns=TIMING_COLUMNS)
        pid_to_rank = {st.pid: st.info.rank for st in workers if st.pid is not None}
        error_rows: list[dict] = []
        for st in self.files.values():
            for err in st.errors:
                if err["line"] is None:
                    err["line"] = _line_number(st.info.path, err["offset"])
                row = dict(err)
                if row["rank"] is None and row["pid"] is not None:
                    row["rank"] = pid_to_rank.get(row["pid"])
                error_rows.append(row)
        errors = pd.DataFrame(error_rows, columns=ERROR_COLUMNS)
        errors["rank"] = pd.to_numeric(errors["rank"], errors="coerce").astype("Int64")
        unregistered: set[int] = set()
        for st in self.files.values():
            unregistered |= st.unregistered
        ranks = self._rank_table(workers, metrics, unregistered)
        layouts = {st.info.layout for st in workers}
        layout = layouts.pop() if len(layouts) == 1 else ("mixed" if layouts else "none")
        snap = RunSnapshot(self.log_dir, metrics, timings, errors, ranks,
                           [st.info for st in self.files.values()], layout, self.version, time.time())
        self._cache, self._cache_version = snap, self.version
        return snap

    @staticmethod
    def _rank_table(workers: list[_FileState], metrics: pd.DataFrame, unregistered: set[int]) -> pd.DataFrame:
        by_rank: dict[int, list[_FileState]] = {}
        for st in workers:
            by_rank.setdefault(st.info.rank if st.info.rank is not None else -1, []).append(st)
        rows = []
        for rank in sorted(by_rank):
            sts = by_rank[rank]
            last = next((s.rows.last() for s in reversed(sts) if len(s.rows)), None)
            n_loss = sum(len(s.rows) for s in sts)
            epoch, step, epochs_total, steps_total, loss = last[:5] if last else (_NAN,) * 5
            done_by_totals = bool(last and epochs_total == epochs_total and steps_total == steps_total
                                  and epoch >= epochs_total and step >= steps_total)
            rows.append({
                "rank": rank,
                "files": ", ".join(s.info.rel for s in sts),
                "pid": next((s.pid for s in sts if s.pid is not None), None),
                "bytes": sum(s.size for s in sts),
                "n_loss": n_loss,
                "last_epoch": epoch,
                "last_step": step,
                "last_loss": loss,
                "last_activity": max((s.last_growth for s in sts if s.last_growth == s.last_growth),
                                     default=_NAN),
                "mtime": max((s.mtime for s in sts if s.mtime == s.mtime), default=_NAN),
                "finished": done_by_totals or rank in unregistered,
                "restarts": max(s.restarts for s in sts),
                "dropped_bytes": sum(s.dropped_bytes for s in sts),
                "dropped_lines": sum(s.dropped_lines for s in sts),
            })
        cols = ["rank", "files", "pid", "bytes", "n_loss", "last_epoch", "last_step", "last_loss",
                "last_activity", "mtime", "finished", "restarts", "dropped_bytes", "dropped_lines"]
        return pd.DataFrame(rows, columns=cols)


def read_run(log_dir: Path | str, loss_regex: str | None = None,
             extra_files: Sequence[Path | str] = ()) -> RunSnapshot:
    """Parse every log under `log_dir` once (complete lines only) and return the snapshot."""
    state = _RunState(log_dir, loss_regex, extra_files)
    state.refresh()
    return state.snapshot()


# ----------------------------------------------------------------------------- watcher

class RunWatcher:
    """Live view of a run's logs: watchdog events + periodic rescan, incremental reads, thread-safe.

    `polling=True` uses watchdog's PollingObserver (the only thing that works on NFS-like shared
    filesystems) to find new files, plus a cheap check every `stat_poll_s` that only stats the files
    already known and reads those that grew: an append shows up within ~`stat_poll_s` instead of
    a full directory snapshot every `poll_timeout_s`. `snapshot()` is cheap when nothing changed
    (cached by version).
    """

    def __init__(self, log_dir: Path | str, polling: bool = False, loss_regex: str | None = None,
                 extra_files: Sequence[Path | str] = (), rescan_s: float = 1.0,
                 poll_timeout_s: float = 0.2, stat_poll_s: float = 0.05) -> None:
        self.log_dir = Path(log_dir)
        self.polling = polling
        self.rescan_s = rescan_s
        self.poll_timeout_s = poll_timeout_s
        self.stat_poll_s = stat_poll_s
        self._state = _RunState(self.log_dir, loss_regex, extra_files)
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._observer = None
        self._scheduled = False
        self._thread: threading.Thread | None = None
        self._listeners: list[Callable[[], None]] = []

    # -- lifecycle
    def start(self) -> RunWatcher:
        """Read what exists, then follow changes. Idempotent."""
        if self._thread is not None:
            return self
        self._stop.clear()
        with self._lock:
            self._state.refresh()
        self._ensure_observer()
        self._thread = threading.Thread(target=self._rescan_loop, name="RunWatcher-rescan", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the observer and the rescan thread (the parsed data stays readable)."""
        self._stop.set()
        obs, self._observer = self._observer, None
        if obs is not None:
            with contextlib.suppress(Exception):
                obs.stop()
                obs.join(timeout=2)
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
        self._scheduled = False

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stop.is_set()

    def __enter__(self) -> RunWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- data
    @property
    def version(self) -> int:
        return self._state.version

    def refresh(self) -> bool:
        """Synchronously read whatever is new (what the events would trigger)."""
        with self._lock:
            changed = self._state.refresh()
            if changed:
                self._changed.notify_all()
            return changed

    def snapshot(self, refresh: bool = False) -> RunSnapshot:
        """A consistent copy of everything parsed so far; `refresh=True` catches up first."""
        with self._lock:
            if refresh and self._state.refresh():
                self._changed.notify_all()
            return self._state.snapshot()

    def wait_for_change(self, since_version: int, timeout: float) -> int:
        """Block until the version moves past `since_version` (or timeout); return the version."""
        with self._changed:
            self._changed.wait_for(lambda: self._state.version != since_version or self._stop.is_set(),
                                   timeout=timeout)
            return self._state.version

    # -- internals
    def _ensure_observer(self) -> None:
        if self._scheduled or not self.log_dir.is_dir():
            return
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                watcher._on_event(event)

        observer = PollingObserver(timeout=self.poll_timeout_s) if self.polling else Observer()
        observer.schedule(_Handler(), str(self.log_dir), recursive=True)
        observer.daemon = True
        observer.start()
        self._observer = observer
        self._scheduled = True

    def _on_event(self, event) -> None:
        if self._stop.is_set():
            return
        path = Path(os.fsdecode(getattr(event, "dest_path", "") or event.src_path))
        with self._lock:
            known = path in self._state.files
            if known and not event.is_directory:
                changed = self._state.refresh([path], rediscover=False)
            else:
                changed = self._state.refresh()
            if changed:
                self._changed.notify_all()

    def _rescan_loop(self) -> None:
        tick = min(self.rescan_s, self.stat_poll_s) if self.polling and self.stat_poll_s > 0 else self.rescan_s
        next_full = time.monotonic() + self.rescan_s
        while not self._stop.wait(tick):
            if time.monotonic() < next_full:
                self._refresh_known()
                continue
            next_full = time.monotonic() + self.rescan_s
            with contextlib.suppress(Exception):
                self._ensure_observer()
            self.refresh()

    def _refresh_known(self) -> None:
        """One os.stat per known file; only files that changed are read (no directory walk)."""
        with self._lock:
            if self._state.refresh(rediscover=False):
                self._changed.notify_all()


# ----------------------------------------------------------------------------- status + tail

STATES = ("running", "stalled", "crashed", "nan", "finished", "stopped", "waiting")


def rank_status(snap: RunSnapshot, now: float | None = None, stall_after_s: float = 60.0,
                run_status: str | None = None) -> pd.DataFrame:
    """Per-rank state for the status table: running / stalled / crashed / nan / finished / stopped.

    crashed: the rank has a traceback, msrun reported its worker pid, or the scheduler timed it out.
    nan: its last loss is not finite or LossMonitor raised "loss is NAN or INF".
    stalled: no new line for `stall_after_s` while the run is (or may be) running.
    `run_status` (from the run registry: running/succeeded/failed/stopped) settles ranks whose log
    simply stops: finished when the run succeeded, stopped when it failed or was stopped.
    """
    now = time.time() if now is None else now
    ranks = snap.ranks.copy()
    errs = snap.errors
    if run_status is None and not errs.empty and (
        (errs["rank"] == -1) & (errs["kind"] == "exception") & errs["file"].eq("scheduler.log")
    ).any():
        run_status = "failed"  # the msrun scheduler itself raised: the job is over
    states, details = [], []
    for _, r in ranks.iterrows():
        rank = int(r["rank"])
        mine = errs[errs["rank"] == rank] if not errs.empty else errs
        fatal = mine[mine["kind"].isin(list(_FATAL_KINDS))] if not mine.empty else mine
        age = now - r["last_activity"] if r["last_activity"] == r["last_activity"] else float("nan")
        last_loss = r["last_loss"]
        if not fatal.empty:
            exc = fatal[fatal["kind"].isin(["exception", "nan"])]
            pick = exc.iloc[-1] if not exc.empty else fatal.iloc[-1]
            nan_kind = pick["kind"] == "nan"
            states.append("nan" if nan_kind else "crashed")
            details.append(str(pick["message"]))
        elif r["n_loss"] and not math.isfinite(last_loss):
            states.append("nan")
            details.append(f"last loss is {last_loss}")
        elif r["finished"] or run_status == "succeeded":
            states.append("finished")
            details.append("")
        elif run_status in ("failed", "stopped"):
            states.append("stopped")
            details.append("log ended without an error of its own (another rank failed or the run was stopped)")
        elif age == age and age > stall_after_s:
            states.append("stalled")
            details.append(f"no new line for {age:.0f} s")
        elif not r["n_loss"]:
            states.append("waiting")
            details.append("no loss line yet")
        else:
            states.append("running")
            details.append("")
    ranks["age_s"] = now - ranks["last_activity"]
    ranks["state"] = states
    ranks["detail"] = details
    return ranks


def tail_lines(path: Path | str, n: int = 200, hide_noise: bool = True, max_bytes: int = 4 << 20) -> list[str]:
    """Last `n` lines of a log (reading at most `max_bytes` from the end), noise optionally hidden."""
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            start = max(0, size - max_bytes)
            f.seek(start)
            data = f.read(size - start)
    except OSError:
        return []
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[str] = []
    for raw in reversed(lines):
        if hide_noise and raw.startswith(_NOISE_PREFIXES):
            continue
        out.append(raw.rstrip(b"\r").decode("utf-8", "replace"))
        if len(out) >= n:
            break
    out.reverse()
    return out
