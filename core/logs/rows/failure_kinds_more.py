"""More failure kinds and launcher reports, one entry each (as core.logs.rows.failure_kinds, which reads these after
its own; split off to keep modules short): the lines of issue 30's second set-aside round, each with its real samples.
"""

from __future__ import annotations

from core.logs.rows.failure_entry import FailureKind, FailureSample, LauncherReport

__all__ = ["MORE_KINDS", "MORE_REPORTS"]

_CORPUS = "{} (tests/fixtures/real_logs/{})"

MORE_KINDS: tuple[FailureKind, ...] = (
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
    # Slurm cancelling a job or a job step, which kills its tasks: by a time limit (`... CANCELLED AT
    # 2024-04-23T12:18:08 DUE TO TIME LIMIT ***`), a node failure, a preemption or an `scancel`. slurmstepd prints
    # it into the tasks' output (glued to a progress bar when it lands mid-redraw); srun then reports every task
    # `Terminated`, which alone is collateral (core.logs.rows.failures.task_end): this line is the run's end
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
    ),
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
)
