"""Which attention kernel runs, and what fraction of the 16-bit peak it reaches, by GPU generation.

The user's choice (trainplan.enums.Attention: flash / sdpa / eager) is not the kernel: the kernel is
what the framework dispatches for that choice on that GPU. `attention_kernel` is the rule, read
from the frameworks:

* PyTorch SDPA (`sdpa`): backends tried in priority order, the first whose checks pass runs
  (torch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp `priority_order`, `select_sdp_backend`).
  The default order is flash (FlashAttention-2 kernels, sm80+, fp16/bf16, head_dim <= 256:
  `check_flash_attention_hardware_support`, `check_head_dim_size_flash`), memory-efficient, math.
  cuDNN goes first only on sm90/sm100 with cuDNN > 9.15 (`check_prefer_cudnn_attention`, torch
  main 001f694; torch 2.5.0 preferred it on H100, 2.5.1 deprioritised it again): `sdpa_cudnn_first`.
* Transformer Engine (Megatron's default, --transformer-impl transformer_engine): FusedAttention
  (cuDNN) is chosen over FlashAttention on compute capability >= 9.0 ("Disabling FlashAttention to
  give FusedAttention preference on Hopper+", transformer_engine/pytorch/attention/
  dot_product_attention/utils.py `get_attention_backend`); FlashAttention-2 below that.
* A padding mask under SDPA: transformers passes SDPA no mask (`is_causal=True`) only when the 2D
  attention mask has no zero (modeling_attn_mask_utils.py `AttentionMaskConverter._ignore_causal_mask_sdpa`
  in 4.x, masking_utils.py `_ignore_causal_mask_sdpa` from 4.53: "allowing to dispatch to the flash
  attention kernel (that can otherwise not be used if a custom `attn_mask` is passed)"). With padding in
  the mask it builds the 4D causal-and-padding mask and calls SDPA with `attn_mask` and
  `is_causal=False` (integrations/sdpa_attention.py); the flash backend takes no `attn_mask`
  (sdp_utils.cpp `check_for_attn_mask` in the flash constraints), so the memory-efficient kernel runs,
  over every (query, key) block: the full s x s FLOPs (trainplan.timing.flops.kernel_convention).
  `padded_sdpa` is that rule; frameworks that do not run transformers' attention (Megatron/TE) are not
  affected.
* Hugging Face `flash_attention_2` is the flash-attn 2 package on every GPU; FlashAttention-3
  (flash_attn_interface) runs on Hopper only, FlashAttention-4 (flash_attn/cute) on sm100.
* llm-foundry MPT (ALiBi) runs attn_impl='triton' by default in its benchmark sweep
  (scripts/train/benchmarking/submit_benchmarks.py `--attn_impl` default 'triton'): the Triton
  flash kernel with an additive ALiBi bias, not FlashAttention-2.

Efficiency (`kernel_efficiency`) comes from published kernel benchmarks (ATTENTION_TFLOPS below, a
`source` per row), as TFLOP/s over the benchmarked GPU's dense 16-bit peak, by sequence length
(interpolated in log2 sequence length between published points, clamped at the ends), forward and
backward separately. Benchmarks count the backward as 2.5 forwards (flash_attn benchmark_flash_attention.py
`flops(..., mode="bwd")`: 2 for the gradients + 0.5 for the QK^T recomputation); trainplan counts it as
2 (trainplan.timing.flops), so a published backward rate R takes the time 2.5 F / R and is used as
0.8 R against trainplan's 2 F. Where only a non-causal backward is published, the causal backward is
scaled by the same kernel's causal / non-causal forward ratio at that length (stated per row).
The memory-efficient kernel below head dim 128 runs a wider kernel than its head dim needs, and above
128 its generic kernel; both are scaled by mem_efficient_head_dim_factor (published CUTLASS times by
head dim).
Generations or kernels without a published table fall back to the fitted ridge interpolation
(trainplan.timing.efficiency.attention_efficiency), which is what trainplan used for every kernel before.
"""

from __future__ import annotations

import bisect
import math
from enum import StrEnum

from trainplan.enums import Attention, Framework, Position, simple_enum
from trainplan.frozen import frozen


