"""Notations of lines found by their start (core.logs.tokens.lexicon.KEYED_START: no loss keyword on them), one entry
each with real samples: Marian's `Ep. : Up. : Cost` row, build-nanogpt's `<step> train <value>` and PaddlePaddle
v1's `Pass: N, Batch: N, TrainCost: X`. Read with
core.logs.rows.notations_trainers' (split off to keep modules short).
"""

from __future__ import annotations

from core.logs.rows.notation import CORPUS, Notation, NotationSample
from core.logs.tokens.lexicon import NUM

__all__ = ["KEYED"]

_NANOGPT_LOG = CORPUS.format(
    "https://github.com/fibonacci-2/aladdin/blob/4972d368a3c37ff9ce898010270c77006a7fff84/log/log.txt",
    "build-nanogpt-bare-step-train-value-lines-no-loss-word-173-rows_aladdin-log-txt",
)
_PADDLESPEECH = "https://github.com/PaddlePaddle/PaddleSpeech/issues/112"
_MARIAN_ENTRY = "marian-ep-up-cost-rows-then-util-exception-illegal-memory-access-core-dumped_marian-120"

KEYED: tuple[Notation, ...] = (
    Notation(
        "marian_ep_up_cost",
        "Marian NMT's training row `[2017-10-24 10:08:52] Ep. 1 : Up. 590 : Sen. 308701 : Cost 85.70 : Time 6.02s : "
        "15248.24 words/s` (a keyword line by its start, core.logs.tokens.lexicon.KEYED_START): `Cost` the loss, "
        "`Up.` the step (updates), `Ep.` the epoch, `Sen.` (sentences seen), `Time` (seconds per display, `time_s`) "
        "and `words/s` metrics",
        (
            NotationSample(
                "[2017-10-24 10:08:52] Ep. 1 : Up. 590 : Sen. 308701 : Cost 85.70 : Time 6.02s : 15248.24 words/s",
                CORPUS.format("https://github.com/marian-nmt/marian/issues/120", _MARIAN_ENTRY),
                {"loss": 85.7, "epoch": 1, "step": 590, "sen": 308701, "time_s": 6.02, "words_s": 15248.24},
            ),
        ),
        pattern=rb"(?i)(?<![\w.])Ep\.[ \t]+(?P<epoch>\d+)[ \t]+:[ \t]+Up\.[ \t]+(?P<step>\d+)[ \t]+:"
        rb"(?:[ \t]+Sen\.[ \t]+(?P<sen>\d+)[ \t]+:)?[ \t]+Cost[ \t]+(?P<loss>" + NUM + rb")(?![\w.])"
        rb"(?:[ \t]+:[ \t]+Time[ \t]+(?P<time_s>\d+(?:\.\d+)?)s(?![\w.])"
        rb"(?:[ \t]+:[ \t]+(?P<words_s>\d+(?:\.\d+)?)[ \t]+words/s(?![\w.]))?)?",
    ),
    Notation(
        "step_split_value",
        "build-nanogpt's log.txt: `<step> train <value>` alone on a line is a training row, its loss named by no key "
        "(a keyword line by its start, core.logs.tokens.lexicon.KEYED_START); `<step> val <value>`, its evaluation, is "
        "no row",
        (
            NotationSample("0 train 11.226211", _NANOGPT_LOG, {"loss": 11.226211, "step": 0}),
            NotationSample("1 train 11.192025", _NANOGPT_LOG, {"loss": 11.192025, "step": 1}),
        ),
        pattern=rb"(?i)^(?P<step>\d+) train (?P<loss>" + NUM + rb")[ \t]*$",
    ),
    Notation(
        "paddle_v1_pass_batch_cost",
        "PaddlePaddle v1's event handler's row (DeepSpeech2's `Pass: 0, Batch: 1, TrainCost: 93.167046`; the book's "
        "`Pass 0, Batch 0, Cost 2.30`): a keyword line by its start (core.logs.tokens.lexicon.KEYED_START), the pass "
        "the epoch, the batch the step, `Cost` / `TrainCost` the training loss (the objective the trainer minimises, "
        "as Marian's `Cost`; a `cost` elsewhere is no loss key: `time cost`, `batch_cost` are times)",
        (
            NotationSample(
                "Pass: 0, Batch: 1, TrainCost: 93.167046", _PADDLESPEECH, {"loss": 93.167046, "epoch": 0, "step": 1}
            ),
            NotationSample(
                "Pass: 0, Batch: 13, TrainCost: 37.709978", _PADDLESPEECH, {"loss": 37.709978, "epoch": 0, "step": 13}
            ),
        ),
        pattern=rb"(?i)^pass:?[ \t]+(?P<epoch>\d+),[ \t]+batch:?[ \t]+(?P<step>\d+),[ \t]+(?:train[ _]?)?cost:?[ \t]*"
        rb"(?P<loss>" + NUM + rb")(?![\w.])",
    ),
)
