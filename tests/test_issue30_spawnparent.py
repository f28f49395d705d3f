"""Issue 30, round 7 (gaps7): a spawning parent's traceback is the job's where the log names the child that failed.
torch.multiprocessing's spawn raises in the parent when a child dies; a log that names another rank's failure holds
the child's word, and the parent's traceback (whole, or cut inside `mp.spawn(`) is the job's (rank -1), not a failure
of the file's own rank 0. Alone, it stays its rank's (the only word that the run died). Real logs:
k2-fsa/icefall#603 (cut in `mp.spawn(`), facebookresearch/detr#282 (detectron2's launch through spawn.py),
facebookresearch/fairseq#2867 (spawn's frames alone beside rank 0's own OOM).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.taskends import spawn_traceback
from tests.helpers import READ_PATHS, read_entry

ICEFALL = "icefall-rank-3-row-then-rank-1-saving-batch-and-spawn-traceback-cut_icefall-603"
DETR = "detectron2-launch-spawn-process-2-terminated_detr-282"
FAIRSEQ = "fairseq-hydra-warning-oom-recover-then-traceback-cut_fairseq-2867"


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_icefall_s_parent_traceback_cut_in_mp_spawn_is_the_job_s(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, ICEFALL, path)
    assert sorted(snap.ranks["rank"]) == [1, 3]  # the file's own rank 0 has nothing of its own
    assert set(failed_ranks(snap)) == {1}
    [job] = diagnose(snap).job_errors
    assert job.startswith("Traceback (most recent call last): cut off")


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_detectron2_s_spawn_exception_beside_its_process_report_is_the_job_s(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, DETR, path)
    errs = snap.errors
    assert errs.loc[errs["message"] == "Exception:", "rank"].tolist() == [-1]
    assert 2 in failed_ranks(snap)


@pytest.mark.parametrize("path", sorted(READ_PATHS))
def test_a_spawn_traceback_beside_no_other_rank_s_failure_stays_its_rank_s(tmp_path: Path, path: str) -> None:
    snap = read_entry(tmp_path, FAIRSEQ, path)
    errs = snap.errors
    spawned = errs[errs["context"].map(spawn_traceback)]
    assert len(spawned) == 1 and spawned["rank"].tolist() == [0]
    assert set(failed_ranks(snap)) == {0}


def test_spawn_s_frames_and_its_call_name_a_spawn_traceback_and_nothing_else_does() -> None:
    frame = '  File "/usr/local/lib/python3.6/dist-packages/torch/multiprocessing/spawn.py", line 200, in spawn\n'
    call = (  # icefall-603's, where the paste is cut
        '  File "/mnt/dsk1/icefall/egs/8k/./pruned_transducer_stateless2/train.py", line 1080, in main\n'
        "    mp.spawn(run, args=(world_siz\n"
    )
    assert spawn_traceback("Traceback (most recent call last):\n" + frame)
    assert spawn_traceback("Traceback (most recent call last):\n" + call)
    # (written for the test) the standard library's spawn start method bootstraps a child, a DataLoader worker on
    # Windows: that is the child's own traceback; and a name that only ends in `spawn(`
    child = '  File "C:\\Python38\\lib\\multiprocessing\\spawn.py", line 116, in spawn_main\n'
    assert not spawn_traceback("Traceback (most recent call last):\n" + child)
    assert not spawn_traceback('  File "./train.py", line 9, in main\n    respawn(run)\n')
