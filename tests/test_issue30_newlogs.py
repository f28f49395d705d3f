"""Issue 30 on the corpus's new real logs: the general rules they needed (items 1, 2 and 4), each on a real line.

Every line below is quoted from a log of tests/fixtures/real_logs (the entry is named beside it; its SOURCE.md says
where the log comes from). Each rule is general (a notation, a series rule, a failure kind, a layout), never a match
for one file: the hypothesis tests hold the parsers to it over generated values and prefixes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.__main__ import main
from core.logs import ReaderSettings, read_run
from core.logs.bytes.discover import discover_logs
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason, line_tag, task_end
from core.logs.rows.general import read_line
from core.logs.rows.linekinds import failure_after_tag
from core.logs.rows.reader import RunReader
from tests.helpers import READ_PATHS

CORPUS = Path(__file__).parent / "fixtures" / "real_logs"


def _one_file(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    return folder


def _verdicts(folder: Path, capsys: pytest.CaptureFixture) -> tuple[set[int], set[int]]:
    """(diagnose's failing ranks, `watch --once`'s): the two commands must agree."""
    assert main(["diagnose", str(folder), "--json"]) in (0, 1)
    groups = json.loads(capsys.readouterr().out)["failure_groups"]
    main(["watch", str(folder), "--once"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("failed ranks: "))
    words = line.removeprefix("failed ranks: ").split(" (")[0]
    return {r for g in groups for r in g["ranks"]}, set() if words == "none" else {int(r) for r in words.split(",")}


# ----------------------------------------------------------------------------- failure kinds (item 4)

STOP_LINES = [
    # chainer-exception-in-main-training-loop-replica-0_espnet-3288
    b"Exception in main training loop: Caught RuntimeError in replica 0 on device 0.",
    # loss-not-finite-skips-then-terminates_3d-r1-16
    b"Loss in not finite. Terminate training.",
]


@pytest.mark.parametrize("line", STOP_LINES)
def test_a_trainer_that_says_it_stops_is_a_named_failure(line: bytes) -> None:
    assert fatal_reason(line) == "trainer stop"


def test_a_step_skipped_for_a_non_finite_loss_is_no_failure() -> None:
    # loss-not-finite-skips-then-terminates_3d-r1-16: the four lines before the one that stops
    assert fatal_reason(b"Loss in not finite. Skip this training step.") is None


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # verl-ray-hccl-init-ERR02200_verl-3947 (behind Ray's prefix, below)
        (
            b"[ERROR] 2025-10-29-02:17:03 (PID:144556, Device:0, RankID:0) ERR02200 DIST call hccl api failed.",
            "torch_npu error code",  # the wrapper's code: named, below the CANN code or collective line beside it
        ),
        # ray-actor-sigsegv-repeated-across-cluster_fla-npu-272
        (
            b"[2026-08-05 07:11:08,188 E 3848117 3848117] logging.cc:501: *** SIGSEGV received at time=1785913868 "
            b"on cpu 169 *** [repeated 7x across cluster]",
            "signal",
        ),
    ],
)
def test_ascend_err_codes_and_absl_signal_reports(line: bytes, kind: str) -> None:
    assert fatal_reason(line) == kind


@pytest.mark.parametrize(
    ("line", "ranks", "launcher"),
    [
        # torchrun-childfailed-report-4-ranks_insightface-2182: the root-cause table's rank lines
        (b"  rank      : 2 (local_rank: 2)", (2,), "torchrun"),
        # deepspeed-launcher-return-code-minus-9-during-build_deepspeed-3512
        (
            b"[2023-05-11 07:34:44,846] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
            b"'--local_rank=0', '--zero_stage', '0', '--deepspeed'] exits with return code = -9",
            (0,),
            "deepspeed",
        ),
        # paddle-launch-abort-rank-3-train-job-failed_paddle-33074
        (
            b"ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process "
            b"with rank=[3] was aborted. Please check its log.",
            (3,),
            "paddle",
        ),
        # detectron2-launch-spawn-process-2-terminated_detr-282
        (b"-- Process 2 terminated with the following error:", (2,), "torch.multiprocessing"),
    ],
)
def test_launcher_reports_name_the_failed_rank(line: bytes, ranks: tuple[int, ...], launcher: str) -> None:
    ended = task_end(line)
    assert ended is not None and ended.ranks == ranks and ended.launcher == launcher


def test_a_deepspeed_exit_of_zero_is_no_failure() -> None:
    assert task_end(b"[launch.py:347:main] Process 4242 exits with return code = 0") is None


@given(st.integers(0, 1 << 20), st.integers(-64, 255).filter(lambda c: c != 0))
def test_deepspeed_report_reads_any_rank_and_code(rank: int, code: int) -> None:
    line = f"[ERROR] [launch.py:434:sigkill_handler] ['python', '--local_rank={rank}'] exits with return code = {code}"
    ended = task_end(line.encode())
    assert ended is not None and ended.ranks == (rank,)
    assert ended.reason == (f"signal {-code}" if code < 0 else f"exit code {code}")


def test_torchrun_childfailed_table_fails_every_listed_rank(capsys: pytest.CaptureFixture) -> None:
    folder = CORPUS / "torchrun-childfailed-report-4-ranks_insightface-2182" / "log"
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched and {0, 1, 2, 3} <= watched


def test_spawned_process_named_in_the_launchers_traceback_fails(capsys: pytest.CaptureFixture) -> None:
    folder = CORPUS / "detectron2-launch-spawn-process-2-terminated_detr-282" / "log"
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched and 2 in watched


# ----------------------------------------------------------------------------- prefixes and named ranks


@pytest.mark.parametrize(
    ("line", "rank", "rest"),
    [
        # nccl-distbackenderror-rank-tags-ofi_nccl-1928: torch's tag then a space, then the traceback's header
        (b"[rank2]: Traceback (most recent call last):", 2, b"Traceback (most recent call last):"),
        # verl-ray-hccl-init-ERR02200_verl-3947: Ray's prefix
        (
            b"(TaskRunner pid=30188) RuntimeError: create_config: HCCL function error: hcclCommInitRootInfoConfig(), "
            b"error code is 4",
            None,
            b"RuntimeError: create_config",
        ),
    ],
)
def test_a_failure_after_a_tag_and_its_space_is_read_as_its_own_line(
    line: bytes, rank: int | None, rest: bytes
) -> None:
    skip, named = failure_after_tag(line, False)
    assert named == rank and line[skip:].startswith(rest)


def test_a_pending_tracebacks_indented_frame_behind_a_tag_keeps_its_indent() -> None:
    line = b'[rank2]:   File "/lus/scratch/builder/pytorch_dist_resnet_benchmark.py", line 301, in <module>'
    skip, rank = failure_after_tag(line, True)
    assert rank == 2 and line[skip:].startswith(b" ") and line[skip:].lstrip().startswith(b"File")


@given(st.from_regex(r"\([A-Za-z_][A-Za-z0-9_.]{0,20} pid=[0-9]{1,7}\) ", fullmatch=True), st.binary(max_size=30))
def test_rays_prefix_is_always_a_prefix(prefix: str, rest: bytes) -> None:
    rank, skip = line_tag(prefix.encode() + rest)
    assert rank is None and skip == len(prefix)


@pytest.mark.parametrize(
    ("entry", "ranks"),
    [
        ("nccl-distbackenderror-rank-tags-ofi_nccl-1928", {2, 3}),  # `[rank2]: Traceback` cut by the excerpt's end
        ("rank-tag-SetPrecisionMode-500001_xtuner-1407", {0}),
        ("verl-ray-hccl-init-ERR02200_verl-3947", {0}),
        ("ray-actor-sigsegv-repeated-across-cluster_fla-npu-272", {0}),
        ("chainer-exception-in-main-training-loop-replica-0_espnet-3288", {0}),
        ("loss-not-finite-skips-then-terminates_3d-r1-16", {0}),
        ("paddle-launch-abort-rank-3-train-job-failed_paddle-33074", {3}),
        # ` AssertionError: Rank 114: found NaN ...` (indented as pasted) names its rank on a one-stream log
        ("megatron-moe-grad-norm-nan-then-rank114-assert_pai-megatron-patch-680", {114}),
        # the assertion closes a traceback whose header has no rank: the message's rank is the failing one
        ("megatron-nan-grad-norm-assert-rank3-interleaved_pai-megatron-patch-60", {3}),
    ],
)
def test_new_logs_fail_the_ranks_a_reader_names(entry: str, ranks: set[int], capsys: pytest.CaptureFixture) -> None:
    folder = CORPUS / entry / "log"
    assert ranks <= set(failed_ranks(read_run(folder)))
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched and ranks <= watched


def test_a_rank_named_in_a_message_stays_the_files_rank_in_a_rank_folder(tmp_path: Path) -> None:
    """Only a single stream takes the rank from the message: a rank's own file keeps its rank."""
    folder = tmp_path / "log"
    folder.mkdir()
    (folder / "worker_5.log").write_text("epoch: 1 step: 1, loss is 2.0\nAssertionError: Rank 114: found NaN\n")
    assert set(failed_ranks(read_run(folder))) == {5}


