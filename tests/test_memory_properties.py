"""Invariants of the memory model (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import a100_80, tiny_llama
from trainplan.enums import Attention, GradCkpt, Method, Optimizer, Precision
from trainplan.job.training import Layout, LoraConfig, TrainingSetup
from trainplan.memory import estimate_memory

GPU = a100_80()
LAYOUT = Layout()

precisions = st.sampled_from([Precision.FP32, Precision.BF16, Precision.BF16_PURE])
ckpts = st.sampled_from(list(GradCkpt))
attentions = st.sampled_from([Attention.SDPA, Attention.EAGER])
optimizers = st.sampled_from([Optimizer.ADAMW, Optimizer.ADAMW_FUSED, Optimizer.SGD, Optimizer.ADAMW_8BIT])
methods = st.sampled_from([Method.FULL, Method.LORA, Method.FREEZE])
models = st.sampled_from([tiny_llama(), tiny_llama(tied_embeddings=True, vocab_size=5000),
                          tiny_llama(num_kv_heads=8, intermediate_size=1024)])


def _setup(model, method, precision, optimizer, ckpt, attention, batch, seq):
    lora = LoraConfig(rank=8) if method is Method.LORA else None
    return TrainingSetup(model=model, method=method, precision=precision, optimizer=optimizer,
                         grad_ckpt=ckpt, attention=attention, batch_size=batch, seq_len=seq, lora=lora,
                         freeze_trainable_layers=2)


def _peak(setup):
    return estimate_memory(setup, LAYOUT, GPU).peak_allocated_bytes


@settings(max_examples=60, deadline=None)
@given(models, methods, precisions, optimizers, ckpts, attentions, st.integers(1, 16), st.integers(1, 4096),
       st.integers(1, 8))
def test_more_batch_or_sequence_never_needs_less(model, method, precision, opt, ckpt, attn, batch, seq, extra):
    base = _peak(_setup(model, method, precision, opt, ckpt, attn, batch, seq))
    assert _peak(_setup(model, method, precision, opt, ckpt, attn, batch + extra, seq)) >= base
    assert _peak(_setup(model, method, precision, opt, ckpt, attn, batch, seq + extra)) >= base


@settings(max_examples=60, deadline=None)
@given(models, methods, precisions, optimizers, attentions, st.integers(1, 16), st.integers(16, 4096))
def test_checkpointing_never_raises_activations(model, method, precision, opt, attn, batch, seq):
    def est(ckpt):
        return estimate_memory(_setup(model, method, precision, opt, ckpt, attn, batch, seq), LAYOUT, GPU)
    none, full, selective = est(GradCkpt.NONE), est(GradCkpt.FULL), est(GradCkpt.SELECTIVE)
    assert full.saved_activations_bytes <= selective.saved_activations_bytes <= none.saved_activations_bytes
    # The peak itself can rise by at most one layer input: while a layer is recomputed its
    # checkpoint input is alive, and when activations are tiny next to the gradients there is
    # nothing else to gain. Hugging Face checkpointing also calls `enable_input_require_grads`:
    # under freeze tuning the frozen lower layers then keep their inputs too, and the first trained
    # layer's input norm saves for its input's gradient (fp32 upcast and rsqrt); the recompute
    # keeps the (1, s) int64 position ids.
    frozen = model.num_layers - 2 if method is Method.FREEZE else 0
    layer_input = 4 * batch * seq * model.hidden_size
    allowance = layer_input * (1 + frozen + (frozen > 0)) + 4 * batch * seq + 8 * seq
    assert full.peak_allocated_bytes <= none.peak_allocated_bytes + allowance


@settings(max_examples=60, deadline=None)
# Not under op-level selective checkpointing: its "save every second matmul" counts the adapters'
# matmuls too, so LoRA can keep outputs full fine-tuning recomputes (torchtitan SelectiveAC).
@given(models, precisions, optimizers, st.sampled_from([c for c in GradCkpt if c is not GradCkpt.OP]), attentions,
       st.integers(1, 16), st.integers(1, 4096))
def test_lora_never_needs_more_than_full(model, precision, opt, ckpt, attn, batch, seq):
    full = _peak(_setup(model, Method.FULL, precision, opt, ckpt, attn, batch, seq))
    lora = _peak(_setup(model, Method.LORA, precision, opt, ckpt, attn, batch, seq))
    # peft's lora_dropout (0.05) saves what full fine-tuning does not: each adapted linear's dropped
    # input (at most 4 B) and its mask (1 B). While a layer is recomputed and its attention runs its
    # backward, LoRA holds those of the one layer; full fine-tuning holds that layer's first weight
    # gradients and the optimizer state instead, which on these tiny models at ~30k tokens can be less.
    adapted = 2                                 # q_proj, v_proj: peft's default targets for Llama
    allowance = adapted * batch * seq * model.hidden_size * (4 + 1)
    assert lora <= full + allowance


@settings(max_examples=40, deadline=None)
@given(models, methods, precisions, optimizers, ckpts, attentions, st.integers(1, 8), st.integers(1, 2048))
def test_components_add_up_and_views_are_ordered(model, method, precision, opt, ckpt, attn, batch, seq):
    est = estimate_memory(_setup(model, method, precision, opt, ckpt, attn, batch, seq), LAYOUT, GPU)
    assert sum(est.components_bytes.values()) == est.peak_allocated_bytes
    assert est.peak_allocated_bytes <= est.peak_reserved_bytes <= est.device_bytes
