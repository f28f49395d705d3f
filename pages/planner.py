"""Planner page: every parallel recipe for N cards, memory per card against communication per step; pick one,
make it the current design, export MindFormers' parallel_config. Compute in core.plan, draw in app.planner_view."""

from __future__ import annotations

import hashlib
from typing import Any

import streamlit as st

from app import planner_data
from app import planner_view as view
from app.design_state import commit as commit_design
from app.design_state import current_design
from app.nav import page_path
from app.planner_time import time_inputs, time_rows, time_summary
from core.errors import UserError
from core.files import expand_home
from core.models.llama import PUBLISHED_SHAPES
from core.plan.choices import (
    ATTENTION_SCORES,
    EMBEDDING,
    OPTIMIZER_PARALLEL,
    SP_STORED_INPUTS,
    Choices,
    default_choices,
)
from core.plan.explore import (
    COUNTED,
    MAX_CARD_MEMORY_GB,
    NOT_COUNTED,
    Evaluation,
    Plan,
    StructureCache,
    apply_recipe,
    explore,
    find_recipe,
    model_from_design,
    rank_key,
)
from core.plan.megatron import SOURCE as MEGATRON_SOURCE
from core.plan.megatron import covered, second_opinion
from core.plan.mfconfig import MAX_CONFIG_BYTES, MindFormersConfig, config_from_bytes, read_config_bytes
from core.plan.mindformers import DEFAULT_VERSION, VERSIONS, mindformers_yaml
from core.plan.recipes import PlanError, PlanModel, Recipe
from core.plan.steptime import TimeChoices
from core.sharding.design import Design
from core.units import format_bytes

PRESETS: dict[str, PlanModel] = {name: PlanModel(**shape) for name, shape in PUBLISHED_SHAPES.items()}
CURRENT = "the current design's model"
YAML = "a MindFormers YAML"
YAML_KEY = "planner_yaml_config"
YAML_NAME_KEY = "planner_yaml_name"
APPLIED_KEY = "planner_applied"
APPLY_ERROR_KEY = "planner_apply_error"
PICK_KEY = "planner_pick"
TABLE_KEY = "planner_table"
FIELDS = ("hidden", "heads", "kv_heads", "ffn", "layers", "vocab", "seq")


@st.cache_data(max_entries=16, show_spinner="Evaluating every recipe…")
def cached_plan(
    model: PlanModel,
    global_batch: int,
    devices: int,
    card_gb: float,
    choices: Choices,
    timing: TimeChoices | None = None,
    cp_algo: str | None = None,
) -> Plan:
    return explore(model, global_batch, devices, card_gb, choices, timing, cp_algo)


@st.cache_data(max_entries=16, show_spinner=False)
def parsed_config(digest: str, source: str, _data: bytes) -> MindFormersConfig | str:  # noqa: ARG001
    """The config of a YAML's bytes, or the one-line reason it is refused, once per content (`digest`, the
    sha256 of `_data`, is the key) and name: a rerun, in any session, never parses the same file again."""
    try:
        return config_from_bytes(_data, source)
    except UserError as exc:
        return str(exc)


def open_yaml() -> MindFormersConfig | None:
    """Upload a MindFormers training YAML or give its path; the parsed config lives in the session."""
    left, right = st.columns(2)
    upload = left.file_uploader(
        "Upload a MindFormers YAML",
        type=["yaml", "yml"],
        key="planner_yaml_upload",
        help=f"At most {MAX_CONFIG_BYTES:,} bytes (a MindFormers YAML is ~5 KB); a larger "
        "file is refused before it is read.",
    )
    path = right.text_input(
        "…or its path on this machine",
        key="planner_yaml_path",
        placeholder="/path/to/finetune_llama2_70b_bf16_64p.yaml",
    )
    try:
        if upload is not None:
            if upload.size > MAX_CONFIG_BYTES:  # refused before its bytes are read
                raise PlanError(
                    f"{upload.name} is {upload.size:,} bytes: a MindFormers YAML is at most {MAX_CONFIG_BYTES:,}"
                )
            name, source, data = upload.name, f"MindFormers config {upload.name}", upload.getvalue()
        elif path.strip():
            where = expand_home(path.strip())
            name, source, data = where.name, f"MindFormers config {where}", read_config_bytes(where)
        else:
            st.info("Open a MindFormers training YAML: its model, the recipe it runs and its modelling choices.")
            return None
        config = parsed_config(hashlib.sha256(data).hexdigest(), source, data)
        if isinstance(config, str):
            raise PlanError(config)
    except PlanError as exc:
        st.error(f"Cannot read the YAML: {exc}")
        return None
    if st.session_state.get(YAML_NAME_KEY) != name:
        st.session_state[YAML_NAME_KEY] = name
        st.session_state.pop(PICK_KEY, None)  # the select box starts on the YAML's recipe
    st.session_state[YAML_KEY] = config
    return config