# ----------------------------------------------------------------------------- notations and series (items 1, 2)


def test_the_bare_loss_is_the_training_loss_over_its_parts() -> None:
    # espnet2-tts-rows-host-prefix_espnet-3639
    line = (
        "[auc-dnn3] 2021-10-02 20:13:30,249 (trainer:653) INFO: 4epoch:train:201-225batch: iter_time=1.131e-04, "
        "forward_time=1.499, l1_loss=0.252, mse_loss=0.070, bce_loss=0.021, attn_loss=0.002, loss=0.345, "
        "backward_time=1.773, optim_step_time=0.005, optim0_lr0=1.000e-03, train_time=3.287"
    )
    read = read_line(line)
    assert read is not None and not read.eval
    assert read.fields["loss"] == 0.345 and read.extras["l1_loss"] == 0.252 and read.extras["mse_loss"] == 0.070


@given(st.sampled_from(["l1", "mse", "kl", "ctc"]), st.floats(0, 1e6), st.floats(0, 1e6))
def test_a_bare_loss_after_a_qualified_one_is_the_row(part: str, a: float, b: float) -> None:
    read = read_line(f"step=3, {part}_loss={a!r}, loss={b!r}")
    assert read is not None and read.fields["loss"] == b and read.extras[f"{part}_loss"] == a


def test_an_epochs_results_line_is_no_training_row() -> None:
    # espnet2-trainer-rows-and-epoch-results_espnet-2674
    line = (
        "[PC] 2020-11-11 16:41:04,070 (trainer:243) INFO: 7epoch results: [train] iter_time=0.001, "
        "forward_time=0.005, loss=1.613, backward_time=0.005, lr_0=0.100, train_time=0.014, [valid] loss=1.854"
    )
    read = read_line(line)
    assert read is not None and read.eval


@pytest.mark.parametrize("spelling", ["nan.0", "NaN.0", "inf.0", "-inf.00"])
def test_nemos_nan_dot_zero_is_a_non_finite_loss(spelling: str) -> None:
    # nemo-lightning-bar-reduced-train-loss-nan-dot-0_nemo-7957
    line = (
        "Epoch 0: :   3%|▎         | 9000/301500 [1:42:42<55:37:46, v_num=0-56, "
        f"reduced_train_loss={spelling}, global_step=9e+3, train_step_timing in s=0.615, val_loss=7.040]"
    )
    read = read_line(line)
    assert read is not None and not read.eval and not math.isfinite(read.fields["loss"])


def test_a_version_like_number_after_a_loss_key_is_still_no_value() -> None:
    assert read_line("loss=1.0.3 of the package") is None


