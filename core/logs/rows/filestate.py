"""One file's parse state and what the parser's paths add to it (rows, reads, errors' kinds), shared by
`core.logs.rows.parser` (which fills it), `core.logs.rows.table` and the reader (which read it)."""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from core.logs.bytes.discover import LogFile, LogRole
from core.logs.rows.columns import ColumnHeader, series_header
from core.logs.rows.formats import ROW_FIELDS, last_log_time
from core.logs.rows.general import LineRead
from core.logs.rows.lineranks import line_rank
from core.logs.rows.linetemplates import LineTemplate
from core.logs.rows.redraws import BarRow, Bars, block_redraws, redraw, remember
from core.logs.rows.splitrows import SplitRead
from core.logs.tokens.bulk import Rows

_NAN = float("nan")

MAX_PARTIAL_LINE = 1 << 20
"""Longest incomplete line we hold in memory (1 MiB); past it the line is dropped and counted."""


class ErrorKind(StrEnum):
    """What an error row is (the `kind` column; the strings are what the snapshot always held)."""

    EXCEPTION = "exception"
    NAN = "nan"
    WORKER_EXIT = "worker_exit"
    TASK_EXIT = "task_exit"  # a launcher (srun, mpirun) says the task ended by a signal or an error exit
    TIMEOUT = "timeout"
    ERROR_LOG = "error_log"
    OVERLONG_LINE = "overlong_line"
    TRUNCATED = "truncated"  # a note: the file was cut in place (copytruncate, truncate); its earlier rows stay


# The rank of an error that is the job's, not one rank's: a launcher's or scheduler's file's own errors, and a
# launcher's traceback after its report naming the failed task (core.logs.rows.snapshot.error_frame). `watch` and
# `diagnose` list them as the job's.
JOB_RANK = -1


@dataclass(frozen=True, slots=True)
class ErrorRow:
    """One error line of a file, as the snapshot's errors frame has it (ERROR_COLUMNS, `kind` as its string).

    Frozen: what changes after the line is read (its line number, found once the snapshot is taken; a failure that
    training followed, now an error line, `demoted` from its kind; a cut traceback's context) is a new row in its
    place. `rank` is the rank the line names when one stream carries several, else its file's (None: from `pid`)."""

    rank: int | None
    kind: ErrorKind
    message: str
    context: str
    offset: int
    file: str
    pid: int | None
    time: float
    log_time: float = _NAN
    line: int | None = None  # 1-based line number, counted when the snapshot needs it
    demoted: ErrorKind | None = None  # the fatal kind training rows after it took away (core.logs.rows.trainedon)

    def with_line(self, line: int | None) -> ErrorRow:
        return replace(self, line=line)

    def row(self) -> tuple:
        """The row in ERROR_COLUMNS order (`kind` as the string the frame always held)."""
        return (
            self.rank,
            str(self.kind),
            self.message,
            self.context,
            self.line,
            self.offset,
            self.file,
            self.pid,
            self.time,
            self.log_time,
        )


FATAL_KINDS = (ErrorKind.EXCEPTION, ErrorKind.NAN, ErrorKind.WORKER_EXIT, ErrorKind.TASK_EXIT, ErrorKind.TIMEOUT)
"""Error kinds that end a rank (the others are only reported)."""


@dataclass(frozen=True)
class ReaderSettings:
    """Block sizes of the reader, passed in (tests shrink them so tiny inputs cross every path)."""

    read_block: int = 8 << 20  # bytes read and parsed per step while catching up (the next one is read
    # meanwhile); small enough that a block is still in cache when numpy scans it (32 MB was ~30 % slower)
    prefetch_min: int = 1 << 20  # a rest smaller than this is read in line, without the helper thread
    block_min: int = 64  # chunks with at least this many candidate lines are classified by numpy
    shape_min: int = 64  # ... and lines of known shapes read in bulk (core.logs.rows.templated) from this many
    compiled_min: int = 1 << 20  # blocks from this size take the compiled passes (tokens.linescan): a smaller
    # read never pays numba's import and cached-code load (~0.5 s once per process), as a CLI run on a small folder
    max_partial_line: int = MAX_PARTIAL_LINE
    tb_carry_max: int = 64 << 10  # traceback context kept across reads
    keep_buf: int = 1 << 20  # read buffer a watcher keeps between refreshes
    settle_min: int = 64 << 20  # a refresh that parsed this much settles the heap (the injected `after_big_read`)
    take_rows: int = 1 << 16  # read_run moves a file's rows to the table at least this often (~7 MB of row blocks)


