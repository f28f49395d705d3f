"""UI pieces of the Launch page: options form, generated files, preflight, run list.

Pages wire these to core; nothing here builds code strings or touches processes itself.
"""

from __future__ import annotations

import difflib
import io
import re
import shlex
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core.codegen import DATASETS, LAUNCHERS, SCENARIO_OBJECTS, SCENARIOS, RunOptions
from core.errors import UserError
from core.run.check import CheckResult
from core.run.launch import delete_run, stop
from core.run.launchers import QUEUED_LAUNCHERS
from core.run.mindformers import parallel_devices, read_parallel_config
from core.run.own import OWN_LAUNCHERS, OwnJob, own_note, parse_env, shown_command
from core.run.preflight import Check, check_mindspore
from core.run.registry import LaunchError, RunRecord, list_runs, scan_runs
from core.run.rehearsal import rehearsal_options

# The form starts from the CPU rehearsal's values: a short run whose loss visibly falls.
DEFAULTS = rehearsal_options()
STOP_RESULT = "launch_stop_result"
STOP_CHOICE = "launch_stop_choice"
DELETE_CHOICE = "launch_delete_choice"
DELETE_RESULT = "launch_delete_result"
STATUS_ICON = {
    "starting": "◌ starting",
    "queued": "◷ queued",
    "running": "● running",
    "succeeded": "✓ succeeded",
    "failed": "✗ failed",
    "stopped": "■ stopped",
}
LANGUAGE = {"train.py": "python", "run.sh": "bash", "job.sbatch": "bash", "README.md": "markdown", "job.json": "json"}


SCENARIO_INPUTS: dict[str, Callable[[Any, str], int | bool]] = {  # a scenario's own fields (Scenario.fields)
    "interleave_num": lambda at, key: at.number_input(
        "interleave_num (copies)", 1, 64, DEFAULTS.interleave_num, key=f"{key}_inter"
    ),
    "pipeline_stages": lambda at, key: at.number_input("Stages", 1, 64, DEFAULTS.pipeline_stages, key=f"{key}_stages"),
    "micro_batches": lambda at, key: at.number_input(
        "Micro-batches", 1, 4096, DEFAULTS.micro_batches, key=f"{key}_micro"
    ),
    "recompute": lambda at, key: at.checkbox("Recompute", DEFAULTS.recompute, key=f"{key}_recompute"),
    "hsdp": lambda at, key: at.checkbox("Optimizer parallel", DEFAULTS.hsdp, key=f"{key}_hsdp"),
}


