"""The cross-entropy's memory traffic: bytes the loss moves per logit (tokens x vocabulary), by how it runs.

The LM head's matmul is counted with the other FLOPs; what follows it is memory-bound and grows with the
vocabulary, not with the hidden size the dense efficiency's width factor scales with, so it is counted
here, per logit element (e = bytes of the logits as the head writes them):

* Eager PyTorch, the HF Trainer's default (transformers loss_utils.py ForCausalLMLoss: `logits =
  logits.float()` then `nn.functional.cross_entropy`, i.e. log_softmax + nll_loss), torchtitan's
  cross_entropy on `pred.float()`, torchtune's and litgpt's chunked losses (the same ops on each chunk):
  - forward: the upcast reads e and writes 4; log_softmax's generic kernel (aten SoftMax.cu
    cunn_SoftMaxForward: a vocabulary row does not fit the shared-memory variant) makes two reductions
    (max, sum of exp) and an epilogue: three reads and a write of 4: 16;
  - backward: nll_loss's gradient is a dense zero-filled (tokens x vocab) tensor with one entry set: a
    write of 4; log_softmax's backward (cunn_SoftMaxBackward) reduces the gradient, then reads it and the
    saved output and writes: 16; the upcast's backward reads 4 and writes e.
  With bf16 logits: 6 + 16 + 4 + 16 + 6 = 48 bytes per logit. Without the upcast (litgpt's 16-bit
  loss) the same kernels run on the logits' own dtype: 9e; on fp32 logits, 36.
* Gemma-2's final logit soft-capping (`/ cap`, tanh, `* cap` in the logits' dtype before the loss,
  models/gemma2/modeling_gemma2.py): three read-write passes forward (6e), backward 7e (as the attention
  softcap, trainplan.timing.traffic SOFTCAP_FWD / SOFTCAP_BWD).
* A model returning fp32 logits that the loop holds (Lightning Fabric bf16-true, Implementation.output_fp32):
  the cast is the model's instead of the loss's, the same bytes.
* torch.compile over the loss (torchtune's compiled loss, torchtitan with compile): inductor fuses the softcap
  and log_softmax into its reductions; as the memory model has it (trainplan.memory.logits._compiled_loss)
  the loss receives the logits upcast by a cast outside the compiled region and saves them plus a logsumexp:
  two reads forward, one read and one write backward of the loss's input (4 x 4), and the cast (2 x (e + 4)):
  28 for bf16 logits.
* A fused linear cross-entropy (Liger's LigerFusedLinearCrossEntropy, Unsloth's, Implementation.loss FUSED):
  each chunk's logits are written by the head's GEMM and read by one Triton kernel twice (an online
  max / sum pass, then the gradient written in place: liger_kernel ops/cross_entropy.py
  liger_cross_entropy_kernel): 3e. Cut Cross-Entropy keeps the logits on chip and moves less; counted as Liger.
  A fused cross-entropy kernel over logits the head wrote whole (Implementation.fused_ce) reads and writes them
  the same way: flash-attn's CrossEntropyLoss (flash_attn/ops/triton/cross_entropy.py: the forward kernel
  keeps a row's logsumexp, the backward reads the logits and writes the gradient, in place with
  inplace_backward), which llm-foundry's MPT takes by default (llmfoundry/models/mpt/modeling_mpt.py
  ComposerMPTCausalLM: `om_model_config.get('loss_fn', 'fused_crossentropy')`), and apex's xentropy, which
  flash-attention's own training recipes use (training/configs/experiment/pile/base.yaml `loss_fn:
  CrossEntropyLossApex, inplace_backward: True`): 3e.
"""

from __future__ import annotations

from trainplan.enums import Loss
from trainplan.job.training import TrainingSetup
from trainplan.timing.traffic import SOFTCAP_FWD, SOFTCAP_BWD

FP32 = 4.0
SOFTMAX_FWD_PASSES = 4.0     # cunn_SoftMaxForward: max read, sum-exp read, epilogue read + write
SOFTMAX_BWD_PASSES = 4.0     # cunn_SoftMaxBackward: gradient-sum read, epilogue reads gradient and output, writes
NLL_GRAD_PASSES = 1.0        # the zero-filled dense gradient nll_loss's backward writes
FUSED_PASSES = 3.0           # Liger: online max/sum read, gradient read + write in place
COMPILED_PASSES = 4.0        # inductor: two reductions forward, one read + one write backward


def _loss_path(setup: TrainingSetup, compiled: bool) -> tuple[str, float]:
    """(how the loss runs, in its note's words; HBM bytes it moves per logit): the module docstring's cases."""
    impl = setup.impl
    e = float(setup.precision.compute_bytes)
    if impl.loss is Loss.FUSED or impl.fused_ce:
        return "a fused cross-entropy kernel", FUSED_PASSES * e
    upcast = (impl.loss_upcast or impl.output_fp32) and e != FP32
    loss_in = FP32 if upcast else e
    cast = 2.0 * (e + FP32) if upcast else 0.0          # forward e -> 4, backward 4 -> e
    if impl.compiled_loss or (compiled and impl.loss_compiled is None):   # the flag's compile covers the loss
        return "a compiled cross-entropy", COMPILED_PASSES * loss_in + cast
    cap = (SOFTCAP_FWD + SOFTCAP_BWD) * e if setup.model.final_logit_softcapping else 0.0
    kind = "eager cross-entropy on an fp32 copy" if upcast else "eager cross-entropy"
    return kind, (SOFTMAX_FWD_PASSES + NLL_GRAD_PASSES + SOFTMAX_BWD_PASSES) * loss_in + cast + cap


def loss_bytes_per_logit(setup: TrainingSetup, *, compiled: bool = False) -> float:
    """HBM bytes the loss moves per logit element (tokens x vocabulary) for the setup's loss
    implementation (module docstring); `compiled`: torch.compile covers the loss (or setup.impl.compiled)."""
    return _loss_path(setup, compiled)[1]


def loss_bytes_per_token(setup: TrainingSetup, *, compiled: bool = False) -> float:
    """Bytes per token of the micro-batch: loss_bytes_per_logit x the vocabulary."""
    return loss_bytes_per_logit(setup, compiled=compiled) * setup.model.vocab_size


def loss_note(setup: TrainingSetup, loss_s: float, compute_s: float, *, compiled: bool = False) -> str | None:
    """The note on the loss's traffic where it is at least 1% of the micro-batch's compute."""
    if compute_s <= 0 or loss_s < 0.01 * compute_s:
        return None
    kind, per_logit = _loss_path(setup, compiled)
    return (f"loss traffic: {kind} moves {per_logit:g} bytes per logit over a {setup.model.vocab_size:,}-token "
            f"vocabulary, {1e3 * loss_s:.3g} ms per micro-batch ({loss_s / compute_s:.1%} of its compute)")
