"""The general line reader: a line carries a training scalar when it has a loss key and a number.

Whatever comes before the key is ignored (timestamps, `[INFO]`, logger names, ANSI colours, `{`); the
key is `loss` alone or qualified (`total_loss`, `train_loss`, `Average Train Loss`, `lm loss`) or `xent`
(core.logs.tokens.lexicon.LOSS_KEYS; a perplexity on a line without one is an eval series of its own), any
case, then `is`, `:`, `=` or `|`, then a value: plain, bracketed (`[7.030]`), paired (`[5.5/5.4]`:
current, then running average `loss_avg`), nan/inf, scientific. Every other `key: number` on the line is
a metric (`lr`, `per_step_time`, `grad norm`, ...): the known ones fill the fixed columns (FIXED_ALIASES),
the others are columns of their own, named by their normalised key. Epoch and step come in any form
users print (`epoch: 1 step: 2`, `Epoch:[ 1/ 4]`, `Epoch 15/300, Step 100/101`, `[  0/938]`,
`iteration   10/ 5000 |`).

Evaluation is not training: a loss key qualified by val/eval/test/avg, an eval word before the key, or a
message that starts with `val...`/`eval...` (`Validation Top_1_Accuracy: 25%`; a `Test ...` line without a
loss key is not looked for: it would cost the reader a scan of every byte) gives an eval line, never a row.
Every decision depends on the line's text and where its numbers are, never on their values: that is
what lets the bulk path (core.logs.rows.shapes) reuse one parse for every line of the same shape.
A notation this grammar does not read is an entry with a pattern in core.logs.rows.notations, tried on a
line it gives no reading (`_pattern_read`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.logs.rows.failure_kinds import FAILURE_KINDS
from core.logs.rows.fieldshapes import COUNTER_NAME, other_fields
from core.logs.rows.keylines import lone_average, record_part
from core.logs.rows.keys import in_seconds, metric_name, no_counter, no_key, not_a_metric, row_loss_first
from core.logs.rows.linetime import RE_LINE_TS, line_time
from core.logs.rows.notations import NOTATIONS
from core.logs.rows.series import RE_SUMMARY as _RE_SUMMARY
from core.logs.rows.series import summary_line
from core.logs.rows.splitkeys import LOSS_KEY_HEAD, eval_key, split_score
from core.logs.tokens.lexicon import LOSS_KEYS, NUM, PERPLEXITY_KEYS, ROW_FIELDS, keyed_start, number

__all__ = [
    "FIXED_ALIASES",
    "NUM",
    "RE_LINE_TS",
    "LineRead",
    "line_time",
    "metric_name",
    "read_line",
    "reads_nothing",
    "to_float",
]

_NAN = float("nan")
_RE_NUM = re.compile(NUM)
_RE_TENSOR_VALUE = re.compile(rb"value=\s*\[?\s*(" + NUM + rb")")
# A value printed inside its wrapper (one rule for the family, whatever library printed it): torch's
# `tensor(2.1, device='cuda:0', grad_fn=<...>)` (and `tensor([2.1])`), numpy's `array(2.1, dtype=float32)` and
# `np.float32(2.1)`, jax's `Array(2.1, dtype=float32)`; MindSpore's `Tensor(shape=[], dtype=Float32, value= 2.1)`
# names its value (`_RE_TENSOR_VALUE`). The wrapper's own numbers (`cuda:0`) are no metrics. A module before a
# tensor or an array (`moe_loss = torch.tensor(0.0, device=...)`) is source code in a traceback, never a print.
_WRAPPER = rb"(?<![\w.])(?:(?:np|numpy)\.float(?:16|32|64)|tensor|Tensor|array|Array)\("
_RE_WRAPPER = re.compile(_WRAPPER + rb"[ \t]*(?:\[[ \t]*)?(?=" + NUM + rb")")
_RE_ANSI = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")
_RE_CURSOR_UP = re.compile(rb"\x1b\[[0-9]*[AF]")  # what precedes a cursor-up is another line (a bar's draw)
_RE_LOSS_KEY = re.compile(
    # (Chinese `为` / `是`, "is", may stand before the separator, a full-width colon too: `valid loss 为: 3.37`)
    # (a rate's unit may follow the key, `Training Loss per 100 steps: 1.35`; a bracketed key closes: `| [Loss] nan |`)
    # (a criterion's class ending a key, `Loss` after a small letter: `train/CrossEntropyLoss=9.064`; no table cell)
    rb"(?i)(?:" + LOSS_KEY_HEAD + rb"|(?-i:(?<=[a-z])Loss)(?![a-z0-9])(?![ \t]*\|))"
    rb"(?:[ \t]+per[ \t]+(?:\d+[ \t]+)?[a-z]+(?=[ \t]*[:=]))?"
    # (a parenthesised qualifier may follow it, tqdm's postfix `loss (batch)=0.0278`, never an eval split's name;
    # or `so far`, a running value's words: `avg loss so far is 0.1098`)
    rb"(?:[ \t]*\((?!(?:eval\w*|valid\w*|val|test\w*|dev|cv)\))[a-z]+(?:[ \t][a-z]+)?\)(?=[ \t]*[:=])|"
    rb"[ \t]+so[ \t]+far(?=[ \t]*(?:[:=]|is\b)))?"
    # (where in training the value is may follow the key: `Loss in epoch 0  =  2.16`, `loss at step 10: 0.5`)
    rb"(?:[ \t]+(?:in|at|for|after|of|on|during)[ \t]+(?:the[ \t]+)?(?:epoch|step|iter|iteration|batch)[ \t#]*\d+"
    rb"(?:[ \t]*/[ \t]*\d+)?(?=[ \t]*(?:[:=]|is\b)))?"
    rb"(?:(?:" + b"|".join(rb"(?<=\[" + k + rb")" for k in LOSS_KEYS) + rb")\])?"
    rb"(?:['\"]?[ \t]*(?:value[ \t]*)?(?:(?:\xe4\xb8\xba|\xe6\x98\xaf)[ \t]*)?"
    rb"(?:is\b|[:=|]|\xef\xbc\x9a)[ \t]*|"
    # `key value` without a separator: old Megatron's `| lm loss 6.758929E+00 |` (and `lm loss NAN`),
    # `progress 10/2754 loss 0.666556 acc 0.82`, `loss nan grad_norm nan rank 2`
    # (a value written as a decimal, MSVC's `1.#QNAN` too, never a bare integer: `the loss 3 times` is prose)
    rb"[ \t]+(?="
    + _WRAPPER
    + rb"|[-+]?(?:\d*\.\d|\d\.#[A-Z]|\d+e[-+]?\d|nan(?![a-z])|inf(?![a-z])|infinity(?![a-z])))|"
    # a Python (name, value) tuple: FunASR's `[('loss_att', 0.858), ('acc', 0.657), ('loss', 0.998)]`
    rb"(?:" + b"|".join(rb"(?<=\(['\"]" + k + rb")" for k in LOSS_KEYS) + rb")['\"],[ \t]*)"
)
# A line that carries training progress: an `avg loss` on it is the epoch's training loss (`Epoch 1 completed with
# avg loss: 2.4179, learning rate: 0.003`), not an evaluation summary (an epoch or step with its number: MindFormers'
# `epoch_end: ... per step time: 7.5 ms, avg loss: 2.4` repeats the step's row as the sink's average, and stays out)
# A perplexity where a line has no loss key: a series of its own, evaluation (DeepSpeed's `Step at 4 with
# Perplexity: nan`, OpenNMT's `Validation perplexity: 23.9`), never the training loss
_RE_PERPLEXITY_KEY = re.compile(rb"(?i)(?<![a-z0-9])(?:" + b"|".join(PERPLEXITY_KEYS) + rb")\b")
_RE_TRAIN_CONTEXT = re.compile(rb"(?i)\b(?:epoch|step|iter|iteration|batch)\b[ \t:=#\[]*\d")
_RE_QUALIFIER = re.compile(rb"((?:[A-Za-z]+[ \t_]+){1,3})$")
# `CV` is cross-validation (WeNet's `DEBUG CV Batch 4/0 loss 28.517015 ... rank 2`, `Epoch 74 CV info cv_loss 7.6`)
# `val_metrics: {...}` names the dict it holds (Orb's); Chinese `测试` (test), `验证` (validation), `评估`/`评测`
_RE_EVAL_WORD = re.compile(
    rb"(?i)(?<![\w/.])(?:eval\w*|valid\w*|val(?:_\w+(?=[ \t]*[:=][ \t]*\{))?|test\w*|cv)(?![\w/.])|"
    rb"\xe6\xb5\x8b\xe8\xaf\x95|\xe9\xaa\x8c\xe8\xaf\x81|\xe8\xaf\x84(?:\xe4\xbc\xb0|\xe6\xb5\x8b)"
)
_RE_EVAL_START = re.compile(rb"(?i)(?:eval\w*|valid\w*|val)(?![\w/.])")  # an eval message without a loss key
_EVAL_QUAL = {b"val", b"valid", b"validation", b"eval", b"evaluation", b"test", b"testing", b"dev", b"cv"}
_WORD = rb"[A-Za-z][A-Za-z0-9_]*"
_NUMV = (
    rb"[-+]?(?:\d\.#(?:QNAN|SNAN|IND|INF)(?![A-Za-z])|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?!\d|\.\S)|"
    rb"(?:nan|NaN|NAN|[Ii]nfinity|inf|Inf|INF)(?=x*(?![A-Za-z])))"
)
# a unit in parentheses may follow a key's word, glued or not (VISSL's `btime(ms): 192`, `peak_mem(M): 4176`);
# a key may join its words by `/`, `-` or `@` (maxtext's `TFLOP/s/device`, trlx's `losses/policy_loss`, TF-slim's
# `Top-1`, `Acc@1`) and start with a stage prefix, a letter and digits then a dot (mmdet cascade's `s0.loss_cls`),
# or a head's name then a dot before a loss or an accuracy (mmseg's `decode.loss_seg`, `aux.acc_seg`; never
# `callback.py:269`, a source line); a number may be a string, whole between its quotes (fairseq's JSON `"ppl": "2.51"`,
# a Python dict's `'grad_norm': '6880'`); a key may follow 3 dashes or more (LeNet's `loss : 2.6----step/sec : 7`)
_KEY = rb"(?:[A-Za-z]\d+\.|[A-Za-z][A-Za-z0-9_]*\.(?=loss|acc))?" + _WORD + rb"(?:[/\-@][A-Za-z0-9_]+)*"
_QUOTE = rb"\"(?=" + _NUMV + rb"\")|'(?=" + _NUMV + rb"')"  # the opening quote of a quoted number
_RE_KV = re.compile(
    rb"(?:(?<![\w.\-/\\@])|(?<=---))(" + _KEY + rb"(?:[ \t]*\([A-Za-z/%]+\)|[ \t]+(?!is\b)" + _KEY + rb"){0,5})['\"]?"
    rb"(?:[ \t]*(?:is\b|[:=])[ \t]*|[ \t]*(?=\[)|(?<=['\"]),[ \t]*)[\[(]?[ \t]*(?:" + _QUOTE + rb")?"
    rb"(" + _NUMV + rb")(?![A-Za-z]{1,3}\d)"
    rb"(?:[ \t]*/[ \t]*(" + _NUMV + rb"))?(?:(ms|s)(?![A-Za-z])|[A-Za-z%]+|[ \t]+(ms|s)(?![A-Za-z]))?[ \t]*[\])]?"
)
# any one digit (not only 1/0): whether a line has the field must not depend on a digit's value
_RE_OVERFLOW = re.compile(rb"(?i)\boverflow(?:[ _]cond)?[ \t]*[:=][ \t]*\[?[ \t]*(True|False|\d)\b")
# `epoch 3`, `iter 10/500`, a pipe row's `| batch 250 |` (not `words/batch 906`, a rate), a number sign before the
# digits (TF speech-commands' `Step #1: rate 0.001000, accuracy 3.00%, cross entropy 4.509356`)
_RE_PAIR_WORD = re.compile(  # or its number first, ending a field (fieldshapes.COUNTER_NAME: `000 epoch, 06000 iter,`)
    rb"(?i)(?<![\w./])" + COUNTER_NAME + rb"(\d+)(?:[ \t]*/[ \t]*(\d+))?(?![\d.])"
)
# a pipe row whose first cell is a bare integer, the iteration (llama2.c's train.py and the nanoGPT-style loops after
# it: `100000 | loss nan | lr 0.000000e+00 | 2006.12ms | mfu 1.68%`)
_RE_FIRST_CELL = re.compile(rb"[ \t]*(\d+)[ \t]+\|[ \t]")
_RE_BARE_PAIR = re.compile(rb"\[[ \t]*(\d+)[ \t]*/[ \t]*(\d+)[ \t]*\]")
# the step in the epoch: `Epoch:[0/19](100/246)`, PyTorch word_language_model's `| epoch 1 |  200/ 2983 batches |`
_RE_EPOCH_PAIR = re.compile(rb"[ \t]*(?:\]?[ \t]*[\[(]|\|)[ \t]*(\d+)[ \t]*/[ \t]*(\d+)(?:[ \t]*[\])]| +batches *\|)")
_RE_PREFIX = re.compile(
    rb"(?:[ \t]*(?:\[[^\]\n]*\]|\d{4}-\d\d-\d\d[ T][\d:,.]+|[\w.]+[ \t]+(?:INFO|WARNING|DEBUG)\b|"
    rb"(?:INFO|WARNING|DEBUG)\b|-(?=[ \t])|\{))*[ \t]*"
)
# A byte that cannot follow a whole number: its presence means the regex matched only a prefix.
_NUMBER_TAIL = frozenset(
    bytes([c])
    for c in b"0123456789_.xXpPeE" + bytes(range(ord("a"), ord("z") + 1)) + bytes(range(ord("A"), ord("Z") + 1))
)

EPOCH_KEYS = frozenset({"epoch", "epochs", "cur_epoch", "epoch_num"})
STEP_KEYS = frozenset({"s"}) | frozenset(  # `s`: llm.c's step, `s:0 trl:11.0091 lr:0.000001 norm:15.37`
    {"step", "steps", "global_step", "cur_step", "step_num", "batch", "mini_batch", "minibatch", "iteration", "iter"}
    | {"iters", "it", "global_iter"}
)
# `Steps: 3741` beside an epoch, no total, on a line naming an evaluation split: the epoch's step count, so an epoch
# summary (core.logs.rows.perfile; Time-Series-Library's `Epoch: 1, Steps: 3741 | Train Loss: ... Vali Loss: ...`);
# on a progress row naming none it is the step (Coqui STT's `Epoch 0 |   Training | ... | Steps: 89 | Loss: 25.27`)
_COUNT_KEYS = frozenset({"steps"})
_RE_EPOCH_WORD = re.compile(rb"(?i)(?<![a-z])epoch")
FIXED_ALIASES: dict[str, str] = {
    **dict.fromkeys(("lr", "cur_lr", "learning_rate"), "lr"),
    **dict.fromkeys(
        ("per_step_time", "step_time", "time", "per_step_time_ms", "step_time_ms", "elapsed_time_per_iteration_ms"),
        "step_time_ms",
    ),
    **dict.fromkeys(("global_norm", "grad_norm", "gradient_norm"), "global_norm"),
    **dict.fromkeys(("loss_scale",), "loss_scale"),
    **dict.fromkeys(("throughput", "train_throughput", "throughput_per_npu", "train_throughput_per_npu"), "throughput"),
}
"""Normalised key -> the fixed column it fills (ROW_FIELDS); any other key is a column of its own."""
_RESERVED = frozenset(
    {"rank", "offset", "file", "time", "global_step", "relative_s", "wall_time", "epoch", "step", "loss"}
    | {"epochs_total", "steps_total", "overflow"}
)


def to_float(raw: bytes) -> float:
    """A NUM's value, NaN when none (core.logs.tokens.lexicon.number: MSVC's `1.#QNAN` too)."""
    return number(raw)


@dataclass
class LineRead:
    """What one line says: `fields` (ROW_FIELDS it gives), `extras` (other metrics by name), `keys`
    (column -> the key as the line spells it), `eval` (an evaluation line, never a training row), `summary`
    (a one-off summary, core.logs.rows.series: eval too), and
    `spans` (field or metric -> byte span of its number in the line, for the bulk path)."""

    fields: dict[str, float] = field(default_factory=dict)
    extras: dict[str, float] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    eval: bool = False
    summary: bool = False
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    scales: dict[str, float] = field(default_factory=dict)  # a column read in other units (`time: 20s` -> ms)


_RE_NAN_DOT = re.compile(rb"(?:\.0+|x+)(?![\w.])")
# a sentence's period after a value (a period then a space or the line's end): the value is whole
_RE_SENTENCE_END = re.compile(rb"\.(?!\S)")
# a message glued to a decimal (a callback's print without a newline): a capitalised word, never a unit (`GB`, `ms`)
_RE_GLUED_WORD = re.compile(rb"[A-Z][a-z]{2,}[ \t:]")
_RE_PAIR_TAIL = re.compile(rb"[ \t]*/[ \t]*(" + NUM + rb")")
_WRAPPED_TAIL = (b")", b",", b"]")  # what may follow a wrapped value: the wrapper's end, its next argument


def wrapper_end(line: bytes, value_end: int) -> int:
    """Where the wrapper around a value ending at `value_end` closes (its `)`), or `value_end` when the value is
    not wrapped: the numbers inside (`device='cuda:0'`) belong to the value, not to the line's metrics."""
    if line[value_end : value_end + 1] not in _WRAPPED_TAIL or b"(" not in line[max(0, value_end - 40) : value_end]:
        return value_end
    close = line.find(b")", value_end)
    return value_end if close < 0 else close


