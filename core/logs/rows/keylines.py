"""One key per line: a record a logger prints over several lines, each line one `key value` of it, behind the
record's frame. The record's loss is its whole loss (the bare `loss` key, or one qualified as whole, `train_loss`,
or as its average, `avg_loss`); its other loss keys (`decoder_loss`, `loss_dur`, `entropy_loss`) are its parts, which
a person reads as columns of that record, never as training rows of their own.

The frames of the family, told by the line's text alone (so every read path decides alike):
  - a vertical key/value table, `|    entropy_loss   | -1.36   |` (Stable-Baselines3's logger): only the bare
    `loss` cell is a row;
  - a console logger's record lines ending the line (behind any prefix), `     | > decoder_loss: 0.20866  (0.19815)`
    (Mozilla TTS / Coqui TTS's `--> STEP: 309/390 -- GLOBAL_STEP: 91150` blocks, a running average in
    parentheses): only the whole loss is a row, and an evaluation block's `| > avg_loss:` stays the evaluation's
    (its parts, `avg_decoder_loss`, none);
  - Weights & Biases' own lines, `wandb:                     loss 0.34985` under `wandb: Run summary:` (and the
    `Run history:` sparklines): the run's last logged values, printed once at its end, never a training row
    (W&B prefixes only its own output with `wandb:`; the training's prints are never so prefixed);
  - a record's losses grouped under one namespace, a key a line with nothing around it,
    `mean loss/overall_loss: 1.777084` ... `mean loss/stage2_grasp_width_loss: 1.329874` (graspnet-baseline's
    `mean %s: %f` block every 10 batches, TensorBoard-style `loss/` tags): only the group's whole loss
    (`loss/overall_loss`, `loss/total`) is a row;
  - a typed config record, `name : type = value` a line (argbind's `train(` ... `)` dump, whose
    `lambdas : dict = {'mel/loss': 15.0, ...}` weighs the losses; a dataclass's fields in printed source): no line
    of it is a row.
A bare average loss alone on its line, `mean loss: 2.407614` (PointNet's block per epoch), `Average Loss: nan`
(PPO-for-Beginners' block per iteration), is such a record's whole loss: its interval's mean, a training row like a
`train mean loss:` (`lone_average`; an evaluation names itself, `eval mean loss:`, and a summary beside step rows
has its bullet or frame, monocon's `- Average Loss: 7.096`).
The line reader reads a part as nothing; the parts become columns of the record's row once its rows are made
(core.logs.rows.sidelines: the lines touching the row's line, on every read path).
"""

from __future__ import annotations

import re

from core.logs.tokens.lexicon import NUM

__all__ = ["lone_average", "record_part"]

# one key and its value between pipes, the line's only cells
_RE_KEY_CELL = re.compile(rb"\|[ \t]+([\w/.\-]+)[ \t]+\|[ \t]+" + NUM + rb"[ \t]+\|[ \t]*$")
# `| > key: value` ending the line (behind any prefix a log pipeline adds: `tts_1  |      | > loss: ...`), the
# value's running average (or an eval's change, `(+0.01)`) in parentheses at most after it
_RE_RECORD_LINE = re.compile(
    rb"\|[ \t]*>[ \t]+([\w/.\-]+)[ \t]*:[ \t]*" + NUM + rb"(?:[ \t]+\([ \t]*" + NUM + rb"[ \t]*\))?[ \t]*\r?$"
)
# words before `loss` that still name the record's whole loss (`train_loss`), or its average (an evaluation's)
_WHOLE = frozenset(b"train training total avg average mean val valid validation eval evaluation test".split())
_GROUP_WHOLE = _WHOLE | {b"overall"}  # a `loss/` group's whole: `loss/overall_loss` too

# a key a line, `[mean ]loss/<name>: value` and nothing else: one loss of a record's `loss/` group
_RE_GROUP_LINE = re.compile(
    rb"(?i)[ \t]*(?:[a-z]+[ \t]+)?loss(?:es)?/([\w.\-]+)[ \t]*[:=][ \t]*" + NUM + rb"[ \t]*\r?$"
)
# a typed argument a line, `name : type = value`: argbind's config dump (`  lambdas : dict = {'mel/loss': 15.0, ...}`
# inside `train(` ... `)`), a dataclass's field in printed source; configuration, never a row
_RE_TYPED_ARG = re.compile(rb"[ \t]*[A-Za-z_]\w*[ \t]+:[ \t]+[A-Za-z_][\w.]*(?:\[[^\]=]*\])?[ \t]+=[ \t]")
# an average loss, bare, alone on its line (only spaces before it)
_RE_LONE_AVERAGE = re.compile(rb"(?i)[ \t]*(?:mean|avg|average)[ _]loss[ \t]*[:=][ \t]*" + NUM + rb"[ \t]*\r?$")


def lone_average(line: bytes) -> bool:
    """Whether `line` is a bare average loss alone on its line: a one-key-per-line record's whole loss, training."""
    return _RE_LONE_AVERAGE.match(line) is not None


def _part_name(name: bytes, whole: frozenset[bytes] = _WHOLE) -> bool:
    """Whether a record's loss key names one of its parts: words other than whole ones before a last `loss`."""
    *words, last = name.lower().replace(b"-", b"_").split(b"_")
    return last != b"loss" or not set(words) <= whole


def record_part(line: bytes) -> bool:
    """Whether `line` is one line of a one-key-per-line record whose key is no whole loss (no row), of W&B's or of
    a typed config record."""
    if line.lstrip(b" \t")[:6] == b"wandb:":
        return True
    if line[:1] == b"|" and (cell := _RE_KEY_CELL.match(line)) is not None:
        return cell.group(1).lower() != b"loss"
    if b" : " in line and _RE_TYPED_ARG.match(line) is not None:
        return True
    if b"oss/" in line and (group := _RE_GROUP_LINE.match(line)) is not None:
        name = group.group(1).lower()
        return name not in _GROUP_WHOLE and _part_name(name, _GROUP_WHOLE)  # `loss/total`, `loss/overall_loss`
    if b">" not in line or (rec := _RE_RECORD_LINE.search(line)) is None:
        return False
    return _part_name(rec.group(1))
