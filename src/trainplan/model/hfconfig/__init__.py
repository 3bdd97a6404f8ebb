"""Read a Hugging Face config.json (standard library only, no transformers) into a ModelSpec.

Every structural choice is stated in the returned spec (module naming, MLP kind, norms per layer,
QK-norm, biases, positions, tied embeddings, MoE, MLA), decided per model_type as the transformers
modeling code (or the model's remote code) builds it, with the config class defaults for absent
keys. The shape keys (hidden size, layers, heads, MLP width, vocabulary) are required instead of
defaulted: a config.json without them is a mistake, not a 7B model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from trainplan.errors import TrainplanError
from trainplan.model.hfconfig import classic, dense, early, moe, recent, variants
from trainplan.model.hfconfig._reader import ConfigReader
from trainplan.specs import ModelSpec

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SUPPORTED_MODEL_TYPES", "load_config_path", "spec_from_hf_config"]

_PARSERS: dict[str, Callable[[ConfigReader], dense.Fields]] = {
    "llama": dense.llama,
    "Yi": dense.llama,                 # early 01-ai remote code, Llama structure
    "internlm": dense.internlm,
    "mistral": dense.mistral,
    "qwen2": dense.qwen2,
    "qwen3": dense.qwen3,
    "gemma": dense.gemma,
    "gemma2": dense.gemma2,
    "gemma3_text": dense.gemma3_text,
    "gemma3": dense.gemma3,
    "phi3": dense.phi3,
    "glm": dense.glm,
    "glm4": dense.glm4,
    "chatglm": dense.chatglm,
    "internlm2": dense.internlm2,
    "baichuan": dense.baichuan,
    "mixtral": moe.mixtral,
    "qwen2_moe": moe.qwen2_moe,
    "qwen3_moe": moe.qwen3_moe,
    "deepseek_v2": moe.deepseek_v2,
    "deepseek_v3": moe.deepseek_v3,
    "kimi_k2": recent.kimi_k2,         # Moonshot remote code: the DeepSeek-V3 architecture
    "seed_oss": recent.seed_oss,
    "internlm3": recent.internlm3,
    "olmo": recent.olmo,               # OLMo 1 (the -hf uploads; hf_olmo is AI2's remote code)
    "olmo2": recent.olmo2,
    "olmo3": recent.olmo3,
    "glm4_moe": recent.glm4_moe,
    "gpt_oss": recent.gpt_oss,
    "llama4": recent.llama4,
    "llama4_text": recent.llama4,
    "gpt2": classic.gpt2,
    "gpt_neox": classic.gpt_neox,
    "opt": classic.opt,
    "bloom": classic.bloom,
    "falcon": classic.falcon,
    "RefinedWeb": classic.falcon,      # Falcon-40B remote code (new decoder architecture)
    "RefinedWebModel": classic.falcon,  # Falcon-7B remote code
    "nemotron": classic.nemotron,
    "qwen": early.qwen,                # Qwen 1st generation (remote code)
    "phi": early.phi,
    "gptj": early.gptj,
    "gpt_bigcode": early.gpt_bigcode,
    "starcoder2": early.starcoder2,
    "mpt": early.mpt,
    "deepseek": variants.deepseek,     # DeepSeek-MoE 16B remote code (MHA; not deepseek_v2's MLA)
    "olmoe": variants.olmoe,
    "granite": variants.granite,
    "granitemoe": variants.granitemoe,
    "minicpm": variants.minicpm,       # OpenBMB remote code
    "stablelm": variants.stablelm,
    "cohere": variants.cohere,
}

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted(_PARSERS, key=str.lower))


# Dropout keys and their config-class defaults per model_type: (hidden, attention, embedding).
_DROPOUT_KEYS: dict[str, tuple[tuple[str, float], tuple[str, float], tuple[str, float]]] = {
    "gpt2": (("resid_pdrop", 0.1), ("attn_pdrop", 0.1), ("embd_pdrop", 0.1)),
    "opt": (("dropout", 0.1), ("attention_dropout", 0.0), ("", 0.0)),
    "phi3": (("resid_pdrop", 0.0), ("attention_dropout", 0.0), ("embd_pdrop", 0.0)),
    "seed_oss": (("residual_dropout", 0.1), ("attention_dropout", 0.1), ("", 0.0)),
    "qwen": (("", 0.0), ("attn_dropout_prob", 0.0), ("emb_dropout_prob", 0.0)),
    "phi": (("resid_pdrop", 0.0), ("attention_dropout", 0.0), ("embd_pdrop", 0.0)),
    "gptj": (("resid_pdrop", 0.0), ("attn_pdrop", 0.0), ("embd_pdrop", 0.0)),
    "gpt_bigcode": (("resid_pdrop", 0.1), ("attn_pdrop", 0.1), ("embd_pdrop", 0.1)),
    "starcoder2": (("residual_dropout", 0.0), ("attention_dropout", 0.0), ("embedding_dropout", 0.0)),
    "mpt": (("", 0.0), ("", 0.0), ("", 0.0)),     # attn_config.attn_pdrop: early.mpt notes it
}


def _dropouts(r: ConfigReader, model_type: str) -> dict[str, float]:
    """Dropout probabilities that training runs with (HF Trainer keeps the model in train mode)."""
    keys = _DROPOUT_KEYS.get(model_type, (("hidden_dropout", 0.0), ("attention_dropout", 0.0), ("", 0.0)))
    out = {}
    for field_name, (key, default) in zip(("hidden_dropout", "attention_dropout", "embedding_dropout"), keys):
        value = r.config.get(key, default) if key else default
        out[field_name] = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    return out


def _softcaps(r: ConfigReader, model_type: str) -> dict[str, float | None]:
    """Gemma-2 soft-caps attention scores and logits with tanh (Gemma2Config defaults 50 and 30)."""
    defaults = (50.0, 30.0) if model_type == "gemma2" else (None, None)
    out: dict[str, float | None] = {}
    for key, default in zip(("attn_logit_softcapping", "final_logit_softcapping"), defaults):
        value = r.config.get(key, default)
        out[key] = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return out


# transformers.activations.ACT2CLS (4.5x and 5.x): a hidden_act outside it fails at model build
ACTIVATIONS = frozenset({"gelu", "gelu_10", "gelu_fast", "gelu_new", "gelu_python", "gelu_pytorch_tanh",
                         "gelu_accurate", "laplace", "leaky_relu", "linear", "mish", "quick_gelu", "relu",
                         "relu2", "relu6", "sigmoid", "silu", "swish", "tanh", "prelu", "xielu", "swiglu",
                         "geglu", "gelu_erf"})
# the raw keys that size the per-layer structures (checked before a parser builds anything from them)
_SIZE_KEYS = {"num_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
              "hidden_size": ("hidden_size", "n_embd", "d_model"),
              "num_heads": ("num_attention_heads", "n_head"), "num_kv_heads": ("num_key_value_heads",),
              "head_dim": ("head_dim", "kv_channels"),
              "intermediate_size": ("intermediate_size", "n_inner", "ffn_hidden_size", "moe_intermediate_size"),
              "vocab_size": ("vocab_size", "padded_vocab_size")}
_EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")


def _bounded(config: Mapping[str, Any], name: str) -> None:
    """Refuse a config whose sizes are beyond any real model (job/validate.MODEL_BOUNDS), before
    anything is built layer by layer from them."""
    from trainplan.job.validate import MAX_EXPERTS, check_model_size

    for part in (config, config.get("text_config")):
        if not isinstance(part, Mapping):
            continue
        sizes: dict[str, Any] = {}
        for field_name, keys in _SIZE_KEYS.items():
            values = [part.get(k) for k in keys if isinstance(part.get(k), int) and not isinstance(part.get(k), bool)]
            sizes[field_name] = max(values) if values else None
        check_model_size(sizes, name)
        experts = [part.get(k) for k in _EXPERT_KEYS if isinstance(part.get(k), int)]
        if experts and max(experts) > MAX_EXPERTS:
            check_model_size({"moe": type("E", (), {"num_experts": max(experts)})()}, name)


def _check_fields(r: ConfigReader, fields: dict[str, Any], name: str) -> None:
    """What transformers would refuse when it builds the model from this config."""
    act = fields.get("hidden_act")
    if isinstance(act, str) and act.lower() not in ACTIVATIONS:
        raise r.fail(f"has hidden_act {act!r}, which transformers does not know (ACT2FN): e.g. silu, gelu, "
                     "gelu_pytorch_tanh, relu")
    hidden, heads = fields.get("hidden_size"), fields.get("num_heads")
    explicit = any(r.config.get(k) is not None for k in ("head_dim", "kv_channels"))
    if isinstance(hidden, int) and isinstance(heads, int) and hidden % heads and not explicit \
            and fields.get("mla") is None:
        raise r.fail(f"has hidden_size {hidden} not divisible by num_attention_heads {heads} (and no head_dim)")
    window = fields.get("sliding_window")
    if isinstance(window, int) and window < 0:
        raise r.fail(f"has sliding_window = {window}; expected a positive integer or null")


def spec_from_hf_config(config: Mapping[str, Any], *, name: str, hf_id: str | None = None,
                        aliases: tuple[str, ...] = (), source: str = "",
                        measured_params: int | None = None) -> ModelSpec:
    """The ModelSpec of a Hugging Face config.json dict.

    Raises TrainplanError (one line) for an unsupported model_type, missing shape keys, or values
    of the wrong type.
    """
    if not isinstance(config, Mapping):
        raise TrainplanError(f"{name}: config.json must hold a JSON object, got {type(config).__name__}")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise TrainplanError(f"{name}: config.json lacks model_type")
    parser = _PARSERS.get(model_type)
    if parser is None:
        raise TrainplanError(f"{name}: model_type {model_type!r} is not supported; supported: "
                             f"{', '.join(SUPPORTED_MODEL_TYPES)}")
    _bounded(config, name)
    reader = ConfigReader(config=config, model_type=model_type)
    fields = parser(reader)
    _check_fields(reader, fields, name)
    fields.setdefault("naming", "llama")
    fields.update(_dropouts(reader, model_type))
    fields.update(_softcaps(reader, model_type))
    try:
        config_json = json.dumps(config, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TrainplanError(f"{name}: config is not JSON-serialisable ({exc})") from None
    return ModelSpec(name=name, model_type=model_type, hf_id=hf_id, aliases=tuple(aliases),
                     source=source, measured_params=measured_params, hf_config_json=config_json,
                     **fields)


def load_config_path(path: str | os.PathLike[str]) -> ModelSpec:
    """The ModelSpec of a config.json file, or of a folder holding one.

    The spec is named after the folder (for a folder, or a file called config.json) or after the
    file stem (my-model.json -> my-model).
    """
    target = os.fspath(path)
    folder = os.path.isdir(target)
    file = os.path.join(target, "config.json") if folder else target
    if not os.path.isfile(file):
        raise TrainplanError(f"no config.json in {target}" if folder else f"no such file: {target}")
    base = os.path.basename(file)
    stem = os.path.splitext(base)[0]
    name = os.path.basename(os.path.realpath(os.path.dirname(os.path.abspath(file)))) if base == "config.json" else stem
    from trainplan.safeio import CONFIG_LIMIT_BYTES, MAX_DEPTH, check_depth, read_user_text

    text = read_user_text(file, what="model config", limit_bytes=CONFIG_LIMIT_BYTES)   # never a FIFO or a device
    try:
        config = check_depth(json.loads(text), what="model config", path=file)
    except json.JSONDecodeError as exc:
        raise TrainplanError(f"{base}: malformed JSON at line {exc.lineno} column {exc.colno}: "
                             f"{exc.msg}") from None
    except RecursionError:
        raise TrainplanError(f"{base}: malformed JSON: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:   # an integer of more digits than Python converts
        raise TrainplanError(f"{base}: malformed JSON: {str(exc).splitlines()[0]}") from None
    return spec_from_hf_config(config, name=name or stem, source=file)