def named_lines(
    buf: bytes | bytearray,
    block: np.ndarray,
    used: list[LineTemplate],
    which: np.ndarray,
    ranked: dict[int, tuple[int, int] | None],
    base: int,
    end: int,
) -> NamedRows | None:
    """The ranks the lines of the bulk rows name, for the rows read by a template whose line names one
    (`ranked`: template id -> where its lines' rank digits are; `which`: each row's template in `used`): read
    in numpy at those places; a host's lines (`ranked` None) kept for `add_rows` to number in file order.
    None when no row's template names a rank: a stream without rank tags pays one look at its templates."""
    marked = [i for i, t in enumerate(used) if id(t) in ranked]
    if not marked:
        return None
    rows = np.flatnonzero(np.isin(which, marked))
    starts = (block[rows, -1] - base).astype(np.int64)
    ranks = np.full(len(rows), -1, dtype=np.int64)
    chunk = np.frombuffer(buf, dtype=np.uint8, count=end)
    lines: dict[int, bytes] = {}
    for i in marked:
        mine = np.flatnonzero(which[rows] == i)
        span = ranked[id(used[i])]
        if span is not None:  # digits at the same place in every line of the shape
            digits = chunk[starts[mine, None] + np.arange(*span)].astype(np.int64) - 48
            ranks[mine] = digits @ (10 ** np.arange(span[1] - span[0] - 1, -1, -1, dtype=np.int64))
            continue
        for j, off in zip(mine.tolist(), starts[mine].tolist(), strict=True):
            le = buf.find(b"\n", off, end)
            lines[int(rows[j])] = bytes(buf[off : end if le == -1 else le])
    return NamedRows(rows, ranks, lines)


@dataclass(frozen=True)
class NamedRows:
    """The bulk rows whose line names a rank: their rows (sorted), ranks (-1: a host's line, in `lines`)."""

    rows: np.ndarray
    ranks: np.ndarray
    lines: dict[int, bytes]

    @cached_property
    def sorted_rows(self) -> list[int]:
        """`rows` as a list, for a file's part of a batch by bisection (np.searchsorted's call cost ~3 us a file)."""
        return self.rows.tolist()


def add_rows(
    st: FileState,
    block: np.ndarray,
    extras: dict[str, np.ndarray],
    lo: int,
    hi: int,
    block_min: int,
    named: NamedRows | None = None,
    bars: Bars | None = None,
) -> None:
    """Rows lo:hi of a bulk block (and their other metrics) into the file's rows; `named`: the lines of the
    block's rows that may name their rank, by row (`named_lines`; None: no line of the block does); `bars`:
    which rows a progress bar's line gave (their redraws are dropped, core.logs.rows.redraws)."""
    if bars is not None and bars.any_in(lo, hi):
        _add_bar_rows(st, block, extras, lo, hi, block_min, named, bars)
        return
    ranks = None
    if named is not None:
        a, b = bisect_left(named.sorted_rows, lo), bisect_left(named.sorted_rows, hi)
        if b > a:
            ranks = np.full(len(block), -1, dtype=np.int64)
            ranks[named.rows[a:b]] = named.ranks[a:b]
            for i in sorted(i for i in named.lines if lo <= i < hi):  # a host's series is numbered as it comes
                rank = row_rank(st, named.lines[i].removesuffix(b"\r"))
                ranks[i] = -1 if rank is None else rank
    part = block[lo:hi]
    # a few rows go as a block too: keyword lines (`val` in chatter) cut the bulk rows into short runs
    if len(part) >= min(block_min, 4):
        st.rows.add_block(
            part, {name: col[lo:hi] for name, col in extras.items()}, None if ranks is None else ranks[lo:hi]
        )
        return
    for i, row in enumerate(part.tolist()):
        # NaN values too: a printed `nan` (`loss:[-nan/nan]`) makes its column, as it does in a block of rows
        more = {name: float(col[lo + i]) for name, col in extras.items()}
        rank = None if ranks is None or ranks[lo + i] < 0 else int(ranks[lo + i])
        st.rows.append(tuple(row), more, rank)


