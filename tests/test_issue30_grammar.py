"""Issue 30: a log nobody here has seen is read right. Failures by kind behind any prefix, one judgement
for `watch --once`, `diagnose` and the Monitor, rows in notations the reader did not know, the wrong
series kept out, ranks from the line, and a dead rank's older loss is no divergence.

Every line below is a real one, quoted with its source (GitHub issues and the logs of
tests/fixtures/real_logs, whose SOURCE.md files say where each comes from).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.__main__ import main
from core.cli.watch import new_rows
from core.logs import rank_status, read_run
from core.logs.judgement.metrics import lagging_ranks
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failure_kinds import FAILURE_KINDS
from core.logs.rows.failures import fatal_reason, line_tag, task_end
from core.logs.rows.general import read_line

LM = "epoch: 1 step: {s}, loss is {v}\n"


def _lm(first: int = 1, steps: int = 3) -> str:
    return "".join(LM.format(s=s, v=2.0 - s / 100) for s in range(first, first + steps))


def _judged(folder: Path, capsys: pytest.CaptureFixture) -> tuple[set[int], set[int], set[int]]:
    """(diagnose's failing ranks, `watch --once`'s, the status table's crashed/nan/stopped ranks) of a folder
    (`stopped`: ended from outside, a Ctrl-C or the scheduler: core.logs.rows.failures.STOP_KINDS)."""
    assert main(["diagnose", str(folder), "--json"]) in (0, 1)
    d = json.loads(capsys.readouterr().out)
    main(["watch", str(folder), "--once"])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("failed ranks: "))
    words = line.removeprefix("failed ranks: ").split(" (")[0]
    watch = set() if words == "none" else {int(r) for r in words.split(",")}
    states = rank_status(read_run(folder))
    table = {int(r) for r, s in zip(states["rank"], states["state"], strict=True) if s in ("crashed", "nan", "stopped")}
    return {r for g in d["failure_groups"] for r in g["ranks"]}, watch, table


# ----------------------------------------------------------------------------- failures by kind

# Every failure kind's real lines, each with its source in core.logs.rows.failure_kinds (one entry per kind:
# CANN codes of every family, device errors, signal reports, collective failures and time-outs, C++ aborts);
# those behind a launcher's tag name another rank than the file's (tests/test_grammar_entries.py reads them)
FAILURE_LINES = [(s.line, k.name) for k in FAILURE_KINDS for s in k.samples if s.rank is None]


@pytest.mark.parametrize("line, kind", FAILURE_LINES, ids=[f"{k}-{i}" for i, (_, k) in enumerate(FAILURE_LINES)])
def test_each_failure_kind_is_named(line: str, kind: str) -> None:
    assert fatal_reason(line.encode()) == kind


@pytest.mark.parametrize(
    "line", [x for x, _ in FAILURE_LINES], ids=[f"{k}-{i}" for i, (_, k) in enumerate(FAILURE_LINES)]
)
def test_an_error_line_that_ends_the_run_fails_it_for_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture, line: str
) -> None:
    """The error lines end the log (no training after them): diagnose, watch and the status table all
    say rank 0 failed (issue 30: `watch --once` listed the `[ERROR]` lines while diagnose said "no failure")."""
    (tmp_path / "worker_0.log").write_text(_lm() + line + "\n")
    (tmp_path / "worker_1.log").write_text(_lm())
    assert _judged(tmp_path, capsys) == ({0}, {0}, {0})


@pytest.mark.parametrize(
    "line", [x for x, _ in FAILURE_LINES], ids=[f"{k}-{i}" for i, (_, k) in enumerate(FAILURE_LINES)]
)
def test_a_run_that_logs_an_error_and_trains_on_is_not_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture, line: str
) -> None:
    (tmp_path / "worker_0.log").write_text(_lm() + line + "\n" + _lm(4))
    (tmp_path / "worker_1.log").write_text(_lm(1, 6))
    assert _judged(tmp_path, capsys) == (set(), set(), set())
    errors = read_run(tmp_path).errors
    assert (errors["kind"] == "error_log").any(), "the line is still listed, as an error line"


ASCENDCL = (  # MindSpore's CANN error-case docs (tests/fixtures/real_logs/cann-EI0002-glibc-abort_mindspore-docs)
    "[ERROR] ASCENDCL(162844,python):2022-12-01-00:26:58.086.834 [tensor_data_transfer.cpp:899]168498 "
    "acltdtSendTensor: [Push][Data]failed to send, tdt result = -1, device is 1"
)


def test_a_bare_error_line_that_ends_the_log_fails_the_rank(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue 30: "Error lines that end a run (no training rows after them) make it failed", whatever they say."""
    (tmp_path / "worker_0.log").write_text(_lm() + ASCENDCL + "\n")
    (tmp_path / "worker_1.log").write_text(_lm())
    assert _judged(tmp_path, capsys) == ({0}, {0}, {0})
    main(["diagnose", str(tmp_path), "--json"])
    [group] = json.loads(capsys.readouterr().out)["failure_groups"]
    assert "acltdtSendTensor" in group["exception"]


def test_a_bare_error_line_the_run_trains_past_is_listed_only(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "worker_0.log").write_text(ASCENDCL + "\n" + _lm())
    assert _judged(tmp_path, capsys) == (set(), set(), set())
    assert read_run(tmp_path).errors["kind"].tolist() == ["error_log"]


def test_a_named_failure_names_the_group_before_bare_error_lines(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A bare `[ERROR]` line first, then a CANN code: the group is named by the code (the root cause)."""
    (tmp_path / "worker_0.log").write_text(_lm() + ASCENDCL + "\nEI9999: Inner Error!\n" + ASCENDCL + "\n")
    main(["diagnose", str(tmp_path), "--json"])
    [group] = json.loads(capsys.readouterr().out)["failure_groups"]
    assert group["exception"] == "EI9999: Inner Error!"
    assert rank_status(read_run(tmp_path)).iloc[0]["detail"] == "EI9999: Inner Error!"


def test_a_traceback_cut_off_by_the_end_of_the_log_is_a_failure(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Real: mindspore-lab/mindone#269, the log ends inside the traceback (no exception line)."""
    (tmp_path / "worker_0.log").write_text(
        _lm()
        + "Traceback (most recent call last):\n"
        + '  File "/home/ma-user/work/mindone/examples/pangu_draw_v3/pangu_sampling.py", line 454, in <module>\n'
        + "    sample(args)\n"
    )
    (tmp_path / "worker_1.log").write_text(_lm())
    assert _judged(tmp_path, capsys) == ({0}, {0}, {0})
    err = read_run(tmp_path).errors.iloc[0]
    assert "cut off" in err["message"] and "pangu_sampling.py" in err["context"]


def test_a_completed_traceback_is_one_failure_with_its_exception(tmp_path: Path) -> None:
    (tmp_path / "worker_0.log").write_text(
        _lm() + "Traceback (most recent call last):\n" + '  File "train.py", line 3\n' + "ValueError: boom\n"
    )
    errors = read_run(tmp_path).errors
    assert errors["message"].tolist() == ["ValueError: boom"] and "train.py" in errors["context"].iloc[0]


def test_a_traceback_printed_and_trained_past_is_no_failure(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A caught exception printed with its traceback, then the run trains on (a retried download)."""
    (tmp_path / "worker_0.log").write_text(
        _lm() + "Traceback (most recent call last):\n" + '  File "dl.py", line 9\n' + "TimeoutError: read\n" + _lm(4)
    )
    assert _judged(tmp_path, capsys) == (set(), set(), set())


# ----------------------------------------------------------------------------- launchers and tags


def test_torchrun_names_the_failed_local_rank() -> None:
    """Real: xiuqhou/Salience-DETR#4 (torch's elastic agent)."""
    line = (
        b"[2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
        b"local_rank: 2 (pid: 5939) of binary: /home/ubuntu/anaconda3/envs/salience_detr/bin/python"
    )
    ended = task_end(line)
    assert ended is not None and ended.ranks == (2,) and ended.reason == "exit code 1"
    killed = task_end(
        b"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 7)"
    )
    assert killed is not None and killed.reason == "signal 9"


def test_torchrun_report_fails_the_named_rank(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """torchrun's own output (Facico/Chinese-Vicuna#113's line, local rank changed to 1 to tell it from the file's)."""
    (tmp_path / "worker_0.log").write_text(_lm())
    (tmp_path / "worker_1.log").write_text(
        _lm() + "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 1 "
        "(pid: 1622990) of binary: /home/changquan/anaconda3/envs/lang/bin/python\n"
    )
    diag, watch, _ = _judged(tmp_path, capsys)
    assert diag == watch == {1}


@pytest.mark.parametrize(
    "line, rank, rest",
    [
        (b"[1,2]<stderr>:Traceback (most recent call last):", 2, b"Traceback (most recent call last):"),
        (b"[1,11]<stdout>:epoch: 1 step: 2, loss is 3.0", 11, b"epoch: 1 step: 2, loss is 3.0"),
        (
            b"[rank6]:[E624 07:12:55.531 ProcessGroupNCCL.cpp:1537] x",
            6,
            b"[E624 07:12:55.531 ProcessGroupNCCL.cpp:1537] x",
        ),
        (b"[uk:60506] *** Process received signal ***", None, b"*** Process received signal ***"),
        (b"[2024-05-08 08:47:31,877] torch", None, b""),
        (b"[WARNING] ME(1:2,MainProcess)", None, b""),
    ],
)
def test_launcher_tags(line: bytes, rank: int | None, rest: bytes) -> None:
    got_rank, skip = line_tag(line)
    assert got_rank == rank and (line[skip:] if skip else b"") == rest


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_a_tag_is_always_a_prefix_of_the_line(data: bytes) -> None:
    rank, skip = line_tag(data)
    assert 0 <= skip <= len(data) and (rank is None or (skip and rank >= 0))


def test_failures_behind_tags_take_the_rank_of_the_tag(tmp_path: Path) -> None:
    """Real lines: ChenRocks/UNITER#31 (mpirun --tag-output) and modelscope/DiffSynth-Studio#458."""
    (tmp_path / "train.log").write_text(
        "[1,1]<stderr>:    mpi_lib.horovod_torch_wait_and_clear(handle)\n"
        "[1,1]<stderr>:RuntimeError: Horovod has been shut down. This was caused by an exception on one of the ranks\n"
        "[rank6]:[E318 07:39:53.793305338 ProcessGroupNCCL.cpp:616] [Rank 6] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=610, OpType=COALESCED, NumelIn=76800, NumelOut=614400, Timeout(ms)=600000) ran "
        "for 600087 milliseconds before timing out.\n"
        "[uk:60506] *** Process received signal ***\n"
    )
    errors = read_run(tmp_path).errors
    assert errors["rank"].astype(int).tolist() == [1, 6, 0]
    assert errors["message"].iloc[0].startswith("RuntimeError: Horovod has been shut down")
    assert set(failed_ranks(read_run(tmp_path))) == {0, 1, 6}


def test_a_tagged_traceback_is_one_failure_of_its_rank(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text(
        "[1,0]<stdout>:epoch: 1 step: 1, loss is 2.5\n"
        "[1,2]<stderr>:Traceback (most recent call last):\n"
        '[1,2]<stderr>:  File "train.py", line 3, in <module>\n'
        "[1,2]<stderr>:ValueError: boom\n"
    )
    snap = read_run(tmp_path)
    assert snap.errors["message"].tolist() == ["ValueError: boom"] and snap.errors["rank"].tolist() == [2]
    assert len(snap.metrics) == 1


# ----------------------------------------------------------------------------- rows in new notations


@pytest.mark.parametrize(
    "line, loss, step",
    [
        # THUDM/Chinese-Transformer-XL#7 (old Megatron, no colons)
        (
            " iteration      400/    3000 | elapsed time per iteration (ms): 1049.4 | learning rate 6.300E-06 | "
            "lm loss 6.758929E+00 | loss scale 64.0 |",
            6.758929,
            400,
        ),
        (
            " iteration      700/    3000 | elapsed time per iteration (ms): 1050.6 | learning rate 6.300E-06 | "
            "lm loss NAN | loss scale 0.1 |",
            "nan",
            700,
        ),
        ("progress 10/2754 loss 0.666556 acc 0.82", 0.666556, None),  # quoted in issue 30
        ("step 3 loss nan grad_norm nan rank 2", "nan", 3),  # quoted in issue 30 (step added)
        ("Epoch 1 completed with avg loss: 2.4179, learning rate: 0.003", 2.4179, None),  # quoted in issue 30
        ("Epoch: [0][10/500] loss: 4.6559 (4.7341) lr 0.1", 4.6559, None),  # running average after the value
        ("loss: inf", "inf", None),
        ("loss: -Infinity", "-inf", None),
    ],
)
def test_notations_give_a_training_row(line: str, loss: float | str, step: int | None) -> None:
    read = read_line(line)
    assert read is not None and not read.eval
    got = read.fields["loss"]
    assert math.isnan(got) if loss == "nan" else got == float(loss), got
    if step is not None:
        assert read.fields["step"] == step


@settings(max_examples=300, deadline=None)
@given(
    value=st.floats(allow_nan=False, allow_infinity=False, width=64),
    spec=st.sampled_from(["{:.6E}", "{!r}", "{:.16f}", "{:.4f}"]),
    template=st.sampled_from(
        [
            " iteration      400/    3000 | learning rate 6.300E-06 | lm loss {} | loss scale 64.0 |",
            "progress 10/2754 loss {} acc 0.82",
            "2023-01-30 18:47:07,107 DEBUG TRAIN Batch 4/203700 loss {} loss_att 10.921429 lr 0.00032621 rank 0",
        ]
    ),
)
def test_a_space_separated_loss_reads_its_value_exactly(value: float, spec: str, template: str) -> None:
    """Every value a `key value` loss prints is read as `float` reads it (a plain integer is prose, no row)."""
    text = spec.format(value)
    read = read_line(template.format(text))
    if not any(c in text for c in ".eE"):
        assert read is None or "loss" not in read.fields
        return
    assert read is not None and not read.eval and read.fields["loss"] == float(text)


@pytest.mark.parametrize("spelling", ["nan", "NaN", "NAN", "inf", "Inf", "INF", "-inf", "Infinity", "-Infinity"])
def test_every_nan_and_inf_spelling_is_a_loss(spelling: str) -> None:
    for line in (f"| lm loss {spelling} |", f"loss: {spelling}", f"'loss': {spelling},", f"loss={spelling}, lr=1e-4"):
        read = read_line(line)
        assert read is not None, line
        got, want = read.fields["loss"], float(spelling)
        assert (math.isnan(got) and math.isnan(want)) or got == want, line


@pytest.mark.parametrize(
    "line",
    [
        "the loss 3 times",  # prose: a bare integer after `loss ` is no value
        "Init loss scale: 65536.0",  # mindone#465's banner
        "Loss scaler: dynamic",
        " iteration     5427/ 5000 | loss scale: 1.0 | grad norm: nan |",  # bigscience Megatron-DeepSpeed#396
    ],
)
def test_lines_that_only_mention_loss_give_no_row(line: str) -> None:
    read = read_line(line)
    assert read is None or read.eval or "loss" not in read.fields


WENET = [  # wenet-e2e/wenet#941 and #846
    "2023-01-30 18:47:07,107 DEBUG TRAIN Batch 4/203700 loss 12.646465 loss_att 10.921429 loss_ctc 16.671551 "
    "lr 0.00032621 rank 0",
    "2023-01-30 18:49:55,773 DEBUG CV Batch 4/0 loss 28.517015 loss_att 24.142754 loss_ctc 38.723625 history loss "
    "27.957858 rank 2",
    "2021-12-05 10:00:32,073 INFO Epoch 74 CV info cv_loss 7.627509962902044",
]


def test_cross_validation_lines_are_a_series_of_their_own() -> None:
    train, cv_batch, cv_info = (read_line(x) for x in WENET)
    assert train is not None and not train.eval and train.fields["loss"] == 12.646465
    assert cv_batch is not None and cv_batch.eval and cv_info is not None and cv_info.eval


def test_key_value_pairs_without_separators_are_metrics() -> None:
    train = read_line(WENET[0])
    assert train is not None
    assert train.extras == {"loss_att": 10.921429, "loss_ctc": 16.671551} and train.fields["lr"] == 0.00032621
    megatron = read_line(
        " iteration      400/    3000 | elapsed time per iteration (ms): 1049.4 | learning rate 6.300E-06 | "
        "lm loss 6.758929E+00 | loss scale 64.0 |"
    )
    assert megatron is not None and megatron.fields["lr"] == 6.3e-06 and megatron.fields["loss_scale"] == 64.0
    assert megatron.keys["lr"] == "learning_rate"


def test_a_trainers_final_summary_is_not_the_last_training_row(tmp_path: Path) -> None:
    """Real lines: mindspore-lab/mindnlp llm/finetune/blenderbot_small/mindNLPCopaLog.txt."""
    (tmp_path / "train.log").write_text(
        "{'loss': 0.0117, 'learning_rate': 4.5e-05, 'epoch': 1.0}\n"
        "{'eval_loss': 0.010459424927830696, 'eval_runtime': 19.7896, 'eval_samples_per_second': 6.316, "
        "'eval_steps_per_second': 1.617, 'epoch': 1.0}\n"
        "{'loss': 0.0002, 'learning_rate': 0.0, 'epoch': 10.0}\n"
        "{'train_runtime': 11591.6409, 'train_samples_per_second': 6.211, 'train_steps_per_second': 1.553, "
        "'train_loss': 0.002952050690849622, 'epoch': 10.0}\n"
    )
    snap = read_run(tmp_path)
    assert snap.metrics["loss"].tolist() == [0.0117, 0.0002]
    assert 0.002952050690849622 in snap.evals["value"].tolist()


def test_the_row_stream_prints_nan_and_inf() -> None:
    rows = pd.DataFrame({"rank": [0, 0, 0], "epoch": [1.0, 1.0, 1.0], "step": [1.0, 2.0, 3.0]})
    rows["loss"] = [2.5, float("nan"), float("inf")]
    lines = new_rows(rows, 0)
    assert [x.split("loss ")[1] for x in lines] == ["2.5", "nan", "inf"]


# ----------------------------------------------------------------------------- NaN the run trains past


def test_a_nan_the_run_trains_past_is_reported_not_failed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """THUDM/Chinese-Transformer-XL#7: `lm loss NAN` at iteration 700, finite losses after it."""
    (tmp_path / "train.log").write_text(
        " iteration      600/    3000 | learning rate 6.300E-06 | lm loss 5.120000E+00 | loss scale 64.0 |\n"
        " iteration      700/    3000 | learning rate 6.300E-06 | lm loss NAN | loss scale 0.1 |\n"
        " iteration      800/    3000 | learning rate 6.300E-06 | lm loss 4.980000E+00 | loss scale 0.1 |\n"
    )
    assert _judged(tmp_path, capsys) == (set(), set(), set())
    row = rank_status(read_run(tmp_path)).iloc[0]
    assert "loss was nan at step 700" in row["detail"]


def test_a_nan_that_stays_fails_the_rank(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "train.log").write_text(_lm() + "epoch: 1 step: 9, loss is nan\n")
    assert _judged(tmp_path, capsys) == ({0}, {0}, {0})


# ----------------------------------------------------------------------------- divergence of a dead rank


def test_a_dead_ranks_older_loss_is_no_divergence() -> None:
    """1,024 ranks, 696-703 crashed at step 150 of 200 (the Monitor listed four of them as diverging)."""
    steps = np.arange(200)
    rng = np.random.default_rng(0)
    grid = 4.0 * np.exp(-steps / 60.0) + 0.5 + rng.normal(0, 0.01, (1024, 200))
    grid[696:704, 151:] = np.nan
    ranks = np.arange(1024)
    assert lagging_ranks(grid, ranks) == []
    grid[17, -1] = 9.0  # a live rank far from the others at the latest step is still named
    assert lagging_ranks(grid, ranks) == [17]
    grid[700, 150] = 9.0  # and a dead rank far from the others at its own last step
    assert set(lagging_ranks(grid, ranks)) == {17, 700}


def test_a_traceback_cut_off_by_another_has_one_context_however_the_log_was_written(tmp_path: Path) -> None:
    """Found by the chunked-writes property test: a traceback header followed by another header kept its
    text as context when the second came in a later read, and nothing when both came in one."""
    from core.logs import ReaderSettings
    from core.logs.rows.reader import RunReader

    data = b"Traceback (most recent call last):\nTraceback (most recent call last):\n"
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "worker_0.log").write_bytes(data)
    once = read_run(tmp_path / "one").errors["context"].tolist()
    (tmp_path / "two").mkdir()
    path = tmp_path / "two" / "worker_0.log"
    path.write_bytes(data[:35])
    state = RunReader(tmp_path / "two", settings=ReaderSettings(read_block=300, prefetch_min=1))
    state.refresh()
    with path.open("ab") as f:
        f.write(data[35:])
    state.refresh()
    assert state.snapshot().errors["context"].tolist() == once == ["Traceback (most recent call last):\n"] * 2
