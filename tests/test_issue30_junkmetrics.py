"""Issue 30: metric columns no user would plot. Every metric column becomes a series in the Monitor's picker and
`watch`'s `metrics:` line; a piece of a line's prefix or position (a logger's `(module:lineno)`, a level word, a
process tag, a device, a date, a position `12/170` or `7126-7500batch`, a word of prose) is none
(core.logs.rows.keys.not_a_metric). Every line is quoted from the real-log corpus entry named beside it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.rows.general import read_line
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

ESPNET = "espnet2-trainer-rows-and-epoch-results_espnet-2674"
RAY_ACTOR = "ray-actor-prefix-step-dict-train-slash-loss-tiny-negative-then-sglang-health_slime-1136"

# (line, entry, columns it must not make, columns it must keep)
LINES = [
    (
        "[PC] 2020-11-11 16:41:00,521 (trainer:486) INFO: 7epoch:train:7126-7500batch: iter_time=0.001, "
        "forward_time=0.005, loss=1.601, backward_time=0.005, optim_step_time=1.977e-04, lr_0=0.100, train_time=0.014",
        ESPNET,
        {"trainer", "info", "train"},
        {"iter_time", "forward_time", "backward_time", "optim_step_time", "lr_0", "train_time"},
    ),
    (
        "[2025-04-01 00:54:10,319 INFO hook.py line 624 979131] Train: [12/170][550/1090] Data 4.127 (0.563) "
        "Batch 4.582 (1.285) Remain 61:40:56 loss: 4.6867 Lr: 2.81678e-04",
        "pointcept-hook-train-rows-paren-averages_sgiformer-4",
        {"train"},
        {"lr"},
    ),
    (
        "22/06/01 10:06:44 ERROR RabitTracker$TrackerProcessLogger: 2022-06-01 10:06:44,668 INFO [15]    "
        "train-logloss:0.00502646757155188  eval-logloss:0.51746790368885076",
        "xgboost-spark-tracker-error-level-train-logloss-rows_xgboost-7962",
        {"trackerprocesslogger", "info"},
        {"eval_logloss"},
    ),
    (
        "(pid=65987) loss: 2.072397  [    0/60000]",
        "ray-sgd-v2-pid-prefixed-two-workers-loss-bracket-rows-and-test-error_ray-pr-17440",
        {"pid"},
        set(),
    ),
    (
        "2023-01-05 16:34:37,748   INFO  Train:    1/3 ( 33%) [   0/323 (  0%)]  Loss: 516.7 (517.)  LR: 1.000e-04  "
        "Time cost: 00:04/21:46 [00:04/1:05:18]  Acc_iter 1           Data time: 0.87(0.87)  Forward time: 3.18(3.18)  "
        "Batch time: 4.04(4.04)",
        "openpcdet-timm-style-train-rows-loss-value-and-average_openpcdet-1229",
        {"info_train", "train"},
        {"lr", "data_time", "forward_time", "batch_time"},
    ),
    (
        "2019-02-03 08:03:36,499 INFO     steps_per_s=443.39, avg_weight_age=4.9, reward_per_sec=-0.0046, loss=0.2225, "
        "entropy=7.487, advantage=0.121",
        "rl-ppo-key-equals-rows-between-epoch-lines_dotaclient-34",
        {"info_steps_per_s"},
        {"steps_per_s", "avg_weight_age", "reward_per_sec", "entropy", "advantage"},
    ),
    (
        "Epoch 0:   2%|▍                | 49/2093 [00:16<11:30,  2.96it/s, loss=4.723, v_num=1-02]"
        "tensor(8.8201, device='cuda:0', grad_fn=<MeanBackward1>) tensor(0.0025, device='cuda:0')",
        "lightning-bar-glued-to-per-device-tensor-prints-cuda-0-1_lightning-3441",
        {"cuda", "v_num"},
        set(),
    ),
    (
        "2023-01-25 01:03:05.674 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E104 iter[ 14/ 15] | "
        "[Loss] nan | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]  1574 | [url] none | [time] 0.4m (~4h) |"
        "[best] 0 -100.000x1e-2 ",
        "loguru-pipe-bracket-key-loss-nan-rank-r0_lion-9",
        {"e104_iter"},
        set(),
    ),
    (
        "Epoch    5/1000 done | avg_loss 358.8457  l:355.4023, f:  0.1785, a:  0.0138,  kl:355.1546  in 2.9s  "
        "Heun 82.49% Single 82.66% | heun:0.72s single:0.02s ",
        "epoch-done-avg-loss-colon-parts_noprop-fashionmnist",
        {"in"},
        {"l", "f", "a", "kl", "heun", "single"},  # the loss's parts and the two samplers' times: real scalars
    ),
    (
        "Epoch 005 loss   9.5198 | train 2.2s | Acc 13.52% | infer 4.5s",
        "epoch-loss-pipe-train-time-acc-every-5_noprop-cifar100",
        set(),
        {"train", "acc", "infer"},  # `train 2.2s`, `infer 4.5s`: the two phases' durations, real scalars
    ),
    (
        "[INFO 2021/06/19 16:01:34 model.py:61] Train: Rank: 0, epoch: 1, step: 5310, batch : 1559/1876, "
        "lr: 0.00000000, data time: 0.000s, train time: 3.019s, batch size: 64, train_loss: 16.030918",
        "deepspeech2-rank-0-train-loss-last-lr-zero_paddlespeech-675",
        {"rank_value"},
        {"lr", "data_time", "train_time", "batch_size"},
    ),
    (
        "| Training Device=xla:1/0 Epoch=1 Step=500 Loss=0.00223 Rate=553.79 GlobalRate=349.32 Time=01:53:18",
        "torch-xla-8-devices-one-stream-capital-loss_pytorch-xla-4324",
        {"xla"},
        {"rate", "globalrate"},
    ),
    (
        "^[[A^[[B[2019/06/24 16:20:47 __main__ INFO] - Epoch 1 Step 800/1500 Loss nan (nan) AngleError nan (nan)",
        "epoch-step-loss-paren-average-turns-nan_mpii-face-gaze-3",
        {"b"},
        set(),
    ),
    (
        "Epoch 0: 100%|" + "█" * 59 + "| 100/100 [00:00<00:00, 324.18it/s, loss=0.0663, v_num=13]",
        "lightning-progress-bar-then-max-epochs-reached_lightning-14428",
        {"v_num"},  # Lightning's own logger version: one run's name, constant, no measurement
        set(),
    ),
    (
        "| epoch 001:    370 / 614 loss=10.093, nll_loss=10.093, ppl=1092.29, wps=1334, ups=3.0, wpb=439, bsz=18, "
        "num_updates=371, lr=0.05, gnorm=0.788, clip=100%, oom=0",
        "fairseq-legacy-progress-rows_fairseq-311",
        set(),
        {"oom", "ppl", "wps", "num_updates"},  # fairseq's count of batches that ran out of memory: it can rise
    ),
]


@pytest.mark.parametrize(("line", "entry", "junk", "kept"), LINES, ids=[e for _, e, _, _ in LINES])
def test_a_lines_prefix_or_position_makes_no_metric(line: str, entry: str, junk: set[str], kept: set[str]) -> None:
    """Failed before (all but the kept-only lines): `(trainer:486)` made `trainer`, `INFO: 7epoch` `info`,
    `train:7126-7500batch` `train`, `(pid=65987)` `pid`, `device='cuda:0'` `cuda`, `E104 iter[ 14/ 15]`
    `e104_iter`, `in 2.9s` `in`, `Rank: 0` `rank_value`, `xla:1/0` `xla`, `[B[2019/06/24` `b`, `v_num=13`."""
    assert line.encode() in entry_lines(entry)  # the line is the entry's own
    read = read_line(line)
    assert read is not None
    got = set(read.extras) | set(read.fields)
    assert not junk & got, (entry, junk & got)
    assert kept <= got, (entry, kept - got)


def test_a_ray_actors_process_tag_makes_no_metric() -> None:
    """Failed before: `(MegatronTrainRayActor pid=32167)` made `megatrontrainrayactor_pid`."""
    [line] = [x for x in entry_lines(RAY_ACTOR) if x.startswith(b"(MegatronTrainRayActor pid=") and b"train/loss" in x]
    read = read_line(line)
    assert read is not None and read.fields["loss"] < 0
    assert not any(k.endswith("pid") for k in read.extras) and "train_pg_loss" in read.extras


JUNK_ENTRIES = {
    ESPNET: {"trainer", "info", "train"},
    "loguru-pipe-bracket-key-loss-nan-rank-r0_lion-9": {"e104_iter", "e105_iter", "e108_iter"},
    "torch-xla-8-devices-one-stream-capital-loss_pytorch-xla-4324": {"xla"},
    "epoch-done-avg-loss-colon-parts_noprop-fashionmnist": {"in"},
    RAY_ACTOR: {"megatrontrainrayactor_pid"},
}


@pytest.mark.parametrize("path", sorted(READ_PATHS))
@pytest.mark.parametrize("entry", sorted(JUNK_ENTRIES))
def test_every_read_path_gives_the_same_columns_without_junk(tmp_path: Path, entry: str, path: str) -> None:
    """Failed before on every path: each entry's junk columns were series of the run (the bulk paths read a
    shape by the line reader's template, so they follow its reading)."""
    columns = set(read_entry(tmp_path, entry, path).metrics.columns)
    assert not JUNK_ENTRIES[entry] & columns
    base = set(read_entry(tmp_path / "base", entry, "line_by_line").metrics.columns)
    assert columns == base


