"""Bytes that memory-bound parts of a step move: optimizer update, LoRA adapters, QLoRA
dequantisation, eager attention scores, gradients and weights on the wire, checkpoints.

Each function returns bytes (or bytes per unit named in its name) and says what it counts.
Time = bytes / (bandwidth x achieved fraction), in trainplan.timing.
"""

from __future__ import annotations

from trainplan.enums import GradCkpt, MasterWeights, Method, Optimizer, Precision
from trainplan.errors import TrainplanError
from trainplan.job.training import TrainingSetup
from trainplan.memory.regime import resolve_regime
from trainplan.model.architecture import structure
from trainplan.model.params import lora_key
from trainplan.specs import ModelSpec
from trainplan.timing.flops import (
    active_copies,
    first_backward_layer,
    lora_target_names,
)

# torch.optim.AdamW foreach (`_multi_tensor_adamw`, torch/optim/adamw.py) makes ~20 element passes
# per parameter (mul_ weight decay 2, lerp_ 3, mul_ + addcmul_ 5, sqrt 2, div_ 2, add_ eps 2,
# addcdiv_ 4) where the fused kernel makes 7 (read p, g, m, v; write p, m, v).
FOREACH_PASSES_RATIO = 20.0 / 7.0

# Bytes moved per quantised weight each time it is used (dequantised to a 16-bit copy).
DEQUANT_BYTES: dict[str, float] = {
    # bitsandbytes / torchao 4-bit: read 0.5 B, read an fp32 absmax per 64-block, write 2 B
    "nf4": 0.5 + 4.0 / 64 + 2.0,
    "fp4": 0.5 + 4.0 / 64 + 2.0,
    # bitsandbytes 8-bit: read 1 B, write 2 B
    "int8": 1.0 + 2.0,
    # GPTQ int4 (auto-gptq kernels as used by Qwen's QLoRA recipe): effective cost derived from the
    # Qwen README (A100, flash-attn 2, same LoRA, gradient checkpointing): QLoRA minus LoRA step
    # time over 8 micro-batches x 3 uses x quantised weights = 10.3 ps (1.8B), 11.6 ps (7B),
    # 11.2 ps (14B) per weight-use, i.e. ~18 bytes at 80% of 2.04 TB/s.
    "gptq": 18.0,
}


def state_elem_bytes(setup: TrainingSetup) -> int:
    """Bytes of one trainable weight / optimizer-state element: 2 under pure 16-bit, else 4."""
    return 2 if setup.precision.is_pure else 4


def grad_bytes(setup: TrainingSetup) -> int:
    """Bytes per gradient element as reduced across data parallel: fp32 when the trainable
    weights are fp32 (fp32, HF autocast over an fp32 model) or with Megatron's fp32 main_grad;
    otherwise the 16-bit compute dtype."""
    if setup.precision is Precision.FP32 or setup.impl.grad_dtype_fp32_accum:
        return 4
    if not setup.precision.is_pure and setup.impl.master_weights is MasterWeights.AUTOCAST:
        return 4
    return 2


def weight_bytes_gathered(setup: TrainingSetup) -> float:
    """Bytes per weight in a ZeRO-3 / FSDP all-gather: 4-bit for QLoRA (plus absmax), fp32 under
    fp32, else the 16-bit compute copy (FSDP param_dtype / DeepSpeed 16-bit weights)."""
    if setup.method is Method.QLORA:
        return 0.5 + 4.0 / 64
    return 4.0 if setup.precision is Precision.FP32 else 2.0


def optimizer_bytes_per_param(setup: TrainingSetup) -> float:
    """Bytes read + written per trainable parameter by one optimizer step (+ gradient clipping's
    read of the gradients). Fused AdamW: p (r+w), g (r), m (r+w), v (r+w); a master-weight
    optimizer also writes the 16-bit copy; foreach AdamW makes FOREACH_PASSES_RATIO more passes."""
    p = state_elem_bytes(setup)
    g = grad_bytes(setup)
    opt = setup.optimizer
    if opt in (Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT):
        core = 2 * p + g + 2 * 1 + 2 * 1
    elif opt in (Optimizer.SGD, Optimizer.LION):
        core = 2 * p + g + 2 * p
    elif opt is Optimizer.ADAFACTOR:
        core = 2 * p + g + 2 * p           # factored second moment: one p-sized temporary
    elif opt is Optimizer.ADAM_MINI:
        # adam_mini.py, one kernel per operation: grad * grad (g read, written) and its row mean (read), m.lerp_
        # (m and g read, m written), m * stepsize, mul_ lr and the negation (a read and a write each), p.add_
        # (p and the update read, p written); the vmean rows are negligible
        core = 4 * g + 11 * p
    else:
        core = 2 * p + g + 4 * p
    if opt is Optimizer.ADAMW:
        core *= FOREACH_PASSES_RATIO
    master_copy = 2 if (setup.impl.master_weights is MasterWeights.OPTIMIZER and not setup.precision.is_pure
                        and setup.precision is not Precision.FP32) else 0
    return core + master_copy + g


