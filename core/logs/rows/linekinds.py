"""What a worker-log line is to `Parser.parse_line` (core.logs.rows.parser), told by its text alone.

The line-by-line reader dispatches on these, and the sample that learns line shapes for bulk reads asks
`reaches_metric_line` which lines the line-by-line reader would learn from: one definition for both, so
they cannot drift apart (tests/test_logs_smallfiles.py holds it to `Parser.parse_line`)."""

from __future__ import annotations

import re

from core.logs.rows.columns import HEADER_LITERALS
from core.logs.rows.failures import failure_anchors, fatal_reason, ipython_header, line_tag, task_end
from core.logs.rows.filestate import FileState
from core.logs.rows.formats import ERROR_PREFIXES, NUM, RE_EXC_LINE, parse_step_time_line
from core.logs.rows.lineprefix import learn_prefix, prefix_end
from core.logs.rows.lineranks import collector_stamp, determined_prefix, grep_prefix, host_prefix
from core.logs.tokens.lexicon import holds_keyword
from core.logs.tokens.plain import BASE_LITERALS, WorthScan

__all__ = [
    "RE_TIMEMONITOR",
    "TAG_STARTS",
    "TRACEBACK",
    "WORTH",
    "after_learnt_prefix",
    "failure_after_prefix",
    "failure_after_tag",
    "failure_glued",
    "failure_glued_to_bar",
    "first_pid",
    "has_keyword",
    "header_inside",
    "holds_keyword",
    "opens_traceback",
    "reaches_metric_line",
]

TRACEBACK = b"Traceback (most recent call last)"
# A traceback's frame line (`  File "train.py", line 12, in main`): Python prints that shape only inside a traceback
# (a stack dump's `File "x", line 12 in f` has no comma). One read before any failure of its file is a traceback whose
# header was cut off (a pasted excerpt or a rotated log that begins inside it): it opens the traceback as its header
# would, a failure until its exception line comes (or training goes on after it). After a failure, frames without a
# header are the rest of tracebacks already read (several ranks' interleaved in one stream: tests/fixtures/real_logs/
# megatron-nan-grad-norm-assert-rank3-interleaved_pai-megatron-patch-60), no failure of their own. Real line
# (tests/fixtures/real_logs/deepspeed-pdsh-worker-5-rank22-traceback-in-initialize-cut_deepspeed-6737, DeepSpeed#6737):
#   worker-5: [rank22]:   File "/nvfile-data/thu/hehaowei/codellama-main/fms_hhw/main_new.py", line 307, in <module>
FRAME = b'File "'
_RE_FRAME = re.compile(rb'File "[^"\n]+", line \d+, in ')
WORTH = WorthScan((*BASE_LITERALS, *failure_anchors(), FRAME, *HEADER_LITERALS))
"""The bulk path's search for candidate lines worth `parse_line` (core.logs.tokens.plain): the parser's own line
kinds, every failure kind's anchors (core.logs.rows.failure_kinds), so a new kind is found on every path, and a
per-class evaluation header's part (core.logs.rows.columns)."""
_RE_PID = re.compile(rb"\] (?:[A-Z_]+)\((\d+)[,:]")
_RE_DISTRIBUTED_PID = re.compile(rb"DISTRIBUTED\((\d+),")


def first_pid(buf: bytes | bytearray, lo: int, hi: int) -> int | None:
    """The process id MindSpore's framework lines name in buf[lo:hi] (`DISTRIBUTED(4242,...`, `] ME(4242:...`)."""
    m = _RE_DISTRIBUTED_PID.search(buf, lo, hi) or _RE_PID.search(buf, lo, hi)
    return int(m.group(1)) if m else None


RE_TIMEMONITOR = re.compile(rb"epoch time:\s*(" + NUM + rb")\s*ms,\s*per step time:\s*(" + NUM + rb")\s*ms")


def reaches_metric_line(line: bytes, traceback_pending: bool) -> bool:
    """Whether `Parser.parse_line` hands this line (of a worker log, no user regex) to `metric_line`, the
    only place a shape is learnt from when lines are read one by one: what `templated.learn_sample` may learn.
    `traceback_pending`: a traceback header came before (an indented line is then one of its frames)."""
    if line.startswith(ERROR_PREFIXES) or failure_glued(line):
        return False
    tagged = (line[:1] in TAG_STARTS or line[:1].isalnum()) and failure_after_prefix(line, traceback_pending)[0]
    if tagged or header_inside(line):  # (a prefix learnt from an earlier line: the file's state, not the text's)
        return False
    if line.startswith(b"["):
        return True
    if line.startswith(TRACEBACK) or (traceback_pending and line.startswith((b" ", b"\t"))):
        return False
    if b"Traceback" in line and ipython_header(line) is not None:
        return False  # IPython's `RuntimeError    Traceback (most recent call last)` header, as parse_line reads it
    if RE_EXC_LINE.match(line) or (line[:1] == b" " and RE_EXC_LINE.match(line.lstrip(b" "))):
        return False  # an exception line, maybe indented as pasted (` AssertionError: ...`)
    if b"step time: " in line and parse_step_time_line(line) is not None:
        return False
    return not (b"per step time" in line and RE_TIMEMONITOR.search(line) is not None)


