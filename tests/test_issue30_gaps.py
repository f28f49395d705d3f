"""Issue 30, the corpus's known gaps: the general rules they needed, each on the real line of its entry.

Every quoted line comes from a log of tests/fixtures/real_logs (the entry is named beside it; its SOURCE.md says
where the log comes from). Each rule is for the family a user's never-seen log would print, never one file, and
gives the same reading on every read path (tests/helpers.READ_PATHS).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.logs.rows.reader import RunReader
from tests.helpers import READ_PATHS

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"


def _rows(folder: Path, path: str) -> pd.DataFrame:
    reader = RunReader(folder, settings=READ_PATHS[path], one_shot=True)
    reader.refresh()
    return reader.snapshot().metrics


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.log").write_text(text, encoding="utf-8")
    return folder


# ----------------------------------------------------------------------------- a NaN loss redrawn by a progress bar

# dreamfields-tqdm-desc-loss-nan-paren-warnings-glued_dreamfields-torch-7: the bar's description carries the loss,
# drawn twice per counter, tensorboardX's warning glued behind each draw
DREAMFIELDS = "loss=nan (nan): :   {pct}% {n}/100 [00:00<{eta}, {rate}]NaN or Inf found in input tensor.\n"


def _dreamfields(counters: list[int]) -> str:
    return "".join(
        DREAMFIELDS.format(pct=n, n=n, eta="?" if n == 0 else "00:07", rate="?it/s" if n == 0 else "12.49it/s")
        for n in counters
    )


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_nan_bar_gives_one_row_per_counter_on_every_path(tmp_path: Path, path: str) -> None:
    """The real log: counters 0, 2, 2, 4, 4, 6, 6, 8 -> 5 rows, every loss NaN (a NaN loss is no evidence the
    values stayed: the counter decides)."""
    log = CORPUS / "dreamfields-tqdm-desc-loss-nan-paren-warnings-glued_dreamfields-torch-7" / "log" / "train.log"
    rows = _rows(_write(tmp_path / "log", log.read_text(encoding="utf-8")), path)
    assert len(rows) == 5
    assert rows["loss"].isna().all()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 99), min_size=1, max_size=40))
@example([0, 2, 2, 4, 4, 6, 6, 8])
@example([3, 3, 3])
def test_nan_bar_rows_are_the_counter_changes(counters: list[int]) -> None:
    """For any sequence of NaN draws, one row per run of one counter (a draw at the counter of the row before it
    is a redraw; a moved counter is a new step), on every path alike."""
    want = 1 + sum(a != b for a, b in itertools.pairwise(counters))
    with tempfile.TemporaryDirectory() as tmp:
        folder = _write(Path(tmp) / "log", _dreamfields(counters))
        for path in READ_PATHS:
            assert len(_rows(folder, path)) == want, path


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_finite_loss_at_a_moved_counter_is_still_a_redraw(tmp_path: Path, path: str) -> None:
    """The NaN rule leaves finite values as they were: equal values at a moved counter are one row (VeOmni's
    `set_postfix` then `update(1)`), an identical line twice is two."""
    text = (
        "".join(f"loss=2.5 (2.6): :   {n}% {n}/100 [00:0{n}<00:07, 12.49it/s]\n" for n in (1, 2))
        + "loss=2.4 (2.5): :   3% 3/100 [00:03<00:07, 12.49it/s]\n" * 2
    )
    rows = _rows(_write(tmp_path / "log", text), path)
    assert rows["loss"].tolist() == [2.5, 2.4, 2.4]
    assert not math.isnan(rows["loss"].iloc[0])