def _loss_value(line: bytes, pos: int) -> tuple[float, float, tuple[int, int], tuple[int, int]] | None:
    """The loss (and running average of a `[a/b]` pair) after the key at `pos`, with the loss's span."""
    head = line[pos : pos + 24]
    if head.startswith((b"Tensor(shape", b"(Tensor(", b"[Tensor(")):
        m = _RE_TENSOR_VALUE.search(line, pos)
        return (to_float(m.group(1)), _NAN, m.span(1), (-1, -1)) if m else None
    if (wrapped := _RE_WRAPPER.match(line, pos)) is not None:
        m = _RE_NUM.match(line, wrapped.end())
        tail = line[m.end() : m.end() + 8].lstrip(b" \t")[:1] if m is not None else b""
        if m is None or (tail != b"]" if wrapped.group(0).endswith(b"[") else tail not in _WRAPPED_TAIL):
            return None  # `tensor([2.1, 3.0])`: no one value
        return to_float(m.group(0)), _NAN, m.span(), (-1, -1)
    start = pos + (1 if head[:1] in (b"[", b"(") else 0)
    while line[start : start + 1] in (b" ", b"\t"):
        start += 1
    m = _RE_NUM.match(line, start)
    if not m:
        return None
    if line[m.end() : m.end() + 1] in _NUMBER_TAIL and not (
        (m.group(0)[-1:] in b"nNfFyY" and _RE_NAN_DOT.match(line, m.end()))  # NeMo's nan.0, ppocr's nanxxx: NaN
        or _RE_SENTENCE_END.match(line, m.end())  # BigDL's prose `Loss is 1.72319. Current learning rate is ...`
        or (b"." in m.group(0) and _RE_GLUED_WORD.match(line, m.end()))  # Keras' `44.4110Batch 3: Invalid loss`
    ):
        return None  # `0x1p3`, `1_000`, `4.5e`: not a whole number; never cut it to a prefix
    value, avg, avg_span = to_float(m.group(0)), _NAN, (m.end(), m.end())
    pair = _RE_PAIR_TAIL.match(line, m.end())
    if pair and line[pair.end() : pair.end() + 1] not in _NUMBER_TAIL:
        avg, avg_span = to_float(pair.group(1)), pair.span(1)
    return value, avg, m.span(), avg_span


