"""A recipe as the parallel part of a MindFormers training YAML, with the key names of a named version.

Targets (key names read from MindFormers' own configs):
* "1.3" — MindFormers r1.3.0 LLaMA-2/3 configs (e.g. `configs/llama2/pretrain_llama2_7b.yaml`):
  `parallel_config.{data_parallel, model_parallel, pipeline_stage, use_seq_parallel, micro_batch_num,
  vocab_emb_dp, gradient_aggregation_group}`, top-level `micro_batch_interleave_num`,
  `parallel.enable_parallel_optimizer`, `recompute_config.{recompute, select_recompute,
  parallel_optimizer_comm_recompute, mp_comm_recompute, recompute_slice_activation}`,
  `runner_config.{batch_size, gradient_accumulation_steps}`.
* "master" — the current template `configs/general/llm_finetune_dense_template.yaml` (commit
  1dfbc09): the same plus `parallel_config.context_parallel`, without `vocab_emb_dp` /
  `gradient_aggregation_group`.
* "0.x" — early releases (r0.3 GPT-2 configs) kept the optimizer switch inside parallel_config as
  `parallel_config.optimizer_shard`.

`runner_config.batch_size` is the micro-batch size of one data-parallel replica; with pp = 1 the
planner's micro-batches are `gradient_accumulation_steps`, with pp > 1 they are `micro_batch_num`.
"""

from __future__ import annotations

from typing import Any

from core.plan.activations import Recompute
from core.plan.recipes import Recipe

VERSIONS: dict[str, str] = {
    "1.3": "MindFormers r1.3.0 (configs/llama2/*.yaml)",
    "master": "MindFormers master @1dfbc09 (configs/general/llm_finetune_dense_template.yaml)",
    "0.x": "MindFormers r0.3-r0.8 (parallel_config.optimizer_shard)",
}
DEFAULT_VERSION = "1.3"


def mindformers_config(
    recipe: Recipe, version: str = DEFAULT_VERSION, card_memory_gb: float | None = None, split_embedding: bool = False
) -> dict[str, Any]:
    """The recipe's keys as nested dicts, in MindFormers' order; `split_embedding` (the planner's `embedding`
    choice) is written as `vocab_emb_dp: False`."""
    if version not in VERSIONS:
        raise ValueError(f"unknown MindFormers version {version!r}: use one of {', '.join(VERSIONS)}")
    pipelined = recipe.pp > 1
    parallel_config: dict[str, Any] = {
        "data_parallel": recipe.dp,
        "model_parallel": recipe.mp,
        "pipeline_stage": recipe.pp,
    }
    if version == "master" or recipe.cp > 1:
        parallel_config["context_parallel"] = recipe.cp
    if recipe.cp > 1:
        parallel_config["context_parallel_algo"] = recipe.cp_algo
        if recipe.cp_algo == "hybrid_cp":
            parallel_config["ulysses_degree_in_cp"] = recipe.ulysses
    parallel_config["use_seq_parallel"] = recipe.sp
    parallel_config["micro_batch_num"] = recipe.micro_batches if pipelined else 1
    if version in ("1.3", "0.x"):
        parallel_config["vocab_emb_dp"] = not split_embedding
        parallel_config["gradient_aggregation_group"] = 4
    if version == "0.x":
        parallel_config["optimizer_shard"] = recipe.optimizer_shard
    config: dict[str, Any] = {
        "runner_config": {
            "batch_size": recipe.micro_batch_size,
            "gradient_accumulation_steps": 1 if pipelined else recipe.micro_batches,
        },
        "parallel": {"parallel_mode": 1, "enable_parallel_optimizer": recipe.optimizer_shard},
        "parallel_config": parallel_config,
        "micro_batch_interleave_num": 1,
        "recompute_config": {
            "recompute": recipe.recompute is Recompute.FULL,
            "select_recompute": recipe.recompute is Recompute.SELECTIVE,
            "parallel_optimizer_comm_recompute": False,
            "mp_comm_recompute": recipe.recompute is Recompute.FULL,
            "recompute_slice_activation": recipe.recompute is Recompute.FULL and recipe.sp,
        },
    }
    if version == "0.x":
        del config["parallel"]["enable_parallel_optimizer"]
    if card_memory_gb is not None:
        config["context"] = {"max_device_memory": f"{card_memory_gb:g}GB"}
    return config


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"  # MindFormers' own spelling
    if isinstance(value, int | float):
        return str(value)
    return f'"{value}"'


def to_yaml(data: dict[str, Any], indent: int = 0) -> str:
    """Block-style YAML for nested dicts of scalars (all the parallel section needs)."""
    lines: list[str] = []
    pad = "  " * indent
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines.append(to_yaml(value, indent + 1).rstrip("\n"))
        else:
            lines.append(f"{pad}{key}: {_scalar(value)}")
    return "\n".join(lines) + "\n"


def mindformers_yaml(
    recipe: Recipe, version: str = DEFAULT_VERSION, card_memory_gb: float | None = None, split_embedding: bool = False
) -> str:
    """YAML to merge into a MindFormers training config, headed by the version it targets."""
    header = (
        f"# ShardScope planner: {recipe.label()}\n"
        f"# Key names of {VERSIONS.get(version, version)}; merge into your training YAML.\n"
    )
    return header + to_yaml(mindformers_config(recipe, version, card_memory_gb, split_embedding))
