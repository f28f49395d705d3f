"""The planner's step time and context parallel (issue 33): hand-derived FLOPs and seconds, the cp formulas from
Megatron-Core's and DeepSpeed-Ulysses' published descriptions, hardware files refused in one line, time
assumptions that change the ranking, the 128k Qwen2.5 YAML planned with its cp, and the published-throughput
table's claim."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cli import plan as plan_cli
from core.plan.activations import DecoderShape, Recompute, layer_activation_bytes
from core.plan.context import cp_layer_send_bytes
from core.plan.explore import Evaluation, StructureCache, evaluate, explore
from core.plan.hardware import PRESETS, Hardware, hardware_from_dict, hardware_from_json, resolve_hardware
from core.plan.mfconfig import read_config
from core.plan.recipes import PlanError, PlanModel, Recipe, enumerate_recipes, recipe_candidate
from core.plan.steptime import TimeChoices, micro_batch_flops

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "mindformers"
QWEN_128K = FIXTURES / "mindspore-lab__mindformers@v1.5.0__research__qwen2_5__finetune_qwen25_14b_128k.yaml"
LLAMA_7B = PlanModel(hidden=4096, heads=32, ffn=11008, layers=32, vocab=32000, seq=4096)
GQA = PlanModel(hidden=1024, heads=16, ffn=2816, layers=4, vocab=1024, seq=4096, kv_heads=4)
BIG_CARD = 1 << 50


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m core")
    plan_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["plan", *argv])
    return args.func(args)


def _one(model: PlanModel, recipe: Recipe, timing: TimeChoices | None = None) -> Evaluation:
    e = evaluate(recipe_candidate(model, recipe), model, StructureCache(model), BIG_CARD, None, timing or TimeChoices())
    assert e.valid, e.reason
    return e


# ---------------------------------------------------------------------------------------------
# step time, by hand
# ---------------------------------------------------------------------------------------------
def test_compute_time_is_the_hand_counted_flops_over_peak_times_efficiency() -> None:
    """LLaMA-7B, one card, one sequence: per layer forward 2·s·(4h² + 3hf) matmul + 2·s²·h causal attention,
    ×3 for forward + backward; the LM head 3 · 2·s·h·V; over 313 TFLOPS × 0.55."""
    s, h, f, v, layers = 4096, 4096, 11008, 32000, 32
    flops = layers * 3 * (2 * s * (4 * h * h + 3 * h * f) + 2 * s * s * h) + 3 * 2 * s * h * v
    e = _one(LLAMA_7B, Recipe(1, 1, 1, False, False, Recompute.NONE, 1, 1))
    assert e.time is not None
    assert e.time.compute_s == pytest.approx(flops / (313e12 * 0.55), rel=1e-12)
    assert e.time.bubble_s == 0 and e.time.comm_s == 0  # one card: nothing to send
    assert e.time.mfu == pytest.approx(0.55, rel=1e-12)  # no recompute, no bubble, no comm: MFU = efficiency
    assert e.time.tokens_per_s_per_card == pytest.approx(s / e.time.step_s)


def test_full_recompute_adds_one_forward_and_the_bubble_is_p_minus_one_micro_batches() -> None:
    plain = Recipe(1, 1, 4, False, False, Recompute.NONE, 8, 1)
    full = Recipe(1, 1, 4, False, False, Recompute.FULL, 8, 1)
    layers_plain = micro_batch_flops(LLAMA_7B, plain, True) - micro_batch_flops(LLAMA_7B, plain, True, False)
    assert layers_plain == 0
    e_plain, e_full = _one(LLAMA_7B, plain), _one(LLAMA_7B, full)
    assert e_plain.time and e_full.time
    micro = e_plain.time.compute_s / 8
    assert e_plain.time.bubble_s == pytest.approx(3 * micro)  # (p − 1) micro-batch times
    assert e_full.time.compute_s > e_plain.time.compute_s
    assert e_full.time.mfu < e_plain.time.mfu  # recompute is work MFU does not count


def test_comm_crosses_the_slow_link_only_when_its_group_leaves_the_node() -> None:
    """dp16 on 8-card nodes: the gradient reduction goes between nodes (25 GB/s), dp8 stays inside (392 GB/s)."""
    model = LLAMA_7B
    inside = _one(model, Recipe(8, 1, 1, False, False, Recompute.NONE, 2, 1), TimeChoices(overlap=0.0))
    across = _one(model, Recipe(16, 1, 1, False, False, Recompute.NONE, 1, 1), TimeChoices(overlap=0.0))
    assert inside.time and across.time
    assert inside.time.comm_s == pytest.approx(inside.dp_comm_bytes / 392e9)
    assert across.time.comm_s == pytest.approx(across.dp_comm_bytes / 25e9)
    assert inside.time.exposed_comm_s == pytest.approx(inside.time.comm_s)  # overlap 0: all exposed


def test_changing_a_time_assumption_changes_the_proposal() -> None:
    hidden = explore(LLAMA_7B, 64, 16, 64, timing=TimeChoices(overlap=1.0)).proposal
    exposed = explore(LLAMA_7B, 64, 16, 64, timing=TimeChoices(overlap=0.0)).proposal
    assert hidden is not None and exposed is not None
    assert hidden.recipe != exposed.recipe
    fast = explore(LLAMA_7B, 64, 16, 64, timing=TimeChoices(hardware=PRESETS["h100-sxm"])).proposal
    slow = explore(LLAMA_7B, 64, 16, 64).proposal
    assert fast is not None and slow is not None and fast.recipe != slow.recipe


def test_cli_overlap_changes_the_proposed_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--hidden", "4096", "--heads", "32", "--ffn", "11008", "--layers", "32", "--vocab", "32000"]
    args += ["--seq", "4096", "--global-batch", "64", "--devices", "16", "--card-memory", "64"]
    proposals = []
    for overlap in ("0", "1"):
        assert _cli([*args, "--overlap", overlap]) == 0
        out = capsys.readouterr().out
        proposals.append(out.split("Proposed", 1)[1].splitlines()[3].split("  ")[0])
    assert proposals[0] != proposals[1]


def test_cli_json_rows_carry_the_time(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--hidden", "512", "--heads", "8", "--ffn", "1376", "--layers", "4", "--vocab", "1000", "--seq", "128"]
    assert _cli([*args, "--global-batch", "8", "--devices", "8", "--card-memory", "32", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    keys = {"step_s", "tokens_per_s_per_card", "mfu", "compute_s", "exposed_comm_s", "bubble_s"}
    assert rows and all(keys <= set(r["time"]) and r["time"]["step_s"] > 0 and r["cp"] == 1 for r in rows)
    assert all(
        math.isclose(
            r["time"]["step_s"],
            r["time"]["compute_s"] + r["time"]["exposed_comm_s"] + r["time"]["bubble_s"],
            rel_tol=1e-5,
        )
        for r in rows
    )


# ---------------------------------------------------------------------------------------------
# hardware presets and files
# ---------------------------------------------------------------------------------------------
def test_presets_are_checked_and_named_as_the_cli_takes_them() -> None:
    assert set(PRESETS) == {"atlas-800t-a2", "atlas-900-a2-podc", "a100-80g", "h100-sxm", "h200", "cpu"}
    assert all(h.check() is h and h.name == name for name, h in PRESETS.items())


def test_a_custom_json_card_is_read(tmp_path: Path) -> None:
    path = tmp_path / "card.json"
    path.write_text(json.dumps(PRESETS["h100-sxm"].to_dict() | {"name": "mine", "inter_gbps": 5}))
    card = resolve_hardware(str(path))
    assert card == Hardware("mine", 989.0, 80.0, 450.0, 5, 8, "NVIDIA H100 SXM 80 GB")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "card.json: not valid JSON at line 1"),
        ("[1, 2]", "card.json: a hardware file is a JSON object, got list"),
        ('{"name": "x"}', "card.json: missing key 'peak_tflops'"),
        ('{"name": "x", "peak": 1}', "card.json: unknown key 'peak'"),
        (
            '{"name": "x", "peak_tflops": -1, "memory_gb": 1, "intra_gbps": 1, "inter_gbps": 1, "cards_per_node": 8}',
            "card.json: hardware peak_tflops must be a number > 0 and at most 1e+06, got -1",
        ),
        (
            '{"name": "x", "peak_tflops": NaN, "memory_gb": 1, "intra_gbps": 1, "inter_gbps": 1, "cards_per_node": 8}',
            "card.json: NaN is not a number a card has",
        ),
        (
            '{"name": "x", "peak_tflops": 1, "memory_gb": 1, "intra_gbps": true, "inter_gbps": 1, "cards_per_node": 8}',
            "card.json: hardware intra_gbps must be a number > 0",
        ),
        (
            '{"name": "x", "peak_tflops": 1, "memory_gb": 1, "intra_gbps": 1, "inter_gbps": 1, "cards_per_node": 0.5}',
            "card.json: hardware cards_per_node must be a whole number from 1 to 1024, got 0.5",
        ),
    ],
)
def test_bad_hardware_files_are_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "card.json"
    path.write_text(text)
    with pytest.raises(PlanError) as info:
        hardware_from_json(path)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_a_huge_or_missing_hardware_file_and_an_unknown_name_are_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(" " * 70_000 + "{}")
    with pytest.raises(PlanError, match=r"big\.json"):
        hardware_from_json(big)
    with pytest.raises(PlanError, match="unknown hardware 'tpu-v9': use one of atlas-800t-a2"):
        resolve_hardware("tpu-v9")
    with pytest.raises(PlanError):
        resolve_hardware(str(tmp_path / "absent.json"))


@settings(max_examples=200, deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "name": st.text(max_size=90),
            "peak_tflops": st.one_of(st.floats(allow_nan=True), st.integers(-5, 10**7), st.booleans()),
            "memory_gb": st.floats(-1, 1e7),
            "intra_gbps": st.floats(allow_infinity=True),
            "inter_gbps": st.floats(0, 1e7),
            "cards_per_node": st.one_of(st.integers(-3, 3000), st.floats(0, 9)),
        }
    )
)
def test_any_hardware_object_is_a_checked_card_or_a_one_line_error(data: dict[str, object]) -> None:
    try:
        card = hardware_from_dict(data, "h.json")
    except PlanError as exc:
        assert str(exc).startswith("h.json: ") and "\n" not in str(exc)
        return
    for name in ("peak_tflops", "memory_gb", "intra_gbps", "inter_gbps"):
        assert 0 < getattr(card, name) <= 1e6
    assert 1 <= card.cards_per_node <= 1024 and card.name.strip()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--hardware", "tpu"], "error: unknown hardware 'tpu'"),
        (["--efficiency", "0"], "error: efficiency must be a fraction of the peak > 0 and at most 1, got 0.0"),
        (["--efficiency", "nan"], "error: efficiency must be a fraction of the peak"),
        (["--overlap", "1.5"], "error: overlap must be a fraction from 0 to 1, got 1.5"),
    ],
)
def test_cli_bad_time_flags_are_one_line(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--hidden", "512", "--heads", "8", "--ffn", "1376", "--layers", "4", "--vocab", "1000", "--seq", "128"]
    assert _cli([*args, "--global-batch", "8", "--devices", "8", "--card-memory", "32", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# context parallel: Megatron-Core's ring, DeepSpeed-Ulysses' all-to-all, both
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cp", "mp", "b", "recompute"), [(2, 1, 1, "none"), (4, 2, 2, "selective"), (8, 1, 1, "full")])
def test_ring_attention_sends_the_kv_blocks_megatron_describes(cp: int, mp: int, b: int, recompute: str) -> None:
    """Megatron-Core context-parallel guide: K/V all-gathered forward, all-gathered again and the dK/dV
    reduce-scattered backward, each as (cp − 1) ring steps of one K/V block 2 · (s/cp) · b · h_kv/t elements;
    full recompute runs the forward ring again."""
    s, h, hkv, e = 4096, 1024, 256, 2
    block = 2 * (s / cp) * b * (hkv / mp) * e
    passes = 4 if recompute == "full" else 3
    recipe = Recipe(1, mp, 1, False, False, Recompute(recompute), 1, b, cp, "colossalai_cp")
    assert cp_layer_send_bytes(recipe, s, h, hkv, e) == pytest.approx(passes * (cp - 1) * block)


def test_ulysses_sends_the_all_to_all_of_q_k_v_and_o_each_way() -> None:
    """DeepSpeed-Ulysses §3: all-to-all of Q, K, V before attention and of O after; each card keeps 1/u of its
    local tensors and sends the rest, forward and again for the gradients backward."""
    s, h, hkv, e, cp, mp, b = 8192, 1024, 256, 2, 4, 2, 1
    local = (s / cp) * b * (h + hkv + hkv + h) / mp * e
    recipe = Recipe(1, mp, 1, False, False, Recompute.NONE, 1, b, cp, "ulysses_cp")
    assert cp_layer_send_bytes(recipe, s, h, hkv, e) == pytest.approx(2 * (cp - 1) / cp * local)
    hybrid = Recipe(1, mp, 1, False, False, Recompute.NONE, 1, b, 8, "hybrid_cp", 2)  # Ulysses 2 × ring 4
    a2a = 2 * (2 - 1) / 2 * (s / 8) * b * (2 * h + 2 * hkv) / mp * e
    ring = 3 * (4 - 1) * 2 * (s / 8) * b * (hkv / mp) * e
    assert cp_layer_send_bytes(hybrid, s, h, hkv, e) == pytest.approx(a2a + ring)


def test_a_cp_recipe_holds_the_chunks_activations_and_reduces_gradients_over_dp_times_cp() -> None:
    """Megatron-Core: CP splits every activation along the sequence; with flash attention a layer's stored bytes
    are those of the s/cp chunk. The ring adds its two K/V blocks once; weights are replicated over cp."""
    model = GQA
    cp, e_bytes = 4, 2
    shape = DecoderShape.llama(model.hidden, model.heads, model.ffn, model.kv_heads)
    base = Recipe(2, 1, 1, False, False, Recompute.NONE, 1, 1)
    ring = Recipe(2, 1, 1, False, False, Recompute.NONE, 1, 1, cp, "colossalai_cp")
    flat, split = _one(model, base), _one(model, ring)
    chunk = layer_activation_bytes(shape, model.seq // cp, 1, recompute=Recompute.NONE, act_bytes=e_bytes)
    whole = layer_activation_bytes(shape, model.seq, 1, recompute=Recompute.NONE, act_bytes=e_bytes)
    scores_chunk = model.heads * (model.seq // cp) ** 2 * e_bytes
    scores_mine = model.heads * (model.seq // cp) * model.seq * e_bytes  # my queries against every key
    block = 2 * (model.seq / cp) * (shape.kv_hidden) * e_bytes
    layers = model.layers
    expected_delta = layers * (whole - (chunk - scores_chunk + scores_mine)) - 2 * block
    ids = 4 * model.seq * (1 - 1 / cp)
    logits_inputs = (4 * model.vocab + 2 * 2 * model.hidden) * model.seq * (1 - 1 / cp)
    assert flat.activation_bytes - split.activation_bytes == pytest.approx(expected_delta + ids + logits_inputs, abs=8)
    grads = split.model_state_bytes / 8  # 2 B of the 16 B per parameter (bf16 weight and gradient, 12 B Adam)
    assert split.dp_comm_bytes == pytest.approx(2 * (8 - 1) / 8 * grads, rel=1e-6)  # AllReduce over dp·cp = 8
    assert split.cp_comm_bytes == pytest.approx(layers * 3 * (cp - 1) * block)


def test_cp_recipes_are_enumerated_over_dp_mp_cp_pp_with_reasons() -> None:
    candidates = enumerate_recipes(GQA, 8, 32, "ulysses_cp")
    with_cp = [c for c in candidates if c.recipe.cp > 1]
    assert with_cp and all(c.recipe.devices == 32 for c in candidates)
    assert {c.recipe.cp for c in with_cp} == {2, 4, 8, 16, 32}
    assert any(c.reason == "heads 16 is not divisible by mp 2 × Ulysses degree 16" for c in with_cp)
    assert any(c.reason == "heads 16 is not divisible by mp 1 × Ulysses degree 32" for c in with_cp)
    assert any(c.valid and c.recipe.cp == 4 and c.recipe.mp == 4 for c in with_cp)
    with pytest.raises(PlanError, match="context parallel algorithm 'ring' is not one of"):
        enumerate_recipes(GQA, 8, 16, "ring")


def test_the_128k_qwen_config_opens_with_its_cp_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    config = read_config(QWEN_128K)
    assert (config.recipe.cp, config.recipe.cp_algo, config.devices) == (16, "colossalai_cp", 64)
    assert _cli(["--mindformers-config", str(QWEN_128K), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    mine = out["config_recipe"]
    assert mine["valid"] and mine["cp"] == 16 and mine["cp_algo"] == "colossalai_cp" and "fits" in mine
    assert mine["cp_comm_bytes"] > 0 and mine["time"]["step_s"] > 0
    assert any(r["cp"] > 1 for r in out["recipes"])
    assert _cli(["--mindformers-config", str(QWEN_128K)]) == 0
    assert "dp1 mp2 pp2 cp16-ring os rc-full m64×b1 on 64 cards (the YAML's recipe)" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# published throughput: the README's table
# ---------------------------------------------------------------------------------------------
def test_the_published_throughput_table_meets_its_goal_with_the_default_factors() -> None:
    """benchmarks/bench_plan.py --throughput: with the one global set of defaults, at least 10 of the 14
    configs are predicted within ±30 % of MindFormers' published tokens/s per card (first documented hardware)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import bench_plan

    data = json.loads((FIXTURES / "throughput.json").read_text(encoding="utf-8"))["configs"]
    assert len(data) == 14
    ratios = {}
    for entry in data:
        first = entry["throughput"][0]
        _, tokens, mfu = bench_plan.predicted(entry["file"], bench_plan.HARDWARE[first["hardware"]])
        assert 0 < mfu < 1
        ratios[entry["file"]] = tokens / first["tokens_per_s_per_card"]
    assert sum(abs(r - 1) <= 0.30 for r in ratios.values()) >= 10


