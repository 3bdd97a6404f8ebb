"""Decoders of the second batch of model types: DeepSeek-MoE (v1, remote code), OLMoE, Granite and
Granite-MoE, MiniCPM (remote code), StableLM (2) and Cohere (Command-R).

Defaults as the transformers 5.25 config classes apply them (`configuration_<type>.py`), or the remote-code
config class for deepseek and minicpm; structure per `modeling_<type>.py`. What ModelSpec fields cannot say
(per-head q/k norm weights, a LayerNorm without bias, OLMoE's q/k norm over the whole projection) the
parameter code reads from the model_type (model/architecture.py).
"""

from __future__ import annotations

from trainplan.enums import NormKind
from trainplan.model.hfconfig._reader import ConfigReader
from trainplan.model.hfconfig.dense import Fields, attention_bias, shapes
from trainplan.specs import MoeSpec


def _head_dim_from_hidden(r: ConfigReader, fields: Fields) -> Fields:
    """Attention classes that take head_dim = hidden_size // num_attention_heads whatever config.json says
    (and raise unless the heads divide hidden_size)."""
    hidden, heads = fields["hidden_size"], fields["num_heads"]
    assert isinstance(hidden, int) and isinstance(heads, int)
    if hidden % heads:
        raise r.fail(f"has hidden_size {hidden} not divisible by num_attention_heads {heads}")
    return {**fields, "head_dim": hidden // heads}


def deepseek(r: ConfigReader) -> Fields:
    """DeepSeek-MoE 16B (remote code of deepseek-ai/deepseek-moe-16b-base: configuration_deepseek.py and
    modeling_deepseek.py; read in the copy of code-index file 67429243731, the class defaults as mlx-lm's
    mlx_lm/models/deepseek.py@a3f0eb447aed ModelArgs mirrors them).

    Llama attention (q/k/v/o_proj, bias = attention_bias, head_dim = hidden_size // heads; class default
    num_key_value_heads 32); DeepseekDecoderLayer builds DeepseekMoE where n_routed_experts is set, layer_idx
    >= first_k_dense_replace and layer_idx % moe_layer_freq == 0, else DeepseekMLP(intermediate_size).
    DeepseekMoE: n_routed_experts DeepseekMLP(moe_intermediate_size) experts, MoEGate (a bare weight,
    experts x hidden, softmax top-k) and, where n_shared_experts is set, one DeepseekMLP of
    moe_intermediate_size * n_shared_experts added after the routed experts. No MLA (that is deepseek_v2).
    """
    fields = _head_dim_from_hidden(r, shapes(r, tie=False, kv_heads=32, max_position=2048))
    notes = ["remote code (modeling_deepseek.py does not import on transformers 5): estimated with the routed "
             "experts fused as transformers 5 builds MoE layers, so LoRA all-linear leaves them out (the remote "
             "code's per-expert nn.Linear modules would take adapters)"]
    moe = None
    if r.has("n_routed_experts"):
        r.require("num_experts_per_tok")
        n = fields["num_layers"]
        assert isinstance(n, int)
        first = r.integer("first_k_dense_replace", 0)
        freq = r.integer("moe_layer_freq", 1, positive=True)
        if first < 0:
            raise r.fail(f"has first_k_dense_replace = {first}; expected 0 or more")
        width = r.integer("moe_intermediate_size", 1407, positive=True)
        n_shared = r.opt_integer("n_shared_experts") or 0
        if n_shared < 0:
            raise r.fail(f"has n_shared_experts = {n_shared}; expected 0 or more")
        moe = MoeSpec(num_experts=r.integer("n_routed_experts", positive=True),
                      top_k=r.integer("num_experts_per_tok", positive=True),
                      expert_intermediate_size=width, num_shared_experts=n_shared,
                      shared_intermediate_size=n_shared * width, first_dense_layers=first,
                      # `layer_idx % moe_layer_freq == 0` past the first dense layers
                      dense_layers=tuple(i for i in range(first, n) if i % freq))
    return {**fields, **attention_bias(r, "attention_bias", False), "moe": moe, "notes": tuple(notes)}


def olmoe(r: ConfigReader) -> Fields:
    """OLMoE (transformers models/olmoe): every layer an OlmoeSparseMoeBlock of num_experts experts of
    intermediate_size (OlmoeConfig defaults 64, top 8; no shared expert), a bare-weight top-k router; q_norm
    RMSNorm(hidden_size) and k_norm RMSNorm(kv heads x head_dim) over the whole q and k projections
    (before the heads are split); q/k/v/o biases switched by attention_bias; pre-norm layers."""
    fields = shapes(r, tie=False, max_position=4096)
    experts = ("num_experts", "num_local_experts")   # OlmoeConfig.attribute_map
    moe = MoeSpec(num_experts=r.integer(experts, 64, positive=True),
                  top_k=r.integer("num_experts_per_tok", 8, positive=True),
                  expert_intermediate_size=fields["intermediate_size"])
    notes: tuple[str, ...] = ("q/k RMSNorm over the full projection width",)
    if r.config.get("clip_qkv") is not None:
        notes += ("clip_qkv: the in-place clamp of q, k and v is not modelled",)
    return {**fields, **attention_bias(r, "attention_bias", False), "qk_norm": True, "moe": moe, "notes": notes}


def _granite_notes(r: ConfigReader) -> tuple[str, ...]:
    keys = ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling")
    set_keys = [k for k in keys if r.config.get(k) not in (None, 1, 1.0)]
    if not set_keys:
        return ()
    return (f"{', '.join(set_keys)}: scalar multipliers, no parameters",)


def granite(r: ConfigReader) -> Fields:
    """IBM Granite 3.x dense (transformers models/granite): Llama-shaped (GraniteConfig: num_key_value_heads
    None -> num_attention_heads, untied by default; released Granite 3 configs tie); the embedding, residual,
    attention and logits multipliers scale activations and add no parameter."""
    fields = shapes(r, tie=False, max_position=2048)
    return {**fields, **attention_bias(r, "attention_bias", False), "mlp_bias": r.flag("mlp_bias", False),
            "notes": _granite_notes(r)}


def granitemoe(r: ConfigReader) -> Fields:
    """IBM Granite 3.x MoE (transformers models/granitemoe): Granite attention (q/k/v/o bias = attention_bias)
    and on every layer a GraniteMoeMoE: a bare-weight top-k router and num_local_experts experts of
    intermediate_size (GraniteMoeConfig defaults 8, top 2), no bias, no shared expert."""
    fields = shapes(r, tie=False, max_position=2048)
    moe = MoeSpec(num_experts=r.integer("num_local_experts", 8, positive=True),   # no attribute_map for it
                  top_k=r.integer("num_experts_per_tok", 2, positive=True),
                  expert_intermediate_size=fields["intermediate_size"])
    return {**fields, **attention_bias(r, "attention_bias", False), "moe": moe, "notes": _granite_notes(r)}


def minicpm(r: ConfigReader) -> Fields:
    """MiniCPM (OpenBMB remote code, configuration_minicpm.py / modeling_minicpm.py; read in the copy of
    wxthu/nas_tuner@316794f; mlx-lm mlx_lm/models/minicpm.py@1e5589e08747 builds the same tensors):
    Llama-shaped (q/k/v/o bias = attention_bias, head_dim = hidden_size // heads, no MLP bias, two RMSNorms),
    MiniCPMConfig tie_word_embeddings default true; scale_emb, scale_depth / sqrt(layers) and the
    hidden_size / dim_model_base division before the head scale activations and add no parameter."""
    if r.has("num_experts"):
        raise r.fail("has num_experts (MiniCPM-MoE, its own remote code), which trainplan does not model")
    fields = _head_dim_from_hidden(r, shapes(r, tie=True, max_position=2048))
    notes: tuple[str, ...] = ("muP scaling (scale_emb, scale_depth, dim_model_base): no parameters",)
    if r.config.get("sparse_config") is not None:
        notes += ("sparse_config (InfLLM v2 sparse attention): estimated as dense attention",)
    return {**fields, **attention_bias(r, "attention_bias", False), "notes": notes}


def stablelm(r: ConfigReader) -> Fields:
    """StableLM / StableLM 2 (transformers models/stablelm): nn.LayerNorm with bias; q/k/v biases switched by
    use_qkv_bias, no o_proj or MLP bias; SwiGLU MLP; head_dim = hidden_size // heads (StableLmConfig
    num_key_value_heads default 32); use_parallel_residual: attention and MLP both read the one
    input_layernorm (no post_attention_layernorm); qk_layernorm: a bias-free LayerNorm per head
    (StableLmLayerNormPerHead) on q and on k; rotary on partial_rotary_factor of each head (default 0.25)."""
    fields = _head_dim_from_hidden(r, shapes(r, tie=False, kv_heads=32, max_position=4096))
    parallel = r.flag("use_parallel_residual", False)
    rotary = r.config.get("partial_rotary_factor", 0.25)
    notes = (f"rotary on {rotary:.0%} of each head",) if isinstance(rotary, int | float) else ()
    return {**fields, "qkv_bias": r.flag("use_qkv_bias", False), "norm_kind": NormKind.LAYER,
            "norms_per_layer": 1 if parallel else 2, "parallel_attn_mlp": parallel,
            "qk_norm": r.flag("qk_layernorm", False), "notes": notes}


def cohere(r: ConfigReader) -> Fields:
    """Cohere Command-R (transformers models/cohere): one CohereLayerNorm (weight, no bias) per layer, read by
    attention and MLP in parallel (x + attn(ln(x)) + mlp(ln(x))), a bias-free final CohereLayerNorm, SwiGLU MLP
    without bias, q/k/v/o biases switched by attention_bias, tied embeddings by default, logits multiplied by
    logit_scale (no parameter); use_qk_norm: CohereLayerNorm over (heads, head_dim) on q and on k, one weight
    per head."""
    fields = shapes(r, tie=True, max_position=8192)
    return {**fields, **attention_bias(r, "attention_bias", False), "norm_kind": NormKind.LAYER,
            "norms_per_layer": 1, "parallel_attn_mlp": True, "qk_norm": r.flag("use_qk_norm", False),
            "notes": ("CohereLayerNorm (fp32, no bias) estimated as nn.LayerNorm",)}
