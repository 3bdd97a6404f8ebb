"""Decoders of 2025-2026 with their own model_type: Seed-OSS, InternLM3, OLMo 2/3 (and OLMo 1 beside them),
GLM-4.5 (glm4_moe), gpt-oss, Llama 4 (text decoder), and Kimi-K2 (DeepSeek-V3 remote code under its own name).

Defaults as the transformers 5 config classes apply them (`configuration_<type>.py`); structure per
`modeling_<type>.py`. What trainplan cannot express in ModelSpec fields (post-norm layers, attention
sinks, the interleaved gate/up of gpt-oss experts, L2 q/k norm) the memory and parameter code reads
from the model_type (model/architecture.py, memory/activations.py, memory/mlp_saves.py).
"""

from __future__ import annotations

from trainplan.enums import NormKind
from trainplan.model.hfconfig._reader import ConfigReader
from trainplan.model.hfconfig.dense import Fields, attention_bias, shapes
from trainplan.model.hfconfig.moe import deepseek_v3
from trainplan.specs import MoeSpec


def _sliding_layers(r: ConfigReader, default_every: int | None) -> tuple[int, int]:
    """(layers with sliding-window attention, all layers) from layer_types, else from a pattern
    (every `default_every`-th layer full attention; None: every layer sliding)."""
    n = r.integer("num_hidden_layers", positive=True)
    layer_types = r.config.get("layer_types")
    if layer_types is not None:
        known = ("sliding_attention", "full_attention")
        if (not isinstance(layer_types, list) or len(layer_types) != n
                or not all(t in known for t in layer_types)):
            raise r.fail(f"has layer_types = {layer_types!r}; expected {n} of {', '.join(known)}")
        return sum(t == "sliding_attention" for t in layer_types), n
    if default_every is None:
        return n, n
    return sum((i + 1) % default_every != 0 for i in range(n)), n


def _window_note(local: int, total: int, window: int | None) -> tuple[str, ...]:
    if not window or not local:
        return ()
    if local == total:
        return (f"sliding-window attention ({window}) on every layer",)
    return (f"sliding-window attention ({window}) on {local} of {total} layers (memory and FLOPs per "
            f"layer type)",)


def seed_oss(r: ConfigReader) -> Fields:
    """ByteDance Seed-OSS: Llama with q/k/v biases (attention_bias), o_proj bias apart
    (attention_out_bias), and residual dropout after o_proj and after down_proj (SeedOssConfig
    defaults 0.1, as the released 36B config sets it; attention dropout likewise)."""
    fields = shapes(r, tie=False, kv_heads=8, head_dim=128, max_position=524288)
    qkv = r.flag("attention_bias", True)
    return {**fields, "qkv_bias": qkv, "out_bias": r.flag("attention_out_bias", False),
            "mlp_bias": r.flag("mlp_bias", False)}


def internlm3(r: ConfigReader) -> Fields:
    """InternLM3 (transformers builds LlamaForCausalLM): `qkv_bias` and `bias` are the config's
    names for attention_bias (q/k/v/o) and mlp_bias (InternLM3Config.attribute_map)."""
    fields = shapes(r, tie=False, kv_heads=2, head_dim=128, max_position=32768)
    return {**fields, **attention_bias(r, ("attention_bias", "qkv_bias"), False),
            "mlp_bias": r.flag(("mlp_bias", "bias"), False)}


def olmo(r: ConfigReader) -> Fields:
    """OLMo 1 in transformers (model_type olmo: allenai/OLMo-7B-hf, OLMo-1B-hf; OlmoConfig defaults: the 7B's
    shapes, 2048 positions, untied): Llama's block with OlmoLayerNorm, a LayerNorm without weight or bias run on
    an fp32 copy (model/architecture.py PARAMETERLESS_LAYER_NORM_MODEL_TYPES), no biases; clip_qkv clamps q, k
    and v in place (their saved masks not modelled, said in the notes)."""
    fields = shapes(r, tie=False, max_position=2048)
    clip = r.config.get("clip_qkv")
    notes: tuple[str, ...] = ("OlmoLayerNorm: no weight or bias, layer_norm on an fp32 copy",)
    if clip is not None:
        notes += (f"clip_qkv {clip}: the in-place clamps of q, k and v (what their backward keeps) not modelled",)
    return {**fields, **attention_bias(r, "attention_bias", False), "norm_kind": NormKind.LAYER, "notes": notes}