def test_nan_dot_zero_is_read_alike_line_by_line_and_in_bulk(tmp_path: Path) -> None:
    """The bulk path reuses a line shape's parse: `nan.0` among finite losses gives the same rows both ways."""
    lines = [f"step={i}, reduced_train_loss={'nan.0' if i % 3 == 0 else f'{1 + i / 10:.1f}'}" for i in range(400)]
    folder = _one_file(tmp_path, "\n".join(lines) + "\n")
    snap = read_run(folder)
    loss = snap.metrics["loss"].tolist()
    assert len(loss) == 400
    assert all(math.isnan(v) if i % 3 == 0 else v == 1 + i / 10 for i, v in enumerate(loss))


# ----------------------------------------------------------------------------- layouts


def test_paddles_workerlog_folders_give_one_rank_per_file() -> None:
    files = discover_logs(CORPUS / "ppdet-rtdetr-2-workerlogs-rows-eval-then-sigterm_m2s-detr" / "log")
    workers = {f.rank: f.rel for f in files if f.role == "worker"}
    assert workers == {0: "workerlog.0", 1: "workerlog.1"}
    assert [f.rel for f in files if f.role == "launcher"] == ["endpoints.log"]


def test_a_trainers_json_lines_log_is_read() -> None:
    snap = read_run(CORPUS / "llamafactory-trainer-log-jsonl-eval-nan_llamafactory-8439" / "log")
    assert snap.metrics["loss"].tolist() == [0.0] * 5
    assert "loss" in set(snap.evals["name"])  # `"eval_loss": NaN` is evaluation, never the training loss


@pytest.mark.parametrize(
    ("line", "loss", "metrics"),
    [
        # maxtext-absl-completed-step-rows-profiler-lines_maxtext-4847: keys joined by `/`
        (
            "I0811 21:54:55.531340 138304841739136 metric_logger.py:226] completed step: 1, seconds: 0.631, "
            "TFLOP/s/device: 5688.282, Tokens/s/device: 311629.521, total_weights: 1572864, loss: 12.979, "
            "lm_loss: 12.979, perplexity: 433358.281",
            12.979,
            {"tflop_s_device": 5688.282, "tokens_s_device": 311629.521, "perplexity": 433358.281},
        ),
        # tf-slim-step-row-then-resourceexhausted_mlwic2-25: keys joined by `-`
        (
            "2021-03-04 00:13:01.557810: epoch 9 of 55, step 40 of 2006, loss = 0.64, Top-1 = 0.81 Top-5 = 0.98 "
            "(366.8 examples/sec; 0.174 sec/batch)",
            0.64,
            {"top_1": 0.81, "top_5": 0.98},
        ),
        # trlx-ppo-bar-bracketed-losses-then-wandb_open-assistant-2140
        (
            "[losses/total_loss: 1.15 | losses/policy_loss: 1.15 | losses/value_loss: 0.00]: 100%|██████████| "
            "128/128 [10:23<00:00,  4.87s/it]",
            1.15,
            {"losses_policy_loss": 1.15, "losses_value_loss": 0.0},
        ),
        # loss-not-finite-skips-then-terminates_3d-r1-16: `;` separates `key value` fields, a unit after the value
        (
            "Epoch [0/5]; Iter [0/9450]; Loss 10.08; LR 1.00e-06; Iter time 3.72; ETA 9:46:15; Mem 29072.79MB",
            10.08,
            {"lr": 1e-06, "iter_time": 3.72, "mem": 29072.79},
        ),
        # nanogpt-early-format-iter-loss-time-8-gpus_nanogpt-110: `time 561.94ms`
        ("iter 1631: loss 4.0863, time 561.94ms", 4.0863, {"step_time_ms": 561.94}),
    ],
)
def test_keys_and_fields_users_print(line: str, loss: float, metrics: dict[str, float]) -> None:
    read = read_line(line)
    assert read is not None and not read.eval and read.fields["loss"] == loss
    got = {**read.fields, **read.extras}
    assert {k: got.get(k) for k in metrics} == metrics


def test_a_space_pair_in_seconds_is_read_in_ms() -> None:
    read = read_line("iter 3: loss 4.0863, time 0.56s")
    assert read is not None and read.fields["step_time_ms"] == pytest.approx(560.0)


@given(st.sampled_from(["为", "是"]), st.sampled_from([":", "：", "="]), st.floats(0, 1e6))
def test_a_chinese_is_before_the_separator_still_gives_the_loss(word: str, sep: str, value: float) -> None:
    # valid-loss-only-no-train-loss_m-libcity-gsnet: `valid loss 为: 3.3792779445648193` (an eval line)
    read = read_line(f"valid loss {word}{sep} {value!r}")
    assert read is not None and read.eval and read.fields["loss"] == value
    train = read_line(f"epoch 3 loss {word}{sep} {value!r}")
    assert train is not None and not train.eval and train.fields["loss"] == value


def test_a_splits_size_is_no_evaluation_line() -> None:
    # megatron-deepspeed-lm-loss-then-ctrl-c-sigterm_microsoft-megatron-deepspeed-random-ltd: dataset sizes
    assert read_line("    validation: 4395520") is None
    read = read_line("Validation Top_1_Accuracy: 25%")
    assert read is not None and read.eval and read.extras == {"validation_top_1_accuracy": 25.0}


def test_a_launchers_signal_is_named_in_its_message() -> None:
    # torchrun-local-rank-3-killed_egovlp-21: `failed (exitcode: -9) local_rank: 3 (pid: ...)`
    ended = task_end(
        b"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 1441) "
        b"of binary: /usr/bin/python"
    )
    assert ended is not None and ended.reason == "signal 9"
    assert ended.message(3) == "torchrun: task 3 on local ended: signal 9 (SIGKILL)"