def options_form(device_num: int, key: str = "launch") -> RunOptions:
    """Scenario + target + launcher and the run knobs; returns the RunOptions (not yet validated)."""
    scenario = st.selectbox("Scenario", list(SCENARIOS), format_func=lambda s: SCENARIOS[s], key=f"{key}_scenario")
    target = st.radio("Device target", ["CPU", "Ascend", "GPU"], horizontal=True, key=f"{key}_target")
    left, right = st.columns(2)
    devices = left.number_input("Devices", 1, 4096, value=int(device_num), step=1, key=f"{key}_devices")
    launcher = right.selectbox("Launcher", list(LAUNCHERS), format_func=lambda s: LAUNCHERS[s], key=f"{key}_launcher")
    dataset = st.selectbox("Dataset", list(DATASETS), format_func=lambda s: DATASETS[s], key=f"{key}_dataset")
    data_path = "./MNIST_Data/train"
    if dataset == "mnist":
        data_path = st.text_input("DATA_PATH (MNIST folder)", data_path, key=f"{key}_data_path")
    c1, c2 = st.columns(2)
    epochs = c1.number_input("Epochs", 1, 100_000, DEFAULTS.epochs, key=f"{key}_epochs")
    lr = c2.number_input("Learning rate (Adam)", 1e-6, 10.0, DEFAULTS.learning_rate, format="%.4f", key=f"{key}_lr")
    st.caption("The batch is the design's: every data input's first dimension.")
    fields = SCENARIO_OBJECTS[scenario].fields  # the options only this scenario reads
    places = st.columns(len(fields)) if len(fields) > 1 else [st] * len(fields)
    extra = {name: SCENARIO_INPUTS[name](place, key) for name, place in zip(fields, places, strict=True)}
    with st.expander("Cluster and logging"):
        a, b = st.columns(2)
        local = a.number_input(
            "Workers per node (0 = one node)", 0, 4096, 0, key=f"{key}_local", help="msrun --local_worker_num"
        )
        port = b.number_input("Master port", 1024, 65535, 8118, key=f"{key}_port")
        addr = a.text_input("Master address", "127.0.0.1", key=f"{key}_addr")
        loss_every = b.number_input(
            "Print loss every N steps", 1, 1_000_000, DEFAULTS.loss_interval, key=f"{key}_loss_every"
        )
        samples = a.number_input("Synthetic samples", 8, 10_000_000, DEFAULTS.synthetic_samples, key=f"{key}_samples")
    slurm = slurm_fields(key) if launcher in QUEUED_LAUNCHERS else {}
    return RunOptions(
        scenario=scenario,
        device_target=target,
        launcher=launcher,
        device_num=int(devices),
        local_worker_num=int(local) or None,
        master_addr=addr.strip(),
        master_port=int(port),
        dataset=dataset,
        data_path=data_path,
        synthetic_samples=int(samples),
        epochs=int(epochs),
        learning_rate=float(lr),
        loss_interval=int(loss_every),
        **_scenario_fields(extra),
        **slurm,
    )


def _scenario_fields(values: dict[str, int | bool]) -> dict[str, Any]:
    """A scenario's own RunOptions keyword arguments: each of its field's type (an int or a bool)."""
    return {k: (v if isinstance(v, bool) else int(v)) for k, v in values.items()}


def slurm_fields(key: str) -> dict[str, Any]:
    """Partition, account, time limit, gres and CPUs per worker (nodes = devices / workers per node): the
    slurm_* keyword arguments of RunOptions / OwnJob (text, and an int for CPUs)."""
    with st.expander("Slurm", expanded=True):
        st.caption("Nodes = devices / workers per node (set under *Cluster and logging*); one task per worker.")
        a, b = st.columns(2)
        values: dict[str, object] = {
            "slurm_partition": a.text_input("Partition", "", key=f"{key}_partition", help="empty: the default"),
            "slurm_account": b.text_input("Account", "", key=f"{key}_account"),
            "slurm_time": a.text_input("Time limit", "", key=f"{key}_time", help="minutes, HH:MM:SS or D-HH:MM:SS"),
            "slurm_gres": b.text_input("GRES per node", "", key=f"{key}_gres", help="e.g. gpu:8"),
            "slurm_cpus_per_task": a.number_input("CPUs per worker", 1, 1024, 1, key=f"{key}_cpus"),
        }
    return {k: (v.strip() if isinstance(v, str) else v) for k, v in values.items()}


def own_job_form(key: str = "own", python_default: str = "") -> tuple[OwnJob | None, str]:
    """An existing script and how to start it; (job, '') or (None, what is wrong with the text).

    `python_default`: the interpreter the user chose last in this workspace."""
    script = st.text_input("Script", "", key=f"{key}_script", placeholder="/path/to/train.py or run_mindformer.py")
    python = st.text_input(
        "Python interpreter",
        python_default,
        key=f"{key}_python",
        placeholder=f"empty: the dashboard's ({sys.executable})",
        help="Your training environment's python (e.g. ~/envs/mindformers/bin/python): msrun, the scheduler and "
        "every worker run with it. Preflight checks that it imports mindspore. Remembered for this workspace.",
    )
    args_text = st.text_input(
        "Arguments", "", key=f"{key}_args", help="split into words like a shell would, but never run by one"
    )
    env_text = st.text_area("Environment (KEY=VALUE, one per line)", "", key=f"{key}_env", height=80)
    shape = _own_shape_fields(key)
    cluster = _own_msrun_fields(key)
    config, mode = _mindformers_fields(key)
    slurm = slurm_fields(key) if shape["launcher"] in QUEUED_LAUNCHERS else {}
    try:
        args = tuple(shlex.split(args_text))
        env = parse_env([line.strip() for line in env_text.splitlines() if line.strip()])
    except (UserError, ValueError) as exc:
        return None, f"Cannot read the arguments or environment: {exc}"
    if not script.strip():
        return None, ""
    job = OwnJob(
        script=script.strip(),
        args=args,
        env=env,
        **shape,
        **cluster,
        mindformers_config=config,
        run_mode=mode,
        python=python.strip(),
        **slurm,
    )
    return job, ""


