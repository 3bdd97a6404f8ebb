"""What every ground-truth case needs, memory or time: its model, GPU, framework, optimizer,
checkpointing and LoRA settings, read from the case's own fields (never from its id alone).

The schema is /work/shared/ground_truth/README.md. Nothing here is tuned to a case: every rule
reads a fact the case states, or a fact of the model (an architecture table with its source).
"""

from __future__ import annotations

import re
from typing import Any

from trainplan import catalog
from trainplan.enums import Framework, MlpKind, NormKind, Position
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.validate import check_model_size
from trainplan.model.hfconfig import spec_from_hf_config
from trainplan.specs import ModelSpec

GPUS_PER_NODE = 8

# The top-level fields of a case (ground-truth README, "Schema"). An import refuses anything else.
CASE_FIELDS = frozenset({
    "id", "kind", "model", "method", "lora", "quantization", "precision", "optimizer", "micro_batch",
    "grad_accum", "global_batch", "seq_len", "seq_len_note", "grad_ckpt", "attention", "gpus", "parallel",
    "framework", "measured", "source", "confidence", "notes"})
REQUIRED_FIELDS = ("id", "kind", "model", "method")

# A name's parenthetical aside, as tables write the variants of a row: "Qwen-7B(-Chat)", "Llama-2-7B (base)"
_ASIDE = re.compile(r"\s*\([^()]*\)")


def without_aside(value: str) -> str:
    """The text without its parenthesised asides ("2048 (packed)" -> "2048", "80 GB (nvidia-smi)" -> "80 GB");
    the text as written where nothing else is left."""
    return _ASIDE.sub(" ", value).strip() or value

# Fine-tuned variants that share a catalog architecture (same config.json shapes).
_SAME_ARCHITECTURE = {"bigscience/bloomz-7b1": "bloom-7b1"}

# Pre-Llama models that litgpt runs with its own GPT class (litgpt/config.py at the cases' commit):
# GPT-NeoX-style blocks (parallel residual, LayerNorm, GELU MLP, biases), one attention linear
# split into q/k/v so that LoRA's "query"/"value" reach them: llama module names are used.
# phi-1.5 shares one LayerNorm between attention and MLP (shared_attention_norm=True). A case of these
# ids with architecture numbers takes this block before the catalog's (whose phi-1.5 is transformers'
# PhiForCausalLM, with an lm_head bias litgpt's config also has: lm_head_bias=True).
_NEOX_FAMILIES = {"stabilityai/stablelm-base-alpha-3b": 2, "microsoft/phi-1_5": 1}
_LITGPT_HOW = "GPT-NeoX-style block from the case's numbers (litgpt config: parallel residual, LayerNorm, GELU MLP)"

_ENCODER_DECODER = re.compile(r"(^|/|-|_)(t5|t0|mt0|mt5|flan-t5|bart|mbart|ul2|pegasus)([-_/.]|$)",
                              re.IGNORECASE)


class Skip(Exception):
    """This case cannot be mapped; the message says why."""


# What reading a field of an unexpected shape raises (a number where a table belongs, a table for a name,
# a zero count): the case is reported as not predicted, with the error, and the rest of the file is scored.
MALFORMED = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError)


# the schema's two kinds as other writers name them
_KIND_WORDS = {"time": ("time", "throughput", "speed", "performance", "perf", "step time", "step_time", "tokens/s",
                        "tps", "training time", "train time", "gpu-hours", "gpu hours", "gpu_hours", "mfu", "tflops"),
               "memory": ("memory", "mem", "vram", "gpu memory", "peak memory", "peak_memory", "memory usage")}
_MEMORY_MEASURED = ("peak_mem_gib", "reported_value")
_TIME_MEASURED = ("step_time_s", "tokens_per_s_per_gpu", "tokens_per_s_total", "tflops_per_gpu", "mfu", "hfu",
                  "gpu_hours", "run_s")


def case_kind(case: dict) -> str | None:
    """The case's kind, "memory" or "time": as written in any case and under the names other writers use
    (_KIND_WORDS); where none is written, the one its measured block gives (a peak memory, or a time metric,
    not both); None otherwise."""
    kind = case.get("kind")
    if isinstance(kind, str):
        low = kind.strip().lower()
        return next((k for k, words in _KIND_WORDS.items() if low in words), None)
    if kind is not None:
        return None
    measured = case.get("measured") if isinstance(case.get("measured"), dict) else {}
    memory = any(measured.get(k) is not None for k in _MEMORY_MEASURED)
    time = any(measured.get(k) is not None for k in _TIME_MEASURED)
    return "memory" if memory and not time else "time" if time and not memory else None


