"""Every failure kind the reader names, one entry each: its pattern, the literals that find it fast, and real
lines with their source (issue 30 item 5: "a new failure kind is one entry").

Why a table: a kind used to live in three places (a signature regex, a hand-made quick regex, and the bulk
path's literal list in core.logs.tokens.plain); one forgotten place made a kind read on one path and missed on
the other. Now `core.logs.rows.failures` builds `fatal_reason`, its quick test and `task_end` from these
entries, `core.logs.rows.linekinds.WORTH` gives their anchors to the bulk path's literal search, and
tests/test_grammar_entries.py reads every sample through the line-by-line and the bulk paths.

To add a kind: one `FailureKind` (or `LauncherReport`) below, or in core.logs.rows.failure_kinds_more (read after
these) when this module is at its length bound, with at least one real line and its source.
Its `anchors` are literals without digits, one of which every line the pattern matches holds (the test
checks it on the samples, and a property test holds the quick test to the patterns).
"""

from __future__ import annotations

from core.logs.rows.failure_entry import FailureKind, FailureSample, LauncherReport
from core.logs.rows.failure_kinds_more import MORE_KINDS, MORE_REPORTS

__all__ = ["FAILURE_KINDS", "LAUNCHER_REPORTS", "FailureKind", "FailureSample", "LauncherReport"]


_MS_DOCS = "MindSpore's CANN error-case docs (tests/fixtures/real_logs/{})"
_CORPUS = "{} (tests/fixtures/real_logs/{})"
_SIGNALS = rb"Segmentation fault|Aborted|Killed|Bus error|Illegal instruction|Floating point exception"

