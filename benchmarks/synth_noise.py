"""Noise lines that vary as real ones do: each line its own rising time, the rank's own pid and thread ids,
its own numbers (ports, sizes, durations, counts, addresses), in the shapes of real lines of each suite.

Why: the synthetic folders used to repeat a fixed set of fixture lines verbatim (the same stamps, pids that
were not the rank's). A reader that keys anything on a line's exact bytes or digit count is fast on those and
not on a real log, where no two noise lines are the same; the benchmark then measured the wrong thing.

Each real line (tests/fixtures/real_msrun_logs, tests/fixtures/logs/formats, tests/fixtures/real_logs) is cut
once into a %-format with slots: its time stamp (in its own style), its pid and thread id, and every number of
its message (after the source location: `[mindspore/context.py:1343]` stays as the code wrote it; IP
addresses stay, ports vary). `VariedNoise.line(t)` fills the slots: the stamp with `t`, the pid with the
rank's, each number with a value of the same kind (an integer, a decimal with as many decimals, hex of the
same length) drawn around the real one, so its digit count changes now and then as a real value's does.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_FIX = REPO / "tests" / "fixtures"

# stamp styles: (regex, name); the first match in a line is its time
_STAMPS = (
    (re.compile(rb"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}"), "ms"),  # MindSpore 2026-11-22-07:09:00.372.000
    (re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"), "py"),  # python logging 2026-11-23 21:19:08,612
    (re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "sec"),  # MindCV [2026-11-23 21:19:42], Megatron datetime:
)
_RE_PID = re.compile(rb"^\[[A-Z]+\] [A-Z_]+\((\d+)([,:])([0-9a-f]+)([,)])")
_RE_SOURCE = re.compile(rb"\[[\w./-]+:\d+\](?: \w+\])?")  # the code location: its line number stays
# a number standing alone (not inside a word, not an IP's octet), or a hex address
_RE_NUMBER = re.compile(rb"0x[0-9a-fA-F]+|(?<![\w.])\d+(?:\.\d+)?(?![\w.])|(?<=:)\d+(?![\w.])")
_RE_RANK = re.compile(rb"\[Rank (\d+)\]")


@dataclass(frozen=True)
class NoiseShape:
    """One real line as a %-format and what fills each slot: ("stamp", style), ("pid",), ("tid", original),
    ("rank",), ("int", value), ("dec", value, decimals), ("hex", digits)."""

    fmt: bytes
    slots: tuple[tuple, ...]


def _escape(b: bytes) -> bytes:
    return b.replace(b"%", b"%%")


def cut(line: bytes) -> NoiseShape:
    """The line's slots (see the module doc)."""
    marks: list[tuple[int, int, tuple]] = []  # (start, end, slot)
    msg_from = 0
    for rx, style in _STAMPS:
        m = rx.search(line)
        if m is not None:
            marks.append((m.start(), m.end(), ("stamp", style)))
            msg_from = m.end()
            break
    if (m := _RE_PID.match(line)) is not None:
        marks.append((m.start(1), m.end(1), ("pid",)))
        marks.append((m.start(3), m.end(3), ("tid", m.group(3))))
    if (m := _RE_RANK.search(line)) is not None:
        marks.append((m.start(1), m.end(1), ("rank",)))
        msg_from = max(msg_from, m.end())
    if (m := _RE_SOURCE.search(line, msg_from)) is not None:
        msg_from = m.end()
    for m in _RE_NUMBER.finditer(line, msg_from):
        text = m.group()
        if any(s < m.end() and m.start() < e for s, e, _ in marks):
            continue
        if text.startswith(b"0x"):
            slot: tuple = ("hex", len(text) - 2)
        elif b"." in text:
            slot = ("dec", float(text), len(text) - text.index(b".") - 1)
        else:
            slot = ("int", int(text))
        marks.append((m.start(), m.end(), slot))
    marks.sort()
    fmt, at = [], 0
    for s, e, _ in marks:
        fmt.append(_escape(line[at:s]) + b"%s")
        at = e
    fmt.append(_escape(line[at:]))
    return NoiseShape(b"".join(fmt), tuple(slot for *_, slot in marks))


