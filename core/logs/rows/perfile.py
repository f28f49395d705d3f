"""The training series decided per file (issue 30 item 2), over a file's rows so far, at snapshot time: a
line's text alone cannot tell these apart, the file's other rows can. The rules, each per file:

- epoch summaries: in a file whose rows with a step outnumber its rows with an epoch and no step, these are
  summaries (Oscar-Paddle's `** ** Epoch [N] done! Training loss: X ** **`): evaluation rows, as fairseq's
  epoch summaries are; a file whose only rows are such lines keeps them (models-cmf-fscil-3d's `Epoch 1
  completed with avg loss: X`), and so does one that prints them as often as step rows (a summary is rarer
  than the rows it sums up);
- a step printed twice: of two neighbouring rows of one file and one rank with one step and different values
  named, the one whose values fewer of the file's rows name is an evaluation row (nanoGPT's `step 3000: train
  loss X, val loss Y` beside `iter 3000: loss Z, time ...`); as many: both stay. Rows with no step, one epoch
  alike, told apart by how many other metrics they name too (`epoch_twice`: TorchGT's `Epoch: 010, Loss: 3.5123,
  Epoch Time: 0.423s`, then every fifth epoch its evaluation `Epoch: 010, Loss: 3.512267, Train acc: 13.07%, Val
  acc: 13.17%, Test acc: 13.12%, Epoch Time: 0.423s`);
- an echo: of two neighbouring rows of one file and one rank with the same loss (two NaNs alike) and
  different values named, the one naming fewer values is dropped (as many: the later one, the echo), when at
  least half of that shape's rows in the file are such echoes (TFLearn's `Training Step: 8 | total loss: 2.03040`
  before `| Adam | epoch: 001 | loss: 2.03040 - acc: 0.2720 -- iter: 00512/55000`; LlamaFactory's callbacks line
  `{'loss': 6.8404, 'learning_rate': 5.0000e-05, 'epoch': 17.35, 'throughput': 439.09}` before the Trainer's own
  `{'loss': 6.8404, 'grad_norm': 0.0, 'learning_rate': 5e-05, 'epoch': 17.35, ...}`): one row per step; a row
  a second logger printed again (core.logs.rows.echoes: `INFO:tensorflow:loss = X, step = 1` then absl's `I0529
  ...] loss = X, step = 1`) is dropped whatever its shape;
- estimates: rows that name an evaluation loss beside their loss (nanoGPT's `step 250: train loss X, val loss Y`,
  an estimate over both splits every eval_interval) are evaluation rows in a file whose rows naming none are more
  than twice as many, when no such row has their shape (`iter 240: loss Z, time ..ms, mfu ..%` names a step time):
  a file of only such lines keeps them (`Epoch [001/300] - Train Loss: X, Valid Loss: Y`), and so do rows of the
  training rows' own shape that name one now and then (a progress bar's postfix gains `val_loss=` after a
  validation). A NaN evaluation loss is stored as naming none: such a row stays (as the step printed twice decides);
- an epoch printed twice in two wordings: of two neighbouring rows of one file and rank with no step and one epoch,
  one whose loss key names training (core.logs.rows.wording: `Train Loss:`, `train_loss=`), the other is an
  evaluation row (MixMatch's `Epoch: 1499 True Loss: X`, its loss on the evaluation split's true labels, beside
  `Epoch 1499 Train Loss: Y`);
- averages: in a file whose rows carry two loss wordings, one a key that says it averages (core.logs.rows.wording:
  `avg_loss=`, `Average Train Loss:`), the rows of that wording are summaries (evaluation rows) when the file's
  other rows are as many or more (T5-Finetune's `Epoch 20 - Average Train Loss: 0.0038` after the epoch's `Epoch 20
  - Batch loss: X` rows, a GRPO trainer's `[step 50] avg_loss=-0.0054 acc=0.7600` between `grpo_loss is X and kl
  is Y` rows); a file of only such rows keeps them (MST's `Avg. Loss`, `Epoch N completed with avg loss`);
- another loop: in a file whose rows with a step and an epoch outnumber those with a step and no epoch, these
  are an evaluation pass's where their counter counts to a total and the rows with an epoch count to others, never
  to it (GluonNLP's dev
  `[Batch 10/35] loss=0.7468, metrics:accuracy:0.6750` after `Now we are doing evaluation on dev`, between the
  epochs' `[Epoch 3 Batch 80/82] loss=0.3076, lr=0.0000083, metrics:accuracy:0.9077`): a loop over other data;
- a step's side rows: rows naming no step and no epoch are a step's other losses, dropped, where most of a file's
  (and rank's) rows with a step are followed by exactly k of them before the next (one to `_SIDE_MAX`; more where
  an evaluation's lines, no rows, print their own between, fewer where a copy was cut; the last step's any number)
  and none comes before its first such row (WS-DAN's `Epoch: [0][10/250]<TAB>... Loss 12.6626 (12.3890)` row,
  then `cos_sim_loss  0.293 (0.294)`, `neg_cos_sim_loss  0.160 (0.165)` and `loss1,loss2,loss3,feature_center_loss
  6.23 6.24 6.23 0.68` after every one): a trainer printing its loss with no step between rows that name one prints
  a varying number of them, or some before the first. Mirrored, where each such row's loss key names a part of the
  loss (core.logs.rows.wording: `policy_loss`, not KotlinDL's `lossValue`, which is its step's loss printed
  twice): exactly k of them before each row with a step (the first step's any number) and none after the last (a
  PPO trainer's debug dict `{..., 'policy_loss': X, 'value_loss': Y}` before each `Step: N | Loss: L | KL: K`
  row); the averages set aside (above) are not counted;

"Values named" (a row's signature) are its numeric columns that hold a number, the time and the loss left out
(a line may or may not print a time; every row has a loss, and a NaN loss is no other shape). A live tick and a
one-shot read decide alike once they hold the same rows. Each file notes, as its rows come in, whether a rule
may apply (`Notes`), so a run without such rows pays one check per block, never the decision.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from core.logs.tokens.bulk import ROW_KEYS

__all__ = [
    "Aside",
    "Notes",
    "column_signatures",
    "estimate_name",
    "note",
    "note_epochs",
    "note_epochs_many",
    "note_many",
    "set_aside",
    "signatures",
]

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
    estimates: int = 0  # rows naming an evaluation loss (`estimate_name`) beside their loss
    unplaced: int = 0  # rows with no step and no epoch
    epoch_pairs: int = 0  # neighbouring rows with no step, one epoch, naming different numbers of other metrics
    last_place: tuple[float, int] | None = None  # the last row's epoch when it has no step, and its other metrics
    loose: int = 0  # rows with a step and no epoch

    @property
    def any(self) -> bool:
        """Whether a rule but the side rows' may apply (those the file's `sides` says)."""
        return bool(self.pairs or self.summaries or self.estimating or self.epoch_pairs or self.loops)

    @property
    def loops(self) -> bool:
        """Whether the file's rows with a step and no epoch may be another loop's (an evaluation pass): its rows
        with a step and an epoch outnumber them."""
        return 0 < 2 * self.loose < self.stepped

    @property
    def sides(self) -> bool:
        """Whether the file's rows with no step and no epoch may be its steps' side rows: it has rows with a step,
        and step-less rows enough to follow most of them (a stray one beside step rows keeps the cheap path)."""
        return self.unplaced > 0 and self.stepped > 1 and 2 * self.unplaced >= self.stepped - 1

    @property
    def estimating(self) -> bool:
        """Whether the file's rows naming an evaluation loss may be estimates: its other rows are more than twice
        as many (counted over its rows with a step or an epoch)."""
        return 0 < 3 * self.estimates < self.stepped + self.epoch_only

    @property
    def summaries(self) -> bool:
        """Whether the file's rows with an epoch and no step are summaries: rarer than its rows with a step."""
        return 0 < self.epoch_only < self.stepped