def _is_eval(line: bytes, key_start: int) -> bool:
    """A loss key qualified by val/eval/test (or avg on a line without train, epoch or step), an eval word
    before it, or one naming an eval loss itself (core.logs.rows.splitkeys.eval_key: llm.c's `tel`, `valloss`)."""
    q = _RE_QUALIFIER.search(line, max(0, key_start - 48), key_start)
    words = {w.lower() for w in re.split(rb"[ \t_]+", q.group(1)) if w} if q else set()
    if words & _EVAL_QUAL or eval_key(line, key_start):
        return True
    if words & {b"avg", b"average", b"mean"} and b"train" not in words and not _RE_TRAIN_CONTEXT.search(line):
        return not lone_average(line)  # a record's whole loss alone on its line (core.logs.rows.keylines)
    return any(not split_score(line, m.end()) for m in _RE_EVAL_WORD.finditer(line, 0, key_start))


def _set(read: LineRead, column: str, value: float, key: str, span: tuple[int, int]) -> None:
    if column not in read.fields and column not in read.extras:
        (read.fields if column in _FIELD_COLUMNS else read.extras)[column] = value
        read.keys[column] = key
        read.spans[column] = span


_FIELD_COLUMNS = frozenset(ROW_FIELDS[:-1])
_TUPLE_SEP = (b"',", b'",')
_TUPLE_OPEN = (b"('", b'("')


