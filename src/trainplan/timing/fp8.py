"""FP8 training recipes: which matmuls run in FP8, and what quantising their operands costs.

An FP8 step differs from a bf16 step in three ways (1-3), and torchao's row-wise recipes in two more (4-5),
each taken from the frameworks' own definitions:

1. Which GEMMs run in FP8. Transformer Engine runs the three GEMMs of every linear layer in FP8
   (fprop, dgrad, wgrad: "the 12 GEMMs per transformer layer (4 Fprop + 4 Dgrad + 4 Wgrad)",
   TransformerEngine docs/features/low_precision_training/speedups.rst); attention (QK^T, softmax,
   AV) stays 16-bit unless asked (Megatron `--fp8-dot-product-attention`, off by default), and so does
   the LM head: Megatron-Core builds it as `tensor_parallel.ColumnParallelLinear`, not a TE module
   (megatron/core/models/gpt/gpt_model.py GPTModel.__init__), torchtitan filters it out
   (`filter_fqns=["lm_head"]`, torchtitan/models/llama3/config_registry.py) and llm-foundry ties it to
   the embedding. "The default low-precision LLM training recipe applies FP8 computation exclusively to
   the linear layers within the Transformer block" (Megatron-Bridge docs/performance-guide.md, Low
   Precision Training). torchao's `rowwise_with_gw_hp` keeps the weight-gradient GEMM in bf16
   (torchtitan/components/quantization/float8.py Float8LinearConverter.Config.recipe_name). The
   router of an MoE layer is a plain torch linear and stays 16-bit. Everything not in FP8 runs at the
   bf16 rate (trainplan.timing.efficiency at dtype bf16).
2. The FP8 rate: the GPU's dense FP8 peak (catalog; H100 1979 = 2 x bf16, B200 4500 = 2 x bf16; MXFP8
   runs on the same Blackwell tensor cores at that peak) x its FP8 MAMF fraction
   (trainplan.timing.efficiency.MAMF_FRACTION).
3. Quantisation is memory traffic, per tensor that enters an FP8 GEMM: the activation input of every
   FP8 linear (once per forward, again when recomputed), the gradient of its output (once per
   backward) and its weight. Bytes per element quantised = 2 x bf16 reads + fp8 copies written x
   (1 + scale bytes per element):
   - reads: current/tensorwise scaling reads the tensor twice, "First read: compute amax ... Second
     read: apply the scaling factor and cast to FP8"; delayed scaling once, from the amax history
     (TransformerEngine docs .../fp8_current_scaling.rst "Performance analysis",
     .../fp8_delayed_scaling.rst); block recipes (MXFP8 1x32, blockwise 1x128) find each block's amax
     inside the cast kernel, one read (transformer_engine/common/util/cast_kernels.cuh
     cast_mxfp8_2D_kernel, ROWWISE_SCALING and COLWISE_SCALING in one pass). torchao rowwise scales
     along a different axis for each use, so each of its two uses is an amax pass and a cast.
   - copies: every tensor is used both rowwise and columnwise (fprop/dgrad/wgrad, TE
     .../performance_considerations.rst Table 2). On Hopper an FP8 columnwise use needs a physically
     transposed copy (two copies written); on Blackwell one tensorwise copy serves both; MXFP8 and
     blockwise copies differ by scale orientation and are always two (TE .../mxfp8.rst "Handling
     transposes").
   - scales: MXFP8 one E8M0 byte per 32 elements (TE .../mxfp8.rst), blockwise one fp32 per 128
     (TE .../fp8_blockwise_scaling.rst, 1x128 activations); per-tensor and per-row scales are
     negligible.
   A frozen weight (LoRA's base model) has no weight gradient, and Transformer Engine then quantises
   the linear's input and its output gradient for their one use only: `backward_needs_input =
   is_grad_enabled and weight.requires_grad`, `input_quantizer.set_usage(rowwise=True,
   columnwise=backward_needs_input)` (transformer_engine/pytorch/module/linear.py and
   layernorm_linear.py, _Linear / _LayerNormLinear.forward); the output gradient's columnwise copy
   feeds only the weight-gradient GEMM. One copy each, not two; the weight keeps both (fprop, dgrad).
   Weights are quantised per micro-batch unless the framework caches the FP8 weights across
   micro-batches: Megatron-Core passes `is_first_microbatch` to TE, which casts on the first
   micro-batch and reuses the copy (megatron/core/extensions/transformer_engine.py TELinear.forward).

4. torchao's row-wise recipes under tensor parallelism. torchtitan gives float8 all-gathers to TP only for
   tensorwise scaling: "For rowwise recipes, we use regular TP and all-gather happens in high precision"
   (torchtitan parallelize.py, `enable_float8_tensorwise_tp = enable_float8_linear and not
   float8_is_rowwise`). So under sequence-parallel TP every rank quantises the whole gathered tensor, tp
   times the tokens it owns: the inputs of the column-parallel linears (q/k/v, gate/up: the forward
   all-gather) and the output gradients of the row-parallel ones (o, down: the backward all-gather of the
   reduce-scatter's gradient). Tensorwise casts its shard before the all-gather (torchao
   float8_tensor_parallel.py Float8ColwiseParallel) and Transformer Engine gathers FP8 too.
5. torchao's `rowwise` recipe runs the backward GEMMs (input and weight gradients) without fast
   accumulation (config.py Float8LinearConfig: `gemm_config_grad_input` / `gemm_config_grad_weight`
   default `use_fast_accum=False`), and there "The rowwise CUTLASS-based kernel is so slow without
   fast-accum that we'd rather use the tensorwise cuBLAS-based kernel and do the scaling manually
   afterwards" (float8_ops.py addmm_float8_unwrapped: `output *= post_inverse_scale`): one more pass
   over each backward GEMM's output, read and written in bf16 (4 bytes an element). The input-gradient
   output of a column-parallel linear is full width on every TP rank (summed by the reduce-scatter after
   it), a row-parallel one's is 1/tp; the weight gradients are each rank's shard. The forward GEMM runs
   the CUTLASS row-wise kernel with fast accumulation, "most shapes within 90-100% of tensor-wise
   efficiency, but there's a long tail going down to 50%" (pytorch/pytorch#147971): not modelled.

Cross-check (not fitted): TE's GEMM benchmark for a 5B model (hidden 4096, intermediate 16384,
M = 31 x 512 tokens) on H200 reports pre-quantised FP8 at 1.92x bf16 and, with quantisation, delayed
1.69x and current 1.57x (speedups.rst, docs/examples/gemm_profiling/gemm_profiling.rst): quantisation
adds 14% and 22% to the FP8 GEMM time. The byte count above at 80% of 4.8 TB/s and the FP8 MAMF gives
8% (delayed, 4 bytes per element) and 12% (current, 6 bytes), weights cast every call
(tests/test_timing_fp8.py derives it): a lower bound; the cast kernels run below the streaming
bandwidth and their launches and amax reductions are not counted.

Not modelled: the slower GEMM kernels of block-scaled recipes (MXFP8/blockwise apply scales inside the
GEMM; Megatron-Bridge reports FP8-MX 3.6% below FP8-CS for Llama-3 8B on B200, 29521 vs 30624
tokens/s/GPU, docs/performance-summary-archive.md 25.11), FP8 attention, and FP8 parameter all-gather.
"""

