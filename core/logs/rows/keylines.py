"""One key per line: a record a logger prints over several lines, each line one `key value` of it, behind the
record's frame. The record's loss is its whole loss (the bare `loss` key, or one qualified as whole, `train_loss`,
or as its average, `avg_loss`); its other loss keys (`decoder_loss`, `loss_dur`, `entropy_loss`) are its parts, which
a person reads as columns of that record, never as training rows of their own.

Two frames of the family, told by the line's text alone (so every read path decides alike):
  - a vertical key/value table, `|    entropy_loss   | -1.36   |` (Stable-Baselines3's logger): only the bare
    `loss` cell is a row;
  - a console logger's record lines ending the line (behind any prefix), `     | > decoder_loss: 0.20866  (0.19815)`
    (Mozilla TTS / Coqui TTS's `--> STEP: 309/390 -- GLOBAL_STEP: 91150` blocks, a running average in
    parentheses): only the whole loss is a row, and an evaluation block's `| > avg_loss:` stays the evaluation's
    (its parts, `avg_decoder_loss`, none);
  - Weights & Biases' own lines, `wandb:                     loss 0.34985` under `wandb: Run summary:` (and the
    `Run history:` sparklines): the run's last logged values, printed once at its end, never a training row
    (W&B prefixes only its own output with `wandb:`; the training's prints are never so prefixed).
The line reader reads a part as nothing; the parts become columns of the record's row once its rows are made
(core.logs.rows.sidelines: the lines touching the row's line, on every read path).
"""

from __future__ import annotations

import re

from core.logs.tokens.lexicon import NUM

__all__ = ["record_part"]

# one key and its value between pipes, the line's only cells
_RE_KEY_CELL = re.compile(rb"\|[ \t]+([\w/.\-]+)[ \t]+\|[ \t]+" + NUM + rb"[ \t]+\|[ \t]*$")
# `| > key: value` ending the line (behind any prefix a log pipeline adds: `tts_1  |      | > loss: ...`), the
# value's running average (or an eval's change, `(+0.01)`) in parentheses at most after it
_RE_RECORD_LINE = re.compile(
    rb"\|[ \t]*>[ \t]+([\w/.\-]+)[ \t]*:[ \t]*" + NUM + rb"(?:[ \t]+\([ \t]*" + NUM + rb"[ \t]*\))?[ \t]*\r?$"
)
# words before `loss` that still name the record's whole loss (`train_loss`), or its average (an evaluation's)
_WHOLE = frozenset(b"train training total avg average mean val valid validation eval evaluation test".split())


def record_part(line: bytes) -> bool:
    """Whether `line` is one line of a one-key-per-line record whose key is no whole loss (no row), or of W&B's."""
    if line.lstrip(b" \t")[:6] == b"wandb:":
        return True
    if line[:1] == b"|" and (cell := _RE_KEY_CELL.match(line)) is not None:
        return cell.group(1).lower() != b"loss"
    if b">" not in line or (rec := _RE_RECORD_LINE.search(line)) is None:
        return False
    *words, last = rec.group(1).lower().replace(b"-", b"_").split(b"_")
    return last != b"loss" or not set(words) <= _WHOLE