def model_inputs() -> tuple[PlanModel, int, int, float, MindFormersConfig | None]:
    """The model, global batch, device count, card memory and the opened YAML (if any) from the form."""
    source, base, config = model_source()
    model = shape_inputs(base, source)
    batch, devices, card = scale_inputs(source, config)
    return model, batch, devices, card, config


def model_source() -> tuple[str, PlanModel, MindFormersConfig | None]:
    """Which model the form starts from (the current design, a preset or a YAML): the widget keys' suffix
    (a YAML's file name too, so another file starts afresh), its shape and the opened YAML (if any)."""
    design = current_design()
    from_design = model_from_design(design) if isinstance(design, Design) else None
    sources = ([CURRENT] if from_design is not None else []) + list(PRESETS) + [YAML]
    source = st.selectbox(
        "Model",
        sources,
        key="planner_source",
        help="Presets are LLaMA-2 shapes; the current design is offered when it came from the "
        "model library; a MindFormers YAML brings its model, recipe and choices.",
    )
    config = open_yaml() if source == YAML else None
    if source == YAML and config is None:
        st.stop()
    if config is not None:
        return f"{source}:{st.session_state.get(YAML_NAME_KEY)}", config.model, config
    return source, from_design if source == CURRENT and from_design is not None else PRESETS[source], None


def shape_inputs(base: PlanModel, source: str) -> PlanModel:
    """The model's shape and dtype, each field starting from `base`'s."""
    cols = st.columns(4)
    values: dict[str, int | None] = {}
    for i, name in enumerate(FIELDS):
        default = getattr(base, name)
        label = "kv heads (GQA)" if name == "kv_heads" else name
        value = cols[i % 4].number_input(
            label,
            min_value=1,
            value=int(default if default is not None else base.heads),
            step=1,
            key=f"planner_{name}@{source}",
        )
        values[name] = int(value)
    dtypes = ["bfloat16", "float16", "float32"]
    dtype = cols[3].selectbox("dtype", dtypes, index=dtypes.index(base.dtype), key=f"planner_dtype@{source}")
    return PlanModel(
        hidden=values["hidden"] or 1,
        heads=values["heads"] or 1,
        ffn=values["ffn"] or 1,
        layers=values["layers"] or 1,
        vocab=values["vocab"] or 1,
        seq=values["seq"] or 1,
        kv_heads=values["kv_heads"],
        dtype=dtype,
    )


def scale_inputs(source: str, config: MindFormersConfig | None) -> tuple[int, int, float]:
    """(global batch, devices, card memory in GB): a YAML's own batch and devices, else the form's."""
    cols3 = st.columns(3)
    devices = int(
        cols3[0].number_input(
            "devices",
            min_value=1,
            max_value=65536,
            value=config.devices if config else 8,
            key="planner_devices" + (f"@{source}" if config else ""),
        )
    )
    batch = int(
        cols3[1].number_input(
            "global batch (sequences / step)",
            min_value=1,
            value=config.global_batch if config else 32,
            key="planner_batch" + (f"@{source}" if config else ""),
        )
    )
    preset = cols3[2].segmented_control(
        "card memory", ["32 GB", "64 GB", "custom"], default="64 GB", key="planner_card_preset"
    )
    card = 32.0 if preset == "32 GB" else 64.0
    if preset == "custom":
        card = float(
            cols3[2].number_input(
                "GB per card", min_value=1.0, max_value=MAX_CARD_MEMORY_GB, value=64.0, key="planner_card_custom"
            )
        )
    return batch, devices, card


def choice_inputs(model: PlanModel, config: MindFormersConfig | None) -> Choices:
    """Every modelling choice, switchable; defaults from the YAML where it says, else the planner's."""
    base = config.choices if config is not None else default_choices(model.dtype)
    tag = f"@{st.session_state.get(YAML_NAME_KEY)}" if config is not None else f"@{model.dtype}"
    cols = st.columns(4)
    values: dict[str, Any] = {}  # Choices' keyword arguments: three byte counts (int), four option names (str)
    for i, name in enumerate(("param_bytes", "grad_bytes", "optimizer_bytes")):
        values[name] = int(
            cols[i].number_input(
                name.replace("_", " "),
                min_value=0,
                max_value=64,
                value=getattr(base, name),
                key=f"planner_choice_{name}{tag}",
            )
        )
    for i, (name, options) in enumerate(
        (
            ("embedding", EMBEDDING),
            ("sp_stored_inputs", SP_STORED_INPUTS),
            ("attention_scores", ATTENTION_SCORES),
            ("optimizer_parallel", OPTIMIZER_PARALLEL),
        )
    ):
        values[name] = cols[(i + 3) % 4].selectbox(
            name.replace("_", " "), options, index=options.index(getattr(base, name)), key=f"planner_choice_{name}{tag}"
        )
    return Choices(**values).check()