def _add_bar_rows(
    st: FileState,
    block: np.ndarray,
    extras: dict[str, np.ndarray],
    lo: int,
    hi: int,
    block_min: int,
    named: NamedRows | None,
    bars: Bars,
) -> None:
    """`add_rows` for a part with progress-bar rows: the redraws left out, the last bar row (and line) remembered."""
    mine = {name: col[lo:hi] for name, col in extras.items()}
    ends = bars.ends(block, lo, hi)
    keep = np.flatnonzero(~block_redraws(block[lo:hi], mine, bars.bar[lo:hi], ends, st.bar, len(st.rows))) + lo
    last_bar = int(np.flatnonzero(bars.bar[lo:hi] != b"")[-1])
    if not len(keep):
        st.bar = None if st.bar is None else replace(st.bar, end=int(ends[last_bar]), bar=bars.bar[lo + last_bar])
        return
    if named is not None:  # the kept rows' named ranks, renumbered
        at = np.isin(named.rows, keep)
        kept = set(keep.tolist())
        lines = {int(np.searchsorted(keep, i)): v for i, v in named.lines.items() if i in kept}
        named = NamedRows(np.searchsorted(keep, named.rows[at]), named.ranks[at], lines)
    add_rows(st, block[keep], {name: col[keep] for name, col in extras.items()}, 0, len(keep), block_min, named)
    last = int(keep[-1])
    if bars.bar[last]:
        more = {name: float(col[last]) for name, col in extras.items()}
        st.bar = remember(len(st.rows), block[last], more, bars.bar[lo + last_bar], int(ends[last_bar]))


@dataclass
class ProcessRanks:
    """One stream's processes (by the ids its error lines name) and the rank each is known to be
    (core.logs.rows.processes.process_rank)."""

    ranks: dict[int, int | None] = field(default_factory=dict)  # process id -> its rank (None: not known)
    named: set[int] = field(default_factory=set)  # the ranks error lines named
    lines: dict[int, tuple[int, int | None]] = field(default_factory=dict)  # offset -> (process, the file's rank)
    inferred: int | None = None  # the process linked by "one process, one rank", until that stops being so


