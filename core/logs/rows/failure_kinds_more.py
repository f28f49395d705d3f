"""More failure kinds and launcher reports, one entry each (as core.logs.rows.failure_kinds, which reads these after
its own; split off to keep modules short): the lines of issue 30's second set-aside round, each with its real samples.
"""

from __future__ import annotations

from core.logs.rows.failure_entry import FailureKind, FailureSample, LauncherReport
from core.logs.rows.failure_kinds_late import LATE_KINDS, LATE_REPORTS

__all__ = ["MORE_KINDS", "MORE_REPORTS"]

_CORPUS = "{} (tests/fixtures/real_logs/{})"

MORE_KINDS: tuple[FailureKind, ...] = (
    # torch_npu's wrapper codes (`ERR` + five digits: the subsystem that failed, `PTA call acl api failed`, `DIST
    # internal error`): a failure happened, not which; the CANN code or the collective's own line beside them names
    # the cause better (weight 1: diagnose names a rank's failure by its best-named line). Read after every other
    # kind: a line that another kind names is that kind's
    FailureKind(
        "torch_npu error code",
        rb"\bERR[0-9]{5}\b",
        (b"ERR",),
        (
            FailureSample(
                "(TaskRunner pid=30188) [ERROR] 2025-10-29-02:17:03 (PID:144556, Device:0, RankID:0) ERR02200 DIST "
                "call hccl api failed.",
                _CORPUS.format("verl-project/verl#3947", "verl-ray-hccl-init-ERR02200_verl-3947"),
            ),
            FailureSample(
                "[ERROR] 2026-05-08-03:20:31 (PID:758, Device:9, RankID:-1) ERR00100 PTA call acl api failed",
                _CORPUS.format(
                    "vllm-project/vllm-ascend#8360", "pid-prefix-507011-EL0003-rank9-hccl-watchdog_vllm-ascend-8360"
                ),
            ),
        ),
        weight=1,
    ),
    # MindSpore's runtime reports a Ctrl-C (or a scheduler's SIGINT) only at WARNING level, from its SIGINT handler
    # (graph_scheduler.cc `IntHandler`), and the process stops: the run ended, interrupted. At chatter level, so
    # the reader finds it by its anchor in each block (FailureKind.chatter), never by making WARNING lines candidates
    FailureKind(
        "interrupted",
        rb"\bProcess \d+ receive KeyboardInterrupt signal\b",
        (b"KeyboardInterrupt",),
        (
            FailureSample(
                "[WARNING] RUNTIME_FRAMEWORK(1058772,ffffb965d020,python):2024-10-29-04:29:53.640.194 [mindspore/ccsrc/"
                "runtime/graph_scheduler/graph_scheduler.cc:189] IntHandler] Process 1058772 receive "
                "KeyboardInterrupt signal.",
                _CORPUS.format(
                    "mindspore-lab/models research/xidian/LPCNet_timers/scripts/train.log",
                    "ascend-warnings-then-keyboardinterrupt-no-rows_models-lpcnet-timers",
                ),
            ),
        ),
        chatter=True,
    ),
    # MindSpore's Ascend runtime dumps a failed device task (ascend_kernel_runtime.cc `DumpTaskExceptionInfo`, called
    # only when a task of the graph failed): `Task fail infos ... retcode: 507011` at ERROR level, then, for a data
    # sink's GetNext op, its cause and suggestions at WARNING level. A pasted log often keeps only those WARNING lines
    # (mindocr#586): they are the same dump, the run's end. At chatter level (FailureKind.chatter); weight 0: the dump's
    # ERROR lines or a CANN code, when there, name the failure better (and its first line, the cause, its suggestions)
    FailureKind(
        "task exception dump",
        rb"\bDumpTaskExceptionInfo\] ",
        (b"DumpTaskExceptionInfo] ",),
        (
            FailureSample(
                "[WARNING] DEVICE(45501,fff2ab7fe1f0,python):2023-08-21-08:15:14.246.438 [mindspore/ccsrc/plugin/"
                "device/ascend/hal/device/ascend_kernel_runtime.cc:776] DumpTaskExceptionInfo] GetNext error may be "
                "caused by slow data processing (bigger than 20s / batch) or transfer data to device error.",
                "github.com/mindspore-lab/mindocr/issues/586 (a comment; the dump's WARNING lines only)",
            ),
        ),
        weight=0,
        chatter=True,
    ),
    # TensorFlow's TPU session (tpu/session_support.py `GracefulShutdownHook`, TPUEstimator's) finds a worker whose
    # heartbeat stopped (a preempted or dead TPU host) and starts shutting the session down: `ShutdownHook: lame
    # workers found: HeartbeatManager(/job:worker/...)`, at INFO level. The run lost its worker there; a reset that
    # trains on after it is not failed (failures.trained_on)
    FailureKind(
        "lost worker",
        rb"\bShutdownHook: lame workers found\b",
        (b"lame workers found",),
        (
            FailureSample(
                "INFO:tensorflow:ShutdownHook: lame workers found: HeartbeatManager(/job:worker/replica:0/task:0/"
                "device:CPU:0)",
                "github.com/megagonlabs/t5-japanese/issues/1 (mesh-tensorflow T5 on a preemptible TPU)",
            ),
        ),
    ),
    # Slurm's word that it stopped the job or step for a reason of its own (`DUE TO TIME LIMIT`, `DUE TO PREEMPTION`,
    # `DUE TO NODE FAILURE`): the run ended from outside, like a Ctrl-C (core.logs.rows.failures.STOP_KINDS). Without
    # `DUE TO` the same line is an `scancel` or srun tearing the step down after a task failed (`*** STEP 1.0 ON n1
    # CANCELLED AT ... ***`): the "Slurm cancelled" kind below, of the lowest weight (a failed task's own line, or
    # this line's reason, names the run's failure better)
    FailureKind(
        "job cancelled",
        rb"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+ DUE TO [A-Z][A-Z_ ]*[A-Z] \*\*\*",
        (b"CANCELLED AT",),
        (
            FailureSample(
                "slurmstepd: error: *** STEP 55595933.0 ON maestro-3017 CANCELLED AT 2025-01-10T15:27:25 DUE TO TIME "
                "LIMIT ***",
                "github.com/Lightning-AI/pytorch-lightning/issues/20542 (a Lightning run's output at its time limit)",
            ),
            FailureSample(
                "slurmstepd: error: *** JOB 867816 ON c0700a-s1 CANCELLED AT 2021-05-11T12:06:17 DUE TO TIME LIMIT ***",
                "github.com/Nextomics/NextDenovo/issues/114 (the job's output)",
            ),
        ),
    ),
    # the job's memory ran out and the cgroup's OOM killer killed the process: Slurm says so (its older and newer
    # wording; the kernel's own `Out of memory: Killed process N` is the "signal" kind's). The rank itself often prints
    # only `Killed` (the "signal" kind), which this names better (weight 3: what the user changes is memory)
    FailureKind(
        "host out of memory",
        rb"\bDetected \d+ oom[-_]kill events?\b",
        (b"oom-kill", b"oom_kill"),
        (
            FailureSample(
                "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup. Some of your processes "
                "may have been killed by the cgroup out-of-memory handler.",
                "github.com/ArjunaCluster/ArjunaUsers/issues/52 (a CGCNN training job's stderr)",
            ),
            FailureSample(
                "slurmstepd: error: Detected 1 oom_kill event in StepId=11300781.0. Some of the step tasks have been "
                "OOM Killed.",
                "github.com/nextflow-io/nextflow/issues/5932",
            ),
        ),
        weight=3,
    ),
    # PyTorch's DataLoader worker died of SIGBUS writing a batch to shared memory (`/dev/shm` too small, a container's
    # default 64 MB): the line names the cause; the RuntimeError after it (`DataLoader worker (pid N) is killed by
    # signal: Bus error`) only the symptom
    FailureKind(
        "shared memory",
        rb"\bUnexpected bus error encountered in worker\b",
        (b"nexpected bus error",),
        (
            FailureSample(
                "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
                "memory (shm).",
                "github.com/hezhangsprinter/DCPDN/issues/58 (and THU-DA-6D-Pose-Group/GDR-Net#16, a training run)",
            ),
        ),
        weight=3,
    ),
    # the lines of a native signal handler's report that name no failure of their own, for a paste that keeps only
    # them: OpenMPI's (opal backtrace, printed for a fatal signal only) `Signal code: Address not mapped (1)` /
    # `Signal code:  (-6)`, `Failing at address: 0xb8` / `(nil)` (not its closing `*** End of error message ***`:
    # as the rank's last line it would outrank the launcher's `exited on signal 6 (Aborted)`); glog's failure
    # signal handler (C++ under Paddle, TensorFlow, MXNet; Paddle wraps its lines in `[TimeInfo: ...]` /
    # `[SignalInfo: ...]`) `*** Aborted at 1691153636 (unix time) try "date -d @..." ...` and `*** SIGTERM
    # (@0x1157b0) received by PID 1136644 (TID 0x7f84541b85c0) from PID 1136560 ***` (`; stack trace: ***` without
    # Paddle). Weight 0: the report's head (`Signal: Segmentation fault (11)`), Paddle's `FatalError: ...` or the
    # launcher's `exited on signal 6 (Aborted)` name the failure better, and the last such line comes after them
    FailureKind(
        "signal report",
        rb"(?<![\w-])Signal code: [^\n]*\(-?\d+\)\s*$|\bFailing at address: (?:0x[0-9A-Fa-f]+|\(nil\))|"
        rb"\*\*\* Aborted at \d+ \(unix time\)|\*\*\* SIG[A-Z]+ \(@0x[0-9A-Fa-f]+\) received by PID \d+",
        (b"Signal code: ", b"Failing at address: ", b"(unix time)", b") received by PID "),
        (
            FailureSample(
                "[notebook-2a7fcf5e-9744-41c7-9c1c-5e37eeafdf60:3436928] Failing at address: 0xb8",
                _CORPUS.format(
                    "mindspore-lab/mindyolo#238",
                    "mpirun-host-pid-prefix-segfault-backtrace-in-hccl-unloadtask_mindyolo-238",
                ),
            ),
            FailureSample(
                "[ma-job-50d563e2-2cba-46d8-bac5-4da0e4f0e5b4-worker-0:00366] Signal code:  (-6)",
                _CORPUS.format("hiyouga/LlamaFactory#4284", "modelarts-worker-signal-aborted-report_llamafactory-4284"),
            ),
            FailureSample(
                "  [SignalInfo: *** SIGTERM (@0x1157b0) received by PID 1136644 (TID 0x7f84541b85c0) from PID "
                "1136560 ***]",
                _CORPUS.format(
                    "douling843/M2S-DETR log/workerlog.1", "ppdet-rtdetr-2-workerlogs-rows-eval-then-sigterm_m2s-detr"
                ),
            ),
            FailureSample(
                '  [TimeInfo: *** Aborted at 1614912721 (unix time) try "date -d @1614912721" if you are using GNU '
                "date ***]",
                _CORPUS.format(
                    "hutuxian/RSPNet log/workerlog.1",
                    "paddle-8-workerlogs-3-steps-then-keyboardinterrupt_rspnet-paddle",
                ),
            ),
        ),
        weight=0,
    ),
    # fairseq's trainer saves `crash.pt` when a training step raises, then raises again (fairseq/trainer.py
    # `train_step`: `except Exception: ... self.save_checkpoint(os.path.join(save_dir, "crash.pt"), {}); raise`): the
    # save line says a step died, not why (weight 1: the exception after it, when the log holds it, names it)
    FailureKind(
        "crash checkpoint",
        rb"\bSaving checkpoint to \S*\bcrash\.pt\b",
        (b"crash.pt",),
        (
            FailureSample(
                "[2022-05-18 20:16:21,067][fairseq.trainer][INFO] - Saving checkpoint to /home/pengtl/WavPrompt/"
                "wavprompt/outputs/wavpromptlsp100rf8ntok0/crash.pt",
                _CORPUS.format(
                    "github.com/Hertin/WavPrompt/issues/3",
                    "fairseq-hydra-brackets-begin-training-then-saving-crash-pt-cut_wavprompt-3",
                ),
            ),
        ),
        weight=1,
        chatter=True,  # an INFO line: searched in the end of each read, where the lines that end a run are
    ),
    # TensorFlow's NaN guard (`NanTensorHook`, Estimator and tf.train sessions; tensor2tensor, TF-Slim) logs
    # `ERROR:tensorflow:Model diverged with loss = NaN.` before raising `NanLossDuringTrainingError`: the line names
    # the failure when the traceback after it is cut before its exception line (a cut traceback weighs 1)
    FailureKind(
        "model diverged",
        rb"\bModel diverged with loss = (?:NaN|nan|Inf|inf)\b",
        (b"Model diverged",),
        (
            FailureSample(
                "> ERROR:tensorflow:Model diverged with loss = NaN.",
                _CORPUS.format(
                    "tensorflow/tensor2tensor#106",
                    "t2t-markdown-quoted-loss-step-row-then-model-diverged-nan-traceback_tensor2tensor-106",
                ),
            ),
        ),
        weight=3,
        quotes_loss=True,
    ),
    # the status code XLA, TensorFlow and absl print when a device (TPU HBM, GPU) cannot hold what a step needs:
    # `RESOURCE_EXHAUSTED: Attempting to reserve 6.48G ...`, behind TensorFlow's C++ log prefix (`2022-04-04
    # 00:27:49.642380: E tensorflow/.../xla_util.cc:88]`) or in an exception's message. Not levelled: the code
    # itself says the operation failed; a run that trains on after it is not failed (failures.trained_on)
    FailureKind(
        "resource exhausted",
        rb"\bRESOURCE_EXHAUSTED:",
        (b"RESOURCE_EXHAUSTED",),
        (
            FailureSample(
                "2022-04-04 00:27:49.642380: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   (1) "
                "RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory. That was not possible. "
                "There are 6.78G free, 0B reserved, and 3.33G reservable.",
                _CORPUS.format("pytorch/xla#3470", "torch-xla-tpu-resource-exhausted-glog-E-lines_pytorch-xla-3470"),
            ),
            FailureSample(
                "2022-04-04 00:27:49.642414: E tensorflow/compiler/xla/xla_client/xla_util.cc:88]   OP_REQUIRES "
                "failed at tpu_execute_op.cc:266 : RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of "
                "memory. That was not possible. There are 6.78G free, 0B reserved, and 3.33G reservable.",
                _CORPUS.format("pytorch/xla#3470", "torch-xla-tpu-resource-exhausted-glog-E-lines_pytorch-xla-3470"),
            ),
        ),
    ),
    # the OpenMP runtime (Intel's libiomp5, LLVM's libomp) aborting the process: `OMP: Error #15: Initializing
    # libiomp5md.dll, but found libiomp5md.dll already initialized.` (two runtimes loaded), `OMP: Error #179:
    # Function pthread_create failed` (no threads left). The runtime calls abort() after printing it: the process
    # ends there (an `OMP: Warning #N` or `OMP: Info #N` does not end it). Often glued to a progress bar, so searched
    FailureKind(
        "OpenMP runtime abort",
        rb"\bOMP: Error #\d+:",
        (b"OMP: Error ",),
        (
            FailureSample(
                "  0%|          | 0/3 [00:00<?, ?it/s]OMP: Error #15: Initializing libiomp5md.dll, but found "
                "libiomp5md.dll already initialized.",
                _CORPUS.format("WongKinYiu/yolov7#1443", "yolov7-header-then-omp-error-15-at-first-batch_yolov7-1443"),
            ),
        ),
        weight=3,
    ),
    # detectron2's training loop (and every trainer built on it: AdelaiDet, Transfiner, detrex, ...) logs the
    # exception that stopped training at ERROR level (`logger.exception("Exception during training:")`) and raises
    # it again: the run ends there, whether or not its traceback follows (a pasted log often ends at this line).
    # Weight 1: the traceback's exception line, when present, names the failure (`FloatingPointError`, CUDA OOM)
    FailureKind(
        "training loop exception",
        rb"\bException during training:",
        (b"Exception during training",),
        (
            FailureSample(
                "ERROR [04/27 13:03:54 d2.engine.train_loop]: Exception during training:",
                _CORPUS.format(
                    "SysCV/transfiner#16", "detectron2-events-rows-then-error-exception-during-training_transfiner-16"
                ),
            ),
            FailureSample(
                "**ERROR [06/09 11:05:25 d2.engine.train_loop]**: Exception during training:",
                _CORPUS.format(
                    "facebookresearch/detectron2#1563",
                    "detectron2-markdown-bold-error-and-cuda-oom-then-hooks-summary_detectron2-1563",
                ),
            ),
        ),
        weight=1,
    ),
    # torch's NCCL watchdog on a time-out (`[Rank 5] Watchdog caught collective operation timeout: WorkNCCL(...)`) is
    # read by the collective time-out kind; a pasted log is often cut inside it, before `timeout` (a window's end,
    # a line-length limit), or before it, its `[E ...ProcessGroupNCCL.cpp:N]` level prefix left out (the paste's
    # first line starts at `[Rank 0] Watchdog`). Its first words are printed for nothing else: the time-out, whatever
    # follows them (a whole line at error level is the time-out kind's)
    FailureKind(
        "collective time-out (cut)",
        rb"\bWatchdog caught collective\b(?! operation timeout)|^\[Rank \d+\] Watchdog caught collective\b",
        (b"Watchdog caught collective",),
        (
            FailureSample(
                "[rank5]:[E602 11:17:52.185053341 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective "
                "operati",
                _CORPUS.format(
                    "hiyouga/LlamaFactory#8261 (behind a log viewer's `[1763] ` and a tqdm bar there)",
                    "line-numbered-paste-hf-dict-row-bars-then-rank5-watchdog-cut_llamafactory-8261",
                ),
                rank=5,
            ),
            FailureSample(  # the paste's first line, its level prefix cut (the next lines' `[rankN]:[E ...]` kept)
                "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1892, OpType=ALLREDUCE, "
                "NumelIn=574105888, NumelOut=574105888, Timeout(ms)=600000) ran for 600016 milliseconds before timing "
                "out.",
                _CORPUS.format(
                    "VITA-MLLM/VITA-Audio#34",
                    "nccl-allreduce-watchdog-timeout-bracketed-date-rank-prefix_vita-audio-34",
                ),
            ),
        ),
    ),
    # icefall (k2) saves the batch a rank raised on before raising again (icefall.utils / train.py
    # `display_and_save_batch`, called in `train_one_epoch`'s `except:` and when the OOM scan fails): `(1/4) Saving
    # batch to <exp_dir>/batch-<uuid4>.pt`, its `(rank/world)` naming the rank (core.logs.rows.lineranks). The rank's
    # run ends there, whether or not its traceback follows (a spawned worker's traceback may never reach the log).
    # Weight 1: the exception, when its line is there, names the failure
    FailureKind(
        "icefall batch dump",
        rb"\bSaving batch to \S*batch-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.pt\b",
        (b"Saving batch to ",),
        (
            FailureSample(
                "2022-10-05 23:43:02,341 INFO [utils.py:968] (1/4) Saving batch to pruned_transducer_stateless2/"
                "exp_multi/batch-bdd640fb-0667-1ad1-1c80-317fa3b1799d.pt",
                _CORPUS.format(
                    "k2-fsa/icefall#603",
                    "icefall-rank-3-row-then-rank-1-saving-batch-and-spawn-traceback-cut_icefall-603",
                ),
            ),
            FailureSample(
                "2022-05-05 12:33:54,767 INFO [train.py:961] Saving batch to pruned_transducer_stateless2/exp/"
                "batch-0f1259e0-a18f-f6b6-b535-106e122c9a56.pt",
                _CORPUS.format("k2-fsa/icefall#343", "icefall-oom-sanity-check-error-then-traceback_icefall-343"),
            ),
        ),
        weight=1,
    ),
    # Slurm cancelling a job or a job step, which kills its tasks: by a time limit (`... CANCELLED AT
    # 2024-04-23T12:18:08 DUE TO TIME LIMIT ***`), a node failure, a preemption or an `scancel`. slurmstepd prints
    # it into the tasks' output (glued to a progress bar when it lands mid-redraw); srun then reports every task
    # `Terminated`, which alone is collateral (core.logs.rows.failures.task_end): this line is the task's end, a stop
    # from outside (core.logs.rows.failures.STOP_KINDS). Weight 1: a `DUE TO` reason ("job cancelled") or a failed
    # task's own line (srun tearing the step down after it) is the run's root cause, not this
    FailureKind(
        "Slurm cancelled",
        rb"\bslurmstepd(?:-[\w.\-]+)?: error: \*\*\* (?:JOB|STEP) [\w.+]+ ON \S+ CANCELLED AT\b",
        (b"CANCELLED AT",),
        (
            FailureSample(
                "Preparing test set...:  46%|\u2588\u2588\u2588\u2588\u258b     | 31/67 [29:02<35:12, 58.67s/it]"
                "slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***",
                _CORPUS.format("IGNF/myria3d#123", "srun-step-cancelled-after-tqdm-task-0-terminated_myria3d-123"),
            ),
        ),
        weight=1,
    ),
    # a C / CUDA `assert()` that failed: the C library's and CUDA's device-side report `file:line: ... Assertion
    # `cond` failed.` (glibc quotes it `cond'), then abort() (host) or a sticky device error (a kernel: every later
    # CUDA call of the process fails). Frameworks print it from their kernels' input checks: PyTorch's index and
    # loss kernels, Paddle's phi kernels behind `Error: ` (bce_loss_kernel.cu: a NaN reached the loss's input). A
    # Python `AssertionError` is a traceback's exception line, not this
    FailureKind(
        "assertion failed",
        rb"\bAssertion [`'][^\n]*?[`'] failed\b",
        (b"Assertion `", b"Assertion '"),
        (
            FailureSample(
                "Error: /paddle/paddle/phi/kernels/gpu/bce_loss_kernel.cu:42 Assertion `(x >= static_cast<T>(0)) && "
                "(x <= one)` failed. Input is expected to be within the interval [0, 1], but received nan.",
                "github.com/PaddlePaddle/PaddleNLP/issues/6609 (a comment: training stops at once, batch size 1)",
            ),
            FailureSample(
                "/opt/conda/conda-bld/pytorch_1616554827596/work/aten/src/ATen/native/cuda/IndexKernel.cu:142: "
                "operator(): block: [0,0,0], thread: [32,0,0] Assertion `index >= -sizes[i] && index < sizes[i] "
                '&& "index out of bounds"` failed.',
                _CORPUS.format(
                    "open-mmlab/mmdetection#5801",
                    "mmdet-text-log-nan-row-then-cuda-index-out-of-bounds-assertions_mmdetection-5801",
                ),
            ),
        ),
        weight=3,
    ),
    *LATE_KINDS,  # core.logs.rows.failure_kinds_late
)


