"""Per-rank training logs: where they are, what their lines say, and what state each rank is in.

Laid out by stage, each a sub-package with one job; imports run up this list, never down:
  bytes/      which files, and their bytes (layouts, folder checks, bounded reads, read-ahead, UTF-16)
  tokens/     lines to tokens (the compiled scans for candidate lines and numbers, the shared lexicon)
  rows/       the grammar (every notation, failure lines by kind), the series choice, one file's lines as
              rows, the run's table and `read_run`
  judgement/  rank status and the one failure judgement, diagnosis, the ranks to look at, curve maths
  live/       `RunWatcher` (live), the process's heap policy, record and replay

Each stage's `__init__` maps its modules. `tests/test_logs_stages.py` holds the order.
"""

from __future__ import annotations

from core.logs.bytes.discover import LogFile, discover_logs
from core.logs.judgement.status import STATES, RankState, rank_status, tail_lines
from core.logs.live.watcher import RunWatcher
from core.logs.rows.filestate import FATAL_KINDS, MAX_PARTIAL_LINE, ErrorKind, ReaderSettings
from core.logs.rows.formats import (
    FORMATS,
    LogFormat,
    LogFormatError,
    compile_user_regex,
    is_noise_line,
    parse_loss_line,
    user_format,
)
from core.logs.rows.reader import ERROR_COLUMNS, EVAL_COLUMNS, METRIC_COLUMNS, TIMING_COLUMNS, RunSnapshot, read_run

__all__ = [
    "ERROR_COLUMNS",
    "EVAL_COLUMNS",
    "FATAL_KINDS",
    "FORMATS",
    "MAX_PARTIAL_LINE",
    "METRIC_COLUMNS",
    "STATES",
    "TIMING_COLUMNS",
    "ErrorKind",
    "LogFile",
    "LogFormat",
    "LogFormatError",
    "RankState",
    "ReaderSettings",
    "RunSnapshot",
    "RunWatcher",
    "compile_user_regex",
    "discover_logs",
    "is_noise_line",
    "parse_loss_line",
    "rank_status",
    "read_run",
    "tail_lines",
    "user_format",
]