_RE_EVAL_LOSS = re.compile(r"(?:val|valid|validation|eval|evaluation|test|dev)_(?:\w+_)?loss")


@functools.lru_cache(maxsize=4096)
def estimate_name(column: str) -> bool:
    """Whether a row's other column (its normalised key, core.logs.rows.keys.metric_name) is an evaluation loss.
    Cached: `MetricTable._take` asks it of every file's columns every tick (~2,300 asks of a few dozen names)."""
    return _RE_EVAL_LOSS.fullmatch(column) is not None


def signatures(block: np.ndarray) -> np.ndarray:
    """Per row (ROW_KEYS columns), which values it names: a bit per numeric column, time and loss left out."""
    return column_signatures({name: block[:, i] for i, name in enumerate(ROW_KEYS[:_N_FLOAT])})


def column_signatures(columns: Mapping[str, np.ndarray | None], n: int = -1) -> np.ndarray:
    """`signatures` of `n` rows given as columns (ROW_FIELDS name -> values; None: a column no row names, an
    integer column: one every row names; all None: a lone NaN loss), one pass per column a row names."""
    n = n if n >= 0 else next(len(c) for c in columns.values() if c is not None)
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
                notes.loose += row[_EPOCH] != row[_EPOCH]
            elif row[_EPOCH] == row[_EPOCH]:
                notes.epoch_only += 1
            else:
                notes.unplaced += 1
            if last is not None and (step == last[_STEP] or loss == last[_LOSS]):
                notes.pairs += _row_signature(row) != _row_signature(last)
            notes.last = row
        return
    step, loss = rows[:, _STEP], rows[:, _LOSS]
    no_step = np.isnan(step)
    notes.stepped += len(rows) - int(no_step.sum())
    notes.epoch_only += int((no_step & ~np.isnan(rows[:, _EPOCH])).sum())
    notes.unplaced += int((no_step & np.isnan(rows[:, _EPOCH])).sum())
    notes.loose += int((~no_step & np.isnan(rows[:, _EPOCH])).sum())
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


