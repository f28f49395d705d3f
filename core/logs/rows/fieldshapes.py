"""Metrics in field shapes the general line reader's `key: value` pair (core.logs.rows.general) does not read, for
it (general.py is at the module-length bound). Each is a whole field between the line's field separators, told by
its shape, never its digits (the bulk path reuses one parse per line shape):

- a value before its unit, the unit naming it (core.logs.rows.unitfirst: `(0.512 sec/step)`);
- a `name, value` field between semicolons (a ReID trainer's `Time: ...; Epoch: 69; LR, 2.9999999999999997e-05;
  pid_loss: nan; ...`: its other fields have `: `, the learning rate a comma);
- words, then a value and its unit in parentheses, a field between commas (PaddlePaddle prednet's `Epoch 0, Step 25,
  total used time 7.178124904632568 (s), avg loss so far is 0.10979227721691132`): the words name it;
- a counter's number before its name, a field ending at a comma, maybe with one word after the name (HAKE-Action's
  `000 epoch, 06000 iter, average time 0.6607, loss nan` rows and their epoch's `000 epoch training, L_rec=nan, ...,
  loss=nan` summary): the row's epoch and step, as `epoch 0, iter 6000` would be (`COUNTER_NAME`, a part of
  core.logs.rows.general's pattern for a counter's name and number); a number before a name anywhere else (`100
  epochs in total`) is prose.
"""

from __future__ import annotations

import re

from core.logs.rows.unitfirst import unit_first
from core.logs.tokens.lexicon import NUM

__all__ = ["COUNTER_NAME", "other_fields"]

_NAME = rb"[A-Za-z][A-Za-z0-9_]*"
COUNTER_NAME = (
    rb"(?=[\desib])(?=(?:\d+[ \t]+(?=\w+(?:[ \t]+[a-z]+)?,))?(epoch|step|iteration|iter|batch)\b)(?:\1[ \t]+#?)?"
)
"""A counter's name before its number (consumed: `epoch 3`, `Step #1`), or after it, ending a field (looked ahead
at, the number next: `000 epoch,`): the pattern's first group, the name, which the number's group then follows. Its
first character is looked at first (the pattern is case-blind): the look-ahead at every word's start cost 25,792
corpus loss lines 69 -> 110 ms CPU in `finditer`, with the look 88."""
_RE_COMMA_FIELD = re.compile(rb"(?:^|;)[ \t]*(" + _NAME + rb")[ \t]*,[ \t]*(" + NUM + rb")[ \t]*(?=;)")
_RE_UNIT_AFTER = re.compile(
    rb"(?:^|[,;])[ \t]*(" + _NAME + rb"(?:[ \t]+" + _NAME + rb"){0,4})[ \t]+(" + NUM + rb")[ \t]*"
    rb"\((?:s|sec|secs|seconds)\)[ \t]*(?=[,;]|$)"
)


def other_fields(line: bytes) -> list[tuple[bytes, tuple[int, int], float]]:
    """(the name, the span of its number, its scale) of each field of `line` in a shape above (`unit_first`'s
    first). Two byte searches decide for most lines that none is there."""
    out = unit_first(line)
    if b";" in line:
        out += [(m.group(1), m.span(2), 1.0) for m in _RE_COMMA_FIELD.finditer(line)]
    if b"(s" in line:
        out += [(m.group(1), m.span(2), 1.0) for m in _RE_UNIT_AFTER.finditer(line)]
    return out