from __future__ import annotations

import re

from trainplan.enums import Fp8Recipe, Framework, GradCkpt, Method, Precision
from trainplan.frozen import frozen
from trainplan.model.architecture import Group, Role, structure
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.efficiency import matmul_efficiency, memory_bw


@frozen
class RecipeTraits:
    """How one recipe quantises a tensor (see the module docstring, item 3, for the sources)."""

    reads: int                   # bf16 reads of the source tensor per quantisation (both uses)
    copies_hopper: int           # fp8 copies written on Hopper/Ada (rowwise + transposed)
    copies_blackwell: int        # fp8 copies written on Blackwell (shared layout for tensorwise)
    scale_bytes_per_element: float
    wgrad_fp8: bool = True
    blackwell_only: bool = False
    gathers_high_precision: bool = False   # TP all-gathers in bf16: each rank quantises the gathered tensor (item 4)
    rescaled_backward: bool = False        # backward GEMMs rescaled by a separate pass over their output (item 5)


TRAITS: dict[Fp8Recipe, RecipeTraits] = {
    Fp8Recipe.TE_DELAYED: RecipeTraits(reads=1, copies_hopper=2, copies_blackwell=1, scale_bytes_per_element=0.0),
    Fp8Recipe.TE_CURRENT: RecipeTraits(reads=2, copies_hopper=2, copies_blackwell=1, scale_bytes_per_element=0.0),
    Fp8Recipe.TE_BLOCKWISE: RecipeTraits(reads=1, copies_hopper=2, copies_blackwell=2,
                                         scale_bytes_per_element=4 / 128),
    Fp8Recipe.TE_MXFP8: RecipeTraits(reads=1, copies_hopper=2, copies_blackwell=2, scale_bytes_per_element=1 / 32,
                                     blackwell_only=True),
    Fp8Recipe.TORCHAO_TENSORWISE: RecipeTraits(reads=2, copies_hopper=2, copies_blackwell=2,
                                               scale_bytes_per_element=0.0),
    Fp8Recipe.TORCHAO_ROWWISE: RecipeTraits(reads=4, copies_hopper=2, copies_blackwell=2, scale_bytes_per_element=0.0,
                                            gathers_high_precision=True, rescaled_backward=True),
    Fp8Recipe.TORCHAO_ROWWISE_GW_HP: RecipeTraits(reads=2, copies_hopper=1, copies_blackwell=1,
                                                  scale_bytes_per_element=0.0, wgrad_fp8=False,
                                                  gathers_high_precision=True),
}