def note_epochs(notes: Notes, rows: np.ndarray, extras: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Note a file's neighbouring rows with no step and one epoch naming different numbers of other metrics
    (`extras`: name -> (row numbers, values), as the file hands its rows over): the epoch printed twice. Asked only
    of a file with rows of an epoch and no step (`Notes.epoch_only`), from its first such row on."""
    named = np.zeros(len(rows), dtype=np.int64)
    for idx, values in extras.values():
        named[idx[values == values]] += 1
    place = np.where(np.isnan(rows[:, _STEP]), rows[:, _EPOCH], np.nan)
    last = notes.last_place or (np.nan, 0)
    before, before_named = np.concatenate([[last[0]], place[:-1]]), np.concatenate([[last[1]], named[:-1]])
    notes.epoch_pairs += int(((place == before) & (named != before_named)).sum())
    notes.last_place = (float(place[-1]), int(named[-1]))


def note_epochs_many(
    notes: Sequence[Notes], rows: Sequence[np.ndarray], extras: Sequence[Mapping[str, tuple[np.ndarray, np.ndarray]]]
) -> None:
    """`note_epochs` of each file's new rows (`rows[k]`, `extras[k]` of `notes[k]`'s file), in one numpy pass over
    them all. Why: a corpus tick asked it of ~240 files, ~23 us each. A file listed twice is noted in turn."""
    if len({id(x) for x in notes}) < len(notes) or len(notes) < 2:
        for x, r, e in zip(notes, rows, extras, strict=True):
            note_epochs(x, r, e)
        return
    sizes = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    ends = np.cumsum(sizes)
    starts = ends - sizes
    named = np.zeros(int(ends[-1]), dtype=np.int64)  # per row, how many other metrics it gives a value of
    held = [(idx, values, at) for e, at in zip(extras, starts.tolist(), strict=True) for idx, values in e.values()]
    if held:  # every (file, metric) pair's rows in one array
        lens = np.fromiter((len(h[0]) for h in held), dtype=np.int64, count=len(held))
        idx = np.concatenate([h[0] for h in held]) + np.repeat(np.array([h[2] for h in held], dtype=np.int64), lens)
        values = np.concatenate([h[1] for h in held])
        named += np.bincount(idx[values == values], minlength=len(named))
    block = np.concatenate(rows)
    place = np.where(np.isnan(block[:, _STEP]), block[:, _EPOCH], np.nan)
    before, before_named = np.empty(len(block)), np.empty(len(block), dtype=np.int64)
    before[1:], before_named[1:] = place[:-1], named[:-1]
    full = np.flatnonzero(sizes > 0)
    lasts = [notes[k].last_place or (np.nan, 0) for k in full.tolist()]
    before[starts[full]] = [last[0] for last in lasts]  # a file's first row: its last row noted
    before_named[starts[full]] = [last[1] for last in lasts]
    seg = np.repeat(np.arange(len(notes)), sizes)
    pairs = np.bincount(seg[(place == before) & (named != before_named)], minlength=len(notes)).tolist()
    for k, p, n in zip(full.tolist(), place[ends[full] - 1].tolist(), named[ends[full] - 1].tolist(), strict=True):
        notes[k].epoch_pairs += pairs[k]
        notes[k].last_place = (float(p), int(n))


def note_many(notes: Sequence[Notes], block: np.ndarray, lengths: Sequence[int]) -> None:
    """`note` of each file's rows, given end to end (`block`: `lengths[k]` rows of `notes[k]`'s file, then the
    next), in one numpy pass over the block. Why: a batch of 1,024 small logs noted one by one cost a read
    ~15 ms of numpy calls per file. A file listed twice is noted block after block, as `note` would."""
    if len({id(x) for x in notes}) < len(notes):
        at = 0
        for x, n in zip(notes, lengths, strict=True):
            note(x, block[at : at + n])
            at += n
        return
    k = len(notes)
    sizes = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(sizes)
    firsts = (ends - sizes)[sizes > 0]  # each non-empty file's first row
    seg = np.repeat(np.arange(k), sizes)
    step, loss = block[:, _STEP], block[:, _LOSS]
    no_step = np.isnan(step)
    stepped = np.bincount(seg[~no_step], minlength=k).tolist()
    epoch_only = np.bincount(seg[no_step & ~np.isnan(block[:, _EPOCH])], minlength=k).tolist()
    unplaced = np.bincount(seg[no_step & np.isnan(block[:, _EPOCH])], minlength=k).tolist()
    loose = np.bincount(seg[~no_step & np.isnan(block[:, _EPOCH])], minlength=k).tolist()
    lasts = [x.last if x.last is not None else [np.nan] * block.shape[1] for x in notes]
    before_step, before_loss = np.empty(len(block)), np.empty(len(block))
    before_step[1:], before_loss[1:] = step[:-1], loss[:-1]
    before_step[firsts] = [lasts[i][_STEP] for i in seg[firsts].tolist()]  # a file's first row: its last row noted
    before_loss[firsts] = [lasts[i][_LOSS] for i in seg[firsts].tolist()]
    same = np.flatnonzero((step == before_step) | (loss == before_loss))  # rare: only these rows are signed
    pairs = [0] * k
    if len(same):
        first = np.zeros(len(block), dtype=bool)
        first[firsts] = True
        before = np.empty(len(same), dtype=np.int64)
        inner = ~first[same]
        before[inner] = signatures(block[same[inner] - 1])
        before[~inner] = [_row_signature(lasts[i]) for i in seg[same[~inner]].tolist()]
        pairs = np.bincount(seg[same[signatures(block[same]) != before]], minlength=k).tolist()
    last_rows = block[ends[sizes > 0] - 1].tolist()
    for i, x in enumerate(notes):
        x.stepped += stepped[i]
        x.epoch_only += epoch_only[i]
        x.unplaced += unplaced[i]
        x.loose += loose[i]
        x.pairs += pairs[i]
    for i, row in zip(np.flatnonzero(sizes > 0).tolist(), last_rows, strict=True):
        notes[i].last = row


def set_aside(
    code: np.ndarray,
    rank: np.ndarray,
    columns: Mapping[str, np.ndarray | None],
    asked: list[int],
    epoch_codes: list[int],
    estimates: np.ndarray | None = None,
    estimate_codes: Sequence[int] = (),
    side_codes: Sequence[int] = (),
    only_sides: Sequence[int] = (),
    named: np.ndarray | None = None,
    averaged: np.ndarray | None = None,
    parts: np.ndarray | None = None,
    trained: np.ndarray | None = None,
    echoed: np.ndarray | None = None,
    loop_codes: Sequence[int] = (),
) -> np.ndarray:
    """An `Aside` per given row (its file `code`, `rank`, ROW_FIELDS `columns` as `column_signatures` takes
    them; every row of the files `asked`, in table order): the rules above, the epoch-summary rule only in
    files `epoch_codes`, the estimates rule (`estimates`: whether each row names an evaluation loss) only in
    files `estimate_codes`, the side rows' only in files `side_codes`; files `only_sides` (asked for that rule
    alone) are held to no other rule; `named`: per row, how many other metrics it names (the epoch printed twice
    is told by it; None: no file has such pairs); `averaged`: per row, whether its loss key says it averages
    (core.logs.rows.wording; None: no row's does); `parts`: whether it names one of the loss's parts (`policy_loss`:
    the mirrored side rows must); `trained`: whether it names training (`Train Loss:`); `echoed`: whether a second
    logger printed it again (core.logs.rows.echoes): dropped; the other loop's rule only in files `loop_codes`."""
    files = np.array(sorted(set(asked)), dtype=np.int64)  # a handful: the files whose notes say a rule may apply
    key = np.searchsorted(files, code).astype(np.int64) << 32 | (rank.astype(np.int64) & 0xFFFFFFFF)
    order = None if (key[1:] >= key[:-1]).all() else np.argsort(key, kind="stable")  # each rank's rows in order
    pick = (lambda a: a) if order is None else (lambda a: a[order])
    c, r = pick(key >> 32), pick(key)
    step, loss = pick(_floats(columns, "step", len(code))), pick(_floats(columns, "loss", len(code)))
    epoch = pick(_floats(columns, "epoch", len(code)))
    sign = pick(column_signatures(columns, len(code)))
    among = functools.partial(_among, files, c)  # per row (in `r`'s order), whether its file is one of these
    aside = np.zeros(len(code), dtype=np.int8)
    aside[among(epoch_codes) & np.isnan(step) & ~np.isnan(epoch)] = Aside.EVAL
    shape = c << _SIGN_BITS | sign  # a file's shape: its index among the files, then its signature
    often = np.bincount(shape)
    pair = np.flatnonzero((r[1:] == r[:-1]) & (sign[1:] != sign[:-1]))  # `r` holds the file and the rank
    if len(only_sides):
        pair = pair[~among(only_sides)[pair]]
    twice = pair[step[pair] == step[pair + 1]]
    aside[twice[often[shape[twice]] < often[shape[twice + 1]]]] = Aside.EVAL
    aside[twice[often[shape[twice + 1]] < often[shape[twice]]] + 1] = Aside.EVAL
    if named is not None:
        _epoch_twice(aside, r, c, step, epoch, sign, pick(named))
    if estimates is not None and len(estimate_codes):
        where = among(estimate_codes)
        est = where & pick(estimates)
        aside[est & ~np.isin(shape, shape[where & ~est])] = Aside.EVAL  # no row naming none has their shape
    if trained is not None:
        _epoch_worded_twice(aside, r, step, epoch, pick(trained))
    held = None  # rows the side rows' rule counts: all but the averages set aside
    if averaged is not None:
        _averages(aside, c, pick(averaged))
        held = ~(pick(averaged) & (aside == Aside.EVAL))
    if len(side_codes):
        part = None if parts is None else pick(parts)
        if held is None:
            sides = _side_rows(r, step, epoch, part)
        else:
            sides = np.zeros(len(code), dtype=bool)
            sides[held] = _side_rows(r[held], step[held], epoch[held], None if part is None else part[held])
        aside[sides & among(side_codes)] = Aside.DROP
    apart = step[pair] != step[pair + 1]  # two steps named and not one (NaN on either side: False)
    nan_twice = np.isnan(loss[pair]) & np.isnan(loss[pair + 1]) & ~apart  # a NaN echoed at its step (Caffe's)
    echo = pair[(loss[pair] == loss[pair + 1]) | nan_twice]
    named = np.bitwise_count(sign)  # how many values each row names
    marked = np.zeros(len(code), dtype=bool)
    marked[echo[named[echo] < named[echo + 1]]] = True
    marked[echo[named[echo + 1] <= named[echo]] + 1] = True  # as many: the later one repeats the earlier
    fewer = np.flatnonzero(marked)
    if len(fewer):  # a shape's echoes dropped where they are at least half of its rows in the file
        echoes = np.bincount(shape[fewer], minlength=len(often))
        aside[fewer[2 * echoes[shape[fewer]] >= often[shape[fewer]]]] = Aside.DROP
    if echoed is not None:
        aside[pick(echoed)] = Aside.DROP
    if len(loop_codes):
        _other_loop(aside, among(loop_codes), c, step, epoch, pick(_floats(columns, "steps_total", len(code))))
    if order is None:
        return aside
    out = np.empty_like(aside)
    out[order] = aside
    return out


def _among(files: np.ndarray, c: np.ndarray, codes: Sequence[int]) -> np.ndarray:
    """Per row (`c`: its file's index in `files`, the asked files sorted), whether its file is one of `codes`: looked
    up among the handful of files, not per row (`np.isin` over the asking files' ~27k rows, five times, cost the
    real-corpus folder's tick ~4 ms)."""
    return np.isin(files, codes)[c]


_SIGN_BITS = 12  # a signature's bits (_N_FLOAT of them)
_SIDE_MAX = 8  # side rows a step may have (a few losses of its parts)


def _epoch_twice(
    aside: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    step: np.ndarray,
    epoch: np.ndarray,
    sign: np.ndarray,
    n: np.ndarray,
) -> None:
    """The epoch printed twice (see the module's doc): of two neighbouring rows of one file and rank with no step,
    one epoch and different numbers `n` of other metrics named, the one in the rarer shape of the file (its
    signature and that number) is an evaluation row; as many: both stay."""
    at = np.flatnonzero(
        (r[1:] == r[:-1]) & np.isnan(step[1:]) & np.isnan(step[:-1]) & (epoch[1:] == epoch[:-1]) & (n[1:] != n[:-1])
    )
    if not len(at):
        return
    _, shape, often = np.unique(
        (c << _SIGN_BITS | sign) << 16 | np.minimum(n, 0xFFFF), return_inverse=True, return_counts=True
    )
    many = often[shape]  # how many of the file's rows have each row's shape
    aside[at[many[at] < many[at + 1]]] = Aside.EVAL
    aside[at[many[at + 1] < many[at]] + 1] = Aside.EVAL


def _epoch_worded_twice(
    aside: np.ndarray, r: np.ndarray, step: np.ndarray, epoch: np.ndarray, trained: np.ndarray
) -> None:
    """The epoch printed twice in two wordings (see the module's doc): of two neighbouring rows of one file and rank
    with no step and one epoch, one whose loss key names training, the other is an evaluation row."""
    at = np.flatnonzero(
        (r[1:] == r[:-1])
        & np.isnan(step[1:])
        & np.isnan(step[:-1])
        & (epoch[1:] == epoch[:-1])
        & (trained[1:] != trained[:-1])
    )
    other = np.where(trained[at], at + 1, at)
    aside[other[aside[other] == Aside.KEEP]] = Aside.EVAL


def _side_rows(r: np.ndarray, step: np.ndarray, epoch: np.ndarray, parts: np.ndarray | None = None) -> np.ndarray:
    """Which rows are a step's side rows (see the module's doc), given each row's file and rank `r` (sorted), step and
    epoch: per file and rank, as many rows with no step and no epoch after each row with a step (or, all naming a
    part of the loss, `parts`, before each)."""
    out = np.zeros(len(r), dtype=bool)
    stepped, unplaced = step == step, (step != step) & (epoch != epoch)
    if not unplaced.any() or stepped.sum() < 2:
        return out
    starts = np.flatnonzero(np.concatenate([[True], r[1:] != r[:-1]]))
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), len(r)], strict=True):
        after = np.cumsum(stepped[a:b])  # per row, how many rows with a step come before it or are it
        side = np.flatnonzero(unplaced[a:b])
        n_steps = int(after[-1])
        if not len(side) or n_steps < 2:
            continue
        if after[side[0]] > 0 and _follow(after[side], n_steps):
            out[a + side] = True
            continue
        mirrored = parts is not None and bool(parts[a + side].all()) and after[side[-1]] < n_steps
        if mirrored and _follow(n_steps - after[side], n_steps):  # before each (the first step's any number)
            out[a + side] = True
    return out


