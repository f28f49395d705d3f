"""A row assembled from several lines: a step's metrics printed on lines of their own beside its loss line.

Many loggers print one step over several lines, and only the line with the loss is a row: Caffe's
`Iteration 200, lr = 0.01` beside `Iteration 200, loss = 6.55622`, TensorFlow's `INFO:tensorflow:global_step/sec:
2.1272` after a `step: 100 total_loss: ...` row, SB3's `|    learning_rate    | 0.0005 |` table cells around its
`| loss |` cell, TTS's `| > decoder_loss: 0.20866  (0.19815)` lines around `| > loss:`, OLMo's indented
`optim/total_grad_norm=231.7` lines of a `[step=N/M]` block, a row wrapped onto the next line (`   cur_lr: 0.05`).

The rule, by line shape only. A side line is a line that is one `key` + `=`, `:` or a table cell + a number ending
the line (a running average in parentheses, a closing `|` may follow), behind either a frame (indentation, `|`,
`>`) or a logger's prefix (glog's `I0425 10:13:04.672 9167 solver.cpp:208] `, Python's `INFO:tensorflow:`),
the prefix maybe followed by a step marker (`Iteration 200, `); it holds no loss or eval keyword, unless it is a
part of a one-key-per-line record (core.logs.rows.keylines: `entropy_loss`, `decoder_loss`) or its key is qualified
as training's (OLMo's `train/Perplexity=8,641`, which the line alone reads as an evaluation's perplexity).
  - A side line naming a step (its marker) belongs to the row of that step among the two rows either side.
  - Any other belongs to its run: the lines around a row with no other line between (a table's section line,
    `| train/ |  |`, continues a run), up to the next row: the lines after a row are its own, the lines before a
    row are its own unless another row comes first (then they are that row's, read after it).
Its value fills the row's fixed column when the row has none (`lr`), else a column of its own, named as the general
reader names a key (core.logs.rows.general). Rows and side lines are looked for within one read block (a live tick
that cuts a step's lines apart attaches none across the cut), after every read path made the block's rows
(core.logs.rows.parser calls `carry_and_attach` at each block's end), so every path reads them alike. A big
read's rows, and once it loaded the compiled passes a live tick's few too, are first sifted in one compiled pass
(core.logs.tokens.sidescan): a block with no line of a run's outline beside a row walks none in Python.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable

import numpy as np

from core.logs.rows.echoes import note as note_echoes
from core.logs.rows.filestate import FileState, carry_over, note_key
from core.logs.rows.general import FIXED_ALIASES, metric_name
from core.logs.rows.keylines import record_part
from core.logs.rows.keys import in_seconds
from core.logs.rows.wording import note as note_wording
from core.logs.tokens.lexicon import NUM, ROW_KEYS, holds_keyword, number

__all__ = ["RUN_LINES", "carry_and_attach", "side_line"]

_NUM_GROUPED = rb"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"  # OLMo's `throughput/total_tokens=1,048,576`
_KEY = rb"[A-Za-z_][\w/.\-]*(?:[ \t][A-Za-z_][\w/.\-]*){0,3}"
_RE_SIDE = re.compile(
    rb"(?:(?P<prefix>[IWEF]\d{4}[ \t]+[\d:.]+[ \t]+\d+[ \t]+[\w.\-]+:\d+\][ \t]+|[A-Z]+:[\w.\-]+:)"
    rb"(?:(?P<marker>[A-Z][a-z]+)[ \t]+(?P<at>\d+),[ \t]*)?|[ \t|>]+)"
    rb"(?P<key>" + _KEY + rb")[ \t]*(?:=|:|\|)[ \t]*(?P<value>" + _NUM_GROUPED + rb"|" + NUM + rb")"
    rb"(?:[ \t]+\([ \t]*" + NUM + rb"[ \t]*\))?[ \t]*\|?[ \t]*\r?"
)
_RE_SECTION = re.compile(rb"\|[ \t]*[\w/.\-]+[ \t]*\|[ \t]*\|[ \t]*\r?")  # SB3's `| rollout/   |     |`
RUN_LINES = (_RE_SIDE, _RE_SECTION)  # every line a row's run may hold: core.logs.tokens.sidescan keeps their outline
_TRAINING = re.compile(rb"(?i)train(?:ing)?[/_.]")  # a key qualified as training (`train/Perplexity`): no eval
_STEP = ROW_KEYS.index("step")
_FIXED = frozenset({"lr", "global_norm", "loss_scale", "throughput", "step_time_ms"})  # a side line may fill
_RESERVED = frozenset(("rank", "offset", "file", "time", "global_step", "relative_s", "wall_time", *ROW_KEYS))
_OPENS = frozenset(b" \t|>ABCDEFGHIJKLMNOPQRSTUVWXYZ")  # a side line's first byte: a frame's, a prefix's capital
_COMPILED = "core.logs.tokens.linescan"  # loaded by a big read's compiled passes: then rows are sifted in numba
_sift_rows: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None  # sidescan's, once loaded
_RUN_MAX = 64  # lines a run is followed through from its row (a table of a few dozen cells)
_NO_NEWLINES = np.empty(0, dtype=np.int64)  # the block's newlines not known: the compiled sift walks the lines


def side_line(line: bytes) -> tuple[str, float, int | None] | None:
    """(column, value, the step its marker names or None) of a side line; None for any other line."""
    m = _RE_SIDE.fullmatch(line)
    if m is None:
        return None
    if holds_keyword(line.lower()) and not record_part(line) and not _TRAINING.match(m.group("key")):
        return None
    name = metric_name(m.group("key"))
    column = name if name.rpartition("_")[2] == "loss" else FIXED_ALIASES.get(name, name)
    if not name or name in ("epoch", "step", "loss"):
        return None
    if column in _RESERVED and column not in _FIXED:
        column = name + "_value"
    value = number(m.group("value").replace(b",", b""))
    if column == "step_time_ms" and in_seconds(name, None, b""):
        value *= 1000.0
    at = m.group("at")
    return column + "\0" + name, value, None if at is None else int(at)


def carry_and_attach(
    st: FileState,
    buf: bytes | bytearray,
    floor: int,
    base: int,
    end: int,
    carry_max: int,
    newlines: np.ndarray | None = None,
) -> None:
    """The end of a read block of `st` (its bytes buf[floor:end], at file offset buf index + `base`): keep a
    traceback's bytes (core.logs.rows.filestate.carry_over), and attach the side lines of the block's rows.
    `newlines`: the block's scan's (every newline of buf[floor:end] among them, ascending), so the compiled sift
    looks the rows' lines up instead of walking them; None: walked."""
    carry_over(st, buf, floor, base, end, carry_max)
    n = len(st.rows)
    start = max(st.side_seen, n - st.rows.untaken)
    st.side_seen = n
    if start >= n:
        return
    note_wording(st, buf, floor, base, end, start)
    note_echoes(st, buf, floor, base, end, start)
    block = None
    found: dict[str, dict[int, float]] = {}
    if _COMPILED in sys.modules:  # a big read loaded the compiled passes: every block's rows sifted, a tick's few too
        if n - start == 1:
            last = st.rows.last()
            assert last is not None
            _sifted(buf, floor, base, end, np.array([last[-1]]), [last[_STEP]], found, newlines)
        else:
            block = st.rows.recent(start)
            _sifted(buf, floor, base, end, np.ascontiguousarray(block[:, -1]), block[:, _STEP], found, newlines)
    elif n - start == 1:  # a small read's live tick, one row: its tuple, no block made nor numpy called
        last = st.rows.last()
        assert last is not None
        if base + floor <= last[-1] < base + end:
            ls = max(buf.rfind(b"\n", floor, int(last[-1]) - base) + 1, floor)
            _walk(buf, floor, end, [ls], range(1), [0], [last[_STEP]], found)
    else:
        block = st.rows.recent(start)
        offsets = block[:, -1]
        inside = np.flatnonzero((offsets >= base + floor) & (offsets < base + end))
        rfind = buf.rfind
        starts = [max(rfind(b"\n", floor, p) + 1, floor) for p in (offsets[inside].astype(np.int64) - base).tolist()]
        _walk(buf, floor, end, starts, range(len(starts)), inside.tolist(), block[:, _STEP].tolist(), found)
    if not found:
        return
    block = st.rows.recent(start) if block is None else block
    for both, by_row in found.items():
        column, name = both.split("\0")
        rows = np.array(sorted(by_row), dtype=np.int64)
        values = np.array([by_row[r] for r in rows.tolist()], dtype=np.float64)
        note_key(st.metric_keys, column, name)
        if column in ROW_KEYS:
            col = ROW_KEYS.index(column)
            empty = np.isnan(block[rows, col])
            block[rows[empty], col] = values[empty]
        else:
            st.rows.add_metric(column, rows + start, values)


