"""A file's column table (core.logs.rows.columns): its last header remembered, the keyless rows under it read into
the file's rows (an evaluation table's `all` row into its evaluations, of the file's last epoch).

Apart from the notation because it writes a file's state (core.logs.rows.filestate), which holds the header.
"""

from __future__ import annotations

from core.logs.rows.columns import header_of, read_row
from core.logs.rows.filestate import FileState, add_read
from core.logs.rows.redraws import bar_of

__all__ = ["take_header", "take_row"]


def take_header(st: FileState, line: bytes) -> bool:
    """A header line (read to nothing otherwise) becomes the file's column table: True then."""
    header = header_of(line)
    if header is None:
        return False
    st.columns = header
    return True


def take_row(st: FileState, line: bytes, off: int, obs_time: float, end: int) -> bool:
    """A row of the file's column table into its rows (or evaluations): True when `line` was one."""
    assert st.columns is not None
    read = read_row(st.columns, line)
    if read is None:
        return False
    if read.eval:
        last = st.rows.last()
        if last is not None:
            read.fields["epoch"] = last[0]
    read.fields["time"] = float("nan")
    draw = line.rsplit(b"\r", 1)[-1]
    add_read(st, read, off, obs_time, None, bar_of(draw), end)
    return True
