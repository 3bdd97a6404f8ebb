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
from trainplan.memory.context import LayerContext
from trainplan.memory.mlp_saves import CLAMPED_SWIGLU, mlp_saves, router_saves
from trainplan.model.architecture import Group, LayerSpec, LinearSpec, Role
from trainplan.model.params import lora_key
from trainplan.specs import ModelSpec

LSE_BYTES = 4
# apply_rotary_pos_emb ends in torch.cat([rotated, pass-through]) (modeling_gpt_neox/phi3/glm/glm4,
# glm4_moe; gpt-oss rotates the two halves and concatenates them)
ROPE_CAT_MODEL_TYPES = frozenset({"gpt_neox", "phi3", "glm", "glm4", "glm4_moe", "gpt_oss"})
# RMSNorm computing `(weight * x).to(input_dtype)` in fp32 (OLMo 2/3, gpt-oss), as Gemma's
# `(x * (1 + w)).type_as(x)`: the weight's product saves the fp32 x, the output has the input's dtype
FP32_PRODUCT_NORM_MODEL_TYPES = frozenset({"olmo2", "olmo3", "gpt_oss"})
# post-norm layers (OLMo 2/3): no norm before attention or MLP; RMSNorm on each branch's output
POST_NORM_MODEL_TYPES = frozenset({"olmo2", "olmo3"})
# q_norm / k_norm over the whole projection output (one (t,) rstd each), not per head
FULL_WIDTH_QK_NORM_MODEL_TYPES = frozenset({"olmo2", "olmo3"})
# q/k normalised without a weight (Llama 4's L2 norm)
WEIGHTLESS_QK_NORM_MODEL_TYPES = frozenset({"llama4", "llama4_text"})
# attention with per-head sink logits (gpt-oss): the sink column joins the scores before the softmax;
# eager only in transformers (job/resolve.py resolves an SDPA request to eager)
SINK_ATTENTION_MODEL_TYPES = frozenset({"gpt_oss"})
# MoE blocks that run every expert on every token (transformers' Llama 4 text MoE)
DENSE_EXPERTS_MODEL_TYPES = frozenset({"llama4", "llama4_text"})
# Falcon splits its fused projection with index lists (`fused_qkv[..., [-1], :]`): copies, not views
QKV_INDEX_COPY_MODEL_TYPES = frozenset({"falcon", "RefinedWeb", "RefinedWebModel"})


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


def _fused_gate_up(lins: list[LinearSpec]) -> list[LinearSpec]:
    """Experts' gate and up projections as the one gate_up_proj parameter they are in transformers 5."""
    gate = next((lin for lin in lins if lin.role is Role.GATE), None)
    up = next((lin for lin in lins if lin.role is Role.UP), None)
    if gate is None or up is None:
        return lins
    fused = replace(gate, name="gate_up_proj", role=Role.GATE_UP, out_features=gate.out_features + up.out_features)
    return [fused] + [lin for lin in lins if lin.role not in (Role.GATE, Role.UP)]


def _has_lora(ctx: LayerContext, lin: LinearSpec) -> bool:
    return lin.role in ctx.lora_roles or lora_key(lin) in ctx.lora_names


# Which tensor feeds each linear: linears in one group read the same tensor.
_INPUT_GROUP = {Role.Q: "norm1", Role.K: "norm1", Role.V: "norm1", Role.QKV: "norm1",
                Role.Q_A: "norm1", Role.KV_A: "norm1", Role.Q_B: "q_latent", Role.KV_B: "kv_latent",
                Role.O: "attn_out", Role.GATE: "norm2", Role.UP: "norm2", Role.GATE_UP: "norm2",
                Role.ROUTER: "norm2", Role.SHARED_GATE: "norm2", Role.DOWN: "mlp_act"}
_ATTN_IN = (Role.Q, Role.K, Role.V, Role.QKV, Role.Q_A, Role.KV_A, Role.Q_B, Role.KV_B)


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


