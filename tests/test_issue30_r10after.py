"""Round 10's misreadings after the measure (issue 30), fold-in rules, each stated for logs in general.

- a file named for its loss series (core.logs.rows.columns.series_header): the name's last word is `loss` or `losses`
  (`.txt`, `.log`) and its lines are bare numbers, one a line, no key: each such line is a loss row, as under a
  one-column table headed `loss`. Ascend ModelZoo's test scripts extract a run's losses into
  `train_<case>_perf_loss.txt` (Ascend-Huawei/Lip2Wav test/output/0/train_LIP2WAV_bs24_1p_perf_loss.txt,
  https://github.com/Ascend-Huawei/Lip2Wav/blob/038718f993450a110712489ae6a6e0e0c028bc59/test/output/0/
  train_LIP2WAV_bs24_1p_perf_loss.txt: two lines holding `.`, then 2,500 numbers). The same lines in a file of any
  other name stay no rows (nothing names them), and a loss-named file's lines of any other shape read as in any log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.rows.reader import RunReader
from tests.helpers import READ_PATHS

# the file's first 8 lines and its last 3 (lines 1-8, 2500-2502)
LIP2WAV = [".", ".", "10.38053", "8.26811", "9.82976", "20.09434", "16.96636", "7.81281", "0.98657", "0.96137", "nan"]
LOSSES = [10.38053, 8.26811, 9.82976, 20.09434, 16.96636, 7.81281, 0.98657, 0.96137]


def _losses(folder: Path, path: str) -> list[float]:
    return read_run(folder, settings=READ_PATHS[path]).metrics["loss"].dropna().tolist()


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("name", ["train_LIP2WAV_bs24_1p_perf_loss.txt", "loss.log", "train-losses.txt"])
def test_a_file_named_for_its_loss_series_reads_its_bare_numbers(tmp_path: Path, path: str, name: str) -> None:
    """(The last line, `nan`, is a NaN row: a file of losses may hold one.)"""
    (tmp_path / name).write_text("\n".join(LIP2WAV) + "\n")
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert len(m) == len(LOSSES) + 1, path
    assert m["loss"].iloc[:-1].tolist() == pytest.approx(LOSSES) and m["loss"].isna().iloc[-1]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("name", ["train.log", "perf.txt", "lossy.txt", "loss_curve.txt"])
def test_bare_numbers_in_a_file_of_another_name_are_no_rows(tmp_path: Path, path: str, name: str) -> None:
    (tmp_path / name).write_text("\n".join(LIP2WAV) + "\n")
    assert _losses(tmp_path, path) == [], (path, name)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_loss_named_files_keyed_lines_read_as_in_any_log(tmp_path: Path, path: str) -> None:
    """A keyed row in a loss-named file is read by its keys (its step kept); a line of two numbers is no bare
    number (no row), nor a word."""
    lines = ["step 1, loss 2.5", "3 4.5", "done", "step 2, loss 2.25"]
    (tmp_path / "train_loss.log").write_text("\n".join(lines) + "\n")
    m = read_run(tmp_path, settings=READ_PATHS[path]).metrics
    assert m["loss"].tolist() == [2.5, 2.25] and m["step"].tolist() == [1.0, 2.0], path


def test_a_live_read_of_a_loss_named_file_reads_as_the_whole_read(tmp_path: Path) -> None:
    log = tmp_path / "train_perf_loss.txt"
    log.write_text("\n".join(LIP2WAV[:5]) + "\n")
    reader = RunReader(tmp_path)
    reader.refresh()
    assert reader.snapshot().metrics["loss"].tolist() == pytest.approx(LOSSES[:3])
    with log.open("a") as f:
        f.write("\n".join(LIP2WAV[5:-1]) + "\n")
    reader.refresh()
    assert reader.snapshot().metrics["loss"].tolist() == pytest.approx(LOSSES)