MORE_REPORTS: tuple[LauncherReport, ...] = (
    # msrun's launcher (mindspore/parallel/cluster/process_entity/_api.py), after a worker died: the nodes the
    # scheduler's log names as timed out. An msrun worker's node id is its rank (`node_rank * local_worker_num +
    # index`, the `RANK_ID` msrun exports), so the nodes are the ranks that failed
    LauncherReport(
        "msrun",
        rb"Time out nodes are \[(?P<ranks>'\d+'(?:,[ \t]*'\d+')*)\]",
        (b"ime out",),
        (
            (
                FailureSample(
                    "[ERROR] ME(162078:281473590168608,MainProcess):2025-03-10-09:40:38.722.000 [mindspore/parallel/"
                    "cluster/process_entity/_api.py:431] Time out nodes are ['3']",
                    _CORPUS.format(
                        "candle-org/MindAct#1983 (MindNLP)",
                        "msrun-launcher-timeout-node-3-scheduler-grep-lines_mindnlp-1983",
                    ),
                ),
                (3,),
                "timed out (Time out nodes)",
            ),
        ),
        reason="timed out (Time out nodes)",
    ),
    # torch.distributed.launch (torch's elastic agent under the old launcher's name) when a worker exits without
    # writing an error file (`CHILD PROCESS FAILED WITH NO ERROR_FILE` banner): the worker's pid, local rank and
    # exit code on one line; a traceback after it is the launcher's own (raising ChildFailedError), not the cause
    LauncherReport(
        "torch.distributed.launch",
        rb"^\s*Child process \d+ \(local_rank (?P<ranks>\d+)\) FAILED \(exitcode (?P<code>-?[1-9]\d*)\)",
        (b") FAILED (exitcode ",),
        (
            (
                FailureSample(
                    "Child process 71952 (local_rank 0) FAILED (exitcode 1)",
                    _CORPUS.format(
                        "junjie18/CMT#83", "torch-launch-child-process-failed-with-no-error-file-local-rank-0_cmt-83"
                    ),
                ),
                (0,),
                "exit code 1",
            ),
        ),
    ),
    # the legacy torch.distributed.launch (torch <= 1.8, and `python -m torch.distributed.launch` scripts kept since)
    # waits for its workers and raises subprocess.CalledProcessError with the command of the first that ended badly:
    # its `--local_rank=N` names the task (as DeepSpeed's report above), `died with <Signals.SIGKILL: 9>` or `returned
    # non-zero exit status 1` why. A command without `--local_rank` (a build step, `--use_env`) is no launcher's report
    LauncherReport(
        "torch.distributed.launch",
        rb"CalledProcessError: Command '\[[^\]\n]*?'--local_rank=(?P<ranks>\d+)'[^\]\n]*\]' "
        rb"(?:(?P<reason>died with <Signals\.SIG[A-Z0-9]+: \d+>)|returned non-zero exit status (?P<code>[1-9]\d*))",
        (b"CalledProcessError: Command '",),
        (
            (
                FailureSample(
                    "_subprocess.CalledProcessError: Command '['/usr/bin/python3', '-u', 'main.py', '--local_rank=3', "
                    "'--cfg', 'configs/swin/swin_tiny_patch4_window7_224.yaml', '--data-path', '/content/Swin-"
                    "Transformer/dataset/cats_and_dogs_filtered', '--batch-size', '32']' died with "
                    "<Signals.SIGKILL: 9>._",
                    _CORPUS.format(
                        "microsoft/Swin-Transformer#267 (Markdown italics `_..._` as pasted)",
                        "markdown-italic-calledprocesserror-local-rank-3-died-with-sigkill_swin-transformer-267",
                    ),
                ),
                (3,),
                "died with <Signals.SIGKILL: 9>",
            ),
        ),
    ),
    # DeepSpeed's launcher (deepspeed/launcher/launch.py `sigkill_handler`) kills every worker it started when one of
    # them died or it was signalled itself, one INFO line per worker, then (when a worker's exit code is known) its
    # `exits with return code = N` report above: the run ended there, whether or not that report made it into the log
    # (a pasted log often ends at these lines). The line names a pid, not a task: rank 0, as that report without
    # `--local_rank`. At chatter level (`chatter`), the lowest tier
    LauncherReport(
        "deepspeed",
        rb"\bsigkill_handler\] Killing subprocess \d+",
        (b"Killing subprocess",),
        (
            (
                FailureSample(
                    "[2025-04-17 23:16:39,064] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 1619464",
                    _CORPUS.format(
                        "OpenRLHF/OpenRLHF#977",
                        "deepspeed-zero2-init-then-sigkill-handler-killing-subprocess_openrlhf-977",
                    ),
                ),
                (0,),
                "killed by its launcher (sigkill_handler: Killing subprocess)",
            ),
            (  # behind pdsh's host prefix (the multi-node launcher): core.logs.rows.failures._chatter_level
                FailureSample(
                    "192.169.83.120: [2023-10-13 11:31:28,593] [INFO] [launch.py:315:sigkill_handler] Killing "
                    "subprocess 249",
                    "github.com/deepspeedai/DeepSpeed/issues/4510 (Llama-2-70B on 16 nodes, the node's exit log)",
                ),
                (0,),
                "killed by its launcher (sigkill_handler: Killing subprocess)",
            ),
        ),
        reason="killed by its launcher (sigkill_handler: Killing subprocess)",
        chatter=True,
    ),
    *LATE_REPORTS,  # core.logs.rows.failure_kinds_late
)
