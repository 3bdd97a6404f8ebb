"""Build src/trainplan/catalog/data/models.toml from the verified architecture reference.

    python tools/build_model_catalog.py [--reference PATH] [--out PATH]

Reads the reference JSON (default ../shared/reference/model_configs.json beside the repository),
keeps every decoder-only model whose main numbers are verified, and writes one [[model]] row each:
its catalog id, Hugging Face id, aliases, condensed sources, verification note, counts for the
tests, and a [model.config] table that is a config.json for that model_type (real HF key names).
The runtime reads only the generated TOML, never the reference.

TOML has no null: a config key whose value must be JSON null (DeepSeek-V2-Lite q_lora_rank) is
listed in the row's `config_null_keys` and put back as null by whoever reads the row.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REFERENCE = ROOT.parent / "shared" / "reference" / "model_configs.json"
DEFAULT_OUT = ROOT / "src" / "trainplan" / "catalog" / "data" / "models.toml"

# Entries left out, with the reason (printed when the catalog is built).
SKIP = {
    "InternLM2.5-20B": "no trustworthy config copy: every main field is null",
    "Baichuan2-13B": "position scheme (ALiBi expected), tie flag, context and norm not verified",
    "OPT-30B": "vocab_size and max_position_embeddings not verified for 30B",
}

# Catalog ids where lower-casing the display name is not what users type.
IDS = {
    "GPT-2 (124M)": "gpt2", "GPT-2 Medium (355M)": "gpt2-medium",
    "GPT-2 Large (774M)": "gpt2-large", "GPT-2 XL (1.5B)": "gpt2-xl",
    "Mixtral-8x7B-v0.1": "mixtral-8x7b", "Mixtral-8x22B-v0.1": "mixtral-8x22b",
}

# Variants with the same architecture (HF ids of instruct/chat/base uploads) and common spellings.
ALIASES: dict[str, list[str]] = {
    "Llama-2-7B": ["meta-llama/Llama-2-7b-chat-hf", "llama2-7b"],
    "Llama-2-13B": ["meta-llama/Llama-2-13b-chat-hf", "llama2-13b"],
    "Llama-2-70B": ["meta-llama/Llama-2-70b-chat-hf", "llama2-70b"],
    "Llama-3-8B": ["meta-llama/Meta-Llama-3-8B-Instruct", "llama3-8b"],
    "Llama-3-70B": ["meta-llama/Meta-Llama-3-70B-Instruct", "llama3-70b"],
    "Llama-3.1-8B": ["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B",
                     "meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1-8b"],
    "Llama-3.1-70B": ["meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B",
                      "meta-llama/Meta-Llama-3.1-70B-Instruct", "llama3.1-70b"],
    "Llama-3.1-405B": ["meta-llama/Llama-3.1-405B-Instruct", "meta-llama/Meta-Llama-3.1-405B",
                       "llama3.1-405b"],
    "Llama-3.2-1B": ["meta-llama/Llama-3.2-1B-Instruct", "llama3.2-1b"],
    "Llama-3.2-3B": ["meta-llama/Llama-3.2-3B-Instruct", "llama3.2-3b"],
    "Mistral-7B-v0.1": ["mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b"],
    "Mixtral-8x7B-v0.1": ["mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b-v0.1"],
    "Mixtral-8x22B-v0.1": ["mixtral-8x22b-v0.1"],   # Instruct has vocab 32768: not an alias
    "Gemma-2-2B": ["google/gemma-2-2b-it"],
    "Gemma-2-9B": ["google/gemma-2-9b-it"],
    "Gemma-2-27B": ["google/gemma-2-27b-it"],
    "Gemma-3-1B": ["google/gemma-3-1b-pt"],
    "Gemma-3-4B": ["google/gemma-3-4b-it"],
    "Gemma-3-12B": ["google/gemma-3-12b-it"],
    "Gemma-3-27B": ["google/gemma-3-27b-it"],
    "Phi-3-mini-4k": ["phi-3-mini", "phi3-mini"],
    "Phi-3-medium-4k": ["phi-3-medium", "phi3-medium"],
    "DeepSeek-V2-Lite": ["deepseek-ai/DeepSeek-V2-Lite-Chat"],
    "DeepSeek-V3": ["deepseek-ai/DeepSeek-V3-Base", "deepseek-ai/DeepSeek-R1", "deepseek-r1"],
    "ChatGLM3-6B": ["chatglm3"],
    "GLM-4-9B-Chat": ["THUDM/glm-4-9b", "glm-4-9b"],
    "Baichuan2-7B": ["baichuan-inc/Baichuan2-7B-Chat"],
    "Yi-6B": ["01-ai/Yi-6B-Chat"],
    "Yi-34B": ["01-ai/Yi-34B-Chat"],
    "InternLM2.5-7B": ["internlm/internlm2_5-7b-chat", "internlm2_5-7b"],
    "GPT-2 (124M)": ["gpt2-small"],
    "BLOOM-7B1": ["bigscience/bloomz-7b1"],
    "BLOOM-176B": ["bigscience/bloomz", "bloom"],
    "Falcon-7B": ["tiiuae/falcon-7b-instruct"],
    "Falcon-40B": ["tiiuae/falcon-40b-instruct"],
}
for _size in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b"):
    ALIASES[f"Pythia-{_size.upper()}"] = [f"EleutherAI/pythia-{_size}-deduped"]
for _qwen in ("0.5B", "1.5B", "3B", "7B", "14B", "32B", "72B"):
    ALIASES[f"Qwen2.5-{_qwen}"] = [f"Qwen/Qwen2.5-{_qwen}-Instruct"]
for _qwen in ("0.6B", "1.7B", "4B", "8B", "14B", "32B", "30B-A3B"):
    ALIASES[f"Qwen3-{_qwen}"] = [f"Qwen/Qwen3-{_qwen}-Base"]
ALIASES["Qwen3-235B-A22B"] = ["Qwen/Qwen3-235B-A22B-Instruct-2507"]

# Config keys stated in the reference notes rather than in its fields.
EXTRA: dict[str, dict[str, Any]] = {
    "Gemma-2-2B": {"query_pre_attn_scalar": 256},
    "Gemma-2-9B": {"query_pre_attn_scalar": 256},
    "Gemma-2-27B": {"query_pre_attn_scalar": 144},
    "Gemma-3-1B": {"query_pre_attn_scalar": 256},
    "Gemma-3-4B": {"query_pre_attn_scalar": 256},
    "Gemma-3-12B": {"query_pre_attn_scalar": 256},
    "Gemma-3-27B": {"query_pre_attn_scalar": 168},
    "ChatGLM3-6B": {"original_rope": True},
    "GLM-4-9B-Chat": {"rope_ratio": 500},
}

# Caveats on a measured count, from the reference's measured_params.what.
MEASURED_NOTES: dict[str, list[str]] = {
    "Qwen3-0.6B": ["measured_params lists the tied lm_head twice; unique parameters = "
                   "computed_params"],
    "GPT-NeoX-20B": ["measured_params is a third-party figure 1,024 above the formula "
                     "(cause unknown)"],
}

ARCHITECTURES = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
    "mixtral": "MixtralForCausalLM", "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM", "phi3": "Phi3ForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
    "chatglm": "ChatGLMModel", "baichuan": "BaichuanForCausalLM",
    "internlm2": "InternLM2ForCausalLM", "gpt2": "GPT2LMHeadModel", "opt": "OPTForCausalLM",
    "bloom": "BloomForCausalLM", "falcon": "FalconForCausalLM",
    "gpt_neox": "GPTNeoXForCausalLM",
}

ESSENTIAL = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "vocab_size")


def catalog_id(display: str) -> str:
    return IDS.get(display, display.lower().replace(" ", "-"))


def model_type(rec: dict[str, Any]) -> str:
    """The HF model_type of the catalog row (the reference annotates some)."""
    raw = str(rec["model_type"])
    if raw.startswith("falcon"):
        return "falcon"
    if raw.startswith("gemma3"):
        return "gemma3_text"   # multimodal checkpoints: the row holds the text_config
    return raw


def condense_source(text: str) -> str:
    """'github owner/repo, path @ commit (comment) ...' -> 'owner/repo path@commit [key]'."""
    index = re.match(r"GitHub code index \(find_string\) file id (\d+)", text)
    if index:
        return f"code-index file {index.group(1)}"
    page = re.match(r"stored page (\S+)", text)
    if page:
        return page.group(1)
    key = re.search(r"(?:preset )?key '([^']+)'", text)
    body = re.sub(r"^github ", "", text)
    while re.search(r"\([^()]*\)", body):
        body = re.sub(r"\s*\([^()]*\)", "", body)
    body = re.sub(r",?\s*(?:preset )?key '[^']+'.*$", "", body)
    body = re.sub(r"\s+@\s+", "@", body.strip().rstrip(",;"))
    return f"{body} [{key.group(1)}]" if key else body


def _rope_scaling(rec: dict[str, Any]) -> dict[str, Any] | None:
    scaling = rec.get("rope_scaling")
    if not scaling:
        return None
    return {k: v for k, v in scaling.items() if k != "applies_to"}   # annotation, not an HF key


def _llama_like(rec: dict[str, Any], mt: str) -> dict[str, Any]:
    hidden, heads = rec["hidden_size"], rec["num_attention_heads"]
    cfg: dict[str, Any] = {
        "hidden_size": hidden, "num_hidden_layers": rec["num_hidden_layers"],
        "num_attention_heads": heads, "num_key_value_heads": rec["num_key_value_heads"],
        "intermediate_size": rec["intermediate_size"], "vocab_size": rec["vocab_size"],
        "max_position_embeddings": rec["max_position_embeddings"],
        "tie_word_embeddings": rec["tie_word_embeddings"],
        "rms_norm_eps": rec["norm_eps"], "rope_theta": rec["rope_theta"],
        "rope_scaling": _rope_scaling(rec),
    }
    head_dim = rec.get("head_dim")
    explicit_head_dim = mt in ("llama", "mistral", "mixtral", "qwen3", "qwen3_moe", "gemma2",
                               "gemma3_text")
    if head_dim and (explicit_head_dim or head_dim * heads != hidden):
        cfg["head_dim"] = head_dim
    act_key = "hidden_activation" if mt.startswith("gemma") else "hidden_act"
    cfg[act_key] = rec["hidden_act"]
    if mt in ("llama", "qwen3", "qwen3_moe", "gemma2", "gemma3_text"):
        cfg["attention_bias"] = rec["attention_qkv_bias"]
    if mt == "llama":
        cfg["mlp_bias"] = rec["mlp_bias"]
    if mt in ("qwen2", "qwen3", "qwen3_moe"):
        cfg["use_sliding_window"] = rec["sliding_window"] is not None
    if mt == "internlm2":
        cfg["bias"] = rec["attention_qkv_bias"]
    if rec["sliding_window"] is not None:
        cfg["sliding_window"] = rec["sliding_window"]
    return cfg


def _moe_keys(rec: dict[str, Any], mt: str) -> dict[str, Any]:
    moe = rec["moe"]
    if mt == "mixtral":
        return {"num_local_experts": moe["num_local_experts"],
                "num_experts_per_tok": moe["num_experts_per_tok"],
                "router_aux_loss_coef": moe.get("router_aux_loss_coef")}
    if mt == "qwen3_moe":
        qwen = ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
                "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob")
        return {k: moe[k] for k in qwen}
    keep = ("n_routed_experts", "n_shared_experts", "num_experts_per_tok",
            "moe_intermediate_size", "first_k_dense_replace", "moe_layer_freq", "n_group",
            "topk_group", "topk_method", "scoring_func", "norm_topk_prob",
            "routed_scaling_factor")
    cfg = {k: moe[k] for k in keep if k in moe}
    cfg.update({k: v for k, v in rec["mla"].items() if k != "note"})
    cfg["attention_bias"] = rec["attention_qkv_bias"]
    if rec.get("mtp"):
        cfg["num_nextn_predict_layers"] = rec["mtp"]["num_nextn_predict_layers"]
    return cfg


def _expect_4h(rec: dict[str, Any], why: str) -> None:
    if rec["intermediate_size"] != 4 * rec["hidden_size"]:
        raise ValueError(f"{rec['hf_repo_id']}: intermediate_size {rec['intermediate_size']} != "
                         f"4 x hidden_size {rec['hidden_size']}, but {why}")


def _classic(rec: dict[str, Any], mt: str) -> dict[str, Any]:
    h, layers, heads = rec["hidden_size"], rec["num_hidden_layers"], rec["num_attention_heads"]
    common = {"vocab_size": rec["vocab_size"], "tie_word_embeddings": rec["tie_word_embeddings"]}
    if mt == "gpt2":
        _expect_4h(rec, "the row leaves n_inner absent (-> 4 * n_embd)")
        return {**common, "n_embd": h, "n_layer": layers, "n_head": heads,
                "n_positions": rec["max_position_embeddings"],
                "activation_function": rec["hidden_act"], "layer_norm_epsilon": rec["norm_eps"]}
    if mt == "bloom":
        _expect_4h(rec, "BLOOM's MLP is always 4 * hidden")
        return {**common, "n_embed": h, "n_layer": layers, "n_head": heads,
                "layer_norm_epsilon": rec["norm_eps"]}
    if mt == "opt":
        return {**common, "hidden_size": h, "num_hidden_layers": layers,
                "num_attention_heads": heads, "ffn_dim": rec["intermediate_size"],
                "max_position_embeddings": rec["max_position_embeddings"],
                "word_embed_proj_dim": h, "do_layer_norm_before": True,
                "enable_bias": rec["mlp_bias"], "activation_function": rec["hidden_act"]}
    if mt == "gpt_neox":
        return {**common, "hidden_size": h, "num_hidden_layers": layers,
                "num_attention_heads": heads, "intermediate_size": rec["intermediate_size"],
                "max_position_embeddings": rec["max_position_embeddings"],
                "hidden_act": rec["hidden_act"], "layer_norm_eps": rec["norm_eps"],
                "rotary_pct": 0.25, "rotary_emb_base": rec["rope_theta"],
                "use_parallel_residual": rec["parallel_attn_mlp"]}
    _expect_4h(rec, "the row leaves ffn_hidden_size absent (-> 4 * hidden_size)")
    new_arch = rec["model_type"] == "falcon"   # Falcon-40B; the 7B is the legacy RefinedWebModel
    cfg = {**common, "hidden_size": h, "num_hidden_layers": layers, "num_attention_heads": heads,
           "new_decoder_architecture": new_arch, "multi_query": rec["num_key_value_heads"] == 1,
           "parallel_attn": rec["parallel_attn_mlp"], "bias": rec["mlp_bias"], "alibi": False,
           "layer_norm_epsilon": rec["norm_eps"], "activation": rec["hidden_act"]}
    if new_arch:
        cfg["num_kv_heads"] = rec["num_key_value_heads"]
    return cfg


def _chatglm(rec: dict[str, Any]) -> dict[str, Any]:
    kv, heads = rec["num_key_value_heads"], rec["num_attention_heads"]
    return {"hidden_size": rec["hidden_size"], "num_layers": rec["num_hidden_layers"],
            "num_attention_heads": heads, "kv_channels": rec["head_dim"],
            "multi_query_attention": kv != heads, "multi_query_group_num": kv,
            "ffn_hidden_size": rec["intermediate_size"], "padded_vocab_size": rec["vocab_size"],
            "seq_length": rec["max_position_embeddings"], "layernorm_epsilon": rec["norm_eps"],
            "rmsnorm": rec["norm_type"] == "RMSNorm", "post_layer_norm": True,
            "add_qkv_bias": rec["attention_qkv_bias"], "add_bias_linear": rec["mlp_bias"],
            "tie_word_embeddings": rec["tie_word_embeddings"]}


def hf_config(display: str, rec: dict[str, Any]) -> dict[str, Any]:
    mt = model_type(rec)
    if mt == "chatglm":
        body = _chatglm(rec)
    elif mt in ("gpt2", "bloom", "opt", "gpt_neox", "falcon"):
        body = _classic(rec, mt)
    else:
        body = _llama_like(rec, mt)
        if rec.get("moe"):
            body.update(_moe_keys(rec, mt))
    cfg = {"model_type": mt, "architectures": [ARCHITECTURES[mt]], **body, **EXTRA.get(display, {})}
    return {k: v for k, v in cfg.items() if v is not None}


def verification(display: str, rec: dict[str, Any]) -> str:
    parts = [rec["verification"]]
    if rec.get("tie_word_embeddings") is None:
        parts.append("tie_word_embeddings not verified: the config-class default applies")
    if rec["model_type"].startswith("gemma3 "):
        parts.append("multimodal checkpoint: this row is its text_config (vision tower not "
                     "counted)")
    if display == "DeepSeek-V2-Lite":
        parts.append("q_lora_rank is null in config.json (plain q_proj)")
    parts += MEASURED_NOTES.get(display, [])
    return "; ".join(parts)


def rows(reference: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for display, rec in reference.items():
        if display.startswith("_"):
            continue
        if display in SKIP or "encoder-decoder" in rec["model_type"]:
            print(f"skip {display}: {SKIP.get(display, 'encoder-decoder')}")
            continue
        if any(rec.get(k) is None for k in ESSENTIAL):
            print(f"skip {display}: a main field is null")
            continue
        computed = rec.get("computed_params") or {}
        measured = rec.get("measured_params") or {}
        row: dict[str, Any] = {
            "name": catalog_id(display), "display_name": display, "hf_id": rec["hf_repo_id"],
            "aliases": ALIASES.get(display, []),
            "source": "; ".join(condense_source(part) for s in rec["source"]
                                for part in s.split("; github ")),
            "verification": verification(display, rec),
            "measured_params": measured.get("total"),
            "computed_params": computed.get("total"),
            "computed_active_params": computed.get("active_per_token"),
        }
        config = hf_config(display, rec)
        if display == "DeepSeek-V2-Lite":
            config.pop("q_lora_rank", None)
            row["config_null_keys"] = ["q_lora_rank"]
        row["config"] = config
        out.append({k: v for k, v in row.items() if v is not None})
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)   # a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_table(header: str, table: dict[str, Any], lines: list[str]) -> None:
    lines.append(header)
    nested = {k: v for k, v in table.items() if isinstance(v, dict)}
    lines += [f"{k} = {_toml_value(v)}" for k, v in table.items() if k not in nested]
    for key, sub in nested.items():
        _toml_table(f"[{header.strip('[]')}.{key}]", sub, lines)


def to_toml(models: list[dict[str, Any]]) -> str:
    lines = ["# Generated by tools/build_model_catalog.py from the architecture reference",
             "# (shared/reference/model_configs.json); do not edit by hand: rebuild.",
             "# computed_params: the reference's exact count from these fields (tests check it).",
             "# config_null_keys: keys that are null in config.json (TOML has no null).", ""]
    for model in models:
        _toml_table("[[model]]", model, lines)
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    models = rows(json.loads(args.reference.read_text(encoding="utf-8")))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(to_toml(models), encoding="utf-8")
    print(f"wrote {len(models)} models to {args.out}")
    from trainplan import catalog
    from trainplan.catalog.store import write_snapshot

    catalog.clear_caches()
    print(f"wrote {write_snapshot(catalog.derived_snapshot_values())}")


if __name__ == "__main__":
    main()
