"""torch.compile / fused kernels in the memory model: what a compiled loss, a fused RMSNorm and a
fused SwiGLU keep for backward (hand-derived byte counts)."""

from conftest import tiny_llama
from trainplan import catalog
from trainplan.enums import Loss, MasterWeights, Method, Precision
from trainplan.frozen import replace
from trainplan.job.training import Implementation, Layout, TrainingSetup
from trainplan.memory import estimate_memory
from trainplan.memory.logits import logits_memory

T, V, H = 8192, 128256, 3072          # Llama-3.2-3B, batch 2 x 4096


def test_compiled_chunked_loss_keeps_16_bit_chunks_and_a_logsumexp():
    n = T * V
    per = -(-n // 8)
    m = logits_memory(tokens=T, vocab=V, hidden=H, compute_bytes=2, loss=Loss.CHUNKED, chunks=8,
                      upcast=True, compiled=True)
    assert m.saved_bytes == 2 * n + 4 * T                      # bf16 chunks + fp32 logsumexp
    assert m.forward_peak_bytes == 2 * n + 4 * per + 4 * T     # one chunk's fp32 working copy
    assert m.backward_peak_bytes == 2 * n + 4 * T + 4 * per + 2 * per
    eager = logits_memory(tokens=T, vocab=V, hidden=H, compute_bytes=2, loss=Loss.CHUNKED, chunks=8,
                          upcast=True)
    assert eager.saved_bytes == 4 * n                          # eager keeps fp32 log-probabilities
    assert m.saved_bytes < eager.saved_bytes


def test_compiled_full_loss_on_fp32_logits_keeps_the_fp32_input_only():
    n = T * V
    m = logits_memory(tokens=T, vocab=V, hidden=H, compute_bytes=2, loss=Loss.FULL, upcast=True, compiled=True)
    assert m.saved_bytes == 4 * n + 4 * T
    assert m.forward_peak_bytes == 4 * n + 2 * n + 4 * T       # the bf16 logits while the copy is made
    assert m.backward_peak_bytes == 8 * n + 4 * T              # saved input + its fp32 gradient
    eager = logits_memory(tokens=T, vocab=V, hidden=H, compute_bytes=2, loss=Loss.FULL, upcast=True)
    assert eager.backward_peak_bytes == 12 * n


def _saved(setup):
    layout = Layout(num_gpus=1)
    gpu = catalog.resolve_gpu("a100-80gb")
    return estimate_memory(setup, layout, gpu).saved_activations_bytes


def test_compile_saves_fewer_activations_by_the_fused_norm_and_swiglu_difference():
    spec = tiny_llama()
    base = TrainingSetup(model=spec, method=Method.FULL, precision=Precision.BF16_PURE, batch_size=2, seq_len=64,
                         impl=Implementation(master_weights=MasterWeights.NONE, loss=Loss.CHUNKED))
    comp = replace(base, impl=replace(base.impl, compiled=True))
    t, h, i, L = 2 * 64, spec.hidden_size, spec.intermediate_size, spec.num_layers
    # per layer: each RMSNorm drops its fp32 input copy and the normed copy (4h + 2h -> its 2h
    # bf16 input); the gated MLP drops silu's output (2i bytes) of act-in, act-out, up
    per_layer = 2 * (4 * h + 2 * h - 2 * h) * t + 2 * i * t
    final_norm = (4 * h + 2 * h - 2 * h) * t
    assert _saved(base) - _saved(comp) == L * per_layer + final_norm


# --- framework mechanisms outside the Hugging Face model code ---------------------------------

from trainplan.enums import Attention
from trainplan.memory.activations import layer_activations
from trainplan.memory.context import LayerContext
from trainplan.memory.logits import held_fp32_logits
from trainplan.model.architecture import structure


def _layer(spec, **kw):
    t = 2 * 64
    kw.setdefault("lora_names", frozenset({"attention/q_proj", "attention/v_proj"}))
    ctx = LayerContext(tokens=t, batch=2, seq=64, residual_bytes=2, compute_bytes=2, autocast=False,
                       attention=Attention.SDPA, weights_trained=False, lora_rank=8, **kw)
    return layer_activations(spec, structure(spec).layer(1), ctx)


def test_bitsandbytes_4bit_linears_keep_their_inputs():
    # MatMul4Bit saves its input A when A requires grad. q/k/v read the norm output the q,v
    # adapters already keep (shared); o_proj reads the attention kernel's saved output; so the
    # new saves are gate/up's input (h wide) and down's input (i wide), in bf16.
    spec = tiny_llama()
    t, h, i = 2 * 64, spec.hidden_size, spec.intermediate_size
    plain, bnb = _layer(spec), _layer(spec, quant_saves_input=True)
    assert bnb.saved_bytes - plain.saved_bytes == 2 * t * (h + i)


def test_fused_qkv_value_pins_the_projection_and_zero_pad_keeps_the_adapters_output():
    # litgpt: v is a view of the fused qkv output (q_dim + 2 kv_dim wide): q_dim + kv_dim more
    # bytes stay alive; zero_pad's index_copy keeps the q and v adapters' output (q_dim + kv_dim).
    spec = tiny_llama()
    t = 2 * 64
    plain, fused = _layer(spec), _layer(spec, fused_qkv=True)
    extra = 2 * t * (spec.q_dim + spec.kv_dim)
    assert fused.detail["attention_core"] - plain.detail["attention_core"] == extra
    assert fused.detail["lora"] - plain.detail["lora"] == extra


def test_fp32_output_logits_are_held_through_backward():
    n = T * V
    base = logits_memory(tokens=T, vocab=V, hidden=H, compute_bytes=2, loss=Loss.CHUNKED, chunks=64, upcast=False)
    held = held_fp32_logits(base, tokens=T, vocab=V, compute_bytes=2)
    assert held.saved_bytes - base.saved_bytes == 4 * n
    assert held.forward_peak_bytes - base.forward_peak_bytes == 4 * n + 2 * n   # bf16 output while cast
    assert held.backward_peak_bytes - base.backward_peak_bytes == 4 * n


def test_a_model_compiled_without_its_loss_keeps_the_eager_losss_bytes():
    # torchtitan's compile.components = ["model"] (and its releases of 2024-12-18 to 2025-04-02, whose
    # training.compile left the loss eager): the blocks compiled, the cross-entropy eager on an fp32 copy,
    # 12 bytes per logit at its backward (the peak here) instead of the compiled loss's 8 + a logsumexp
    spec = catalog.resolve_model("llama-3.2-3b")
    base = TrainingSetup(model=spec, method=Method.FULL, precision=Precision.BF16, batch_size=2, seq_len=4096,
                         impl=Implementation(master_weights=MasterWeights.OPTIMIZER, compiled=True))
    gpu, layout = catalog.resolve_gpu("h100"), Layout(num_gpus=1)
    both = estimate_memory(base, layout, gpu)
    model_only = estimate_memory(replace(base, impl=replace(base.impl, loss_compiled=False)), layout, gpu)
    n = T * V
    assert both.peak_phase == model_only.peak_phase == "backward (loss)"
    assert both.components_bytes["logits_loss"] == 8 * n + 4 * T
    assert model_only.components_bytes["logits_loss"] == 12 * n


def test_torchtitan_loss_parallel_holds_one_fp32_logits_copy_more():
    # torchtitan with TP computes the loss on vocabulary-sharded logits through DTensor's decomposed
    # log_softmax / nll_loss (torch/distributed/tensor/parallel/loss.py): at the backward peak the saved
    # log-probabilities, zeros_like, exp and their sum, 4 fp32 tensors of this rank's tokens x V/tp logits
    # (16 bytes each) where the fused eager loss holds 3 (12 bytes)
    from trainplan.enums import Framework, Fsdp, GradCkpt
    from trainplan.job.frameworks import implementation

    spec = catalog.resolve_model("llama-3.2-1b")
    setup = TrainingSetup(model=spec, method=Method.FULL, precision=Precision.BF16, batch_size=1, seq_len=8192,
                          grad_ckpt=GradCkpt.FULL, framework=Framework.TORCHTITAN,
                          impl=implementation(Framework.TORCHTITAN))
    gpu = catalog.resolve_gpu("h100")
    n = 8192 * 128256
    alone = estimate_memory(setup, Layout(num_gpus=2, fsdp=Fsdp.FULL), gpu)
    sharded = estimate_memory(setup, Layout(num_gpus=2, tp=2), gpu)
    assert alone.peak_phase == sharded.peak_phase == "backward (loss)"
    assert alone.components_bytes["logits_loss"] == 12 * n
    assert sharded.components_bytes["logits_loss"] == 16 * (n // 2)


def test_litgpt_runs_gelu_tanh_as_one_kernel():
    # Phi-2's hidden_act is gelu_new: transformers' NewGELUActivation, a Python chain that keeps 4 tensors of the
    # intermediate width in a pure bf16 model (pow's input, tanh's output, the product's two factors); litgpt's own
    # MLP calls torch.nn.functional.gelu(x, approximate="tanh"), which keeps its input only: 3 x 2 bytes fewer per
    # intermediate element (10,240 wide), with the MLP's linears adapted so its intermediates need gradients
    spec = catalog.resolve_model("microsoft/phi-2")
    lora = frozenset({"attention/q_proj", "attention/v_proj", "mlp/fc1", "mlp/fc2"})
    hf, lit = (_layer(spec, lora_names=lora, fused_gelu=fused) for fused in (False, True))
    assert hf.detail["mlp"] - lit.detail["mlp"] == 3 * 2 * (2 * 64) * 10240
