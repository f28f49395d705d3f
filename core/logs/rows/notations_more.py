"""More notations, one entry each (as core.logs.rows.notations, which reads these after its own; split off to keep
modules short): the lines the issue-30 known gaps and its second round of real logs named, each with its real
samples.
"""

from __future__ import annotations

from core.logs.rows.notation import CORPUS as _CORPUS
from core.logs.rows.notation import Notation, NotationSample
from core.logs.tokens.lexicon import NUM

__all__ = ["MORE"]

_NAN = float("nan")
_YOLO_1654 = "ultralytics-yolov8-epoch-table-three-epochs-val-all-lines_ultralytics-1654"
_YOLO_21765 = "yolov8-column-table-negative-box-loss-two-epochs-three-all-lines_ultralytics-21765"
_WLM = (
    "https://github.com/pypi-data/pypi-mirror-359/blob/9cc3fc0560777c941a7937dc695dc5c4f05e517e/packages/nlpia2/"
    "nlpia2-0.2.0-py3-none-any.whl/nlpia2/ch08/rnn_word/checkpoint_notes/model_RNN_RELU_epochs_5.md"
)
_YOLO_HEADER = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"

MORE: tuple[Notation, ...] = (
    Notation(
        "epoch_summary_pipes",
        "an epoch's summary in a pipe table, the epoch a field of its own and no step (fairseq's `| epoch 010 | train "
        "loss 1.44 |`, `train | epoch 002 | loss 9.803 |`): a series of its own; the per-step lines say where they "
        "are within the epoch (`| epoch 010  2000 / 8223 loss=1.27 (1.50)`) and stay rows",
        (
            NotationSample(
                "| epoch 010 | train loss 1.44 | train ppl 2.72 | s/checkpoint    7747 | words/s    961 | "
                "words/batch    906 | bsz    32 | lr 0.001000 | clip 100% | gnorm 2.1113",
                _CORPUS.format(
                    "facebookresearch/fairseq#301", "fairseq-2018-running-average-epoch-summaries_fairseq-301"
                ),
                None,
                eval=True,
            ),
            NotationSample(
                "2020-03-23 11:38:13 | INFO | train | epoch 002 | loss 9.803 | nll_loss 8.89 | ppl 474.37 | "
                "wps 31194.9 | ups 0.07 | wpb 430468 | bsz 14485.4 | num_updates 695 | lr 0.00017375 | "
                "gnorm 55.005 | loss_scale 0 | train_wall 4512 | wall 9786",
                _CORPUS.format(
                    "facebookresearch/fairseq#1895", "fairseq-hydra-era-train-inner-and-summaries_fairseq-1895"
                ),
                None,
                eval=True,
            ),
            NotationSample(
                "2020-03-23 11:39:44 | INFO | train_inner | epoch 003:      5 / 356 loss=9.44, nll_loss=8.44, "
                "ppl=347.28, wps=30690.8, ups=0.07, wpb=427295, bsz=14390.4, num_updates=700, lr=0.000175, "
                "gnorm=156.036, loss_scale=0, train_wall=1281, wall=9877",
                _CORPUS.format(
                    "facebookresearch/fairseq#1895", "fairseq-hydra-era-train-inner-and-summaries_fairseq-1895"
                ),
                {"loss": 9.44, "epoch": 3, "nll_loss": 8.44, "lr": 0.000175},
            ),
        ),
    ),
    Notation(
        "step_pair_after_epoch",
        "the step within the epoch as a pair right after the epoch's (`Epoch:[0/19](100/24681)`, mmcv's "
        "`Epoch [1][15/678]`)",
        (
            NotationSample(
                "Epoch:[0/19](100/24681) loss:5.251 lr:0.00020000 epoch_Time:98.0min:",
                _CORPUS.format("jingyaogong/minimind#26", "minimind-epoch-paren-step-loss_minimind-26"),
                {"loss": 5.251, "epoch": 0, "epochs_total": 19, "step": 100, "steps_total": 24681, "lr": 0.0002},
            ),
        ),
    ),
    Notation(
        "qualified_step_and_unitless_seconds",
        "`global iter: N/M` is the step (`inner iter` a column); a time printed without a unit is in seconds "
        "(`| time: 1.700 |`: 1,700 ms)",
        (
            NotationSample(
                "train | data_epochs  0/10 | inner iter:   3/  8 | ppo epoch:  2/ 4 | global iter:     27/  5000| "
                "tot_loss: 1.5269 | rl_loss: -1.0516 | pt_loss: 2.5786 | pg_loss: -1.0603 | reg_loss: 0.0087 | "
                "reward: 0.0116 | rev_kl: 0.0022 | stu_lens: 71.8750 | mixed_lens: 63.2500 | lr: 8.5000e-07 | "
                "scale:  32.00 | time: 1.700 | step time: 0.000",
                _CORPUS.format("microsoft/LMOps#130", "lmops-minillm-pipe-tot-loss-global-iter-seconds_lmops-130"),
                {"loss": 1.5269, "step": 27, "steps_total": 5000, "step_time_ms": 1700.0, "inner_iter": 3.0},
            ),
        ),
    ),
    Notation(
        "stage_prefixed_keys",
        "metric keys behind a stage prefix, a letter and digits then a dot (mmdet cascade's `s0.loss_cls`)",
        (
            NotationSample(
                "2020-05-21 04:01:24,249 - mmdet - INFO - Epoch [1][15/678]\tlr: 0.00020, eta: 1 day, 16:21:05, time: "
                "1.269, data_time: 0.011, memory: 9581, loss_rpn_cls: 0.6986, loss_rpn_bbox: 0.2252, s0.loss_cls: "
                "0.5666, s0.acc: 95.7031, s0.loss_bbox: 0.1050, s0.loss_mask: 0.8547, s1.loss_cls: 0.3093, s1.acc: "
                "97.6562, loss: 3.4410",
                _CORPUS.format(
                    "open-mmlab/mmdetection#2785 (its s1 and s2 columns shortened)",
                    "mmdet-cascade-stage-prefixed-keys_mmdetection-2785",
                ),
                {"loss": 3.441, "s0_loss_cls": 0.5666, "s0_acc": 95.7031, "s1_acc": 97.6562, "step": 15},
            ),
        ),
    ),
    Notation(
        "bracketed_key",
        "a key in brackets, its value after a space (loguru trainers' `| [Loss] nan | [step]  1574 |`)",
        (
            NotationSample(
                "2023-01-25 01:03:05.674 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E104 "
                "iter[ 14/ 15] | [Loss] nan | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]  1574 | [url] none "
                "| [time] 0.4m (~4h) |[best] 0 -100.000x1e-2 ",
                _CORPUS.format("nv-tlabs/LION#9", "loguru-pipe-bracket-key-loss-nan-rank-r0_lion-9"),
                {"loss": _NAN},
            ),
        ),
    ),
    Notation(
        "key_value_table_cells",
        "a vertical table printing one dump's keys a line each, `| key | value |` (Stable-Baselines3's logger under "
        "its `train/` header): the bare `loss` cell is the row's loss; `entropy_loss`, `value_loss` are its parts, no "
        "rows of their own",
        (
            NotationSample(
                "|    loss                 | 0.0541      |",
                _CORPUS.format(
                    "DLR-RM/rl-baselines3-zoo#521", "sb3-logger-table-train-loss-two-dumps_rl-baselines3-zoo-521"
                ),
                {"loss": 0.0541},
            ),
            NotationSample(
                "|    entropy_loss         | -1.36       |",
                _CORPUS.format(
                    "DLR-RM/rl-baselines3-zoo#521", "sb3-logger-table-train-loss-two-dumps_rl-baselines3-zoo-521"
                ),
                None,
            ),
        ),
    ),
    Notation(
        "one_key_record_lines",
        "a record printed a key a line behind `| > ` (Mozilla / Coqui TTS's `--> STEP: 309/390 -- GLOBAL_STEP: 91150` "
        "blocks, a running average in parentheses): the bare `loss` line is the record's row; `decoder_loss`, "
        "`postnet_loss` are its parts, no rows of their own (core.logs.rows.keylines)",
        (
            NotationSample(
                "     | > loss: 0.38516",
                _CORPUS.format(
                    "mozilla/TTS#460", "mozilla-tts-step-blocks-one-key-per-line-loss-then-traceback-cut_tts-460"
                ),
                {"loss": 0.38516},
            ),
            NotationSample(
                "     | > decoder_loss: 0.20866  (0.19815)",
                _CORPUS.format(
                    "mozilla/TTS#460", "mozilla-tts-step-blocks-one-key-per-line-loss-then-traceback-cut_tts-460"
                ),
                None,
            ),
        ),
    ),
    Notation(
        "loss_per_unit",
        "the loss key with the span it is averaged over before its separator (`Training Loss per 100 steps: 1.35`)",
        (
            NotationSample(
                "Training Loss per 100 steps: 1.3555612564086914",
                _CORPUS.format(
                    "abhimishra91/transformers-tutorials#17",
                    "jupyter-traceback-device-side-assert-after-one-loss-line_transformers-tutorials-17",
                ),
                {"loss": 1.3555612564086914},
            ),
        ),
    ),
    Notation(
        "message_glued_to_value",
        "a callback's message glued to the value it follows, no newline between (Keras' TerminateOnNaN prints "
        "`Batch 3: Invalid loss, terminating training` right behind the bar's `loss: 44.4110`): a capitalised word "
        "ends the number",
        (
            NotationSample(
                "  3/234 [..............................] - ETA: 33:37:24 - loss: 44.4110Batch 3: Invalid loss, "
                "terminating training",
                _CORPUS.format(
                    "manishsoni1908/Mobilenet-ssd-keras#21",
                    "keras-terminateonnan-invalid-loss-inf-bar_mobilenet-ssd-keras-21",
                ),
                {"loss": 44.411},
            ),
        ),
    ),
    Notation(
        "eval_container_and_chinese_eval_words",
        "evaluation named by the dict that holds the loss (Orb's ` val_metrics: {..., 'loss': 34.2}`) or by a Chinese "
        "word before the key (`测试` test, `验证` validation, `评估`/`评测` evaluation): an evaluation line",
        (
            NotationSample(
                " val_metrics: {'energy_reference_mae': 5.316623687744141, 'energy_mae': 3.594848871231079, "
                "'node_cosine_sim': 0.5506304502487183, 'loss': 34.24308395385742}",
                _CORPUS.format(
                    "mindspore-courses/competition (its dict shortened)",
                    "orb-mindspore-epoch-train-metrics-dict-loss-last-key_competition-mindmomaorb",
                ),
                None,
                eval=True,
            ),
            NotationSample(
                " train_metrics: {'data_time': 0.00010895108183224995, 'node_cosine_sim': 0.7026202281316122, "
                "'loss': 44.74968592325846}",
                _CORPUS.format(
                    "mindspore-courses/competition (its dict shortened)",
                    "orb-mindspore-epoch-train-metrics-dict-loss-last-key_competition-mindmomaorb",
                ),
                {"loss": 44.74968592325846, "node_cosine_sim": 0.7026202281316122},
            ),
            NotationSample(
                "\u6574\u4f53\u6d4b\u8bd5\u96c6\u4e0a\u7684Loss: 262.62046909332275",
                _CORPUS.format(
                    "xiaotudui/pytorch-tutorial#1", "chinese-fullwidth-colon-loss-rows-and-test-loss_pytorch-tutorial-1"
                ),
                None,
                eval=True,
            ),
        ),
    ),
    # ------------------------------------------------------------------ read by their pattern
    Notation(
        "xgboost_rounds",
        "XGBoost's evaluation log, one line per boosting round (`[15]\ttrain-logloss:0.0050\teval-logloss:0.5175`): "
        "the training set's loss-named metric is the loss, the round the step, the other sets' metrics columns; "
        "a round without a training set is no row",
        (
            NotationSample(
                "22/06/01 10:06:44 ERROR RabitTracker$TrackerProcessLogger: 2022-06-01 10:06:44,668 INFO [15]    "
                "train-logloss:0.00502646757155188  eval-logloss:0.51746790368885076",
                _CORPUS.format(
                    "dmlc/xgboost#7962", "xgboost-spark-tracker-error-level-train-logloss-rows_xgboost-7962"
                ),
                {"loss": 0.00502646757155188, "step": 15, "eval_logloss": 0.51746790368885076},
            ),
        ),
        pattern=rb"\[(?P<step>\d+)\][ \t]+(?i:d?train)\w*-\w*loss:(?P<loss>" + NUM + rb")(?![\w.])",
    ),
    Notation(
        "json_named_metric",
        'JSON records naming their metric and its value (caikit-nlp\'s `training_logs.jsonl`: `{"name": "loss", '
        '"data": {"step": 1, "value": 3.9274}}`)',
        (
            NotationSample(
                '{"name": "loss", "data": {"epoch": 0.01, "step": 1, "value": 3.9274, "timestamp": '
                '"2023-09-26T19:25:18.737364"}}',
                _CORPUS.format("caikit/caikit-nlp#208", "caikit-nlp-training-logs-jsonl-name-loss_caikit-nlp-208"),
                {"loss": 3.9274, "step": 1},
            ),
        ),
        pattern=rb'"name":[ \t]*"(?:train_)?loss"[ \t]*,[ \t]*"data":[ \t]*\{[^{}]*?"value":[ \t]*(?P<loss>'
        + NUM
        + rb")",
    ),
    Notation(
        "loss_then_split",
        "the loss key before its split's name (LitGPT's `| loss train: 3.724, val: n/a |`): the train split's value "
        "is the training loss; `val: n/a` is no number (no evaluation)",
        (
            NotationSample(
                "Epoch 1 | iter 46 step 1 | loss train: 3.724, val: n/a | iter time: 45.73 ms",
                _CORPUS.format("Lightning-AI/litgpt#1224", "litgpt-loss-train-val-na_litgpt-1224"),
                {"loss": 3.724, "epoch": 1, "step": 46, "iter_time": 45.73},
            ),
        ),
        pattern=rb"(?i)(?<![a-z0-9_])loss[ \t]+train(?:ing)?[ \t]*[:=][ \t]*(?P<loss>" + NUM + rb")",
    ),
    Notation(
        "quoted_loss_value",
        "a dict's loss written as a quoted string among plain values (PaddleDetection's 2020 static-graph logger: "
        "`'loss': '7231.944336'`, the other keys unquoted)",
        (
            NotationSample(
                "2020-09-25 18:39:47,914-INFO: iter: 0, lr: 0.000033, 'loss': '7231.944336', eta: 0:00:00, "
                "batch_cost: 0.00008 sec, ips: 103883.69040 images/sec",
                "PaddlePaddle/PaddleDetection#1512 (tests/fixtures/real_logs/ppdet-legacy-quoted-loss-string-values_"
                "paddledetection-pr-1512)",
                {"loss": 7231.944336, "step": 0, "lr": 0.000033, "batch_cost": 0.00008, "ips": 103883.6904},
            ),
        ),
        pattern=rb"""['"]loss['"]:[ \t]*['"](?P<loss>""" + NUM + rb""")['"]""",
    ),
    Notation(
        "nan_filled_to_width",
        "NaN or infinity filled to a width with `x` (PaddleOCR formats its stats `{:x<6f}`: a NaN loss prints "
        "`nanxxx`, and so do its parts)",
        (
            NotationSample(
                "[2023/10/06 13:31:29] ppocr INFO: epoch: [2/500], global_step: 920, lr: 0.000243, acc: 0.000000, "
                "norm_edit_dis: 0.000000, CTCLoss: nanxxx, SARLoss: nanxxx, loss: nanxxx, avg_reader_cost: 0.00015 s, "
                "avg_batch_cost: 0.51186 s, avg_samples: 128.0, ips: 250.06955 samples/s, eta: 2 days, 21:06:39",
                _CORPUS.format("PaddlePaddle/PaddleOCR#11054", "ppocr-rec-loss-nanxxx-to-the-end_paddleocr-11054"),
                {"loss": _NAN, "ctcloss": _NAN, "sarloss": _NAN, "step": 920, "lr": 0.000243, "ips": 250.06955},
            ),
        ),
    ),
    Notation(
        "metric_logger_averaged_stats",
        "the `Averaged stats:` line a torchvision-reference MetricLogger (DETR, DeiT, MAE and their ports) prints "
        "after each train or evaluation pass: a summary of the pass, never a training row",
        (
            NotationSample(
                "Averaged stats: loss: 3.1047 (3.7816)  loss_iou: 3.1047 (3.7816)  loss_iou_unscaled: 0.0310 (0.0378)",
                _CORPUS.format("rainyBJ/RTD-Paddle", "detr-style-metric-logger-train-and-test-rows_rtd-paddle"),
                None,
                eval=True,
            ),
            NotationSample(
                "Epoch: [19]  [138/139]  eta: 0:00:05  lr: 0.000100  loss: 1.0154 (1.1215)  loss_iou: 1.0154 (1.1215)  "
                "loss_iou_unscaled: 0.0102 (0.0112)  time: 5.1078  data: 0.0010",
                _CORPUS.format("rainyBJ/RTD-Paddle", "detr-style-metric-logger-train-and-test-rows_rtd-paddle"),
                {"loss": 1.0154, "epoch": 19, "lr": 0.0001, "loss_iou": 1.0154, "data": 0.001},
            ),
        ),
    ),
    Notation(
        "loss_named_xent",
        "a loss named `xent` (cross entropy) with no `loss` word, its perplexity `ppl` a metric beside it "
        "(OpenNMT-py); its `Validation perplexity:` / `Validation xent:` lines are evaluation",
        (
            NotationSample(
                "[2019-03-21 18:31:43,773 INFO] Step 2250/200000; acc:  31.18; ppl: 57.53; xent: 4.05; lr: 0.00028; "
                "5092/261 tok/s;   6641 sec",
                _CORPUS.format("OpenNMT/OpenNMT-py#1362", "opennmt-step-rows-with-dataset-reload-line_opennmt-py-1362"),
                {"loss": 4.05, "step": 2250, "steps_total": 200000, "acc": 31.18, "ppl": 57.53, "lr": 0.00028},
            ),
            NotationSample(
                "[2018-11-26 15:06:01,481 INFO] Step 5650/50000; acc:   0.19; ppl:   nan; xent:  nan; lr: 0.00070; "
                "1928/2310 tok/s;  21110 sec",
                _CORPUS.format("OpenNMT/OpenNMT-py#1072", "opennmt-step-rows-xent-turns-nan_opennmt-py-1072"),
                {"loss": _NAN, "step": 5650, "ppl": _NAN, "lr": 0.0007},
            ),
        ),
    ),
    Notation(
        "perplexity_without_loss",
        "a perplexity on a line with no loss key (`Step at 4 with Perplexity: nan`): an evaluation series of its own, "
        "named by its key (not by the prose before it), never the training loss",
        (
            NotationSample(
                "Step at 4 with Perplexity: nan",
                _CORPUS.format(
                    "microsoft/DeepSpeedExamples", "deepspeed-random-ltd-perplexity-nan-then-sigint_deepspeedexamples"
                ),
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "multi_word_fields",
        "`,`-separated fields of capitalised multi-word keys without a colon after a loss without one (MLX's "
        "`Learning Rate 7.000e-05, ..., Trained Tokens 9699, Peak mem 8.104 GB`): a field's key is all its words",
        (
            NotationSample(
                "Iter 25: Train loss 1.593, Learning Rate 7.000e-05, It/sec 0.999, Tokens/sec 387.697, Trained Tokens "
                "9699, Peak mem 8.104 GB",
                _CORPUS.format(
                    "ml-explore/mlx-examples#620", "mlx-lora-iter-train-loss-and-val-loss-rows_mlx-examples-620"
                ),
                {"loss": 1.593, "step": 25, "lr": 7e-05, "it_sec": 0.999, "trained_tokens": 9699, "peak_mem": 8.104},
            ),
        ),
    ),
    Notation(
        "value_before_name",
        "`,`-separated fields whose VALUE comes before its name, after the step (tinygrad's MLPerf trainers: "
        "`  3 7.34 s run, 11.8750 loss, 0.000000000002 LR, 1454.57 GB used, 236258.78 GFLOPS`; the resnet one adds "
        "`ms python`, `ms CUDA` fields before the loss)",
        (
            NotationSample(
                "    3 7.34 s run, 11.8750 loss, 0.000000000002 LR, 1454.57 GB used, 236258.78 GFLOPS",
                _CORPUS.format(
                    "tinygrad/tinygrad#13803", "tinygrad-value-before-name-loss-lr-gflops-rows_tinygrad-13803"
                ),
                {"loss": 11.875, "step": 3, "lr": 0.000000000002, "gflops": 236258.78},
            ),
            NotationSample(
                "    5 11.9375 loss, 0.000000000003 LR",
                "the same line with fewer fields (tinygrad's trainers drop or add fields between versions)",
                {"loss": 11.9375, "step": 5, "lr": 0.000000000003, "gflops": None},
            ),
        ),
        pattern=rb"^[ \t]*(?P<step>\d+)[ \t]+(?:[^,\n]*, +)*?(?P<loss>"
        + NUM
        + rb") loss(?:, +(?P<lr>"
        + NUM
        + rb") LR)?(?:(?:, [^,\n]*?)*?, +(?P<gflops>"
        + NUM
        + rb") GFLOPS)?(?![\w.])",
    ),
    Notation(
        "sentence_period_after_value",
        "prose sentences, each value closed by the sentence's period (BigDL's Scala DistriOptimizer: `Throughput is "
        "2091.8926 records/second. Loss is 1.72319. Current learning rate is 0.0759.`): a period then a space or the "
        "line's end closes the value, a period then anything else (`1.5.2`) is no number",
        (
            NotationSample(
                "2018-04-13 07:12:15 INFO  DistriOptimizer$:392 - [Epoch 42 933888/1281167][Iteration 17442][Wall "
                "Clock 26290.6678436s] Trained 3072 records in 1.468526684 seconds. Throughput is 2091.8926 "
                "records/second. Loss is 1.72319. Current learning rate is 0.07595911266872037. Current weight decay "
                "is 1.0E-4. Current momentum is 0.9.",
                _CORPUS.format(
                    "intel/ipex-llm#2494", "bigdl-distrioptimizer-loss-is-rows-inception-24-nodes_ipex-llm-2494"
                ),
                {
                    "loss": 1.72319,
                    "epoch": 42,
                    "step": 17442,
                    "throughput": 2091.8926,
                    "current_learning_rate": 0.07595911266872037,
                    "current_momentum": 0.9,
                },
            ),
        ),
    ),
    Notation(
        "loss_key_names_where",
        "a loss key followed by where in training it is, then the separator (PyTorch DDP's custom print `Loss in "
        "epoch 0  =  2.16241826098016`, `loss at step 10: 0.5`): the epoch or step is the row's",
        (
            NotationSample(
                "Loss in epoch 0  =  2.16241826098016",
                _CORPUS.format(
                    "pytorch/pytorch#14628",
                    "ddp-two-processes-unlabeled-loss-in-epoch-equals-lines-interleaved_pytorch-14628",
                ),
                {"loss": 2.16241826098016, "epoch": 0, "step": None},
            ),
        ),
    ),
    Notation(
        "loss_named_by_suffix",
        "the loss key with a suffix, `loss_<name>`, where the line names no `loss` of its own (MedicalDataAugmentation"
        "Tool's `train iter: 0 loss_net: 0.9443 loss_scale: 32768.0000 norm: ...`): the first such key is the "
        "training loss, as the first of two qualified losses is (`wide_loss: 0.44, deep_loss: 0.45`); a line with "
        "a bare `loss` reads that one (mmdet's parts `loss_cls: ...` before its `loss: ...`). `loss_scale` (the "
        "dynamic loss scale) and a loss's weight or factor are settings, no loss, and `loss_val` / `loss_test` an "
        "evaluation's; the value is a decimal or a NaN / infinity in any spelling (a config's `loss_type: 2` is none)",
        (
            NotationSample(
                "02:29:53: train iter: 0 loss_net: 0.9443 loss_scale: 32768.0000 norm: 21.8862 norm_average: 1.0100 "
                "seconds: 445.463",
                _CORPUS.format(
                    "christianpayer/MedicalDataAugmentationTool-VerSe#31",
                    "train-iter-loss-net-nan-from-second-print-loss-scale_verse-31",
                ),
                {"loss": 0.9443, "loss_scale": 32768.0, "norm": 21.8862},
            ),
            NotationSample(
                "02:31:56: train iter: 100 loss_net: nan loss_scale: 785.4200 norm: nan norm_average: 0.8729 "
                "seconds: 122.871",
                "the same log, its next print",
                {"loss": _NAN, "loss_scale": 785.42},
            ),
        ),
        # after a logger's `train/` namespace, or a head's name and a dot (mmseg's `decode.loss_seg`)
        pattern=rb"(?i)(?:(?<![a-z0-9_.\-/])|(?<=(?<![a-z0-9_.\-/])train/)|(?<=[a-z]\.))"
        rb"loss_(?!(?:scale|scaler|weight|weights|coef|coeff|factor|ratio|lambda|"
        rb"val|valid|validation|eval|evaluation|test|testing|dev)(?![a-z0-9]))[a-z0-9]+(?:_[a-z0-9]+)*[ \t]*[:=][ \t]*"
        rb"(?P<loss>[-+]?(?:\d\.#(?:QNAN|SNAN|IND|INF)|\d*\.\d+(?:e[-+]?\d+)?|nan|infinity|inf))"
        rb"(?![\w.])",
    ),
    Notation(
        "column_table",
        "a table's header line of names, one a loss key, over keyless rows of numbers (Ultralytics YOLOv5/v8/v11: "
        "`Epoch GPU_mem box_loss cls_loss dfl_loss Instances Size`, then `20/300 16.1G 1.477 ...: 100%|`, the epoch "
        "bar's last draw): the first loss column is the loss, the other loss columns its metrics, `20/300` the epoch "
        "of its total; under a `Class ... mAP` header the `all` line is an evaluation (core.logs.rows.columns)",
        (
            NotationSample(
                "     20/300      16.1G      1.477     0.7796      1.028        120        800: 100%|██████████| "
                "805/805 [01:39<00:00,  8.11it/s]",
                _CORPUS.format("ultralytics/ultralytics#1654", _YOLO_1654),
                {"loss": 1.477, "cls_loss": 0.7796, "dfl_loss": 1.028, "epoch": 20, "epochs_total": 300},
                header=_YOLO_HEADER,
            ),
            NotationSample(
                "      21/55      9.95G    -0.2338       5.07      2.977         12        640: 100%|██████████| "
                "787/787 [09:07<00:00,  1.44it/s]",
                _CORPUS.format("ultralytics/ultralytics#21765", _YOLO_21765),
                {"loss": -0.2338, "cls_loss": 5.07, "dfl_loss": 2.977, "epoch": 21, "epochs_total": 55},
                header=_YOLO_HEADER,
            ),
            NotationSample(
                "                   all       3225      39675       0.84      0.597      0.677      0.366",
                _CORPUS.format("ultralytics/ultralytics#1654", _YOLO_1654),
                None,
                eval=True,
                header="                 Class     Images  Instances      Box(P          R      mAP50  mAP50-95): "
                "100%|██████████| 101/101 [00:13<00:00,  7.70it/s]",
            ),
            NotationSample(_YOLO_HEADER, _CORPUS.format("ultralytics/ultralytics#1654", _YOLO_1654), None),
        ),
    ),
    Notation(
        "pipe_cell_count_of_batches",
        "the step as a pipe cell `N/ M batches` after the epoch's (PyTorch's word_language_model example: `| epoch   "
        "1 |   200/ 2983 batches | lr 20.0000 | ... | loss   nan |`): a step row, not an epoch's summary; the "
        "`| end of epoch 1 | ... | valid loss` box is its evaluation",
        (
            NotationSample(
                "| epoch   1 |   200/ 2983 batches | lr 20.0000 | ms/batch 11.61 | loss   nan | ppl      nan",
                _WLM,
                {"loss": _NAN, "epoch": 1, "step": 200, "steps_total": 2983, "lr": 20.0, "ppl": _NAN},
            ),
            NotationSample(
                "| end of epoch   1 | time: 35.58s | valid loss   nan | valid ppl      nan", _WLM, None, eval=True
            ),
        ),
    ),
)
