"""`note_many` (core.logs.rows.perfile): the notes of a live tick's files taken in one numpy pass are those of
`note` called file by file (counts and last row, whatever the block sizes: the row-by-row path of `note` and its
numpy path alike), each file's first row compared with its own last row, never with the file before it."""

from __future__ import annotations

import copy

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows.perfile import Notes, note, note_many
from core.logs.tokens.bulk import ROW_KEYS

_W = len(ROW_KEYS)
_VALUE = st.sampled_from([np.nan, 1.0, 2.0, 3.0, -0.0])  # few values: neighbours often share a step or a loss
_ROW = st.lists(_VALUE, min_size=_W, max_size=_W)
_FILE = st.tuples(
    st.lists(_ROW, max_size=12),  # the file's new rows (past `note`'s row-by-row limit too)
    st.one_of(st.none(), _ROW),  # its last row noted before
    st.integers(0, 3),  # the counts noted before
)


def _notes(last: list[float] | None, k: int) -> Notes:
    return Notes(stepped=k, epoch_only=k // 2, pairs=k % 2, last=last)


def _same(a: Notes, b: Notes) -> bool:
    same_last = (a.last is None and b.last is None) or (
        a.last is not None and b.last is not None and np.array_equal(a.last, b.last, equal_nan=True)
    )
    return (a.stepped, a.epoch_only, a.pairs) == (b.stepped, b.epoch_only, b.pairs) and same_last


@settings(max_examples=300, deadline=None)
@given(files=st.lists(_FILE, min_size=1, max_size=6))
@example(  # a file whose first row repeats the previous file's last step: no pair across files
    files=[([[1.0] * _W], None, 0), ([[1.0] + [np.nan] * (_W - 1)], None, 0)]
)
def test_one_pass_notes_each_file_as_note_does(files: list[tuple[list[list[float]], list[float] | None, int]]) -> None:
    blocks = [np.array(rows, dtype=np.float64).reshape(-1, _W) for rows, _, _ in files]
    want = [_notes(last, k) for _, last, k in files]
    got = copy.deepcopy(want)
    for notes, block in zip(want, blocks, strict=True):
        if len(block):
            note(notes, block)
    bounds = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).tolist()
    note_many(got, np.concatenate(blocks), bounds)
    assert all(_same(g, w) for g, w in zip(got, want, strict=True))


def test_a_pair_across_two_files_is_no_pair() -> None:
    step, loss = ROW_KEYS.index("step"), ROW_KEYS.index("loss")
    a, b = [np.nan] * _W, [np.nan] * _W
    a[step], a[loss] = 5.0, 1.0
    b[step], b[loss], b[ROW_KEYS.index("epoch")] = 5.0, 2.0, 1.0  # the same step, another signature
    notes = [Notes(), Notes()]
    note_many(notes, np.array([a, b]), [0, 1, 2])
    assert [n.pairs for n in notes] == [0, 0] and [n.stepped for n in notes] == [1, 1]
    assert notes[1].last is not None and notes[1].last[step] == 5.0
    note_many(notes, np.array([b]), [0, 0, 1])  # file 1's next row: now a pair with its own last row
    assert [n.pairs for n in notes] == [0, 0] and notes[1].stepped == 2  # (b after b: one signature)
    note_many(notes, np.array([a]), [0, 0, 1])
    assert notes[1].pairs == 1 and notes[0].last is not None and notes[0].last[loss] == 1.0


def test_no_rows_notes_nothing() -> None:
    notes = [Notes(stepped=3)]
    note_many(notes, np.empty((0, _W)), [0, 0])
    assert notes[0] == Notes(stepped=3)
