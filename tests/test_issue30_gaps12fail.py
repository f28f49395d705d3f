"""Issue 30, round 12: launches appended to one file, judged by one rule on every read path.

paddle.distributed.launch opens each rank's `workerlog.N` for appending, so a user's relaunches follow a failed
launch in the same file. The corpus's convention (tests/fixtures/real_logs/README.md's appended runs; the entries
paddleseg-2-workerlogs-sigterm-relaunch-then-16000-iters-complete_pp-industry-workerlog and paddleocr-workerlogs-eval-
restarts-rank1-invalid-cudaplace_robustscanner-paddle): a failure followed by a relaunch is the earlier launch's, and
each rank is judged by its last launch (core.logs.rows.relaunch). A relaunch is told by the file's opening lines
printed again; round 12 finds them also when their numbers differ (a glog prefix's time and thread id, a port), by
their shape: digits and blanks free, the rest as written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.relaunch import opening_lines, opening_shape
from tests.helpers import READ_PATHS, cut_tick_and_once, entry_lines, one_log

# github.com/xjgnqnl/2021-CCF-BDCI---8-/blob/7a6f2c1e41a8b176e8646a35665c9a17c8a7d0dc/log/workerlog.1 (PaddleVideo
# AGCN, paddle.distributed.launch on 2 GPUs, rank 1's file): whole lines 1-5 and 22-34 of its 38 (the traceback's
# outer frames and the last relaunch left out). Launch 1 dies reading its data; the relaunches print the opening again
# with other times, thread ids (` 6714`: glog pads it with a blank) and ports; the last run trains on rank 0 to the end.
PADDLEVIDEO_RANK1 = [
    b"I1005 20:24:27.249872 30412 gen_comm_id_helper.cc:181] Server listening on: 127.0.0.1:32871 successful.",
    b"I1005 20:24:27.297324 30412 nccl_context.cc:74] init nccl context nranks: 2 local rank: 1 gpu id: 1 ring id: 0",
    b"W1005 20:24:28.101145 30412 device_context.cc:404] Please NOTE: device: 1, GPU Compute Capability: 8.6, Driver"
    b" API Version: 11.1, Runtime API Version: 11.0",
    b"W1005 20:24:28.248739 30412 device_context.cc:422] device: 1, cuDNN Version: 8.1.",
    b"Traceback (most recent call last):",
    b'  File "/home/xingkai/anaconda3/envs/CCF/lib/python3.6/site-packages/numpy/lib/npyio.py", line 416, in load',
    b'    fid = stack.enter_context(open(os_fspath(file), "rb"))',
    b"FileNotFoundError: [Errno 2] No such file or directory: 'train_data.npy'",
    b"I1005 20:30:55.159075 32578 gen_comm_id_helper.cc:181] Server listening on: 127.0.0.1:39711 successful.",
    b"I1005 20:30:55.551748 32578 nccl_context.cc:74] init nccl context nranks: 2 local rank: 1 gpu id: 1 ring id: 0",
    b"W1005 20:30:56.437242 32578 device_context.cc:404] Please NOTE: device: 1, GPU Compute Capability: 8.6, Driver"
    b" API Version: 11.1, Runtime API Version: 11.0",
    b"W1005 20:30:56.440842 32578 device_context.cc:422] device: 1, cuDNN Version: 8.1.",
    b"/home/xingkai/anaconda3/envs/CCF/lib/python3.6/site-packages/paddle/nn/layer/norm.py:641: UserWarning: When"
    b" training, we now always track global mean and variance.",
    b'  "When training, we now always track global mean and variance.")',
    b"I1005 20:59:13.677453  6714 gen_comm_id_helper.cc:181] Server listening on: 127.0.0.1:43123 successful.",
    b"I1005 20:59:13.995110  6714 nccl_context.cc:74] init nccl context nranks: 2 local rank: 1 gpu id: 1 ring id: 0",
    b"W1005 20:59:14.917219  6714 device_context.cc:404] Please NOTE: device: 1, GPU Compute Capability: 8.6, Driver"
    b" API Version: 11.1, Runtime API Version: 11.0",
    b"W1005 20:59:14.923683  6714 device_context.cc:422] device: 1, cuDNN Version: 8.1.",
]
FAILURE = 7  # the FileNotFoundError line
# github.com/PaddlePaddle/Paddle/issues/4043: several ranks' glog reports in one mpirun stream, the first its opening
MPIRUN = "mpirun-ranks-37-4-glog-check-failed-socket-timeout-no-rows_paddle-4043"


def _data(lines: list[bytes]) -> bytes:
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_failure_before_the_opening_again_with_other_numbers_is_the_earlier_launch_s(
    tmp_path: Path, path: str
) -> None:
    lines = PADDLEVIDEO_RANK1
    assert lines[FAILURE + 1] != lines[0] and lines[FAILURE + 1][:6] == lines[0][:6]  # other numbers, same shape
    snap = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path])
    assert failed_ranks(snap) == {}
    assert "error_log" in set(snap.errors["kind"])  # the earlier launch's failure is still listed
    # without a relaunch after it the failure ends the rank
    cut = read_run(one_log(tmp_path, lines[: FAILURE + 1]), settings=READ_PATHS[path])
    assert list(failed_ranks(cut)) == [0]
    # a relaunch that fails again ends the rank with its own failure
    again = read_run(one_log(tmp_path, [*lines, *lines[4 : FAILURE + 1]]), settings=READ_PATHS[path])
    assert list(failed_ranks(again)) == [0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.floats(0, 1))
@example(at=0.0)
@example(at=1.0)
@example(at=0.5)  # inside the first relaunch's opening
def test_a_live_tick_cut_anywhere_reads_the_relaunch_as_one_read_does(
    tmp_path_factory: pytest.TempPathFactory, at: float
) -> None:
    data = _data(PADDLEVIDEO_RANK1)
    live, once = cut_tick_and_once(tmp_path_factory.mktemp("cut"), "workerlog.1", data, int(at * len(data)))
    assert failed_ranks(live) == failed_ranks(once) == {}


def test_line_by_line_ticks_read_the_relaunch(tmp_path: Path) -> None:
    from core.logs.rows.reader import RunReader

    log = tmp_path / "workerlog.1"
    log.write_bytes(b"")
    reader = RunReader(tmp_path)
    seen = []
    for line in PADDLEVIDEO_RANK1:
        with log.open("ab") as f:
            f.write(line + b"\n")
        reader.refresh()
        seen.append(bool(failed_ranks(reader.snapshot())))
    assert seen[FAILURE] and not seen[-1]  # failed once its exception line came, not once the relaunch opened


def test_an_opening_has_a_shape_only_when_its_lines_differ_in_more_than_numbers() -> None:
    opening = opening_lines(_data(PADDLEVIDEO_RANK1)[:256])
    assert opening is not None
    shape = opening_shape(opening)
    assert shape is not None
    anchor, pattern = shape
    assert anchor == b"gen_comm_id_helper.cc:"  # the longest piece of the first line as written: the quick test
    assert pattern.match(b"\n" + _data(PADDLEVIDEO_RANK1[FAILURE + 7 :]))  # `  6714`: blanks free too
    assert not pattern.match(b"\n" + _data(PADDLEVIDEO_RANK1[2:]))  # the file's other glog lines
    # a line printed again with other numbers (a progress line) is no opening's shape, nor are lines of numbers only
    assert opening_shape(b"epoch: 1 step: 1, loss is 2.31\nepoch: 1 step: 2, loss is 2.29\nepoch: 1 st") is None
    assert opening_shape(b"0.125 0.5 17\n0.25 0.75 18\n") is None


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_an_opening_that_is_a_failure_s_own_lines_is_no_launch_s_start(tmp_path: Path, path: str) -> None:
    """mpirun's stream opens with rank 37's glog `F0911 ... Check failed` and its `*** Check failure stack trace:
    ***`; rank 4's same pair follows, other numbers, same shape: another rank's report, no relaunch."""
    lines = entry_lines(MPIRUN)
    assert b"[1,37]<stderr>:F0911" in lines[0] and b"[1,4]<stderr>:F0911" in lines[2]
    snap = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path])
    assert sorted(failed_ranks(snap)) == [4, 37]


# ----------------------------------------------------------------------------- a C++ exception's origin line

# github.com/zd11024/NaviLLM/issues/34: a paste hard-wrapped at 102 columns that opens with c10::Error's origin line
NAVILLM = "hard-wrapped-watchdog-frames-then-torchrun-exitcode-minus-6-traceback_navillm-34"
# github.com/huggingface/trl/issues/1405: rank 3's tagged watchdog lines, then the untagged origin line and frames
TRL_1405 = "nccl-watchdog-rank3-then-frames_trl-1405"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_paste_that_kept_only_the_origin_line_is_named_by_it(tmp_path: Path, path: str) -> None:
    lines = entry_lines(NAVILLM)
    assert lines[0].startswith(b"Exception raised from ncclCommWatchdog at ")
    snap = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path])
    assert list(failed_ranks(snap)) == [0]
    [group] = diagnose(snap).failure_groups  # named by its best-named failure, not the agent's cut traceback after it
    assert "ncclCommWatchdog" in group.exception


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_origin_line_after_a_failure_goes_on_with_it(tmp_path: Path, path: str) -> None:
    lines = entry_lines(TRL_1405)
    at = next(i for i, line in enumerate(lines) if line.startswith(b"Exception raised from checkTimeout"))
    assert lines[at - 1].startswith(b"[rank3]:")  # the watchdog's tagged line just before it; the origin is untagged
    snap = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path])
    assert list(failed_ranks(snap)) == [3]  # no failure of the stream's own rank 0 from the untagged line
    assert not any(str(m).startswith("Exception raised from") for m in snap.errors["message"])