def _metrics(read: LineRead, line: bytes, skip: tuple[int, int]) -> None:
    """Every `key: number` of the line (but the loss key's own value at `skip`) into fields/extras."""
    for m in _RE_KV.finditer(line):
        if skip[0] <= m.start(2) < skip[1] + 1 or no_key(line, m.start(1), m.end(2)):
            continue
        if line[m.end(1) : m.end(1) + 2] in _TUPLE_SEP and line[m.start(1) - 2 : m.start(1)] not in _TUPLE_OPEN:
            continue  # `'name', value` only inside a `('name', value)` tuple (a list of strings is no metric)
        name = metric_name(m.group(1))
        if not name:
            continue
        words = name.split("_")
        timed = no_counter(m.group(1), m.group(4) or m.group(5), m.group(2))  # a counter-named key's time, no place
        counter = name in EPOCH_KEYS or name in STEP_KEYS or (words[-1] in ("epoch", "step") and len(words) <= 2)
        if counter and not timed:
            kind = "epoch" if (name in EPOCH_KEYS or words[-1] == "epoch") else "step"
            if kind in read.fields or not re.fullmatch(rb"\d+", m.group(2)):
                continue
            if name in _COUNT_KEYS and not m.group(3) and _RE_EPOCH_WORD.search(line) and _RE_EVAL_WORD.search(line):
                _set(read, "steps_total", float(m.group(2)), name, m.span(2))
                continue
            _set(read, kind, float(m.group(2)), name, m.span(2))
            if m.group(3) and re.fullmatch(rb"\d+", m.group(3)):
                _set(read, kind + "s_total", float(m.group(3)), name, m.span(3))
            continue
        if not_a_metric(line, m.span(1), m.span(2), name):
            continue  # a piece of the line's prefix or position (`(trainer:486)`, `Train: [12/170]`)
        _put(read, name, m.group(2), m.span(2), m.group(4) or m.group(5), line[m.end(2) : m.end()])
    for unit, span, scale in other_fields(line):  # `(0.512 sec/step)`, `LR, 3e-05;`: core.logs.rows.fieldshapes
        if not skip[0] <= span[0] < skip[1] + 1:
            _put(read, metric_name(unit), line[span[0] : span[1]], span, None, b"", scale)
    if "overflow" not in read.fields and (o := _RE_OVERFLOW.search(line)) is not None:
        flag = o.group(1).lower()
        _set(read, "overflow", 0.0 if flag in (b"false", b"0") else 1.0, "overflow_cond", o.span(1))