def olmo2(r: ConfigReader) -> Fields:
    """OLMo 2: post-norm layers (RMSNorm after attention and after the MLP, none before), RMSNorm
    over the whole q and k projections (q_norm: heads x head_dim, k_norm: kv heads x head_dim),
    `(weight * x).to(dtype)` norms, no biases."""
    fields = shapes(r, tie=False, max_position=2048)
    return {**fields, **attention_bias(r, "attention_bias", False), "qk_norm": True,
            "notes": ("post-norm layers; q/k RMSNorm over the full projection width",)}


def olmo3(r: ConfigReader) -> Fields:
    """OLMo 3: OLMo 2 with sliding-window attention on 3 of every 4 layers (layer_types)."""
    fields = olmo2(r)
    window = r.window("sliding_window", 4096)
    local, total = _sliding_layers(r, 4)
    return {**fields, "sliding_window": window if local else None,
            "notes": fields["notes"] + _window_note(local, total, window)}


def glm4_moe(r: ConfigReader) -> Fields:
    """GLM-4.5 / GLM-4.5-Air: GLM-4 attention (q/k/v bias, half-rotary applied with torch.cat,
    optional per-head q/k RMSNorm) with DeepSeek-V3 routing (sigmoid router kept in fp32,
    e_score_correction_bias, a shared expert) after first_k_dense_replace dense layers."""
    keys = ("n_routed_experts", "num_experts_per_tok", "moe_intermediate_size")
    r.require(*keys)
    fields = shapes(r, tie=False, kv_heads=8, head_dim=128, max_position=131072)
    width = r.integer("moe_intermediate_size", positive=True)
    n_shared = r.integer("n_shared_experts", 1)
    if n_shared < 0:
        raise r.fail(f"has n_shared_experts = {n_shared}; expected 0 or more")
    moe = MoeSpec(num_experts=r.integer("n_routed_experts", positive=True),
                  top_k=r.integer("num_experts_per_tok", positive=True),
                  expert_intermediate_size=width, num_shared_experts=n_shared,
                  shared_intermediate_size=n_shared * width,
                  first_dense_layers=r.integer("first_k_dense_replace", 1), router_bias=True)
    notes = ["rotary on half of each head"]
    if r.integer("num_nextn_predict_layers", 1):
        notes.append("multi-token-prediction (MTP) layer not counted (transformers does not build it)")
    return {**fields, **attention_bias(r, "attention_bias", False, out=False),
            "qk_norm": r.flag("use_qk_norm", False), "moe": moe, "notes": tuple(notes)}


def gpt_oss(r: ConfigReader) -> Fields:
    """OpenAI gpt-oss: every layer MoE (router with bias, experts with biases and an interleaved
    gate/up projection, clamped SwiGLU), q/k/v/o biases, one learned attention-sink logit per head,
    sliding-window (128) attention on every other layer, `(weight * x).to(dtype)` norms.

    The released checkpoints store the expert weights in MXFP4; training loads them dequantized
    (transformers Mxfp4Config(dequantize=True), as OpenAI's fine-tuning recipe does), so the
    experts count as ordinary 16-bit weights here. transformers runs gpt-oss with eager attention
    (no SDPA support): --attention sdpa is estimated as eager.
    """
    experts = ("num_local_experts", "num_experts")
    top_k = ("num_experts_per_tok", "experts_per_token")
    r.require(experts, top_k)
    fields = shapes(r, tie=False, kv_heads=8, head_dim=64, max_position=131072)
    moe = MoeSpec(num_experts=r.integer(experts, positive=True), top_k=r.integer(top_k, positive=True),
                  expert_intermediate_size=fields["intermediate_size"])
    window = r.window("sliding_window", 128)
    local, total = _sliding_layers(r, 2)
    bias = r.flag("attention_bias", True)
    notes = ("expert weights dequantized from MXFP4 to 16-bit (as training loads them)",
             "attention sinks: one logit per head, softmax over keys + sink (eager attention)",
             *_window_note(local, total, window))
    return {**fields, "naming": "gpt_oss", "qkv_bias": bias, "out_bias": bias, "mlp_bias": True,
            "moe": moe, "sliding_window": window if local else None, "notes": notes}


