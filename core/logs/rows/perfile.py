"""The training series decided per file (issue 30 item 2), over a file's rows so far, at snapshot time: a
line's text alone cannot tell these apart, the file's other rows can. Three rules, each per file:

- epoch summaries: in a file whose rows with a step outnumber its rows with an epoch and no step, these are
  summaries (Oscar-Paddle's `** ** Epoch [N] done! Training loss: X ** **`): evaluation rows, as fairseq's
  epoch summaries are; a file whose only rows are such lines keeps them (models-cmf-fscil-3d's `Epoch 1
  completed with avg loss: X`), and so does one that prints them as often as step rows (a summary is rarer
  than the rows it sums up);
- a step printed twice: of two neighbouring rows of one file and one rank with one step and different values
  named, the one whose values fewer of the file's rows name is an evaluation row (nanoGPT's `step 3000: train
  loss X, val loss Y` beside `iter 3000: loss Z, time ...`); as many: both stay;
- an echo: of two neighbouring rows of one file and one rank with the same loss (a number, NaN never) and
  different values named, the one naming fewer values is dropped (as many: the later one, the echo), when at
  least half of that shape's rows in the file are such echoes (TFLearn's `Training Step: 8 | total loss: 2.03040`
  before `| Adam | epoch: 001 | loss: 2.03040 - acc: 0.2720 -- iter: 00512/55000`; LlamaFactory's callbacks line
  `{'loss': 6.8404, 'learning_rate': 5.0000e-05, 'epoch': 17.35, 'throughput': 439.09}` before the Trainer's own
  `{'loss': 6.8404, 'grad_norm': 0.0, 'learning_rate': 5e-05, 'epoch': 17.35, ...}`): one row per step.

"Values named" (a row's signature) are its numeric columns that hold a number, the time and the loss left out
(a line may or may not print a time; every row has a loss, and a NaN loss is no other shape). A live tick and a
one-shot read decide alike once they hold the same rows. Each file notes, as its rows come in, whether a rule
may apply (`Notes`), so a run without such rows pays one check per block, never the decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from core.logs.tokens.bulk import ROW_KEYS

__all__ = ["Aside", "Notes", "column_signatures", "note", "set_aside", "signatures"]

_N_FLOAT = len(ROW_KEYS) - 1
_STEP, _EPOCH, _LOSS, _TIME = (ROW_KEYS.index(k) for k in ("step", "epoch", "loss", "time"))
_UNSIGNED = (_TIME, _LOSS)  # columns no signature holds


class Aside(IntEnum):
    """What becomes of a row: a training row, an evaluation row, or dropped (an echo of its neighbour)."""

    KEEP = 0
    EVAL = 1
    DROP = 2


@dataclass
class Notes:
    """What one file's rows so far say about the rules (cheap, per block): whether one may apply."""

    stepped: int = 0  # rows with a step
    epoch_only: int = 0  # rows with an epoch and no step
    pairs: int = 0  # neighbouring rows with one step or one loss and different signatures
    last: list[float] | None = None  # the last row (ROW_KEYS columns)

    @property
    def any(self) -> bool:
        return bool(self.pairs or self.summaries)

    @property
    def summaries(self) -> bool:
        """Whether the file's rows with an epoch and no step are summaries: rarer than its rows with a step."""
        return 0 < self.epoch_only < self.stepped


def signatures(block: np.ndarray) -> np.ndarray:
    """Per row (ROW_KEYS columns), which values it names: a bit per numeric column, time and loss left out."""
    return column_signatures({name: block[:, i] for i, name in enumerate(ROW_KEYS[:_N_FLOAT])})


def column_signatures(columns: Mapping[str, np.ndarray | None]) -> np.ndarray:
    """`signatures` of rows given as columns (ROW_FIELDS name -> values; None: a column no row names, an
    integer column: one every row names), one pass per column a row names."""
    n = next(len(c) for c in columns.values() if c is not None)
    out = np.zeros(n, dtype=np.int64)
    for i, name in enumerate(ROW_KEYS[:_N_FLOAT]):
        col = columns.get(name)
        if i in _UNSIGNED or col is None:
            continue
        out += (1 << i) if col.dtype.kind in "iu" else (col == col) * np.int64(1 << i)
    return out


def _row_signature(row: list[float]) -> int:
    """`signatures` of one row given as a list."""
    return sum(1 << i for i in range(_N_FLOAT) if i not in _UNSIGNED and row[i] == row[i])


