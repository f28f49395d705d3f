"""A record printed by two loggers (issue 30, round 12): one row, not two.

TensorFlow 1.x sends each `tf.logging` record to its own handler (`INFO:tensorflow:loss = 4.3426676, step = 1`)
and, under absl, to absl's too (`I0529 12:57:42.588260 139872418367296 basic_session_run_hooks.py:262] loss =
4.3426676, step = 1`, tensorflow/models#8593; the Ascend dscnn's `Step #1: rate 0.001000, accuracy 3.00%, cross
entropy 4.509356` under both). A row whose line, after its logger's prefix, says what the row just before it said
after another logger's prefix is that row's echo, dropped (core.logs.rows.perfile's set_aside, as its `echoed`
rows). Equal values alone never merge rows (core.logs.rows.redraws): the same line printed twice under one prefix
(EMCAD's epoch-end `iteration 250, epoch 1 : loss : 7.892800, lr: 0.000800` twice) stays two rows; it is the two
loggers' prefixes around one message that say one record was printed twice.

Noted at the end of every read block on every path (core.logs.rows.sidelines' `carry_and_attach` calls `note`,
as it calls core.logs.rows.wording's), a row's line looked at only where its loss is the row before's (a block's
last row's too: the next block's first row may be its echo, and a live tick may cut between the two lines).
"""

from __future__ import annotations

import re

import numpy as np

from core.logs.rows.filestate import FileState
from core.logs.tokens.lexicon import ROW_KEYS

__all__ = ["note"]

_LOSS = ROW_KEYS.index("loss")
# a logger's prefix: tf.logging's own handler's `INFO:tensorflow:`, absl's (glog's) `I0529 12:57:42.588260
# 139872418367296 basic_session_run_hooks.py:262] `; the group says which logger
_RE_LOGGER = re.compile(
    rb"(?:(?P<tf>(?:INFO|WARNING|ERROR):tensorflow:)|(?P<absl>[IWE]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.\-]+:\d+\] ))"
)


def note(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int, start: int) -> None:
    """Note which of `st`'s rows from `start` on (read from buf[floor:end], file offset buf index + `base`) are
    echoes of the row before them by a second logger: their lines' file offsets go to `st.rows.echoed`."""
    rows = st.rows
    before = rows.echo_last
    if len(rows) - start == 1:  # a live tick's row: no numpy call
        last = rows.last()
        assert last is not None
        offsets, losses = [int(last[-1])], [last[_LOSS]]
        same = [0] if before is not None and before[0] == losses[0] else []
    else:
        block = rows.recent(start)
        if not len(block):
            return
        offsets, losses = block[:, -1].astype(np.int64).tolist(), block[:, _LOSS].tolist()
        same = (np.flatnonzero(block[1:, _LOSS] == block[:-1, _LOSS]) + 1).tolist()  # rare: only these are looked at
        if before is not None and before[0] == losses[0]:
            same.insert(0, 0)
    for k in same:
        prev = before[1:] if k == 0 and before is not None else _said(buf, floor, base, end, offsets[k - 1])
        here = _said(buf, floor, base, end, offsets[k])
        if prev is not None and here is not None and prev[0] != here[0] and prev[1] == here[1]:
            rows.echoed.append(offsets[k])
    said = _said(buf, floor, base, end, offsets[-1])
    rows.echo_last = None if said is None else (float(losses[-1]), *said)


def _said(buf: bytes | bytearray, floor: int, base: int, end: int, at: int) -> tuple[int, bytes] | None:
    """(which logger, the message after its prefix) of the line at file offset `at`; None: no logger's prefix, or
    the line is not in buf[floor:end]."""
    ls = at - base
    if not floor <= ls < end:
        return None
    le = buf.find(b"\n", ls, end)
    le = end if le < 0 else le
    m = _RE_LOGGER.match(buf, ls, le)
    if m is None:
        return None
    return (0 if m.group("tf") else 1), bytes(buf[m.end() : le]).rstrip(b"\r")
