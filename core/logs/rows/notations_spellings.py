"""Notations of a key's other spellings and a table's unnamed column, one entry each (as core.logs.rows.notations,
which reads these after notations_trainers'; split off to keep modules short): a loss key in the plural (`losses:
X`, one value) and a CSV table whose first column has no name (pandas' `DataFrame.to_csv` of a Keras History: the
row index, no metric) and its `time` column (a metric of its own), each with real samples.
"""

from __future__ import annotations

from core.logs.rows.notation import CORPUS, Notation, NotationSample
from core.logs.tokens.lexicon import NUM

__all__ = ["SPELLINGS"]

_NAN = float("nan")

_BILSTM_CRF = (
    "https://github.com/Ascend/modelzoo/blob/7f2ad79749cfc13b9954a0938af47daab35a92af/built-in/TensorFlow/Research/"
    "nlp/BiLSTM_CRF_for_TensorFlow/loss%2Bperf_npu.txt"
)
_RESTS = "https://github.com/ShaurGaur/ResTS/blob/0114ca2c54e97d3bd5e32a1346933e7916475659/ResTS15epochs-full.csv"
_RESTS_HEADER = (
    ",loss,out1_accuracy,out1_loss,out2_accuracy,out2_loss,val_loss,val_out1_accuracy,val_out1_loss,"
    "val_out2_accuracy,val_out2_loss"
)
_LENET = (
    "https://github.com/Ascend/modelzoo/blob/674cec054725b0b3fa21a9378cf71c334e28d721/built-in/TensorFlow/Official/"
    "nlp/LeNet_ID0127_for_TensorFlow/loss%2Bperf_npu.txt"
)
_PREDNET = "https://github.com/IcarusWizard/prednet-paddle/blob/2d235a5f10932ea3e5fd36080b77dfeda6a0fc29/logs/train.log"
_CSDN = "https://github.com/nengdong96/CSDN/issues/6"
_HAKE = "https://github.com/DirtyHarryLYL/HAKE-Action-Torch/issues/34"
_SHUFFLENET = (
    "https://github.com/Ascend/modelzoo/blob/543f0d94c2f8a8f8ba86494b6b159ea7239526c0/built-in/TensorFlow/Benchmark/"
    "cv/image_classification/Shufflenet_ID0645_for_TensorFlow/tiny_imagenet_logs/training_info.txt"
)

_MAR = "https://github.com/KovenYu/MAR/issues/30"

_HIFI_TSE = "https://github.com/HailongDing/HiFi_TSE/blob/20f5a4266d6b1486f00ffed092470a666c27499f/doc/train.log"

