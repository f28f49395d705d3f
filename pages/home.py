"""Home: what ShardScope is for and three ways to start, in one screen."""

from __future__ import annotations

import streamlit as st

from app.design_state import commit as commit_design
from app.nav import PAGES, page_path
from core.errors import UserError
from core.run.registry import list_runs
from core.run.rehearsal import start_rehearsal
from core.sharding.design import DesignError, load_design
from core.workspace import EXAMPLES_DIR, default_workspace

RECORDING = "dp8_cpu_msrun"

st.title("ShardScope")
st.markdown(
    "Design how MindSpore splits your tensors over the cards, see it before you compile, "
    "launch the job and watch every rank's loss live."
)

for column, key in zip(st.columns(3), ("designer", "launch", "monitor"), strict=True):
    with column.container(border=True, height="stretch"):
        info = PAGES[key]
        st.page_link(info.path, label=f"**{info.title}**", icon=info.icon)
        st.caption(info.blurb)

st.subheader("Start here")
examples = {path.stem: path for path in sorted(EXAMPLES_DIR.glob("*.json"))}
left, middle, right = st.columns(3)

with left.container(border=True, height="stretch"):
    st.markdown("**1 · Explore a layout from MindSpore's docs**")
    name = st.selectbox(
        "Example design",
        list(examples),
        index=list(examples).index("seed004_dense_matmul") if "seed004_dense_matmul" in examples else 0,
        key="home_example",
    )
    try:
        chosen = load_design(examples[name])
    except DesignError as exc:
        st.error(str(exc))
    else:
        st.caption(chosen.description)
        if st.button("Open in the Layout Designer", type="primary", key="home_open_example", width="stretch"):
            commit_design(chosen, notice=f"Loaded the example {name}.")
            st.switch_page(page_path("designer"))

with middle.container(border=True, height="stretch"):
    st.markdown("**2 · Run the CPU rehearsal**")
    st.caption(
        "A real 8-worker MindSpore data-parallel job through `msrun` on this machine's CPU: seed 001's "
        "MNIST MLP on synthetic data, about a minute. Layout and operator-parallel jobs need Ascend or GPU; "
        "the Launch page generates them and proves each on this CPU first (Check on CPU)."
    )
    if st.button("Launch the rehearsal", type="primary", key="home_rehearsal", width="stretch"):
        try:
            record = start_rehearsal(default_workspace())
        except (UserError, OSError) as exc:
            st.error(f"Could not start the rehearsal: {exc}")
        else:
            st.switch_page(page_path("monitor"), query_params={"run": record.run_id})

with right.container(border=True, height="stretch"):
    st.markdown("**3 · Watch a recorded run**")
    st.caption(
        "Replays a real 8-card msrun run recorded with ShardScope, at its real pace, so you see live "
        "per-rank curves without any MindSpore hardware. Clearly labelled as a replay."
    )
    if st.button("Watch the replay", type="primary", key="home_replay", width="stretch"):
        st.switch_page(page_path("monitor"), query_params={"replay": RECORDING})

try:
    runs = list_runs(default_workspace())
except (UserError, OSError) as exc:
    runs = []
    st.warning(f"Could not read the run registry: {exc}")
if runs:
    st.subheader("Recent runs")
    for record in runs[:5]:
        cols = st.columns([3, 2, 2, 2], vertical_alignment="center")
        cols[0].markdown(f"`{record.run_id}`")
        cols[1].markdown(record.scenario or "?")
        cols[2].markdown(f"**{record.status}**" + (f" (exit {record.exit_code})" if record.exit_code else ""))
        cols[3].page_link(
            page_path("monitor"), label="Monitor", icon=":material/monitoring:", query_params={"run": record.run_id}
        )
