"""What a quantised base (QLoRA) adds to a LoRA step: dequantising the 4-bit weights at every use,
and the fp32 path that opens when the non-quantized weights are kept in fp32.

Dequantisation (bitsandbytes 0.45, autograd/_functions.py `MatMul4Bit`): the forward runs
`F.linear(A, dequantize_4bit(B, quant_state).to(A.dtype).t())`; the backward computes only the input
gradient, `grad_output @ dequantize_4bit(B, ctx.state)`, dequantising again (the 4-bit base is
frozen: no weight gradient); full recomputation runs the forward once more. Each
`functional.dequantize_4bit` reads the packed weight (0.5 B) and its fp32 absmax (4 B per block of
64) and writes a 16-bit copy (2 B): trainplan.timing.traffic.DEQUANT_BYTES. With double
quantisation (`quant_state.nested`) it first rebuilds the absmax: `dequantize_blockwise` reads the
uint8 absmax (1 B per block) and the fp32 second-level absmax (4 B per 256 blocks) and writes fp32
(4 B per block), then `absmax += quant_state.offset` reads and writes it (8 B per block):
NESTED_ABSMAX_BYTES more per weight, in two more kernels. Those kernels' fixed launch cost (three
per use, some hundred per layer stack and pass) is not timed: at training micro-batches (thousands
of tokens) the dequantised bytes and the matmuls dominate.

fp32 path. peft's `prepare_model_for_kbit_training` (peft/utils/other.py) casts every fp16/bf16
parameter, i.e. everything but the 4-bit weights (embeddings, norms, LM head), to fp32 (GPTQ, AWQ,
torchao and the like excepted); a model loaded without a dtype is fp32 anyway. Followed through the
layer as the code runs it:
* the embedding returns fp32; transformers' LlamaRMSNorm returns `weight * hidden.to(input_dtype)`,
  fp32 with an fp32 weight: the residual stream, norms, RoPE, activations and residual adds all run
  on 4-byte elements. The non-matmul share of the step (trainplan.timing.efficiency's width factor,
  bytes in proportion to h per token) doubles: extra time = linear time x (1 - width).
* bitsandbytes `Linear4bit.forward` (nn/modules.py) casts its input to the compute dtype and its
  output back to the input dtype, and the same two casts of the gradients in backward: 6 B (read 4,
  write 2, or read 2, write 4) per element of its input and output, per pass (CAST_BYTES). But the
  compute dtype is not the configured `bnb_4bit_compute_dtype` once an fp32 input has passed:
  `set_compute_type` (nn/modules.py, bitsandbytes 0.45.0) runs on the first forward and sets
  `self.compute_dtype = x.dtype` for an fp32 or bf16 input ("the input is in a dtype that is safe to
  compute in"). On the fp32 residual stream the 4-bit linears therefore compute in fp32: MatMul4Bit
  (autograd/_functions.py) dequantises to `quant_state.dtype` and runs `F.linear` on fp32 operands,
  its input gradient `grad_output @ W` likewise. Without autocast those GEMMs run on the CUDA cores
  at the fp32 peak (TF32 is off for matmuls), the casts around them are no-ops, and the dequantised
  weight is written as fp32 (FP32_OPERAND_BYTES more per use than a 16-bit copy). Under autocast
  F.linear is cast to 16-bit inside MatMul4Bit (autocast_mode.cpp lower_precision_fp): 16-bit GEMMs,
  and the activation casts remain (autocast makes them).
* peft's LoRA layers (tuners/lora/bnb.py) run the adapters in their own dtype, fp32 (peft
  `cast_adapter_dtype` upcasts adapters to fp32), on the fp32 input: adapter traffic at 4 bytes.
Without autocast (a plain loop following peft's QLoRA guide; the model's own dtypes), the matmuls
outside bitsandbytes see fp32 operands:
* the LM head and the LoRA adapters run fp32 GEMMs on the CUDA cores: PyTorch leaves TF32 off for
  matmuls (torch.backends.cuda.matmul.allow_tf32 = False): the GPU's fp32 peak.
* SDPA (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp): FlashAttention accepts only
  fp16/bf16; the memory-efficient kernel accepts fp32 (`greater_than_or_equal_sm80_mem_efficient_dtypes`
  = half, float, bfloat16), and its CUTLASS GEMMs for float on sm80+ are
  `OpMultiplyAddFastF32` (mem_eff_attention/gemm_kernel_utils.h `DefaultGemmType`): 3 TF32 MMAs per
  product. Its fp32 time is the 16-bit kernel's time (trainplan.timing.attention's row for the
  GPU) times the published f32 / 16-bit time ratio of the same kernel on A100: forward 4.58
  (facebookresearch/xformers issue #712 "fMHA FW - A100": b16 2-8192-8-128 5086.0 us, f32
  1-8192-4-128 5825.0 us, per FLOP), backward 3.82 (facebookresearch/xformers PR #467 "MemEff:
  Accumulate in f32 for bw", bw A100 f32/f16: B=384 M=197 H=1 K=88 2335.2 / 613.4 us, K=80 2241.3 /
  583.6 us, the mean). Above head dim 128 PyTorch runs the generic kMaxK=65536 kernel, whose f32 /
  f16 ratio at K=256 is smaller (its f16 path is the slow one): forward 27170.5 / 7031.8 = 3.86
  (xformers PR #587, A100, B=64 M=1024 H=16), backward 45039.1 / 31674.1 = 1.42 (same PR, B=16).
  The ratios are taken to hold on other GPUs (the kernels are the same sm80 code; an assumption).
  transformers' flash_attention_2 casts fp32 q/k/v to 16-bit first (integrations/flash_attention.py
  `get_target_dtype`): unchanged. Eager attention runs fp32 bmm at the fp32 peak.
Under autocast (HF Trainer bf16=True, axolotl) F.linear and scaled_dot_product_attention are cast to
16-bit (aten/src/ATen/autocast_mode.cpp, lower_precision_fp): only the 4-byte elementwise traffic
and the casts remain.

Plain LoRA is not spared the adapters' part: over a pure 16-bit model without autocast, peft's fp32
adapters (memory.regime's fp32_adapter_chain) cast their input to fp32 and run their GEMMs at the
fp32 peak too (fp32_adapter_gemm_s); their 4-byte traffic is trainplan.timing.traffic's.
"""

