"""What autograd saves for backward in one decoder layer, tensor by tensor, as the Hugging Face
modeling code runs it on CUDA.

Conventions (t = micro-batch tokens b*s; a = residual-stream bytes; c = compute bytes):
- Autograd saves what an input's gradient needs only when that input requires grad: below the
  first trainable parameter (the frozen embedding's output under LoRA/freeze tuning) nothing does,
  so the first LoRA layer's input norm saves nothing and its adapters keep no dropout mask.
- nn.Linear saves its input when its weight needs a gradient, and its weight when its input
  needs a gradient (aten mm/addmm derivatives, tools/autograd/derivatives.yaml). A bitsandbytes
  4-bit linear (QLoRA) runs MatMul4Bit, which saves its input whenever it requires grad. Under autocast,
  every call casts its fp32 input to 16-bit anew, so q/k/v (and gate/up) each save their own copy.
- LlamaRMSNorm upcasts to fp32 (`hidden_states.to(torch.float32)`), pow saves the fp32 input,
  rsqrt saves a (t,) vector, and `weight * x` saves x only when the weight is trained; its output
  takes the weight's dtype (an fp32 trained weight on a 16-bit stream gives an fp32 output).
- LayerNorm saves input, mean and rstd (t floats each); CUDA autocast runs layer_norm in fp32.
- SDPA flash/memory-efficient kernels save q, k, v, the output and a (b, heads, s) fp32 logsumexp;
  eager attention keeps the fp32 softmax output and its 16-bit copy: s^2 per head, as does SDPA's
  math kernel, which CUDA runs for fp32 grouped-query attention. A value that is a slice of a
  fused qkv projection keeps that whole projection output alive.
- SiLU/GELU save their input; the gated product saves both factors; MoE routers and grouped-mm
  experts: mlp_saves.py.
- CUDA dropout (native_dropout) saves a 1-byte bool mask.
Per-layer transient buffers in backward (gradients of the largest intermediates) are counted
separately so the peak can be placed where it really falls.
"""

from __future__ import annotations

from trainplan.enums import Attention, NormKind, Position
from trainplan.frozen import frozen, replace
from trainplan.memory.attention import (
    LSE_BYTES,
    attention_core,
    attention_transients,
    masked,
    returned_probs_bytes,
    value_pins_fused_qkv,
)
from trainplan.memory.context import LayerContext
from trainplan.memory.experts import experts_saves
from trainplan.memory.linear_saves import ATTN_IN as _ATTN_IN
from trainplan.memory.linear_saves import FP32_PRODUCT_NORM_MODEL_TYPES
from trainplan.memory.dora import dora_forward_extra
from trainplan.memory.linear_saves import has_lora as _has_lora
from trainplan.memory.linear_saves import linears_saves as _linears_saves
from trainplan.memory.linear_saves import norm_out_bytes as _norm_out_bytes
from trainplan.memory.mlp_saves import mlp_backward_bytes, mlp_saves
from trainplan.model.architecture import PARAMETERLESS_LAYER_NORM_MODEL_TYPES, Group, LayerSpec, LinearSpec, Role
from trainplan.specs import ModelSpec

# post-norm layers (OLMo 2/3): no norm before attention or MLP; RMSNorm on each branch's output
POST_NORM_MODEL_TYPES = frozenset({"olmo2", "olmo3"})
# q_norm / k_norm over the whole projection output (one (t,) rstd each), not per head
FULL_WIDTH_QK_NORM_MODEL_TYPES = frozenset({"olmo2", "olmo3", "olmoe"})
# q/k normalised without a weight (Llama 4's L2 norm)
WEIGHTLESS_QK_NORM_MODEL_TYPES = frozenset({"llama4", "llama4_text"})
# MoE blocks that add `self.shared_experts(residuals)` after the routed experts (modeling_deepseek_v2/v3,
# glm4_moe *MoE.forward; DeepSeek-MoE's remote DeepseekMoE.forward): autograd runs the later branch first, so
# their saved tensors are released before the routed experts' backward
SHARED_AFTER_ROUTED_MODEL_TYPES = frozenset({"deepseek_v2", "deepseek_v3", "glm4_moe", "kimi_k2", "deepseek"})
# LayerNorm written as fp32 ops (CohereLayerNorm: x.float() - mean, * rsqrt(var + eps), weight.float() * ., back to
# the input's dtype), not native_layer_norm
FP32_OPS_LAYER_NORM_MODEL_TYPES = frozenset({"cohere"})


