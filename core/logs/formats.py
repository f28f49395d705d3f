"""Line formats: what a loss line looks like in each training suite, one `LogFormat` per format.

`FORMATS` is a plain list, tried in order on every candidate line; each entry carries a real
sample line and where it came from, so "which formats do we read?" is answered by reading the list.
Add a format: write its `parse(line) -> row | None` and append a `LogFormat` (and a real line
in tests/fixtures). A user regex (`compile_user_regex`) becomes one more format (`user_format`).
A row is a dict with ROW_FIELDS (NaN where the line does not say).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

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
    "is_noise_line",
    "line_time",
    "parse_loss_line",
    "parse_step_time_line",
    "to_float",
    "user_format",
]

NOISE_PREFIXES = (b"[WARNING]", b"[INFO]", b"[DEBUG]")
ERROR_PREFIXES = (b"[ERROR]", b"[CRITICAL]", b"[EXCEPTION]")
ROW_FIELDS = ("epoch", "step", "epochs_total", "steps_total", "loss", "step_time_ms", "lr", "global_norm",
              "loss_scale", "overflow", "throughput", "time")
"""What a loss line gives, in the order of the metric columns (then offset, added by the reader)."""
_NAN = float("nan")


class LogFormatError(ValueError):
    """A user-supplied loss regex that cannot be used (bad syntax or no `loss` group)."""


Row = dict[str, float]


@dataclass(frozen=True)
class LogFormat:
    """One line format: `parse(line)` gives a row (ROW_FIELDS) or None when the line is not this format.

    `sample` is a real line of that format and `source` where it was seen, so tests can check
    every entry against its own sample. `marker`: set when the format's lines may start with a
    `[INFO]`-style prefix (MindFormers 2023), which the reader otherwise skips as chatter without
    looking; lines holding the marker are read anyway.
    """

    name: str
    sample: str
    source: str
    parse: Callable[[bytes], Row | None]
    marker: bytes | None = None


NUM = rb"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|NAN|[Ii]nfinity|inf|Inf|INF)"
_RE_NUM = re.compile(NUM)
_RE_TENSOR_VALUE = re.compile(rb"value=\s*\[?\s*(" + NUM + rb")")
_RE_LOSSMONITOR = re.compile(rb"epoch:\s*(\d+),?\s+step:\s*(\d+),?\s+loss is\s*")
_RE_MF = re.compile(
    rb"Epoch:\[\s*(\d+)/\s*(\d+)\],\s*step:\[\s*(\d+)/\s*(\d+)\],\s*loss:\s*\[?\s*(" + NUM + rb")"
)
_RE_MF_STEPTIME = re.compile(rb"(?:per_step_time:\s*(\d+(?:\.\d+)?)\s*ms|\btime:\s*(\d+(?:\.\d+)?)\s*ms)")
_RE_LR = re.compile(rb"\blr:\s*\[?\s*(" + NUM + rb")")
_RE_LOSS_GENERIC = re.compile(rb"(?<![\w])loss(?: is|\s*[:=])\s*")
_RE_STEP_GENERIC = re.compile(rb"(?<![\w])(?:global_step|step|iter(?:ation)?)\s*[:=]?\s*\[?\s*(\d+)")
_RE_EPOCH_GENERIC = re.compile(rb"(?<![\w])epoch\s*[:=]?\s*\[?\s*(\d+)")
_RE_GLOBAL_NORM = re.compile(rb"\bglobal_norm:?\s*\[?\s*(" + NUM + rb")")
_RE_LOSS_SCALE = re.compile(rb"\bloss_scale:\s*\[?\s*(" + NUM + rb")")
_RE_OVERFLOW = re.compile(rb"\boverflow(?: cond)?:\s*\[?\s*(True|False|true|false|1|0)\b")
_RE_THROUGHPUT = re.compile(rb"\b(?:train_)?throughput(?:_per_npu)?:\s*(" + NUM + rb")")
_RE_YOLO = re.compile(rb"\bEpoch (\d+)/(\d+), Step (\d+)/(\d+), .*?\bloss: (" + NUM + rb")")
_RE_YOLO_LR = re.compile(rb"\bcur_lr: (" + NUM + rb")")
_RE_YOLO_STEPTIME = re.compile(rb"\bEpoch (\d+)/(\d+), Step (\d+)/(\d+), step time: (" + NUM + rb") ms")
_RE_LINE_TS = re.compile(rb"^(?:\[[A-Z]+\] )?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.](\d{1,6}))?")
RE_EXC_LINE = re.compile(
    rb"^((?:[A-Za-z_][\w]*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure)|Exception))(?::|$)"
)
_TS_CACHE: dict[bytes, float] = {}


def to_float(raw: bytes) -> float:
    try:
        return float(raw)
    except ValueError:
        return float("nan")


# A byte that cannot follow a whole number: its presence means the regex matched only a prefix.
_NUMBER_TAIL = frozenset(bytes([c]) for c in b"0123456789_.xXpPeE" + bytes(range(ord("a"), ord("z") + 1))
                         + bytes(range(ord("A"), ord("Z") + 1)))


def _value_after(line: bytes, pos: int) -> float | None:
    """The loss value that follows `loss is` / `loss:`: plain number, nan/inf, or a printed Tensor."""
    head = line[pos:pos + 24]
    if head.startswith((b"Tensor(", b"(Tensor(", b"[Tensor(")):
        m = _RE_TENSOR_VALUE.search(line, pos)
    else:
        m = _RE_NUM.match(line, pos + (1 if head[:1] in (b"[", b"(") else 0))
        if m and line[m.end():m.end() + 1] in _NUMBER_TAIL:
            return None  # `0x1p3`, `1_000`, `4.5e`: not a whole number; never cut it to a prefix
    return to_float(m.group(1) if m.lastindex else m.group(0)) if m else None


def line_time(line: bytes) -> float:
    """Unix time from a leading `YYYY-mm-dd HH:MM:SS,mmm` (python logging / MindFormers), else NaN."""
    m = _RE_LINE_TS.match(line)
    if not m:
        return float("nan")
    key = m.group(1)
    base = _TS_CACHE.get(key)
    if base is None:
        try:
            base = datetime.strptime(key.decode().replace("T", " "), "%Y-%m-%d %H:%M:%S").timestamp()
        except ValueError:
            return float("nan")
        if len(_TS_CACHE) > 4096:
            _TS_CACHE.clear()
        _TS_CACHE[key] = base
    frac = m.group(2)
    return base + (int(frac) / 10 ** len(frac) if frac else 0.0)


def is_noise_line(line: str | bytes) -> bool:
    """True for MindSpore's `[WARNING]`/`[INFO]`/`[DEBUG]` framework chatter."""
    if isinstance(line, str):
        return line.startswith(("[WARNING]", "[INFO]", "[DEBUG]"))
    return line.startswith(NOISE_PREFIXES)




