"""Which rank a line belongs to when one stream carries several: the rank sources, as data.

A launcher or a trainer that writes every rank into one stream says whose line it is on the line itself:

  mpirun --tag-output   `[1,3]<stdout>:epoch: 1 step: 402, loss is 482.63`   prefix, `[job,rank]<stream>:`
  torch (>= 2.2)        `[rank6]:[E624 07:12:55.531 ProcessGroupNCCL.cpp:1537] ...`  prefix (maybe behind a log
                        collector's stamp: `2025-07-17T11:20:40.299361236+08:00 [rank2]: Traceback ...`)
  VISSL                 `INFO ... log_hooks.py: 277: Rank: 0; [ep: 0] iter: 57; lr: 0.71785; loss: 2.94718;`
  WeNet                 `... DEBUG TRAIN Batch 4/203700 loss 12.646465 ... lr 0.00032621 rank 0`  at the end
  FunASR                `... - train, rank: 2, epoch: 0/500, ... (loss_avg_rank: 0.998), ...`  a `rank: N,` field
  srun --label          `1: {'loss': 10.57, 'learning_rate': 0.0006, 'epoch': 0.0012}`  prefix `N: ` before a record
  Lightning             `[rank: 2] Received SIGTERM: 15`  prefix `[rank: N] ` (rank_prefixed_message, the local rank)
  trainer's tag         `0: [RANK 3] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.2446`  `[RANK N] ` (its global
                        rank; behind srun's label too, where it wins)
  Determined            `<>        [2021-12-07 10:43:00] ef45fdce [rank=1] || Traceback ...`  prefix of a trial log
  torch_npu             `[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02200 ...`  error lines
  icefall (k2, lhotse)  `... INFO [train.py:907] (6/8) Epoch 3, batch 115350, loss[loss=0.2765, ...` `(rank/world)`
                        after the logger's `[file:line]` tag (icefall.utils.setup_logger), on every line
  OLMo                  `2025-12-12 16:00:38.012<TAB>host-03:5<TAB>olmo.util:168<TAB>CRITICAL<TAB>Uncaught ...`  the
                        host column's `:rank`
  grep over rank logs   `./prof_vllm_log/worker_6.log:23:ModuleNotFoundError: ...`  prefix, `FILE:LINE:` (a match)
                        or `FILE-LINE-` (context) naming msrun's `worker_N.log` (msrun prints it when a worker fails)
  pdsh (DeepSpeed,      `192.168.50.170: {'loss': 1.2992, 'learning_rate': 1.28e-06, 'epoch': 0.0}`,
  multi-node)           `worker-1: ...`: a host, not a rank (below)

`line_rank(line)` reads them: a pure function of the line's text, so the line-by-line and the bulk paths
give every row the same rank (the bulk path asks it only for the lines of a shape whose first line had a
source: a stream without any costs nothing). A row whose line names no rank keeps its file's rank.

A host prefix alone names a host, not a rank. pdsh prefixes every line of a node with its host; the loss is
printed by one process per node at most (HF Trainer and DeepSpeed's `log_dist` print on the main process),
so a host's rows are one series. They become one series per host, numbered by node in the order the hosts
first appear in the stream (the first host 0, the next 1, ...) and labelled with the host (`RunSnapshot.hosts`):
the node's number, because inventing a rank (the file's, or 8 x node) would pass a guess for a fact. A rank
on the line after the host (`worker-1: [rank3]: ...`) is the row's rank, as anywhere. Only hosts written as
an IPv4 address or a name with a hyphen before its number (`worker-1`, `dgx-a100-01`) are taken: a bare
`node1:` cannot be told from a `top1: 76.1` metric at a line's start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "RANK_SOURCES",
    "LineRank",
    "RankSample",
    "RankSource",
    "collector_stamp",
    "determined_prefix",
    "grep_prefix",
    "host_prefix",
    "line_rank",
]


@dataclass(frozen=True, slots=True)
class RankSample:
    """A real line with the rank (or host) a person reading it finds, and where the line comes from."""

    line: bytes
    rank: int | None
    host: str | None
    source: str


@dataclass(frozen=True, slots=True)
class RankSource:
    """One way a line names its rank: the pattern (group 1 the rank) and real lines it must read."""

    name: str
    pattern: re.Pattern[bytes]
    samples: tuple[RankSample, ...]


@dataclass(frozen=True, slots=True)
class LineRank:
    """What a line says of whose it is: a rank, a host, or both (never neither)."""

    rank: int | None
    host: str | None
    # where the rank's digits are in the line (start, end): the same in every line of its shape (digits are
    # masked one by one), so the bulk path reads them in numpy; None for a host (its name is text)
    span: tuple[int, int] | None = field(default=None, compare=False)


# A launcher's tag before a process's every line, one definition for the rows (here) and the failures
# (core.logs.rows.failures.line_tag): mpirun --tag-output's `[job,rank]<stream>:` (OpenMPI's streams: stdout,
# stderr, stddiag), horovodrun's (Gloo) `[rank]<stream>:`, torch >= 2.2's `[rankN]:`. Group 1 is the rank.
LAUNCHER_TAG = rb"\[(?:\d+,)?(\d+)\]<std(?:out|err|diag)>:"
TORCH_TAG = rb"\[rank(\d+)\]:"
_MPIRUN = re.compile(LAUNCHER_TAG)
_TORCH = re.compile(TORCH_TAG)
_VISSL = re.compile(rb"(?<![\w])Rank: (\d+);")
_TRAILING = re.compile(rb"(?<![\w.])rank (\d+)[ \t]*\r?$")
_FIELD = re.compile(rb"(?<![\w.])rank: (\d+),")  # a `rank: N,` field among the row's (never `local_rank: 0,`)
# srun --label's task id before every line: `N: `. Taken only before a record that carries its own position (a
# dict, a bracketed tag or stamp, a date): `12: loss: 3.1` is a row of step 12 (musiclm's `N: loss: X`), not rank 12's
_SRUN = re.compile(rb"(\d{1,5}): (?=[{\[]|\d{4}-\d\d-\d\d)")
# a trainer's own print tag before its line, `[RANK N] ` in capitals (awsome-distributed-ai's DDP example: `[RANK 3]
# Epoch 0 | ... | Loss: 0.24`), the process's global rank, so behind srun's label (the task's, a node's index under a
# per-node torchrun) it wins as a launcher's tag does. Only the capitals: `[Rank N] ` at a line's start is
# Megatron's per-rank memory report or a library's message (verl's `[Rank 0] Saved model`, DeepSpeed's `[Rank -1]`),
# read in the corpus as no prefix (tests/fixtures/real_logs/README.md)
_RANK_TAG = re.compile(rb"\[RANK (\d+)\] ")
# PyTorch Lightning's `rank_prefixed_message` (its seed, signal and DDP messages on every process): `[rank: N] ` before
# the message, N the process's local rank (its rank on one node)
_LIGHTNING = re.compile(rb"\[rank: (\d+)\] ")
# torch_npu's error prefix names the process's rank (`-1`: not known yet, no rank)
_NPU = re.compile(rb"\(PID:\d+, Device:\d+, RankID:(\d+)\)")
# icefall's logger (icefall.utils.setup_logger, used by k2/lhotse recipes and icefall-style trainers) puts
# `(rank/world)` after its `[file:line]` tag when torch.distributed is up; a rank is below the world size
# (`(3/4)`), so a progress count `(4/4)` or `(12/10)` is never taken for one
_ICEFALL = re.compile(rb"\[[^\]\s]+:\d+\] \((\d+)/(\d+)\) ")
# OLMo's console formatter (olmo.util's tab-separated `date<TAB>host:rank<TAB>logger:line<TAB>LEVEL<TAB>message`): the
# rank after the host column's colon (the process's local rank: the rank on one node)
_TAB_HOST = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\t[A-Za-z0-9][\w.\-]*:(\d+)\t")
# pdsh's `host: ` before a node's every line: an IPv4 address, or a name with a hyphen before a digit
# (`worker-1`, `dgx-a100-01`, a Kubernetes MPIJob pod `mpi-rc1ou1aw-launcher`; never a progress word:
# `Epoch-1: loss 0.3` is a row of epoch 1, not host `Epoch-1`'s; nor `fp16-mode: true`, no digit after its hyphen)
_HOST = re.compile(
    rb"(\d+(?:\.\d+){3}|(?!(?i:epoch|step|iter|batch|train|val|valid|test|eval)\b)"
    rb"[A-Za-z][A-Za-z0-9_.]*-[A-Za-z0-9_.\-]*\d[A-Za-z0-9_.\-]*): "
)
# Determined's trial log: `<level>  [time] <container id> [rank=N] || ` before every line of a trial's process
# (the level may be empty, `<>`); what follows `|| ` is the process's own line
_DETERMINED = re.compile(rb"(?:<\w*>[ \t]+)?(?:\[[^\]\n]*\][ \t]+)?(?:[0-9a-f]+[ \t]+)?\[rank=(\d+)\] \|\| ")

# grep's file prefix over msrun's worker logs (`grep -n -B -A` as msrun >= 2.4 prints the failing part of each
# worker's log on its console, `_api.py`): `PATH/worker_N.log:LINE:` on a matching line, `PATH/worker_N.log-LINE-`
# on a context line; what follows is that worker's own line
_GREP = re.compile(rb"(?:[\w.\-~]*/)*worker_(\d+)\.log(?::\d+:|-\d+-)")

# a log collector's own stamp before every line (`kubectl logs --timestamps`, `docker logs -t`, Loki and other
# log systems): RFC 3339 with a `T`, a fraction and a zone (`2025-07-17T11:20:40.299361236+08:00 [rank2]: ...`).
# What follows is the process's own line, its tag included (the zone tells it from a logger's own date). A
# date-time of any precision without a zone is a collector's too when a launcher's tag follows it (a logger's own
# date comes after the tag, never before it): NVIDIA/nccl#1610's `2025-02-18 12:54 [rankN]:[E218 ...] ...`. So is
# mpirun --timestamp-output's ctime stamp, glued to --tag-output's tag (PaddlePaddle/Paddle#4043):
#   Mon Sep 11 14:31:16 2017[1,37]<stderr>:F0911 14:31:16.057638  5678 SocketChannel.cpp:54] Check failed: ...
_TAG_AHEAD = rb"(?=" + TORCH_TAG + rb"|" + LAUNCHER_TAG + rb")"
_COLLECTOR_STAMP = re.compile(
    rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d) |"
    rb"(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)? |"
    rb"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4} ?)" + _TAG_AHEAD
)

RANK_SOURCES: tuple[RankSource, ...] = (
    RankSource(
        "mpirun --tag-output, horovodrun",
        _MPIRUN,
        (
            RankSample(
                b"[1,1]<stderr>:RuntimeError: Horovod has been shut down. This was caused by an exception on one of "
                b"the ranks",
                1,
                None,
                "github.com/ChenRocks/UNITER/issues/31 (tests/fixtures/real_logs/"
                "mpirun-tag-output-exception_uniter-31)",
            ),
            RankSample(
                b'[6]<stderr>:  File "/home/idps/.local/lib/python3.8/site-packages/horovod/_keras/__init__.py", '
                b"line 136, in _compute_gradients",
                6,
                None,
                "github.com/horovod/horovod/issues/3989 (tests/fixtures/real_logs/"
                "horovodrun-rank-6-stderr-tag-keras-allreduce-traceback-cut_horovod-3989)",
            ),
            RankSample(  # behind mpirun --timestamp-output's ctime stamp (`collector_stamp`)
                b"Mon Sep 11 14:31:16 2017[1,37]<stderr>:F0911 14:31:16.057638  5678 SocketChannel.cpp:54] Check "
                b"failed: len >= 0  peer=10.75.60.42: Connection timed out [110]",
                37,
                None,
                "github.com/PaddlePaddle/Paddle/issues/4043 (the issue's pasted log)",
            ),
        ),
    ),
    RankSource(
        "torch [rankN]:",
        _TORCH,
        (
            RankSample(
                b"[rank4]:[E1206 18:44:12.755262105 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective "
                b"operation timeout",
                4,
                None,
                "github.com/hiyouga/LLaMA-Factory/issues/6269 (tests/fixtures/real_logs/"
                "nccl-watchdog-rank-tags-one-stream_llamafactory-6269)",
            ),
            RankSample(  # behind a log collector's RFC 3339 stamp (`collector_stamp`)
                b"2025-07-17T11:20:40.299361236+08:00 [rank2]: Traceback (most recent call last):",
                2,
                None,
                "github.com/modelscope/ms-swift/issues/5009 (tests/fixtures/real_logs/"
                "iso-timestamp-before-rank2-tag-traceback-cut_ms-swift-5009)",
            ),
            RankSample(  # behind a collector's date-time without a zone (`collector_stamp`): the tag's global rank
                b"2025-02-18 12:54 [rank8]:[E218 04:54:22.731995105 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught "
                b"collective operation timeout: WorkNCCL(SeqNum=146, OpType=ALLTOALL_BASE, NumelIn=1621248, "
                b"NumelOut=1572864, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.",
                8,
                None,
                "github.com/NVIDIA/nccl/issues/1610 (the issue's pasted output)",
            ),
        ),
    ),
    RankSource(
        "VISSL Rank: N;",
        _VISSL,
        (
            RankSample(
                b"INFO 2021-12-02 18:52:20,806 log_hooks.py: 277: Rank: 0; [ep: 0] iter: 57; lr: 0.71785; loss: "
                b"2.94718; btime(ms): 192; eta: 0:00:08; peak_mem(M): 4176;",
                0,
                None,
                "github.com/facebookresearch/vissl/issues/480 (the issue's training output)",
            ),
        ),
    ),
    RankSource(
        "trailing rank N (WeNet)",
        _TRAILING,
        (
            RankSample(
                b"2023-01-30 18:47:16,614 DEBUG TRAIN Batch 4/203700 loss 16.885244 loss_att 13.554604 loss_ctc "
                b"24.656742 lr 0.00032621 rank 1",
                1,
                None,
                "github.com/wenet-e2e/wenet/issues/941 (tests/fixtures/real_logs/wenet-train-and-cv-batches-rank-"
                "suffix_wenet-941)",
            ),
        ),
    ),
    RankSource(
        "FunASR rank: N,",
        _FIELD,
        (
            RankSample(
                b"[2024-08-12 23:04:07,257][root][INFO] - train, rank: 4, epoch: 0/500, data_slice: 0/5, "
                b"step_in_slice: 32900/81081, step_in_epoch: 32900, total step: 32900, (loss_avg_rank: 0.906)",
                4,
                None,
                "github.com/modelscope/FunASR/issues/2006 (tests/fixtures/real_logs/"
                "funasr-rank-tagged-train-rows-loss-avg-rank-tuple-list_funasr-2006)",
            ),
        ),
    ),
    RankSource(
        "srun --label N:",
        _SRUN,
        (
            RankSample(
                b"1: {'loss': 10.57164478302002, 'learning_rate': 0.0005999489187808615, "
                b"'epoch': 0.0011918951132300357}",
                1,
                None,
                "github.com/huggingface/transformers/issues/9415 (tests/fixtures/real_logs/"
                "hf-trainer-dicts-srun-label-rank-prefix-two-ranks-eval-loss_transformers-9415)",
            ),
        ),
    ),
    RankSource(
        "trainer's [RANK N] tag",
        _RANK_TAG,
        (
            RankSample(  # behind srun --label's `0: ` (the node's task): the tag's global rank wins
                b"0: [RANK 3] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.24456023513240382",
                3,
                None,
                "github.com/awslabs/awsome-distributed-ai/pull/1039 (the description's test output, srun -l over "
                "2 nodes x 4 GPUs)",
            ),
            RankSample(
                b"1: [RANK 7] Epoch 0 | Batchsize: 32 | Steps: 235 | Loss: 0.25475989499307694",
                7,
                None,
                "github.com/awslabs/awsome-distributed-ai/pull/1039 (the description's test output)",
            ),
        ),
    ),
    RankSource(
        "Lightning [rank: N]",
        _LIGHTNING,
        (
            RankSample(
                b"[rank: 2] Received SIGTERM: 15",
                2,
                None,
                "github.com/TengFeiyang01/EAGNet/blob/7a1815b159d8b85408d1dfa940ef3523c6405fd4/logs/train.out (glued "
                "to rank 0's progress bar there; Lightning DDP on 5 GPUs under nohup)",
            ),
            RankSample(
                b"[rank: 4] Global seed set to 2023",
                4,
                None,
                "github.com/TengFeiyang01/EAGNet/blob/7a1815b159d8b85408d1dfa940ef3523c6405fd4/logs/train.out",
            ),
        ),
    ),
    RankSource(
        "Determined [rank=N] ||",
        _DETERMINED,
        (
            RankSample(
                b"<>        [2021-12-07 10:43:00] ef45fdce [rank=1] || Traceback (most recent call last):",
                1,
                None,
                "github.com/determined-ai/determined/issues/3275 (tests/fixtures/real_logs/"
                "determined-rank-equals-prefix-rank1-traceback-cut_determined-3275)",
            ),
            RankSample(
                b"<>        [2021-12-07 10:42:58] 087c0ee7 [rank=0] || total batches trained: 0, workload 0% complete "
                b"(0/100)",
                0,
                None,
                "github.com/determined-ai/determined/issues/3275 (tests/fixtures/real_logs/"
                "determined-rank-equals-prefix-rank1-traceback-cut_determined-3275)",
            ),
        ),
    ),
    RankSource(
        "torch_npu (PID, Device, RankID)",
        _NPU,
        (
            RankSample(
                b"[ERROR] 2024-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02200 DIST call hccl api failed.",
                3,
                None,
                "github.com/hiyouga/LLaMA-Factory/issues/3839 (tests/fixtures/real_logs/"
                "hccl-barrier-EJ0001-hccp-init-rankid-3_llamafactory-3839)",
            ),
        ),
    ),
    RankSource(
        "icefall [file:line] (rank/world)",
        _ICEFALL,
        (
            RankSample(
                b"2022-10-23 14:53:29,354 INFO [train.py:907] (6/8) Epoch 3, batch 115350, loss[loss=0.2765, "
                b"simple_loss=0.2746, pruned_loss=0.1391, over 662.00 frames. utt_duration=295.6 frames, ",
                6,
                None,
                "github.com/k2-fsa/icefall/issues/569 (tests/fixtures/real_logs/"
                "icefall-rank-of-world-paren-rows-ranks-0-6-4-last-cut_icefall-569)",
            ),
            RankSample(
                b"2022-10-05 23:43:02,341 INFO [utils.py:968] (1/4) Saving batch to pruned_transducer_stateless2/"
                b"exp_multi/batch-bdd640fb-0667-1ad1-1c80-317fa3b1799d.pt",
                1,
                None,
                "github.com/k2-fsa/icefall/issues/603 (tests/fixtures/real_logs/"
                "icefall-rank-3-row-then-rank-1-saving-batch-and-spawn-traceback-cut_icefall-603)",
            ),
        ),
    ),
    RankSource(
        "OLMo date<TAB>host:rank<TAB>",
        _TAB_HOST,
        (
            RankSample(
                b"2025-12-12 16:00:38.012\ttiny-time-shines-fin-03:5\tolmo.util:168\tCRITICAL\tUncaught "
                b"OutOfMemoryError: CUDA out of memory. Tried to allocate 12.28 GiB. GPU 5 has a total capacity of "
                b"267.69 GiB of which 4.16 GiB is free.",
                5,
                None,
                "github.com/AntonioLopardo/OLMo/blob/c3c25dc5dffdbb29ab763fa38e4cd2239be257e8/logs/OLMo-1B-tied.log "
                "(its line cut after `is free.`)",
            ),
        ),
    ),
    RankSource(
        "grep FILE:LINE: over worker_N.log",
        _GREP,
        (
            RankSample(
                b"./prof_vllm_log/worker_6.log:23:ModuleNotFoundError: No module named 'research'",
                6,
                None,
                "github.com/Watsontao/mindrlhf/blob/55deb2881f0d2a18ee9667972cde3380943c0a41/Baseline_12.08_Qwen2.5-7b_"
                "GSM8K/code/.ipynb_checkpoints/vllm-checkpoint.log (msrun's console, 8 workers dead on an import)",
            ),
            RankSample(
                b"./prof_vllm_log/worker_1.log-22-    from research.deepseek3.deepseek3_config import DeepseekV3Config",
                1,
                None,
                "github.com/Watsontao/mindrlhf (the same console, a context line of worker_1's block)",
            ),
        ),
    ),
    RankSource(
        "pdsh host prefix",
        _HOST,
        (
            RankSample(
                b"192.168.50.170: {'loss': 1.2992, 'learning_rate': 1.282051282051282e-06, 'epoch': 0.0}",
                None,
                "192.168.50.170",
                "github.com/haotian-liu/LLaVA/issues/1264 (the issue's DeepSpeed multi-node output)",
            ),
            RankSample(
                b"mpi-rc1ou1aw-launcher: terminate called after throwing an instance of 'c10::DistBackendError'",
                None,
                "mpi-rc1ou1aw-launcher",
                "github.com/hiyouga/LlamaFactory/issues/5558 (tests/fixtures/real_logs/"
                "nccl-watchdog-behind-host-prefix-rank5_llamafactory-5558)",
            ),
        ),
    ),
)


def host_prefix(line: bytes) -> tuple[str, int] | None:
    """(the host, where the line after `host: ` starts) when pdsh's host prefix begins `line`; else None."""
    m = _HOST.match(line)
    return None if m is None else (m.group(1).decode("ascii"), m.end())


