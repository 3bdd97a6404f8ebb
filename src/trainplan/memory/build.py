"""Assemble the per-step memory inputs of one setup: `step_inputs` for the whole model (one GPU's
share of it under tensor/context parallelism when given the shard's setup), `stage_slice` to cut
one pipeline stage out of them, `split_layer` for sequence parallelism (memory/model.py composes)."""

from __future__ import annotations

from trainplan.enums import Framework, GradCkpt, Method, Position
from trainplan.frozen import replace
from trainplan.job.training import TrainingSetup
from trainplan.memory.activations import (
    LayerActivations,
    _norm_saves,
    layer_activations,
)
from trainplan.memory.attention import kept_masks_bytes
from trainplan.memory.context import LayerContext
from trainplan.memory.dora import reruns_base
from trainplan.memory.logits import LogitsMemory, held_fp32_logits, logits_memory
from trainplan.memory.stages import Stage
from trainplan.memory.peak import StepInputs
from trainplan.memory.regime import Regime
from trainplan.memory.state import ModelState
from trainplan.model.architecture import structure
from trainplan.model.params import first_trained_layer, lora_target_keys, saved_copy_params, trained_layers

NO_LOGITS = LogitsMemory(forward_peak_bytes=0, saved_bytes=0, backward_peak_bytes=0, after_bytes=0)


# Frameworks that build their own model (no Hugging Face `enable_input_require_grads`).
_OWN_MODEL_FRAMEWORKS = frozenset({Framework.MEGATRON, Framework.LITGPT, Framework.TORCHTUNE})


def embedding_output_requires_grad(setup: TrainingSetup) -> bool:
    """The embedding output needs a gradient when the embedding is trained, or when Hugging Face's
    whole-layer activation checkpointing calls `enable_input_require_grads` (so that checkpointed
    frozen layers pass gradients on: they then keep their inputs and recompute in backward);
    otherwise nothing below the first trainable parameter requires grad."""
    if setup.method is Method.FULL or "embed_tokens" in setup.saved_modules:
        return True
    return setup.grad_ckpt in (GradCkpt.FULL, GradCkpt.OP) and setup.framework not in _OWN_MODEL_FRAMEWORKS


def layer_contexts(setup: TrainingSetup, regime: Regime) -> list[LayerContext]:
    """Each decoder layer's context, in order."""
    return [ctx for lo, hi, ctx in context_runs(setup, regime) for _ in range(lo, hi)]


def context_runs(setup: TrainingSetup, regime: Regime) -> list[tuple[int, int, LayerContext]]:
    """The decoder layers' contexts as (first, end, context) runs of consecutive layers."""
    spec = setup.model
    names = lora_target_keys(setup)
    first, trained_span = first_trained_layer(setup), trained_layers(setup)
    rank = setup.lora.rank if setup.lora else 0
    dropout = setup.lora.dropout if setup.lora else 0.0
    embed_grad = embedding_output_requires_grad(setup)
    lora_from = 0 if names else spec.num_layers      # LoRA adapts every decoder layer
    threshold = first if setup.method is Method.FREEZE else lora_from   # layers above it have a trainable one below
    n = spec.num_layers
    # layers differ only in (trained, a trainable layer below), constant between these cuts
    cuts = sorted({0, n, *(min(n, max(0, c)) for c in (trained_span.start, trained_span.stop, threshold + 1))})
    made: dict[tuple[bool, bool], LayerContext] = {}
    out: list[tuple[int, int, LayerContext]] = []
    for lo, hi in zip(cuts, cuts[1:]):
        flags = (lo in trained_span, embed_grad or lo > threshold)
        ctx = made.get(flags)
        if ctx is None:
            ctx = made[flags] = LayerContext(
                tokens=setup.tokens_per_micro_batch, batch=setup.micro_sequences, seq=setup.seq_len,
                residual_bytes=regime.residual_bytes, compute_bytes=regime.compute_bytes,
                autocast=regime.autocast, attention=setup.attention, weights_trained=flags[0],
                lora_names=names, lora_rank=rank, lora_dropout=dropout, dora=bool(setup.lora and setup.lora.dora),
                dora_rerun=reruns_base(setup), dora_dequant=setup.method is Method.QLORA,
                input_requires_grad=flags[1],
                trained_weight_bytes=regime.trainable_weight_bytes,
                frozen_weight_bytes=regime.frozen_weight_bytes, adapter_bytes=regime.adapter_bytes,
                fp32_adapter_chain=regime.fp32_adapter_chain,
                liger=setup.impl.liger_kernels, compiled=setup.impl.compiled,
                quant_saves_input=setup.method is Method.QLORA and setup.framework is not Framework.TORCHTUNE,
                fused_qkv=setup.impl.fused_qkv, fused_gelu=setup.impl.fused_gelu,
                padding_mask=setup.impl.padding_mask)
        out.append((lo, hi, ctx))
    return out