FAILURE_KINDS: tuple[FailureKind, ...] = (
    FailureKind(  # MindSpore's `[CRITICAL]`, python logging's ` CRITICAL - ` / ` FATAL - `
        "critical",
        rb"^\[CRITICAL\]|\s(?:CRITICAL|FATAL)\s+-\s",
        (b"CRITICAL", b"FATAL"),
        (
            FailureSample(
                "[CRITICAL] DEVICE(162844,fffd6cff91e0,python):2022-12-01-00:26:58.399.787 [mindspore/ccsrc/plugin/"
                "device/ascend/hal/hardware/ascend_graph_executor.cc:240] RunGraph] Run task for graph:kernel_graph_1 "
                "error! The details refer to 'Ascend Error Message'.",
                _MS_DOCS.format("cann-EI0002-glibc-abort_mindspore-docs"),
            ),
        ),
        weight=3,
    ),
    # a trainer's own word that the training loop died or that it stops on a non-finite loss (issue 30):
    # Chainer's `Exception in main training loop: ...`, `Loss in not finite. Terminate training.`,
    # `WARNING: non-finite loss, ending training`, `Loss is nan, stopping training`. `training` is written
    # `training` or `Training` (what the anchors find: a blank before it, every match has one)
    FailureKind(
        "trainer stop",
        rb"Exception in main training loop|(?i:(?:not finite|non-finite|\bnan\b|\binf\b)[^\n]{0,80}?\b"
        rb"(?:terminat(?:e|es|ed|ing)|stop(?:s|ped|ping)?|end(?:s|ed|ing)?|abort(?:s|ed|ing)?)"
        rb"[ \t]+(?:the[ \t]+)?)[Tt]raining",
        (b" training", b"\ttraining", b" Training", b"\tTraining"),
        (
            FailureSample(
                "Exception in main training loop: Caught RuntimeError in replica 0 on device 0.",
                _CORPUS.format("espnet/espnet#3288", "chainer-exception-in-main-training-loop-replica-0_espnet-3288"),
            ),
            FailureSample(
                "Loss in not finite. Terminate training.",
                _CORPUS.format("AIGeeksGroup/3D-R1#16", "loss-not-finite-skips-then-terminates_3d-r1-16"),
            ),
        ),
    ),
    # CANN error codes are E + five characters (a letter or digit, then 4 digits), written as a code:
    # `EI0002:`, `[EE9999]`, `code EJ0001`, `E39999: Inner Error!`, `EZ9999`, `EH9999`, `EL0004`
    FailureKind(
        "CANN error",
        rb"(?<![A-Za-z0-9_.+\-])E[A-Z0-9][0-9]{4}(?=[:\]]|\s+(?:error|Error))",
        (),
        (
            FailureSample("E39999: Inner Error, Please contact support engineer!", "mindspore-lab/mindocr#615"),
            FailureSample("EH9999: Inner Error!", "vllm-project/vllm-ascend#2800"),
            FailureSample("EI9999: Inner Error!", "Ascend/pytorch#54"),
            FailureSample(
                "EJ0001: Failed to initialize the HCCP process. Reason: Maybe the last training process is running.",
                _MS_DOCS.format("cann-EJ0001-hccp-init_mindspore-docs"),
            ),
            FailureSample(
                "EI0006: Getting socket times out. Reason: 1. The remote does not initiate a connect request. some "
                "NPUs in the cluster are abnormal.",
                _MS_DOCS.format("cann-EI0006-socket-timeout_mindspore-docs"),
            ),
        ),
        coded=True,
        weight=3,
    ),
    FailureKind(
        "glibc abort",
        rb"(?:malloc_consolidate|malloc|free|munmap_chunk|realloc|corrupted)\(\): "
        rb"(?:invalid|corrupted|unaligned|memory corruption|unsorted)|"
        rb"double free or corruption|corrupted size vs\. prev_size|"
        rb"corrupted double-linked list|\*\*\* stack smashing detected",
        (b"(): ", b"double free", b"corrupted", b"stack smashing"),
        (
            FailureSample(
                "malloc_consolidate(): invalid chunk size", _MS_DOCS.format("cann-EI0002-glibc-abort_mindspore-docs")
            ),
        ),
    ),
    # the shell's or the kernel's word on a dead process: `run.sh: line 7: 4242 Killed  python train.py`,
    # `Segmentation fault (core dumped)`, `Fatal Python error: Segmentation fault`, `Out of memory: Killed process`;
    # OpenMPI's report (behind its `[host:pid] ` prefix, kept when a paste indents it): `Signal: Segmentation fault
    # (11)` (its first line, `*** Process received signal ***`, says no signal: "signal received", failure_kinds_late)
    FailureKind(
        "signal",
        # (a paste's Markdown emphasis around the whole word is the word: `**Killed**`, fastmaskrcnn-172)
        rb"^\s*(?:\*\*|__?)?(?:" + _SIGNALS + rb")(?:\s*\(core dumped\))?[.!]?(?:\*\*|__?)?\s*$|"
        rb"(?:^|\s)\d+\s+(?:" + _SIGNALS + rb")(?:\s*\(core dumped\))?(?:\s|$)|"
        rb"\(core dumped\)|Fatal Python error|Killed process \d+|Out of memory: Kill|"
        rb"^\s*(?:\[[A-Za-z0-9][\w.\-]*:\d+\] )?Signal: [A-Z][a-z]+(?: [a-z]+)* \(\d+\)\s*$|"
        # (the report's other lines, `Failing at address: 0xb8`, ...: the "signal report" kind, failure_kinds_more)
        # absl's / glog's failure handler (Ray actors): `*** SIGSEGV received at time=1785913868 on cpu 169 ***`
        rb"\*\*\* SIG[A-Z]+ received at time=|"
        # UCX's / a native signal handler's report of its own process's signal (horovodrun)
        rb"\b[Cc]aught signal \d+ \(|"
        # torchrun's ChildFailedError block names the signal that killed the rank in its `traceback :` field
        rb"\bSignal \d+ \(SIG[A-Z]+\) received by PID \d+",
        (
            *(b"Segmentation fault", b"Aborted", b"Killed", b"Bus error", b"Illegal instruction"),
            *(b"Floating point exception", b"(core dumped)", b"Fatal Python error", b"Out of memory: Kill"),
            *(b"Signal: ", b" received at time=", b"aught signal "),
            b") received by PID ",
        ),
        (
            FailureSample("Signal: Segmentation fault (11)", "tactcomplabs/rev#78"),
            FailureSample(
                "  [m2301007135:374576] Signal: Segmentation fault (11)",
                "mindspore-lab/mindyolo#242 (tests/fixtures/real_logs/openmpi-segfault-after-loss_mindyolo-242)",
            ),
            FailureSample(
                "(MegatronTrainRayActor pid=3848117) [2026-08-05 07:11:08,188 E 3848117 3848117] logging.cc:501: "
                "*** SIGSEGV received at time=1785913868 on cpu 169 *** [repeated 7x across cluster]",
                _CORPUS.format(
                    "flashserve/flash-linear-attention-npu#272", "ray-actor-sigsegv-repeated-across-cluster_fla-npu-272"
                ),
            ),
            FailureSample(
                "  traceback : Signal 6 (SIGABRT) received by PID 104478",
                _CORPUS.format(
                    "open-mmlab/mmpretrain#1837",
                    "torchrun-failure-block-fields-exitcode-minus-6-sigabrt_mmpretrain-1837",
                ),
            ),
            FailureSample(
                "[1,1]<stderr>:[datanode1:1071388:0:1071412] Caught signal 11 (Segmentation fault: address not mapped "
                "to object at address 0x7f1d3a4d5e80)",
                _CORPUS.format("horovod/horovod#3666", "horovodrun-keras-caught-signal-11-rank-1_horovod-3666"),
                rank=1,
            ),
        ),
    ),
    # the device's word: MindSpore on Ascend (`RunGraph] run task error!`, `rtStreamSynchronize execute
    # failed`, `Allocate output memory failed`), CUDA / NPU out of memory
    FailureKind(
        "device error",
        # (torch_npu's wrapper codes, `ERR02200 DIST call hccl api failed.`: a kind of their own in failure_kinds_more)
        rb"\b[Rr]un task error\b|[Ss]ynchroni[sz]e\w*(?: execute)? (?:failed|error)|"
        rb"[Ss]ync ?(?:default )?[Ss]tream\w* (?:failed|error)|"
        rb"\b[Aa]llocate (?:output |device |workspace |static |dynamic )?memory failed|"
        rb"\b(?:CUDA|NPU|GPU|[Dd]evice) out of memory|\bOut of device memory|memory isn't enough|"
        # Paddle's summary: `Out of memory error on GPU 0. Cannot allocate 128.000000MB memory on GPU 0, ...`
        rb"\b[Oo]ut of memory (?:error )?on (?:GPU|NPU|XPU|device)\b",
        (
            *(b"un task error", b"ynchroni", b"yncStream", b"ync Stream", b"ync default", b"yncstream"),
            *(b"ync stream", b"llocate ", b"ut of memory", b"Out of device memory", b"memory isn't enough"),
        ),
        (
            FailureSample(
                "[ERROR] DEVICE(16158,fffe34f491e0,python):2023-12-29-12:03:04.156.780 [mindspore/ccsrc/plugin/device/"
                "ascend/hal/device/ascend_stream_manager.cc:194] SyncStream] Call runtime rtStreamSynchronize error.",
                "mindspore-lab/mindone#269",
            ),
            FailureSample(
                "        rtStreamSynchronizeWithTimeout execute failed, reason=[fftsplus timeout][FUNC:FuncErrorReason]"
                "[FILE:error_message_manage.cc][LINE:53]",
                "vllm-project/vllm-ascend#2800",
            ),
            FailureSample("RuntimeError: ACL stream synchronize failed.", "Ascend/pytorch#54"),
            FailureSample(
                "[ERROR] DEVICE(171877,ffff9c5e4010,python):2024-04-26-00:50:35.331.263 [mindspore/ccsrc/runtime/"
                "pynative/op_runner.cc:120] MallocForKernelOutput] Allocate output memory failed, "
                "node:Default/Cast-op446",
                "mindspore-lab/mindone#465 (tests/fixtures/real_logs/device-oom-allocate-failed_mindone-465)",
            ),
            FailureSample(
                "Out of memory error on GPU 0. Cannot allocate 128.000000MB memory on GPU 0, 7.995605GB memory has "
                "been allocated and available memory is only 0.000000B.",
                _CORPUS.format("PaddlePaddle/PaddleOCR#11266", "paddle-error-message-summary-gpu-oom_paddleocr-11266"),
            ),
        ),
    ),
    # NCCL's: a collective library error by name, or the torch process group aborting (its watchdog's
    # time-out is a "collective time-out", below)
    FailureKind(
        "collective failure",
        rb"\bnccl(?:Internal|System|UnhandledCuda|Remote|InvalidUsage|InvalidArgument)Error\b|"
        rb"\bNCCL error\b|NCCL communicator was aborted|taking the entire process down|"
        # the exception the watchdog thread died of (torch >= 2.1): `[Rank 3] NCCL watchdog thread terminated with
        # exception: [Rank 3] Watchdog caught collective operation timeout: ...`
        rb"watchdog thread terminated with exception",
        (
            *(b"ncclInternalError", b"ncclSystemError", b"ncclUnhandledCudaError", b"ncclRemoteError"),
            *(b"ncclInvalidUsageError", b"ncclInvalidArgumentError", b"NCCL error", b"NCCL communicator was aborted"),
            *(b"taking the entire process down", b"watchdog thread terminated with exception"),
        ),
        (
            FailureSample(
                "[E318 07:39:53.792795153 ProcessGroupNCCL.cpp:636] [Rank 4] To avoid data inconsistency, we are "
                "taking the entire process down.",
                "modelscope/DiffSynth-Studio#458",
            ),
            FailureSample(
                "[rank4]:[E318 07:39:53.792795153 ProcessGroupNCCL.cpp:636] [Rank 4] To avoid data inconsistency, we "
                "are taking the entire process down.",
                "modelscope/DiffSynth-Studio#458 (tests/fixtures/real_logs/nccl-abort-rank-tags_diffsynth-458)",
                rank=4,
            ),
            FailureSample(
                "[rank3]:[E ProcessGroupNCCL.cpp:1182] [Rank 3] NCCL watchdog thread terminated with exception: "
                "[Rank 3] Watchdog caught collective operation.",
                _CORPUS.format("huggingface/trl#1405", "nccl-watchdog-rank3-then-frames_trl-1405"),
                rank=3,
            ),
            FailureSample(  # std::terminate's `what():` line (C++ abort) naming the watchdog's exception
                "  what():  [PG 1 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=635, OpType=ALLREDUCE, NumelIn=576156928, "
                "NumelOut=576156928, Timeout(ms)=600000) ra",
                _CORPUS.format("hiyouga/LlamaFactory#5558", "nccl-watchdog-behind-host-prefix-rank5_llamafactory-5558"),
            ),
        ),
    ),
    # torch's process group saying at error level that something failed, not what: `[E ProcessGroupNCCL.cpp:537]
    # Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, ...` comes
    # before the watchdog's own line (trl#1405). A failure, but the weakest named one: the line that says which
    # names the rank's failure (`weight` 1, as a traceback cut off); read before the time-out kind, whose words
    # (`timed out`) such a line holds
    FailureKind(
        "collective notice",
        rb"^\[E\d{0,4}[ \]].*ProcessGroupNCCL.*(?:[Aa]bort|[Ee]rror|[Ee]xception|failed)",
        (b"ProcessGroupNCCL",),
        (
            FailureSample(
                "[E1206 18:44:12.715588844 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or "
                "timeout) detected by watchdog at work: 7753, last enqueued NCCL work: 7755, last completed NCCL "
                "work: 7752.",
                "hiyouga/LlamaFactory#6269",
            ),
            FailureSample(
                "[rank3]:[E ProcessGroupNCCL.cpp:537] Some NCCL operations have failed or timed out. Due to the "
                "asynchronous nature of CUDA kernels, subseque.",
                _CORPUS.format("huggingface/trl#1405", "nccl-watchdog-rank3-then-frames_trl-1405"),
                rank=3,
            ),
        ),
        weight=1,
    ),
    # what std::terminate prints before it aborts the process: an exception no C++ frame caught (an HCCL
    # watchdog's, a CUDA error in a destructor, std::bad_alloc); the `what():` line after it says which
    FailureKind(
        "C++ abort",
        # and the `  what():  <message>` line libstdc++'s handler prints right after it (`C++ abort` reads it as
        # the message of the terminate line before it: core.logs.rows.failures.what_rank)
        rb"\bterminate called (?:after throwing an instance of|without an active exception|recursively)|"
        rb"^\s*what\(\):\s",
        (b"terminate called", b"what():"),
        (
            FailureSample(
                "terminate called after throwing an instance of 'std::runtime_error'", "vllm-project/vllm-ascend#8360"
            ),
            FailureSample(
                "[1,1]<stderr>:terminate called after throwing an instance of 'std::exception'",
                "microsoft/mscclpp#665 (mpirun --tag-output)",
                rank=1,
            ),
            FailureSample(
                "train data: 299 terminate called after throwing an instance of 'std::bad_alloc'",
                "Determined22/zh-NER-TF#98",
            ),
            FailureSample("  what():  std::bad_alloc", "baaivision/Painter#35"),
        ),
    ),
    # last: a time-out of the collective layer, only on an error-level line
    FailureKind(
        "collective time-out",
        rb"(?i)(?:\b(?:hccl|hcom|nccl|gloo|collective|cluster|topology|distributed|scheduler|"
        rb"meta server|watchdog|notify wait|socket|heartbeat|rendezvous)\b.*\b"
        rb"(?:time ?out|timed out|times out|timing out)\b|\b(?:time ?out|timed out|times out)\b.*\b"
        rb"(?:hccl|hcom|nccl|gloo|collective|cluster|topology|distributed|scheduler|watchdog)\b)",
        (b"imeout", b"imeOut", b"ime out", b"ime Out", b"imed out", b"imes out", b"iming out", b"IMEOUT", b"IME OUT"),
        (
            FailureSample(
                "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, "
                "Timeout(ms)=600000) ran for 600061 milliseconds before timing out.",
                "hiyouga/LlamaFactory#6269",
            ),
            FailureSample(
                "[ERROR] DISTRIBUTED(7605,7f34d9ea6e40,python):2026-11-22-07:29:01.032.393 [mindspore/ccsrc/cluster/"
                "topology/cluster_context.cc:316] BuildCluster] Topology build timed out.",
                "msrun on this machine, a worker never started (tests/fixtures/real_logs/msrun-semi-auto-cpu_error)",
            ),
        ),
        error_level=True,
    ),
    # glog's FATAL line (`F` + MMDD, time, thread, file:line]): a failed `CHECK` in OneFlow or any native library
    # logging with glog; the process aborts right after. Its `F1122` is a capital and four digits: the scans'
    # code search finds it (coded, no literal)
    FailureKind(
        "fatal check",
        rb"^F\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.\-]+:\d+\] ",
        (),
        (
            FailureSample(
                "F1122 13:50:47.079073 63928 user_op.cpp:299] Check failed: it != arg2tensor_desc_.end() Cannot find "
                "input_arg_name : out input_arg_index : 0",
                _CORPUS.format("Oneflow-Inc/oneflow#6746", "oneflow-glog-check-failed-two-processes_oneflow-6746"),
            ),
        ),
        coded=True,
        weight=3,
    ),
    # --- issue 30, second round of new logs
    # glog's ERROR line (`E` + MMDD, time, thread, file:line]): what Paddle's enforce, XLA or any native library
    # logging with glog prints when an operation fails (a FATAL line is "fatal check", above). An error line that
    # ends a rank's log ends its run; one followed by training rows does not (failures.trained_on). `E0425` is a
    # capital and four digits: the scans' code search finds it (coded, no literal)
    FailureKind(
        "glog error",
        rb"^E\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./\-]+:\d+\] ",
        (),
        (
            FailureSample(
                "E0425 18:38:33.592213     8 pybind.cc:1614] Invalid CUDAPlace(1), must inside [0, 1), because GPU "
                "number on your machine is 1",
                _CORPUS.format(
                    "smilelite/RobustScanner.paddle (log/workerlog.1)",
                    "paddleocr-workerlogs-eval-restarts-rank1-invalid-cudaplace_robustscanner-paddle",
                ),
            ),
        ),
        coded=True,
    ),
    *MORE_KINDS,  # core.logs.rows.failure_kinds_more
)