def collector_stamp(line: bytes) -> int:
    """Where the line after a log collector's RFC 3339 stamp starts (`_COLLECTOR_STAMP`); 0 without one."""
    m = _COLLECTOR_STAMP.match(line) if line[:1].isdigit() or line[:1].isupper() else None
    return 0 if m is None else m.end()


def determined_prefix(line: bytes) -> tuple[int, int] | None:
    """(the rank, where the process's own line starts) when Determined's `... [rank=N] || ` begins `line`."""
    m = _DETERMINED.match(line) if b"[rank=" in line else None
    return None if m is None else (int(m.group(1)), m.end())


def grep_prefix(line: bytes) -> tuple[int, int] | None:
    """(the rank, where the worker's own line starts) when grep's `PATH/worker_N.log:LINE:` begins `line`."""
    m = _GREP.match(line) if b"worker_" in line[:_GREP_HEAD] else None
    return None if m is None else (int(m.group(1)), m.end())


_GREP_HEAD = 160  # bytes: a path longer than this before `worker_N.log` is no grep prefix a launcher printed


def line_rank(line: bytes) -> LineRank | None:
    """The rank (and host) the line names, or None when it names neither (its file's rank holds)."""
    host, at = None, collector_stamp(line)
    if line[at : at + 1].isalnum() and (h := host_prefix(line[at:])) is not None:
        host, at = h[0], at + h[1]
    span = _rank_in(line[at:])
    if span is None:
        return None if host is None else LineRank(None, host)
    return LineRank(int(line[at + span[0] : at + span[1]]), host, (at + span[0], at + span[1]))