@simple_enum(StrEnum)
class AttentionKernel:
    FA2 = "flash-attn-2"            # Dao 2023; SDPA flash backend, HF flash_attention_2, TE on Ampere
    FA3 = "flash-attn-3"            # Shah et al. 2024, Hopper (flash_attn_interface)
    FA4 = "flash-attn-4"            # Blackwell sm100 (flash_attn/cute, CuTe DSL)
    CUDNN = "cudnn"                 # cuDNN fused attention: TE FusedAttention, SDPA cudnn backend
    TRITON_BIAS = "triton-bias"     # Triton flash kernel with an additive bias (llm-foundry ALiBi)
    MEM_EFFICIENT = "sdpa-mem-efficient"   # SDPA's xformers/cutlass kernel (fp32, head_dim > 256, sm < 80)
    EAGER = "eager"                 # materialised s x s scores: matmuls + softmax traffic (timing.estimate)


# Dense 16-bit peaks of the GPUs the benchmarks ran on (FLOP/s): H100 SXM5 989.4 TFLOPS (NVIDIA H100
# datasheet), B200 2250 TFLOPS (catalog b200, HGX B200 1000 W).
_H100_PEAK = 989.4e12
_B200_PEAK = 2250e12
_SEQ = (512, 1024, 2048, 4096, 8192, 16384)
_FA3 = "Shah et al. 2024, FlashAttention-3 (arXiv 2407.08608v2), H100 80GB SXM5 bf16, Fig. 5 (forward) / Fig. 6 (backward)"


@frozen
class KernelRow:
    """Published TFLOP/s of one kernel on one GPU generation at one head dim, by sequence length."""

    seq: tuple[int, ...]
    fwd_causal_tflops: tuple[float, ...]
    bwd_tflops: tuple[float, ...]              # in the benchmark's 2.5 x forward FLOP count
    peak_flops_per_s: float
    source: str
    bwd_causal: bool = False                   # False: non-causal backward, scaled (module docstring)
    fwd_noncausal_tflops: tuple[float, ...] = ()


def _row(seq: tuple[int, ...], fwd: tuple[float, ...], bwd: tuple[float, ...], peak: float, source: str, *,
         bwd_causal: bool = False, fwd_noncausal_tflops: tuple[float, ...] = ()) -> KernelRow:
    return KernelRow(seq=seq, fwd_causal_tflops=fwd, bwd_tflops=bwd, peak_flops_per_s=peak, source=source,
                     bwd_causal=bwd_causal, fwd_noncausal_tflops=fwd_noncausal_tflops)


