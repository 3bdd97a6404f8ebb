"""What autograd saves for backward in one decoder layer, tensor by tensor, as the Hugging Face
modeling code runs it on CUDA.

Conventions (t = micro-batch tokens b*s; a = residual-stream bytes; c = compute bytes):
- nn.Linear saves its input when its weight needs a gradient, and its weight when its input
  needs a gradient (aten mm/addmm derivatives, tools/autograd/derivatives.yaml). Under autocast,
  every call casts its fp32 input to 16-bit anew, so q/k/v (and gate/up) each save their own copy.
- LlamaRMSNorm upcasts to fp32 (`hidden_states.to(torch.float32)`), pow saves the fp32 input,
  rsqrt saves a (t,) vector, and `weight * x` saves x only when the weight is trained.
- LayerNorm saves input, mean and rstd (t floats each); CUDA autocast runs layer_norm in fp32.
- SDPA flash/memory-efficient kernels save q, k, v, the output and a (b, heads, s) fp32 logsumexp;
  eager attention keeps the fp32 softmax output and its 16-bit copy: s^2 per head.
- SiLU/GELU save their input; the gated product saves both factors.
- CUDA dropout (native_dropout) saves a 1-byte bool mask.
Per-layer transient buffers in backward (gradients of the largest intermediates) are counted
separately so the peak can be placed where it really falls.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from trainplan.architecture import Group, LayerSpec, LinearSpec, Role
from trainplan.enums import Attention, NormKind
from trainplan.specs import ModelSpec

LSE_BYTES = 4


@dataclass(frozen=True, kw_only=True)
class LayerContext:
    """What the inventory needs to know about one layer's training mode."""

    tokens: int                       # b * s
    batch: int
    seq: int
    residual_bytes: int
    compute_bytes: int
    autocast: bool
    attention: Attention
    weights_trained: bool             # full fine-tune or a layer trained by freeze tuning
    lora_roles: frozenset[Role] = frozenset()
    lora_names: frozenset[str] = frozenset()
    lora_rank: int = 0
    lora_dropout: float = 0.0
    input_requires_grad: bool = True  # False for layers below every trainable parameter
    trained_weight_bytes: int = 2
    frozen_weight_bytes: int = 2
    adapter_bytes: int = 2
    liger: bool = False


@dataclass(frozen=True, kw_only=True)
class LayerActivations:
    saved_bytes: int          # kept from forward to backward
    weight_copies_bytes: int  # autocast 16-bit weight copies saved for backward
    checkpoint_bytes: int     # what a checkpointed layer keeps (its input)
    transient_bytes: int      # largest extra allocation while this layer runs backward
    detail: dict[str, int]
    input_alias_bytes: int = 0  # saved tensors that are the layer's input itself (not copies)


def _has_lora(ctx: LayerContext, lin: LinearSpec) -> bool:
    return lin.role in ctx.lora_roles or lin.name in ctx.lora_names


# Which tensor feeds each linear: linears in one group read the same tensor.
_INPUT_GROUP = {Role.Q: "norm1", Role.K: "norm1", Role.V: "norm1", Role.QKV: "norm1",
                Role.Q_A: "norm1", Role.KV_A: "norm1", Role.Q_B: "q_latent", Role.KV_B: "kv_latent",
                Role.O: "attn_out", Role.GATE: "norm2", Role.UP: "norm2", Role.GATE_UP: "norm2",
                Role.ROUTER: "norm2", Role.SHARED_GATE: "norm2", Role.DOWN: "mlp_act"}


def _input_bytes(ctx: LayerContext, group: str) -> int:
    """dtype bytes of the tensor a linear reads: norm outputs follow the residual dtype."""
    return ctx.residual_bytes if group in ("norm1", "norm2") else ctx.compute_bytes


def _linears_saves(ctx: LayerContext, spec: ModelSpec, lins: list[LinearSpec], tokens: int) -> tuple[int, int, int]:
    """(activation bytes, autocast weight-copy bytes, lora bytes) saved by these linears.

    Without a cast, linears that read the same tensor share one saved copy; under autocast a
    16-bit copy is made (and saved) per call when the input is fp32.
    """
    c = ctx.compute_bytes
    shared: dict[str, int] = {}
    act = wcopy = lora = 0
    for lin in lins:
        group = _INPUT_GROUP.get(lin.role, "other")
        in_bytes = _input_bytes(ctx, group)
        cast = ctx.autocast and in_bytes != c
        width = tokens * lin.in_features
        if ctx.weights_trained:
            if cast:
                act += c * width
            else:
                shared[group] = in_bytes * width
        weight_bytes = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
        if ctx.autocast and weight_bytes != c and (ctx.input_requires_grad or ctx.weights_trained):
            wcopy += c * lin.weight_params
        if _has_lora(ctx, lin):
            r = ctx.lora_rank
            # peft casts the input to the adapter's dtype (`_cast_input_dtype`); under autocast with
            # fp32 adapters, lora_A then casts it back to 16-bit: a fresh copy per adapted module.
            lora_cast = cast or (ctx.autocast and ctx.adapter_bytes != in_bytes)
            if ctx.lora_dropout > 0:
                lora += width                                   # bool dropout mask
                lora += (c if lora_cast else in_bytes) * width  # lora_A input (dropout output / cast)
            elif lora_cast:
                lora += c * width
            else:
                shared[group] = in_bytes * width
            lora += c * tokens * r * lin.copies                 # lora_B input
            if ctx.autocast and ctx.adapter_bytes != c:
                wcopy += c * r * (lin.in_features + lin.out_features) * lin.copies
    if ctx.attention is not Attention.EAGER and not _rope_cat_layout(spec):
        # SDPA's flash/efficient kernels (and flash-attn 2) allocate the output in the query's
        # (b, s, heads, d) layout, so `transpose(1, 2).contiguous()` is a no-op: o_proj reads the
        # very tensor the kernel saved (counted with the attention core).
        shared.pop("attn_out", None)
    return act + sum(shared.values()), wcopy, lora