def _sifted(
    buf: bytes | bytearray,
    floor: int,
    base: int,
    end: int,
    offsets: np.ndarray,
    steps: np.ndarray | list[float],
    found: dict[str, dict[int, float]],
    newlines: np.ndarray | None = None,
) -> None:
    """The side lines around the rows (their file offsets `offsets`, their steps `steps`) whose lines are in
    buf[floor:end] (file offset `base` at buf[0]), into `found`: column -> {row: value}. The rows are first sifted
    in one compiled call (core.logs.tokens.sidescan.sift_rows: ~3 us a block, where the Python walk costs ~5 us a
    row, and a live tick of the real-corpus folder has ~700 blocks of a few rows; `newlines`: the block's, looked
    up there); only the rows a line beside may continue are walked here."""
    global _sift_rows
    if _sift_rows is None:
        from core.logs.tokens.sidescan import sift_rows

        _sift_rows = sift_rows
    nl = _NO_NEWLINES if newlines is None else newlines
    inside, starts, keep = _sift_rows(np.frombuffer(buf, dtype=np.uint8), offsets, base, floor, end, nl)
    if keep.any():
        walk = keep.nonzero()[0].tolist()
        _walk(
            buf,
            floor,
            end,
            starts.tolist(),
            walk,
            inside.tolist(),
            steps if isinstance(steps, list) else steps.tolist(),
            found,
        )