def source_of(case: dict) -> str:
    """The case's source repository (or url), the unit of leave-one-source-out validation."""
    src = case.get("source") or {}
    return src.get("repo") or src.get("url") or "unknown"


def text(value: Any) -> str:
    """A field as lower-case text (dicts and lists as their repr), '' for None."""
    return "" if value is None else str(value).lower()


# --- model --------------------------------------------------------------------------------------

def is_encoder_decoder(case: dict) -> bool:
    m = case.get("model") or {}
    return any(_ENCODER_DECODER.search(str(m.get(k) or "")) for k in ("hf_id", "name"))


def case_model(case: dict, *, size_proxy: bool = False) -> tuple[ModelSpec, str]:
    """(ModelSpec, how it was found). Catalog first (after litgpt's own block for a case of
    _NEOX_FAMILIES), then known architecture tables, then the case's own architecture numbers (within
    the bounds `trainplan estimate` holds any model to: job/validate.check_model_size); then, with
    `size_proxy` (the time reader), a dense model of the stated size (size_proxy_model); otherwise Skip
    with the reason."""
    try:
        spec, how = _case_model(case)
    except Skip:
        if not size_proxy:
            raise
        spec, how = size_proxy_model(case.get("model") or {})
    check_model_size(spec)
    return spec, how


# Llama 3.x (Meta's config.json of each size): the shapes a dense decoder of a stated size is given when the
# catalog does not know it and the case states no architecture (size_proxy_model)
_PROXY_SHAPES = ("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b")


def size_proxy_model(m: dict) -> tuple[ModelSpec, str]:
    """A dense decoder of the case's stated size (params_b) for a model the catalog does not know and whose
    case states no architecture: the Llama 3.x shape nearest in size (log scale: layers, widths, GQA, its
    128,256-token vocabulary), its MLP width solved so the parameters total the stated size. A step's time is
    about 6 x parameters FLOPs a token whatever the shape; attention and the head follow the proxy. Not for MoE
    (the active share is not a shape); Skip when no size is stated or it is too small for the smallest shape."""
    import math

    from trainplan.model.params import count_params

    name = m.get("name")
    try:
        params = float(m.get("params_b") or 0) * 1e9
    except (TypeError, ValueError):
        params = 0.0
    if params <= 0 or m.get("moe"):
        raise Skip(f"model {name}: not in the catalog and the case gives no architecture numbers")
    refs = [catalog.resolve_model(r) for r in _PROXY_SHAPES]
    ref = min(refs, key=lambda r: abs(math.log(count_params(r).total / params)))
    per_width = 3 * ref.num_layers * ref.hidden_size          # gate, up and down per unit of MLP width
    width = round((ref.intermediate_size + (params - count_params(ref).total) / per_width) / 256) * 256
    if width < 256:
        raise Skip(f"model {name}: not in the catalog, no architecture numbers, and {params / 1e9:g}B parameters "
                   f"is below the smallest dense shape trainplan proxies ({ref.name})")
    spec = replace(ref, name=str(name or ref.name), hf_id=m.get("hf_id") or None, intermediate_size=width)
    return spec, (f"not in the catalog and no architecture stated: a dense decoder of {params / 1e9:g}B parameters "
                  f"shaped as {ref.name} (MLP width {width}; {count_params(spec).total / 1e9:.2f}B parameters)")


_MPT = re.compile(r"(?<![a-z0-9])mpt(?![a-z])", re.IGNORECASE)


def _case_model(case: dict) -> tuple[ModelSpec, str]:
    m = case.get("model") or {}
    if is_encoder_decoder(case):
        raise Skip(f"model {m.get('name')}: encoder-decoder (T5/mT0 family), which trainplan does not model")
    hf_id = str(m.get("hf_id") or "")
    if hf_id.lower() in _NEOX_FAMILIES and m.get("layers"):
        return _litgpt_neox(m, _NEOX_FAMILIES[hf_id.lower()]), _LITGPT_HOW
    if hf_id.lower() in _SAME_ARCHITECTURE:
        spec = catalog.resolve_model(_SAME_ARCHITECTURE[hf_id.lower()])
        return replace(spec, name=m.get("name") or hf_id), f"same architecture as catalog {spec.name}"
    name = str(m.get("name") or "")
    # the name without its aside only where the case gives no architecture of its own ("MPT-7b (llm-foundry
    # benchmark config)" with its numbers is that config, not the catalog's checkpoint)
    bare = _ASIDE.sub("", name).strip() if not (m.get("layers") and m.get("hidden")) else name
    differs = ""
    for named in (hf_id, name, bare if bare != name else ""):
        if not named:
            continue
        try:
            spec = catalog.resolve_model(named)
        except TrainplanError:
            continue
        differs = _differs_from_case(spec, m)
        if differs:     # the run's own config (a padded vocabulary, other sizes) is the model it trained
            break
        how = catalog.model_name_note(named) or "catalog"
        return spec, how if named is not bare else f"model name read without its aside ({name!r} -> {bare!r}); {how}"
    if m.get("layers") and m.get("hidden"):
        if _MPT.search(f"{m.get('name') or ''} {hf_id}"):
            return _mpt(m), "MPT architecture from the case's numbers" + differs
        if _GPT2_CONFIG.search(f"{m.get('arch_source') or ''} {m.get('params_note') or ''}"):
            return _gpt2(m), "GPT-2 architecture (transformers GPT2Config) from the case's numbers" + differs
        return _synthesized_llama(m), "llama-style config synthesized from the case's numbers" + differs
    raise Skip(f"model {m.get('name')}: not in the catalog and the case gives no architecture numbers")