def _rope_cat_layout(spec: ModelSpec) -> bool:
    """GPT-NeoX's partial rotary concatenates (rotated, pass-through) halves: q/k become contiguous
    (b, heads, s, d) tensors, the kernel output follows that layout, and o_proj's input is a copy."""
    return spec.naming == "neox"


def _norm_saves(ctx: LayerContext, spec: ModelSpec, width: int) -> int:
    t, a = ctx.tokens, ctx.residual_bytes
    if not (ctx.input_requires_grad or ctx.weights_trained):
        return 0
    if spec.norm_kind is NormKind.RMS:
        saved = 4 * t * width + 4 * t                      # fp32 input (or upcast copy) + rsqrt
        if ctx.weights_trained:
            # normalized x saved by weight * x; Gemma applies (1 + w) in fp32 before casting back
            saved += (4 if spec.model_type.startswith("gemma") else a) * t * width
        return saved
    in_bytes = 4 if ctx.autocast else a                    # CUDA autocast: layer_norm in fp32
    return in_bytes * t * width + 2 * 4 * t                # input + mean + rstd


def _attention_core(ctx: LayerContext, spec: ModelSpec) -> int:
    t, c, b, s = ctx.tokens, ctx.compute_bytes, ctx.batch, ctx.seq
    h_q = spec.num_heads
    if spec.mla:
        q_dim = h_q * spec.mla.qk_head_dim
        k_dim = q_dim
        v_dim = h_q * (spec.mla.qk_nope_head_dim + spec.mla.v_head_dim)   # value: a view of kv_b's output
        out_dim = h_q * spec.mla.v_head_dim
    else:
        q_dim, k_dim, v_dim, out_dim = spec.q_dim, spec.kv_dim, spec.kv_dim, spec.q_dim
    if ctx.attention is Attention.EAGER:
        # eager_attention_forward: q @ k^T (saves q and the repeated k), softmax, dropout, @ v.
        # Most families run softmax(dtype=float32).to(query.dtype); GPT-2 keeps the value dtype,
        # CUDA autocast puts softmax on its fp32 list.
        rep = spec.num_heads // spec.num_kv_heads if not spec.mla else 1
        saved = c * t * (q_dim + k_dim * rep + v_dim * rep)
        soft = 4 if (ctx.autocast or spec.naming != "gpt2") else c
        probs = soft
        if spec.attn_logit_softcapping:
            probs += c                                      # tanh output of the soft-capped scores
        if spec.attention_dropout > 0:
            probs += 1 + c                                  # bool mask + dropped probabilities
        elif soft != c:
            probs += c                                      # 16-bit copy saved by probs @ v
        return saved + probs * b * h_q * s * s
    saved = c * t * (q_dim + k_dim + v_dim + out_dim)       # q, k, v, out saved by the kernel
    saved += LSE_BYTES * b * h_q * s                        # logsumexp
    return saved


def _act_own_bytes(act: str, c: int, autocast: bool) -> int:
    """Bytes per intermediate element the activation function itself saves for backward.

    Fused kernels (F.silu, F.gelu, gelu tanh) save their input; ReLU saves its output, which is
    also the tensor the next linear saves (counted there, so 0 here). transformers'
    NewGELUActivation ("gelu_new", GPT-2) is a Python chain: pow saves x, tanh its output, and the
    final product both factors (0.5*x and 1+tanh); under CUDA autocast pow runs in fp32, so the
    chain after it is fp32 (activations.py in transformers; CUDA autocast fp32 op list).
    QuickGELU: sigmoid output and x.
    """
    if act in ("relu",):
        return 0
    if act in ("gelu_new", "gelu_fast"):
        return (4 + 4 + c + 4) if autocast else 4 * c
    if act == "quick_gelu":
        return 2 * c
    return c


