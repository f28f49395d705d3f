"""The "New design from a model" form: the model library's fields, live checks, a "Create design" button.

Why a widget of its own: the Designer page only needs `model_form() -> Design | None`; the checks
are the generators' own (`MODELS[name].problems`), shown next to the form as the user types, so a
value the CLI would refuse is refused here with the same sentence.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.models import MODELS, ModelError, ModelProblem, design_parameter_count
from core.models.llama import PUBLISHED_SHAPES, LlamaConfig, LlamaRecipe, llama_parameter_count
from core.models.mlp import MlpConfig, MlpRecipe, mlp_parameter_count
from core.sharding.design import FLOAT_DTYPES, Design

KEY = "model_form"
LLAMA_FIELDS = ("hidden", "heads", "kv_heads", "ffn", "seq", "batch", "layers", "vocab")
# Presets: the shapes of the shipped examples (examples/llama_*.json) and the published models.
LLAMA_PRESETS: dict[str, dict[str, Any]] = {
    "Tiny decoder (trains on CPU)": dict(
        hidden=64, heads=8, kv_heads=4, ffn=128, seq=16, batch=8, layers=2, vocab=128, dtype="float32", dp=2, mp=4
    ),
    "LLaMA-7B on 8 cards": dict(  # LLaMA-1 7B: LLaMA-2 7B's layers with a 2,048-token context
        **{**PUBLISHED_SHAPES["LLaMA-2 7B"], "kv_heads": 32, "seq": 2048}, batch=8, dtype="bfloat16", dp=2, mp=4
    ),
    "LLaMA-2-70B on 64 cards": dict(**PUBLISHED_SHAPES["LLaMA-2 70B"], batch=8, dtype="bfloat16", dp=8, mp=8, sp=True),
}
MLP_DEFAULTS: dict[str, Any] = dict(batch=32, features=784, widths="512,512", classes=10, dtype="float32", dp=2, mp=4)


def _key(field: str) -> str:
    return f"{KEY}:{field}"


def _seed(values: dict[str, Any], overwrite: bool = False) -> None:
    """Put values into the widgets' session state (first run, or a preset chosen)."""
    for field, value in values.items():
        if overwrite or _key(field) not in st.session_state:
            st.session_state[_key(field)] = value


def _apply_preset() -> None:
    preset = LLAMA_PRESETS.get(st.session_state.get(_key("preset"), ""))
    if preset:
        _seed({"sp": False, **preset}, overwrite=True)


def _int(field: str, label: str | None = None, help_text: str | None = None, column: Any = None) -> int:
    where = column if column is not None else st
    return int(where.number_input(label or field, min_value=1, step=1, format="%d", key=_key(field), help=help_text))


def _llama_inputs() -> tuple[LlamaConfig, LlamaRecipe]:
    _seed({"sp": False, **LLAMA_PRESETS["Tiny decoder (trains on CPU)"]})
    st.selectbox(
        "Preset",
        list(LLAMA_PRESETS),
        index=None,
        placeholder="fill the fields from a known shape…",
        key=_key("preset"),
        on_change=_apply_preset,
    )
    helps = {
        "hidden": "model width h",
        "heads": "attention heads; must divide hidden",
        "kv_heads": "key/value heads (grouped-query attention); equal to heads for plain multi-head",
        "ffn": "SwiGLU inner width",
        "seq": "sequence length",
        "batch": "global batch (samples per step)",
        "layers": "decoder layers (the design holds one, repeated)",
        "vocab": "vocabulary size",
    }
    cols = st.columns(4)
    values = {f: _int(f, help_text=helps[f], column=cols[i % 4]) for i, f in enumerate(LLAMA_FIELDS)}
    c1, c2, c3, c4 = st.columns(4)
    dtype = c1.selectbox("dtype", FLOAT_DTYPES, key=_key("dtype"))
    dp = _int("dp", help_text="data parallel: the batch is split over dp", column=c2)
    mp = _int("mp", help_text="model (tensor) parallel: heads, ffn and vocab are split over mp", column=c3)
    c4.markdown("&nbsp;")
    sp = c4.checkbox("sp", key=_key("sp"), help="sequence parallel: norms and residual adds split over dp × mp")
    config = LlamaConfig(**values, dtype=dtype)
    return config, LlamaRecipe(dp=dp, mp=mp, sp=sp)


def _mlp_inputs() -> tuple[MlpConfig, MlpRecipe] | tuple[None, None]:
    _seed(MLP_DEFAULTS)
    c1, c2, c3, c4 = st.columns(4)
    batch = _int("batch", column=c1)
    features = _int("features", help_text="input features (784 for MNIST)", column=c2)
    widths_text = c3.text_input("hidden widths", key=_key("widths"), help="comma-separated, e.g. 512,512")
    classes = _int("classes", column=c4)
    d1, d2, d3, _ = st.columns(4)
    dtype = d1.selectbox("dtype", FLOAT_DTYPES, key=_key("dtype"))
    dp = _int("dp", column=d2)
    mp = _int("mp", column=d3)
    try:
        widths = tuple(int(w) for w in widths_text.replace(" ", "").split(",") if w)
    except ValueError:
        st.error(f"hidden widths {widths_text!r} must be whole numbers separated by commas, e.g. 512,512")
        return None, None
    return MlpConfig(batch, features, widths, classes, dtype), MlpRecipe(dp, mp)


def _summary(model: str, config: Any, recipe: Any) -> str:
    if model == "llama":
        count = llama_parameter_count(config)
        extra = f" · head_dim {config.hidden // config.heads}" if config.hidden % config.heads == 0 else ""
    else:
        count = mlp_parameter_count(config)
        extra = ""
    return f"**{count:,} parameters** · {recipe.dp * recipe.mp} devices (dp {recipe.dp} × mp {recipe.mp}){extra}"


def show_problems(problems: list[ModelProblem]) -> None:
    """Each bad value with its field, as the CLI would say it."""
    for problem in problems:
        st.error(f"**{problem.field}**: {problem.message}", icon=":material/error:")


def model_form() -> Design | None:
    """The form; returns the new design on "Create design" when every value is valid, else None."""
    model = st.radio("Model", list(MODELS), format_func=lambda m: MODELS[m].title, horizontal=True, key=_key("model"))
    config, recipe = _llama_inputs() if model == "llama" else _mlp_inputs()
    if config is None:
        st.button("Create design", key=_key("create"), disabled=True)
        return None
    problems = MODELS[model].problems(config, recipe)
    if problems:
        show_problems(problems)
    else:
        st.caption(_summary(model, config, recipe))
    clicked = st.button("Create design", key=_key("create"), type="primary", icon=":material/add_circle:")
    if not clicked or problems:
        return None
    try:
        return MODELS[model].design(config, recipe)
    except ModelError as exc:  # the live check above should have caught it; never break the page
        show_problems(exc.problems)
        return None


def created_notice(design: Design) -> str:
    """What the Designer says after a design was created from the form."""
    layers = f", {design.repeat.count} layers" if design.repeat else ""
    return (
        f"Created {design.name} from the model library: {design_parameter_count(design):,} parameters{layers}, "
        f"{design.device_num} devices."
    )