# (kernel, generation, head_dim) -> published row. Kernels without a row on a generation (FA2 and the
# Triton ALiBi kernel on Ampere, anything on Ada/Volta/Turing/AMD/Gaudi, SDPA memory-efficient off Ampere) take
# the fitted ridge interpolation (timing.efficiency.attention_efficiency: 0.49 A100, 0.17 H100).
ATTENTION_TFLOPS: dict[tuple[AttentionKernel, str, int], KernelRow] = {
    # --- Hopper (FA3 paper; fwd causal = Fig. 5 d-f, fwd non-causal = Fig. 5 a-c, bwd non-causal = Fig. 6)
    (AttentionKernel.FA2, "hopper", 64): _row(
        _SEQ, (180, 229, 262, 284, 295, 299), (198, 238, 264, 279, 287, 291), _H100_PEAK, _FA3,
        fwd_noncausal_tflops=(282, 306, 318, 321, 322, 324)),
    (AttentionKernel.FA2, "hopper", 128): _row(
        _SEQ, (191, 260, 298, 319, 333, 335), (214, 260, 291, 310, 318, 322), _H100_PEAK, _FA3,
        fwd_noncausal_tflops=(309, 350, 362, 368, 370, 370)),
    (AttentionKernel.FA2, "hopper", 256): _row(
        _SEQ, (208, 251, 278, 293, 297, 298), (214, 260, 291, 310, 318, 322), _H100_PEAK,
        _FA3 + "; no hd256 backward published: the hd128 backward",
        fwd_noncausal_tflops=(275, 313, 321, 323, 324, 326)),
    (AttentionKernel.FA3, "hopper", 64): _row(
        _SEQ, (197, 265, 371, 420, 460, 473), (272, 363, 422, 453, 472, 474), _H100_PEAK, _FA3,
        fwd_noncausal_tflops=(333, 392, 460, 476, 496, 497)),
    (AttentionKernel.FA3, "hopper", 128): _row(
        _SEQ, (292, 423, 521, 579, 602, 616), (316, 424, 501, 542, 559, 561), _H100_PEAK, _FA3,
        fwd_noncausal_tflops=(467, 565, 625, 638, 646, 648)),
    (AttentionKernel.FA3, "hopper", 256): _row(
        _SEQ, (286, 427, 537, 612, 628, 642), (316, 424, 501, 542, 559, 561), _H100_PEAK,
        _FA3 + "; no hd256 backward published: the hd128 backward",
        fwd_noncausal_tflops=(482, 639, 707, 736, 746, 756)),
    (AttentionKernel.CUDNN, "hopper", 64): _row(
        _SEQ, (225, 288, 334, 363, 379, 388), (266, 348, 395, 417, 432, 433), _H100_PEAK, _FA3 + " (cuDNN series)",
        fwd_noncausal_tflops=(335, 373, 395, 408, 412, 413)),
    (AttentionKernel.CUDNN, "hopper", 128): _row(
        _SEQ, (315, 410, 484, 518, 529, 539), (305, 408, 465, 499, 518, 516), _H100_PEAK, _FA3 + " (cuDNN series)",
        fwd_noncausal_tflops=(497, 574, 617, 609, 600, 595)),
    (AttentionKernel.CUDNN, "hopper", 256): _row(
        _SEQ, (308, 391, 450, 483, 497, 509), (305, 408, 465, 499, 518, 516), _H100_PEAK,
        _FA3 + " (cuDNN series); no hd256 backward published: the hd128 backward",
        fwd_noncausal_tflops=(470, 546, 580, 581, 580, 581)),
    # --- Blackwell (B200): FA4 at seq 8k only, flat in sequence length (no curve published)
    (AttentionKernel.FA4, "blackwell", 128): _row(
        (8192,), (1418.1,), (1208.6,), _B200_PEAK,
        "Dao-AILab/flash-attention PR #2280 (sm100 FA4, bf16, hd128, seq 8192, batch 4, 16 heads): "
        "causal fwd 1418.1, causal bwd (2CTA) 1208.6 TFLOPS", bwd_causal=True),
    (AttentionKernel.FA4, "blackwell", 192): _row(
        (8192,), (1494.1,), (971.1,), _B200_PEAK,
        "Dao-AILab/flash-attention PR #2270 (sm100 FA4, hd192 / hdim_v 128, seq 8192): causal fwd "
        "1494.1, causal bwd 971.1 TFLOPS", bwd_causal=True),
    # FA2 on B200: flash_attn 2.7.4 benchmark_flash_attention.py, non-causal hd64 (the only one published)
    (AttentionKernel.FA2, "blackwell", 64): _row(
        _SEQ, (308.40, 359.30, 380.99, 306.94, 343.07, 379.44), (243.05, 280.64, 301.61, 314.71, 329.09, 333.95),
        _B200_PEAK, "Dao-AILab/flash-attention issue #1589 (B200, flash_attn 2.7.4.post1, non-causal hd64; "
        "used for causal and every head dim)", bwd_causal=True),
    # --- SDPA memory-efficient (xformers' CUTLASS kernels, which PyTorch ships since its copy at
    # xformers 1d635e19, pytorch PR #101847) on A100, non-causal, no bias, 16-bit, hd128. It runs
    # non-causal under transformers' padding mask, where trainplan counts the full s x s FLOPs
    # (flops.kernel_convention), so no causal scaling; used as is where it runs causal (fp32, head dim
    # > 256: an optimistic reading there). Forward: facebookresearch/xformers issue #712 "fMHA FW -
    # A100", nv1106 column: b16 1-4096-8-128 708.0 us, b16 2-8192-8-128 5086.0 us. Backward:
    # NVIDIA/cutlass PR #992 "Update fMHA kernels" (the same kernel, `attention backward`, v3 column,
    # the author's A100): f16 2-4096-8-128 4016.8 us, f16 2-8192-8-128 15580.3 us. TFLOP/s = 4 B H S^2 D
    # (x 2.5 backward) / time. No H100 figure is published: Hopper's row is derived below.
    (AttentionKernel.MEM_EFFICIENT, "ampere", 128): _row(
        (4096, 8192), (97.0, 108.1), (85.5, 88.2), 312e12,
        "xformers issue #712 (A100 fMHA forward) and NVIDIA/cutlass PR #992 (fMHA backward), non-causal hd128",
        bwd_causal=True),
}
# SDPA memory-efficient on Hopper: nothing published. Its kernels are sm80 CUTLASS code (mma.sync, no
# wgmma/TMA), as FlashAttention-2's are; on H100 they take the A100 row scaled by FA2's own H100 / A100
# ratio at the same shape (non-causal hd128, seq 8k): forward 370 (FA3 paper Fig. 5b, FA2 series) /
# 222 (FA2 paper, Dao 2023, Fig. 5b, A100 80GB SXM4) = 1.667, backward 318 (FA3 paper Fig. 6) / 196 (FA2
# paper Fig. 6b) = 1.622. A derived row, stated as such.
_SM80_ON_HOPPER_FWD, _SM80_ON_HOPPER_BWD = 370.0 / 222.0, 318.0 / 196.0
_me = ATTENTION_TFLOPS[(AttentionKernel.MEM_EFFICIENT, "ampere", 128)]
ATTENTION_TFLOPS[(AttentionKernel.MEM_EFFICIENT, "hopper", 128)] = _row(
    _me.seq, tuple(v * _SM80_ON_HOPPER_FWD for v in _me.fwd_causal_tflops),
    tuple(v * _SM80_ON_HOPPER_BWD for v in _me.bwd_tflops), _H100_PEAK,
    _me.source + "; H100 = A100 x FA2's H100/A100 ratio (forward 370/222, backward 318/196: FA3 paper Fig. 5-6, "
    "FA2 paper Fig. 5-6), derived, nothing published", bwd_causal=True)
