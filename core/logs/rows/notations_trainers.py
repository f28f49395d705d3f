"""Notations of trainers' and tools' own lines, one entry each (as core.logs.rows.notations, which reads these
after its own and notations_more's; split off to keep modules short): a tracking tool's lines that are never rows
(W&B's run summary), the rows of RL trainers that name several losses (veRL's PPO row), the round-8 gaps' values
(a loss named cross entropy, darknet's values before their names, a value before its unit, a key of several words
after a spaced dash, a progress bar's timed fields, a Python dict's quoted numbers), a metric block's loss named by
its criterion's class (OLMo), a CSV or TSV table (Keras' CSVLogger, Ultralytics' results.csv), YOLOv5's table of bare
loss parts and TF Estimator's evaluation dict, each with real samples.
"""

from __future__ import annotations

from core.logs.rows.notation import CORPUS, Notation, NotationSample
from core.logs.rows.notations_keyed import KEYED
from core.logs.tokens.lexicon import NUM

__all__ = ["TRAINERS"]

_TMR = "https://github.com/MukundShankar-dev/TMR/blob/50cb91917a438649daf9e12f917e907580d18f0e/"
_TMR_ERR = _TMR + "train.err"
_NAN = float("nan")
_OLMO_150M = (
    "https://github.com/AntonioLopardo/OLMo/blob/c3c25dc5dffdbb29ab763fa38e4cd2239be257e8/"
    "checkpoints/OLMo-150M-tied-emb-1000/train.log"
)
_BRATS = (
    "https://github.com/4hmetcakmak/BraTS2020CapstoneProject/blob/4e61e4643f1de1afc4cbb8d6f04d920547c8cd0f/training.log"
)
_ERAV4 = (
    "https://github.com/Jayant-Guru-Shrivastava/ERAV4-Session11-shakespeare-gpt2-124M/blob/"
    "9d7497880089e00021a7a2c53a453308aad24bdb/logs/train.log"
)
_YOLO12 = (
    "https://github.com/1527171/HandRaisingDetector-YOLO12n/blob/2f51500a151ac3af04855ee8f9c9c232748a0a29/"
    "runs/detect/train/results.csv"
)
_YOLO12_HEADER = (
    "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
    "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2"
)
_YOLOV5 = (
    "https://github.com/peshmerge/ml_2_project/blob/8600b5262d03daed6232ac9e7c87228349e4956b/"
    "yolov5/runs/terminal_output_300_epochs.md"
)
_YOLOV5_HEADER = "     Epoch   gpu_mem       box       obj       cls    labels  img_size"
_SVD = (
    "https://github.com/Ascend/ModelZoo-TensorFlow/blob/35672d9132bcb809c4ff4d5f05f2fdfcdf732b83/"
    "TensorFlow/contrib/cv/SVD_ID2019_for_Tensorflow/GPU/loss.log"
)
_BRATS_HEADER = (
    "epoch,accuracy,dice_coef,loss,lr,mean_io_u_5,precision,val_accuracy,val_dice_coef,val_loss,val_mean_io_u_5,"
    "val_precision"
)

_HOROVOD_1737 = CORPUS.format(
    "https://github.com/horovod/horovod/issues/1737",
    "horovod-stderr-tf-estimator-cross-entropy-rank0-diverges_horovod-1737",
)
_SSD = CORPUS.format(
    "https://github.com/Sparks-zs/mxnet-object-detection/blob/33302a42b6002e1007e2e407bf5bfcde3527e780/log/train.log",
    "ssd-crossentropy-smoothl1-rows-no-loss-word-val-ap_mxnet-object-detection-train",
)
_DSCNN = CORPUS.format(
    "https://github.com/Ascend/modelzoo/blob/1b7996a5c98f01f57ed796b1967b96b27e6e4362/contrib/Research/speech/ds-cnn/"
    "ds-cnn_tf_hw81087854/train.log",
    "tf-npu-ge-trace-flood-cross-entropy-rows-doubled-by-absl-cut-at-step-7_ascend-modelzoo-dscnn",
)