def _row(**values: float) -> Row:
    """A full row: every ROW_FIELDS key, NaN where not given."""
    row = dict.fromkeys(ROW_FIELDS, _NAN)
    row.update(values)
    return row


def _parse_mindformers(line: bytes) -> Row | None:
    """MindFormers MFLossMonitor, current (`loss: 10.649, per_step_time: 103328ms`) and 2023
    (`loss:[2.244/2.244], time:507844.205 ms`) layouts."""
    if b"Epoch:[" not in line:
        return None
    m = _RE_MF.search(line)
    if not m:
        return None
    st = _RE_MF_STEPTIME.search(line, m.end())
    lr = _RE_LR.search(line, m.end())
    return _row(epoch=float(m.group(1)), epochs_total=float(m.group(2)), step=float(m.group(3)),
                steps_total=float(m.group(4)), loss=to_float(m.group(5)),
                step_time_ms=float(st.group(1) or st.group(2)) if st else _NAN,
                lr=to_float(lr.group(1)) if lr else _NAN, time=line_time(line), **_health(line, m.end()))


def _health(line: bytes, pos: int) -> dict[str, float]:
    """Training-health fields MindFormers appends: global_norm, loss_scale, overflow (1/0), throughput."""
    out: dict[str, float] = {}
    if (g := _RE_GLOBAL_NORM.search(line, pos)) is not None:
        out["global_norm"] = to_float(g.group(1))
    if (s := _RE_LOSS_SCALE.search(line, pos)) is not None:
        out["loss_scale"] = to_float(s.group(1))
    if (o := _RE_OVERFLOW.search(line, pos)) is not None:
        out["overflow"] = 1.0 if o.group(1) in (b"True", b"true", b"1") else 0.0
    if (t := _RE_THROUGHPUT.search(line, pos)) is not None:
        out["throughput"] = to_float(t.group(1))
    return out


def _parse_yolo(line: bytes) -> Row | None:
    """MindYOLO / MindCV / MindOCR: `Epoch 1/200, Step 100/3995, imgsize (640, 640), loss: 11.67, ...,
    cur_lr: 0.0992`. The step restarts every epoch, so the row carries the global step
    (epoch - 1) x steps per epoch + step (steps_total stays the steps per epoch)."""
    if b"Epoch " not in line:
        return None
    m = _RE_YOLO.search(line)
    if not m:
        return None
    epoch, epochs, step, per_epoch = (float(m.group(i)) for i in range(1, 5))
    lr = _RE_YOLO_LR.search(line, m.end()) or _RE_LR.search(line, m.end())
    return _row(epoch=epoch, epochs_total=epochs, step=(epoch - 1) * per_epoch + step, steps_total=per_epoch,
                loss=to_float(m.group(5)),
                lr=to_float(lr.group(1)) if lr else _NAN, time=line_time(line), **_health(line, m.end()))


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


