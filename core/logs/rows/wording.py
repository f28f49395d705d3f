"""A row's loss key's wording (issue 30, round 11): which rows of a file took their loss from a key
that says it averages (`avg_loss=`, `Average Train Loss:`), for the per-file series choice (core.logs.rows.perfile's
`averages`). A line's text alone cannot say whether such a row is the series (MST's `Avg. Loss` rows, a file of
`Epoch N completed with avg loss` lines) or a summary of the rows around it (T5-Finetune's `Epoch 20 - Average
Train Loss: 0.0038` after the epoch's `Epoch 20 - Batch loss: X` rows; a GRPO trainer's `[step 50]
avg_loss=-0.0054 acc=0.7600` between its `grpo_loss is X and kl is Y` rows): the file's other rows can, so each
row carries its wording here and the file decides. Likewise a loss key naming one of the loss's parts
(`policy_loss`, `classify loss`, not `lossValue` nor `total_loss`): a PPO trainer's debug dict `{...,
'policy_loss': X, ...}` with no step before each `Step: N | Loss: L` row is a side row of that step (perfile's
side rows, mirrored; EAST's `classify loss is X, angle loss is Y, iou loss is Z` before each batch row); and one
naming training (`Train Loss:`): MixMatch's `Epoch: 1499 True Loss: X` beside `Epoch 1499 Train Loss: Y` is the
epoch's other loss (perfile's epoch printed twice, by wording).

Noted at the end of every read block on every path (core.logs.rows.sidelines' `carry_and_attach` calls `note`),
from the lines of the block's rows, in a file whose first row names no step (a script's own prints: an epoch's
loss, a debug dict, a loss with no step); in a file whose first row names one (a trainer's: a big run's
LossMonitor lines) a second wording is left to the step printed twice (perfile), and no line is looked at (a
search of every block's bytes cost a 256-rank synthetic read, 947 MB, 22.5 s of CPU beside its 1.7 s). A row is
worded as an average when its line holds the key followed by the row's own loss and no other loss (a line
naming a loss and, beside it, an average of it, Tacotron's `Step 1 [65.278 sec/step, loss=10.38053,
avg_loss=10.38053, ...]`, is a row of its loss key's wording, the average a metric of it).
"""

from __future__ import annotations

import re

import numpy as np

from core.logs.rows.filestate import FileState
from core.logs.tokens.bulk import Rows
from core.logs.tokens.lexicon import NUM, ROW_KEYS, number

__all__ = ["note", "worded_rows"]

_STEP, _LOSS = ROW_KEYS.index("step"), ROW_KEYS.index("loss")
_RE_AVERAGE = re.compile(
    rb"(?i)(?<![A-Za-z])(?:avg|average|mean)[ ._]{0,2}(?:train(?:ing)?[ _])?loss(?![A-Za-z])[\"'`]?\s{0,3}[:=]?\s{0,3}("
    + NUM
    + rb")"
)

_RE_LOSS = re.compile(rb"(?i)loss")
_RE_TRAIN = re.compile(rb"(?i)(?<![A-Za-z])train(?:ing)?[ _]?loss(?![A-Za-z])[\"'`]?\s{0,3}[:=]?\s{0,3}(" + NUM + rb")")
# a part's name joined to `loss` by `_` or a space (EAST's `classify loss is 0.9168, angle loss is 0.6498, iou loss
# is 5.8659` before each `Epoch is [1/600], mini-batch is [1/1600], ..., batch_loss is 13.2807` row)
_RE_PART = re.compile(rb"(?<![A-Za-z])([A-Za-z]+)[_ ]loss[\"'`]?\s{0,3}(?:[:=]|is\b)\s{0,3}(" + NUM + rb")")
_WHOLE = frozenset(
    {b"avg", b"average", b"mean", b"train", b"training", b"total", b"batch", b"running", b"lm", b"the", b"final"}
    | {b"overall", b"tot", b"epoch", b"step", b"iter", b"iteration", b"global"}
)
"""Words before `_loss` that name the loss itself, not one of its parts."""


def note(st: FileState, buf: bytes | bytearray, floor: int, base: int, end: int, start: int) -> None:
    """Note which of `st`'s rows from `start` on (read from buf[floor:end], file offset buf index + `base`) took
    their loss from a key worded as an average: their lines' file offsets go to `st.rows.averaged`. Looked for
    only in a file whose first row names no step: a trainer's stepped rows (a big run's LossMonitor lines) pay
    one check per block. Looked at once per line shape (its text, digits left out): the key whose number is the
    row's loss is at one place in every line of a shape."""
    rows = st.rows
    first = rows.first()
    if first is None or first[_STEP] == first[_STEP]:
        return
    if len(rows) - start == 1:
        last = rows.last()
        assert last is not None
        offsets, losses = [int(last[-1])], [last[_LOSS]]
    else:
        block = rows.recent(start)
        offsets, losses = block[:, -1].astype(np.int64).tolist(), block[:, _LOSS].tolist()
    lists = (None, rows.averaged, rows.parts, rows.trained)
    for at, loss in zip(offsets, losses, strict=True):
        ls = at - base
        if not floor <= ls < end:
            continue
        le = buf.find(b"\n", ls, end)
        le = end if le < 0 else le
        shape = bytes(buf[ls:le]).translate(None, b"0123456789")  # one look per line shape, not per line
        kind = rows.shapes.get(shape)
        if kind is None:
            kind = _wording(buf, ls, le, loss)
            if len(rows.shapes) < _SHAPES:
                rows.shapes[shape] = kind
        into = lists[kind]
        if into is not None:
            into.append(at)


_SHAPES = 64  # line shapes a file remembers the wording of (beyond: each line is looked at; ~13 kB a file)


def _wording(buf: bytes | bytearray, ls: int, le: int, loss: float) -> int:
    """The wording of the loss key of the row read from buf[ls:le]: 1 an average's, 2 a part's, 3 training's, 0
    none of these."""
    m = _RE_AVERAGE.search(buf, ls, le)
    if m is not None and _same(loss, m[1]) and len(_RE_LOSS.findall(buf, ls, le)) == 1:
        return 1  # no other loss on its line: the row's own
    if any(_same(loss, p[2]) and p[1].lower() not in _WHOLE for p in _RE_PART.finditer(buf, ls, le)):
        return 2
    t = _RE_TRAIN.search(buf, ls, le)
    return 3 if t is not None and _same(loss, t[1]) else 0


def _same(loss: float, raw: bytes) -> bool:
    """Whether the row's loss is the number `raw` (NaN alike): the key before it is the row's loss key."""
    value = number(raw)
    return loss == value or (loss != loss and value != value)


def worded_rows(
    code: np.ndarray, offset: np.ndarray, files: list[tuple[int, Rows]], wording: str = "averaged"
) -> np.ndarray | None:
    """Per row of a table (its file `code`, line `offset`), whether its loss key says it averages (`wording`
    "parts": names one of the loss's parts, "trained": names training; `files`: each file's code and rows, whose
    `averaged`, `parts` and `trained` list the offsets); None when no file has such a row."""
    out = None
    for c, rows in files:
        offsets = getattr(rows, wording)
        if offsets:
            out = np.zeros(len(code), dtype=bool) if out is None else out
            out |= (code == c) & np.isin(offset, offsets)
    return out
