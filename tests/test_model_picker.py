"""AppTest of "New design from a model" in the Layout Designer: valid values create the model library's
design through the page's commit, bad values are shown next to the form and change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.models import design_parameter_count
from core.models.llama import LlamaConfig, LlamaRecipe, llama_design
from core.sharding.design import Design

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "designer.py")


@pytest.fixture
def at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("SHARDSCOPE_WORKSPACE", str(tmp_path))
    app = AppTest.from_file(PAGE, default_timeout=90)
    app.run()
    assert not app.exception, app.exception
    return app


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def design_of(at: AppTest) -> Design:
    return at.session_state["design"]


def texts(at: AppTest, kind: str) -> str:
    return "\n".join(str(e.value) for e in getattr(at, kind))


def field(at: AppTest, name: str) -> object:
    return at.number_input(key=f"model_form:{name}")


def test_default_form_creates_the_tiny_decoder(at: AppTest) -> None:
    assert "90,432 parameters" in texts(at, "caption")
    at.button(key="model_form:create").click()
    run(at)
    expected = llama_design(LlamaConfig(64, 8, 128, 16, 8, 2, 128, kv_heads=4, dtype="float32"), LlamaRecipe(2, 4))
    assert design_of(at) == expected
    notice = "Created llama_h64_l2_kv4_dp2_mp4 from the model library: 90,432 parameters, 2 layers, 8 devices."
    assert notice in texts(at, "success")


def test_edited_fields_and_sequence_parallel(at: AppTest) -> None:
    for name, value in {"hidden": 128, "heads": 4, "kv_heads": 2, "dp": 4, "mp": 2, "layers": 3}.items():
        field(at, name).set_value(value)  # type: ignore[attr-defined]
    at.checkbox(key="model_form:sp").check()
    run(at)
    at.button(key="model_form:create").click()
    run(at)
    design = design_of(at)
    assert design.device_num == 8 and design.repeat is not None and design.repeat.count == 3
    assert design.operator("attn_out").out_strategy is not None  # sequence parallel's ReduceScatter
    assert design.tensors["wk"].shape == (128, 64)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"heads": 3}, "heads 3 does not divide hidden 64"),
        ({"kv_heads": 3}, "kv_heads 3 does not divide heads 8"),
        ({"kv_heads": 2}, "mp 4 does not divide kv_heads 2"),
        ({"dp": 3}, "dp 3 does not divide batch 8"),
        ({"vocab": 130}, "mp 4 does not divide vocab 130"),
    ],
)
def test_bad_values_are_shown_inline_and_change_nothing(at: AppTest, changes: dict[str, int], message: str) -> None:
    before = design_of(at)
    for name, value in changes.items():
        field(at, name).set_value(value)  # type: ignore[attr-defined]
    run(at)
    assert message in texts(at, "error")
    at.button(key="model_form:create").click()
    run(at)
    assert design_of(at) == before


def test_preset_fills_the_70b_shape(at: AppTest) -> None:
    at.selectbox(key="model_form:preset").set_value("LLaMA-2-70B on 64 cards")
    run(at)
    assert "68,976,648,192 parameters" in texts(at, "caption")
    at.button(key="model_form:create").click()
    run(at)
    design = design_of(at)
    assert design.device_num == 64 and design_parameter_count(design) == 68_976_648_192


def test_mlp_form_creates_seed_004s_network(at: AppTest) -> None:
    at.radio(key="model_form:model").set_value("mlp")
    run(at)
    assert "668,672 parameters" in texts(at, "caption")
    at.text_input(key="model_form:widths").set_value("512,x")
    run(at)
    assert "must be whole numbers" in texts(at, "error")
    at.text_input(key="model_form:widths").set_value("512,512")
    run(at)
    at.button(key="model_form:create").click()
    run(at)
    assert [op.name for op in design_of(at).operators] == ["matmul1", "relu1", "matmul2", "relu2", "matmul3"]