from __future__ import annotations

from trainplan.enums import Attention, GradCkpt, Method
from trainplan.frozen import frozen
from trainplan.job.training import TrainingSetup
from trainplan.memory.regime import resolve_regime
from trainplan.model.architecture import structure
from trainplan.specs import GpuSpec
from trainplan.timing.attention import AttentionKernel, kernel_efficiency
from trainplan.timing.efficiency import Efficiency, EfficiencyModel, matmul_efficiency
from trainplan.timing.flops import FlopsPerToken, active_copies
from trainplan.timing.traffic import adapter_bytes_per_token, dequant_bytes_per_use

# bitsandbytes double quantisation, per weight (blocks of 64 weights, 256 blocks per second-level
# absmax): read uint8 absmax 1/64 + read fp32 state2.absmax 4/(64 x 256) + write fp32 absmax 4/64
# + `absmax += offset` read and write 8/64 (functional.py dequantize_4bit / dequantize_blockwise)
NESTED_ABSMAX_BYTES = 1.0 / 64 + 4.0 / (64 * 256) + 4.0 / 64 + 8.0 / 64
BNB_KERNELS = frozenset({"nf4", "fp4"})   # the 4-bit formats with a nested (double-quant) absmax
CAST_BYTES = 6.0                          # fp32 <-> bf16 copy: read 4 + write 2 (or read 2 + write 4)
FP32_OPERAND_BYTES = 2.0                  # a dequantised weight written as fp32 (4 B) instead of 16-bit (2 B)
# the memory-efficient kernel in fp32 over 16-bit, time per FLOP on A100 (module docstring): forward from
# xformers issue #712 (5825.0 / 4 heads / 1 batch against 5086.0 / 8 heads / 2 batches), backward from
# xformers PR #467 (mean of the K=88 and K=80 rows)
MEM_EFFICIENT_FP32_FWD = (5825.0 / (1 * 4)) / (5086.0 / (2 * 8))
MEM_EFFICIENT_FP32_BWD = (2335.2 / 613.4 + 2241.3 / 583.6) / 2
# the generic kernel (head dim > 128), xformers PR #587 at K=256: f32 over f16 time at the same shape
MEM_EFFICIENT_FP32_GENERIC = (27170.5 / 7031.8, 45039.1 / 31674.1)


def mem_efficient_fp32_ratios(head_dim: int) -> tuple[float, float]:
    """(forward, backward) time ratio of the memory-efficient kernel in fp32 over 16-bit at `head_dim`."""
    return MEM_EFFICIENT_FP32_GENERIC if head_dim > 128 else (MEM_EFFICIENT_FP32_FWD, MEM_EFFICIENT_FP32_BWD)


def dequant_bytes(kernel: str, double_quant: bool) -> float:
    """Bytes moved per quantised weight and use: the kernel's (traffic.DEQUANT_BYTES) plus the
    nested absmax rebuild of double quantisation (bitsandbytes 4-bit only)."""
    nested = NESTED_ABSMAX_BYTES if double_quant and kernel.lower() in BNB_KERNELS else 0.0
    return dequant_bytes_per_use(kernel) + nested


