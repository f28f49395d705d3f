"""A line shape's parse, reused for every line of that shape: the line's bytes with every digit masked
(`shape_key`) fix where each number of the general reader's reading is (`make_template`), so a block's lines
of a known shape are read at those byte spans instead of by the general reader again.

Why apart from core.logs.rows.general: the grammar says what a line means; this says when that meaning
carries over to another line (the same text, other digits), which the templated, bulk and live paths ask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.logs.rows.general import RE_LINE_TS, LineRead, line_time, to_float
from core.logs.tokens.lexicon import ROW_FIELDS

__all__ = ["NO_ROW", "LineTemplate", "digits_in_words", "make_template", "shape_key"]

_NAN = float("nan")
_DIGIT_MASK = bytes.maketrans(b"0123456789", b"##########")
_RE_WORD_DIGIT = re.compile(rb"(?<=[A-Za-z_])\d+|(?<=[A-Za-z_]\d)\d+")


_ROW_COLUMNS = ROW_FIELDS[:-1]  # the fixed columns a line fills (its time comes last)


@dataclass(frozen=True)
class LineTemplate:
    """One line shape's parse, reused for every line of that shape (the same bytes with other digits).

    Every decision of `read_line` depends on the line's text and where its digits are, never on their
    values, except the digits inside words (`top1`), kept in `word_digits` and checked (`applies`); so a
    line of the same masked shape gives its numbers at the same byte spans. `columns`: (column, start,
    end, scale, extra) read with `float`; `constants`: columns the text itself gives (`overflow cond:
    False`). `read_row` gives what `read_line` gives, as a row of ROW_FIELDS and the other metrics.
    """

    columns: tuple[tuple[str, int, int, float, bool], ...]
    constants: tuple[tuple[str, float], ...]
    word_digits: tuple[tuple[int, int], ...]
    keys: tuple[tuple[str, str], ...]
    row: bool = True  # False: lines of this shape carry no loss (the general reader said None)
    time_span: tuple[int, int, int, int] | None = None  # the leading stamp's date-time and fraction spans

    @property
    def n_keys(self) -> int:
        return len(self.keys)

    def applies(self, line: bytes) -> bool:
        """Whether the digits inside words are the template's (`top1` is not `top5`)."""
        return all(line[pos] == byte for pos, byte in self.word_digits)

    def read_row(self, line: bytes) -> tuple[tuple[float, ...], dict[str, float]]:
        """(ROW_FIELDS values with the line's time last, the other metrics) of a line of this shape."""
        values = dict(self.constants)
        for column, s, e, scale, _ in self.columns:
            value = to_float(line[s:e])  # a NUM of the template's line with other digits (`1.#QNAN`: NaN)
            values[column] = value * scale if scale != 1.0 else value
        row = tuple(values.pop(c, _NAN) for c in _ROW_COLUMNS)
        return (*row, line_time(line)), values


def make_template(line: bytes, read: LineRead) -> LineTemplate | None:
    """The template of a line the general reader read, or None when its parse is not a plain copy of
    its numbers (an eval line, MindYOLO's computed global step, ANSI codes, a digit-valued overflow)."""
    if read.eval or b"\x1b" in line or "loss" not in read.fields:
        return None
    columns: list[tuple[str, int, int, float, bool]] = []
    constants: list[tuple[str, float]] = []
    for column, value in (*read.fields.items(), *read.extras.items()):
        if column == "time":
            continue
        s, e = read.spans.get(column, (-1, -1))
        if column == "overflow" and not line[s:e].isdigit():  # `True`/`False`: the text says it
            constants.append((column, value))
            continue
        if column == "loss_avg" and s == e:  # `[5.5/x]`: a pair without a readable average
            constants.append((column, value))
            continue
        if s < 0 or s == e or column == "overflow":
            return None
        scale = read.scales.get(column, 1.0)
        raw = to_float(line[s:e])
        raw = raw * scale if scale != 1.0 else raw
        if not (raw == value or (raw != raw and value != value)):
            return None  # not a plain copy of its number (never happens for the shapes above)
        columns.append((column, s, e, scale, column in read.extras))
    ts = RE_LINE_TS.match(line)
    span = (*ts.span(1), *ts.span(2)) if ts else None
    return LineTemplate(tuple(columns), tuple(constants), digits_in_words(line), tuple(read.keys.items()), True, span)


# The template of every shape the general reader finds nothing in (a `loss` word in a message). Without
# digits inside words: they name columns (`top1`) and never decide whether a line gives a row
# (tests/test_logs_reader_general.py holds that), so it serves every rank's copy of a message that
# differs only there (MindSpore's `DISTRIBUTED(pid,7fa0fb3a06c0,...)` thread ids).
NO_ROW = LineTemplate((), (), (), (), row=False)


def digits_in_words(line: bytes) -> tuple[tuple[int, int], ...]:
    # torch's `[rank6]:` tag names the line's rank, not a column: every rank's lines share one template
    skip = _RE_RANK_TAG.match(line)
    return tuple(
        (m.start() + i, line[m.start() + i])
        for m in _RE_WORD_DIGIT.finditer(line, skip.end() if skip else 0)
        for i in range(m.end() - m.start())
    )


_RE_RANK_TAG = re.compile(rb"\[rank\d+\]:")


def shape_key(line: bytes) -> bytes:
    """The line with every digit as `#` (the same shape = the same text, digits aside)."""
    return line.translate(_DIGIT_MASK)
