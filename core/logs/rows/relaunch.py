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

Searched after each read in the read's bytes, or, for a short read (a live tick), in the file's last bytes kept
across reads (`FileState.tail`), so the opening written over two ticks is found; a long read whose first bytes
split the opening from the read before it is the one case missed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from core.logs.rows.filestate import LOOKBACK, ErrorKind

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["opening_lines", "relaunched"]

_HEAD = 256  # the file's first bytes the reader keeps (FileState.head)


def opening_lines(head: bytes) -> bytes | None:
    """The file's opening a relaunch prints again: its first bytes (`head`, up to 256), when they hold a whole line
    and the start of another that is not blank, else None (one line alone is as likely a warning printed again)."""
    nl = head.find(b"\n")
    if nl < 0 or not head[:nl].strip() or not (rest := head[nl + 1 :]).strip():
        return None
    return None if head.startswith(rest) or rest.startswith(head[: nl + 1]) else head  # (a line again: a repeat)


def relaunched(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int) -> None:
    """After a read of buf[floor:end] (file offset `base` at buf[0]): the failures before the file's opening lines
    printed again become error lines."""
    if not st.errors or (opening := opening_lines(st.head[:_HEAD])) is None:
        return
    first = next((e.offset for e in st.errors if e.kind == ErrorKind.EXCEPTION), None)
    if first is None:
        return
    needle = b"\n" + opening
    if end - floor < LOOKBACK - _HEAD and st.tail:  # a short read: with the bytes before it (the tail holds it too)
        text: bytes | bytearray = b"".join(st.tail)
        start, lo = base + end - len(text), 0
    else:
        text, start, lo = buf, base, floor
    at = text.rfind(needle, max(lo, first - start), len(text) if text is not buf else end)
    # an opening that also came again before the failure is a pattern the file repeats (a warning each step), no launch
    if at < 0 or text.find(needle, lo, max(lo, first - start)) >= 0:
        return
    cut = start + at + 1
    for i, err in enumerate(st.errors):
        if err.kind == ErrorKind.EXCEPTION and err.offset < cut:
            st.errors[i] = replace(err, kind=ErrorKind.ERROR_LOG)
