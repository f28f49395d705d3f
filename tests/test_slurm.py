"""The Slurm launcher: job.sbatch rendering (hostile strings inert), Slurm's answers parsed, and
(integration) a real two-node Slurm cluster on this machine: a generated 8-worker job as 2 nodes x 4
workers, a queued job, a cancelled one with nothing left, and preflight refusing a missing partition."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.codegen import CodegenError, RunOptions, render_job, validate_options
from core.codegen.launchers import extra_files
from core.codegen.sbatch import BatchSpec, job_sbatch, sbatch_script
from core.run import slurm
from core.run.launch import stop, wait
from core.run.preflight import run_preflight
from core.run.processes import RunProcesses
from core.run.registry import get_run, list_runs
from core.run.states import RunStatus
from core.workspace import REPO_ROOT
from tests.teardown import teardown_crash

SLURM = RunOptions(launcher="slurm", device_num=8, local_worker_num=4, slurm_partition="debug", slurm_time="30")


def bash_ok(text: str) -> None:
    result = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr


STUBS = {
    # srun: record what each worker would exec (after `bash -c SCRIPT LOG_DIR`) and its environment
    "srun": '#!/bin/bash\nwhile [ "${1#--}" != "$1" ]; do shift; done\n'
    'shift 3; printf "%s\\0" "$@" "$OWN_VALUE" > "$STUB_OUT"\n',
    "scontrol": "#!/bin/bash\necho n1; echo NodeName=n1 NodeAddr=127.0.0.1\n",
    "python": "#!/bin/bash\nexit 0\n",
}


def run_batch_script(text: str, tmp: Path) -> list[bytes]:
    """Run job.sbatch for real with stub srun/scontrol/python: [log dir, worker argv..., OWN_VALUE]."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in STUBS.items():
        (bin_dir / name).write_text(body, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    (tmp / "job.sbatch").write_text(text, encoding="utf-8")
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SLURM_SUBMIT_DIR": str(tmp),
        "SLURM_JOB_NODELIST": "n1",
        "SLURM_JOB_ID": "1",
        "STUB_OUT": str(tmp / "argv"),
    }
    result = subprocess.run(["bash", str(tmp / "job.sbatch")], env=env, capture_output=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert (tmp / "slurm_exit_code").read_text().strip() == "0"
    return (tmp / "argv").read_bytes().split(b"\0")[:-1]


# -- job.sbatch ---------------------------------------------------------------------------------


def test_job_sbatch_is_the_dynamic_cluster_shape() -> None:
    text = job_sbatch(SLURM, "dp8")
    bash_ok(text)
    for line in [
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks=8",
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --partition=debug",
        "#SBATCH --time=30",
        "#SBATCH --output=slurm-%j.out",
        "export MS_WORKER_NUM=8 MS_SCHED_PORT=8118 MS_TOPO_TIMEOUT=600",
        'MS_ROLE=MS_SCHED "${WORKER[@]}" > "$LOG_DIR/scheduler.log" 2>&1 &',
        "srun --ntasks=8 --ntasks-per-node=4 --kill-on-bad-exit=1 \\",
    ]:
        assert line in text.splitlines(), line
    assert 'MS_NODE_ID=\\"$SLURM_PROCID\\"' not in text and 'MS_NODE_ID="$SLURM_PROCID"' in text
    assert "worker_$SLURM_PROCID.log" in text and 'echo "$code" > "$EXIT_FILE"' in text
    assert "--account" not in text and "--gres" not in text  # empty fields are left out


def test_generated_slurm_job_has_sbatch_and_a_run_sh_that_submits_it() -> None:
    files = {**render_job_files(SLURM)}
    assert "job.sbatch" in files and "exec sbatch --parsable job.sbatch" in files["run.sh"]
    assert "scancel <id>" in files["README.md"] and "sbatch job.sbatch" in files["README.md"]
    bash_ok(files["run.sh"])
    assert extra_files(RunOptions(), "dp8") == {}


def render_job_files(options: RunOptions) -> dict[str, str]:
    from core.sharding.design import load_design
    from core.workspace import EXAMPLES_DIR

    design = load_design(EXAMPLES_DIR / "data_parallel_8.json")
    return {**render_job(design, options), **extra_files(options, design.name)}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("slurm_partition", "debug;id"),
        ("slurm_partition", "a b"),
        ("slurm_account", "$(id)"),
        ("slurm_account", "x\n#SBATCH --uid=0"),
        ("slurm_time", "1h"),
        ("slurm_time", "10;id"),
        ("slurm_gres", "gpu:8 --x"),
        ("slurm_cpus_per_task", 0),
    ],
)
def test_bad_slurm_fields_are_refused(field: str, value: object) -> None:
    with pytest.raises(CodegenError, match=r"Slurm|CPUs per task"):
        validate_options(RunOptions(**{**SLURM.to_dict(), field: value}))  # type: ignore[arg-type]