def dequant_uses(setup: TrainingSetup) -> int:
    """Dequantisations of each weight per micro-batch: forward, input gradient, and the forward's
    rerun under full recomputation (MatMul4Bit has no weight gradient)."""
    return 2 + (1 if setup.grad_ckpt is GradCkpt.FULL else 0)


@frozen
class Fp32Path:
    """How a QLoRA step runs when its non-quantized weights are fp32 (see the module docstring)."""

    autocast: bool        # matmuls outside bitsandbytes cast to 16-bit per op
    attention: str        # how the attention core runs: "16-bit", "mem-efficient fp32", "eager fp32"
    base_fp32: bool = False   # the 4-bit linears compute in fp32 (bitsandbytes set_compute_type, no autocast)

    def note(self) -> str:
        if self.base_fp32:
            return ("non-quantized weights fp32, no autocast: the residual stream is fp32, so bitsandbytes "
                    "Linear4bit computes in fp32 (set_compute_type takes the input's dtype over "
                    "bnb_4bit_compute_dtype): the 4-bit linears, LM head and LoRA adapters run fp32 GEMMs at the "
                    f"fp32 peak (TF32 off), norms and activations on 4-byte elements, attention {self.attention}")
        head = ("LM head, LoRA adapters and attention cast to 16-bit by autocast" if self.autocast else
                f"no autocast: LM head and LoRA adapters as fp32 GEMMs at the fp32 peak (TF32 off), attention "
                f"{self.attention}")
        return ("non-quantized weights fp32 (peft prepare_model_for_kbit_training): residual stream, norms and "
                "activations on 4-byte elements, fp32<->bf16 casts around every 4-bit linear (bitsandbytes "
                f"Linear4bit); {head}")


def fp32_path(setup: TrainingSetup) -> Fp32Path | None:
    """The fp32 path of a QLoRA setup whose frozen non-quantized weights are fp32 (impl.load_fp32),
    or None. Autocast as the memory model reads it (trainplan.memory.regime)."""
    if setup.method is not Method.QLORA or setup.quant is None or not setup.impl.load_fp32:
        return None
    autocast = resolve_regime(setup).autocast
    attention = "16-bit"
    if not autocast and setup.attention is Attention.SDPA:
        attention = "mem-efficient fp32"
    elif not autocast and setup.attention is Attention.EAGER:
        attention = "eager fp32"
    base_fp32 = not autocast and setup.quant.kind.value in BNB_KERNELS
    return Fp32Path(autocast=autocast, attention=attention, base_fp32=base_fp32)


def dequant_operand_bytes(setup: TrainingSetup) -> float:
    """Bytes per weight and use a dequantisation writes beyond its 16-bit copy: FP32_OPERAND_BYTES
    where the 4-bit linears compute in fp32 (Fp32Path.base_fp32), else 0."""
    path = fp32_path(setup)
    return FP32_OPERAND_BYTES if path is not None and path.base_fp32 else 0.0


def cast_bytes_per_token(setup: TrainingSetup) -> float:
    """fp32 <-> bf16 casts around the quantised linears per token: input and output of each, in the
    forward, the backward (their gradients) and the recomputed forward, CAST_BYTES per element."""
    spec = setup.model
    elements = sum((lin.in_features + lin.out_features) * active_copies(lin, spec) * n
                   for kind, n in structure(spec).layers for lin in kind.linears)
    return CAST_BYTES * elements * dequant_uses(setup)


def mem_efficient_fp32_extra_s(ft: FlopsPerToken, eff: Efficiency, tokens: float, gpu: GpuSpec,
                               head_dim: int) -> float:
    """Seconds the fp32 attention adds over the 16-bit attention core_compute_s timed, for `tokens`
    tokens: SDPA runs the memory-efficient kernel on fp32 whatever kernel 16-bit inputs get, so its
    time is the memory-efficient kernel's 16-bit time on the GPU (timing.attention.kernel_efficiency;
    the step's own efficiencies where none is published) x the fp32 / 16-bit ratios at its head dim
    (mem_efficient_fp32_ratios) for the forward and recomputation and for the backward."""
    fwd_flops = ft.attention_fwd_hardware
    e_fwd, e_bwd = eff.attention_fwd_bwd
    me = kernel_efficiency(AttentionKernel.MEM_EFFICIENT, gpu.generation, head_dim, ft.seq_len)
    me_fwd, me_bwd = (me.fwd, me.bwd) if me is not None else (e_fwd, e_bwd)
    r_fwd, r_bwd = mem_efficient_fp32_ratios(head_dim)
    fp32 = fwd_flops / me_fwd * r_fwd + ft.attention_bwd / me_bwd * r_bwd
    sixteen = fwd_flops / e_fwd + ft.attention_bwd / e_bwd
    return (fp32 - sixteen) * tokens / eff.attention_peak_flops_per_s