@frozen
class LayerActivations:
    saved_bytes: int          # kept from forward to backward
    weight_copies_bytes: int  # autocast 16-bit weight copies saved for backward
    checkpoint_bytes: int     # what a checkpointed layer keeps (its input)
    transient_bytes: int      # largest extra allocation while this layer runs backward
    detail: dict[str, int]
    input_alias_bytes: int = 0  # saved tensors that are the layer's input itself (not copies)
    cached_copies_bytes: int = 0  # autocast weight copies cached through forward but not saved
    op_saved_bytes: int = 0     # what torchtitan's op-level selective checkpointing keeps (op_sac_saves)
    first_transient_bytes: int = 0    # largest backward buffer before any of the layer's gradients exist
    first_released_bytes: int = 0     # saved tensors already released at that moment
    attention_peak_bytes: int = 0     # the layer's bytes at its attention's forward peak (0: none above saved)
    ckpt_attention_peak_bytes: int = 0  # the same in a checkpointed layer's first forward (nothing saved)
    attention_saved_bytes: int = 0    # what the layer still keeps at its attention's softmax backward
    attention_backward_bytes: int = 0  # the backward buffers at the attention's softmax (its MLP done)
    recompute_transient_bytes: int = 0  # backward buffers alive when a checkpointed layer is recomputed
    dora_forward_bytes: int = 0       # above the layer's whole saves at its worst DoRA weight norm (memory.dora)


def _grad_flow(ctx: LayerContext, spec: ModelSpec, layer: LayerSpec) -> dict[str, bool]:
    """Whether the tensor each group of linears reads requires grad: an output needs a gradient
    when its input or one of its own parameters (trained weights, LoRA adapters) does."""
    w = ctx.weights_trained

    def adapted(*roles: Role) -> bool:
        return any(_has_lora(ctx, lin) for lin in layer.linears if lin.role in roles)

    if spec.model_type in POST_NORM_MODEL_TYPES:   # q/k/v read the layer input itself
        norm1 = ctx.input_requires_grad
        attn_out = norm1 or w or adapted(*_ATTN_IN)
        mid = attn_out or adapted(Role.O)          # residual + post-attention norm output
        return {"norm1": norm1, "q_latent": norm1, "kv_latent": norm1, "attn_out": attn_out, "mid": mid,
                "norm2": mid, "other": mid, "mlp_act": mid or adapted(Role.GATE, Role.UP, Role.GATE_UP)}
    norm1 = ctx.input_requires_grad or w
    attn_out = norm1 or adapted(*_ATTN_IN)
    mid = attn_out or adapted(Role.O)                       # residual + attention output
    norm2 = norm1 if spec.parallel_attn_mlp else mid        # parallel: the MLP reads the layer input
    return {"norm1": norm1, "q_latent": norm1 or adapted(Role.Q_A), "kv_latent": norm1 or adapted(Role.KV_A),
            "attn_out": attn_out, "mid": mid, "norm2": norm2, "other": norm2,
            "mlp_act": norm2 or adapted(Role.GATE, Role.UP, Role.GATE_UP)}


def _fused_rms(ctx: LayerContext, spec: ModelSpec) -> bool:
    """An RMSNorm run as one fused kernel (Liger, or Inductor under torch.compile); Gemma's
    `(1 + w)` variant is left to the eager count."""
    return (spec.norm_kind is NormKind.RMS and (ctx.liger or ctx.compiled)
            and not spec.model_type.startswith("gemma"))


