"""Issue 30, round 11: failure known gaps of the real-log corpus closed, each by a rule on a line's shape and checked
on the real lines of its log (the source beside each), on every read path:

- Open MPI's signal report (mindspore-lab/mindyolo#242): its head `*** Process received signal ***` says a signal
  came, not which ("signal received", weight 1); its next line `Signal: Segmentation fault (11)` names it, also
  behind the `[host:pid] ` prefix of a paste that indents every line;
- a chained traceback (Jeen-Freecs/kd_thesis's wandb output.log): Python's fixed line between two tracebacks (`The
  above exception was the direct cause of the following exception:`, `During handling of the above exception, another
  exception occurred:`) is kept on the earlier failure (core.logs.rows.chains), and diagnose names the rank's failure
  by the chain's last exception (core.logs.judgement.naming), the one that ended the run;
- Slurm's kill followed by one late row (coqui-ai/STT#2238): the row the killed task flushed after slurmstepd's
  lines is no training after the kill (core.logs.rows.kills); two rows after it still are;
- a launch appended after a failure (Sunting78/PP-Industry's workerlog.1): the file's opening printed again after a
  failure makes it the earlier launch's (core.logs.rows.relaunch);
- a live tick's error frame (core.logs.rows.snapshot.SideFrames) is rebuilt when an error is replaced in place.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.chains import CHAIN_LINES, chained
from core.logs.rows.failures import failure_weight, fatal_reason
from core.logs.rows.reader import RunReader
from core.logs.rows.relaunch import opening_lines
from tests.helpers import READ_PATHS, REAL_LOGS, entry_lines, one_log

PATHS = READ_PATHS
# github.com/mindspore-lab/mindyolo/issues/242: one wrapped row, its step-time line, Open MPI's report, all indented
MINDYOLO_242 = "mindyolo-wrapped-epoch-step-row-then-segfault-signal-11_mindyolo-242"
# github.com/Jeen-Freecs/kd_thesis wandb/run-20251028_205425-7534idpa/files/output.log: a chain of four tracebacks
KD_THESIS = (
    "wandb-output-log-lightning-bar-collapsed-to-one-line-then-wandb-authenticationerror-at-epoch-17_kd-thesis-7534idpa"
)
# github.com/coqui-ai/STT/issues/2238: three rows, slurmstepd's memory-limit kill and CANCELLED, one row after them
COQUI_2238 = "pipe-epoch-training-steps-loss-then-slurmstepd-memory-limit-cancelled_coqui-stt-2238"
# github.com/Sunting78/PP-Industry log/workerlog.1 (and .0): launch 1 SIGTERM'd, launch 2 appended, completes on rank 0
PADDLESEG = "paddleseg-2-workerlogs-sigterm-relaunch-then-16000-iters-complete_pp-industry-workerlog"
AUTH = "wandb.errors.errors.AuthenticationError: An error occurred while verifying the API key."


def test_open_mpi_s_report_head_says_less_than_its_signal_line() -> None:
    lines = entry_lines(MINDYOLO_242)
    head, signal = lines[3], lines[4]  # `  [m2301007135:374576] *** Process received signal ***`, `... Signal: ...`
    assert fatal_reason(head) == "signal received" and fatal_reason(signal) == "signal"
    assert failure_weight(head.decode().strip()) < failure_weight(signal.decode().strip())
    # the prefix is Open MPI's `[host:pid] `: other brackets before `Signal:` are no report
    assert fatal_reason(b"[INFO] Signal: Segmentation fault (11)") is None
    assert fatal_reason(b"  [m2301007135:374576] Signal: handler installed for the run") is None


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_indented_report_is_named_by_its_signal_on_every_path(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, entry_lines(MINDYOLO_242)), settings=PATHS[path])
    assert list(failed_ranks(snap)) == [0]
    [group] = diagnose(snap).failure_groups
    assert "Signal: Segmentation fault (11)" in group.exception


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_report_s_head_alone_still_ends_the_rank(tmp_path: Path, path: str) -> None:
    # a paste that keeps only the report's first line (tactcomplabs/rev#78's, behind mindyolo-242's prefix)
    snap = read_run(one_log(tmp_path, entry_lines(MINDYOLO_242)[3:4]), settings=PATHS[path])
    assert "Process received signal" in failed_ranks(snap)[0]


# ----------------------------------------------------------------------------- a chained traceback


def test_the_chain_s_fixed_lines_are_the_real_ones() -> None:
    lines = {line.decode() for line in entry_lines(KD_THESIS)}
    assert set(CHAIN_LINES) <= lines


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_chain_is_named_by_its_last_exception_on_every_path(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, entry_lines(KD_THESIS)), settings=PATHS[path])
    [group] = diagnose(snap).failure_groups
    assert group.exception == AUTH
    # the chain's earlier failures are still listed, each with the fixed line that led on from it
    exc = snap.errors[snap.errors["kind"] == "exception"]
    assert exc["message"].iloc[0] == "TimeoutError: The read operation timed out"
    assert [chained(str(c)) for c in exc["context"]] == [True] * (len(exc) - 1) + [False]


def test_the_fixed_line_is_found_when_a_tick_ends_before_the_next_header(tmp_path: Path) -> None:
    lines = entry_lines(KD_THESIS)
    cut = lines.index(CHAIN_LINES[1].encode()) + 2  # the live tick ends after the fixed line and its blank line
    assert lines[cut].startswith(b"Traceback")
    log = tmp_path / "output.log"
    log.write_bytes(b"\n".join(lines[:cut]) + b"\n")
    reader = RunReader(tmp_path)
    reader.refresh()
    with log.open("ab") as f:
        f.write(b"\n".join(lines[cut:]) + b"\n")
    reader.refresh()
    [group] = diagnose(reader.snapshot()).failure_groups
    assert group.exception == AUTH


@pytest.mark.parametrize("tag", ["", "[rank1]: ", "[1,1]<stderr>:"])
def test_a_chain_behind_a_launcher_s_tag(tmp_path: Path, tag: str) -> None:
    # kd_thesis's last two exceptions, shortened, each line behind a launcher's tag (the blank lines too)
    raw = [
        "Traceback (most recent call last):",
        '  File "/venv/kd-env/lib/python3.11/site-packages/requests/adapters.py", line 690, in send',
        "    raise ReadTimeout(e, request=request)",
        "urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='api.wandb.ai', port=443): Read timed out.",
        "",
        CHAIN_LINES[0],
        "",
        "Traceback (most recent call last):",
        '  File "/venv/kd-env/lib/python3.11/site-packages/wandb/sdk/wandb_login.py", line 350, in _verify_login',
        "    raise AuthenticationError(",
        AUTH,
    ]
    snap = read_run(one_log(tmp_path, [(tag + line).encode() for line in raw]))
    [group] = diagnose(snap).failure_groups
    assert group.exception == AUTH


def test_an_exception_with_no_chain_line_before_the_next_traceback_keeps_the_first_name(tmp_path: Path) -> None:
    # two tracebacks one after the other with no chain line: two failures, the first names the rank (as before)
    lines = entry_lines(KD_THESIS)
    first = lines.index(b"TimeoutError: The read operation timed out")
    last = lines.index(AUTH.encode())
    kept = lines[: first + 1] + lines[lines.index(CHAIN_LINES[0].encode(), first) + 2 : last + 1]
    kept = [line for line in kept if line not in {c.encode() for c in CHAIN_LINES}]
    [group] = diagnose(read_run(one_log(tmp_path, kept))).failure_groups
    assert group.exception == "TimeoutError: The read operation timed out"


def test_a_chain_cut_by_the_log_s_end_is_named_by_its_last_whole_exception(tmp_path: Path) -> None:
    lines = entry_lines(KD_THESIS)
    end = lines.index(
        b"urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='api.wandb.ai', port=443): "
        b"Read timed out. (read timeout=20)"
    )
    [group] = diagnose(read_run(one_log(tmp_path, lines[: end + 6]))).failure_groups  # the next header, one frame
    assert group.exception.startswith("urllib3.exceptions.ReadTimeoutError: ")


# ----------------------------------------------------------------------------- a scheduler's kill, then one late row


@pytest.mark.parametrize("path", sorted(PATHS))
def test_slurm_s_kill_then_one_late_row_ends_the_run_on_every_path(tmp_path: Path, path: str) -> None:
    lines = entry_lines(COQUI_2238)
    assert lines[-1].startswith(b"Epoch 0 |   Training") and b"CANCELLED AT" in lines[-2]
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert len(snap.metrics) == 4  # the late row is a row
    assert list(failed_ranks(snap)) == [0]
    [group] = diagnose(snap).failure_groups
    assert group.exception.startswith("slurmstepd: error: Job 7518 exceeded memory limit")


def test_the_late_row_read_in_a_later_tick_still_leaves_the_kill(tmp_path: Path) -> None:
    lines = entry_lines(COQUI_2238)
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    reader = RunReader(tmp_path)
    for line in lines:  # one line a tick: the table takes the rows between the kill and the late row
        with log.open("ab") as f:
            f.write(line + b"\n")
        reader.refresh()
        reader.snapshot()  # (the table takes the rows read so far)
    assert list(failed_ranks(reader.snapshot())) == [0]


@pytest.mark.parametrize("live", [False, True])
def test_two_rows_after_the_kill_are_a_run_that_went_on(tmp_path: Path, live: bool) -> None:
    # the real lines and one more row of the same shape after the late one (a requeued job writing on)
    lines = [*entry_lines(COQUI_2238), b"Epoch 0 |   Training | Elapsed Time: 0:00:16 | Steps: 97 | Loss: 23.911020"]
    log = tmp_path / "train.log"
    if live:
        log.write_bytes(b"")
        reader = RunReader(tmp_path)
        for line in lines:
            with log.open("ab") as f:
                f.write(line + b"\n")
            reader.refresh()
            reader.snapshot()
        snap = reader.snapshot()
    else:
        snap = read_run(one_log(tmp_path, lines))
    assert failed_ranks(snap) == {}
    assert (snap.errors["kind"] == "error_log").sum() == 2  # the kill and the cancel, listed as error lines


# ----------------------------------------------------------------------------- a live tick's error frame


def test_a_live_tick_s_error_frame_follows_errors_replaced_in_place(tmp_path: Path) -> None:
    # a traceback's exception line replaces its cut failure, and training after it turns it into an error line: the
    # count of errors stays, the frame the snapshot keeps between ticks must not (it said "cut off" and failed rank 0)
    lines = [
        b"epoch: 1 step: 1, loss is 2.0",
        b"Traceback (most recent call last):",
        b'  File "dl.py", line 9',
        b"TimeoutError: read",
        b"epoch: 1 step: 2, loss is 1.9",
    ]
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    reader = RunReader(tmp_path)
    kinds = []
    for line in lines:
        with log.open("ab") as f:
            f.write(line + b"\n")
        reader.refresh()
        errors = reader.snapshot().errors
        kinds.append(list(zip(errors["kind"], errors["message"], strict=True)))
    assert kinds[3] == [("exception", "TimeoutError: read")]
    assert kinds[4] == [("error_log", "TimeoutError: read")]
    assert failed_ranks(reader.snapshot()) == failed_ranks(read_run(tmp_path)) == {}


# ----------------------------------------------------------------------------- a relaunch appended after a failure


def _rank1_lines() -> list[bytes]:
    [log] = [p for p in (REAL_LOGS / PADDLESEG / "log").iterdir() if p.name == "workerlog.1"]
    return log.read_bytes().splitlines()


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_failure_before_the_file_s_opening_again_is_the_earlier_launch_s(tmp_path: Path, path: str) -> None:
    lines = _rank1_lines()
    fatal = next(i for i, line in enumerate(lines) if line.startswith(b"FatalError: "))
    assert lines[fatal + 4 : fatal + 6] == lines[:2]  # the relaunch's opening, after the report and a blank line
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    assert failed_ranks(snap) == {}
    assert "error_log" in set(snap.errors["kind"])  # the earlier launch's failure is still listed
    # without the relaunch the failure ends the rank
    assert list(failed_ranks(read_run(one_log(tmp_path, lines[: fatal + 4]), settings=PATHS[path]))) == [0]


def test_the_opening_written_over_two_live_ticks_is_found(tmp_path: Path) -> None:
    log = tmp_path / "workerlog.0"
    log.write_bytes(b"")
    reader = RunReader(tmp_path)
    for line in _rank1_lines():
        with log.open("ab") as f:
            f.write(line + b"\n")
        reader.refresh()
        reader.snapshot()
    assert failed_ranks(reader.snapshot()) == {}


def test_one_line_printed_again_or_a_failure_after_the_relaunch_still_fails(tmp_path: Path) -> None:
    lines = _rank1_lines()
    fatal = next(i for i, line in enumerate(lines) if line.startswith(b"FatalError: "))
    # a file opening with one line printed twice has no opening a relaunch is told by (a warning it repeats)
    assert opening_lines(((lines[0] + b"\n") * 2)[:256]) is None
    assert opening_lines(b"\n".join(lines)[:256]) is not None
    # the first line alone again (a warning printed twice) is no relaunch
    once = [*lines[: fatal + 4], lines[0], b"W0306 19:40:53.167418 23873 gpu_resources.cc:91] device: 1"]
    assert list(failed_ranks(read_run(one_log(tmp_path, once)))) == [0]
    # the relaunch's own failure (the first launch's report again, after the opening) ends the rank
    again = [*lines, *lines[fatal - 3 : fatal + 3]]
    assert list(failed_ranks(read_run(one_log(tmp_path, again)))) == [0]


# ----------------------------------------------------------------------------- torchrun's Root Cause

# github.com/vllm-project/speculators/issues/1115: `Failures:` ranks 3 (13:02:58), 0 and 2 (13:03:29); Root Cause rank 1
SPECULATORS = "torchrun-childfailed-failures-ranks-3-0-2-root-cause-rank-1-npu_speculators-1115"
# a 2-rank run's report whose Root Cause is rank 0 (its other failure, rank 1, at the same second)
MSFREB = "torchrun-2-ranks-metriclogger-total-loss-then-typeerror-save-model-childfailederror_msfreb-train-log-err"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_report_s_block_times_make_its_root_cause_the_likely_one(tmp_path: Path, path: str) -> None:
    lines = entry_lines(SPECULATORS)
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    tasks = snap.errors[snap.errors["kind"] == "task_exit"]
    when = {int(r): t for r, t in zip(tasks["rank"], tasks["log_time"], strict=True)}
    assert when[1] == when[3] < when[0] == when[2]  # 13:02:58 before 13:03:29, as the blocks' `time` fields say
    assert when[0] - when[1] == 31
    assert diagnose(snap).root_cause == 1  # the report's `Root Cause (first observed failure):` rank


def test_a_report_whose_root_cause_is_rank_0_agrees() -> None:
    text = b"".join(p.read_bytes() for p in (REAL_LOGS / MSFREB / "log").rglob("*") if p.is_file())
    cause = text[text.index(b"Root Cause (first observed failure):") :]
    assert b"rank      : 0 (local_rank: 0)" in cause
    assert diagnose(read_run(REAL_LOGS / MSFREB / "log")).root_cause == 0


def test_a_time_field_of_another_block_is_not_taken(tmp_path: Path) -> None:
    # a block cut before its `time` field (the paste kept its `[N]:` line and `rank` only): no time
    lines = [b"[0]:", b"  time      : 2026-09-07_13:02:58", b"  host      : localhost", b"[1]:"]
    lines += [b"  host      : localhost", b"  rank      : 1 (local_rank: 1)"]
    snap = read_run(one_log(tmp_path, lines))
    assert snap.errors["log_time"].isna().all()
