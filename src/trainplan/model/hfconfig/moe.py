"""Mixture-of-experts decoders: Mixtral, Qwen2-MoE, Qwen3-MoE, DeepSeek-V2 and -V3 (MLA).

Defaults as the transformers 5 config classes apply them; layer placement of the MoE blocks as
the decoder layers of `modeling_<type>.py` decide it.
"""

from __future__ import annotations

from trainplan.model.hfconfig._reader import ConfigReader
from trainplan.model.hfconfig.dense import Fields, attention_bias, qwen_window, shapes
from trainplan.specs import MlaSpec, MoeSpec


def mixtral(r: ConfigReader) -> Fields:
    """Every layer is MoE; each expert is a gated MLP of intermediate_size (w1, w3, w2)."""
    experts = ("num_local_experts", "num_experts")
    r.require(experts, "num_experts_per_tok")
    fields = shapes(r, tie=False, kv_heads=8, max_position=131072)
    moe = MoeSpec(num_experts=r.integer(experts, positive=True),
                  top_k=r.integer("num_experts_per_tok", positive=True),
                  expert_intermediate_size=fields["intermediate_size"])
    return {**fields, "naming": "mixtral", "moe": moe,
            "sliding_window": r.window("sliding_window", None)}


def _qwen_moe(r: ConfigReader, *, shared: bool) -> MoeSpec | None:
    """A layer is MoE unless listed in mlp_only_layers, and only every decoder_sparse_step-th."""
    keys = ("num_experts", "num_experts_per_tok", "moe_intermediate_size")
    r.require(*keys, *(("shared_expert_intermediate_size",) if shared else ()))
    if r.integer("num_experts") == 0:
        return None
    shared_width = r.integer("shared_expert_intermediate_size") if shared else 0
    return MoeSpec(
        num_experts=r.integer("num_experts", positive=True),
        top_k=r.integer("num_experts_per_tok", positive=True),
        expert_intermediate_size=r.integer("moe_intermediate_size", positive=True),
        num_shared_experts=1 if shared_width else 0,
        shared_intermediate_size=shared_width,
        shared_expert_gate=shared,
        layer_freq=r.integer("decoder_sparse_step", 1, positive=True),
        dense_layers=r.integers("mlp_only_layers"),
    )


def qwen2_moe(r: ConfigReader) -> Fields:
    """Qwen1.5/Qwen2-MoE: a shared expert with a sigmoid gate; q/k/v bias (qkv_bias)."""
    fields = shapes(r, tie=False, kv_heads=16, max_position=32768)
    return {**fields, **qwen_window(r), "qkv_bias": r.flag("qkv_bias", True),
            "moe": _qwen_moe(r, shared=True)}


def qwen3_moe(r: ConfigReader) -> Fields:
    fields = shapes(r, tie=False, kv_heads=4, max_position=32768)
    return {**fields, **attention_bias(r, "attention_bias", False), **qwen_window(r),
            "qk_norm": True, "moe": _qwen_moe(r, shared=False)}


def _deepseek(r: ConfigReader, *, v3: bool) -> Fields:
    """Multi-head latent attention + fine-grained experts with shared experts.

    head_dim is the q/k head width (qk_nope_head_dim + qk_rope_head_dim); v heads are
    v_head_dim wide. q_lora_rank null (V2-Lite) means a plain q_proj.
    """
    mla_keys = ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
    r.require(*mla_keys, "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size")
    # Absent: the class default 1536; null (V2-Lite) or 0: a plain q_proj.
    q_lora_rank = r.opt_integer("q_lora_rank") if "q_lora_rank" in r.config else 1536
    mla = MlaSpec(q_lora_rank=q_lora_rank or None,
                  kv_lora_rank=r.integer("kv_lora_rank", positive=True),
                  qk_nope_head_dim=r.integer("qk_nope_head_dim", positive=True),
                  qk_rope_head_dim=r.integer("qk_rope_head_dim", positive=True),
                  v_head_dim=r.integer("v_head_dim", positive=True))
    fields = shapes(r, tie=False, kv_heads=128 if v3 else None,
                    max_position=4096 if v3 else 2048)
    fields["head_dim"] = mla.qk_head_dim
    expert_width = r.integer("moe_intermediate_size", positive=True)
    n_shared = r.integer("n_shared_experts", 1 if v3 else 2)
    if n_shared < 0:
        raise r.fail(f"has n_shared_experts = {n_shared}; expected 0 or more")
    moe = MoeSpec(
        num_experts=r.integer("n_routed_experts", positive=True),
        top_k=r.integer("num_experts_per_tok", positive=True),
        expert_intermediate_size=expert_width,
        num_shared_experts=n_shared,
        shared_intermediate_size=n_shared * expert_width,
        first_dense_layers=r.integer("first_k_dense_replace", 3 if v3 else 0),
        router_bias=v3,   # e_score_correction_bias: one float per routed expert per MoE layer
    )
    notes: tuple[str, ...] = ()
    if v3 and r.integer("num_nextn_predict_layers", 1):
        notes = ("multi-token-prediction (MTP) layers are not counted",)
    return {**fields, **attention_bias(r, "attention_bias", False), "naming": "deepseek",
            "mlp_bias": False if v3 else r.flag("mlp_bias", False), "mla": mla, "moe": moe,
            "notes": notes}


def deepseek_v2(r: ConfigReader) -> Fields:
    return _deepseek(r, v3=False)


def deepseek_v3(r: ConfigReader) -> Fields:
    return _deepseek(r, v3=True)