def test_paddles_out_of_memory_summary_names_the_failure(capsys: pytest.CaptureFixture) -> None:
    """`MemoryError:` (a type, no message) comes first; the summary's `Out of memory error on GPU 0` names it."""
    line = (
        b"Out of memory error on GPU 0. Cannot allocate 128.000000MB memory on GPU 0, 7.995605GB memory has been "
        b"allocated and available memory is only 0.000000B."
    )
    assert fatal_reason(line) == "device error"
    folder = CORPUS / "paddle-error-message-summary-gpu-oom_paddleocr-11266" / "log"
    assert main(["diagnose", str(folder), "--json"]) == 1
    groups = json.loads(capsys.readouterr().out)["failure_groups"]
    assert [g["ranks"] for g in groups] == [[0]] and "Out of memory error on GPU 0" in groups[0]["exception"]


def test_meters_with_at_signs_are_metrics() -> None:
    # deepspeed-vit-cifar-meters-tab-separated_deepspeedexamples-data-efficiency
    read = read_line("Epoch: [0][  0/391]\tTime  4.268 ( 4.268)\tLoss 3.4360e+00 (3.4360e+00)\tAcc@1   7.81 (  7.81)")
    assert read is not None and read.fields["loss"] == 3.436 and read.extras["acc_1"] == 7.81


def test_a_log_of_evaluation_lines_only_is_diagnosed(capsys: pytest.CaptureFixture) -> None:
    """valid-loss-only-no-train-loss_m-libcity-gsnet: 5 `valid loss 为: X` lines and no training loss. There is
    a series to judge: `diagnose` reports (no failure, exit 0) instead of "nothing to judge", and agrees with watch."""
    folder = CORPUS / "valid-loss-only-no-train-loss_m-libcity-gsnet" / "log"
    assert len(read_run(folder).evals) == 5
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched == set()


# ----------------------------------------------------------------------------- the set-aside third's failure kinds


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # horovodrun-keras-caught-signal-11-rank-1_horovod-3666 (UCX's handler, behind mpirun's tag)
        (
            b"[1,1]<stderr>:[datanode1:1071388:0:1071412] Caught signal 11 "
            b"(Segmentation fault: address not mapped to object at address 0x7f1d3a4d5e80)",
            "signal",
        ),
        # oneflow-glog-check-failed-two-processes_oneflow-6746 (glog's FATAL line: the process aborts)
        (
            b"F1122 13:50:47.079073 63928 user_op.cpp:299] Check failed: it != arg2tensor_desc_.end() "
            b"Cannot find input_arg_name : out input_arg_index : 0",
            "fatal check",
        ),
    ],
)
def test_native_signal_handler_and_glog_fatal_lines_are_failures(line: bytes, kind: str) -> None:
    assert fatal_reason(line) == kind


@pytest.mark.parametrize(
    "line",
    [
        # glog's other levels (I/W/E) and a prose mention are no fatal line
        b"I1122 13:50:47.079073 63928 user_op.cpp:299] Check failed: nothing, an info line",
        b"W1122 13:50:47.079073 63928 env.cpp:12] falling back to the default",
        b"the handler caught signals before, see the docs",
    ],
)
def test_glog_info_lines_and_prose_are_no_failure(line: bytes) -> None:
    assert fatal_reason(line) is None


@pytest.mark.parametrize(
    ("entry", "ranks"),
    [
        ("horovodrun-keras-caught-signal-11-rank-1_horovod-3666", {1}),
        ("oneflow-glog-check-failed-two-processes_oneflow-6746", {0}),
    ],
)
def test_signal_handler_and_glog_fatal_fail_their_rank_on_the_real_log(entry: str, ranks: set[int]) -> None:
    assert ranks <= set(failed_ranks(read_run(CORPUS / entry / "log")))


@given(
    sig=st.integers(min_value=1, max_value=64),
    tag=st.sampled_from(["", "[1,3]<stderr>:", "[rank2]: ", "host-7: "]),
)
def test_caught_signal_is_a_signal_behind_any_prefix(sig: int, tag: str) -> None:
    line = f"{tag}[node:1:0:2] Caught signal {sig} (Segmentation fault: invalid permissions)".encode()
    assert fatal_reason(line) == "signal"


# torch-spawn-process-sigkill_higherhrnet-47: the parent's exception names the spawned process (its rank) that died
def test_spawned_process_named_in_the_exception_message_is_the_failed_rank() -> None:
    from core.logs.rows.failures import message_rank

    text = "Exception: process 1 terminated with signal SIGKILL"
    assert message_rank(text, len("Exception:"), 0) == 1
    assert message_rank("ProcessExitedException: process 3 terminated with exit code 1", 23, 0) == 3
    # a message that names no process keeps the stream's rank
    assert message_rank("Exception: the process terminated with signal SIGKILL", len("Exception:"), 0) == 0


def test_spawned_process_sigkill_fails_that_rank_on_the_real_log() -> None:
    assert 1 in failed_ranks(read_run(CORPUS / "torch-spawn-process-sigkill_higherhrnet-47" / "log"))


# nccl-watchdog-six-ranks-in-message_accelerate-157: one stream, each watchdog line names its rank after its prefix
_WATCHDOG = (
    "[E ProcessGroupNCCL.cpp:566] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) ran for 1801140 milliseconds before timing out.\n"
)


def test_a_fatal_line_naming_its_rank_after_the_level_prefix_fails_that_rank(tmp_path: Path) -> None:
    folder = _one_file(tmp_path, "".join(_WATCHDOG.format(r=r) for r in (1, 3, 7)))
    assert set(failed_ranks(read_run(folder))) == {1, 3, 7}


def test_six_watchdog_ranks_on_the_real_log() -> None:
    entry = CORPUS / "nccl-watchdog-six-ranks-in-message_accelerate-157" / "log"
    assert set(failed_ranks(read_run(entry))) == {0, 1, 2, 3, 4, 7}