# Blackwell cuDNN: FA4 is "up to 1.3x over cuDNN 9.13" on B200 bf16 (Zadouri, Shah, Dao et al. 2026,
# FlashAttention-4, as summarised by ai-primer.com "FlashAttention-4 benchmarks 1613 TFLOPs/s on B200"):
# cuDNN taken as FA4 / 1.3, a lower bound.
_CUDNN_VS_FA4 = 1.3
for _hd in (128, 192):
    _fa4 = ATTENTION_TFLOPS[(AttentionKernel.FA4, "blackwell", _hd)]
    ATTENTION_TFLOPS[(AttentionKernel.CUDNN, "blackwell", _hd)] = _row(
        _fa4.seq, tuple(v / _CUDNN_VS_FA4 for v in _fa4.fwd_causal_tflops),
        tuple(v / _CUDNN_VS_FA4 for v in _fa4.bwd_tflops), _fa4.peak_flops_per_s,
        _fa4.source + "; cuDNN 9.13 = FA4 / 1.3 (FlashAttention-4 paper: FA4 up to 1.3x over cuDNN on B200)",
        bwd_causal=True)

BWD_FLOP_RATIO = 2.0 / 2.5     # trainplan's backward (2 forwards) over the benchmarks' (2.5 forwards)


@frozen
class KernelCurve:
    """Efficiencies (fraction of peak, trainplan FLOP counts) at published log2 sequence lengths."""

    log_seq: tuple[float, ...]
    fwd: tuple[float, ...]
    bwd: tuple[float, ...]
    source: str


def _curve(row: KernelRow) -> KernelCurve:
    fwd = tuple(t * 1e12 / row.peak_flops_per_s for t in row.fwd_causal_tflops)
    scale = ((1.0,) * len(row.seq) if row.bwd_causal or not row.fwd_noncausal_tflops else
             tuple(c / n for c, n in zip(row.fwd_causal_tflops, row.fwd_noncausal_tflops)))
    bwd = tuple(t * 1e12 / row.peak_flops_per_s * BWD_FLOP_RATIO * s for t, s in zip(row.bwd_tflops, scale))
    return KernelCurve(log_seq=tuple(math.log2(s) for s in row.seq), fwd=fwd, bwd=bwd, source=row.source)