def _norm_out_bytes(ctx: LayerContext, spec: ModelSpec) -> int:
    """dtype bytes of a norm's output, the tensor the following linears read."""
    if spec.norm_kind is NormKind.LAYER:
        return 4 if ctx.autocast else ctx.residual_bytes   # CUDA autocast: layer_norm in fp32
    if spec.model_type.startswith("gemma") or spec.model_type in FP32_PRODUCT_NORM_MODEL_TYPES:
        # Gemma `(x * (1 + w)).type_as(x)`, gpt-oss `(w * x).to(dtype)`: the input's dtype; OLMo's
        # post-norm layers: q/k/v and the MLP read the residual stream itself
        return ctx.residual_bytes
    weight = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
    return max(ctx.residual_bytes, weight)                 # `weight * x.to(input_dtype)` promotes


def _input_bytes(ctx: LayerContext, spec: ModelSpec, group: str) -> int:
    """dtype bytes of the tensor a linear reads: a norm output, else the compute dtype."""
    return _norm_out_bytes(ctx, spec) if group in ("norm1", "norm2") else ctx.compute_bytes


def _linears_saves(ctx: LayerContext, spec: ModelSpec, lins: list[LinearSpec], tokens: int,
                   grads: dict[str, bool], shared_out: dict[str, int] | None = None,
                   masked: bool = False) -> tuple[int, int, int, int]:
    """(activation bytes, autocast weight-copy bytes, lora bytes, weight copies cached but not
    saved) of these linears.

    Without a cast, linears that read the same tensor share one saved copy; under autocast a
    16-bit copy is made (and saved) per call when the input is fp32.
    """
    c = ctx.compute_bytes
    one_norm = spec.parallel_attn_mlp and spec.norms_per_layer < 2   # attention and MLP read one norm
    shared: dict[str, int] = {}
    act = wcopy = lora = cached = 0
    for lin in lins:
        group = _INPUT_GROUP.get(lin.role, "other")
        needs_grad = grads[group]
        key = "norm1" if one_norm and group == "norm2" else group
        in_bytes = _input_bytes(ctx, spec, group)
        if lin.group is Group.EXPERTS and spec.model_type in FP32_PRODUCT_NORM_MODEL_TYPES:
            # the 16-bit norm output is gathered and cast to the experts' dtype (_grouped_mm's
            # `input.to(weight.dtype)`): that copy is what the grouped matmul keeps
            in_bytes = ctx.compute_bytes
        cast = ctx.autocast and in_bytes != c
        width = tokens * lin.in_features
        # a trained weight's gradient needs the input; bitsandbytes MatMul4Bit.forward keeps it for a
        # frozen 4-bit weight too (`if any(ctx.needs_input_grad[:2]): ctx.tensors = (A, B)`), after
        # Linear4bit.forward's cast of an fp32 input to the compute dtype (a fresh copy per call)
        if ctx.weights_trained or (ctx.quant_saves_input and needs_grad):
            if cast:
                act += c * width
            else:
                shared[key] = in_bytes * width
        weight_bytes = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
        if ctx.autocast and weight_bytes != c and needs_grad:
            wcopy += c * lin.weight_params                  # the weight's copy, for the input's gradient
        if _has_lora(ctx, lin):
            r = ctx.lora_rank
            # peft casts the input to the adapter's dtype (`_cast_input_dtype`); under autocast with
            # fp32 adapters, lora_A then casts it back to 16-bit: a fresh copy per adapted module.
            lora_cast = cast or (ctx.autocast and ctx.adapter_bytes != in_bytes)
            if ctx.lora_dropout > 0:
                if needs_grad:
                    lora += width                           # bool dropout mask (for the input's gradient)
                lora += (c if lora_cast else in_bytes) * width  # lora_A input (dropout output / cast)
            elif lora_cast:
                lora += c * width
            else:
                shared[key] = in_bytes * width
            lora += c * tokens * r * lin.copies             # lora_B input
            if ctx.autocast and ctx.adapter_bytes != c:
                # lora_B's copy is saved (lora_A's output needs grad); lora_A's only when its input
                # needs grad, though autocast caches it (a leaf requiring grad) through the forward.
                wcopy += c * r * lin.out_features * lin.copies
                a_copy = c * r * lin.in_features * lin.copies
                if needs_grad:
                    wcopy += a_copy
                else:
                    cached += a_copy
    if ctx.attention is not Attention.EAGER and not _rope_cat_layout(spec) and not (_sdpa_math(ctx, spec)
                                                                                     and not masked):
        # SDPA's flash/efficient kernels (and flash-attn 2) allocate the output in the query's
        # (b, s, heads, d) layout, so `transpose(1, 2).contiguous()` is a no-op: o_proj reads the
        # very tensor the kernel saved (counted with the attention core).
        shared.pop("attn_out", None)
    if shared_out is not None:
        shared_out.update(shared)
    return act + sum(shared.values()), wcopy, lora, cached