LAUNCHER_REPORTS: tuple[LauncherReport, ...] = (
    LauncherReport(  # Slurm's output of the batch script (slurm-J.out)
        "srun",
        rb"^srun: error: (?P<node>\S+): tasks? (?P<ranks>[0-9][0-9,\-]*): (?P<reason>.+?)\s*$",
        (b"srun: error: ",),
        (
            (
                FailureSample(
                    "srun: error: n2: task 7: Segmentation fault",
                    "a two-node Slurm run on this machine "
                    "(tests/fixtures/real_logs/slurm-teardown-segfault_produced-here)",
                ),
                (7,),
                "Segmentation fault",
            ),
        ),
    ),
    LauncherReport(
        "mpirun",
        # the PID as printed or masked by whoever pasted the report (`with PID xxxxxx on node xxxxxxxx`)
        rb"process rank (?P<ranks>\d+) with PID \S+ on node (?P<node>\S+) exited on signal \d+ \((?P<reason>[^)]+)\)",
        (b"process rank ",),
        (
            (
                FailureSample(
                    "mpirun noticed that process rank 4 with PID 8669 on node host07 exited on signal 11 "
                    "(Segmentation fault).",
                    "open-mpi/ompi#2664",
                ),
                (4,),
                "Segmentation fault",
            ),
            (
                FailureSample(
                    "mpirun noticed that process rank 1 with PID xxxxxx on node xxxxxxxx exited on signal 9 (Killed).",
                    _CORPUS.format(
                        "Kay1794/Aware-of-the-history#2 (PID and node masked by its author)",
                        "mpirun-rank-1-killed-signal-9-masked-pid_aware-of-the-history-2",
                    ),
                ),
                (1,),
                "Killed",
            ),
        ),
    ),
    LauncherReport(  # torch's elastic agent
        "torchrun",
        rb"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<ranks>\d+) \(pid: \d+\)",
        (b"(exitcode: ",),
        (
            (
                FailureSample(
                    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
                    "(pid: 1622990) of binary: /home/changquan/anaconda3/envs/lang/bin/python",
                    "Facico/Chinese-Vicuna#113",
                ),
                (0,),
                "exit code 1",
            ),
            (
                FailureSample(  # behind python logging's `[date]` stamp (core.logs.tokens.bulk.STAMPED_ERROR)
                    "[2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                    "(exitcode: 1) local_rank: 2 (pid: 5939) of binary: /home/ubuntu/anaconda3/envs/salience_detr/"
                    "bin/python",
                    "xiuqhou/Salience-DETR#4",
                ),
                (2,),
                "exit code 1",
            ),
        ),
    ),
    LauncherReport(  # torchrun's ChildFailedError report, one block per failed rank
        "torchrun",
        rb"^\s*rank\s*: (?P<ranks>\d+) \(local_rank: \d+\)\s*$",
        (b"(local_rank: ",),
        (
            (
                FailureSample(
                    "  rank      : 1 (local_rank: 1)",
                    _CORPUS.format(
                        "deepinsight/insightface#2182", "torchrun-childfailed-report-4-ranks_insightface-2182"
                    ),
                ),
                (1,),
                "failed (ChildFailedError report)",
            ),
        ),
        reason="failed (ChildFailedError report)",
    ),
    LauncherReport(  # the same report flattened onto one line per failed rank (a log system's export joins its lines)
        "torchrun",
        rb"\brank\s*: (?P<ranks>\d+) \(local_rank: \d+\)\s+exitcode\s*: (?P<code>-?[1-9]\d*) \(pid: \d+\)",
        (b"(local_rank: ",),
        (
            (
                FailureSample(  # behind CloudWatch's `  | <time> | ` table prefix, as the issue pasted it
                    "  | 2024-08-23T22:22:58.879Z | [2]: time : 2024-08-23_22:22:58 host : algo-2 rank : 2 (local_rank:"
                    " 2) exitcode : -6 (pid: 189) error_file: <N/A> traceback : Signal 6 (SIGABRT) received by PID 189",
                    "Lightning-AI/litData#340",
                ),
                (2,),
                "signal 6",
            ),
        ),
    ),
    LauncherReport(  # DeepSpeed's launcher: the command it ran (its `--local_rank=N`) and a non-zero exit
        "deepspeed",
        rb"^(?:.*?--local_rank=(?P<ranks>\d+))?.*exits with return code = (?P<code>-?[1-9]\d*)\s*$",
        (b"exits with return code = ",),
        (
            (
                FailureSample(
                    "[2023-05-11 07:34:44,846] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', "
                    "'main.py', '--local_rank=0', '--zero_stage', '0', '--deepspeed'] exits with return code = -9",
                    _CORPUS.format(
                        "deepspeedai/DeepSpeed#3512 (its command cut short)",
                        "deepspeed-launcher-return-code-minus-9-during-build_deepspeed-3512",
                    ),
                ),
                (0,),
                "signal 9",
            ),
        ),
    ),
    LauncherReport(  # paddle.distributed.launch
        "paddle",
        rb"ABORT!!! .*?rank=\[(?P<ranks>\d+(?:,\s*\d+)*)\] was aborted",
        (b"ABORT!!! ",),
        (
            (
                FailureSample(
                    "ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer "
                    "process with rank=[3] was aborted. Please check its log.",
                    _CORPUS.format(
                        "PaddlePaddle/Paddle#33074", "paddle-launch-abort-rank-3-train-job-failed_paddle-33074"
                    ),
                ),
                (3,),
                "aborted (ABORT!!!)",
            ),
        ),
        reason="aborted (ABORT!!!)",
    ),
    LauncherReport(  # torch.multiprocessing.spawn (detectron2's launch)
        "torch.multiprocessing",
        rb"^-- Process (?P<ranks>\d+) terminated with the following error:",
        (b"terminated with the following error",),
        (
            (
                FailureSample(
                    "-- Process 2 terminated with the following error:",
                    _CORPUS.format(
                        "facebookresearch/detr#282", "detectron2-launch-spawn-process-2-terminated_detr-282"
                    ),
                ),
                (2,),
                "terminated with the following error",
            ),
        ),
        reason="terminated with the following error",
    ),
    *MORE_REPORTS,  # core.logs.rows.failure_kinds_more
)
