"""How much of a GPU's dense peak a training step's matmuls achieve, and why.

The model (one formula per factor; every constant below names the measurements it comes from):

    e_matmul = E / (1 + kappa x E x ridge / h) x T / (T + T0)
    E        = MAMF fraction of the GPU x sustained fraction(ridge)

* MAMF fraction: the best single bf16/fp8 matmul a GPU reaches, as a fraction of its dense peak
  ("Maximum Achievable Matmul FLOPS", stas00/ml-engineering compute/accelerator/README.md, quoted
  in ../shared/reference/hardware.md section 1.4). No step can beat it.
* Sustained fraction: what a whole training step keeps of MAMF on large matmuls. It falls with the
  GPU's ridge point (peak FLOP/s / memory bandwidth): FLOPs grew faster than bandwidth from A100 to
  H100, so more of the step waits on memory and on communication kernels sharing the SMs
  ("A100 easier to saturate than H100", hardware.md section 3). Two anchors, fitted jointly with the
  other constants (see FIT below): A100 (ridge 153) 0.94 and H100 (ridge 295) 0.76; linear in
  between, clamped outside.
* kappa / h: non-matmul work (norms, activations, residual adds, RoPE, casts, softmax glue) moves
  bytes in proportion to the hidden size h per token while matmuls grow with h^2; its time relative
  to the matmuls is kappa x E x ridge / h. This is why small models run far below peak.
  kappa depends on how the framework runs those ops: fused kernels (Megatron, llm-foundry,
  torch.compile, Liger, Unsloth) or one eager PyTorch kernel per op (HF Trainer and its wrappers).
* T / (T + T0): tokens per micro-batch per GPU, T, are the M dimension of every matmul (and of the
  weight-gradient reduction); small micro-batches leave tiles and waves idle.
* Attention (QK^T, softmax, AV) runs in its own kernels with their own efficiency, counted in
  causal FLOPs (flash kernels skip masked blocks): the kernel that runs and its published forward
  and backward efficiency by sequence length (trainplan.timing.attention); where none is published
  for the kernel on that GPU, the fitted ridge interpolation `attention_efficiency`.

FIT: the constants were fitted once, jointly, by least squares on log throughput, to 41 published
measurements of the development set (../shared/ground_truth/published_dev.json): the 25 bf16 MosaicML
llm-foundry benchmark rows (FSDP pre-training, A100 40/80GB and H100, 1B-70B, sequence 2k-64k), the
9 torchtune 3B "flags" rows (eager, compiled, activation checkpointing, LoRA, QLoRA) and the 7 Qwen
README LoRA rows (HF Trainer + PEFT, 1.8B-72B), with the whole step model of trainplan.timing
(`python benchmarks/time_accuracy.py --fit` reruns it). No constant was set from a single case.
The FP8 row, the Qwen QLoRA and full-parameter rows, the torchtune 4090 and 8 x A100 rows and the
model cards were left out of the fit and are predictions. `benchmarks/time_accuracy.py` prints the comparison.
"""

from __future__ import annotations

from enum import StrEnum

from trainplan.enums import Framework, simple_enum
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen
from trainplan.specs import GpuSpec
from trainplan.timing.attention import AttentionKernel, kernel_efficiency


@simple_enum(StrEnum)
class KernelStack:
    FUSED = "fused"   # fused norm/activation/residual kernels (Megatron, llm-foundry, compile, Liger)
    EAGER = "eager"   # one PyTorch kernel per op (HF Trainer, PEFT, eager torchtune/litgpt)