def _llama4_text(r: ConfigReader) -> Fields:
    r.require("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "vocab_size", "num_local_experts")
    fields = shapes(r, tie=False, kv_heads=8, head_dim=128, max_position=131072)
    n = fields["num_layers"]
    step = r.integer("interleave_moe_layer_step", 1, positive=True)
    moe_layers = r.integers("moe_layers") or tuple(range(step - 1, n, step))
    if moe_layers != tuple(range(step - 1, n, step)):
        raise r.fail(f"has moe_layers {list(moe_layers)}, not every {step}-th layer, which trainplan "
                     f"does not model")
    expert_width = fields["intermediate_size"]
    fields["intermediate_size"] = r.integer("intermediate_size_mlp", 16384, positive=True)
    moe = MoeSpec(num_experts=r.integer("num_local_experts", positive=True),
                  top_k=r.integer("num_experts_per_tok", 1, positive=True),
                  expert_intermediate_size=expert_width, num_shared_experts=1,
                  shared_intermediate_size=expert_width, layer_freq=step)
    interval = r.integer("no_rope_layer_interval", 4, positive=True)
    chunk = r.opt_integer("attention_chunk_size", 8192, positive=True)
    no_rope = r.integers("no_rope_layers")
    if no_rope and (len(no_rope) != n or not set(no_rope) <= {0, 1}):
        raise r.fail(f"has no_rope_layers = {list(no_rope)}; expected {n} flags (1: RoPE layer)")
    notes = (f"RoPE on {interval - 1} of every {interval} layers (NoPE with temperature tuning on the rest), "
             f"parameter-free L2 q/k norm on the RoPE layers",
             *((f"chunked attention ({chunk} tokens) on the RoPE layers (FLOPs count a window of "
                f"that size)",) if chunk else ()),
             "transformers computes every routed expert for every token (scores zero the "
             "unselected): memory follows that implementation")
    return {**fields, **attention_bias(r, "attention_bias", False), "naming": "llama4", "moe": moe,
            "qk_norm": r.flag("use_qk_norm", True), "notes": notes}


def llama4(r: ConfigReader) -> Fields:
    """Llama 4 (Scout, Maverick): the text decoder from text_config (model_type llama4), or the
    text model itself (llama4_text); the vision encoder and projector are not counted.

    MoE layers: every interleave_moe_layer_step-th (Scout every layer, Maverick every other), each
    one shared expert plus num_local_experts routed (top-1, sigmoid); dense layers have
    intermediate_size_mlp, experts intermediate_size."""
    text = r.config.get("text_config")
    if r.model_type == "llama4":
        if not isinstance(text, dict):
            raise r.fail("lacks text_config")
        fields = _llama4_text(ConfigReader(config=text, model_type=r.model_type))
        if "tie_word_embeddings" not in text:
            fields["tied_embeddings"] = r.flag("tie_word_embeddings", False)
        fields["notes"] += ("text decoder only: the vision encoder and projector are not counted",)
        return fields
    return _llama4_text(r)


def kimi_k2(r: ConfigReader) -> Fields:
    """Kimi-K2 (Moonshot remote code, model_type kimi_k2): the DeepSeek-V3 architecture
    (DeepseekV3Config in its auto_map) with the same keys."""
    return deepseek_v3(r)
