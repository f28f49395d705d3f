"""Reading a run: `RunReader` reads every file from its saved offset to its last complete line, and
`snapshot()` turns what the parser collected into a `RunSnapshot`; `read_run` does it once.

Every file is read from a saved offset to its last complete line (the next block is read on a
helper thread while one is parsed), so a watcher and a one-shot read produce exactly the same rows
however the writes were chunked.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from stat import S_ISREG
from typing import BinaryIO

import pandas as pd

from core.files import is_regular, kind_of
from core.logs.bytes.discover import FolderCache, LogFile, LogRole
from core.logs.bytes.jsondoc import is_document, read_document
from core.logs.bytes.rawio import HAVE_PREAD as _HAVE_PREAD
from core.logs.bytes.rawio import breaks_to_lf as _breaks_to_lf
from core.logs.bytes.rawio import bytes_on_disk, find_copy, find_rotated
from core.logs.bytes.rawio import read_exact as _read_exact
from core.logs.bytes.readahead import ReadAhead
from core.logs.bytes.source import ByteSource, CheckedFiles, why_not
from core.logs.bytes.utf16 import read_utf16, utf16_codec, utf16_undecided
from core.logs.rows.evaltable import EvalTable
from core.logs.rows.filestate import JOB_RANK, ErrorRow, keep_before_cut, note_cut, settle_cut
from core.logs.rows.formats import user_format
from core.logs.rows.kept import KeptRows
from core.logs.rows.parser import ErrorKind, FileState, Parser, ReaderSettings
from core.logs.rows.smallfiles import LiveBatch, SmallFiles
from core.logs.rows.snapshot import (
    ERROR_COLUMNS,
    METRIC_COLUMNS,
    TIMING_COLUMNS,
    Held,
    RunSnapshot,
    SideFrames,
    empty_metrics,
    pass_summaries,
    rank_table,
)
from core.logs.rows.table import EVAL_COLUMNS, MetricTable, metric_keys

__all__ = ["ERROR_COLUMNS", "EVAL_COLUMNS", "METRIC_COLUMNS", "TIMING_COLUMNS", "RunReader", "RunSnapshot", "read_run"]

_NAN = float("nan")
# a one-shot read takes a file's last line without a newline (a log that just ends: tensorpack's last step row) once
# the file has been still this long: a writer mid-line moves its mtime (a watcher waits for the newline instead)
QUIET_S = 2.0


def file_order(st: FileState) -> tuple[int, bool, str]:
    """Rank order; a rank's rotated files (older rows) before its current file."""
    return (st.info.rank if st.info.rank is not None else -1, not st.rotated, st.info.rel)


def _never_read(st: FileState) -> bool:
    return st.consumed == 0 and st.offset == 0 and not st.skipping and st.info.role == LogRole.WORKER


def _done(value: int) -> Future[int]:
    fut: Future[int] = Future()
    fut.set_result(value)
    return fut


