"""Issue 30, round 8's fold-in rule (written after the set-aside third was scored, from its misses): a prefix before
a file name's rank word. Swin Transformer's logger, and X-CLIP which copies it, write one `log_rank{N}.txt` per rank
(https://github.com/microsoft/VideoX/tree/master/X-CLIP, the corpus entry
`swin-style-log-rank0-rank1-files-seven-launches-one-tab-row-each_xclip-log-rank`); before the rule both files were
"no rank number in its name" and the run read 0 ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.bytes.discover import discover_logs

# a real row of that entry's log_rank0.txt
XCLIP_ROW = (
    "[2024-09-24 09:36:48 ViT-B/16] (main.py 188): INFO Train: [0/50][0/6]\teta 0:08:30 lr 0.000000000\t"
    "time 85.0619 (85.0619)\ttot_loss 0.4772 (0.4772)\tmem 0MB\n"
)


@pytest.mark.parametrize(
    ("name", "rank"),
    [("log_rank0.txt", 0), ("log_rank1.txt", 1), ("train-rank_3.log", 3), ("swin.rank-12.out", 12), ("rank2.log", 2)],
)
def test_a_prefix_before_the_rank_word_names_the_rank(tmp_path: Path, name: str, rank: int) -> None:
    (tmp_path / name).write_text(XCLIP_ROW)
    (tmp_path / "log_rank99.txt").write_text(XCLIP_ROW)
    ranks = {f.rank for f in discover_logs(tmp_path)}
    assert ranks == {rank, 99}


@pytest.mark.parametrize("name", ["ranking0.txt", "log_franks1.txt", "log_rank.txt", "log_rank0.csv"])
def test_no_rank_word_or_no_log_suffix_names_no_rank(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text(XCLIP_ROW)
    assert all(f.rank in (None, 0) for f in discover_logs(tmp_path) if f.rel == name)
    assert not any(f.rank == 1 for f in discover_logs(tmp_path))


def test_two_swin_rank_files_are_two_ranks_with_their_rows(tmp_path: Path) -> None:
    (tmp_path / "log_rank0.txt").write_text(XCLIP_ROW)
    (tmp_path / "log_rank1.txt").write_text(XCLIP_ROW.replace("0.4772 (0.4772)", "0.2790 (0.2790)"))
    snap = read_run(tmp_path)
    assert snap.n_ranks == 2 and snap.layout == "rank_dir"
    last = snap.metrics.groupby("rank")["loss"].last().to_dict()
    assert last == {0: 0.4772, 1: 0.279}
