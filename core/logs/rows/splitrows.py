"""Several rows on one line: a line that holds its counter `Epoch #N` (or `Step #N`, `Iter #N`) twice or more is
that many rows, each read from its counter to the next (issue 30); the line's start before its first counter is a
part of its own.

Why: a log pasted into an e-mail reply and re-wrapped puts parts of two or three epochs on one line (tensorflow#26543,
a tf.keras custom loop's `Epoch #1 Loss: 0.549081 Accuracy: 0.718750 Epoch #2 Loss: 0.430481`); the general reader
gives a line one row (core.logs.rows.general), so every second epoch was lost. The counter with its number sign
(`Epoch #N`) repeated on the line decides, never the numbers' values; a line with it once is read whole, as before.
Each part is read by the general reader; the parts' rows take the line's start as their offset and its time. Their
spans are not the line's, so no bulk template is made of such a line (core.logs.rows.linetemplates.make_template):
every path reads it here, line by line (core.logs.rows.formats.read_loss, then filestate.add_read).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from itertools import pairwise

from core.logs.rows.general import LineRead, line_time

__all__ = ["SplitRead", "split_read"]

_RE_COUNTER = re.compile(rb"(?i)(?<![\w#])(epoch|step|iteration|iter)[ \t]*#[ \t]*\d+(?![\d.])")


@dataclass
class SplitRead(LineRead):
    """The first row a line of several gives (as its fields), and the rows after it, in line order (`more`)."""

    more: tuple[LineRead, ...] = ()


def split_read(line: bytes, read: Callable[[bytes], LineRead | None]) -> SplitRead | None:
    """The rows of a line holding one counter `Word #N` twice or more (`read` reads each part); None when it holds
    it fewer times or no part reads as a row or an evaluation."""
    found = list(_RE_COUNTER.finditer(line))
    if len(found) < 2 or len({m.group(1).lower() for m in found}) != 1:
        return None
    cuts = [0, *(m.start() for m in found), len(line)]  # (what comes before the first counter: a prefix, or the
    # wrapped tail of a row before, `Accuracy: 0.822917 Epoch #3 ...`, a part of its own)
    reads = [r for r in (read(line[a:b]) for a, b in pairwise(cuts) if b > a) if r is not None]
    if not reads:
        return None
    time = line_time(line)  # (the line's stamp, before its first part)
    for r in reads:
        r.spans = dict.fromkeys(r.spans, (-1, -1))  # a part's spans are not the line's: no template of it
        r.fields["time"] = time
    first = reads[0]
    return SplitRead(**{f.name: getattr(first, f.name) for f in fields(LineRead)}, more=tuple(reads[1:]))
