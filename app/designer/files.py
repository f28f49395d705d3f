"""The Save / load tab: the design's name and description, download / upload, the workspace's
designs and the examples from the seed documents."""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

from app import design_state as state
from app.design_state import Scope
from core.errors import UserError
from core.sharding import edits
from core.sharding.design import MAX_DESIGN_BYTES, Design, DesignError, Problem, dumps_design, loads_design
from core.workspace import EXAMPLES_DIR, default_workspace

SCOPE = Scope.FILE
LOAD_PROBLEMS = "designer_load_problems"
UPLOAD_ID = "designer_upload_id"


def designs_folder() -> Path:
    return default_workspace() / "designs"


def _load_cb(folder: Path, key: str, where: str) -> None:
    file_name = st.session_state.get(key)
    if not file_name:
        state.fail(SCOPE, "pick a file to load")
        return
    design, problems = edits.load_from_folder(folder, file_name)
    if design is None:
        st.session_state[LOAD_PROBLEMS] = (file_name, problems)
        return
    st.session_state.pop(LOAD_PROBLEMS, None)
    state.commit(design, f"Loaded {file_name} from {where}.")


def _save_cb(key: str) -> None:
    name = (st.session_state.get(key) or "").strip()
    try:
        path = edits.save_to_folder(state.current_design(), designs_folder(), name)
    except (UserError, OSError) as exc:
        state.fail(SCOPE, str(exc))
        return
    st.session_state[state.NOTICE_KEY] = f"Saved to {path}."


def _handle_upload(upload: UploadedFile | None) -> None:
    """Load an uploaded file once (the uploader keeps it across reruns); a bad file changes nothing."""
    if upload is None or st.session_state.get(UPLOAD_ID) == upload.file_id:
        return
    st.session_state[UPLOAD_ID] = upload.file_id
    try:
        if upload.size > MAX_DESIGN_BYTES:  # refused before its bytes are read, let alone parsed
            raise DesignError(
                [Problem("$", f"the file is {upload.size:,} bytes: a design file may be at most {MAX_DESIGN_BYTES:,}")]
            )
        design = loads_design(upload.getvalue(), strict=False)
    except DesignError as exc:
        st.session_state[LOAD_PROBLEMS] = (upload.name, [f"{p.path}: {p.message}" for p in exc.problems])
        st.rerun()
    st.session_state.pop(LOAD_PROBLEMS, None)
    state.commit(design, f"Loaded {upload.name}.")
    st.rerun()


def _this_design(design: Design) -> None:
    """Name, description, download and upload."""
    st.markdown("**This design**")
    nkey = state.vkey("design_name")
    st.text_input(
        "Design name", value=design.name, key=nkey, on_change=state.value_cb, args=(SCOPE, nkey, edits.set_name)
    )
    dkey = state.vkey("design_desc")
    st.text_area(
        "Description",
        value=design.description,
        key=dkey,
        height=90,
        on_change=state.value_cb,
        args=(SCOPE, dkey, edits.set_description),
    )
    st.download_button(
        "Download design JSON",
        dumps_design(design),
        icon=":material/download:",
        file_name=f"{design.name}.json",
        mime="application/json",
        width="stretch",
        key="designer_download",
    )
    upload = st.file_uploader("Upload a design (.json)", type=["json"], key="designer_upload")
    _handle_upload(upload)


def _workspace_designs(design: Design) -> None:
    """Save under a name, and the saved designs to load back."""
    folder = designs_folder()
    st.markdown("**Workspace designs**")
    st.caption(f"`{folder}`")
    skey = state.vkey("save_name")
    st.text_input("Save as", value=design.name, key=skey, help="letters, digits, '.', '_' or '-'")
    st.button(
        "Save to workspace",
        icon=":material/save:",
        key="designer_save",
        on_click=_save_cb,
        args=(skey,),
        width="stretch",
    )
    saved = edits.list_designs(folder)
    if not saved:
        st.caption("No saved designs yet.")
        return
    st.selectbox("Saved designs", saved, key="designer_ws_pick")
    st.button(
        "Load from workspace",
        key="designer_ws_load",
        on_click=_load_cb,
        args=(folder, "designer_ws_pick", "the workspace"),
        width="stretch",
    )


def _examples() -> None:
    st.markdown("**Examples (from the seed documents)**")
    st.selectbox("Example", edits.list_designs(EXAMPLES_DIR), key="designer_example_pick")
    st.button(
        "Load example",
        key="designer_example_load",
        on_click=_load_cb,
        args=(EXAMPLES_DIR, "designer_example_pick", "the examples"),
        width="stretch",
        type="primary",
    )


def file_tab(design: Design) -> None:
    state.show_edit_error(SCOPE)
    failed = st.session_state.get(LOAD_PROBLEMS)
    if failed:
        st.error(
            f"Could not load {failed[0]} — your current design is unchanged:\n"
            + "\n".join(f"- `{p}`" for p in failed[1]),
            icon=":material/block:",
        )
    this, workspace, examples = st.columns(3, gap="large")
    with this:
        _this_design(design)
    with workspace:
        _workspace_designs(design)
    with examples:
        _examples()