def _mlp_saves(ctx: LayerContext, lins: list[LinearSpec], tokens: int, act: str) -> int:
    """Activation function and gated product (the linears' own inputs are counted elsewhere)."""
    c = ctx.compute_bytes
    gated = any(lin.role in (Role.GATE, Role.GATE_UP) for lin in lins)
    width = next(lin.in_features for lin in lins if lin.role is Role.DOWN)
    own = _act_own_bytes(act, c, ctx.autocast)
    if ctx.liger and gated:
        return 2 * c * tokens * width                      # fused SwiGLU keeps gate and up only
    if gated:
        return (own + 2 * c) * tokens * width              # act's own saves, act output, up output
    if act == "relu" and not ctx.weights_trained:
        return c * tokens * width                          # ReLU output (no linear saves it)
    return own * tokens * width


def layer_activations(spec: ModelSpec, layer: LayerSpec, ctx: LayerContext) -> LayerActivations:
    t, a, c = ctx.tokens, ctx.residual_bytes, ctx.compute_bytes
    h = spec.hidden_size
    has_lora = bool(ctx.lora_roles or ctx.lora_names)
    if not ctx.input_requires_grad and not ctx.weights_trained and not has_lora:
        return LayerActivations(saved_bytes=0, weight_copies_bytes=0, checkpoint_bytes=0,
                                transient_bytes=0, detail={})
    detail: dict[str, int] = {}
    norms = 2 if spec.norms_per_layer >= 2 else 1
    detail["norms"] = _norm_saves(ctx, spec, h) * norms
    if spec.norms_per_layer >= 4:   # Gemma-2/3 post norms
        detail["norms"] += 2 * _norm_saves(ctx, spec, h)
    by_group = {g: [lin for lin in layer.linears if lin.group is g] for g in Group}
    dense = by_group[Group.ATTENTION] + by_group[Group.MLP] + by_group[Group.SHARED_EXPERTS] + by_group[Group.ROUTER]
    act, wcopy, lora = _linears_saves(ctx, spec, dense, t)
    detail["linear_inputs"] = act
    detail["lora"] = lora
    detail["attention_core"] = _attention_core(ctx, spec)
    if spec.mla:
        m = spec.mla
        detail["attention_core"] += c * t * ((m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim)
        detail["attention_core"] += 4 * t * ((m.q_lora_rank or 0) + m.kv_lora_rank)
    if spec.qk_norm:   # q_norm/k_norm (RMSNorm over head_dim): fp32 input, rsqrt, normalized x
        qk = spec.q_dim + spec.kv_dim
        detail["attention_core"] += (4 + (c if ctx.weights_trained else 0)) * t * qk
        detail["attention_core"] += 4 * t * (spec.num_heads + spec.num_kv_heads)
    act = spec.hidden_act
    if by_group[Group.MLP]:
        detail["mlp"] = _mlp_saves(ctx, by_group[Group.MLP], t, act)
    if by_group[Group.SHARED_EXPERTS]:
        detail["shared_experts"] = _mlp_saves(ctx, by_group[Group.SHARED_EXPERTS], t, act)
        if spec.moe and spec.moe.shared_expert_gate:   # sigmoid(gate) * shared output saves both
            detail["shared_experts"] += c * t * h + c * t
    if spec.hidden_dropout > 0:
        detail["dropout"] = 2 * t * h                      # CUDA native_dropout: bool masks, 2 sites
    transient = 0
    experts = by_group[Group.EXPERTS]
    if experts and spec.moe:
        routed = t * spec.moe.top_k
        detail["router"] = 4 * t * spec.moe.num_experts * 2 + 8 * routed * 2
        # transformers 5 runs the experts as one grouped matmul, which is not on CUDA autocast's
        # list: under autocast the experts compute in their weights' own dtype, without copies.
        ectx = ctx
        if ctx.autocast:
            w = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
            ectx = replace(ctx, autocast=False, compute_bytes=w)
        e_act, e_wcopy, e_lora = _linears_saves(ectx, spec, experts, routed)
        detail["experts"] = (_mlp_saves(ectx, experts, routed, act) + e_act + e_lora
                             + ectx.compute_bytes * routed * h)
        wcopy += e_wcopy
        width = next(lin.in_features for lin in experts if lin.role is Role.DOWN)
        transient = 3 * ectx.compute_bytes * routed * width
    dense_width = max((lin.in_features for lin in by_group[Group.MLP] if lin.role is Role.DOWN), default=0)
    transient = max(transient, 3 * c * t * dense_width, 2 * c * t * spec.q_dim)
    transient += 2 * a * t * h                                  # incoming and outgoing hidden grads
    saved = sum(detail.values())
    # The first norm saves the layer input itself when no dtype cast is needed (RMSNorm on an
    # fp32 stream; LayerNorm without an autocast upcast): a checkpoint input aliases it.
    rms_alias = spec.norm_kind is NormKind.RMS and a == 4
    ln_alias = spec.norm_kind is NormKind.LAYER and not (ctx.autocast and a != 4)
    alias = a * t * h if (rms_alias or ln_alias) and detail["norms"] else 0
    return LayerActivations(saved_bytes=saved, weight_copies_bytes=wcopy,
                            checkpoint_bytes=a * t * h, transient_bytes=transient, detail=detail,
                            input_alias_bytes=alias)