def _norm_saves(ctx: LayerContext, spec: ModelSpec, width: int, *, input_grad: bool,
                weight_grad: bool, tokens: int | None = None) -> tuple[int, int]:
    """(bytes saved for the norm's input, other bytes) of one norm over `width` features."""
    t = ctx.tokens if tokens is None else tokens
    if not (input_grad or weight_grad):
        return 0, 0
    if spec.model_type in PARAMETERLESS_LAYER_NORM_MODEL_TYPES:
        # native_layer_norm on the fp32 copy the norm makes of x (no weight, no bias): it saves that copy and
        # its (t,) fp32 mean and rstd, only when x needs grad
        return (4 * t * width, 2 * 4 * t) if input_grad else (0, 0)
    if spec.model_type in FP32_OPS_LAYER_NORM_MODEL_TYPES:
        # when x needs grad: the centred fp32 input, computed twice (pow saves one for the variance, the
        # product with rsqrt the other) and rsqrt's (t,) output, and the weight's fp32 copy; when the weight
        # trains: the fp32 normalised input its product saves
        weight = ctx.trained_weight_bytes if weight_grad else ctx.frozen_weight_bytes
        centred = 8 * t * width + 4 * t + (4 * width if weight != 4 else 0) if input_grad else 0
        return 0, centred + (4 * t * width if weight_grad else 0)
    if _fused_rms(ctx, spec):
        # a fused RMSNorm (Liger's kernel; Inductor's fused reduction under torch.compile) saves its
        # input in its own dtype and the (t,) fp32 rstd; the weight's gradient is recomputed from them
        return ctx.residual_bytes * t * width, 4 * t
    if spec.norm_kind is NormKind.RMS:
        upcast = 4 * t * width if input_grad else 0        # pow/mul save the fp32 input (or its copy)
        rsqrt = 4 * t if input_grad else 0                 # mul saves the (t,) rsqrt when x needs grad
        # `weight * x` saves x when the weight is trained; Gemma applies (1 + w) in fp32
        fp32_product = spec.model_type.startswith("gemma") or spec.model_type in FP32_PRODUCT_NORM_MODEL_TYPES
        normed = ((4 if fp32_product else ctx.residual_bytes) * t * width if weight_grad else 0)
        return upcast, rsqrt + normed
    in_bytes = 4 if ctx.autocast else ctx.residual_bytes   # CUDA autocast: layer_norm in fp32
    weight = ctx.trained_weight_bytes if weight_grad else ctx.frozen_weight_bytes
    casts = 2 * 4 * width if ctx.autocast and weight != 4 else 0   # fp32 copies of 16-bit weight, bias
    return in_bytes * t * width, 2 * 4 * t + casts         # native_layer_norm: input, mean, rstd


def _norm_input_is_layer_input(ctx: LayerContext, spec: ModelSpec) -> bool:
    """The first norm saves the layer input itself when no dtype cast is needed (RMSNorm on an fp32
    stream; LayerNorm without an autocast upcast)."""
    if spec.norm_kind is NormKind.RMS:
        return ctx.residual_bytes == 4 or _fused_rms(ctx, spec)
    if spec.model_type in PARAMETERLESS_LAYER_NORM_MODEL_TYPES:
        return ctx.residual_bytes == 4      # x.to(float32) is x itself on an fp32 stream, else a copy
    return not (ctx.autocast and ctx.residual_bytes != 4)


def _layer_norms(ctx: LayerContext, spec: ModelSpec, grads: dict[str, bool]) -> tuple[int, int]:
    """(bytes the layer's norms save, of which the layer input itself)."""
    h, w = spec.hidden_size, ctx.weights_trained
    if spec.model_type in POST_NORM_MODEL_TYPES:
        # post_attention_layernorm on o_proj's output, post_feedforward_layernorm on down_proj's
        # output: projection outputs in the compute dtype; neither reads the layer input
        out_ctx = replace(ctx, residual_bytes=ctx.compute_bytes)
        return 2 * sum(_norm_saves(out_ctx, spec, h, input_grad=grads["mid"], weight_grad=w)), 0
    first_in, first_rest = _norm_saves(ctx, spec, h, input_grad=ctx.input_requires_grad, weight_grad=w)
    alias = ctx.residual_bytes * ctx.tokens * h if first_in and _norm_input_is_layer_input(ctx, spec) else 0
    total = first_in + first_rest
    if spec.norms_per_layer >= 2:
        if spec.parallel_attn_mlp:   # the second norm reads the layer input too: no copy, the same tensor
            second_in, second_rest = _norm_saves(ctx, spec, h, input_grad=ctx.input_requires_grad, weight_grad=w)
            total += second_rest + (0 if alias else second_in)
        else:
            total += sum(_norm_saves(ctx, spec, h, input_grad=grads["mid"], weight_grad=w))
    if spec.norms_per_layer >= 4:    # Gemma-2/3 post-attention and post-feedforward norms
        total += 2 * sum(_norm_saves(ctx, spec, h, input_grad=grads["mid"], weight_grad=w))
    return total, alias


