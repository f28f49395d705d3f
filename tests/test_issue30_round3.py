"""Issue 30 item 6, round 3's build set: the general rules its misread logs asked for, each on the real lines of
its corpus entry (tests/fixtures/real_logs/<entry>/SOURCE.md says where each comes from), read on every path the
parser has, with the bad input beside them (what each rule must not take). The notations' and failure kinds'
samples are also read by tests/test_grammar_entries.py; these pin what the entries alone do not: what stays out.

- loguru-pipe-bracket-key-loss-nan-rank-r0_lion-9: a bracketed key, `| [Loss] nan |`;
- jupyter-traceback-device-side-assert-after-one-loss-line_transformers-tutorials-17: `Loss per 100 steps: X`;
- keras-terminateonnan-invalid-loss-inf-bar_mobilenet-ssd-keras-21: a message glued to the value;
- orb-mindspore-epoch-train-metrics-dict-loss-last-key_competition-mindmomaorb: ` val_metrics: {..., 'loss': X}`;
- chinese-fullwidth-colon-loss-rows-and-test-loss_pytorch-tutorial-1: `测试` (test) before the key;
- sb3-logger-table-train-loss-two-dumps_rl-baselines3-zoo-521: a key/value table's cells;
- xgboost-spark-tracker-error-level-train-logloss-rows_xgboost-7962: XGBoost's rounds;
- vissl-semicolon-rank-prefixed-iter-loss-rows_vissl-480: a unit glued to a key, `btime(ms): 192`;
- yolov7-header-then-omp-error-15-at-first-batch_yolov7-1443: the OpenMP runtime's abort;
- srun-step-cancelled-after-tqdm-task-0-terminated_myria3d-123: Slurm cancelling the step;
- iso-timestamp-before-rank2-tag-traceback-cut_ms-swift-5009: a log collector's stamp before `[rank2]:`.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import ReaderSettings, read_run
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason
from core.logs.rows.general import read_line
from core.logs.rows.lineranks import collector_stamp, line_rank

PATHS = {  # every way the parser reads a file (as tests/test_grammar_entries.py)
    "line_by_line": ReaderSettings(prefetch_min=1, block_min=1 << 30, shape_min=1 << 30),
    "bulk": ReaderSettings(prefetch_min=1, compiled_min=0, shape_min=16, block_min=1),
    "batched": ReaderSettings(compiled_min=1 << 40),
}
REPEAT = 24  # copies of a line: enough for the bulk path's shapes


def _loss(line: str) -> float | None:
    """The training loss a line gives, or None (no row, or an evaluation line)."""
    read = read_line(line)
    return None if read is None or read.eval else read.fields.get("loss")


def _rows(tmp_path: Path, text: str, path: str) -> list[float]:
    (tmp_path / "train.log").write_text(text, encoding="utf-8")
    snap = read_run(tmp_path, settings=PATHS[path])
    return [float(v) for v in snap.metrics["loss"]] if len(snap.metrics) else []


# ----------------------------------------------------------------------------- rows


@pytest.mark.parametrize("path", sorted(PATHS))
def test_bracketed_loss_key_rows_on_every_path(tmp_path: Path, path: str) -> None:
    line = (
        "2023-01-25 01:03:05.674 | INFO     | trainers.base_trainer:train_epochs:256 - [R0] | E104 iter[ 14/ 15] | "
        "[Loss] {v} | [exp] ./exp/0125/car/3dbf3ah_hvae_lion_B40 | [step]  1574 | [url] none | [time] 0.4m (~4h) |"
        "[best] 0 -100.000x1e-2 \n"
    )
    text = "".join(line.format(v="nan" if i % 2 else f"{1 + i / 100:.3f}") for i in range(REPEAT))
    got = _rows(tmp_path, text, path)
    assert len(got) == REPEAT and math.isnan(got[1]) and got[2] == pytest.approx(1.02)


def test_a_bracketed_key_needs_its_bracket() -> None:
    """`]` closes only a key opened by `[`: `Loss] 3.5` is no key (a stray bracket), `[Loss] 3.5` is."""
    assert _loss("| [Loss] 3.5 |") == 3.5
    assert _loss("| Loss] 3.5 |") is None


def test_loss_per_unit_and_its_bad_input() -> None:
    assert _loss("Training Loss per 100 steps: 1.3555612564086914") == pytest.approx(1.3555612564086914)
    assert _loss("Loss per epoch = 0.25") == 0.25
    assert _loss("The loss per sample is 3") is None  # prose, no separator after the unit
    assert _loss("Training Accuracy per 100 steps: 25.0") is None


def test_a_capitalised_message_ends_a_glued_value_but_a_unit_does_not() -> None:
    keras = "  3/234 [..............................] - ETA: 33:37:24 - loss: 44.4110Batch 3: Invalid loss, terminating"
    assert _loss(keras) == pytest.approx(44.411)
    assert _loss("loss: 1.2345Mb") is None  # a unit glued to the value: not a whole number
    assert _loss("loss: 12Batch 3: x") is None  # an integer glued to a word: not read as a loss
    assert _loss("loss: 1.5e") is None


def test_eval_container_and_chinese_eval_words() -> None:
    assert read_line(" val_metrics: {'energy_mae': 3.59, 'loss': 34.24308395385742}").eval  # type: ignore[union-attr]
    assert _loss(" train_metrics: {'energy_mae': 3.36, 'loss': 44.74968592325846}") == pytest.approx(44.7496859)
    assert read_line("整体测试集上的Loss: 262.62046909332275").eval  # type: ignore[union-attr]
    assert read_line("验证 Loss: 2.5").eval  # type: ignore[union-attr]
    assert _loss("训练次数：100, Loss：1.9817659854888916") == pytest.approx(1.9817659854888916)
    # a `val_` key that holds a number (not a dict) before the loss does not make the line an evaluation
    assert _loss("epoch 3 val_every: 5 loss: 0.7") == 0.7


@given(key=st.from_regex(r"[a-z][a-z_]{0,20}", fullmatch=True), value=st.floats(-1e6, 1e6, allow_nan=False))
@example(key="entropy_loss", value=-1.36)
@example(key="loss", value=0.0541)
def test_a_key_value_table_cell_is_a_row_only_for_the_bare_loss(key: str, value: float) -> None:
    line = f"|    {key:<20} | {value:<10.4g} |"
    assert _loss(line) == (float(f"{value:.4g}") if key == "loss" else None)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_sb3_tables_give_one_row_each(tmp_path: Path, path: str) -> None:
    table = (
        "-----------------------------------------\n| train/                  |           |\n"
        "|    entropy_loss         | -1.25     |\n|    loss                 | {v}     |\n"
        "|    value_loss           | 0.777     |\n-----------------------------------------\n"
    )
    got = _rows(tmp_path, "".join(table.format(v=f"{0.4 + i / 1000:.3f}") for i in range(REPEAT)), path)
    assert got == pytest.approx([0.4 + i / 1000 for i in range(REPEAT)])


def test_xgboost_rounds_and_what_is_no_row() -> None:
    line = (
        "22/06/01 10:06:44 ERROR RabitTracker$TrackerProcessLogger: 2022-06-01 10:06:44,668 INFO [15]    "
        "train-logloss:0.00502646757155188  eval-logloss:0.51746790368885076"
    )
    read = read_line(line)
    assert read is not None and not read.eval
    assert read.fields["loss"] == pytest.approx(0.00502646757155188) and read.fields["step"] == 15
    assert read.extras["eval_logloss"] == pytest.approx(0.51746790368885076)
    assert _loss("[3]\tvalidation_0-logloss:0.61") is None  # only an evaluation set: no training row
    assert _loss("[3]\ttrain-logloss:0.61x") is None  # not a whole number


def test_a_unit_glued_to_a_key_names_the_metric() -> None:
    line = (
        "INFO 2021-12-02 18:52:20,806 log_hooks.py: 277: Rank: 0; [ep: 0] iter: 57; lr: 0.71785; loss: 2.94718; "
        "btime(ms): 192; eta: 0:00:08; peak_mem(M): 4176;"
    )
    read = read_line(line)
    assert read is not None and read.extras["btime_ms"] == 192 and read.extras["peak_mem_m"] == 4176


# ----------------------------------------------------------------------------- failures


def test_openmp_abort_is_a_failure_and_its_warning_is_not() -> None:
    bar = "  0%|          | 0/3 [00:00<?, ?it/s]"
    assert fatal_reason(f"{bar}OMP: Error #15: Initializing libiomp5md.dll, but found libiomp5md.dll".encode())
    assert fatal_reason(b"OMP: Error #179: Function pthread_create failed:") == "OpenMP runtime abort"
    assert fatal_reason(b"OMP: Warning #181: OMP_STACKSIZE: ignored because KMP_STACKSIZE has been defined") is None
    assert fatal_reason(b"OMP: Info #276: omp_set_nested routine deprecated") is None


def test_slurm_cancel_is_a_failure_but_a_terminated_task_alone_is_not(tmp_path: Path) -> None:
    bar = "Preparing test set...:  46%|####      | 31/67 [29:02<35:12, 58.67s/it]"
    assert fatal_reason(
        f"{bar}slurmstepd: error: *** STEP 6053.0 ON DEL2212S020 CANCELLED AT 2024-04-23T12:18:08 ***".encode()
    )
    assert fatal_reason(b"slurmstepd: error: *** JOB 4242 ON n2 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***")
    assert fatal_reason(b"the job was CANCELLED AT noon") is None  # a word, not slurmstepd's report
    (tmp_path / "train.log").write_text("epoch: 1 step: 1, loss is 1.5\nsrun: error: n1: task 0: Terminated\n")
    assert failed_ranks(read_run(tmp_path)) == {}  # srun's `Terminated` is collateral (another task failed)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_traceback_behind_a_collector_stamp_and_rank_tag_fails_that_rank(tmp_path: Path, path: str) -> None:
    stamp = "2025-07-17T11:20:40.{:09d}+08:00 [rank2]: "
    body = [
        "Traceback (most recent call last):",
        'File "~/ms-swift/swift/cli/sft.py", line 7, in <module>',
        "sft_main()",
        "^^^^^^^^^^^^^^^^^^^^^",
    ]
    (tmp_path / "train.log").write_text("".join(stamp.format(299361236 + i) + b + "\n" for i, b in enumerate(body)))
    snap = read_run(tmp_path, settings=PATHS[path])
    assert list(failed_ranks(snap)) == [2]


def test_collector_stamp_bounds() -> None:
    line = b"2025-07-17T11:20:40.299361236+08:00 [rank2]: Traceback (most recent call last):"
    assert collector_stamp(line) == len(b"2025-07-17T11:20:40.299361236+08:00 ")
    assert line_rank(line) is not None and line_rank(line).rank == 2  # type: ignore[union-attr]
    assert collector_stamp(b"2025-07-17 11:20:40,299 INFO loss: 1.0") == 0  # a logger's own date: no zone, no T
    assert collector_stamp(b"2025-07-17T11:20:40Z[rank2]: x") == 0  # no space after it: not a prefix


@given(st.binary(max_size=80))
@example(b"2025-07-17T11:20:40.299361236+08:00 ")
def test_collector_stamp_is_within_the_line(line: bytes) -> None:
    at = collector_stamp(line)
    assert 0 <= at <= len(line) and (at == 0 or line[at - 1 : at] == b" ")