@dataclass
class FileState:
    """Everything we know about one file: read position, held partial line, parsed rows."""

    info: LogFile
    offset: int = 0  # file size when we last looked (a smaller size means truncation)
    consumed: int = 0  # absolute offset just after the last complete line parsed
    skipping: bool = False  # inside an over-long line: drop bytes until its newline
    dropped_bytes: int = 0
    dropped_lines: int = 0
    decoded: int = 0  # a UTF-16 file: its lines read so far, decoded, end there (their offsets: core.logs.bytes.utf16)
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
    tb_time: float = _NAN  # time of the last stamped line before the pending traceback's header
    line_prefix: re.Pattern[bytes] | None = None  # the prefix a pipeline puts on its lines (rows.lineprefix)
    columns: ColumnHeader | None = None  # the last column table's header: its rows carry no key (rows.columns)
    # the last bytes of earlier reads, where a traceback's time may be (parser LOOKBACK; joined by time_before)
    tail: tuple[bytes, ...] = ()
    tail_len: int = 0
    rows: Rows = field(default_factory=Rows)  # ROW_KEYS rows, file order
    timings: list[tuple] = field(default_factory=list)
    evals: list[tuple] = field(default_factory=list)  # (epoch, step, name, value, time, offset, rank, summary)
    metric_keys: dict[str, str] = field(default_factory=dict)  # column -> the key as the log spells it
    noted: set[int] = field(default_factory=set)  # ids of the line templates whose keys are in metric_keys
    errors: list[ErrorRow] = field(default_factory=list)
    unregistered: set[int] = field(default_factory=set)
    hosts: dict[str, int] = field(default_factory=dict)  # pdsh host -> its series (core.logs.rows.lineranks)
    rotated: bool = False  # renamed away by log rotation: its rows stay, before the current file's
    unreadable: str | None = None  # why the file cannot be read (permission denied, a FIFO, ...)
    frozen: bool = False  # the part of a file before it was truncated in place: kept, never read again
    cut_from: FileState | None = None  # that part, until the content after the cut says whether it was a relaunch
    truncations: int = 0
    bar: BarRow | None = None  # the last row a progress bar's line gave (core.logs.rows.redraws)
    named_memo: tuple = ()  # the ranks its error/eval lines name, and what they were counted on (rows.runranks)
    procs: ProcessRanks = field(default_factory=ProcessRanks)  # its error lines' processes (rows.processes)
    chatter_at: list[int] = field(default_factory=list)  # offsets of its chatter-level failure rows (rows.failures)
    hole_end: int = -1  # file offset just past its last hole of NULs (a truncation under a writer: rows.launches)
    side_seen: int = 0  # rows whose side lines were looked for (core.logs.rows.sidelines)

    def __post_init__(self) -> None:  # a file named for its loss series reads its bare numbers (rows.columns)
        self.columns = series_header(self.info.path.name)

    def reset(self) -> None:
        """The file was truncated or replaced (msrun relaunch opens logs with "w"): start over."""
        restarts = self.restarts + 1
        fresh = FileState(self.info)
        self.__dict__.update(fresh.__dict__)
        self.restarts = restarts
        self.live = True


def keep_before_cut(st: FileState, copy: tuple[Path, int] | None) -> FileState:
    """`st` was truncated in place: hand back its state so far as a file of its own (its rows stay in the
    table, before the current file's) and start `st` over at offset 0. `copy`: logrotate's copytruncate
    copy (`worker_0.log.1`, found by its first bytes: path, inode), read on to its end like a renamed file; None: a
    plain truncate, the part is kept as read (frozen) until the new content's first row says whether the
    cut was a relaunch (`settle_cut`). Why: copytruncate used to drop the rank's earlier rows."""
    n = st.truncations + 1
    old = FileState(st.info)
    old.__dict__.update(st.__dict__)
    old.rotated = True
    info = st.info
    if copy is None:
        name = f" (before truncation {n})"
        path = info.path.with_name(info.path.name + name)
        old.frozen = True
    else:
        path, old.ino = copy
        name = path.name[len(info.path.name) :]
    old.info = LogFile(path, info.rel + name, info.role, info.rank, info.layout)
    restarts = st.restarts
    st.__dict__.update(FileState(st.info).__dict__)
    st.restarts, st.truncations, st.live = restarts, n, True
    st.cut_from = old if copy is None else None
    return old


def note_cut(st: FileState, old: FileState, obs_time: float) -> None:
    """The one line that says `st` was truncated and where its earlier rows are (an error row of kind
    `truncated`: shown with the file's notes by `watch` and the Monitor; it never fails a rank)."""
    how = "copy-truncated (logrotate copytruncate)" if not old.frozen else "truncated in place"
    st.errors.append(
        ErrorRow(
            rank=st.info.rank if st.info.role == LogRole.WORKER else JOB_RANK,
            kind=ErrorKind.TRUNCATED,
            message=(
                f"{st.info.rel} was {how} after {old.consumed:,} bytes: its {len(old.rows):,} earlier rows are "
                f"kept as {old.info.rel}; reading restarts at its start"
            ),
            context="",
            offset=0,
            file=st.info.rel,
            pid=None,
            time=obs_time,
            line=1,
        )
    )


