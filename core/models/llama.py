"""A LLaMA-style decoder as a design: embedding, N × (RMSNorm, GQA attention, SwiGLU FFN), LM head.

Why a generator: a 7B or 70B design written by hand is hundreds of JSON lines where one wrong shape
or strategy hides; here every tensor and strategy follows from (config, recipe), checked up front.

The graph (one layer is the design's repeat block, `count = layers`, carry = the embedding output):

    tokens [b, s] int32 -Reshape-> [b*s] -Gather(embedding [V, h])-> x [b*s, h]
    attn_rms = RMSNorm(x, attention_norm [h])
    q / k / v = MatMul(attn_rms, wq [h, h] / wk [h, h_kv] / wv [h, h_kv])            (column split)
    q -Reshape-> [b, s, n, d] -Transpose(0,2,1,3)-> [b, n, s, d]      (k, v alike with n_kv heads)
    GQA: q -Reshape-> [b, n_kv, r*s, d]  (r = n / n_kv; only when r > 1)
    scores = BatchMatMul(q, k, transpose_b) [b, n_kv, r*s, s];  probs = Softmax(scores, -1)
    context = BatchMatMul(probs, v) [b, n_kv, r*s, d] -Reshape-> [b, n, s, d]     (GQA only)
    -Transpose(0,2,1,3)-> [b, s, n, d] -Reshape-> [b*s, h] -MatMul(wo [h, h])-> + x       (row split)
    ffn_rms = RMSNorm(., ffn_norm);  gate = MatMul(., w1 [h, f]); up = MatMul(., w3 [h, f])
    down = MatMul(SiLU(gate) * up, w2 [f, h]) + residual                                 (row split)
    after the block: RMSNorm(final_norm) -> MatMul(lm_head [h, V]) -> Reshape [b, s, V], cross-entropy.

Modelling choices (each keeps shapes, strategies and communication those of the real model):
- GQA is modelled per KV group: query head j = g*r + i belongs to KV head g (MindFormers' `_repeat_kv`,
  llama_transformer.py:589, tiles K/V the same way), so reshaping Q [b, n, s, d] to [b, n_kv, r*s, d]
  lets each KV head's r query heads attend in one BatchMatMul without copying K/V (no Tile operator).
- The 1/sqrt(d) score scale is folded into wq (a constant factor of a trained weight), because the
  design file has no constant tensors; RoPE and the causal mask are omitted: both are elementwise with
  strategy (dp, mp, 1, 1) and no weights, so they change neither parameters nor communication.
- The residual stream is 2-D [b*s, h], MindFormers' `rmsnorm_compute_2d` form, which is also where its
  sequence parallel (the rows split over dp × mp) is expressed.

Strategies are MindFormers' semi-auto ones (mindspore-lab/mindformers @ fd4deebc, files under
mindformers/models/llama/); MindFormers stores Linear weights [out, in] with transpose_b, this design
[in, out], so its `(mp, 1)` weight strategy is `(None, mp)` here and `(1, mp)` is `(mp, None)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

from core.models.common import (
    NONE,
    DesignBuilder,
    ModelError,
    ModelProblem,
    canonical_dtype,
    divides_problem,
    dtype_problems,
    lay,
    layers_problems,
    positive_problems,
    recipe_problems,
)
from core.sharding.design import Design, RepeatSpec
from core.sharding.layout import DimEntry

EPS = 1e-6


# The published LLaMA-2 architectures (Meta's config.json: hidden, heads, KV heads, FFN, layers, vocabulary,
# context). The model library's presets and the Planner's models both start from these; kv_heads only for GQA.
class PublishedShape(TypedDict):
    """One published architecture, as keyword arguments of LlamaConfig / PlanModel."""

    hidden: int
    heads: int
    ffn: int
    layers: int
    vocab: int
    seq: int
    kv_heads: NotRequired[int]


PUBLISHED_SHAPES: dict[str, PublishedShape] = {
    "LLaMA-2 7B": PublishedShape(hidden=4096, heads=32, ffn=11008, layers=32, vocab=32000, seq=4096),
    "LLaMA-2 13B": PublishedShape(hidden=5120, heads=40, ffn=13824, layers=40, vocab=32000, seq=4096),
    "LLaMA-2 70B": PublishedShape(hidden=8192, heads=64, kv_heads=8, ffn=28672, layers=80, vocab=32000, seq=4096),
}
DP_MP: DimEntry = ("dp", "mp")  # one dimension split over dp × mp (dp outermost), MindFormers' dp*cp*mp


@dataclass(frozen=True)
class LlamaConfig:
    """The architecture: `hidden` h, `heads` n, `kv_heads` n_kv (None = n, plain multi-head), `ffn` f."""

    hidden: int
    heads: int
    ffn: int
    seq: int
    batch: int
    layers: int
    vocab: int
    kv_heads: int | None = None
    dtype: str = "bfloat16"

    @property
    def n_kv(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_hidden(self) -> int:
        """h_kv = n_kv × d: the output width of wk and wv."""
        return self.n_kv * self.head_dim


@dataclass(frozen=True)
class LlamaRecipe:
    """The parallel recipe: `dp` × `mp` cards, Megatron tensor parallel over mp, optional sequence parallel."""

    dp: int = 1
    mp: int = 1
    sp: bool = False


def llama_parameter_count(config: LlamaConfig) -> int:
    """Closed form: vocab·h + L·(2h² + 2·h·h_kv + 3·h·f + 2h) + h + h·vocab.

    Per layer: wq, wo (h² each), wk, wv (h·h_kv each), w1, w2, w3 (h·f each), two RMSNorm gains (h each);
    plus the embedding, the final norm and an untied LM head. LLaMA-7B's shape gives 6,738,415,616.
    """
    h, f = config.hidden, config.ffn
    per_layer = 2 * h * h + 2 * h * config.kv_hidden + 3 * h * f + 2 * h
    return config.vocab * h + config.layers * per_layer + h + h * config.vocab


def llama_problems(config: LlamaConfig, recipe: LlamaRecipe) -> list[ModelProblem]:
    """Every reason (config, recipe) cannot be built, each naming the offending value; [] when it can."""
    sizes = {
        "hidden": config.hidden,
        "heads": config.heads,
        "kv_heads": config.n_kv,
        "ffn": config.ffn,
        "seq": config.seq,
        "batch": config.batch,
        "vocab": config.vocab,
    }
    problems = positive_problems(sizes) + layers_problems(config.layers) + dtype_problems(config.dtype)
    problems += recipe_problems(recipe.dp, recipe.mp)
    if problems:
        return problems
    dp, mp = recipe.dp, recipe.mp
    problems += divides_problem("heads", config.heads, "hidden", config.hidden, "each head gets hidden / heads dims")
    problems += divides_problem(
        "kv_heads",
        config.n_kv,
        "heads",
        config.heads,
        "grouped-query attention shares each KV head by heads / kv_heads query heads",
    )
    problems += divides_problem("mp", mp, "heads", config.heads, "attention heads are split over mp")
    if config.n_kv != config.heads:  # MindFormers LLamaAttention: n_kv_head % model_parallel == 0 as well
        problems += divides_problem(
            "mp", mp, "kv_heads", config.n_kv, "the KV heads (wk, wv columns) are split over mp"
        )
    problems += divides_problem("mp", mp, "ffn", config.ffn, "w1/w3 columns and w2 rows are split over mp")
    problems += divides_problem("mp", mp, "vocab", config.vocab, "the LM head's vocabulary columns are split over mp")
    problems += divides_problem("dp", dp, "batch", config.batch, "the batch is split over dp")
    if recipe.sp and not problems and (config.batch * config.seq) % (dp * mp):
        problems.append(
            ModelProblem(
                "sp",
                f"sequence parallel splits the batch × seq = {config.batch * config.seq} tokens over dp × mp = "
                f"{dp * mp}, which does not divide them: change seq or batch, or turn sp off",
            )
        )
    return problems


def default_name(config: LlamaConfig, recipe: LlamaRecipe) -> str:
    gqa = f"_kv{config.n_kv}" if config.n_kv != config.heads else ""
    sp = "_sp" if recipe.sp else ""
    return f"llama_h{config.hidden}_l{config.layers}{gqa}_dp{recipe.dp}_mp{recipe.mp}{sp}"


def llama_design(config: LlamaConfig, recipe: LlamaRecipe, name: str | None = None) -> Design:
    """The decoder as a design (one layer held once, repeated `layers` times); raises ModelError."""
    problems = llama_problems(config, recipe)
    if problems:
        raise ModelError(problems)
    config = LlamaConfig(**{**config.__dict__, "dtype": canonical_dtype(config.dtype)})
    build = DesignBuilder(recipe.dp, recipe.mp)
    _weights(build, config)
    x = _embedding(build, config)
    _attention(build, config, recipe, x)
    last = _feed_forward(build, recipe)
    _head(build, config, last)
    return build.build(
        name or default_name(config, recipe),
        _description(config, recipe),
        "cross_entropy",
        RepeatSpec(count=config.layers, first="attn_rms", last=last, carry=x),
    )


def _weights(b: DesignBuilder, c: LlamaConfig) -> None:
    """Weights stored the way their operators read them, so nothing is moved before compute."""
    h, kv, f, v, dt = c.hidden, c.kv_hidden, c.ffn, c.vocab, c.dtype
    b.tensor("tokens", (c.batch, c.seq), "int32", "input", "dp", NONE)
    b.tensor("embedding", (v, h), dt, "weight", NONE, NONE)
    b.tensor("attention_norm", (h,), dt, "weight", NONE)
    b.tensor("wq", (h, h), dt, "weight", NONE, "mp")
    b.tensor("wk", (h, kv), dt, "weight", NONE, "mp")
    b.tensor("wv", (h, kv), dt, "weight", NONE, "mp")
    b.tensor("wo", (h, h), dt, "weight", "mp", NONE)
    b.tensor("ffn_norm", (h,), dt, "weight", NONE)
    b.tensor("w1", (h, f), dt, "weight", NONE, "mp")
    b.tensor("w3", (h, f), dt, "weight", NONE, "mp")
    b.tensor("w2", (f, h), dt, "weight", "mp", NONE)
    b.tensor("final_norm", (h,), dt, "weight", NONE)
    b.tensor("lm_head", (h, v), dt, "weight", NONE, "mp")


def _embedding(b: DesignBuilder, c: LlamaConfig) -> str:
    """Token ids flattened, then looked up in a replicated table (vocab_emb_dp, MindFormers' default):
    llama_layer.py:150 `gather.shard(((1, 1), (dp * cp,)))` in the 2-D form."""
    flat = b.op("tokens_flat", "Reshape", ("tokens",), shape=(c.batch * c.seq,))
    return b.op("embed", "Gather", ("embedding", flat), (lay(NONE, NONE), lay("dp")))


def _rows(sp: bool) -> DimEntry:
    """How the residual stream's rows are split: over dp, or over dp × mp with sequence parallel."""
    return DP_MP if sp else "dp"


def _attention(b: DesignBuilder, c: LlamaConfig, r: LlamaRecipe, x: str) -> None:
    bs, s, n, kv, d = c.batch, c.seq, c.heads, c.n_kv, c.head_dim
    rows = _rows(r.sp)
    # llama_transformer.py:988 `attention_norm.shard((dp, 1))`; with sp :1028 `((dp * mp * cp, 1))`
    norm = b.op("attn_rms", "RMSNorm", (x, "attention_norm"), (lay(rows, NONE), lay(NONE)), eps=EPS)
    column = (lay("dp", NONE), lay(NONE, "mp"))  # :300-302 `wq/wk/wv.shard(((dp * cp, 1), (mp, 1)))`
    heads = lay("dp", NONE, "mp", NONE)  # :377 `transpose.shard(((dp, cp, mp, 1),))`
    per_head = lay("dp", "mp", NONE, NONE)  # :390-394 batch matmuls and softmax `((dp, mp, 1, 1), ...)`
    split: dict[str, str] = {}
    for name, weight, count in (("q", "wq", n), ("k", "wk", kv), ("v", "wv", kv)):
        b.op(name, "MatMul", (norm, weight), column)
        b.op(f"{name}_heads", "Reshape", (name,), shape=(bs, s, count, d))
        split[name] = b.op(f"{name}_t", "Transpose", (f"{name}_heads",), (heads,), perm=(0, 2, 1, 3))
    group = n // kv
    query = split["q"]
    if group > 1:  # GQA per KV group: query head g*r + i attends with KV head g
        query = b.op("q_groups", "Reshape", (query,), shape=(bs, kv, group * s, d))
    b.op("scores", "BatchMatMul", (query, split["k"]), (per_head, per_head), transpose_b=True)
    b.op("probs", "Softmax", ("scores",), (per_head,), axis=-1)
    context = b.op("context", "BatchMatMul", ("probs", split["v"]), (per_head, per_head))
    if group > 1:
        context = b.op("context_heads", "Reshape", (context,), shape=(bs, n, s, d))
    # :389 `merger_head_transpose.shard(((dp, mp, 1, 1),))`
    b.op("context_t", "Transpose", (context,), (per_head,), perm=(0, 2, 1, 3))
    b.op("context_2d", "Reshape", ("context_t",), shape=(bs * s, c.hidden))
    # :314 `wo.shard(((dp * cp, mp), (1, mp)), ...)`: partial sums over mp -> AllReduce; with sp :403
    # `out_strategy_matmul=((dp * cp * mp, 1),)` turns it into a ReduceScatter over the rows.
    out = lay(DP_MP, NONE) if r.sp else None
    b.op("attn_out", "MatMul", ("context_2d", "wo"), (lay("dp", "mp"), lay("mp", NONE)), out_strategy=out)
    # :979 `add.shard(((dp * cp, 1), (dp * cp, 1)))`; with sp :1027 `((dp * mp * cp, 1), ...)`
    b.op("attn_residual", "Add", (x, "attn_out"), (lay(rows, NONE), lay(rows, NONE)))


def _feed_forward(b: DesignBuilder, r: LlamaRecipe) -> str:
    rows = _rows(r.sp)
    norm = b.op("ffn_rms", "RMSNorm", ("attn_residual", "ffn_norm"), (lay(rows, NONE), lay(NONE)), eps=EPS)
    column = (lay("dp", NONE), lay(NONE, "mp"))  # llama_layer.py:513,517 w1 / w3 `((dp * cp, 1), (mp, 1))`
    b.op("gate", "MatMul", (norm, "w1"), column)
    b.op("up", "MatMul", (norm, "w3"), column)
    b.op("gate_act", "SiLU", ("gate",), (lay("dp", "mp"),))  # llama_layer.py:515 `activation.shard(((dp*cp, mp),))`
    # llama_transformer.py:1007 `feed_forward.mul.shard(((dp * cp, mp), (dp * cp, mp)))`
    b.op("swiglu", "Mul", ("gate_act", "up"), (lay("dp", "mp"), lay("dp", "mp")))
    # llama_layer.py:516 `w2.shard(((dp * cp, mp), (1, mp)))`; with sp llama_transformer.py:1031 adds
    # `out_strategy_matmul=((dp * cp * mp, 1),)` (ReduceScatter)
    out = lay(DP_MP, NONE) if r.sp else None
    b.op("down", "MatMul", ("swiglu", "w2"), (lay("dp", "mp"), lay("mp", NONE)), out_strategy=out)
    return b.op("ffn_residual", "Add", ("attn_residual", "down"), (lay(rows, NONE), lay(rows, NONE)))


def _head(b: DesignBuilder, c: LlamaConfig, last: str) -> None:
    # llama.py:293 `norm_out.shard((dp * cp, 1))`; :542 `lm_head.shard(strategy_matmul=((dp * cp, 1), (mp, 1)))`
    b.op("final_rms", "RMSNorm", (last, "final_norm"), (lay("dp", NONE), lay(NONE)), eps=EPS)
    b.op("logits_2d", "MatMul", ("final_rms", "lm_head"), (lay("dp", NONE), lay(NONE, "mp")))
    b.op("logits", "Reshape", ("logits_2d",), shape=(c.batch, c.seq, c.vocab))


def _description(c: LlamaConfig, r: LlamaRecipe) -> str:
    gqa = f", {c.n_kv} KV heads (grouped-query)" if c.n_kv != c.heads else ""
    sp = ", sequence parallel (norms and residual adds split over dp × mp)" if r.sp else ""
    return (
        f"LLaMA-style decoder from the model library: hidden {c.hidden}, {c.heads} heads{gqa}, ffn {c.ffn} "
        f"(SwiGLU), {c.layers} layers, vocab {c.vocab}, seq {c.seq}, batch {c.batch}, {c.dtype}; "
        f"{llama_parameter_count(c):,} parameters. Recipe dp {r.dp} × mp {r.mp}{sp}: MindFormers' strategies "
        "(Megatron column split of wq/wk/wv/w1/w3, row split of wo/w2 with its AllReduce, heads over mp, "
        "batch over dp). The 1/sqrt(head_dim) scale is folded into wq; RoPE and the causal mask are "
        "omitted (elementwise, no weights, no communication)."
    )


def head_dim_of(config: LlamaConfig) -> int:
    """hidden / heads when it divides (what the form shows next to the fields), else 0."""
    return config.hidden // config.heads if config.heads and config.hidden % config.heads == 0 else 0


def layer_parameter_count(config: LlamaConfig) -> int:
    """Parameters of one decoder layer (the repeat block's weights)."""
    return (llama_parameter_count(config) - 2 * config.vocab * config.hidden - config.hidden) // max(config.layers, 1)


__all__ = [
    "LlamaConfig",
    "LlamaRecipe",
    "head_dim_of",
    "layer_parameter_count",
    "llama_design",
    "llama_parameter_count",
    "llama_problems",
]
