"""Parsing one file's complete lines into loss rows, timings and errors (a pure function of the bytes).

`Parser.feed` (one file) and `feed_many` (small files batched) read a block by the path the seam chooses
(core.logs.rows.seam: LINE, BULK, TEMPLATED, BATCHED, USER); every candidate line no bulk pass took goes
through `parse_line`: errors, tracebacks, timings, and loss / evaluation lines read by the general reader.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import numpy as np

from core.logs.bytes.discover import LogRole
from core.logs.rows import linekinds, templated
from core.logs.rows.ansishapes import AnsiShapes
from core.logs.rows.columnfile import take_header, take_row
from core.logs.rows.evalshapes import EvalShapes
from core.logs.rows.failures import add_level_error, add_line_failure, chatter_by_file, ipython_header, settle
from core.logs.rows.filestate import (
    FATAL_KINDS,
    JOB_RANK,
    MAX_PARTIAL_LINE,
    ErrorKind,
    FileState,
    NamedRows,
    ReaderSettings,
    add_read,
    add_rows,
    bar_redraw,
    last_log_time,
    named_lines,
    note_key,
    row_rank,
    row_tuple,
)
from core.logs.rows.formats import ERROR_PREFIXES, LogFormat, line_time, parse_step_time_line, read_loss, to_float
from core.logs.rows.general import LineRead
from core.logs.rows.linekinds import (
    FRAME,
    RE_TIMEMONITOR,
    TAG_STARTS,
    TRACEBACK,
    after_learnt_prefix,
    failure_after_prefix,
    failure_glued,
    first_pid,
    has_keyword,
    holds_keyword,
    opens_traceback,
)
from core.logs.rows.linetemplates import LineTemplate, shape_key
from core.logs.rows.plainmemo import PlainMemo
from core.logs.rows.redraws import Bars, bar_of, bar_rows
from core.logs.rows.seam import ReadPath, Seam
from core.logs.rows.sidelines import carry_and_attach
from core.logs.rows.templated import Shapes, compiled_passes, extra_names, learn_sample, quiet_lines, template_block
from core.logs.rows.tracebacks import exception_line, traceback_header
from core.logs.tokens.bulk import (
    RE_CANDIDATE_AT,
    RE_LM_AT,
    RE_SCAN,
    ROW_KEYS,
    keyword_starts,
    lm_block,
    lm_row,
    scan_by_definition,
)

__all__ = ["FATAL_KINDS", "MAX_PARTIAL_LINE", "ErrorKind", "FileState", "Parser", "ReaderSettings", "last_log_time"]

_NAN = float("nan")
_OFFSET = ROW_KEYS.index("offset")
_Nl = np.ndarray | None  # a block's newlines, when its scan found them
_Hits = list[int] | None  # the chatter anchors' starts in a block, when a batch searched once (chatter_by_file)

_RE_UNREGISTERED = re.compile(rb"Node (\d+) has unregistered")


class Parser:
    """Parses complete-line chunks of one file into rows/errors; a pure function of the bytes."""

    def __init__(self, user: LogFormat | None = None, settings: ReaderSettings | None = None) -> None:
        self.user = user  # the user's regex as a format: replaces the built-in ones (and the fast path)
        self.settings = settings or ReaderSettings()
        # line shape -> its parse (core.logs.rows.linetemplates.LineTemplate; None: a shape never reused)
        self._templates: dict[bytes, LineTemplate | None] = {}
        self._shapes = Shapes()  # the same templates packed for the compiled match, for the bulk path
        self._eval_shapes = EvalShapes()  # evaluation lines' shapes (no row: the bulk path leaves them here)
        self._ansi = AnsiShapes()  # shapes of lines with terminal codes (read with the codes dropped)
        self.seam = Seam(self.settings)  # which path reads a block, and what each path read
        self._rng = np.random.default_rng(0)  # which lines teach shapes (seeded: a read is reproducible)
        self._scratch = bytearray()  # the lower-cased copy of a block (core.logs.tokens.bulk.keyword_starts)
        self._floor = 0  # where the file `parse_line` reads begins in its buffer (feed_many: not at 0)
        self._ranked: dict[int, tuple[int, int] | None] = {}  # row templates whose line names a rank -> where
        self._bars: set[int] = set()  # row templates of a progress bar's lines (core.logs.rows.redraws)
        self._plain = PlainMemo()  # plain lines read to nothing before (a log repeats them)

    def trim(self, keep: int) -> None:
        """Drop the scratch buffer when it is bigger than `keep` bytes (a watcher between refreshes)."""
        if len(self._scratch) > keep:
            self._scratch = bytearray()

    def feed(self, st: FileState, buf: bytes | bytearray, base: int, now: float, end: int) -> None:
        """Parse `buf[:end]` (complete lines, buf[end-1] is b"\n") found at absolute offset `base`; `buf` may
        be a reused bytearray longer than `end`: nothing past `end` is looked at."""
        info = st.info
        if info.role == LogRole.WORKER and st.pid is None:
            st.pid = first_pid(buf, 0, end)
        if info.role == LogRole.SCHEDULER:
            st.unregistered.update(int(m.group(1)) for m in _RE_UNREGISTERED.finditer(buf, 0, end))
        obs_time = now if st.live else _NAN
        find = buf.find
        metrics = info.role == LogRole.WORKER
        fast = metrics and self.user is None
        if self.user is None and (buf[:1] != b"[" or RE_CANDIDATE_AT.match(buf, 0, end) or has_keyword(buf, 0, end)):
            m = RE_LM_AT.match(buf, 0, end) if fast else None
            if m is not None:
                st.rows.append(lm_row(m, base, obs_time))
            else:
                self.parse_line(st, buf, 0, find(b"\n", 0, end), base, obs_time, metrics)
        # Every candidate line in a few numpy passes, kept as a flat array of line starts (no match
        # objects pile up; they would also wake the cyclic GC). In a big chunk numpy picks out the
        # LossMonitor lines and builds their rows at once; the block's slices are added in file order
        # around the other lines (a TimeMonitor line takes the epoch/step of the row before it).
        # which path reads the block is the seam's choice (core.logs.rows.seam)
        if self.user is not None and metrics:  # the user's regex sees every line: no pre-filter
            every = [0] + [m.start() + 1 for m in _RE_LINE_START.finditer(buf, 0, end - 1)]
            self.seam.note(ReadPath.USER, len(every))
            self._feed_lines(st, buf, every, base, obs_time, end, False, metrics)
            self._carry_traceback(st, buf, base, end)
            return
        nl: np.ndarray | None = None  # the block scan's newlines, kept for the shapes' line ends
        words: np.ndarray | None = None  # starts of the candidate lines that hold a keyword
        # candidates: lines that may be errors, and (metrics) lines with a loss key or an eval word
        found: list[int] | np.ndarray
        if not self.seam.compiled_scan(end):  # a live tick's few lines: sre is cheaper
            found = [m.start() + 1 for m in RE_SCAN.finditer(buf, 0, end)]
            if metrics:
                found = keyword_starts(buf, end, found, self._scratch)
        else:
            found, nl, kw_lines = compiled_passes().scan_block(np.frombuffer(buf, dtype=np.uint8), end, metrics)
            words = kw_lines if metrics else None
        if not self.seam.bulk(len(found), fast):  # few lines (or no LossMonitor path): one by one
            self._feed_lines(
                st, buf, found if isinstance(found, list) else found.tolist(), base, obs_time, end, fast, metrics
            )
            self._carry_traceback(st, buf, base, end)
            return
        starts = np.asarray(found, dtype=np.int64)
        is_lm, block = lm_block(buf, starts, base, obs_time, compiled=nl is not None)
        block, extras, taken, has_row, used, which = self._templated(
            buf, end, starts, is_lm, block, base, obs_time, nl, st.tb_start is not None, words
        )
        named = named_lines(buf, block, used, which, self._ranked, base, end)
        for template in used:
            for column, key in template.keys:
                note_key(st.metric_keys, column, key)
        rows_through = np.cumsum(has_row)  # bulk rows up to each candidate line
        others = wide = np.flatnonzero(~taken)
        if words is not None and nl is not None and self.seam.worth_filter(len(others)):
            others = linekinds.WORTH.look(buf, starts, others, words, nl, compiled=True)
        bars, span = bar_rows(used, which, self._bars, block, buf, base), (0, len(block))
        self._emit(
            st, buf, starts, others, rows_through, block, extras, span, base, end, obs_time, metrics, named, bars, wide
        )
        self._carry_traceback(st, buf, base, end, nl)

    def feed_many(
        self,
        items: Sequence[tuple[FileState, int, int]],
        buf: bytearray,
        obs_time: float = _NAN,
        bases: Sequence[int] | None = None,
    ) -> None:
        """Several worker logs at once: `buf` is b"\n", then each file's complete lines; an item (state, lo, hi)
        says the file's bytes from its start (from `bases[k]`: a live tick's new lines of files read before,
        core.logs.rows.smallfiles.LiveBatch, observed at `obs_time`) are buf[lo:hi] (buf[hi-1] is b"\n").
        Why: at 1,024 ranks of 200 steps a log is a few hundred KB, and the dozen numpy passes of `feed`
        cost as much per file as its lines; one pass over ~8 MB of files reads them like one long log.
        Every file gets what `feed` gives it alone (property tests hold them equal); not for a user's regex."""
        end = items[-1][2]
        for st, lo, hi in items:
            if st.pid is None:
                st.pid = first_pid(buf, lo, hi)
        compiled = self.seam.compiled_scan(end, batch=True)
        if compiled:
            starts, newlines, words = compiled_passes().scan_block(np.frombuffer(buf, dtype=np.uint8), end, True)
        else:
            starts, newlines, words = scan_by_definition(buf, end, True, self._scratch)
        self.seam.note(ReadPath.BATCHED, len(starts))
        is_lm, block = lm_block(buf, starts, 0, obs_time, compiled=compiled)
        pending = any(st.tb_start is not None for st, _, _ in items)  # its frames are no metrics
        block, extras, taken, has_row, used, which = self._templated(
            buf, end, starts, is_lm, block, 0, obs_time, newlines, pending, words
        )
        rows_through = np.cumsum(has_row)
        named = named_lines(buf, block, used, which, self._ranked, 0, end)
        wide = np.flatnonzero(~taken)  # (a file with a column table reads them all: core.logs.rows.columns)
        others = linekinds.WORTH.look(buf, starts, wide, words, newlines, compiled)
        names, at = [extra_names(t) for t in used], {n: i for i, n in enumerate(extras)}  # (at: extras' order)
        bars = bar_rows(used, which, self._bars, block, buf, 0)  # (offsets in the batch: before the shift)
        # where each file's candidates, rows and lines left to `parse_line` are (one numpy call each, not one a file)
        spans = np.searchsorted(starts, np.array([(lo, hi) for _, lo, hi in items], dtype=np.int64).reshape(-1, 2))
        row_spans = np.concatenate([[0], rows_through])[spans]
        shifts = np.array(  # file offset = batch offset + shift
            [(0 if bases is None else bases[k]) - lo for k, (_, lo, _) in enumerate(items)], dtype=np.int64
        )
        if len(block):  # offsets in the file, not in the batch
            block[row_spans[0, 0] : row_spans[-1, 1], _OFFSET] += np.repeat(shifts, row_spans[:, 1] - row_spans[:, 0])
        other_spans, wide_spans = np.searchsorted(others, spans).tolist(), np.searchsorted(wide, spans).tolist()
        chatter = chatter_by_file(buf, [(lo, hi) for _, lo, hi in items])  # (the chatter anchors: one search)
        for (st, lo, hi), shift, rows, (o0, o1), (w0, w1), hits in zip(
            items, shifts.tolist(), map(tuple, row_spans.tolist()), other_spans, wide_spans, chatter, strict=True
        ):
            cols: set[str] = set()
            if used and rows[1] > rows[0]:
                for i in sorted(set(which[rows[0] : rows[1]].tolist()) - {-1}):
                    cols |= names[i]
                    if id(used[i]) not in st.noted:  # its spellings, once per file (as `metric_line`)
                        st.noted.add(id(used[i]))
                        for column, key in used[i].keys:
                            note_key(st.metric_keys, column, key)
            self._floor = lo  # a traceback's time is looked for in its own file only
            self._emit(
                st,
                buf,
                starts,
                others[o0:o1],
                rows_through,
                block,
                {n: extras[n] for n in sorted(cols.intersection(at), key=at.__getitem__)} if cols else {},
                rows,
                shift,
                hi,
                obs_time,
                True,
                named,
                bars,
                wide[w0:w1],
            )
            self._carry_traceback(st, buf, shift, hi, newlines, hits)
        self._floor = 0

    def _emit(
        self,
        st: FileState,
        buf: bytes | bytearray,
        starts: np.ndarray,
        others: np.ndarray,
        rows_through: np.ndarray,
        block: np.ndarray,
        extras: dict[str, np.ndarray],
        rows: tuple[int, int],
        base: int,
        end: int,
        obs_time: float,
        metrics: bool,
        named: NamedRows | None = None,
        bars: Bars | None = None,
        wide: np.ndarray | None = None,
    ) -> None:
        """The bulk rows `rows` (a range of `block`; `named`: the ranks their lines name; `bars`: the rows of
        progress-bar lines) and the lines `others` left to `parse_line`, into the file in line order; once the
        file has a column table (core.logs.rows.columns), every line of `wide` (`others` before the search for
        the lines worth reading) from there on: its rows carry no key."""
        done, stop = rows
        find = buf.find
        rest = (base, end, obs_time, metrics, named, bars)
        if wide is not None and st.columns is not None:
            others, wide = wide, None
        for j, ls in zip(others.tolist(), starts[others].tolist(), strict=True):
            if self._plain.read_nothing(buf, ls, le := find(b"\n", ls, end)):
                continue  # a plain line read to nothing before (core.logs.rows.plainmemo): no cut in the rows
            k = int(rows_through[j])  # bulk rows that come before this line
            if k > done:
                add_rows(st, block, extras, done, k, self.settings.block_min, named, bars)
                done = k
            m = RE_LM_AT.match(buf, ls, end)  # a LossMonitor line numpy left (too near the buffer's end)
            if m is not None:
                st.rows.append(lm_row(m, base + ls, obs_time))
                continue
            self.parse_line(st, buf, ls, le, base, obs_time, metrics)
            if wide is not None and st.columns is not None:  # a header: every line after it
                later = wide[wide > j]
                self._emit(st, buf, starts, later, rows_through, block, extras, (done, stop), *rest)
                return
        if stop > done:
            add_rows(st, block, extras, done, stop, self.settings.block_min, named, bars)

    def _templated(
        self,
        buf: bytes | bytearray,
        end: int,
        starts: np.ndarray,
        is_lm: np.ndarray,
        block: np.ndarray,
        base: int,
        obs_time: float,
        nl: np.ndarray | None,
        traceback_pending: bool,
        words: np.ndarray | None,
    ) -> tuple[np.ndarray, dict, np.ndarray, np.ndarray, list[LineTemplate], np.ndarray]:
        """The candidate lines of known shapes (core.logs.rows.templated) as rows beside the LossMonitor
        ones, in line order: (rows, their other metrics, mask of the lines read in bulk, mask of those
        with a row, the templates used, per row the index of its template in them or -1).
        `traceback_pending`: the file's last block ended inside a traceback (its frames are not metrics)."""
        rest = np.flatnonzero(~is_lm)
        none = np.full(len(block), -1, dtype=np.int64)
        if not self.seam.templated(len(rest), end):
            return block, {}, is_lm, is_lm, [], none  # a few hundred lines: the per-line templates are as fast
        chunk = np.frombuffer(buf, dtype=np.uint8, count=end)
        ends = templated.line_ends(chunk, nl, starts[rest])
        shape_of = np.full(len(rest), -1, dtype=np.int64)
        if self._shapes:
            shape_of, row_lines, rows, extras, used, which = template_block(
                chunk, starts[rest], ends, self._shapes, base, obs_time
            )
        # whether an indented line may be a traceback's frame: a traceback header pending or in this block
        # (searched once, and only when a sampled line is indented)
        frames = functools.cache(
            lambda: traceback_pending or buf.find(TRACEBACK, 0, end) != -1 or buf.find(FRAME, 0, end) != -1
        )
        learn = lambda key, line: key in self._templates or self._learn(key, line, None)  # noqa: E731 (as `_line`)
        quiet = quiet_lines(buf, starts[rest], ends, shape_of, words, frames, learn)
        for _ in range(_LEARN_ROUNDS):  # many lines of unknown shapes (a run's first batch): learn, match again
            missed = np.flatnonzero((shape_of < 0) & ~quiet)
            if len(missed) < self.settings.shape_min:
                break
            if not learn_sample(
                buf, starts[rest[missed]], ends[missed], frames, self._rng, self._templates, self._learn
            ):
                break
            shape_of, row_lines, rows, extras, used, which = template_block(
                chunk, starts[rest], ends, self._shapes, base, obs_time
            )
        hit = shape_of >= 0
        if not hit.any():
            if not quiet.any():
                return block, {}, is_lm, is_lm, [], none
            row_lines, rows, extras, used, which = np.empty(0, np.int64), block[:0], {}, [], none[:0]
        no_row = hit.copy()
        no_row[row_lines] = False
        if no_row.any():  # a shape without a row may still be a failure's line: `parse_line` reads those (`_fatal`)
            idx = np.flatnonzero(no_row)
            hit[idx[self._shapes.worth[shape_of[idx]]]] = False
        hit |= quiet & (shape_of < 0)  # (the quiet lines that may hold a failure's part are not in `quiet`)
        self.seam.note(ReadPath.TEMPLATED, int(hit.sum()))
        taken = is_lm.copy()
        taken[rest[hit]] = True
        has_row = is_lm.copy()
        has_row[rest[row_lines]] = True
        order = np.argsort(np.concatenate([np.flatnonzero(is_lm), rest[row_lines]]), kind="stable")
        merged = np.concatenate([block, rows])[order]
        full = {name: np.concatenate([np.full(len(block), np.nan), col])[order] for name, col in extras.items()}
        return merged, full, taken, has_row, used, np.concatenate([none, which])[order]

    def _learn(self, key: bytes, line: bytes, read: LineRead | None) -> LineTemplate | None:
        """Remember the shape of `line` (read as `read`: None when it gives no row): templated.learn_shape."""
        return templated.learn_shape(key, line, read, self._templates, self._shapes, self._ranked, self._bars)

    def _feed_lines(
        self,
        st: FileState,
        buf: bytes | bytearray,
        starts: list[int],
        base: int,
        obs_time: float,
        end: int,
        fast: bool,
        metrics: bool,
    ) -> None:
        """The candidate lines of a small chunk one by one, no numpy (a live tick: ~1 KB per rank)."""
        find = buf.find
        for ls in starts:
            m = RE_LM_AT.match(buf, ls, end) if fast else None
            if m is not None:
                st.rows.append(lm_row(m, base + ls, obs_time))
            else:
                self.parse_line(st, buf, ls, find(b"\n", ls, end), base, obs_time, metrics)

    def _carry_traceback(
        self, st: FileState, buf: bytes | bytearray, base: int, end: int, nl: _Nl = None, chatter: _Hits = None
    ) -> None:
        """Keep a traceback still being written, settle the failures that ended the rank; `nl`: the block's newlines,
        `chatter`: the chatter anchors' starts in the block (a batch's one search: `chatter_by_file`)."""
        carry_and_attach(st, buf, self._floor, base, end, self.settings.tb_carry_max, nl)
        settle(st, buf, self._floor, base, end, chatter)

    def parse_line(
        self, st: FileState, buf: bytes | bytearray, ls: int, le: int, base: int, obs_time: float, metrics: bool
    ) -> None:
        line = bytes(buf[ls:le])
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            return
        info = st.info
        rank = info.rank if info.role in (LogRole.WORKER, LogRole.ERRORS) else JOB_RANK
        if glued := failure_glued(line):  # behind a progress bar's draw or a row's line (rows.linekinds)
            if metrics and self.user is None and line[glued - 5 : glued] not in (b"it/s]", b"s/it]"):
                self.metric_line(st, line[:glued], base + ls, obs_time)  # the draw's postfix row (`loss=2.3]`)
            elif metrics and self.user is None and st.columns is not None:  # its column table's row (YOLOv5's bar
                take_row(st, line[:glued], base + ls, obs_time, base + le)  # glued to `Segmentation fault`)
            line, ls = line[glued:], ls + glued  # the failure glued behind it: its own line
        pending, tagged = st.tb_start is not None, False
        if (line[:1] in TAG_STARTS or line[:1].isalnum()) and (tag := failure_after_prefix(line, pending))[0]:
            # a failure after a tag (`[1,2]<stderr>:`, `[rank6]:`, `worker-1: `): of its rank, else its host's series
            skip, named, host = tag
            line, ls, tagged = line[skip:], ls + skip, named is not None  # (a tag's rank wins: add_line_failure)
            rank = named if named is not None else rank if host is None else st.hosts.setdefault(host, len(st.hosts))
        elif skip := after_learnt_prefix(st, line, pending):  # behind the file's own prefix (rows.lineprefix)
            line, ls = line[skip:], ls + skip
        off = base + ls
        if line.startswith(ERROR_PREFIXES):
            add_level_error(st, line, off, rank, obs_time)
            return
        if line.startswith(b"["):  # chatter, or a prefixed metric line (MindCV, MindFormers); or a fatal line
            if metrics and self.user is None:
                taken = self.metric_line(st, line, off, obs_time, base + le)
            elif metrics:
                taken = self._user_line(st, line, off, obs_time)
            else:
                taken = False
            if not taken:
                self._fatal(st, line, off, rank, obs_time, tagged)
            return
        if line.startswith(TRACEBACK) or (not st.errors and line[:1] in b" \tF" and opens_traceback(line)):
            traceback_header(st, buf, base, ls, line, rank, obs_time, self._floor, self.settings.tb_carry_max)
            return
        if b"Traceback" in line and (ipy := ipython_header(line)) is not None:  # (IPython names the exception)
            traceback_header(st, buf, base, ls, line, rank, obs_time, self._floor, self.settings.tb_carry_max, ipy)
            return
        if st.tb_start is not None and line.startswith((b" ", b"\t")):
            return  # a frame of the pending traceback
        if exception_line(st, buf, base, ls, line, rank, obs_time, self._floor, self.settings.tb_carry_max):
            return
        if not metrics:
            self._fatal(st, line, off, rank, obs_time, tagged)
            return
        if self.user is not None:
            if not self._user_line(st, line, off, obs_time):
                self._fatal(st, line, off, rank, obs_time, tagged)
            return
        if b"step time: " in line and (yolo := parse_step_time_line(line)) is not None:
            t = line_time(line)
            st.timings.append((yolo[0], yolo[1], _NAN, yolo[2], t if t == t else obs_time, off))
            return
        if b"per step time" in line and (m := RE_TIMEMONITOR.search(line)) is not None:
            last = st.rows.last() or (_NAN, _NAN)
            st.timings.append((last[0], last[1], to_float(m.group(1)), to_float(m.group(2)), obs_time, off))
            return
        if st.columns is not None and take_row(st, line, off, obs_time, base + le):
            return  # a row of the file's column table (core.logs.rows.columns)
        read = self.metric_line(st, line, off, obs_time, base + le)
        read = read or self._fatal(st, line, off, rank, obs_time, tagged)
        if not read and not take_header(st, line):  # (a column table's header: core.logs.rows.columns)
            self._plain.note_nothing(line)  # (core.logs.rows.plainmemo: its copies are skipped)

    def _fatal(
        self, st: FileState, line: bytes, off: int, rank: int | None, obs_time: float, tagged: bool = False
    ) -> bool:
        """A line's failure, if any (core.logs.rows.failures.add_line_failure): True when it had one. A line with
        none is remembered: an anchor such as ` training` lets a log's repeated plain lines through, ~17 us of
        regex searches each."""
        if self._plain.no_failure(line):
            return False
        if add_line_failure(st, line, off, rank, obs_time, tagged):
            return True
        self._plain.note_no_failure(line)
        return False

    def _user_line(self, st: FileState, line: bytes, off: int, obs_time: float) -> bool:
        """The user's regex on one line: True when it gave a row."""
        row = self.user.parse(line) if self.user is not None else None
        if row is not None:
            st.rows.append(row_tuple(row, obs_time, off), None, row_rank(st, line))
        return row is not None

    def metric_line(self, st: FileState, line: bytes, off: int, obs_time: float, end: int = -1) -> bool:
        """A loss line becomes a row (its other metrics extras), an evaluation line eval entries: True then
        (`end`: where the line ends, a progress bar's redraw is told by it)."""
        self.seam.alone += 1
        if not holds_keyword(line.lower()):
            return False
        key = shape_key(line)
        if (ansi := self._ansi.take(st, key, line, off, obs_time, end)) is not None:
            return ansi
        template = self._templates.get(key)
        if template is not None and template.applies(line):  # a shape read before: numbers at the same places
            if template.row:
                row, extras = template.read_row(line)
                if id(template) not in st.noted:  # its spellings, once per file
                    st.noted.add(id(template))
                    for c, k in template.keys:
                        note_key(st.metric_keys, c, k)
                t = row[-1]
                rank = row_rank(st, line) if id(template) in self._ranked else None
                row = (*row[:-1], t if t == t else obs_time, off)
                if id(template) not in self._bars or not bar_redraw(st, row, extras, bar_of(line), end):
                    st.rows.append(row, extras, rank)
            return bool(template.row)
        if template is None and self._eval_shapes.take(st, key, line, off, obs_time):
            return True  # an evaluation line of a shape read before
        read = read_loss(line)
        if read is not None:
            add_read(st, read, off, obs_time, row_rank(st, line), bar_of(line), end)
        self._ansi.learn(key, line, read)
        if template is None and b"\x1b" not in line:  # (its row shape may be known from a bulk read's sample)
            self._eval_shapes.learn(key, line, read)
        if key not in self._templates and b"\x1b" not in line:
            self._learn(key, line, read)
        return read is not None


_LEARN_ROUNDS = 3  # samples taken from a block's lines of unknown shapes before the rest is read one by one
_RE_LINE_START = re.compile(rb"\n(?=[^\n])")