BF16_BYTES = 2
RESCALE_BYTES = 2 * BF16_BYTES    # `output *= post_inverse_scale`: read and write the bf16 GEMM output


# trainplan's Transformer Engine recipes -> Megatron's --fp8-recipe (megatron/training/arguments.py; ms-swift
# passes its fp8_recipe through); torchao's recipes have no Megatron form
MEGATRON_RECIPE_NAMES: dict[Fp8Recipe, str] = {Fp8Recipe.TE_DELAYED: "delayed", Fp8Recipe.TE_CURRENT: "tensorwise",
                                               Fp8Recipe.TE_BLOCKWISE: "blockwise", Fp8Recipe.TE_MXFP8: "mxfp8"}


def megatron_recipe(name: str) -> Fp8Recipe | None:
    """The recipe a Megatron --fp8-recipe / fp8_recipe value names (MEGATRON_RECIPE_NAMES), None when none."""
    return next((recipe for recipe, megatron in MEGATRON_RECIPE_NAMES.items() if megatron == name.lower()), None)


def default_recipe(framework: Framework) -> Fp8Recipe:
    """The recipe a framework uses when FP8 is asked for without naming one: torchtitan's
    Float8LinearConverter, with `recipe_name` left at its default None, builds torchao's
    `Float8LinearConfig()`, dynamic tensorwise scaling ("Float8 tensorwise scaled training active",
    torchtitan v0.2.2 components/quantization/float8.py; the only scaling torchtitan had before recipe
    names arrived, 069bae2, 2025-02-27); Megatron's `--fp8-recipe` defaults to delayed
    (megatron/training/arguments.py), as does TE's `fp8_autocast` without a recipe (DelayedScaling),
    which llm-foundry/Composer and accelerate use."""
    return Fp8Recipe.TORCHAO_TENSORWISE if framework is Framework.TORCHTITAN else Fp8Recipe.TE_DELAYED


# Words a run description uses for each recipe, first match in the text wins (order of mention).
_WORDS: tuple[tuple[str, str], ...] = (
    (r"mxfp8|fp8[-_ ]mx\b|microscal", "mxfp8"),
    (r"block[-_ ]?wise|block scaling|blockscal", "blockwise"),
    (r"current[-_ ]scaling|fp8[-_ ]cs\b|tensor[-_ ]?wise", "tensorwise"),
    (r"delayed", "delayed"),
    (r"row[-_ ]?wise", "rowwise"),
)


_FP8 = re.compile(r"fp8|float8|e4m3")
_NO_FP8 = re.compile(r"\b(?:no|without|not|disabled?)\s+(?:fp8|float8)")


