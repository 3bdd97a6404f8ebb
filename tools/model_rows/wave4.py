"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS).

Wave 4: Hugging Face ids of fine-tuning runs, for model_types trainplan already reads: OpenLLaMA-7B (llama),
StableLM-3B-4E1T / StableLM Zephyr 3B (stablelm), OpenHermes-2.5-Mistral-7B (mistral, 32002 tokens), RedPajama-INCITE-7B
(gpt_neox), Baichuan-13B (baichuan, ALiBi) and Aya-23-8B (cohere). WizardLM-13B-V1.2 is an alias of the Llama-2-13B row
(tools/build_model_catalog.py). Left out, with the reason in the report of this wave: OLMo-7B (model_type hf_olmo /
olmo, a LayerNorm without parameters), EXAONE-3.5-7.8B (model_type exaone, remote code with its own module names)
and Skywork-13B (model_type skywork, remote code): none is a model_type trainplan reads.

"code-index file N" is a public file found by content (the index names no repository); "model card" files are
automated cards that print the Hub's safetensors metadata count of one revision.
"""

from __future__ import annotations

from typing import Any

_LITGPT = "Lightning-AI/litgpt, litgpt/config.py@26857050fe3f"
_MLC = "mlc-ai/mlc-llm, python/mlc_llm/model/model_preset.py@79d603f085f5"
_GPU_POOR = "RahulSChand/gpu_poor, public/all_configs.json@ad2fc0ef0e6c"
_LELIUGA = "leliuga/cohere-configurations@84408edf57f0"   # models/<name>/manifest.yaml: shapes of the GGUF conversion
_TOGETHER_COUNTS = "code-index file 4120541175 (Together's Python client, model_param_count)"
_NO_PARAMS = "no effect on counts or memory"

ROWS: list[dict[str, Any]] = [
    {"name": "open-llama-7b", "display_name": "OpenLLaMA-7B", "hf_id": "openlm-research/open_llama_7b",
     "aliases": ["open_llama_7b"],
     "source": (f"{_LITGPT} [open_llama_7b: its config.json, 32 layers of 4096 (class defaults), 32 heads, vocab "
                f"32000, LLaMA MLP 11008, RMSNorm 1e-6, full rotary, no bias, block_size 2048]; {_GPU_POOR} "
                "[openlm-research/open_llama_7b: LlamaForCausalLM, 4096, 11008, 32 heads, 32 layers, vocab 32000]; "
                "Lightning-AI/litgpt, tutorials/download_openllama.md@2bcb2c3e1ca4 (OpenLLaMA: a reproduction of "
                "LLaMA 7B and 13B whose weights are a drop-in replacement of LLaMA in existing implementations)"),
     "verification": ("litgpt's and gpu_poor's shapes (they agree) in the LlamaConfig keys: the LLaMA-7B shapes "
                      "(llama-7b row), untied head as LLaMA's; hidden_act, rope_theta and the token ids are not in "
                      f"these sources (LlamaConfig defaults apply: {_NO_PARAMS}); no count of this checkpoint found: "
                      "computed 6,738,415,616 = LLaMA-7B's published count (code-index file 15495356071)"),
     "config": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
                "max_position_embeddings": 2048, "model_type": "llama", "num_attention_heads": 32,
                "num_hidden_layers": 32, "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "vocab_size": 32000}},
    {"name": "stablelm-3b-4e1t", "display_name": "StableLM-3B-4E1T", "hf_id": "stabilityai/stablelm-3b-4e1t",
     "aliases": ["stabilityai/stablelm-zephyr-3b", "stablelm-zephyr-3b"],
     "source": (f"{_MLC} [stablelm: a StableLM 3B config.json, model_type stablelm, transformers 4.38]; {_LITGPT} "
                "[stablelm-3b-4e1t, stablelm-zephyr-3b: the same fields, padded vocab 50304, 32 layers of 2560, 32 "
                f"heads, LLaMA MLP 6912, no bias]; {_LELIUGA}, models/stablelm-zephyr-3b/manifest.yaml (32 layers, "
                "2560, 32 heads, 32 kv heads, 6912, vocab 50304, context 4096); code-index file 15710750240 "
                "(stablelm-3b-4e1t card: 2,795,443,200 parameters, 2560, 32 layers, 32 heads, 4096 context, rotary "
                "on 25% of each head, LayerNorm with bias); code-index file 65869676649 (model card of "
                "stabilityai/stablelm-zephyr-3b@fe1fd5e36ccb: 2,795,443,200, safetensors metadata, 4,096 context)"),
     "verification": ("mlc-llm's config.json less torch_dtype / transformers_version; litgpt gives the base and "
                      "Zephyr (its DPO fine-tune) the same fields and both cards the same count; no q/k/v bias "
                      "(use_qkv_bias false), untied, LayerNorm with bias, sequential residual; count = the Zephyr "
                      "upload's safetensors total and the base card's"),
     "measured_params": 2795443200,
     "config": {"architectures": ["StableLmForCausalLM"], "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu",
                "hidden_size": 2560, "initializer_range": 0.02, "intermediate_size": 6912, "layer_norm_eps": 1e-05,
                "max_position_embeddings": 4096, "model_type": "stablelm", "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32, "partial_rotary_factor": 0.25, "rope_theta": 10000,
                "tie_word_embeddings": False, "use_cache": True, "use_qkv_bias": False, "vocab_size": 50304}},
    {"name": "openhermes-2.5-mistral-7b", "display_name": "OpenHermes-2.5-Mistral-7B",
     "hf_id": "teknium/OpenHermes-2.5-Mistral-7B", "aliases": ["openhermes-2.5"],
     "source": ("code-index file 35109566727 (candle mistral Config::config_chat_ml, citing "
                "teknium/OpenHermes-2.5-Mistral-7B's config.json: vocab 32002, 4096, 14336, 32 layers, 32 heads, 8 kv "
                f"heads, silu, 32768 positions, rms 1e-5, rope_theta 10000, sliding_window 4096); {_LELIUGA}, "
                "models/OpenHermes-2.5-Mistral-7B/manifest.yaml (the same shapes, vocab 32002, context 32768); "
                "code-index file 71017877959 (its config.json: 32,768 positions, sliding_window 4096); code-index "
                "file 261256898 (tinygrad example: its tokenizer.model with <|im_end|> and <|im_start|> appended, "
                "vocab_size 32002); code-index "
                "file 65997064212 (model card of theprint/RuDolph-Hermes-7B, a SLERP merge of "
                "teknium/OpenHermes-2.5-Mistral-7B: 7,241,748,480, safetensors metadata); code-index file "
                "36031785305 (Together catalog: Open-Orca/Mistral-7B-OpenOrca, which candle reads with the same "
                "config, num_parameters 7,241,748,480)"),
     "verification": ("Mistral-7B-v0.1 with two ChatML tokens added (<|im_start|>, <|im_end|>): vocab 32002, so a "
                      "row of its own rather than an alias of mistral-7b-v0.1 (embedding and head 2 x 2 x 4096 = "
                      "16,384 parameters larger); candle's and the manifest's shapes agree; untied as Mistral 7B; no "
                      "count of this upload found: computed 7,241,748,480 = the published count of a SLERP merge of "
                      "it (a merge needs identical shapes) and of Mistral-7B-OpenOrca"),
     "config": {"architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
                "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": False, "vocab_size": 32002}},
    {"name": "redpajama-incite-7b", "display_name": "RedPajama-INCITE-7B-Base",
     "hf_id": "togethercomputer/RedPajama-INCITE-7B-Base",
     "aliases": ["togethercomputer/RedPajama-INCITE-7B-Chat", "togethercomputer/RedPajama-INCITE-7B-Instruct",
                 "redpajama-incite-7b-base"],
     "source": ("drcege/RedPajama-INCITE-7B-Base, config.json@8e6f27e6e8cc (a copy of the checkpoint's config.json, "
                f"_name_or_path rp_800b); {_GPU_POOR} [togethercomputer/RedPajama-INCITE-7B-Base, -Chat, -Instruct: "
                f"GPTNeoXForCausalLM, 4096, 16384, 32 heads, 32 layers, vocab 50432]; {_TOGETHER_COUNTS} "
                "[RedPajama-INCITE-7B-Base, -Chat, -Instruct: 6,857,302,016]"),
     "verification": ("config.json verbatim less _name_or_path, torch_dtype and transformers_version (the copy is of "
                      "the 800B-token v0.1 preview, the same architecture as the release: gpu_poor's shapes and "
                      "Together's count agree); Pythia-6.9B's shapes with full rotary (rotary_pct 1.0) and a "
                      "sequential residual (use_parallel_residual false), so not an alias of pythia-6.9b; count = "
                      "Together's for the Base, Chat and Instruct uploads"),
     "measured_params": 6857302016,
     "config": {"architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu",
                "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 16384, "layer_norm_eps": 1e-05,
                "max_position_embeddings": 2048, "model_type": "gpt_neox", "num_attention_heads": 32,
                "num_hidden_layers": 32, "rotary_emb_base": 10000, "rotary_pct": 1.0, "tie_word_embeddings": False,
                "use_cache": True, "use_parallel_residual": False, "vocab_size": 50432}},
    {"name": "baichuan-13b", "display_name": "Baichuan-13B", "hf_id": "baichuan-inc/Baichuan-13B-Base",
     "aliases": ["baichuan-inc/Baichuan-13B-Chat", "baichuan-13b-chat"],
     "source": ("code-index file 21558147372 (Baichuan-13B README, model details: 5,120 hidden, 40 layers, 40 heads, "
                "vocabulary 64,000, 13,264,901,120 parameters, ALiBi, maximum length 4,096; weights released as "
                "Baichuan-13B-Base and Baichuan-13B-Chat); vllm-project/vllm, vllm/transformers_utils/configs/"
                "baichuan_13b.py (the 13B remote config class: 5120, 13696, 40 layers, 40 heads, vocab 64000, "
                "model_max_length 4096, rms 1e-6, tie_word_embeddings false, no max_position_embeddings); "
                "AlibabaPAI/FlashModels, hf_models/config/baichuan-13b-base/pytorch_model.bin.index.json"
                "@1c176f39a14d (Baichuan-13B-Base: total_size 26,529,802,240 bytes = 2 x 13,264,901,120 16-bit "
                "parameters; lm_head.weight stored apart from embed_tokens, W_pack without bias)"),
     "verification": ("the 13B config class's keys and values (no copy of the uploads' config.json was found; the "
                      "README agrees on every shape it lists): model_max_length and no max_position_embeddings, which "
                      "trainplan's baichuan parser reads as "
                      "the ALiBi 13B code; untied head; count = the README's, which the Base checkpoint index "
                      "confirms; Chat: the aligned release of the same model (README)"),
     "measured_params": 13264901120,
     "config": {"architectures": ["BaichuanForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
                "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 13696,
                "model_max_length": 4096, "model_type": "baichuan", "num_attention_heads": 40,
                "num_hidden_layers": 40, "pad_token_id": 0, "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
                "use_cache": True, "vocab_size": 64000}},
    {"name": "aya-23-8b", "display_name": "Aya-23-8B", "hf_id": "CohereForAI/aya-23-8B", "aliases": [],
     "source": (f"{_MLC} [aya-23: the config.json; added by mlc-llm commit c357be94 'Add support for Aya-23 8B Model "
                "by Cohere']; code-index file 57096592385 (audit of the cohere family: aya-23-8B via the "
                "mlx-community/aya-23-8B-8bit mirror, 32 layers, 4096, 32 / 8 heads, head dim 128, MLP 14336, rope "
                "10000, no q/k norm, logit_scale 0.0625; CohereConfig ties the embeddings by default); "
                "awesome-llm-papers/awesome-llm-papers.github.io, _publications/aryabumi2024aya.markdown (Aya 23: "
                "open weights of 8B and 35B models)"),
     "verification": ("mlc-llm's config.json less torch_dtype / transformers_version; tie_word_embeddings is not in "
                      "it: CohereConfig's default (true) applies, as for Command R; GQA with 8 kv heads; one "
                      "bias-free LayerNorm per layer (parallel attention and MLP); published 8B, no exact count of "
                      "this upload found: computed 8,028,033,024, which code-index file 12439498600 prints for "
                      "cohereforai/aya-expanse-8b (the same 8B Cohere line; corroborates only)"),
     "config": {"architectures": ["CohereForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 5, "eos_token_id": 255001, "hidden_act": "silu", "hidden_size": 4096,
                "initializer_range": 0.02, "intermediate_size": 14336, "layer_norm_eps": 1e-05, "logit_scale": 0.0625,
                "max_position_embeddings": 8192, "model_type": "cohere", "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 8, "pad_token_id": 0, "rope_theta": 10000,
                "use_cache": True, "use_qk_norm": False, "vocab_size": 256000}},
]