def _walk(
    buf: bytes | bytearray,
    floor: int,
    end: int,
    starts: list[int],
    walk: Iterable[int],
    rows: list[int],
    steps: list[float],
    found: dict[str, dict[int, float]],
) -> None:
    """The side lines around the rows `walk` (indices of `starts`, their lines' starts), into `found`."""
    find, rfind = buf.find, buf.rfind
    mine = dict(zip(starts, range(len(rows)), strict=True))
    for k in walk:
        ls = starts[k]
        taken: list[tuple[str, float, int | None]] = []
        pos = find(b"\n", ls, end) + 1
        for _ in range(_RUN_MAX):  # after the row: its own, up to the next row or a line of another shape
            if pos >= end or pos in mine or buf[pos] not in _OPENS:
                break
            nle = find(b"\n", pos, end)
            nle = end if nle < 0 else nle
            if not _part_of_run(bytes(buf[pos:nle]), taken):
                break
            pos = nle + 1
        before: list[tuple[str, float, int | None]] = []
        pos = ls
        for _ in range(_RUN_MAX):  # before the row: its own unless another row opens the run
            if pos <= floor:
                break
            pls = max(rfind(b"\n", floor, pos - 1) + 1, floor)
            if pls in mine:
                before = [s for s in before if s[2] is not None]  # (a step's line is placed by its step)
                break
            if buf[pls] not in _OPENS or not _part_of_run(bytes(buf[pls : pos - 1]), before):
                break
            pos = pls
        for both, value, step in (*taken, *before):
            row = rows[k] if step is None else _row_of_step(steps, rows, k, step)
            if row is not None:
                found.setdefault(both, {}).setdefault(row, value)


def _part_of_run(line: bytes, into: list[tuple[str, float, int | None]]) -> bool:
    """Whether `line` continues a row's run: a side line (its reading appended to `into`) or a section line."""
    side = side_line(line)
    if side is not None:
        into.append(side)
        return True
    return _RE_SECTION.fullmatch(line) is not None


def _row_of_step(steps: list[float], rows: list[int], k: int, step: int) -> int | None:
    """The row naming `step` among the two rows either side of row `rows[k]` (itself first), or None."""
    for j in (k, k + 1, k - 1, k + 2, k - 2):
        if 0 <= j < len(rows) and steps[rows[j]] == step:
            return rows[j]
    return None
