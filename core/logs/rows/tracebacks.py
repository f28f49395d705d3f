"""A Python traceback in one file's lines: its header opens a failure, its exception line closes it.

Why a module of its own: `Parser.parse_line` routes a line by its kind; what a traceback does to the file's
state (the header's time, the bytes carried between reads, the exception's rank in one stream of several
ranks) is the failure side's, beside core.logs.rows.failures.
"""

from __future__ import annotations

from core.logs.rows.chains import note_chain
from core.logs.rows.failures import (
    CUT_TRACEBACK,
    add_line_failure,
    close_traceback,
    cut_by_next,
    message_rank,
    task_end,
)
from core.logs.rows.filestate import ErrorKind, FileState, add_error, last_log_time, time_before
from core.logs.rows.formats import RE_EXC_LINE

__all__ = ["exception_line", "traceback_header"]


def traceback_header(
    st: FileState,
    buf: bytes | bytearray,
    base: int,
    ls: int,
    line: bytes,
    rank: int | None,
    obs_time: float,
    floor: int,
    carry_max: int,
    message: str = CUT_TRACEBACK,
) -> None:
    """`Traceback (most recent call last):` at `buf[ls:]`: a failure until its exception line replaces it (a log
    may end inside the traceback); the traceback before it, if one is pending, is cut by it. `message`: what the
    failure says meanwhile (IPython's header names the exception: `failures.ipython_header`)."""
    off = base + ls
    cut_by_next(st, buf, base, ls, carry_max, floor)
    note_chain(st, buf, floor, ls, off, rank)  # (a chain's fixed line before it: core.logs.rows.chains)
    st.tb_start = off
    st.tb_carry = b""
    st.tb_time = time_before(st, buf, floor, ls)
    add_error(st, ErrorKind.EXCEPTION, message, "", off, rank, st.pid, obs_time, last_log_time(line))


def exception_line(
    st: FileState,
    buf: bytes | bytearray,
    base: int,
    ls: int,
    line: bytes,
    rank: int | None,
    obs_time: float,
    floor: int,
    carry_max: int,
) -> bool:
    """An exception line (`ValueError: ...`) at `buf[ls:]` into the file's errors, with the pending traceback
    as its context: True when `line` is one."""
    off = base + ls
    mexc = RE_EXC_LINE.match(line)
    if mexc is None and line[:1] == b" " and (mexc := RE_EXC_LINE.match(line.lstrip(b" "))) is not None:
        line = line.lstrip(b" ")  # ` AssertionError: ...` as pasted (no traceback pending: not a frame)
    if not mexc:
        return False
    text = line.decode("utf-8", "replace").strip()
    context = ""
    # the exception's own time: the last stamped line before its traceback (found at the header, which may have
    # been read a block or a live tick earlier), else before this line
    lt = st.tb_time if st.tb_start is not None else time_before(st, buf, floor, ls)
    if st.tb_start is not None:
        rank = close_traceback(st, rank)
        end = off - base + len(line)
        head = st.tb_start - base  # in this read, or begun in an earlier one (its bytes in tb_carry)
        raw = buf[head:end] if head >= floor else st.tb_carry + buf[floor:end]
        context = raw[-carry_max:].decode("utf-8", "replace").replace("\r\n", "\n")
        st.tb_start = None
        st.tb_carry = b""
    if st.info.layout == "single":  # one stream of several ranks: `AssertionError: Rank 114: found NaN ...`
        rank = message_rank(text, mexc.end(), rank)
    # a launcher's own exception naming the task that ended (the legacy torch.distributed.launch's `CalledProcessError:
    # Command '[..., '--local_rank=3', ...]' died with <Signals.SIGKILL: 9>.`): the task's failure, and its report
    ended = task_end(line)
    if ended is not None and len(ended.ranks) == 1 and st.info.layout == "single":
        rank = ended.ranks[0]
    kind = ErrorKind.NAN if b"NAN or INF" in line else ErrorKind.EXCEPTION
    add_error(st, kind, text, context, off, rank, st.pid, obs_time, lt)
    if ended is not None:
        add_line_failure(st, line, off, rank, obs_time)
    return True
