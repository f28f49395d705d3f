"""Open a MindFormers training YAML: its model, the recipe it runs, the modelling choices it implies, and every
key the planner cannot model (listed, never silently dropped).

Read with `core.plan.safeyaml` (PyYAML's safe loader, bounded; values reach messages via `describe`). Key names,
legacy (MindFormers r1.x `LlamaConfig`, e.g. `configs/llama2/finetune_llama2_70b_bf16_32p.yaml` @ v1.3.0) and
current (the mcore / Hugging Face style of `configs/qwen3/pretrain_qwen3_32b_4k.yaml` @ v1.7.0):

    model.model_config   hidden_size; num_layers | num_hidden_layers; num_heads | num_attention_heads;
                         n_kv_heads | num_key_value_heads | multi_query_group_num; intermediate_size |
                         ffn_hidden_size, else ffn_dim_multiplier + multiple_of (LlamaFeedForward's rule);
                         vocab_size; seq_length; compute_dtype; param_init_type | params_dtype;
                         use_flash_attention
    parallel_config      data_parallel, model_parallel, pipeline_stage, context_parallel, micro_batch_num,
                         use_seq_parallel, vocab_emb_dp, (r0.x) optimizer_shard
    parallel             enable_parallel_optimizer
    recompute_config     recompute, select_recompute (True/False or layers per stage)
    runner_config        batch_size (micro-batch per data-parallel replica), gradient_accumulation_steps
    optimizer.type       FP32StateAdamWeightDecay / AdamW keep fp32 moments (MindFormers' `clone_state`
                         makes float32 states) and no master copy: 8 B per parameter
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.files import read_checked
from core.plan.activations import Recompute
from core.plan.choices import DTYPE_BYTES, Choices
from core.plan.recipes import CP_ALGOS, DTYPE_ALIASES, PlanError, PlanModel, Recipe
from core.plan.safeyaml import MAX_YAML_BYTES, cell, decode_yaml, describe, load_mapping

MAX_CONFIG_BYTES = MAX_YAML_BYTES  # a MindFormers YAML is ~5 KB; 1 MiB is ample and bounds the parse

ALIASES: dict[str, tuple[str, ...]] = {
    "hidden": ("hidden_size",),
    "layers": ("num_layers", "num_hidden_layers"),
    "heads": ("num_heads", "num_attention_heads"),
    "kv_heads": ("n_kv_heads", "num_key_value_heads", "multi_query_group_num"),
    "ffn": ("intermediate_size", "ffn_hidden_size"),
    "vocab": ("vocab_size", "padded_vocab_size"),
    "seq": ("seq_length",),
    "param_dtype": ("param_init_type", "params_dtype"),
}
READ_MODEL_KEYS = {k for names in ALIASES.values() for k in names} | {
    "ffn_dim_multiplier",
    "multiple_of",
    "compute_dtype",
    "use_flash_attention",
    "type",
    "head_dim",
}
# Keys that change neither the weights' shapes nor what a card stores (token ids, norms' eps, RoPE, decoding).
HARMLESS_MODEL_KEYS = {
    "batch_size",
    "rms_norm_eps",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "ignore_token_id",
    "layernorm_compute_type",
    "layernorm_compute_dtype",
    "softmax_compute_type",
    "softmax_compute_dtype",
    "rotary_dtype",
    "use_past",
    "scaling_factor",
    "extend_method",
    "checkpoint_name_or_path",
    "repetition_penalty",
    "max_decode_length",
    "top_k",
    "top_p",
    "do_sample",
    "theta",
    "rope_theta",
    "qkv_concat",
    "initializer_range",
    "use_cache",
    "max_position_embeddings",
    "embedding_init_type",
    "auto_register",
    "block_size",
    "num_blocks",
    "is_dynamic",
    "hidden_act",
    "attention_bias",
    "add_bias_linear",
    "position_embedding_type",
    "model_type",
    "architectures",
    "attention_dropout",
    "hidden_dropout",
    "input_sliced_sig",
    "use_contiguous_weight_layout_attention",
    "residual_dtype",
    "use_rope_slice",
    "fused_rms_norm",
    "use_flash_attention",
    "max_position_embedding",
    "rotary_pct",
    "rotary_emb_base",
    "emb_dropout_prob",
    "compute_in_2d",
    "use_attn_mask_compression",
    "use_past_shard",
    "temperature",
    "kv_channels",
}
UNSUPPORTED_MODEL_KEYS = {
    "num_experts": "mixture of experts: the planner models dense layers only",
    "expert_num": "mixture of experts: the planner models dense layers only",
    "moe_config": "mixture of experts: the planner models dense layers only",
    "q_lora_rank": "multi-head latent attention (MLA): not modelled",
    "kv_lora_rank": "multi-head latent attention (MLA): not modelled",
    "multi_latent_attention": "multi-head latent attention (MLA): not modelled",
    "qk_layernorm": "QK norm adds 2 small weights per layer and their stored inputs: not counted",
    "fine_grain_interleave": "fine-grained interleaving overlaps communication; its extra buffers are not counted",
    "offset": "uneven pipeline stages: the planner splits layers evenly",
    "mtp_depth": "multi-token prediction layers: not modelled",
    "qkv_has_bias": "Q/K/V biases (three vectors per layer) are not counted",
}
FP32_STATE_OPTIMIZERS = ("FP32StateAdamWeightDecay", "AdamW")
MAX_DEVICE_MEMORY_GB = 65536


class ConfigError(PlanError):
    """A MindFormers YAML that cannot be read or planned, with the key and value at fault."""


@dataclass(frozen=True)
class ConfigIssue:
    """A key the planner reads approximately or not at all, and why."""

    key: str
    value: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "reason": self.reason}


@dataclass(frozen=True)
class MindFormersConfig:
    model: PlanModel
    recipe: Recipe
    choices: Choices
    sources: dict[str, str]  # choice or field -> the YAML key it came from
    unsupported: list[ConfigIssue] = field(default_factory=list)
    max_device_memory_gb: float | None = None

    @property
    def devices(self) -> int:
        return self.recipe.devices

    @property
    def global_batch(self) -> int:
        r = self.recipe
        return r.dp * r.micro_batches * r.micro_batch_size


def read_config_bytes(path: Path) -> bytes:
    """The YAML's bytes, refused unless it is a regular file of at most 1 MiB (no FIFO, device or folder)."""
    try:
        return read_checked(path, MAX_CONFIG_BYTES, "MindFormers config")
    except UserError as exc:  # FileCheckError: one line naming the file
        raise ConfigError(str(exc)) from None


