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
    """One file's entries as float64 columns, a row of `cols` per field and a column per entry: epoch, step,
    value, time, offset, the rank its line names (else _NO_RANK), its name's code (every integer exact: < 2**53)
    and its summary flag (0 / 1); the list they come from (a reset file gets a new one) and how many of it are in
    `cols[:, :n]`. New entries are written past n, into room kept for them (a frame is joined from copies of
    `cols[:, :n]`, so nothing handed out sees them): a tick adds a few entries to a file of hundreds, and copying
    every file's entries to append them was a third of `frame` on the corpus folder's tick."""

    __slots__ = ("cols", "n", "source")

    def __init__(self, source: list[tuple]) -> None:
        self.source = source
        self.n = 0
        self.cols = np.empty((_WIDTH, 0), dtype=np.float64)

    def append(self, block: np.ndarray) -> None:
        """Entries (a row each, _WIDTH fields) after the first n."""
        n, k = self.n, len(block)
        if n + k > self.cols.shape[1]:
            grown = np.empty((_WIDTH, max(2 * self.cols.shape[1], n + k, 16)), dtype=np.float64)
            grown[:, :n] = self.cols[:, :n]
            self.cols = grown
        self.cols[:, n : n + k] = block.T
        self.n = n + k


_WIDTH = 8
_OFFSET, _NAMED, _CODE, _SUMMARY = 4, 5, 6, 7


def _take_new(parts: list[_FileEvals], code: dict[str, int]) -> None:
    """The entries added to each of `parts` since the last take, converted in one numpy call for them all
    (`code`: name -> code, grown with new names)."""
    fresh = [(p, len(p.source) - p.n) for p in parts if len(p.source) > p.n]
    if not fresh:
        return
    rows = [
        (e[0], e[1], e[3], e[4], e[5], _NO_RANK if e[6] is None else e[6], code.setdefault(e[2], len(code)), e[7])
        for p, _ in fresh
        for e in p.source[p.n :]
    ]
    block = np.array(rows, dtype=np.float64).reshape(-1, _WIDTH)
    at = 0
    for p, k in fresh:
        p.append(block[at : at + k])
        at += k


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
            kept[id(st.evals)] = part
            parts.append((st, part))
        _take_new([p for _, p in parts], self._code)
        self._files = kept  # a file gone or reset: its columns go too
        self._key, self._frame = key, self._build(parts)
        return self._frame

    def _build(self, parts: list[tuple[FileState, _FileEvals]]) -> pd.DataFrame:
        if not parts:
            return pd.DataFrame([], columns=EVAL_COLUMNS)  # as `eval_frame` gives it (object columns)
        lengths = np.array([p.n for _, p in parts], dtype=np.int64)
        own = np.repeat(np.array([st.info.rank if st.info.rank is not None else -1 for st, _ in parts]), lengths)
        cols = np.concatenate([p.cols[:, : p.n] for _, p in parts], axis=1)  # a fresh copy: a field per row
        named = cols[_NAMED].astype(np.int64)
        names = pd.array(list(self._code), dtype="str").take(cols[_CODE].astype(np.int64))
        files = pd.array([st.info.rel for st, _ in parts], dtype="str").take(np.repeat(np.arange(len(parts)), lengths))
        data = {
            "rank": np.where(named == _NO_RANK, own.astype(np.int64, copy=False), named),
            "epoch": cols[0],
            "step": cols[1],
            "name": names,
            "value": cols[2],
            "time": cols[3],
            "offset": cols[_OFFSET].astype(np.int64),
            "file": files,
            "summary": cols[_SUMMARY] != 0.0,
        }
        return pd.DataFrame(data, columns=EVAL_COLUMNS)