def settle_cut(st: FileState, obs_time: float) -> FileState | None:
    """Once the content after an in-place cut has a row: a relaunch (its steps start over, at or before
    where the earlier part began: msrun reopens its logs with "w") gives back the earlier part to drop and
    counts a restart, as before; otherwise the earlier part stays (truncate, copytruncate without a copy
    found) and the cut is noted. None: nothing to drop (no decision yet, or the part stays)."""
    old = st.cut_from
    if old is None or not len(st.rows):
        return None
    st.cut_from = None
    if _starts_over(st.rows.first(), old.rows.first()):
        st.restarts += 1
        st.truncations -= 1
        return old
    note_cut(st, old, obs_time)
    return None


def _starts_over(new: tuple | None, old: tuple | None) -> bool:
    """Whether a file's new first row (epoch, step first) is at or before its earlier first row; False
    when the rows say neither an epoch nor a step both sides (nothing tells a relaunch: keep the rows)."""
    if new is None or old is None:
        return old is None
    epochs = math.isfinite(new[0]) and math.isfinite(old[0])
    steps = math.isfinite(new[1]) and math.isfinite(old[1])
    if epochs and steps:
        return (new[0], new[1]) <= (old[0], old[1])
    if epochs or steps:
        i = 0 if epochs else 1
        return new[i] <= old[i]
    return False


NOTE_KINDS = (str(ErrorKind.TRUNCATED),)
"""Error rows that are notes about a file (a truncation, its rows kept): shown as notes, never as failures."""


def note_lines(errors: pd.DataFrame) -> list[str]:
    """One `note:` line per note row of a snapshot's errors (a log truncated in place: where its earlier
    rows are), for `watch` and the Monitor's notes."""
    if errors.empty:
        return []
    notes = errors[errors["kind"].isin(NOTE_KINDS)]
    return [
        f"note: rank {r} {file}: {str(m)[:240]}"
        for r, file, m in zip(notes["rank"], notes["file"], notes["message"], strict=True)
    ]


def row_rank(st: FileState, line: bytes) -> int | None:
    """The rank `line` names when one stream carries several (core.logs.rows.lineranks), a host's series
    when it names only its host; None: the file's rank."""
    named = line_rank(line)
    if named is None:
        return None
    if named.rank is not None:
        return named.rank
    assert named.host is not None  # a LineRank names one or the other
    return st.hosts.setdefault(named.host, len(st.hosts))


def bar_redraw(st: FileState, row: tuple, extras: dict[str, float] | None, bar: bytes, end: int = -1) -> bool:
    """Whether a progress bar line's row (its bar `bar`, its line ending at `end`) only redraws the file's last
    row (core.logs.rows.redraws); else it is remembered as the bar's last row, to be added next."""
    if st.bar is not None and redraw(st.bar, len(st.rows), row, extras, bar, int(row[-1])):
        st.bar = replace(st.bar, end=end, bar=bar)  # the bar's last draw: the next one moved from it or not
        return True
    st.bar = remember(len(st.rows) + 1, row, extras, bar, end)
    return False


def add_read(
    st: FileState,
    read: LineRead,
    off: int,
    obs_time: float,
    rank: int | None = None,
    bar: bytes = b"",
    end: int = -1,
) -> None:
    """What the general reader found on one line, into the file's rows (training) or evals; `rank`: the
    rank the line names (None: the file's); `bar`: a progress bar's line's bar (its redraws give no row), `end`:
    where that line ends (its newline's offset)."""
    f = read.fields
    t = f.get("time", _NAN)
    t = t if t == t else obs_time
    if read.eval:
        epoch, step = f.get("epoch", _NAN), f.get("step", _NAN)
        for name, value in (*f.items(), *read.extras.items()):
            if name not in NOT_EVAL_VALUES:
                st.evals.append((epoch, step, name, value, t, off, rank, read.summary))
        return
    for column, key in read.keys.items():
        note_key(st.metric_keys, column, key)
    row = (*(f.get(k, _NAN) for k in ROW_FIELDS[:-1]), t, off)
    if not (bar and bar_redraw(st, row, read.extras, bar, end)):
        st.rows.append(row, read.extras, rank)
    for part in read.more if isinstance(read, SplitRead) else ():  # a line of several rows (core.logs.rows.splitrows)
        add_read(st, part, off, obs_time, rank)


