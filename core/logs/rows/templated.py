"""The bulk path of the general reader: lines of a shape already read become rows in numpy.

A line shape (core.logs.rows.general.LineTemplate: the line's bytes with every digit masked) fixes where each
number is, so for every candidate line a compiled pass (core.logs.tokens.linescan) finds the first known shape it
has, another reads each number column at its fixed span (bit-identical to `float`; other texts through
numpy's correctly rounded string cast), and numpy takes the line's time from its timestamp slice: no
Python per line. Lines of unknown shapes are left to the per-line reader, which learns their shape.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from core.logs.rows.general import LineTemplate, line_time
from core.logs.rows.linekinds import WORTH
from core.logs.tokens.bulk import ROW_KEYS, _parse_texts

__all__ = ["Shapes", "compiled_passes", "extra_names", "template_block"]

_I = {k: i for i, k in enumerate(ROW_KEYS)}
_MAX_SHAPE = 1024  # longer lines are left to the per-line path


def compiled_passes() -> ModuleType:
    """core.logs.tokens.linescan, imported on the first big block: its numba import (~0.3 s) and cached-code
    load (~0.2 s) are paid only by a read that gains from them, never by a live tick or a small read."""
    from core.logs.tokens import linescan

    return linescan


class Shapes:
    """The templates a reader learnt, in the order it learnt them, packed for the compiled match
    (core.logs.tokens.linescan.match_shapes): the masks end to end, their lengths and offsets, the digits
    inside words. Packed again only after a template is added."""

    def __init__(self) -> None:
        self.templates: list[LineTemplate] = []
        self._keys: list[bytes] = []
        self._seen: set[bytes] = set()  # by shape: one template object (general.NO_ROW) serves many
        self._packed: tuple[np.ndarray, ...] | None = None
        self._worth: list[bool] = []  # per template: its lines may hold a failure's part (linekinds.WORTH)

    def __bool__(self) -> bool:
        return bool(self.templates)

    def add(self, key: bytes, template: LineTemplate | None) -> None:
        if template is None or len(key) > _MAX_SHAPE or key in self._seen:
            return
        self._seen.add(key)
        self.templates.append(template)
        self._keys.append(key)
        self._worth.append(WORTH.shape_holds(key))
        self._packed = None

    def clear(self) -> None:
        self.templates.clear()
        self._keys.clear()
        self._seen.clear()
        self._worth.clear()
        self._packed = None

    @property
    def worth(self) -> np.ndarray:
        """Per template, whether a line of its shape may hold a part worth reading (an error, a failure)."""
        return np.array(self._worth, dtype=bool)

    def in_length_order(self, indices: list[int]) -> list[int]:
        """`indices` grouped by line length in the order lengths were first learnt, then in the order
        learnt: the order the templates' metric keys have always been recorded in (the first wins)."""
        first: dict[int, int] = {}
        for key in self._keys:
            first.setdefault(len(key), len(first))
        return sorted(indices, key=lambda t: (first[len(self._keys[t])], t))

    def packed(self) -> tuple[np.ndarray, ...]:
        """(lengths, offsets, masks, masks as words, digit_from, digit_pos, digit_byte) for `match_shapes`:
        each mask starts at a multiple of 8 bytes, so it is compared a word at a time."""
        if self._packed is None:
            lengths = np.array([len(k) for k in self._keys], dtype=np.int64)
            padded = (lengths + 7) // 8 * 8
            offsets = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
            masks = np.zeros(int(padded.sum()) + 8, dtype=np.uint8)
            for key, at in zip(self._keys, offsets.tolist(), strict=True):
                masks[at : at + len(key)] = np.frombuffer(key, dtype=np.uint8)
            digits = [t.word_digits for t in self.templates]
            digit_from = np.concatenate([[0], np.cumsum([len(d) for d in digits])]).astype(np.int64)
            flat = [pair for d in digits for pair in d]
            digit_pos = np.array([q for q, _ in flat], dtype=np.int64)
            digit_byte = np.array([b for _, b in flat], dtype=np.uint8)
            self._packed = (lengths, offsets, masks, masks.view(np.uint64), digit_from, digit_pos, digit_byte)
        return self._packed


def template_block(
    chunk: np.ndarray, starts: np.ndarray, ends: np.ndarray, shapes: Shapes, base: int, obs_time: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray], list[LineTemplate], np.ndarray]:
    """Among the lines [starts, ends) (ends: their newline), those of a known shape: (per line the index of
    its shape in `shapes`, -1 for none: the lines read here, with or without a row; the indices of those
    with a row, their rows in line order, their other metrics: name -> one value per row, NaN if absent,
    the templates that took lines, and per row the index in that list of the template that read it)."""
    passes = compiled_passes()
    which_shape = passes.match_shapes(chunk, passes.words_of(chunk), starts, ends, *shapes.packed())
    taken = which_shape >= 0
    used: list[LineTemplate] = []
    parts: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]] = []
    for t in shapes.in_length_order(np.unique(which_shape[taken]).tolist()):
        template = shapes.templates[t]
        if not template.row:  # a shape without a loss (`aux_loss_factor` in a config dump): no row
            continue
        idx = np.flatnonzero(which_shape == t)
        used.append(template)
        parts.append((idx, *_rows(chunk, starts[idx], template, base, obs_time)))
    if not parts:
        return which_shape, np.empty(0, np.int64), np.empty((0, len(ROW_KEYS))), {}, used, np.empty(0, np.int64)
    lines = np.concatenate([p[0] for p in parts])
    order = np.argsort(lines, kind="stable")
    rows = np.concatenate([p[1] for p in parts])[order]
    which = np.concatenate([np.full(len(p[0]), i, dtype=np.int64) for i, p in enumerate(parts)])[order]
    names = sorted({n for p in parts for n in p[2]})
    extras = {}
    for name in names:
        col = np.concatenate([p[2].get(name, np.full(len(p[0]), np.nan)) for p in parts])
        extras[name] = col[order]
    return which_shape, lines[order], rows, extras, used, which