def test_a_rank_in_prose_after_a_level_prefix_is_not_read_without_the_bracket() -> None:
    from core.logs.rows.failures import RE_LEVEL_RANK

    assert RE_LEVEL_RANK.match(b"[E ProcessGroupNCCL.cpp:566] Rank 1 said hello") is None
    assert RE_LEVEL_RANK.match(b"[I ProcessGroupNCCL.cpp:566] [Rank 1] all fine") is None
    m = RE_LEVEL_RANK.match(b"[E1024 07:12:55.531 ProcessGroupNCCL.cpp:1537] [PG 1 Rank 5] Watchdog ...")
    assert m is not None and m.group(1) == b"5"


# ----------------------------------------------------------------------------- progress-bar redraws (issue 30 gaps)

# Every way the parser reads a file (as tests/test_grammar_entries.py: line by line, bulk with templates, batched)
PATHS = READ_PATHS  # every way the parser reads a file (tests/helpers.py)
# tqdm-postfix-loss-twice-per-step_veomni-269: `set_postfix` draws a step's values at counter n, `update(1)` draws
# them again at n + 1
VEOMNI = (
    "Epoch 1/1:   0%|          | {n}/3828049 [00:{t:02d}<4275:39:26,  4.02s/it, loss: {loss:.2f}, grad_norm: 29.50, "
    "lr: {lr:.2e}]"
)


def _veomni(losses: list[float]) -> str:
    lines = []
    for i, loss in enumerate(losses):
        lr = 1.12e-08 * (i + 1)
        lines.append(VEOMNI.format(n=i, t=2 * i % 60, loss=loss, lr=lr))
        lines.append(VEOMNI.format(n=i + 1, t=(2 * i + 1) % 60, loss=loss, lr=lr))
    return "\n".join(lines) + "\n"


def _rows_by_path(folder: Path, path: str) -> pd.DataFrame:
    reader = RunReader(folder, settings=PATHS[path], one_shot=True)
    reader.refresh()
    return reader.snapshot().metrics


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_bar_redrawing_its_values_is_one_row_on_every_path(tmp_path: Path, path: str) -> None:
    losses = [11.0 + (i % 7) / 10 for i in range(120)]
    (tmp_path / "worker_0.log").write_text(_veomni(losses))
    (tmp_path / "worker_1.log").write_text("".join(f"epoch: 1 step: {s}, loss is 1.5\n" for s in range(1, 40)))
    rows = _rows_by_path(tmp_path, path)
    mine = rows[rows["rank"] == 0]
    assert mine["loss"].tolist() == pytest.approx(losses), path
    assert len(rows[rows["rank"] == 1]) == 39


@pytest.mark.parametrize("path", sorted(PATHS))
def test_identical_bar_lines_and_identical_lossmonitor_lines_stay_rows(tmp_path: Path, path: str) -> None:
    """Equal values alone never merge rows: a bar line printed twice unmoved (same counter and time), and two
    identical LossMonitor lines, are two rows each."""
    bar = VEOMNI.format(n=5, t=9, loss=2.5, lr=1e-5)
    (tmp_path / "worker_0.log").write_text("".join(f"{bar}\n{bar}\n" for _ in range(40)))
    (tmp_path / "worker_1.log").write_text("epoch: 1 step: 2, loss is 2.3\n" * 40)
    rows = _rows_by_path(tmp_path, path)
    assert (rows["rank"] == 0).sum() == 80 and (rows["rank"] == 1).sum() == 40


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.01, 99.0), min_size=1, max_size=30), st.integers(0, 40))
def test_redraws_are_dropped_across_any_read_boundary(losses: list[float], cut: int) -> None:
    """A redraw read in a later tick than its first draw (a live watcher) is dropped too: the state is the file's."""
    from core.logs.bytes.discover import LogFile, LogRole
    from core.logs.rows.filestate import FileState
    from core.logs.rows.parser import Parser

    data = _veomni(losses).encode()
    lines = data.splitlines(keepends=True)
    cut = min(cut, len(lines))
    st_ = FileState(LogFile(Path("w.log"), "w.log", LogRole.WORKER, 0, "single"))
    parser = Parser()
    head, tail = b"".join(lines[:cut]), b"".join(lines[cut:])
    for base, chunk in ((0, head), (len(head), tail)):
        if chunk:
            parser.feed(st_, chunk, base, 0.0, len(chunk))
    got = st_.rows.take()[:, 4].tolist()
    want = [float(f"{v:.2f}") for v in losses]
    assert got == want


@pytest.mark.parametrize(
    ("entry", "rows"),
    [
        ("tqdm-postfix-loss-twice-per-step_veomni-269", 6),
        ("llama-recipes-tqdm-step-completed-loss_llama-cookbook-320", 7),
        ("torchtune-tqdm-epoch-step-loss-torchrun-role-prefix_torchtune-2620", 7),
    ],
)
def test_bar_redraws_on_the_real_logs(entry: str, rows: int) -> None:
    assert len(read_run(CORPUS / entry / "log").metrics) == rows


# ----------------------------------------------------------------------------- epoch summaries (issue 30 gaps)


@given(st.integers(0, 999), st.floats(0.0, 1e4), st.integers(1, 99999), st.integers(1, 99999))
def test_an_epochs_pipe_summary_is_no_row_and_its_step_lines_are(
    epoch: int, loss: float, done: int, total: int
) -> None:
    """fairseq-2018-running-average-epoch-summaries_fairseq-301 and
    fairseq-hydra-era-train-inner-and-summaries_fairseq-1895 (read by their entry in core.logs.rows.notations too):
    the epoch alone between pipes with no step is the epoch's summary; a line within the epoch is a row."""
    for line in (
        f"| epoch {epoch:03d} | train loss {loss!r} | train ppl 2.72",
        f"train | epoch {epoch:03d} | loss {loss!r} |",
    ):
        read = read_line(line)
        assert read is not None and read.eval, line
    step = read_line(f"| epoch {epoch:03d}  {done} / {total} loss={loss!r} (1.50), wps=962")
    assert step is not None and not step.eval and step.fields["loss"] == loss


