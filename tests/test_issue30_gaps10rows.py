"""Issue 30, round 10's row gaps (gaps10rows): several rows on one line (core.logs.rows.splitrows), read alike on
every path, on the real lines they were written from."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.rows.formats import read_loss
from core.logs.rows.splitrows import SplitRead
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

# tensorflow/tensorflow#26543 (a tf.keras custom loop's output, re-wrapped by an e-mail reply)
EMAIL = "email-wrapped-epoch-hash-loss-accuracy-several-rows-per-line-nan-from-epoch-3_tensorflow-26543"
_NAN = float("nan")


def _same(got: list[float], want: list[float]) -> bool:
    return len(got) == len(want) and all(
        g == w or (math.isnan(g) and math.isnan(w)) for g, w in zip(got, want, strict=True)
    )


def test_the_real_lines_split_at_their_repeated_counter() -> None:
    first, second, third = entry_lines(EMAIL)
    assert first == b"Epoch #1 Loss: 0.549081 Accuracy: 0.718750 Epoch #2 Loss: 0.430481"
    read = read_loss(first)
    assert isinstance(read, SplitRead)
    assert (read.fields["epoch"], read.fields["loss"], read.extras["accuracy"]) == (1, 0.549081, 0.71875)
    assert [(r.fields["epoch"], r.fields["loss"]) for r in read.more] == [(2, 0.430481)]
    read = read_loss(second)  # the wrapped `Accuracy: 0.822917` before `Epoch #3` is epoch 2's, not epoch 3's
    assert isinstance(read, SplitRead) and read.extras["accuracy"] == 0.166667
    assert [r.fields["epoch"] for r in (read, *read.more)] == [3, 4]
    assert not isinstance(read_loss(third), SplitRead)  # the counter once: the line read whole, as before


def test_a_counter_once_or_two_counter_words_give_one_row() -> None:
    assert not isinstance(read_loss(b"Epoch #7 Loss: 0.5 Accuracy: 0.9"), SplitRead)
    assert not isinstance(read_loss(b"Epoch #1 Step #20 Loss: 0.5"), SplitRead)  # an epoch and a step: one place
    assert not isinstance(read_loss(b"Epoch 1 Loss: 0.5 Epoch 2 Loss: 0.4"), SplitRead)  # no `#`: not this shape
    read = read_loss(b"INFO Step #3 loss: 1.5 Step #4 loss: 1.25")  # any counter word with its `#`
    assert isinstance(read, SplitRead) and [r.fields["step"] for r in (read, *read.more)] == [3, 4]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_entry_reads_five_epochs_on_every_path(tmp_path: Path, path: str) -> None:
    rows = read_entry(tmp_path, EMAIL, path).metrics
    assert rows["epoch"].tolist() == [1, 2, 3, 4, 5]
    assert _same(rows["loss"].tolist(), [0.549081, 0.430481, _NAN, _NAN, _NAN])


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_many_lines_of_two_rows_read_alike_on_every_path(tmp_path: Path, path: str) -> None:
    """Enough lines of one shape for the bulk paths' templates: a line of two rows is never one template's row."""
    lines = [
        b"Epoch #%d Loss: %.6f Accuracy: 0.718750 Epoch #%d Loss: %.6f"
        % (2 * k + 1, 1 / (k + 2), 2 * k + 2, 1 / (k + 3))
        for k in range(40)
    ]
    rows = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path]).metrics
    assert rows["epoch"].tolist() == list(range(1, 81))
    want = [float(b"%.6f" % (1 / (k // 2 + 2 + k % 2))) for k in range(80)]
    assert _same(rows["loss"].tolist(), want)