def quantized_params(spec: ModelSpec) -> int:
    """Weights bitsandbytes/torchao quantise: every decoder-layer linear (the head stays 16-bit)."""
    st = structure(spec)
    return sum(lin.weight_params * n for kind, n in st.layers for lin in kind.linears)


def dequant_bytes_per_use(kernel: str) -> float:
    try:
        return DEQUANT_BYTES[kernel.lower()]
    except KeyError:
        raise TrainplanError(f"unknown quantisation kernel {kernel!r}; known: {', '.join(DEQUANT_BYTES)}") from None


def adapter_chain_bytes(*, fp32_chain: bool, dropout: bool) -> tuple[tuple[float, float], tuple[float, float]]:
    """((forward, backward) bytes per input element, per output element) of one LoRA adapter's elementwise
    chain and GEMM operands (adapter_bytes_per_token's docstring): the fp32 chain as autograd runs it op by
    op (tests/test_adapter_traffic_trace.py traces it), the 16-bit one with its backward at twice its
    forward. That one is the approximation the efficiency constants were fitted with (timing.efficiency
    FIT: the HF Trainer LoRA rows); traced the same way, the HF Trainer's chain (a bf16 base, fp32 adapters,
    autocast: the input cast to fp32 by peft, then back to 16-bit for lora_A) moves 14 forward and 22
    backward per input element, 12 and 8 per output element, and a pure 16-bit one (litgpt) 2 and 10, 12 and 8.
    Taking those without refitting the constants moves the development set's time median from 7.4% to
    8.6%: they wait for a refit."""
    d = 1.0 if dropout else 0.0
    if fp32_chain:
        return (10.0 + 9.0 * d, 28.0), (20.0 + 9.0 * d, 28.0)
    fwd_in, fwd_out = 2.0 * (1.0 + 2.0 * d), 8.0
    return (fwd_in, fwd_out), (2.0 * fwd_in, 2.0 * fwd_out)


def adapter_bytes_per_token(setup: TrainingSetup) -> float:
    """Memory traffic of the LoRA adapters per token (they are memory-bound: r << width).

    Per adapted linear and pass, in 16-bit elements: dropout (when > 0) reads and writes the input
    (2 in), A reads its input (in), B writes the update, scaling and the add to the base output read
    and write it (4 out): 2 (1 + 2 dropout) bytes per input and 8 per output element.
    fp32 adapters without autocast (memory.regime.PEFT_FP32_ADAPTERS over a pure 16-bit model): peft
    casts the input to fp32 (`_cast_input_dtype`: read 2, write 4), dropout runs in fp32 (read and
    write 4, a 1-byte mask), A reads 4; B writes 4, the scaling reads and writes 4, the add promotes
    the 16-bit base output to fp32 (read 2 + 4, write 4) and `result.to(torch_result_dtype)` casts it
    back (read 4, write 2) (peft/tuners/lora/layer.py Linear.forward): 2 + 4 + 9 dropout + 4 = 19
    bytes per input and 28 per output element (10 and 28 without dropout). Its backward, op by op in
    autograd: `.to`'s casts the 16-bit gradient to fp32 (read 2, write 4); the add's casts its fp32
    gradient back for the 16-bit base output (read 4, write 2) and passes it to the update unchanged; the
    scaling's reads and writes 4; B's input and weight gradients read it (4 + 4): 28 per output element;
    A's input gradient writes 4, its weight gradient reads the saved fp32 input (4), dropout's reads and
    writes 4 with its mask (9), the cast's casts the gradient back (read 4, write 2) and autograd adds it to
    the base linear's input gradient (read 2 + 2, write 2): 20 + 9 dropout per input element.
    Otherwise the backward is counted as twice the forward; full recomputation reruns the forward.
    """
    names = lora_target_names(setup)
    if not names or setup.lora is None:
        return 0.0
    spec = setup.model
    forwards = 1.0 + (1.0 if setup.grad_ckpt is GradCkpt.FULL else 0.0)
    (fwd_in, fwd_out), (bwd_in, bwd_out) = adapter_chain_bytes(
        fp32_chain=resolve_regime(setup).fp32_adapter_chain, dropout=setup.lora.dropout > 0)
    per_in, per_out = forwards * fwd_in + bwd_in, forwards * fwd_out + bwd_out
    if setup.lora.dora:
        per_out = 0.0      # DoRA's variant forward replaces the scaling and add (dora_bytes_per_token)
    st = structure(spec)
    total = 0.0
    for kind, n in st.layers:
        for lin in kind.linears:
            if lora_key(lin) in names:
                total += (per_in * lin.in_features + per_out * lin.out_features) * active_copies(lin, spec) * n
    return total + dora_bytes_per_token(setup)


