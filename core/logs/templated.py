"""The bulk path of the general reader: lines of a shape already read become rows in numpy.

A line shape (core.logs.general.LineTemplate: the line's bytes with every digit masked) fixes where each
number is, so for every candidate line of a known shape numpy compares the masked bytes with the
template's, reads each number column at its fixed span (`decimals`, bit-identical to `float`; other
texts through numpy's correctly rounded string cast) and the line's time from its timestamp slice:
no Python per line. Lines of unknown shapes are left to the per-line reader, which learns their shape.
"""

from __future__ import annotations

import numpy as np

from core.logs.bulk import ROW_KEYS, _parse_texts, decimals
from core.logs.general import LineTemplate, line_time

__all__ = ["Shapes", "extra_names", "template_block"]

_I = {k: i for i, k in enumerate(ROW_KEYS)}
_HASH = 35  # "#"
_MAX_SHAPE = 1024  # longer lines are left to the per-line path (their byte matrix would be large)


class Shapes:
    """The templates a reader learnt, by line length, as numpy masks (built once per template)."""

    def __init__(self) -> None:
        self.by_len: dict[int, list[tuple[np.ndarray, LineTemplate]]] = {}
        self._seen: set[int] = set()

    def add(self, key: bytes, template: LineTemplate | None) -> None:
        if template is None or len(key) > _MAX_SHAPE or id(template) in self._seen:
            return
        self._seen.add(id(template))
        self.by_len.setdefault(len(key), []).append((np.frombuffer(key, dtype=np.uint8), template))

    def clear(self) -> None:
        self.by_len.clear()
        self._seen.clear()


def template_block(
    chunk: np.ndarray, starts: np.ndarray, ends: np.ndarray, shapes: Shapes, base: int, obs_time: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray], list[LineTemplate], np.ndarray]:
    """Among the lines [starts, ends) (ends: their newline), those of a known shape: (mask over
    `starts` of the lines read here, with or without a row; the indices of those with a row, their
    rows in line order, their other metrics: name -> one value per row, NaN if absent,
    the templates that took lines, and per row the index in that list of the template that read it)."""
    taken = np.zeros(len(starts), dtype=bool)
    used: list[LineTemplate] = []
    parts: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]] = []
    lengths = ends - starts
    for length, templates in shapes.by_len.items():
        sel = np.flatnonzero(lengths == length)
        if not len(sel):
            continue
        cols = np.arange(length)
        matrix = chunk[starts[sel][:, None] + cols]  # (lines, length) bytes
        masked = np.where(matrix - np.uint8(48) < 10, np.uint8(_HASH), matrix)
        free = np.ones(len(sel), dtype=bool)
        for mask, template in templates:
            hit = free & (masked == mask).all(axis=1)
            for pos, byte in template.word_digits:
                hit &= matrix[:, pos] == byte
            if not hit.any():
                continue
            free &= ~hit
            idx = sel[hit]
            taken[idx] = True
            if not template.row:  # a shape without a loss (`aux_loss_factor` in a config dump): no row
                continue
            used.append(template)
            parts.append((idx, *_rows(chunk, matrix[hit], starts[idx], template, base, obs_time)))
    if not parts:
        return taken, np.empty(0, dtype=np.int64), np.empty((0, len(ROW_KEYS))), {}, used, np.empty(0, np.int64)
    lines = np.concatenate([p[0] for p in parts])
    order = np.argsort(lines, kind="stable")
    rows = np.concatenate([p[1] for p in parts])[order]
    which = np.concatenate([np.full(len(p[0]), i, dtype=np.int64) for i, p in enumerate(parts)])[order]
    names = sorted({n for p in parts for n in p[2]})
    extras = {}
    for name in names:
        col = np.concatenate([p[2].get(name, np.full(len(p[0]), np.nan)) for p in parts])
        extras[name] = col[order]
    return taken, lines[order], rows, extras, used, which


def extra_names(template: LineTemplate) -> set[str]:
    """The other-metric columns the rows of `template` carry (what `_rows` puts in its extras)."""
    return {column for column, *_, extra in template.columns if extra} | {
        column for column, _ in template.constants if column not in _I
    }


def _rows(
    chunk: np.ndarray, matrix: np.ndarray, starts: np.ndarray, template: LineTemplate, base: int, obs_time: float
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
    table = _numbers(chunk, matrix, starts, template.columns)
    for k, (column, _, _, scale, extra) in enumerate(template.columns):
        values = table[:, k]
        if scale != 1.0:
            values = values * scale
        if extra:
            extras[column] = values
        else:
            out[:, _I[column]] = values
    out[:, _I["time"]] = _times(matrix, template, obs_time)
    out[:, _I["offset"]] = starts + base
    return out, extras


def _numbers(
    chunk: np.ndarray, matrix: np.ndarray, starts: np.ndarray, columns: tuple[tuple[str, int, int, float, bool], ...]
) -> np.ndarray:
    """`float` of every number column of the lines (n, columns), all columns in one pass: numpy's exact
    decimals, numpy's correctly rounded string cast for the rest (exponents, nan/inf)."""
    begin = np.array([c[1] for c in columns], dtype=np.int64)
    width = np.array([c[2] - c[1] for c in columns], dtype=np.int64)
    pos = (starts[:, None] + begin[None, :]).ravel()
    values, length, ok = decimals(chunk, pos)
    widths = np.broadcast_to(width, (len(starts), len(columns))).ravel()
    rest = np.flatnonzero(~(ok & (length == widths)))
    if len(rest):
        line, col = np.divmod(rest, len(columns))
        cols = begin[col][:, None] + np.arange(int(width.max()))
        texts = matrix[line[:, None], np.minimum(cols, matrix.shape[1] - 1)]
        values[rest] = _parse_texts(texts, widths[rest])
    return values.reshape(len(starts), len(columns))


def _times(matrix: np.ndarray, template: LineTemplate, obs_time: float) -> np.ndarray:
    """The lines' own time (what `line_time` gives), the observation time where they have none."""
    n = len(matrix)
    if template.time_span is None:
        return np.full(n, obs_time if obs_time == obs_time else np.nan)
    s, e, fs, fe = template.time_span
    keys = np.ascontiguousarray(matrix[:, s:e]).view(f"S{e - s}").ravel()
    uniq, inverse = np.unique(keys, return_inverse=True)
    bases = np.array([line_time(k) for k in uniq.tolist()])[inverse.ravel()]  # its cache: never disagree
    if fe > fs:
        digits = matrix[:, fs:fe].astype(np.int64) - 48
        frac = (digits * (10 ** np.arange(fe - fs - 1, -1, -1))).sum(axis=1)
        t = bases + frac / float(10 ** (fe - fs))
    else:
        t = bases + 0.0
    return np.where(np.isnan(t), obs_time, t)
