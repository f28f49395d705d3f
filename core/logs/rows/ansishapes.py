"""Loss lines with terminal codes read by a template of their shape (issue 30, the real-corpus folder's live tick).

`read_line` reads a line with terminal codes with the codes dropped (`general.without_ansi`: Ray's coloured
`(TaskRunner pid=...)` prefix before verl's step line of ~75 metrics), so a template of the line's own bytes
(core.logs.rows.linetemplates) does not hold for it, and the general reader read every copy: verl's ~3 KB step
line ~1.3 ms each, a third of the parse of a live tick of the 1,024-rank real-corpus folder.

Which codes `without_ansi` drops is told by the line's text and where its digits are, never by their values, as
every decision of the reader is (core.logs.rows.general): lines of one masked shape, codes and all, drop the same
codes and give their numbers at the same spans of what is left. So a template made of what is left reads them,
keyed by the whole line's shape (a code's digits glued to a word, `\x1b[92m08-19`, are no word's once it goes: the
digits inside words are checked in what is left). Kept apart from the parser's
templates: the bulk path matches those on a block's bytes, where these spans do not hold.
tests/test_ansi_shapes.py holds the rows equal to the general reader's.
"""

from __future__ import annotations

from core.logs.rows.filestate import FileState, bar_redraw, note_key, row_rank
from core.logs.rows.general import LineRead, without_ansi
from core.logs.rows.linetemplates import NO_ROW, LineTemplate, make_template
from core.logs.rows.redraws import bar_of

__all__ = ["AnsiShapes"]

_MAX_SHAPES = 4096  # shapes remembered (a run has a handful; a flood of others starts over)


class AnsiShapes:
    """The shapes of lines with terminal codes the general reader read: per shape (codes and all, digits masked)
    the template of what the reader reads of it; None: each read by the general reader."""

    def __init__(self) -> None:
        self._known: dict[bytes, LineTemplate | None] = {}

    def take(self, st: FileState, key: bytes, line: bytes, off: int, obs_time: float, end: int = -1) -> bool | None:
        """What `Parser.metric_line` gives `line` (shape `key`) when a shape read before decides it: True, its row
        taken as `add_read` takes the general reader's; False, no row; None: the general reader reads it."""
        template = self._known.get(key) if b"\x1b" in line else None
        if template is None or not template.applies(text := without_ansi(line)):
            return None
        if not template.row:
            return False
        row, extras = template.read_row(text)
        for column, name in template.keys:
            note_key(st.metric_keys, column, name)
        rank, bar, t = row_rank(st, line), bar_of(line), row[-1]
        row = (*row[:-1], t if t == t else obs_time, off)
        if not (bar and bar_redraw(st, row, extras, bar, end)):
            st.rows.append(row, extras, rank)
        return True

    def learn(self, key: bytes, line: bytes, read: LineRead | None) -> None:
        """Remember the shape `key` of `line` (with terminal codes) the general reader read as `read` (None: no
        reading); a shape whose reading is no plain copy of its numbers (an evaluation, several rows) stays None."""
        if b"\x1b" not in line or key in self._known:
            return
        if len(self._known) >= _MAX_SHAPES:
            self._known.clear()
        self._known[key] = NO_ROW if read is None else make_template(without_ansi(line), read)
