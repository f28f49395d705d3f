"""A chained traceback: Python's word between two tracebacks that the first exception led to the second.

Python prints an exception raised while another was handled (or `raise ... from` it) as a chain: the first
traceback and its exception line, a blank line, one of two fixed lines, a blank line, the next traceback. Real lines
(Jeen-Freecs/kd_thesis's wandb `files/output.log`, tests/fixtures/real_logs/wandb-output-log-lightning-bar-collapsed-
to-one-line-then-wandb-authenticationerror-at-epoch-17_kd-thesis-7534idpa):
  TimeoutError: The read operation timed out
  The above exception was the direct cause of the following exception:
  urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='api.wandb.ai', port=443): Read timed out. ...
  During handling of the above exception, another exception occurred:
  wandb.errors.errors.AuthenticationError: An error occurred while verifying the API key.
The chain's last exception is the one that ended the process; the earlier ones led to it. Why here: the fixed line is
no candidate line of the scans (it holds no anchor), so it is looked for when the next traceback's header is read,
in the bytes just before it (this read's, else the tail of the file's earlier reads: any chunking finds it), and it
is appended to the earlier failure's context (what a person reads of it), where `diagnose` sees the chain
(`chained`) and names the failure by the chain's last exception when that one names it as well.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from core.logs.rows.filestate import ErrorKind

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["CHAIN_LINES", "chained", "note_chain"]

CHAIN_LINES = (
    "The above exception was the direct cause of the following exception:",
    "During handling of the above exception, another exception occurred:",
)
_CHAIN_BYTES = tuple(line.encode() for line in CHAIN_LINES)
_WINDOW = 512  # the bytes before a header looked at: the fixed line, the blank lines and a tag on each
_RECENT = 16  # the file's last errors looked at for the failure the chain goes on from


def _before(st: FileState, buf: bytes | bytearray, floor: int, head: int) -> bytes:
    """The _WINDOW bytes before buf[head]: this read's, then the tail of the file's earlier reads."""
    lo = head - _WINDOW
    if lo >= floor or not st.tail:
        return bytes(buf[max(floor, lo) : head])
    return (b"".join(st.tail) + bytes(buf[floor:head]))[-_WINDOW:]


def _chain_line(before: bytes, tag: bytes) -> str | None:
    """The chain's fixed line when it is the last line of `before` that holds more than `tag` (the launcher's tag
    the header's line starts with, `[rank0]: `, on every line of the stream), else None."""
    tag = tag.rstrip()
    for raw in reversed(before.split(b"\n")[1:]):  # (the first is cut by the window)
        text = raw.rstrip()
        if text.startswith(tag):
            text = text[len(tag) :].strip()
        if not text:
            continue
        return next((line for line, b in zip(CHAIN_LINES, _CHAIN_BYTES, strict=True) if text == b), None)
    return None


def note_chain(st: FileState, buf: bytes | bytearray, floor: int, ls: int, off: int, rank: int | None) -> None:
    """A traceback's header at buf[ls] (file offset `off`): when the chain's fixed line comes just before it, the
    rank's failure before it (the earlier traceback's exception, or that traceback cut) gets the line at the end
    of its context."""
    start = buf.rfind(b"\n", max(floor, ls - _WINDOW), ls) + 1
    tag = bytes(buf[max(start, floor) : ls])
    line = _chain_line(_before(st, buf, floor, ls - len(tag)), tag)
    if line is None:
        return
    for i in range(len(st.errors) - 1, max(-1, len(st.errors) - 1 - _RECENT), -1):
        err = st.errors[i]
        # (behind a tag, its rank's: a stream of several ranks interleaves their lines; untagged, the file's last,
        # whatever rank its message named)
        if err.kind == ErrorKind.EXCEPTION and err.offset < off and (not tag or err.rank == rank):
            if not chained(err.context):
                st.errors[i] = replace(err, context=f"{err.context.rstrip()}\n\n{line}")
            return


def chained(context: str) -> bool:
    """Whether a failure's context ends with the chain's fixed line: a later exception of its chain ended the run."""
    return context.rstrip().endswith(CHAIN_LINES)
