"""The dense attention mask the memory-efficient kernel reads when SDPA gets transformers' 4D mask.

With padding in the 2D attention mask, transformers builds the 4D causal-and-padding mask
([batch, 1, s, s], in the model's dtype) and calls SDPA with it (trainplan.timing.attention
`padded_sdpa`); the memory-efficient (CUTLASS) kernel then adds a bias tile to every score tile it
computes: `p.bias_ptr` in aten/src/ATen/native/transformers/cuda/attention.cu / attention_backward.cu,
strides 0 over the heads it broadcasts across. Nothing is shared between heads, so each pass reads
batch x heads x s x s mask elements: per token and attention layer, heads x s elements.

What it costs is measured, not assumed: pytorch/pytorch PR #137036 "Update FlexAttention benchmarks"
(drisspg, 2024-10-29; benchmarks/transformer/score_mod.py, bf16, B=4 H=16 M=N=16384 D=64, a Hopper
GPU: the table has a FlashAttention-3 column) times SDPA's `efficient` backend without a mask
("noop": forward 31588.38 us, backward 105105.95 us) and with a dense mask of the same s x s work
("sliding_window", a tensor mask, so the kernel skips no block: forward 47663.81 us, backward
116762.63 us). The mask adds 16075.42 us forward and 11656.68 us backward for one read of
4 x 16 x 16384^2 x 2 B = 34.36 GB each: 2.137 TB/s and 2.948 TB/s, i.e. 0.638 and 0.880 of the
H100 SXM's 3.35 TB/s (NVIDIA H100 datasheet). Those fractions of the GPU's HBM bandwidth time the
mask's bytes on every GPU (the same sm80 kernel code runs on Ampere and Hopper; elsewhere an
assumption). The mask is in the attention's dtype: 4 bytes on the fp32 path of a
QLoRA step over fp32 non-quantized weights (trainplan.timing.quantized), else the compute dtype's.
"""

from __future__ import annotations

from trainplan.enums import Precision
from trainplan.job.training import TrainingSetup
from trainplan.specs import GpuSpec
from trainplan.timing.attention import padded_sdpa
from trainplan.timing.flops import FlopsPerToken
from trainplan.timing.quantized import fp32_path

_MEASURED_MASK_BYTES = 4 * 16 * 16384 ** 2 * 2          # one read of the benchmark's mask, bytes
_H100_SXM_BW = 3.35e12                                  # B/s, NVIDIA H100 SXM datasheet
MASK_FWD_BW_FRACTION = _MEASURED_MASK_BYTES / ((47663.8069 - 31588.3846) * 1e-6) / _H100_SXM_BW
MASK_BWD_BW_FRACTION = _MEASURED_MASK_BYTES / ((116762.6266 - 105105.9494) * 1e-6) / _H100_SXM_BW


def mask_element_bytes(setup: TrainingSetup) -> int:
    """Bytes of one mask element: the dtype the attention runs in (fp32 on QLoRA's fp32 path)."""
    path = fp32_path(setup)
    if setup.precision is Precision.FP32 or (path is not None and path.attention == "mem-efficient fp32"):
        return 4
    return setup.precision.compute_bytes


def mask_bytes_per_token_pass(setup: TrainingSetup, seq_len: int) -> float:
    """Mask bytes one pass of the attention reads per token: layers x heads x s x element bytes;
    0 unless SDPA runs with transformers' 4D mask."""
    if not padded_sdpa(setup.framework, setup.attention, setup.impl.padding_mask):
        return 0.0
    model = setup.model
    return float(model.num_layers * model.num_heads * seq_len * mask_element_bytes(setup))


def dense_mask_s(setup: TrainingSetup, gpu: GpuSpec, ft: FlopsPerToken, tokens: float) -> float:
    """Seconds the mask reads add to `tokens` tokens on one GPU: the forward, its recomputation and a
    reference forward at MASK_FWD_BW_FRACTION of the HBM bandwidth, the backward at
    MASK_BWD_BW_FRACTION (see the module docstring)."""
    per_pass = mask_bytes_per_token_pass(setup, ft.seq_len)
    if not per_pass or not ft.attention_fwd:
        return 0.0
    fwd_passes = ft.attention_fwd_hardware / ft.attention_fwd
    bwd_passes = 1.0 if ft.attention_bwd else 0.0
    bw = gpu.memory_bw_bytes_per_s
    return per_pass * tokens * (fwd_passes / (MASK_FWD_BW_FRACTION * bw) + bwd_passes / (MASK_BWD_BW_FRACTION * bw))


def dense_mask_note(setup: TrainingSetup, gpu: GpuSpec, ft: FlopsPerToken, tokens: float) -> str | None:
    """The assumption dense_mask_s times, for the estimate's notes (None where it adds nothing)."""
    seconds = dense_mask_s(setup, gpu, ft, tokens)
    if not seconds:
        return None
    gigabytes = mask_bytes_per_token_pass(setup, ft.seq_len) * tokens / 1e9
    return (f"the memory-efficient kernel reads the 4D mask for every head: {gigabytes:.3g} GB per pass and micro-batch, "
            f"{seconds * 1e3:.4g} ms per micro-batch at the bandwidth measured for it (pytorch PR #137036: 64% of HBM "
            f"forward, 88% backward)")