NOT_EVAL_VALUES = frozenset({"epoch", "step", "epochs_total", "steps_total", "time"})


def row_tuple(row: dict[str, float], obs_time: float, off: int) -> tuple:
    """A parsed row as a ROW_KEYS tuple: the line's own time, else the observation time."""
    t = row["time"]
    return (*(row[k] for k in ROW_FIELDS[:-1]), t if t == t else obs_time, off)


LOOKBACK = 16 << 10
"""Bytes before a traceback searched for the time of the last stamped line (which rank failed first)."""


def time_before(st: FileState, buf: bytes | bytearray, floor: int, head: int) -> float:
    """Time of the last stamped line in the LOOKBACK bytes before buf[head] (the file's bytes start at
    buf[floor]): this read's bytes, then the tail of the file's earlier reads, so a file read in several
    blocks or live ticks gives the time one read gives."""
    lo = head - LOOKBACK
    if lo >= floor or not st.tail:
        return last_log_time(bytes(buf[max(floor, lo) : head]))
    return last_log_time((b"".join(st.tail) + bytes(buf[floor:head]))[-LOOKBACK:])


_TAIL_PARTS = 64  # a tail of more reads than this is joined into one


def carry_over(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int, carry_max: int) -> None:
    """After a read of buf[floor:end] (file offset `base` at buf[0]): keep the file's last LOOKBACK bytes for
    `time_before` in the next read, and the bytes of a traceback still being written for its context.

    Why a tuple of reads: a live tick reads ~1 KB per rank, and joining it to the 16 KiB kept before (then cutting
    that to 16 KiB) copied 32 KiB per rank per tick, 32 MB a tick at 1,024 ranks, for a traceback that seldom comes."""
    read = bytes(buf[max(floor, end - LOOKBACK) : end])
    if len(read) >= LOOKBACK:
        st.tail, st.tail_len = (read,), len(read)
    elif read:
        parts, n = (*st.tail, read), st.tail_len + len(read)
        while n - len(parts[0]) >= LOOKBACK:  # the oldest read is no longer needed for the last LOOKBACK bytes
            n -= len(parts[0])
            parts = parts[1:]
        if len(parts) > _TAIL_PARTS:
            parts = (b"".join(parts)[-LOOKBACK:],)
            n = len(parts[0])
        st.tail, st.tail_len = parts, n
    if st.tb_start is not None:
        if st.tb_start - base >= floor:  # the header is in this read (a batch holds other files before `floor`)
            st.tb_carry = bytes(buf[st.tb_start - base : end][:carry_max])
        else:
            st.tb_carry += buf[floor : min(end, floor + max(0, carry_max - len(st.tb_carry)))]


def add_error(
    st: FileState,
    kind: ErrorKind,
    message: str,
    context: str,
    off: int,
    rank: int | None,
    pid: int | None,
    t: float,
    log_time: float = _NAN,
) -> None:
    """One error row of the file (its line number is counted when the snapshot needs it)."""
    st.errors.append(ErrorRow(rank, kind, message, context, off, st.info.rel, pid, t, log_time))


def note_key(keys: dict[str, str], column: str, key: str) -> None:
    """The spelling a column shows when a log spells it several ways (`epoch`, `A-epoch`): the shortest, then
    the first in sort order, so the bulk and line-by-line paths, which meet the lines in different orders,
    agree."""
    old = keys.get(column)
    if old is None or (len(key), key) < (len(old), old):
        keys[column] = key