_DARKNET_4606 = CORPUS.format(
    "https://github.com/AlexeyAB/darknet/issues/4606",
    "darknet-iteration-avg-loss-row-among-region-lines-with-nan-iou_darknet-4606",
)

_XCLIP_RANK0 = CORPUS.format(
    "https://github.com/krishwin/xclip/blob/8cccc88d482d88655a7624b7ffc099f2554a6b63/log_rank0.txt",
    "swin-style-log-rank0-rank1-files-seven-launches-one-tab-row-each_xclip-log-rank",
)

_KD_THESIS = (
    "https://github.com/Jeen-Freecs/kd_thesis/blob/765f409cdaf3e2ceac6ec536be2689738f39e91e/wandb/"
    "run-20251028_205425-7534idpa/files/output.log"
)
_KD_THESIS_ENTRY = (
    "wandb-output-log-lightning-bar-collapsed-to-one-line-then-wandb-authenticationerror-at-epoch-17_kd-thesis-7534idpa"
)

_LLMC = (
    "https://github.com/KellerJordan/modded-nanogpt/blob/f411b3d346aa52d3504324ca93c230fd84c6c07f/records/"
    "track_1_short/2024-10-13_llmc/main.log"
)
_LLMC_ENTRY = "llmc-compact-s-trl-lr-norm-rows-with-s-tel-eval-lines-gpt2-124m_modded-nanogpt-llmc-main-log"

_GPT2_LORA = (
    "https://github.com/AnshDhalla1/PyTorch_finetune_GPT2/blob/7dc2950eb8030b2060ee60fd83242fd62772544d/train.log"
)
_GPT2_LORA_ENTRY = (
    "python-logging-info-main-epoch-step-pipe-loss-ppl-lr-grad-gpt2-lora-nohup_pytorch-finetune-gpt2-train-log"
)


