"""Several launches in one file: which one's failure ended the run.

A hole of NULs in a file is what a truncation under a running writer leaves (the file opened again with `>` by a new
launch, or copytruncate, while the first writer goes on at its old offset; core.logs.bytes.rawio.nul_to_lf turns the
hole into line breaks). The bytes before the hole were written after the truncation by the other opener, the bytes
after it by the writer that kept its offset, the run whose rows the file goes on with: a traceback after the hole
supersedes one before it, which is the other launch's (neuroslm's `training.err`: a relaunch's `IndentationError`,
then, after 11 kB of NULs, the running job's `torch.save` failure that ended it). A file with no hole, or no traceback
after its hole, keeps its failures as they are (one launch's tracebacks: the first is the best-named root cause).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from core.logs.rows.filestate import ErrorKind

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["superseded_launch"]


def superseded_launch(st: FileState) -> None:
    """The rank's tracebacks before the file's last hole of NULs become error lines (still listed, as a failure
    trained past is) when a traceback of the same rank follows the hole."""
    if st.hole_end < 0 or not st.errors:
        return
    after = {e.rank for e in st.errors if e.kind == ErrorKind.EXCEPTION and e.offset >= st.hole_end}
    if not after:
        return
    for i, err in enumerate(st.errors):
        if err.kind == ErrorKind.EXCEPTION and err.offset < st.hole_end and err.rank in after:
            st.errors[i] = replace(err, kind=ErrorKind.ERROR_LOG)
