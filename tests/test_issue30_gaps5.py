"""Issue 30, the corpus's known gaps closed by general rules, each on its entry's real lines
(tests/fixtures/real_logs/<entry>/SOURCE.md), on every read path (tests/helpers.READ_PATHS):

- deepspeed-zero2-init-then-sigkill-handler-killing-subprocess_openrlhf-977: DeepSpeed's launcher says at INFO level
  that it killed its workers (`[date] [INFO] [launch.py:319:sigkill_handler] Killing subprocess N`): a launcher's
  report (a chatter `LauncherReport`), the lowest tier, so the launcher's exit-code report (`exits with return code =
  -9`, deepspeed-3512) and a worker's own failure still name the end;
- backtick-rank1-traceback-carets-cut-in-compute-loss_qwen3-vl-2001: a markdown backtick the user opened the paste
  with, glued before torchrun's `[rank1]:` tag (`` `[rank1]: Traceback``): the rank is the tag's behind it;
- composer-nccl-watchdog-rank-7-broadcast-terminate_llm-foundry-224: torch's C++ log lines of one message block name
  the rank on their first line only (`[E ProcessGroupNCCL.cpp:828] [Rank 7] Watchdog caught ...`, then `[E
  ProcessGroupNCCL.cpp:455] Some NCCL operations have failed ...`): an unnamed line right after a named one of the
  same source file is that rank's (failures.same_source_rank): one rank, not the file's rank 0 besides;
- uctransnet-indented-train-rows-loss-colon-no-space-avg-dice_uctransnet-2: a `key value` pair after a value's running
  average in parentheses (`Dice:0.0909 (Avg 0.0909) LR 1.00e-03`) is a metric; the average's own words are none;
- nanogpt-style-step-train-val-loss-nan-and-iter-row_tiny-universe-31 (still a known gap: the tie below): llama2.c's
  iteration row begins with its bare step as a pipe table's first cell (`100000 | loss nan | lr ...`), so its
  estimates (`step N: train loss X, val loss Y`, the same loss at the same step) are its echoes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks, rank_status
from core.logs.rows.general import read_line
from core.logs.rows.linekinds import failure_after_prefix
from core.logs.rows.taskends import kills_only, task_end
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

DEEPSPEED = "deepspeed-zero2-init-then-sigkill-handler-killing-subprocess_openrlhf-977"
EXIT_9 = "deepspeed-launcher-return-code-minus-9-during-build_deepspeed-3512"
FOUNDRY = "composer-nccl-watchdog-rank-7-broadcast-terminate_llm-foundry-224"
TWO_RANKS = "nccl-watchdog-ranks-1-0-taking-process-down-block_llamafactory-74"
UCTRANS = "uctransnet-indented-train-rows-loss-colon-no-space-avg-dice_uctransnet-2"
TINY = "nanogpt-style-step-train-val-loss-nan-and-iter-row_tiny-universe-31"
QWEN = "backtick-rank1-traceback-carets-cut-in-compute-loss_qwen3-vl-2001"

# ----------------------------------------------------------------------------- a launcher killing its workers


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_deepspeed_s_launcher_killing_its_workers_ends_the_run(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, DEEPSPEED, path)  # its failed ranks: test_issue30_entry_failures
    assert rank_status(snap)["state"].tolist() == ["crashed"]
    [group] = diagnose(snap).failure_groups
    assert group.ranks == [0] and "sigkill_handler" in group.exception


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_exit_code_report_outranks_the_kill_lines_before_it(tmp_path: Path, path: str) -> None:
    """deepspeed-3512: `Killing subprocess` then `exits with return code = -9`: the signal names the end."""
    snap = read_entry(tmp_path, EXIT_9, path)
    assert "SIGKILL" in diagnose(snap).failure_groups[0].exception


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_exit_code_report_outranks_kill_lines_after_it(tmp_path: Path, path: str) -> None:
    """Whatever their order, a kill report is the lowest tier (the exit-code report's real line, then the kills)."""
    exit_line = entry_lines(EXIT_9)[-1]
    snap = read_run(one_log(tmp_path, [exit_line, *entry_lines(DEEPSPEED)[-2:]]), settings=READ_PATHS[path])
    assert "SIGKILL" in failed_ranks(snap)[0]
    assert "SIGKILL" in diagnose(snap).failure_groups[0].exception


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_worker_s_own_exception_outranks_the_kill_lines(tmp_path: Path, path: str) -> None:
    lines = [b"Traceback (most recent call last):", b'  File "train.py", line 3', b"ValueError: bad batch"]
    snap = read_run(one_log(tmp_path, [*lines, *entry_lines(DEEPSPEED)[-2:]]), settings=READ_PATHS[path])
    assert failed_ranks(snap)[0] == "ValueError: bad batch"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_killing_subprocess_then_training_rows_is_no_failure(tmp_path: Path, path: str) -> None:
    rows = [b"epoch: 1 step: %d, loss is %d.5" % (s, 9 - s) for s in range(1, 40)]
    snap = read_run(one_log(tmp_path, [*entry_lines(DEEPSPEED), *rows]), settings=READ_PATHS[path])
    assert not failed_ranks(snap)  # a relaunch that trains on did not end there
    assert len(snap.metrics) == 39


@pytest.mark.parametrize(
    "line",
    [
        b"[2025-04-17 23:16:39,064] [INFO] [train.py:12:main] Killing subprocess is what the launcher would do",
        b"Killing subprocess 1619464",  # no handler named
        b"[2025-04-17 23:16:39,064] [INFO] [launch.py:319:sigkill_handler] Killing subprocess",  # no pid
    ],
)
def test_the_words_without_the_handler_and_pid_are_no_failure(tmp_path: Path, line: bytes) -> None:
    assert task_end(line) is None
    assert not failed_ranks(read_run(one_log(tmp_path, [line])))


def test_only_a_kill_report_is_kills_only() -> None:
    kill = task_end(entry_lines(DEEPSPEED)[-1])
    exit9 = task_end(entry_lines(EXIT_9)[-1])
    assert kill is not None and exit9 is not None
    assert kills_only(kill.message(0)) and not kills_only(exit9.message(0))
    assert not kills_only("ValueError: killed by its launcher (sigkill_handler: Killing subprocess)")


# ----------------------------------------------------------------------------- paste debris before a rank's tag


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_backtick_before_the_rank_tag_leaves_the_traceback_that_rank_s(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, QWEN, path)
    [group] = diagnose(snap).failure_groups
    assert group.ranks == [1] and "Traceback" in group.exception


@pytest.mark.parametrize("fence", [b"`", b"```"])
@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_fenced_tagged_traceback_is_its_rank_s_with_its_exception(tmp_path: Path, path: str, fence: bytes) -> None:
    header, *frames = entry_lines(QWEN)
    lines = [fence + header.lstrip(b"`"), *frames, b"[rank1]: ValueError: bad batch"]
    snap = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path])
    assert failed_ranks(snap) == {1: "ValueError: bad batch"}


