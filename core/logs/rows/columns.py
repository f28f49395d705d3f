"""A column table: a header line of names, then keyless rows of numbers under it (issue 30, the YOLO trainers).

Ultralytics' YOLOv5/v8/v11 trainers print no key on their training rows: a header line names the columns, and
each epoch's row (a progress bar's final draw) gives the numbers under it; validation prints a `Class ... mAP`
header, then the `all` line, the metrics over every class. Real lines (tests/fixtures/real_logs/
ultralytics-yolov8-epoch-table-three-epochs-val-all-lines_ultralytics-1654, ultralytics/ultralytics#1654):
      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size
     20/300      16.1G      1.477     0.7796      1.028        120        800: 100%|##########| 805/805 [01:39<00:00]
                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): 100%|####| 101/101 [00:13]
                   all       3225      39675       0.84      0.597      0.677      0.366

The general notation: a line of three names or more, aligned over columns (most gaps between them two spaces or
more: no sentence), one holding a loss key, is the header of a training table;
a later line of exactly as many cells, each a number (`16.1G`: with its unit; `20/300`: the epoch of its total),
is its row. A comma-separated header (3 names or more, no space inside a name: a CSV file's first line, Keras'
CSVLogger's `epoch,accuracy,dice_coef,loss,lr,...,val_loss,...`, notation `csv_table`) heads the lines of as many
comma-separated numbers under it alike (its first cell may be empty: pandas' unnamed index column, `DataFrame.to_csv`
of a Keras History, a row number and no metric), and a tab-separated one (2 names or more: a TSV's `step<TAB>loss`) the
lines of as many tab-separated numbers; a name may hold a namespace (Ultralytics' results.csv, `train/box_loss`).
YOLOv3/v5/v7 name their loss parts bare beside `gpu_mem` (`Epoch gpu_mem box obj cls [total] labels img_size`):
`total` is the loss, with none the first part. The training loss is the first loss column, the other loss columns are
its metrics; an `Epoch` (or `Step`) column gives the row's place, counts and sizes are no metric (in a CSV or TSV
table, written by a logger of values, every other column is a metric: Keras' `accuracy`, `lr`, ...). A header whose
first name is `Class` and that names an `mAP` is a per-class evaluation table: its `all` row is an evaluation
line (the file's last epoch).
The last header of a file names the rows under it (`FileState.columns`, taken by core.logs.rows.columnfile); a
line of another shape is read as before. Of a line redrawn with `\\r` (a terminal's bar), the last draw is the row.

Every path reads it alike (core.logs.rows.parser): a header line reaches `parse_line` on each (its shape is never a
bulk template that swallows it, `header_shape`; the `Class` header holds `HEADER_LITERALS`, which the bulk path's
literal search keeps), and once a file has a header the bulk paths hand `parse_line` every candidate line left,
not only the ones worth it: a file without a header pays one quick test per line read to nothing.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from core.logs.rows.general import FIXED_ALIASES, LineRead
from core.logs.tokens.lexicon import LOSS_KEYS, NUM, ROW_KEYS, WORD_LOSS_KEYS, number

__all__ = ["HEADER_LITERALS", "ColumnHeader", "header_of", "header_shape", "read_row", "series_header"]

HEADER_LITERALS = (b"mAP", b"gpu_mem")
"""A part of every per-class evaluation header (`mAP50`, `mAP@.5`) and of YOLOv5's training header (`gpu_mem`, its
loss parts named bare): the bulk path's literal search keeps its line (it holds no keyword), so its rows are read on
every path."""

_MIN_NAMES = 3  # a header names three columns or more (two words are any text's)
_RE_NAME = re.compile(rb"[A-Za-z][\w@.:/\-]*(?:\([A-Za-z][\w@.:\-]*)?\)?")  # `GPU_mem`, `Box(P`, `train/box_loss`
_RE_CELL = re.compile(rb"(" + NUM + rb")(?:/(\d+))?(?:[KMGT]i?B?|B)?")
_RE_GAP = re.compile(rb"(?<=\S)\s+(?=\S)")  # the space between two names: a table aligns them (two or more)
_EPOCH, _STEP = ("epoch",), ("step", "iter", "iteration", "global_step")
_NOT_CSV_METRICS = frozenset({"rank", "file"})  # a CSV column of these names is none (the reader's own columns, and
# ROW_KEYS but `lr` and `time`)
# a CSV's `time` column is a metric of its own (the reader's `time` is the line's wall clock): no unit says whether it
# is a row's seconds (ShuffleNet's `epoch,train_loss,...,time` 226.068 an epoch) or the seconds so far (smilesVAE's
# `i,time,loss,similarity`), so it is no step time either; held as `time_value`, as the general reader holds a
# reserved name (core.logs.rows.general._put)
_CSV_OWN = {"lr": "lr", "time": "time_value"}
_PARTS = ("box", "obj", "cls", "total")  # YOLOv3/v5/v7's loss columns, named bare beside `gpu_mem`
_IN_BYTES = tuple(k for k in LOSS_KEYS if k not in WORD_LOSS_KEYS)  # a loss key inside a name (`box_loss`)
_IN_NAMES = tuple(k.decode() for k in _IN_BYTES)
_WHOLE_NAMES = frozenset(k.decode() for k in WORD_LOSS_KEYS)  # a loss key only as the whole name (llm.c's `trl`)
_RE_WORD_KEY = re.compile(rb"(?<![a-z0-9])(?:" + b"|".join(WORD_LOSS_KEYS) + rb")(?![a-z0-9])")
# a CSV cell holding a date and time (Lightning's CSVLogger's `created_at`, `2025-11-07 06:02:10.484610`): when the
# row was written, no number and no word
_RE_STAMP = re.compile(rb"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?")
# the loss itself by its name: `loss`, maybe under the training split's namespace and with a logger's aggregation
# suffix (Lightning's `train/loss_step`, `loss_epoch`), where its parts are columns beside it (`train/loss_simple_step`)
_RE_WHOLE_LOSS = re.compile(r"(?:train(?:ing)?/)?loss(?:_step|_epoch)?")


def _loss_column(lows: list[str]) -> int | None:
    """The training loss's column of a header's lower-cased names: the one named the loss itself where one is (a
    logger of values writes the loss's parts beside it, StableSR's `train/loss_simple_step,train/loss_vlb_step,
    train/loss_step`), else the first loss column (core.logs.tokens.lexicon.LOSS_KEYS); None: no loss column."""
    whole = next((i for i, n in enumerate(lows) if _RE_WHOLE_LOSS.fullmatch(n)), None)
    return whole if whole is not None else next((i for i, n in enumerate(lows) if _loss_name(n)), None)


def _loss_name(low: str) -> bool:
    """Whether a lower-cased column name names a loss (core.logs.tokens.lexicon.LOSS_KEYS)."""
    return low in _WHOLE_NAMES or any(k in low for k in _IN_NAMES)


@dataclass(frozen=True, slots=True)
class ColumnHeader:
    """A header's column names (a group's names prefixed: `Box(P R)` -> `Box/P`, `Box/R`), the training loss
    column (None: a per-class evaluation table, whose `all` row is read)."""

    names: tuple[str, ...]
    loss: int | None
    sep: bytes | None = None  # what parts the cells: None for spaces, b"," for a CSV table
    parts: bool = False  # the loss columns are named bare (`box obj cls`: YOLOv5), not by a loss key


def _names(text: bytes) -> tuple[str, ...] | None:
    """The column names of a header's text (before a bar's `: `), None when a word is no name."""
    names: list[str] = []
    group = ""
    for word in text.split():
        if _RE_NAME.fullmatch(word) is None or _RE_CELL.fullmatch(word) is not None:
            return None
        name = word.decode("ascii", "replace")
        if "(" in name:  # `Box(P`: a group opens, its names are the group's
            group, name = name.split("(", 1)
            group = group or name
        inside = group
        if name.endswith(")"):
            name, group = name[:-1], ""
        if not name:
            return None
        names.append(f"{inside}/{name}" if inside and inside != name else name)
    return tuple(names)


def _csv_header(text: bytes, sep: bytes = b",") -> ColumnHeader | None:
    """A CSV table's header (`epoch,accuracy,loss,...`): names parted by commas, one a loss key; a TSV's parted by
    tabs (`step<TAB>loss`: two names are a table's, a tab parts no sentence's words)."""
    cells = [c.strip() for c in text.split(sep)]
    unnamed = int(sep == b"," and cells[0] == b"")  # pandas' unnamed index column (`DataFrame.to_csv`): no metric
    least = _MIN_NAMES if sep == b"," else 2
    if len(cells) < least or any(_RE_NAME.fullmatch(c) is None or _RE_CELL.fullmatch(c) for c in cells[unnamed:]):
        return None
    names = tuple(c.decode("ascii", "replace") for c in cells)
    loss = _loss_column([n.lower() for n in names])
    return None if loss is None else ColumnHeader(names, loss, sep)


def header_of(line: bytes) -> ColumnHeader | None:
    """The column table a line heads, None when it is no header (see the module's doc)."""
    text = line.rsplit(b"\r", 1)[-1].split(b": ", 1)[0].strip()
    low = text.lower()
    named = any(k in low for k in _IN_BYTES) or _RE_WORD_KEY.search(low) is not None
    if not text or not (named or b"map" in low or b"gpu_mem" in low):
        return None
    if b"," in text:
        return _csv_header(text)
    if b"\t" in text and (tsv := _csv_header(text, b"\t")) is not None:
        return tsv
    names = _names(text)
    if names is None or len(names) < _MIN_NAMES:
        return None
    gaps = _RE_GAP.findall(text)
    if 2 * sum(len(g) > 1 for g in gaps) < len(gaps):  # a sentence (`Using loss function X`), not names over columns
        return None
    lows = [n.lower() for n in names]
    loss = _loss_column(lows)
    if loss is not None:
        return ColumnHeader(names, loss)
    if "gpu_mem" in lows and {"box", "obj"} <= set(lows):  # the loss parts named bare: the total, else the first
        return ColumnHeader(names, lows.index("total") if "total" in lows else lows.index("box"), parts=True)
    if lows[0] == "class" and any("map" in n for n in lows):
        return ColumnHeader(names, None)
    return None


# a file named for its loss series: the name's last word `loss`/`losses` (Ascend ModelZoo's test scripts extract a
# run's losses, one per line, into `train_<case>_perf_loss.txt`; a `loss.log`, `train-losses.txt` alike)
_RE_SERIES_FILE = re.compile(r"(?i)(?:^|[_\-.])loss(?:es)?\.(?:txt|log)$")


def series_header(file_name: str) -> ColumnHeader | None:
    """The one-column table a file named for its loss series holds (its lines that are one bare number each are its
    loss rows, as under a header `loss`), None for any other name: a line of its own shape is read as in any log. Such
    a file pays a table's read (its lines left by the bulk rows go to `parse_line`): a 297 KB Megatron log renamed
    `train_loss.log` reads in 97 ms CPU instead of 36 ms; the other names pay one regex search per file opened."""
    return ColumnHeader(("loss",), 0) if _RE_SERIES_FILE.search(file_name) else None


def header_shape(shape: bytes) -> bool:
    """Whether lines of this shape (core.logs.rows.linetemplates.shape_key: digits as `#`) head a column table:
    such a shape is no bulk template that takes its lines (each must reach `parse_line`)."""
    return header_of(shape.replace(b"#", b"0")) is not None


def _cells(line: bytes, n: int, sep: bytes | None = None) -> list[re.Match[bytes] | None] | None:
    """The `n` cells of a row's last draw (before its bar's `: `; a CSV row's parted by `sep`, where a date and time
    is a cell of no value, None), None when it has another count or a word."""
    draw = line.rsplit(b"\r", 1)[-1]
    words = [w.strip() for w in draw.split(sep)] if sep else draw.split(b": ", 1)[0].split()
    if len(words) != n:
        return None
    cells = [_RE_CELL.fullmatch(w) for w in words]
    if sep is not None:
        stamps = [c is None and _RE_STAMP.fullmatch(w) is not None for c, w in zip(cells, words, strict=True)]
        return None if any(c is None and not t for c, t in zip(cells, stamps, strict=True)) else cells
    return None if any(c is None for c in cells) else cells


_SKIP, _FIELD, _COUNT, _EXTRA = range(4)  # what a column's cell is (`_kinds`)


@functools.lru_cache(maxsize=256)
def _kinds(header: ColumnHeader) -> tuple[tuple[int, str, str], ...]:
    """Per column of a training table's header: (what its cell is, the column it fills, the key as spelled or, for
    a count, its total's column). Decided once per header: every row of a table asked it of every cell (~3,150 asks
    of a tick of the real-corpus folder, benchmarks/README_logs.md round 17)."""
    out: list[tuple[int, str, str]] = []
    for i, name in enumerate(header.names):
        low = name.lower()
        if not name:  # a CSV's unnamed index column (`_csv_header`): a row number, no metric
            out.append((_SKIP, "", ""))
        elif i == header.loss:
            out.append((_FIELD, "loss", name))
        elif low in _EPOCH or low in _STEP:
            out.append((_COUNT, *(("epoch", "epochs_total") if low in _EPOCH else ("step", "steps_total"))))
        elif _loss_name(low) or (header.parts and low in _PARTS):
            out.append((_EXTRA, name, name))
        elif header.sep is not None and (low not in ROW_KEYS or low in _CSV_OWN) and low not in _NOT_CSV_METRICS:
            # a CSV table's other columns are the row's metrics (Keras' `accuracy`, `dice_coef`, `lr`, ...): a
            # logger's table of values, unlike a terminal table's counts and sizes (`Instances`, `Size`)
            column = "lr" if FIXED_ALIASES.get(low) == "lr" else _CSV_OWN.get(low, name)
            out.append((_FIELD if column == "lr" else _EXTRA, column, name))
        else:
            out.append((_SKIP, "", ""))
    return tuple(out)


def read_row(header: ColumnHeader, line: bytes) -> LineRead | None:
    """What a row under `header` says (an evaluation for a per-class table's `all` row), None when the line is
    no row of it."""
    if header.loss is None:
        words = line.rsplit(b"\r", 1)[-1].split(None, 1)
        if len(words) < 2 or words[0] != b"all":
            return None
        cells = _cells(words[1], len(header.names) - 1)
        if cells is None:
            return None
        read = LineRead(eval=True)
        for name, cell in zip(header.names[1:], cells, strict=True):
            if cell is not None:  # (a space-parted row's cells are all numbers: `_cells`)
                read.extras[name] = number(cell[1])
        return read
    cells = _cells(line, len(header.names), header.sep)
    if cells is None:
        return None
    loss = cells[header.loss]
    if loss is None or loss[2] is not None:  # `1/2` (or a date) under a loss name is no loss
        return None
    read = LineRead()
    for (kind, column, name), cell in zip(_kinds(header), cells, strict=True):
        if cell is None:  # a date and time (`_cells`): when the row was written
            continue
        if kind == _COUNT:
            read.fields[column] = number(cell[1])
            if cell[2] is not None:
                read.fields[name] = float(cell[2])  # (`name`: the count's total)
        elif kind == _EXTRA:
            read.extras[column], read.keys[column] = number(cell[1]), name
        elif kind == _FIELD:
            read.fields[column], read.keys[column] = number(cell[1]), name
    return read
