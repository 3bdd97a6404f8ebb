"""Decoders of 2021-2024 with their own model_type: Qwen (1st generation, remote code), Phi-1/1.5/2,
GPT-J, GPTBigCode (SantaCoder, StarCoder), StarCoder2 and MPT.

Defaults as the config classes apply them (transformers 5.25 `configuration_<type>.py`; Qwen's remote
`configuration_qwen.py`); structure per `modeling_<type>.py`. What ModelSpec has no field for, the
parameter code reads from the model_type (model/architecture.py): the lm_head bias of Phi and GPT-J
(LM_HEAD_BIAS_MODEL_TYPES) and MPT's LayerNorms without a bias (BIASLESS_LAYER_NORM_MODEL_TYPES).
"""

from __future__ import annotations

from trainplan.enums import MlpKind, NormKind, Position
from trainplan.model.hfconfig._reader import ConfigReader
from trainplan.model.hfconfig.dense import Fields, shapes

_LAYER_NORM_MLP: Fields = {"mlp_kind": MlpKind.PLAIN, "norm_kind": NormKind.LAYER}
_ALL_BIASES: Fields = {"qkv_bias": True, "out_bias": True, "mlp_bias": True}


def _rotary_note(fraction: object) -> tuple[str, ...]:
    if isinstance(fraction, int | float) and not isinstance(fraction, bool) and fraction < 1:
        return (f"rotary on {fraction:.0%} of each head",)
    return ()