def ranked_recipes(plan: Plan) -> list[Evaluation]:
    """Valid recipes, fitting first, then the shortest step, least communication: the order of the
    select box and of the table, so a table row and a select-box index name the same recipe."""
    return sorted(plan.valid, key=lambda e: (not e.fits, *rank_key(e)))


def choose(ranked: list[Evaluation]) -> Evaluation | None:
    """The recipe the user looks at: the select box (default: the proposal), which a table row click sets."""
    if not ranked:
        return None
    labels = [f"{e.recipe.label()}{'' if e.fits else '  (does not fit)'}" for e in ranked]
    if st.session_state.get(PICK_KEY, 0) >= len(ranked):
        st.session_state[PICK_KEY] = 0
    index = st.selectbox(
        "Recipe",
        range(len(ranked)),
        format_func=lambda i: labels[i],
        key=PICK_KEY,
        help="Sorted: fitting first, then the shortest step, then least communication. "
        "Or click a row of the table below.",
    )
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
    except (UserError, ValueError) as exc:
        st.session_state[APPLY_ERROR_KEY] = str(exc)
        return
    commit_design(design, notice=f"Applied the planner's recipe {recipe.label()}.")
    st.session_state[APPLIED_KEY] = recipe.label()


def yaml_section(config: MindFormersConfig, marked: Evaluation, plan: Plan) -> None:
    """The YAML's own recipe: its cost, whether it fits, what the planner cannot model, a design from it."""
    name = st.session_state.get(YAML_NAME_KEY, "the YAML")
    if not marked.valid:
        st.error(f"`{name}`: {config.recipe.label()} cannot run as planned: {marked.reason}")
    else:
        text = (
            f"`{name}` runs **{config.recipe.label()}** on {config.devices} cards: "
            f"{format_bytes(marked.memory_bytes)} per card ({format_bytes(marked.model_state_bytes)} states + "
            f"{format_bytes(marked.activation_bytes)} activations) of {format_bytes(plan.card_memory_bytes)}"
        )
        (st.success if marked.fits else st.error)(
            text + (": fits." if marked.fits else ": does NOT fit.") + f" Planned: {time_summary(marked)}.",
            icon=":material/description:",
        )
    if config.unsupported:
        with st.expander(f"Not modelled: {len(config.unsupported)} keys of the YAML", expanded=False):
            st.dataframe([i.to_dict() for i in config.unsupported], hide_index=True, width="stretch")
    st.button(
        "New design from this config",
        key="planner_yaml_apply",
        icon=":material/add_circle:",
        on_click=apply,
        args=(config.model, config.recipe),
    )


def opinion_section(plan: Plan, chosen: Evaluation) -> None:
    """What is counted for the selected recipe, and Megatron-LM's formulas side by side."""
    differences = second_opinion(plan.model, chosen, StructureCache(plan.model))
    # st.table, not st.dataframe: the causes are sentences and must wrap, not be cut at the cell's edge
    st.subheader("What is counted, part by part (stage 0)")
    st.table(view.counted_frame(differences).style.format({"GiB": "{:.2f}"}).hide(axis="index"))
    st.subheader("Second opinion: Megatron-LM")
    if not covered(chosen.recipe):
        st.caption(
            "Megatron-LM's formulas assume sequence parallel and selective recompute; this recipe is "
            f"{chosen.recipe.label()}, so the comparison is indicative only."
        )
    opinion = view.second_opinion_frame(differences).style.format(
        {"ShardScope (GiB)": "{:.2f}", "Megatron-LM (GiB)": "{:.2f}", "difference": "{:+.1%}"}, na_rep="—"
    )
    st.table(opinion.hide(axis="index"))
    st.caption(
        f"From {MEGATRON_SOURCE}, implemented from its published formulas. Switch a modelling choice above "
        "to see its part of the difference go."
    )


def apply_section(plan: Plan, chosen: Evaluation) -> None:
    st.button(
        "Apply: make it the current design",
        type="primary",
        key="planner_apply",
        icon=":material/check_circle:",
        on_click=apply,
        args=(plan.model, chosen.recipe),
    )
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
    "cards: memory per card against step time, before a card is spent."
)
with st.container(border=True):
    model, batch, devices, card, config = model_inputs()
CHOICES_TITLE = "Modelling choices: what one card is assumed to hold"
with st.expander(CHOICES_TITLE + (" (defaults from the YAML)" if config else ""), expanded=config is not None):
    choices = choice_inputs(model, config)
    st.table(view.choices_frame(choices, config.sources if config else None).style.hide(axis="index"))