def _own_shape_fields(key: str) -> dict[str, Any]:
    """Launcher, workers, workers per node and device target: OwnJob's keyword arguments."""
    a, b, c, t = st.columns(4)
    launcher = a.selectbox("Launcher", list(OWN_LAUNCHERS), key=f"{key}_launcher")
    devices = b.number_input("Workers", 1, 4096, 8, key=f"{key}_devices")
    local = c.number_input("Per node (0 = one node)", 0, 4096, 0, key=f"{key}_local")
    target = t.selectbox(
        "Device target",
        ["CPU", "GPU", "Ascend"],
        key=f"{key}_target",
        help="CPU under mpirun also starts MindSpore's scheduler (its CPU collectives need it)",
    )
    return {
        "launcher": launcher,
        "device_num": int(devices),
        "local_worker_num": int(local) or None,
        "device_target": target,
    }


def _own_msrun_fields(key: str) -> dict[str, Any]:
    """Master address and port, join, cluster time-out and working folder: OwnJob's keyword arguments."""
    with st.expander("msrun: master, logs, time-out"):
        d, e = st.columns(2)
        addr = d.text_input("Master address", "127.0.0.1", key=f"{key}_addr")
        port = e.number_input("Master port", 1024, 65535, 8118, key=f"{key}_port")
        join = d.checkbox("Join (wait for the workers)", True, key=f"{key}_join")
        timeout = e.number_input("Cluster time-out (s)", 1, 86_400, 600, key=f"{key}_timeout")
        workdir = d.text_input("Working folder (empty: the script's)", "", key=f"{key}_workdir")
    return {
        "master_addr": addr.strip(),
        "master_port": int(port),
        "join": bool(join),
        "cluster_time_out": int(timeout),
        "workdir": workdir.strip(),
    }


def _mindformers_fields(key: str) -> tuple[str, str]:
    """(config YAML, run mode) of a MindFormers script; ('', 'train') when the toggle is off."""
    if not st.toggle("MindFormers (run_mindformer.py --config YAML)", key=f"{key}_mf"):
        return "", "train"
    f, g = st.columns([3, 1])
    config = f.text_input("Config YAML", "", key=f"{key}_mf_config")
    mode = g.selectbox("Run mode", ["train", "finetune", "eval", "predict"], key=f"{key}_mf_mode")
    return config.strip(), mode


def own_job_view(job: OwnJob) -> None:
    """What will run: the launcher's argv (shown quoted; it is exec'd as a list), MindFormers' parallel split."""
    if job.mindformers_config:
        try:
            factors = read_parallel_config(Path(job.mindformers_config))
        except (OSError, ValueError) as exc:
            st.warning(f"parallel_config: {exc}")
        else:
            total, formula = parallel_devices(factors)
            st.markdown(f"**parallel_config**: {formula} = **{total}** devices")
    note = own_note(job)
    if note:
        st.caption(note)
    shown = shown_command(job, Path("<run folder>/log_output"))
    if shown:
        st.code(shown, language="bash", wrap_lines=True)
    if job.python:
        st.caption(f"Interpreter: `{job.python}` (msrun, scheduler and workers)")


