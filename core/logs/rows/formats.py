"""Line formats: the suites whose loss lines we read, one `LogFormat` each, all read by ONE general reader.

`FORMATS` lists the suites' real sample lines and where each came from, so "which formats do we read?" is
answered by reading the list; it is made from the `suite` entries of core.logs.rows.notations, where a new
suite or notation is one entry (real samples, the reading they must give, and a pattern only when the
general reader, core.logs.rows.general, does not read it). A user regex (`compile_user_regex`) replaces the
general reader (`user_format`). A row is a dict with ROW_FIELDS (NaN where the line does not say).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from core.errors import UserError
from core.logs.rows.general import LineRead, line_time, read_line, to_float
from core.logs.rows.notations import NOTATIONS
from core.logs.rows.splitrows import split_read
from core.logs.tokens.lexicon import ERROR_PREFIXES, NOISE_PREFIXES, NUM, ROW_FIELDS

__all__ = [
    "ERROR_PREFIXES",
    "FORMATS",
    "MARKERS",
    "NOISE_PREFIXES",
    "NUM",
    "RE_EXC_LINE",
    "ROW_FIELDS",
    "LogFormat",
    "LogFormatError",
    "compile_user_regex",
    "is_chatter",
    "is_noise_line",
    "last_log_time",
    "line_time",
    "parse_loss_line",
    "parse_step_time_line",
    "read_loss",
    "to_float",
    "user_format",
]

_NAN = float("nan")


class LogFormatError(UserError, ValueError):
    """A user-supplied loss regex that cannot be used (bad syntax or no `loss` group)."""


Row = dict[str, float]


@dataclass(frozen=True)
class LogFormat:
    """One suite's loss line: `sample` is a real line and `source` where it was seen; `parse(line)`
    gives a training row (ROW_FIELDS) or None (the general reader unless the format is the user's)."""

    name: str
    sample: str
    source: str
    # the general reader, looked up when a format is made (it is defined below this class)
    parse: Callable[[bytes], Row | None] = field(default_factory=lambda: parse_loss_line)


# Ray names the cause after its own exception: `ray.exceptions.RayTaskError(RuntimeError): ray::Train...`
RE_EXC_LINE = re.compile(
    rb"^((?:[A-Za-z_][\w]*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure)|Exception)"
    rb"(?:\([A-Za-z_][\w.]*\))?)(?::|$)"
)
_RE_CHATTER = re.compile(rb"^\[(?:WARNING|INFO|DEBUG|ERROR|CRITICAL|EXCEPTION)\] [A-Z_]+\(\d+[,:]")
_RE_YOLO_STEPTIME = re.compile(rb"\bEpoch (\d+)/(\d+), Step (\d+)/(\d+), step time: (" + NUM + rb") ms")


def is_noise_line(line: str | bytes) -> bool:
    """True for MindSpore's `[WARNING]`/`[INFO]`/`[DEBUG]` framework chatter."""
    if isinstance(line, str):
        return line.startswith(("[WARNING]", "[INFO]", "[DEBUG]"))
    return line.startswith(NOISE_PREFIXES)


def is_chatter(line: bytes) -> bool:
    """MindSpore's own framework log lines (`[WARNING] ME(pid:...`, `[INFO] DISTRIBUTED(pid,...`): the
    framework's messages, never a training script's scalars (they may say `loss is 5` about a kernel)."""
    return _RE_CHATTER.match(line) is not None


def read_loss(line: bytes | str) -> LineRead | None:
    """The general reader on one line, after the two things a line can be instead: an exception line
    (`ValueError: loss is NAN`) or MindSpore's own chatter. None when it carries no loss or eval scalar."""
    if isinstance(line, str):
        line = line.encode("utf-8", "replace")
    line = line.rstrip(b"\r\n")
    if RE_EXC_LINE.match(line) or is_chatter(line):
        return None
    return split_read(line, read_line) or read_line(line)  # several rows on a line (`Epoch #1 ... Epoch #2 ...`)


def _row(fields: dict[str, float]) -> Row:
    """A full row: every ROW_FIELDS key, NaN where not given."""
    row = dict.fromkeys(ROW_FIELDS, _NAN)
    row.update((k, v) for k, v in fields.items() if k in row)
    return row


def parse_loss_line(line: bytes | str) -> Row | None:
    """The training row of one line (ROW_FIELDS), or None: no loss, or an evaluation line."""
    read = read_loss(line)
    if read is None or read.eval or "loss" not in read.fields:
        return None
    return _row(read.fields)


def parse_step_time_line(line: bytes) -> tuple[float, float, float] | None:
    """MindYOLO's separate `Epoch 146/500, Step 52/422, step time: 993.04 ms` line:
    (epoch, global step, step time in ms), or None."""
    if b"step time: " not in line:
        return None
    m = _RE_YOLO_STEPTIME.search(line)
    if not m:
        return None
    epoch, per_epoch, step = float(m.group(1)), float(m.group(4)), float(m.group(3))
    return epoch, (epoch - 1) * per_epoch + step, to_float(m.group(5))


FORMATS: list[LogFormat] = [LogFormat(n.name, n.samples[0].line, n.samples[0].source) for n in NOTATIONS if n.suite]
"""The suites' own loss lines: the notations marked `suite` in core.logs.rows.notations (one entry each)."""
MARKERS = (b"Epoch:[",)
"""Bytes that make a `[INFO]`-prefixed line worth showing in a tail with the chatter hidden."""


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
        raise LogFormatError("The loss regex needs a named group `loss`, e.g. r'loss=(?P<loss>[-+.\\deE]+|nan|inf)'.")
    unknown = set(compiled.groupindex) - _USER_GROUPS
    if unknown:
        raise LogFormatError(f"Unknown named group(s) {sorted(unknown)}; use only {sorted(_USER_GROUPS)}.")
    return compiled


def user_format(pattern: str) -> LogFormat:
    """The user's loss regex as one more format (validated by `compile_user_regex`)."""
    compiled = compile_user_regex(pattern)

    def parse(line: bytes) -> Row | None:
        m = compiled.search(line.decode("utf-8", "replace"))
        if not m:
            return None
        row = _row({})
        for key, raw in m.groupdict().items():
            if raw is not None:
                try:
                    row[key] = float(raw)
                except ValueError:
                    row[key] = _NAN
        row["time"] = line_time(line)
        return row

    return LogFormat("user", pattern, "the user's --loss-regex", parse)


_RE_MS_TIME = re.compile(rb"\):(\d{4})-(\d\d)-(\d\d)-(\d\d):(\d\d):(\d\d)\.(\d{3})\.(\d{3}) ")
_RE_PY_TIME = re.compile(rb"(?m)^(?:\[[A-Z]+\] )?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d{1,6})?")


def last_log_time(data: bytes) -> float:
    """Unix time of the last time-stamped line in `data`: MindSpore's own header
    (`[WARNING] DEVICE(2386,7f72...,python):2026-11-22-07:04:43.493.282 [...]`) or a python-logging
    date at a line start; NaN when there is none. Why: a traceback has no time of its own, and the
    line just before it says when the rank failed (which rank failed first is the root cause)."""
    best_pos, best = -1, float("nan")
    for m in _RE_MS_TIME.finditer(data):
        best_pos = m.start()
        y, mo, d, h, mi, s, ms, us = (int(g) for g in m.groups())
        try:
            best = datetime(y, mo, d, h, mi, s).timestamp() + ms / 1e3 + us / 1e6
        except ValueError:
            best = float("nan")
    for m in _RE_PY_TIME.finditer(data):
        if m.start() > best_pos:
            best_pos, best = m.start(), line_time(m.group(0))
    return best
