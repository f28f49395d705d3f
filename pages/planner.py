"""Planner page: every parallel recipe for N cards, memory per card against communication per step; pick one,
make it the current design, export MindFormers' parallel_config. Compute in core.plan, draw in app.planner_view."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from app import planner_view as view  # noqa: E402
from app.design_state import commit as commit_design  # noqa: E402
from app.design_state import current_design  # noqa: E402
from app.nav import page_path  # noqa: E402
from core.models import ModelError  # noqa: E402
from core.plan.explore import (  # noqa: E402
    COUNTED,
    NOT_COUNTED,
    Evaluation,
    Plan,
    apply_recipe,
    explore,
    model_from_design,
    rank_key,
)
from core.plan.mindformers import DEFAULT_VERSION, VERSIONS, mindformers_yaml  # noqa: E402
from core.plan.recipes import PlanError, PlanModel, Recipe  # noqa: E402
from core.sharding.design import Design  # noqa: E402

PRESETS: dict[str, PlanModel] = {
    "LLaMA-2 7B": PlanModel(hidden=4096, heads=32, ffn=11008, layers=32, vocab=32000, seq=4096),
    "LLaMA-2 13B": PlanModel(hidden=5120, heads=40, ffn=13824, layers=40, vocab=32000, seq=4096),
    "LLaMA-2 70B": PlanModel(hidden=8192, heads=64, ffn=28672, layers=80, vocab=32000, seq=4096, kv_heads=8),
}
CURRENT = "the current design's model"
APPLIED_KEY = "planner_applied"
APPLY_ERROR_KEY = "planner_apply_error"
PICK_KEY = "planner_pick"
TABLE_KEY = "planner_table"
FIELDS = ("hidden", "heads", "kv_heads", "ffn", "layers", "vocab", "seq")


@st.cache_data(max_entries=16, show_spinner="Evaluating every recipe…")
def cached_plan(model: PlanModel, global_batch: int, devices: int, card_gb: float) -> Plan:
    return explore(model, global_batch, devices, card_gb)


def model_inputs() -> tuple[PlanModel, int, int, float]:
    """The model, global batch, device count and card memory from the form."""
    design = current_design()
    from_design = model_from_design(design) if isinstance(design, Design) else None
    sources = ([CURRENT] if from_design is not None else []) + list(PRESETS)
    source = st.selectbox("Model", sources, key="planner_source",
                          help="Presets are LLaMA-2 shapes; the current design is offered when it came from the "
                               "model library.")
    base = from_design if source == CURRENT and from_design is not None else PRESETS[source]
    cols = st.columns(4)
    values: dict[str, int | None] = {}
    for i, name in enumerate(FIELDS):
        default = getattr(base, name)
        label = "kv heads (GQA)" if name == "kv_heads" else name
        value = cols[i % 4].number_input(label, min_value=1, value=int(default if default is not None else base.heads),
                                         step=1, key=f"planner_{name}@{source}")
        values[name] = int(value)
    dtype = cols[3].selectbox("dtype", ["bfloat16", "float16", "float32"], key="planner_dtype")
    model = PlanModel(
        hidden=values["hidden"] or 1, heads=values["heads"] or 1, ffn=values["ffn"] or 1,
        layers=values["layers"] or 1, vocab=values["vocab"] or 1, seq=values["seq"] or 1,
        kv_heads=values["kv_heads"], dtype=dtype,
    )
    cols = st.columns(3)
    devices = int(cols[0].number_input("devices", min_value=1, max_value=65536, value=8, key="planner_devices"))
    batch = int(cols[1].number_input("global batch (sequences / step)", min_value=1, value=32, key="planner_batch"))
    preset = cols[2].segmented_control("card memory", ["32 GB", "64 GB", "custom"], default="64 GB",
                                       key="planner_card_preset")
    card = 32.0 if preset == "32 GB" else 64.0
    if preset == "custom":
        card = float(cols[2].number_input("GB per card", min_value=1.0, value=64.0, key="planner_card_custom"))
    return model, batch, devices, card


def ranked_recipes(plan: Plan) -> list[Evaluation]:
    """Valid recipes, fitting first, then least recompute and bubble, least communication: the order of the
    select box and of the table, so a table row and a select-box index name the same recipe."""
    return sorted(plan.valid, key=lambda e: (not e.fits, *rank_key(e)))


def choose(ranked: list[Evaluation]) -> Evaluation | None:
    """The recipe the user looks at: the select box (default: the proposal), which a table row click sets."""
    if not ranked:
        return None
    labels = [f"{e.recipe.label()}{'' if e.fits else '  (does not fit)'}" for e in ranked]
    if st.session_state.get(PICK_KEY, 0) >= len(ranked):
        st.session_state[PICK_KEY] = 0
    index = st.selectbox("Recipe", range(len(ranked)), format_func=lambda i: labels[i], key=PICK_KEY,
                         help="Sorted: fitting first, then least recompute and bubble, then least communication. "
                              "Or click a row of the table below.")
    return ranked[index or 0]


def pick_from_table() -> None:
    """on_select of the recipes table: the clicked row becomes the select box's choice."""
    rows = st.session_state[TABLE_KEY]["selection"]["rows"]
    if rows:
        st.session_state[PICK_KEY] = int(rows[0])


