"""What the MLP of a decoder layer saves besides its linears' inputs: the activation function,
the gated product, and a mixture-of-experts router with its grouped-mm experts."""

from __future__ import annotations

from trainplan.memory.context import LayerContext
from trainplan.model.architecture import LinearSpec, Role
from trainplan.specs import ModelSpec

# gpt-oss experts (GptOssExperts._apply_gate): gate = clamp(max), up = clamp(min, max) of the
# interleaved gate/up output (both clamps save their input: the whole (2I) projection output),
# sigmoid(gate * alpha) saves its output, gate * sigmoid saves the clamped gate, (up + 1) * glu saves
# both factors: 2I + 4I elements per row besides the down projection's input.
CLAMPED_SWIGLU = "gpt_oss_clamped_swiglu"
CLAMPED_SWIGLU_ELEMENTS = 6
# routers and MoE blocks with DeepSeek-V3's sigmoid routing, correction bias and shared experts
_V3_ROUTING = frozenset({"deepseek_v3", "glm4_moe", "kimi_k2"})


def _act_own_bytes(act: str, c: int, autocast: bool) -> int:
    """Bytes per intermediate element the activation function itself saves for backward.

    Fused kernels (F.silu, F.gelu, gelu tanh) save their input; ReLU saves its output, which is
    also the tensor the next linear saves (counted there, so 0 here). transformers'
    NewGELUActivation ("gelu_new", GPT-2) is a Python chain: pow saves x, tanh its output, and the
    final product both factors (0.5*x and 1+tanh); under CUDA autocast pow runs in fp32, so the
    chain after it is fp32 (activations.py in transformers; CUDA autocast fp32 op list).
    QuickGELU: sigmoid output and x. ReLUSquaredActivation ("relu2", Nemotron) is relu then torch.square:
    relu saves its output, square (pow) saves its input, the same tensor; under CUDA autocast pow runs in
    fp32, so it saves an fp32 copy of it besides.
    """
    if act in ("relu",):
        return 0
    if act == "relu2":
        return c + (4 if autocast else 0)
    if act in ("gelu_new", "gelu_fast"):
        return (4 + 4 + c + 4) if autocast else 4 * c
    if act == "quick_gelu":
        return 2 * c
    return c


def mlp_backward_bytes(act: str, c: int, autocast: bool) -> int:
    """Bytes per intermediate element alive at once while the MLP's activation runs backward: three
    16-bit buffers (the incoming gradient, the activation's gradient, its input's), or, for relu2 under
    autocast, pow's fp32 backward: the gradient cast up to fp32 and pow_backward's grad * (2 * x.pow(1)),
    three fp32 temporaries of one expression (torch/csrc/autograd/FunctionsManual.cpp pow_backward), less
    the down projection's 16-bit input, which its backward, run just before, has released. NewGELUActivation
    ("gelu_new") under autocast ends in an fp32 product (0.5 * x) * (1 + tanh(...)): its backward casts the
    incoming gradient up to fp32 and makes the fp32 gradient of each factor, one of them cast down to x's
    dtype: 4 bytes per element beyond the three 16-bit buffers."""
    if act == "relu2" and autocast:
        return 4 * 4 - c
    if act in ("gelu_new", "gelu_fast") and autocast:
        return 3 * c + 4
    return 3 * c