def dora_bytes_per_token(setup: TrainingSetup) -> float:
    """Memory traffic DoRA adds per token (peft 0.21 tuners/lora/dora.py, variants.py; the dtypes as
    memory.dora has them: x and the magnitude in the adapters' dtype a, lora_B's output l (the compute
    dtype c under autocast, else a), products in the promoted p = max(a, c), the frozen weight's w).

    Per adapted linear and forward, per output element of a token: lora_B writes l; result_dora =
    (m - 1) * base + m * lora * s reads the base output (c) and writes p, reads l and writes p, reads
    and writes p for the scaling, reads 2p and writes p for the sum; the variant's `result + ...` reads
    c and p and writes p, `.to(c)` reads p and writes c: 2l + 3c + 10p (a full recomputation runs it
    again). Backward, per output element: `.to`'s reads c, writes p; the scaling's reads and writes p;
    m * lora's reads p, writes l (lora's gradient) and reads p and l (the magnitude's, a sum over
    tokens); (m - 1) * base's reads p, writes c and reads p and c; the base gradient's add to the
    result's reads 2c, writes c: 7p + 2l + 6c.
    Per micro-batch and forward (the weight norm, no backward: it is detached), per weight element:
    lora_B writes l, the cast of lora_weight to a (l + a where l != a), W's cast to a (w + a where
    w != a; over 4-bit weights its dequantization, DEQUANT_BYTES, then c + a), the scaling (2a), the add
    (3a) and the norm (a); per in^2 element, eye(in) is written (a)
    and read by lora_A (a), under autocast cast first (read a, write c) and read as c: 2a or 2a + 2c.
    Spread over the micro-batch's tokens. The eye and B GEMMs' FLOPs (2 r in (in + out)) are not
    counted.
    """
    names = lora_target_names(setup)
    if setup.lora is None or not setup.lora.dora or not names:
        return 0.0
    regime = resolve_regime(setup)
    a, c, w = regime.adapter_bytes, regime.compute_bytes, regime.frozen_weight_bytes
    lb = c if regime.autocast else a
    p = max(a, c)
    per_out = 2 * lb + 3 * c + 10 * p
    per_out_bwd = 7 * p + 2 * lb + 6 * c
    if setup.method is Method.QLORA and setup.quant is not None:
        # dequantize_module_weight each forward (read 0.5 B + absmax, write c), then its cast to a
        per_weight_w = DEQUANT_BYTES[setup.quant.kind.value] + (c + a if c != a else 0)
    else:
        per_weight_w = w + a if w != a else 0
    per_weight = lb + (lb + a if lb != a else 0) + per_weight_w + 6 * a
    per_eye = 2 * a + (2 * c if regime.autocast else 0)
    forwards = 1.0 + (1.0 if setup.grad_ckpt is GradCkpt.FULL else 0.0)
    token_bytes = weight_bytes = 0.0     # output elements a token; weight bytes a forward
    for kind, n in structure(setup.model).layers:
        for lin in kind.linears:
            if lora_key(lin) in names:
                copies = active_copies(lin, setup.model) * n
                token_bytes += lin.out_features * copies
                weight_bytes += (per_weight * lin.in_features * lin.out_features
                                 + per_eye * lin.in_features ** 2) * lin.copies * n
    return (token_bytes * (per_out * forwards + per_out_bwd)
            + weight_bytes * forwards / max(1, setup.tokens_per_micro_batch))


