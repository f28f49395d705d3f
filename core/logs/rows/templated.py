"""The bulk path of the general reader: lines of a shape already read become rows in numpy.

A line shape (core.logs.rows.linetemplates.LineTemplate: the line's bytes with every digit masked) fixes where each
number is, so for every candidate line a compiled pass (core.logs.tokens.linescan) finds the first known shape it
has, another reads each number column at its fixed span (bit-identical to `float`; other texts through
numpy's correctly rounded string cast), and numpy takes the line's time from its timestamp slice: no
Python per line. Lines of unknown shapes are left to the per-line reader, which learns their shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType

import numpy as np

from core.logs.rows.columns import header_shape
from core.logs.rows.failure_kinds import FAILURE_KINDS, LAUNCHER_REPORTS
from core.logs.rows.formats import is_chatter, read_loss
from core.logs.rows.general import LineRead, line_time, reads_nothing
from core.logs.rows.linekinds import WORTH, holds_keyword, reaches_metric_line
from core.logs.rows.lineranks import line_rank
from core.logs.rows.linetemplates import NO_ROW, LineTemplate, make_template, shape_key
from core.logs.rows.redraws import bar_line
from core.logs.tokens.bulk import ROW_KEYS, _parse_texts
from core.logs.tokens.plain import WorthScan

__all__ = [
    "Shapes",
    "aligned_masks",
    "compiled_passes",
    "extra_names",
    "learn_shape",
    "line_ends",
    "merged_extras",
    "quiet_lines",
    "template_block",
]

_I = {k: i for i, k in enumerate(ROW_KEYS)}
_MAX_SHAPE = 1024  # longer lines are left to the per-line path
# Every literal a line that `reaches_metric_line` turns away may hold behind a `[`: `WORTH`'s (an error prefix, a
# traceback, an exception, a failure kind's or launcher report's anchor, a frame) and the chatter-level kinds' and
# reports' anchors (`fatal_reason` reads a chatter line by its own signatures). A line that starts with `[` and holds
# none of them is handed to `metric_line` (`reaches_metric_line` ends on `[`): `quiet_lines` need not ask it.
_TURNED_AWAY = WorthScan(
    (
        *WORTH.literals,
        *(a for kind in FAILURE_KINDS if kind.chatter for a in kind.anchors),
        *(a for report in LAUNCHER_REPORTS if report.chatter for a in report.anchors),
    )
)


def compiled_passes() -> ModuleType:
    """core.logs.tokens.linescan, imported on the first big block: its numba import (~0.3 s) and cached-code
    load (~0.2 s) are paid only by a read that gains from them, never by a live tick or a small read."""
    from core.logs.tokens import linescan

    return linescan


def line_ends(chunk: np.ndarray, newlines: np.ndarray | None, starts: np.ndarray) -> np.ndarray:
    """Where each line at `starts` (ascending) ends: its newline in `chunk` (`newlines`, the block's, found
    again when None). A compiled-size block's: one walk of both arrays (core.logs.tokens.sortedsearch), not a
    binary search per line (~0.3 ms an 8 MB batch)."""
    from core.logs.tokens.sortedsearch import searchsorted

    nl = np.flatnonzero(chunk == 10) if newlines is None else newlines
    return nl[searchsorted(nl, starts)]


class Shapes:
    """The templates a reader learnt, in the order it learnt them, packed for the compiled match
    (core.logs.tokens.linescan.match_shapes): the masks end to end, their lengths and offsets, the digits
    inside words. Packed again only after a template is added."""

    def __init__(self) -> None:
        self.templates: list[LineTemplate] = []
        self._keys: list[bytes] = []
        self._seen: set[bytes] = set()  # by shape: one template object (linetemplates.NO_ROW) serves many
        self._first_of_length: dict[int, int] = {}  # line length -> the rank of its first template
        self._packed: tuple[np.ndarray, ...] | None = None
        self._worth: list[bool] = []  # per template: its lines may hold a failure's part (linekinds.WORTH)

    def __bool__(self) -> bool:
        return bool(self.templates)

    def add(self, key: bytes, template: LineTemplate | None) -> None:
        if template is None or len(key) > _MAX_SHAPE or key in self._seen:
            return
        self._seen.add(key)
        self._first_of_length.setdefault(len(key), len(self._first_of_length))
        self.templates.append(template)
        self._keys.append(key)
        self._worth.append(WORTH.shape_holds(key) or header_shape(key))  # (a header's lines: rows.columns)
        self._packed = None

    def clear(self) -> None:
        self.templates.clear()
        self._keys.clear()
        self._seen.clear()
        self._first_of_length.clear()
        self._worth.clear()
        self._packed = None

    @property
    def worth(self) -> np.ndarray:
        """Per template, whether a line of its shape may hold a part worth reading (an error, a failure)."""
        return np.array(self._worth, dtype=bool)

    def in_length_order(self, indices: list[int]) -> list[int]:
        """`indices` grouped by line length in the order lengths were first learnt, then in the order
        learnt: the order the templates' metric keys have always been recorded in (the first wins)."""
        first = self._first_of_length  # (kept as templates are added: recounted per call, it cost a long read 0.2 s)
        return sorted(indices, key=lambda t: (first[len(self._keys[t])], t))

    def packed(self) -> tuple[np.ndarray, ...]:
        """(lengths, offsets, masks, digit_from, digit_pos, digit_byte, by_length, length_from, at_from, at_mask,
        at_care) for `match_shapes`: the masks end to end (each from a multiple of 8 bytes); the templates of length
        n are by_length[length_from[n]:length_from[n + 1]]; and each mask as the words a line of its length
        starting at byte r of a word spans (`aligned_masks`), so a line is compared a whole word at a time."""
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
            by_length = np.argsort(lengths, kind="stable")  # per length, in the order learnt
            span = np.arange(int(lengths.max(initial=0)) + 2)
            length_from = np.searchsorted(lengths[by_length], span).astype(np.int64)
            self._packed = (
                *(lengths, offsets, masks, digit_from, digit_pos, digit_byte),
                *(by_length.astype(np.int64), length_from, *aligned_masks(self._keys)),
            )
        return self._packed


