"""What the linears of one decoder layer save for backward: their inputs (shared by the linears that
read one tensor, or autocast's 16-bit copy per call), autocast's weight copies and the LoRA adapters'
inputs (activations.py composes the layer)."""

from __future__ import annotations

from trainplan.enums import Attention, NormKind
from trainplan.frozen import replace
from trainplan.memory.attention import rope_cat_layout, sdpa_math
from trainplan.memory.context import LayerContext
from trainplan.memory.dora import dora_saves
from trainplan.model.architecture import Group, LinearSpec, Role
from trainplan.model.params import lora_key, param_wrapped
from trainplan.specs import ModelSpec

# RMSNorm computing `(weight * x).to(input_dtype)` in fp32 (OLMo 2/3, gpt-oss), as Gemma's
# `(x * (1 + w)).type_as(x)`: the weight's product saves the fp32 x, the output has the input's dtype
FP32_PRODUCT_NORM_MODEL_TYPES = frozenset({"olmo2", "olmo3", "gpt_oss"})


def fused_gate_up(lins: list[LinearSpec]) -> list[LinearSpec]:
    """Experts' gate and up projections as the one gate_up_proj parameter they are in transformers 5."""
    gate = next((lin for lin in lins if lin.role is Role.GATE), None)
    up = next((lin for lin in lins if lin.role is Role.UP), None)
    if gate is None or up is None:
        return lins
    fused = replace(gate, name="gate_up_proj", role=Role.GATE_UP, out_features=gate.out_features + up.out_features)
    return [fused] + [lin for lin in lins if lin.role not in (Role.GATE, Role.UP)]


def has_lora(ctx: LayerContext, lin: LinearSpec) -> bool:
    return lin.role in ctx.lora_roles or lora_key(lin) in ctx.lora_names


# Which tensor feeds each linear: linears in one group read the same tensor.
INPUT_GROUP = {Role.Q: "norm1", Role.K: "norm1", Role.V: "norm1", Role.QKV: "norm1",
                Role.Q_A: "norm1", Role.KV_A: "norm1", Role.Q_B: "q_latent", Role.KV_B: "kv_latent",
                Role.O: "attn_out", Role.GATE: "norm2", Role.UP: "norm2", Role.GATE_UP: "norm2",
                Role.ROUTER: "norm2", Role.SHARED_GATE: "norm2", Role.DOWN: "mlp_act"}
ATTN_IN = (Role.Q, Role.K, Role.V, Role.QKV, Role.Q_A, Role.KV_A, Role.Q_B, Role.KV_B)


def norm_out_bytes(ctx: LayerContext, spec: ModelSpec) -> int:
    """dtype bytes of a norm's output, the tensor the following linears read."""
    if spec.norm_kind is NormKind.LAYER:
        return 4 if ctx.autocast else ctx.residual_bytes   # CUDA autocast: layer_norm in fp32
    if spec.model_type.startswith("gemma") or spec.model_type in FP32_PRODUCT_NORM_MODEL_TYPES:
        # Gemma `(x * (1 + w)).type_as(x)`, gpt-oss `(w * x).to(dtype)`: the input's dtype; OLMo's
        # post-norm layers: q/k/v and the MLP read the residual stream itself
        return ctx.residual_bytes
    weight = ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes
    return max(ctx.residual_bytes, weight)                 # `weight * x.to(input_dtype)` promotes


def input_bytes(ctx: LayerContext, spec: ModelSpec, group: str) -> int:
    """dtype bytes of the tensor a linear reads: a norm output, else the compute dtype."""
    return norm_out_bytes(ctx, spec) if group in ("norm1", "norm2") else ctx.compute_bytes


def linears_saves(ctx: LayerContext, spec: ModelSpec, lins: list[LinearSpec], tokens: int,
                   grads: dict[str, bool], shared_out: dict[str, int] | None = None,
                   is_masked: bool = False) -> tuple[int, int, int, int]:
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
        if param_wrapped(spec, lin) and lin.group is Group.ROUTER and has_lora(ctx, lin):
            continue                                        # ParamWrapper on the router: mlp_saves.router_saves
        group = INPUT_GROUP.get(lin.role, "other")
        needs_grad = grads[group]
        key = "norm1" if one_norm and group == "norm2" else group
        in_bytes = input_bytes(ctx, spec, group)
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
        if has_lora(ctx, lin):
            r = ctx.lora_rank
            # peft casts the input to the adapter's dtype (`_cast_input_dtype`); under autocast with
            # fp32 adapters, lora_A then casts it back to 16-bit: a fresh copy per adapted module.
            lora_cast = cast or (ctx.autocast and ctx.adapter_bytes != in_bytes)
            # without autocast, fp32 adapters over a 16-bit input: the fp32 cast is what dropout and
            # lora_A see, and lora_A's output (lora_B's input) is fp32 too
            chain = ctx.adapter_bytes if ctx.fp32_adapter_chain and ctx.adapter_bytes != in_bytes else 0
            if ctx.lora_dropout > 0:
                if needs_grad:
                    lora += width                           # bool dropout mask (for the input's gradient)
                lora += (c if lora_cast else chain or in_bytes) * width  # lora_A input (dropout output / cast)
            elif lora_cast:
                lora += c * width
            elif chain:
                lora += chain * width                       # the fp32 copy lora_A keeps
            else:
                shared[key] = in_bytes * width
            lora += (chain or c) * tokens * r * lin.copies  # lora_B input
            if ctx.dora:
                dora_act, dora_copy = dora_saves(ctx, lin, tokens, weight_bytes)
                lora += dora_act + dora_copy     # W's cast copy is an op's saved tensor, not autocast's cache
            if ctx.autocast and ctx.adapter_bytes != c:
                # lora_B's copy is saved (lora_A's output needs grad); lora_A's only when its input
                # needs grad, though autocast caches it (a leaf requiring grad) through the forward.
                wcopy += c * r * lin.out_features * lin.copies
                a_copy = c * r * lin.in_features * lin.copies
                if needs_grad:
                    wcopy += a_copy
                else:
                    cached += a_copy
    if ctx.attention is not Attention.EAGER and not rope_cat_layout(spec) and not sdpa_math(ctx, spec, is_masked):
        # SDPA's flash/efficient kernels (and flash-attn 2) allocate the output in the query's
        # (b, s, heads, d) layout, so `transpose(1, 2).contiguous()` is a no-op: o_proj reads the
        # very tensor the kernel saved (counted with the attention core).
        shared.pop("attn_out", None)
    if shared_out is not None:
        shared_out.update(shared)
    return act + sum(shared.values()), wcopy, lora, cached
