"""Issue 30, round 10: failure known gaps of the real-log corpus closed, each by a rule on a line's shape and checked
on the real lines of its log (the source beside each), on every read path:

- Marian's spdlog `[date] Error: ` lines (marian-nmt/marian-dev#439): a `[date]` stamp before `Error:` is an error
  level of the candidate scans, its `CUDA error 2 'out of memory'` and `Error: Aborted from ...` are failure kinds;
- Slurm's kill (coqui-ai/STT#2238): `Job N exceeded memory limit (...), being killed` is a failure kind (the entry's
  gap stayed in round 10: the row written after the kill's lines undid it; round 11 closed it, core.logs.rows.kills);
- several launches appended to one workerlog (PommesPeter/IBOT-Paddle): a top-level traceback (every frame `in
  <module>`, an import that failed) is superseded by a later traceback of the same rank (core.logs.rows.launches);
- TensorFlow's FATAL log line (Ascend/modelzoo's PWC-Net job): `<date> <time>: F file:line] message` is the "fatal
  log" kind, which names the failure over CANN GE's `[ERROR]` lines before it;
- a folder none of whose files is named as a log (PLBFischer/walk-jump-fork's stderr `e`, ChidanshM/verf's
  `t_tgm-251214_2126.m`): its one text file holding training or failure lines is read by its content, and discovery,
  watch and diagnose say so (core.logs.bytes.sniff); binaries, checkpoints, configs, code and documents never are.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.__main__ import main
from core.logs import read_run
from core.logs.bytes.discover import discover, folder_notes
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import fatal_reason
from tests.helpers import READ_PATHS, REAL_LOGS, entry_lines, one_log

PATHS = READ_PATHS
# github.com/marian-nmt/marian-dev/issues/439: the whole pasted log (two [valid] lines, tcmalloc, the CUDA error)
MARIAN_439 = "marian-valid-lines-only-then-tcmalloc-and-cuda-oom-abort_marian-dev-439"
# github.com/coqui-ai/STT/issues/2238: three rows, slurmstepd's memory-limit kill and CANCELLED, one row after them
COQUI_2238 = "pipe-epoch-training-steps-loss-then-slurmstepd-memory-limit-cancelled_coqui-stt-2238"


def test_marian_s_error_lines_are_failure_kinds() -> None:
    lines = entry_lines(MARIAN_439)
    assert [fatal_reason(line) for line in lines[-2:]] == ["CUDA error", "logged abort"]
    assert [fatal_reason(line) for line in lines[:-2]] == [None] * (len(lines) - 2)
    # torch's `CUDA error: out of memory` is the device kinds' shape, not this one's (no code, no quotes)
    assert fatal_reason(b"RuntimeError: CUDA error: an illegal memory access was encountered") != "CUDA error"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_marian_s_cuda_out_of_memory_fails_its_rank_on_every_path(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, entry_lines(MARIAN_439)), settings=PATHS[path])
    assert list(failed_ranks(snap)) == [0]
    [group] = diagnose(snap).failure_groups
    assert "CUDA error 2 'out of memory'" in group.exception  # the cause (weight 3), not the abort after it


def test_slurm_s_memory_limit_kill_is_a_failure_kind() -> None:
    lines = entry_lines(COQUI_2238)
    assert fatal_reason(lines[3]) == "job memory limit" and fatal_reason(lines[5]) == "Slurm cancelled"
    assert fatal_reason(b"slurmstepd: error: Exceeded step memory limit at some point.") is None  # kills nothing


# github.com/PommesPeter/IBOT-Paddle log/workerlog.0: an attempt's import-time ModuleNotFoundError, then (appended to
# the same workerlog) the last attempt's ValueError from train_one_epoch and Paddle's SIGTERM summary
IBOT_PADDLE = "paddle-4-workerlogs-reshape-valueerror-every-rank-then-sigterm-no-rows_ibot-paddle"


def _workerlog_0() -> list[bytes]:
    return (REAL_LOGS / IBOT_PADDLE / "log" / "workerlog.0").read_bytes().splitlines()


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_later_launch_s_traceback_supersedes_a_top_level_one(tmp_path: Path, path: str) -> None:
    snap = read_run(one_log(tmp_path, _workerlog_0()), settings=PATHS[path])
    [group] = diagnose(snap).failure_groups
    assert group.exception.startswith("ValueError: (InvalidArgument) The 'shape' in ReshapeOp is invalid.")
    errors = snap.errors.set_index("message")["kind"]
    assert errors["ModuleNotFoundError: No module named 'ibot'"] == "error_log"  # still listed


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_top_level_traceback_alone_or_after_a_deeper_one_keeps_its_place(tmp_path: Path, path: str) -> None:
    """The import-time traceback alone is the failure; a traceback from inside a function (one launch's first,
    best-named root cause, as a DataLoader worker's before the main process's) is not superseded by a later one."""
    lines = _workerlog_0()
    top = lines[1:7]  # `Traceback ...` to `ModuleNotFoundError: No module named 'ibot'`
    snap = read_run(one_log(tmp_path, top), settings=PATHS[path])
    [group] = diagnose(snap).failure_groups
    assert group.exception == "ModuleNotFoundError: No module named 'ibot'"
    deep = lines[15:39]  # the ValueError's traceback, from `train_one_epoch`
    snap = read_run(one_log(tmp_path, [*deep, *top]), settings=PATHS[path])
    [group] = diagnose(snap).failure_groups
    assert group.exception.startswith("ValueError: (InvalidArgument)")


# github.com/Ascend/modelzoo, a ModelArts PWC-Net job's stdout: GE's `[ERROR]` lines, tf_adapter's FATAL line,
# ModelArts' exit-code line
PWCNET = "modelarts-pwcnet-ge-prerun-failed-doRunAsync-exit-minus-6-then-training-completed_ascend-modelzoo-pwcnet"


@pytest.mark.parametrize("path", sorted(PATHS))
def test_tensorflow_s_fatal_line_names_the_failure_over_ge_s_error_lines(tmp_path: Path, path: str) -> None:
    lines = entry_lines(PWCNET)
    [fatal] = [line for line in lines if fatal_reason(line) == "fatal log"]
    assert fatal.endswith(b"F tf_adapter/kernels/geop_npu.cc:570] GeOp7_0GEOP::::DoRunAsync Failed")
    snap = read_run(one_log(tmp_path, lines), settings=PATHS[path])
    [group] = diagnose(snap).failure_groups
    assert group.exception.endswith("DoRunAsync Failed")
    assert failed_ranks(snap)[0].endswith("DoRunAsync Failed")  # watch's reason, the same line
    # TF's INFO / WARNING / ERROR lines of the same shape are no fatal log
    for level in b"IWE":
        assert fatal_reason(fatal.replace(b": F ", b": %c " % level)) is None


# github.com/PLBFischer/walk-jump-fork: a Slurm job's stderr capture named `e` (Lightning's `'val_loss' reached` lines)
WALK_JUMP_E = "lightning-checkpoint-val-loss-lines-only-no-train-loss_walk-jump-fork-e"
# github.com/ChidanshM/verf: `python -m ttv.tgm > t_tgm-251214_2126.m` (epoch lines, then a traceback's header)
VERF_TGM = "epoch-train-val-pipe-rows-then-bare-traceback-header-in-tqdm_verf-t-tgm-251214-2126"


def _copy(entry: str, folder: Path) -> Path:
    """The entry's one log file, copied under its own name into `folder`."""
    [log] = [f for f in (REAL_LOGS / entry / "log").iterdir() if f.is_file()]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / log.name).write_bytes(log.read_bytes())
    return folder