with st.expander("Step time: the card and what it achieves", expanded=False):
    timing, cp_algo = time_inputs(config)
try:
    plan = cached_plan(model, batch, devices, card, choices, timing, cp_algo)
except PlanError as exc:
    st.error(str(exc))
    st.stop()
marked = find_recipe(plan, config.recipe) if config is not None else None
if config is not None and marked is not None:
    yaml_section(config, marked, plan)

cols = st.columns(4)
cols[0].metric("recipes", len(plan.evaluations))
cols[1].metric("valid", len(plan.valid))
cols[2].metric(f"fit in {card:g} GB", len(plan.fitting))
cols[3].metric("evaluated in", f"{plan.seconds * 1000:.0f} ms")
proposal = plan.proposal
if proposal is not None:
    st.success(
        f"Proposed: **{proposal.recipe.label()}** — the shortest step that fits: {time_summary(proposal)} on "
        f"{plan.timing.hardware.label or plan.timing.hardware.name}; {format_bytes(proposal.memory_bytes)} per card, "
        f"{format_bytes(proposal.comm_bytes)} communication per step, bubble {proposal.bubble:.0%}.",
        icon=":material/recommend:",
    )
elif plan.valid:
    least = min(plan.valid, key=lambda e: e.memory_bytes)
    st.error(
        f"No recipe fits in {card:g} GB: the least memory per card is {format_bytes(least.memory_bytes)} "
        f"({least.recipe.label()}). Add cards or memory."
    )
else:
    st.error("No valid recipe for this model on this many cards: see 'Why not' below.")

ranked = ranked_recipes(plan)
if marked is not None and marked in ranked:  # the YAML's recipe heads the select box and the table
    ranked.remove(marked)
    ranked.insert(0, marked)
chosen = choose(ranked)
st.plotly_chart(
    view.pareto_figure(plan, chosen, marked), width="stretch", key="planner_chart", config={"displayModeBar": False}
)

if chosen is not None:
    left, right = st.columns([1, 1], gap="large")
    with left:
        st.subheader("Selected recipe")
        st.dataframe(
            view.breakdown_rows(chosen),
            hide_index=True,
            width="stretch",
            column_config={"GiB": st.column_config.NumberColumn(format="%.2f")},
        )
        st.table(time_rows(chosen).style.hide(axis="index"))  # a table: the recipes table stays dataframe 1
        st.caption(f"Busiest stage: {chosen.peak_stage}; tensor-parallel volume from {chosen.comm_source}.")
        apply_section(plan, chosen)
    opinion_section(plan, chosen)
    with right:
        st.subheader("MindFormers parallel_config")
        version = st.selectbox(
            "MindFormers version",
            list(VERSIONS),
            index=list(VERSIONS).index(DEFAULT_VERSION),
            format_func=lambda v: VERSIONS[v],
            key="planner_mf_version",
        )
        text = mindformers_yaml(chosen.recipe, version, card_memory_gb=card, split_embedding=choices.split_embedding)
        st.code(text, language="yaml")
        st.download_button(
            "Download YAML", text, file_name="parallel_config.yaml", mime="text/yaml", key="planner_yaml_download"
        )

st.subheader("All valid recipes")
sizes = [label for key, label in planner_data.TABLE_COLUMNS.items() if key.endswith("_gib")]
table = planner_data.recipes_frame(ranked).rename(columns=planner_data.TABLE_COLUMNS)
if marked is not None:
    table.insert(0, "YAML", ["◆" if e.recipe == marked.recipe else "" for e in ranked])
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    height=320,
    column_config={label: st.column_config.NumberColumn(format="%.2f") for label in sizes}
    | {
        "bubble": st.column_config.NumberColumn(format="percent"),
        "MFU": st.column_config.NumberColumn(format="percent"),
    }
    | {
        "step (s)": st.column_config.NumberColumn(format="%.3g"),
        "tokens/s/card": st.column_config.NumberColumn(format="%.0f"),
    },
    on_select=pick_from_table,
    selection_mode="single-row",
    key=TABLE_KEY,
)
st.caption(
    "Click a row to select that recipe, a column header to sort. Sizes are per card; communication is the "
    "bytes each card sends per step."
)

with st.expander(f"Why not: {len(plan.invalid)} invalid recipes, {len(plan.valid) - len(plan.fitting)} too big"):
    st.dataframe(view.why_not_frame(plan), hide_index=True, width="stretch")

with st.expander("What is counted, and what is not"):
    counted, missing = st.columns(2)
    counted.markdown("**Counted**\n" + "\n".join(f"- {line}" for line in COUNTED))
    missing.markdown(
        "**Not counted** (why measured memory is higher)\n" + "\n".join(f"- {line}" for line in NOT_COUNTED)
    )
