"""The one seam behind which the fast readers sit: which path reads a block of lines, decided in one place.

A file's complete lines are read by one of these paths, all giving the same rows (tests/test_grammar_entries.py
and the property tests of tests/test_logs_fastpath.py / test_logs_smallfiles.py hold them equal):

  USER        the user's regex on every line (`Parser.parse_line`), no pre-filter
  LINE        candidate lines found by one sre search, each through `Parser.parse_line` (a live tick's few lines)
  BULK        candidate lines found by numpy or the compiled passes (core.logs.tokens), LossMonitor rows
              built in numpy, the rest through `parse_line` (after the literal search for lines worth it)
  TEMPLATED   within BULK, the lines of known shapes as rows by their templates (core.logs.rows.templated)
  BATCHED     many never-read small worker logs in one buffer (core.logs.rows.smallfiles, `Parser.feed_many`)

`Seam` holds every threshold of that choice (the `ReaderSettings`) and answers each question the parser
and the small-file batch ask; it also counts what each path read, so tests and benchmarks see which path
read a file instead of patching the parser's methods.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum

from core.logs.rows.filestate import ReaderSettings

__all__ = ["SMALL_BLOCK", "ReadPath", "Seam"]

SMALL_BLOCK = 16 << 10  # bytes below which candidate lines are found by one sre search (same starts)


class ReadPath(StrEnum):
    USER = "user"
    LINE = "line"
    BULK = "bulk"
    TEMPLATED = "templated"
    BATCHED = "batched"


class Seam:
    """The parser's choice of path for each block (see the module's doc) and what each path read:
    `blocks[path]` blocks, `lines[path]` lines (TEMPLATED: rows by templates), `alone` the lines the
    general reader read one at a time (`Parser.metric_line`)."""

    def __init__(self, settings: ReaderSettings) -> None:
        self.settings = settings
        self.blocks: Counter[ReadPath] = Counter()
        self.lines: Counter[ReadPath] = Counter()
        self.alone = 0

    def compiled_scan(self, end: int, batch: bool = False) -> bool:
        """Whether a block of `end` bytes is scanned by the compiled passes (numba: a big read only, so a
        small read never pays its import) rather than one sre search (a batch of small files: by
        numpy's definition, `core.logs.tokens.bulk.scan_by_definition`)."""
        return end >= self.settings.compiled_min and (batch or end >= SMALL_BLOCK)

    def bulk(self, candidates: int, fast: bool) -> bool:
        """Whether a block's `candidates` go the BULK path (`fast`: a worker log, no user regex), counted;
        else the LINE path."""
        path = ReadPath.BULK if fast and candidates >= self.settings.block_min else ReadPath.LINE
        self.note(path, candidates)
        return path is ReadPath.BULK

    def templated(self, lines: int, end: int) -> bool:
        """Whether the `lines` candidates numpy left (not LossMonitor) are matched against the known line
        shapes: from `shape_min` lines in a compiled-size block (below, the per-line templates are as fast)."""
        return lines >= self.settings.shape_min and end >= self.settings.compiled_min

    def worth_filter(self, others: int) -> bool:
        """Whether the lines left to `parse_line` are first searched for the parts of a line worth reading (one
        literal search) rather than each read."""
        return others >= self.settings.block_min

    def batch_limit(self) -> int:
        """A never-read worker log smaller than this is read in a batch of small files (BATCHED)."""
        return min(self.settings.prefetch_min, self.settings.read_block)

    def note(self, path: ReadPath, lines: int) -> None:
        """Count a block read by `path` and its lines."""
        self.blocks[path] += 1
        self.lines[path] += lines