def test_an_epoch_field_on_a_line_with_its_step_stays_a_row() -> None:
    # litgpt-loss-train-val-na_litgpt-1224: `Epoch 1 |` is a field of its own, but the line reads its step
    read = read_line("Epoch 1 | iter 46 step 1 | loss train: 3.724, val: n/a | iter time: 45.73 ms")
    assert read is not None and not read.eval and read.fields["loss"] == 3.724


@pytest.mark.parametrize(
    ("entry", "rows", "first"),
    [
        ("fairseq-2018-running-average-epoch-summaries_fairseq-301", 10, 1.27),
        ("fairseq-hydra-era-train-inner-and-summaries_fairseq-1895", 1, 9.44),
        ("litgpt-loss-train-val-na_litgpt-1224", 17, 3.724),
    ],
)
def test_summaries_and_split_keys_on_the_real_logs(entry: str, rows: int, first: float) -> None:
    loss = read_run(CORPUS / entry / "log").metrics["loss"].tolist()
    assert (len(loss), loss[0]) == (rows, first)


# ----------------------------------------------------------------------------- steps, units, keys (issue 30 gaps)


@given(st.integers(0, 999), st.integers(1, 999), st.integers(0, 10**6), st.integers(1, 10**6), st.sampled_from("[("))
def test_the_pair_after_the_epochs_is_the_step(epoch: int, epochs: int, step: int, steps: int, bracket: str) -> None:
    # minimind-epoch-paren-step-loss_minimind-26: `Epoch:[0/19](100/24681) loss:5.251 lr:0.00020000`
    close = "]" if bracket == "[" else ")"
    read = read_line(f"Epoch:[{epoch}/{epochs}]{bracket}{step}/{steps}{close} loss:5.251 lr:0.00020000")
    assert read is not None and not read.eval
    assert (read.fields["epoch"], read.fields["step"], read.fields["steps_total"]) == (epoch, step, steps)


@given(st.floats(0.0, 1e5, allow_nan=False).map(lambda v: round(v, 3)))
def test_a_time_without_a_unit_is_in_seconds(value: float) -> None:
    # lmops-minillm-pipe-tot-loss-global-iter-seconds_lmops-130: `| time: 1.700 | step time: 0.000` is 1,700 ms
    read = read_line(f"train | global iter:     27/  5000| tot_loss: 1.5269 | lr: 8.5000e-07 | time: {value} | x")
    assert read is not None and read.fields["step"] == 27 and read.fields["step_time_ms"] == pytest.approx(value * 1000)
    labelled = read_line(f"iter 1631: loss 4.0863, time: {value} ms")
    assert labelled is not None and labelled.fields["step_time_ms"] == value  # a labelled unit is kept


def test_inner_iter_is_a_column_and_global_iter_the_step() -> None:
    read = read_line("train | inner iter:   3/  8 | global iter:     27/  5000| tot_loss: 1.5269 | time: 1.700 |")
    assert read is not None and (read.fields["step"], read.extras["inner_iter"]) == (27, 3)


def test_a_stage_prefix_is_part_of_the_key_but_a_file_name_is_no_key() -> None:
    # mmdet-cascade-stage-prefixed-keys_mmdetection-2785
    read = read_line("Epoch [1][15/678]\tlr: 0.00020, s0.loss_cls: 0.5666, s0.acc: 95.7031, loss: 3.4410")
    assert read is not None and (read.extras["s0_loss_cls"], read.extras["s0_acc"]) == (0.5666, 95.7031)
    prefixed = read_line(
        "[INFO] 2023-07-11 10:47:36,427 [mindformers/core/callback/callback.py:529] loss: 2.5, lr: 0.1"
    )
    assert prefixed is not None and set(prefixed.extras) == set()


@given(st.integers(0, 10**9), st.floats(0, 1e6, allow_nan=False), st.floats(0, 100, allow_nan=False))
def test_a_json_record_naming_the_loss_is_a_row(step: int, value: float, epoch: float) -> None:
    # caikit-nlp-training-logs-jsonl-name-loss_caikit-nlp-208
    line = f'{{"name": "loss", "data": {{"epoch": {epoch!r}, "step": {step}, "value": {value!r}, "timestamp": "t"}}}}'
    read = read_line(line)
    assert read is not None and not read.eval and (read.fields["loss"], read.fields["step"]) == (value, step)
    assert read_line('{"name": "accuracy", "data": {"step": 1, "value": 0.5}}') is None


@pytest.mark.parametrize(
    ("entry", "steps", "losses"),
    [
        ("minimind-epoch-paren-step-loss_minimind-26", (0, 1800), (8.863, 2.589)),
        ("lmops-minillm-pipe-tot-loss-global-iter-seconds_lmops-130", (27, 29), (1.5269, 2.2808)),
        ("caikit-nlp-training-logs-jsonl-name-loss_caikit-nlp-208", (1, 2), (3.9274, 4.4904)),
    ],
)
def test_the_three_public_lines_on_their_corpus_logs(
    entry: str, steps: tuple[int, int], losses: tuple[float, float]
) -> None:
    m = read_run(CORPUS / entry / "log").metrics
    assert (m["step"].iloc[0], m["step"].iloc[-1]) == steps
    assert (m["loss"].iloc[0], m["loss"].iloc[-1]) == losses


