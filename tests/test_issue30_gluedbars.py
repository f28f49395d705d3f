"""Issue 30's failure side on three real logs of round 3's set-aside third, each closed by a general rule and checked
on its corpus entry's real lines (tests/fixtures/real_logs/<entry>/SOURCE.md), on every read path:

- tqdm-bar-glued-nccl-watchdog-rank-2-and-0_firefly-183: an NCCL watchdog line glued behind a tqdm draw
  (`...16.31s/it][E ProcessGroupNCCL.cpp:821] [Rank 2] Watchdog ...`) names rank 2, not the stream's rank;
- tqdm-bar-glued-rank1-traceback-cut_ms-swift-7266: `[rank1]: Traceback ...` glued behind a draw is rank 1's
  traceback (cut by the log's end: still a failure);
- determined-rank-equals-prefix-rank1-traceback-cut_determined-3275: Determined's `[rank=1] || ` prefix names the
  rank of the traceback after it (core.logs.rows.lineranks, a rank source).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.linekinds import failure_glued_to_bar, reaches_metric_line
from core.logs.rows.lineranks import LineRank, determined_prefix, line_rank
from tests.helpers import READ_PATHS

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"
PATHS = READ_PATHS  # every way the parser reads a file (tests/helpers.py)
FIREFLY = "tqdm-bar-glued-nccl-watchdog-rank-2-and-0_firefly-183"
SWIFT = "tqdm-bar-glued-rank1-traceback-cut_ms-swift-7266"
DETERMINED = "determined-rank-equals-prefix-rank1-traceback-cut_determined-3275"


def _lines(name: str) -> list[bytes]:
    [log] = [p for p in (CORPUS / name / "log").rglob("*") if p.is_file()]
    return log.read_bytes().splitlines()


def _write(tmp_path: Path, lines: list[bytes]) -> Path:
    (tmp_path / "train.log").write_bytes(b"\n".join(lines) + b"\n")
    return tmp_path


# ----------------------------------------------------------------------------- a failure glued behind a bar's draw


def test_the_real_glued_lines_start_their_failure_after_the_draw() -> None:
    firefly, swift = _lines(FIREFLY)[1], _lines(SWIFT)[0]
    assert firefly[failure_glued_to_bar(firefly) :].startswith(b"[E ProcessGroupNCCL.cpp:821] [Rank 2] Watchdog")
    assert swift[failure_glued_to_bar(swift) :] == b"[rank1]: Traceback (most recent call last):"
    assert not reaches_metric_line(firefly, False) and not reaches_metric_line(swift, False)


@pytest.mark.parametrize(
    "line",
    [
        b"  8%|\xe2\x96\x8a         | 567/6834 [2:12:07<23:28:42, 13.49s/it]",  # a draw alone (real, Firefly)
        b" 10%|#         | 1/10 [00:01<00:09,  1.00it/s]Saving checkpoint to out/",  # plain text glued: no failure
        b" 10%|#         | 1/10 [00:01<00:09,  1.00it/s, loss=1.2]Traceback",  # the postfix is no bar end
        b"10%| 1/10 [00:01<00:09,  1.00it/s] \tTraceback (most recent call last):",  # a space: no glue
        b"Traceback (most recent call last):",
        b"",
    ],
)
def test_no_failure_is_glued_where_none_follows_a_draw(line: bytes) -> None:
    assert failure_glued_to_bar(line) == 0


@given(st.binary(max_size=120), st.sampled_from([b"it/s]", b"s/it]", b""]), st.binary(max_size=60))
@example(b" 1/9 [00:01<00:08, 1.00", b"it/s]", b"[rank3]: Traceback (most recent call last):")
def test_a_glued_failure_starts_right_after_a_bar_end(head: bytes, end: bytes, tail: bytes) -> None:
    line = (head + end + tail).replace(b"\n", b" ")
    at = failure_glued_to_bar(line)
    assert 0 <= at <= len(line)
    if at:
        assert at < len(line) and line[:at].endswith((b"it/s]", b"s/it]")) and not line[at : at + 1].isspace()


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_nccl_watchdog_glued_to_a_bar_names_its_rank(tmp_path: Path, path: str) -> None:
    log = Path(shutil.copytree(CORPUS / FIREFLY / "log", tmp_path / "log"))
    snap = read_run(log, settings=PATHS[path])
    assert set(failed_ranks(snap)) == {0, 2}
    assert any("Watchdog caught collective operation timeout" in g.exception for g in diagnose(snap).failure_groups)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_tagged_traceback_glued_to_a_bar_and_cut_is_its_rank_s_failure(tmp_path: Path, path: str) -> None:
    log = Path(shutil.copytree(CORPUS / SWIFT / "log", tmp_path / "log"))
    snap = read_run(log, settings=PATHS[path])
    assert set(failed_ranks(snap)) == {1}
    assert "Traceback" in " ".join(snap.errors["message"])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_bar_with_plain_text_glued_stays_a_healthy_run(tmp_path: Path, path: str) -> None:
    lines = [b"  8%|#  | 567/6834 [2:12:07<23:28:42, 13.49s/it]Saving model checkpoint to out/", b"done"]
    snap = read_run(_write(tmp_path, lines), settings=PATHS[path])
    assert not failed_ranks(snap) and snap.errors.empty


# ----------------------------------------------------------------------------- Determined's `[rank=N] || ` prefix


def test_determined_prefix_names_the_rank_and_where_the_process_line_starts() -> None:
    line = _lines(DETERMINED)[6]
    rank, at = determined_prefix(line) or (None, 0)
    assert rank == 1 and line[at:] == b"Traceback (most recent call last):"
    assert line_rank(line) == LineRank(1, None)
    assert line_rank(_lines(DETERMINED)[0]) == LineRank(0, None)


@pytest.mark.parametrize(
    "line",
    [
        b"<>        [2021-12-07 10:43:00] ef45fdce [rank=x] || Traceback (most recent call last):",
        b"<>        [2021-12-07 10:43:00] ef45fdce [rank=1] Traceback (most recent call last):",  # no `|| `
        b"loss 0.5 [rank=1] || step 3",  # not at the line's start
        b"[rank=",
        b"",
    ],
)
def test_a_line_without_determined_s_prefix_has_none(line: bytes) -> None:
    assert determined_prefix(line) is None


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_traceback_behind_determined_s_prefix_is_its_rank_s_failure(tmp_path: Path, path: str) -> None:
    log = Path(shutil.copytree(CORPUS / DETERMINED / "log", tmp_path / "log"))
    snap = read_run(log, settings=PATHS[path])
    assert set(failed_ranks(snap)) == {1}
    assert set(snap.errors["rank"].dropna().astype(int)) == {1}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_determined_s_prefix_alone_is_no_failure(tmp_path: Path, path: str) -> None:
    snap = read_run(_write(tmp_path, _lines(DETERMINED)[:6]), settings=PATHS[path])
    assert not failed_ranks(snap) and snap.errors.empty