def _layer_grad_bytes(setup: TrainingSetup, regime: Regime, state: ModelState) -> list[int]:
    spec = setup.model
    st = structure(spec)
    n = spec.num_layers
    per_kind = [layer.params * regime.grad_bytes for layer, _ in st.layers]
    if setup.method is Method.FULL:
        return [per_kind[k] for k in st.layer_kinds_in_order]
    if setup.method is Method.FREEZE:
        span = trained_layers(setup)
        return [per_kind[k] if i in span else 0 for i, k in enumerate(st.layer_kinds_in_order)]
    copies = sum(saved_copy_params(spec, setup.saved_modules).values()) * regime.copy_bytes
    per_layer = (state.gradients - copies) // n        # the copies' gradients are the head's and the embedding's
    return [per_layer] * n


def _layers(spec, st, runs: list[tuple[int, int, LayerContext]], cache: dict | None) -> tuple[LayerActivations, ...]:
    """Each decoder layer's saved tensors, computed once per (layer kind, context): a uniform model's
    layers share one inventory; `cache` carries them across the setups of one MemoryModel."""
    cache = {} if cache is None else cache
    out: list[LayerActivations] = []
    kinds = iter(st.kind_runs)
    k_lo, k_hi, kind = next(kinds, (0, 0, 0))
    for lo, hi, ctx in runs:           # the two run lists cut each other into (kind, context) stretches
        while lo < hi:
            while k_hi <= lo:
                k_lo, k_hi, kind = next(kinds)
            key = (id(spec), kind, ctx)
            hit = cache.get(key)
            if hit is None or hit[0] is not spec:
                hit = (spec, layer_activations(spec, st.layers[kind][0], ctx))
                cache[key] = hit
            stop = min(hi, k_hi)
            out += [hit[1]] * (stop - lo)
            lo = stop
    return tuple(out)