def target_notice(options: RunOptions) -> None:
    if options.device_target in {"Ascend", "GPU"}:
        st.info(
            f"This machine has no {options.device_target} devices: the job cannot run here, but *Check on CPU* "
            "below trains its network for 2 real steps first. Then download it and run `bash run.sh` on "
            f"{options.device_num} x {options.device_target}.",
            icon=":material/info:",
        )


def unified_diff(old: dict[str, str] | None, new: dict[str, str]) -> str:
    """What changed in the generated files since the previous render ('' if nothing)."""
    if not old:
        return ""
    chunks: list[str] = []
    for name in new:
        if old.get(name) != new[name]:
            chunks.extend(
                difflib.unified_diff(
                    (old.get(name) or "").splitlines(keepends=True),
                    new[name].splitlines(keepends=True),
                    fromfile=f"previous/{name}",
                    tofile=f"current/{name}",
                    n=2,
                )
            )
    return "".join(chunks)


def zip_bytes(files: dict[str, str], folder: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            info = zipfile.ZipInfo(f"{folder}/{name}", date_time=time.localtime()[:6])
            info.external_attr = (0o755 if name.endswith(".sh") else 0o644) << 16
            archive.writestr(info, text)
    return buffer.getvalue()


def files_view(files: dict[str, str], diff: str) -> None:
    names = [n for n in ("train.py", "run.sh", "job.sbatch", "README.md") if n in files]
    tabs = st.tabs([*names, "Changes"])
    for tab, name in zip(tabs, names, strict=False):
        with tab:
            st.code(files[name], language=LANGUAGE[name], line_numbers=name != "README.md", height=480, wrap_lines=True)
    with tabs[-1]:
        if diff:
            st.code(diff, language="diff", height=480)
        else:
            st.caption("No changes since the previous render.")


@st.cache_data(ttl=600, show_spinner="Checking that MindSpore imports…")
def cached_mindspore_check(python: str) -> Check:
    return check_mindspore(python)


def check_view(result: CheckResult) -> None:
    """The outcome of `train.py --check`: green with the losses, or red with the reason and the output."""
    losses = ", ".join(f"{v:.4g}" for v in result.losses)
    if result.passed:
        text = f"Check passed in {result.seconds:.1f} s — losses {losses}. {result.message}"
        st.success(text, icon=":material/check_circle:")
        return
    st.error(f"Check failed after {result.seconds:.1f} s: {result.message}", icon=":material/cancel:")
    if result.output_tail:
        with st.expander("Output of train.py --check"):
            st.code("\n".join(result.output_tail), language="text")


def preflight_view(checks: list[Check]) -> None:
    for check in checks:
        icon = ":green[:material/check_circle:]" if check.ok else ":red[:material/cancel:]"
        st.markdown(f"{icon} **{check.name}** — {check.message}")


def runs_table(workspace: Path) -> None:
    """The run list (newest first) with links to the Monitor; a run folder whose record was not read is a
    greyed row and one 'not read: runs/NAME/run.json: why' line, and every other run is listed."""
    listing = scan_runs(workspace)
    records = listing.records
    if not records and not listing.unread:
        st.caption("No runs yet.")
        return
    now = time.time()
    rows: list[dict[str, object]] = []
    for r in records[:50]:
        duration = ((r.ended_at or now) - r.started_at) if r.started_at else None
        rows.append(
            {
                "Run": r.run_id,
                "Status": STATUS_ICON.get(r.status, r.status),
                "Exit": "" if r.exit_code is None else str(r.exit_code),
                "Scenario": r.scenario,
                "Devices": f"{r.device_num} x {r.device_target}",
                "Started": time.strftime("%H:%M:%S", time.localtime(r.started_at)) if r.started_at else "",
                "Duration": f"{duration:.0f} s" if duration is not None else "",
                "Message": r.message,
                "Monitor": f"/monitor?run={r.run_id}",
            }
        )
    blank = dict.fromkeys(("Exit", "Scenario", "Devices", "Started", "Duration"), "")
    rows += [
        {"Run": e.name, "Status": NOT_READ, **blank, "Message": e.line, "Monitor": None} for e in listing.unread[:50]
    ]
    frame = pd.DataFrame(rows)
    st.dataframe(
        frame.style.apply(_grey_unread, axis=1),
        hide_index=True,
        width="stretch",
        column_config={"Monitor": st.column_config.LinkColumn("Monitor", display_text="Open ↗")},
    )
    not_read_lines(listing.lines[:50])


NOT_READ = "⊘ not read"
_MARKDOWN = re.compile(r"([!-/:-@\[-`{-~])")  # ASCII punctuation: CommonMark lets a backslash escape each


def not_read_lines(lines: list[str]) -> None:
    """Each 'not read: ...' line greyed, as plain text: a forged record's words are never markdown."""
    for line in lines:
        st.caption(_MARKDOWN.sub(r"\\\1", line))


def _grey_unread(row: pd.Series) -> list[str]:
    """A run whose record was not read is shown greyed: it is there, nothing of it is trusted."""
    return ["color: #9aa0a6" if row["Status"] == NOT_READ else ""] * len(row)


def stop_control(workspace: Path) -> None:
    """Pick a running run and stop it (a watched folder's run is only forgotten: nothing is signalled).

    Rendered outside the auto-refreshing runs table on purpose: a click on a widget inside a
    fragment that a full rerun has just replaced is dropped by Streamlit, so a Stop there could
    silently do nothing.
    """
    records = {r.run_id: r for r in list_runs(workspace) if r.is_running}
    if records:
        left, right = st.columns([3, 1], vertical_alignment="bottom")
        if st.session_state.get(STOP_CHOICE) not in records:
            st.session_state.pop(STOP_CHOICE, None)
        chosen = left.selectbox("Running", list(records), key=STOP_CHOICE, format_func=lambda r: _label(records[r]))
        if right.button("Stop", type="secondary", key="launch_stop", width="stretch"):
            try:
                with st.spinner(f"Stopping {chosen}…"):
                    record = stop(chosen, workspace, grace=10.0)
                message = (
                    f"{record.run_id} {record.status}: {record.message}; its folder is left as it is."
                    if record.watch_only
                    else f"{record.run_id} {record.status}; no process of it is left."
                )
                st.session_state[STOP_RESULT] = ("success", message)
            except LaunchError as exc:
                st.session_state[STOP_RESULT] = ("error", str(exc))
    if STOP_RESULT in st.session_state:
        kind, message = st.session_state[STOP_RESULT]
        (st.success if kind == "success" else st.error)(message)


def _label(record: RunRecord) -> str:
    return f"{record.run_id} (watch only: Stop forgets it)" if record.watch_only else record.run_id


def delete_control(workspace: Path) -> None:
    """Delete a finished run's folder, or a watched folder's run record (never the watched folder)."""
    records = {r.run_id: r for r in list_runs(workspace) if not r.is_running or r.watch_only}
    if records:
        left, mid, right = st.columns([3, 2, 1], vertical_alignment="bottom")
        if st.session_state.get(DELETE_CHOICE) not in records:
            st.session_state.pop(DELETE_CHOICE, None)
        chosen = left.selectbox("Finished or watch only", list(records), key=DELETE_CHOICE)
        what = "its record only (the watched folder stays)" if records[chosen].watch_only else "its folder and logs"
        sure = mid.checkbox(f"Delete {what}", key="launch_delete_confirm")
        if right.button("Delete", key="launch_delete", disabled=not sure, width="stretch"):
            try:
                record = delete_run(chosen, workspace)
                st.session_state[DELETE_RESULT] = ("success", f"Deleted {record.run_id}: {what}.")
            except LaunchError as exc:
                st.session_state[DELETE_RESULT] = ("error", str(exc))
            st.session_state.pop("launch_delete_confirm", None)
    if DELETE_RESULT in st.session_state:
        kind, message = st.session_state.pop(DELETE_RESULT)
        (st.success if kind == "success" else st.error)(message)