# Best-shape matmul efficiency (MAMF / dense peak), hardware.md section 1.4
# (stas00/ml-engineering compute/accelerator/README.md, "Maximum Achievable Matmul FLOPS").
MAMF_FRACTION: dict[str, dict[str, float]] = {
    "a100-sxm4-40gb": {"bf16": 0.869}, "a100-sxm4-80gb": {"bf16": 0.869},
    "a800-sxm4-80gb": {"bf16": 0.869},                      # A100 die, NVLink capped
    "a100-pcie-40gb": {"bf16": 0.811}, "a100-pcie-80gb": {"bf16": 0.811},
    "a800-pcie-80gb": {"bf16": 0.811},                      # A100 PCIe die, NVLink bridge capped
    "h100-sxm": {"bf16": 0.803, "fp8": 0.709}, "h800-sxm": {"bf16": 0.803, "fp8": 0.709},
    # Meta's 96GB HBM2e H100 at 500 W: bf16 0.78, torchao's "pct_achievable_gemm_tops ... based on experimental
    # observation with sample large inputs" on it (torchao/testing/training/roofline_utils.py, the part whose
    # 2.4 TB/s it lists); FP8 not measured on it: the SXM5's
    "h100-sxm-96gb": {"bf16": 0.78, "fp8": 0.709},
    "h200-sxm": {"bf16": 0.803, "fp8": 0.734},             # "same as H100" for bf16
    "gh200": {"bf16": 0.838, "fp8": 0.776},
    "b200": {"bf16": 0.776, "fp8": 0.763}, "gb200": {"bf16": 0.729, "fp8": 0.723},
    # B300: torchao's roofline "pct_achievable_gemm_tops: 0.82  # From measurement on hardware" for
    # 'NVIDIA B300 SXM6 AC' (torchao/testing/training/roofline_utils.py@36027d8), one figure for its GEMMs
    "b300": {"bf16": 0.82, "fp8": 0.82},
    "mi300x": {"bf16": 0.514}, "mi325x": {"bf16": 0.604},
    # L20 (Ada, 119.5 TFLOP/s 16-bit dense, 864 GB/s): torch.matmul fp16 with fp32 accumulation at 114.40 TFLOP/s
    # (M=4096, N=16384, K=2048), the best of the L20 table in DefTruth/CUDA-Learn-Notes hgemm/README.md@03cb5355
    # ("f16_th"; cuBLAS 105-115 TFLOPS there); Ada's data-centre parts run bf16 at the fp16 rate
    "l20": {"bf16": 0.957},
    "gaudi2": {"bf16": 0.969, "fp8": 0.955}, "gaudi3": {"bf16": 0.741, "fp8": 0.769},
}
DEFAULT_MAMF_FRACTION = 0.80   # median of the NVIDIA rows above; stated when used


@frozen
class EfficiencyModel:
    """The fitted constants (see the module docstring, FIT). Frozen so a calibration can replace it."""

    # sustained fraction of MAMF at two ridge points (FLOP per byte of HBM bandwidth)
    ridge_lo: float = 153.0          # A100 SXM4 80GB: 312e12 / 2.039e12
    sustained_lo: float = 0.94       # -> E = 0.869 x 0.94 = 0.82 of peak on A100
    ridge_hi: float = 295.0          # H100 SXM: 989e12 / 3.35e12
    sustained_hi: float = 0.76       # -> E = 0.803 x 0.76 = 0.61 of peak on H100
    sustained_min: float = 0.55
    sustained_max: float = 0.95
    kappa: dict[KernelStack, float] = field(default_factory=lambda: {
        KernelStack.FUSED: 4.9, KernelStack.EAGER: 11.4})
    t0_tokens: float = 390.0         # tokens per micro-batch at which the M-dimension factor is 1/2
    # attention kernel efficiency (fraction of the 16-bit dense peak, causal FLOPs) at the anchors
    attention_lo: float = 0.49       # A100 (llm-foundry long-sequence rows; FlashAttention-2 reports
                                     # 50-73% of peak forward on A100)
    attention_hi: float = 0.17       # H100 (llm-foundry rows, Triton flash kernel for ALiBi)
    attention_min: float = 0.15
    attention_max: float = 0.60
    memory_bw_fraction: float = 0.80     # achieved fraction of HBM bandwidth for streaming kernels
    collective_fraction: float = 0.80    # NCCL bus bandwidth / link bandwidth: 78% A100 NVLink3,
                                         # 82% H200 NVLink4 (hardware.md 1.3, stas00 network/README.md)


DEFAULT_MODEL = EfficiencyModel()

# Frameworks whose own model code runs fused norm/activation/residual kernels without torch.compile.
# Not torchtitan: its decoders are eager PyTorch (torchtitan v0.2.2 models/llama3/model/model.py:
# nn.RMSNorm, `w2(F.silu(w1(x)) * w3(x))`, RoPE as a complex multiply in fp32) and `compile.enable`
# defaults to False (config/job_config.py `class Compile`); its published benchmarks gain 16% from
# compile alone (benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3).
_FUSED_FRAMEWORKS = frozenset({Framework.MEGATRON, Framework.FSDP, Framework.UNSLOTH})


def kernel_stack(framework: Framework, *, compiled: bool | None = None, liger: bool = False) -> KernelStack:
    """Fused: Megatron, FSDP pre-training stacks (llm-foundry class), Unsloth, anything under
    torch.compile or with Liger kernels. Eager: HF Trainer and its wrappers (LLaMA-Factory, ms-swift,
    axolotl, DeepSpeed via HF), torchtune, litgpt and torchtitan without compile (their default)."""
    if compiled or liger or (compiled is None and framework in _FUSED_FRAMEWORKS):
        return KernelStack.FUSED
    return KernelStack.EAGER


