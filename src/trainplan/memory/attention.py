"""What the attention of one decoder layer saves for backward, and the S x S tensors it holds for a
moment without saving them, as the Hugging Face modeling code and CUDA's SDPA kernels run it.

- SDPA flash/memory-efficient kernels save q, k, v, the output and a (b, heads, s) fp32 logsumexp.
- SDPA with a 4-D mask (local layers longer than their window; Falcon always) takes repeated k/v
  (no enable_gqa) and keeps the mask, converted to an additive bias in the query's dtype.
- SDPA's math kernel (fp32 grouped-query attention; k/v heads unlike q's without enable_gqa)
  computes in fp32 whatever the input dtype and keeps the S x S probabilities.
- Eager attention keeps the softmax output (and its 16-bit copy): S x S per head.
"""

from __future__ import annotations

import json
from functools import lru_cache

from trainplan.enums import Attention, Position
from trainplan.memory.context import LayerContext
from trainplan.model.architecture import LayerSpec, Role
from trainplan.specs import ModelSpec

LSE_BYTES = 4
# ATen's math SDPA kernel (_scaled_dot_product_attention_math) upcasts fp16/bf16 q, k, v to fp32
# unless torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True) (off by default): its saved
# scaled q, expanded k and v and the probabilities are fp32
MATH_SDPA_BYTES = 4
# apply_rotary_pos_emb ends in torch.cat([rotated, pass-through]) (modeling_gpt_neox/phi3/glm/glm4,
# glm4_moe; gpt-oss rotates the two halves and concatenates them)
ROPE_CAT_MODEL_TYPES = frozenset({"gpt_neox", "phi3", "glm", "glm4", "glm4_moe", "gpt_oss"})
# attention with per-head sink logits (gpt-oss): the sink column joins the scores before the softmax;
# eager only in transformers (job/resolve.py resolves an SDPA request to eager)
SINK_ATTENTION_MODEL_TYPES = frozenset({"gpt_oss"})
# Falcon (transformers 5.25 modeling_falcon.py): FalconModel.forward materialises the 4-D mask for every
# layer (create_causal_mask(..., allow_is_causal_skip=False), "so alibi can be added onto it"). Its
# attention splits the fused projection into views (`split` / `unbind` / slices of one view) and runs the
# shared attention interface, so SDPA takes repeat_kv's k/v under that mask like any masked layer.
# (transformers 5.24 and older split with index lists, copies, and handed multi-query k/v to SDPA
# unexpanded, which ran its math kernel; trainplan follows the version the trace extra pins.)
ALWAYS_MASKED_MODEL_TYPES = frozenset({"falcon", "RefinedWeb", "RefinedWebModel"})
# BloomAttention.forward keeps `attention_scores = alibi.baddbmm(...)` referenced through the softmax
HELD_SCORES_MODEL_TYPES = frozenset({"bloom"})
# MptModel.forward (transformers 5.25 modeling_mpt.py) keeps `create_causal_mask(...).to(torch.bool)`, a
# boolean mask for its masked_fill, and an ALiBi bias of (heads, 1, max_seq_len) fp32 from arange and slopes
BOOL_MASK_MODEL_TYPES = frozenset({"mpt"})
# BloomModel.forward keeps `outputs = block(...)`, the block's (hidden states, attention_probs),
# until the next block returns: one layer's 16-bit probabilities outlive its forward
RETURNED_PROBS_MODEL_TYPES = frozenset({"bloom"})


@lru_cache(maxsize=64)
def _config(config_json: str) -> dict:
    return json.loads(config_json) if config_json else {}


def local_window(spec: ModelSpec) -> int | None:
    if spec.model_type.startswith("llama4"):
        config = _config(spec.hf_config_json)
        config = config.get("text_config", config) if spec.model_type == "llama4" else config
        return config.get("attention_chunk_size", 8192)
    return spec.sliding_window


def masked(ctx: LayerContext, spec: ModelSpec, layer: LayerSpec) -> bool:
    """SDPA runs this layer with a 4-D mask. Layers with local attention (sliding window, Llama 4's
    chunks; LayerSpec.attention == "local", architecture.LOCAL_ATTENTION_MODEL_TYPES, or "" where the
    spec's sliding window is on every layer: Mistral, StarCoder2 create_sliding_window_causal_mask): transformers
    builds a boolean mask once the sequence is longer than the window (shorter, the mask is plain
    causal and skipped); Falcon builds one for every layer; and every layer gets one when the batch's
    2-D attention mask has padding (masking_utils._ignore_causal_mask_sdpa: ctx.padding_mask,
    trainplan.timing.attention.padded_sdpa)."""
    if ctx.attention is not Attention.SDPA:
        return False
    if spec.model_type in ALWAYS_MASKED_MODEL_TYPES or ctx.padding_mask:
        return True
    if layer.attention == "full":
        return False
    window = local_window(spec)      # layer.attention "": the spec's window, if any, on every layer (Mistral)
    return bool(window) and ctx.seq > window


