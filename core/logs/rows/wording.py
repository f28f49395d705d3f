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
from dataclasses import dataclass, field

import numpy as np

from core.logs.rows.filestate import FileState
from core.logs.tokens.bulk import Rows
from core.logs.tokens.lexicon import NUM, ROW_KEYS, number

__all__ = ["WordedRows", "note"]

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


_BITS = ("averaged", "parts", "trained", "echoed")  # a row's wordings as bits 1, 2, 4 of `WordedRows.flags`; 8: an
# echo by a second logger (core.logs.rows.echoes), flagged alike
_FLAG_BITS = tuple(1 << k for k in range(len(_BITS)))


@dataclass
class _Looked:
    """How far one file's list of one wording (`Rows.averaged`, ...) was looked at."""

    seen: int = 0  # its offsets so far given to the rows
    lo: int = 0  # those before are at or below the file's rows so far: no later row is one of them
    lo_max: float = -np.inf  # the largest of those


@dataclass
class _FileWords:
    """How far one file's rows and lists were looked at."""

    rows_max: float  # the largest offset of the file's rows flagged so far
    lists: list[_Looked] = field(default_factory=lambda: [_Looked() for _ in _BITS])


class WordedRows:
    """Each row's loss wordings (its file's `averaged`, `parts`, `trained` offsets that name it), per row of a table
    that only grows between ticks, each row's flags set once: a tick looks at its new rows and its files' newly
    noted offsets only (the whole table's walk, per file and wording, cost ~25 ms a tick of the 1,024-rank
    real-corpus folder, benchmarks/README_logs.md round 17).

    Exact, not assumed: `note` notes only rows the table has not taken (core.logs.rows.sidelines'
    `carry_and_attach` starts at the file's untaken rows), and a file's offsets rise in file order, so a new
    offset is past every row taken before and a new row past every offset noted before; where either does not hold
    (a row's offset met again, an offset noted of an older row) the file's rows are flagged afresh from its whole
    lists. A new `generation` (the table's rows removed or renumbered) flags every row afresh."""

    def __init__(self) -> None:
        self._generation = -1
        self._done = 0  # rows flagged
        self._flags = np.zeros(0, dtype=np.int8)
        self._files: dict[int, _FileWords] = {}  # file code -> how far its lists were looked at

    def flags(self, generation: int, code: np.ndarray, offset: np.ndarray, files: list[tuple[int, Rows]]) -> np.ndarray:
        """Per row of the table (its file `code`, line `offset`: the table's first n rows) its wordings as bits (1
        averaged, 2 parts, 4 trained, 8 echoed); `files`: every file's code and rows with a noted
        offset (a file noting its first has its older rows looked at once)."""
        n = len(code)
        if generation != self._generation or self._done > n:
            self._generation, self._done, self._files = generation, 0, {}
            self._flags = np.zeros(0, dtype=np.int8)
        done = self._done
        if len(self._flags) < n:  # room for half as many rows again: a tick's rows do not copy the rest
            grown = np.zeros(n + n // 2, dtype=np.int8)
            grown[:done] = self._flags[:done]
            self._flags = grown
        new_code, new_off = code[done:n], offset[done:n]
        lows, highs = _bounds(new_code, new_off, max((c for c, _ in files), default=-1) + 1)
        base = min(int(new_off.min()), 0) if len(new_off) else 0  # a row as one key: code * span + offset - base
        span = int(new_off.max()) + 1 - base if len(new_off) else 0
        pending: list[list[int]] = [[] for _ in _BITS]  # keys of offsets the new rows may be, per wording
        for c, rows in files:
            state = self._files.get(c)
            if state is None:
                old = offset[:done][code[:done] == c]
                state = self._files[c] = _FileWords(float(old.max()) if len(old) else -np.inf)
            if not _add(state, rows, (lows[c], highs[c]), (c * span - base, base), pending):
                self._afresh(c, state, rows, code, offset)
        if any(pending):
            keys = new_code.astype(np.int64) * span + new_off - base
            for bit, wanted in zip(_FLAG_BITS, pending, strict=True):
                if wanted:
                    self._flags[np.flatnonzero(np.isin(keys, wanted)) + done] |= bit
        self._done = n
        return self._flags[:n]

    def _afresh(self, c: int, state: _FileWords, rows: Rows, code: np.ndarray, offset: np.ndarray) -> None:
        """Flag every row of file `c` from its whole lists (the rare case `_add` refuses)."""
        at = np.flatnonzero(code == c)
        mine = offset[at]
        self._flags[at] = 0
        state.rows_max = float(mine.max()) if len(mine) else -np.inf
        for bit, looked, name in zip(_FLAG_BITS, state.lists, _BITS, strict=True):
            offs = getattr(rows, name)
            end = len(offs)
            self._flags[at[np.isin(mine, offs[:end])]] |= bit
            looked.seen, looked.lo, looked.lo_max = end, 0, -np.inf
            while looked.lo < end and offs[looked.lo] <= state.rows_max:
                looked.lo_max = max(looked.lo_max, offs[looked.lo])
                looked.lo += 1


def _add(
    state: _FileWords, rows: Rows, bounds: tuple[float, float], key: tuple[int, int], pending: list[list[int]]
) -> bool:
    """Look at a file's new rows (`bounds`: their lowest and highest offsets) and newly noted offsets: the offsets
    its new rows may be go to `pending` (per wording, as keys: key[0] + offset, offsets from key[1] on); False
    (nothing changed) when an offset may be an older row's or a new row may be an older offset's."""
    low, high = bounds
    first, base = key
    lists = [getattr(rows, name) for name in _BITS]
    ends = [len(offs) for offs in lists]  # (a background read may note more meanwhile: the next tick's)
    for looked, offs, end in zip(state.lists, lists, ends, strict=True):
        if (end > looked.seen and min(offs[looked.seen : end]) <= state.rows_max) or low <= looked.lo_max:
            return False
    state.rows_max = max(state.rows_max, high)
    for into, looked, offs, end in zip(pending, state.lists, lists, ends, strict=True):
        if high >= low:  # new rows: the offsets not yet below every row may be theirs (none past the highest)
            into.extend(first + off for off in offs[looked.lo : end] if base <= off <= high)
        looked.seen = end
        while looked.lo < end and offs[looked.lo] <= state.rows_max:  # rows past these: not theirs
            looked.lo_max = max(looked.lo_max, offs[looked.lo])
            looked.lo += 1
    return True


def _bounds(code: np.ndarray, offset: np.ndarray, k: int) -> tuple[list[float], list[float]]:
    """Per file code below `k`, the lowest and highest `offset` of its rows among these (inf, -inf: none): one pass
    for every file (the corpus folder's tick: ~135 worded files, ~80 with new offsets; each file's rows gathered
    and matched alone cost ~7 ms)."""
    lows, highs = np.full(k, np.inf), np.full(k, -np.inf)
    if k and len(code):
        mine = code < k
        np.minimum.at(lows, code[mine], offset[mine])
        np.maximum.at(highs, code[mine], offset[mine])
    return lows.tolist(), highs.tolist()