# Layers with local attention (sliding window, Llama 4's chunks; LayerSpec.attention == "local") under
# SDPA: transformers builds a 4-D boolean mask once the sequence is longer than the window (shorter,
# the mask is plain causal and skipped), and SDPA with a mask takes repeated k/v (no enable_gqa) and
# converts the mask to an additive bias in the query's dtype, which the memory-efficient kernel keeps
# for backward: per such layer a (b, 1, s, s) bias and k/v at num_heads width. Followed for the
# models with per-layer attention kinds (architecture.LOCAL_ATTENTION_MODEL_TYPES); families with
# one layer kind (Mistral, Gemma 2/3, Qwen with use_sliding_window) are not, yet.
def _local_window(spec: ModelSpec) -> int | None:
    if spec.model_type.startswith("llama4"):
        import json

        config = json.loads(spec.hf_config_json) if spec.hf_config_json else {}
        config = config.get("text_config", config) if spec.model_type == "llama4" else config
        return config.get("attention_chunk_size", 8192)
    return spec.sliding_window


def _masked(ctx: LayerContext, spec: ModelSpec, layer: LayerSpec) -> bool:
    if ctx.attention is not Attention.SDPA or layer.attention != "local":
        return False
    window = _local_window(spec)
    return bool(window) and ctx.seq > window


def _sdpa_math(ctx: LayerContext, spec: ModelSpec) -> bool:
    """fp32 grouped-query SDPA runs CUDA's math kernel: flash takes 16-bit inputs only and the
    memory-efficient kernel does not take enable_gqa (transformers passes it when kv heads are
    fewer and there is no mask)."""
    return (ctx.attention is Attention.SDPA and ctx.compute_bytes == 4 and not spec.mla
            and spec.num_kv_heads < spec.num_heads)


def _rope_cat_layout(spec: ModelSpec) -> bool:
    """Rotary embeddings applied with torch.cat make q/k contiguous (b, heads, s, d) tensors: the
    kernel output follows that layout, and o_proj's input is a copy."""
    return spec.position is Position.ROPE and spec.model_type in ROPE_CAT_MODEL_TYPES


def _value_pins_fused_qkv(spec: ModelSpec, layer: LayerSpec) -> bool:
    """q/k/v sliced from one fused projection (Phi-3 qkv_proj, GPT-NeoX query_key_value): rotary
    embeddings replace q and k by new tensors, while the saved value, a view, keeps the whole
    projection output alive (a storage is freed only with its last view)."""
    return (spec.position is Position.ROPE and spec.model_type not in QKV_INDEX_COPY_MODEL_TYPES
            and any(lin.role is Role.QKV for lin in layer.linears))


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


