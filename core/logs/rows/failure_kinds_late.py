"""Failure kinds and launcher reports of issue 30's eighth round, one entry each (read after
core.logs.rows.failure_kinds_more's, which splices these in; split off as both earlier tables are at the module-length
bound): each with its real samples and their source.
"""

from __future__ import annotations

from core.logs.rows.failure_entry import FailureKind, FailureSample, LauncherReport

_CORPUS = "{} (tests/fixtures/real_logs/{})"

__all__ = ["LATE_KINDS", "LATE_REPORTS"]

# strsignal()'s words in glibc's zh_CN translation (bash prints them for a job a signal ended), and its `core dumped`
# in ASCII or full-width parentheses
_ZH_WORDS = ("已杀死", "段错误", "已放弃", "总线错误", "非法指令", "浮点数例外")
_ZH_SIGNALS = "|".join(_ZH_WORDS).encode()
_ZH_CORE = "(?:\\(|（)核心已转储(?:\\)|）)".encode()

LATE_KINDS: tuple[FailureKind, ...] = (
    # OpenMPI's signal report opens with `*** Process received signal ***` (behind its `[host:pid] ` prefix): a process
    # died of a signal, not which one. Weight 1: the report's next line, `Signal: Segmentation fault (11)` (the "signal"
    # kind), names it, and a paste that keeps only this line still ends the rank
    FailureKind(
        "signal received",
        rb"\*\*\* Process received signal \*\*\*",
        (b"Process received signal",),
        (
            FailureSample("*** Process received signal ***", "tactcomplabs/rev#78"),
            FailureSample(
                "  [m2301007135:374576] *** Process received signal ***",
                _CORPUS.format(
                    "mindspore-lab/mindyolo#242", "mindyolo-wrapped-epoch-step-row-then-segfault-signal-11_mindyolo-242"
                ),
            ),
        ),
        weight=1,
    ),
    # A process's own excepthook that logs the exception it did not catch, then exits: OLMo's (olmo.util.excepthook,
    # `log.critical("Uncaught %s: %s", type name, value)`, the traceback below it when kept). `Uncaught` before an
    # exception's class name and a colon: the failure and its cause on one line (a pasted log often keeps only it).
    # A cause another kind names (`Uncaught OutOfMemoryError: CUDA out of memory.`, a device error) is that kind's
    FailureKind(
        "uncaught exception",
        rb"\bUncaught (?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt): ",
        (b"Uncaught ",),
        (
            FailureSample(
                "[2024-04-18 19:10:41] CRITICAL [olmo.util:158, rank=0] Uncaught OLMoThreadError: generator thread "
                "data thread 3 failed",
                "github.com/allenai/OLMo/issues/552 (the whole pasted log: one step block, then this line)",
            ),
        ),
        weight=3,
    ),
    # A shell's report that the job it ran was killed by SIGTERM (`timeout`'s signal, `kill`, a scheduler's stop):
    # bash prints the signal's name alone on a line, `Terminated`, maybe after the terminal's cursor keys a user
    # typed while it hung (`ESC [ A`, pasted as `^[[A`). A stop from outside (core.logs.rows.failures.STOP_KINDS),
    # not a crash; weight 1: a rank's own failure line, when there, names the end better. srun's `task 0:
    # Terminated` is no such line (a task torn down because another failed: core.logs.rows.taskends)
    FailureKind(
        "terminated",
        rb"^(?:(?:\x1b|\^\[)\[[0-9;]*[A-Za-z])*[ \t]*Terminated[ \t]*\r?$",
        (b"Terminated",),
        (
            FailureSample(
                "^[[A^[[A^[[ATerminated",
                "github.com/Ascend/pytorch/issues/154 (torchrun on 2 NPUs under `timeout 300s`, rank 1 hung in "
                "torch.compile; the log's last line)",
            ),
        ),
        weight=1,
    ),
    # Hydra's word that the job function it ran raised (hydra._internal.utils.run_and_report): `Error executing job
    # with overrides: [...]` at error level, then the traceback, or instead of it `Set the environment variable
    # HYDRA_FULL_ERROR=1 for a complete stack trace.` after the exception line. It says a job failed, not why:
    # weight 1, the traceback's exception line (when kept) names the cause
    FailureKind(
        "Hydra job error",
        rb"\bError executing job with overrides: |\bSet the environment variable HYDRA_FULL_ERROR=1 for a complete",
        (b"Error executing job with overrides", b"HYDRA_FULL_ERROR"),
        (
            FailureSample(
                "[2025-10-31 05:07:11,062][__main__][ERROR] - Error executing job with overrides: ['machine=hpc_train',"
                " 'dataset=scannetpp_518_many_ar_48ipg_8g', 'dataset.num_workers=12', 'dataset.num_views=4']",
                "github.com/facebookresearch/map-anything/issues/89 (the pasted log: one metric-logger row, then this "
                "line; no traceback followed)",
            ),
            FailureSample(
                "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.",
                _CORPUS.format(
                    "verl GRPO on Ray, the log's last line",
                    "verl-grpo-ray-taskrunner-21-steps-then-actorunavailableerror_verl-fork-train-out",
                ),
            ),
        ),
        weight=1,
    ),
    # An IDE's word on how the process it ran ended (PyCharm / IntelliJ's run console): `Process finished with exit
    # code N`, 0 a clean end; any other code is the process's failure: 1 an uncaught exception, 137 `(interrupted by
    # signal 9: SIGKILL)`, on Windows an NTSTATUS as a signed 32-bit number with its hex beside it (-1073741819
    # `0xC0000005`, an access violation: a native crash with no Python traceback). Weight 1: a traceback's
    # exception line before it, when kept, names the cause
    FailureKind(
        "process exit code",
        rb"\bProcess finished with exit code (?!0(?![0-9]))-?[0-9]+",
        (b"Process finished with exit code ",),
        (
            FailureSample(
                "Process finished with exit code -1073741819 (0xC0000005)",
                "github.com/milesial/Pytorch-UNet/issues/205 (tqdm bars with `loss (batch)=`, then this line, last)",
            ),
        ),
        weight=1,
    ),
    # The shell's word on a job killed by a signal, in the system's language: bash prints strsignal()'s text, which
    # glibc translates (zh_CN: `已杀死` Killed, `段错误` Segmentation fault, `已放弃` Aborted, `总线错误` Bus error,
    # `非法指令` Illegal instruction, `浮点数例外` Floating point exception, `(核心已转储)` core dumped), alone on a
    # line or after the job's pid (`run.sh: 行 7: 4242 已杀死  python train.py`), as the "signal" kind's English words
    FailureKind(
        "signal (localized)",
        rb"^[ \t]*(?:" + _ZH_SIGNALS + rb")(?:[ \t]*" + _ZH_CORE + rb")?[ \t]*\r?$|"
        rb"(?:^|\s)\d+\s+(?:" + _ZH_SIGNALS + rb")(?:\s|$)",
        tuple(word.encode() for word in _ZH_WORDS),
        (
            FailureSample(
                "已杀死",
                "github.com/PaddlePaddle/PaddleOCR/issues/528 (PaddleOCR 1.x DB training, the log's last line, killed "
                "by the kernel's OOM killer during its evaluation at iter 14000)",
            ),
        ),
    ),
    # argparse's refusal of a command line (`parser.error`, exit status 2): `usage: PROG ...` then `PROG: error: ` and
    # one of argparse's own messages. The program never started: its job ends there, with the cause on the line
    FailureKind(
        "argparse error",
        rb"^[ \t]*[^\s:]+: error: (?:unrecognized arguments: |the following arguments are required: |"
        rb"argument [^\s:]+(?:/[^\s:]+)?: |one of the arguments |ambiguous option: )",
        (b": error: ",),
        (
            FailureSample(
                "sn_boilerplate_main.py: error: unrecognized arguments: -ws 8",
                "github.com/BruceRayWilson/PBL_sambanova_starter/blob/a61c08231eeaa44253be93e27564d2677462047c/"
                "slurm.out (a Slurm job's third command, each of 8 processes, the log's last lines)",
            ),
        ),
        weight=3,
    ),
    # A CUDA runtime call that failed, as a C++ trainer's check macro reports it: the error's code, then its
    # message quoted (Marian's CUDA_CHECK: `CUDA error 2 'out of memory' - <file>:<line>: cudaMalloc(&data_, size)`,
    # behind its logger's `[date] Error: `; darknet's check_error: `CUDA Error: out of memory`, the runtime's own
    # words, then its `error()`'s `Assertion `0' failed.`, a consequence). The cause itself (an out-of-memory, a
    # launch failure): weight 3
    FailureKind(
        "CUDA error",
        rb"\bCUDA error \d+ '[^'\n]+'|\bCUDA Error: out of memory\b",
        (b"CUDA error ", b"ut of memory"),
        (
            FailureSample(
                "[2019-04-15 08:34:14] Error: CUDA error 2 'out of memory' - /data/home/mt/tools/marian/src/tensors/"
                "gpu/device.cu:32: cudaMalloc(&data_, size)",
                _CORPUS.format(
                    "marian-nmt/marian-dev#439, the log's second-to-last line",
                    "marian-valid-lines-only-then-tcmalloc-and-cuda-oom-abort_marian-dev-439",
                ),
            ),
            FailureSample(
                "CUDA Error: out of memory",
                _CORPUS.format(
                    "pjreddie/darknet#491, two lines before `Assertion `0' failed.` and `Aborted (core dumped)`",
                    "darknet-avg-loss-row-then-resize-cuda-oom-aborted_darknet-491",
                ),
            ),
        ),
        weight=3,
    ),
    # A C++ program's own abort, as its logger words it before calling abort(): `Error: Aborted from <function> in
    # <file>:<line>` (Marian's ABORT macro, after the line that says why). It says the process aborted, not why:
    # weight 1, the line before it (a CUDA error, an exception's message) names the cause
    FailureKind(
        "logged abort",
        rb"\bError: Aborted from \S.* in \S+:\d+",
        (b"Error: Aborted from ",),
        (
            FailureSample(
                "[2019-04-15 08:34:14] Error: Aborted from virtual void marian::gpu::Device::reserve(size_t) in "
                "/data/home/mt/tools/marian/src/tensors/gpu/device.cu:32",
                _CORPUS.format(
                    "marian-nmt/marian-dev#439, the log's last line",
                    "marian-valid-lines-only-then-tcmalloc-and-cuda-oom-abort_marian-dev-439",
                ),
            ),
        ),
        weight=1,
    ),
    # Slurm's step daemon killing a job whose memory passed its limit (the job-accounting plugin's word, printed into
    # the tasks' output): `Job N exceeded memory limit (used > limit), being killed`. The cause (weight 3: what the
    # user changes is the job's memory); the `*** JOB N ON host CANCELLED AT ... ***` that follows is the kill
    # itself. Slurm's `Exceeded step
    # memory limit at some point.` at a step's end kills nothing: not this kind
    FailureKind(
        "job memory limit",
        rb"\bslurmstepd(?:-[\w.\-]+)?: error: (?:Job|Step) \S+ exceeded memory limit \([^)\n]*\), being killed",
        (b"exceeded memory limit",),
        (
            FailureSample(
                "slurmstepd: error: Job 7518 exceeded memory limit (626359956 > 512000000), being killed",
                _CORPUS.format(
                    "coqui-ai/STT#2238, three rows before it, one flushed after the kill",
                    "pipe-epoch-training-steps-loss-then-slurmstepd-memory-limit-cancelled_coqui-stt-2238",
                ),
            ),
        ),
        weight=3,
    ),
    # TensorFlow's own C++ log line at FATAL (its `YYYY-mm-dd HH:MM:SS.ffffff: F file:line] message`, the glog shape
    # TF prints with a date; glog's own `F1122 ...` is the "fatal check" kind): a LOG(FATAL) or failed CHECK, after
    # which the process aborts (signal 6). Its message names what failed (weight 3), where the framework's `[ERROR]`
    # lines before it (CANN's GE, a graph's pass) are steps of the same failure, and a launcher's exit code after it
    # only says the process died
    FailureKind(
        "fatal log",
        rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: F [\w./\-]+:\d+\] ",
        (b": F ",),
        (
            FailureSample(
                "2020-12-04 13:21:47.194876: F tf_adapter/kernels/geop_npu.cc:570] GeOp7_0GEOP::::DoRunAsync Failed",
                _CORPUS.format(
                    "Ascend/modelzoo's ModelArts PWC-Net job stdout, after GE's `PreRun Failed, thread exit...`",
                    "modelarts-pwcnet-ge-prerun-failed-doRunAsync-exit-minus-6-then-training-completed_ascend-modelzoo-"
                    "pwcnet",
                ),
            ),
        ),
        weight=3,
    ),
    # A process's word that it received a stop signal from outside (a `kill`, a scheduler's stop, a closed terminal's
    # SIGHUP), after which it ends its run: torch's elastic agent (torchrun) `Received N death signal, shutting down
    # workers` (it then sends its workers the signal and raises SignalException; python logging's or glog's WARNING,
    # `Signals.SIGTERM` in some versions), and PyTorch Lightning's signal connector `Received SIGTERM: 15` behind its
    # `[rank: N] ` (the local rank; a rank source, core.logs.rows.lineranks), glued to the rank's progress bar when it
    # lands mid-redraw (EAGNet's logs/train.out: `... train_total_loss=0.375][rank: 2] Received SIGTERM: 15`, read in
    # tests/test_issue30_r11fail.py). A stop from outside (core.logs.rows.failures.STOP_KINDS); weight 1: the
    # SignalException traceback or a rank's own failure line, when there, says as much or more
    FailureKind(
        "stop signal",
        rb"\bReceived (?:\d+|(?:Signals\.)?SIG[A-Z]+) death signal\b|\bReceived SIGTERM: \d+",
        (b" death signal", b"Received SIGTERM: "),
        (
            FailureSample(
                " 16%|\u2588\u258b        | 4084/25120 [3:02:22<16:20:02,  2.80s/it]WARNING:torch.distributed.elastic."
                "agent.server.api:Received 1 death signal, shutting down workers",
                "github.com/modelscope/ms-swift/issues/64 (HF Trainer under torchrun; the agent then sends SIGHUP to "
                "the workers)",
            ),
            FailureSample(
                "W1227 22:43:28.153000 54958 torch/distributed/elastic/agent/server/api.py:725] Received 15 death "
                "signal, shutting down workers",
                _CORPUS.format(
                    "OLMo fork's train.log, then SignalException",
                    "olmo-step-block-indented-ce-loss-37-rows-then-sigterm-signalexception_olmo-fork-150m-train-log",
                ),
            ),
        ),
        weight=1,
    ),
    # c10::Error's origin line, which every PyTorch C++ exception's message carries after its words: `Exception raised
    # from <function> at <file>:<line> (most recent call first):`, then its frames. It says a C++ exception ended the
    # process, and where; its words, when kept (a `what():`, a `RuntimeError: `, the watchdog's line), name it better:
    # weight 1. Alone it is all a paste may keep (zd11024/NaviLLM#34, hard-wrapped at 102 columns, opens with it)
    FailureKind(
        "C++ exception origin",
        rb"^\s*Exception raised from [A-Za-z_~][\w:<>~]* at \S+:\d+",
        (b"Exception raised from ",),
        (
            FailureSample(
                "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1186 "
                "(mo",
                _CORPUS.format(
                    "zd11024/NaviLLM#34, the paste's first line",
                    "hard-wrapped-watchdog-frames-then-torchrun-exitcode-minus-6-traceback_navillm-34",
                ),
            ),
        ),
        weight=1,
    ),
    # A caching memory allocator's last word (nnabla's, on stderr): one failed allocation frees the cache and retries
    # (`Failed to allocate. Freeing memory cache and retrying.`, no failure: the retry may succeed); `Failed to
    # allocate again.` says the retry failed too, the device's memory is exhausted and the allocation raises (nnabla's
    # `Error during forward propagation:` and the graph's function list follow)
    FailureKind(
        "allocation failed again",
        rb"^\s*Failed to allocate again\b",
        (b"Failed to allocate again",),
        (
            FailureSample(
                "Failed to allocate again.",
                _CORPUS.format(
                    "sony/ai-research-code#54",
                    "nnabla-failed-to-allocate-again-forward-propagation-epoch-1_sony-ai-research-code-54",
                ),
            ),
        ),
    ),
)


