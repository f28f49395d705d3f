"""Per-rank training logs: where they are, what their lines say, and what state each rank is in.

Map (one concern per module; imports run down this list, never up):
  general.py   the general line reader (`read_line`: loss key + number, eval lines, every metric) and
               line shapes (`LineTemplate`: one parse reused for every line of the same shape)
  formats.py   the suites' real sample lines (`FORMATS`) + `parse_loss_line`, the user regex
  discover.py  any layout with the rank in the path (msrun, MindFormers, mpirun, rank table, model zoo,
               Slurm, rank_N/, one file) -> `LogFile`s; links out of the folder refused; what was skipped, why
  failures.py  lines that end a rank without a traceback ([CRITICAL], CANN codes, glibc, signals, time-outs)
  bulk.py      the numpy fast path: candidate and keyword lines, LossMonitor rows (bit-identical to `float`)
  templated.py lines of known shapes as rows in numpy
  shapes.py    help for unread formats (frequent numeric line shapes) and metric labels
  parser.py    one file's lines -> rows, timings, errors (`ReaderSettings`, `ErrorKind`)
  reader.py    `read_run`, `RunSnapshot` (incremental reads from saved offsets)
  watcher.py   `RunWatcher` (live, thread-safe)
  status.py    `rank_status` (`RankState`), `tail_lines`
  metrics.py   curve maths for the Monitor (smoothing, global step, bands, downsampling)
  replay.py    record a run's logs with timing and replay them as a live run
"""

from __future__ import annotations

from core.logs.discover import LogFile, discover_logs
from core.logs.filestate import FATAL_KINDS, MAX_PARTIAL_LINE, ErrorKind, ReaderSettings
from core.logs.formats import (
    FORMATS,
    LogFormat,
    LogFormatError,
    compile_user_regex,
    is_noise_line,
    parse_loss_line,
    user_format,
)
from core.logs.reader import ERROR_COLUMNS, EVAL_COLUMNS, METRIC_COLUMNS, TIMING_COLUMNS, RunSnapshot, read_run
from core.logs.status import STATES, RankState, rank_status, tail_lines
from core.logs.watcher import RunWatcher

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
