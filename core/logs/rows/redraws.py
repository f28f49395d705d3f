"""Progress-bar redraws: one training state drawn twice by a progress bar is one row (issue 30).

A tqdm bar draws its line again whenever its counter or its text moves: `set_postfix(loss=...)` draws the new
values at counter n, then `update(1)` draws the same values at n + 1 (VeOmni's `1/3828049 [00:04<...,
loss: 11.41, ...]` twice); a description `step 14/36 completed (loss: 0.248...)` is drawn again when the bar
moves (llama-recipes, torchtune's `1|26|Loss: 1.24`). A log keeps every draw. What makes a line a redraw:
it is a progress-bar line (tqdm's `N/M [elapsed<eta` counter, `bar_line`), the row just before it came from
a bar line too, on the very line before it (no other line between), the bar moved since its last draw (its
counter, elapsed time or rate differ from the bar's last line's, a redraw's too: the bar's own, not the row's;
tqdm's `close()` draws the last state again with the whole run's rate, AMMR's `250/250 [06:10<00:00, 1.48s/it`
after `1.57s/it`) and the values stayed (every column and metric but the line's time). A bar whose postfix is set
every N steps draws it again at each counter between: one row per postfix drawn (AMMR's `Loss=` every 10 steps).
Equal values alone never merge rows: two identical LossMonitor lines are two steps, and so are two
identical bar lines (nothing was redrawn), and so is a draw after another line: a line printed between two draws
(DeepSpeed's `OVERFLOW! Rank 0 Skipping step` once per step, trlx#319) says the loop went on, and the same values
drawn after it are the next step's (PPO's skipped steps over one rollout batch give equal losses, steps 77 to 79).
So Lightning's bar, which moves its counter with the last step's
postfix and then draws the new postfix at that counter (`5/517 [00:03<05:51, 1.46it/s, loss=1.63]` twice),
gives one row per step even where a rounded loss stays the same (NeMo's `loss=1.63` steps 4 to 6).

A NaN loss is no evidence that the values stayed (a run that diverged prints NaN at every step), so for a row
whose loss is NaN the counter decides: a moved counter is a new step, and a draw at the same counter is a redraw
when it is the very next line after the last draw (dreamfields-torch's `loss=nan (nan): :   2% 2/100 [00:00<...]`
drawn twice per counter, one line after the other: one row per counter, as a person counts them); the same
NaN bar line printed again after other lines is a step of its own, as any line printed again is.

Every path holds it alike: the line-by-line reader asks `redraw` before it adds a bar line's row and then
`remember`s it; the bulk paths drop the redraws of a block of rows at once (`block_redraws`), against the
same state, so a redraw split from its first draw by a block or a live tick is still dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from core.logs.tokens.bulk import ROW_KEYS

__all__ = ["BarRow", "Bars", "bar_line", "bar_of", "bar_rows", "block_redraws", "redraw", "remember"]

# tqdm's counter and times: `26/101 [06:45<17:27, 13.96s/it]`, `0/3828049 [00:04<?, ?it/s, ...]`, `1.84M/1.84M
# [00:00<00:00, ...]` (matched by digit classes only: every line of one shape is a bar line or none is)
_RE_BAR = re.compile(
    rb"(?<![\w.])\d+(?:\.\d+)?[kMGT]?/\d+(?:\.\d+)?[kMGT]?[ \t]*\[[\d:]+<(?:[\d:]+|\?)[,\]]"
    rb"(?:[ \t]*(?:\d+(?:\.\d+)?|\?)[kMGT]?[A-Za-z]*/[A-Za-z]+)?"  # its rate (`1.57s/it`, `?it/s`): close() redraws it
)
_VALUES = len(ROW_KEYS) - 2  # every column but the line's time and offset (the last two)
_LOSS, _OFFSET = ROW_KEYS.index("loss"), len(ROW_KEYS) - 1


def bar_line(line: bytes) -> bool:
    """Whether `line` is a progress bar's draw (tqdm's `N/M [elapsed<eta`)."""
    return _RE_BAR.search(line) is not None


def bar_of(line: bytes | bytearray, start: int = 0, end: int | None = None) -> bytes:
    """The bar's counter and elapsed time on a bar line (empty on another line)."""
    m = _RE_BAR.search(line, start, len(line) if end is None else end)
    return b"" if m is None else bytes(m.group(0))


@dataclass(frozen=True, slots=True)
class BarRow:
    """The last row a bar line gave in a file: the file's row count just after it, and what it read."""

    n: int
    values: tuple[float | None, ...]
    extras: tuple[tuple[str, float], ...]
    bar: bytes  # the bar's counter and elapsed time on its last line, this row's or a redraw's (`26/101 [06:45<`)
    end: int = -1  # where the last bar line (this row's or a redraw's) ends in the file: its newline's offset