def test_a_cp_recipe_exports_its_context_parallel_keys_and_reads_back() -> None:
    from core.plan.mfconfig import parse_config
    from core.plan.mindformers import mindformers_yaml

    recipe = Recipe(1, 2, 2, False, True, Recompute.FULL, 4, 1, 8, "hybrid_cp", 2)
    text = mindformers_yaml(recipe, "1.3")
    assert "context_parallel: 8" in text and 'context_parallel_algo: "hybrid_cp"' in text
    model = (
        "model:\n  model_config: {hidden_size: 512, num_layers: 4, num_heads: 8, vocab_size: 1000, seq_length: 4096}\n"
    )
    assert parse_config(model + text).recipe == recipe


def test_cli_takes_a_hardware_json_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    card = tmp_path / "slow.json"
    card.write_text(json.dumps(PRESETS["a100-80g"].to_dict() | {"name": "slow", "peak_tflops": 31.2}))
    args = ["--hidden", "512", "--heads", "8", "--ffn", "1376", "--layers", "4", "--vocab", "1000", "--seq", "128"]
    args += ["--global-batch", "8", "--devices", "8", "--card-memory", "32", "--json"]
    assert _cli([*args, "--hardware", "a100-80g"]) == 0
    fast = {(r["dp"], r["mp"], r["pp"]): r["time"]["compute_s"] for r in json.loads(capsys.readouterr().out)}
    assert _cli([*args, "--hardware", str(card)]) == 0
    slow = {(r["dp"], r["mp"], r["pp"]): r["time"]["compute_s"] for r in json.loads(capsys.readouterr().out)}
    assert slow.keys() == fast.keys()
    assert all(slow[k] == pytest.approx(10 * fast[k], rel=1e-4) for k in fast)  # a tenth of the peak


