"""Issue 30, round 5's known gap (the corpus entry CUT below): the launcher's own traceback is its report, not a
rank's failure.

torchrun (torch.distributed.run, `python -m torch.distributed.launch`, DeepSpeed's and Accelerate's launchers) raises
ChildFailedError after its line naming the worker that died (`failed (exitcode: -9) local_rank: 3`); that traceback
(its outermost frame `.../bin/torchrun`, whole or cut before the exception) was read as the file's rank 0's failure and
named the root cause. When the file holds the launcher's report naming the failed task, the traceback is the job's
(rank -1, `diagnose`'s job errors): rank 0 is not failed, the reported rank is the root cause. Without such a report
(or a worker's own traceback) nothing changes: a failure is never lost. Checked on the real lines, every read path.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.cli.watch import summary
from core.logs import read_run
from core.logs.judgement.diagnose import diagnose
from core.logs.judgement.status import failed_ranks
from core.logs.rows.failures import CUT_TRACEBACK
from core.logs.rows.filestate import ErrorKind
from core.logs.rows.taskends import launcher_traceback
from tests.helpers import READ_PATHS, entry_lines, one_log, read_entry

PATHS = READ_PATHS
CUT = "colossalai-rich-wrapped-init-then-sigterm-and-exitcode-minus-9-local-rank-3_colossalai-3514"
WHOLE = "torch-glog-E-prefix-failed-exitcode-minus-9-local-rank-5-carets_robomamba-10"  # ... ChildFailedError: report
REPORT = b"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917)"
RUNPY = (  # what `python -m torch.distributed.launch` puts before the launcher's frames (CPython's runpy)
    '  File "/usr/lib/python3.8/runpy.py", line 194, in _run_module_as_main\n'
    "    return _run_code(code, main_globals, None,\n"
    '  File "/usr/lib/python3.8/runpy.py", line 87, in _run_code\n'
    "    exec(code, run_globals)\n"
)


def _read(tmp_path: Path, path: str, lines: list[bytes]) -> dict[int, str]:
    """Rank -> why it failed, for `lines` as one log read on `path`."""
    return failed_ranks(read_run(one_log(tmp_path, lines), settings=PATHS[path]))


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize(("entry", "rank", "job_error"), [(CUT, 3, CUT_TRACEBACK), (WHOLE, 5, "ChildFailedError")])
def test_the_launcher_s_traceback_is_its_report_not_rank_0_s_failure(
    tmp_path: Path, path: str, entry: str, rank: int, job_error: str
) -> None:
    # cut before its exception (CUT) or whole, up to `ChildFailedError:` and its report (WHOLE): the same reading
    snap = read_entry(tmp_path, entry, path)
    d = diagnose(snap)
    assert (set(failed_ranks(snap)), d.root_cause) == ({rank}, rank)
    assert [g.ranks for g in d.failure_groups] == [[rank]] and "SIGKILL" in d.failure_groups[0].exception
    # the traceback is kept, as the job's (never dropped): `watch` and `diagnose` list it
    assert len(d.job_errors) == 1 and job_error in d.job_errors[0]
    tb = snap.errors[snap.errors["kind"] == str(ErrorKind.EXCEPTION)]
    assert tb["rank"].tolist() == [-1] and "/bin/torchrun" in tb["context"].iloc[0]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_launcher_traceback_without_a_report_naming_a_rank_stays_the_file_s(tmp_path: Path, path: str) -> None:
    assert set(_read(tmp_path, path, [line for line in entry_lines(CUT) if b"failed (exitcode" not in line])) == {0}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_worker_s_own_traceback_beside_the_report_stays_a_rank_s_failure(tmp_path: Path, path: str) -> None:
    worker = (  # a worker's own traceback (its outermost frame its script), then the launcher's report and frames
        b"Traceback (most recent call last):\n"
        b'  File "/data/ColossalAI/applications/Chat/examples/train_sft.py", line 184, in <module>\n'
        b"    train(args)\n"
        b"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.14 GiB"
    ).splitlines()
    got = _read(tmp_path, path, [*worker, REPORT, *entry_lines(CUT)[-8:]])
    assert set(got) == {0, 3} and "OutOfMemoryError" in got[0]


@pytest.mark.parametrize("path", sorted(PATHS))
def test_python_m_torch_distributed_launch_s_traceback_is_the_launcher_s(tmp_path: Path, path: str) -> None:
    launch = b'  File "/usr/local/lib/python3.8/dist-packages/torch/distributed/launch.py", line 193, in <module>'
    frames = [b"Traceback (most recent call last):", *RUNPY.encode().splitlines(), launch, b"    main()"]
    assert set(_read(tmp_path, path, [REPORT, *frames])) == {3}


@pytest.mark.parametrize(
    ("first_frame", "launcher"),
    [
        ("/data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/torchrun", True),
        ("/usr/local/lib/python3.8/dist-packages/torch/distributed/run.py", True),
        ("/usr/local/lib/python3.8/dist-packages/torch/distributed/launch.py", True),
        ("/opt/conda/bin/deepspeed", True),
        ("/usr/local/lib/python3.10/dist-packages/deepspeed/launcher/launch.py", True),
        ("/root/miniconda3/bin/accelerate", True),
        ("C:\\Users\\me\\venv\\Scripts\\torchrun.exe\\__main__.py", True),
        ("/data/ColossalAI/applications/Chat/examples/train_sft.py", False),
        ("/home/me/torchrun_experiments/train.py", False),
        ("/home/me/my_torchrun", False),
        ("/usr/local/lib/python3.10/dist-packages/torch/distributed/elastic/agent/server/api.py", False),
    ],
)
def test_the_outermost_frame_decides(first_frame: str, launcher: bool) -> None:
    context = f'Traceback (most recent call last):\n  File "{first_frame}", line 8, in <module>\n    sys.exit(main())\n'
    assert launcher_traceback(context) is launcher
    assert launcher_traceback(context.replace("\n  File", "\n" + RUNPY + "  File", 1)) is launcher


@given(st.text(max_size=300))
@example('  File "/x/bin/torchrun", line 8, in <module>\n')
@example('File "", line 1')
@example("")
def test_launcher_traceback_holds_for_any_text(context: str) -> None:
    # any text gives a bool, the same after runpy's frames, and only a frame can make it the launcher's
    got = launcher_traceback(context)
    assert isinstance(got, bool)
    assert launcher_traceback(RUNPY + context) is got
    if 'File "' not in context:
        assert got is False


@pytest.mark.parametrize("path", sorted(PATHS))
def test_watch_lists_the_launcher_s_traceback_as_the_job_s_never_as_a_rank(tmp_path: Path, path: str) -> None:
    # `diagnose` says `job: ...`; `watch` said `rank -1`, a rank no run has
    text = summary(read_entry(tmp_path, WHOLE, path))
    assert "rank -1" not in text
    [job] = [line for line in text.splitlines() if line.startswith("  [exception] job ")]
    assert "ChildFailedError" in job
