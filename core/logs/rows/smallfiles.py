"""Small logs read together: a run of many short rank logs parsed in ~8 MB batches, not file by file.

Why: at 1,024 ranks x 200 steps each log is a few hundred KB, so the fixed cost of parsing one
file (a dozen numpy passes, a line template read line by line below a few hundred lines) weighed as
much as its lines. `SmallFiles` reads never-read worker logs smaller than a read-ahead into one buffer
and hands them to `Parser.feed_many`, which gives each the rows, errors and positions it gets alone.
"""

from __future__ import annotations

from stat import S_ISREG

from core.logs.bytes.discover import LogRole
from core.logs.bytes.jsondoc import is_document
from core.logs.bytes.rawio import breaks_to_lf
from core.logs.bytes.source import ByteSource
from core.logs.bytes.utf16 import utf16_codec, utf16_undecided
from core.logs.rows.parser import FileState, Parser

__all__ = ["LIVE_BLOCK", "LiveBatch", "SmallFiles"]

LIVE_BLOCK = 64 << 10  # new lines of a file read before, up to this many bytes, go to the tick's batch
_NAN = float("nan")


class SmallFiles:
    """One batch of whole small files: `take` reads one in (or says no), `flush` parses the batch."""

    def __init__(self, parser: Parser, source: ByteSource, one_shot: bool = False) -> None:
        self.parser = parser
        self.one_shot = one_shot  # a file whose last line has no newline is read the usual way (reader.QUIET_S)
        self.source = source  # the reader's files (core.logs.bytes.source)
        self.limit = parser.seam.batch_limit()  # a file this big is read on its own
        self.batch = parser.settings.read_block  # bytes parsed in one go
        self.buf = bytearray()  # b"\n", then the files; allocated once (batch + one file), on the first take
        self.used = 1  # bytes of `buf` in use
        self.items: list[tuple[FileState, int, int]] = []

    @property
    def full(self) -> bool:
        return self.used >= self.batch

    def take(self, st: FileState, room: int | None = None) -> bool:
        """Read `st` whole into the batch when it is a never-read worker log smaller than `limit` (and
        than `room`, what is left of a capped refresh's budget) with a complete line; False: nothing
        was changed, read it the usual way."""
        if (
            self.parser.user is not None
            or st.live
            or st.info.role != LogRole.WORKER
            or st.consumed
            or st.offset
            or st.skipping
            or st.head
            or st.ino != -1
            or is_document(st.info.path)  # read whole by the usual read (core.logs.bytes.jsondoc)
        ):
            return False
        try:
            stat = self.source.stat(st.info.path)
        except OSError:
            return False
        if not S_ISREG(stat.st_mode) or not 0 < stat.st_size < min(self.limit, room or self.limit):
            return False
        try:  # never a blocking open: the path may have become a FIFO since the stat
            f = self.source.open(st.info.path)
        except OSError:
            return False  # the usual read says why
        if not self.buf:
            self.buf = bytearray(self.batch + self.limit)
            self.buf[0] = 10
        lo = self.used
        with f, memoryview(self.buf) as view:
            got = self.source.read_at(f, view[lo : lo + stat.st_size], stat.st_size, 0)
        head = bytes(self.buf[lo : lo + min(got, 256)])
        if utf16_codec(head) is not None or utf16_undecided(head):  # the usual read decodes it (or waits)
            return False
        if (hole := breaks_to_lf(self.buf, lo + got, lo)) >= 0:  # CR-only lines, NULs: lines, as a usual read's
            st.hole_end = hole - lo
        last_nl = self.buf.rfind(b"\n", lo, lo + got)
        if last_nl == -1 or (self.one_shot and last_nl != lo + got - 1):  # the usual read holds, drops or ends
            return False  # the partial line
        self.used = last_nl + 1
        last_nl -= lo
        st.head, st.ino, st.mtime = head, stat.st_ino, stat.st_mtime
        st.consumed = last_nl + 1
        st.offset = stat.st_size if got == stat.st_size else st.consumed
        st.size = stat.st_size
        st.last_growth = stat.st_mtime
        self.items.append((st, lo, self.used))
        return True

    def flush(self) -> list[FileState]:
        """Parse the batch; the files it held, in the order they were taken."""
        if not self.items:
            return []
        self.parser.feed_many(self.items, self.buf)
        done = [st for st, _, _ in self.items]
        self.items = []
        self.used = 1
        return done


class LiveBatch:
    """A live tick's new lines of files read before, parsed together (`Parser.feed_many`) at the end of the
    refresh instead of file by file: each file gets what `Parser.feed` gives it alone.

    Why: a tick appends a step (~1 KB) to each of 1,024 ranks, and reading each file's few lines on its own
    (a search for candidate lines, then each one read alone) cost 40-100 us a file, most of a 150 ms tick;
    one pass over the tick's ~1 MB finds the candidates, builds the rows of known shapes in bulk and leaves
    only the lines worth it to the per-line reader. Not for a user's regex, a non-worker file, a file whose
    truncation is not settled yet (its rows decide it), or a block past LIVE_BLOCK (read alone as it is)."""

    def __init__(self, parser: Parser) -> None:
        self.parser = parser
        self.buf = bytearray(b"\n")
        self.items: list[tuple[FileState, int, int]] = []
        self.bases: list[int] = []
        self.obs_time = _NAN
        self.queued: set[int] = set()  # ids of the files with lines in the batch

    def take(self, st: FileState, data: bytes | bytearray, base: int, now: float, end: int) -> bool:
        """Queue data[:end] (complete lines, at file offset `base`) of `st`; False: parse it now (`Parser.feed`)."""
        if (
            self.parser.user is not None
            or st.info.role != LogRole.WORKER
            or st.cut_from is not None
            or end > LIVE_BLOCK
        ):
            if id(st) in self.queued:  # its earlier lines first
                self.flush()
            return False
        obs = now if st.live else _NAN
        if self.items and not (obs == self.obs_time or (obs != obs and self.obs_time != self.obs_time)):
            self.flush()  # one observation time per batch
        self.obs_time = obs
        lo = len(self.buf)
        self.buf += memoryview(data)[:end]
        self.items.append((st, lo, len(self.buf)))
        self.queued.add(id(st))
        self.bases.append(base)
        if len(self.buf) >= self.parser.settings.read_block:
            self.flush()
        return True

    def flush(self) -> None:
        """Parse what is queued (every file's lines in the order they were taken)."""
        if not self.items:
            return
        items, bases, buf = self.items, self.bases, self.buf
        self.items, self.bases, self.buf = [], [], bytearray(b"\n")
        self.queued = set()
        self.parser.feed_many(items, buf, self.obs_time, bases)