def opens_traceback(line: bytes) -> bool:
    """Whether `line` (after its prefix) is a traceback's frame, its header cut off when none is pending."""
    body = line.lstrip(b" \t")
    return body.startswith(FRAME) and _RE_FRAME.match(body) is not None


def has_keyword(buf: bytes | bytearray, start: int, end: int) -> bool:
    """Whether the line holds a loss key or an eval word, in any case (what `keyword_starts` finds)."""
    nl = buf.find(b"\n", start, end)
    low = bytes(buf[start : end if nl == -1 else nl]).lower()
    return holds_keyword(low)


def failure_after_tag(line: bytes, traceback_pending: bool) -> tuple[int, int | None]:
    """(where a failure's line starts after a launcher's tag, the rank the tag names or None):
    `[1,2]<stderr>:Traceback ...`, `[rank6]:[E624 ...] ... NCCL error`, `[host:pid] *** Process received signal ***`;
    (0, None) when `line` has no tag or what follows it is no failure's line (a tagged loss line is read
    whole, as the bulk path reads its shape)."""
    rank, skip = line_tag(line)
    return _behind_tag(line, skip, rank, traceback_pending) if skip else (0, None)


def _behind_tag(line: bytes, skip: int, rank: int | None, traceback_pending: bool) -> tuple[int, int | None]:
    """`failure_after_tag` once a tag `line[:skip]` naming `rank` was found: where the failure's line starts."""
    body = line[skip:]
    # the tag's own space (`[rank2]: Traceback ...`) is no indent: what follows is read as a line of its own,
    # but an indented frame of a pending traceback keeps its indent
    lead = len(body) - len(body.lstrip(b" "))
    stripped = body[lead:]
    if traceback_pending and lead > 1 and not stripped.startswith(TRACEBACK) and not RE_EXC_LINE.match(stripped):
        return skip, rank
    if _failure_line(stripped, traceback_pending):
        return skip + lead, rank
    return 0, None


# the first bytes of a line that a tag before a failure may begin with, besides a host's letter or digit
# (`failure_after_prefix`): `[rank6]:`, `<>` (Determined), a markdown backtick before either
TAG_STARTS = b"[<`./"


def failure_after_prefix(line: bytes, traceback_pending: bool) -> tuple[int, int | None, str | None]:
    """`failure_after_tag`, also behind pdsh's host prefix (`192.168.50.171: Traceback ...`,
    `worker-1: [rank3]:[E624 ...]`): (where the failure's line starts, the rank a tag names, the host);
    (0, None, None) when it is no failure's line behind a prefix. A log collector's stamp may come first
    (`2025-07-17T11:20:40.299361236+08:00 [rank2]: Traceback ...`), or Determined's trial-log prefix that names
    the rank (`<>        [2021-12-07 10:43:00] ef45fdce [rank=1] || Traceback ...`, `determined_prefix`)."""
    if line[:1] == b"`":  # a markdown backtick the paste was opened with (`` `[rank1]: Traceback``): the tag behind it
        at = len(line) - len(line.lstrip(b"`"))
        skip, rank, host = failure_after_prefix(line[at:], traceback_pending) if at < len(line) else (0, None, None)
        return (at + skip, rank, host) if skip else (0, None, None)
    if (grep := grep_prefix(line)) is not None:  # grep's `PATH/worker_N.log:LINE:` (msrun's console)
        skip, rank = _behind_tag(line, grep[1], grep[0], traceback_pending)
        return skip, rank if skip else None, None
    if b"[rank=" in line and (det := determined_prefix(line)) is not None:
        return (det[1], det[0], None) if _failure_line(line[det[1] :], traceback_pending) else (0, None, None)
    if at := collector_stamp(line):
        body = line[at:]
        skip, rank, host = failure_after_prefix(body, traceback_pending)
        if skip:
            return at + skip, rank, host
        return (at, None, None) if _failure_line(body, traceback_pending) else (0, None, None)
    if line[:1] == b"[":
        skip, rank = failure_after_tag(line, traceback_pending)
        return skip, rank, None
    found = host_prefix(line)
    if found is None:
        return 0, None, None
    host, at = found
    body = line[at:]
    skip, rank = failure_after_tag(body, traceback_pending) if body[:1] == b"[" else (0, None)
    if skip:
        return at + skip, rank, host
    return (at, None, host) if _failure_line(body, traceback_pending) else (0, None, None)


def header_inside(line: bytes) -> int:
    """Where a traceback header starts inside `line` behind a text that is a pipeline's prefix
    (core.logs.rows.lineprefix.learn_prefix), 0 when none: a pure function of the text."""
    at = line.find(TRACEBACK, 1)
    return at if at > 0 and learn_prefix(line[:at]) is not None else 0


