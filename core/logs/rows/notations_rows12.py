"""Notations of round 12's build-set line shapes (issue 30), one entry each with real samples (as
core.logs.rows.notations, which reads these after notations_shapes'; split off to keep modules short): an eval split's
name as a metric's key before a training loss (`val=0.5589`, a score, no evaluation line), and a logger's CSV table
with a date-and-time column and the loss beside its parts (Lightning's CSVLogger).
"""

from __future__ import annotations

from core.logs.rows.notation import Notation, NotationSample

__all__ = ["ROWS12"]

_GLUONCV = (
    "https://github.com/dmlc/web-data/blob/898b202efef803db74220816da865ea7ef08d829/gluoncv/logs/classification/"
    "cifar/cifar_resnet20_v1.log"
)
_STABLESR = "https://github.com/IceClear/StableSR/issues/161"
_STABLESR_HEADER = "train/loss_simple_step,train/loss_vlb_step,train/loss_step,global_step,epoch,created_at"

ROWS12: tuple[Notation, ...] = (
    Notation(
        "split_name_as_a_metric_key",
        "an eval split's name as a key with its own number after `=` before the loss (GluonCV's CIFAR trainer: "
        "`[Epoch 0] train=0.467608 val=0.558900 loss=1.452417 time: 16.45`, each split's accuracy, then the "
        "training loss): a metric (`val`), not a word making the line an evaluation's (core.logs.rows.splitkeys."
        "split_score); `val loss=` and `Validation: ... loss=` stay evaluation lines",
        (
            NotationSample(
                "INFO:root:[Epoch 0] train=0.467608 val=0.558900 loss=1.452417 time: 16.450441",
                _GLUONCV,
                {"loss": 1.452417, "epoch": 0, "train": 0.467608, "val": 0.5589},
            ),
            NotationSample(
                "INFO:root:[Epoch 199] train=0.996374 val=0.920000 loss=0.014310 time: 16.754802",
                _GLUONCV,
                {"loss": 0.01431, "epoch": 199, "val": 0.92},
            ),
        ),
    ),
    Notation(
        "csv_table_with_a_date_column_and_loss_parts",
        "a logger's CSV table with a date-and-time column and the loss beside its parts (PyTorch Lightning's "
        "CSVLogger `metrics.csv`: `train/loss_simple_step,train/loss_vlb_step,train/loss_step,global_step,epoch,"
        "created_at`): the date is when the row was written (no metric), the column named the loss itself "
        "(`train/loss_step`) is the loss, the parts its metrics, `global_step` the step (core.logs.rows.columns)",
        (
            NotationSample(
                "0.25144094228744507,0.001727868104353547,0.25144094228744507,49.0,0,2025-11-07 06:02:10.484610",
                _STABLESR,
                {
                    "loss": 0.25144094228744507,
                    "step": 49,
                    "epoch": 0,
                    "train/loss_simple_step": 0.25144094228744507,
                    "train/loss_vlb_step": 0.001727868104353547,
                    "created_at": None,
                },
                header=_STABLESR_HEADER,
            ),
        ),
    ),
)