def mlp_saves(ctx: LayerContext, lins: list[LinearSpec], tokens: int, act: str) -> int:
    """Activation function and gated product (the linears' own inputs are counted elsewhere)."""
    c = ctx.compute_bytes
    gated = any(lin.role in (Role.GATE, Role.GATE_UP) for lin in lins)
    width = next(lin.in_features for lin in lins if lin.role is Role.DOWN)
    if act == CLAMPED_SWIGLU:
        return CLAMPED_SWIGLU_ELEMENTS * c * tokens * width
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
                 norm_out_bytes: int, wrapped: bool = False) -> int:
    """A transformers 5 top-k router and its grouped-mm experts (integrations/moe.py).

    The router saves its scores (softmax in fp32; DeepSeek-V3's sigmoid in the logits' dtype) and
    topk's int64 indices; the routing weights, gathered in expert order, are saved by the weighting
    multiply; three int64 permutations are saved by index ops (perm, perm // top_k, the inverse
    perm) and grouped_mm keeps the int32 expert offsets.
    """
    moe = spec.moe
    assert moe is not None
    e, routed, c, h = moe.num_experts, tokens * moe.top_k, ctx.compute_bytes, spec.hidden_size
    if spec.model_type == "gpt_oss":
        return _gpt_oss_router_saves(ctx, e, routed)
    v3 = spec.model_type in _V3_ROUTING
    deepseek = spec.model_type.startswith("deepseek") or v3
    logits = _logits_bytes(ctx, spec)
    scores = logits if v3 else 4
    weights = routing_weight_bytes(ctx, spec)
    saved = scores * tokens * e + 8 * routed + weights * routed + 3 * 8 * routed + 4 * e
    if spec.model_type == "mixtral" or v3:
        # in-place top-k renormalisation: the fp32 sum (sum is on CUDA autocast's fp32 list) and a
        # clone of the values it overwrites
        saved += 4 * tokens + weights * routed
    if deepseek:
        weight = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
        if not ctx.autocast:
            if (ctx.weights_trained or wrapped) and norm_out_bytes != 4:
                saved += 4 * tokens * h                    # the input's fp32 copy, for the weight's grad
            if input_grad and weight != 4:
                saved += 4 * e * h                         # the weight's fp32 copy, for the input's grad
        elif input_grad and not ctx.weights_trained:
            saved += c * e * h                             # autocast's uncached 16-bit copy of it
        if ctx.autocast and wrapped:
            saved += c * tokens * h                        # the input's 16-bit copy (via fp32), for W's grad
    elif wrapped:
        # `F.linear(hidden_states, self.weight)` on the folded weight: the input, for its gradient (an
        # autocast copy when the norm output is fp32), and the folded weight for the input's
        saved += (c if ctx.autocast else norm_out_bytes) * tokens * h
        if input_grad:
            saved += c * e * h if ctx.autocast else ctx.frozen_weight_bytes * e * h
    if wrapped and ctx.autocast and ctx.adapter_bytes != c:
        # ParamWrapper on the 2-D router weight: W + (B @ A) * scaling (lora.Linear.get_delta_weight);
        # the matmul runs under autocast and keeps its cached 16-bit copies of A and B
        saved += c * ctx.lora_rank * (e + h)
    return saved


def _logits_bytes(ctx: LayerContext, spec: ModelSpec) -> int:
    """DeepSeek's router runs F.linear on fp32 copies of input and weight (16-bit again under autocast)."""
    deepseek = spec.model_type.startswith("deepseek") or spec.model_type in _V3_ROUTING
    return 4 if deepseek and not ctx.autocast else ctx.compute_bytes


def routing_weight_bytes(ctx: LayerContext, spec: ModelSpec) -> int:
    """dtype bytes of the top-k routing weights: Qwen casts them back to the logits' dtype; Mixtral and
    DeepSeek-V2 keep fp32; the DeepSeek-V3 sigmoid routing keeps the logits' dtype."""
    if spec.model_type in _V3_ROUTING:
        return _logits_bytes(ctx, spec)
    return {"mixtral": 4, "deepseek_v2": 4}.get(spec.model_type, ctx.compute_bytes)


def _gpt_oss_router_saves(ctx: LayerContext, experts: int, routed: int) -> int:
    """GptOssTopKRouter: F.linear(x, w, b) -> topk (int64 indices saved) -> softmax over the top-k
    logits in their own dtype (explicit dtype: autocast leaves it alone; its output saved); then the
    grouped-mm experts as for the other families (routing weights gathered in expert order, three
    int64 permutations, int32 offsets) plus the int64 expert ids the per-row bias gathers keep when
    the biases train."""
    c = ctx.compute_bytes
    bias_ids = 8 * routed if ctx.weights_trained else 0
    return c * routed + 8 * routed + c * routed + 3 * 8 * routed + 4 * experts + bias_ids
