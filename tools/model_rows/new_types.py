"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS).

The model_types qwen, phi, gptj, gpt_bigcode, starcoder2 and mpt (model/hfconfig/early.py). A config
key a source does not give is left out, so the config class's default applies (named in `verification`);
"code-index file N" is a public file found by content (the index names no repository).
"""

from __future__ import annotations

from typing import Any

_MLC = "mlc-ai/mlc-llm, python/mlc_llm/model/model_preset.py@79d603f085f5"
_QWEN_CODE = ("modeling_qwen.py: mapengAdam/qianwen-72B, modeling_qwen.py@3334bfe3d6d9 (c_attn with a bias, c_proj "
              "and w1/w2/c_proj of intermediate_size // 2 without, RMSNorm, lm_head without a bias)")
_QWEN_README = "the Chat upload of each size is that base model aligned (Qwen README): the same config shapes"
_QWEN_SHAPES = ("code-index file 228514887 (Qwen1 ModelConfigs with the Hugging Face config.json links: hidden, heads, "
                "intermediate_size, layers, vocab, context of Qwen/Qwen-{1_8B,7B,14B,72B})")
_QWEN_AUTO_MAP = {"AutoConfig": "configuration_qwen.QWenConfig",
                  "AutoModelForCausalLM": "modeling_qwen.QWenLMHeadModel"}
_QWEN = {"architectures": ["QWenLMHeadModel"], "auto_map": _QWEN_AUTO_MAP, "kv_channels": 128, "model_type": "qwen",
         "no_bias": True, "tie_word_embeddings": False}

_STARCODER2 = {"architectures": ["Starcoder2ForCausalLM"], "attention_dropout": 0.1, "residual_dropout": 0.1,
               "embedding_dropout": 0.1, "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "gelu_pytorch_tanh",
               "max_position_embeddings": 16384, "mlp_type": "default", "model_type": "starcoder2",
               "norm_epsilon": 1e-05, "sliding_window": 4096, "torch_dtype": "bfloat16", "use_bias": True,
               "use_cache": True, "vocab_size": 49152}
_STARCODER2_SOURCE = ("NVIDIA/TensorRT-LLM StarCoder2 test configs 'based on HuggingFace configs' (code-index file "
                      "3755394976: the shared keys and each size's hidden_size, intermediate_size, heads, kv heads, "
                      "rope_theta; layers 30/32/40 per its comment, the test reducing them)")
_STARCODER2_NOTE = ("tie_word_embeddings is absent from every copy cited: Starcoder2Config's default (tied) applies, "
                    "as Huawei's Starcoder2Config reader also assumes (code-index file 12741436179); dropouts 0.1 as "
                    "the configs set them; sliding window 4096 on every layer")

# clip_qkv and softmax_scale (null in the configs) left out: TOML has no null inside a table; null is the default
_MPT_ATTN = {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0,
             "attn_type": "multihead_attention", "attn_uses_sequence_id": False, "prefix_lm": False, "qk_ln": False}
_MPT = {"architectures": ["MPTForCausalLM"], "attn_config": _MPT_ATTN,
        "auto_map": {"AutoConfig": "configuration_mpt.MPTConfig",
                     "AutoModelForCausalLM": "modeling_mpt.MPTForCausalLM"},
        "emb_pdrop": 0, "embedding_fraction": 1.0, "expansion_ratio": 4, "init_device": "cpu", "learned_pos_emb": True,
        "logit_scale": None, "model_type": "mpt", "no_bias": True, "norm_type": "low_precision_layernorm",
        "resid_pdrop": 0, "tokenizer_name": "EleutherAI/gpt-neox-20b", "torch_dtype": "bfloat16",
        "transformers_version": "4.28.1", "use_cache": False, "verbose": 0, "vocab_size": 50432}
_MPT_NOTE = ("init_config left out (initialisation only), and attn_config's null clip_qkv and softmax_scale (their "
             "defaults); transformers' MptForCausalLM builds this block as the "
             "checkpoint's llm-foundry remote code does (no biases, weight-only LayerNorms, ALiBi, tied head)")

ROWS: list[dict[str, Any]] = [
    {"name": "qwen-1.8b", "display_name": "Qwen-1.8B", "hf_id": "Qwen/Qwen-1_8B",
     "aliases": ["Qwen/Qwen-1_8B-Chat", "Qwen-1_8B", "Qwen-1_8B-Chat", "qwen-1.8b-chat"],
     "source": (f"{_MLC} [qwen: a config.json with Qwen/Qwen-1_8B's shapes]; {_QWEN_SHAPES}; {_QWEN_CODE}; "
                "code-index file 61022819872 (qwen-1_8b fixture: 24 layers, weight_bytes 3,673,657,344)"),
     "verification": (f"mlc-llm's config.json verbatim; {_QWEN_README}; count = the bf16 checkpoint's "
                      "3,673,657,344 bytes / 2 (a third-party fixture)"),
     "measured_params": 1836828672,
     "config": {**_QWEN, "attn_dropout_prob": 0.0, "bf16": False, "emb_dropout_prob": 0.0, "hidden_size": 2048,
                "intermediate_size": 11008, "initializer_range": 0.02, "layer_norm_epsilon": 1e-06,
                "max_position_embeddings": 8192, "num_attention_heads": 16, "num_hidden_layers": 24,
                "rotary_emb_base": 10000, "rotary_pct": 1.0, "scale_attn_weights": True, "seq_length": 8192,
                "tokenizer_class": "QWenTokenizer", "transformers_version": "4.32.0", "use_cache": True,
                "use_dynamic_ntk": True, "use_flash_attn": "auto", "use_logn_attn": True, "vocab_size": 151936}},
    {"name": "qwen-7b", "display_name": "Qwen-7B", "hf_id": "Qwen/Qwen-7B",
     "aliases": ["Qwen/Qwen-7B-Chat", "qwen-7b-chat"],
     "source": ("zhangningboo/Qwen-7B, config.json@abcb6d6d8ec6 (a copy of the checkpoint's); "
                f"{_QWEN_SHAPES}; {_QWEN_CODE}; code-index file 54872141627 (Qwen-7B: safetensors index "
                "total_size 15,442,649,088)"),
     "verification": (f"config.json verbatim (a later upload raises max_position_embeddings to 32768: no effect on "
                      f"counts); {_QWEN_README}; count = total_size / 2 (bf16), equal to Qwen1.5-7B's of the same "
                      "shapes"),
     "measured_params": 7721324544,
     "config": {**_QWEN, "attn_dropout_prob": 0.0, "bf16": False, "emb_dropout_prob": 0.0, "fp16": False,
                "fp32": False, "hidden_size": 4096, "intermediate_size": 22016, "initializer_range": 0.02,
                "layer_norm_epsilon": 1e-06, "max_position_embeddings": 8192, "num_attention_heads": 32,
                "num_hidden_layers": 32, "onnx_safe": None, "rotary_emb_base": 10000, "rotary_pct": 1.0,
                "scale_attn_weights": True, "seq_length": 8192, "tokenizer_class": "QWenTokenizer",
                "transformers_version": "4.32.0", "use_cache": True, "use_dynamic_ntk": True, "use_flash_attn": "auto",
                "use_logn_attn": True, "vocab_size": 151936}},
    {"name": "qwen-14b", "display_name": "Qwen-14B", "hf_id": "Qwen/Qwen-14B",
     "aliases": ["Qwen/Qwen-14B-Chat", "qwen-14b-chat"],
     "source": (f"{_QWEN_SHAPES}; {_QWEN_CODE}; code-index file 15085604462 (Qwen1.5-14B GGUF n_params "
                "14,167,290,880)"),
     "verification": ("shapes from the config.json links (5120, 40 heads, intermediate_size 27392, 40 layers, vocab "
                      "152064, context 2048); kv_channels 128 = 5120 / 40; other keys left to QWenConfig's defaults "
                      f"(dropouts 0.0, no_bias true); {_QWEN_README}; computed 14,167,290,880 = the published count "
                      "of Qwen1.5-14B, whose shapes are the same (not this checkpoint's own count)"),
     "config": {**_QWEN, "hidden_size": 5120, "intermediate_size": 27392, "num_attention_heads": 40,
                "num_hidden_layers": 40, "seq_length": 2048, "vocab_size": 152064}},
    {"name": "qwen-72b", "display_name": "Qwen-72B", "hf_id": "Qwen/Qwen-72B",
     "aliases": ["Qwen/Qwen-72B-Chat", "qwen-72b-chat"],
     "source": ("mapengAdam/qianwen-72B, config.json and model.safetensors.index.json@3334bfe3d6d9 (ModelScope's "
                f"qwen/Qwen-72B: total_size 144,575,840,256); {_QWEN_SHAPES}; {_QWEN_CODE}"),
     "verification": ("shapes as both sources give them (8192, 64 heads, intermediate_size 49152, 80 layers, vocab "
                      "152064, kv_channels 128), rotary base 1e6, context 32768 (the Hugging Face config; the "
                      "ModelScope copy says 8192 and sets attn/emb dropout 0.1, left out: QWenConfig's 0.0 applies); "
                      f"{_QWEN_README}; count = total_size / 2 (bf16)"),
     "measured_params": 72287920128,
     "config": {**_QWEN, "hidden_size": 8192, "intermediate_size": 49152, "num_attention_heads": 64,
                "num_hidden_layers": 80, "rotary_emb_base": 1000000, "seq_length": 32768, "vocab_size": 152064}},
    {"name": "phi-1.5", "display_name": "Phi-1.5", "hf_id": "microsoft/phi-1_5", "aliases": ["phi-1_5"],
     "source": ("code-index file 1270800079 (PhiConfig of microsoft/phi-1_5 as loaded, with its parameter shapes: "
                "q/k/v/dense, fc1/fc2, input_layernorm with biases, lm_head.bias); code-index file 70407034430 "
                "(microsoft/phi-1_5 metadata: safetensors_total_params 1418270720); Lightning-AI/litgpt, "
                "litgpt/config.py@26857050fe3f [phi-1_5: shared_attention_norm, lm_head_bias]"),
     "verification": "config.json as loaded (model_type phi); count = the checkpoint's safetensors metadata",
     "measured_params": 1418270720,
     "config": {"architectures": ["PhiForCausalLM"], "attention_dropout": 0.0, "bos_token_id": None, "embd_pdrop": 0.0,
                "eos_token_id": None, "hidden_act": "gelu_new", "hidden_size": 2048, "initializer_range": 0.02,
                "intermediate_size": 8192, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
                "model_type": "phi", "num_attention_heads": 32, "num_hidden_layers": 24, "num_key_value_heads": 32,
                "partial_rotary_factor": 0.5, "qk_layernorm": False, "resid_pdrop": 0.0, "rope_scaling": None,
                "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float16",
                "transformers_version": "4.38.0", "use_cache": True, "vocab_size": 51200}},
    {"name": "phi-2", "display_name": "Phi-2", "hf_id": "microsoft/phi-2", "aliases": [],
     "source": ("code-index file 32193779230 (microsoft/phi-2 config.json, copied with its link); code-index file "
                "4881146369 (the same dict, lm_head_bias True); code-index file 48474337912 (microsoft/phi-2 hub "
                "metadata: safetensors F16 2779683840)"),
     "verification": "config.json verbatim (resid_pdrop 0.1); count = the checkpoint's safetensors metadata",
     "measured_params": 2779683840,
     "config": {"architectures": ["PhiForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 50256,
                "embd_pdrop": 0.0, "eos_token_id": 50256, "hidden_act": "gelu_new", "hidden_size": 2560,
                "initializer_range": 0.02, "intermediate_size": 10240, "layer_norm_eps": 1e-05,
                "max_position_embeddings": 2048, "model_type": "phi", "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32, "partial_rotary_factor": 0.4,
                "qk_layernorm": False, "resid_pdrop": 0.1, "rope_scaling": None, "rope_theta": 10000.0,
                "tie_word_embeddings": False, "torch_dtype": "float16", "transformers_version": "4.37.0",
                "use_cache": True, "vocab_size": 51200}},
    {"name": "gpt-j-6b", "display_name": "GPT-J-6B", "hf_id": "EleutherAI/gpt-j-6b", "aliases": ["gpt-j", "gptj-6b"],
     "source": (f"{_MLC} [gpt_j: the config.json]; code-index file 37133021827 (EleutherAI/gpt-j-6B loaded with "
                "transformers: 6050882784 params); code-index file 6356303769 (the model card: n_parameters "
                "6053381344)"),
     "verification": ("config.json as mlc-llm copies it (its rope_scaling entry left out: GPTJConfig reads "
                      "rotary_dim); "
                      "count = the parameters transformers builds (the card's 6,053,381,344 counts 2,498,560 more, "
                      "not the transformers module count)"),
     "measured_params": 6050882784,
     "config": {"activation_function": "gelu_new", "architectures": ["GPTJForCausalLM"], "attn_pdrop": 0.0,
                "bos_token_id": 50256, "embd_pdrop": 0.0, "eos_token_id": 50256, "initializer_range": 0.02,
                "layer_norm_epsilon": 1e-05, "model_type": "gptj", "n_embd": 4096, "n_head": 16, "n_inner": None,
                "n_layer": 28, "n_positions": 2048, "resid_pdrop": 0.0, "rotary": True, "rotary_dim": 64,
                "scale_attn_weights": True, "tie_word_embeddings": False, "tokenizer_class": "GPT2Tokenizer",
                "transformers_version": "4.18.0.dev0", "use_cache": True, "vocab_size": 50400}},
    {"name": "starcoder", "display_name": "StarCoder", "hf_id": "bigcode/starcoder",
     "aliases": ["bigcode/starcoderbase", "starcoderbase"],
     "source": ("code-index file 11117433255 (Cerebras' StarCoder converter, Hugging Face side: n_embd 6144, n_head "
                "48, n_layer 40, n_inner 24576, n_positions 8192, vocab 49152, multi_query, tied); code-index file "
                "12120973342 (Huawei's StarcoderConfig mirroring the checkpoint's config.json: activation gelu, "
                "dropouts 0.1, layer_norm_epsilon 1e-05); code-index file 69542685706 (StarCoder-15B fine-tunes: "
                "15517456384 parameters); bentoml/OpenLLM configuration_starcoder.py (starcoder and starcoderbase: "
                "one architecture)"),
     "verification": ("config assembled from the two copies (keys they agree on); StarCoder is StarCoderBase trained "
                      "further on Python, the same shapes; count = the published figure of its fine-tunes, a tied "
                      "head (an untied one would add 301,989,888)"),
     "measured_params": 15517456384,
     "config": {"activation_function": "gelu", "architectures": ["GPTBigCodeForCausalLM"],
                "attention_softmax_in_fp32": True, "attn_pdrop": 0.1, "bos_token_id": 0, "embd_pdrop": 0.1,
                "eos_token_id": 0, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt_bigcode",
                "multi_query": True, "n_embd": 6144, "n_head": 48, "n_inner": 24576, "n_layer": 40,
                "n_positions": 8192, "resid_pdrop": 0.1, "scale_attention_softmax_in_fp32": True,
                "scale_attn_weights": True, "tie_word_embeddings": True, "use_cache": True, "vocab_size": 49152}},
    {"name": "starcoder2-3b", "display_name": "StarCoder2-3B", "hf_id": "bigcode/starcoder2-3b", "aliases": [],
     "source": _STARCODER2_SOURCE,
     "verification": f"{_STARCODER2_NOTE}; published 3B (3.03B)",
     "config": {**_STARCODER2, "hidden_size": 3072, "initializer_range": 0.018042, "intermediate_size": 12288,
                "num_attention_heads": 24, "num_hidden_layers": 30, "num_key_value_heads": 2,
                "rope_theta": 999999.4420358813}},
    {"name": "starcoder2-7b", "display_name": "StarCoder2-7B", "hf_id": "bigcode/starcoder2-7b", "aliases": [],
     "source": f"{_STARCODER2_SOURCE}; {_MLC} [starcoder2: the 7B config.json, the same keys]",
     "verification": f"{_STARCODER2_NOTE}; published 7B",
     "config": {**_STARCODER2, "hidden_size": 4608, "initializer_range": 0.018042, "intermediate_size": 18432,
                "num_attention_heads": 36, "num_hidden_layers": 32, "num_key_value_heads": 4, "rope_theta": 1000000}},
    {"name": "starcoder2-15b", "display_name": "StarCoder2-15B", "hf_id": "bigcode/starcoder2-15b", "aliases": [],
     "source": (f"{_STARCODER2_SOURCE}; code-index file 12741436179 (Huawei's Starcoder2Config: the 15B shapes, "
                "dropouts 0.1, rope_theta 100000, sliding_window 4096)"),
     "verification": f"{_STARCODER2_NOTE}; published 15B",
     "config": {**_STARCODER2, "hidden_size": 6144, "initializer_range": 0.01275, "intermediate_size": 24576,
                "num_attention_heads": 48, "num_hidden_layers": 40, "num_key_value_heads": 4, "rope_theta": 100000}},
    {"name": "mpt-7b", "display_name": "MPT-7B", "hf_id": "mosaicml/mpt-7b", "aliases": ["mosaicml/mpt-7b-instruct"],
     "source": ("code-index file 40869040999 (mosaicml/mpt-7b-instruct's original config.json); code-index file "
                "54028930474 (a Databricks MPT-7B repository's card: the same shapes, pytorch_model.bin.index "
                "total_size 13,298,573,312 bytes of bf16)"),
     "verification": (f"the instruct upload's config.json (MPT-7B fine-tuned: the same shapes); {_MPT_NOTE}; count = "
                      "total_size / 2"),
     "measured_params": 6649286656,
     "config": {**_MPT, "d_model": 4096, "max_seq_len": 2048, "n_heads": 32, "n_layers": 32}},
    {"name": "mpt-30b", "display_name": "MPT-30B", "hf_id": "mosaicml/mpt-30b", "aliases": [],
     "source": ("dandelionsllm/pandallm, models/mpt/config.json and pytorch_model.bin.index.json@dbf4dd5918cf (a copy "
                "of MPT-30B with its README: total_size 59,914,401,792)"),
     "verification": f"config.json verbatim; {_MPT_NOTE}; count = total_size / 2 (bf16)",
     "measured_params": 29957200896,
     "config": {**_MPT, "d_model": 7168, "max_seq_len": 8192, "n_heads": 64, "n_layers": 48}},
]