CURVES: dict[tuple[AttentionKernel, str, int], KernelCurve] = {k: _curve(r) for k, r in ATTENTION_TFLOPS.items()}
_HEAD_DIMS: dict[tuple[AttentionKernel, str], tuple[int, ...]] = {}
for _k, _g, _h in CURVES:
    _HEAD_DIMS[(_k, _g)] = tuple(sorted(_HEAD_DIMS.get((_k, _g), ()) + (_h,)))


def _at(xs: tuple[float, ...], ys: tuple[float, ...], x: float) -> float:
    """Piecewise-linear in x (log2 seq), clamped at the ends."""
    i = bisect.bisect_left(xs, x)
    if i == 0:
        return ys[0]
    if i == len(xs):
        return ys[-1]
    t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
    return ys[i - 1] + t * (ys[i] - ys[i - 1])


@frozen
class KernelEfficiency:
    fwd: float          # fraction of the 16-bit peak, forward (and recomputation) FLOPs
    bwd: float          # fraction of the 16-bit peak, backward FLOPs counted as 2 forwards
    source: str


# The memory-efficient kernel off head dim 128. PyTorch's CUTLASS forward/backward dispatch
# (mem_eff_attention/kernels/cutlassF.h, cutlassB.h) takes the first kernel whose kMaxK covers the
# head dim: 64, then 128, then 65536 (the generic kernel) above 128. A head dim between two of them
# runs the larger kernel and pays for its P.V tile width, so its FLOP rate falls below hd128's.
# Published times at one shape (NVIDIA/cutlass PR #992 "Update fMHA kernels", v3 column, f16,
# B=32 M=197 H=16, the author's A100): forward K=64 108.1 us, K=80 160.2, K=128 174.3; backward 303.4,
# 409.3, 484.2. Relative efficiency = (K / 128) / (time(K) / time(128)); between 80 and 128 the time
# is interpolated linearly in K (one kernel), below 64 taken at K=64's time (the kMaxK=64 kernel).
# Above 128 the generic kernel: facebookresearch/xformers PR #587 (A100, f16, B=64/16 M=1024 H=16, its
# pr587 column) forward K=128 3090.0 us, K=256 7031.8 us; backward (B=16) K=128 6566.2 us, K=256
# 31674.1 us: twice the FLOPs at 0.879 (forward) / 0.415 (backward) of hd128's rate, taken for every
# head dim above 128 (the one kernel; measured at 256 only).
_ME_TIMES_US = {64: (108.1, 303.4), 80: (160.2, 409.3), 128: (174.3, 484.2)}
_ME_GENERIC_TIMES_US = {128: (3090.0, 6566.2), 256: (7031.8, 31674.1)}
_ME_HEAD_DIM_SOURCE = ("NVIDIA/cutlass PR #992 (fMHA v3, f16 32-197-16-K on A100): head dim {hd} runs the "
                       "kMaxK={kmax} kernel at {fwd:.0%} (forward) / {bwd:.0%} (backward) of hd128's FLOP rate")
_ME_GENERIC_SOURCE = ("xformers PR #587 (A100, f16, M=1024 H=16, K=128 vs K=256): head dim {hd} runs the generic "
                      "kMaxK=65536 kernel at {fwd:.0%} (forward) / {bwd:.0%} (backward) of hd128's FLOP rate")


def mem_efficient_head_dim_factor(head_dim: int) -> tuple[float, float] | None:
    """(forward, backward) FLOP-rate factor of the memory-efficient kernel at `head_dim` relative to
    128 (see _ME_TIMES_US, _ME_GENERIC_TIMES_US); None at 128, where the published hd128 row applies."""
    if head_dim == 128:
        return None
    if head_dim > 128:
        t128, t256 = _ME_GENERIC_TIMES_US[128], _ME_GENERIC_TIMES_US[256]
        return tuple(2.0 / (t / t_ref) for t, t_ref in zip(t256, t128))
    t128 = _ME_TIMES_US[128]
    if head_dim <= 64:
        times = _ME_TIMES_US[64]
    else:   # the kMaxK=128 kernel: time linear in K through the K=80 and K=128 points
        w = (head_dim - 80) / (128 - 80)
        times = tuple(a + w * (b - a) for a, b in zip(_ME_TIMES_US[80], t128))
    return tuple((head_dim / 128) / (t / t_ref) for t, t_ref in zip(times, t128))


