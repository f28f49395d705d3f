"""Your own script as a run: validation (hostile strings refused or inert), MindFormers mode, watch-only
folders, and (integration) tests/fixtures/own_train/train.py through msrun from the CLI, then Stop."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.logs.bytes.guard import validate_log_dir
from core.run.launch import stop, wait
from core.run.mindformers import parse_parallel_config
from core.run.own import OwnJob, check_own, launch_own, launcher_argv, parse_env, script_argv, watch_folder
from core.run.processes import RunProcesses
from core.run.registry import LaunchError, RunKind, get_run, list_runs
from core.workspace import REPO_ROOT

OWN_TRAIN = REPO_ROOT / "tests" / "fixtures" / "own_train" / "train.py"
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "core", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600
    )


def script(tmp_path: Path, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text("print('hi')\n", encoding="utf-8")
    return path


# -- validation ---------------------------------------------------------------------------------


def test_msrun_argv_is_a_list_with_the_arguments_verbatim(tmp_path: Path) -> None:
    hostile = ("--tag", "$(touch pwned); rm -rf / `id` 'a\"b' \\ | & > x", "--lr=1e-3")
    own = OwnJob(script=str(script(tmp_path)), args=hostile, device_num=4, local_worker_num=2, master_port=9001)
    job = check_own(own)
    argv = launcher_argv(job, tmp_path / "logs")
    assert argv[:7] == [
        "msrun",
        "--worker_num=4",
        "--local_worker_num=2",
        "--master_addr=127.0.0.1",
        "--master_port=9001",
        f"--log_dir={tmp_path / 'logs'}",
        "--join=True",
    ]
    assert argv[-4:] == [str(tmp_path / "train.py"), *hostile]


def test_mpirun_and_slurm_argv(tmp_path: Path) -> None:
    job = check_own(
        OwnJob(script=str(script(tmp_path)), args=("--x", "a b"), device_num=4, launcher="mpirun", device_target="GPU")
    )
    assert launcher_argv(job, tmp_path / "logs") == [
        "mpirun",
        "-n",
        "4",
        "--output-filename",
        str(tmp_path / "logs"),
        "--merge-stderr-to-stdout",
        "python",
        str(tmp_path / "train.py"),
        "--x",
        "a b",
    ]
    # CPU: the run folder's mpirun_cpu.sh starts MindSpore's scheduler, then mpirun (test_own_interpreter.py)
    cpu = check_own(OwnJob(script=str(script(tmp_path)), device_num=4, launcher="mpirun"))
    assert launcher_argv(cpu, tmp_path / "run" / "logs") == ["bash", str(tmp_path / "run" / "mpirun_cpu.sh")]
    job = check_own(OwnJob(script=str(script(tmp_path)), device_num=4, local_worker_num=2, launcher="slurm"))
    assert launcher_argv(job, tmp_path / "logs") == ["sbatch", "--parsable", "job.sbatch"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"script": "missing.py"}, "does not exist"),
        ({"script": "notes.txt"}, "not a Python file"),
        ({"script": "a\nb.py"}, "printable path"),
        ({"launcher": "rank_table"}, "cannot start an own script"),
        ({"device_num": 0}, "device count"),
        ({"device_num": 8, "local_worker_num": 3}, "cannot be split evenly"),
        ({"master_addr": "127.0.0.1; id"}, "master address"),
        ({"master_port": 80}, "master port"),
        ({"env": (("BAD KEY", "1"),)}, "not allowed"),
        ({"env": (("MS_ROLE", "MS_SCHED"),)}, "cannot be overridden"),
        ({"env": (("SHARDSCOPE_RUN_ID", "other"),)}, "cannot be overridden"),
        ({"args": ("ok", "nul\0byte")}, "NUL"),
        ({"args": ("\ud800",)}, "UTF-8"),
        ({"env": (("OK", "\udcff"),)}, "UTF-8"),
        ({"join": "yes"}, "true or false"),
        ({"workdir": "/no/such/folder"}, "does not exist"),
        ({"launcher": "slurm", "slurm_partition": "debug;id"}, "partition"),
        ({"launcher": "slurm", "slurm_account": "$(id)"}, "account"),
        ({"launcher": "slurm", "slurm_time": "1 hour"}, "time limit"),
        ({"launcher": "slurm", "slurm_gres": "gpu:8\n#SBATCH --x"}, "gres"),
    ],
)
def test_bad_jobs_are_refused_with_a_reason(tmp_path: Path, change: dict[str, object], message: str) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    base = {"script": str(script(tmp_path)), "device_num": 2}
    if isinstance(change.get("script"), str) and change["script"] != "a\nb.py":
        change = {**change, "script": str(tmp_path / str(change["script"]))}
    with pytest.raises(LaunchError, match=message):
        check_own(OwnJob(**{**base, **change}))  # type: ignore[arg-type]


def test_env_pairs_keep_the_value_verbatim() -> None:
    assert parse_env(["A=1", "B=x=y", "C="]) == (("A", "1"), ("B", "x=y"), ("C", ""))
    with pytest.raises(LaunchError, match="KEY=VALUE"):
        parse_env(["novalue"])


@FAST
@given(text=st.text(max_size=80))
def test_any_script_path_is_refused_or_an_existing_python_file(text: str) -> None:
    try:
        job = check_own(OwnJob(script=text, device_num=1))
    except LaunchError:
        return
    path = Path(job.script)
    assert path.is_absolute() and path.is_file() and path.suffix == ".py"


@FAST
@given(args=st.lists(st.text(st.characters(codec=None), max_size=40), max_size=6))
def test_any_arguments_are_refused_or_passed_verbatim(tmp_path: Path, args: list[str]) -> None:
    try:
        job = check_own(OwnJob(script=str(script(tmp_path)), args=tuple(args), device_num=2))
    except LaunchError:
        assert any("\0" in a or any(0xD800 <= ord(c) <= 0xDFFF for c in a) for a in args)
        return
    assert script_argv(job)[1:] == args


@FAST
@given(key=st.text(max_size=20), value=st.text(max_size=40))
def test_any_environment_is_refused_or_an_identifier(tmp_path: Path, key: str, value: str) -> None:
    try:
        job = check_own(OwnJob(script=str(script(tmp_path)), env=((key, value),), device_num=1))
    except LaunchError:
        return
    assert key.isidentifier() and key.isascii() and dict(job.env)[key] == value


# -- MindFormers mode ---------------------------------------------------------------------------

MF_YAML = """\
run_mode: 'train'
# the parallel part
parallel_config:
  data_parallel: 2   # dp
  model_parallel: 4
  pipeline_stage: 1
  micro_batch_num: 1
  gradient_aggregation_group: 4
