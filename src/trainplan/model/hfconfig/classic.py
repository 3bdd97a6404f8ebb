"""Decoders with LayerNorm and plain MLPs: GPT-2, GPT-NeoX/Pythia, OPT, BLOOM, Falcon, Nemotron.

Defaults as the transformers 5 config classes apply them; structure per `modeling_<type>.py`.
"""

from __future__ import annotations

from trainplan.enums import MlpKind, NormKind, Position
from trainplan.model.hfconfig._reader import ConfigReader
from trainplan.model.hfconfig.dense import Fields

_CLASSIC: Fields = {"mlp_kind": MlpKind.PLAIN, "norm_kind": NormKind.LAYER}
_ALL_BIASES: Fields = {"qkv_bias": True, "out_bias": True, "mlp_bias": True}


def gpt2(r: ConfigReader) -> Fields:
    """GPT-2 (Conv1D c_attn/c_proj/c_fc, all with bias); n_inner null -> 4 * n_embd."""
    hidden_key = ("n_embd", "hidden_size")
    r.require(hidden_key, ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"),
              "vocab_size")
    if r.flag("add_cross_attention", False):
        raise r.fail("has add_cross_attention = true (an encoder-decoder), which trainplan "
                     "does not model")
    hidden = r.integer(hidden_key, positive=True)
    heads = r.integer(("n_head", "num_attention_heads"), positive=True)
    return {
        **_CLASSIC, **_ALL_BIASES, "naming": "gpt2",
        "hidden_size": hidden,
        "num_layers": r.integer(("n_layer", "num_hidden_layers"), positive=True),
        "num_heads": heads, "num_kv_heads": heads, "head_dim": hidden // heads,
        "intermediate_size": r.integer("n_inner", 4 * hidden, positive=True),
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "hidden_act": r.string("activation_function", "gelu_new"),
        "position": Position.LEARNED,
        "max_position_embeddings": r.integer(("n_positions", "max_position_embeddings"), 1024),
    }


