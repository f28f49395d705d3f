"""Issue 30 on round 10's build set: failure, rank and layout readings closed by general rules, each checked on the
real lines of its log (the source beside each), on every read path:

- model-zoo `train.log{r}` files copied side by side out of their `device{r}/` folders (mindspore-lab/models
  LPCNet-mls_polish train_results): one rank per file, the rank glued to `.log`; a rotated `train.log.1` is none;
- torchrun's `--log-dir` folder (`attempt_0/{r}/stdout.log`, `stderr.log`; VirenLoka/GlueFormer logs/tmp/
  torchrun_logs): one rank per numbered folder;
- the shell's `已杀死` (zh_CN `Killed`, PaddlePaddle/PaddleOCR#528): the "signal (localized)" kind;
- argparse's `PROG: error: unrecognized arguments: ...` (BruceRayWilson/PBL_sambanova_starter slurm.out): the
  "argparse error" kind;
- torchrun's ChildFailedError report with its separators eaten (`rank2 (local rank: 2)exitcode: -9 ...`,
  ZhehengJiangLancaster/AMVUR#2): rank 2's report;
- msrun's grep of its worker logs (`./prof_vllm_log/worker_6.log:23:ModuleNotFoundError: ...`, Watsontao/mindrlhf
  vllm-checkpoint.log): each block's failure is its worker's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import discover_logs, read_run
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason
from core.logs.rows.lineranks import grep_prefix, line_rank
from core.logs.rows.taskends import task_end
from tests.helpers import READ_PATHS, one_log

PATHS = READ_PATHS

# github.com/mindspore-lab/models research/xidian/LPCNet-mls_polish/train_results/device0/train.log0 (its head; the
# eight files are byte-identical)
LPCNET = [
    b"Traceback (most recent call last):",
    b'  File "train_lpcnet_parallel.py", line 125, in <module>',
    b"    init()",
    b"RuntimeError: Ascend error occurred, error message: EI0004: The ranktable is invalid,Reason:[Invalid ranktable "
    b"format.]. Please check the configured ranktable.[/media/data1/xidian/xy/models/official/audio/LPCNet/"
    b"hccl_8p.json]",
]


def test_rank_logs_named_log_and_their_rank_side_by_side_are_one_rank_each(tmp_path: Path) -> None:
    for rank in range(8):
        (tmp_path / f"train.log{rank}").write_bytes(b"\n".join(LPCNET) + b"\n")
    files = discover_logs(tmp_path)
    assert {f.rank: f.rel for f in files if f.role == "worker"} == {r: f"train.log{r}" for r in range(8)}
    snap = read_run(tmp_path)
    assert set(failed_ranks(snap)) == set(range(8))
    assert "EI0004" in failed_ranks(snap)[3]


def test_a_rotated_log_is_no_rank(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_bytes(b"epoch: 1 step: 1, loss is 2.5\n")
    (tmp_path / "train.log.1").write_bytes(b"epoch: 1 step: 1, loss is 2.5\n")
    assert all(f.rank != 1 for f in discover_logs(tmp_path))


# github.com/VirenLoka/GlueFormer logs/tmp/torchrun_logs/606ed3b8-914d-4194-a54d-25efe5a6afa7_5bufatp6/attempt_0
GLUE_STDOUT = [
    b"Epoch 38 | Step 5450 | Loss 2.1719 | LR 1.65e-04",
    b"Epoch 38 | Step 5500 | Loss 2.1619 | LR 1.64e-04",
    b"[rank 0] Saved checkpoint \xe2\x86\x92 checkpoints/checkpoint_epoch0038.pt",
    b"Epoch 39 | Step 5550 | Loss 2.1554 | LR 1.64e-04",
]
GLUE_STDERR = [
    b"[rank{r}]: Traceback (most recent call last):",
    b'[rank{r}]:   File "/home/jovyan/GlueFormer/train.py", line 636, in <module>',
    b"[rank{r}]:     main()",
    b"[rank{r}]: KeyboardInterrupt",
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_torchruns_log_dir_gives_one_rank_per_numbered_folder(tmp_path: Path, path: str) -> None:
    attempt = tmp_path / "run" / "attempt_0"
    for rank in range(3):
        (attempt / str(rank)).mkdir(parents=True)
        lines = GLUE_STDOUT if rank == 0 else [x.replace(b"{r}", str(rank).encode()) for x in GLUE_STDERR]
        (attempt / str(rank) / ("stdout.log" if rank == 0 else "stderr.log")).write_bytes(b"\n".join(lines) + b"\n")
    files = discover_logs(attempt)
    assert {f.rank for f in files if f.role == "worker"} == {0, 1, 2}
    assert {f.layout for f in files} == {"torchrun"}
    snap = read_run(attempt, settings=PATHS[path])
    assert snap.metrics[snap.metrics["rank"] == 0]["loss"].tolist() == [2.1719, 2.1619, 2.1554]
    assert set(failed_ranks(snap)) == {1, 2}
    assert "KeyboardInterrupt" in failed_ranks(snap)[2]


def test_a_dated_folder_is_no_torchrun_rank(tmp_path: Path) -> None:
    (tmp_path / "20240101").mkdir()
    (tmp_path / "20240101" / "stdout.log").write_bytes(b"epoch: 1 step: 1, loss is 2.5\n")
    assert [f.rank for f in discover_logs(tmp_path)] == [0]  # a folder's one log: rank 0, never rank 20240101


# github.com/PaddlePaddle/PaddleOCR/issues/528 (the pasted log's end)
PADDLEOCR = [
    b"2020-08-14 12:31:13,185-INFO: epoch: 250, iter: 14000, 'lr': 0.001, 'total_loss': 1.767075, 'loss_shrink_maps'"
    b": 0.977566, 'loss_threshold_maps': 0.591641, 'loss_binary_maps': 0.195368, time: 4.353",
    b"2020-08-14 12:31:14,472-INFO: test tackling num:8",
    b"2020-08-14 12:31:32,695-INFO: test tackling num:64",
    "已杀死".encode(),
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_shells_localized_killed_ends_the_run(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, PADDLEOCR), settings=PATHS[path])
    assert snap.metrics["loss"].tolist() == [1.767075]
    assert "已杀死" in failed_ranks(snap)[0]


@pytest.mark.parametrize(
    "line",
    ["段错误 (核心已转储)", "已放弃（核心已转储）", "run.sh: 行 7: 4242 已杀死  python train.py"],
)
def test_other_localized_signal_words_are_the_same_kind(line: str) -> None:
    assert fatal_reason(line.encode()) == "signal (localized)"


@pytest.mark.parametrize("line", ["已杀死的进程不会重启", "训练已杀死 0 个进程"])
def test_the_word_inside_a_sentence_is_no_signal(line: str) -> None:
    assert fatal_reason(line.encode()) is None


# github.com/BruceRayWilson/PBL_sambanova_starter/blob/a61c08231eeaa44253be93e27564d2677462047c/slurm.out (its end)
SAMBANOVA = [
    b"Test Accuracy: 89.23  Loss: 0.3676",
    b"usage: sn_boilerplate_main.py [-h] {compile,run,test,measure-performance} ...",
    b"sn_boilerplate_main.py: error: unrecognized arguments: -ws 8",
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_an_argparse_error_ends_the_job(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, SAMBANOVA), settings=PATHS[path])
    assert "unrecognized arguments: -ws 8" in failed_ranks(snap)[0]


@pytest.mark.parametrize(
    "line",
    [
        b"gcc: error: unrecognized command-line option '-mavx512'",  # a compiler's, not argparse's message
        b"train.py:12:5: error: expected ';' before '}' token",
        b"summary: error: 0.31 on the test set",
    ],
)
def test_other_error_lines_are_no_argparse_error(line: bytes) -> None:
    assert fatal_reason(line) != "argparse error"


# github.com/ZhehengJiangLancaster/AMVUR/issues/2 (the whole pasted report, separators eaten by the paste)
AMVUR = [
    b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    b"experiments/supervised HO3D V2.py FAILED",
    b"Root Cause (first observed failure) :",
    b"[0]:",
    b"rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>",
    b"traceback : signal 9 (SIGKILL) received by PID 36071",
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_childfailed_report_without_its_separators_names_its_rank(tmp_path: Path, path: str) -> None:
    end = task_end(AMVUR[4])
    assert end is not None and end.ranks == (2,) and end.reason == "signal 9"
    snap = read_run(one_log(tmp_path, AMVUR), settings=PATHS[path])
    assert 2 in failed_ranks(snap) and "signal 9" in failed_ranks(snap)[2]


# github.com/Watsontao/mindrlhf/blob/55deb2881f0d2a18ee9667972cde3380943c0a41/Baseline_12.08_Qwen2.5-7b_GSM8K/code/
# .ipynb_checkpoints/vllm-checkpoint.log: msrun's console, the grep blocks of two workers
def _grep_block(name: str) -> list[bytes]:
    head = f"./prof_vllm_log/{name}".encode()
    return [
        head + b"-11-2025-12-05 22:27:31,067 - mindformers./output/log[mindformers/version_control.py:95] - INFO - "
        b"The environment variables ENABLE_LAZY_INLINE and ENABLE_LAZY_INLINE_NO_PIPELINE will be deprecated",
        head + b":12:Traceback (most recent call last):",
        head + b'-13-  File "/home/ma-user/work/mindrlhf/examples/grpo/qwen_grpo_tutorial/main.py", line 20, in '
        b"<module>",
        head + b"-14-    from mindrlhf.trainer.spmd.grpo_trainer import GRPOTrainer",
        head + b"-22-    from research.deepseek3.deepseek3_config import DeepseekV3Config",
        head + b":23:ModuleNotFoundError: No module named 'research'",
        head + b"-24-[MS_ALLOC_CONF]Runtime config:  memory_tracker:False  enable_vmm:True",
        b"--",
    ]


MSRUN = [
    b"Start worker process with rank id:6, log file:./prof_vllm_log/worker_6.log. Environment variable [RANK_ID=6] is "
    b"exported.",
    *_grep_block("worker_6.log"),
    *_grep_block("worker_1.log"),
]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_msruns_grep_of_worker_logs_names_each_blocks_worker(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, MSRUN), settings=PATHS[path])
    judged = failed_ranks(snap)
    assert {1, 6} <= set(judged)
    assert "No module named 'research'" in judged[6] and "No module named 'research'" in judged[1]


def test_a_grep_prefix_names_its_worker_and_where_its_line_starts() -> None:
    line = MSRUN[-3]
    assert grep_prefix(line) == (1, len(b"./prof_vllm_log/worker_1.log:23:"))
    said = line_rank(line)
    assert said is not None and said.rank == 1
    # a path naming a worker log inside a message is no prefix
    assert grep_prefix(b"log file:./prof_vllm_log/worker_6.log:23: is missing") is None
    assert grep_prefix(MSRUN[0]) is None