LATE_REPORTS: tuple[LauncherReport, ...] = (
    # Huawei ModelArts' training toolkit (ma-training-toolkit, Go logrus `time=... level=... msg=...` lines) wraps the
    # user's training command: when that command ends, its bootstrap logs the exit code it passes on, at error level
    # for a non-zero one (`bootstrap is exiting with exit code 0` after the init step is its healthy word). The line
    # names no device: the job's, rank 0 as a report without a task list. The code is the toolkit's return code (-1
    # when it stopped the command, which its own analyzer calls no Linux code), not a signal: kept as printed
    LauncherReport(
        "ModelArts",
        rb"\bbootstrap is exiting with (?P<reason>exit code -?[1-9]\d*)",
        (b"bootstrap is exiting with exit code ",),
        (
            (
                FailureSample(
                    'time="2023-08-01T09:48:15+08:00" level=error msg="bootstrap is exiting with exit code -1" '
                    'file="bootstrap.go:243" Command=bootstrap/run Component=ma-training-toolkit '
                    "Platform=ModelArts-Service",
                    "github.com/2024-MindSpore-1/Code3/blob/d415a52c49b89105f85734bd928aaa225d746300/replknet/logs/"
                    "gMLP.txt (MindCV gMLP-S, stopped after epoch 214 of 300)",
                ),
                (0,),
                "exit code -1",
            ),
            (
                FailureSample(
                    'time="2023-08-03T19:27:27+08:00" level=error msg="bootstrap is exiting with exit code 255" '
                    'file="bootstrap.go:243" Command=bootstrap/run Component=ma-training-toolkit '
                    "Platform=ModelArts-Service",
                    "2024-MindSpore-1/Code3 BoTNet/logs/botnet50.txt (tests/fixtures/real_logs/"
                    "mindcv-botnet50-modelarts-120-epochs-then-obs-copy-filenotfound-exit-255_code3-botnet)",
                ),
                (0,),
                "exit code 255",
            ),
        ),
    ),
    # torch.distributed.elastic's event record (torch 1.9, `torchelastic.events` logged as one JSON object a line):
    # the agent's word that a worker FAILED, naming that worker's `global_rank` and its host. Its shape: the event's
    # `"name": "torchelastic.worker.status.FAILED"` first, then the worker's metadata; the worker's own error is in
    # `raw_error` (often `<NONE>`: it died with no message), so the event's status is the reason
    LauncherReport(
        "torchelastic",
        rb'"name": "torchelastic\.worker\.status\.FAILED".*?"global_rank": (?P<ranks>\d+),'
        rb'(?:.*?"hostname": "(?P<node>[^"\s]+)")?',
        (b'"torchelastic.worker.status.FAILED"',),
        (
            (
                FailureSample(
                    (
                        '{"name": "torchelastic.worker.status.FAILED", "source": "WORKER", "timestamp": 0'
                        ', "metadata": {"run_id": "none", "global_rank": 2, "group_rank": 0, "worker_id":'
                        ' "392", "role": "default", "hostname": "job-155b782d-12d0-457b-ada3-ee678ed0e091'
                        '", "state": "FAILED", "total_run_time": 1071, "rdzv_backend": "static", "raw_err'
                        'or": "{\\"message\\": \\"<NONE>\\"}", "metadata": "{\\"group_world_size\\": 1, \\"entry'
                        '_point\\": \\"python3\\", \\"local_rank\\": [2], \\"role_rank\\": [2], \\"role_world_siz'
                        'e\\": [4]}", "agent_restarts": 3}}'
                    ),
                    "github.com/ultralytics/yolov5/issues/4409 (YOLOv5 DDP on 4 GPUs; tests/fixtures/real_logs/"
                    "torchelastic-json-events-global-ranks-2-3-failed_yolov5-4409)",
                ),
                (2,),
                "worker.status.FAILED",
            ),
        ),
        reason="worker.status.FAILED",
    ),
    # torchrun's ChildFailedError report copied through a renderer that ate its separators (a Markdown paste: the
    # table's ` : ` columns and `_` pairs gone, `local_rank` -> `local rank`, `error_file` -> `error file`), one
    # run-together line per failed rank: `rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>`. The
    # report's rank line as `core.logs.rows.failure_kinds`' flattened one, its separators optional
    LauncherReport(
        "torchrun",
        rb"\brank\s*:?\s*(?P<ranks>\d+) \(local[ _]rank: \d+\)\s*exitcode\s*: (?P<code>-?[1-9]\d*) \(pid: \d+\)",
        (b"(local rank: ", b"(local_rank: "),
        (
            (
                FailureSample(
                    "rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>",
                    "github.com/ZhehengJiangLancaster/AMVUR/issues/2 (the issue's pasted report, flattened)",
                ),
                (2,),
                "signal 9",
            ),
        ),
    ),
)