# `key value` pairs on a line whose loss has no separator either. A field (between `|`, `;` or `,` and the next
# or the line's end) is one key, all the words from its start, and one value: old Megatron's `| learning rate
# 6.300E-06 |`, `Loss 10.08; LR 1.00e-06; Iter time 3.72; ETA 9:46:15; Mem 29072.79MB`, MLX's `Train loss 1.593,
# Learning Rate 7.000e-05, It/sec 0.999, Trained Tokens 9699, Peak mem 8.104 GB`; a unit may follow the value,
# maybe after a space (nanoGPT's `iter 1631: loss 4.0863, time 561.94ms`). Elsewhere one word with a decimal
# value (WeNet's `loss_att 10.921429 lr 0.00032621 rank 0`: the integers, `rank 0` and `Batch 4/203700`, are no
# metrics). A spaced dash opens a field too (tensorpack-style `loss 0.1413 - time per batch 63.1364`). An integer
# glued to a unit of bytes is a value too (Swin's `tot_loss 0.4772 (0.4772)\tmem 0MB`): never a hex `0x1f`, a
# `fp16` or an `E39999` (a letter first, or a digit after the letters).
_BYTES_UNIT = rb"[KMGTPkmgtp]i?[Bb]"
_RE_KV_SPACE = re.compile(
    rb"(?:(?:(?<=[|;,])|(?<=[ \t]-))[ \t]*(" + _KEY + rb"(?:[ \t]+" + _KEY + rb"){0,4})[ \t]+(" + _NUMV + rb")"
    rb"(?:(ms|s|[A-Za-z%]+)|[ \t]+[A-Za-z%]+)?[ \t]*(?=[|;,]|$)|"
    rb"(?<![\w.\-/\\@(])("
    + _KEY
    + rb")[ \t]+([-+]?(?:\d*\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+(?="
    + _BYTES_UNIT
    + rb")))(ms|s|%|"
    + _BYTES_UNIT
    + rb")?(?![\w.]))"
)