TRAINERS: tuple[Notation, ...] = (
    Notation(
        "integer_glued_to_a_bytes_unit",
        "a `key value` pair whose value is an integer glued to a unit of bytes (Swin-style trainers' "
        "`tot_loss 0.4772 (0.4772)\tmem 0MB`, `MB`, `GiB`, ...): a metric named by its key; a clock time "
        "(`eta 0:08:30`) stays none",
        (
            NotationSample(
                "[2024-09-24 09:36:48 ViT-B/16] (main.py 188): INFO Train: [0/50][0/6]\teta 0:08:30 lr 0.000000000"
                "\ttime 85.0619 (85.0619)\ttot_loss 0.4772 (0.4772)\tmem 0MB",
                _XCLIP_RANK0,
                {"loss": 0.4772, "mem": 0, "lr": 0.0, "eta": None},
            ),
        ),
    ),
    Notation(
        "darknet_iteration_row",
        "darknet's iteration row, each value before its name: `N: X, Y avg loss, R rate, T seconds, I images` "
        "(the iteration, its loss, the running average named `avg loss`, the learning rate named `rate`): the row's "
        "loss is the value before the `X avg loss` cell, `avg loss` and `rate` its metrics; its per-region "
        "`v3 (mse loss, Normalizer: (iou: 0.75, ...) Region 82 Avg (IOU: -nan, ...)` lines are no rows",
        (
            NotationSample(
                " 1234: 2.860175, 3.180630 avg loss, 0.001000 rate, 2.646987 seconds, 78976 images",
                _DARKNET_4606,
                {"loss": 2.860175, "step": 1234, "avg_loss": 3.180630, "rate": 0.001},
            ),
            NotationSample(
                "v3 (mse loss, Normalizer: (iou: 0.750000, cls: 1.000000) Region 82 Avg (IOU: -nan, GIOU: -nan), "
                "Class: -nan, Obj: -nan, No Obj: 0.000005, .5R: -nan, .75R: -nan, count: 0",
                _DARKNET_4606,
                None,
            ),
        ),
        pattern=rb"^[ \t]*(?P<step>\d+):[ \t]+(?P<loss>"
        + NUM
        + rb"),[ \t]+(?P<avg_loss>"
        + NUM
        + rb")[ \t]+avg loss,[ \t]+(?P<rate>"
        + NUM
        + rb")[ \t]+rate(?![\w.])",
    ),
    Notation(
        "loss_named_cross_entropy",
        "a loss named `cross_entropy`, `cross entropy` or `CrossEntropy` with no `loss` word "
        "(core.logs.tokens.lexicon.LOSS_KEYS): TF Estimator's LoggingTensorHook `cross_entropy = X, learning_rate "
        "= Y, ...` (here behind mpirun's rank tag), TF speech-commands' `Step #1: rate R, accuracy A%, cross entropy "
        "X` (its step after a `#`) and GluonCV SSD's `CrossEntropy=X, SmoothL1=Y`; the other values are metrics",
        (
            NotationSample(
                "[1,0]<stderr>:INFO:tensorflow:cross_entropy = 3936.8564, learning_rate = 0.013941194, "
                "train_mean_iou = 0.039751776, train_px_accuracy = 0.5942941 (7.314 sec)",
                _HOROVOD_1737,
                {"loss": 3936.8564, "lr": 0.013941194, "train_mean_iou": 0.039751776},
            ),
            NotationSample(
                "INFO:tensorflow:Step #1: rate 0.001000, accuracy 3.00%, cross entropy 4.509356",
                _DSCNN,
                {"loss": 4.509356, "step": 1, "rate": 0.001, "accuracy": 3.0},
            ),
            NotationSample(
                "I1224 23:11:47.320920 281473027969040 train.py:250] Step #1: rate 0.001000, accuracy 3.00%, "
                "cross entropy 4.509356",
                _DSCNN,
                {"loss": 4.509356, "step": 1, "rate": 0.001},
            ),
            NotationSample(  # GluonCV SSD's loss metrics run together, no `loss` word (round 12 set-aside)
                "2020-08-31 14:53:06,644 - train_net.py[line:175] - INFO: [Epoch 0][Batch 0], Speed: 0.926 "
                "samples/sec, CrossEntropy=1.83e+00, SmoothL1=3.00e-03, val_AP=0.136",
                _SSD,
                {"loss": 1.83, "epoch": 0, "smoothl1": 0.003},
            ),
        ),
    ),
    Notation(
        "wandb_run_summary",
        "Weights & Biases' own lines (`wandb: Run summary:` then `wandb: <key> <value>`, one key a line): the run's "
        "last logged values, printed once at its end, never a training row (core.logs.rows.keylines)",
        (
            NotationSample("wandb:                     loss 0.34985", _TMR_ERR, None),
            NotationSample("wandb:               train_loss 0.34985", _TMR_ERR, None),
            NotationSample("wandb:                 val_loss 1.72031", _TMR_ERR, None),
        ),
    ),
    Notation(
        "namespaced_losses_of_a_ppo_row",
        "a PPO trainer's row naming several losses under namespaces (veRL's `step:N - actor/pg_loss:X - ... - "
        "actor/loss:Y`): the bare `loss` under its namespace (`actor/loss`) is the row's loss, as a bare `loss` is "
        "beside `*_loss` parts; with none, the policy's loss (`actor/pg_loss`) before an auxiliary term's (a "
        "critic's `critic/vf_loss`, `actor/entropy_loss`, `kl_loss`); the others are columns (lines cut where shown)",
        (
            NotationSample(
                "\x1b[36m(TaskRunner pid=625502)\x1b[0m step:1 - global_seqlen/min:2578 - global_seqlen/max:2578 - "
                "global_seqlen/minmax_diff:0 - global_seqlen/balanced_min:2578 - global_seqlen/balanced_max:2578 - "
                "global_seqlen/mean:2578.0 - actor/entropy:0.463403582572937 - perf/mfu/actor_infer:0.0 - "
                "actor/pg_clipfrac:0.0 - actor/ppo_kl:0.0 - actor/pg_clipfrac_lower:0.0 - actor/pg_loss:0.0 - "
                "actor/entropy_loss:0.4634036049246788 - actor/kl_loss:0.0 - actor/kl_coef:0.001 - "
                "actor/loss:-0.00046340361586771905 - actor/grad_norm:0.009721037931740284 - actor/lr:3e-05",
                "https://github.com/Foo1szz/verl/blob/0adc23fd7421b4b3c85cf0ba059003f201cc5ccf/train.out",
                {"loss": -0.00046340361586771905, "step": 1, "actor_pg_loss": 0.0, "actor_kl_loss": 0.0},
            ),
            NotationSample(
                "step:1 - global_seqlen/min:2780.000 - global_seqlen/max:3103.000 - global_seqlen/minmax_diff:323.000 "
                "- global_seqlen/balanced_min:2927.000 - global_seqlen/balanced_max:2952.000 - global_seqlen/mean:"
                "2934.750 - critic/kl:-0.000 - critic/kl_coeff:0.040 - critic/vf_loss:nan - critic/vf_clipfrac:0.000 "
                "- critic/vpred_mean:nan - critic/grad_norm:nan - mfu/critic:0.036 - critic/lr:0.000 - "
                "actor/entropy_loss:0.442 - actor/pg_loss:-0.013 - actor/pg_clipfrac:0.000 - actor/ppo_kl:0.000 - "
                "actor/grad_norm:9.819 - mfu/actor:0.018 - actor/lr:0.000",
                CORPUS.format("verl-project/verl#498", "verl-step-row-dash-joined-vf-loss-nan-pg-loss-finite_verl-498"),
                {"loss": -0.013, "step": 1, "actor_entropy_loss": 0.442},
            ),
        ),
    ),
    Notation(
        "value_before_its_unit",
        "a value printed before its unit, the unit naming it (core.logs.rows.unitfirst): a rate `word/word` in a "
        "whole cell, opened by `(`, `|`, `;` or `,`; a `k`/`M`/`G` suffix a power of 1000 (`113.4k tok/s`)",
        (
            NotationSample(
                "INFO:tensorflow:global step 2130: loss = 6.8195 (0.888 sec/step)",
                CORPUS.format(
                    "xiaodiu2010/TextBoxes-TensorFlow#8",
                    "tf-slim-global-step-loss-equals-rows-with-recording-summary_textboxes-tf-8",
                ),
                {"loss": 6.8195, "step": 2130, "sec_step": 0.888},
            ),
            NotationSample(
                "INFO - root - 2022-03-21 00:30:33.618128: step 0, total loss = 1.52 batch loss = 1.23 ( 0.2 "
                "examples/sec; 49.947 sec/batch; 2767h:55m:20s remains)",
                CORPUS.format(
                    "Ascend/ModelZoo-TensorFlow Siamese_ID1289 npu.log",
                    "siamfc-tf-npu-modelarts-19950-total-loss-batch-loss-rows-exit-0_ascend-modelzoo-tf-siamese",
                ),
                {"loss": 1.52, "step": 0, "batch_loss": 1.23, "examples_sec": 0.2, "sec_batch": 49.947},
            ),
            NotationSample(
                "step   47700 | loss 1.4684 | lr 1.79e-04 | grad 0.075 | 113.4k tok/s | mfu 114.07%",
                CORPUS.format(
                    "Pratic2001/Qwen3-Non-MOE train.out",
                    "custom-gpt-resume-pipe-rows-loss-jumps-1p5-to-14-eval-lines-indented_qwen3-non-moe-train-out",
                ),
                {"loss": 1.4684, "step": 47700, "lr": 1.79e-04, "grad": 0.075, "tok_s": 113400.0, "mfu": 114.07},
            ),
        ),
    ),
    Notation(
        "several_word_key_after_a_spaced_dash",
        "a `key value` field of several words after a spaced dash, the loss's own key without a separator "
        "(tensorpack-style `loss 0.14132963 - time per batch 63.1364`)",
        (
            NotationSample(
                "epoch 1  step 1  loss 0.14132963 - time per batch 63.1364",
                CORPUS.format(
                    "Ascend/ModelZoo-TensorFlow PCN_ID0997 run.log",
                    "pcn-tf-npu-tensorpack-ansi-276-loss-rows-log-just-ends_ascend-modelzoo-tf-pcn",
                ),
                {"loss": 0.14132963, "epoch": 1, "step": 1, "time_per_batch": 63.1364},
            ),
        ),
    ),
    Notation(
        "progress_bar_timed_fields",
        "a progress bar's fields (the `progress` package's `| Data: 0.075s | Batch: 0.190s | Total: 0:03:14 |`): "
        "a counter's word with a decimal in seconds is a time, no step (`Batch: 0.190s`); a clock time (hours, "
        "minutes) is no value (`Total`, `ETA`)",
        (
            NotationSample(
                "Training |################################| (1024/1024) Data: 0.075s | Batch: 0.190s | Total: "
                "0:03:14 | ETA: 0:00:01 | Loss: nan",
                CORPUS.format("nayeemrizve/TRSSL#2", "progress-bar-loss-nan-epoch-68-test-bars-nan-or-inf_trssl-2"),
                {"loss": _NAN, "data": 0.075, "batch": 0.19, "total": None, "eta": None, "step": None},
            ),
        ),
    ),
    Notation(
        "python_dict_string_values",
        "a Python dict whose every value is a quoted string (HF Trainer's log dict as Unsloth prints it: "
        "`{'loss': '185.9', 'grad_norm': '6880', ...}`): each quoted number is its key's value, not only the loss's",
        (
            NotationSample(
                "{'loss': '185.9', 'grad_norm': '6880', 'learning_rate': '1.263e-06', 'epoch': '0.002296'}  ",
                CORPUS.format("unslothai/unsloth#4982", "hf-dicts-string-valued-loss-grad-norm-four-rows_unsloth-4982"),
                {"loss": 185.9, "global_norm": 6880, "lr": 1.263e-06},
            ),
        ),
    ),
    Notation(
        "criterion_class_loss_key",
        "a loss named by its criterion's class, a capital `Loss` ending a key after a small letter (OLMo's metric "
        "block, one `key=value` a line under its `[step=10/10000,epoch=0]` header: `train/CrossEntropyLoss=9.064`, "
        "PyTorch's `CrossEntropyLoss`): the training loss; `ZLoss`, `MSELoss` (a capital before `Loss`) name none",
        (
            NotationSample("    train/CrossEntropyLoss=9.064", _OLMO_150M, {"loss": 9.064}),
            NotationSample(
                "    train/CrossEntropyLoss=7.417", "https://github.com/allenai/OLMo/issues/552", {"loss": 7.417}
            ),
            NotationSample("    optim/total_grad_norm=1.608", _OLMO_150M, None),
            NotationSample(  # Lightning's model summary: the class is a module's type in a table cell, no key
                "1 | ce_loss    | CrossEntropyLoss | 0      | train",
                CORPUS.format(_KD_THESIS, _KD_THESIS_ENTRY),
                None,
            ),
        ),
    ),
    Notation(
        "csv_table",
        "a CSV table: a header of three names or more parted by commas, one a loss key, over lines of as many "
        "comma-parted numbers (Keras' `CSVLogger`: `epoch,accuracy,...,loss,...,val_loss,...`, one line an epoch): "
        "the first loss column is the loss, `epoch` the row's epoch, the other columns its metrics (`lr` its lr) "
        "(core.logs.rows.columns)",
        (
            NotationSample(
                "0,0.9847438335418701,0.332878053188324,0.05603187158703804,0.001,0.7597786784172058,"
                "0.9889948964118958,0.9850143790245056,0.38067764043807983,0.05463637784123421,0.8155959844589233,"
                "0.98931884765625",
                _BRATS,
                {
                    "loss": 0.05603187158703804,
                    "epoch": 0,
                    "val_loss": 0.05463637784123421,
                    "accuracy": 0.9847438335418701,
                    "lr": 0.001,
                    "mean_io_u_5": 0.7597786784172058,
                },
                header=_BRATS_HEADER,
            ),
            NotationSample(_BRATS_HEADER, _BRATS, None),
            NotationSample(
                "1,38.7726,1.92084,2.57206,1.82703,0.27642,0.34082,0.22955,0.09727,1.85976,2.58241,1.84569,"
                "0.000662037,0.000662037,0.000662037",
                _YOLO12,
                {"loss": 1.92084, "epoch": 1, "train/cls_loss": 2.57206, "val/box_loss": 1.85976},
                header=_YOLO12_HEADER,
            ),
        ),
    ),
    Notation(
        "tsv_table",
        "a TSV table: a header of two names or more parted by tabs, one a loss key (a tab parts no sentence's "
        "words), over lines of as many tab-parted numbers (a trainer's own `step<TAB>loss` file): read as a CSV "
        "table (core.logs.rows.columns)",
        (
            NotationSample("10\t8.460716", _ERAV4, {"loss": 8.460716, "step": 10}, header="step\tloss"),
            NotationSample("4570\t0.128361", _ERAV4, {"loss": 0.128361, "step": 4570}, header="step\tloss"),
        ),
    ),
    Notation(
        "yolo_bare_loss_parts",
        "YOLOv3/v5/v7's training table, its loss parts named bare beside `gpu_mem` (`Epoch gpu_mem box obj cls "
        "[total] labels img_size`: no loss key in the header): the `total` column is the loss, with none the first "
        "part (`box`, as the first loss column of Ultralytics' `box_loss cls_loss dfl_loss` table); the other parts "
        "are its metrics, the row the bar's last draw (core.logs.rows.columns), a failure glued behind it too (the "
        "draw is read, then the failure: core.logs.rows.linekinds.failure_glued_to_bar)",
        (
            NotationSample(
                "     0/299     5.05G   0.06359   0.03304         0         0      1280: 100%|\u2588\u2588\u2588"
                "\u2588\u2588\u2588\u2588\u2588\u2588\u2588| 213/213 [06:21<00:00,  1.79s/it]",
                _YOLOV5,
                {"loss": 0.06359, "epoch": 0, "obj": 0.03304, "cls": 0.0},
                header=_YOLOV5_HEADER,
            ),
            NotationSample(
                "     1/299     5.53G   0.08231   0.02054         0    0.1029        40       640:  36%|\u2588\u2588"
                "\u2588\u258c      | 303/836 [01:46<03:02,  2.91it/s]Segmentation fault",
                "https://github.com/Bobo-y/flexible-yolov5/issues/11",
                {"loss": 0.1029, "epoch": 1, "box": 0.08231, "obj": 0.02054, "cls": 0.0},
                header="     Epoch   gpu_mem       box       obj       cls     total   targets  img_size",
            ),
            NotationSample(_YOLOV5_HEADER, _YOLOV5, None),
        ),
    ),
    Notation(
        "estimator_evaluation_dict",
        "TF Estimator's evaluation results, written to its summary (`Saving dict for global step N: global_step = N, "
        "loss = X, <metric> = Y`): the evaluation at that step, never a training row beside its `loss = X, step = N` "
        "rows (core.logs.rows.series)",
        (
            NotationSample(
                "2022-03-19 18:05:03,292 - tensorflow - INFO - Saving dict for global step 100: global_step = 100, "
                "loss = 2.0213404, mean_degree_err = 90.8583",
                _SVD,
                None,
                eval=True,
            ),
            NotationSample(
                "2022-03-19 18:05:04,601 - tensorflow - INFO - loss = 18.108334, step = 200 (9.089 sec)",
                _SVD,
                {"loss": 18.108334, "step": 200},
            ),
        ),
    ),
    Notation(
        "loss_key_with_a_qualifier_after_it",
        "a loss key with words after it that qualify it, before its separator: a parenthesised word (tqdm's postfix "
        "`loss (batch)=0.0278`, a key `set_postfix` was given with a space; never an eval split's name, `loss (val)`) "
        "or `so far` (a running value: `avg loss so far is 0.1098`, a training row where the line names its step)",
        (
            NotationSample(
                "Epoch 1/5:  11%|\u2588         | 10/90 [00:01<00:08,  8.95img/s, loss (batch)=0.0278]",
                "https://github.com/milesial/Pytorch-UNet/issues/192",
                {"loss": 0.0278, "epoch": 1, "epochs_total": 5},
            ),
            NotationSample(
                "Epoch 2/5:   2%|\u258f         | 1/49 [00:11<09:19, 11.65s/img, loss (batch)=5.45]"
                "['data/imgs\\\\file64.png']",
                "https://github.com/milesial/Pytorch-UNet/issues/205",
                {"loss": 5.45, "epoch": 2},
            ),
            NotationSample(
                "Epoch 0, Step 25, total used time 7.178124904632568 (s), avg loss so far is 0.10979227721691132",
                "https://github.com/IcarusWizard/prednet-paddle/blob/2d235a5f10932ea3e5fd36080b77dfeda6a0fc29/logs/train.log",
                {"loss": 0.10979227721691132, "epoch": 0, "step": 25},
            ),
            NotationSample(
                "Epoch 0, val loss is 0.0477195605635643, val mse is 0.024224352091550827.",
                "https://github.com/IcarusWizard/prednet-paddle/blob/2d235a5f10932ea3e5fd36080b77dfeda6a0fc29/logs/train.log",
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "steps_a_count_or_the_step",
        "`Steps: N` beside an epoch: the epoch's step count on a line that names an evaluation split too (the "
        "Time-Series-Library family's epoch summary `Epoch: 1, Steps: 3741 | Train Loss: ... Vali Loss: ... Test "
        "Loss: ...`), the step on a progress row that names none (Coqui STT's `Epoch 0 | Training | ... | Steps: 89 "
        "| Loss: ...`)",
        (
            NotationSample(
                "Epoch 0 |   Training | Elapsed Time: 0:00:14 | Steps: 89 | Loss: 25.274169",
                "https://github.com/coqui-ai/STT/issues/2238",
                {"loss": 25.274169, "epoch": 0, "step": 89, "steps_total": None},
            ),
            NotationSample(
                "Epoch: 1, Steps: 3741 | Train Loss: 0.1153923 Vali Loss: 0.0998509 Test Loss: 0.1338928",
                CORPUS.format(
                    "mindspore-courses/competition 2023 ModelRain Informer train0724.log",
                    "informer-ms-tab-iters-loss-and-epoch-summaries_competition-modelrain",
                ),
                {"loss": 0.1153923, "epoch": 1, "steps_total": 3741, "step": None, "vali_loss": 0.0998509},
            ),
        ),
    ),
    Notation(
        "final_loss_summary",
        "a run's final loss after training ends, the loss key after the word `final` on a line with no step and no "
        "epoch (core.logs.rows.series): a one-off summary, never a training row",
        (
            NotationSample(
                "2025-10-02 14:29:20,335 - INFO - [__main__] - \U0001f4ca Final training loss: 1.1465217211914063",
                CORPUS.format(
                    "https://github.com/AmirrezaSedghamiz/Phi2-microsoft-model-finetuning/blob/"
                    "98721f3f160d42ee8c40d0b7ad3b1a248dbfd729/training.log",
                    "qlora-phi2-no-step-rows-only-final-training-loss-summary_phi2-finetuning-training-log",
                ),
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "loss_by_suffix_after_a_namespace_or_head",
        "the loss key with a suffix (core.logs.rows.notations_more's `loss_named_by_suffix` pattern) behind a logger's "
        "`train/` namespace: Lightning's bar postfix `train/loss_total_step=X, ..., val/loss_total=Y, "
        "train/loss_total_epoch=Z` (wandb's console copy keeps the bar's last draw): the first is the row's loss; or "
        "behind a head's name and a dot, on an mmseg row of part losses with no total `loss:` (DAFormer's "
        "`decode.loss_seg: nan, ..., src.loss_imnet_feat_dist: nan`): the first part, as for `loss_cls` parts",
        (
            NotationSample(
                "Epoch 14: 100%|██████████| 352/352 [00:24<00:00, 14.27it/s, v_num=idpa, train/loss_total_step=1.250, "
                "val/auroc=0.984, val/accuracy=0.591, val/loss_total=1.480, train/loss_total_epoch=0.976]",
                CORPUS.format(_KD_THESIS, _KD_THESIS_ENTRY),
                {"loss": 1.25, "epoch": 14, "train_loss_total_epoch": 0.976, "val_loss_total": 1.48},
            ),
            NotationSample(
                "2022-05-07 17:02:57,696 - mmseg - INFO - Iter [50/40000]        lr: 1.958e-06, eta: 1 day, 0:29:42, "
                "time: 2.207, data_time: 0.029, memory: 9801, decode.loss_seg: nan, decode.acc_seg: 32.2611, "
                "src.loss_imnet_feat_dist: nan, mix.decode.loss_seg: nan, mix.decode.acc_seg: 54.3771",
                CORPUS.format(
                    "https://github.com/lhoyer/DAFormer/issues/22",
                    "mmseg-uda-iter-rows-all-component-losses-nan-no-total-loss_daformer-22",
                ),
                {"loss": _NAN, "step": 50, "steps_total": 40000, "decode_acc_seg": 32.2611, "data_time": 0.029},
            ),
        ),
    ),
    Notation(
        "llmc_compact_keys",
        "llm.c's compact main.log: `s:N trl:X lr:Y norm:Z` a training row (`trl` the train loss, `s` the step; "
        "core.logs.tokens.lexicon.LOSS_KEYS) and `s:N tel:X` an evaluation (`tel` the eval loss, EVAL_LOSS_KEYS)",
        (
            NotationSample(
                "s:0 trl:11.0091 lr:0.000001 norm:15.37",
                CORPUS.format(_LLMC, _LLMC_ENTRY),
                {"loss": 11.0091, "step": 0, "lr": 0.000001, "norm": 15.37},
            ),
            NotationSample("s:250 tel:6.1710", CORPUS.format(_LLMC, _LLMC_ENTRY), None, eval=True),
        ),
    ),
    Notation(
        "results_block_part",
        "a part of a printed results block: after Python logging's default prefix, an indented message of one key "
        "and its value alone (core.logs.rows.series), here under the `📊 Evaluation Results:` line: a summary, never "
        "a training row (the trainer's rows are unindented, `Epoch 1 | Step 6500/6501 | Loss: 0.4631 | ...`)",
        (
            NotationSample(
                "INFO:__main__:   Loss: 0.4887", CORPUS.format(_GPT2_LORA, _GPT2_LORA_ENTRY), None, eval=True
            ),
            NotationSample(
                "INFO:__main__:Epoch 1 | Step 6500/6501 | Loss: 0.4631 | PPL: 1.61 | LR: 1.00e-06 | Grad: 0.618 | "
                "Time: 0.130s",
                CORPUS.format(_GPT2_LORA, _GPT2_LORA_ENTRY),
                {"loss": 0.4631, "epoch": 1, "step": 6500, "lr": 1e-06},
            ),
        ),
    ),
    *KEYED,
)
