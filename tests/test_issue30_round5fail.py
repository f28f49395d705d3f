"""Issue 30 on round 5's build set: the two real logs read wrong (besides the row notations of rules5rows), each
closed by a general rule and checked on its corpus entry's real lines (tests/fixtures/real_logs/<entry>/SOURCE.md),
on every read path:

- mpirun-host-pid-prefix-segfault-backtrace-in-hccl-unloadtask_mindyolo-238: OpenMPI's signal report pasted from
  past its first line (`[host:pid] Failing at address: 0xb8`, then the native frames) is a dead process (the
  `signal report` failure kind, weight 0: the report's head or a launcher's word, when there, names it);
- train-iter-loss-net-nan-from-second-print-loss-scale_verse-31: a loss key with a suffix (`loss_net: 0.9443`) on a
  line with no `loss` of its own is the training loss (`loss_scale` beside it is the loss scale, no loss); its NaN
  to the end is the run's failure.

The same family, for logs nobody has seen yet: OpenMPI's report from its `Signal code:` line, and
glog's failure signal handler (`*** Aborted at N (unix time)`, `*** SIGSEGV (@0x0) received by PID N`), the other
native crash report behind Paddle's `[SignalInfo: ...]` and TensorFlow's C++. And a rule the corpus test found on
the build set (t2t-106): TensorFlow's `Model diverged with loss = NaN.` names the failure of a cut traceback.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import parse_loss_line, read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failure_kinds import FAILURE_KINDS, FailureSample
from core.logs.rows.failures import fatal_reason
from core.logs.rows.general import read_line
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

PATHS = READ_PATHS  # every way the parser reads a file (tests/helpers.py)
MPIRUN = "mpirun-host-pid-prefix-segfault-backtrace-in-hccl-unloadtask_mindyolo-238"
VERSE = "train-iter-loss-net-nan-from-second-print-loss-scale_verse-31"


# ----------------------------------------------------------------------------- OpenMPI's report without its first line


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_report_s_head_names_the_failure_over_its_other_lines(tmp_path: Path, path: str) -> None:
    # OpenMPI's whole report (openmpi-signal-report-horovod-segfault-rank-0_glow-18's lines): the head's
    # `Signal: Segmentation fault (11)` stays the reason, never the later `Failing at address` line
    lines = [
        b"[lhx-910:19474] *** Process received signal ***",
        b"[lhx-910:19474] Signal: Segmentation fault (11)",
        b"[lhx-910:19474] Signal code: Address not mapped (1)",
        b"[lhx-910:19474] Failing at address: (nil)",
        b"[lhx-910:19474] *** End of error message ***",
    ]
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert "Segmentation fault" in failed_ranks(snap)[0]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_openmpi_signal_code_alone_ends_the_run(tmp_path: Path, path: str) -> None:
    # the report's third line, where a paste starting past `Signal: Aborted (6)` begins (llamafactory-4284's)
    line = b"[ma-job-50d563e2-2cba-46d8-bac5-4da0e4f0e5b4-worker-0:00366] Signal code:  (-6)"
    snap = read_run(one_log(tmp_path, [line]), settings=PATHS[path])
    assert set(failed_ranks(snap)) == {0}


def test_signal_code_in_prose_is_no_report() -> None:
    assert fatal_reason(b"[uk:60506] Signal code: Address not mapped (1)") is not None
    assert fatal_reason(b"INFO: Signal code: see the handler (1) for details, then retry") is None


def test_failing_at_address_needs_an_address() -> None:
    assert fatal_reason(entry_lines(MPIRUN)[0]) is not None
    assert fatal_reason(b"[lhx-910:19474] Failing at address: (nil)") is not None
    # prose naming the words, with no address after them, is no report
    assert fatal_reason(b"INFO: checks for failing at address: see the docs") is None
    assert fatal_reason(b"the test kept Failing at address: lookup of the host") is None


@given(st.text(alphabet="0123456789abcdef", min_size=1, max_size=16))
@example("0")
def test_any_hex_address_is_the_report(digits: str) -> None:
    line = f"[host-1:4242] Failing at address: 0x{digits}".encode()
    assert fatal_reason(line) is not None


# ----------------------------------------------------------------------------- glog's failure signal handler

# glog's report as its C++ handler prints it (TensorFlow, MXNet, ...): what Paddle wraps in `[TimeInfo: ...]` /
# `[SignalInfo: ...]` (ppdet-rtdetr-2-workerlogs-rows-eval-then-sigterm_m2s-detr's workerlog.1)
GLOG_REPORT = [
    b"I1126 10:00:00.000000 4242 trainer.cc:88] step 10 done",
    b'*** Aborted at 1691153636 (unix time) try "date -d @1691153636" if you are using GNU date ***',
    b"PC: @                0x0 (unknown)",
    b"*** SIGSEGV (@0x0) received by PID 1136644 (TID 0x7f84541b85c0) from PID 0; stack trace: ***",
    b"    @     0x7f8e1b7fe700 (unknown)",
]


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("keep", [slice(0, None), slice(0, 3), slice(3, None)])
def test_glog_s_signal_report_ends_the_run(tmp_path: Path, path: str, keep: slice) -> None:
    # the whole report, or a paste cut before its second line or starting at it
    snap = read_run(one_log(tmp_path, GLOG_REPORT[keep]), settings=PATHS[path])
    assert set(failed_ranks(snap)) == {0}


def test_the_signal_report_s_words_in_prose_are_no_failure() -> None:
    assert fatal_reason(b"the job was Aborted at 1691153636 by the user") is None  # no `(unix time)`
    assert fatal_reason(b"SIGTERM received by PID 4242: shutting down the data server") is None


# ----------------------------------------------------------------------------- TensorFlow's `Model diverged`

T2T = "t2t-markdown-quoted-loss-step-row-then-model-diverged-nan-traceback_tensor2tensor-106"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_model_diverged_names_the_failure_of_a_cut_traceback(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, T2T, path)
    got = diagnose(snap)
    assert [g.exception for g in got.failure_groups] == ["> ERROR:tensorflow:Model diverged with loss = NaN."]


def test_model_diverged_needs_its_non_finite_loss() -> None:
    assert fatal_reason(b"ERROR:tensorflow:Model diverged with loss = NaN.") == "model diverged"
    assert fatal_reason(b"INFO: the model diverged with loss = 3.2 last time; lowering the lr") is None


def test_model_diverged_is_no_loss_row() -> None:
    # a sentence's period closes a value (BigDL's `Loss is 1.72319.`), but this sentence is the failure
    assert read_line(b"ERROR:tensorflow:Model diverged with loss = NaN.") is None
    assert read_line(b"> ERROR:tensorflow:Model diverged with loss = inf.") is None


QUOTING = [sample for kind in FAILURE_KINDS if kind.quotes_loss for sample in kind.samples]


def test_some_failure_kind_quotes_the_loss_that_ended_the_run() -> None:
    assert [sample.line for sample in QUOTING] == ["> ERROR:tensorflow:Model diverged with loss = NaN."]


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("sample", QUOTING, ids=lambda sample: sample.line[:24])
def test_a_line_quoting_the_loss_is_the_failure_and_no_row(tmp_path: Path, path: str, sample: FailureSample) -> None:
    # the rule is the kind's own (FailureKind.quotes_loss), not a phrase known to the row reader
    snap = read_run(one_log(tmp_path, [b"step 1, loss = 2.5", sample.line.encode()]), settings=PATHS[path])
    assert snap.metrics["loss"].tolist() == [2.5]
    assert set(failed_ranks(snap)) == {0}


# ----------------------------------------------------------------------------- `loss_net:` with no bare `loss`


@pytest.mark.parametrize("path", sorted(PATHS))
def test_loss_with_a_suffix_is_the_training_loss_and_its_nan_the_failure(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, VERSE, path)
    loss = snap.metrics["loss"].tolist()
    assert loss[0] == pytest.approx(0.9443) and len(loss) == 3
    assert all(math.isnan(v) for v in loss[1:])
    assert snap.metrics["loss_scale"].tolist() == pytest.approx([32768.0, 785.42, 1.0])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_suffixed_loss_after_an_eval_word_is_an_evaluation(tmp_path: Path, path: str) -> None:
    # the same tool's test print (`test iter: N loss_net: X`): an evaluation, never a training row
    lines = entry_lines(VERSE)
    test = b"02:35:01: test iter: 200 loss_net: 0.8123 loss_scale: 1.0000 norm: 0.0000 seconds: 20.000"
    snap = read_run(one_log(tmp_path, [lines[0], test, *lines[1:]]), settings=PATHS[path])
    assert len(snap.metrics) == 3 and snap.metrics["loss"].tolist()[0] == pytest.approx(0.9443)
    assert 0.8123 in snap.evals["value"].round(4).tolist()


def test_loss_scale_and_settings_are_no_loss() -> None:
    assert parse_loss_line("step 4 loss_scale: 1024.0 lr: 0.1") is None
    assert parse_loss_line("loss_weight: 1.0, loss_type: 2") is None  # a config's settings
    assert parse_loss_line("iter 5 loss_type: 2 lr: 0.1") is None  # an integer: a setting, no loss value


def test_a_bare_loss_still_wins_over_its_parts() -> None:
    got = parse_loss_line("iter: 10, loss_cls: 0.1000, loss_bbox: 0.2000, loss: 0.3000")
    assert got is not None and got["loss"] == pytest.approx(0.3)
    got = parse_loss_line("train iter: 7 loss_total: 1.2500 loss_scale: 64.0000")
    assert got is not None and got["loss"] == pytest.approx(1.25) and got["loss_scale"] == pytest.approx(64.0)


def test_an_eval_qualified_suffixed_loss_is_no_row() -> None:
    assert parse_loss_line("epoch 3 val_loss_net: 0.4000") is None
    assert parse_loss_line("epoch 3 loss_val: 0.4000 loss_test: 0.5000") is None  # the split's name after `loss_`
    got = parse_loss_line("epoch 3 loss_train: 0.3000 loss_val: 0.4000")
    assert got is not None and got["loss"] == pytest.approx(0.3)


@given(st.floats(min_value=1e-6, max_value=1e6, allow_nan=False), st.sampled_from(["net", "total", "sum", "g"]))
def test_any_decimal_after_a_suffixed_loss_key_is_read(value: float, suffix: str) -> None:
    got = parse_loss_line(f"train iter: 3 loss_{suffix}: {value:.6f} norm: 1.5000")
    assert got is not None and got["loss"] == pytest.approx(float(f"{value:.6f}"))