def extra_names(template: LineTemplate) -> set[str]:
    """The other-metric columns the rows of `template` carry (what `_rows` puts in its extras)."""
    return {column for column, *_, extra in template.columns if extra} | {
        column for column, _ in template.constants if column not in _I
    }


def _rows(
    chunk: np.ndarray, starts: np.ndarray, template: LineTemplate, base: int, obs_time: float
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The rows of lines of one template (ROW_KEYS columns) and their other metrics."""
    n = len(starts)
    out = np.full((n, len(ROW_KEYS)), np.nan)
    extras: dict[str, np.ndarray] = {}
    for column, value in template.constants:
        if column in _I:
            out[:, _I[column]] = value
        else:
            extras[column] = np.full(n, value)
    table = _numbers(chunk, starts, template.columns)
    for k, (column, _, _, scale, extra) in enumerate(template.columns):
        values = table[:, k]
        if scale != 1.0:
            values = values * scale
        if extra:
            extras[column] = values
        else:
            out[:, _I[column]] = values
    out[:, _I["time"]] = _times(chunk, starts, template, obs_time)
    out[:, _I["offset"]] = starts + base
    return out, extras


def _numbers(
    chunk: np.ndarray, starts: np.ndarray, columns: tuple[tuple[str, int, int, float, bool], ...]
) -> np.ndarray:
    """`float` of every number column of the lines (n, columns), all columns in one compiled pass
    (exact where one IEEE operation is), numpy's correctly rounded string cast for the rest
    (17-digit mantissas, nan/inf)."""
    begin = np.array([c[1] for c in columns], dtype=np.int64)
    width = np.array([c[2] - c[1] for c in columns], dtype=np.int64)
    pos = (starts[:, None] + begin[None, :]).ravel()
    widths = np.ascontiguousarray(np.broadcast_to(width, (len(starts), len(columns)))).ravel()
    values = np.empty(len(pos))
    ok = compiled_passes().fixed_numbers(chunk, pos, widths, values)
    rest = np.flatnonzero(~ok)
    if len(rest):
        texts = chunk[np.minimum(pos[rest][:, None] + np.arange(int(widths[rest].max())), len(chunk) - 1)]
        values[rest] = _parse_texts(texts, widths[rest])
    return values.reshape(len(starts), len(columns))


def _times(chunk: np.ndarray, starts: np.ndarray, template: LineTemplate, obs_time: float) -> np.ndarray:
    """The lines' own time (what `line_time` gives), the observation time where they have none.

    `line_time` is asked twice an hour, not once a line: within an hour whose start and end are 3,599 s apart
    (no change of UTC offset) a second is the hour's start plus MM:SS. Other hours (a DST change, an invalid
    date) and seconds past 59 ask it for each line, so the two never disagree. A long log has a distinct
    second for nearly every line: asking for each cost a 1,024 x 2,000 read a third of its time."""
    n = len(starts)
    if template.time_span is None:
        return np.full(n, obs_time if obs_time == obs_time else np.nan)
    s, e, fs, fe = template.time_span
    hours, seconds, fracs = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    compiled_passes().stamp_parts(chunk, starts, s, fs, fe, hours, seconds, fracs)
    first, hour_of = _runs(hours)  # a log's stamps go up: its hours are runs (out of order only makes more)
    if len(first) > 64:  # stamps far out of order: sort the hours
        first, hour_of = np.unique(hours, return_index=True, return_inverse=True)[1:]
    hour_start = np.full(len(first), np.nan)
    for j, i in enumerate(first.tolist()):
        text = bytes(chunk[starts[i] + s : starts[i] + s + 14])  # `YYYY-mm-dd HH:`
        start, end = line_time(text + b"00:00"), line_time(text + b"59:59")
        if end - start == 3599.0:
            hour_start[j] = start
    t = hour_start[hour_of.ravel()] + seconds
    for i in np.flatnonzero(np.isnan(t) | (seconds < 0)).tolist():
        t[i] = line_time(bytes(chunk[starts[i] + s : starts[i] + e]))
    if fe > fs:
        t += fracs / float(10 ** (fe - fs))
    return np.where(np.isnan(t), obs_time, t)


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first index of each run of equal keys, and each key's run."""
    change = np.empty(len(keys), dtype=bool)
    change[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=change[1:])
    return np.flatnonzero(change), np.cumsum(change) - 1