def _space_metrics(read: LineRead, line: bytes, skip: tuple[int, int], fields_only: bool = False) -> None:
    """The `key value` pairs of a line (`_RE_KV_SPACE`) into fields/extras, as `_metrics` does; `fields_only`:
    only whole fields between separators (a line whose other keys have a separator)."""
    for m in _RE_KV_SPACE.finditer(line):
        if fields_only and not m.group(1):
            continue
        key, at, unit = (1, 2, 3) if m.group(1) else (4, 5, 6)
        if skip[0] <= m.start(at) < skip[1] + 1:
            continue
        name = metric_name(m.group(key))
        if not name or name in EPOCH_KEYS or name in STEP_KEYS or not_a_metric(line, m.span(key), m.span(at), name):
            continue
        _put(read, name, m.group(at), m.span(at), m.group(unit), m.group(unit) or b"")


def _put(
    read: LineRead, name: str, raw: bytes, span: tuple[int, int], unit: bytes | None, tail: bytes, scale: float = 1.0
) -> None:
    """A metric's value into its column: another loss (val_loss beside train_loss) is a column of its own name; a
    step time in seconds is held in ms; `scale` the unit's (`113.4k`)."""
    column = name if name.rpartition("_")[2] == "loss" else FIXED_ALIASES.get(name, name)
    if column in _RESERVED:
        column = name + "_value"
    if column == "step_time_ms" and in_seconds(name, unit, tail):
        scale = 1000.0
    if scale != 1.0 and column not in read.fields and column not in read.extras:
        read.scales[column] = scale
    _set(read, column, to_float(raw) * scale if scale != 1.0 else to_float(raw), name, span)