def base_gemm_flops(setup: TrainingSetup, ft: FlopsPerToken) -> float:
    """FLOPs per token of the quantised linears' GEMMs: everything that runs but the attention core,
    the LM head and the LoRA adapters (forward, input gradient, recomputation; the frozen 4-bit base
    has no weight gradient)."""
    return max(0.0, ft.linear_hardware - ft.lm_head_fwd - ft.lm_head_bwd - adapter_flops(setup, ft))


def fp32_path_s(setup: TrainingSetup, gpu: GpuSpec, ft: FlopsPerToken, eff: Efficiency, tokens: float,
                m: EfficiencyModel, bw_bytes_per_s: float) -> float:
    """Seconds the fp32 path adds to the compute of `tokens` tokens on one GPU (0 without it)."""
    path = fp32_path(setup)
    if path is None:
        return 0.0
    linear_s = eff.linear_s(ft.linear_hardware * tokens)
    extra = linear_s * (1.0 - eff.width)                       # elementwise work at 4 bytes
    casts = 0.0 if path.base_fp32 else cast_bytes_per_token(setup)   # no-ops when bnb computes in fp32
    extra += (casts + adapter_bytes_per_token(setup)) * tokens / bw_bytes_per_s
    if path.autocast:
        return extra
    s16, s32 = _seconds_per_flop(setup, gpu, eff, tokens, m)
    fp32_gemms = ft.lm_head_fwd + ft.lm_head_bwd + adapter_flops(setup, ft)
    if path.base_fp32:
        fp32_gemms += base_gemm_flops(setup, ft)
    extra += fp32_gemms * tokens * (s32 - s16)
    if path.attention == "mem-efficient fp32":
        extra += mem_efficient_fp32_extra_s(ft, eff, tokens, gpu, setup.model.head_dim)
    elif path.attention == "eager fp32":
        extra += ft.attention_hardware * tokens * (s32 - 1.0 / (eff.attention_peak_flops_per_s * eff.value))
    return extra


def _seconds_per_flop(setup: TrainingSetup, gpu: GpuSpec, eff: Efficiency, tokens: float,
                      m: EfficiencyModel) -> tuple[float, float]:
    """(16-bit, fp32) seconds per matmul FLOP of the step's linear layers on `gpu`."""
    e32 = matmul_efficiency(gpu, "fp32", hidden_size=setup.model.hidden_size, tokens_per_micro_batch=tokens,
                            stack=eff.stack, m=m, override=eff.value if eff.overridden else None)
    return 1.0 / (eff.peak_flops_per_s * eff.value), 1.0 / (e32.peak_flops_per_s * e32.value)


def adapter_flops(setup: TrainingSetup, ft: FlopsPerToken) -> float:
    """FLOPs per token of the LoRA adapters' GEMMs: forward, backward, and the forward again under
    full recomputation."""
    return ft.adapter_fwd + ft.adapter_bwd + (ft.adapter_fwd if setup.grad_ckpt is GradCkpt.FULL else 0.0)


def _fp32_adapters_outside_path(setup: TrainingSetup) -> bool:
    """peft's fp32 adapters over a 16-bit model without autocast, not already counted by the QLoRA
    fp32 path: the setups fp32_adapter_gemm_s times and fp32_adapter_note names."""
    return setup.lora is not None and resolve_regime(setup).fp32_adapter_chain and fp32_path(setup) is None


def fp32_adapter_note(setup: TrainingSetup) -> str | None:
    """The assumption fp32_adapter_gemm_s times, for the estimate's notes (None where it adds nothing)."""
    if not _fp32_adapters_outside_path(setup):
        return None
    return ("LoRA adapters in fp32 over the 16-bit model, no autocast (peft autocast_adapter_dtype): each adapter "
            "casts its input to fp32 and runs its GEMMs at the fp32 peak (TF32 off for matmuls)")


def fp32_adapter_gemm_s(setup: TrainingSetup, gpu: GpuSpec, ft: FlopsPerToken, eff: Efficiency, tokens: float,
                        m: EfficiencyModel) -> float:
    """Seconds peft's fp32 adapters add over a 16-bit model without autocast (the regime's
    fp32_adapter_chain, trainplan.memory.regime) outside the QLoRA fp32 path (which counts them):
    `_cast_input_dtype` hands lora_A an fp32 input and both adapter weights are fp32 (peft
    `autocast_adapter_dtype`), so their GEMMs run at the fp32 peak, TF32 being off for matmuls
    (torch.backends.cuda.matmul.allow_tf32 = False), not at the 16-bit tensor-core rate the step's
    FLOPs are timed at."""
    if not ft.adapter_fwd or not _fp32_adapters_outside_path(setup):
        return 0.0
    s16, s32 = _seconds_per_flop(setup, gpu, eff, tokens, m)
    return adapter_flops(setup, ft) * tokens * (s32 - s16)
