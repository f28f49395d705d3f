"""Every notation the reader knows, one entry each: real lines with their source, the reading they must give,
and, for a notation the general grammar does not read, its pattern (issue 30 item 5: "a new notation is one
entry").

The general reader (core.logs.rows.general) reads any line with a loss key and a number in the notations
below; an entry without a `pattern` says so with its samples (and tests hold it). A notation it cannot read
gets a `pattern`: a regex whose named groups are the columns it gives (`loss` required; the ROW_FIELDS names,
or any metric name), tried on a line the general grammar gives no reading (compiled once; never on a line
it reads); the line's other `key: number` pairs are then read as on any loss line. A pattern matches digits
by class (`\\d`, `NUM`), never by value: every line of one shape must read alike (the bulk path reuses one
parse for all of them). `suite`: a suite's own loss line, listed by `core.logs.rows.formats.FORMATS`.

tests/test_grammar_entries.py reads every sample through the line-by-line and the bulk paths and checks the
reading: `expect` maps a column to its value (NaN: a NaN; None: the line does not give it); `expect=None`
says the line gives no training row; `eval=True` says it is an evaluation (or summary) line.
"""

from __future__ import annotations

from core.logs.rows.notation import CORPUS, Notation, NotationSample
from core.logs.rows.notations_blocks import BLOCKS
from core.logs.rows.notations_more import MORE
from core.logs.rows.notations_rows12 import ROWS12
from core.logs.rows.notations_shapes import SHAPES
from core.logs.rows.notations_spellings import SPELLINGS
from core.logs.rows.notations_trainers import TRAINERS
from core.logs.tokens.lexicon import NUM

__all__ = ["NOTATIONS", "Notation", "NotationSample"]

_NAN = float("nan")
_CORPUS = CORPUS  # a corpus entry as a sample's source


def _suite(epoch: float | None, step: float | None, epochs: float | None, steps: float | None, loss: float) -> dict:
    return {"epoch": epoch, "step": step, "epochs_total": epochs, "steps_total": steps, "loss": loss}