def gpt_neox(r: ConfigReader) -> Fields:
    """GPT-NeoX / Pythia: fused query_key_value, parallel residual by default, untied embed_out."""
    r.require("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "vocab_size")
    hidden = r.integer("hidden_size", positive=True)
    heads = r.integer("num_attention_heads", positive=True)
    bias = r.flag("attention_bias", True)
    rotary = r.config.get("rotary_pct", r.config.get("partial_rotary_factor", 0.25))
    notes = (f"rotary on {rotary:.0%} of each head",) if isinstance(rotary, int | float) else ()
    return {
        **_CLASSIC, "naming": "neox",
        "hidden_size": hidden,
        "num_layers": r.integer("num_hidden_layers", positive=True),
        "num_heads": heads, "num_kv_heads": heads, "head_dim": hidden // heads,
        "intermediate_size": r.integer("intermediate_size", positive=True),
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", False),
        "hidden_act": r.string("hidden_act", "gelu"),
        "qkv_bias": bias, "out_bias": bias, "mlp_bias": True,
        "parallel_attn_mlp": r.flag("use_parallel_residual", True),
        "max_position_embeddings": r.integer("max_position_embeddings", 2048),
        "notes": notes,
    }


def opt(r: ConfigReader) -> Fields:
    """OPT: learned positions with 2 extra rows, biases switched by enable_bias."""
    r.require("hidden_size", "num_hidden_layers", "num_attention_heads", "ffn_dim", "vocab_size")
    hidden = r.integer("hidden_size", positive=True)
    heads = r.integer("num_attention_heads", positive=True)
    if r.integer("word_embed_proj_dim", hidden) != hidden:
        raise r.fail("has word_embed_proj_dim != hidden_size (project_in/out, as opt-350m), "
                     "which trainplan does not model")
    if (not r.flag("do_layer_norm_before", True) or r.flag("_remove_final_layer_norm", False)
            or not r.flag("layer_norm_elementwise_affine", True)):
        raise r.fail("has a post-LN or affine-free layer norm variant, which trainplan does not "
                     "model")
    bias = r.flag("enable_bias", True)
    return {
        **_CLASSIC, "naming": "opt",
        "hidden_size": hidden,
        "num_layers": r.integer("num_hidden_layers", positive=True),
        "num_heads": heads, "num_kv_heads": heads, "head_dim": hidden // heads,
        "intermediate_size": r.integer("ffn_dim", positive=True),
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "hidden_act": r.string("activation_function", "relu"),
        "qkv_bias": bias, "out_bias": bias, "mlp_bias": bias,
        "position": Position.LEARNED,
        "max_position_embeddings": r.integer("max_position_embeddings", 2048),
        "learned_position_offset": 2,   # OPTLearnedPositionalEmbedding: max_position + 2 rows
    }


def bloom(r: ConfigReader) -> Fields:
    """BLOOM: ALiBi, LayerNorm on the word embeddings, MLP width 4 * hidden, all biases."""
    hidden_key = ("hidden_size", "n_embed")
    layers_key = ("n_layer", "num_hidden_layers")
    heads_key = ("n_head", "num_attention_heads")
    r.require(hidden_key, layers_key, heads_key, "vocab_size")
    hidden = r.integer(hidden_key, positive=True)
    heads = r.integer(heads_key, positive=True)
    return {
        **_CLASSIC, **_ALL_BIASES, "naming": "neox",
        "hidden_size": hidden,
        "num_layers": r.integer(layers_key, positive=True),
        "num_heads": heads, "num_kv_heads": heads, "head_dim": hidden // heads,
        "intermediate_size": 4 * hidden,
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "hidden_act": "gelu_pytorch_tanh",   # BloomGelu: the tanh approximation
        "position": Position.ALIBI,
        "embedding_norm": True,
    }


def falcon(r: ConfigReader) -> Fields:
    """Falcon, including the legacy remote-code names (RefinedWebModel: 7B, RefinedWeb: 40B).

    K/V heads: new_decoder_architecture -> num_kv_heads; else multi_query -> 1; else all heads.
    Norms: two per layer unless attention and MLP run in parallel from one shared LayerNorm
    (7B; new-architecture models choose with num_ln_in_parallel_attn, default 2).
    """
    hidden_key = ("hidden_size", "n_embed")
    layers_key = ("num_hidden_layers", "n_layer")
    heads_key = ("num_attention_heads", "n_head")
    r.require(hidden_key, layers_key, heads_key, "vocab_size")
    hidden = r.integer(hidden_key, positive=True)
    heads = r.integer(heads_key, positive=True)
    new_arch = r.flag("new_decoder_architecture", r.model_type == "RefinedWeb")
    if new_arch:
        kv_heads = r.integer(("num_kv_heads", "n_head_kv"), heads, positive=True)
    elif r.flag("multi_query", True):
        kv_heads = 1
    else:
        kv_heads = heads
    parallel = r.flag("parallel_attn", True)
    ln_in_parallel = r.opt_integer("num_ln_in_parallel_attn", 2 if new_arch else None)
    norms = 2 if (not parallel or ln_in_parallel == 2) else 1
    alibi = r.flag("alibi", False)
    bias = r.flag("bias", False)
    notes: tuple[str, ...] = ()
    if "tie_word_embeddings" not in r.config:
        notes = ("tie_word_embeddings absent: FalconConfig default true",)
    return {
        **_CLASSIC, "naming": "neox",
        "hidden_size": hidden,
        "num_layers": r.integer(layers_key, positive=True),
        "num_heads": heads, "num_kv_heads": kv_heads, "head_dim": hidden // heads,
        "intermediate_size": r.integer("ffn_hidden_size", 4 * hidden, positive=True),
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "hidden_act": r.string("activation", "gelu"),
        "qkv_bias": bias, "out_bias": bias, "mlp_bias": bias,
        "norms_per_layer": norms,
        "parallel_attn_mlp": parallel or new_arch,
        "position": Position.ALIBI if alibi else Position.ROPE,
        "max_position_embeddings": r.integer("max_position_embeddings", 2048),
        "notes": notes,
    }


def nemotron(r: ConfigReader) -> Fields:
    """NVIDIA Nemotron-3/4 (transformers models/nemotron): Llama-named q/k/v/o and a plain MLP
    (up_proj -> relu2 -> down_proj), NemotronLayerNorm1P (a LayerNorm with bias, its weight applied as
    weight + 1), rotary on partial_rotary_factor of each head (0.5 by default). NemotronConfig
    defaults are the Nemotron-4 15B shapes; num_key_value_heads absent means multi-head attention."""
    r.require("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")
    hidden = r.integer("hidden_size", positive=True)
    heads = r.integer("num_attention_heads", positive=True)
    kv_heads = r.integer("num_key_value_heads", heads, positive=True)
    if heads % kv_heads:
        raise r.fail(f"has num_key_value_heads {kv_heads}, which does not divide num_attention_heads {heads}")
    bias = r.flag("attention_bias", False)
    rotary = r.config.get("partial_rotary_factor", 0.5)
    notes = (f"rotary on {rotary:.0%} of each head",) if isinstance(rotary, int | float) else ()
    return {
        **_CLASSIC, "naming": "llama",
        "hidden_size": hidden,
        "num_layers": r.integer("num_hidden_layers", positive=True),
        "num_heads": heads, "num_kv_heads": kv_heads,
        "head_dim": r.integer("head_dim", max(hidden // heads, 1), positive=True),
        "intermediate_size": r.integer("intermediate_size", positive=True),
        "vocab_size": r.integer("vocab_size", 256000, positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", False),
        "hidden_act": r.string("hidden_act", "relu2"),
        "qkv_bias": bias, "out_bias": bias, "mlp_bias": r.flag("mlp_bias", False),
        "max_position_embeddings": r.integer("max_position_embeddings", 4096),
        "notes": notes,
    }