def aligned_masks(keys: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(at_from, at_mask, at_care): shape `keys[t]` as the words a line starting at byte r of a word spans
    (`r` bytes before it, the rest of its last word after it) is at_mask[at_from[8 t + r]:at_from[8 t + r + 1]],
    its bytes 0 in those places, and at_care the same words with 0xFF at its bytes, 0 elsewhere.

    Why: the compiled match loaded each eight bytes of a line from two words (a line starts anywhere) and
    compared its last bytes one by one; against the mask shifted to the line's own start, each word of the
    line is loaded once, whole (a MindCV log's loss lines: ~16 words each)."""
    mask_parts: list[bytes] = []
    care_parts: list[bytes] = []
    words = [0]
    for key in keys:
        n = len(key)
        for r in range(8):
            w = (r + n + 7) // 8
            after = 8 * w - r - n
            mask_parts.append(bytes(r) + key + bytes(after))
            care_parts.append(bytes(r) + b"\xff" * n + bytes(after))
            words.append(words[-1] + w)
    # (never empty; copies: a read-only array is another type to the compiled match, compiled again)
    at_mask = np.frombuffer(b"".join(mask_parts) + bytes(8), dtype=np.uint64).copy()
    at_care = np.frombuffer(b"".join(care_parts) + bytes(8), dtype=np.uint64).copy()
    return np.array(words, dtype=np.int64), at_mask, at_care


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
    # the metric columns in the order the lines name them (as the per-line path adds them): each template's
    # lines all name its metrics, so a part's first line is where its names first appear
    names = list(dict.fromkeys(n for p in sorted(parts, key=lambda p: int(p[0][0])) for n in p[2]))
    extras = merged_extras([len(p[0]) for p in parts], [p[2] for p in parts], names, order)
    return which_shape, lines[order], rows, extras, used, which


def merged_extras(
    lengths: list[int], part_extras: list[dict[str, np.ndarray]], names: list[str], order: np.ndarray
) -> dict[str, np.ndarray]:
    """Per name of `names` (in that order), the parts' values of it joined along the parts (`lengths` rows each,
    NaN in a part that does not name it), then taken in `order`: what concatenating each name's pieces, a NaN
    block for each part without it, gives. A batch's ~70 templates and ~80 names (a tick of 1,024 real logs)
    made ~5,400 NaN blocks that way; here a name named by some parts only is one NaN column written at each
    naming part's rows."""
    at = np.cumsum([0, *lengths]).tolist()
    pieces: dict[str, list[tuple[int, np.ndarray]]] = {}
    for first, extras in zip(at, part_extras, strict=False):
        for name, values in extras.items():
            pieces.setdefault(name, []).append((first, values))
    out = {}
    for name in names:
        got = pieces[name]
        if len(got) == len(lengths):  # every part names it: its pieces as they are (their own dtype)
            col = np.concatenate([values for _, values in got])
        else:
            col = np.full(at[-1], np.nan)
            for first, values in got:
                col[first : first + len(values)] = values
        out[name] = col[order]
    return out


def quiet_lines(
    buf: bytes | bytearray,
    starts: np.ndarray,
    ends: np.ndarray,
    shape_of: np.ndarray,
    words: np.ndarray | None,
    frames: Callable[[], bool],
    learn: Callable[[bytes, bytes], object],
) -> np.ndarray:
    """Per line [starts, ends): of no known shape (`shape_of` -1), holding a keyword (its start in `words`),
    and read by `Parser._line` to nothing: it reaches `_metric_line` (`reaches_metric_line`), which reads no
    row and no eval entry in it (MindSpore's chatter, `reads_nothing`), and it holds no failure's part
    (`WORTH.holds`), so `_fatal` finds nothing either. Each shape met twice (but MindSpore's chatter, whose
    pids and thread ids are its rank's) is learnt as `_line` would (`learn(shape, line)`: a shape without a
    row), so its later lines are matched in bulk.

    Why: a keyword inside a word (`Event value fd: 12`, `... is invalid`) makes a noise line a candidate,
    and real noise lines carry their own thread ids and numbers, so nearly each is a shape of its own:
    learnt from samples of 16, a full match again after each, then one by one, they cost a 1,024-rank
    read more than grep's whole pass. `frames`: an indented line may be a traceback's frame."""
    quiet = np.zeros(len(starts), dtype=bool)
    look = np.flatnonzero(shape_of < 0)
    look = look[np.isin(starts[look], words if words is not None else [], assume_unique=True)]
    shapes: dict[bytes, list[bytes]] = {}
    found = np.zeros(len(look), dtype=bool)
    ls, le = starts[look], ends[look]
    # (a `[` line holding none of these reaches `metric_line`: the per-line dispatch is asked of the rest only)
    ask = _TURNED_AWAY.holds(buf, ls, le, True) if len(look) else found
    for i, (s, e, asked) in enumerate(zip(ls.tolist(), le.tolist(), ask.tolist(), strict=True)):
        line = bytes(buf[s:e]).removesuffix(b"\r")
        chatter = is_chatter(line)
        if not (chatter or reads_nothing(line)):
            continue
        if (asked or line[:1] != b"[") and not reaches_metric_line(line, line.startswith((b" ", b"\t")) and frames()):
            continue
        found[i] = True
        if not chatter:  # chatter carries its rank's pid and thread ids: its shapes seldom come back
            shapes.setdefault(shape_key(line), []).append(line)
    quiet[look[found & ~ask]] = True  # (WORTH's literals are among those asked for)
    look = look[found & ask]
    if len(look):
        quiet[look[~WORTH.holds(buf, starts[look], ends[look], True)]] = True
    for key, lines in shapes.items():
        if len(lines) > 1 and not WORTH.shape_holds(key):
            learn(key, lines[0])
    return quiet


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
    (exact where one IEEE operation is: core.logs.tokens.numscan.column_numbers), numpy's correctly rounded
    string cast for the rest (17-digit mantissas, nan/inf)."""
    begin = np.array([c[1] for c in columns], dtype=np.int64)
    width = np.array([c[2] - c[1] for c in columns], dtype=np.int64)
    values = np.empty((len(starts), len(columns)))
    ok = compiled_passes().column_numbers(chunk, starts, begin, width, values)
    rest = np.flatnonzero(~ok)
    if len(rest):  # (in the flat order: line by line, its columns in turn)
        pos, widths = starts[rest // len(columns)] + begin[rest % len(columns)], width[rest % len(columns)]
        texts = chunk[np.minimum(pos[:, None] + np.arange(int(widths.max())), len(chunk) - 1)]
        values.ravel()[rest] = _parse_texts(texts, widths)
    return values


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


def learn_sample(
    buf: bytes | bytearray,
    starts: np.ndarray,
    ends: np.ndarray,
    frames: Callable[[], bool],
    rng: np.random.Generator,
    known: Mapping[bytes, object],
    learn: Callable[[bytes, bytes, LineRead | None], LineTemplate | None],
    sample: int = 16,
) -> bool:
    """Learn the shapes of a few of these lines (drawn at random by `rng`: an even spread can fall in step
    with a log's own period), as reading them one by one would, without reading them: a block of lines of
    new shapes (the first batch of a run) is then read in bulk instead of one line at a time. True when a
    shape was learnt (one without a row takes its lines too). `frames`: an indented line may be a
    traceback's frame; `known`: the shapes learnt before; `learn`: the parser's (key, line, reading)."""
    learnt = False
    picks = rng.choice(len(starts), size=min(sample, len(starts)), replace=False)
    for i in np.sort(picks).tolist():
        line = bytes(buf[int(starts[i]) : int(ends[i])]).removesuffix(b"\r")
        low = line.lower()
        key = shape_key(line)
        if not holds_keyword(low) or key in known or b"\x1b" in line:
            continue
        indented = line.startswith((b" ", b"\t"))
        if not reaches_metric_line(line, indented and frames()):  # an error, traceback or timing line is never one
            continue
        learnt |= learn(key, line, read_loss(line)) is not None
    return learnt


_MAX_TEMPLATES = 4096  # line shapes remembered per reader (a run has a handful; a flood of others resets it)


def learn_shape(
    key: bytes,
    line: bytes,
    read: LineRead | None,
    templates: dict[bytes, LineTemplate | None],
    shapes: Shapes,
    ranked: dict[int, tuple[int, int] | None],
    bars: set[int],
) -> LineTemplate | None:
    """Remember the shape of `line` (read as `read`: None when it gives no row) in the parser's `templates`, its
    `shapes` for the bulk match, `ranked` (templates whose line names a rank -> where) and `bars` (templates of a
    progress bar's lines); a flood of shapes starts them over."""
    if len(templates) >= _MAX_TEMPLATES:
        templates.clear()
        shapes.clear()
        ranked.clear()
        bars.clear()
    template = NO_ROW if read is None else make_template(line, read)
    if template is not None and template is not NO_ROW and (named := line_rank(line)) is not None:
        ranked[id(template)] = None if named.host is not None else named.span
    if template is not None and template is not NO_ROW and bar_line(line):
        bars.add(id(template))
    templates[key] = template
    shapes.add(key, template)
    return template