class RunReader:
    """The engine behind read_run and RunWatcher (not thread-safe by itself)."""

    def __init__(
        self,
        log_dir: Path | str,
        loss_regex: str | None = None,
        extra_files: Sequence[Path | str] = (),
        settings: ReaderSettings | None = None,
        one_shot: bool = False,
        follow_links: bool = False,
        after_big_read: Callable[[], None] | None = None,
        source: ByteSource | None = None,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.source = source or CheckedFiles()  # where the bytes come from (tests inject their own)
        # the process's heap policy (core.logs.live.heap), called after a read that parsed a lot: the
        # owner of the process decides (a watcher freezes what it keeps; a one-shot command exits)
        self.after_big_read = after_big_read
        self.follow_links = follow_links  # read logs whose real path is outside log_dir (links): only if asked
        self.settings = settings or ReaderSettings()
        self.parser = Parser(user_format(loss_regex) if loss_regex else None, self.settings)
        self.extra_files = [Path(p) for p in extra_files]
        self.files: dict[Path, FileState] = {}
        self.version = 0
        self.started = False
        self._cache: RunSnapshot | None = None
        # read_run: each worker file's rows go to the table as soon as it is read, in rank order
        self.one_shot = one_shot
        self._table = MetricTable()
        self._evals = EvalTable()  # the evaluation entries as columns, converted once each
        self._side = SideFrames()  # the TimeMonitor and error frames, each rebuilt when its lists change
        self._kept = KeptRows()  # the training rows the files' series choice keeps, held between snapshots
        self._cache_version = -1
        self._last_discover = 0.0
        self._folder = FolderCache()  # the last scan, given again while no folder changed
        self._live = LiveBatch(self.parser)  # a tick's new lines of the files read before, parsed together
        self._bufs = [bytearray(), bytearray()]  # read buffers reused across the blocks/files of a refresh
        self._pool: ThreadPoolExecutor | None = None  # reads the next block while one is parsed
        self._ahead = ReadAhead(self.settings.read_block, self.settings.prefetch_min)  # ... or the next file's
        self._read_next: FileState | None = None  # the file to read ahead once the current one is open
        self.behind: dict[Path, int] = {}  # bytes on disk past what a capped refresh read, per file
        self.spent = 0  # bytes parsed (read up to a line end) so far: a refresh's cap is measured on it
        self._turn = 0  # a capped refresh starts where the last one stopped: no file waits forever
        self._min_read = self.settings.max_partial_line + 1  # a cap this big holds a whole line (or an over-long one)

    @property
    def table(self) -> MetricTable:
        """The loss table the snapshots' `metrics` view (its size: `table.nbytes`)."""
        return self._table

    @property
    def held(self) -> Held:
        """What the reader holds between two reads besides the table (bounded by its settings)."""
        return Held(
            max(len(b) for b in self._bufs),
            len(self._ahead.buffer),
            max((st.rows.untaken for st in self.files.values()), default=0),
        )

    def discover(self) -> bool:
        """Add newly appeared files; True when something new was found."""
        infos = self._folder.files(self.log_dir, self.follow_links) if self.log_dir.is_dir() else []
        for extra in self.extra_files:  # a launcher's output named by the caller: a link only with follow_links
            if is_regular(extra, self.follow_links):
                infos.append(LogFile(extra, extra.name, LogRole.LAUNCHER, None, "other"))
        new = False
        for info in infos:
            if info.path not in self.files:
                st = FileState(info)
                st.live = self.started  # files that appear after the first scan are live
                self.files[info.path] = st
                new = True
        self._last_discover = time.monotonic()
        return new

    def refresh(self, paths: Iterable[Path] | None = None, rediscover: bool = True, budget: int | None = None) -> bool:
        """Read new complete lines of `paths` (all files when None); True when anything changed. `budget`:
        about that many bytes at most (a whole line at least; the rest is in `behind`, read next, from
        the file this one stopped at), so a fast writer costs neither memory nor a long lock hold."""
        changed = self.discover() if rediscover else False
        targets = list(self.files.values()) if paths is None else [self.files[p] for p in paths if p in self.files]
        if self.one_shot:
            targets.sort(key=file_order)
        elif budget is not None and targets:
            k = self._turn % len(targets)
            targets = targets[k:] + targets[:k]
        spent_before = self.spent
        now, stop_at = time.time(), None if budget is None else self.spent + max(budget, self._min_read)
        capped = False  # the last file read was left behind: the budget is spent
        small = SmallFiles(self.parser, self.source, self.one_shot)  # short logs read together
        try:
            for i, st in enumerate(targets):
                if capped or (stop_at is not None and self.spent >= stop_at):
                    self._turn += i
                    self._note_behind(targets[i:])
                    break
                if small.take(st, None if stop_at is None else stop_at - self.spent):
                    self.spent += st.consumed  # what the cap counts
                    changed = True
                    if small.full:
                        self._parsed(small.flush(), targets)
                    continue
                self._parsed(small.flush(), targets)  # rank order: the batch before this file
                nxt = targets[i + 1] if i + 1 < len(targets) else None
                self._read_next = nxt if nxt is not None and _never_read(nxt) else None
                changed |= self._read(st, now, None if stop_at is None else stop_at - self.spent)
                capped = stop_at is not None and st.info.path in self.behind
                self._parsed([st], targets)
            self._parsed(small.flush(), targets)
        finally:
            self._live.flush()
            self._ahead.cancel()
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None
            # a watcher keeps only small buffers between refreshes
            self._bufs = [b if len(b) <= self.settings.keep_buf else bytearray() for b in self._bufs]
            self._ahead.trim(self.settings.keep_buf)
            self.parser.trim(self.settings.keep_buf)
        if changed:
            self.version += 1
            if not self.one_shot:  # the rows go to the table now: never a second copy of a long read
                self._take_rows()
        self.started = True
        if self.after_big_read is not None and self.spent - spent_before >= self.settings.settle_min:
            self.after_big_read()
        return changed

    def _parsed(self, done: list[FileState], targets: list[FileState]) -> None:
        """read_run: each worker file's rows into the table once parsed (peak memory ~ one table); a batch of
        small files in one write per column (file by file, a dozen numpy calls each cost 1,024 logs ~5 %)."""
        workers = [st for st in done if self.one_shot and st.info.role == LogRole.WORKER]
        if any(len(st.rows) for st in workers) and not len(self._table):
            self._size_table(targets)
        if workers:
            self._table.add_many(workers)

    def _take_early(self, st: FileState) -> None:
        """read_run: a long log's rows go to the table every `settings.take_rows`, not once at its end, so the parser's
        row blocks (13 float64 a row, 104 B) never hold a whole 100 MB log beside the table (issue 31).
        The file is read to its end before the next, so the rows keep their order."""
        if self.one_shot and st.info.role == LogRole.WORKER and st.rows.untaken >= self.settings.take_rows:
            if not len(self._table):
                self._size_table(list(self.files.values()))
            self._table.add(st)

    def _note_behind(self, skipped: list[FileState]) -> None:
        """Files a capped refresh did not reach: how much they have that is not read yet."""
        for st in skipped:
            with contextlib.suppress(OSError):
                size = self.source.stat(st.info.path).st_size
                if size > st.consumed and st.unreadable is None:
                    self.behind[st.info.path] = size - st.consumed

    def _take_rows(self) -> None:  # what snapshot() does first
        workers = sorted((st for st in self.files.values() if st.info.role == LogRole.WORKER), key=file_order)
        self._size_table(workers)
        self._table.update(workers)
        self._cache = None  # its frame may view arrays the table just replaced: let them go

    def _buffer(self, slot: int, n: int) -> bytearray:
        buf = self._bufs[slot]
        if len(buf) < n:
            buf = self._bufs[slot] = bytearray(max(n, min(2 * len(buf), self.settings.read_block)))
        return buf

    def _prefetch(self, f: BinaryIO, slot: int, pos: int, n: int) -> Future[int]:
        """Start reading `n` bytes at `pos` into buffer `slot` on the helper thread (pread releases the GIL)."""
        return self._submit(self.source.read_at, f, self._buffer(slot, n), n, pos)

    def _submit(self, fn: Callable[..., int], *args: object) -> Future[int]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="logs-read")
        return self._pool.submit(fn, *args)

    def _reset(self, st: FileState) -> None:
        st.reset()

    @staticmethod
    def _mark_unreadable(st: FileState, why: str) -> bool:
        """Remember why a log cannot be read, so its rank says so instead of "waiting"."""
        if st.unreadable == why:
            return False
        st.unreadable = why
        return True

    def _keep_rotated(self, st: FileState, now: float) -> bool:
        """The path now names another file (logrotate: rename + new file): find the old file by inode
        beside it, keep its rows under its new name and read it to its end. True when found."""
        moved = find_rotated(st.info.path, st.ino, set(self.files))
        if moved is None:
            return False
        old = FileState(st.info)
        old.__dict__.update(st.__dict__)
        old.info = LogFile(
            moved, st.info.rel + moved.name[len(st.info.path.name) :], st.info.role, st.info.rank, st.info.layout
        )
        old.rotated = True
        self.files[moved] = old
        self._read(old, now)
        fresh = FileState(st.info)
        st.__dict__.update(fresh.__dict__)
        st.live = True
        return True

    def _keep_cut(self, st: FileState, now: float) -> bool:
        """The file shrank in place (truncate, logrotate copytruncate): its rows so far stay, as its copy
        (found by its first bytes beside it, read on to its end) or as they were read; `st` starts over."""
        copy = find_copy(st.info.path, st.head, st.consumed, set(self.files))
        old = keep_before_cut(st, copy)
        items = list(self.files.items())  # the kept part just before its file (a rank's last file is its current)
        items.insert(next(i for i, (p, _) in enumerate(items) if p == st.info.path), (old.info.path, old))
        self.files = dict(items)
        if copy is not None:
            self._read(old, now)
            self._live.flush()  # its rows are counted now
            note_cut(st, old, now if st.live else _NAN)
        return True

    def _read(self, st: FileState, now: float, limit: int | None = None) -> bool:
        """Parse from the end of the last complete line to the last newline now in the file (or
        about `limit` bytes past it, one whole line at least: the rest is left in `behind`).

        The incomplete tail stays on disk (re-read next time), so memory is bounded; a tail longer
        than settings.max_partial_line is dropped up to its newline and counted.
        """
        if st.frozen:  # the part of a file before it was truncated: nothing more to read
            return False
        self.behind.pop(st.info.path, None)
        try:
            stat = self.source.stat(st.info.path)
        except OSError:
            return False
        if not S_ISREG(stat.st_mode):  # a FIFO would block open(); a folder cannot be read
            return self._mark_unreadable(st, f"{kind_of(stat.st_mode)}, not a regular file")
        changed = False
        size = stat.st_size
        if st.ino not in (-1, stat.st_ino):
            changed |= self._keep_rotated(st, now)
        if st.ino == stat.st_ino and size < st.offset and (len(st.rows) or st.errors):
            changed |= self._keep_cut(st, now)
        if st.ino not in (-1, stat.st_ino) or size < st.offset:
            self._reset(st)
            changed = True
        st.ino = stat.st_ino
        st.mtime = stat.st_mtime
        if size == st.offset:
            if size == 0 and not os.access(st.info.path, os.R_OK):
                return self._mark_unreadable(st, "permission denied") or changed
            return changed
        try:  # never a blocking open: the path may have become a FIFO since the stat
            f = self.source.open(st.info.path)
        except OSError as exc:
            return self._mark_unreadable(st, why_not(exc)) or changed
        if st.unreadable is not None:
            st.unreadable = None
            changed = True
        with f:
            if st.head and _read_exact(f, len(st.head)) != st.head:
                self._reset(st)  # rewritten in place (truncate + write before we looked)
                changed = True
            if len(st.head) < 256:
                f.seek(0)
                st.head = _read_exact(f, 256)
            pos = first = st.consumed
            slot = 0
            pending: tuple[int, int, Future[int]] | None = None  # (pos, slot, read) running on the helper
            ahead = self._ahead.take(st.info.path, stat.st_ino, self._bufs[0]) if pos == 0 else None
            if ahead is not None:  # the first block was read while the previous file was parsed
                self._bufs[0] = ahead[0]
                pending = (0, 0, _done(ahead[1]))
            if self._read_next is not None:  # and the next file's is read while this one is parsed
                self._ahead.start(self._read_next.info.path, self._submit, self.source)
                self._read_next = None
            end = size if limit is None else min(size, pos + limit)  # capped: the rest is left behind
            if (codec := utf16_codec(st.head)) is not None:  # the scans look for ASCII keys: decoded first
                pos = read_utf16(self.parser.feed, st, f, codec, now=now, end=end, block=self.settings.read_block)
                changed |= pos > first
            elif not st.consumed and utf16_undecided(st.head) and now - stat.st_mtime < QUIET_S:
                codec = "wait"  # maybe UTF-16, too short to say: as UTF-8 its NULs end lines (a still file: read so)
            elif is_document(st.info.path):  # a JSON document (trainer_state.json): its records, read whole
                codec, end = "json", size
                changed |= read_document(self.parser.feed, st, f, size, now=now)
            try:
                while pos < end and codec is None:
                    want = min(end - pos, self.settings.read_block)
                    if pending is not None and pending[0] == pos:
                        _, slot, fut = pending
                        pending = None
                        data, got = self._bufs[slot], fut.result()
                    else:
                        if pending is not None:  # not where we are now (cannot happen): let it finish
                            pending[2].result()
                            pending = None
                        data = self._buffer(slot, want)
                        got = self.source.read_at(f, data, want, pos)
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
                    if (hole := _breaks_to_lf(data, got)) >= 0:  # CR-only lines, a truncated file's NULs: lines
                        st.hole_end = pos + hole
                    last_nl = data.rfind(b"\n", 0, got)
                    if last_nl == -1:
                        if got > self.settings.max_partial_line:
                            st.skipping = True
                            st.dropped_bytes += got
                            st.errors.append(
                                ErrorRow(
                                    rank=st.info.rank if st.info.role == LogRole.WORKER else JOB_RANK,
                                    kind=ErrorKind.OVERLONG_LINE,
                                    message=f"a line longer than {self.settings.max_partial_line} bytes was dropped",
                                    context="",
                                    offset=pos,
                                    file=st.info.rel,
                                    pid=st.pid,
                                    time=now if st.live else _NAN,
                                )
                            )
                            pos += got
                            st.consumed = pos
                            changed = True
                            continue
                        if self.one_shot and pos + got == size and now - stat.st_mtime >= QUIET_S:
                            self.parser.feed(st, bytes(data[:got]) + b"\n", pos, now, got + 1)  # the file's end
                            pos, st.consumed, changed = pos + got, pos + got, True
                        break  # an incomplete last line: wait for its newline
                    nxt = pos + last_nl + 1
                    if end - nxt >= self.settings.prefetch_min and _HAVE_PREAD:
                        pending = (
                            nxt,
                            1 - slot,
                            self._prefetch(f, 1 - slot, nxt, min(end - nxt, self.settings.read_block)),
                        )
                    if self.one_shot or not self._live.take(st, data, pos, now, last_nl + 1):  # a tick's: batched
                        self.parser.feed(st, data, pos, now, last_nl + 1)
                    pos = nxt
                    st.consumed = pos
                    changed = True
                    self._take_early(st)
            finally:
                if pending is not None:
                    pending[2].result()  # never close the file (or reuse its buffer) under a running read
        self.spent += pos - first
        if end < size:  # capped: the next refresh goes on from here (offset < size keeps it reading)
            self.behind[st.info.path] = size - st.consumed
        st.offset = size if end == size and codec != "wait" else st.consumed  # waiting: looked at again
        st.size = size
        st.last_growth = now if st.live else stat.st_mtime
        if st.cut_from is not None and (gone := settle_cut(st, now)) is not None:  # a relaunch: as before
            self.files.pop(gone.info.path, None)
        return changed

    def _size_table(self, files: list[FileState]) -> None:
        """Before the first rows go in, size the table for every worker file's rows, guessed from
        the first read file's rows per byte (+25 %): one allocation instead of a dozen regrows and
        copies; a wrong guess only means a regrow."""
        if len(self._table):
            return
        workers = [st for st in files if st.info.role == LogRole.WORKER]
        first = next((st for st in workers if len(st.rows) and (st.size or st.consumed)), None)
        if first is not None:  # (a file still being read has its size set once read: its bytes so far)
            per_byte = len(first.rows) / (first.size or first.consumed)
            self._table.reserve(int(per_byte * bytes_on_disk(st.info.path for st in workers) * 1.25) + 1024)

    # -- snapshot
    def snapshot(self) -> RunSnapshot:
        behind = sum(self.behind.values())
        if self._cache is not None and self._cache_version == self.version and self._cache.behind_bytes == behind:
            return self._cache
        workers = sorted((st for st in self.files.values() if st.info.role == LogRole.WORKER), key=file_order)
        self._size_table(workers)  # a background catch-up goes on reading after this snapshot
        self._table.update(workers)  # copies only the rows parsed since the last snapshot
        columns = self._table.frame_columns() if workers else None
        metrics = pd.DataFrame(columns, copy=False) if columns is not None else empty_metrics()
        timings, errors = self._timings_and_errors(workers)
        unregistered: set[int] = set()
        for st in self.files.values():
            unregistered |= st.unregistered
        ranks = rank_table(workers, unregistered)
        evals = pass_summaries(metrics, self._evals.frame(workers))  # told by the lines' text: before the split
        if workers:  # core.logs.rows.perfile: the training series decided per file
            metrics, evals, ranks = self._kept.split(
                metrics, self._table.set_aside(), evals, ranks, self._table.generation, columns
            )
        layouts = {st.info.layout for st in workers}
        layout = layouts.pop() if len(layouts) == 1 else ("mixed" if layouts else "none")
        skipped = {st.info.rel: st.unreadable for st in self.files.values() if st.unreadable}
        snap = RunSnapshot(
            self.log_dir,
            metrics,
            timings,
            errors,
            ranks,
            [st.info for st in self.files.values()],
            layout,
            self.version,
            time.time(),
            skipped,
            behind_bytes=behind,
            evals=evals,
            metric_keys=metric_keys(workers),
            hosts={n: host for st in workers for host, n in st.hosts.items()},
        )
        self._cache, self._cache_version = snap, self.version
        return snap

    def _timings_and_errors(self, workers: list[FileState]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """TimeMonitor rows and errors, each rebuilt only when it changed (a tick usually adds loss lines only:
        at 1,024 ranks the rebuild was ~20 ms of a tick)."""
        return self._side.frames(workers, list(self.files.values()))


def read_run(
    log_dir: Path | str,
    loss_regex: str | None = None,
    extra_files: Sequence[Path | str] = (),
    settings: ReaderSettings | None = None,
    follow_links: bool = False,
    source: ByteSource | None = None,
) -> RunSnapshot:
    """Parse every log under `log_dir` once (complete lines only) and return the snapshot (`source`: where
    the bytes come from, the real files by default)."""
    state = RunReader(log_dir, loss_regex, extra_files, settings, True, follow_links, source=source)
    collecting = gc.isenabled()  # a read allocates many small objects: a full collection of a big heap (a
    gc.disable()  # dashboard's, the compiled passes' modules) in the middle of one cost it up to a third
    try:
        state.refresh()
        return state.snapshot()
    finally:
        if collecting:
            gc.enable()