def sdpa_math(ctx: LayerContext, spec: ModelSpec, is_masked: bool = False) -> bool:
    """SDPA runs CUDA's math kernel: fp32 grouped-query attention without a mask (flash takes 16-bit
    inputs only, the memory-efficient kernel does not take the enable_gqa transformers passes when
    kv heads are fewer and there is no mask)."""
    if ctx.attention is not Attention.SDPA or spec.mla:
        return False
    return ctx.compute_bytes == 4 and spec.num_kv_heads < spec.num_heads and not is_masked


def rope_cat_layout(spec: ModelSpec) -> bool:
    """Rotary embeddings applied with torch.cat make q/k contiguous (b, heads, s, d) tensors: the
    kernel output follows that layout, and o_proj's input is a copy."""
    return spec.position is Position.ROPE and spec.model_type in ROPE_CAT_MODEL_TYPES


def value_pins_fused_qkv(spec: ModelSpec, layer: LayerSpec) -> bool:
    """q/k/v sliced from one fused projection (Phi-3 qkv_proj, GPT-NeoX query_key_value): rotary
    embeddings replace q and k by new tensors, while the saved value, a view, keeps the whole
    projection output alive (a storage is freed only with its last view)."""
    return spec.position is Position.ROPE and any(lin.role is Role.QKV for lin in layer.linears)


def _sink_bytes(ctx: LayerContext) -> int:
    return ctx.trained_weight_bytes if ctx.weights_trained else ctx.frozen_weight_bytes


def _eager_soft_bytes(ctx: LayerContext, spec: ModelSpec) -> int:
    """dtype bytes of eager attention's softmax output. eager_attention_forward: most families run
    softmax(dtype=float32).to(query.dtype); GPT-2 and Llama 4 keep the value dtype, CUDA autocast
    puts softmax on its fp32 list; gpt-oss takes cat(scores, sinks)'s dtype (the sinks')."""
    if spec.model_type in SINK_ATTENTION_MODEL_TYPES:
        return max(ctx.compute_bytes, _sink_bytes(ctx))
    return 4 if (ctx.autocast or spec.naming not in ("gpt2", "llama4")) else ctx.compute_bytes


def attention_core(ctx: LayerContext, spec: ModelSpec, fused_qkv_pinned: bool,
                   needs: tuple[bool, bool, bool], is_masked: bool = False) -> int:
    """What attention saves; a matmul saves each operand only for the other one's gradient."""
    t, c, b, s = ctx.tokens, ctx.compute_bytes, ctx.batch, ctx.seq
    h_q = spec.num_heads
    q_needs, k_needs, v_needs = needs
    scores = q_needs or k_needs                            # the scores (and probabilities) need grad
    if not (scores or v_needs):
        return 0
    if spec.mla:
        q_dim = h_q * spec.mla.qk_head_dim
        k_dim = q_dim
        out_dim = h_q * spec.mla.v_head_dim
        # value: a view of kv_b's output (k_nope and v), saved as such by the fused kernels; eager's
        # `probs @ v` folds (b, heads) for bmm: a view when b == 1, else a copy of v alone
        kv_b_out = h_q * (spec.mla.qk_nope_head_dim + spec.mla.v_head_dim)
        v_dim = out_dim if ctx.attention is Attention.EAGER and b > 1 else kv_b_out
    else:
        q_dim, k_dim, v_dim, out_dim = spec.q_dim, spec.kv_dim, spec.kv_dim, spec.q_dim
    rep = spec.num_heads // spec.num_kv_heads if not spec.mla else 1
    # the saved value is a view of the fused projection output (q_dim + 2 kv_dim wide), unless
    # eager attention's repeat_kv copied it
    pinned = c * t * (spec.q_dim + spec.kv_dim) if fused_qkv_pinned and (
        ctx.attention is not Attention.EAGER or rep == 1) else 0
    math = sdpa_math(ctx, spec, is_masked)
    if ctx.attention is Attention.EAGER or math:
        sink_extra = 0
        op = c
        if math:
            # SDPA's math kernel: q * scale and the expanded k * scale are new fp32 tensors, v is
            # expanded; o_proj's input is then a copy of its (b, heads, s, d) output (linears)
            soft, op, pinned = MATH_SDPA_BYTES, MATH_SDPA_BYTES, 0
        else:
            # eager_attention_forward: q @ k^T (q and the repeated k), softmax, dropout, @ v
            soft = _eager_soft_bytes(ctx, spec)
            if spec.model_type in SINK_ATTENTION_MODEL_TYPES and scores:
                # gpt-oss: cat(scores, sinks), max(-1) keeps int64 indices, softmax(dtype=its input's)
                # saves (b, heads, s, s + 1); the sliced probabilities are cast to the value dtype
                sink_extra = (soft + 8) * b * h_q * s
        saved = op * t * ((q_dim if k_needs else 0) + (k_dim * rep if q_needs else 0)
                          + (v_dim * rep if scores else 0))
        probs = soft if scores else 0
        if spec.attn_logit_softcapping and scores and not math:
            probs += c                                      # tanh output of the soft-capped scores
        if spec.attention_dropout > 0:   # bool mask, dropped probabilities
            probs += (1 if scores else 0) + ((soft if math else c) if v_needs else 0)
        elif soft != c and v_needs and not math:
            probs += c                                      # 16-bit copy saved by probs @ v
        return saved + pinned + probs * b * h_q * s * s + sink_extra
    saved = c * t * (q_dim + k_dim + v_dim + out_dim)       # q, k, v, out saved by the kernel
    saved += LSE_BYTES * b * h_q * s                        # logsumexp
    if is_masked:
        # repeated k/v instead of k/v (repeat_kv: expand + reshape, a copy unless there is one kv
        # head, integrations/sdpa_attention.py) and the bias
        expand = rep - 1 if spec.num_kv_heads > 1 else 0
        saved += c * t * (k_dim + v_dim) * expand + c * b * s * s
    return saved + pinned