model:
  model_config:
    hidden_size: 4096
"""


def test_mindformers_config_is_read_and_checked_against_the_devices(tmp_path: Path) -> None:
    entry = script(tmp_path, "run_mindformer.py")
    config = tmp_path / "llama.yaml"
    config.write_text(MF_YAML, encoding="utf-8")
    job = check_own(OwnJob(script=str(entry), device_num=8, mindformers_config=str(config), run_mode="finetune"))
    assert script_argv(job) == [str(entry), "--config", str(config), "--run_mode", "finetune", "--use_parallel", "True"]
    with pytest.raises(LaunchError, match=r"dp 2 x mp 4 x cp 1 x pp 1 = 8 devices but the job has 4"):
        check_own(OwnJob(script=str(entry), device_num=4, mindformers_config=str(config)))
    with pytest.raises(LaunchError, match="run mode"):
        check_own(OwnJob(script=str(entry), device_num=8, mindformers_config=str(config), run_mode="; id"))
    (tmp_path / "empty.yaml").write_text("model: {}\n", encoding="utf-8")
    with pytest.raises(LaunchError, match="no top-level parallel_config"):
        check_own(OwnJob(script=str(entry), device_num=8, mindformers_config=str(tmp_path / "empty.yaml")))


def test_parallel_config_flow_style_and_bad_values() -> None:
    assert parse_parallel_config("parallel_config: {data_parallel: 4, model_parallel: 2}\n") == {
        "data_parallel": 4,
        "model_parallel": 2,
    }
    assert parse_parallel_config("other:\n  parallel_config:\n    data_parallel: 2\n") == {}
    assert parse_parallel_config("parallel_config:\n  data_parallel: two\n") == {"data_parallel": "two"}


# -- watch an existing folder -------------------------------------------------------------------


def test_watch_folder_is_a_watch_only_run(tmp_path: Path) -> None:
    logs = tmp_path / "their logs"
    logs.mkdir()
    (logs / "worker_0.log").write_text("epoch: 1 step: 1, loss is 2.5\n", encoding="utf-8")
    record = watch_folder(logs, tmp_path / "ws", validate_log_dir)
    again = get_run(record.run_id, tmp_path / "ws")
    assert again.kind == RunKind.EXTERNAL and again.watch_only and again.log_dir == logs.resolve()
    assert again.is_running  # no supervisor, yet not declared failed
    forgotten = stop(record.run_id, tmp_path / "ws")  # only forgotten: nothing to signal
    assert forgotten.status == "stopped" and "forgotten" in forgotten.message
    with pytest.raises(LaunchError, match="does not exist"):
        watch_folder(tmp_path / "nope", tmp_path / "ws", validate_log_dir)


def test_cli_refuses_mixed_or_incomplete_requests(tmp_path: Path) -> None:
    ws = str(tmp_path / "ws")
    result = cli("launch", "--script", str(OWN_TRAIN), "--workspace", ws)
    assert result.returncode == 2 and "--devices" in result.stderr and "Traceback" not in result.stderr
    result = cli("launch", "--workspace", ws)
    assert result.returncode == 2 and "--script PATH --devices N" in result.stderr
    result = cli("launch", "--script", str(OWN_TRAIN), "--devices", "2", "--env", "noequals", "--workspace", ws)
    assert result.returncode == 2 and "KEY=VALUE" in result.stderr


# -- integration: a real msrun run of an own script ---------------------------------------------


@pytest.fixture
def cleanup(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield
    for record in list_runs(tmp_path / "ws"):
        if record.is_running and not record.watch_only:
            stop(record.run_id, tmp_path / "ws", grace=2)


@pytest.mark.usefixtures("cleanup")
@pytest.mark.integration
def test_own_script_through_msrun_from_the_cli_then_stop(tmp_path: Path) -> None:
    from core.logs import read_run

    # the script lives in a folder whose name a shell would act on: it must stay a name
    folder = tmp_path / "my job; touch PWNED $(touch PWNED2)"
    folder.mkdir()
    (folder / "train.py").write_bytes(OWN_TRAIN.read_bytes())
    ws = tmp_path / "ws"
    result = cli(
        "launch",
        "--script",
        str(folder / "train.py"),
        "--devices",
        "4",
        "--local-workers",
        "4",
        "--master-port",
        str(free_port()),
        "--env",
        "OWN_FLAG=$(touch PWNED3)",
        "--workspace",
        str(ws),
        "--name",
        "own-done",
        "--wait",
        "--",
        "--epochs",
        "1",
        "--samples",
        "64",
        "--tag",
        "'; touch PWNED4 #",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    record = get_run("own-done", ws)
    assert record.status == "succeeded" and record.kind == RunKind.OWN and record.argv[0] == "msrun"
    snapshot = read_run(record.log_dir)
    assert sorted(snapshot.metrics["rank"].unique().tolist()) == [0, 1, 2, 3]
    assert 'tag="\'; touch PWNED4 #"' in (record.log_dir / "worker_0.log").read_text(encoding="utf-8")
    assert not list(tmp_path.rglob("PWNED*")) and not list(REPO_ROOT.glob("PWNED*"))

    # a long run of the same script, stopped while it trains: nothing of it is left
    record = launch_own(
        OwnJob(
            script=str(folder / "train.py"),
            args=("--epochs", "50", "--step-sleep", "0.5"),
            device_num=4,
            master_port=free_port(),
        ),
        ws,
        name="own-stopped",
    )
    assert record.is_running, record.message
    deadline = time.time() + 240
    while time.time() < deadline and "loss is" not in _text(record.log_dir / "worker_3.log"):
        time.sleep(1)
    assert "loss is" in _text(record.log_dir / "worker_3.log")
    final = stop(record.run_id, ws, grace=10)
    assert final.status == "stopped" and not RunProcesses.of(final).live()
    assert not [p for p in _tagged(record.run_id)]
    assert wait(record.run_id, ws, timeout=5).status == "stopped"


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _tagged(run_id: str) -> list[int]:
    """Pids whose environment carries the run's tag (what msrun's workers inherit)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if f"SHARDSCOPE_RUN_ID={run_id}".encode() in env.split(b"\0"):
            found.append(int(pid))
    return found