# Where the catalog has no dense peak for a dtype, the peak its matmuls run at instead. bf16 falls
# back to fp32, not fp16: a GPU without bf16 tensor cores (Volta, Turing) runs bf16 emulated on its
# CUDA cores (torch.cuda.is_bf16_supported(including_emulation=True) accepts them below compute
# capability 8.0 only by trying a bf16 tensor, torch/cuda/__init__.py), never on the fp16 tensor
# cores. fp16 falls back to bf16 (Gaudi 2 publishes only bf16; its MME runs both).
_PEAK_FALLBACK = {"bf16": ("fp32",), "fp16": ("bf16", "fp32"), "fp8": ("bf16", "fp16", "fp32")}


def peak_for(gpu: GpuSpec, dtype: str) -> tuple[float, str]:
    """Dense peak FLOP/s for `dtype`, or its fallback (_PEAK_FALLBACK) where the catalog lacks one.
    Returns (FLOP/s, dtype actually used)."""
    for candidate in (dtype, *_PEAK_FALLBACK.get(dtype, ("bf16", "fp32"))):
        value = gpu.peak_flops(candidate)
        if value:
            return value, candidate
    raise TrainplanError(f"GPU {gpu.id} has no dense peak FLOP/s in the catalog; cannot estimate time")


def mamf_fraction(gpu: GpuSpec, dtype: str) -> tuple[float, bool]:
    """(MAMF / peak, known?) for `gpu` and `dtype`; DEFAULT_MAMF_FRACTION when not measured.

    FP8 not measured on a GPU whose bf16 ceiling is: that GPU's bf16 fraction (known? False), not the
    NVIDIA median. The FP8 and bf16 GEMMs run on the same tensor cores under the same clock and power
    limits; where both are measured the FP8 fraction is at or below the bf16 one (H100 0.709 / 0.803,
    H200 0.734 / 0.803, B200 0.763 / 0.776, GB200 0.723 / 0.729, Gaudi 2 0.955 / 0.969; Gaudi 3 0.769 /
    0.741 the exception), so it is a ceiling, while the median (0.80) would give MI300X, measured at
    0.514 in bf16, 0.80 in FP8."""
    row = MAMF_FRACTION.get(gpu.id, {})
    key = "fp8" if dtype == "fp8" else "bf16"
    if key in row:
        return row[key], True
    if bf16_ceiling_stands_in(gpu, dtype):
        return row["bf16"], False
    return DEFAULT_MAMF_FRACTION, False


def bf16_ceiling_stands_in(gpu: GpuSpec, dtype: str) -> bool:
    """Whether `mamf_fraction` gives `gpu`'s FP8 GEMMs its measured bf16 ceiling (FP8 itself not measured)."""
    row = MAMF_FRACTION.get(gpu.id, {})
    return dtype == "fp8" and "fp8" not in row and "bf16" in row


def memory_bw(gpu: GpuSpec, m: EfficiencyModel = DEFAULT_MODEL) -> float:
    """Achieved HBM bandwidth (bytes/s) of memory-bound kernels: the catalog's bandwidth (1 TB/s where
    unknown) x the model's memory_bw_fraction."""
    return (gpu.memory_bw_bytes_per_s or 1e12) * m.memory_bw_fraction


def ridge_point(peak_flops_per_s: float, memory_bw_bytes_per_s: float | None) -> float:
    """Peak FLOP/s per byte/s of HBM bandwidth (FLOP/byte). Unknown bandwidth: the A100 anchor."""
    if not memory_bw_bytes_per_s:
        return DEFAULT_MODEL.ridge_lo
    return peak_flops_per_s / memory_bw_bytes_per_s


def _interpolate(ridge: float, lo: float, hi: float, m: EfficiencyModel, floor: float, cap: float) -> float:
    slope = (hi - lo) / (m.ridge_hi - m.ridge_lo)
    return min(cap, max(floor, lo + slope * (ridge - m.ridge_lo)))


def sustained_fraction(ridge: float, m: EfficiencyModel = DEFAULT_MODEL) -> float:
    """Fraction of MAMF a whole step sustains on large matmuls, linear in the ridge point."""
    return _interpolate(ridge, m.sustained_lo, m.sustained_hi, m, m.sustained_min, m.sustained_max)


def attention_efficiency(ridge: float, m: EfficiencyModel = DEFAULT_MODEL) -> float:
    """Achieved fraction of the 16-bit peak in the attention kernels (causal FLOPs)."""
    return _interpolate(ridge, m.attention_lo, m.attention_hi, m, m.attention_min, m.attention_max)


def width_factor(hidden_size: int, e_max: float, ridge: float, stack: KernelStack,
                 m: EfficiencyModel = DEFAULT_MODEL) -> float:
    """1 / (1 + kappa E ridge / h): memory-bound non-matmul work relative to the matmuls."""
    return 1.0 / (1.0 + m.kappa[stack] * e_max * ridge / hidden_size)