def _attention_core(ctx: LayerContext, spec: ModelSpec, fused_qkv_pinned: bool,
                    needs: tuple[bool, bool, bool], masked: bool = False) -> int:
    """What attention saves; a matmul saves each operand only for the other one's gradient."""
    t, c, b, s = ctx.tokens, ctx.compute_bytes, ctx.batch, ctx.seq
    h_q = spec.num_heads
    q_needs, k_needs, v_needs = needs
    scores = q_needs or k_needs                            # the scores (and probabilities) need grad
    if not (scores or v_needs):
        return 0
    if spec.mla:
        q_dim = h_q * spec.mla.qk_head_dim
        k_dim = q_dim
        out_dim = h_q * spec.mla.v_head_dim
        # value: a view of kv_b's output (k_nope and v), saved as such by the fused kernels; eager's
        # `probs @ v` folds (b, heads) for bmm: a view when b == 1, else a copy of v alone
        kv_b_out = h_q * (spec.mla.qk_nope_head_dim + spec.mla.v_head_dim)
        v_dim = out_dim if ctx.attention is Attention.EAGER and b > 1 else kv_b_out
    else:
        q_dim, k_dim, v_dim, out_dim = spec.q_dim, spec.kv_dim, spec.kv_dim, spec.q_dim
    rep = spec.num_heads // spec.num_kv_heads if not spec.mla else 1
    # the saved value is a view of the fused projection output (q_dim + 2 kv_dim wide), unless
    # eager attention's repeat_kv copied it
    pinned = c * t * (spec.q_dim + spec.kv_dim) if fused_qkv_pinned and (
        ctx.attention is not Attention.EAGER or rep == 1) else 0
    if ctx.attention is Attention.EAGER or (_sdpa_math(ctx, spec) and not masked):   # masked: memory-efficient
        sink_extra = 0
        if ctx.attention is Attention.EAGER and spec.model_type in SINK_ATTENTION_MODEL_TYPES:
            # gpt-oss: cat(scores, sinks) promotes to the sinks' dtype, max(-1) keeps int64 indices,
            # softmax(dtype=its input's) saves (b, heads, s, s + 1); the sliced probabilities are cast
            # to the value dtype (a copy when they differ, saved by probs @ v)
            sink_bytes = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
            soft = max(c, sink_bytes)
            sink_extra = (soft + 8) * b * h_q * s if scores else 0
        elif ctx.attention is Attention.EAGER:
            # eager_attention_forward: q @ k^T (q and the repeated k), softmax, dropout, @ v. Most
            # families run softmax(dtype=float32).to(query.dtype); GPT-2 and Llama 4 keep the value
            # dtype, CUDA autocast puts softmax on its fp32 list.
            soft = 4 if (ctx.autocast or spec.naming not in ("gpt2", "llama4")) else c
        else:
            # SDPA's math kernel: q * scale and the repeated k * scale are new tensors, v is
            # repeated; o_proj's input is then a copy of its (b, heads, s, d) output (linears)
            soft, pinned = c, 0
        saved = c * t * ((q_dim if k_needs else 0) + (k_dim * rep if q_needs else 0)
                         + (v_dim * rep if scores else 0))
        probs = soft if scores else 0
        if spec.attn_logit_softcapping and scores:
            probs += c                                      # tanh output of the soft-capped scores
        if spec.attention_dropout > 0:
            probs += (1 if scores else 0) + (c if v_needs else 0)   # bool mask, dropped probabilities
        elif soft != c and v_needs:
            probs += c                                      # 16-bit copy saved by probs @ v
        return saved + pinned + probs * b * h_q * s * s + sink_extra
    saved = c * t * (q_dim + k_dim + v_dim + out_dim)       # q, k, v, out saved by the kernel
    saved += LSE_BYTES * b * h_q * s                        # logsumexp
    if masked:   # repeated k/v instead of k/v, and the additive mask bias
        saved += c * t * (k_dim + v_dim) * (rep - 1) + c * b * s * s
    return saved + pinned


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
    masked = _masked(ctx, spec, layer)
    act, wcopy, lora, cached = _linears_saves(ctx, spec, dense, t, grads, shared_out=shared_inputs, masked=masked)
    if spec.model_type in POST_NORM_MODEL_TYPES and "norm1" in shared_inputs:
        alias = shared_inputs["norm1"]                      # q/k/v saved the layer input itself
    detail["linear_inputs"] = act
    detail["lora"] = lora
    needs = _qkv_needs(ctx, spec, layer, grads)
    detail["attention_core"] = _attention_core(ctx, spec, _value_pins_fused_qkv(spec, layer) or ctx.fused_qkv,
                                               needs, masked)
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
    mlp = grads["mlp_act"]                                 # the MLP's intermediates need gradients
    if by_group[Group.MLP] and mlp:
        detail["mlp"] = mlp_saves(ctx, by_group[Group.MLP], t, act)
    if by_group[Group.SHARED_EXPERTS] and mlp:
        detail["shared_experts"] = mlp_saves(ctx, by_group[Group.SHARED_EXPERTS], t, act)
        if spec.moe and spec.moe.shared_expert_gate:   # sigmoid(gate) * shared output saves both
            detail["shared_experts"] += c * t * h + c * t
    if spec.hidden_dropout > 0:
        detail["dropout"] = 2 * t * h                      # CUDA native_dropout: bool masks, 2 sites
    transient = 0
    experts = by_group[Group.EXPERTS]
    if experts and spec.moe and mlp and spec.model_type in DENSE_EXPERTS_MODEL_TYPES:
        # Llama4TextMoe: sigmoid(top-k scattered into -inf) scores every expert; each expert runs
        # on all t tokens (`hidden.repeat(E, 1) * scores`, then torch.bmm, on autocast's list):
        # E x t rows. Saved: topk's int64 indices, the fp32 sigmoid output, the repeated input and the
        # (E*t,) score column for their product, then the experts' bmm inputs and gated MLP
        rows = t * spec.moe.num_experts
        detail["router"] = 8 * t * spec.moe.top_k + 4 * t * spec.moe.num_experts
        experts = _fused_gate_up(experts)                  # one bmm: one autocast copy of the input
        e_act, e_wcopy, e_lora, e_cached = _linears_saves(ctx, spec, experts, rows, grads)
        detail["experts"] = (mlp_saves(ctx, experts, rows, act) + e_act + e_lora
                             + _norm_out_bytes(ctx, spec) * rows * h + c * rows)
        wcopy += e_wcopy
        cached += e_cached
        width = next(lin.in_features for lin in experts if lin.role is Role.DOWN)
        transient = 3 * c * rows * width
    elif experts and spec.moe and mlp:
        routed = t * spec.moe.top_k
        detail["router"] = router_saves(ctx, spec, t, input_grad=grads["norm2"],
                                        norm_out_bytes=_norm_out_bytes(ctx, spec))
        # transformers 5 runs the experts as one grouped matmul, which is not on CUDA autocast's
        # list: under autocast the experts compute in their weights' own dtype, without copies.
        ectx = ctx
        if ctx.autocast:
            w = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
            ectx = replace(ctx, autocast=False, compute_bytes=w)
        e_act, e_wcopy, e_lora, e_cached = _linears_saves(ectx, spec, experts, routed, grads)
        expert_act = CLAMPED_SWIGLU if spec.model_type == "gpt_oss" else act
        detail["experts"] = (mlp_saves(ectx, experts, routed, expert_act) + e_act + e_lora
                             + ectx.compute_bytes * routed * h)
        wcopy += e_wcopy
        cached += e_cached
        width = next(lin.in_features for lin in experts if lin.role is Role.DOWN)
        transient = 3 * ectx.compute_bytes * routed * width
    dense_width = max((lin.in_features for lin in by_group[Group.MLP] if lin.role is Role.DOWN), default=0)
    transient = max(transient, 3 * c * t * dense_width, 2 * c * t * spec.q_dim)
    transient += 2 * a * t * h                                  # incoming and outgoing hidden grads
    saved = sum(detail.values())
    return LayerActivations(saved_bytes=saved, weight_copies_bytes=wcopy,
                            checkpoint_bytes=a * t * h, transient_bytes=transient, detail=detail,
                            input_alias_bytes=alias, cached_copies_bytes=cached,
                            op_saved_bytes=a * t * h + op_sac_saves(ctx, spec, layer))


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
