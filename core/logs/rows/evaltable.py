"""The run's evaluation entries as columns, converted once per entry (issue 30, the real-corpus folder's tick).

`table.eval_frame` builds the frame from every file's entry tuples on each snapshot: on the 1,024-rank folder
built from the real corpus (67k entries: HF trainers' eval dicts, DETR's `Test:` meters) that was ~90 ms of a
live tick, where a tick adds a few hundred. `EvalTable` keeps each file's entries as numpy columns, converts
only the entries added since the last snapshot, and joins the files' columns per snapshot (a copy: a
snapshot handed out never sees its data change). The frame is `eval_frame`'s, row for row and dtype for dtype
(tests/test_logs_evaltable.py holds them equal).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.logs.rows.filestate import FileState
from core.logs.rows.table import EVAL_COLUMNS

_NO_RANK = -(2**62)  # an entry whose line names no rank (its file's rank then): no rank is ever this


class _FileEvals:
    """One file's entries as columns: the list they come from (a reset file gets a new one) and how many of
    it are converted. Arrays are replaced, never written in place (a frame joined from them is a copy anyway)."""

    __slots__ = ("codes", "floats", "n", "named", "offsets", "source")

    def __init__(self, source: list[tuple]) -> None:
        self.source = source
        self.n = 0
        self.floats = np.empty((0, 4), dtype=np.float64)  # epoch, step, value, time
        self.offsets = np.empty(0, dtype=np.int64)
        self.named = np.empty(0, dtype=np.int64)  # the rank the line names, else _NO_RANK
        self.codes = np.empty(0, dtype=np.int64)  # the metric's name, a code of `EvalTable._names`

    def take(self, code: dict[str, int]) -> None:
        """Convert the entries added since the last take (`code`: name -> code, grown with new names)."""
        new = self.source[self.n :]
        if not new:
            return
        floats = np.array([(e[0], e[1], e[3], e[4]) for e in new], dtype=np.float64)
        offsets = np.fromiter((e[5] for e in new), dtype=np.int64, count=len(new))
        named = np.fromiter((_NO_RANK if e[6] is None else e[6] for e in new), dtype=np.int64, count=len(new))
        codes = np.fromiter((code.setdefault(e[2], len(code)) for e in new), dtype=np.int64, count=len(new))
        self.floats = np.concatenate([self.floats, floats])
        self.offsets = np.concatenate([self.offsets, offsets])
        self.named = np.concatenate([self.named, named])
        self.codes = np.concatenate([self.codes, codes])
        self.n += len(new)


class EvalTable:
    """Every worker file's evaluation entries, rank by rank in file order (`eval_frame`'s frame), kept as
    columns between snapshots so a snapshot converts only the entries that are new."""

    def __init__(self) -> None:
        self._files: dict[int, _FileEvals] = {}  # id(FileState.evals) -> its columns (the list kept alive)
        self._code: dict[str, int] = {}  # metric name -> code, in the order first seen
        self._key: tuple | None = None
        self._frame: pd.DataFrame | None = None

    def frame(self, workers: Sequence[FileState]) -> pd.DataFrame:
        """The entries of `workers` (in that order) as EVAL_COLUMNS; the last frame again when none changed."""
        key = tuple((id(st.evals), len(st.evals), st.info.rank, st.info.rel) for st in workers if st.evals)
        if key == self._key and self._frame is not None:
            return self._frame
        parts: list[tuple[FileState, _FileEvals]] = []
        kept: dict[int, _FileEvals] = {}
        for st in workers:
            if not st.evals:
                continue
            part = self._files.get(id(st.evals))
            if part is None or part.source is not st.evals:
                part = _FileEvals(st.evals)
            part.take(self._code)
            kept[id(st.evals)] = part
            parts.append((st, part))
        self._files = kept  # a file gone or reset: its columns go too
        self._key, self._frame = key, self._build(parts)
        return self._frame

    def _build(self, parts: list[tuple[FileState, _FileEvals]]) -> pd.DataFrame:
        if not parts:
            return pd.DataFrame([], columns=EVAL_COLUMNS)  # as `eval_frame` gives it (object columns)
        lengths = np.array([p.n for _, p in parts], dtype=np.int64)
        own = np.repeat([st.info.rank if st.info.rank is not None else -1 for st, _ in parts], lengths)
        named = np.concatenate([p.named for _, p in parts])
        floats = np.concatenate([p.floats for _, p in parts])
        names = pd.array(list(self._code), dtype="str").take(np.concatenate([p.codes for _, p in parts]))
        files = pd.array([st.info.rel for st, _ in parts], dtype="str").take(np.repeat(np.arange(len(parts)), lengths))
        data = {
            "rank": np.where(named == _NO_RANK, own, named).astype(np.int64),
            "epoch": floats[:, 0].copy(),
            "step": floats[:, 1].copy(),
            "name": names,
            "value": floats[:, 2].copy(),
            "time": floats[:, 3].copy(),
            "offset": np.concatenate([p.offsets for _, p in parts]),
            "file": files,
        }
        return pd.DataFrame(data, columns=EVAL_COLUMNS)
