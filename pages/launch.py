"""Launch page: pick a scenario, see the generated job, check the machine, launch / stop runs;
launch your own script (msrun, mpirun, Slurm, MindFormers) or watch an existing log folder."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import streamlit as st

from app import launch_widgets as ui
from app.design_state import current_design
from app.nav import page_path
from core.codegen import Job, files_at_risk, render_job, write_rendered
from core.errors import UserError
from core.logs.bytes.guard import validate_log_dir
from core.run.check import check_job
from core.run.launch import launch
from core.run.own import check_own, launch_own, watch_folder
from core.run.preflight import can_launch, run_preflight
from core.run.registry import LaunchError, RunRecord
from core.workspace import WorkspaceError, child, default_workspace, read_settings, remember

st.title("Launch")
workspace = default_workspace()
OWN_PYTHON = "own_python"  # the workspace setting: the interpreter of the last own script launched
design = current_design()
st.caption(f"Design **{design.name}** · {design.device_num} devices — edit it on the Layout Designer page.")

settings, preview = st.columns([2, 3], gap="large")
job: Job | None = None
with settings:
    options = ui.options_form(design.device_num)
    ui.target_notice(options)
    try:
        job = render_job(design, options)
    except UserError as exc:
        st.error(str(exc))
    for note in job.notes if job is not None else ():
        st.caption(f"• {note}")

with preview:
    if job is not None:
        files = dict(job)
        previous = st.session_state.get("launch_prev_files")
        if previous is not None and previous.get("__key__") != files:
            st.session_state["launch_diff"] = ui.unified_diff(previous.get("__key__"), files)
        st.session_state["launch_prev_files"] = {"__key__": files}
        ui.files_view(files, st.session_state.get("launch_diff", ""))
        folder = f"{design.name}-{options.scenario}"
        st.download_button(
            "Download job (.zip)", ui.zip_bytes(files, folder), file_name=f"{folder}.zip", mime="application/zip"
        )
    else:
        st.info("Fix the options on the left to see the generated job.")


def started(record: RunRecord) -> None:
    """After a launch: remember the run, point Stop at it, link to the Monitor."""
    st.session_state["launch_last_run"] = record.run_id
    st.session_state[ui.STOP_CHOICE] = record.run_id  # Stop now points at the run just started
    where = f" (Slurm job {record.slurm_job_id}: {record.message})" if record.slurm_job_id else ""
    st.success(f"Started run **{record.run_id}**{where}.")
    st.page_link(
        page_path("monitor"),
        label=f"Watch {record.run_id} on the Monitor",
        icon=":material/monitoring:",
        query_params={"run": record.run_id},
    )


def job_folder() -> Path:
    """Where the page writes the job it checks and launches (one folder per design and scenario)."""
    return child(workspace / "jobs", f"{design.name}-{options.scenario}", "job name")


overwrite = False
if job is not None:
    try:
        at_risk = files_at_risk(job_folder(), dict(job))
    except WorkspaceError:
        at_risk = []  # Check / Launch say why the folder cannot be written
    if at_risk:
        st.warning(
            f"`{job_folder()}` already holds {', '.join(at_risk)}, not written by ShardScope or edited since: "
            "Check and Launch write the job there and would replace them."
        )
        overwrite = st.checkbox("Overwrite them", key="launch_overwrite")
    st.subheader("Check on CPU")
    st.caption(
        "Trains the design's own network for 2 real steps on this machine's CPU, stand-alone: MindSpore accepts "
        "the strategies and ignores them there, so the network, shapes, loss and optimizer are proven first."
    )
    if st.button("Check on CPU", key="check_button", icon=":material/fact_check:"):
        try:
            job_dir = write_rendered(job, job_folder(), force=overwrite)
        except (UserError, OSError) as exc:
            st.error(f"Cannot write the job: {exc}")
        else:
            with st.spinner("Running train.py --check on the CPU…"):
                st.session_state["check_result"] = (job["train.py"], check_job(job_dir))
    checked = st.session_state.get("check_result")
    if checked is not None and checked[0] == job["train.py"]:
        ui.check_view(checked[1])

    st.subheader("Preflight")
    checks = [ui.cached_mindspore_check(sys.executable)]
    checks += run_preflight(options, import_check=False)
    ui.preflight_view(checks)
    ready = can_launch(checks)
    if st.button("Launch", type="primary", disabled=not ready, key="launch_button"):
        try:
            job_dir = write_rendered(job, job_folder(), force=overwrite)
            record = launch(job_dir, workspace)
        except (UserError, OSError) as exc:
            st.error(f"Launch failed: {exc}")
        else:
            started(record)
    if not ready:
        st.caption("Launch is disabled until every check passes.")


st.subheader("Your own script")
with st.expander("Launch an existing script: msrun, mpirun or Slurm; MindFormers' run_mindformer.py too"):
    own, problem = ui.own_job_form(python_default=read_settings(workspace).get(OWN_PYTHON, ""))
    checked_own = None
    if problem:
        st.error(problem)
    elif own is not None:
        try:
            checked_own = check_own(own)
        except LaunchError as exc:
            st.error(str(exc))
    if checked_own is not None:
        ui.own_job_view(checked_own)
        own_checks = [ui.cached_mindspore_check(checked_own.python or sys.executable)]
        own_checks += run_preflight(
            checked_own.to_options(), python=checked_own.python or sys.executable, import_check=False
        )
        ui.preflight_view(own_checks)
        if st.button("Launch script", type="primary", disabled=not can_launch(own_checks), key="own_launch_button"):
            try:
                record = launch_own(checked_own, workspace)
            except (UserError, OSError) as exc:
                st.error(f"Launch failed: {exc}")
            else:
                with contextlib.suppress(OSError):  # a preference not saved (a full disk) never hides the run
                    remember(workspace, OWN_PYTHON, checked_own.python)
                started(record)

with st.expander("Watch an existing log folder (a job ShardScope did not start: watch only, Stop forgets it)"):
    folder = st.text_input("Log folder", "", key="watch_folder", placeholder="/shared/job/log_output")
    if st.button("Watch", key="watch_button", disabled=not folder.strip()):
        try:
            record = watch_folder(folder.strip(), workspace, validate_log_dir)
        except (UserError, OSError) as exc:
            st.error(str(exc))
        else:
            st.success(f"Run **{record.run_id}** watches {record.log_dir}.")
            st.page_link(
                page_path("monitor"),
                label="Open it on the Monitor",
                icon=":material/monitoring:",
                query_params={"run": record.run_id},
            )

st.subheader("Runs")


@st.fragment(run_every=2)
def runs_fragment() -> None:
    try:
        ui.runs_table(workspace)
    except (UserError, OSError) as exc:
        st.error(str(exc))


runs_fragment()
try:
    ui.stop_control(workspace)
    ui.delete_control(workspace)
except (UserError, OSError) as exc:
    st.error(str(exc))
