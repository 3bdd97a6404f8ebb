"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS).

The second batch of model types (src/trainplan/model/hfconfig/variants.py): deepseek (DeepSeek-MoE), olmoe,
granite, granitemoe, minicpm, stablelm and cohere. A `config` holds config.json keys as the cited copy prints
them; keys the copy does not print are left to the config class defaults (said in `verification`).
"""

from __future__ import annotations

from typing import Any

_MLC = "mlc-ai/mlc-llm, python/mlc_llm/model/model_preset.py@79d603f085f5"
_GRANITE_CARD = ("code-index file 1662083868 (ibm-granite/granite-3.1-8b-instruct README: the Granite 3.1 "
                 "architecture table, 2B / 8B dense and 1B / 3B MoE, shared input/output embeddings, 128K)")
_NO_PARAMS = "no effect on counts or memory"

ROWS: list[dict[str, Any]] = [
    {"name": "deepseek-moe-16b", "display_name": "DeepSeek-MoE-16B", "hf_id": "deepseek-ai/deepseek-moe-16b-base",
     "aliases": ["deepseek-ai/deepseek-moe-16b-chat", "deepseek-moe-16b-chat"],
     "source": (f"{_MLC} [deepseek: the config.json]; code-index file 20857726131 (MindIE test: the same config "
                "dict); code-index file 69468411049 (deepseek-moe-16b-base and -chat: total_params 16,375,728,128); "
                "code-index file 67161653560 (DeepSeek-MoE-16B: num_params 16,375,728,128, num_params_active "
                "2,828,650,496); https://openlm.ai/deepseek-moe (README: 16.4B parameters; 2.8B active per the "
                "GGUF card https://huface.ru/MikeKuykendall/deepseek-moe-16b-cpu-offload-gguf)"),
     "verification": ("config.json as the mlc-llm preset prints it (MindIE's test dict has the same shapes); remote "
                      "code modeling_deepseek.py (code-index file 67429243731): MHA, layer 0 dense (10944), 27 MoE "
                      "layers of 64 experts of 1408 (top 6) + 2 shared (one 2816-wide MLP); chat upload: same count; "
                      "count = the published total"),
     "measured_params": 16375728128,
     "config": {"architectures": ["DeepseekForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 100000, "eos_token_id": 100001, "first_k_dense_replace": 1, "hidden_act": "silu",
                "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 10944,
                "max_position_embeddings": 4096, "model_type": "deepseek", "moe_intermediate_size": 1408,
                "moe_layer_freq": 1, "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": False,
                "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 28,
                "num_key_value_heads": 16, "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
                "rope_theta": 10000, "scoring_func": "softmax", "tie_word_embeddings": False,
                "torch_dtype": "bfloat16", "transformers_version": "4.36.2", "use_cache": True,
                "vocab_size": 102400}},
    {"name": "olmoe-1b-7b-0924", "display_name": "OLMoE-1B-7B-0924", "hf_id": "allenai/OLMoE-1B-7B-0924",
     "aliases": ["allenai/OLMoE-1B-7B-0924-Instruct", "olmoe-1b-7b"],
     "source": ("code-index file 71007947258 (the fields of allenai/OLMoE-1B-7B-0924's config.json an adapter "
                "reads); code-index file 55786294959 (OLMoE config: router_aux_loss_coef, norm_topk_prob); "
                "code-index file 65753564317 (OLMoE-1B-7B-0924 checkpoint 6d84c48581ec safetensors headers: "
                "parameterCount 6,919,161,856); code-index file 71333551460 (OLMoE-1B-7B-0924-Instruct: "
                "PARAMETERS = 6919161856); code-index file 68298970743 (declared 7B total, 1.3B active)"),
     "verification": ("16 layers of 2048, 16 heads (MHA), 64 experts of 1024 top 8 on every layer, untied, vocab "
                      "50304; max_position_embeddings, rms_norm_eps, rope_theta and clip_qkv (null) left to the "
                      f"OlmoeConfig defaults (4096, 1e-5, 10000, None): {_NO_PARAMS}; Instruct: same count; "
                      "count = the checkpoint's safetensors total"),
     "measured_params": 6919161856,
     "config": {"architectures": ["OlmoeForCausalLM"], "hidden_act": "silu", "hidden_size": 2048,
                "intermediate_size": 1024, "model_type": "olmoe", "norm_topk_prob": False,
                "num_attention_heads": 16, "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 16,
                "num_key_value_heads": 16, "router_aux_loss_coef": 0.01, "tie_word_embeddings": False,
                "vocab_size": 50304}},
    {"name": "granite-3.1-2b", "display_name": "Granite-3.1-2B", "hf_id": "ibm-granite/granite-3.1-2b-base",
     "aliases": ["ibm-granite/granite-3.1-2b-instruct", "granite-3.1-2b-instruct"],
     "source": ("code-index file 61124332828 (test_real_granite_2b: 'exact config from "
                f"ibm-granite/granite-3.1-2b-base'); {_GRANITE_CARD}; code-index file 68688959620 "
                "(ibm-granite/granite-guardian-3.1-2b, a fine-tune of these shapes: params 2,533,531,648)"),
     "verification": ("40 layers of 2048, 32 heads of 64, 8 kv heads, MLP 8192, vocab 49155, rope_theta 5e6; tied "
                      "(card: shared input/output embeddings), context 128K = 131072 (card); the four Granite "
                      f"multipliers are not in these sources: scalars, {_NO_PARAMS}; card: 2.5B"),
     "config": {"architectures": ["GraniteForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
                "max_position_embeddings": 131072, "model_type": "granite", "num_attention_heads": 32,
                "num_hidden_layers": 40, "num_key_value_heads": 8, "rope_theta": 5000000.0,
                "tie_word_embeddings": True, "vocab_size": 49155}},
    {"name": "granite-3.1-8b", "display_name": "Granite-3.1-8B", "hf_id": "ibm-granite/granite-3.1-8b-base",
     "aliases": ["ibm-granite/granite-3.1-8b-instruct", "granite-3.1-8b-instruct"],
     "source": (f"{_GRANITE_CARD}; code-index file 68624493177 (granite-3.1-8b-base and -instruct: 40 layers, "
                "4096, MLP 12800, vocab 49155)"),
     "verification": ("card shapes: 40 layers of 4096, 32 heads of 128, 8 kv heads, MLP 12800, tied, 128K context; "
                      "vocab 49155 as every Granite 3.1 config cited here; rope_theta and the multipliers are not "
                      f"in these sources (GraniteConfig defaults apply): {_NO_PARAMS}; card: 8.1B; the same shapes "
                      "with Granite 3.3's vocabulary of 49159 give its 8,170,864,640 (granite-3.3-8b row)"),
     "config": {"architectures": ["GraniteForCausalLM"], "hidden_size": 4096, "intermediate_size": 12800,
                "max_position_embeddings": 131072, "model_type": "granite", "num_attention_heads": 32,
                "num_hidden_layers": 40, "num_key_value_heads": 8, "tie_word_embeddings": True,
                "vocab_size": 49155}},
    {"name": "granite-3.3-8b", "display_name": "Granite-3.3-8B", "hf_id": "ibm-granite/granite-3.3-8b-instruct",
     "aliases": ["ibm-granite/granite-3.3-8b-base", "granite-3.3-8b-instruct"],
     "source": ("code-index file 61558565367 (ibm-granite/granite-3.3-8b-instruct: config.json and the module "
                "shapes transformers builds); code-index file 68624493177 (granite-3.3-8b and -instruct: "
                "8,170,864,640, 'HF safetensors confirmed')"),
     "verification": ("config.json verbatim; lm_head (49159, 4096) tied to the embedding; base: same count; "
                      "count = the published total"),
     "measured_params": 8170864640,
     "config": {"architectures": ["GraniteForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "attention_multiplier": 0.0078125, "bos_token_id": 0, "embedding_multiplier": 12.0,
                "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
                "intermediate_size": 12800, "logits_scaling": 16.0, "max_position_embeddings": 131072,
                "mlp_bias": False, "model_type": "granite", "num_attention_heads": 32, "num_hidden_layers": 40,
                "num_key_value_heads": 8, "pad_token_id": 0, "residual_multiplier": 0.22, "rms_norm_eps": 1e-05,
                "rope_scaling": None, "rope_theta": 10000000.0, "tie_word_embeddings": True,
                "torch_dtype": "bfloat16", "transformers_version": "4.49.0", "use_cache": True,
                "vocab_size": 49159}},
    {"name": "granite-3.1-3b-a800m", "display_name": "Granite-3.1-3B-A800M",
     "hf_id": "ibm-granite/granite-3.1-3b-a800m-base",
     "aliases": ["ibm-granite/granite-3.1-3b-a800m-instruct", "granite-3.1-3b-a800m-instruct"],
     "source": ("code-index file 71463455676 (ibm-granite/granite-3.1-3b-a800m-instruct config.json, the fields "
                f"a planner reads); {_GRANITE_CARD}; code-index file 68688959620 "
                "(ibm-granite/granite-guardian-3.2-3b-a800m: params 3,298,793,472)"),
     "verification": ("32 layers of 1536, 24 heads of 64, 8 kv heads, 40 experts of 512 top 8 on every layer, tied, "
                      "vocab 49155, 131072 context; multipliers not in the source: scalars, "
                      f"{_NO_PARAMS}; card: 3.3B total, 800M active; these shapes count 3,298,793,472, the figure "
                      "printed for Granite Guardian 3.2 3B-A800M"),
     "config": {"architectures": ["GraniteMoeForCausalLM"], "hidden_act": "silu", "hidden_size": 1536,
                "intermediate_size": 512, "max_position_embeddings": 131072, "model_type": "granitemoe",
                "num_attention_heads": 24, "num_experts_per_tok": 8, "num_hidden_layers": 32,
                "num_key_value_heads": 8, "num_local_experts": 40, "rope_theta": 10000000.0,
                "tie_word_embeddings": True, "vocab_size": 49155}},
    {"name": "minicpm-2b", "display_name": "MiniCPM-2B", "hf_id": "openbmb/MiniCPM-2B-sft-bf16",
     "aliases": ["openbmb/MiniCPM-2B-dpo-bf16", "minicpm-2b-sft-bf16", "minicpm-2b-dpo-bf16"],
     "source": (f"{_MLC} [minicpm_2b_sft_bf16: the config.json]; code-index file 41738685489 (chatllm.cpp "
                "serving MiniCPM: 2724880896 (2.7B) parameters); code-index file 15815799305 (mteb, "
                "CoDi-MiniCPM on MiniCPM-2B: n_parameters 2724880896); code-index file 113725582 (MiniCPM-2B "
                "sft-bf16 and dpo-bf16: 2.4B non-embedding parameters each)"),
     "verification": ("config.json as the mlc-llm preset prints it: 40 layers of 2304, 36 heads (MHA), MLP 5760, "
                      "vocab 122753, tied; remote code modeling_minicpm.py (wxthu/nas_tuner@316794f, mlx-lm "
                      "mlx_lm/models/minicpm.py@1e5589e08747): Llama tensors, muP scalars only; dpo-bf16: the same "
                      "non-embedding size; count = the published total"),
     "measured_params": 2724880896,
     "config": {"architectures": ["MiniCPMForCausalLM"], "bos_token_id": 1, "dim_model_base": 256,
                "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2304, "initializer_range": 0.1,
                "intermediate_size": 5760, "max_position_embeddings": 4096, "model_type": "minicpm",
                "num_attention_heads": 36, "num_hidden_layers": 40, "num_key_value_heads": 36,
                "rms_norm_eps": 1e-05, "scale_depth": 1.4, "scale_emb": 12, "tie_word_embeddings": True,
                "torch_dtype": "bfloat16", "transformers_version": "4.36.0", "use_cache": True,
                "vocab_size": 122753}},
    {"name": "stablelm-2-1.6b", "display_name": "StableLM-2-1.6B", "hf_id": "stabilityai/stablelm-2-1_6b",
     "aliases": ["stabilityai/stablelm-2-1_6b-chat", "stabilityai/stablelm-2-zephyr-1_6b", "stablelm-2-1_6b"],
     "source": (f"{_MLC} [stablelm-2-zephyr-1_6b: the config.json]; code-index file 65849527990 "
                "(stabilityai/stablelm-2-1_6b f499ead74c53: 1,644,515,328 parameters, safetensors metadata); "
                "code-index file 65755328185 (stablelm-2-1_6b-chat: the same); code-index file 13225261958 "
                "(model card: 1,644,417,024; LayerNorm with bias, q/k/v biases only, rotary on 25%)"),
     "verification": ("the zephyr config's architecture keys (24 layers of 2048, 32 heads, MLP 5632, vocab 100352, "
                      "use_qkv_bias, untied, 25% rotary), which the base and chat uploads share (the same "
                      "safetensors count); the card's 1,644,417,024 is 98,304 = 24 x 4096 lower; count = the "
                      "safetensors total"),
     "measured_params": 1644515328,
     "config": {"architectures": ["StableLmForCausalLM"], "hidden_act": "silu", "hidden_size": 2048,
                "intermediate_size": 5632, "layer_norm_eps": 1e-05, "max_position_embeddings": 4096,
                "model_type": "stablelm", "num_attention_heads": 32, "num_hidden_layers": 24,
                "num_key_value_heads": 32, "partial_rotary_factor": 0.25, "rope_theta": 10000,
                "tie_word_embeddings": False, "use_qkv_bias": True, "vocab_size": 100352}},
    {"name": "c4ai-command-r-v01", "display_name": "C4AI-Command-R-v01", "hf_id": "CohereForAI/c4ai-command-r-v01",
     "aliases": ["command-r-v01", "command-r"],     # "Command R": the name the model card and its llama.cpp thread use
     "source": ("code-index file 66573096413 (test_commandr_config_from_hf: the Command-R config.json fields); "
                "transformers 5.25 models/cohere/configuration_cohere.py (CohereConfig defaults: these shapes); "
                "code-index file 54354199734 (model card: 'a research release of a 35 billion parameter' model)"),
     "verification": ("40 layers of 8192, 64 heads (MHA), MLP 22528, vocab 256000, tied, 8192 context, logit_scale "
                      "0.0625, no q/k norm; one bias-free LayerNorm per layer (parallel attention and MLP); card: "
                      "35B"),
     "config": {"architectures": ["CohereForCausalLM"], "hidden_size": 8192, "intermediate_size": 22528,
                "layer_norm_eps": 1e-05, "logit_scale": 0.0625, "max_position_embeddings": 8192,
                "model_type": "cohere", "num_attention_heads": 64, "num_hidden_layers": 40,
                "num_key_value_heads": 64, "rope_theta": 8000000.0, "tie_word_embeddings": True,
                "vocab_size": 256000}},
]
