"""Attention kernels by framework and GPU generation (trainplan.timing.attention): the dispatch rule
and the published efficiencies, with the arithmetic written out from the cited benchmarks."""

from __future__ import annotations

import pytest

from trainplan.catalog import resolve_gpu
from trainplan.enums import Attention, Framework, Position
from trainplan.timing.attention import AttentionKernel as K
from trainplan.timing.attention import attention_kernel, kernel_efficiency, mem_efficient_head_dim_factor
from trainplan.timing.efficiency import KernelStack, matmul_efficiency

H100_PEAK_T = 989.4     # H100 SXM5 dense bf16 TFLOP/s, the GPU of the FA3 paper's figures
B200_PEAK_T = 2250.0    # B200 dense bf16 TFLOP/s (catalog b200)


def test_fa3_h100_seq8k_hd128_forward_is_published_tflops_over_peak():
    # FA3 paper Fig. 5, causal, hd128, seq 8k: 602 TFLOP/s -> 602 / 989.4 = 0.60845
    e = kernel_efficiency(K.FA3, "hopper", 128, 8192)
    assert e.fwd == pytest.approx(0.60845, abs=1e-4)


def test_fa3_h100_backward_converted_to_trainplan_flops_and_causal():
    # Fig. 6 (non-causal) hd128 seq 8k: 559 TFLOP/s in the 2.5 x forward count.
    # causal scale = causal fwd / non-causal fwd at 8k = 602 / 646 = 0.931889
    # 559 x 0.931889 x (2 / 2.5) / 989.4 = 416.741 / 989.4 = 0.42121
    e = kernel_efficiency(K.FA3, "hopper", 128, 8192)
    assert e.bwd == pytest.approx(0.42121, abs=1e-4)


def test_backward_is_lower_than_forward_and_short_sequences_fall():
    # cuDNN H100 hd128 causal forward: 315 at 512 vs 539 at 16k (FA3 paper Fig. 5)
    short, long_ = kernel_efficiency(K.CUDNN, "hopper", 128, 512), kernel_efficiency(K.CUDNN, "hopper", 128, 16384)
    assert short.fwd == pytest.approx(315 / H100_PEAK_T, abs=1e-4)     # 0.31838
    assert long_.fwd == pytest.approx(539 / H100_PEAK_T, abs=1e-4)     # 0.54477
    assert short.bwd < short.fwd and long_.bwd < long_.fwd


def test_interpolation_in_log2_sequence_and_clamping():
    # FA2 H100 hd128 causal forward: 298 at 2k, 319 at 4k. At seq 2^11.5 halfway: 308.5 / 989.4 = 0.31181
    mid = kernel_efficiency(K.FA2, "hopper", 128, 2896)     # log2(2896) = 11.49985, ~halfway
    assert mid.fwd == pytest.approx(308.5 / H100_PEAK_T, abs=2e-4)
    # outside the published 512..16k the end values hold: 191 at 512, 335 at 16k
    assert kernel_efficiency(K.FA2, "hopper", 128, 128).fwd == pytest.approx(191 / H100_PEAK_T, abs=1e-4)
    assert kernel_efficiency(K.FA2, "hopper", 128, 131072).fwd == pytest.approx(335 / H100_PEAK_T, abs=1e-4)


def test_nearest_published_head_dim():
    # head dim 96: |log2(96/128)| = 0.415 < |log2(96/64)| = 0.585 -> the hd128 row (FA2 8k: 333)
    assert kernel_efficiency(K.FA2, "hopper", 96, 8192).fwd == pytest.approx(333 / H100_PEAK_T, abs=1e-4)
    # head dim 80 -> hd64 row (FA2 causal hd64 8k: 295)
    assert kernel_efficiency(K.FA2, "hopper", 80, 8192).fwd == pytest.approx(295 / H100_PEAK_T, abs=1e-4)