def step_inputs(setup: TrainingSetup, regime: Regime, state: ModelState,
                persistent: dict[str, int], grad_scale: float = 1.0, *,
                layer_cache: dict | None = None) -> StepInputs:
    """`persistent` and `grad_scale` carry sharding decided by the caller (1.0 = unsharded)."""
    spec = setup.model
    st = structure(spec)
    runs = context_runs(setup, regime)
    layers = _layers(spec, st, runs, layer_cache)
    t, h, v = setup.tokens_per_micro_batch, spec.hidden_size, spec.vocab_size
    full = setup.method is Method.FULL
    saved = setup.saved_modules
    head_trained, embed_trained = full or "lm_head" in saved, full or "embed_tokens" in saved
    c = regime.compute_bytes
    last = runs[-1][2]
    # The final norm's input needs a gradient once any layer trains; its weight trains with full.
    head_input_grad = full or any(ctx.input_requires_grad or ctx.weights_trained or ctx.lora_names
                                  for _, _, ctx in runs)
    head_saved = sum(_norm_saves(replace(last, weights_trained=full), spec, h, input_grad=head_input_grad,
                                 weight_grad=full))
    if head_trained:
        head_saved += (c if regime.autocast else regime.residual_bytes) * t * h   # lm_head input
    if spec.embedding_dropout > 0 and embedding_output_requires_grad(setup):
        head_saved += t * h                                                       # embedding dropout mask
    # a modules_to_save copy of the head computes the logits (the frozen original idles) in its own dtype
    # (Regime.copy_bytes): its gradient is that wide, and autocast casts it, and computes its gradient,
    # 16-bit first where the copy is wider
    copy_grad_bytes = regime.copy_bytes
    head_weight_bytes = (regime.trainable_weight_bytes if full else copy_grad_bytes if "lm_head" in saved
                         else regime.frozen_weight_bytes)
    head_copy = c * v * h if regime.autocast and head_weight_bytes != c else 0
    head_grad = v * h * (regime.grad_bytes if full else copy_grad_bytes) if head_trained else 0
    head_transient = c * v * h if regime.autocast and (full or (head_trained and copy_grad_bytes != c)) else 0
    emb_grad = v * h * regime.grad_bytes if full and not spec.tied_embeddings else 0
    if not full and embed_trained:     # the copy is untied from the head even where the model ties them
        emb_grad = v * h * copy_grad_bytes
    # The embedding's new gradient (V x h) is a temporary when it meets an existing one. Tied: the
    # lm_head's gradient waits in the autograd InputBuffer; it arrives through TBackward as a view,
    # so the engine adds out of place (old + new -> sum): two V x h temporaries at that moment.
    # Untied with accumulation: AccumulateGrad adds the new gradient in place (one temporary).
    emb_transient = 0
    if full and spec.tied_embeddings:
        emb_transient = 2 * v * h * regime.grad_bytes
    elif full and setup.grad_accum > 1:
        emb_transient = v * h * regime.grad_bytes
    elif embed_trained and setup.grad_accum > 1:
        emb_transient = v * h * copy_grad_bytes
    grads = _layer_grad_bytes(setup, regime, state)
    if grad_scale != 1.0:
        grads = [int(g * grad_scale) for g in grads]
    chunks = setup.impl.loss_chunks or max(1, -(-setup.seq_len // 128))
    # without autocast the head computes in its weight's dtype: an fp32 head (prepare_model_for_kbit_training
    # casts it, or an fp32 model) returns fp32 logits
    logit_bytes = c if regime.autocast else max(c, head_weight_bytes)
    logits = logits_memory(tokens=t, vocab=v, hidden=h, compute_bytes=logit_bytes, loss=setup.impl.loss,
                           chunks=chunks, upcast=setup.impl.loss_upcast, compiled=setup.impl.compiled_loss,
                           softcap=bool(spec.final_logit_softcapping))
    if setup.impl.output_fp32 and c != 4:
        logits = held_fp32_logits(logits, tokens=t, vocab=v, compute_bytes=c)
    return StepInputs(
        persistent=persistent, layers=layers, layer_grads=tuple(grads), head_saved=head_saved,
        batch_bytes=8 * t, shared_saved=(rope_tables_bytes(setup, regime) if head_input_grad else 0)
        + position_ids_bytes(setup) + checkpointed_masks_bytes(setup, st, runs[0][2]),
        head_weight_copy=head_copy, head_grad=int(head_grad * grad_scale),
        head_grad_transient=head_transient, embedding_grad_transient=emb_transient, embedding_grad=int(emb_grad * grad_scale), logits=logits,
        grad_ckpt=setup.grad_ckpt, grads_persist=setup.grad_accum > 1,
        ckpt_mask=() if setup.grad_ckpt_every == 1 else tuple(setup.layer_checkpointed(i)
                                                            for i in range(spec.num_layers)),
        optimizer_in_backward=setup.impl.optimizer_in_backward, optimizer_temp=state.optimizer_temp,
        activation_offload=setup.impl.activation_offload,
        backward_step_temp=state.step_temp_one_tensor)


def rope_tables_bytes(setup: TrainingSetup, regime: Regime) -> int:
    """The rotary cos/sin tables: computed once per forward as (1, s, rotary dim) tensors in the
    hidden states' dtype and saved by every layer's `q * cos` (Gemma-3: one pair per layer type).
    Partial rotary (GPT-NeoX rotary_pct, Phi-3 partial_rotary_factor) is taken as the full head."""
    spec = setup.model
    if spec.position is not Position.ROPE:
        return 0
    dim = spec.mla.qk_rope_head_dim if spec.mla else spec.head_dim
    pairs = 2 if spec.model_type.startswith("gemma3") else 1
    return pairs * 2 * setup.seq_len * dim * regime.residual_bytes


def position_ids_bytes(setup: TrainingSetup) -> int:
    """int64 position ids kept for backward: a trained learned position embedding saves its indices
    (OPT builds them per sequence from the attention mask, GPT-2 one row); activation checkpointing
    keeps the (1, s) position_ids every checkpointed rotary layer is called with."""
    spec = setup.model
    if spec.position is Position.LEARNED and setup.method is Method.FULL:
        return 8 * (setup.tokens_per_micro_batch if spec.model_type == "opt" else setup.seq_len)
    if spec.position is Position.ROPE and setup.grad_ckpt in (GradCkpt.FULL, GradCkpt.OP):
        return 8 * setup.seq_len
    return 0


def checkpointed_masks_bytes(setup: TrainingSetup, st, first: LayerContext) -> int:
    """The attention masks (and ALiBi bias) every checkpointed layer is called with: kept, as the
    layers' inputs, until the last of them has run its backward (attention.kept_masks_bytes).
    `first`: the first decoder layer's context."""
    if setup.grad_ckpt not in (GradCkpt.FULL, GradCkpt.OP):
        return 0
    kinds = [kind for kind, _ in st.layers]
    return kept_masks_bytes(first, setup.model, kinds)


def split_layer(layer: LayerActivations, ways: int) -> LayerActivations:
    """A layer's saved tensors split `ways` ways: sequence parallelism splits every tensor of the layer
    over the TP group (Korthikanti et al. 2022, Table 2: sbh(34/t + 5as/ht))."""
    return LayerActivations(saved_bytes=layer.saved_bytes // ways,
                            weight_copies_bytes=layer.weight_copies_bytes // ways,
                            checkpoint_bytes=layer.checkpoint_bytes // ways,
                            transient_bytes=layer.transient_bytes // ways,
                            detail={k: v // ways for k, v in layer.detail.items()},
                            input_alias_bytes=layer.input_alias_bytes // ways,
                            cached_copies_bytes=layer.cached_copies_bytes // ways,
                            op_saved_bytes=layer.op_saved_bytes // ways,
                            first_transient_bytes=layer.first_transient_bytes // ways,
                            first_released_bytes=layer.first_released_bytes // ways,
                            attention_peak_bytes=layer.attention_peak_bytes // ways,
                            ckpt_attention_peak_bytes=layer.ckpt_attention_peak_bytes // ways,
                            attention_saved_bytes=layer.attention_saved_bytes // ways,
                            attention_backward_bytes=layer.attention_backward_bytes // ways,
                            recompute_transient_bytes=layer.recompute_transient_bytes // ways)


def stage_slice(base: StepInputs, *, layers: tuple[LayerActivations, ...], head_saved: int, stage: Stage,
                layer_grads: tuple[int, ...], tied: bool) -> StepInputs:
    """One pipeline stage cut from the whole model's step inputs: its layers, the embedding's
    gradient on the first stage, the head, its saved input and the logits on the last."""
    last, first = stage.has_head, stage.has_embedding
    embedding_grad = base.embedding_grad if first else 0
    if first and not last and tied:
        embedding_grad = base.head_grad        # the first stage's own copy of the tied embedding
    mask = tuple(base.ckpt_mask[i] for i in stage.layers) if base.ckpt_mask else ()
    return replace(base, layers=tuple(layers[i] for i in stage.layers), layer_grads=layer_grads, ckpt_mask=mask,
                   head_saved=head_saved if last else 0,
                   head_weight_copy=base.head_weight_copy if last else 0,
                   head_grad=base.head_grad if last else 0,
                   head_grad_transient=base.head_grad_transient if last else 0,
                   embedding_grad=embedding_grad,
                   embedding_grad_transient=base.embedding_grad_transient if first and last else 0,
                   logits=base.logits if last else NO_LOGITS)
