"""Megatron-LM's theoretical memory formula, re-implemented for cross-checks (bytes).

Source: megatron/training/theoretical_memory_usage.py (`compute_weight_and_optimizer_memory`,
`compute_activation_memory`, `compute_activation_memory_without_sp`), which Megatron prints at
start-up for the most loaded GPU (the first pipeline stage). Activations follow Korthikanti et
al. 2022, Table 2, for a GELU MLP: 34 sbh/t per layer with sequence parallelism and selective
recomputation (written as 18 + 4 ffn/h), sbh(10 + 24/t) without. Dense layers and MoE layers
at every layer (moe_layer_freq 1); no MTP, no MLA.
"""

from __future__ import annotations

from trainplan.enums import MlpKind, NormKind
from trainplan.frozen import frozen
from trainplan.specs import ModelSpec


@frozen
class MegatronArgs:
    """The Megatron arguments the formula reads (names as in megatron/training/arguments.py)."""

    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_query_groups: int
    kv_channels: int
    ffn_hidden_size: int
    padded_vocab_size: int
    swiglu: bool
    untie_embeddings_and_output_weights: bool
    rms_norm: bool
    seq_length: int
    micro_batch_size: int
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    data_parallel_size: int = 1
    virtual_pipeline_model_parallel_size: int | None = None
    use_distributed_optimizer: bool = False
    sequence_parallel: bool = True
    num_experts: int | None = None
    moe_ffn_hidden_size: int = 0
    moe_shared_expert_intermediate_size: int = 0


def padded_vocab(vocab: int, tp: int, divisible_by: int = 128) -> int:
    """Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by x tp."""
    multiple = divisible_by * tp
    return -(-vocab // multiple) * multiple


def megatron_args(spec: ModelSpec, *, seq_length: int, micro_batch_size: int, tp: int = 1, pp: int = 1, dp: int = 1,
                  vpp: int | None = None, distributed_optimizer: bool = True,
                  sequence_parallel: bool = True) -> MegatronArgs:
    moe = spec.moe
    return MegatronArgs(
        hidden_size=spec.hidden_size, num_layers=spec.num_layers, num_attention_heads=spec.num_heads,
        num_query_groups=spec.num_kv_heads, kv_channels=spec.head_dim, ffn_hidden_size=spec.intermediate_size,
        padded_vocab_size=padded_vocab(spec.vocab_size, tp), swiglu=spec.mlp_kind is MlpKind.GATED,
        untie_embeddings_and_output_weights=not spec.tied_embeddings, rms_norm=spec.norm_kind is NormKind.RMS,
        seq_length=seq_length, micro_batch_size=micro_batch_size, tensor_model_parallel_size=tp,
        pipeline_model_parallel_size=pp, data_parallel_size=dp, virtual_pipeline_model_parallel_size=vpp,
        use_distributed_optimizer=distributed_optimizer, sequence_parallel=sequence_parallel,
        num_experts=moe.num_experts if moe else None, moe_ffn_hidden_size=moe.expert_intermediate_size if moe else 0,
        moe_shared_expert_intermediate_size=moe.shared_intermediate_size if moe else 0)


def compute_weight_and_optimizer_memory(a: MegatronArgs) -> float:
    """Bytes of weights, gradients and optimizer states on the most loaded shard (first stage):
    18 bytes/param, or 6 + 12/dp with the distributed optimizer (bf16 weights, fp32 grads)."""
    h = a.hidden_size
    gated = 1.5 if a.swiglu else 1.0
    norm = 1 if a.rms_norm else 2
    query_ratio = a.kv_channels * a.num_attention_heads / h
    attention = 2 * h * h * ((1 + a.num_query_groups / a.num_attention_heads) * query_ratio)
    if a.num_experts is None:
        mlp = a.ffn_hidden_size * gated
    else:
        mlp = a.moe_ffn_hidden_size * a.num_experts * gated + a.moe_shared_expert_intermediate_size * gated
    layer = 2 * h * (mlp + norm) + attention
    embedding = h * a.padded_vocab_size
    block = layer * a.num_layers + norm * h
    shard = (block / a.pipeline_model_parallel_size + embedding) / a.tensor_model_parallel_size
    if a.untie_embeddings_and_output_weights and a.pipeline_model_parallel_size == 1:
        shard += embedding / a.tensor_model_parallel_size
    per_param = 6 + 12 / a.data_parallel_size if a.use_distributed_optimizer else 18
    return shard * per_param


def _pipeline_factor(a: MegatronArgs, num_microbatches: int | None) -> float:
    p, v = a.pipeline_model_parallel_size, a.virtual_pipeline_model_parallel_size
    if v is not None:
        return 1 + (p - 1) / (p * v)
    if p > 1 and num_microbatches is not None:
        return min(1, num_microbatches / p)
    return 1.0


def compute_activation_memory(a: MegatronArgs, num_microbatches: int | None) -> float:
    """First-stage activation bytes with sequence parallelism and selective recomputation."""
    s, b, h, p = a.seq_length, a.micro_batch_size, a.hidden_size, a.pipeline_model_parallel_size
    total = s * b * h * (18 + 4 * a.ffn_hidden_size / h) * a.num_layers
    total += 8 * s * b * p + s * b * h * p          # embedding input ids and dropout, p micro-batches
    total *= _pipeline_factor(a, num_microbatches)
    if p == 1:
        total += s * b * h * 4 * (1 + a.padded_vocab_size / h)
    return total / a.tensor_model_parallel_size


def compute_activation_memory_without_sp(a: MegatronArgs, num_microbatches: int | None) -> float:
    """First-stage activation bytes without sequence parallelism: sbh(10 + 24/t) per layer, x 1.05."""
    s, b, h, p, t = a.seq_length, a.micro_batch_size, a.hidden_size, a.pipeline_model_parallel_size, \
        a.tensor_model_parallel_size
    total = s * b * h * (10 + 24 / t) * a.num_layers
    total += 8 * s * b * p + s * b * h * p
    total *= _pipeline_factor(a, num_microbatches)
    if p == 1:
        total += (s * b * a.padded_vocab_size / t + s * b * h) * 2
    return total * 1.05


def theoretical_memory(a: MegatronArgs, num_microbatches: int | None, *, selective: bool = True) -> dict[str, float]:
    """{"weight_and_optimizer", "activation", "total"} in bytes, choosing the activation formula as
    `report_theoretical_memory` does (with SP only when sequence parallel and selective recompute)."""
    weights = compute_weight_and_optimizer_memory(a)
    if a.sequence_parallel and selective:
        acts = compute_activation_memory(a, num_microbatches)
    else:
        acts = compute_activation_memory_without_sp(a, num_microbatches)
    return {"weight_and_optimizer": weights, "activation": acts, "total": weights + acts}