NOTATIONS: tuple[Notation, ...] = (
    # ------------------------------------------------------------------ the suites' own loss lines (FORMATS)
    Notation(
        "lossmonitor",
        "MindSpore's LossMonitor: `epoch: E step: S, loss is V`",
        (
            NotationSample(
                "epoch: 1 step: 2, loss is 2.3139476776123047",
                "MindSpore 2.10 LossMonitor, shared/fixtures/real_msrun_logs/dp8_cpu_ok/worker_0.log",
                _suite(1, 2, None, None, 2.3139476776123047),
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindspore_print",
        "the LossMonitor line of MindSpore's tutorials",
        (
            NotationSample(
                "epoch: 0 step: 10, loss is 2.2889402",
                "MindSpore docs, msrun operator-parallel tutorial (tests/fixtures/real_logs, corpus)",
                _suite(0, 10, None, None, 2.2889402),
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindformers_0x",
        "MindFormers 0.x behind `[INFO]`: bracketed `Epoch:[ e/ E]`, paired `loss:[cur/avg]`",
        (
            NotationSample(
                "[INFO] 2023-07-11 10:47:36,427 [/root/workspace/code/mindformers/scripts/"
                "mf_parallel1/mindformers/core/callback/callback.py:269] print_output_info: Epoch:[  1/  1], "
                "step:[    4/  125], loss:[2.244/2.244], time:507844.205 ms, lr:[0.], overflow cond: True, "
                "loss_scale: 268435460.0",
                "a public GLM-6B fine-tuning write-up (MindFormers 0.x, July 2023, output/log/rank_0/info.log)",
                _suite(1, 4, 1, 125, 2.244),
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindformers_1x",
        "MindFormers 1.x: python logging, `{ Epoch:[ e/ E], step:[ s/ S], loss: v, ...`",
        (
            NotationSample(
                "2025-04-07 15:34:27,308 - [mindformers/core/callback/callback.py:529] - INFO - "
                "{ Epoch:[  1/  2], step:[    1/   19], loss: 10.649, per_step_time: 103328ms, lr: 0.0, "
                "overflow cond: False, loss_scale: 1.0, global_norm: [1 31049], train_throughput_per_npu: 2.896",
                "MindFormers docs, high availability (msrun worker log, legacy trainer)",
                _suite(1, 1, 2, 19, 10.649),
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindformers_2x",
        "MindFormers 2.x: `loss:[cur/avg]` behind `[INFO]` and `print_output_info: {`",
        (
            NotationSample(
                "[INFO] 2026-11-23 19:14:00,332 [mindformers/core/callback/callback.py:747] "
                "print_output_info: { Epoch:[  1/  4], step:[    1/   16], loss:[5.547178/5.547178], "
                "per_step_time: 4503ms, lr: 0.003, overflow cond: False, loss_scale: 1.0, "
                "global_norm: [0.73903346], train_throughput_per_npu: 0.000T",
                "MindFormers 2.1.0 run_mindformer.py on this machine's CPU (output/log/rank_0/info.log)",
                {**_suite(1, 1, 4, 16, 5.547178), "loss_avg": 5.547178, "step_time_ms": 4503, "lr": 0.003},
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindformers_docs",
        "MindFormers' MFLossMonitor as its docs print it",
        (
            NotationSample(
                "- INFO - { Epoch:[  1/  2], step:[    1/ 6500], loss: 0.000, per_step_time: "
                "166756ms, lr: 0.0, overflow cond: False, loss_scale: 1.0, global_norm: [44.313248], "
                "train_throughput_per_npu: 2.849T",
                "MindFormers docs, 'skip data by global norm' example (MFLossMonitor, 2025)",
                {**_suite(1, 1, 2, 6500, 0.0), "global_norm": 44.313248},
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindcv",
        "MindCV: `[date] logger INFO - Epoch: [e/E], batch: [b/B], loss: v`",
        (
            NotationSample(
                "[2026-11-23 19:07:06] mindcv.utils.callbacks INFO - Epoch: [1/3], batch: [1/8], "
                "loss: 1.533790, lr: 0.010000, time: 20.169336s",
                "MindCV 0.3.0 train.py (resnet18) on this machine's CPU",
                {**_suite(1, 1, 3, 8, 1.533790), "step_time_ms": 20169.336},
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindocr",
        "MindOCR: lower-case `epoch: [e/E] step: [s/S], loss: v`",
        (
            NotationSample(
                "[2024-03-04 12:02:42] mindocr.utils.callbacks INFO - epoch: [12/20] step: [700/4468], "
                "loss: 19.327375, lr: 0.000793, per step time: 223.489 ms, fps per card: 4.47 img/s",
                "MindOCR issue 670 (github.com/mindspore-lab/mindocr/issues/670)",
                _suite(12, 700, 20, 4468, 19.327375),
            ),
        ),
        suite=True,
    ),
    Notation(
        "mindyolo",
        "MindYOLO: `Epoch e/E, Step s/S` (the step restarts every epoch: the row carries the global step)",
        (
            NotationSample(
                "2024-09-16 17:20:40,329 [INFO] Epoch 146/500, Step 52/422, imgsize (640, 640), "
                "loss: 3.8198, lbox: 0.7182, lcls: 1.4714, dfl: 1.6302, cur_lr: 0.007129000034183264",
                "a public ShipWise README (MindYOLO YOLOv8 training on MindSpore 2.2.14)",
                _suite(146, 145 * 422 + 52, 500, 422, 3.8198),
            ),
        ),
        suite=True,
    ),
    Notation(
        "megatron",
        "Megatron-LM / MindSpeed-LLM: pipe-separated `key: value` with a multi-word `lm loss`",
        (
            NotationSample(
                " iteration      122/  250000 | consumed samples:       124928 | elapsed time per "
                "iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: "
                "2.504220E+00 | loss scale: 1.0 | grad norm: 0.231 | number of skipped iterations:   0 |",
                "Megatron-LM training log, epfLLM/Megatron-LLM issue 11 (MindSpeed-LLM prints the same line)",
                _suite(None, 122, None, 250000, 2.504220),
            ),
        ),
        suite=True,
    ),
    Notation(
        "libcity",
        "a bracketed value after a multi-word key: `Average Train Loss: [7.030]`",
        (
            NotationSample(
                "2023-10-30 09:39:35,587 - INFO - Epoch: [  1/ 30], Average Train Loss: [7.030], Accuracy: [0.125]",
                "M-LibCity DeepMove training log (MindSpore port of LibCity)",
                _suite(1, None, 30, None, 7.030),
            ),
        ),
        suite=True,
    ),
    Notation(
        "pytorch_style",
        "the PyTorch tutorial's `loss: v  [  s/S]`",
        (
            NotationSample(
                "loss: 2.302088  [  0/938]",
                "MindSpore docs quickstart (MNIST), custom training loop print",
                _suite(None, 0, None, 938, 2.302088),
            ),
        ),
        suite=True,
    ),
    Notation(
        "generic",
        "`global_step: s, loss: v`",
        (
            NotationSample(
                "global_step: 194, loss: 1.997",
                "older MindSpore model-zoo prints (DESIGN.md)",
                _suite(None, 194, None, None, 1.997),
            ),
        ),
        suite=True,
    ),
    # ------------------------------------------------------------------ notations of issue 30
    Notation(
        "space_pairs",
        "`key value` without a separator, between pipes (old Megatron) or as words, NaN spelt any way",
        (
            NotationSample(
                " iteration      400/    3000 | elapsed time per iteration (ms): 12879.0 | learning rate 6.300E-06 | "
                "lm loss 6.758929E+00 | loss scale 64.0 |",
                "THUDM/Chinese-Transformer-XL#7 (tests/fixtures/real_logs/megatron-old-format-space-pairs-nan_"
                "chinese-transformer-xl-7)",
                {"loss": 6.758929, "step": 400, "steps_total": 3000, "lr": 6.3e-06, "loss_scale": 64.0},
            ),
            NotationSample(
                " iteration      700/    3000 | elapsed time per iteration (ms): 12932.3 | learning rate 9.773E-06 | "
                "lm loss NAN | loss scale 4.0 |",
                "THUDM/Chinese-Transformer-XL#7 (tests/fixtures/real_logs/megatron-old-format-space-pairs-nan_"
                "chinese-transformer-xl-7)",
                {"loss": _NAN, "step": 700},
            ),
            NotationSample(
                "2023-01-30 18:47:07,107 DEBUG TRAIN Batch 4/203700 loss 12.646465 loss_att 10.921429 loss_ctc "
                "16.671551 lr 0.00032621 rank 0",
                "wenet-e2e/wenet#941",
                {"loss": 12.646465, "loss_att": 10.921429, "loss_ctc": 16.671551, "lr": 0.00032621},
            ),
            NotationSample("progress 10/2754 loss 0.666556 acc 0.82", "quoted in issue 30", {"loss": 0.666556}),
        ),
    ),
    Notation(
        "prose_multiword_key",
        "a multi-word key in prose on a training line: `completed with avg loss: v`",
        (
            NotationSample(
                "Epoch 1 completed with avg loss: 2.4179, learning rate: 0.003",
                "quoted in issue 30",
                {"loss": 2.4179, "lr": 0.003},
            ),
        ),
    ),
    Notation(
        "dict_lines",
        "python dicts (HF Trainer, MindNLP): a training dict is a row; eval dicts and the final summary are not",
        (
            NotationSample(
                "{'loss': 0.0117, 'learning_rate': 4.5e-05, 'epoch': 1.0}",
                "mindspore-lab/mindnlp llm/finetune/blenderbot_small/mindNLPCopaLog.txt",
                {"loss": 0.0117, "lr": 4.5e-05},
            ),
            NotationSample(
                "{'train_runtime': 11591.6409, 'train_samples_per_second': 6.211, 'train_steps_per_second': 1.553, "
                "'train_loss': 0.002952050690849622, 'epoch': 10.0}",
                "mindspore-lab/mindnlp llm/finetune/blenderbot_small/mindNLPCopaLog.txt",
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "cross_validation",
        "WeNet's `CV` lines are evaluation",
        (
            NotationSample(
                "2023-01-30 18:49:55,773 DEBUG CV Batch 4/0 loss 28.517015 loss_att 24.142754 loss_ctc 38.723625 "
                "history loss 27.957858 rank 2",
                "wenet-e2e/wenet#941",
                None,
                eval=True,
            ),
            NotationSample(
                "2021-12-05 10:00:32,073 INFO Epoch 74 CV info cv_loss 7.627509962902044",
                "wenet-e2e/wenet#846",
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "results_summary",
        "an epoch's or a run's results line (ESPnet2's `7epoch results: [train] ... loss=... [valid] loss=...`): a "
        "summary, never a training row",
        (
            NotationSample(
                "[PC] 2020-11-11 16:41:04,070 (trainer:243) INFO: 7epoch results: [train] iter_time=0.001, "
                "forward_time=0.005, loss=1.613, backward_time=0.005, optim_step_time=1.986e-04, lr_0=0.100, "
                "train_time=0.014, time=1 minute and 44.19 seconds, total_count=52549, [valid] loss=1.854, "
                "time=3.12 seconds, total_count=1680, [att_plot] time=0.14 seconds, total_count=0",
                _CORPUS.format("espnet/espnet#2674", "espnet2-trainer-rows-and-epoch-results_espnet-2674"),
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "chinese_is",
        "`为` / `是` (is) before the loss key's separator, which may be a full-width colon",
        (
            NotationSample(
                "2023-10-19 13:23:43,165 - INFO - valid loss 为: 3.3792779445648193",
                _CORPUS.format(
                    "mindspore-lab/models @ 8e33ffe8, M-LibCity GSNet log",
                    "valid-loss-only-no-train-loss_m-libcity-gsnet",
                ),
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "semicolon_fields",
        "`Key value` fields separated by `;` as by `|`, a unit after a value (`Mem 29072.79MB`, `time 561.94ms`)",
        (
            NotationSample(
                "Epoch [0/5]; Iter [0/9450]; Loss 10.08; LR 1.00e-06; Iter time 3.72; ETA 9:46:15; Mem 29072.79MB",
                _CORPUS.format("AIGeeksGroup/3D-R1#16", "loss-not-finite-skips-then-terminates_3d-r1-16"),
                {"loss": 10.08, "epoch": 0, "step": 0, "steps_total": 9450, "lr": 1e-06, "iter_time": 3.72},
            ),
            NotationSample(
                "iter 1631: loss 4.0863, time 561.94ms",
                _CORPUS.format("karpathy/nanoGPT#110", "nanogpt-early-format-iter-loss-time-8-gpus_nanogpt-110"),
                {"loss": 4.0863, "step": 1631, "step_time_ms": 561.94},
            ),
        ),
    ),
    Notation(
        "nan_dot_zero",
        "NeMo's Lightning bar prints a NaN loss as `nan.0`",
        (
            NotationSample(
                "Epoch 0: :   3%|▎         | 9000/301500 [1:42:42<55:37:46, v_num=0-56, reduced_train_loss=nan.0, "
                "global_step=9e+3, consumed_samples=6.3e+5, train_step_timing in s=0.615, val_loss=7.040]",
                _CORPUS.format("NVIDIA-NeMo/Speech#7957", "nemo-lightning-bar-reduced-train-loss-nan-dot-0_nemo-7957"),
                {"loss": _NAN, "epoch": 0, "val_loss": 7.04},
            ),
        ),
    ),
    Notation(
        "bare_loss_over_parts",
        "a total `loss=` after its parts (`l1_loss=`, `mse_loss=`, ...): the bare key is the training loss",
        (
            NotationSample(
                "2021-10-02 20:13:30,249 (trainer:653) INFO: 4epoch:train:201-225batch: iter_time=1.131e-04, "
                "forward_time=1.499, l1_loss=0.252, mse_loss=0.070, bce_loss=0.021, attn_loss=0.002, loss=0.345, "
                "backward_time=1.773, optim_step_time=0.005, optim0_lr0=1.000e-03, train_time=3.287",
                _CORPUS.format(
                    "espnet/espnet#3639 (its `[auc-dnn3] ` host prefix left off)",
                    "espnet2-tts-rows-host-prefix_espnet-3639",
                ),
                {"loss": 0.345, "l1_loss": 0.252, "mse_loss": 0.07},
            ),
        ),
    ),
    Notation(
        "total_over_parts",
        "a total loss (`total_loss`, `total-loss`, `Tot Loss`, `overall loss`) beside its parts, before or after "
        "them: the total is the training loss, the parts are columns",
        (
            NotationSample(
                "iter 144: image-id:0254212, time:1.722(sec), regular_loss: 0.248765, total-loss 0.5882(0.0360, "
                "0.5233, 0.000000, 0.0289, 0.0000), instances: 3, batch:(16|85, 0|11, 0|0)",
                _CORPUS.format(
                    "CharlesShang/FastMaskRCNN#172",
                    "fastmaskrcnn-iter-regular-loss-total-loss-hyphen-then-markdown-bold-killed_fastmaskrcnn-172",
                ),
                {"loss": 0.5882, "regular_loss": 0.248765},
            ),
            NotationSample(
                "Epoch 1 train Loc Loss: 0.0044 Cls Loss: 0.0045 Tot Loss: 0.0045 Accu :0.0010",
                _CORPUS.format(
                    "dxli94/WLASL#74",
                    "wlasl-epoch-train-loc-cls-tot-loss-accu-space-colon-and-validation-lines_wlasl-74",
                ),
                {"loss": 0.0045, "epoch": 1, "cls_loss": 0.0045, "accu": 0.001},
            ),
            NotationSample(
                "VALIDATION: test Loc Loss: 0.0043 Cls Loss: 0.0043 Tot Loss: 0.0043 Accu :0.0014",
                _CORPUS.format(
                    "dxli94/WLASL#74",
                    "wlasl-epoch-train-loc-cls-tot-loss-accu-space-colon-and-validation-lines_wlasl-74",
                ),
                None,
                eval=True,
            ),
        ),
    ),
    Notation(
        "joined_keys",
        "metric keys whose words are joined by `/`, `-` or `@` (trlx's `losses/policy_loss`, maxtext's "
        "`TFLOP/s/device`)",
        (
            NotationSample(
                "[losses/total_loss: 1.15 | losses/policy_loss: 1.15 | losses/value_loss: 0.00]: 100%|██████████| "
                "128/128 [10:23<00:00,  4.87s/it]",
                _CORPUS.format(
                    "LAION-AI/Open-Assistant#2140", "trlx-ppo-bar-bracketed-losses-then-wandb_open-assistant-2140"
                ),
                {"loss": 1.15, "losses_policy_loss": 1.15, "losses_value_loss": 0.0},
            ),
            NotationSample(
                "I0811 21:54:55.531340 138304841739136 metric_logger.py:226] completed step: 1, seconds: 0.631, "
                "TFLOP/s/device: 5688.282, Tokens/s/device: 311629.521, total_weights: 1572864, loss: 12.979, "
                "lm_loss: 12.979, perplexity: 433358.281",
                _CORPUS.format(
                    "AI-Hypercomputer/maxtext#4847", "maxtext-absl-completed-step-rows-profiler-lines_maxtext-4847"
                ),
                {"loss": 12.979, "step": 1, "tflop_s_device": 5688.282, "tokens_s_device": 311629.521},
            ),
        ),
    ),
    Notation(
        "mentions_only",
        "lines that only mention a loss give no row",
        (
            NotationSample("Init loss scale: 65536.0", "mindspore-lab/mindone#465", None),
            NotationSample(
                " iteration     5427/ 5000 | loss scale: 1.0 | grad norm: nan |",
                "bigscience-workshop/Megatron-DeepSpeed#396",
                None,
            ),
        ),
    ),
    Notation(
        "equals_pairs",
        "`key=value` pairs after a progress prefix (fairseq's simple log), a running average in brackets after "
        "the value, and its validation lines",
        (
            NotationSample(
                "| epoch 001:    450 / 1891 loss=11.521, nll_loss=10.881, ppl=1886.05, wps=52922, ups=0.5, "
                "wpb=104928, bsz=5325, num_updates=445, lr=8.90889e-05, gnorm=1.543, clip=0%, oom=0, "
                "loss_scale=2.000, wall=882, train_wall=756",
                "facebookresearch/fairseq#940",
                {"loss": 11.521, "nll_loss": 10.881, "epoch": 1, "lr": 8.90889e-05, "loss_scale": 2.0, "wps": 52922},
            ),
            NotationSample(
                "| epoch 005  1000 / 8223 loss=2.17 (3.20), wps=959, wpb=897, bsz=32, lr=0.001, clip=100%, "
                "gnorm=2.7374",
                "facebookresearch/fairseq#301",
                {"loss": 2.17, "epoch": 5, "lr": 0.001, "gnorm": 2.7374},
            ),
            NotationSample(
                "| epoch 001 | valid on 'valid' subset | valid_loss 8.11425 | valid_nll_loss 6.8834 | valid_ppl "
                "118.06 | num_updates 600",
                "facebookresearch/fairseq#940",
                None,
                eval=True,
            ),
        ),
    ),
    # ------------------------------------------------------------------ notations read by their pattern
    Notation(
        "json_string_values",
        'JSON lines whose values are strings (fairseq `--log-format json`: `"loss": "3.180"`)',
        (
            NotationSample(
                '{"epoch": 10, "loss": "3.180", "nll_loss": "1.417", "ppl": "2.67", "wps": 1671182, "ups": "2.7", '
                '"wpb": 617154, "bsz": 16625, "num_updates": 21497, "lr": 0.00030195283218121974, "gnorm": "0.291", '
                '"clip": "100%", "oom": 0.02712006326464158, "loss_scale": "8.000", "wall": 8285}',
                "facebookresearch/fairseq#233",
                {
                    "loss": 3.18,
                    "nll_loss": 1.417,
                    "epoch": 10,
                    "step": 21497,
                    "lr": 0.00030195283218121974,
                    "global_norm": 0.291,
                    "loss_scale": 8.0,
                    "ppl": 2.67,  # the other string values are numbers too (the general reader's `"key": "2.67"`)
                    "ups": 2.7,
                },
            ),
            NotationSample(
                '{"epoch": 25, "loss": "3.097", "nll_loss": "1.328", "ppl": "2.51", "wps": 1667443, "ups": "2.7", '
                '"wpb": 617156, "bsz": 16626, "num_updates": 53749, "lr": 0.00019096019143386865, "gnorm": "0.194", '
                '"clip": "100%", "oom": 0.02612141621239465, "loss_scale": "4.000", "wall": 20721}',
                _CORPUS.format(
                    "facebookresearch/fairseq#233",
                    "fairseq-2018-json-epoch-train-and-valid-lines-string-losses_fairseq-233",
                ),
                {"loss": 3.097, "step": 53749, "global_norm": 0.194, "ppl": 2.51, "ups": 2.7, "wps": 1667443},
            ),
        ),
        pattern=(
            rb'^\{"epoch": \d+, "loss": "(?P<loss>' + NUM + rb')", "nll_loss": "(?P<nll_loss>' + NUM + rb')"'
            rb'.*?"num_updates": "?(?P<step>\d+)"?, "lr": "?(?P<lr>' + NUM + rb')"?, '
            rb'"gnorm": "(?P<global_norm>' + NUM + rb')".*?"loss_scale": "(?P<loss_scale>' + NUM + rb')"'
        ),
    ),
    *MORE,  # core.logs.rows.notations_more
    *TRAINERS,  # core.logs.rows.notations_trainers
    *SPELLINGS,  # core.logs.rows.notations_spellings
    *SHAPES,  # core.logs.rows.notations_shapes
    *BLOCKS,  # core.logs.rows.notations_blocks
    *ROWS12,  # core.logs.rows.notations_rows12
)