def test_a_backtick_before_no_failure_s_line_is_no_tag() -> None:
    assert failure_after_prefix(b"`[rank1]: loading the model", False) == (0, None, None)
    assert failure_after_prefix(b"```", False) == (0, None, None)
    assert failure_after_prefix(entry_lines(QWEN)[0], False) == (len(b"`[rank1]: "), 1, None)


@given(st.binary(max_size=40))
@example(b"`" * 40)
@example(b"`[rank9]:")
def test_a_backtick_prefix_is_read_within_the_line(rest: bytes) -> None:
    line = b"`" + rest
    skip, rank, _ = failure_after_prefix(line, False)
    assert 0 <= skip <= len(line) and (rank is None or rank >= 0)


# ----------------------------------------------------------------------------- one message block, one rank


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_block_of_torch_s_cpp_lines_is_the_rank_its_first_names(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, FOUNDRY, path)
    assert snap.ranks["rank"].tolist() == [7]
    assert set(snap.errors["rank"]) == {7}


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_stream_that_names_two_ranks_keeps_each_block_its_rank(tmp_path: Path, path: str) -> None:
    """llamafactory-74: `[Rank 1] Watchdog ...`, `[Rank 0] Watchdog ...`, then the unnamed lines (rank 0's block)."""
    snap = read_entry(tmp_path, TWO_RANKS, path)
    assert snap.ranks["rank"].tolist() == [0, 1]


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_another_failure_between_ends_the_block(tmp_path: Path, path: str) -> None:
    """The unnamed line takes the rank only right after an error line of its own source file: another failure
    between them leaves it the file's (chatter between them, the real log's UserWarning, does not)."""
    first, _, _, some, down, *_ = entry_lines(FOUNDRY)
    snap = read_run(one_log(tmp_path, [first, b"Fatal Python error: Aborted", some, down]), settings=READ_PATHS[path])
    assert snap.errors["rank"].tolist() == [7, 0, 0, 0]