_STATED_SHAPES = (("layers", "num_layers"), ("hidden", "hidden_size"), ("heads", "num_heads"),
                  ("kv_heads", "num_kv_heads"), ("intermediate", "intermediate_size"), ("vocab", "vocab_size"))


def _differs_from_case(spec: ModelSpec, m: dict) -> str:
    """'' when the catalog row `spec` has every shape the case states, else a note of the first that differs
    (the case then builds its model from its own numbers: flash-attention's GPT3-125M pads GPT-2's 50,257-token
    vocabulary to 50,264)."""
    if not (m.get("layers") and m.get("hidden")):
        return ""
    for key, attr in _STATED_SHAPES:
        stated = m.get(key)
        if stated is not None and stated != getattr(spec, attr):
            return f" (not catalog {spec.name}: the case's {key} is {stated}, the catalog's {getattr(spec, attr)})"
    return ""


def _mpt(m: dict) -> ModelSpec:
    """MPT (llm-foundry): ALiBi, LayerNorm, plain GELU MLP, tied embeddings."""
    return ModelSpec(name=m["name"], model_type="mpt", naming="neox", hidden_size=m["hidden"],
                     num_layers=m["layers"], num_heads=m["heads"], num_kv_heads=m["kv_heads"] or m["heads"],
                     head_dim=m["hidden"] // m["heads"], intermediate_size=m["intermediate"],
                     vocab_size=m["vocab"], tied_embeddings=True, mlp_kind=MlpKind.PLAIN,
                     norm_kind=NormKind.LAYER, position=Position.ALIBI)


# A model defined as a transformers GPT2Config with the case's sizes (flash-attention's training
# configs: configs/model/gpt2.yaml `config: _target_: transformers.GPT2Config`, sized by the
# configs/model/gpt2model/*.yaml the experiment names): GPT-2's block (LayerNorm, learned positions,
# GELU MLP of n_inner, tied head), not a llama one.
_GPT2_CONFIG = re.compile(r"\bgpt2model\b|\bGPT2Config\b|\bGPT-[23] style config", re.IGNORECASE)


def _gpt2(m: dict) -> ModelSpec:
    missing = [k for k in ("heads", "vocab") if not m.get(k)]
    if missing:
        raise Skip(f"model {m.get('name')}: a GPT-2 config without {', '.join(missing)}")
    config = {"model_type": "gpt2", "n_embd": m["hidden"], "n_layer": m["layers"], "n_head": m["heads"],
              "n_inner": m.get("intermediate") or None, "vocab_size": m["vocab"],
              "tie_word_embeddings": True if m.get("tied_embeddings") is None else bool(m["tied_embeddings"])}
    return spec_from_hf_config(config, name=str(m.get("name")), hf_id=m.get("hf_id"))


def _synthesized_llama(m: dict) -> ModelSpec:
    missing = [k for k in ("heads", "intermediate", "vocab") if not m.get(k)]
    if missing:
        raise Skip(f"model {m.get('name')}: not in the catalog and the case lacks {', '.join(missing)}")
    config = {"model_type": "llama", "hidden_size": m["hidden"], "num_hidden_layers": m["layers"],
              "num_attention_heads": m["heads"], "num_key_value_heads": m.get("kv_heads") or m["heads"],
              "intermediate_size": m["intermediate"], "vocab_size": m["vocab"],
              "tie_word_embeddings": bool(m.get("tied_embeddings"))}
    return spec_from_hf_config(config, name=str(m.get("name")), hf_id=m.get("hf_id"))