def kernel_efficiency(kernel: AttentionKernel, generation: str, head_dim: int, seq_len: int) -> KernelEfficiency | None:
    """Published efficiency of `kernel` on `generation` at the nearest published head dim (in log
    distance) and `seq_len`; None where nothing is published (the caller falls back). The
    memory-efficient kernel off head dim 128 is scaled by mem_efficient_head_dim_factor."""
    dims = _HEAD_DIMS.get((kernel, generation))
    if not dims:
        return None
    hd = min(dims, key=lambda d: abs(math.log2(max(1, head_dim) / d)))
    c = CURVES[(kernel, generation, hd)]
    x = math.log2(max(1, seq_len))
    fwd, bwd, source = _at(c.log_seq, c.fwd, x), _at(c.log_seq, c.bwd, x), c.source
    factor = mem_efficient_head_dim_factor(head_dim) if kernel is AttentionKernel.MEM_EFFICIENT and hd == 128 else None
    if factor is not None:
        fwd, bwd = fwd * factor[0], bwd * factor[1]
        template = _ME_GENERIC_SOURCE if head_dim > 128 else _ME_HEAD_DIM_SOURCE
        source += "; " + template.format(hd=head_dim, kmax=64 if head_dim <= 64 else 128, fwd=factor[0], bwd=factor[1])
    return KernelEfficiency(fwd=fwd, bwd=bwd, source=source)


_DATACENTER = ("hopper", "blackwell")   # sm90 / sm100; GeForce Blackwell (sm120) is excluded by the caller
_TE_FRAMEWORKS = frozenset({Framework.MEGATRON})


def padded_sdpa(framework: Framework, attention: Attention, padding_mask: bool) -> bool:
    """SDPA called with transformers' 4D padding-and-causal mask (module docstring): the
    memory-efficient kernel over the whole s x s."""
    return padding_mask and attention is Attention.SDPA and framework not in _TE_FRAMEWORKS


def attention_kernel(framework: Framework, attention: Attention, generation: str, dtype: str, head_dim: int,
                     *, position: Position = Position.ROPE, consumer: bool = False,
                     sdpa_cudnn_first: bool = False, flash_version: int = 2,
                     padding_mask: bool = False, te: bool = False) -> AttentionKernel:
    """The kernel that runs for the user's `attention` choice (module docstring has the sources).

    generation: the catalog's GpuSpec.generation; consumer: a desktop die (catalog.gpu_text.desktop_die:
    GeForce and the RTX workstation cards; sm120 Blackwell, sm89 Ada get neither FA3/FA4 nor TE's Hopper+
    preference). dtype: the attention's compute dtype ('fp32'
    disables every flash kernel); padding_mask: the model gets a mask with padding (padded_sdpa); te: the
    model runs Transformer Engine's DotProductAttention outside Megatron (Implementation.te_attention)."""
    if attention is Attention.EAGER:
        return AttentionKernel.EAGER
    gen = generation if not consumer else "consumer-" + generation
    # FA2 needs sm80+ (check_flash_attention_hardware_support)
    pre_sm80 = generation in ("pascal", "volta", "turing")
    if dtype == "fp32" or head_dim > 256 or pre_sm80:
        # SDPA: flash needs fp16/bf16, head_dim <= 256 and sm80+ -> memory-efficient (sdp_utils.cpp)
        return AttentionKernel.MEM_EFFICIENT
    if framework in _TE_FRAMEWORKS or te:
        return AttentionKernel.CUDNN if gen in _DATACENTER else AttentionKernel.FA2
    if padded_sdpa(framework, attention, padding_mask):
        return AttentionKernel.MEM_EFFICIENT
    if position is Position.ALIBI and framework is Framework.FSDP:
        return AttentionKernel.TRITON_BIAS
    if attention is Attention.SDPA:
        return AttentionKernel.CUDNN if sdpa_cudnn_first and gen in _DATACENTER else AttentionKernel.FA2
    if flash_version >= 3 and gen == "hopper":
        return AttentionKernel.FA3
    if flash_version >= 4 and gen == "blackwell":
        return AttentionKernel.FA4
    return AttentionKernel.FA2