def after_learnt_prefix(st: FileState, line: bytes, traceback_pending: bool) -> int:
    """Where a failure's line starts behind the file's own prefix (core.logs.rows.lineprefix), 0 when none: a
    traceback header found inside a line teaches the prefix (what precedes it) and starts there; a later line
    whose prefix has that shape starts after it when what follows is a failure's line (a frame, the exception,
    an error tag). A tagged or plain loss line is read whole, as before."""
    at = header_inside(line)
    if at:
        st.line_prefix = learn_prefix(line[:at])
        return at
    if st.line_prefix is None or not (skip := prefix_end(st.line_prefix, line)):
        return 0
    return skip if _failure_line(line[skip:], traceback_pending) else 0


def _failure_line(body: bytes, traceback_pending: bool) -> bool:
    """Whether `body` (a line after its prefix) is a failure's line: an error tag, a traceback (or one of its
    frames), an exception, a fatal signature or a launcher's word that a task ended."""
    return bool(
        body.startswith((*ERROR_PREFIXES, TRACEBACK))
        or (traceback_pending and body.startswith((b" ", b"\t")))
        or opens_traceback(body)
        or RE_EXC_LINE.match(body)
        or fatal_reason(body) is not None
        or task_end(body) is not None
    )


# A progress bar's draw ends with its rate and `]` (tqdm: `| 568/6834 [2:12:30<28:23:15, 16.31s/it]`, `?it/s]`);
# the next draw comes after `\r`, so a process that writes a failure mid-bar (another rank's, or its own stderr)
# glues it behind the draw, no newline between. Real lines (tests/fixtures/real_logs/
# tqdm-bar-glued-nccl-watchdog-rank-2-and-0_firefly-183, yangjianxin1/Firefly#183, and
# tqdm-bar-glued-rank1-traceback-cut_ms-swift-7266, modelscope/ms-swift#7266):
#   `  8%|▊  | 568/6834 [2:12:30<28:23:15, 16.31s/it][E ProcessGroupNCCL.cpp:821] [Rank 2] Watchdog caught ...`
#   `Train:   0%|          | 2/1304 [00:16<2:57:59,  8.20s/it][rank1]: Traceback (most recent call last):`
# A draw may carry a postfix after its rate (`1.00it/s, loss=2.3, v_num=0]`: Lightning's, tqdm's `set_postfix`):
# the draw ends at the `]` after the rate; its row is read from the draw (`Parser.parse_line`), the failure after it.
_RATES = (b"it/s", b"s/it")


def failure_glued_to_bar(line: bytes) -> int:
    """Where a failure's line glued behind a progress bar's draw starts (a tag before it kept: the caller reads
    it as any line), 0 when none. A pure function of the text (no pending traceback: a frame is never glued)."""
    for rate in _RATES:
        at = line.find(rate)
        close = line.find(b"]", at) if at >= 0 else -1
        if close < 0:
            continue
        rest = line[close + 1 :]
        if rest and not rest[:1].isspace() and (failure_after_prefix(rest, False)[0] or _failure_line(rest, False)):
            return close + 1
    return 0


# The shell's report of a job a signal ended (the "signal" kind's words: `Segmentation fault`, `Killed`, ... maybe
# `(core dumped)`) starts on the column where the job's output stopped: after a progress line redrawn with `\r` and
# no newline at its end (fastText's `Progress: ... loss: ... eta: ...`), it is glued to that line, whose last draw is
# a row. Only behind a line holding a loss keyword (a row's draw) and ending the line: `4242 Killed` after a script's
# name is the "signal" kind's own shape. Real line (epfml/sent2vec#45, the pasted output's last line):
#   `Progress: 19.0%  words/sec/thread: 59  lr: 0.242889  loss: 20.702034  eta: 125h56m Segmentation fault`
_SIGNAL_WORDS = (b"Segmentation fault", b"Aborted", b"Killed", b"Bus error", b"Illegal instruction")
_SIGNAL_ENDS = (*_SIGNAL_WORDS, b"Floating point exception", b"(core dumped)")
_SIGNAL_LAST = (*(end[-1:] for end in _SIGNAL_ENDS), b".", b"!", b" ", b"\t", b"\r")  # (one test on most lines)
_RE_SIGNAL_END = re.compile(
    rb"(?<![A-Za-z])(?:" + b"|".join(_SIGNAL_ENDS[:-1]) + rb")(?:[ \t]*\(core dumped\))?[.!]?[ \t]*\r?$"
)


def signal_glued_to_row(line: bytes) -> int:
    """Where the shell's signal report glued to the end of a row's line starts (the caller reads the row before it and
    the report as a line of its own), 0 when none. A pure function of the text."""
    if not line.rstrip().removesuffix(b".").removesuffix(b"!").endswith(_SIGNAL_ENDS):
        return 0
    m = _RE_SIGNAL_END.search(line)
    if m is None or not line[: m.start()].strip() or not holds_keyword(line[: m.start()].lower()):
        return 0
    return m.start()


def failure_glued(line: bytes) -> int:
    """Where a failure's line glued to the end of another starts, 0 when none: behind a progress bar's draw
    (`failure_glued_to_bar`) or a row's line (`signal_glued_to_row`)."""
    if (b"it/s" in line or b"s/it" in line) and (at := failure_glued_to_bar(line)):
        return at
    return signal_glued_to_row(line) if line[-1:] in _SIGNAL_LAST else 0
