"""What peft's DoRA adds to an adapted linear's memory (peft 0.21 tuners/lora/dora.py
DoraLinearLayer.forward, get_lora_weight, get_weight_norm; variants.py DoraLinearVariant.forward;
layer.py Linear.forward). Checked against the trace (tests/test_memory_dora.py).

peft casts the linear's input to the adapters' dtype first (`_cast_input_dtype`), so DoRA's `x` is in
the adapter dtype. Then, per adapted linear and forward:

    lora_weight = lora_B(lora_A(eye(in))).T              # B A at the weight's size, with a graph
    weight_norm = ||W.to(x.dtype) + scaling * lora_weight.detach()||_row   (detached, section 4.3)
    mag_norm_scale = magnitude / weight_norm              # requires grad (the magnitude vector)
    result_dora = (mag_norm_scale - 1) * base_result + mag_norm_scale * lora_B(lora_A(x)) * scaling

Saved for backward (`dora_saves`): both products keep their tensor operand, base_result and lora_B's
output (tokens x out each), and the magnitude side three out-vectors. base_result is the base layer's
output (the compute dtype) when dropout is off; with dropout active peft recomputes it as
F.linear(dropout(x), W.to(x.dtype)), which also keeps W's cast copy (`reruns_base`; torchtune never does).
Over 4-bit weights (QLoRA) W is peft's `dequantize_module_weight(base_layer)`, a fresh compute-dtype copy
each forward (bitsandbytes dequantize_4bit), so the rerun keeps that copy (cast to x's dtype where they
differ) and the weight norm holds it (cast) beside its other tensors.

Transient (`dora_forward_extra`): the weight-norm chain holds weight-sized tensors while it runs, none kept
after: eye(in) (lora_A keeps it, or autocast's 16-bit copy of it, until lora_weight dies at the end of
the forward), lora_weight, the weight cast to x's dtype, scaling x lora_weight and the sum.
"""

from __future__ import annotations

from collections.abc import Callable

from trainplan.job.frameworks import RUNS_TRANSFORMERS
from trainplan.job.training import TrainingSetup
from trainplan.memory.context import LayerContext
from trainplan.model.architecture import LinearSpec


def reruns_base(setup: TrainingSetup) -> bool:
    """DoRA with dropout active under peft (the trainers that run a transformers model) reruns each adapted
    base linear on the dropped input; torchtune's DoRALinear (torchtune/modules/peft/dora.py forward) always
    reuses its base output, as peft does with dropout off."""
    lora = setup.lora
    return bool(lora and lora.dora and lora.dropout > 0 and setup.framework in RUNS_TRANSFORMERS)


def _lora_out_bytes(ctx: LayerContext) -> int:
    """dtype bytes of lora_B's output: the compute dtype under autocast, else the adapters'."""
    return ctx.compute_bytes if ctx.autocast else ctx.adapter_bytes


def dora_saves(ctx: LayerContext, lin: LinearSpec, tokens: int, weight_bytes: int) -> tuple[int, int]:
    """(activation bytes, weight-copy bytes) DoRA keeps for one adapted linear's backward."""
    c, x = ctx.compute_bytes, ctx.adapter_bytes
    out = lin.out_features * lin.copies
    vectors = 3 * out * ctx.adapter_bytes
    if not ctx.dora_rerun:
        return tokens * out * (c + _lora_out_bytes(ctx)) + vectors, 0
    if ctx.autocast:     # F.linear under autocast: both operands cast to the compute dtype
        base, copy = c, (c * lin.weight_params if (x != c or weight_bytes != c or ctx.dora_dequant) else 0)
    else:                # W.to(x.dtype): a copy unless the weight is in that dtype already (never dequantized)
        base, copy = x, (x * lin.weight_params if (x != weight_bytes or ctx.dora_dequant) else 0)
    return tokens * out * (base + _lora_out_bytes(ctx)) + vectors, copy


def _weight_norm_bytes(ctx: LayerContext, lin: LinearSpec, weight_bytes: int) -> tuple[int, int]:
    """(bytes at the weight norm's largest moment, bytes of the weight-sized tensors still alive at the
    end of the DoRA forward: the eye lora_A keeps and lora_weight) of one adapted linear."""
    c, x = ctx.compute_bytes, ctx.adapter_bytes
    n_in, size = lin.in_features, lin.weight_params // max(1, lin.copies)
    cast_w = x * size if (weight_bytes != x or ctx.dora_dequant) else 0    # (the dequantized copy, cast)
    if ctx.autocast:
        # lora_B's output (the compute dtype) while the fp32 eye and its 16-bit copy are alive, or
        # later: the copy (kept by lora_A), lora_weight cast to x's dtype, W cast, scaled and the sum
        early = n_in * n_in * (x + c) + c * size
        kept = n_in * n_in * c + x * size
        return max(early, kept + cast_w + 2 * x * size), kept
    kept = n_in * n_in * x + x * size
    return kept + cast_w + 2 * x * size, kept


def dora_forward_extra(ctx: LayerContext, lins: list[LinearSpec], tokens: int, weight_bytes: int,
                       adapted: Callable[[LinearSpec], bool]) -> int:
    """Bytes above the layer's whole saves at the worst moment of its adapted linears' DoRA forwards:
    at the weight norm, its transient less this linear's saves not made yet (lora_B's output; with
    dropout, the recomputed base output and W's copy); at the end, the eye and lora_weight still alive
    and the three (tokens x out) products of result_dora at once, in the promoted dtype of the
    magnitude (adapter dtype) and the outputs."""
    if not ctx.dora:
        return 0
    worst = 0
    for lin in lins:
        if not adapted(lin):
            continue
        norm, kept = _weight_norm_bytes(ctx, lin, weight_bytes)
        act, copy = dora_saves(ctx, lin, tokens, weight_bytes)
        out = tokens * lin.out_features * lin.copies
        base_made = 0 if ctx.dora_rerun else ctx.compute_bytes * out      # the base output exists already
        later = act - base_made + copy - 3 * lin.out_features * lin.copies * ctx.adapter_bytes
        products = 3 * out * max(ctx.adapter_bytes, ctx.compute_bytes)
        worst = max(worst, norm - later, kept + products)
    return worst