@settings(max_examples=60, deadline=None)
@given(
    devices=st.sampled_from([1, 2, 4, 8, 16]),
    efficiency=st.floats(0.01, 1.0),
    overlap=st.floats(0.0, 1.0),
    hardware=st.sampled_from(sorted(PRESETS)),
    cp_algo=st.sampled_from([None, "colossalai_cp", "ulysses_cp", "hybrid_cp"]),
)
def test_every_step_adds_up_and_mfu_never_beats_the_efficiency(
    devices: int, efficiency: float, overlap: float, hardware: str, cp_algo: str | None
) -> None:
    """Recompute, bubble and exposed communication only add time to the model's FLOPs at the efficiency, so
    for every recipe step = compute + bubble + exposed and MFU <= efficiency (causal attention counted alike)."""
    timing = TimeChoices(PRESETS[hardware], efficiency, overlap)
    plan = explore(GQA, 16, devices, 1e4, timing=timing, cp_algo=cp_algo)
    assert plan.valid
    for e in plan.valid:
        t = e.time
        assert t is not None and t.step_s > 0
        assert t.step_s == pytest.approx(t.compute_s + t.bubble_s + t.exposed_comm_s)
        assert t.exposed_comm_s == pytest.approx((1 - overlap) * t.comm_s)
        assert 0 < t.mfu <= efficiency * (1 + 1e-9)


