"""CUDA autocast's cast policy per op, as registered for the AutocastCUDA dispatch key.

Source: PyTorch aten/src/ATen/autocast_mode.cpp (v2.13), the AutocastCUDA registrations made from
the macro lists AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32, AT_FORALL_FP32_SET_OPT_DTYPE,
AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE and AT_FORALL_PROMOTE (documented in torch.amp's "CUDA Ops
that can autocast to float16 / float32 / promote"). The installed torch is the judge: the op set
must equal `torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCUDA")`, and
tests/test_trace.py probes each CUDA kernel with fake CUDA tensors to check the policy.

Policies (c10 CastPolicy): lower = cast floating inputs to the autocast dtype (weight casts cached);
fp32 = cast to float32; fp32_set_opt_dtype = pass dtype=float32 unless the caller gave one;
fp32_append_dtype = call the overload with a dtype argument; promote = cast to the widest input
type; banned = raise.
"""

from __future__ import annotations

LOWER = "lower"
FP32 = "fp32"
FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"
FP32_APPEND_DTYPE = "fp32_append_dtype"
PROMOTE = "promote"
BANNED = "banned"


def _policy(names: str, policy: str) -> dict[str, str]:
    return {f"aten::{name}": policy for name in names.split()}


CUDA_AUTOCAST_POLICY: dict[str, str] = {
    **_policy("""
        _convolution _convolution.deprecated conv1d conv2d conv3d conv_tbc conv_transpose1d
        conv_transpose2d.input conv_transpose3d.input convolution cudnn_convolution
        cudnn_convolution_transpose prelu addmm addmv addr matmul einsum mm mv linalg_vecdot linear
        addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell
        lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention
        scaled_dot_product_attention""", LOWER),
    **_policy("""
        acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan
        pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm
        group_norm rms_norm frobenius_norm.dim nuclear_norm nuclear_norm.dim cosine_similarity
        poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div l1_loss
        smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss
        triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm
        logsumexp upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d
        _upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d
        upsample_bilinear2d _upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d
        _upsample_bicubic2d_aa""", FP32),
    **_policy("""
        prod prod.dim_int softmax.int log_softmax.int cumprod cumsum linalg_vector_norm
        linalg_matrix_norm linalg_matrix_norm.str_ord sum sum.dim_IntList""", FP32_SET_OPT_DTYPE),
    **_policy("norm.Scalar norm.ScalarOpt_dim", FP32_APPEND_DTYPE),
    **_policy("""
        addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add""",
              PROMOTE),
    **_policy("binary_cross_entropy", BANNED),
}

# fp32_append_dtype: the overload each op redispatches to, with dtype=float32 appended.
APPEND_DTYPE_OVERLOAD: dict[str, str] = {
    "aten::norm.Scalar": "ScalarOpt_dtype",
    "aten::norm.ScalarOpt_dim": "ScalarOpt_dim_dtype",
}

# Ops whose AutocastCPU kernel already casts to the lower-precision dtype, as CUDA's does: the
# emulation keeps their C++ kernels (and with them the C++ weight-cast cache). Checked against the
# installed torch by probing in tests/test_trace.py.
CPU_KERNELS_KEPT: frozenset[str] = frozenset({
    "aten::_convolution.deprecated", "aten::addbmm", "aten::addmm", "aten::baddbmm", "aten::bmm",
    "aten::conv1d", "aten::conv_tbc", "aten::conv_transpose1d", "aten::linalg_vecdot", "aten::linear",
    "aten::matmul", "aten::mm", "aten::scaled_dot_product_attention",
})
