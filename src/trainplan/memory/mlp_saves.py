"""What the MLP of a decoder layer saves besides its linears' inputs: the activation function,
the gated product, and a mixture-of-experts router with its grouped-mm experts."""

from __future__ import annotations

from trainplan.memory.context import LayerContext
from trainplan.model.architecture import LinearSpec, Role
from trainplan.specs import ModelSpec


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


def mlp_saves(ctx: LayerContext, lins: list[LinearSpec], tokens: int, act: str) -> int:
    """Activation function and gated product (the linears' own inputs are counted elsewhere)."""
    c = ctx.compute_bytes
    gated = any(lin.role in (Role.GATE, Role.GATE_UP) for lin in lins)
    width = next(lin.in_features for lin in lins if lin.role is Role.DOWN)
    own = _act_own_bytes(act, c, ctx.autocast)
    if (ctx.liger or ctx.compiled) and gated:
        # fused SwiGLU (Liger) or torch.compile's min-cut partitioner (it recomputes the pointwise
        # act(gate) * up in backward): gate and up outputs only
        return 2 * c * tokens * width
    if gated:
        return (own + 2 * c) * tokens * width              # act's own saves, act output, up output
    if act == "relu" and not ctx.weights_trained:
        return c * tokens * width                          # ReLU output (no linear saves it)
    return own * tokens * width


def router_saves(ctx: LayerContext, spec: ModelSpec, tokens: int, *, input_grad: bool,
                 norm_out_bytes: int) -> int:
    """A transformers 5 top-k router and its grouped-mm experts (integrations/moe.py).

    The router saves its scores (softmax in fp32; DeepSeek-V3's sigmoid in the logits' dtype) and
    topk's int64 indices; the routing weights, gathered in expert order, are saved by the weighting
    multiply; three int64 permutations are saved by index ops (perm, perm // top_k, the inverse
    perm) and grouped_mm keeps the int32 expert offsets.
    """
    moe = spec.moe
    assert moe is not None
    e, routed, c, h = moe.num_experts, tokens * moe.top_k, ctx.compute_bytes, spec.hidden_size
    deepseek, v3 = spec.model_type.startswith("deepseek"), spec.model_type == "deepseek_v3"
    # DeepSeek's router runs F.linear on fp32 copies of input and weight (16-bit again under autocast)
    logits = 4 if deepseek and not ctx.autocast else c
    scores = logits if v3 else 4
    # routing weights: Qwen casts them back to the logits' dtype; Mixtral and DeepSeek-V2 keep fp32
    weights = {"mixtral": 4, "deepseek_v2": 4, "deepseek_v3": logits}.get(spec.model_type, c)
    saved = scores * tokens * e + 8 * routed + weights * routed + 3 * 8 * routed + 4 * e
    if spec.model_type in ("mixtral", "deepseek_v3"):
        # in-place top-k renormalisation: the fp32 sum (sum is on CUDA autocast's fp32 list) and a
        # clone of the values it overwrites
        saved += 4 * tokens + weights * routed
    if deepseek:
        weight = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
        if not ctx.autocast:
            if ctx.weights_trained and norm_out_bytes != 4:
                saved += 4 * tokens * h                    # the input's fp32 copy, for the weight's grad
            if input_grad and weight != 4:
                saved += 4 * e * h                         # the weight's fp32 copy, for the input's grad
        elif input_grad and not ctx.weights_trained:
            saved += c * e * h                             # autocast's uncached 16-bit copy of it
    return saved