def test_the_second_opinion_of_a_cp_recipe_is_that_of_its_sequence_chunk_on_dp_times_cp_replicas() -> None:
    from core.plan.megatron import second_opinion

    ring = _one(GQA, Recipe(2, 1, 1, False, True, Recompute.SELECTIVE, 1, 1, 4, "colossalai_cp"))
    chunk = PlanModel(1024, 16, 2816, 4, 1024, 4096 // 4, 4)
    same = _one(chunk, Recipe(8, 1, 1, False, True, Recompute.SELECTIVE, 1, 1))
    assert [d.megatron for d in second_opinion(GQA, ring)] == [d.megatron for d in second_opinion(chunk, same)]
    whole = _one(GQA, Recipe(2, 1, 1, False, True, Recompute.SELECTIVE, 1, 1))
    assert second_opinion(GQA, ring)[-1].megatron < second_opinion(GQA, whole)[-1].megatron


def test_the_card_named_by_hardware_gives_the_memory_when_none_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    """`plan ... --hardware h100-sxm` without --card-memory plans for the preset's 80 GB (it said
    '--card-memory GB needed'); an explicit --card-memory still wins, and without either it is still asked for."""
    from core.__main__ import main

    model = ["--hidden", "4096", "--heads", "32", "--ffn", "11008", "--layers", "32", "--vocab", "32000"]
    base = [*model, "--seq", "4096", "--devices", "8", "--global-batch", "32"]
    assert main(["plan", *base, "--hardware", "h100-sxm"]) == 0
    assert "fit in 80.0 GiB" in capsys.readouterr().out
    assert main(["plan", *base, "--hardware", "h100-sxm", "--card-memory", "32"]) == 0
    assert "fit in 32.0 GiB" in capsys.readouterr().out
    assert main(["plan", *base]) == 2
    assert "--card-memory GB (or --hardware NAME) needed" in capsys.readouterr().err