# a `key value` pair right after a loss with a separator: the line goes on without them (a tqdm description,
# ImageNet1k_ResNet50's `Train Epoch: 1 Loss: 5.872 Acc@1 3.611 Acc@5 11.045: 100%|...`)
_RE_PAIR_NEXT = re.compile(rb"[ \t]+" + _KEY + rb"[ \t]+[-+]?\d*\.\d")
# ... or after a value's running average in parentheses (UCTransNet's `Loss:0.776 (Avg 0.7759) Dice:0.0909 (Avg
# 0.0909) LR 1.00e-03   (AvgTime 6.3)`: the average's own words, inside the parentheses, are none)
_RE_PAIR_AFTER_AVG = re.compile(
    rb"\([ \t]*(?:[Aa]vg|AVG|[Aa]verage|[Mm]ean)?[ \t:]*" + NUM + rb"[ \t]*\)" + _RE_PAIR_NEXT.pattern
)


def _loss_keys(line: bytes) -> list[re.Match[bytes]]:
    """The line's loss keys, the row's own first (core.logs.rows.keys.row_loss_first: a total, a bare `loss`)."""
    return row_loss_first(line, list(_RE_LOSS_KEY.finditer(line)), _is_eval)


# the failure kinds whose line quotes the loss that ended the run (FailureKind.quotes_loss): (anchors, pattern)
_QUOTING_FAILURES = tuple((k.anchors, re.compile(k.pattern)) for k in FAILURE_KINDS if k.quotes_loss)


def without_ansi(line: bytes) -> bytes:
    """What `read_line` reads of a line: from a bar's last cursor-up a loss key follows, terminal codes dropped."""
    if b"\x1b" not in line:
        return line
    up = [m.end() for m in _RE_CURSOR_UP.finditer(line)]
    return _RE_ANSI.sub(b"", line[up[-1] :] if up and _RE_LOSS_KEY.search(line, up[-1]) else line)


def read_line(line: bytes | str) -> LineRead | None:
    """The scalars of one line, or None when it carries no loss (and is no evaluation line)."""
    if isinstance(line, str):
        line = line.encode("utf-8", "replace")
    line = without_ansi(line.rstrip(b"\r\n"))
    read = None
    if (b"|" in line or b"wandb:" in line or b"oss/" in line or b" : " in line) and record_part(line):
        return None  # a part of a one-key-per-line record (SB3's table, TTS's `| > `): only its whole loss is a row
    if any(any(a in line for a in anchors) and kind.search(line) for anchors, kind in _QUOTING_FAILURES):
        return None  # the failure quoting the loss that ended the run, not a row
    for key in _loss_keys(line):
        got = _loss_value(line, key.end())
        if got is None:
            continue
        value, avg, span, avg_span = got
        read = LineRead(eval=_is_eval(line, key.start()) or _RE_SUMMARY.search(line) is not None)
        _set(read, "loss", value, "loss", span)
        if avg == avg or (span[1] < len(line) and b"/" in line[span[1] : span[1] + 4]):
            _set(read, "loss_avg", avg, "loss_avg", avg_span)
        skip = (span[0], wrapper_end(line, span[1]))
        _metrics(read, line, skip)
        # no separator after the key: nor after others; nor after the loss's value (`Loss: 5.872 Acc@1 3.611`)
        if (
            key.group(0).rstrip(b" \t").lower().endswith(LOSS_KEYS)
            or _RE_PAIR_NEXT.match(line, skip[1])
            or _RE_PAIR_AFTER_AVG.search(line, skip[1])
        ):
            _space_metrics(read, line, skip)
        elif b"|" in line:  # a pipe table mixes them: monodepth2's `| lr 0.000100 | ... | loss: 0.13400 |`
            _space_metrics(read, line, skip, fields_only=True)
        break
    if read is None and _NOTATION_PATTERNS:
        read = _pattern_read(line)
    if read is None:
        prefix = _RE_PREFIX.match(line)  # matches every line (an empty prefix too)
        message = prefix.end() if prefix else 0
        if not _RE_EVAL_START.match(line, message) and not _RE_PERPLEXITY_KEY.search(line, message):
            return None
        read = LineRead(eval=True)
        _metrics(read, line, (-2, -2))
        for word in [k for k in read.extras if k.encode() in _EVAL_QUAL or k in ("evaluation", "validation")]:
            del read.extras[word]  # `    validation: 4395520` (a split's size) names no metric: no eval line
            del read.keys[word]
        if not read.extras and not read.fields:
            return None
    _epoch_step(read, line)
    if "loss" in read.fields and summary_line(line, read.fields):  # core.logs.rows.series
        read.eval = read.summary = True
    read.fields["time"] = line_time(line)
    return read


_LOSS_WORDS = (*LOSS_KEYS, *PERPLEXITY_KEYS)