def _follow(after: np.ndarray, n_steps: int) -> bool:
    """Whether side rows, given how many rows with a step come before each (at least one), follow most rows with a
    step as exactly k of them (one to `_SIDE_MAX`), the last step's any number."""
    gaps = np.bincount(after, minlength=n_steps + 1)[1:-1]  # side rows between two rows with a step
    k = int(np.argmax(np.bincount(gaps))) if len(gaps) else 0  # the most common gap
    return 1 <= k <= _SIDE_MAX and 2 * int((gaps == k).sum()) > len(gaps)


def _other_loop(
    aside: np.ndarray, where: np.ndarray, c: np.ndarray, step: np.ndarray, epoch: np.ndarray, total: np.ndarray
) -> None:
    """Another loop's rows (see the module's doc): of a file's rows with a step counted to a total, those with no
    epoch whose total none of its rows with an epoch counts to are evaluation rows."""
    counted = where & (step == step) & (total == total)
    loose = counted & (epoch != epoch) & (aside == Aside.KEEP)
    if loose.any():
        key, epoched = c + 1j * total, counted & (epoch == epoch)  # a file and a total; the epochs' rows counted
        # (only in a file whose epochs' rows count to a total of their own: the training loop's count is known)
        aside[loose & np.isin(c, c[epoched]) & ~np.isin(key, key[epoched])] = Aside.EVAL


def _averages(aside: np.ndarray, c: np.ndarray, averaged: np.ndarray) -> None:
    """Two loss wordings in one file, one of them an average's (see the module's doc): of a file's rows still kept,
    those whose loss key says it averages are summaries (evaluation rows) where its other rows are as many or more."""
    kept = aside == Aside.KEEP
    size = int(c.max()) + 1 if len(c) else 0
    n_avg = np.bincount(c[kept & averaged], minlength=size)
    n_other = np.bincount(c[kept & ~averaged], minlength=size)
    aside[kept & averaged & ((n_avg > 0) & (n_other >= n_avg))[c]] = Aside.EVAL


def _floats(columns: Mapping[str, np.ndarray | None], name: str, n: int) -> np.ndarray:
    col = columns.get(name)
    return np.full(n, np.nan) if col is None else col.astype(np.float64, copy=False)