def tokens_factor(tokens_per_micro_batch: float, m: EfficiencyModel = DEFAULT_MODEL) -> float:
    """T / (T + T0): matmul M dimension = tokens per micro-batch per GPU."""
    return tokens_per_micro_batch / (tokens_per_micro_batch + m.t0_tokens)


@frozen
class Efficiency:
    """The matmul efficiency and each factor it is the product of (for the chain and notes)."""

    value: float                 # achieved fraction of dense peak for the linear layers
    attention: float             # achieved fraction of the 16-bit peak for the attention core (forward
                                 # + backward at 2 forwards: 3 / (1 / fwd + 2 / bwd))
    mamf_fraction: float
    mamf_known: bool
    sustained: float
    width: float
    tokens: float
    ridge: float
    stack: KernelStack
    peak_flops_per_s: float      # peak used for the linear layers
    peak_dtype: str
    attention_peak_flops_per_s: float
    overridden: bool = False
    attention_fwd: float = 0.0   # forward (and recomputation) of the attention core; 0: `attention`
    attention_bwd: float = 0.0   # its backward, FLOPs counted as 2 forwards; 0: `attention`
    attention_kernel: str = ""   # trainplan.timing.attention.AttentionKernel that runs ("" unknown)
    attention_source: str = ""   # the published benchmark, or "" for the fitted interpolation
    sustained_ridge: float = 0.0  # the ridge `sustained` is read at: the 16-bit one under FP8 (0: `ridge`)

    def linear_s(self, flops: float) -> float:
        """Seconds of `flops` outside the attention core at this efficiency: the matmuls and, through `width`,
        the non-matmul work that goes with them (of it, the share 1 - width)."""
        return flops / (self.peak_flops_per_s * self.value)

    @property
    def attention_fwd_bwd(self) -> tuple[float, float]:
        """(forward, backward) attention efficiency: the kernel's published pair, else `attention` for both."""
        return self.attention_fwd or self.attention, self.attention_bwd or self.attention


def matmul_efficiency(gpu: GpuSpec, dtype: str, *, hidden_size: int, tokens_per_micro_batch: float,
                      stack: KernelStack, m: EfficiencyModel = DEFAULT_MODEL,
                      override: float | None = None, attention_kernel: AttentionKernel | None = None,
                      seq_len: int = 0, head_dim: int = 0) -> Efficiency:
    """e = MAMF x sustained(ridge) x width(h) x tokens(T); see the module docstring. With an
    `attention_kernel` (and the sequence length and head dim it runs at) the attention efficiency is
    the kernel's published one (trainplan.timing.attention.kernel_efficiency) where there is one."""
    peak, used = peak_for(gpu, dtype)
    attn_peak, _ = peak_for(gpu, "bf16") if dtype in ("fp8", "bf16") else peak_for(gpu, dtype)
    ridge = ridge_point(peak, gpu.memory_bw_bytes_per_s)
    attn_ridge = ridge_point(attn_peak, gpu.memory_bw_bytes_per_s)
    mamf, known = mamf_fraction(gpu, used)
    # The sustained fraction is a property of the GPU, fitted on 16-bit steps against their ridge:
    # FP8 takes it at the 16-bit ridge. What FP8's doubled rate adds in memory-bound time is counted
    # once, by the width factor at the FP8 ridge below and the quantisation traffic (trainplan.timing.fp8);
    # at the FP8 ridge (591 on H100, outside the fitted 153-295) it would count a second time.
    sustained_ridge = attn_ridge if used == "fp8" else ridge
    sustained = sustained_fraction(sustained_ridge, m)
    e_max = mamf * sustained
    width = width_factor(hidden_size, e_max, ridge, stack, m)
    tok = tokens_factor(tokens_per_micro_batch, m)
    value = override if override is not None else e_max * width * tok
    fitted = attention_efficiency(attn_ridge, m)
    published = (kernel_efficiency(attention_kernel, gpu.generation, head_dim, seq_len)
                 if attention_kernel is not None and attention_kernel is not AttentionKernel.EAGER else None)
    fwd, bwd = (published.fwd, published.bwd) if published else (fitted, fitted)
    return Efficiency(value=value, attention=3.0 / (1.0 / fwd + 2.0 / bwd), mamf_fraction=mamf,
                      mamf_known=known, sustained=sustained, width=width, tokens=tok, ridge=ridge,
                      stack=stack, peak_flops_per_s=peak, peak_dtype=used,
                      attention_peak_flops_per_s=attn_peak, overridden=override is not None,
                      attention_fwd=fwd, attention_bwd=bwd,
                      attention_kernel=attention_kernel.value if attention_kernel else "",
                      attention_source=published.source if published else "", sustained_ridge=sustained_ridge)