def fp8_in_text(text: str) -> bool:
    """Whether a free-text precision description says the matmuls ran in FP8: "FP8-CS GEMMs",
    "Float8 (torchao)", "MXFP8", "fp8 (TransformerEngine)", not "no FP8"."""
    low = text.lower()
    return bool(_FP8.search(low)) and not _NO_FP8.search(low)


def recipe_from_text(text: str, framework: Framework) -> Fp8Recipe | None:
    """The FP8 recipe a free-text precision description names (None: none named). "tensorwise" and
    "rowwise" are torchao's names under torchtitan and torchao; elsewhere tensorwise is TE current scaling."""
    text = text.lower()
    hits = [(m.start(), kind) for pattern, kind in _WORDS if (m := re.search(pattern, text))]
    if not hits:
        return None
    kind = min(hits)[1]
    torchao = framework is Framework.TORCHTITAN or "torchao" in text
    if kind == "rowwise":
        return Fp8Recipe.TORCHAO_ROWWISE_GW_HP if "gw_hp" in text or "gw-hp" in text else Fp8Recipe.TORCHAO_ROWWISE
    if kind == "tensorwise":
        return Fp8Recipe.TORCHAO_TENSORWISE if torchao else Fp8Recipe.TE_CURRENT
    return {"mxfp8": Fp8Recipe.TE_MXFP8, "blockwise": Fp8Recipe.TE_BLOCKWISE, "delayed": Fp8Recipe.TE_DELAYED}[kind]


def bytes_per_element(traits: RecipeTraits, gpu: GpuSpec, *, one_use: bool = False) -> float:
    """HBM bytes moved to quantise one bf16 element: reads x 2 + copies x (1 + scale bytes). `one_use`: the
    tensor feeds one GEMM only (an input or output gradient of a frozen Transformer Engine linear): one copy."""
    copies = traits.copies_blackwell if gpu.generation == "blackwell" else traits.copies_hopper
    if one_use:
        copies = min(copies, 1)
    return traits.reads * BF16_BYTES + copies * (1.0 + traits.scale_bytes_per_element)


TE_RECIPES = frozenset({Fp8Recipe.TE_DELAYED, Fp8Recipe.TE_CURRENT, Fp8Recipe.TE_BLOCKWISE, Fp8Recipe.TE_MXFP8})


_COLUMN_PARALLEL = {Role.Q, Role.K, Role.V, Role.QKV, Role.GATE, Role.UP, Role.GATE_UP, Role.Q_B, Role.KV_B}
_ROW_PARALLEL = {Role.O, Role.DOWN}
_SHARED_INPUT = {Role.Q: "attn", Role.K: "attn", Role.V: "attn", Role.QKV: "attn", Role.Q_A: "attn",
                 Role.KV_A: "attn", Role.GATE: "mlp", Role.UP: "mlp", Role.GATE_UP: "mlp"}


@frozen
class QuantElements:
    """Elements quantised per token (whole model) and the FP8 weights, per use."""

    inputs_per_token: float      # activation inputs of FP8 linears (a shared input counted once)
    grads_per_token: float       # gradients of their outputs
    weights: int                 # weight elements of FP8 linears (routed experts: all of them)
    column_inputs_per_token: float = 0.0   # of inputs: those of tensor-parallel column linears (gathered)
    row_grads_per_token: float = 0.0       # of grads: those of row-parallel linears' outputs (gathered)
    column_dgrad_per_token: float = 0.0    # input-gradient outputs of column linears (full width per rank)
    row_dgrad_per_token: float = 0.0       # input-gradient outputs of row linears (1/tp per rank)


