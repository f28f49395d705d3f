"""Evaluation lines of a shape read before, read by their template (issue 30, the real-corpus folder).

An evaluation line (`{'eval_loss': 0.41, 'eval_accuracy': 0.92, ...}`, DETR's `Test:  [162/163] ... loss: 3.10
(3.78)`, Megatron's ` validation loss at iteration 100 | lm loss value: ...`) gives no row, so it has no row
template (core.logs.rows.linetemplates.make_template) and the general reader read every copy of it: on the 1,024-rank
folder built from the real corpus, ~800 lines of each live tick, a third of its parse. The reader's decisions
depend on a line's text and where its digits are, never on their values, but for the digits inside words
(`LineTemplate.applies`): a line of the same masked shape gives its scalars at the same spans, so the entries
`add_read` makes of it are read there, in the same order. tests/test_logs_evalshapes.py holds them equal.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.logs.rows.filestate import NOT_EVAL_VALUES, FileState, row_rank
from core.logs.rows.general import LineRead, line_time, to_float
from core.logs.rows.lineranks import line_rank
from core.logs.rows.linetemplates import digits_in_words

__all__ = ["EvalShapes", "EvalTemplate", "make_eval_template", "may_name_rank"]

_NAN = float("nan")
_MAX_SHAPES = 4096  # evaluation shapes remembered (a run has a handful; a flood of others resets it)


@dataclass(frozen=True)
class EvalTemplate:
    """One evaluation line shape: (name, start, end, scale) of each scalar in the order `add_read` makes
    entries of them (a span of (-1, -1): the constant `value`), the epoch and step likewise (None: the line
    gives none), the digits inside words the shape keeps, whether its lines are one-off summaries
    (core.logs.rows.series: told by the line's words and where its digits are, so by its shape) and whether
    they may name a rank (`may_name_rank`: else the file's rank, no search)."""

    scalars: tuple[tuple[str, int, int, float, float], ...]
    epoch: tuple[int, int, float, float] | None
    step: tuple[int, int, float, float] | None
    word_digits: tuple[tuple[int, int], ...]
    summary: bool = False
    names_rank: bool = True

    def applies(self, line: bytes) -> bool:
        """Whether the digits inside words are the template's (`top1` is not `top5`)."""
        return all(line[pos] == byte for pos, byte in self.word_digits)

    def entries(self, line: bytes) -> tuple[float, float, list[tuple[str, float]]]:
        """(epoch, step, [(name, value)]) of a line of this shape, as `read_line` reads it."""
        epoch = _NAN if self.epoch is None else _value(line, *self.epoch)
        step = _NAN if self.step is None else _value(line, *self.step)
        return epoch, step, [(name, _value(line, s, e, scale, const)) for name, s, e, scale, const in self.scalars]


def _value(line: bytes, s: int, e: int, scale: float, const: float) -> float:
    if s < 0:
        return const
    value = to_float(line[s:e])  # as the general reader reads it
    return value * scale if scale != 1.0 else value


def make_eval_template(line: bytes, read: LineRead) -> EvalTemplate | None:
    """The template of an evaluation line the general reader read, or None when a scalar is not a plain copy
    of its number at its span (MindYOLO's computed global step, a `True`/`False` flag) or the line holds
    ANSI codes."""
    if not read.eval or b"\x1b" in line:
        return None
    spans: dict[str, tuple[int, int, float, float]] = {}
    for column, value in (*read.fields.items(), *read.extras.items()):
        if column == "time":
            continue
        s, e = read.spans.get(column, (-1, -1))
        if column == "loss_avg" and s == e:  # `[5.5/x]`: a pair without a readable average
            spans[column] = (-1, -1, 1.0, value)
            continue
        scale = read.scales.get(column, 1.0)
        if s < 0 or s == e:
            return None
        raw = to_float(line[s:e])
        raw = raw * scale if scale != 1.0 else raw
        if not (raw == value or (raw != raw and value != value)):
            return None
        spans[column] = (s, e, scale, _NAN)
    names = [c for c in (*read.fields, *read.extras) if c not in NOT_EVAL_VALUES]
    return EvalTemplate(
        tuple((name, *spans[name]) for name in names),  # (name, start, end, scale, constant)
        spans.get("epoch"),
        spans.get("step"),
        digits_in_words(line),
        read.summary,
        may_name_rank(line),
    )


def may_name_rank(line: bytes) -> bool:
    """Whether lines of `line`'s shape may name a rank (core.logs.rows.lineranks.line_rank): `line` names one, or
    it holds icefall's `] (` (its `(rank/world)` names a rank only when rank < world). Every other pattern there
    is told by a line's words and where its digits are, never by their values: a shape names one for every line
    or for none (the row templates' `ranked` rests on the same)."""
    return b"] (" in line or line_rank(line) is not None


class EvalShapes:
    """The evaluation line shapes one reader learnt (beside its row templates, never in its bulk shapes: a
    line of these still reaches `Parser.metric_line`)."""

    def __init__(self) -> None:
        self._templates: dict[bytes, EvalTemplate | None] = {}

    def learn(self, key: bytes, line: bytes, read: LineRead | None) -> None:
        """Remember the shape `key` of `line` when the general reader read it as an evaluation line."""
        if read is None or not read.eval or key in self._templates:
            return  # (a one-off summary too, its flag kept: a live tick of the corpus folder met ~70, ~85 us each)
        if len(self._templates) >= _MAX_SHAPES:
            self._templates.clear()
        self._templates[key] = make_eval_template(line, read)

    def take(self, st: FileState, key: bytes, line: bytes, off: int, obs_time: float) -> bool:
        """The entries of `line` into `st.evals` when its shape is a known evaluation shape: True then."""
        template = self._templates.get(key)
        if template is None or not template.applies(line):
            return False
        epoch, step, scalars = template.entries(line)
        t = line_time(line)
        t = t if t == t else obs_time
        rank = row_rank(st, line) if template.names_rank else None  # (~2 us a line: 680 a corpus tick)
        flag = template.summary
        st.evals.extend((epoch, step, name, value, t, off, rank, flag) for name, value in scalars)
        return True