# transformers' eager attention (models/llama/modeling_llama.py `eager_attention_forward`, the same in
# 4.49 and 5.x; models/gemma2/modeling_gemma2.py adds the logit softcap), per score element of the
# heads x s x s tensor, in elements of the query's dtype (e bytes) and of fp32 (4 bytes). Eager always
# gets a 4D mask (the causal mask, padding merged in), so the mask add always runs. dropout(p=0.0)
# returns its input (aten/src/ATen/native/Dropout.cpp: p == 0 is no-op outside the fused kernel).
# Forward: QK^T writes S (e); `* scaling` reads and writes (2e); `+ attention_mask` reads S and the
# mask, writes (3e); softmax(dtype=float32) reads e, writes 4; `.to(query.dtype)` reads 4, writes e;
# P @ V reads P (e): 9e + 8. Softcap (`/ softcap`, tanh, `* softcap`): three read-write passes (6e).
EAGER_FWD = (9.0, 8.0)          # (elements of e, fp32 bytes) per score, forward
# Backward (autograd of the same ops): P @ V writes dP (e) and reads the saved P for dV (e); the cast
# back reads dP and writes fp32 (e + 4); softmax backward reads its grad and its saved fp32 output
# and writes the 16-bit input grad (8 + e); `* scaling` reads and writes (2e); QK^T's backward reads
# dS for dQ and for dK (2e): 8e + 12. Softcap: `* softcap` (2e), tanh's grad reads grad and the saved
# output and writes (3e), `/ softcap` (2e): 7e.
EAGER_BWD = (8.0, 12.0)
SOFTCAP_FWD, SOFTCAP_BWD = 6.0, 7.0
# softmax(dtype=torch.float32) fuses its input's cast only for Half on CUDA (aten/src/ATen/native/SoftMax.cpp
# `softmax`: `input_.scalar_type() == ScalarType::Half && dtype == ScalarType::Float` -> `_softmax(input,
# dim, half_to_float=true)`, else `input_.toType(dtype)` then `_softmax`). A bf16 score tensor is first
# copied to fp32 (read 2, write 4) and the softmax then reads 4 instead of 2: +8 bytes per score
# forward; in backward `_softmax_backward_data` writes an fp32 gradient (4 instead of 2) that the
# cast's backward reads (4) and turns back into bf16: +8 bytes per score.
BF16_SOFTMAX_CAST = (8.0, 8.0)


def eager_score_bytes(setup: TrainingSetup) -> tuple[float, float]:
    """(forward, backward) bytes moved per attention score by transformers' eager attention."""
    e = float(setup.precision.compute_bytes)
    soft = 1.0 if setup.model.attn_logit_softcapping else 0.0
    cast = BF16_SOFTMAX_CAST if setup.precision.compute_dtype == "bf16" else (0.0, 0.0)
    return (EAGER_FWD[0] * e + EAGER_FWD[1] + soft * SOFTCAP_FWD * e + cast[0],
            EAGER_BWD[0] * e + EAGER_BWD[1] + soft * SOFTCAP_BWD * e + cast[1])


def eager_attention_bytes_per_token(setup: TrainingSetup, seq_len: int) -> float:
    """Eager attention materialises heads x s scores per token and layer and runs each of the ops
    above over them (eager_score_bytes): the forward in every layer, the backward and (under full
    recomputation) the forward again in layers with a backward. Flash/SDPA kernels keep scores on
    chip: 0."""
    spec = setup.model
    layers = spec.num_layers - first_backward_layer(setup)
    scores = spec.num_heads * seq_len
    fwd, bwd = eager_score_bytes(setup)
    recompute = fwd if setup.grad_ckpt is GradCkpt.FULL else 0.0
    return scores * (fwd * spec.num_layers + (bwd + recompute) * layers)


def checkpoint_bytes(setup: TrainingSetup, total_params: int, trainable: int) -> float:
    """Bytes written per checkpoint save: weights (the whole model in 16-bit for full/freeze
    tuning; the adapters for LoRA/QLoRA, fp32 unless pure 16-bit) plus the optimizer state of the
    trainable parameters (HF Trainer, DeepSpeed and Megatron save it for resuming)."""
    if setup.method in (Method.LORA, Method.QLORA):
        weights = trainable * state_elem_bytes(setup)
    else:
        weights = total_params * 2
    if setup.optimizer in (Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT):
        states = 2
    elif setup.optimizer in (Optimizer.SGD, Optimizer.LION, Optimizer.ADAFACTOR):
        states = state_elem_bytes(setup)
    else:
        states = 2 * state_elem_bytes(setup)
    if setup.impl.master_weights is MasterWeights.OPTIMIZER and not setup.precision.is_pure:
        states += 4
    return float(weights + trainable * states)