def _parse_lossmonitor(line: bytes) -> Row | None:
    """MindSpore LossMonitor and tutorial prints: `epoch: 1 step: 100, loss is 4.52` (or a printed Tensor)."""
    m = _RE_LOSSMONITOR.search(line)
    if not m:
        return None
    value = _value_after(line, m.end())
    if value is None:
        return None
    return _row(epoch=float(m.group(1)), step=float(m.group(2)), loss=value, time=line_time(line))


def _parse_generic(line: bytes) -> Row | None:
    """Anything with `loss is x` / `loss: x` / `loss=x`, plus whatever step/epoch/lr it names."""
    m = _RE_LOSS_GENERIC.search(line)
    if not m:
        return None
    value = _value_after(line, m.end())
    if value is None:
        return None
    step = _RE_STEP_GENERIC.search(line)
    epoch = _RE_EPOCH_GENERIC.search(line)
    lr = _RE_LR.search(line)
    return _row(epoch=float(epoch.group(1)) if epoch else _NAN, step=float(step.group(1)) if step else _NAN,
                loss=value, lr=to_float(lr.group(1)) if lr else _NAN, time=line_time(line), **_health(line, 0))


FORMATS: list[LogFormat] = [
    LogFormat("mindformers", "- INFO - { Epoch:[  1/  2], step:[    1/ 6500], loss: 0.000, per_step_time: 166756ms, "
              "lr: 0.0, overflow cond: False, loss_scale: 1.0, global_norm: [44.313248], "
              "train_throughput_per_npu: 2.849T",
              "MindFormers docs, 'skip data by global norm' example (MFLossMonitor, 2025)", _parse_mindformers),
    LogFormat("mindformers_2023", "[INFO] 2023-07-11 10:47:36,427 [/root/workspace/code/mindformers/scripts/"
              "mf_parallel1/mindformers/core/callback/callback.py:269] print_output_info: Epoch:[  1/  1], "
              "step:[    4/  125], loss:[2.244/2.244], time:507844.205 ms, lr:[0.], overflow cond: True, "
              "loss_scale: 268435460.0",
              "a public GLM-6B fine-tuning write-up (MindFormers, July 2023, output/log/rank_0/info.log)",
              _parse_mindformers, marker=b"Epoch:["),
    LogFormat("mindyolo", "2024-09-16 17:20:40,329 [INFO] Epoch 146/500, Step 52/422, imgsize (640, 640), "
              "loss: 3.8198, lbox: 0.7182, lcls: 1.4714, dfl: 1.6302, cur_lr: 0.007129000034183264",
              "a public ShipWise README (MindYOLO YOLOv8 training on MindSpore 2.2.14)", _parse_yolo),
    LogFormat("lossmonitor", "epoch: 1 step: 2, loss is 2.3139476776123047",
              "MindSpore 2.10 LossMonitor, shared/fixtures/real_msrun_logs/dp8_cpu_ok/worker_0.log",
              _parse_lossmonitor),
    LogFormat("generic", "global_step: 194, loss: 1.997", "older MindSpore model-zoo prints (DESIGN.md)",
              _parse_generic),
]
MARKERS = tuple(f.marker for f in FORMATS if f.marker)
"""Bytes that make a `[INFO]`-prefixed line worth parsing (see LogFormat.marker)."""


def parse_loss_line(line: bytes | str) -> Row | None:
    """Parse one loss line with the first of FORMATS that takes it; None when it carries no loss.

    Exception lines never carry a loss; framework chatter (`[WARNING]`/`[INFO]`/`[DEBUG]`) only does
    for formats with a marker (MindFormers 2023 logs every metric line behind `[INFO]`).
    """
    if isinstance(line, str):
        line = line.encode("utf-8", "replace")
    line = line.rstrip(b"\r\n")
    if RE_EXC_LINE.match(line):
        return None
    noise = line.startswith(NOISE_PREFIXES)
    for fmt in FORMATS:
        if noise and not (fmt.marker and fmt.marker in line):
            continue
        row = fmt.parse(line)
        if row is not None:
            return row
    return None


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
        raise LogFormatError(
            "The loss regex needs a named group `loss`, e.g. r'loss=(?P<loss>[-+.\\deE]+|nan|inf)'."
        )
    unknown = set(compiled.groupindex) - _USER_GROUPS
    if unknown:
        raise LogFormatError(
            f"Unknown named group(s) {sorted(unknown)}; use only {sorted(_USER_GROUPS)}."
        )
    return compiled


def user_format(pattern: str) -> LogFormat:
    """The user's loss regex as one more format (validated by `compile_user_regex`)."""
    compiled = compile_user_regex(pattern)

    def parse(line: bytes) -> Row | None:
        m = compiled.search(line.decode("utf-8", "replace"))
        if not m:
            return None
        row = _row()
        for key, raw in m.groupdict().items():
            if raw is not None:
                try:
                    row[key] = float(raw)
                except ValueError:
                    row[key] = _NAN
        row["time"] = line_time(line)
        return row

    return LogFormat("user", pattern, "the user's --loss-regex", parse)
