"""A launched run's log folder is read with its launchers' own outputs (launcher.log, slurm-<job>.out).

mpirun and srun report a rank killed by a signal in their own output, not in the rank's log: `diagnose` or
`watch` pointed at `runs/<id>/log_output` (the folder a user copies from the Launch page) must still see it,
and must not read anything outside that run's folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.__main__ import main
from core.run.registry import (
    RunKind,
    RunRecord,
    RunStatus,
    launcher_output_paths,
    launcher_outputs,
    read_record,
    write_record,
)

REAL_SLURM = Path(__file__).parent / "fixtures/real_logs/slurm-teardown-segfault_produced-here/log"


def _slurm_run(tmp_path: Path, **fields: object) -> Path:
    """The real Slurm run (worker 7 segfaulted at exit, only slurm-1.out says so) as a registry run folder."""
    run_dir = tmp_path / "runs" / "slurm-run"
    shutil.copytree(REAL_SLURM, run_dir)
    record = RunRecord(
        run_id="slurm-run",
        run_dir=run_dir,
        log_dir=run_dir / "log_output",
        status=RunStatus.FAILED,
        launcher="slurm",
        slurm_job_id="1",
    )
    for name, value in fields.items():
        setattr(record, name, value)
    write_record(record)
    return run_dir


def _diagnose(folder: Path, capsys: pytest.CaptureFixture) -> tuple[int, dict]:
    code = main(["diagnose", str(folder), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_diagnose_of_a_runs_log_folder_reads_its_slurm_output(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run_dir = _slurm_run(tmp_path)
    code, report = _diagnose(run_dir / "log_output", capsys)
    assert (code, report["failed"], report["root_cause_rank"]) == (1, True, 7)
    assert report["failure_groups"][0]["evidence"] == ["srun: task 7 on n2 ended: Segmentation fault"]
    assert any(n.startswith("also read slurm-run/slurm-1.out") for n in report["notes"])


def test_watch_once_of_a_runs_log_folder_names_the_crash(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run_dir = _slurm_run(tmp_path)
    code = main(["watch", str(run_dir / "log_output"), "--once"])
    out = capsys.readouterr().out
    assert code == 1
    assert "Segmentation fault" in out and "also read slurm-run/slurm-1.out" in out


def test_a_plain_folder_reads_nothing_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Without the run's record the parent folder is not ours to read: the folder alone is diagnosed."""
    run_dir = tmp_path / "copied"
    shutil.copytree(REAL_SLURM, run_dir)
    assert launcher_outputs(run_dir / "log_output") == ()
    _, report = _diagnose(run_dir / "log_output", capsys)
    assert not any("also read" in n for n in report["notes"])
    assert report["root_cause_rank"] != 7


def test_another_folder_of_the_run_folder_is_not_its_log_folder(tmp_path: Path) -> None:
    run_dir = _slurm_run(tmp_path)
    (run_dir / "other").mkdir()
    assert launcher_outputs(run_dir / "other") == ()
    assert launcher_outputs(run_dir / "log_output") == (run_dir / "slurm-1.out",)


def test_links_and_unwritten_outputs_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("srun: error: n2: task 0: Segmentation fault\n")
    run_dir = _slurm_run(tmp_path)
    (run_dir / "slurm-1.out").unlink()
    (run_dir / "slurm-1.out").symlink_to(outside)
    assert launcher_outputs(run_dir / "log_output") == ()  # a link, and launcher.log is not written yet
    (run_dir / "launcher.log").write_text("")
    assert launcher_outputs(run_dir / "log_output") == (run_dir / "launcher.log",)


def test_output_paths_follow_the_launchers_started(tmp_path: Path) -> None:
    run_dir = _slurm_run(tmp_path, slurm_job_id="")
    one = read_record(run_dir)
    assert launcher_output_paths(one) == (run_dir / "launcher.log",)
    two = RunRecord(
        run_id="two",
        run_dir=run_dir,
        log_dir=run_dir,
        nodes=[{"node": 0, "argv": ["bash"]}, {"node": 1, "argv": ["bash"]}],
    )
    assert launcher_output_paths(two) == (run_dir / "launcher_node0.log", run_dir / "launcher_node1.log")


@pytest.mark.parametrize("job_id", ["../../etc/passwd", "1/../x", "1 2", "abc"])
def test_a_tampered_job_id_names_no_file(tmp_path: Path, job_id: str) -> None:
    record = RunRecord(run_id="t", run_dir=tmp_path, log_dir=tmp_path, slurm_job_id=job_id, kind=RunKind.GENERATED)
    assert launcher_output_paths(record) == (tmp_path / "launcher.log",)


def test_watch_once_with_rank_logs_but_no_loss_row_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """'0 rows' is never a healthy exit 0: the summary says what was seen, the exit code says nothing was read."""
    (tmp_path / "worker_0.log").write_text("[INFO] ME(1:2,MainProcess):2026-11-26-08:00:00.000.000 [x.py:1] start\n")
    code = main(["watch", str(tmp_path), "--once"])
    out = capsys.readouterr().out
    assert code == 1
    assert "ranks=1, loss rows=0" in out and "no loss rows" in out


def test_a_linked_launcher_output_is_read_only_when_links_are_followed(tmp_path: Path) -> None:
    """The reader's own rule for the files a caller names beside a folder (the Monitor passes a launched
    run's launcher outputs, written yet or not): a link may lead out of the run folder, so it is not read
    unless the user asked to follow links, like any log in the folder."""
    from core.logs import read_run

    outside = tmp_path / "elsewhere.txt"
    outside.write_text("srun: error: n2: task 0: Segmentation fault\n")
    run_dir = _slurm_run(tmp_path)
    (run_dir / "slurm-1.out").unlink()
    (run_dir / "slurm-1.out").symlink_to(outside)
    named = [run_dir / "slurm-1.out"]
    assert read_run(run_dir / "log_output", extra_files=named).errors.query("kind == 'task_exit'").empty
    followed = read_run(run_dir / "log_output", extra_files=named, follow_links=True)
    assert followed.errors.query("kind == 'task_exit'")["rank"].tolist() == [0]


def test_the_suites_teardown_crash_helper_reads_the_outputs_the_product_finds(tmp_path: Path) -> None:
    """tests/teardown.py tolerates only MindSpore's crash at exit: srun's segfault of a rank the scheduler saw
    unregister. Held here on the real run, and refused once the scheduler never saw rank 7 finish."""
    from tests.teardown import teardown_crash

    run_dir = _slurm_run(tmp_path)
    assert teardown_crash(run_dir)
    scheduler = run_dir / "log_output" / "scheduler.log"
    scheduler.write_text(scheduler.read_text().replace("Node 7 has unregistered", "Node 7 is still there"))
    assert not teardown_crash(run_dir)
