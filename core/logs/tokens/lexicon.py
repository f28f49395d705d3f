"""The tokens every stage above agrees on: what a number is, which fields a row has, and the level tags
that mark framework chatter and error lines. Kept here, at the bottom of the line stages, so the byte scans
(`bulk`, `plain`) and the grammar (`core.logs.rows.general`, `formats`) read one definition."""

from __future__ import annotations

import math
import re

ROW_FIELDS = (
    "epoch",
    "step",
    "epochs_total",
    "steps_total",
    "loss",
    "step_time_ms",
    "lr",
    "global_norm",
    "loss_scale",
    "overflow",
    "throughput",
    "time",
)
"""What a loss line gives, in the order of the metric columns (then offset, added by the reader)."""

ROW_KEYS = (*ROW_FIELDS, "offset")
"""A row as the byte scans hand it over: the fields, then where its line starts in the file."""

NUM = rb"[-+]?(?:\d\.#(?:QNAN|SNAN|IND|INF)|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|NAN|[Ii]nfinity|inf|Inf|INF)"
"""A number as logs print it: decimals, exponents, and every spelling of NaN and infinity (MSVC's C runtime
prints `1.#QNAN`, `-1.#IND`, `1.#INF`: first, or `1.` of it would read as a loss of 1)."""


def number(raw: bytes) -> float:
    """A NUM's value (NaN when it is none): MSVC's `1.#INF` is infinity (signed), `1.#QNAN` / `-1.#IND` NaN."""
    try:
        return float(raw)
    except ValueError:
        if b"#INF" in raw:
            return -math.inf if raw.startswith(b"-") else math.inf
        return math.nan


NOISE_PREFIXES = (b"[WARNING]", b"[INFO]", b"[DEBUG]")
"""MindSpore's level tags for lines that never carry a row or end a rank on their own."""

ERROR_PREFIXES = (b"[ERROR]", b"[CRITICAL]", b"[EXCEPTION]")
"""MindSpore's level tags for error lines."""

LOSS_KEYS = (b"loss", b"xent", b"cross_entropy", b"cross entropy", b"crossentropy", b"trl", b"tel")
"""Words that name a training loss on a line, any case: `loss` (alone or qualified: `lm loss`, `train_loss`),
`xent`, cross entropy (OpenNMT-py's `Step 50/100000; acc: 3.94; ppl: 3245.38; xent: 8.09; lr: ...`), and cross
entropy spelt out, TF's `INFO:tensorflow:cross_entropy = 3.2162714, learning_rate = ...` (Estimator's logging
hook), or run together, GluonCV's SSD trainer's `[Epoch 0][Batch 0], Speed: ..., CrossEntropy=1.83e+00,
SmoothL1=3.00e-03` (its mx.metric.Loss names; the scan's `oss` check reads all three), and `Step #1: rate
0.001000, accuracy 3.00%, cross entropy 4.509356` (the speech-commands trainer); llm.c's
`trl` and `tel`, its train and eval loss (`s:0 trl:11.0091 lr:0.000001 norm:15.37`, `s:0 tel:11.0092`), `tel` an
evaluation's (EVAL_LOSS_KEYS), found by a line's start (KEYED_START). As a key each is a word of its own (`Intel`,
`ctrl` hold none)."""

WORD_LOSS_KEYS = (b"trl", b"tel")
"""The loss keys of LOSS_KEYS that name a loss only as a word of their own (llm.c's abbreviations): a name that
holds one inside it (a table's `Intel` column, `ctrl`) names none; the others name a loss inside a name too
(`box_loss`, `val_loss`)."""

EVAL_LOSS_KEYS = (b"tel",)
"""The loss keys of LOSS_KEYS that name an evaluation's loss (three letters each): a line read by one is an eval
line, never a training row."""

PERPLEXITY_KEYS = (b"ppl", b"perplexity")
"""Words that name a perplexity, the loss's exponent: a metric beside a loss key, and where a line has none (and
holds one of KEYWORDS) a series of its own (DeepSpeed's `Step at 4 with Perplexity: nan`, an evaluation, never
the training loss)."""

EVAL_KEYS = (b"val",)
"""The eval word every eval message holds (`val`, `valid...`, `eval...`: one scan instead of three)."""

KEYWORDS = (*(k for k in LOSS_KEYS if k not in WORD_LOSS_KEYS), b"perplexity", *EVAL_KEYS)
"""What a metric line holds, in any case (as a substring): the one list every path finds loss and eval lines by,
the compiled scan (core.logs.tokens.linescan, tested against it), the small reads' search and the line reader.
`ppl` is none: every real line printing it holds `loss`, `xent` or `val` too (fairseq, OpenNMT-py, Megatron's
`lm loss PPL`), and looking for it cost the compiled scan a fifth more (a `pp` pair in every word, measured)."""


KEYED_START = (
    rb"s:\d+ t(?:rl|el):|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ep\. \d+ : up\. \d+ :|\d+ train |pass:? \d+, batch:? \d+, "
    rb"|\[(?=[ \d]{3}\]) *\d+\] +\d+ \|\| |\d+ \d+% \(\d+m \d+s\) |tensor\((?:-|\d|nan)"
)
"""A metric line by its start, in any case: llm.c's main.log `s:0 trl:11.0091 lr:0.000001 norm:15.37` and
`s:0 tel:11.0092` (its step, then its one loss key), Marian's `[2017-10-24 10:08:52] Ep. 1 : Up. 590 : Sen. 308701 :
Cost 85.70 : ...` (its stamp, epoch and update; its loss named `Cost`, core.logs.rows.notations_keyed),
build-nanogpt's log.txt `0 train 11.226211` (step, split word, value: its loss named by no key), and PaddlePaddle
v1's event handler's `Pass: 0, Batch: 1, TrainCost: 93.167046` (DeepSpeech2; the book's `Pass 0, Batch 0, Cost
2.30`: pass and batch, then its loss named `Cost`, core.logs.rows.notations_keyed), YOLACT's `[  0]     520 || B:
3.451 | ... | T: 12.031 || ...` (epoch in brackets padded to three, iteration, then `||` and its losses by one letter
each, `T` their total) and the PyTorch char-RNN tutorial's `5000 5% (0m 12s) 2.4177 Coelho / Portuguese ✓`
(iteration, percent done, elapsed, then the running loss with no key), and a torch scalar printed alone,
`tensor(3.2207, device='cuda:0')` (a script's `print(loss)`: its value the loss). Their keys are looked for there
only, not in every word as KEYWORDS are: WORD_LOSS_KEYS there cost the compiled scan a fifth more (19-27 %, measured
on 7-25 MB)."""

_RE_KEYWORD = re.compile(b"|".join(re.escape(word) for word in KEYWORDS))  # one search: 1.5x faster than `in` x 5
_RE_KEYED_START = re.compile(KEYED_START)


def keyed_start(low: bytes) -> bool:
    """Whether a lower-cased line begins as KEYED_START (a metric line whatever words it holds)."""
    return _RE_KEYED_START.match(low) is not None


def holds_keyword(low: bytes) -> bool:
    """Whether a lower-cased line holds one of KEYWORDS or begins as KEYED_START (what every path keeps for the
    line reader)."""
    return _RE_KEYWORD.search(low) is not None or _RE_KEYED_START.match(low) is not None
