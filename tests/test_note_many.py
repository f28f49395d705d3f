"""core.logs.rows.perfile.note_many (a batch of files' rows noted in one numpy pass, issue 30 read speed) against
`note` of each file's rows in turn, the statements it replaced in `MetricTable._take`."""

from __future__ import annotations

import copy
import math

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows.perfile import Notes, note, note_epochs, note_epochs_many, note_many
from core.logs.tokens.bulk import ROW_KEYS

_W = len(ROW_KEYS)
_STEP, _EPOCH, _LOSS = (ROW_KEYS.index(k) for k in ("step", "epoch", "loss"))
_VALUE = st.sampled_from([math.nan, 0.0, 1.0, 2.0, -0.0, math.inf, 3.5])


@st.composite
def _files(draw: st.DrawFn) -> tuple[list[Notes], list[np.ndarray]]:
    """Files with notes so far (none, or some rows noted) and a block of new rows each (maybe none), in the few
    values that make repeated steps and losses, NaN steps and epochs, and differing signatures."""
    n = draw(st.integers(1, 6))
    notes, blocks = [], []
    for _ in range(n):
        x = Notes()
        if draw(st.booleans()):
            note(x, np.array(draw(st.lists(st.lists(_VALUE, min_size=_W, max_size=_W), min_size=1, max_size=3))))
        notes.append(x)
        rows = draw(st.lists(st.lists(_VALUE, min_size=_W, max_size=_W), max_size=12))
        blocks.append(np.array(rows, dtype=np.float64).reshape(-1, _W))
    if draw(st.booleans()) and n > 1:  # a file listed twice
        notes[-1] = notes[0]
    return notes, blocks


def _state(notes: list[Notes]) -> list[tuple]:
    return [(x.stepped, x.epoch_only, x.pairs, None if x.last is None else np.array(x.last).tobytes()) for x in notes]


@settings(max_examples=400, deadline=None)
@given(files=_files())
@example(files=([Notes(), Notes()], [np.full((9, _W), 1.0), np.full((2, _W), 1.0)]))
def test_same_notes_as_each_file_in_turn(files: tuple[list[Notes], list[np.ndarray]]) -> None:
    notes, blocks = files
    want = copy.deepcopy(notes)  # (a file listed twice stays one object in the copy)
    for x, rows in zip(want, blocks, strict=True):
        note(x, rows)
    note_many(notes, np.concatenate(blocks), [len(b) for b in blocks])
    assert _state(notes) == _state(want)


def test_a_batch_of_steps_and_an_echo() -> None:
    """Two files: one with its steps and an epoch summary, one whose second row echoes the first's loss in
    another shape (a pair), each counted on its own file; the last rows are each file's own."""
    a = np.full((3, _W), np.nan)
    a[:, _STEP], a[:, _LOSS] = [1.0, 2.0, np.nan], [0.5, 0.4, 0.3]
    a[2, _EPOCH] = 1.0
    b = np.full((2, _W), np.nan)
    b[:, _STEP], b[:, _LOSS] = [7.0, np.nan], [0.9, 0.9]
    b[1, _EPOCH] = 2.0
    x, y = Notes(), Notes()
    note_many([x, y], np.concatenate([a, b]), [3, 2])
    assert (x.stepped, x.epoch_only, x.pairs) == (2, 1, 0)
    assert (y.stepped, y.epoch_only, y.pairs) == (1, 1, 1)
    assert x.last is not None and x.last[_LOSS] == 0.3 and y.last is not None and y.last[_EPOCH] == 2.0


@st.composite
def _epoch_files(
    draw: st.DrawFn,
) -> tuple[list[Notes], list[np.ndarray], list[dict[str, tuple[np.ndarray, np.ndarray]]]]:
    """Files with an epoch noted so far or not, and new rows each (at least one: a file hands rows over), rows with
    and without a step, of one or two epochs, naming some of a few other metrics (a value, NaN or none)."""
    n = draw(st.integers(1, 6))
    notes, blocks, extras = [], [], []
    for _ in range(n):
        x = Notes()
        if draw(st.booleans()):
            x.last_place = (draw(st.sampled_from([math.nan, 1.0, 2.0])), draw(st.integers(0, 3)))
        notes.append(x)
        k = draw(st.integers(1, 10))
        rows = np.full((k, _W), np.nan)
        rows[:, _STEP] = draw(st.lists(st.sampled_from([math.nan, math.nan, 3.0]), min_size=k, max_size=k))
        rows[:, _EPOCH] = draw(st.lists(st.sampled_from([math.nan, 1.0, 2.0]), min_size=k, max_size=k))
        blocks.append(rows)
        named = {}
        for name in draw(st.sets(st.sampled_from(["acc", "val_loss", "lr_x"]))):
            idx = np.array(sorted(draw(st.sets(st.integers(0, k - 1), min_size=1))), dtype=np.int64)
            values = np.array(draw(st.lists(_VALUE, min_size=len(idx), max_size=len(idx))), dtype=np.float64)
            named[name] = (idx, values)
        extras.append(named)
    if draw(st.booleans()) and n > 1:  # a file listed twice
        notes[-1] = notes[0]
    return notes, blocks, extras


@settings(max_examples=400, deadline=None)
@given(files=_epoch_files())
@example(  # two files, each an epoch printed twice naming different numbers of metrics; the second across a tick
    files=(
        [Notes(), Notes(last_place=(1.0, 0))],
        [np.full((2, _W), 1.0) * np.where(np.arange(_W) == _STEP, np.nan, 1.0)] * 2,
        [{"acc": (np.array([1]), np.array([0.5]))}, {"acc": (np.array([0]), np.array([0.5]))}],
    )
)
def test_same_epoch_notes_as_each_file_in_turn(
    files: tuple[list[Notes], list[np.ndarray], list[dict[str, tuple[np.ndarray, np.ndarray]]]],
) -> None:
    """`note_epochs_many` (one pass over a tick's files) against `note_epochs` of each file's rows in turn, the
    statements it replaced in `MetricTable._take`."""
    notes, blocks, extras = files
    want = copy.deepcopy(notes)
    for x, rows, named in zip(want, blocks, extras, strict=True):
        note_epochs(x, rows, named)
    note_epochs_many(notes, blocks, extras)
    got = [(x.epoch_pairs, None if x.last_place is None else np.array(x.last_place).tobytes()) for x in notes]
    assert got == [(x.epoch_pairs, None if x.last_place is None else np.array(x.last_place).tobytes()) for x in want]