def note(notes: Notes, rows: np.ndarray) -> None:
    """Note a file's new block of rows (ROW_KEYS columns, file order). Neighbours are compared across ranks
    here (a stream of several ranks may note pairs the decision then finds in no one rank: only dearer). A
    live tick's block of a row or two is noted in plain Python (numpy's calls cost more than the rows)."""
    if len(rows) <= _SMALL:
        for row in rows.tolist():
            step, loss, last = row[_STEP], row[_LOSS], notes.last
            if step == step:
                notes.stepped += 1
            elif row[_EPOCH] == row[_EPOCH]:
                notes.epoch_only += 1
            if last is not None and (step == last[_STEP] or loss == last[_LOSS]):
                notes.pairs += _row_signature(row) != _row_signature(last)
            notes.last = row
        return
    step, loss = rows[:, _STEP], rows[:, _LOSS]
    no_step = np.isnan(step)
    notes.stepped += len(rows) - int(no_step.sum())
    notes.epoch_only += int((no_step & ~np.isnan(rows[:, _EPOCH])).sum())
    last = notes.last if notes.last is not None else [np.nan] * rows.shape[1]
    before_step = np.concatenate([[last[_STEP]], step[:-1]])
    before_loss = np.concatenate([[last[_LOSS]], loss[:-1]])
    same = np.flatnonzero((step == before_step) | (loss == before_loss))  # rare: only these rows are signed
    if len(same):
        before = np.full(len(same), _row_signature(last), dtype=np.int64)
        inner = same > 0
        if inner.any():
            before[inner] = signatures(rows[same[inner] - 1])
        notes.pairs += int((signatures(rows[same]) != before).sum())
    notes.last = rows[-1].tolist()


_SMALL = 8  # rows a block may have to be noted row by row


def set_aside(
    code: np.ndarray,
    rank: np.ndarray,
    columns: Mapping[str, np.ndarray | None],
    asked: list[int],
    epoch_codes: list[int],
) -> np.ndarray:
    """An `Aside` per given row (its file `code`, `rank`, ROW_FIELDS `columns` as `column_signatures` takes
    them; every row of the files `asked`, in table order): the rules above, the epoch-summary rule only in
    files `epoch_codes`."""
    files = np.array(sorted(set(asked)), dtype=np.int64)  # a handful: the files whose notes say a rule may apply
    key = np.searchsorted(files, code).astype(np.int64) << 32 | (rank.astype(np.int64) & 0xFFFFFFFF)
    order = None if (key[1:] >= key[:-1]).all() else np.argsort(key, kind="stable")  # each rank's rows in order
    pick = (lambda a: a) if order is None else (lambda a: a[order])
    c, r = pick(key >> 32), pick(key)
    step, loss = pick(_floats(columns, "step", len(code))), pick(_floats(columns, "loss", len(code)))
    epoch = pick(_floats(columns, "epoch", len(code)))
    sign = pick(column_signatures(columns))
    aside = np.zeros(len(code), dtype=np.int8)
    aside[pick(np.isin(code, epoch_codes)) & np.isnan(step) & ~np.isnan(epoch)] = Aside.EVAL
    shape = c << _SIGN_BITS | sign  # a file's shape: its index among the files, then its signature
    often = np.bincount(shape)
    pair = np.flatnonzero((r[1:] == r[:-1]) & (sign[1:] != sign[:-1]))  # `r` holds the file and the rank
    twice = pair[step[pair] == step[pair + 1]]
    aside[twice[often[shape[twice]] < often[shape[twice + 1]]]] = Aside.EVAL
    aside[twice[often[shape[twice + 1]] < often[shape[twice]]] + 1] = Aside.EVAL
    echo = pair[loss[pair] == loss[pair + 1]]
    named = np.bitwise_count(sign)  # how many values each row names
    marked = np.zeros(len(code), dtype=bool)
    marked[echo[named[echo] < named[echo + 1]]] = True
    marked[echo[named[echo + 1] <= named[echo]] + 1] = True  # as many: the later one repeats the earlier
    fewer = np.flatnonzero(marked)
    if len(fewer):  # a shape's echoes dropped where they are at least half of its rows in the file
        echoes = np.bincount(shape[fewer], minlength=len(often))
        aside[fewer[2 * echoes[shape[fewer]] >= often[shape[fewer]]]] = Aside.DROP
    if order is None:
        return aside
    out = np.empty_like(aside)
    out[order] = aside
    return out


_SIGN_BITS = 12  # a signature's bits (_N_FLOAT of them)


def _floats(columns: Mapping[str, np.ndarray | None], name: str, n: int) -> np.ndarray:
    col = columns.get(name)
    return np.full(n, np.nan) if col is None else col.astype(np.float64, copy=False)
