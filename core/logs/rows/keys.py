"""How a metric's key is named and in what unit its value is, for the general line reader
(core.logs.rows.general): a key's column name, a key glued to binary bytes (no key), and a time in seconds.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

__all__ = [
    "auxiliary_part",
    "glued_to_binary",
    "in_seconds",
    "metric_name",
    "no_counter",
    "no_key",
    "not_a_metric",
    "row_loss_first",
]


def metric_name(key: bytes) -> str:
    """`per step time` / `Per-Step Time` / `elapsed time per iteration (ms)` -> `per_step_time`, ...:
    lower case, every run of other characters one `_`. A key begins after the prose before it: `Step at 4 with
    Perplexity: nan` names `perplexity` (a key's own words never start with `with`, `the`, ...); nor with a
    logging level's word: `INFO     steps_per_s=443.39` names `steps_per_s`, a bare `INFO: 7epoch` nothing."""
    if key[:4] in _LEVEL_HEADS:  # (cheap: most keys are none) its first match is at 0: the leading level words
        key = _RE_LEVEL.sub(b"", key, count=1)
    name = re.sub(r"[^a-z0-9]+", "_", key.decode("ascii", "replace").lower()).strip("_")
    words = name.split("_")
    lead = 0
    while lead < len(words) - 1 and words[lead] in _PROSE:
        lead += 1
    return "_".join(words[lead:]) if lead else name


_PROSE = frozenset({"with", "the", "at", "and", "in", "on", "for", "to", "from", "after", "by", "is", "was", "a", "an"})
"""Words of the prose around a key, never its first word (`of` and `per` are: `number of steps`, `per step time`)."""


# a logging level's word before a key, upper case as loggers print it (`INFO  Train:`, `INFO     steps_per_s=`)
_RE_LEVEL = re.compile(rb"(?:(?:INFO|WARN|WARNING|ERROR|DEBUG|CRITICAL|FATAL|TRACE|NOTICE)(?:[ \t]+|$))*")
_LEVEL_HEADS = frozenset({b"INFO", b"WARN", b"ERRO", b"DEBU", b"CRIT", b"FATA", b"TRAC", b"NOTI"})
# a device's name and index, as torch prints it (`device='cuda:0'`, `Device=xla:1/0`): no scalar
_DEVICES = frozenset({"cuda", "xla", "npu", "gpu", "cpu", "mps", "xpu", "hpu", "tpu"})
# a date after a number (`TrackerProcessLogger: 2022-06-01 10:06:44`, `[2019/06/24 16:20:47`)
_RE_DAYS = re.compile(rb" days?, \d\d?:\d\d:\d\d")  # the days of a timedelta's `2 days, 4:31:22`
_RE_DATE_TAIL = re.compile(rb"[-/]\d\d?[-/]\d\d?(?!\d)")
_COUNTERS = frozenset({"iter", "iters", "iteration", "step", "steps", "batch", "it"})
_RE_TAG = re.compile(r"[a-z]+\d+")  # `E104 iter[ 14/ 15]`: the epoch's tag, a column per epoch
# `12/170`, `[ 14/ 15]`: one of a count; ESPnet's `train:7126-7500batch` (`Nepoch:train:A-Bbatch`): a range
_RE_POSITION = re.compile(rb"[ \t]*/[ \t]*\d+(?![\d.eE])|-\d+[A-Za-z]")


def not_a_metric(line: bytes, key: tuple[int, int], value: tuple[int, int], name: str) -> bool:
    """Whether the pair `line[key]`, `line[value]` named `name` is a piece of the line's prefix or position, not
    a scalar a run logs (each would be a series no user plots in the Monitor's picker and `watch`'s `metrics:`):
    a logger's source location `(trainer:486)`; a device `cuda:0`; a process id (Ray's `(Actor pid=32167)`);
    Lightning's `v_num=13` (the logger's version the bar shows on its own: one run's name, maybe `1-02`);
    the rank (`Rank: 0`: the line's rank, core.logs.rows.lineranks); a date (`Logger: 2022-06-01`); a clock time
    (`ETA: 0:00:01`) or a duration's days (`ETA: 2 days, 4:31:22`); a position in a count `Train: [12/170]`, `E104
    iter[ 14/ 15]` (an integer out of an integer: which one, not how much; epoch and step keys are read before, a
    qualified counter `inner iter: 3/8` stays) or in a range `train:7126-7500batch`; a word of prose before a number
    (`kl:388.6 in 3.7s`).
    Only the line's text and where its digits are decide, never their values (core.logs.rows.linetemplates)."""
    last = name.rpartition("_")[2]
    if last == "pid" or name in ("rank", "v_num"):
        return True
    after = line[value[1] : value[1] + 1]
    whole = line[value[0] : value[1]].isdigit()  # a date's year is whole: a decimal glued to one is a value (LeNet's
    # `step/sec : 0.0061845779418945312021-03-17 17:56:52.021223: W ...`, a warning glued to the row)
    if after in (b"-", b"/") and whole and _RE_DATE_TAIL.match(line, value[1]) is not None:
        return True
    if after == b":" and line[value[1] + 1 : value[1] + 3].isdigit():
        return True  # a clock time, hours then minutes (a bar's `Total: 0:03:14 | ETA: 0:00:01`)
    if after == b" " and whole and _RE_DAYS.match(line, value[1]) is not None:
        return True  # a duration over a day as Python's timedelta prints it (YOLACT's `ETA: 2 days, 4:31:22`)
    gap = line[key[1] : value[0]]
    if whole:
        opened = line[key[0] - 1 : key[0]] in (b"(", b"[") and after in (b")", b"]")
        if gap == b":" and (opened or last in _DEVICES):
            return True
        if _RE_POSITION.match(line, value[1]) is not None:  # a qualified counter stays (`inner iter: 3/8`)
            return last not in _COUNTERS or any(_RE_TAG.fullmatch(w) for w in name.split("_"))
    return name in _PROSE and not gap.strip(b" \t")


def no_counter(key: bytes, unit: bytes | None, value: bytes) -> bool:
    """Whether a key named like a step or an epoch counter holds another quantity, a metric: a decimal with a unit
    (`Batch: 0.190s`, a batch's time), or a decimal under a key joined by `/`, a quantity per step (Jacinle's
    `time/step=1.016501`, `sec/step : 375.84`); a counter is whole (`train/step': 11` stays the step)."""
    return bool(unit or b"/" in key) and not value.isdigit()


def in_seconds(name: str, unit: bytes | None, tail: bytes) -> bool:
    """Whether a step time's value is in seconds: its unit says `s`; or it has none (`tail`: what follows the
    number in the pair) and its key does not say ms. A time printed without a unit is a Python `time.time()`
    difference (mmcv's `time: 1.269`, LMOps' `| time: 1.874 |`, `Loss=nan Time=0.040`): milliseconds are always
    labelled (`time: 507.8 ms`, `per_step_time: 103328ms`, `elapsed time per iteration (ms)`)."""
    if unit:
        return unit == b"s"
    return re.search(rb"[A-Za-z%]", tail) is None and not name.endswith("ms")


_CONTROL = frozenset(range(32)) - {9, 10} | {127}  # bytes no text has before a word (tab, LF aside)


def glued_to_binary(line: bytes, start: int) -> bool:
    """Whether the word at `start` follows a byte no text has there: a control byte, or a byte >= 0x80
    that does not end a UTF-8 space, punctuation or symbol (after a letter, the word began before it).
    Such a word names no metric: binary bytes before a loss line once made metrics named `sepoch`
    (after b"\\x07") and `b6epoch` (after b"\\xff"). Digits never decide it (a line shape's template holds)."""
    if start == 0:
        return False
    byte = line[start - 1]
    if byte < 0x80:
        return byte in _CONTROL
    for k in range(2, min(4, start) + 1):  # a UTF-8 character ending here: 2 to 4 bytes
        try:
            text = line[start - k : start].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return unicodedata.category(text[-1])[0] not in "PSZ"  # after a letter the word began before
    return True


def no_key(line: bytes, key_start: int, value_end: int) -> bool:
    """Whether a `key: number` pair (its key at `key_start`, its number ending at `value_end`) is none: its key
    glued to binary bytes (`glued_to_binary`), or its number a progress bar's percentage, `%|` right after it
    (tqdm's `Training:   4%|4     | 10/250 [...]`, `Steps:  93%|...`: the bar's description is no key of it, no
    metric and no step; a `Training` column of 4, 5, 6 ... once made every redraw of a bar a row of its own).
    Real line: tests/fixtures/real_logs/utf16-powershell-capture-tqdm-loss-postfix-then-typeerror-at-checkpoint-
    save_ammr-train-output (ML-Research-Implementation/Adaptive-Memory-Framework-, train_output.log)."""
    return glued_to_binary(line, key_start) or line[value_end : value_end + 2] == b"%|"


# the words naming a loss term that is no model's training objective of its own: an RL critic's value loss
# (veRL's `critic/vf_loss`, SB3's `value_loss`), an entropy bonus or a KL penalty (`actor/entropy_loss`, `kl_loss`)
_RE_AUXILIARY = re.compile(rb"(?<![a-z])(?:vf|value|entropy|ent|kl)_$", re.IGNORECASE)


def auxiliary_part(line: bytes, key_start: int) -> bool:
    """Whether the loss key at `key_start` (its `loss`, after `_`) names an auxiliary term: among a line's parts
    with no whole loss, the policy's (`actor/pg_loss`) is the row's loss before these (veRL's PPO row)."""
    return _RE_AUXILIARY.search(line, max(0, key_start - 8), key_start) is not None


# what may stand before a bare `loss` key (not `_`: `mse_loss` is a part)
_BEFORE_BARE = (b" ", b",", b"\t", b"'", b'"', b"{", b"/")  # `/`: a namespace's, `actor/loss`
# a total's word among the (up to three) words joined to a loss key: `total_loss`, `total-loss`, `Tot Loss`,
# `overall loss`, `Total train loss`
_RE_TOTAL = re.compile(rb"(?i)(?<![A-Za-z0-9])(?:total|tot|overall)(?:[ \t_\-]+[A-Za-z]+){0,2}[ \t_\-]*$")


def row_loss_first(
    line: bytes, keys: list[re.Match[bytes]], is_eval: Callable[[bytes, int], bool]
) -> list[re.Match[bytes]]:
    """The line's loss keys (matches at the word `loss`), the row's own loss first; the others are columns.
    A total outranks its parts wherever it stands, when it is of the first key's kind (`is_eval`: a validation
    total never makes a training line an evaluation): fastmaskrcnn's `regular_loss: 0.2487, total-loss 0.5882(...)`,
    WLASL's `Loc Loss: X Cls Loss: Y Tot Loss: Z`. Else a bare `loss` outranks a first key that joins `_` to it:
    ESPnet's `l1_loss=0.252, mse_loss=0.070, ..., loss=0.345`, veRL's `actor/loss`; with no bare key, an
    auxiliary part (`auxiliary_part`) last. Words decide, never the values."""
    if len(keys) < 2:
        return keys
    first = keys[0]
    if _RE_TOTAL.search(line, max(0, first.start() - 40), first.start()) is None:
        kind = is_eval(line, first.start())
        for key in keys[1:]:
            if _RE_TOTAL.search(line, max(0, key.start() - 40), key.start()) and is_eval(line, key.start()) == kind:
                return [key, *(k for k in keys if k is not key)]
    if first.start() and line[first.start() - 1 : first.start()] == b"_":
        bare = [k for k in keys if not k.start() or line[k.start() - 1 : k.start()] in _BEFORE_BARE]
        if bare:
            return bare + [k for k in keys if k not in bare]
        return sorted(keys, key=lambda k: auxiliary_part(line, k.start()))  # a policy's loss before a critic's
    return keys