def _qkv_needs(ctx: LayerContext, spec: ModelSpec, layer: LayerSpec,
               grads: dict[str, bool]) -> tuple[bool, bool, bool]:
    """Whether q, k and v need a gradient (from the layer input, trained weights or an adapter)."""
    def adapted(*roles: Role) -> bool:
        return any(_has_lora(ctx, lin) for lin in layer.linears if lin.role in roles)

    if spec.mla:
        q = grads["q_latent"] or adapted(Role.Q, Role.Q_B)
        kv = grads["kv_latent"] or adapted(Role.KV_B)
        return q, kv, kv
    base = grads["norm1"] or ctx.weights_trained            # post-norm: q/k/v read the layer input
    return (base or adapted(Role.Q, Role.QKV), base or adapted(Role.K, Role.QKV),
            base or adapted(Role.V, Role.QKV))


def layer_activations(spec: ModelSpec, layer: LayerSpec, ctx: LayerContext) -> LayerActivations:
    t, a, c = ctx.tokens, ctx.residual_bytes, ctx.compute_bytes
    h = spec.hidden_size
    has_lora = any(_has_lora(ctx, lin) for lin in layer.linears)
    if not ctx.input_requires_grad and not ctx.weights_trained and not has_lora:
        return LayerActivations(saved_bytes=0, weight_copies_bytes=0, checkpoint_bytes=0,
                                transient_bytes=0, detail={})
    grads = _grad_flow(ctx, spec, layer)
    detail: dict[str, int] = {}
    detail["norms"], alias = _layer_norms(ctx, spec, grads)
    by_group = {g: [lin for lin in layer.linears if lin.group is g] for g in Group}
    dense = by_group[Group.ATTENTION] + by_group[Group.MLP] + by_group[Group.SHARED_EXPERTS] + by_group[Group.ROUTER]
    shared_inputs: dict[str, int] = {}
    is_masked = masked(ctx, spec, layer)
    act, wcopy, lora, cached = _linears_saves(ctx, spec, dense, t, grads, shared_out=shared_inputs,
                                              is_masked=is_masked)
    if spec.model_type in POST_NORM_MODEL_TYPES and "norm1" in shared_inputs:
        alias = shared_inputs["norm1"]                      # q/k/v saved the layer input itself
    detail["linear_inputs"] = act
    detail["lora"] = lora
    needs = _qkv_needs(ctx, spec, layer, grads)
    detail["attention_core"] = attention_core(ctx, spec, value_pins_fused_qkv(spec, layer) or ctx.fused_qkv,
                                              needs, is_masked)
    if ctx.fused_qkv and lora:   # LoRAQKVLinear.zero_pad: index_copy keeps the adapters' output
        detail["lora"] += c * t * sum(lin.out_features for lin in layer.linears
                                      if lin.role in (Role.Q, Role.K, Role.V, Role.QKV) and _has_lora(ctx, lin))
    if spec.mla:   # q_a_layernorm / kv_a_layernorm (RMSNorm over the compressed latents)
        latents = (("q_latent", spec.mla.q_lora_rank or 0), ("kv_latent", spec.mla.kv_lora_rank))
        latent_ctx = replace(ctx, residual_bytes=c)        # the latents are projection outputs
        detail["attention_core"] += sum(sum(_norm_saves(latent_ctx, spec, width, input_grad=grads[key],
                                                         weight_grad=ctx.weights_trained))
                                        for key, width in latents if width)
    if spec.model_type in WEIGHTLESS_QK_NORM_MODEL_TYPES and layer.attention == "full" and needs[0]:
        detail["attention_core"] += 4 * ctx.seq          # NoPE layers: the (s,) fp32 temperature scales
    # Llama 4 normalises q and k (L2, no weight) on its RoPE layers only
    qk_norm = spec.qk_norm and not (spec.model_type in WEIGHTLESS_QK_NORM_MODEL_TYPES and layer.attention == "full")
    if qk_norm:   # q_norm/k_norm (RMSNorm over head_dim) on the q and k that need a gradient
        head_ctx = replace(ctx, residual_bytes=c)         # q and k are projection outputs
        qk_weight = ctx.weights_trained and spec.model_type not in WEIGHTLESS_QK_NORM_MODEL_TYPES
        full = spec.model_type in FULL_WIDTH_QK_NORM_MODEL_TYPES
        for grad, heads in zip(needs[:2], (spec.num_heads, spec.num_kv_heads)):
            width, rows = (heads * spec.head_dim, t) if full else (spec.head_dim, t * heads)
            detail["attention_core"] += sum(_norm_saves(head_ctx, spec, width, input_grad=grad,
                                                        weight_grad=qk_weight, tokens=rows))
    act = spec.hidden_act
    if ctx.fused_gelu and act in ("gelu_new", "gelu_fast"):
        # litgpt's own MLPs run torch.nn.functional.gelu(x, approximate=config.gelu_approximate) (litgpt/model.py
        # GptNeoxMLP, LLaMAMLP; phi-2's gelu_approximate "tanh"): one fused kernel where transformers'
        # NewGELUActivation is a Python chain
        act = "gelu_pytorch_tanh"
    mlp = grads["mlp_act"]                                 # the MLP's intermediates need gradients
    if by_group[Group.MLP] and mlp:
        detail["mlp"] = mlp_saves(ctx, by_group[Group.MLP], t, act)
    if by_group[Group.SHARED_EXPERTS] and mlp:
        detail["shared_experts"] = mlp_saves(ctx, by_group[Group.SHARED_EXPERTS], t, act)
        if spec.moe and spec.moe.shared_expert_gate:   # sigmoid(gate) * shared output saves both
            detail["shared_experts"] += c * t * h + c * t
    if spec.hidden_dropout > 0:
        detail["dropout"] = 2 * t * h                      # CUDA native_dropout: bool masks, 2 sites
    transient = first = released = recompute_temp = 0
    experts = by_group[Group.EXPERTS]
    if experts and spec.moe and mlp:
        moe = experts_saves(ctx, spec, experts, grads, act, by_group[Group.ROUTER])
        detail.update(moe.detail)
        wcopy += moe.weight_copies_bytes
        cached += moe.cached_copies_bytes
        transient = moe.transient_bytes
        if moe.first_transient_bytes:
            first = moe.first_transient_bytes + 2 * a * t * h
            # the reshape of the incoming gradient, expanded by `.sum(dim=1)`'s backward, is a copy made
            # before index's backward unpacks a saved tensor (which recomputes a checkpointed layer)
            recompute_temp = moe.first_transient_bytes // 3
            if spec.model_type in SHARED_AFTER_ROUTED_MODEL_TYPES:
                released = _shared_experts_bytes(ctx, spec, by_group[Group.SHARED_EXPERTS], grads, detail)
    fwd_unsaved, bwd_attention, consumed = attention_transients(ctx, spec, is_masked)
    dense_width = max((lin.in_features for lin in by_group[Group.MLP] if lin.role is Role.DOWN), default=0)
    transient = max(transient, mlp_backward_bytes(act, c, ctx.autocast) * t * dense_width, 2 * c * t * spec.q_dim)
    transient += 2 * a * t * h                                  # incoming and outgoing hidden grads
    saved = sum(detail.values())
    upto = peak = ckpt_peak = 0
    if fwd_unsaved:   # the attention's S x S moments, in forward (and recompute) and in backward
        core = detail["attention_core"]
        upto = _pre_attention_bytes(ctx, spec, layer, grads) + core
        norm_out, rope = _attention_locals(ctx, spec)
        peak = upto + fwd_unsaved + norm_out + rope
        ckpt_peak = (_norm_out_bytes(ctx, spec) * t * h + rope + core + fwd_unsaved
                     + returned_probs_bytes(ctx, spec))
    return LayerActivations(saved_bytes=saved, weight_copies_bytes=wcopy,
                            checkpoint_bytes=a * t * h, transient_bytes=transient, detail=detail,
                            input_alias_bytes=alias, cached_copies_bytes=cached,
                            op_saved_bytes=a * t * h + op_sac_saves(ctx, spec, layer),
                            first_transient_bytes=first, first_released_bytes=released,
                            attention_peak_bytes=peak, ckpt_attention_peak_bytes=ckpt_peak,
                            attention_saved_bytes=max(0, upto - consumed),
                            recompute_transient_bytes=a * t * h + recompute_temp,
                            dora_forward_bytes=dora_forward_extra(ctx, dense, t, ctx.frozen_weight_bytes,
                                                                  lambda lin: _has_lora(ctx, lin)),
                            attention_backward_bytes=bwd_attention + 2 * a * t * h if upto else 0)