def reads_nothing(line: bytes) -> bool:
    """Whether `read_line` gives None on `line`, told without reading it; False when unsure. A line without
    `loss` (any case) can only be an eval message (`Validation ...` where its message starts): the cheap test
    for the lines that hold a keyword only inside a word (`Event value`, `invalid`), whose numbers vary."""
    line = line.rstrip(b"\r\n")
    low = line.lower()
    if b"\x1b" in line or any(word in low for word in _LOSS_WORDS) or keyed_start(low):  # (Marian's `Cost`)
        return False
    prefix = _RE_PREFIX.match(line)  # as read_line: matches every line
    return not _RE_EVAL_START.match(line, prefix.end() if prefix else 0)


# The notations the general grammar does not read, by their own pattern (core.logs.rows.notations)
_NOTATION_PATTERNS = tuple(re.compile(n.pattern) for n in NOTATIONS if n.pattern is not None)


_RE_SPACED_VALUE = re.compile(rb"\w[ \t]+\Z")  # a value after its key's word and spaces alone


def _pattern_read(line: bytes) -> LineRead | None:
    """A line of a notation read by its pattern: its named groups are the columns, then the line's other
    `key: number` pairs as on any loss line; None when no pattern matches."""
    for pattern in _NOTATION_PATTERNS:
        m = pattern.search(line)
        if m is None or m.group("loss") is None:
            continue
        summary = _RE_SUMMARY.search(line) is not None
        # an eval word before it makes it an evaluation, as before a loss key (`test iter: 0 loss_net: 0.93`)
        read = LineRead(eval=summary or _is_eval(line, m.start()), summary=summary)
        taken = {m.span(name): name for name, raw in m.groupdict().items() if raw is not None}
        for span, name in taken.items():
            _set(read, name, to_float(m.group(name)), name, span)
        _metrics(read, line, m.span("loss"))
        # no separator between the loss's key and value: nor between the others' (MAR's `Freq 248.2   loss_source
        # 2.152   ...   loss_total 116.117`); else a pipe table's `key value` fields too (HiFi-TSE's `| sep -2.7 |`)
        if _RE_SPACED_VALUE.search(line, 0, m.start("loss")):
            _space_metrics(read, line, m.span("loss"))
        elif b"|" in line:
            _space_metrics(read, line, m.span("loss"), fields_only=True)
        for column in [c for c in read.extras if taken.get(read.spans[c], c) != c]:  # a group's value read again:
            read.keys[taken[read.spans.pop(column)]] = read.keys.pop(column)  # the group's column, by the line's key
            del read.extras[column]
        return read
    return None


def _epoch_step(read: LineRead, line: bytes) -> None:
    """Epoch and step in the forms without a separator: `Epoch 15/300, Step 100/101` (MindYOLO: the step
    restarts every epoch, so the row carries the global step), Megatron's `iteration 10/ 5000`, and a
    bare `[  0/938]` after the loss (PyTorch tutorials)."""
    pairs: dict[str, re.Match[bytes]] = {}
    for m in _RE_PAIR_WORD.finditer(line):
        kind = "epoch" if m.group(1).lower() == b"epoch" else "step"
        pairs.setdefault(kind, m)
    for kind, m in pairs.items():
        if kind not in read.fields:
            _set(read, kind, float(m.group(2)), m.group(1).decode().lower(), m.span(2))
            if m.group(3):
                _set(read, kind + "s_total", float(m.group(3)), m.group(1).decode().lower(), m.span(3))
    f = read.fields
    if (
        "epoch" in pairs
        and "step" in pairs
        and pairs["epoch"].group(3)
        and pairs["step"].group(3)
        and f.get("epochs_total") is not None
        and f.get("steps_total") is not None
        and "loss" in f
        and read.keys.get("step") == "step"
        and read.spans["step"] == pairs["step"].span(2)
    ):
        # MindYOLO: global step = (epoch - 1) x steps per epoch + step
        f["step"] = (f["epoch"] - 1) * f["steps_total"] + f["step"]
        read.spans["step"] = (-1, -1)  # not a plain copy of one number: the bulk path must not take it
    at = read.spans.get("epochs_total", read.spans.get("epoch", (-1, -1)))[1]
    if "step" not in f and at > 0 and (pair := _RE_EPOCH_PAIR.match(line, at)) is not None:  # `Epoch:[0/19](100/246)`
        _set(read, "step", float(pair.group(1)), "step", pair.span(1))
        _set(read, "steps_total", float(pair.group(2)), "step", pair.span(2))
    if "step" not in f and "loss" in read.spans and (first := _RE_FIRST_CELL.match(line)) is not None:
        _set(read, "step", float(first.group(1)), "step", first.span(1))  # llama2.c's `100 | loss 2.1 | lr ...`
    if "step" not in f and "loss" in read.spans:
        bare = _RE_BARE_PAIR.search(line, read.spans["loss"][1])
        if bare:
            _set(read, "step", float(bare.group(1)), "step", bare.span(1))
            _set(read, "steps_total", float(bare.group(2)), "step", bare.span(2))
