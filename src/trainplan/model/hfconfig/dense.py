"""Dense decoders of the Llama lineage: Llama, Mistral, Qwen2/3, Gemma 1/2/3, Phi-3, GLM, Yi,
InternLM 1/2, Baichuan and ChatGLM.

Each parser returns the structural ModelSpec fields for one model_type. Defaults are those the
transformers 5 config class applies when a key is absent (`configuration_<type>.py`), or the
remote-code config class for ChatGLM, InternLM, InternLM2 and Baichuan; biases, norm counts and
module names follow the matching `modeling_<type>.py`.
"""

from __future__ import annotations

from trainplan.enums import NormKind, Position
from trainplan.model.hfconfig._reader import ConfigReader, Key

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    pass

Fields = dict[str, object]     # ModelSpec keyword arguments read from a config

SHAPE_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "vocab_size")


def shapes(r: ConfigReader, *, tie: bool, kv_heads: int | None = None, head_dim: int | None = None,
           max_position: int | None = None, act_key: str = "hidden_act", act: str = "silu",
           required: tuple[str, ...] = SHAPE_KEYS, heads: int | None = None,
           vocab: int | None = None) -> Fields:
    """The shape fields every Llama-style config carries under the same keys.

    kv_heads / head_dim: the class default when the key is absent; None means what most classes
    do, num_key_value_heads = num_attention_heads and head_dim = hidden_size // heads.
    """
    r.require(*required)
    hidden = r.integer("hidden_size", positive=True)
    n_heads = r.integer("num_attention_heads", heads, positive=True)
    n_kv = r.integer("num_key_value_heads", kv_heads or n_heads, positive=True)
    if n_heads % n_kv and not r.has("num_key_value_heads"):
        raise r.fail(f"lacks num_key_value_heads (the class default {n_kv} does not divide "
                     f"num_attention_heads {n_heads})")
    return {
        "hidden_size": hidden,
        "num_layers": r.integer("num_hidden_layers", positive=True),
        "num_heads": n_heads,
        "num_kv_heads": n_kv,
        "head_dim": r.integer("head_dim", head_dim or max(hidden // n_heads, 1), positive=True),
        "intermediate_size": r.integer("intermediate_size", positive=True),
        "vocab_size": r.integer("vocab_size", vocab, positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", tie),
        "hidden_act": r.string(act_key, act),
        "max_position_embeddings": r.opt_integer("max_position_embeddings", max_position),
    }


def attention_bias(r: ConfigReader, key: Key, default: bool, *, out: bool = True) -> Fields:
    """q/k/v (and o_proj where `out`) biases switched by one config flag."""
    bias = r.flag(key, default)
    return {"qkv_bias": bias, "out_bias": bias and out}


def qwen_window(r: ConfigReader) -> Fields:
    """Qwen: sliding_window applies only with use_sliding_window, from layer max_window_layers."""
    if not r.flag("use_sliding_window", False):
        return {"sliding_window": None}
    start = r.integer("max_window_layers", 28)
    return {"sliding_window": r.window("sliding_window", 4096),
            "notes": (f"sliding-window attention on layers {start} and above",)}


def llama(r: ConfigReader) -> Fields:
    return {**shapes(r, tie=False, max_position=2048), **attention_bias(r, "attention_bias", False),
            "mlp_bias": r.flag("mlp_bias", False)}


def internlm(r: ConfigReader) -> Fields:
    """InternLM (v1, remote code): Llama with q/k/v/o biases switched by `bias` (default true)."""
    return {**shapes(r, tie=False, max_position=2048), **attention_bias(r, "bias", True)}


def mistral(r: ConfigReader) -> Fields:
    return {**shapes(r, tie=False, kv_heads=8, max_position=131072),
            "sliding_window": r.window("sliding_window", 4096)}


def qwen2(r: ConfigReader) -> Fields:
    # Qwen2Attention: q/k/v always carry a bias, o_proj never.
    return {**shapes(r, tie=False, kv_heads=32, max_position=32768), **qwen_window(r),
            "qkv_bias": True}


def qwen3(r: ConfigReader) -> Fields:
    return {**shapes(r, tie=False, kv_heads=32, head_dim=128, max_position=32768),
            **attention_bias(r, "attention_bias", False), **qwen_window(r), "qk_norm": True}


def gemma(r: ConfigReader) -> Fields:
    fields = shapes(r, tie=True, kv_heads=16, head_dim=256, max_position=8192,
                    act="gelu_pytorch_tanh")
    if fields["hidden_act"] == "gelu":   # GemmaConfig maps the legacy value to the tanh form
        fields["hidden_act"] = "gelu_pytorch_tanh"
    return {**fields, **attention_bias(r, "attention_bias", False)}


def gemma2(r: ConfigReader) -> Fields:
    return {**shapes(r, tie=True, kv_heads=4, head_dim=256, max_position=8192,
                     act_key="hidden_activation", act="gelu_pytorch_tanh"),
            **attention_bias(r, "attention_bias", False), "norms_per_layer": 4,
            "sliding_window": r.window("sliding_window", 4096),
            "notes": ("sliding-window attention on every other layer", "logit soft-capping")}


def gemma3_text(r: ConfigReader) -> Fields:
    # The Gemma3 text class defaults are the 4B shapes; hub configs lean on them (heads, vocab).
    fields = shapes(r, tie=True, heads=8, kv_heads=4, head_dim=256, vocab=262208,
                    max_position=131072, act_key="hidden_activation", act="gelu_pytorch_tanh",
                    required=("hidden_size", "num_hidden_layers", "intermediate_size"))
    window = r.window("sliding_window", 4096)
    layer_types = r.config.get("layer_types")
    if isinstance(layer_types, list):
        local = sum(t == "sliding_attention" for t in layer_types)
        pattern = f"{local} of {len(layer_types)} layers"
    else:
        every = r.integer("sliding_window_pattern", 6, positive=True)
        pattern = f"{every - 1} of every {every} layers"
    return {**fields, **attention_bias(r, "attention_bias", False), "norms_per_layer": 4,
            "qk_norm": True, "sliding_window": window,
            "notes": (f"sliding-window attention on {pattern}",)}


def gemma3(r: ConfigReader) -> Fields:
    """Gemma 3 multimodal checkpoint: the text decoder from text_config; the vision tower and the
    projector are not counted."""
    text = r.config.get("text_config")
    if not isinstance(text, dict):
        raise r.fail("lacks text_config")
    fields = gemma3_text(ConfigReader(config=text, model_type=r.model_type))
    if "tie_word_embeddings" not in text:
        fields["tied_embeddings"] = r.flag("tie_word_embeddings", True)
    fields["notes"] += ("text decoder only: the SigLIP vision tower and projector are not counted",)
    return fields


def phi3(r: ConfigReader) -> Fields:
    return {**shapes(r, tie=False, max_position=4096), "naming": "phi3",
            "sliding_window": r.window("sliding_window", None)}


def glm4(r: ConfigReader) -> Fields:
    """GLM-4-0414 (HF native Glm4): q/k/v bias, o_proj none, 4 RMSNorms per layer, fused gate_up."""
    return {**shapes(r, tie=False, kv_heads=2, head_dim=128, max_position=131072),
            **attention_bias(r, "attention_bias", True, out=False), "naming": "glm4",
            "norms_per_layer": 4, "notes": ("rotary on half of each head",)}


def glm(r: ConfigReader) -> Fields:
    """GLM-4-9B in HF native form (GlmForCausalLM, model_type glm): as Glm4, with 2 norms."""
    return {**glm4(r), "norms_per_layer": 2}


def internlm2(r: ConfigReader) -> Fields:
    """InternLM2 (remote code): fused wqkv and wo share the `bias` flag (class default true)."""
    return {**shapes(r, tie=False), **attention_bias(r, "bias", True), "naming": "internlm2"}


def baichuan(r: ConfigReader) -> Fields:
    """Baichuan / Baichuan2 (remote code): fused W_pack, no biases.

    The 7B code uses RoPE and reads max_position_embeddings; the 13B code uses ALiBi and its
    config carries only model_max_length, so the key that is present tells the two apart.
    """
    fields = shapes(r, tie=False, max_position=4096)
    if r.has("max_position_embeddings"):
        return {**fields, "naming": "baichuan"}
    fields["max_position_embeddings"] = r.opt_integer("model_max_length", 4096)
    return {**fields, "naming": "baichuan", "position": Position.ALIBI,
            "notes": ("ALiBi (Baichuan 13B code: no max_position_embeddings in config.json)",)}


def chatglm(r: ConfigReader) -> Fields:
    """ChatGLM2/3 and GLM-4-9B (THUDM remote code, model_type chatglm)."""
    vocab = ("padded_vocab_size", "vocab_size")
    r.require("hidden_size", "num_layers", "num_attention_heads", "ffn_hidden_size", vocab)
    if not r.flag("post_layer_norm", True):
        raise r.fail("has post_layer_norm = false (no final norm), which trainplan does not model")
    heads = r.integer("num_attention_heads", positive=True)
    kv_heads = heads
    if r.flag("multi_query_attention", False):
        kv_heads = r.integer("multi_query_group_num", 1, positive=True)
    linear_bias = r.flag("add_bias_linear", False)
    return {
        "naming": "chatglm",
        "hidden_size": r.integer("hidden_size", positive=True),
        "num_layers": r.integer("num_layers", positive=True),
        "num_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": r.integer("kv_channels", 128, positive=True),
        "intermediate_size": r.integer("ffn_hidden_size", positive=True),
        "vocab_size": r.integer(vocab, positive=True),
        "tied_embeddings": r.flag("tie_word_embeddings", False),
        "hidden_act": "swiglu",
        "norm_kind": NormKind.RMS if r.flag("rmsnorm", True) else NormKind.LAYER,
        "qkv_bias": linear_bias or r.flag("add_qkv_bias", False),
        "out_bias": linear_bias,
        "mlp_bias": linear_bias,
        "max_position_embeddings": r.opt_integer("seq_length", 2048),
        "notes": ("rotary on half of each head",),
    }
