"""Notations of round 11's build-set line shapes (issue 30), one entry each with real samples (as
core.logs.rows.notations, which reads these after notations_spellings'; split off to keep modules short): a split's
name glued to the loss key (`trloss`, `valloss`), `key is [N/M]` counters, an epoch then one pipe before a loss (a
row, not a pipe table's summary) and a results block's indented key after a level's ` :: ` (an evaluation's).
"""

from __future__ import annotations

from core.logs.rows.notation import Notation, NotationSample

__all__ = ["SHAPES"]

_DISGEN = "https://github.com/GraphmindDartmouth/DISGEN/blob/3f768c7b0c081e7def6acc74a492c64612ce26fe/logs/output.log"
_EAST = "https://github.com/evjeny/EAST/blob/1fc92a5d1ff7b1038da1a5f613500c2172cd364b/log_train.txt"
_LIVENESS = (
    "https://github.com/Aruen24/mobilenetv2-pytorch-2dliveness/blob/2318099e6e0533c30037ab08315d1e74267eb138/train.log"
)
_LEVANTER = "https://github.com/marin-community/levanter/issues/584"

SHAPES: tuple[Notation, ...] = (
    Notation(
        "split_glued_to_the_loss_key",
        "a split's name glued to `loss` as one word (DISGEN's `Epoch: 01, trloss: 1.4891, trroc: ..., valloss: "
        "0.7609, ..., testloss_1: 0.7601, ...`): `trloss` (`tr`, `train`) the training loss, `valloss` / `testloss` "
        "(`val`, `valid`, `test`, `eval`, `dev`) an evaluation's (core.logs.rows.keys.LOSS_KEY_HEAD, eval_key)",
        (
            NotationSample(
                "Epoch: 01, trloss: 1.4891, trroc: 0.5552, trf1: 0.0000, tracc: 0.5420, valloss: 0.7609, valroc: "
                "0.5193, valf1: 0.0000, valacc: 0.1709, testloss_1: 0.7601, testroc_1: 0.5224, testf1_1: 0.0000, "
                "testacc_1: 0.1761, testloss_2: 0.7601, testroc_2: 0.3254, testf1_2: 0.0000, testacc_2: 0.1649.",
                _DISGEN,
                {"loss": 1.4891, "epoch": 1, "valloss": 0.7609, "testloss_1": 0.7601, "trroc": 0.5552},
            ),
        ),
    ),
    Notation(
        "key_is_bracketed_counter",
        "`key is [N/M]`, a counter and its total after `is` in brackets (EAST's `Epoch is [1/600], mini-batch is "
        "[1/1600], time consumption is 1.32521653, batch_loss is 13.28074360`): the epoch, and the step its "
        "`mini-batch` (the word `is` is the separator, never a key's word)",
        (
            NotationSample(
                "2021-05-03 03:53:27,794 [MainThread  ] [INFO ]  Epoch is [1/600], mini-batch is [1/1600], time "
                "consumption is 1.32521653, batch_loss is 13.28074360",
                _EAST,
                {
                    "loss": 13.2807436,
                    "epoch": 1,
                    "epochs_total": 600,
                    "step": 1,
                    "steps_total": 1600,
                    "time_consumption": 1.32521653,
                },
            ),
        ),
    ),
    Notation(
        "epoch_then_one_pipe",
        "a line's epoch then one pipe before its loss (a script's `Epoch: 1| train loss: 0.5644293498992919`, ten a "
        "epoch): a training row, not a pipe table's epoch summary (core.logs.rows.series: two pipes at least)",
        (
            NotationSample("Epoch: 1| train loss: 0.5644293498992919", _LIVENESS, {"loss": 0.5644293498992919}),
            NotationSample("Epoch: 42| train loss: 0.0009072398433703895", _LIVENESS, {"epoch": 42}),
        ),
    ),
    Notation(
        "indented_key_after_a_double_colon_level",
        "after a logger's level and ` :: ` (Levanter's `%(name)s - %(filename)s:%(lineno)d - %(levelname)s :: "
        "%(message)s`), an indented message of one key and its value alone: a part of an evaluation's results "
        "block, under its `eval loss: X` (core.logs.rows.series), no training row",
        (
            NotationSample(
                "34.16.228.1: 2024-05-15T20:03:24 - 3 - levanter.eval - eval.py:131 - INFO ::  loss: 11.185",
                _LEVANTER,
                None,
                eval=True,
            ),
            NotationSample(
                "34.16.228.1: 2024-05-15T20:03:24 - 3 - levanter.eval - eval.py:120 - INFO :: eval loss: 11.185",
                _LEVANTER,
                None,
                eval=True,
            ),
        ),
    ),
)