def test_blackwell_fa4_and_cudnn():
    # FA4 PR #2280, B200 hd128 causal seq 8k: fwd 1418.1, bwd 1208.6 (2.5 x count)
    e = kernel_efficiency(K.FA4, "blackwell", 128, 8192)
    assert e.fwd == pytest.approx(1418.1 / B200_PEAK_T, abs=1e-4)            # 0.63027
    assert e.bwd == pytest.approx(1208.6 * 0.8 / B200_PEAK_T, abs=1e-4)      # 0.42972
    # cuDNN 9.13 on B200 = FA4 / 1.3 (FA4 paper "up to 1.3x over cuDNN"): 1418.1 / 1.3 / 2250 = 0.48482
    assert kernel_efficiency(K.CUDNN, "blackwell", 128, 8192).fwd == pytest.approx(0.48482, abs=1e-4)


def test_no_published_row_falls_back():
    assert kernel_efficiency(K.FA2, "ampere", 128, 4096) is None
    assert kernel_efficiency(K.MEM_EFFICIENT, "ada", 128, 4096) is None


@pytest.mark.parametrize("framework, attention, generation, kw, expected", [
    # Transformer Engine: FusedAttention (cuDNN) on sm90+, FlashAttention below (get_attention_backend)
    (Framework.MEGATRON, Attention.FLASH, "hopper", {}, K.CUDNN),
    (Framework.MEGATRON, Attention.FLASH, "blackwell", {}, K.CUDNN),
    (Framework.MEGATRON, Attention.FLASH, "ampere", {}, K.FA2),
    # HF flash_attention_2 is the FA2 package everywhere; FA3 only when asked for, on Hopper only
    (Framework.HF, Attention.FLASH, "hopper", {}, K.FA2),
    (Framework.HF, Attention.FLASH, "hopper", {"flash_version": 3}, K.FA3),
    (Framework.HF, Attention.FLASH, "ampere", {"flash_version": 3}, K.FA2),
    # SDPA: flash backend first unless cuDNN is preferred (sm90/sm100 only)
    (Framework.PYTORCH, Attention.SDPA, "hopper", {}, K.FA2),
    (Framework.PYTORCH, Attention.SDPA, "hopper", {"sdpa_cudnn_first": True}, K.CUDNN),
    (Framework.PYTORCH, Attention.SDPA, "ampere", {"sdpa_cudnn_first": True}, K.FA2),
    (Framework.PYTORCH, Attention.SDPA, "blackwell", {"sdpa_cudnn_first": True, "consumer": True}, K.FA2),
    # flash needs sm80+: Volta/Turing run the memory-efficient kernel
    (Framework.TORCHTUNE, Attention.SDPA, "volta", {}, K.MEM_EFFICIENT),
    (Framework.HF, Attention.EAGER, "hopper", {}, K.EAGER),
    # llm-foundry's ALiBi MPT: the Triton bias kernel (submit_benchmarks.py --attn_impl triton)
    (Framework.FSDP, Attention.FLASH, "hopper", {"position": Position.ALIBI}, K.TRITON_BIAS),
])
def test_kernel_rule(framework, attention, generation, kw, expected):
    assert attention_kernel(framework, attention, generation, "bf16", 128, **kw) is expected


def test_fp32_and_wide_heads_leave_flash():
    # flash kernels need fp16/bf16 and head_dim <= 256 (sdp_utils.cpp check_head_dim_size_flash)
    assert attention_kernel(Framework.HF, Attention.SDPA, "hopper", "fp32", 128) is K.MEM_EFFICIENT
    assert attention_kernel(Framework.HF, Attention.SDPA, "hopper", "bf16", 512) is K.MEM_EFFICIENT


def test_matmul_efficiency_carries_the_kernel_efficiency():
    h100 = resolve_gpu("h100-sxm")
    eff = matmul_efficiency(h100, "bf16", hidden_size=4096, tokens_per_micro_batch=8192, stack=KernelStack.FUSED,
                            attention_kernel=K.FA3, seq_len=8192, head_dim=128)
    assert eff.attention_fwd == pytest.approx(0.60845, abs=1e-4)
    assert eff.attention_bwd == pytest.approx(0.42121, abs=1e-4)
    # combined over forward + backward (2 forwards): 3 / (1 / 0.60845 + 2 / 0.42121) = 3 / 6.39174 = 0.46936
    assert eff.attention == pytest.approx(0.46936, abs=1e-4)
    assert eff.attention_kernel == "flash-attn-3"


