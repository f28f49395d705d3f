"""Round 7 of issue 30's measure, judgement side: a failure before the program started over in the same file is
the earlier launch's, not the rank's end (`core.logs.rows.failures._relaunched`, read by `trained_on`).

Real lines: Sunting78/PP-Industry `log/workerlog.1` at commit 891730bc0f32e8a207a46d88a72c85c9ba28857c
(https://github.com/Sunting78/PP-Industry/blob/891730bc0f32e8a207a46d88a72c85c9ba28857c/log/workerlog.1), PaddleSeg
on 2 GPUs through paddle.distributed.launch: the first launch ends in Paddle's SIGTERM report, the second one
appends to the same file from its opening line on (rank 1 prints no rows: PaddleSeg logs on rank 0 only), and the
run completes on rank 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.judgement.status import failed_ranks
from tests.helpers import READ_PATHS

OPENING = (
    "/ssd3/sunting/anaconda3/envs/industry/lib/python3.7/site-packages/sklearn/utils/validation.py:37: "
    "DeprecationWarning: distutils Version classes are deprecated. Use packaging.version instead.\n"
    "  LARGE_SPARSE_SUPPORTED = LooseVersion(scipy_version) >= '0.14.0'\n"
)
FIRST = (
    "W0306 19:38:04.982383  3384 gpu_resources.cc:61] Please NOTE: device: 1, GPU Compute Capability: 7.0, Driver "
    "API Version: 11.7, Runtime API Version: 10.2\n"
    "I0306 19:38:11.653951  3384 tcp_utils.cc:130] Successfully connected to 10.9.189.6:41933\n"
    "\n\n--------------------------------------\nC++ Traceback (most recent call last):\n"
    "--------------------------------------\n"
    "0   egr::Backward(std::vector<paddle::experimental::Tensor, std::allocator<paddle::experimental::Tensor> > "
    "const&, std::vector<paddle::experimental::Tensor, std::allocator<paddle::experimental::Tensor> > const&, bool)\n"
    "7   cudnnConvolutionBackwardData\n\n"
    "----------------------\nError Message Summary:\n----------------------\n"
    "FatalError: `Termination signal` is detected by the operating system.\n"
    '  [TimeInfo: *** Aborted at 1678102805 (unix time) try "date -d @1678102805" if you are using GNU date ***]\n'
    "  [SignalInfo: *** SIGTERM (@0x41400000cfc) received by PID 3384 (TID 0x7fca842ca700) from PID 3324 ***]\n\n"
)
SECOND = (
    "W0306 19:40:53.167418 23873 gpu_resources.cc:61] Please NOTE: device: 1, GPU Compute Capability: 7.0, Driver "
    "API Version: 11.7, Runtime API Version: 10.2\n"
    "I0306 19:41:00.904317 23873 tcp_utils.cc:130] Successfully connected to 10.9.189.6:61668\n"
)


def _log(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "workerlog.0").write_text(text)
    return folder


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_launch_that_ends_in_sigterm_fails_the_rank(tmp_path: Path, path: str) -> None:
    snap = read_run(_log(tmp_path, OPENING + FIRST), settings=READ_PATHS[path])
    assert list(failed_ranks(snap)) == [0]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_relaunch_appended_to_the_file_supersedes_the_earlier_launchs_failure(tmp_path: Path, path: str) -> None:
    snap = read_run(_log(tmp_path, OPENING + FIRST + OPENING + SECOND), settings=READ_PATHS[path])
    assert failed_ranks(snap) == {}
    # the SIGTERM report stays listed, as error lines of the earlier launch
    assert any("Termination signal" in m for m in snap.errors["message"])
    assert set(snap.errors["kind"]) == {"error_log"}


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_failure_after_the_relaunch_is_the_ranks_end(tmp_path: Path, path: str) -> None:
    snap = read_run(_log(tmp_path, OPENING + FIRST + OPENING + SECOND + FIRST), settings=READ_PATHS[path])
    assert list(failed_ranks(snap)) == [0]


def test_a_short_opening_line_is_no_sign_of_a_launch(tmp_path: Path) -> None:
    """An opening line too short to tell a launch (a blank, a word) recurs anyway: no relaunch."""
    snap = read_run(_log(tmp_path, "start\n" + FIRST + "start\n" + SECOND))
    assert list(failed_ranks(snap)) == [0]