_NAME = st.from_regex(r"[A-Za-z][A-Za-z_]{0,11}", fullmatch=True)
_LEVEL = st.sampled_from(["INFO", "WARNING", "DEBUG", "ERROR", "CRITICAL"])


@settings(max_examples=80, deadline=None)
@given(_NAME, st.integers(0, 99999), _LEVEL, st.integers(0, 999), st.integers(0, 99999), st.integers(0, 99999))
def test_a_location_a_level_word_and_a_position_never_make_a_column(
    module: str, lineno: int, level: str, epoch: int, first: int, last: int
) -> None:
    """Whatever the module, line number, level and numbers: ESPnet's prefix and position give no column, and
    the row's own scalars stay (the loss, `iter_time`)."""
    line = f"[host] 2021-04-23 19:22:56,245 ({module}:{lineno}) {level}: {epoch}epoch:train:{first}-{last}batch: "
    read = read_line(line + "iter_time=3.163e-04, loss=65.129")
    assert read is not None and read.fields["loss"] == 65.129
    assert set(read.extras) == {"iter_time"}, line


@settings(max_examples=60, deadline=None)
@given(st.from_regex(r"[A-Z][A-Za-z]{0,15}", fullmatch=True), st.integers(0, 10**7), st.integers(0, 15))
def test_a_process_tag_and_a_device_never_make_a_column(actor: str, pid: int, device: int) -> None:
    """Ray's `(Actor pid=N)` and torch's `device='cuda:N'` / `Device=xla:N/0` are a line's prefix, whatever
    the actor, pid and index."""
    for line in (
        f"({actor} pid={pid}) step 3: loss: 2.5, acc: 0.5",
        f"loss: 2.5, acc: 0.5 tensor(8.8, device='cuda:{device}')",
        f"| Training Device=xla:{device}/0 Epoch=1 Step=500 Loss=0.00223 Rate=553.79",
    ):
        read = read_line(line)
        assert read is not None and read.fields["loss"] in (2.5, 0.00223)
        assert not {k for k in read.extras if k.endswith("pid") or k in ("cuda", "xla")}, line


def test_a_qualified_counter_stays_a_column(tmp_path: Path) -> None:
    """A qualified count (`inner iter: 3/8`, LMOps) is a column still; a file's run keeps it on every path."""
    line = b"train | inner iter:   3/  8 | global iter:     27/  5000| tot_loss: 1.5269 | time: 1.700 |"
    for path, settings_ in READ_PATHS.items():
        (tmp_path / path).mkdir()
        folder = one_log(tmp_path / path, [line] * 40)
        assert "inner_iter" in read_run(folder, settings=settings_).metrics.columns, path