def _rank_in(body: bytes) -> tuple[int, int] | None:
    """Where the rank a line's own words name is (its prefix tag, `Rank: N;`, a trailing `rank N`)."""
    if body[:1].isdigit() and (m := _SRUN.match(body)) is not None:
        inner = _rank_in(body[m.end() :])  # a tag after the label names the process's own rank
        return m.span(1) if inner is None else (m.end() + inner[0], m.end() + inner[1])
    if b"worker_" in body[:_GREP_HEAD] and (m := _GREP.match(body)) is not None:
        return m.span(1)
    if body[:1] == b"[":
        m = _MPIRUN.match(body) or _TORCH.match(body) or _RANK_TAG.match(body) or _LIGHTNING.match(body)
        if m is not None:
            return m.span(1)
    if b"[rank=" in body and (m := _DETERMINED.match(body)) is not None:
        return m.span(1)
    if b"Rank: " in body and (m := _VISSL.search(body)) is not None:
        return m.span(1)
    if b"RankID:" in body and (m := _NPU.search(body)) is not None:
        return m.span(1)
    if b"rank: " in body and (m := _FIELD.search(body)) is not None:
        return m.span(1)
    if body[:1].isdigit() and b"\t" in body and (m := _TAB_HOST.match(body)) is not None:
        return m.span(1)
    if b"] (" in body and (m := _ICEFALL.search(body)) is not None and int(m.group(1)) < int(m.group(2)):
        return m.span(1)
    cut = max(0, len(body) - _TAIL)  # `rank N` ends the line: its last bytes hold it
    if b"rank " in body[cut:] and (m := _TRAILING.search(body[cut:])) is not None and (cut == 0 or m.start()):
        return cut + m.start(1), cut + m.end(1)
    return None


_TAIL = 32  # bytes at a line's end that hold a trailing `rank N` (and the byte before it)
