"""A split's name glued to a loss key as one word (issue 30, round 11): DISGEN's `Epoch: 01, trloss: 1.4891, trroc:
0.5552, ..., valloss: 0.7609, ..., testloss_1: 0.7601, ...` names its training loss `trloss` and its evaluation's
`valloss`. The general line reader (core.logs.rows.general) reads a loss key by LOSS_KEY_HEAD and asks `eval_key`
whether it names an evaluation's loss. The corpus's logs glue no split to a loss key followed by a separator but
these (only `CrossEntropyLoss`, `logloss`, `CTCLoss`, `SARLoss`, `CELoss`, `SLoss`: no split's name).
"""

from __future__ import annotations

import re

from core.logs.tokens.lexicon import LOSS_KEYS

__all__ = ["LOSS_KEY_HEAD", "eval_key", "split_score"]

LOSS_KEY_HEAD = (
    rb"(?<![a-z0-9])(?:(?:tr|train|training|val|valid|test|eval|dev)(?=loss))?(?:" + b"|".join(LOSS_KEYS) + rb")"
)
"""A loss key's word, any case (core.logs.tokens.lexicon.LOSS_KEYS, for the general reader's `_RE_LOSS_KEY`), maybe
after a split's name glued to it: that split's loss, `tr` / `train` training's (`trloss`), `val`, `valid`, `test`,
`eval`, `dev` an evaluation's (`eval_key`)."""

_RE_EVAL_KEY = re.compile(rb"(?i)(?:val|valid|test|eval|dev)loss|tel")  # `tel`: lexicon.EVAL_LOSS_KEYS (llm.c's)


def eval_key(line: bytes, key_start: int) -> bool:
    """Whether the loss key at `key_start` names an evaluation's loss itself: llm.c's `tel` (the loss key of
    core.logs.tokens.lexicon.EVAL_LOSS_KEYS), or an eval split glued to `loss` (`valloss`, `testloss`)."""
    return _RE_EVAL_KEY.match(line, key_start) is not None


# a split's name as a key with its own number after `=` (`val=0.558900`), the number ending its field (never a bar's
# `100%`, a count's `3/10` or a pipe cell's tail)
_RE_SPLIT_SCORE = re.compile(rb"[ \t]*=[ \t]*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?=[ \t,;]|$)")


def split_score(line: bytes, word_end: int) -> bool:
    """Whether the eval split's name ending at `word_end` is a metric's key, its value after `=` (GluonCV's CIFAR
    trainer: `[Epoch 0] train=0.467608 val=0.558900 loss=1.452417 time: 16.45`, the splits' accuracies before the
    training loss): a score of its own on the line, not a word saying the line's loss is an evaluation's (as
    `val_acc=0.55` before `loss=` never was: a key, not a word)."""
    return _RE_SPLIT_SCORE.match(line, word_end) is not None
