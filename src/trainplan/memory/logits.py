"""Logits and the cross-entropy loss: often the largest single term for 150k vocabularies.

HF `ForCausalLMLoss` (transformers loss/loss_utils.py) upcasts the whole logits tensor to fp32
(`logits = logits.float()`) and calls `cross_entropy` = log_softmax + nll_loss. log_softmax saves
its fp32 output for backward. In backward, nll_loss's gradient (fp32, b*s*V) and log_softmax's
input gradient (fp32, b*s*V) are both alive while the saved output still is: 12 bytes per logit
at that moment, then a 16-bit gradient for the lm_head (2 bytes per logit).
Chunked cross-entropy (torchtune `CEWithChunkedOutputLoss`) upcasts chunk by chunk; fused linear
cross-entropy (Liger `LigerFusedLinearCrossEntropyLoss`) never materialises the logits: it
processes ~H/V of the tokens at a time, computing gradients in forward.
Compiled (torch.compile over the loss, as torchtune's `compile_loss` and HF's compiled forward do):
Inductor fuses the upcast, log-softmax and gather into reductions, and its min-cut partitioner
saves the cheapest tensor that recomputes the rest in backward: the logits as they enter the loss
plus a (t,) logsumexp, never an fp32 log-probability copy. A chunked loss keeps the 16-bit chunks;
a loss that receives fp32 logits (torchtune's unchunked output ends in `.float()`) keeps those.
"""

from __future__ import annotations

from trainplan.enums import Loss
from trainplan.frozen import frozen, replace


@frozen
class LogitsMemory:
    forward_peak_bytes: int    # extra at the loss in forward (logits + fp32 copy + log-probs)
    saved_bytes: int           # kept for backward
    backward_peak_bytes: int   # extra at the loss in backward, including saved_bytes
    after_bytes: int           # the logits' gradient handed to the lm_head backward


def logits_memory(*, tokens: int, vocab: int, hidden: int, compute_bytes: int, loss: Loss,
                  chunks: int = 8, upcast: bool = True, softcap: bool = False,
                  compiled: bool = False) -> LogitsMemory:
    """Extra bytes for the logits and the loss. `upcast`: cross-entropy runs on an fp32 copy."""
    n = tokens * vocab
    c = compute_bytes
    if loss is Loss.FUSED:
        chunk_tokens = max(1, -(-tokens * hidden // vocab))
        chunk = min(tokens, chunk_tokens) * vocab * 4
        return LogitsMemory(forward_peak_bytes=2 * chunk + 4 * tokens * hidden, saved_bytes=4 * tokens * hidden,
                            backward_peak_bytes=4 * tokens * hidden, after_bytes=0)
    if compiled:
        return _compiled_loss(n=n, c=c, tokens=tokens, loss=loss, chunks=chunks, upcast=upcast)
    p = 4 if (upcast or c == 4) else c   # bytes of the log-probabilities
    copy = 0 if c == 4 or not upcast else 4 * n   # fp32 copy (absent when logits are already fp32)
    if loss is Loss.CHUNKED:
        k = max(1, chunks)
        per = -(-n // k)
        return LogitsMemory(forward_peak_bytes=c * n + (copy // n) * per + p * n,
                            saved_bytes=p * n,
                            backward_peak_bytes=p * n + 2 * p * per + c * per,
                            after_bytes=c * n)
    cap = c * n if softcap else 0       # Gemma-2 final soft-capping: tanh saves its output
    return LogitsMemory(forward_peak_bytes=c * n + copy + p * n + cap, saved_bytes=p * n + cap,
                        backward_peak_bytes=3 * p * n + cap, after_bytes=c * n)


def _compiled_loss(*, n: int, c: int, tokens: int, loss: Loss, chunks: int, upcast: bool) -> LogitsMemory:
    """A compiled cross-entropy: it saves its input logits and a (t,) fp32 logsumexp."""
    lse = 4 * tokens
    if loss is Loss.CHUNKED:
        per = -(-n // max(1, chunks))
        # forward: the 16-bit chunks (the model's output list) and one chunk's fp32 working copy;
        # backward: one chunk's fp32 gradient and its 16-bit cast next to the saved chunks
        return LogitsMemory(forward_peak_bytes=c * n + 4 * per + lse, saved_bytes=c * n + lse,
                            backward_peak_bytes=c * n + lse + 4 * per + c * per, after_bytes=c * n)
    inp = 4 if upcast else c            # the logits as the loss receives them
    cast = c * n if inp != c else 0     # the 16-bit logits while their fp32 copy is made
    return LogitsMemory(forward_peak_bytes=inp * n + cast + lse, saved_bytes=inp * n + lse,
                        backward_peak_bytes=2 * inp * n + lse, after_bytes=c * n)


def loss_parallel(base: LogitsMemory, *, tokens: int, vocab: int) -> LogitsMemory:
    """The loss over vocabulary-sharded logits, as torchtitan runs it with tensor parallelism
    (torch.distributed.tensor.parallel.loss_parallel, on unless parallelism.disable_loss_parallel): DTensor
    dispatches log_softmax and nll_loss to decomposed versions (torch/distributed/tensor/parallel/loss.py).
    `_log_softmax` holds its fp32 input, `x - max` and `exp(...)` at once, one fp32 tensor more than the
    fused kernel; `_nll_loss_and_log_softmax_backward` holds the saved log-probabilities,
    `zeros_like(x)`, `exp(x)` and their sum: four fp32 tensors where the fused backward has three.
    `vocab` is this rank's shard of it."""
    extra = 4 * tokens * vocab
    return replace(base, forward_peak_bytes=base.forward_peak_bytes + extra,
                   backward_peak_bytes=base.backward_peak_bytes + extra)


def held_fp32_logits(base: LogitsMemory, *, tokens: int, vocab: int, compute_bytes: int) -> LogitsMemory:
    """The model returns its logits cast to fp32 and the training loop holds them until backward
    ends (Lightning Fabric bf16-true: `precision.convert_output` to the default dtype): the loss
    then works on fp32 logits, and that fp32 tensor stays alive next to what the loss saves."""
    n = tokens * vocab
    held = 4 * n
    return replace(base, forward_peak_bytes=base.forward_peak_bytes + held + compute_bytes * n,
                   saved_bytes=base.saved_bytes + held, backward_peak_bytes=base.backward_peak_bytes + held)
