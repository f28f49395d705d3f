"""The Planner's step-time assumptions (card, efficiency, overlap, attention FLOPs) and context parallel, as
widgets; and the small tables that show a recipe's time. Compute lives in core.plan.steptime."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.plan.explore import Evaluation
from core.plan.hardware import DEFAULT_HARDWARE, PRESETS, resolve_hardware
from core.plan.mfconfig import MindFormersConfig
from core.plan.recipes import CP_ALGOS, PlanError
from core.plan.steptime import ATTENTION_FLOPS, DEFAULT_EFFICIENCY, DEFAULT_OVERLAP, EXPLAINED_TIME, TimeChoices

CUSTOM = "custom JSON file"
NO_CP = "off"


def time_inputs(config: MindFormersConfig | None) -> tuple[TimeChoices, str | None]:
    """The step-time assumptions and the context-parallel algorithm to enumerate (the YAML's when it uses cp)."""
    cols = st.columns(4)
    names = [*PRESETS, CUSTOM]
    name = cols[0].selectbox(
        "hardware",
        names,
        index=names.index(DEFAULT_HARDWARE),
        format_func=lambda n: PRESETS[n].label if n in PRESETS else n,
        key="planner_hardware",
        help="Peak dense 16-bit TFLOPS, link bandwidth inside / between nodes, cards per node (sources in "
        "core/plan/hardware.py).",
    )
    if name == CUSTOM:
        path = cols[0].text_input("path of the card's JSON", key="planner_hardware_file", placeholder="/path/card.json")
        try:
            hardware = resolve_hardware(path.strip()) if path.strip() else PRESETS[DEFAULT_HARDWARE]
        except PlanError as exc:
            st.error(f"Cannot read the hardware file: {exc}")
            hardware = PRESETS[DEFAULT_HARDWARE]
    else:
        hardware = PRESETS[name]
    efficiency = cols[1].slider(
        "efficiency (of peak)",
        0.05,
        1.0,
        DEFAULT_EFFICIENCY,
        0.05,
        key="planner_efficiency",
        help=EXPLAINED_TIME["efficiency"],
    )
    overlap = cols[2].slider(
        "comm overlap", 0.0, 1.0, DEFAULT_OVERLAP, 0.05, key="planner_overlap", help=EXPLAINED_TIME["overlap"]
    )
    attention = cols[3].selectbox(
        "attention FLOPs", ATTENTION_FLOPS, key="planner_attention_flops", help=EXPLAINED_TIME["attention_flops"]
    )
    algos = [NO_CP, *CP_ALGOS]
    yaml_algo = config.recipe.cp_algo if config is not None and config.recipe.cp > 1 else NO_CP
    algo = cols[3].selectbox(
        "context parallel",
        algos,
        index=algos.index(yaml_algo),
        key=f"planner_cp@{yaml_algo}",
        help="Also split the sequence over cp cards (MindFormers context_parallel_algo): ring attention, "
        "Ulysses all-to-all, or both.",
    )
    timing = TimeChoices(hardware, float(efficiency), float(overlap), str(attention)).check()
    return timing, None if algo == NO_CP else str(algo)


def time_rows(e: Evaluation) -> pd.DataFrame:
    """Where the selected recipe's step goes, for the breakdown table."""
    t = e.time
    if t is None:
        return pd.DataFrame(columns=["what", "value"])
    rows = [
        ("step time", f"{t.step_s:.3g} s"),
        ("compute", f"{t.compute_s:.3g} s"),
        ("exposed communication", f"{t.exposed_comm_s:.3g} s (of {t.comm_s:.3g} s)"),
        ("pipeline bubble", f"{t.bubble_s:.3g} s"),
        ("tokens / s per card", f"{t.tokens_per_s_per_card:,.0f}"),
        ("MFU", f"{t.mfu:.0%}"),
    ]
    return pd.DataFrame(rows, columns=["what", "value"])


def time_summary(e: Evaluation) -> str:
    t = e.time
    if t is None:
        return ""
    return f"step {t.step_s:.3g} s, {t.tokens_per_s_per_card:,.0f} tokens/s per card, MFU {t.mfu:.0%}"
