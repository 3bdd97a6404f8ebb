"""CUDA's memory-efficient SDPA kernel where the CPU runs the math kernel (value head dim differs).

Both flash kernels (CPU and CUDA) need q, k and v to share one head dim; CUDA's memory-efficient
(cutlass) kernel needs only q and k to (sdp_utils.cpp `check_head_dim_size_mem_efficient`: q/k
head dim equal, q and v head dims multiples of `minimum_gemm_alignment`, 8 for 16-bit and 4 for
fp32 on sm80+). So MLA attention (DeepSeek-V2/V3: q/k 192, v 128) runs memory-efficient attention
on CUDA and the math kernel on the CPU, which keeps the B x H x S x S probabilities for backward.

`MemEfficientAttention` keeps what `_scaled_dot_product_efficient_attention`'s autograd keeps
(derivatives.yaml): query, key, value, attn_bias, output and the fp32 logsumexp of shape
(B, H, ceil(L/32)*32) (torch/_meta_registrations.py). The philox seed/offset are host scalars
without dropout (and a few bytes with it): not kept here. Forward and backward work on blocks of
query rows, so no S x S tensor is made: kernel-internal on CUDA, small transients here.
"""

from __future__ import annotations

import math

import torch

_AUTOCAST_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
BLOCK_ROWS = 128          # query rows per block: transients are BLOCK_ROWS x S per head
LSE_PAD = 32              # the cutlass kernel pads the logsumexp's rows to a multiple of 32
_ALIGNMENT = {torch.float16: 8, torch.bfloat16: 8, torch.float32: 4}


def kernel_dtype(query: torch.Tensor) -> torch.dtype:
    """The dtype the SDPA kernel sees (autocast's, if autocast is on)."""
    device = query.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else query.dtype


def cuda_runs_mem_efficient_not_flash(query, key, value, attn_mask, enable_gqa: bool) -> bool:
    """CUDA rejects flash only because v's head dim differs and accepts memory-efficient, while
    the CPU (flash needs equal head dims) runs the math kernel."""
    if not all(isinstance(t, torch.Tensor) and t.dim() == 4 for t in (query, key, value)):
        return False
    dq, dk, dv = query.size(-1), key.size(-1), value.size(-1)
    if dq != dk or dq == dv:
        return False                        # equal head dims: both devices run flash
    alignment = _ALIGNMENT.get(kernel_dtype(query))
    if alignment is None or dq % alignment or dv % alignment:
        return False                        # CUDA: math kernel too
    # memory-efficient does not take grouped-query attention: same batch and heads everywhere
    if not (query.size(0) == key.size(0) == value.size(0)
            and query.size(1) == key.size(1) == value.size(1)):
        return False
    if attn_mask is not None and (attn_mask.requires_grad or attn_mask.dim() > 4):
        return False
    if not (torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))):
        return False                        # nothing kept for backward: the math kernel's peak is transient
    return True


def _block_scores(q_blk, k_f, mask, is_causal, row0, scale):
    """fp32 scores of query rows [row0, row0 + rows) against all keys, masked."""
    scores = torch.matmul(q_blk.float(), k_f.transpose(-2, -1))
    scores.mul_(scale)
    rows, cols = q_blk.size(-2), k_f.size(-2)
    if is_causal:   # top-left aligned, as the math and memory-efficient kernels
        keep = torch.ones(rows, cols, dtype=torch.bool, device=scores.device).tril_(row0)
        scores.masked_fill_(~keep, float("-inf"))
    if mask is not None:
        blk = mask[..., row0:row0 + rows, :]
        if blk.dtype == torch.bool:
            scores.masked_fill_(~blk, float("-inf"))
        else:
            scores.add_(blk)
    return scores


def _expand_mask(mask, query, key):
    if mask is None:
        return None
    return mask.expand(query.size(0), query.size(1), query.size(-2), key.size(-2))


class MemEfficientAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, query, key, value, attn_mask, is_causal, scale):
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_CPU):
            b, h, rows = query.shape[:3]
            lse = torch.empty(b, h, math.ceil(rows / LSE_PAD) * LSE_PAD, dtype=torch.float32,
                              device=query.device)
            lse[..., rows:].fill_(float("inf"))
            out = torch.empty(b, h, rows, value.size(-1), dtype=query.dtype, device=query.device)
            k_f, v_f = key.float(), value.float()
            mask = _expand_mask(attn_mask, query, key)
            for row0 in range(0, rows, BLOCK_ROWS):
                row1 = min(row0 + BLOCK_ROWS, rows)
                scores = _block_scores(query[..., row0:row1, :], k_f, mask, is_causal, row0, scale)
                blk_lse = torch.logsumexp(scores, dim=-1)
                lse[..., row0:row1].copy_(blk_lse)
                scores.sub_(blk_lse.unsqueeze(-1)).exp_()
                out[..., row0:row1, :].copy_(torch.matmul(scores, v_f))
                del scores, blk_lse
        ctx.save_for_backward(query, key, value, attn_mask, out, lse)
        ctx.is_causal, ctx.scale = is_causal, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        query, key, value, attn_mask, out, lse = ctx.saved_tensors
        scale = ctx.scale
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_CPU):
            rows = query.size(-2)
            k_f, v_f = key.float(), value.float()
            grad_k = torch.zeros_like(k_f)
            grad_v = torch.zeros_like(v_f)
            grad_q = torch.empty_like(query)
            delta = (grad_out.float() * out.float()).sum(-1)     # the kernel's "delta" buffer
            mask = _expand_mask(attn_mask, query, key)
            for row0 in range(0, rows, BLOCK_ROWS):
                row1 = min(row0 + BLOCK_ROWS, rows)
                q_blk = query[..., row0:row1, :]
                go_blk = grad_out[..., row0:row1, :].float()
                probs = _block_scores(q_blk, k_f, mask, ctx.is_causal, row0, scale)
                probs.sub_(lse[..., row0:row1].unsqueeze(-1)).exp_()
                grad_v.add_(torch.matmul(probs.transpose(-2, -1), go_blk))
                dscores = torch.matmul(go_blk, v_f.transpose(-2, -1))
                dscores.sub_(delta[..., row0:row1].unsqueeze(-1)).mul_(probs).mul_(scale)
                del probs
                grad_q[..., row0:row1, :].copy_(torch.matmul(dscores, k_f))
                grad_k.add_(torch.matmul(dscores.transpose(-2, -1), q_blk.float()))
                del dscores, go_blk
            grad_k = grad_k.to(key.dtype)
            grad_v = grad_v.to(value.dtype)
        return grad_q, grad_k, grad_v, None, None, None


def mem_efficient_sdpa(query, key, value, attn_mask=None, is_causal=False, scale=None):
    """SDPA as CUDA's memory-efficient kernel keeps it (dropout handled by the caller: none)."""
    dtype = kernel_dtype(query)

    def cast(t):   # SDPA's autocast kernel casts every floating input to the autocast dtype
        return t.to(dtype) if t is not None and t.is_floating_point() and t.dtype != dtype else t

    query, key, value, attn_mask = cast(query), cast(key), cast(value), cast(attn_mask)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    return MemEfficientAttention.apply(query, key, value, attn_mask, bool(is_causal), float(scale))
