"""Several launches in one file: which one's failure ended the run.

A hole of NULs in a file is what a truncation under a running writer leaves (the file opened again with `>` by a new
launch, or copytruncate, while the first writer goes on at its old offset; core.logs.bytes.rawio.nul_to_lf turns the
hole into line breaks). The bytes before the hole were written after the truncation by the other opener, the bytes
after it by the writer that kept its offset, the run whose rows the file goes on with: a traceback after the hole
supersedes one before it, which is the other launch's (neuroslm's `training.err`: a relaunch's `IndentationError`,
then, after 11 kB of NULs, the running job's `torch.save` failure that ended it). A file with no hole, or no traceback
after its hole, keeps its failures as they are (one launch's tracebacks: the first is the best-named root cause).

A traceback raised at a script's top level, every frame `in <module>` (an import that failed: the process had not
started its work), ends its launch too: a later traceback of the same rank in the file is another launch's, appended
to the same file (paddle.distributed.launch's `workerlog.N` across a user's attempts), and supersedes it. Real lines
(PommesPeter/IBOT-Paddle's log/workerlog.0, tests/fixtures/real_logs/paddle-4-workerlogs-reshape-valueerror-every-
rank-then-sigterm-no-rows_ibot-paddle): `  File "main_ibot.py", line 29, in <module>` / `    import models` / `  File
".../models/__init__.py", line 3, in <module>` / `ModuleNotFoundError: No module named 'ibot'`, then the last
attempt's `ValueError: (InvalidArgument) The 'shape' in ReshapeOp is invalid. ...` from `train_one_epoch`. Were the
first caught and printed (an optional import's `traceback.print_exc()`), the later failure is still the run's end.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from core.logs.rows.filestate import ErrorKind

if TYPE_CHECKING:
    from core.logs.rows.filestate import FileState

__all__ = ["superseded_launch"]


_TRACEBACK = "Traceback (most recent call last):"
_FRAME_SCOPE = re.compile(r'^\s*File "[^"\n]*", line \d+, in (.+?)\s*$', re.MULTILINE)  # a frame's function


def _at_top_level(context: str) -> bool:
    """Whether a traceback (an error's context) was raised at a script's top level: every frame `in <module>`."""
    scopes = _FRAME_SCOPE.findall(context) if context.startswith(_TRACEBACK) else []
    return bool(scopes) and all(scope == "<module>" for scope in scopes)


def superseded_launch(st: FileState) -> None:
    """The rank's tracebacks before the file's last hole of NULs become error lines (still listed, as a failure
    trained past is) when a traceback of the same rank follows the hole; so does a top-level traceback (`in
    <module>` only) that a later traceback of the same rank follows."""
    if not st.errors:
        return
    last: dict[int | None, int] = {}  # the rank's last traceback
    for err in st.errors:
        if err.kind == ErrorKind.EXCEPTION and err.context.startswith(_TRACEBACK):
            last[err.rank] = max(err.offset, last.get(err.rank, -1))
    for i, err in enumerate(st.errors):
        if err.kind == ErrorKind.EXCEPTION and err.offset < last.get(err.rank, -1) and _at_top_level(err.context):
            st.errors[i] = replace(err, kind=ErrorKind.ERROR_LOG)
    if st.hole_end < 0:
        return
    after = {e.rank for e in st.errors if e.kind == ErrorKind.EXCEPTION and e.offset >= st.hole_end}
    if not after:
        return
    for i, err in enumerate(st.errors):
        if err.kind == ErrorKind.EXCEPTION and err.offset < st.hole_end and err.rank in after:
            st.errors[i] = replace(err, kind=ErrorKind.ERROR_LOG)