def test_lmops_step_time_is_seconds_in_diagnose(capsys: pytest.CaptureFixture) -> None:
    """`time: 1.700` was a 1.7 ms step time in `diagnose`: it is 1,700 ms."""
    folder = CORPUS / "lmops-minillm-pipe-tot-loss-global-iter-seconds_lmops-130" / "log"
    assert read_run(folder).metrics["step_time_ms"].tolist() == [1700.0, 1287.0, 1712.0]
    assert main(["diagnose", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["median_step_time"] == 1700.0


# ----------------------------------------------------------------------------- issue 30, second round of new logs
# Each rule below was written for a log of the second round's build set; each is general (an exception-line form, a
# rank source, a failure kind, a notation), held over generated values where it reads numbers.

RAY_TASK_ERROR = (
    # ray-train-worker-died-after-train-func-raytaskerror_ray-31828 (ray-project/ray#31828)
    b"ray.exceptions.RayTaskError(RuntimeError): \x1b[36mray::TrainTrainable.train()\x1b[39m (pid=1876, "
    b"ip=100.97.252.234, repr=TorchTrainer)"
)


def test_rays_exception_with_its_cause_in_brackets_is_an_exception_line() -> None:
    from core.logs.rows.failures import failure_weight
    from core.logs.rows.formats import RE_EXC_LINE

    m = RE_EXC_LINE.match(RAY_TASK_ERROR)
    assert m is not None and m.group(1) == b"ray.exceptions.RayTaskError(RuntimeError)"
    assert failure_weight(RAY_TASK_ERROR.decode()) == 3  # the root cause a user looks up
    # a call in prose is no exception line: the brackets hold one name, then the colon
    assert RE_EXC_LINE.match(b"check(RuntimeError, x): fine") is None
    assert RE_EXC_LINE.match(b"RayTaskError(RuntimeError) was raised") is None


@given(
    st.sampled_from(["RayTaskError", "RayActorError", "TaskError", "ray.exceptions.RayTaskError"]),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,20}", fullmatch=True),
)
def test_an_exception_with_any_cause_is_read_as_one(name: str, cause: str) -> None:
    from core.logs.rows.formats import RE_EXC_LINE

    m = RE_EXC_LINE.match(f"{name}({cause}): boom".encode())
    assert m is not None and m.group(1) == f"{name}({cause})".encode()


@pytest.mark.parametrize("path", ["line_by_line", "bulk"])
def test_rays_task_error_ends_the_run_on_every_path(tmp_path: Path, path: str, capsys: pytest.CaptureFixture) -> None:

    rows = "".join(f"epoch: 1 step: {s}, loss is {2.0 - s / 1000}\n" for s in range(1, 400))
    folder = _one_file(tmp_path, rows + RAY_TASK_ERROR.decode() + "\n")
    one_by_one = ReaderSettings(block_min=1 << 30, shape_min=1 << 30)
    snap = read_run(
        folder, settings=one_by_one if path == "line_by_line" else ReaderSettings(compiled_min=0, block_min=1)
    )
    assert set(failed_ranks(snap)) == {0}
    assert snap.errors.iloc[-1]["message"].startswith("ray.exceptions.RayTaskError(RuntimeError)")
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched == {0}


NPU_RANK_ERROR = "[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:{r}) ERR02200 DIST call hccl api failed."


def test_torch_npus_rank_id_names_the_failing_rank_on_the_real_log(capsys: pytest.CaptureFixture) -> None:
    folder = CORPUS / "hccl-barrier-EJ0001-hccp-init-rankid-3_llamafactory-3839" / "log"
    assert 3 in set(failed_ranks(read_run(folder)))
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched and 3 in watched


@given(st.integers(0, 4095), st.integers(0, 15))
def test_torch_npus_rank_id_is_read_for_any_rank(rank: int, device: int) -> None:
    from core.logs.rows.lineranks import line_rank

    named = line_rank(NPU_RANK_ERROR.format(r=rank).replace("Device:3", f"Device:{device}").encode())
    assert named is not None and named.rank == rank


def test_an_unknown_rank_id_names_no_rank(tmp_path: Path) -> None:
    """torch_npu prints `RankID:-1` before the process group exists: no rank, the file's own holds."""
    from core.logs.rows.lineranks import line_rank

    line = "[ERROR] 2024-06-27-11:39:29 (PID:2502349, Device:0, RankID:-1) ERR00100 PTA call acl api failed"
    assert line_rank(line.encode()) is None
    assert set(failed_ranks(read_run(_one_file(tmp_path, line + "\n")))) == {0}


def test_a_rank_id_in_a_ranks_own_file_keeps_the_files_rank(tmp_path: Path) -> None:
    """Only a single stream takes the rank from the line: a rank folder's file is its own rank's."""
    folder = tmp_path / "log"
    folder.mkdir()
    for r in (0, 1):
        (folder / f"worker_{r}.log").write_text(
            NPU_RANK_ERROR.format(r=3) + "\n" if r == 1 else "epoch: 1 step: 1, loss is 2.0\n"
        )
    assert set(failed_ranks(read_run(folder))) == {1}


GLOG_ERROR = (
    # paddleocr-workerlogs-eval-restarts-rank1-invalid-cudaplace_robustscanner-paddle (log/workerlog.1)
    "E0425 18:38:33.592213     8 pybind.cc:1614] Invalid CUDAPlace(1), must inside [0, 1), because GPU number on your "
    "machine is 1"
)


def test_a_glog_error_line_ending_a_workerlog_fails_that_rank() -> None:
    folder = CORPUS / "paddleocr-workerlogs-eval-restarts-rank1-invalid-cudaplace_robustscanner-paddle" / "log"
    snap = read_run(folder)
    assert 1 in set(failed_ranks(snap))
    assert any("Invalid CUDAPlace(1)" in m for m in snap.errors[snap.errors["rank"] == 1]["message"])


def test_a_glog_error_line_followed_by_training_is_no_failure(tmp_path: Path) -> None:
    rows = "".join(f"epoch: 1 step: {s}, loss is {2.0 - s / 100}\n" for s in range(1, 6))
    assert not failed_ranks(read_run(_one_file(tmp_path, GLOG_ERROR + "\n" + rows)))


@pytest.mark.parametrize(
    "line",
    [
        # glog's INFO and WARNING lines, and an E word in prose, are no failure
        "I0425 18:38:33.592213     8 pybind.cc:1614] Init device 0",
        "W0425 18:38:33.592213     8 device_context.cc:404] Please NOTE: device: 0, GPU Compute Capability: 7.5",
        "E0425 is the code of this experiment",
    ],
)
def test_glog_info_warning_and_prose_are_no_glog_error(line: str) -> None:
    assert fatal_reason(line.encode()) is None


@given(st.floats(0, 1e6, allow_nan=False).map(lambda v: round(v, 6)), st.sampled_from(["'", '"']))
def test_a_quoted_loss_value_reads_its_number(value: float, quote: str) -> None:
    q = quote
    line = f"2020-09-25 18:39:47,914-INFO: iter: 2, lr: 0.000035, {q}loss{q}: {q}{value:f}{q}, eta: 0:00:00"
    read = read_line(line)
    assert read is not None and not read.eval
    assert read.fields["loss"] == pytest.approx(value, rel=1e-6, abs=1e-6) and read.fields["lr"] == 0.000035


@given(st.sampled_from(["nan", "inf"]), st.integers(0, 8))
def test_a_non_finite_value_filled_with_x_is_non_finite(word: str, fill: int) -> None:
    read = read_line(
        f"epoch: [2/500], global_step: 920, CTCLoss: {word}{'x' * fill}, loss: {word}{'x' * fill}, ips: 2.5"
    )
    assert read is not None and not math.isfinite(read.fields["loss"]) and not math.isfinite(read.extras["ctcloss"])
    assert read.extras["ips"] == 2.5


def test_a_word_after_nan_is_no_fill() -> None:
    """Only `x`s fill: `nanoseconds` and `nanxy` are no value."""
    assert read_line("loss: nanoseconds") is None
    assert read_line("loss: nanxy") is None


def test_averaged_stats_are_no_training_rows_on_the_real_log() -> None:
    """DETR's MetricLogger: 580 `Epoch: [E] [i/139]` rows; the `Averaged stats:` after each evaluation are summaries
    (the last of them, 3.1047, was the run's false last point)."""
    m = read_run(CORPUS / "detr-style-metric-logger-train-and-test-rows_rtd-paddle" / "log" / "log").metrics
    assert len(m) == 580 and float(m.sort_values("offset")["loss"].iloc[-1]) == 1.0154


# ----------------------------------------------------------------------------- the second set-aside round's misses


def test_mpiruns_report_with_a_masked_pid_names_its_rank(capsys: pytest.CaptureFixture) -> None:
    """OpenMPI's end report as pasted with the PID and node masked (`with PID xxxxxx on node xxxxxxxx`): still
    rank 1's failure, on both commands (it used to need a numeric PID: no failure at all)."""
    line = b"mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed)."
    ended = task_end(line)
    assert ended is not None and ended.ranks == (1,) and ended.reason == "Killed" and ended.launcher == "mpirun"
    folder = CORPUS / "mpirun-rank-1-killed-signal-9-masked-pid_aware-of-the-history-2" / "log"
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched and 1 in watched


def test_a_report_that_names_no_signal_is_no_mpirun_report() -> None:
    """Bad input: the masked PID stays one word; a report without `exited on signal N (...)` names no rank."""
    assert task_end(b"mpirun noticed that process rank 1 with PID xxxxxx on node host exited normally.") is None
    assert task_end(b"process rank 1 with PID x x on node h exited on signal 9 (Killed)") is None


@given(st.lists(st.integers(0, 4095), min_size=1, max_size=6, unique=True))
def test_msruns_time_out_nodes_are_the_failed_ranks(nodes: list[int]) -> None:
    """msrun's launcher names the timed-out workers by node id, which is the worker's rank (`RANK_ID`)."""
    listed = ", ".join(f"'{n}'" for n in nodes)
    line = f"[ERROR] ME(1:2,MainProcess):2025-03-10-09:40:38.722.000 [_api.py:431] Time out nodes are [{listed}]"
    ended = task_end(line.encode())
    assert ended is not None and ended.ranks == tuple(nodes) and ended.launcher == "msrun"


def test_msruns_time_out_line_fails_the_node_it_names(capsys: pytest.CaptureFixture) -> None:
    """The mindnlp#1983 launcher log: `Time out nodes are ['3']` is rank 3's failure (it was judged rank 0's only)."""
    folder = CORPUS / "msrun-launcher-timeout-node-3-scheduler-grep-lines_mindnlp-1983" / "log"
    assert 3 in failed_ranks(read_run(folder))
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched and 3 in watched
    assert task_end(b"[ERROR] ME(1:2,MainProcess) Time out nodes are []") is None  # no node named: no rank


def test_xlas_resource_exhausted_lines_fail_the_run(capsys: pytest.CaptureFixture) -> None:
    """TensorFlow's C++ log lines (`E tensorflow/.../xla_util.cc:88]`) with XLA's RESOURCE_EXHAUSTED: a TPU out of
    memory ends rank 0's run (it was read as no failure, exit 0)."""
    line = (
        b"2022-04-04 00:27:49.642380: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   (1) RESOURCE_EXHAUSTED: "
        b"Attempting to reserve 6.48G at the bottom of memory."
    )
    assert fatal_reason(line) == "resource exhausted"
    assert fatal_reason(b"RESOURCE_EXHAUSTED_RETRIES = 3") is None  # the word without the status's colon
    folder = CORPUS / "torch-xla-tpu-resource-exhausted-glog-E-lines_pytorch-xla-3470" / "log"
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched == {0}


def test_resource_exhausted_then_training_rows_is_not_failed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """An error the run trains past is reported, not a failure (the one judgement)."""
    text = "2022-04-04 00:27:49.642380: E xla_util.cc:88] RESOURCE_EXHAUSTED: Attempting to reserve 6.48G\n"
    text += "".join(f"step {s}, loss: {2.0 - s / 10:.2f}\n" for s in range(1, 6))
    folder = _one_file(tmp_path, text)
    assert failed_ranks(read_run(folder)) == {}
    diagnosed, watched = _verdicts(folder, capsys)
    assert diagnosed == watched == set()
