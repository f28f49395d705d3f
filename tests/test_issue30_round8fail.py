"""Issue 30 on round 8's build set: the failure judgements read wrong, each closed by a general rule and checked on
the real lines of its log (the source beside each), on every read path:

- a ModelArts job's toolkit says the training command ended non-zero (`level=error msg="bootstrap is exiting with
  exit code -1"`; MindCV gMLP, github.com/2024-MindSpore-1/Code3 replknet/logs/gMLP.txt): the `ModelArts` launcher
  report, rank 0, its exit code kept as printed (-1 is the toolkit's code, no signal);
- an excepthook's `CRITICAL ... Uncaught OLMoThreadError: ...` (allenai/OLMo#552): the `uncaught exception` kind;
- OLMo's tab-separated console lines name their rank after the host (`host-03:5<TAB>`, AntonioLopardo/OLMo
  logs/OLMo-1B-tied.log): each rank's `Uncaught OutOfMemoryError` line is that rank's failure;
- a shell's `Terminated` (after cursor-key escapes `^[[A`, Ascend/pytorch#154): the run stopped from outside.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import rank_status, read_run
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason
from core.logs.rows.lineranks import line_rank
from core.logs.rows.taskends import task_end
from tests.helpers import READ_PATHS, one_log

PATHS = READ_PATHS

# github.com/2024-MindSpore-1/Code3/blob/d415a52c49b89105f85734bd928aaa225d746300/replknet/logs/gMLP.txt (its end)
GMLP = [
    b"[2023-08-01 09:39:15] mindcv.utils.callbacks INFO - Epoch: [214/300], batch: [625/625], loss: 6.867551, "
    b"lr: 0.000217, time: 758.335402s",
    b'time="2023-08-01T09:48:15+08:00" level=info msg="stop run_command_pid" file="run_train.go:351" '
    b"Command=bootstrap/run Component=ma-training-toolkit Platform=ModelArts-Service",
    b'time="2023-08-01T09:48:15+08:00" level=error msg="bootstrap is exiting with exit code -1" '
    b'file="bootstrap.go:243" Command=bootstrap/run Component=ma-training-toolkit Platform=ModelArts-Service',
    b'time="2023-08-01T09:48:16+08:00" level=info msg="[sidecar] training is completed" Component=ShellScripts '
    b"Platform=ModelArts-Service",
    b"success",
]
# the same toolkit's healthy word after its init step (tests/fixtures/real_logs/
# mindcv-botnet50-modelarts-120-epochs-then-obs-copy-filenotfound-exit-255_code3-botnet)
MA_INIT_OK = (
    b'time="2023-08-02T21:57:36+08:00" level=info msg="bootstrap is exiting with exit code 0" '
    b'file="bootstrap.go:241" Command=bootstrap/init Component=ma-training-toolkit Platform=ModelArts-Service'
)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_modelarts_bootstrap_exit_code_ends_the_job(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, GMLP), settings=PATHS[path])
    assert "exit code -1" in failed_ranks(snap)[0]
    assert set(failed_ranks(snap)) == {0}


def test_modelarts_exit_code_is_kept_as_printed() -> None:
    end = task_end(GMLP[2])
    assert end is not None and end.ranks == (0,) and end.reason == "exit code -1"  # not `signal 1`
    assert task_end(MA_INIT_OK) is None  # exit code 0: the init step's healthy end


@pytest.mark.parametrize("path", sorted(PATHS))
def test_modelarts_init_exit_zero_is_no_failure(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, [MA_INIT_OK, GMLP[0]]), settings=PATHS[path])
    assert failed_ranks(snap) == {}


# github.com/allenai/OLMo/issues/552 (the whole pasted log)
OLMO_552 = [
    b"[2024-04-18 19:06:17] INFO     [olmo.train:816, rank=0] [step=75/739328]",
    b"    train/CrossEntropyLoss=7.417",
    b"    train/Perplexity=1,664",
    b"[2024-04-18 19:10:41] CRITICAL [olmo.util:158, rank=0] Uncaught OLMoThreadError: generator thread data thread 3 "
    b"failed",
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_uncaught_exception_line_ends_the_rank(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, OLMO_552), settings=PATHS[path])
    assert "Uncaught OLMoThreadError" in failed_ranks(snap)[0]


def test_uncaught_needs_an_exception_name_and_its_message() -> None:
    assert fatal_reason(OLMO_552[3]) == "uncaught exception"
    assert fatal_reason(b"2024-04-18 INFO installing the handler for Uncaught exceptions: olmo.util") is None
    assert fatal_reason(b"INFO Uncaught RuntimeError count 0") is None  # no `: ` after the name


# github.com/AntonioLopardo/OLMo/blob/c3c25dc5dffdbb29ab763fa38e4cd2239be257e8/logs/OLMo-1B-tied.log (lines cut)
OLMO_TAB = [
    b"2025-12-12 16:00:13.366\ttiny-time-shines-fin-03:0\ttrain:375\tINFO\tStarting training...",
    b"2025-12-12 16:00:32.886\ttiny-time-shines-fin-03:0\tolmo.util:168\tCRITICAL\tUncaught OutOfMemoryError: CUDA "
    b"out of memory. Tried to allocate 12.28 GiB. GPU 0 has a total capacity of 267.69 GiB of which 4.16 GiB is free.",
    b"2025-12-12 16:00:38.012\ttiny-time-shines-fin-03:5\tolmo.util:168\tCRITICAL\tUncaught OutOfMemoryError: CUDA "
    b"out of memory. Tried to allocate 12.28 GiB. GPU 5 has a total capacity of 267.69 GiB of which 4.16 GiB is free.",
    b"2025-12-12 16:00:38.044\ttiny-time-shines-fin-03:1\tolmo.util:168\tCRITICAL\tUncaught OutOfMemoryError: CUDA "
    b"out of memory. Tried to allocate 12.28 GiB. GPU 1 has a total capacity of 267.69 GiB of which 4.16 GiB is free.",
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_olmo_host_column_names_each_failed_rank(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, OLMO_TAB), settings=PATHS[path])
    failed = failed_ranks(snap)
    assert set(failed) == {0, 1, 5}
    assert all("out of memory" in why for why in failed.values())


def test_the_host_column_rank_needs_the_date_and_tabs() -> None:
    said = line_rank(OLMO_TAB[2])
    assert said is not None and said.rank == 5
    assert line_rank(b"2025-12-12 16:00:38.012 tiny-time-shines-fin-03:5 olmo.util:168 INFO x") is None  # blanks
    assert line_rank(b"epoch:5\tloss:0.3\t") is None  # a tab-separated row, no date before it


# github.com/Ascend/pytorch/issues/154 (the log's last two lines, `^[[A` as the issue pasted the cursor keys)
NPU_154 = [
    b"[rank1]:W0721 14:42:21.497000 3204244 torch/_inductor/debug.py:518] [0/0] model__0_forward_1 debug trace: "
    b"/home/ubuntu/workspace/nanochat-ascend/torch_compile_debug/run_2026_07_21_14_41_09_011532-pid_3204244/"
    b"torchinductor/model__0_forward_1.0",
    b"rank 0: forward+backward compile=110.46s, loss=10.5788",
    b"^[[A^[[A^[[ATerminated",
]


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("last", [b"^[[A^[[A^[[ATerminated", b"\x1b[A\x1b[ATerminated", b"Terminated"])
def test_a_shell_s_terminated_stops_the_run(tmp_path: Path, path: str, last: bytes) -> None:
    snap = read_run(one_log(tmp_path, [*NPU_154[:2], last]), settings=PATHS[path])
    assert set(failed_ranks(snap)) == {0}
    state = rank_status(snap)
    assert state.loc[state["rank"] == 0, "state"].tolist() == ["stopped"]  # from outside, not crashed


def test_terminated_only_as_the_line_s_whole_word() -> None:
    assert fatal_reason(b"srun: error: DEL2212S020: task 0: Terminated") != "terminated"  # srun's collateral
    assert fatal_reason(b"INFO worker 3 Terminated normally after 120 steps") is None
    # Paddle's DataLoader line (ppdet-rtdetr-2-workerlogs-rows-eval-then-sigterm_m2s-detr): not a bare `Terminated`
    line = b"SystemError: (Fatal) DataLoader process (pid 1244489) exited is killed by signal: Terminated."
    assert fatal_reason(line) != "terminated"