def quant_elements(spec: ModelSpec) -> QuantElements:
    """Count over the decoder layers: q/k/v (and gate/up) read one input, quantised once (TE's fused
    LayerNormLinear / linear_qkv, linear_fc1); routed experts see top_k copies of each token."""
    st = structure(spec)
    top_k = spec.moe.top_k if spec.moe else 1
    inputs = grads = col_in = row_grads = col_dgrad = row_dgrad = 0.0
    weights = 0
    for kind, count in st.layers:
        seen: set[tuple[str, str]] = set()
        for lin in kind.linears:
            if lin.group is Group.ROUTER or lin.role in (Role.ROUTER, Role.SHARED_GATE):
                continue
            per_token = top_k if lin.group is Group.EXPERTS else lin.copies
            dense = lin.group is not Group.EXPERTS
            key = (lin.group.value, _SHARED_INPUT.get(lin.role, lin.name))
            if key not in seen:
                seen.add(key)
                inputs += count * per_token * lin.in_features
                col_in += count * per_token * lin.in_features if dense and lin.role in _COLUMN_PARALLEL else 0
            grads += count * per_token * lin.out_features
            weights += count * lin.weight_params
            if dense and lin.role in _COLUMN_PARALLEL:
                col_dgrad += count * per_token * lin.in_features
            elif dense and lin.role in _ROW_PARALLEL:
                row_grads += count * per_token * lin.out_features
                row_dgrad += count * per_token * lin.in_features
    return QuantElements(inputs_per_token=inputs, grads_per_token=grads, weights=weights,
                         column_inputs_per_token=col_in, row_grads_per_token=row_grads,
                         column_dgrad_per_token=col_dgrad, row_dgrad_per_token=row_dgrad)


def fp8_gemm_flops_per_token(ft, traits: RecipeTraits) -> float:
    """The hardware FLOPs per token that run in FP8: decoder-layer linears forward, input gradient,
    weight gradient (if the recipe runs it in FP8) and their recomputation; not the LM head,
    attention, adapters or a reference model."""
    recompute_linear = ft.recompute - ft.recompute_attention
    return (ft.linear_fwd + ft.linear_bwd_input + (ft.linear_bwd_weight if traits.wgrad_fp8 else 0.0)
            + recompute_linear)


@frozen
class Fp8Cost:
    """FP8 terms of one micro-batch on one GPU, beside the all-FP8 linear time the step starts from."""

    recipe: Fp8Recipe
    bf16_gemm_s: float           # extra time of the GEMMs left in bf16 (LM head, adapters, bf16 wgrad)
    quant_s: float               # activation and gradient quantisation traffic
    weight_quant_s: float        # weight quantisation (per micro-batch, or per step / micro-batches)
    rescale_s: float = 0.0       # torchao rowwise: the backward GEMMs' rescaling pass (module docstring, item 5)

    @property
    def delta_s(self) -> float:
        return self.bf16_gemm_s + self.quant_s + self.weight_quant_s + self.rescale_s


def fp8_cost(recipe: Fp8Recipe, gpu: GpuSpec, spec: ModelSpec, ft, *, tokens: float, fp8_flops_per_s: float,
             bf16_flops_per_s: float, bw_bytes_per_s: float, grad_ckpt: GradCkpt, model_parallel: int,
             weight_casts_per_micro_batch: float, tp: int = 1, frozen_weights: bool = False) -> Fp8Cost:
    """Seconds FP8 adds to a micro-batch whose linears were all timed at `fp8_flops_per_s`.

    tokens: padded tokens of the micro-batch on this GPU, already divided by model parallel (as the
    FLOPs are); model_parallel: tp x pp, dividing the weights each GPU casts; tp: the tensor-parallel
    degree, by which a gathered tensor is larger than the GPU's share (module docstring, items 4-5);
    frozen_weights: the FP8 linears compute no weight gradient (LoRA), so a Transformer Engine recipe
    quantises their inputs and output gradients once (module docstring, item 3)."""
    traits = TRAITS[recipe]
    linear = ft.linear_hardware
    bf16_flops = linear - fp8_gemm_flops_per_token(ft, traits)
    bf16_gemm_s = bf16_flops * tokens * (1.0 / bf16_flops_per_s - 1.0 / fp8_flops_per_s)
    q = quant_elements(spec)
    per_elem = bytes_per_element(traits, gpu)
    act_elem = bytes_per_element(traits, gpu, one_use=frozen_weights and recipe in TE_RECIPES)
    forward_uses = 2 if grad_ckpt is GradCkpt.FULL else 1
    gathered = tp - 1 if traits.gathers_high_precision else 0
    inputs = q.inputs_per_token + gathered * q.column_inputs_per_token
    grads = q.grads_per_token + gathered * q.row_grads_per_token
    quant_s = (inputs * forward_uses + grads) * tokens * act_elem / bw_bytes_per_s
    weight_quant_s = q.weights / model_parallel * per_elem * weight_casts_per_micro_batch / bw_bytes_per_s
    rescale_s = 0.0
    if traits.rescaled_backward:
        dgrad = (q.column_dgrad_per_token * tp + q.row_dgrad_per_token) * tokens
        rescale_s = (dgrad + q.weights / model_parallel) * RESCALE_BYTES / bw_bytes_per_s
    return Fp8Cost(recipe=recipe, bf16_gemm_s=bf16_gemm_s, quant_s=quant_s, weight_quant_s=weight_quant_s,
                   rescale_s=rescale_s)