@dataclass(frozen=True, slots=True)
class Bars:
    """The bulk rows' bars (`bar_of` each row's line; empty: no bar line) and their lines' lengths up to the
    newline (a line's end is its row's offset plus its length, wherever the block's offsets are shifted to)."""

    bar: np.ndarray
    length: np.ndarray
    drawn: np.ndarray  # per row, how many rows before it are a bar line's (one more count: the block's end)

    def any_in(self, lo: int, hi: int) -> bool:
        """Whether a row of lo:hi is a bar line's: two lookups, where comparing the part's bars cost a batch of
        1,024 files (a live tick) ~3 us a file."""
        return bool(self.drawn[hi] > self.drawn[lo])

    def ends(self, block: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Where the lines of rows lo:hi of `block` end (their newlines' offsets)."""
        return block[lo:hi, _OFFSET].astype(np.int64) + self.length[lo:hi]


def _key(row: tuple | np.ndarray, extras: dict[str, float] | None) -> tuple[tuple, tuple]:
    values = tuple(None if v != v else float(v) for v in list(row)[:_VALUES])  # NaN equals NaN here
    more = tuple(sorted((k, float(v)) for k, v in (extras or {}).items() if v == v))
    return values, more


def _counter(bar: bytes) -> bytes:
    """A bar's counter (`26/101`), its elapsed time left out."""
    return bar.partition(b"[")[0].rstrip(b" \t")


def _again(last_bar: bytes, bar: bytes, nan_loss: bool, next_line: bool) -> bool:
    """Whether a draw of equal values is the last draw's state drawn again: on the very next line, its bar moved;
    with a NaN loss (no evidence of equal values) its counter stayed."""
    return next_line and (_counter(last_bar) == _counter(bar) if nan_loss else last_bar != bar)


def redraw(
    last: BarRow | None, n_rows: int, row: tuple, extras: dict[str, float] | None, bar: bytes, start: int = -2
) -> bool:
    """Whether a bar line's row (its bar `bar`, its line at `start`) redraws the file's last row (`n_rows`: its
    rows so far)."""
    if last is None or last.n != n_rows or (last.values, last.extras) != _key(row, extras):
        return False
    loss = row[_LOSS]
    return _again(last.bar, bar, loss != loss, start == last.end + 1)


def remember(
    n_rows: int, row: tuple | np.ndarray, extras: dict[str, float] | None, bar: bytes, end: int = -1
) -> BarRow:
    """The state after a bar line's row was added (`n_rows`: the file's rows with it; `end`: its line's end)."""
    return BarRow(n_rows, *_key(row, extras), bar, end)


def block_redraws(
    part: np.ndarray,
    extras: dict[str, np.ndarray],
    bars: np.ndarray,
    ends: np.ndarray,
    last: BarRow | None,
    n_rows: int,
) -> np.ndarray:
    """Which rows of a bulk part are redraws (a mask): a bar row reading what the row before it read, that
    one a bar row on the line before, its bar moved, or with a NaN loss its counter stayed (`bars`: each
    row's bar, `ends`: where each row's line ends; the part's first row: against `last`, when the file's last
    row, `n_rows`, was it)."""
    same = np.zeros(len(part), dtype=bool)
    if len(part) > 1:
        a, b = part[1:, :_VALUES], part[:-1, :_VALUES]
        eq = ((a == b) | (np.isnan(a) & np.isnan(b))).all(axis=1)
        for col in extras.values():
            x, y = col[1:], col[:-1]
            eq &= (x == y) | (np.isnan(x) & np.isnan(y))
        next_line = part[1:, _OFFSET].astype(np.int64) == ends[:-1] + 1
        again = (bars[1:] != bars[:-1]) & next_line
        for i in np.flatnonzero(eq & np.isnan(a[:, _LOSS])).tolist():  # rare: NaN draws decided one by one
            again[i] = _again(bars[i], bars[i + 1], True, bool(next_line[i]))
        same[1:] = eq & (bars[1:] != b"") & (bars[:-1] != b"") & again
    if len(part) and bars[0]:
        first = {name: float(col[0]) for name, col in extras.items()}
        same[0] = redraw(last, n_rows, tuple(part[0].tolist()), first, bars[0], int(part[0, _OFFSET]))
    return same


def bar_rows(
    used: list, which: np.ndarray, ids: set[int], block: np.ndarray, buf: bytes | bytearray, base: int
) -> Bars | None:
    """Each bulk row's bar (`bar_of` its line; empty: no bar line) and its line's length, for the rows a template
    of a bar line (`ids`) read (`which`: each row's template in `used`; the offset column less `base` is where
    its line starts in `buf`); None when no row is a bar line's (a log without bars pays one look)."""
    mine = [i for i, t in enumerate(used) if id(t) in ids]
    if not mine:
        return None
    out = np.full(len(block), b"", dtype=object)
    length = np.zeros(len(block), dtype=np.int64)
    for i in np.flatnonzero(np.isin(which, mine)).tolist():
        start = int(block[i, -1]) - base
        nl = buf.find(b"\n", start)
        out[i], length[i] = bar_of(buf, start, nl), (nl if nl >= 0 else len(buf)) - start
    return Bars(out, length, np.concatenate([[0], np.cumsum(out != b"")]))
