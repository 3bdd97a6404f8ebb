"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS).

Wave 3: checkpoints that published fine-tuning runs name, for model_types trainplan already reads (Qwen1.5 small
sizes and 110B, InternLM 1, Yi-9B, Mistral Small / Large, Phi-4-mini, Falcon-180B, Moonlight,
DeepSeek-V2, Baichuan-7B, Baichuan2-13B, DeepSeek-R1-Distill-Qwen-1.5B). "code-index file N" is a public file found
by content (the index names no repository); "model card" files are automated cards that print the Hub's
safetensors metadata count of one revision. Aliases of rows defined elsewhere are in tools/build_model_catalog.py
(SmolLM 1: aliases of the SmolLM2 rows, whose shapes it has).
"""

from __future__ import annotations

from typing import Any

_LITGPT = "Lightning-AI/litgpt, litgpt/config.py@26857050fe3f"
_MLC = "mlc-ai/mlc-llm, python/mlc_llm/model/model_preset.py@79d603f085f5"
_GPU_POOR = "RahulSChand/gpu_poor, public/all_configs.json@ad2fc0ef0e6c"
_SLIME = "THUDM/slime, scripts/models/{script}@624b824a898a"
_FIREWORKS = "code-index file 66729435508 (Fireworks training catalog: paramCount per base model)"
_HF_SIZES = ("code-index file 14269230532 (fine-tuning speed table: model_size = the Hub's safetensors total, see its "
             "commented get_model_size)")
_CALFLOPS = "code-index file 5812671115 (calflops README model table: Params(Total) of the built model)"

# --- Qwen1.5 0.5B / 1.8B / 4B / 110B (qwen2) ----------------------------------------------------------------------

_QWEN15 = {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
           "eos_token_id": 151643, "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 32768,
           "model_type": "qwen2", "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
           "tie_word_embeddings": False, "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}
_QWEN15_TABLES = ("code-index file 14914603482 (Baidu aiak_training_llm Qwen registry [qwen1.5-{size}: {shapes}, "
                  "vocab 151936, QKV bias]); code-index file 5379367949 (table of the Qwen config.json files "
                  "[Qwen1.5-{size}: 32K context, Tie {tie}])")
_QWEN15_NOTE = ("shapes from the two tables (they agree), in the keys of the family's verbatim 7B and 110B configs "
                "(rms_norm_eps 1e-06, rope_theta 1e6, sliding window off); the Chat upload has the base shapes "
                "(README: base and chat per size)")

# --- InternLM 1 (internlm, remote code) ---------------------------------------------------------------------------

_INTERNLM = {"architectures": ["InternLMForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
             "initializer_range": 0.02, "model_type": "internlm", "pad_token_id": 2, "rms_norm_eps": 1e-06,
             "tie_word_embeddings": False, "use_cache": True, "vocab_size": 103168}

# Left out: tiiuae/Falcon3-7B-Base and Falcon3-10B-Base (llama). litgpt gives their shapes (28 / 40 layers, 3072,
# 12 heads, 4 query groups, 23040, vocab 131072), but no source here states the tie flag (litgpt models no tying), a
# third-party table gives the 7B a vocabulary of 131080 (code-index file 63193712310), and no exact count was found
# to decide between them.

ROWS: list[dict[str, Any]] = [
    {"name": "qwen1.5-0.5b", "display_name": "Qwen1.5-0.5B", "hf_id": "Qwen/Qwen1.5-0.5B",
     "aliases": ["Qwen/Qwen1.5-0.5B-Chat"],
     "source": (_QWEN15_TABLES.format(size="0.5b", shapes="24 layers, 1024, 2816, 16 heads, MHA", tie="True") +
                "; code-index file 29205825897 (Qwen2Config of Qwen/Qwen1.5-0.5B as transformers 4.41.2 loads it: "
                "tie_word_embeddings true, max_window_layers 21, rms_norm_eps 1e-06, rope_theta 1e6); "
                f"{_HF_SIZES} [Qwen/Qwen1.5-0.5B: 619,570,176]"),
     "verification": (f"{_QWEN15_NOTE}; tied embeddings (the loaded config and the config table agree; the Baidu "
                      "registry's untie default is not this upload's); the Hub's safetensors total 619,570,176 "
                      "counts the stored lm_head.weight, which the tie replaces by the embedding: unique parameters "
                      "= 619,570,176 - 151936 x 1024 = 463,987,712"),
     "config": {**_QWEN15, "hidden_size": 1024, "intermediate_size": 2816, "max_window_layers": 21,
                "num_attention_heads": 16, "num_hidden_layers": 24, "num_key_value_heads": 16,
                "tie_word_embeddings": True}},
    {"name": "qwen1.5-1.8b", "display_name": "Qwen1.5-1.8B", "hf_id": "Qwen/Qwen1.5-1.8B",
     "aliases": ["Qwen/Qwen1.5-1.8B-Chat"],
     "source": (_QWEN15_TABLES.format(size="1.8b", shapes="24 layers, 2048, 5504, 16 heads, MHA", tie="False") +
                "; code-index file 55173016543 (Qwen/Qwen1.5-1.8B-Chat: 1,836,828,672 parameters); code-index file "
                "65835899932 (model card of a Qwen1.5-1.8B upload: 1,836,828,672, safetensors metadata, 32,768 "
                "context)"),
     "verification": f"{_QWEN15_NOTE}; untied head; count = the Chat upload's",
     "measured_params": 1836828672,
     "config": {**_QWEN15, "hidden_size": 2048, "intermediate_size": 5504, "num_attention_heads": 16,
                "num_hidden_layers": 24, "num_key_value_heads": 16}},
    {"name": "qwen1.5-4b", "display_name": "Qwen1.5-4B", "hf_id": "Qwen/Qwen1.5-4B",
     "aliases": ["Qwen/Qwen1.5-4B-Chat"],
     "source": (_QWEN15_TABLES.format(size="4b", shapes="40 layers, 2560, 6912, 20 heads, MHA", tie="False") +
                "; code-index file 58413280785 (Hub API of Qwen/Qwen1.5-4B@a66363a0c24e: safetensors 3,950,369,280 "
                "BF16); code-index file 71367504821 (Qwen1.5-4B-Chat loaded as Qwen2ForCausalLM: all params "
                "3,950,369,280)"),
     "verification": f"{_QWEN15_NOTE}; untied head; count = the checkpoint's safetensors metadata",
     "measured_params": 3950369280,
     "config": {**_QWEN15, "hidden_size": 2560, "intermediate_size": 6912, "num_attention_heads": 20,
                "num_hidden_layers": 40, "num_key_value_heads": 20}},
    {"name": "qwen1.5-110b", "display_name": "Qwen1.5-110B", "hf_id": "Qwen/Qwen1.5-110B",
     "aliases": ["Qwen/Qwen1.5-110B-Chat"],
     "source": ("code-index file 7768956847 [Qwen1_5_110B: the config.json]; code-index file 5379367949 (table of the "
                "Qwen config.json files [Qwen1.5-110B: 80 layers, 8192, 49152, 64 heads, 8 kv heads, vocab 152064, "
                "untied]); code-index file 69624316134 (GGUF of Qwen1.5-110B: 111,209,914,368 parameters)"),
     "verification": ("config.json verbatim (torch_dtype / transformers_version left out); GQA with 8 kv heads, "
                      "vocab 152064; count = the GGUF conversion's parameter count (every tensor of the checkpoint); "
                      "the Chat upload has the base shapes (README: base and chat per size)"),
     "measured_params": 111209914368,
     "config": {**_QWEN15, "hidden_size": 8192, "intermediate_size": 49152, "max_window_layers": 28,
                "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 152064}},
    {"name": "internlm-7b", "display_name": "InternLM-7B", "hf_id": "internlm/internlm-7b",
     "aliases": ["internlm/internlm-chat-7b"],
     "source": (f"{_MLC} [internlm: an InternLM 7B config.json, bias true, 2048 context]; InternLM/InternEvo-HFModels, "
                "huggingface_model/internlm/internlm_7b/configuration_internlm.py@d335092bbfa6 (the remote-code "
                "class: bias default true); code-index file 21548941120 (internlm-chat-7b: 4096, 11008, 32 heads, 32 "
                "layers, vocab 103168, untied)"),
     "verification": ("mlc-llm's config.json less torch_dtype / transformers_version; q/k/v/o carry biases "
                      "(InternLM 1 modeling); MHA; the -chat upload has the same shapes; published 7B, no exact "
                      "count found"),
     "config": {**_INTERNLM, "bias": True, "hidden_size": 4096, "intermediate_size": 11008,
                "max_position_embeddings": 2048, "num_attention_heads": 32, "num_hidden_layers": 32}},
    {"name": "internlm-20b", "display_name": "InternLM-20B", "hf_id": "internlm/internlm-20b",
     "aliases": ["internlm/internlm-chat-20b"],
     "source": ("code-index file 18414036999 (config.json of internlm/internlm-20b as downloaded with hf_hub_download, "
                "verbatim); xorbitsai/inference, doc/source/models/builtin/llm/internlm-20b.rst (20 billion)"),
     "verification": ("config.json verbatim less torch_dtype / transformers_version / rotary (dynamic NTK, base "
                      "10000: no effect on counts or memory); bias false (unlike the 7B), 60 layers, MHA; the -chat "
                      "upload has the same shapes; published 20B, no exact count found"),
     "config": {**_INTERNLM, "bias": False, "hidden_size": 5120, "intermediate_size": 13824,
                "max_position_embeddings": 4096, "num_attention_heads": 40, "num_hidden_layers": 60,
                "num_key_value_heads": 40, "pretraining_tp": 1}},
    {"name": "yi-9b", "display_name": "Yi-9B", "hf_id": "01-ai/Yi-9B", "aliases": [],
     "source": ("code-index file 68846515806 (model registry of 01-ai/Yi-9B: total_parameters 8,829,407,232 from the "
                "safetensors; 48 layers, 4096, 11008, 32 heads, 4 kv heads, vocab 64000, context 4096); "
                "code-index file 7768956847 [Yi_1_5_6B: the family's verbatim keys]"),
     "verification": ("the registry's shapes in the Yi LlamaForCausalLM keys; rms_norm_eps 1e-06 as every Yi "
                      "config.json; rope_theta left to the LlamaConfig default (not in these sources; no effect on "
                      "counts or memory); untied head (the count confirms it); count = the checkpoint's safetensors "
                      "metadata (the Yi-1.5-9B row has the same shapes and count)"),
     "measured_params": 8829407232,
     "config": {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
                "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 4096,
                "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 48, "num_key_value_heads": 4,
                "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "vocab_size": 64000}},
    {"name": "mistral-small-24b-2501", "display_name": "Mistral-Small-24B-Base-2501",
     "hf_id": "mistralai/Mistral-Small-24B-Base-2501", "aliases": ["mistralai/Mistral-Small-24B-Instruct-2501"],
     "source": ("code-index file 70849976620 (unsloth/Mistral-Small-24B-Instruct-2501: 40 layers, 32 heads over 8 KV "
                "heads of width 128, hidden 5120, intermediate 32768, vocab 131072, untied, 32768 window; the Hub's "
                f"safetensors count 23,572,403,200); {_FIREWORKS} [Mistral Small 24B Instruct 2501: 23,572,403,200]; "
                "code-index file 65742008784 (Magistral-Small-24B, built on it: the same shapes)"),
     "verification": ("the same config as the magistral-small-2506 row (rope_theta 1e8 and 32768 positions from the "
                      "Mistral-Small config.json; no sliding window); base and Instruct share the shapes (the Instruct "
                      "is a fine-tune of the Base); count = the Instruct upload's safetensors metadata"),
     "measured_params": 23572403200,
     "config": {"architectures": ["MistralForCausalLM"], "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
                "intermediate_size": 32768, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 100000000.0, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 131072}},
    {"name": "mistral-small-2409", "display_name": "Mistral-Small-Instruct-2409",
     "hf_id": "mistralai/Mistral-Small-Instruct-2409", "aliases": ["mistral-small-22b"],
     "source": ("code-index file 62629770617 (test_mistral_config_parse_v3_small: the v3-tokenizer Mistral Small "
                "config: 56 layers, 6144, 16384, 48 heads, 8 kv heads, head_dim 128, vocab 32768, rms 1e-5, rope "
                "1e6, 32768 positions, no sliding window); code-index file 65929538350 (model card of "
                "anthracite-org/magnum-v4-22b, a full-parameter fine-tune of Mistral-Small-Instruct-2409: "
                "22,247,282,688, safetensors metadata, 32,768 context); code-index file 24610818072 (Mistral-Small-"
                "Instruct-2409: 22.2 B)"),
     "verification": ("the test's config in the MistralForCausalLM keys; untied head; count = the safetensors "
                      "metadata of a full-parameter fine-tune of this checkpoint (a full fine-tune keeps every "
                      "shape)"),
     "measured_params": 22247282688,
     "config": {"architectures": ["MistralForCausalLM"], "head_dim": 128, "hidden_act": "silu", "hidden_size": 6144,
                "intermediate_size": 16384, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 48, "num_hidden_layers": 56, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32768}},
    {"name": "mistral-large-2407", "display_name": "Mistral-Large-Instruct-2407",
     "hf_id": "mistralai/Mistral-Large-Instruct-2407", "aliases": ["mistralai/Mistral-Large-Instruct-2411"],
     "source": (f"{_LITGPT} [Mistral-Large-Instruct-2407, Mistral-Large-Instruct-2411: 88 layers, 96 heads, 12288, "
                "8 query groups, 28672, padded vocab 32768, rope_base 1e6, norm_eps 1e-5, block 32768]; code-index "
                "file 68881844135 (Mistral-Large-2411: 'its official 123B model configuration gives an exact dense "
                "parameter count of 122610069504', two untied 32768 x 12288 matrices); code-index file 24610818072 "
                "(Mistral-Large-Instruct-2407: 123 B)"),
     "verification": ("litgpt's entry in the MistralForCausalLM keys (head_dim 12288 / 96 = 128); litgpt gives 2407 "
                      "and 2411 the same fields; untied head; published 123B, no checkpoint count found (the "
                      "122,610,069,504 cited is computed from the 2411 config, not read from the weights)"),
     "config": {"architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 12288,
                "intermediate_size": 28672, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 96, "num_hidden_layers": 88, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32768}},
    {"name": "phi-4-mini", "display_name": "Phi-4-mini-instruct", "hf_id": "microsoft/Phi-4-mini-instruct",
     "aliases": ["microsoft/Phi-4-mini-reasoning", "phi-4-mini-instruct"],
     "source": ("code-index file 67449186883 (microsoft/Phi-4-mini-instruct config.json 'verified against the HF "
                "repo': 3072, 24 heads, 8 kv heads, 8192, 32 layers, vocab 200064, tied, partial_rotary_factor 0.75, "
                f"longrope); {_LITGPT} [Phi-4-mini-instruct, Phi-4-mini-reasoning: the same fields, sliding window "
                "262145]; code-index file 60280004817 (the Phi-4-multimodal text config: sliding_window 262144); "
                "code-index file 71242279836 (transformers 5.15 builds it as Phi3ForCausalLM: 3,836,021,760 "
                "parameters, the tied lm_head.weight not stored); code-index file 68577184092 (parameter_count "
                "3,836,021,760 from the two safetensors headers)"),
     "verification": ("the shape keys of the config.json (model_type phi3: fused qkv_proj and gate_up_proj); the 48 "
                      "LongRoPE factors are left out (trainplan reads rope_scaling for nothing; the config gives "
                      "them); tied embeddings; count = the checkpoint's"),
     "measured_params": 3836021760,
     "config": {"architectures": ["Phi3ForCausalLM"], "attention_bias": False, "hidden_act": "silu",
                "hidden_size": 3072, "intermediate_size": 8192, "max_position_embeddings": 131072,
                "model_type": "phi3", "num_attention_heads": 24, "num_hidden_layers": 32, "num_key_value_heads": 8,
                "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75, "rms_norm_eps": 1e-05,
                "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": True,
                "vocab_size": 200064}},
    {"name": "falcon-180b", "display_name": "Falcon-180B", "hf_id": "tiiuae/falcon-180B",
     "aliases": ["tiiuae/falcon-180B-chat", "falcon-180b-chat"],
     "source": (f"{_LITGPT} [falcon-180B, falcon-180B-chat: 80 layers, 232 heads, 14848, 8 query groups, vocab "
                "65024, no bias, block 2048]; code-index file 3247412510 (TensorRT-LLM engine config of "
                "tiiuae/falcon-180B: FalconForCausalLM, 80 layers, 232 heads, 8 kv heads, 14848, vocab 65024, "
                "parallel attention, new decoder architecture, bias false, gelu, 2048 positions); code-index file "
                "71571056092 (Hub API safetensors.total of tiiuae/falcon-180B@d2ea5531862d: 179,522,565,120); "
                f"{_GPU_POOR} [TheBloke/Falcon-180B-Chat-GPTQ: 14848, 232 heads, 80 layers, vocab 65024]"),
     "verification": ("the new decoder architecture of the Falcon-40B row (ln_attn and ln_mlp, MLP 4 x hidden, GQA "
                      "8 kv groups) at 180B; tie_word_embeddings left to the FalconConfig default (true), as the "
                      "catalog's Falcon-7B and -40B rows: the checkpoint stores lm_head.weight, so the Hub's "
                      "safetensors total 179,522,565,120 is the unique count plus one 65024 x 14848 matrix "
                      "(178,557,088,768 + 965,476,352); the -chat upload has the same shapes (litgpt)"),
     "config": {"alibi": False, "architectures": ["FalconForCausalLM"], "bias": False, "hidden_size": 14848,
                "layer_norm_epsilon": 1e-05, "max_position_embeddings": 2048,
                "model_type": "falcon", "multi_query": True, "new_decoder_architecture": True,
                "num_attention_heads": 232, "num_hidden_layers": 80, "num_kv_heads": 8, "parallel_attn": True,
                "vocab_size": 65024}},
    {"name": "baichuan-7b", "display_name": "Baichuan-7B", "hf_id": "baichuan-inc/Baichuan-7B",
     "aliases": ["baichuan-7b-v1"],
     "source": (f"{_GPU_POOR} [baichuan-inc/Baichuan-7B: BaiChuanForCausalLM, 4096, 11008, 32 heads, 32 layers, vocab "
                "64000]; vllm-project/vllm, vllm/model_executor/models/baichuan.py@6b06599499a6 (BaiChuanForCausalLM "
                "= 'Baichuan 7B': RoPE, fused W_pack without bias, untied lm_head); "
                f"{_CALFLOPS} [baichuan-7B: 7,000,559,616]"),
     "verification": ("gpu_poor's shapes in the baichuan keys of the Baichuan2-7B config (mlc-llm's verbatim copy: "
                      "4096 positions, rms 1e-6, untied) with Baichuan 1's 64000 vocabulary; RoPE (the config "
                      "carries max_position_embeddings); count = calflops' count of the built model"),
     "measured_params": 7000559616,
     "config": {"architectures": ["BaiChuanForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
                "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
                "max_position_embeddings": 4096, "model_type": "baichuan", "num_attention_heads": 32,
                "num_hidden_layers": 32, "pad_token_id": 0, "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
                "vocab_size": 64000}},
    {"name": "baichuan2-13b", "display_name": "Baichuan2-13B", "hf_id": "baichuan-inc/Baichuan2-13B-Base",
     "aliases": ["baichuan-inc/Baichuan2-13B-Chat"],
     "source": (f"{_GPU_POOR} [baichuan-inc/Baichuan2-13B-Base, -Chat: 5120, 13696, 40 heads, 40 layers, vocab "
                "125696]; code-index file 11650979602 (Baichuan2 13B remote modeling_baichuan.py: ALiBi mask built "
                "from config.model_max_length, no position parameters, W_pack without bias, two RMSNorms per layer, "
                "NormHead lm_head of vocab x hidden); vllm-project/vllm, vllm/model_executor/models/baichuan.py"
                "@6b06599499a6 (BaichuanForCausalLM: hidden_size 4096 -> ROPE (Baichuan2 7B), else ALIBI (Baichuan "
                "13B, Baichuan2 13B)); vllm-project/vllm, vllm/transformers_utils/configs/baichuan_13b.py (the 13B "
                "remote config class: model_max_length 4096, tie_word_embeddings false, no max_position_embeddings)"),
     "verification": ("gpu_poor's shapes in the 13B config class's keys: model_max_length and no "
                      "max_position_embeddings, which trainplan's baichuan parser reads as the ALiBi 13B code (no "
                      "parser change needed); untied NormHead (a parameter of vocab x hidden, normalised in the "
                      "forward); published 13B, no exact count found"),
     "config": {"architectures": ["BaichuanForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
                "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 13696,
                "model_max_length": 4096, "model_type": "baichuan", "num_attention_heads": 40,
                "num_hidden_layers": 40, "pad_token_id": 0, "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
                "vocab_size": 125696}},
    {"name": "r1-distill-qwen-1.5b", "display_name": "DeepSeek-R1-Distill-Qwen-1.5B",
     "hf_id": "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", "aliases": ["deepseek-r1:1.5b"],
     "source": ("code-index file 52422771377 (Qwen2Config of deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B as loaded: "
                "1536, 8960, 12 heads, 2 kv heads, 28 layers, vocab 151936, rope_theta 10000, 131072 positions, "
                "tie_word_embeddings false); code-index file 61133050907 (DeepSeek-R1-Distill-Qwen-1.5B@ad9f0ae0864d: "
                "1,777,088,000 parameters; its base Qwen/Qwen2.5-Math-1.5B: 1,543,714,304); code-index file "
                "63447617305 (strict load: 339 tensors = 28 x 12 + embedding, norm, lm_head)"),
     "verification": ("the loaded config's keys (sliding window off); untied head, unlike its tied base "
                      "Qwen2.5-Math-1.5B, so its own row rather than an alias of qwen2.5-1.5b: the published counts "
                      "differ by exactly 151936 x 1536; count = the checkpoint's"),
     "measured_params": 1777088000,
     "config": {**_QWEN15, "hidden_size": 1536, "intermediate_size": 8960, "max_position_embeddings": 131072,
                "max_window_layers": 21, "num_attention_heads": 12, "num_hidden_layers": 28, "num_key_value_heads": 2,
                "rope_theta": 10000, "sliding_window": None}},
    {"name": "moonlight-16b-a3b", "display_name": "Moonlight-16B-A3B", "hf_id": "moonshotai/Moonlight-16B-A3B",
     "aliases": ["moonshotai/Moonlight-16B-A3B-Instruct", "moonlight"],
     "source": (_SLIME.format(script="moonlight.sh") + " (27 layers, 2048, ffn 11264, 16 heads, MLA without q_lora, "
                "kv_lora 512, qk 128 + rope 64, v 128, 64 experts of 1408, top 6, 2 shared, first layer dense, "
                "sigmoid routing with expert bias, scaling 2.446, vocab 163840, untied, rms 1e-5, rope base 50000); "
                "NVIDIA-NeMo/Megatron-Bridge, src/megatron/bridge/models/deepseek/deepseek_provider.py@066adea0f066 "
                "[MoonlightModelProvider16B: the same values, 'Moonlight is based on DeepSeek-V3']; xorbitsai/"
                "inference, doc/source/models/builtin/llm/moonlight-16b-a3b-instruct.rst (context 8192)"),
     "verification": ("slime's and Megatron-Bridge's values (they agree) in the DeepseekV3Config keys the Moonlight "
                      "upload uses (model_type deepseek_v3, q_lora_rank null, noaux_tc, one group); the Instruct "
                      "upload has the same shapes; published 16B total, 3B active (no exact count found)"),
     "config": {"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False, "first_k_dense_replace": 1,
                "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 11264, "kv_lora_rank": 512,
                "max_position_embeddings": 8192, "model_type": "deepseek_v3", "moe_intermediate_size": 1408,
                "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
                "norm_topk_prob": True, "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 27,
                "num_key_value_heads": 16, "num_nextn_predict_layers": 0, "q_lora_rank": None, "qk_nope_head_dim": 128,
                "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05, "rope_theta": 50000.0, "routed_scaling_factor": 2.446,
                "scoring_func": "sigmoid", "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc",
                "v_head_dim": 128, "vocab_size": 163840}},
    {"name": "deepseek-v2", "display_name": "DeepSeek-V2", "hf_id": "deepseek-ai/DeepSeek-V2",
     "aliases": ["deepseek-ai/DeepSeek-V2-Chat", "deepseek-v2-236b"],
     "source": ("code-index file 1252603174 (a DeepSeek-V2 config.json, transformers 4.39.3: 60 layers, 5120, 160 "
                "experts of 1536, 2 shared, top 6, q_lora 1536, kv_lora 512, vocab 102400); NVIDIA-NeMo/Megatron-"
                "Bridge, src/megatron/bridge/models/deepseek/deepseek_provider.py@066adea0f066 "
                "[DeepSeekV2ModelProvider: the same shapes]; code-index file 56703136855 ('the fixed checkpoint's "
                "exact parameter count is 235,741,434,880, all BF16'); code-index file 69468411049 (DeepSeek-V2 and "
                "V2-Chat: 235741434880)"),
     "verification": ("config.json verbatim less auto_map / torch_dtype / transformers_version / seq_aux; the Chat "
                      "upload has the same shapes; count = the checkpoint's; published 236B total, 21B active"),
     "measured_params": 235741434880,
     "config": {"architectures": ["DeepseekV2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "aux_loss_alpha": 0.001, "bos_token_id": 100000, "eos_token_id": 100001, "ep_size": 1,
                "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
                "intermediate_size": 12288, "kv_lora_rank": 512, "max_position_embeddings": 163840,
                "model_type": "deepseek_v2", "moe_intermediate_size": 1536, "moe_layer_freq": 1, "n_group": 8,
                "n_routed_experts": 160, "n_shared_experts": 2, "norm_topk_prob": False, "num_attention_heads": 128,
                "num_experts_per_tok": 6, "num_hidden_layers": 60, "num_key_value_heads": 128, "pretraining_tp": 1,
                "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
                "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                 "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"},
                "rope_theta": 10000, "routed_scaling_factor": 16.0, "scoring_func": "softmax",
                "tie_word_embeddings": False, "topk_group": 3, "topk_method": "group_limited_greedy",
                "use_cache": True, "v_head_dim": 128, "vocab_size": 102400}},
]