def fp8_step_delta_s(setup, layout, gpu: GpuSpec, ft, eff, m, *, tokens_per_micro_batch: float, tokens: float,
                     notes: list[str]) -> float:
    """What FP8 adds to one micro-batch on one GPU whose linears `timing.parts.compute_s` timed at the FP8 rate
    (0 unless the setup trains in FP8). `eff` is the FP8 matmul efficiency; the bf16 one is taken
    at the same shape. Recipe: setup.impl.fp8_recipe, else the framework's (`default_recipe`)."""
    if setup.precision is not Precision.FP8 or eff.peak_dtype != "fp8":
        return 0.0
    stated = setup.impl.fp8_recipe
    recipe = stated or default_recipe(setup.framework)
    if TRAITS[recipe].blackwell_only and gpu.generation != "blackwell":
        notes.append(f"{recipe.value} needs Blackwell tensor cores; {gpu.id} is timed with its bytes anyway")
    bf16 = matmul_efficiency(gpu, "bf16", hidden_size=setup.model.hidden_size,
                             tokens_per_micro_batch=tokens_per_micro_batch, stack=eff.stack, m=m,
                             override=eff.value if eff.overridden else None)
    cached = setup.framework is Framework.MEGATRON   # TE weight cache via is_first_microbatch
    frozen = setup.method in (Method.LORA, Method.QLORA)     # the FP8 base linears compute no weight gradient
    cost = fp8_cost(recipe, gpu, setup.model, ft, tokens=tokens,
                    fp8_flops_per_s=eff.peak_flops_per_s * eff.value,
                    bf16_flops_per_s=bf16.peak_flops_per_s * bf16.value,
                    bw_bytes_per_s=memory_bw(gpu, m),
                    grad_ckpt=setup.grad_ckpt, model_parallel=layout.tp * layout.pp,
                    weight_casts_per_micro_batch=1.0 / max(1, setup.grad_accum) if cached else 1.0, tp=layout.tp,
                    frozen_weights=frozen)
    wgrad = TRAITS[recipe].wgrad_fp8 and not frozen
    notes.append(f"FP8 ({recipe.value}{'' if stated else ', the framework default'}): decoder linears "
                 f"(fprop, dgrad{', wgrad' if wgrad else ''}) at {eff.value:.1%} of the FP8 "
                 f"peak, LM head and attention in bf16 ({bf16.value:.1%} of the bf16 peak); quantisation "
                 f"{bytes_per_element(TRAITS[recipe], gpu, one_use=frozen and recipe in TE_RECIPES):g} bytes per "
                 "element, "
                 f"{1e3 * (cost.quant_s + cost.weight_quant_s):.3g} ms per micro-batch"
                 + (" (weights cast once per step)" if cached else ""))
    if frozen and recipe in TE_RECIPES:
        notes.append("frozen FP8 weights: Transformer Engine quantises each linear's input and output gradient for "
                     "their one GEMM (one copy, no transposed copy for a weight gradient)")
    if TRAITS[recipe].gathers_high_precision and layout.tp > 1:
        notes.append(f"{recipe.value} under tensor parallel {layout.tp}: the all-gathers run in bf16, so each rank "
                     f"quantises the gathered tensors, {layout.tp} ranks' tokens")
    if cost.rescale_s:
        notes.append(f"{recipe.value}: backward GEMM outputs rescaled in a separate pass, "
                     f"{1e3 * cost.rescale_s:.3g} ms per micro-batch")
    return cost.delta_s