def _litgpt_neox(m: dict, norms_per_layer: int) -> ModelSpec:
    config = {"model_type": "gpt_neox", "hidden_size": m["hidden"], "num_hidden_layers": m["layers"],
              "num_attention_heads": m["heads"], "intermediate_size": m["intermediate"],
              "vocab_size": m["vocab"], "use_parallel_residual": True, "tie_word_embeddings": False}
    spec = spec_from_hf_config(config, name=str(m.get("name")), hf_id=m.get("hf_id"))
    return replace(spec, naming="llama", norms_per_layer=norms_per_layer)


def nodes_for(count: int) -> int:
    """Nodes of 8 GPUs for jobs larger than one node (the cases give GPU counts only)."""
    return max(1, count // GPUS_PER_NODE) if count > GPUS_PER_NODE else 1


# --- LoRA ---------------------------------------------------------------------------------------

# ("mlp", torchtune's apply_lora_to_mlp and litgpt's lora_mlp, is a role alias the readers write as the model's
# own MLP module names: model.params named_targets)
_TORCHTUNE_NAMES = {"q_proj": ("q_proj",), "k_proj": ("k_proj",), "v_proj": ("v_proj",),
                    "output_proj": ("o_proj",)}
_QWEN1_TARGETS = frozenset({"c_attn", "c_proj", "w1", "w2"})
# how tables shorten the Llama-family projection names ("q, v", "q/k/v/o", "attention + mlp"); a model
# without these modules still refuses them where the targets are checked (model.lora)
_SHORT_NAMES = {"q": ("q_proj",), "k": ("k_proj",), "v": ("v_proj",), "o": ("o_proj",), "gate": ("gate_proj",),
                "up": ("up_proj",), "down": ("down_proj",), "attention": ("q_proj", "k_proj", "v_proj", "o_proj"),
                "attn": ("q_proj", "k_proj", "v_proj", "o_proj"), "ffn": ("gate_proj", "up_proj", "down_proj")}


def lora_targets(case: dict) -> tuple[tuple[str, ...], str | None]:
    """(peft-style target names, note). () = peft's default for the model.

    Qwen's c_attn/c_proj/w1/w2 reach every linear of a Qwen-1 block (c_proj matches both the
    attention and the MLP output): all-linear. torchtune's names translate to HF module names.
    """
    targets = (case.get("lora") or {}).get("targets")
    if isinstance(targets, str):    # "all (lora_target: all)", "q_proj,v_proj", "q_proj v_proj", "['q_proj']"
        # a list written as text ("['q_proj', 'v_proj']") reads as its names
        words = re.sub(r"[\[\]'\"]", " ", re.sub(r"\([^)]*\)", " ", targets)).strip()
        if re.fullmatch(r"all([ _-]linear)?( layers| modules)?", words.lower()):
            return ("all-linear",), "LoRA targets: every linear layer (all)"
        # module names keep their case: peft matches them exactly (Baichuan's W_pack)
        split = [w for w in re.split(r"[,\s/+]+", words) if w]
        prose = "default" in (w.lower() for w in split) or not all(
            re.fullmatch(r"[a-z_][a-z0-9_.]*", w.lower()) for w in split)
        targets = [] if prose else split
    if not targets:
        return (), "LoRA targets: peft's default for the architecture"
    names = tuple(str(t) for t in targets)
    if set(names) == _QWEN1_TARGETS:
        return ("all-linear",), "c_attn, c_proj, w1, w2 cover every linear of a Qwen-1 block: all-linear"
    short = [t for t in names if t.lower() in _SHORT_NAMES]
    names = tuple(n for t in names for n in _SHORT_NAMES.get(t.lower(), (t,)))
    note = f"LoRA targets {', '.join(short)} read as {', '.join(names)}" if short else None
    return tuple(dict.fromkeys(n for t in names for n in _TORCHTUNE_NAMES.get(t, (t,)))), note


def framework_default(framework: Framework, field: str):
    """The framework's own default for a JobOptions field (job/defaults/<framework>.py: a Default with its
    value, key and source), or None where the framework has no defaults module or no such default."""
    from trainplan.job import defaults

    try:
        return defaults.defaults(framework.value).get(field)
    except KeyError:      # no defaults module for this framework
        return None


def lora_dropout(case: dict, framework: Framework) -> float:
    """The case's dropout, else the framework's own default (job/defaults/<framework>.py), else
    trainplan's (0.05)."""
    lora = case.get("lora") or {}
    if isinstance(lora, dict) and isinstance(lora.get("dropout"), int | float):
        return float(lora["dropout"])
    default = framework_default(framework, "lora_dropout")
    return float(default.value) if default is not None else 0.05