def qwen(r: ConfigReader) -> Fields:
    """Qwen, 1st generation (remote code; configuration_qwen.py defaults, code-index file 70964678292;
    modeling_qwen.py, mapengAdam/qianwen-72B@3334bfe3d6d9, a ModelScope copy of Qwen-72B's).

    QWenAttention: c_attn = Linear(hidden, 3 * kv_channels * heads) with a bias, c_proj without one
    (bias=not no_bias; no_bias defaults to true); q/k/v are split by hidden_size, so kv_channels x heads
    must equal hidden_size. QWenMLP: w1 and w2 = Linear(hidden, intermediate_size // 2), output
    c_proj(w1(x) * silu(w2(x))): the config's intermediate_size is twice the width of each branch.
    RMSNorm ln_1/ln_2/ln_f, RoPE on rotary_pct of each head, lm_head without a bias, untied by default.
    Dropout: emb_dropout_prob after the embedding, attn_dropout_prob on the attention probabilities
    (the flash-attn and eager paths; the SDPA path of torch 2 passes none).
    """
    r.require("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
    hidden = r.integer("hidden_size", positive=True)
    heads = r.integer("num_attention_heads", positive=True)
    kv_channels = r.integer("kv_channels", 128, positive=True)
    if kv_channels * heads != hidden:
        raise r.fail(f"has kv_channels {kv_channels} x num_attention_heads {heads} != hidden_size {hidden}: "
                     "modeling_qwen.py splits c_attn's output by hidden_size, so this model does not run")
    intermediate = r.integer("intermediate_size", positive=True) // 2
    if intermediate <= 0:
        raise r.fail("has intermediate_size 1; modeling_qwen.py builds w1/w2 of intermediate_size // 2")
    bias = not r.flag("no_bias", True)
    return {
        "naming": "qwen",
        "hidden_size": hidden,
        "num_layers": r.integer("num_hidden_layers", positive=True),
        "num_heads": heads, "num_kv_heads": heads, "head_dim": kv_channels,
        "intermediate_size": intermediate,
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", False),
        "hidden_act": "silu",                 # F.silu in QWenMLP, whatever the config says
        "qkv_bias": True, "out_bias": bias, "mlp_bias": bias,
        "max_position_embeddings": r.integer("seq_length", 2048, positive=True),   # the trained length
        "notes": _rotary_note(r.config.get("rotary_pct", 1.0)),
    }


def phi(r: ConfigReader) -> Fields:
    """Phi-1, Phi-1.5, Phi-2 (transformers models/phi): attention and MLP in parallel from one
    LayerNorm (PhiDecoderLayer.input_layernorm), q/k/v/dense and fc1/fc2 with biases, a final
    LayerNorm, lm_head = Linear(hidden, vocab, bias=True), untied; RoPE on partial_rotary_factor of
    each head (PhiConfig sets 0.5 when absent)."""
    fields = shapes(r, tie=False, max_position=2048, act="gelu_new")
    if r.flag("qk_layernorm", False):
        raise r.fail("has qk_layernorm = true (per-head LayerNorms on q and k), which trainplan does not model")
    rope = r.config.get("rope_parameters")
    rotary = r.config.get("partial_rotary_factor",
                          rope.get("partial_rotary_factor", 0.5) if isinstance(rope, dict) else 0.5)
    return {**fields, **_LAYER_NORM_MLP, **_ALL_BIASES, "naming": "phi", "norms_per_layer": 1,
            "parallel_attn_mlp": True, "notes": _rotary_note(rotary)}


def gptj(r: ConfigReader) -> Fields:
    """GPT-J (transformers models/gptj): GPTJBlock adds attention and MLP of one ln_1 output to the
    residual; q/k/v/out_proj without biases, fc_in/fc_out (n_inner, null -> 4 * n_embd) with biases,
    ln_f, lm_head = Linear(n_embd, vocab) with a bias, untied; rotary on rotary_dim of each head."""
    hidden_key = ("n_embd", "hidden_size")
    layers_key = ("n_layer", "num_hidden_layers")
    heads_key = ("n_head", "num_attention_heads")
    r.require(hidden_key, layers_key, heads_key, "vocab_size")
    hidden = r.integer(hidden_key, positive=True)
    heads = r.integer(heads_key, positive=True)
    head_dim = max(hidden // heads, 1)
    rotary_dim = r.opt_integer("rotary_dim", 64, positive=True)
    notes = (f"rotary on {rotary_dim} of the {head_dim} dimensions of each head",) \
        if rotary_dim and rotary_dim < head_dim else ()
    return {
        **_LAYER_NORM_MLP, "naming": "gptj",
        "hidden_size": hidden,
        "num_layers": r.integer(layers_key, positive=True),
        "num_heads": heads, "num_kv_heads": heads, "head_dim": head_dim,
        "intermediate_size": r.integer("n_inner", 4 * hidden, positive=True),
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", False),
        "hidden_act": r.string("activation_function", "gelu_new"),
        "qkv_bias": False, "out_bias": False, "mlp_bias": True,
        "norms_per_layer": 1, "parallel_attn_mlp": True,
        "max_position_embeddings": r.integer(("n_positions", "max_position_embeddings"), 2048),
        "notes": notes,
    }


def gpt_bigcode(r: ConfigReader) -> Fields:
    """GPTBigCode: SantaCoder, StarCoder, StarCoderBase (transformers models/gpt_bigcode). GPT-2's
    block with multi-query attention: c_attn = Linear(n_embd, n_embd + 2 * kv_dim) with one K/V head
    when multi_query (the default); ln_1/ln_2/ln_f LayerNorms, c_attn/c_proj/c_fc/c_proj with biases,
    learned positions (n_positions rows), lm_head tied by default (GPTBigCodeConfig)."""
    hidden_key = ("n_embd", "hidden_size")
    layers_key = ("n_layer", "num_hidden_layers")
    heads_key = ("n_head", "num_attention_heads")
    r.require(hidden_key, layers_key, heads_key, "vocab_size")
    if r.flag("add_cross_attention", False):
        raise r.fail("has add_cross_attention = true (an encoder-decoder), which trainplan does not model")
    hidden = r.integer(hidden_key, positive=True)
    heads = r.integer(heads_key, positive=True)
    return {
        **_LAYER_NORM_MLP, **_ALL_BIASES, "naming": "gpt_bigcode",
        "hidden_size": hidden,
        "num_layers": r.integer(layers_key, positive=True),
        "num_heads": heads, "num_kv_heads": 1 if r.flag("multi_query", True) else heads,
        "head_dim": max(hidden // heads, 1),
        "intermediate_size": r.integer("n_inner", 4 * hidden, positive=True),
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "hidden_act": r.string("activation_function", "gelu_pytorch_tanh"),
        "position": Position.LEARNED,
        "max_position_embeddings": r.integer(("n_positions", "max_position_embeddings"), 1024, positive=True),
    }


def starcoder2(r: ConfigReader) -> Fields:
    """StarCoder2 (transformers models/starcoder2): GQA q/k/v/o_proj and a plain MLP c_fc -> act ->
    c_proj, all with biases when use_bias (default true); LayerNorm input/post-attention/final norms;
    RoPE; sliding-window attention on every layer when sliding_window is set; tied by default."""
    fields = shapes(r, tie=True, kv_heads=2, max_position=4096, act="gelu_pytorch_tanh")
    bias = r.flag("use_bias", True)
    window = r.window("sliding_window", None)
    notes = (f"sliding-window attention ({window}) on every layer",) if window else ()
    return {**fields, **_LAYER_NORM_MLP, "naming": "starcoder2", "qkv_bias": bias, "out_bias": bias,
            "mlp_bias": bias, "sliding_window": window, "notes": notes}


_MPT_DEFAULT_ATTENTION = {"attn_type": "multihead_attention", "alibi": True, "qk_ln": False}


def mpt(r: ConfigReader) -> Fields:
    """MPT (transformers models/mpt; the checkpoints' llm-foundry remote code builds the same for their
    configs). MptBlock: norm_1 -> Wqkv (d_model -> 3 d_model) -> ALiBi attention -> out_proj, norm_2 ->
    up_proj (d_model -> 4 d_model) -> exact GELU -> down_proj; no linear has a bias and the LayerNorms
    have their bias set to None; no position embeddings (ALiBi); lm_head tied by default.

    transformers' port hard-codes that block: expansion_ratio, no_bias, attn_type, alibi and qk_ln are
    not read. A config asking for anything else (llm-foundry variants: a bias, multi-query attention,
    learned positions, QK LayerNorm, another FFN) is refused rather than estimated as the wrong model.
    """
    r.require("d_model", "n_layers", "n_heads", "vocab_size")
    hidden = r.integer("d_model", positive=True)
    heads = r.integer("n_heads", positive=True)
    attn = r.config.get("attn_config") or {}
    if not isinstance(attn, dict):
        raise r.fail(f"has attn_config = {attn!r}; expected an object")
    ffn = r.config.get("ffn_config") or {}
    wanted = {"expansion_ratio": r.config.get("expansion_ratio", 4), "no_bias": r.config.get("no_bias", True),
              **{k: attn.get(k, v) for k, v in _MPT_DEFAULT_ATTENTION.items()},
              "ffn_config.ffn_type": ffn.get("ffn_type", "mptmlp") if isinstance(ffn, dict) else ffn}
    built = {"expansion_ratio": 4, "no_bias": True, **_MPT_DEFAULT_ATTENTION, "ffn_config.ffn_type": "mptmlp"}
    differs = [f"{k} = {wanted[k]!r}" for k in built if wanted[k] != built[k]]
    if differs:
        raise r.fail(f"has {', '.join(differs)}: transformers' MptForCausalLM builds only MPT's released block "
                     "(expansion_ratio 4, no_bias, multi-head ALiBi attention, no QK norm), which trainplan "
                     "models; this llm-foundry variant it does not")
    drop = attn.get("attn_pdrop", 0)
    notes = (f"attn_config.attn_pdrop {drop}: transformers applies it as residual and attention dropout; "
             "estimated without dropout",) if isinstance(drop, int | float) and drop else ()
    return {
        **_LAYER_NORM_MLP, "naming": "mpt",
        "hidden_size": hidden,
        "num_layers": r.integer("n_layers", positive=True),
        "num_heads": heads, "num_kv_heads": heads, "head_dim": max(hidden // heads, 1),
        "intermediate_size": 4 * hidden,
        "vocab_size": r.integer("vocab_size", positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", True),
        "hidden_act": "gelu",                 # nn.GELU(approximate="none")
        "position": Position.ALIBI,
        "max_position_embeddings": r.integer("max_seq_len", 2048, positive=True),
        "notes": notes,
    }