@settings(max_examples=80, deadline=None)
@given(
    name=st.text(max_size=30), field=st.sampled_from(["slurm_partition", "slurm_account", "slurm_time", "slurm_gres"])
)
def test_any_slurm_field_is_refused_or_plain(name: str, field: str) -> None:
    try:
        validate_options(RunOptions(**{**SLURM.to_dict(), field: name}))  # type: ignore[arg-type]
    except CodegenError:
        return
    assert all(ch.isascii() and (ch.isalnum() or ch in "._-:,") for ch in name)
    if name:
        assert f"--{field.removeprefix('slurm_')}={name}" in job_sbatch(
            RunOptions(**{**SLURM.to_dict(), field: name}), "dp8"
        )


@settings(max_examples=40, deadline=None)
@given(
    args=st.lists(
        st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=30), max_size=5
    ),
    value=st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=30),
)
def test_arguments_and_environment_reach_the_workers_verbatim(args: list[str], value: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        spec = BatchSpec(
            job_name="x",
            nodes=1,
            tasks_per_node=1,
            worker_argv=("python", "t.py", *args),
            sched_port=8118,
            log_dir=f"{tmp}/logs $(touch PWNED)",
            workdir=tmp,
            env=(("OWN_VALUE", value),),
        )
        seen = run_batch_script(sbatch_script(spec), Path(tmp))
        assert seen == [a.encode() for a in (spec.log_dir, "python", "t.py", *args, value)]
        assert not list(Path(tmp).glob("PWNED*")) and (Path(tmp) / "logs $(touch PWNED)").is_dir()


# -- what Slurm says ----------------------------------------------------------------------------

LINE = (
    "JobId=42 JobName=dp8 UserId=root(0) JobState=PENDING Reason=Resources Dependency=(null) "
    "ExitCode=0:0 NodeList=(null) Command=/tmp/a b/job.sbatch"
)


def test_scontrol_lines_are_parsed() -> None:
    job = slurm.parse_job_line(LINE)
    assert job == slurm.SlurmJob(job_id="42", state="PENDING", reason="Resources", exit_code=0, signal=0, nodes="")
    done = slurm.parse_job_line(LINE.replace("PENDING", "FAILED").replace("0:0", "3:0").replace("(null) C", "n[1-2] C"))
    assert done is not None and (done.state, done.exit_code, done.nodes) == ("FAILED", 3, "n[1-2]")
    assert slurm.parse_job_line("no job here") is None


@pytest.mark.parametrize(
    ("state", "code", "exit_file", "stopped", "expected"),
    [
        ("PENDING", 0, None, False, (RunStatus.QUEUED, "queued: Resources")),
        ("RUNNING", 0, None, False, (RunStatus.RUNNING, "running on n[1-2]")),
        ("COMPLETED", 0, 0, False, (RunStatus.SUCCEEDED, "completed")),
        ("FAILED", 3, 3, False, (RunStatus.FAILED, "exit code 3")),
        ("TIMEOUT", 0, None, False, (RunStatus.FAILED, "time limit")),
        ("CANCELLED", 0, None, True, (RunStatus.STOPPED, "stopped by the user")),
        ("CANCELLED", 0, None, False, (RunStatus.FAILED, "cancelled outside ShardScope")),
        (None, None, 0, False, (RunStatus.SUCCEEDED, "exited 0")),
        (None, None, 2, False, (RunStatus.FAILED, "exited 2")),
        (None, None, None, False, (RunStatus.FAILED, "no longer knows the job")),
    ],
)
def test_outcome(
    state: str | None, code: int | None, exit_file: int | None, stopped: bool, expected: tuple[str, str]
) -> None:
    job = (
        None
        if state is None
        else slurm.SlurmJob(
            "7", state, "Resources" if state == "PENDING" else "", code, 0, "n[1-2]" if state != "PENDING" else ""
        )
    )
    status, message, _ = slurm.outcome(job, exit_file, stopped)
    assert status == expected[0] and expected[1] in message


@pytest.mark.parametrize("job_id", ["", "12;rm", "-1", "1 2", "$(id)", 5])
def test_job_ids_are_checked_before_any_command(job_id: object) -> None:
    with pytest.raises(slurm.LaunchError, match="not a Slurm job id"):
        slurm.check_job_id(job_id)


def test_exit_file_is_read_defensively(tmp_path: Path) -> None:
    (tmp_path / "e").write_text("0\n", encoding="utf-8")
    assert slurm.read_exit_file(tmp_path / "e") == 0
    (tmp_path / "e").write_text("junk", encoding="utf-8")
    assert slurm.read_exit_file(tmp_path / "e") is None
    assert slurm.read_exit_file(tmp_path / "missing") is None


def test_failed_tasks_are_named_from_sruns_output(tmp_path: Path) -> None:
    out = tmp_path / "slurm-2.out"
    out.write_text(
        "job 2: scheduler on n1 (127.0.0.1:18411), 8 workers\n"  # real lines of a failed 2 x 4 job
        "srun: error: n1: task 1: Exited with exit code 1\n"
        "srun: launch/slurm: _step_signal: Terminating StepId=2.0\n"
        "srun: error: n1: tasks 0,2-3: Terminated\n"
        "srun: error: n2: tasks 4-7: Terminated\n",
        encoding="utf-8",
    )
    assert slurm.task_errors(out) == "n1: task 1: Exited with exit code 1"
    assert slurm.task_errors(tmp_path / "missing.out") == ""


def test_slurm_and_watched_runs_ask_for_a_polling_watcher(tmp_path: Path) -> None:
    from core.run.registry import RunKind, RunRecord

    def record(**kw: object) -> RunRecord:
        return RunRecord(run_id="r", run_dir=tmp_path, log_dir=tmp_path, **kw)  # type: ignore[arg-type]

    assert record(launcher="slurm").shared_filesystem and record(kind=RunKind.EXTERNAL).shared_filesystem
    assert record(nodes=[{"node": 0}, {"node": 1}]).shared_filesystem
    assert not record(launcher="msrun").shared_filesystem


# -- integration: a real two-node Slurm cluster -------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=900
    )


