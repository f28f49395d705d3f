"""Issue 30's failure side on round 4's build set: four real logs read wrong on their failure, each closed by a general
rule and checked on its corpus entry's real lines (tests/fixtures/real_logs/<entry>/SOURCE.md), on every read path:

- detectron2-events-rows-then-error-exception-during-training_transfiner-16: detectron2's train loop logging
  `ERROR [...] d2.engine.train_loop]: Exception during training:` ends the run (a failure kind of its own);
- ray-taskrunner-hccl-init-EJ0001-rankid-2_verl-pr-332: torch_npu's `(PID:N, Device:0, RankID:2)` behind Ray's
  `(TaskRunner pid=N) ` prefix names rank 2 (and the CANN line of the same process is rank 2's too);
- composer-cloudwatch-table-tqdm-then-watchdog-ranks-38-33-39_mosaicml-diffusion-70: torch's C++ error level
  `[E ProcessGroupNCCL.cpp:828]` behind a log console's prefix (`  | <stamp> | [1]:`) is an error level, and the
  `[Rank 33]` after it names the failing rank;
- deepspeed-pdsh-worker-5-rank22-traceback-in-initialize-cut_deepspeed-6737: traceback frames whose header was cut
  off (`worker-5: [rank22]:   File "...", line 307, in <module>`) are rank 22's cut traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason
from core.logs.rows.linekinds import opens_traceback
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

PATHS = READ_PATHS  # every way the parser reads a file (tests/helpers.py)
TRANSFINER = "detectron2-events-rows-then-error-exception-during-training_transfiner-16"
VERL = "ray-taskrunner-hccl-init-EJ0001-rankid-2_verl-pr-332"
COMPOSER = "composer-cloudwatch-table-tqdm-then-watchdog-ranks-38-33-39_mosaicml-diffusion-70"
PDSH = "deepspeed-pdsh-worker-5-rank22-traceback-in-initialize-cut_deepspeed-6737"


# ----------------------------------------------------------------------------- detectron2's `Exception during training`


@pytest.mark.parametrize("path", sorted(PATHS))
def test_detectron2_s_exception_during_training_ends_the_run(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, TRANSFINER, path)  # its failed ranks: test_issue30_entry_failures
    assert len(snap.metrics) == 4  # the rows before it stay rows


@pytest.mark.parametrize("path", sorted(PATHS))
def test_detectron2_s_exception_line_then_training_rows_is_no_failure(tmp_path: Path, path: str) -> None:
    rows = entry_lines(TRANSFINER)[1:5]
    snap = read_run(one_log(tmp_path, [rows[0], entry_lines(TRANSFINER)[5], *rows[1:]]), settings=PATHS[path])
    assert not failed_ranks(snap)  # a run that logs it and trains on did not end there


def test_the_words_alone_in_prose_are_no_failure() -> None:
    assert fatal_reason(b"[04/27 13:03:34 d2.engine.hooks]: Exception handling during training is enabled") is None
    assert fatal_reason(entry_lines(TRANSFINER)[5]) == "training loop exception"


# ----------------------------------------------------------------------------- torch_npu's RankID behind Ray's prefix


@pytest.mark.parametrize("path", sorted(PATHS))
def test_npu_rank_id_behind_ray_s_prefix_names_the_failing_rank(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, VERL, path)
    assert set(snap.errors["rank"].dropna().astype(int)) == {2}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_npu_rank_id_minus_one_behind_ray_s_prefix_keeps_the_file_s_rank(tmp_path: Path, path: str) -> None:
    lines = [line.replace(b"RankID:2", b"RankID:-1") for line in entry_lines(VERL)]
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert set(failed_ranks(snap)) == {0}  # `-1`: not known yet, no rank


# ----------------------------------------------------------------------------- torch's C++ error level behind a prefix


@pytest.mark.parametrize("path", sorted(PATHS))
def test_watchdog_lines_behind_a_console_prefix_name_their_ranks(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, COMPOSER, path)
    assert any("Watchdog caught collective operation timeout" in g.exception for g in diagnose(snap).failure_groups)


@given(st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40))
@example("  | 2023-10-05T04:00:22.612-07:00 | [1]:")
@example("")
def test_c10_s_error_level_with_its_file_is_an_error_level_behind_any_prefix(prefix: str) -> None:
    # a prefix that is a failure line of its own (hypothesis found `E00000:`, a CANN code) names the line by its
    # own kind, the first that matches (test_a_prefix_that_is_itself_a_failure_names_the_line); any other prefix
    # leaves the watchdog's kind
    assume(fatal_reason(prefix.encode()) is None)
    message = b"[E ProcessGroupNCCL.cpp:828] [Rank 33] Watchdog caught collective operation timeout: WorkNCCL(...)"
    assert fatal_reason(prefix.encode() + message) == "collective time-out"


def test_a_prefix_that_is_itself_a_failure_names_the_line() -> None:
    message = b"[E ProcessGroupNCCL.cpp:828] [Rank 33] Watchdog caught collective operation timeout: WorkNCCL(...)"
    assert fatal_reason(b"E00000:" + message) == "CANN error"


@pytest.mark.parametrize(
    "line",
    [
        b"[I ProcessGroupNCCL.cpp:835] [Rank 0] NCCL watchdog thread started, timeout 1800000 ms",  # info level
        b"  | 2023-10-05T04:00:22 | [1]:[W socket.cpp:663] the collective timeout is 1800 s",  # warning level
        b"  | [Epoch 3] collective timeout: 1800 s",  # `[E` of a word, no source file
    ],
)
def test_a_time_out_at_another_level_is_no_failure(line: bytes) -> None:
    assert fatal_reason(line) is None


# ----------------------------------------------------------------------------- a traceback whose header was cut off


@pytest.mark.parametrize("path", sorted(PATHS))
def test_frames_without_their_header_are_the_tagged_rank_s_cut_traceback(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, PDSH, path)
    assert "self.module.to(self.device)" in snap.errors["context"].iloc[0]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_plain_frames_then_their_exception_name_the_exception(tmp_path: Path, path: str) -> None:
    frames = [line.split(b"[rank22]:", 1)[1] for line in entry_lines(PDSH)[-2:]]
    snap = read_run(one_log(tmp_path, [*frames, b"torch.OutOfMemoryError: CUDA out of memory."]), settings=PATHS[path])
    assert failed_ranks(snap) == {0: "torch.OutOfMemoryError: CUDA out of memory."}
    assert len(snap.errors) == 1  # the frames' cut traceback is replaced by its exception


@pytest.mark.parametrize("path", sorted(PATHS))
def test_frames_then_training_rows_are_no_failure(tmp_path: Path, path: str) -> None:
    frames = [line.split(b"[rank22]:", 1)[1] for line in entry_lines(PDSH)[:4]]
    rows = [b"step 1 loss 2.5", b"step 2 loss 2.4"]
    snap = read_run(one_log(tmp_path, [*frames, *rows]), settings=PATHS[path])
    assert not failed_ranks(snap) and len(snap.metrics) == 2


@pytest.mark.parametrize(
    "line",
    [
        b'File "train.py" not found',
        b'  File "/x.py", line 12 in main',  # faulthandler's dump (no comma): its own kind reads it
        b'Saved File "ckpt.pt", line 3, in folder',  # the words, not at the line's start
        b"",
    ],
)
def test_a_line_that_is_no_frame_opens_nothing(line: bytes) -> None:
    assert not opens_traceback(line)


@given(
    st.text(st.characters(blacklist_characters='"\n\r', blacklist_categories=("Cs",)), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=10**6),
    st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=20),
    st.sampled_from(["", "  ", "\t"]),
)
@example("/nvfile-data/main_new.py", 307, "<module>", "  ")
def test_every_frame_line_opens_a_traceback(path: str, line: int, name: str, indent: str) -> None:
    assert opens_traceback(f'{indent}File "{path}", line {line}, in {name}'.encode())


@pytest.mark.parametrize("path", sorted(PATHS))
def test_frames_after_a_failure_are_the_rest_of_interleaved_tracebacks(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, "megatron-nan-grad-norm-assert-rank3-interleaved_pai-megatron-patch-60", path)
    assert set(failed_ranks(snap)) == {3}  # no cut traceback of the stream's rank 0 after rank 3's exception
