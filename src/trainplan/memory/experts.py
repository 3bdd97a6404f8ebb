"""What the routed experts of an MoE layer save for backward, and their backward's transient
buffers: transformers 5's grouped-mm experts (integrations/moe.py grouped_mm_experts_forward), Llama
4's dense experts, and LoRA on the fused expert weights through peft's ParamWrapper."""

from __future__ import annotations

from trainplan.frozen import field, frozen, replace
from trainplan.memory.context import LayerContext
from trainplan.memory.linear_saves import fused_gate_up, has_lora, linears_saves, norm_out_bytes
from trainplan.memory.mlp_saves import CLAMPED_SWIGLU, mlp_saves, router_saves, routing_weight_bytes
from trainplan.model.architecture import LinearSpec, Role
from trainplan.model.params import lora_rank_factor, param_wrapped
from trainplan.specs import ModelSpec

# MoE blocks that run every expert on every token (transformers' Llama 4 text MoE)
DENSE_EXPERTS_MODEL_TYPES = frozenset({"llama4", "llama4_text"})


@frozen
class ExpertsSaves:
    detail: dict[str, int] = field(default_factory=dict)   # "router", "experts"
    weight_copies_bytes: int = 0
    cached_copies_bytes: int = 0
    transient_bytes: int = 0          # largest backward buffer once the layer's first gradients exist
    first_transient_bytes: int = 0    # largest backward buffer before any of the layer's gradients


def _dense_experts(ctx: LayerContext, spec: ModelSpec, experts: list[LinearSpec], grads: dict[str, bool],
                   act: str) -> ExpertsSaves:
    """Llama4TextMoe: sigmoid(top-k scattered into -inf) scores every expert; each expert runs on all
    t tokens (`hidden.repeat(E, 1) * scores`, then torch.bmm, on autocast's list): E x t rows. Saved:
    topk's int64 indices, the fp32 sigmoid output, the repeated input and the (E*t,) score column for
    their product, then the experts' bmm inputs and gated MLP."""
    assert spec.moe is not None
    t, c, h = ctx.tokens, ctx.compute_bytes, spec.hidden_size
    rows = t * spec.moe.num_experts
    experts = fused_gate_up(experts)                       # one bmm: one autocast copy of the input
    e_act, e_wcopy, e_lora, e_cached = linears_saves(ctx, spec, experts, rows, grads)
    width = next(lin.in_features for lin in experts if lin.role is Role.DOWN)
    detail = {"router": 8 * t * spec.moe.top_k + 4 * t * spec.moe.num_experts,
              "experts": mlp_saves(ctx, experts, rows, act) + e_act + e_lora
              + norm_out_bytes(ctx, spec) * rows * h + c * rows}
    return ExpertsSaves(detail=detail, weight_copies_bytes=e_wcopy, cached_copies_bytes=e_cached,
                        transient_bytes=3 * c * rows * width)


def _param_wrapped(ctx: LayerContext, spec: ModelSpec, experts: list[LinearSpec], w: int, routed: int,
                   input_grad: bool) -> tuple[int, int]:
    """(saved, backward transient) bytes of LoRA on the fused expert weights (peft 0.21
    ParamWrapper._activate_lora with _LoraFactorsProxy): each adapted weight is folded anew,
    `baddbmm(W, lhs, rhs)` (E x in x out, in W's dtype, autocast off), and the grouped matmul keeps
    that copy for its input's gradient and its input for the copy's gradient; lhs/rhs are the
    adapters cast to W's dtype (`.to(param.dtype)`: copies when they differ), kept by baddbmm. The
    backward allocates the folded weight's gradient."""
    h = spec.hidden_size
    saved = transient = 0
    gate_up = [lin for lin in experts if lin.role in (Role.GATE, Role.UP) and has_lora(ctx, lin)]
    down = [lin for lin in experts if lin.role is Role.DOWN and has_lora(ctx, lin)]
    r = ctx.lora_rank
    for lins, needs_input in ((gate_up, input_grad), (down, True)):
        if not lins:
            continue
        weights = sum(lin.weight_params for lin in lins)
        rank = r * lora_rank_factor(spec, lins[0])
        width = lins[0].in_features
        outs = sum(lin.out_features for lin in lins)
        if needs_input:
            saved += w * weights                           # the folded weight, for the input's gradient
        if ctx.adapter_bytes != w:
            saved += w * lins[0].copies * rank * (width + outs)   # lhs, rhs in the weight's dtype
        # the input the folded weight's gradient needs: the gathered tokens (gate_up) or the gated
        # activation (down), which a frozen grouped matmul would not keep
        saved += w * routed * width
        transient = max(transient, w * weights + 2 * w * routed * max(width, h))
    return saved, transient


def experts_saves(ctx: LayerContext, spec: ModelSpec, experts: list[LinearSpec], grads: dict[str, bool],
                  act: str, router: list[LinearSpec]) -> ExpertsSaves:
    if spec.model_type in DENSE_EXPERTS_MODEL_TYPES:
        return _dense_experts(ctx, spec, experts, grads, act)
    assert spec.moe is not None
    t, h = ctx.tokens, spec.hidden_size
    routed = t * spec.moe.top_k
    wrapped_router = any(param_wrapped(spec, lin) and has_lora(ctx, lin) for lin in router)
    router_bytes = router_saves(ctx, spec, t, input_grad=grads["norm2"], norm_out_bytes=norm_out_bytes(ctx, spec),
                                wrapped=wrapped_router)
    # transformers 5 runs the experts as one grouped matmul, which is not on CUDA autocast's list:
    # under autocast the experts compute in their weights' own dtype, without copies.
    ectx = ctx
    if ctx.autocast:
        w = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
        ectx = replace(ctx, autocast=False, compute_bytes=w)
    wrapped = [lin for lin in experts if param_wrapped(spec, lin) and has_lora(ctx, lin)]
    if wrapped:   # not peft's lora.Linear: no adapter inputs (below)
        ectx = replace(ectx, lora_names=frozenset(k for k in ctx.lora_names if not k.startswith("experts/")))
    e_act, e_wcopy, e_lora, e_cached = linears_saves(ectx, spec, experts, routed, grads)
    expert_act = CLAMPED_SWIGLU if spec.model_type == "gpt_oss" else act
    saved = mlp_saves(ectx, experts, routed, expert_act) + e_act + e_lora + ectx.compute_bytes * routed * h
    width = next(lin.in_features for lin in experts if lin.role is Role.DOWN)
    transient = 3 * routed * ectx.compute_bytes * width   # the gated activation's three gradients
    if wrapped:
        wrap_saved, wrap_transient = _param_wrapped(ctx, spec, wrapped, ectx.compute_bytes, routed, grads["norm2"])
        saved += wrap_saved
        transient = max(transient, wrap_transient)
    # first in the layer's backward, before any of its weight gradients: `weighted_out[inv_perm]`
    # (the routing weights' dtype promotes it) takes index's zeros, its index_put and the contiguous
    # incoming gradient, (routed, h) each
    weighted = max(ectx.compute_bytes, routing_weight_bytes(ctx, spec))
    return ExpertsSaves(detail={"router": router_bytes, "experts": saved}, weight_copies_bytes=e_wcopy,
                        cached_copies_bytes=e_cached, transient_bytes=transient,
                        first_transient_bytes=3 * routed * weighted * h)
