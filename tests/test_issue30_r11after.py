"""Issue 30, round 11's fold-in rules (written after the set-aside third was scored, from its misses; reported apart
from the measure). A file per device named by its number is that rank's: SPADE-DLinkNet writes one print log per
GPU, `logs/gpu0.log` and `logs/gpu1.log` (https://github.com/choiszt/spade_dlinknet/tree/0b2ae8f/logs, the corpus
entry `two-gpu-files-star-separated-epoch-blocks-train-loss-own-line_spade-dlinknet-logs`); before the rule both
files were "no rank number in its name" and the run read 0 ranks. The notations (`loss_total` with a space before
its value, `loss_<name>` as a whole pipe field) and the summary under a split's bold name are grammar entries
(core.logs.rows.notations_spellings, read by tests/test_grammar_entries.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.bytes.discover import discover_logs
from tests.helpers import REAL_LOGS

SPADE = "two-gpu-files-star-separated-epoch-blocks-train-loss-own-line_spade-dlinknet-logs"
# the first epoch block of that entry's gpu0.log (lines 1-4)
SPADE_BLOCK = "********\nepoch:1    time:1519.7932608127594\ntrain_loss:0.775572543573934\nSHAPE:(1024, 1024)\n"


@pytest.mark.parametrize(
    ("name", "rank"),
    [("gpu0.log", 0), ("gpu1.log", 1), ("train_gpu3.txt", 3), ("npu-12.out", 12), ("device_5.log", 5)],
)
def test_a_file_named_by_its_device_number_is_that_rank(tmp_path: Path, name: str, rank: int) -> None:
    (tmp_path / name).write_text(SPADE_BLOCK)
    (tmp_path / "gpu99.log").write_text(SPADE_BLOCK)
    assert {f.rank for f in discover_logs(tmp_path)} == {rank, 99}


@pytest.mark.parametrize("name", ["gpus.log", "8gpu.log", "gpu1.csv", "debugpu1.log"])
def test_no_device_word_and_number_or_no_log_suffix_names_no_rank(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(SPADE_BLOCK)
    assert not any(f.rank == 1 or f.rank == 8 for f in discover_logs(tmp_path))


def test_spade_dlinknet_two_gpu_logs_are_two_ranks_with_their_rows() -> None:
    snap = read_run(REAL_LOGS / SPADE / "log")
    assert snap.n_ranks == 2 and snap.layout == "rank_dir"
    rows = snap.metrics.groupby("rank")["loss"]
    assert rows.size().to_dict() == {0: 50, 1: 50}
    assert rows.last().to_dict() == {0: 0.506291830356983, 1: 0.49465998703216146}
