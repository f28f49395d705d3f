"""Line formats: the suites whose loss lines we read, one `LogFormat` each, all read by ONE general reader.

`FORMATS` is a plain list of real sample lines and where each came from, so "which formats do we
read?" is answered by reading the list; a test proves `core.logs.rows.general.read_line` reads every
sample. A new suite needs a sample here, not code (unless a real line needs a special case, which then
lives in general.py with the line that needs it). A user regex (`compile_user_regex`) replaces the
general reader (`user_format`). A row is a dict with ROW_FIELDS (NaN where the line does not say).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from core.errors import UserError
from core.logs.rows.general import LineRead, line_time, read_line, to_float
from core.logs.tokens.lexicon import ERROR_PREFIXES, NOISE_PREFIXES, NUM, ROW_FIELDS

__all__ = [
    "ERROR_PREFIXES",
    "FORMATS",
    "MARKERS",
    "NOISE_PREFIXES",
    "NUM",
    "RE_EXC_LINE",
    "ROW_FIELDS",
    "LogFormat",
    "LogFormatError",
    "compile_user_regex",
    "is_chatter",
    "is_noise_line",
    "line_time",
    "parse_loss_line",
    "parse_step_time_line",
    "read_loss",
    "to_float",
    "user_format",
]

_NAN = float("nan")


class LogFormatError(UserError, ValueError):
    """A user-supplied loss regex that cannot be used (bad syntax or no `loss` group)."""


Row = dict[str, float]


@dataclass(frozen=True)
class LogFormat:
    """One suite's loss line: `sample` is a real line and `source` where it was seen; `parse(line)`
    gives a training row (ROW_FIELDS) or None (the general reader unless the format is the user's)."""

    name: str
    sample: str
    source: str
    # the general reader, looked up when a format is made (it is defined below this class)
    parse: Callable[[bytes], Row | None] = field(default_factory=lambda: parse_loss_line)


RE_EXC_LINE = re.compile(
    rb"^((?:[A-Za-z_][\w]*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure)|Exception))(?::|$)"
)
_RE_CHATTER = re.compile(rb"^\[(?:WARNING|INFO|DEBUG|ERROR|CRITICAL|EXCEPTION)\] [A-Z_]+\(\d+[,:]")
_RE_YOLO_STEPTIME = re.compile(rb"\bEpoch (\d+)/(\d+), Step (\d+)/(\d+), step time: (" + NUM + rb") ms")


def is_noise_line(line: str | bytes) -> bool:
    """True for MindSpore's `[WARNING]`/`[INFO]`/`[DEBUG]` framework chatter."""
    if isinstance(line, str):
        return line.startswith(("[WARNING]", "[INFO]", "[DEBUG]"))
    return line.startswith(NOISE_PREFIXES)


def is_chatter(line: bytes) -> bool:
    """MindSpore's own framework log lines (`[WARNING] ME(pid:...`, `[INFO] DISTRIBUTED(pid,...`): the
    framework's messages, never a training script's scalars (they may say `loss is 5` about a kernel)."""
    return _RE_CHATTER.match(line) is not None


def read_loss(line: bytes | str) -> LineRead | None:
    """The general reader on one line, after the two things a line can be instead: an exception line
    (`ValueError: loss is NAN`) or MindSpore's own chatter. None when it carries no loss or eval scalar."""
    if isinstance(line, str):
        line = line.encode("utf-8", "replace")
    line = line.rstrip(b"\r\n")
    if RE_EXC_LINE.match(line) or is_chatter(line):
        return None
    return read_line(line)


def _row(fields: dict[str, float]) -> Row:
    """A full row: every ROW_FIELDS key, NaN where not given."""
    row = dict.fromkeys(ROW_FIELDS, _NAN)
    row.update((k, v) for k, v in fields.items() if k in row)
    return row


def parse_loss_line(line: bytes | str) -> Row | None:
    """The training row of one line (ROW_FIELDS), or None: no loss, or an evaluation line."""
    read = read_loss(line)
    if read is None or read.eval or "loss" not in read.fields:
        return None
    return _row(read.fields)


def parse_step_time_line(line: bytes) -> tuple[float, float, float] | None:
    """MindYOLO's separate `Epoch 146/500, Step 52/422, step time: 993.04 ms` line:
    (epoch, global step, step time in ms), or None."""
    if b"step time: " not in line:
        return None
    m = _RE_YOLO_STEPTIME.search(line)
    if not m:
        return None
    epoch, per_epoch, step = float(m.group(1)), float(m.group(4)), float(m.group(3))
    return epoch, (epoch - 1) * per_epoch + step, to_float(m.group(5))


FORMATS: list[LogFormat] = [
    LogFormat(
        "lossmonitor",
        "epoch: 1 step: 2, loss is 2.3139476776123047",
        "MindSpore 2.10 LossMonitor, shared/fixtures/real_msrun_logs/dp8_cpu_ok/worker_0.log",
    ),
    LogFormat(
        "mindspore_print",
        "epoch: 0 step: 10, loss is 2.2889402",
        "MindSpore docs, msrun operator-parallel tutorial (tests/fixtures/real_logs, corpus)",
    ),
    LogFormat(
        "mindformers_0x",
        "[INFO] 2023-07-11 10:47:36,427 [/root/workspace/code/mindformers/scripts/"
        "mf_parallel1/mindformers/core/callback/callback.py:269] print_output_info: Epoch:[  1/  1], "
        "step:[    4/  125], loss:[2.244/2.244], time:507844.205 ms, lr:[0.], overflow cond: True, "
        "loss_scale: 268435460.0",
        "a public GLM-6B fine-tuning write-up (MindFormers 0.x, July 2023, output/log/rank_0/info.log)",
    ),
    LogFormat(
        "mindformers_1x",
        "2025-04-07 15:34:27,308 - [mindformers/core/callback/callback.py:529] - INFO - "
        "{ Epoch:[  1/  2], step:[    1/   19], loss: 10.649, per_step_time: 103328ms, lr: 0.0, "
        "overflow cond: False, loss_scale: 1.0, global_norm: [1 31049], train_throughput_per_npu: 2.896",
        "MindFormers docs, high availability (msrun worker log, legacy trainer)",
    ),
    LogFormat(
        "mindformers_2x",
        "[INFO] 2026-11-23 19:14:00,332 [mindformers/core/callback/callback.py:747] "
        "print_output_info: { Epoch:[  1/  4], step:[    1/   16], loss:[5.547178/5.547178], "
        "per_step_time: 4503ms, lr: 0.003, overflow cond: False, loss_scale: 1.0, "
        "global_norm: [0.73903346], train_throughput_per_npu: 0.000T",
        "MindFormers 2.1.0 run_mindformer.py on this machine's CPU (output/log/rank_0/info.log)",
    ),
    LogFormat(
        "mindformers_docs",
        "- INFO - { Epoch:[  1/  2], step:[    1/ 6500], loss: 0.000, per_step_time: "
        "166756ms, lr: 0.0, overflow cond: False, loss_scale: 1.0, global_norm: [44.313248], "
        "train_throughput_per_npu: 2.849T",
        "MindFormers docs, 'skip data by global norm' example (MFLossMonitor, 2025)",
    ),
    LogFormat(
        "mindcv",
        "[2026-11-23 19:07:06] mindcv.utils.callbacks INFO - Epoch: [1/3], batch: [1/8], "
        "loss: 1.533790, lr: 0.010000, time: 20.169336s",
        "MindCV 0.3.0 train.py (resnet18) on this machine's CPU",
    ),
    LogFormat(
        "mindocr",
        "[2024-03-04 12:02:42] mindocr.utils.callbacks INFO - epoch: [12/20] step: [700/4468], "
        "loss: 19.327375, lr: 0.000793, per step time: 223.489 ms, fps per card: 4.47 img/s",
        "MindOCR issue 670 (github.com/mindspore-lab/mindocr/issues/670)",
    ),
    LogFormat(
        "mindyolo",
        "2024-09-16 17:20:40,329 [INFO] Epoch 146/500, Step 52/422, imgsize (640, 640), "
        "loss: 3.8198, lbox: 0.7182, lcls: 1.4714, dfl: 1.6302, cur_lr: 0.007129000034183264",
        "a public ShipWise README (MindYOLO YOLOv8 training on MindSpore 2.2.14)",
    ),
    LogFormat(
        "megatron",
        " iteration      122/  250000 | consumed samples:       124928 | elapsed time per "
        "iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: "
        "2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 |",
        "Megatron-LM training log, epfLLM/Megatron-LLM issue 11 (MindSpeed-LLM prints the same line)",
    ),
    LogFormat(
        "libcity",
        "2023-10-30 09:39:35,587 - INFO - Epoch: [  1/ 30], Average Train Loss: [7.030], Accuracy: [0.125]",
        "M-LibCity DeepMove training log (MindSpore port of LibCity)",
    ),
    LogFormat(
        "pytorch_style", "loss: 2.302088  [  0/938]", "MindSpore docs quickstart (MNIST), custom training loop print"
    ),
    LogFormat("generic", "global_step: 194, loss: 1.997", "older MindSpore model-zoo prints (DESIGN.md)"),
]
MARKERS = (b"Epoch:[",)
"""Bytes that make a `[INFO]`-prefixed line worth showing in a tail with the chatter hidden."""


_USER_GROUPS = {"loss", "step", "epoch", "step_time_ms", "lr", "epochs_total", "steps_total"}


def compile_user_regex(pattern: str) -> re.Pattern[str]:
    """Validate a user loss regex: it must compile and have a named group `loss`.

    Optional named groups: step, epoch, step_time_ms, lr, epochs_total, steps_total.
    """
    if not isinstance(pattern, str) or not pattern.strip():
        raise LogFormatError("The loss regex is empty.")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise LogFormatError(f"The loss regex does not compile: {exc}") from exc
    if "loss" not in compiled.groupindex:
        raise LogFormatError("The loss regex needs a named group `loss`, e.g. r'loss=(?P<loss>[-+.\\deE]+|nan|inf)'.")
    unknown = set(compiled.groupindex) - _USER_GROUPS
    if unknown:
        raise LogFormatError(f"Unknown named group(s) {sorted(unknown)}; use only {sorted(_USER_GROUPS)}.")
    return compiled


def user_format(pattern: str) -> LogFormat:
    """The user's loss regex as one more format (validated by `compile_user_regex`)."""
    compiled = compile_user_regex(pattern)

    def parse(line: bytes) -> Row | None:
        m = compiled.search(line.decode("utf-8", "replace"))
        if not m:
            return None
        row = _row({})
        for key, raw in m.groupdict().items():
            if raw is not None:
                try:
                    row[key] = float(raw)
                except ValueError:
                    row[key] = _NAN
        row["time"] = line_time(line)
        return row

    return LogFormat("user", pattern, "the user's --loss-regex", parse)