SPELLINGS: tuple[Notation, ...] = (
    Notation(
        "loss_named_by_suffix_in_a_pipe_field",
        "the loss key with a suffix, `loss_<name>`, then a space and its value as a whole field between pipes, no "
        "separator (HiFi-TSE's `step  705000 | phase 2 | loss_G -2.6541 | sep -2.7236 | ... | lr 1.32e-04 | rss "
        "1283MB | 1.52s`): the training loss, as loss_named_by_suffix's `loss_<name>: X` is (the first such field; "
        "`loss_scale` and a loss's weight are settings), the table's other `key value` fields its metrics",
        (
            NotationSample(
                "step  705000 | phase 2 | loss_G -2.6541 | sep -2.7236 | phase_l 0.0944 | amp_l 0.0223 | rms 1.06 | "
                "lr 1.32e-04 | rss 1283MB | 1.52s",
                _HIFI_TSE,
                {"loss": -2.6541, "step": 705000, "sep": -2.7236, "phase_l": 0.0944, "lr": 1.32e-04},
            ),
            NotationSample(
                "step 1499000 | phase 2 | loss_G -6.5031 | sep -6.5696 | phase_l 0.1056 | amp_l 0.0137 | rms 0.90 | "
                "lr 1.00e-05 | rss 1506MB | 0.25s",
                _HIFI_TSE,
                {"loss": -6.5031, "step": 1499000, "rms": 0.9},
            ),
        ),
        pattern=rb"(?i)(?<=\|)[ \t]*loss_(?!(?:scale|scaler|weight|weights|coef|coeff|factor|ratio|lambda|"
        rb"val|valid|validation|eval|evaluation|test|testing|dev)(?![a-z0-9]))[a-z0-9]+(?:_[a-z0-9]+)*[ \t]+"
        rb"(?P<loss>[-+]?(?:\d\.#(?:QNAN|SNAN|IND|INF)|\d*\.\d+(?:e[-+]?\d+)?|nan|infinity|inf))[ \t]*(?=\||$)",
    ),
    Notation(
        "loss_total_by_suffix_spaced",
        "the total loss named by a suffix, `loss_total` (or `loss_sum`), then spaces and its value, no separator, "
        "beside its parts named the same way (MAR's `Iter: [600/1348]   Freq 248.2   loss_source 2.152   ...   "
        "loss_total 116.117   [2019-10-31 09:07:41]`): the total is the training loss, as a total outranks its "
        "parts (core.logs.rows.keys.row_loss_first); the value a decimal or a NaN / infinity (a bare integer is a "
        "count); a separated `loss_<name>: X` is loss_named_by_suffix's",
        (
            NotationSample(
                "  Iter: [700/1348]   Freq 248.9   loss_source 2.127   loss_st 0.782   loss_ml 3387.675   "
                "loss_target 0.000   loss_total 114.824   [2019-10-31 09:08:53]",
                _MAR,
                {
                    "loss": 114.824,
                    "step": 700,
                    "steps_total": 1348,
                    "freq": 248.9,
                    "loss_source": 2.127,
                    "loss_ml": 3387.675,
                },
            ),
            NotationSample(
                "  Iter: [1200/1348]   Freq 252.7   loss_source nan   loss_st nan   loss_ml nan   loss_target 0.000   "
                "loss_total nan   [2019-10-31 09:14:49]",
                _MAR,
                {"loss": _NAN, "step": 1200},
            ),
            NotationSample(  # the epoch's results under the split's name in bold: a summary (core.logs.rows.series)
                "  **Train**  loss_source nan   loss_st nan   loss_ml nan   loss_target 0.000   loss_total nan",
                _MAR,
                None,
                eval=True,
            ),
        ),
        pattern=rb"(?i)(?<![a-z0-9_./\-])loss_(?:total|sum)[ \t]+"
        rb"(?P<loss>[-+]?(?:\d\.#(?:QNAN|SNAN|IND|INF)|\d*\.\d+(?:e[-+]?\d+)?|nan|infinity|inf))(?![\w.])",
    ),
    Notation(
        "loss_key_in_the_plural",
        "the loss key in the plural before one value, `losses: X` (a TF1 custom loop's `step: N, cost time: Ts, "
        "losses: X`): the training loss, as `loss: X` is; `losses` before a namespace (`losses/policy_loss: X`) or "
        "a list is no value of its own",
        (
            NotationSample("step: 1, cost time: 164.408s, losses: 121.096", _BILSTM_CRF, {"loss": 121.096, "step": 1}),
            NotationSample("step: 5, cost time: 79.854s, losses: 102.702", _BILSTM_CRF, {"loss": 102.702, "step": 5}),
        ),
        pattern=rb"(?i)(?<![a-z0-9_./\-])losses[ \t]*[:=][ \t]*(?P<loss>" + NUM + rb")(?![\w.])",
    ),
    Notation(
        "csv_table_with_an_unnamed_index",
        "a CSV table whose first header cell is empty (pandas' `pd.DataFrame(history.history).to_csv(path)` of a "
        "Keras History: the unnamed row index, then `loss,...,val_loss,...`): the index column is no metric, the "
        "others read as any CSV table's (core.logs.rows.columns: the first loss column is the loss)",
        (
            NotationSample(
                "0,0.7506051659584045,0.8343185782432556,0.7235159277915955,0.8005656599998474,0.7706614136695862,"
                "2.675212860107422,0.4256424009799957,2.332689046859741,0.33530306816101074,2.901031255722046",
                _RESTS,
                {"loss": 0.7506051659584045, "out1_loss": 0.7235159277915955, "val_loss": 2.675212860107422},
                header=_RESTS_HEADER,
            ),
        ),
    ),
    Notation(
        "csv_table_time_column",
        "a CSV table's `time` column (`epoch,train_loss,val_loss,train_accuracy,val_accuracy,time`): a metric of its "
        "own, `time_value` (the row's `time` is the line's wall clock; no unit says whether it is the row's seconds "
        "or the seconds so far, so no step time either: core.logs.rows.columns)",
        (
            NotationSample(
                "1,4.821,4.263,0.055,0.093,226.068",
                _SHUFFLENET,
                {"loss": 4.821, "epoch": 1, "val_loss": 4.263, "val_accuracy": 0.093, "time_value": 226.068},
                header="epoch,train_loss,val_loss,train_accuracy,val_accuracy,time",
            ),
        ),
    ),
    Notation(
        "per_step_key_joined_by_slash",
        "a key named like a counter after a `/` (a quantity per step, Jacinle's `time/step=1.016501`) holding a "
        "decimal: a metric of its own name (`time_step`), never the row's step; a whole number stays a counter "
        "(core.logs.rows.keys.no_counter)",
        (
            NotationSample(
                "Epoch 15 acc/qa=1.000000 loss=0.046158 loss/qa=0.046158 time/data=0.008719 time/step=1.016501: "
                "100%|##############################| 1006/1006 [18:08<00:00,  1.08s/it]",
                "https://github.com/vacancy/NSCL-PyTorch-Release/issues/23",
                {"loss": 0.046158, "epoch": 15, "time_data": 0.008719, "time_step": 1.016501},
            ),
        ),
    ),
    Notation(
        "fields_parted_by_dashes",
        "fields parted by a run of dashes, `key : value` each (a TF1 ModelZoo loop's `epoch : 0----loss : X----step/"
        "sec : Y`): every field read, the one after the dashes too (`step_sec`); a decimal glued to a date (a "
        "warning glued to the row) is still the field's value, a whole number so glued a date's year "
        "(core.logs.rows.keys.not_a_metric)",
        (
            NotationSample(
                "epoch : 0----loss : 2.623750925064087----step/sec : 7.003568410873413",
                _LENET,
                {"loss": 2.623750925064087, "epoch": 0, "step_sec": 7.003568410873413},
            ),
            NotationSample(
                "epoch : 4----loss : 0.01959233358502388----step/sec : 0.0061845779418945312021-03-17 "
                "17:56:52.021223: W tf_adapter/util/infershape_util.cc:313] "
                "The InferenceContext of node _SOURCE is null.",
                _LENET,
                {"loss": 0.01959233358502388, "epoch": 4, "step_sec": 0.006184577941894531},
            ),
        ),
    ),
    Notation(
        "words_then_value_and_unit_in_parentheses",
        "a field of words, then a value and its unit in parentheses, between commas (PaddlePaddle prednet's `Epoch 0, "
        "Step 25, total used time 7.178124904632568 (s), avg loss so far is X`): a metric the words name "
        "(`total_used_time`; core.logs.rows.fieldshapes)",
        (
            NotationSample(
                "Epoch 0, Step 25, total used time 7.178124904632568 (s), avg loss so far is 0.10979227721691132",
                _PREDNET,
                {"loss": 0.10979227721691132, "epoch": 0, "step": 25, "total_used_time": 7.178124904632568},
            ),
            NotationSample(
                "Epoch 0, Step 50, total used time 14.059857845306396 (s), avg loss so far is 0.08230332285165787",
                _PREDNET,
                {"loss": 0.08230332285165787, "epoch": 0, "step": 50, "total_used_time": 14.059857845306396},
            ),
        ),
    ),
    Notation(
        "name_comma_value_between_semicolons",
        "a `name, value` field between semicolons, on a row whose other fields are `name: value` (a ReID trainer's "
        "`Epoch: 69; LR, 2.9999999999999997e-05; pid_loss: nan; ...`): a metric of that name (`LR`, the lr; "
        "core.logs.rows.fieldshapes)",
        (
            NotationSample(
                "Time: 2024-10-31 18:32:24; Epoch: 69; LR, 2.9999999999999997e-05; pid_loss: nan;  pid_loss_proj: nan;"
                "  triplet_loss: nan;  triplet_loss_proj: nan;  rgb_i2t_pid_loss: nan;  ir_i2t_pid_loss: nan;  "
                "msel_loss: nan;  msel_loss_proj: nan;  ",
                _CSDN,
                {"loss": _NAN, "epoch": 69, "lr": 2.9999999999999997e-05, "triplet_loss": _NAN},
            ),
        ),
    ),
    Notation(
        "counter_number_before_its_name",
        "a counter's number before its name, a field ending at a comma (HAKE-Action's `000 epoch, 06000 iter, average "
        "time X, loss nan`): the row's epoch and step; its epoch's summary `000 epoch training, ..., loss=nan` reads "
        "the epoch alone, so beside rows with a step it is the epoch's summary (core.logs.rows.perfile), no row",
        (
            NotationSample(
                "000 epoch, 06000 iter, average time 0.6607, loss nan",
                _HAKE,
                {"loss": _NAN, "epoch": 0, "step": 6000, "average_time": 0.6607},
            ),
            NotationSample(
                "2021-03-01 00:56:42,407 - __main__ - INFO - 000 epoch training, L_rec=nan, L_cls=nan, L_ae=0.0000, "
                "loss=nan",
                _HAKE,
                {"loss": _NAN, "epoch": 0, "l_ae": 0.0},
            ),
        ),
    ),
    Notation(
        "bar_description_before_its_percentage",
        "a progress bar's description before its percentage, `Training:   4%|` (tqdm's `{desc}: {percentage}%|`): the "
        "percentage is no value of the description's word, neither a metric nor a step (`Steps:  93%|`); the loss is "
        "in the bar's postfix (core.logs.rows.keys.no_key)",
        (
            NotationSample(
                "Training:   4%|4         | 10/250 [00:12<04:53,  1.22s/it, Loss=10003.225, QA=10003.184, Budg=0.000, "
                "Entr=4.139]",
                "https://github.com/ML-Research-Implementation/Adaptive-Memory-Framework-/blob/"
                "7e56a494862033c30c21e98e3a2f46eb189ac4eb/train_output.log",
                {"loss": 10003.225, "qa": 10003.184, "budg": 0.0, "entr": 4.139, "training": None},
            ),
            NotationSample(
                "Steps:  93%|" + "\u2588" * 45 + "\u258e   | 800/864 [32:34<04:51,  4.56s/it, loss=0.0491, lr=0.0001]",
                CORPUS.format(
                    "https://github.com/johnman3032/simple-lora-dreambooth-trainer/issues/2",
                    "diffusers-lora-steps-bar-glued-to-accelerate-checkpoint-info_simple-lora-dreambooth-trainer-2",
                ),
                {"loss": 0.0491, "lr": 0.0001, "step": None, "steps": None},
            ),
        ),
    ),
)