def test_a_line_of_another_source_is_no_part_of_the_block(tmp_path: Path) -> None:
    first, *_ = entry_lines(FOUNDRY)
    other = b"[E ProcessGroupGloo.cpp:138] Some NCCL operations have failed or timed out."
    snap = read_run(one_log(tmp_path, [first, other]))
    assert snap.errors["rank"].tolist() == [7, 0]


def test_an_unnamed_line_before_the_rank_s_line_stays_the_file_s(tmp_path: Path) -> None:
    first, _, _, some, down, *_ = entry_lines(FOUNDRY)
    snap = read_run(one_log(tmp_path, [some, first, down]))
    assert snap.errors["rank"].tolist() == [0, 7, 7]


# ----------------------------------------------------------------------------- a pair after a running average


def test_a_pair_after_a_running_average_is_a_metric() -> None:
    line = (
        b"   [Train] Epoch: [1][1/4899]  Loss:0.776 (Avg 0.7759) Dice:0.0909 (Avg 0.0909) LR 1.00e-03   (AvgTime 6.3)"
    )
    read = read_line(line)
    assert read is not None and not read.eval
    assert read.fields["loss"] == 0.776 and read.fields["lr"] == 1.00e-03 and read.extras["dice"] == 0.0909
    assert not {"avg", "avgtime"} & {*read.fields, *read.extras}  # the average's words, inside its parentheses


def test_a_pair_after_a_bare_running_average_is_a_metric() -> None:
    read = read_line(b"Epoch 3 iter 40 loss: 4.6559 (4.7341) lr 2.5e-4")
    assert read is not None and read.fields["loss"] == 4.6559 and read.fields["lr"] == 2.5e-4


def test_words_inside_parentheses_after_a_loss_are_no_metrics() -> None:
    read = read_line(b"step 5 loss: 0.5 (mean 0.6) (eta 1.5)")
    assert read is not None and read.fields["loss"] == 0.5
    assert not {"mean", "eta"} & {*read.fields, *read.extras}


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_learning_rate_after_the_averages_is_a_column_on_every_path(tmp_path: Path, path: str) -> None:
    metrics = read_entry(tmp_path, UCTRANS, path).metrics
    assert len(metrics) == 7 and metrics["lr"].tolist() == [1.0e-03] * 7


# ----------------------------------------------------------------------------- llama2.c's rows beside its estimates


def test_a_bare_first_cell_of_a_pipe_row_is_its_step() -> None:
    read = read_line(entry_lines(TINY)[1])
    assert read is not None and read.fields["step"] == 100000 and read.fields["lr"] == 0.0
    assert read.extras["mfu"] == 1.68


@pytest.mark.parametrize(
    "line",
    [b"| 12 | loss 2.5 |", b"12.5 | loss 2.5 | lr 0.1", b"loss 2.5 | 12 | lr 0.1", b"12| loss 2.5"],
)
def test_a_number_elsewhere_or_no_integer_cell_is_no_step(line: bytes) -> None:
    read = read_line(line)
    assert read is not None and "step" not in read.fields


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_the_iteration_row_has_its_step_on_every_path(tmp_path: Path, path: str) -> None:
    """(Round 9, r9tables: both losses NaN, the estimate line naming fewer values is the row's echo, dropped by
    core.logs.rows.perfile: the one training row the entry expects. Before, two NaNs were never one loss, and both
    lines stayed rows; the entry stays a known gap for its eval row only.)"""
    snap = read_entry(tmp_path, TINY, path)
    assert snap.metrics["step"].tolist() == [100000]
    assert snap.metrics["lr"].tolist() == [0.0]
    assert set(failed_ranks(snap)) == {0}


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_llama2c_loop_rows_and_estimates(tmp_path: Path, path: str) -> None:
    """A longer run of the same loop: every estimate is evaluation, every iteration row is a row."""
    lines = []
    for step in range(0, 400, 100):
        lines.append(b"step %d: train loss %.4f, val loss %.4f" % (step, 9 - step / 100, 9.1 - step / 100))
        lines.append(b"%d | loss %.4f | lr 5.000000e-04 | 2006.12ms | mfu 1.68%%" % (step, 9 - step / 100))
    snap = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path])
    assert snap.metrics["step"].tolist() == [0, 100, 200, 300]
    assert snap.metrics["lr"].tolist() == [5e-4] * 4


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_two_rows_at_one_step_naming_as_many_values_both_stay(tmp_path: Path, path: str) -> None:
    lines = [b"step 5: loss_g 0.5, loss 1.5, lr 0.1", b"step 5: loss 1.25, grad_norm 2.0"]
    snap = read_run(one_log(tmp_path, lines), settings=READ_PATHS[path])
    assert snap.metrics["loss"].tolist() == [1.5, 1.25]