def _attention_locals(ctx: LayerContext, spec: ModelSpec) -> tuple[int, int]:
    """(norm output, rotary outputs) alive as the decoder layer's and the attention's locals while the
    attention runs, where what is saved are autocast's 16-bit copies of them: the norm output when
    it is fp32; q and k after rotary embeddings, which the fp32 cos/sin tables (the hidden states'
    dtype) promote to fp32, and eager attention's repeat_kv copy of that k."""
    t, c, a = ctx.tokens, ctx.compute_bytes, ctx.residual_bytes
    norm = _norm_out_bytes(ctx, spec)
    norm_out = norm * t * spec.hidden_size if ctx.autocast and norm != c else 0
    if not (ctx.autocast and a != c and spec.position is Position.ROPE) or spec.mla:
        return norm_out, 0
    rep = spec.num_heads // spec.num_kv_heads
    repeated = spec.kv_dim * rep if ctx.attention is Attention.EAGER and spec.num_kv_heads > 1 and rep > 1 else 0
    return norm_out, a * t * (spec.q_dim + spec.kv_dim + repeated)


def _pre_attention_bytes(ctx: LayerContext, spec: ModelSpec, layer: LayerSpec, grads: dict[str, bool]) -> int:
    """What the layer has saved when its attention runs: the first norm and the inputs of the q/k/v
    projections (and their adapters)."""
    attn_in = [lin for lin in layer.linears if lin.role in _ATTN_IN]
    act, _, lora, _ = _linears_saves(ctx, spec, attn_in, ctx.tokens, grads)
    if spec.model_type in POST_NORM_MODEL_TYPES:
        return act + lora
    norm = _norm_saves(ctx, spec, spec.hidden_size, input_grad=ctx.input_requires_grad,
                       weight_grad=ctx.weights_trained)
    return sum(norm) + act + lora