@pytest.mark.parametrize(("entry", "name"), [(WALK_JUMP_E, "e"), (VERF_TGM, "t_tgm-251214_2126.m")])
def test_a_folder_with_no_log_name_reads_its_text_file_by_content(tmp_path: Path, entry: str, name: str) -> None:
    found = discover(_copy(entry, tmp_path))
    assert [(f.rel, f.rank, f.layout) for f in found.files] == [(name, 0, "single")]
    assert found.by_content == [name]
    assert any(note.startswith(f"read by its content: {name} (") for note in folder_notes(tmp_path))


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_traceback_of_a_file_read_by_content_fails_its_rank_on_every_path(tmp_path: Path, path: str) -> None:
    snap = read_run(_copy(VERF_TGM, tmp_path), settings=PATHS[path])
    assert snap.n_ranks == 1 and list(failed_ranks(snap)) == [0]


def test_watch_and_diagnose_say_what_they_read_by_content(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = _copy(VERF_TGM, tmp_path / "run")
    assert main(["watch", str(folder), "--once"]) == 1  # rank 0 failed
    out = capsys.readouterr().out
    assert "ranks=1" in out and "read by its content: t_tgm-251214_2126.m" in out
    assert main(["diagnose", str(folder)]) == 1
    assert "read by its content: t_tgm-251214_2126.m" in capsys.readouterr().out


@pytest.mark.parametrize(
    "name",
    ["model.ckpt", "last.pt", "config.yaml", "hparams.json", "train.py", "notes.md", ".history", "e.sh", "catalog-2"],
)
def test_binaries_checkpoints_configs_code_and_documents_are_never_read_by_content(tmp_path: Path, name: str) -> None:
    """The same text under a name of a binary, checkpoint, config, code file, document or a hidden file: not read."""
    [log] = [f for f in (REAL_LOGS / VERF_TGM / "log").iterdir() if f.is_file()]
    (tmp_path / name).write_bytes(log.read_bytes())
    found = discover(tmp_path)
    assert found.files == [] and found.by_content == []


def test_a_binary_or_a_text_without_training_lines_is_not_read(tmp_path: Path) -> None:
    lines = entry_lines(VERF_TGM)
    (tmp_path / "blob").write_bytes(b"\x00\x01" + b"\n".join(lines))  # a NUL: binary, whatever else it holds
    (tmp_path / "notes").write_bytes(b"\n".join(line for line in lines if b"oss" not in line and b"Trace" not in line))
    assert discover(tmp_path).files == []


def test_beside_a_file_named_as_a_log_nothing_is_read_by_content(tmp_path: Path) -> None:
    _copy(WALK_JUMP_E, tmp_path)
    (tmp_path / "train.log").write_bytes(b"\n".join(entry_lines(VERF_TGM)) + b"\n")
    found = discover(tmp_path)
    assert [f.rel for f in found.files] == ["train.log"] and found.by_content == []