def attention_transients(ctx: LayerContext, spec: ModelSpec, is_masked: bool) -> tuple[int, int, int]:
    """(forward, backward, consumed) S x S bytes that eager attention and the math kernel hold for a
    moment beyond what they save (fused SDPA kernels keep theirs inside the kernel), and the saved
    bytes `probs @ v`'s backward has released when the softmax's runs (v, the cast or dropped
    probabilities, the dropout mask).

    Forward, at the cast of the probabilities (eager_attention_forward
    `softmax(attn_weights, dtype=float32).to(query.dtype)`): the masked scores are still referenced
    (`attn_weights + attention_mask` promotes to the mask's dtype, the hidden states'). gpt-oss also
    holds `combined_logits - max` (s + 1 wide); Bloom its baddbmm scores (`attention_scores`); the
    math kernel its fp32 scores until the softmax returns. Backward, at the softmax: the incoming
    gradient of the probabilities (fp32 after the cast's backward) and the softmax's input gradient
    (in its input's dtype)."""
    eager = ctx.attention is Attention.EAGER
    if not (eager or sdpa_math(ctx, spec, is_masked)):
        return 0, 0, 0
    c, e = ctx.compute_bytes, ctx.batch * spec.num_heads * ctx.seq * ctx.seq
    v_width = spec.num_heads * (spec.mla.v_head_dim if spec.mla else spec.head_dim)   # v at every head
    if not eager:
        return MATH_SDPA_BYTES * e, 2 * MATH_SDPA_BYTES * e, MATH_SDPA_BYTES * ctx.tokens * v_width
    soft = _eager_soft_bytes(ctx, spec)
    score = max(c, ctx.residual_bytes)                      # scores + the mask
    forward = score * e
    if spec.model_type in SINK_ATTENTION_MODEL_TYPES:
        forward += soft * e * (ctx.seq + 1) // ctx.seq
    if spec.model_type in HELD_SCORES_MODEL_TYPES:
        forward += c * e
    consumed = c * ctx.tokens * v_width
    if spec.attention_dropout > 0:
        consumed += (c + 1) * e
    elif soft != c:
        consumed += c * e
    return forward, (soft + score) * e, consumed


def returned_probs_bytes(ctx: LayerContext, spec: ModelSpec) -> int:
    """The previous layer's 16-bit probabilities, alive in the model's loop while a checkpointed layer
    runs (RETURNED_PROBS_MODEL_TYPES; without checkpointing they are saved anyway)."""
    if spec.model_type not in RETURNED_PROBS_MODEL_TYPES or ctx.attention is not Attention.EAGER:
        return 0
    return ctx.compute_bytes * ctx.batch * spec.num_heads * ctx.seq * ctx.seq


def kept_masks_bytes(ctx: LayerContext, spec: ModelSpec, layers: list[LayerSpec]) -> int:
    """The 4-D attention masks the model builds once per forward and hands every layer: alive while
    a checkpointed layer keeps its inputs. Eager: an additive (b, 1, s, s) mask in the hidden states'
    dtype per attention type (masking_utils eager_mask; causal and sliding/chunked); SDPA: a boolean
    one for each type that is not skipped (masked). Bloom also hands every layer its ALiBi bias,
    (b * heads, 1, s) in the hidden states' dtype (modeling_bloom build_alibi_tensor)."""
    b, s = ctx.batch, ctx.seq
    kinds = {layer.attention for layer in layers}
    if spec.model_type in BOOL_MASK_MODEL_TYPES and ctx.attention is Attention.EAGER:   # (transformers' only MPT path)
        return len(kinds) * b * s * s + 4 * spec.num_heads * (spec.max_position_embeddings or s)
    if ctx.attention is Attention.EAGER:
        total = len(kinds) * ctx.residual_bytes * b * s * s
    else:
        total = len({layer.attention for layer in layers if masked(ctx, spec, layer)}) * b * s * s
    if spec.position is Position.ALIBI:
        total += ctx.residual_bytes * b * spec.num_heads * s
    return total