# -- the Launch page (AppTest) ------------------------------------------------------------------


@pytest.fixture
def launch_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "launch.py"), default_timeout=120)
    at.run()
    yield at
    for record in list_runs(tmp_path / "ws"):
        if record.is_running and not record.watch_only:
            stop(record.run_id, tmp_path / "ws", grace=2)


def test_page_shows_the_own_script_argv_and_refuses_bad_input(launch_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = launch_page
    assert not page.exception
    page.text_input(key="own_script").set_value(str(OWN_TRAIN)).run()
    page.text_input(key="own_args").set_value("--tag '$(id); x'").run()
    page.number_input(key="own_devices").set_value(4).run()
    codes = [c.value for c in page.code]
    assert any(c.startswith("msrun --worker_num=4") and "--tag '$(id); x'" in c for c in codes)
    assert not page.button(key="own_launch_button").disabled
    page.text_input(key="own_args").set_value("--tag 'unclosed").run()
    assert any("Cannot read the arguments" in e.value for e in page.error)
    page.text_input(key="own_args").set_value("").run()
    page.text_area(key="own_env").set_value("MS_ROLE=MS_SCHED").run()
    assert any("cannot be overridden" in e.value for e in page.error)
    page.text_area(key="own_env").set_value("").run()
    page.text_input(key="own_script").set_value(str(tmp_path / "missing.py")).run()
    assert any("does not exist" in e.value for e in page.error)


def test_page_mindformers_mode_shows_and_checks_parallel_config(launch_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = launch_page
    entry = script(tmp_path, "run_mindformer.py")
    (tmp_path / "c.yaml").write_text(MF_YAML, encoding="utf-8")
    page.text_input(key="own_script").set_value(str(entry)).run()
    page.toggle(key="own_mf").set_value(True).run()
    page.text_input(key="own_mf_config").set_value(str(tmp_path / "c.yaml")).run()
    page.number_input(key="own_devices").set_value(8).run()
    assert not page.error
    assert any("dp 2 x mp 4 x cp 1 x pp 1" in m.value for m in page.markdown)
    assert any("--config" in c.value and "--run_mode train" in c.value for c in page.code)
    page.number_input(key="own_devices").set_value(4).run()
    assert any("= 8 devices but the job has 4" in e.value for e in page.error)


def test_page_slurm_launcher_shows_job_sbatch_and_checks_the_partition(launch_page) -> None:  # type: ignore[no-untyped-def]
    page = launch_page
    page.selectbox(key="launch_launcher").set_value("slurm").run()
    assert not page.exception
    page.text_input(key="launch_partition").set_value("debug;id").run()
    assert any("Slurm partition 'debug;id' is not allowed" in e.value for e in page.error)
    page.text_input(key="launch_partition").set_value("debug").run()
    assert any("#SBATCH --partition=debug" in c.value for c in page.code)
    assert any("**Slurm**" in m.value or "**Launcher**" in m.value for m in page.markdown)


def test_page_watches_a_folder_forgets_it_and_deletes_its_record(launch_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = launch_page
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "worker_0.log").write_text("epoch: 1 step: 1, loss is 2.5\n", encoding="utf-8")
    page.text_input(key="watch_folder").set_value("/").run()
    page.button(key="watch_button").click().run()
    assert any("filesystem root" in e.value for e in page.error) and list_runs(tmp_path / "ws") == []
    page.text_input(key="watch_folder").set_value(str(logs)).run()
    page.button(key="watch_button").click().run()
    assert any("watches" in s.value for s in page.success)
    [record] = list_runs(tmp_path / "ws")
    assert record.watch_only
    page.run()  # (standalone AppTest: the Monitor link above ends that run; the run list comes next time)
    assert page.selectbox(key="launch_stop_choice").value == record.run_id  # Stop = forget
    page.button(key="launch_stop").click().run()
    assert any("forgotten" in s.value for s in page.success), [e.value for e in page.error]
    assert get_run(record.run_id, tmp_path / "ws").status == "stopped"
    assert page.selectbox(key="launch_delete_choice").value == record.run_id
    assert page.button(key="launch_delete").disabled  # not before the confirmation
    page.checkbox(key="launch_delete_confirm").check().run()
    page.button(key="launch_delete").click().run()
    assert any("record only" in s.value for s in page.success), [e.value for e in page.error]
    assert list_runs(tmp_path / "ws") == [] and (logs / "worker_0.log").is_file()


@pytest.mark.integration
def test_page_launches_an_own_script_and_stops_it(launch_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page = launch_page
    page.text_input(key="own_script").set_value(str(OWN_TRAIN)).run()
    page.text_input(key="own_args").set_value("--epochs 50 --step-sleep 0.5").run()
    page.number_input(key="own_devices").set_value(2).run()
    page.number_input(key="own_port").set_value(free_port()).run()
    page.button(key="own_launch_button").click().run()
    assert any("Started run" in s.value for s in page.success), [e.value for e in page.error]
    [record] = list_runs(tmp_path / "ws")
    assert record.kind == RunKind.OWN and record.is_running
    deadline = time.time() + 240
    while time.time() < deadline and "loss is" not in _text(record.log_dir / "worker_1.log"):
        time.sleep(1)
    # its curves appear in the Monitor, as a generated job's do
    from streamlit.testing.v1 import AppTest

    monitor = AppTest.from_file(str(REPO_ROOT / "pages" / "monitor.py"), default_timeout=120)
    monitor.query_params["run"] = record.run_id
    monitor.run()
    assert not monitor.exception
    metrics = {m.label: m.value for m in monitor.metric}
    assert metrics["Ranks"] == "2" and int(metrics["Loss points"].replace(",", "")) > 0, metrics
    page.run()
    assert page.selectbox(key="launch_stop_choice").value == record.run_id
    page.button(key="launch_stop").click().run()
    assert any("no process of it is left" in s.value for s in page.success)
    final = get_run(record.run_id, tmp_path / "ws")
    assert final.status == "stopped" and not RunProcesses.of(final).live() and not _tagged(record.run_id)


def test_a_mindformers_run_keeps_what_the_planner_expected_of_its_yaml(tmp_path: Path) -> None:
    """The record of a run launched with a YAML carries the planner's memory per card for that YAML's recipe
    (what `diagnose` and the Monitor set beside MindSpore's measured memory); a run without one has no plan."""
    from core.plan.planned import plan_for_config
    from core.run.own import record_options

    entry = script(tmp_path, "run_mindformer.py")
    config = (
        REPO_ROOT
        / "tests"
        / "fixtures"
        / "mindformers"
        / "mindspore-lab__mindformers@v1.3.0__configs__llama2__pretrain_llama2_7b_bf16.yaml"
    )
    job = check_own(OwnJob(script=str(entry), device_num=8, mindformers_config=str(config), run_mode="train"))
    kept = record_options(job, job.to_options())
    assert kept["plan"] == plan_for_config(config) and kept["plan"]["memory_bytes"] > 0
    plain = check_own(OwnJob(script=str(entry), device_num=2))
    assert "plan" not in record_options(plain, plain.to_options())