def _decoded(data: bytes, source: str) -> str:
    try:
        return decode_yaml(data, source)
    except UserError as exc:  # UTF-16, not UTF-8: one line naming the file
        raise ConfigError(str(exc)) from None


def load_yaml(text: str, source: str | None = None) -> dict[str, Any]:
    """The YAML text as a mapping (the bounded loader of core.plan.safeyaml); a one-line ConfigError naming
    `source`, the line and the key otherwise."""
    try:
        return load_mapping(text, source)
    except UserError as exc:
        raise ConfigError(str(exc)) from None


def _section(data: dict[str, Any], *path: str) -> dict[str, Any]:
    node: Any = data
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
        if node is None:
            return {}
    if not isinstance(node, dict):
        raise ConfigError(f"{'.'.join(path)} must be a mapping, got {describe(node)}")
    return node


def _whole(section: dict[str, Any], where: str, *names: str, default: int | None = None) -> int | None:
    for name in names:
        if name in section and section[name] is not None:
            value = section[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{where}.{name} must be a whole number >= 1, got {describe(value)}")
            return value
    return default


def _flag(section: dict[str, Any], where: str, name: str, default: bool) -> bool:
    value = section.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{name} must be True or False, got {describe(value)}")
    return value


def _dtype(section: dict[str, Any], where: str, names: tuple[str, ...], default: str) -> tuple[str, str]:
    for name in names:
        if section.get(name) is not None:
            raw = section[name]
            dtype = DTYPE_ALIASES.get(raw, raw) if isinstance(raw, str) else None
            if dtype not in DTYPE_BYTES:
                raise ConfigError(f"{where}.{name} {describe(raw)} is not supported: use bfloat16, float16 or float32")
            return dtype, f"{where}.{name}: {raw}"
    return default, f"{where}: no {' / '.join(names)} (default {default})"


def feed_forward_size(hidden: int, multiple_of: int, multiplier: float | None) -> int:
    """MindFormers' LlamaFeedForward rule when no intermediate_size is given (llama_layer.py @ v1.3.0):
    from 4h, times (multiplier + 0.01) when set, then 2/3, then rounded up to a multiple of `multiple_of`."""
    size = 4 * hidden
    if multiplier is not None:
        size = int((multiplier + 0.01) * size)
    size = int(2 * size / 3)
    return multiple_of * ((size + multiple_of - 1) // multiple_of)


def _model(data: dict[str, Any], issues: list[ConfigIssue]) -> tuple[PlanModel, dict[str, str]]:
    mc = _section(data, "model", "model_config")
    if not mc:
        raise ConfigError("it has no model.model_config mapping (hidden_size, num_layers, ...)")
    where = "model_config"
    values: dict[str, int | None] = {}
    for name in ("hidden", "layers", "heads", "vocab", "seq"):
        value = _whole(mc, where, *ALIASES[name])
        if value is None:
            raise ConfigError(f"model_config has no {' / '.join(ALIASES[name])}")
        values[name] = value
    values["kv_heads"] = _whole(mc, where, *ALIASES["kv_heads"])
    ffn = _whole(mc, where, *ALIASES["ffn"])
    sources = {"ffn": "model_config.intermediate_size"}
    if ffn is None:
        multiple = _whole(mc, where, "multiple_of", default=256) or 256
        multiplier = mc.get("ffn_dim_multiplier")
        if multiplier is not None and (
            isinstance(multiplier, bool) or not isinstance(multiplier, int | float) or not 0 < multiplier < 1e6
        ):
            raise ConfigError(f"model_config.ffn_dim_multiplier must be a positive number, got {describe(multiplier)}")
        ffn = feed_forward_size(values["hidden"] or 1, multiple, multiplier)
        sources["ffn"] = f"LlamaFeedForward rule (multiple_of {multiple}, ffn_dim_multiplier {multiplier})"
    compute, sources["compute_dtype"] = _dtype(mc, where, ("compute_dtype",), "float16")
    _, sources["param_dtype"] = _dtype(mc, where, ALIASES["param_dtype"], "float32")
    head_dim = mc.get("head_dim", mc.get("kv_channels"))
    hidden, heads = values["hidden"] or 1, values["heads"] or 1
    if head_dim is not None and head_dim != hidden // heads:
        issues.append(
            ConfigIssue(
                "model_config.head_dim",
                cell(head_dim),
                f"the planner assumes head_dim = hidden / heads = {hidden // heads}: "
                "attention weights and Q/K/V are counted at that width",
            )
        )
    if mc.get("tie_word_embeddings") is True or mc.get("untie_embeddings_and_output_weights") is False:
        issues.append(
            ConfigIssue(
                "model_config.tie_word_embeddings",
                "True",
                "tied embedding and lm_head: the planner counts both (one weight too many)",
            )
        )
    for key, value in mc.items():
        if (
            key in UNSUPPORTED_MODEL_KEYS
            and value not in (None, False, 0, "None")
            and value != []
            and not (key == "offset" and value == 0)
            and not (key == "fine_grain_interleave" and value == 1)
        ):
            issues.append(ConfigIssue(f"model_config.{cell(key)}", cell(value), UNSUPPORTED_MODEL_KEYS[key]))
        elif key not in READ_MODEL_KEYS | HARMLESS_MODEL_KEYS | set(UNSUPPORTED_MODEL_KEYS) | {
            "tie_word_embeddings",
            "untie_embeddings_and_output_weights",
        }:
            issues.append(
                ConfigIssue(f"model_config.{cell(key)}", cell(value), "not known to the planner: not modelled")
            )
    if data.get("moe_config"):
        issues.append(ConfigIssue("moe_config", cell(data["moe_config"]), UNSUPPORTED_MODEL_KEYS["moe_config"]))
    model = PlanModel(
        hidden=hidden,
        heads=heads,
        ffn=ffn,
        layers=values["layers"] or 1,
        vocab=values["vocab"] or 1,
        seq=values["seq"] or 1,
        kv_heads=values["kv_heads"],
        dtype=compute,
    )
    model.check()
    sources["param_bytes"] = sources["param_dtype"]
    return model, sources


def _recompute(data: dict[str, Any], issues: list[ConfigIssue]) -> tuple[Recompute, str]:
    rc = _section(data, "recompute_config")
    full, select = rc.get("recompute", False), rc.get("select_recompute", False)
    for key, value in (("recompute", full), ("select_recompute", select)):
        if isinstance(value, list):
            issues.append(
                ConfigIssue(
                    f"recompute_config.{key}",
                    cell(value),
                    "layers per stage: counted as every layer of every stage (the estimate is "
                    "low by the layers not recomputed)"
                    if any(value)
                    else "an empty per-stage list: counted as off",
                )
            )
        elif not isinstance(value, bool) and value is not None:
            raise ConfigError(
                f"recompute_config.{key} must be True, False or a list of layers per stage, got {describe(value)}"
            )
    if full is True or (isinstance(full, list) and any(full)):
        return Recompute.FULL, f"recompute_config.recompute: {cell(full)}"
    if select is True or (isinstance(select, list) and any(select)):
        note = (
            "MindFormers recomputes its chosen operators; counted as the planner's selective recompute (the "
            "attention core, Korthikanti §5)"
        )
        listed = [i for i in issues if i.key == "recompute_config.select_recompute"]
        if listed:  # one entry per key: the per-stage note and this one together
            issues[issues.index(listed[0])] = ConfigIssue(listed[0].key, listed[0].value, f"{listed[0].reason}; {note}")
        else:
            issues.append(ConfigIssue("recompute_config.select_recompute", cell(select), note))
        return Recompute.SELECTIVE, f"recompute_config.select_recompute: {cell(select)}"
    return Recompute.NONE, "recompute_config: off"


def _recipe(data: dict[str, Any], issues: list[ConfigIssue]) -> tuple[Recipe, dict[str, str]]:
    pc = _section(data, "parallel_config")
    where = "parallel_config"
    dp = _whole(pc, where, "data_parallel", default=1) or 1
    mp = _whole(pc, where, "model_parallel", default=1) or 1
    pp = _whole(pc, where, "pipeline_stage", default=1) or 1
    cp = _whole(pc, where, "context_parallel", default=1) or 1
    algo = pc.get("context_parallel_algo") or "colossalai_cp"
    if cp > 1 and algo not in CP_ALGOS:
        raise ConfigError(f"parallel_config.context_parallel_algo {describe(algo)} is not one of {', '.join(CP_ALGOS)}")
    ulysses = _whole(pc, where, "ulysses_degree_in_cp", default=1) or 1
    runner = _section(data, "runner_config")
    size = _whole(runner, "runner_config", "batch_size", default=1) or 1
    if pp > 1:
        micro = _whole(pc, where, "micro_batch_num", default=1) or 1
        micro_source = f"parallel_config.micro_batch_num: {micro}"
    else:
        micro = _whole(runner, "runner_config", "gradient_accumulation_steps", default=1) or 1
        micro_source = f"runner_config.gradient_accumulation_steps: {micro}"
    sp = _flag(pc, where, "use_seq_parallel", False)
    if sp and mp == 1:
        issues.append(
            ConfigIssue(
                "parallel_config.use_seq_parallel", "True", "with model_parallel 1 it splits nothing: planned as off"
            )
        )
        sp = False
    parallel = _section(data, "parallel")
    shard = _flag(parallel, "parallel", "enable_parallel_optimizer", _flag(pc, where, "optimizer_shard", False))
    if shard and dp * cp == 1:
        issues.append(
            ConfigIssue(
                "parallel.enable_parallel_optimizer", "True", "with data_parallel 1 it splits nothing: planned as off"
            )
        )
        shard = False
    interleave = data.get("micro_batch_interleave_num", 1)
    if interleave not in (None, 1):
        issues.append(
            ConfigIssue(
                "micro_batch_interleave_num",
                cell(interleave),
                "micro-batch interleaving keeps two half batches in flight: not modelled",
            )
        )
    recompute, recompute_source = _recompute(data, issues)
    sources = {
        "micro_batches": micro_source,
        "micro_batch_size": f"runner_config.batch_size: {size}",
        "recompute": recompute_source,
        "optimizer_shard": f"parallel.enable_parallel_optimizer: {shard}",
        "sp": f"parallel_config.use_seq_parallel: {sp}",
    }
    if cp > 1:
        sources["cp"] = f"parallel_config.context_parallel: {cp}, context_parallel_algo: {algo}"
    return Recipe(dp, mp, pp, sp, shard, recompute, micro, size, cp, algo, ulysses), sources


def _choices(data: dict[str, Any], recipe: Recipe, param_dtype: str, sources: dict[str, str]) -> Choices:
    """The YAML's modelling choices: weight and gradient bytes from param_init_type (MindSpore keeps a
    gradient in its weight's dtype), optimizer bytes from optimizer.type, the embedding from vocab_emb_dp,
    flash attention from use_flash_attention, optimizer parallel as MindSpore's (weights, gradients, states)."""
    optimizer = _section(data, "optimizer")
    kind = cell(optimizer.get("type", "AdamW"))
    if kind in FP32_STATE_OPTIMIZERS:
        opt_bytes, sources["optimizer_bytes"] = 8, f"optimizer.type: {kind} (two fp32 moments, no master copy)"
    else:
        opt_bytes = 8
        sources["optimizer_bytes"] = f"optimizer.type: {kind} (not known: assumed two fp32 moments)"
    pc = _section(data, "parallel_config")
    mcore = data.get("use_legacy") is False  # MindFormers' mcore models: a vocab-parallel embedding
    vocab_dp = _flag(pc, "parallel_config", "vocab_emb_dp", not mcore)
    sources["embedding"] = (
        f"parallel_config.vocab_emb_dp: {vocab_dp}"
        if "vocab_emb_dp" in pc
        else "use_legacy: False (mcore VocabParallelEmbedding)"
        if mcore
        else "parallel_config.vocab_emb_dp absent (MindFormers' default True)"
    )
    mc = _section(data, "model", "model_config")
    flash = _flag(mc, "model_config", "use_flash_attention", False)
    sources["attention_scores"] = f"model_config.use_flash_attention: {flash}"
    sources["grad_bytes"] = sources["param_bytes"] + " (gradients in the weight's dtype)"
    sources["sp_stored_inputs"] = "not in the YAML: the planner's default (Korthikanti: the sequence slice)"
    parallel = _section(data, "parallel")
    accumulating = recipe.pp > 1 or recipe.micro_batches > 1
    shard_accumulation = _flag(
        _section(parallel, "parallel_optimizer_config")
        if isinstance(parallel.get("parallel_optimizer_config"), dict)
        else {},
        "parallel.parallel_optimizer_config",
        "gradient_accumulation_shard",
        False,
    )
    scope = "states+weights" if accumulating and not shard_accumulation else "states+weights+gradients"
    sources["optimizer_parallel"] = (
        "MindSpore's parallel optimizer splits weights and states over dp; the gradients too "
        + (
            "unless they are accumulated: micro-batches accumulate into a whole buffer "
            "(parallel_optimizer_config.gradient_accumulation_shard False)"
            if scope == "states+weights"
            else "(no accumulation, or gradient_accumulation_shard True)"
        )
    )
    size = DTYPE_BYTES[param_dtype]
    return Choices(
        param_bytes=size,
        grad_bytes=size,
        optimizer_bytes=opt_bytes,
        embedding="replicated" if vocab_dp else "split",
        sp_stored_inputs="sharded",
        attention_scores="flash" if flash else "stored",
        optimizer_parallel=scope,
    ).check()


def _max_device_memory(data: dict[str, Any]) -> float | None:
    """context.max_device_memory in GB ('58GB', as set_context takes it); None when absent, refused when bad."""
    raw = _section(data, "context").get("max_device_memory")
    if raw is None:
        return None
    text = str(raw).strip().upper().removesuffix("GB") if isinstance(raw, str | int | float) else ""
    try:
        value = float(text) if not isinstance(raw, bool) and 0 < len(text) <= 32 else 0.0
    except ValueError:
        value = 0.0
    if not 0 < value <= MAX_DEVICE_MEMORY_GB:
        raise ConfigError(
            f"context.max_device_memory {describe(raw)} is not a memory size like '58GB' "
            f"(more than 0, at most {MAX_DEVICE_MEMORY_GB:,} GB)"
        )
    return value


def parse_config(text: str, source: str | None = None) -> MindFormersConfig:
    """The model, recipe and choices a MindFormers YAML text describes; a one-line ConfigError naming `source`
    (the file, when given) and the bad key otherwise."""
    data = load_yaml(text, source)
    try:
        issues: list[ConfigIssue] = []
        model, sources = _model(data, issues)
        recipe, recipe_sources = _recipe(data, issues)
        sources.update(recipe_sources)
        mc = _section(data, "model", "model_config")
        param_dtype, _ = _dtype(mc, "model_config", ALIASES["param_dtype"], "float32")
        choices = _choices(data, recipe, param_dtype, sources)
        return MindFormersConfig(model, recipe, choices, sources, issues, _max_device_memory(data))
    except PlanError as exc:  # ConfigError, or the model's own check: named after the file
        raise ConfigError(f"{source}: {exc}" if source else str(exc)) from None


def config_from_bytes(data: bytes, source: str) -> MindFormersConfig:
    """`parse_config` of a file's bytes (an upload, or `read_config_bytes`): errors name `source`."""
    return parse_config(_decoded(data, source), source)


def read_config(path: Path) -> MindFormersConfig:
    """The MindFormers YAML at `path`, read bounded (see `read_config_bytes`); errors name the file."""
    return config_from_bytes(read_config_bytes(path), f"MindFormers config {path}")


def parallel_section(text: str, source: str | None = None) -> dict[str, Any]:
    """The top-level `parallel_config` mapping of a YAML text ({} when there is none): the launcher's reader."""
    return _section(load_yaml(text, source), "parallel_config")
