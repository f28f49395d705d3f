"""Notations of round 12's one-key-per-line blocks (issue 30), one entry each with real samples (as
core.logs.rows.notations, which reads these after notations_shapes'; split off to keep modules short): a bare
average loss alone on its line (a block's whole loss, training), a record's losses grouped under a `loss/`
namespace a key a line (only the group's whole loss a row), and a typed config record (no row).
The rules: core.logs.rows.keylines.
"""

from __future__ import annotations

from core.logs.rows.notation import CORPUS, Notation, NotationSample

__all__ = ["BLOCKS"]

_POINTNET = (
    "https://github.com/kargarisaac/PointNet-SemSeg-VKITTI3D/blob/d58237a61c0c4cc9786ca9c18b8cd1014999b734/"
    "log/log_train.txt"
)
_GRASPNET = "https://github.com/luyh20/FGC-GraspNet/blob/dedc17ced937b00d81d9dde7c34a1a4de982c0c9/log/log_train.txt"
_DAC = "https://github.com/ArkhamImp/descript-audio-codec/blob/b7e019cc0de2a8fe8c720073be661a28b14c54bf/train.out"
_PPO = CORPUS.format(
    "ericyangyu/PPO-for-Beginners#1", "iteration-block-average-loss-nan-from-start_ppo-for-beginners-1"
)

BLOCKS: tuple[Notation, ...] = (
    Notation(
        "lone_average_loss_line",
        "a bare average loss alone on its line, in a block of one key a line (PointNet's `**** EPOCH 000 ****`, "
        "`----`, `mean loss: 2.407614`, `accuracy: 0.289210`; PPO-for-Beginners' `Iteration #50` block's "
        "`Average Loss: nan`): the block's whole loss, the mean over its interval, a training row; an evaluation "
        "names itself (`eval mean loss: 43.578381`)",
        (
            NotationSample("mean loss: 2.407614", _POINTNET, {"loss": 2.407614}),
            NotationSample("mean loss: 0.133886", _POINTNET, {"loss": 0.133886}),
            NotationSample("eval mean loss: 43.578381", _POINTNET, None, eval=True),
            NotationSample("Average Loss: nan", _PPO, {"loss": float("nan")}),
        ),
    ),
    Notation(
        "loss_namespace_group_a_key_a_line",
        "a record's losses under one `loss/` namespace, a key a line with nothing around it (graspnet-baseline's "
        "`mean %s: %f` block every 10 batches under ` ---- batch: 010 ----`: `mean loss/overall_loss: 1.777084`, "
        "then its parts `mean loss/stage1_objectness_loss: 0.650260`, ...): only the group's whole loss "
        "(`overall_loss`, `total`) is a row; its parts are none",
        (
            NotationSample("mean loss/overall_loss: 1.777084", _GRASPNET, {"loss": 1.777084}),
            NotationSample("mean loss/overall_loss: 1.772583", _GRASPNET, {"loss": 1.772583}),
            NotationSample("mean loss/stage1_objectness_loss: 0.650260", _GRASPNET, None),
            NotationSample("mean loss/stage2_grasp_width_loss: 1.320168", _GRASPNET, None),
        ),
    ),
    Notation(
        "typed_config_record_line",
        "a typed argument a line, `name : type = value` (argbind's config dump of `train(` ... `)`, whose "
        "`lambdas : dict = {'mel/loss': 15.0, ...}` weighs the losses): configuration, never a row",
        (
            NotationSample(
                "  lambdas : dict = {'mel/loss': 15.0, 'adv/feat_loss': 2.0, 'adv/gen_loss': 1.0, "
                "'vq/commitment_loss': 0.25, 'vq/codebook_loss': 1.0, 'z_loss': 1.0, 'codes_loss': 0.01}",
                _DAC,
                None,
            ),
        ),
    ),
)