def test_without_a_kernel_the_fitted_value_is_kept():
    # no kernel: the fitted H100 anchor (ridge 989 / 3.35 = 295 -> attention_hi 0.17) for both passes
    h100 = resolve_gpu("h100-sxm")
    eff = matmul_efficiency(h100, "bf16", hidden_size=4096, tokens_per_micro_batch=8192, stack=KernelStack.FUSED)
    assert eff.attention_fwd == pytest.approx(0.17, abs=2e-3)
    assert eff.attention_bwd == eff.attention_fwd == pytest.approx(eff.attention)


def test_mem_efficient_below_head_dim_128_pays_for_the_larger_kernel():
    # NVIDIA/cutlass PR #992 (v3, f16 32-197-16-K, A100): forward 108.1 / 160.2 / 174.3 us at K = 64 / 80 / 128,
    # backward 303.4 / 409.3 / 484.2. hd96 runs the kMaxK=128 kernel, its time interpolated linearly in K:
    # forward (160.2 + 16/48 x 14.1) / 174.3 = 0.94607 -> (96/128) / 0.94607 = 0.79275;
    # backward (409.3 + 16/48 x 74.9) / 484.2 = 0.89687 -> 0.83624
    fwd, bwd = mem_efficient_head_dim_factor(96)
    assert fwd == pytest.approx(0.75 / ((160.2 + 14.1 / 3) / 174.3), rel=1e-9)
    assert (fwd, bwd) == pytest.approx((0.79275, 0.83624), abs=5e-5)
    # hd64 runs its own kMaxK=64 kernel: (64/128) / (108.1/174.3) = 0.80620 forward
    assert mem_efficient_head_dim_factor(64)[0] == pytest.approx(0.80620, abs=5e-5)
    assert mem_efficient_head_dim_factor(128) is None
    # applied to the published hd128 row at the same sequence length
    ref = kernel_efficiency(K.MEM_EFFICIENT, "ampere", 128, 8192)
    at96 = kernel_efficiency(K.MEM_EFFICIENT, "ampere", 96, 8192)
    assert at96.fwd == pytest.approx(ref.fwd * fwd, rel=1e-12) and at96.bwd == pytest.approx(ref.bwd * bwd, rel=1e-12)
    assert "head dim 96 runs the kMaxK=128 kernel" in at96.source and "kMaxK" not in ref.source
    # other kernels keep their nearest published head dim
    assert kernel_efficiency(K.FA2, "ampere", 96, 8192) == kernel_efficiency(K.FA2, "ampere", 128, 8192)


def test_mem_efficient_above_head_dim_128_runs_the_generic_kernel():
    # xformers PR #587 (A100, f16, M=1024 H=16): forward K=128 3090.0 us, K=256 7031.8 us (B=64);
    # backward K=128 6566.2 us, K=256 31674.1 us (B=16). Twice the FLOPs: forward 2 / (7031.8 / 3090.0)
    # = 0.87886, backward 2 / (31674.1 / 6566.2) = 0.41461 of hd128's FLOP rate
    fwd, bwd = mem_efficient_head_dim_factor(256)
    assert (fwd, bwd) == pytest.approx((0.87886, 0.41461), abs=5e-5)
    # every head dim above 128 runs the one generic kernel
    assert mem_efficient_head_dim_factor(192) == mem_efficient_head_dim_factor(256)
    ref = kernel_efficiency(K.MEM_EFFICIENT, "hopper", 128, 8192)
    at256 = kernel_efficiency(K.MEM_EFFICIENT, "hopper", 256, 8192)
    assert at256.bwd == pytest.approx(ref.bwd * bwd, rel=1e-12)
    assert "generic kMaxK=65536 kernel" in at256.source
