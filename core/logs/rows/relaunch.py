"""A launch appended to the same file after a failure: the failure is the earlier launch's, not the run's end.

paddle.distributed.launch (and a user's shell loop) opens each rank's `workerlog.N` for appending: a relaunch after a
failure prints the file's opening lines again, then trains (or not) on its own. Real log (Sunting78/PP-Industry's
log/workerlog.1, tests/fixtures/real_logs/paddleseg-2-workerlogs-sigterm-relaunch-then-16000-iters-complete_pp-
industry-workerlog): the file opens with `/ssd3/.../sklearn/utils/validation.py:37: DeprecationWarning: distutils
Version classes are deprecated. ...` and `  LARGE_SPARSE_SUPPORTED = LooseVersion(scipy_version) >= '0.14.0'`; after
the first launch's Paddle `FatalError:` (its `Termination signal` is the user's SIGTERM) the same two lines start
the second launch, which completes on rank 0. The rule: when the file's opening (its first 256 bytes, a whole line and
the start of another at least: one line, or a line printed again, is as likely a warning repeated) comes again, from a
line's start after a failure, and not also between the file's start and the failure (a pattern the file repeats:
MindSpore's `Bad performance attention` warning, tests/test_issue30_judgegaps.py), the failures before it become error
lines (still listed), as a traceback before a hole of NULs does (core.logs.rows.launches). A failure of the new
launch, after its opening, stays.

The opening's numbers may differ between launches: a glog prefix's date, time and thread id (padded with blanks
to its width), a port, a pid. Real log (xjgnqnl/2021-CCF-BDCI---8-'s log/workerlog.1, a PaddleVideo run on 2 GPUs):
`I1005 20:24:27.249872 30412 gen_comm_id_helper.cc:181] Server listening on: 127.0.0.1:32871 successful.` and
`I1005 20:24:27.297324 30412 nccl_context.cc:74] init nccl context nranks: 2 local rank: 1 gpu id: 1 ring id: 0`
open the file; after the first launch's `FileNotFoundError` three relaunches print them again as `I1005 20:30:55.159075
32578 ...` and `I1005 20:59:13.677453  6714 ...`. So when the opening is not found byte for byte, it is sought by its
shape (`opening_shape`): each run of digits any run of digits, each run of blanks any run of blanks, the rest as
written; an opening whose two lines have one shape (a progress line printed again) or whose lines hold no letter (a
row of numbers) has none.

Searched after each read in the read's bytes, or, for a short read (a live tick), in the file's last bytes kept
across reads (`FileState.tail`), so the opening written over two ticks is found; a long read whose first bytes
split the opening from the read before it is the one case missed.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING

from core.logs.rows.filestate import LOOKBACK, ErrorKind

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["opening_lines", "opening_shape", "relaunched"]

_HEAD = 256  # the file's first bytes the reader keeps (FileState.head)
_FREE = re.compile(rb"([0-9]+)|([ \t]+)")  # a number, a run of blanks: what may differ between two launches' openings
_WRITTEN = re.compile(rb"[0-9]+|[ \t]+")  # what splits a line into its pieces as written
_LETTER = re.compile(rb"[A-Za-z]")


def opening_lines(head: bytes) -> bytes | None:
    """The file's opening a relaunch prints again: its first bytes (`head`, up to 256), when they hold a whole line
    and the start of another that is not blank, else None (one line alone is as likely a warning printed again)."""
    nl = head.find(b"\n")
    if nl < 0 or not head[:nl].strip() or not (rest := head[nl + 1 :]).strip():
        return None
    return None if head.startswith(rest) or rest.startswith(head[: nl + 1]) else head  # (a line again: a repeat)


def _shape_of(text: bytes) -> bytes:
    """`text` as a pattern: its numbers and runs of blanks free, the rest as written."""
    out, at = [], 0
    for m in _FREE.finditer(text):
        out += [re.escape(text[at : m.start()]), rb"[0-9]+" if m.group(1) else rb"[ \t]+"]
        at = m.end()
    return b"".join([*out, re.escape(text[at:])])


@lru_cache(maxsize=64)
def opening_shape(opening: bytes) -> tuple[bytes, re.Pattern[bytes]] | None:
    """The opening (`opening_lines`'s) as a pattern after a line break, its numbers and blanks free, with the longest
    piece of its first line it holds as written (a quick test: a block without it has no match); None when its first
    two lines share one shape (a line printed again with other numbers) or one holds no letter."""
    first, _, rest = opening.partition(b"\n")
    second = rest.split(b"\n", 1)[0]
    if not (_LETTER.search(first) and _LETTER.search(second)):
        return None
    if re.fullmatch(_shape_of(first), second) or re.match(_shape_of(second), first):
        return None
    return max(_WRITTEN.split(first), key=len), re.compile(b"\n" + _shape_of(opening))


def _find(text: bytes | bytearray, opening: bytes, lo: int, hi: int, *, last: bool, shaped: bool) -> int:
    """Where the opening comes again after a line break in text[lo:hi] (the last one when `last`, else the first),
    byte for byte or, when `shaped`, by its shape; -1 if nowhere."""
    needle = b"\n" + opening
    at = text.rfind(needle, lo, hi) if last else text.find(needle, lo, hi)
    if at >= 0 or not shaped or (shape := opening_shape(opening)) is None or text.find(shape[0], lo, hi) < 0:
        return at
    if not last:
        return m.start() if (m := shape[1].search(text, lo, hi)) else -1
    return max((m.start() for m in shape[1].finditer(text, lo, hi)), default=-1)


def relaunched(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int) -> None:
    """After a read of buf[floor:end] (file offset `base` at buf[0]): the failures before the file's opening lines
    printed again become error lines."""
    if not st.errors or (opening := opening_lines(st.head[:_HEAD])) is None:
        return
    first = next((e.offset for e in st.errors if e.kind == ErrorKind.EXCEPTION), None)
    if first is None:
        return
    if end - floor < LOOKBACK - _HEAD and st.tail:  # a short read: with the bytes before it (the tail holds it too)
        text: bytes | bytearray = b"".join(st.tail)
        start, lo = base + end - len(text), 0
    else:
        text, start, lo = buf, base, floor
    # by its shape only when the failure comes after the opening: an opening that is a failure's own lines is no
    # launch's start (several ranks' reports in one stream: `[1,37]<stderr>:F0911 ...` then `[1,4]<stderr>:F0911 ...`)
    shaped = first >= len(opening)
    at = _find(text, opening, max(lo, first - start), len(text) if text is not buf else end, last=True, shaped=shaped)
    # an opening that also came again before the failure is a pattern the file repeats (a warning each step), no launch
    if at < 0 or _find(text, opening, lo, max(lo, first - start), last=False, shaped=shaped) >= 0:
        return
    cut = start + at + 1
    for i, err in enumerate(st.errors):
        if err.kind == ErrorKind.EXCEPTION and err.offset < cut:
            st.errors[i] = replace(err, kind=ErrorKind.ERROR_LOG)
