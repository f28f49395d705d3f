"""Which lines are one-off summaries, a series of their own and never a training row (issue 30 item 2), told
by the line's text alone (every line of one shape alike: the bulk path reuses one parse per shape).

- a trainer's final summary (HF Trainer / MindNLP: `{'train_runtime': 61.2, ..., 'train_loss': 0.0029, 'epoch':
  10.0}`) and an epoch's or a run's results line (ESPnet2's `7epoch results: [train] ... loss=1.613, ... [valid]
  loss=1.854`);
- an evaluation's results as TF Estimator writes them to its summary (`Saving dict for global step 100: global_step =
  100, loss = 2.0213404, ...`): the evaluation at that step, beside the `loss = X, step = N` training rows;
- an epoch's summary in a pipe table: the epoch a field of its own (`| epoch 010 |`, fairseq's `train | epoch 002
  | loss 9.803 | ...`; at a line's start, before two pipes at least: a table's, never a 2D-liveness script's
  `Epoch: 1| train loss: X` rows) on a line that reads no step, where the per-step lines say where they are within
  the epoch (`| epoch 010  2000 / 8223 loss=1.27`, `train_inner | epoch 003:      5 / 356 loss=9.44`);
- a run's final loss, the loss key after the word `final` (maybe with `train` / `training` between) on a line that
  reads no step and no epoch (a QLoRA script's `📊 Final training loss: 1.1465217211914063` after training ends).
- a part of a printed results block: after Python logging's default prefix (`INFO:__main__:`), or a level then
  ` :: ` (Levanter's `... - levanter.eval - eval.py:131 - INFO ::  loss: 11.185`, under its `INFO :: eval loss:
  11.185`), an indented message of one key and its value alone (a custom LoRA trainer's `INFO:__main__:   Loss:
  0.4887` under its `INFO:__main__:📊 Evaluation Results:` line, beside `   Perplexity: 1.63`): a training loop
  prints a row on one line, unindented; an indented key alone is a block's line;
- a split's results under its name in bold markup, on a line that reads no step and no epoch (MAR's `**Train**
  loss_source nan ... loss_total nan` after the epoch's `Iter: [N/M]` rows): a heading, never a row's place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from core.logs.tokens.lexicon import NUM

__all__ = ["RE_SUMMARY", "summary_line"]

RE_SUMMARY = re.compile(
    rb"train_runtime|train_samples_per_second|train_steps_per_second|Averaged stats:|Saving dict for global step|"
    rb"(?i:(?:epoch|final|training|train)[ \t]+results?[ \t]*:)"
)
_RE_FINAL = re.compile(rb"(?i)(?<![a-z])final[ \t_]+(?:train(?:ing)?[ \t_]+)?loss[ \t]*[:=]")
_RE_BLOCK_PART = re.compile(
    rb"(?:INFO|WARNING|DEBUG)(?::[\w.]+:[ \t]{2,}|[ \t]*::[ \t]{2,})[A-Za-z][A-Za-z_ ]*?[ \t]*[:=][ \t]*"
    + NUM
    + rb"[ \t]*\r?$"
)
# a split's name alone in bold markup heading a line, its results (MAR's `  **Train**  loss_source nan   ...
# loss_total nan` after the epoch's `Iter: [N/M] ... loss_total X` rows, then `  **Test**  r1 0.000`): a heading
_RE_SPLIT_HEAD = re.compile(rb"(?i)^[ \t]*\*\*[ \t]*(?:train(?:ing)?|val\w*|test\w*|eval\w*)[ \t]*\*\*")
# the epoch a field between pipes (`| epoch 010 |`), or first on a line of pipe fields (fairseq's `epoch 001 | loss
# 9.803 | nll_loss 9.6 | ...`): a table; never one pipe after a line's epoch, a script's `Epoch: 1| train loss: X`
_RE_EPOCH_FIELD = re.compile(
    rb"(?i)\|[ \t]*epoch[ \t]*:?[ \t]*\d+[ \t]*\||^[ \t]*epoch[ \t]*:?[ \t]*\d+[ \t]*\|[^|\n]*\|"
)


def summary_line(line: bytes, fields: Mapping[str, float]) -> bool:
    """Whether a line with a loss is a one-off summary (see the module's doc); `fields`: what it reads."""
    if RE_SUMMARY.search(line) is not None:
        return True
    unplaced = "step" not in fields and "epoch" not in fields  # no step, no epoch: no training row's place
    if unplaced and (
        _RE_FINAL.search(line) is not None
        or _RE_BLOCK_PART.search(line) is not None
        or _RE_SPLIT_HEAD.match(line) is not None
    ):
        return True
    return "step" not in fields and _RE_EPOCH_FIELD.search(line) is not None