def apply(model: PlanModel, recipe: Recipe) -> None:
    """on_click, so the sidebar and every page already see the new design on the rerun it triggers."""
    try:
        design = apply_recipe(model, recipe)
    except (ModelError, PlanError, ValueError) as exc:
        st.session_state[APPLY_ERROR_KEY] = str(exc)
        return
    commit_design(design, notice=f"Applied the planner's recipe {recipe.label()}.")
    st.session_state[APPLIED_KEY] = recipe.label()


def apply_section(plan: Plan, chosen: Evaluation) -> None:
    st.button("Apply: make it the current design", type="primary", key="planner_apply",
              icon=":material/check_circle:", on_click=apply, args=(plan.model, chosen.recipe))
    error = st.session_state.pop(APPLY_ERROR_KEY, None)
    if error:
        st.error(f"Cannot build the design: {error}")
    applied = st.session_state.get(APPLIED_KEY)
    design = current_design()
    if applied and isinstance(design, Design):
        st.success(f"Current design **{design.name}** ({design.device_num} devices per pipeline stage) is {applied}.")
        st.page_link(page_path("launch"), label="Generate and launch it", icon=":material/rocket_launch:")


st.title("Planner")
st.caption(
    "Every mix of data / model / pipeline / sequence / optimizer parallelism, recompute and micro-batches for your "
    "cards: memory per card against communication per step, before a card is spent."
)
with st.container(border=True):
    model, batch, devices, card = model_inputs()
try:
    plan = cached_plan(model, batch, devices, card)
except PlanError as exc:
    st.error(str(exc))
    st.stop()

cols = st.columns(4)
cols[0].metric("recipes", len(plan.evaluations))
cols[1].metric("valid", len(plan.valid))
cols[2].metric(f"fit in {card:g} GB", len(plan.fitting))
cols[3].metric("evaluated in", f"{plan.seconds * 1000:.0f} ms")
proposal = plan.proposal
if proposal is not None:
    st.success(f"Proposed: **{proposal.recipe.label()}** — {view.human(proposal.memory_bytes)} per card, "
               f"{view.human(proposal.comm_bytes)} communication per step, bubble {proposal.bubble:.0%}.",
               icon=":material/recommend:")
elif plan.valid:
    least = min(plan.valid, key=lambda e: e.memory_bytes)
    st.error(f"No recipe fits in {card:g} GB: the least memory per card is {view.human(least.memory_bytes)} "
             f"({least.recipe.label()}). Add cards or memory.")
else:
    st.error("No valid recipe for this model on this many cards: see 'Why not' below.")

ranked = ranked_recipes(plan)
chosen = choose(ranked)
st.plotly_chart(view.pareto_figure(plan, chosen), width="stretch", key="planner_chart",
                config={"displayModeBar": False})

if chosen is not None:
    left, right = st.columns([1, 1], gap="large")
    with left:
        st.subheader("Selected recipe")
        st.dataframe(view.breakdown_rows(chosen), hide_index=True, width="stretch",
                     column_config={"GiB": st.column_config.NumberColumn(format="%.2f")})
        st.caption(f"Busiest stage: {chosen.peak_stage}; tensor-parallel volume from {chosen.comm_source}.")
        apply_section(plan, chosen)
    with right:
        st.subheader("MindFormers parallel_config")
        version = st.selectbox("MindFormers version", list(VERSIONS), index=list(VERSIONS).index(DEFAULT_VERSION),
                               format_func=lambda v: VERSIONS[v], key="planner_mf_version")
        text = mindformers_yaml(chosen.recipe, version, card_memory_gb=card)
        st.code(text, language="yaml")
        st.download_button("Download YAML", text, file_name="parallel_config.yaml", mime="text/yaml",
                           key="planner_yaml_download")

st.subheader("All valid recipes")
sizes = [label for key, label in view.TABLE_COLUMNS.items() if key.endswith("_gib")]
st.dataframe(
    view.recipes_frame(ranked).rename(columns=view.TABLE_COLUMNS), hide_index=True, width="stretch", height=320,
    column_config={label: st.column_config.NumberColumn(format="%.2f") for label in sizes}
    | {"bubble": st.column_config.NumberColumn(format="percent")},
    on_select=pick_from_table, selection_mode="single-row", key=TABLE_KEY,
)
st.caption("Click a row to select that recipe, a column header to sort. Sizes are per card; communication is the "
           "bytes each card sends per step.")

with st.expander(f"Why not: {len(plan.invalid)} invalid recipes, {len(plan.valid) - len(plan.fitting)} too big"):
    st.dataframe(view.why_not_frame(plan), hide_index=True, width="stretch")

with st.expander("What is counted, and what is not"):
    counted, missing = st.columns(2)
    counted.markdown("**Counted**\n" + "\n".join(f"- {line}" for line in COUNTED))
    missing.markdown(
        "**Not counted** (why measured memory is higher)\n" + "\n".join(f"- {line}" for line in NOT_COUNTED)
    )