def _shared_experts_bytes(ctx: LayerContext, spec: ModelSpec, shared: list[LinearSpec], grads: dict[str, bool],
                          detail: dict[str, int]) -> int:
    """The shared experts' saved tensors, less the norm output other linears keep too."""
    if not shared:
        return 0
    inputs: dict[str, int] = {}
    act, _, lora, _ = _linears_saves(ctx, spec, shared, ctx.tokens, grads, shared_out=inputs)
    return detail.get("shared_experts", 0) + act + lora - inputs.get("norm2", 0)


def op_sac_saves(ctx: LayerContext, spec: ModelSpec, layer: LayerSpec) -> int:
    """What torchtitan's op-level selective activation checkpointing keeps of a layer besides its
    input (torchtitan/distributed/activation_checkpoint.py SelectiveAC, torchtitan 0.3.0): the
    outputs of the compute-intensive ops (torch._functorch.partitioners get_default_op_list
    compute_intensive_ops, aten.linear, the SDPA kernels, aten.max, topk) except every second
    matmul (`meta[mm_count_key] % 2 == 0 -> PREFER_RECOMPUTE`, counted per block call from 1), so
    the 1st, 3rd, ... mm of the block in forward order; everything else (norms, activations,
    rotary, casts) is recomputed in backward. LoRA adapters' two matmuls count as mms in order."""
    t, c, b, s = ctx.tokens, ctx.compute_bytes, ctx.batch, ctx.seq
    outs: list[int] = []
    for lin in layer.linears:
        rows = t * spec.moe.top_k if lin.group is Group.EXPERTS and spec.moe else t
        copies = 1 if lin.group is Group.EXPERTS else lin.copies
        outs.append(c * rows * lin.out_features * copies)
        if _has_lora(ctx, lin):
            outs += [c * rows * ctx.lora_rank * copies, c * rows * lin.out_features * copies]
    saved = sum(outs[0::2])                                # mm 1, 3, 5, ... saved
    if ctx.attention is Attention.EAGER:                   # bmm scores and output: compute ops, all saved
        saved += c * b * spec.num_heads * s * s + c * t * spec.q_dim
    else:                                                  # the fused kernel's output and logsumexp
        saved += c * t * spec.q_dim + LSE_BYTES * b * spec.num_heads * s
    return saved