def job_tails(run_dir: Path, lines: int = 6) -> str:
    """The batch output and every log's last lines, for a failure message: which worker ended first, and how."""
    parts = []
    for path in sorted([*run_dir.glob("slurm-*.out"), *run_dir.rglob("*.log")]):
        if path.is_file() and not path.is_symlink():
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"\n--- {path.relative_to(run_dir)}\n" + "\n".join(tail))
    return "".join(parts)


def generate(out: Path, *extra: str, epochs: int = 1) -> None:
    result = cli(
        "generate",
        "--out",
        str(out),
        "--launcher",
        "slurm",
        "--devices",
        "8",
        "--local-workers",
        "4",
        "--master-port",
        str(free_port()),
        "--samples",
        "256",
        "--batch-size",
        "8",
        "--epochs",
        str(epochs),
        *extra,
    )
    assert result.returncode == 0, result.stderr


def tagged(run_id: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if f"SHARDSCOPE_RUN_ID={run_id}".encode() in env.split(b"\0"):
            found.append(int(pid))
    return found


@pytest.fixture
def ws(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield tmp_path / "ws"
    for record in list_runs(tmp_path / "ws"):
        if record.is_running:
            stop(record.run_id, tmp_path / "ws", grace=2)


@pytest.mark.usefixtures("slurm_cluster")
@pytest.mark.integration
def test_generated_job_runs_as_two_nodes_of_four_workers(tmp_path: Path, ws: Path) -> None:  # type: ignore[no-untyped-def]
    from core.logs import read_run

    generate(tmp_path / "job", "--partition", "debug", "--time", "20")
    result = cli("launch", str(tmp_path / "job"), "--workspace", str(ws), "--name", "slurm-dp8")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Slurm job" in result.stdout
    # the supervisor dies (as after a reboot of the dashboard machine): the registry asks Slurm itself
    record = get_run("slurm-dp8", ws)
    assert record.slurm_job_id and record.supervisor_pid
    os.kill(record.supervisor_pid, signal.SIGKILL)
    record = wait("slurm-dp8", ws, timeout=600)
    job = slurm.job_state(record.slurm_job_id)
    assert job is not None and job.nodes == "n[1-2]"
    if record.status == RunStatus.SUCCEEDED:
        assert record.exit_code == 0 and job.state == "COMPLETED"
        assert (record.run_dir / "slurm_exit_code").read_text().strip() == "0"
    else:  # only MindSpore's own crash at exit may fail it, and then it is reported as a failure
        assert teardown_crash(record.run_dir), record.message + job_tails(record.run_dir)
        assert record.status == RunStatus.FAILED and record.exit_code and job.state == "FAILED"
    snapshot = read_run(record.log_dir)
    assert sorted(snapshot.metrics["rank"].unique().tolist()) == list(range(8))
    assert "scheduler on n1 (127.0.0.1:" in next(record.run_dir.glob("slurm-*.out")).read_text()


@pytest.mark.usefixtures("slurm_cluster")
@pytest.mark.integration
def test_own_script_as_two_nodes_of_two_workers(tmp_path: Path, ws: Path) -> None:  # type: ignore[no-untyped-def]
    from core.logs import read_run

    folder = tmp_path / "own job $(touch PWNED)"
    folder.mkdir()
    (folder / "train.py").write_bytes((REPO_ROOT / "tests/fixtures/own_train/train.py").read_bytes())
    result = cli(
        "launch",
        "--script",
        str(folder / "train.py"),
        "--devices",
        "4",
        "--local-workers",
        "2",
        "--launcher",
        "slurm",
        "--partition",
        "debug",
        "--master-port",
        str(free_port()),
        "--env",
        "OWN_NOTE=a b;$(touch PWNED2)",
        "--workspace",
        str(ws),
        "--name",
        "own-slurm",
        "--wait",
        "--",
        "--epochs",
        "1",
        "--samples",
        "64",
        "--tag",
        "x'; touch PWNED3; '",
    )
    record = get_run("own-slurm", ws)
    if result.returncode == 0:
        assert record.status == RunStatus.SUCCEEDED and record.kind == "own"
    else:  # only MindSpore's own crash at exit may fail it, and then it is reported with the task and signal
        assert teardown_crash(record.run_dir), result.stdout + result.stderr + job_tails(record.run_dir)
        assert record.status == RunStatus.FAILED and "Segmentation fault" in record.message
    assert sorted(read_run(record.log_dir).metrics["rank"].unique().tolist()) == [0, 1, 2, 3]
    assert "tag=\"x'; touch PWNED3; '\"" in (record.log_dir / "worker_2.log").read_text()
    assert not list(tmp_path.rglob("PWNED*")) and not list(REPO_ROOT.glob("PWNED*"))


@pytest.mark.usefixtures("slurm_cluster")
@pytest.mark.integration
def test_queued_then_cancelled_from_the_cli_leaves_nothing(tmp_path: Path, ws: Path) -> None:  # type: ignore[no-untyped-def]
    generate(tmp_path / "job", epochs=400)
    # a partition that is down keeps the job PENDING: the run says 'queued' with Slurm's reason
    subprocess.run(["scontrol", "update", "PartitionName=debug", "State=DOWN"], check=True, timeout=30)
    try:
        result = cli("launch", str(tmp_path / "job"), "--workspace", str(ws), "--name", "slurm-long")
        assert result.returncode == 0, result.stderr
        deadline = time.time() + 30
        while time.time() < deadline and get_run("slurm-long", ws).status != RunStatus.QUEUED:
            time.sleep(0.5)
        record = get_run("slurm-long", ws)
        assert record.status == RunStatus.QUEUED and "queued: PartitionDown" in record.message
    finally:
        subprocess.run(["scontrol", "update", "PartitionName=debug", "State=UP"], check=True, timeout=30)
    deadline = time.time() + 300
    log = record.log_dir / "worker_7.log"
    while time.time() < deadline and "loss is" not in (log.read_text(errors="replace") if log.exists() else ""):
        time.sleep(1)
    assert get_run("slurm-long", ws).status == RunStatus.RUNNING
    assert tagged("slurm-long"), "the workers carry the run's tag"
    result = cli("stop", "slurm-long", "--workspace", str(ws), "--grace", "5")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no process of it is left" in result.stdout
    final = get_run("slurm-long", ws)
    assert final.status == RunStatus.STOPPED
    assert not tagged("slurm-long") and not RunProcesses.of(final).live()
    assert slurm.job_steps(final.slurm_job_id) == []
    job = slurm.job_state(final.slurm_job_id)
    assert job is not None and job.state == "CANCELLED"
    assert wait("slurm-long", ws, timeout=5).status == RunStatus.STOPPED


@pytest.mark.usefixtures("slurm_cluster")
@pytest.mark.integration
def test_preflight_refuses_a_missing_partition_and_too_many_nodes(tmp_path: Path, ws: Path) -> None:  # type: ignore[no-untyped-def]
    generate(tmp_path / "nope", "--partition", "nope")
    result = cli("launch", str(tmp_path / "nope"), "--workspace", str(ws))
    assert result.returncode == 2 and "Slurm has no partition 'nope'" in result.stderr
    assert list_runs(ws) == []
    checks = run_preflight(RunOptions(**{**SLURM.to_dict(), "slurm_partition": "nope"}), import_check=False)
    assert [c.ok for c in checks if c.name == "Slurm"] == [False]
    big = RunOptions(**{**SLURM.to_dict(), "device_num": 12})
    [check] = [c for c in run_preflight(big, import_check=False) if c.name == "Slurm"]
    assert not check.ok and "2 usable node(s) of 2; the job needs 3" in check.message
    [check] = [c for c in run_preflight(SLURM, import_check=False) if c.name == "Slurm"]
    assert check.ok, check.message


@pytest.mark.usefixtures("slurm_cluster")
@pytest.mark.integration
def test_a_failing_rank_fails_the_run_and_is_named(ws: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli(
        "launch",
        "--script",
        str(REPO_ROOT / "tests/fixtures/own_train/train.py"),
        "--devices",
        "4",
        "--local-workers",
        "2",
        "--launcher",
        "slurm",
        "--master-port",
        str(free_port()),
        "--workspace",
        str(ws),
        "--name",
        "own-fail",
        "--wait",
        "--",
        "--fail-rank",
        "3",
    )
    assert result.returncode != 0
    record = get_run("own-fail", ws)
    assert record.status == RunStatus.FAILED and record.exit_code, record.message
    assert "n2: task 3: Exited with exit code 1" in record.message, record.message
    assert "fails on purpose" in (record.log_dir / "worker_3.log").read_text(errors="replace")
    assert not tagged("own-fail")


@pytest.mark.usefixtures("slurm_cluster")
@pytest.mark.integration
def test_launch_page_submits_to_slurm_and_stops_it(
    ws: Path,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(ws))
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    page = AppTest.from_file(str(REPO_ROOT / "pages" / "launch.py"), default_timeout=180)
    page.run()
    page.selectbox(key="launch_launcher").set_value("slurm").run()
    page.number_input(key="launch_local").set_value(4).run()
    page.number_input(key="launch_port").set_value(free_port()).run()
    page.number_input(key="launch_epochs").set_value(400).run()
    page.text_input(key="launch_partition").set_value("debug").run()
    assert any("partition 'debug': 2 usable node(s), the job needs 2" in m.value for m in page.markdown)
    page.button(key="launch_button").click().run()
    assert any("Slurm job" in s.value for s in page.success), [e.value for e in page.error]
    [record] = list_runs(ws)
    deadline = time.time() + 300
    log = record.log_dir / "worker_7.log"
    while time.time() < deadline and "loss is" not in (log.read_text(errors="replace") if log.exists() else ""):
        time.sleep(1)
    page.run()
    assert page.selectbox(key="launch_stop_choice").value == record.run_id
    page.button(key="launch_stop").click().run()
    assert any("no process of it is left" in s.value for s in page.success), [e.value for e in page.error]
    final = get_run(record.run_id, ws)
    assert final.status == RunStatus.STOPPED and not tagged(record.run_id)
    assert slurm.job_steps(final.slurm_job_id) == []


@pytest.mark.integration
@pytest.mark.browser
def test_stop_in_the_browser_cancels_the_slurm_job(slurm_cluster, tmp_path: Path, ws: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.browser import chromium, dashboard, shot

    generate(tmp_path / "job", epochs=400)
    result = cli("launch", str(tmp_path / "job"), "--workspace", str(ws), "--name", "slurm-browser")
    assert result.returncode == 0, result.stderr
    record = get_run("slurm-browser", ws)
    deadline = time.time() + 300
    log = record.log_dir / "worker_7.log"
    while time.time() < deadline and "loss is" not in (log.read_text(errors="replace") if log.exists() else ""):
        time.sleep(1)
    with dashboard(ws, extra_env={"SLURM_CONF": str(slurm_cluster.conf)}) as url, chromium() as browser:
        tab = browser.new_page(viewport={"width": 1280, "height": 1500})
        tab.goto(f"{url}/launch")
        tab.get_by_text("Runs", exact=True).wait_for(timeout=90_000)
        stop_button = tab.get_by_role("button", name="Stop", exact=True)
        stop_button.wait_for(timeout=60_000)
        stop_button.scroll_into_view_if_needed()
        shot(tab, "launch_slurm_running")
        stop_button.click()  # the only running run is the one picked
        tab.get_by_text("slurm-browser stopped; no process of it is left").wait_for(timeout=120_000)
        shot(tab, "launch_slurm_stopped")
    final = get_run("slurm-browser", ws)
    assert final.status == RunStatus.STOPPED and not tagged("slurm-browser")
    assert slurm.job_steps(final.slurm_job_id) == []
    job = slurm.job_state(final.slurm_job_id)
    assert job is not None and job.state == "CANCELLED"