class VariedNoise:
    """A rank's noise: `line(t)` is one real line's shape filled with time `t`, the rank's pid and fresh numbers."""

    def __init__(self, shapes: list[NoiseShape], rank: int, pid: int, seed: int) -> None:
        self.shapes = shapes
        self.rank = b"%d" % rank
        self.pid = b"%d" % pid
        self.rng = random.Random(seed * 1_000_003 + rank)
        self._tids: dict[bytes, bytes] = {}
        self._second = -1
        self._prefix: dict[str, bytes] = {}

    def _stamp(self, style: str, t: float) -> bytes:
        sec = int(t)
        if sec != self._second:
            self._second = sec
            lt = time.localtime(sec)
            self._prefix = {
                "ms": time.strftime("%Y-%m-%d-%H:%M:%S", lt).encode(),
                "sec": time.strftime("%Y-%m-%d %H:%M:%S", lt).encode(),
            }
        us = int((t - sec) * 1e6)
        if style == "ms":
            return b"%s.%03d.%03d" % (self._prefix["ms"], us // 1000, us % 1000)
        if style == "py":
            return b"%s,%03d" % (self._prefix["sec"], us // 1000)
        return self._prefix["sec"]

    def _tid(self, orig: bytes) -> bytes:
        tid = self._tids.get(orig)
        if tid is None:
            tid = b"%0*x" % (len(orig), self.rng.getrandbits(4 * len(orig)))
            if orig[:1].isdigit() != tid[:1].isdigit():  # keep a decimal thread id decimal
                tid = b"%d" % self.rng.randrange(10 ** (len(orig) - 1), 10 ** len(orig))
            self._tids[orig] = tid
        return tid

    def line(self, t: float, pick: int | None = None) -> bytes:
        shape = self.shapes[self.rng.randrange(len(self.shapes)) if pick is None else pick]
        rnd = self.rng.random
        values = []
        for slot in shape.slots:
            kind = slot[0]
            if kind == "stamp":
                values.append(self._stamp(slot[1], t))
            elif kind == "int":
                values.append(b"%d" % int(slot[1] * (0.5 + 1.5 * rnd()) + 0.5))
            elif kind == "dec":
                values.append(b"%.*f" % (slot[2], slot[1] * (0.5 + 1.5 * rnd())))
            elif kind == "pid":
                values.append(self.pid)
            elif kind == "tid":
                values.append(self._tid(slot[1]))
            elif kind == "rank":
                values.append(self.rank)
            else:  # hex
                values.append(b"0x%0*x" % (slot[1], self.rng.getrandbits(4 * slot[1])))
        return shape.fmt % tuple(values) + b"\n"


def _lines(path: Path, keep: Callable[[bytes], bool] | None = None) -> list[bytes]:
    return [line for line in path.read_bytes().splitlines() if line.strip() and (keep is None or keep(line))]


def _no_loss(line: bytes) -> bool:
    """Noise never holds `loss` (grep -c -F loss then counts exactly the loss lines)."""
    return b"loss" not in line.lower()


def mindspore_lines() -> list[bytes]:
    """MindSpore's real `[WARNING]`/`[INFO]` lines under msrun (every suite runs on it)."""
    out: list[bytes] = []
    for path in sorted((_FIX / "real_msrun_logs").glob("*/*.log")):
        out.extend(_lines(path, lambda line: line.startswith((b"[WARNING]", b"[INFO]"))))
    return out


def suite_lines(fmt: str) -> list[bytes]:
    """The suite's own real non-loss lines (tests/fixtures/logs/formats and tests/fixtures/real_logs)."""
    formats = _FIX / "logs" / "formats"
    real = _FIX / "real_logs"
    if fmt == "mindformers":
        tiny = real / "mindformers-2.1.0-cpu-tiny-llama_produced-here" / "log" / "output" / "log" / "rank_0"
        tiny = tiny / "info.log"
        stamped = re.compile(rb"^\[(?:INFO|WARNING)\] \d{4}-")
        return _lines(formats / "mindformers_2x_noise.log", _no_loss) + _lines(
            tiny, lambda line: bool(stamped.match(line)) and _no_loss(line) and b"print_output_info" not in line
        )
    if fmt == "mindcv":
        return _lines(
            formats / "mindcv" / "worker_0.log", lambda line: _no_loss(line) and b"vali" not in line.lower()
        ) + _lines(
            real / "mindcv-0.3.0-cpu-resnet18_produced-here" / "log" / "ckpt" / "rank0.log",
            lambda line: line.startswith(b"[20") and _no_loss(line) and b"vali" not in line.lower(),
        )
    if fmt == "megatron":  # MindSpeed-LLM / Megatron around its iteration lines
        qwen = real / "mindspeed-llm-16-decimal-lm-loss_core-ms-qwen-sft" / "log" / "train.log"
        return _lines(qwen, _no_loss)
    return []


def shapes_for(fmt: str) -> list[NoiseShape]:
    """The noise shapes of a suite: MindSpore's lines, plus the suite's own four times over (as before)."""
    return [cut(line) for line in mindspore_lines() + suite_lines(fmt) * 4]
