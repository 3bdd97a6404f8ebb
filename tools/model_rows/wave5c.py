"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS).

Wave 5c: OLMo 1 (model_type olmo, the transformers ports allenai/OLMo-7B-hf and OLMo-1B-hf of AI2's hf_olmo
checkpoints): Llama's block with a LayerNorm that has no parameters (model/hfconfig/recent.py olmo). The 2024 re-
releases (OLMo-7B-0424-hf, -0724-hf) set clip_qkv and are left out.

"code-index file N" is a public file found by content (the index names no repository).
"""

from __future__ import annotations

from typing import Any

_PAPER = ("Groeneveld et al. 2024, OLMo: Accelerating the Science of Language Models (arXiv 2402.00838), Table 1: "
          "1B 16 layers of 2048, 16 heads; 7B 32 layers of 4096, 32 heads; SwiGLU, RoPE, non-parametric layer norm, "
          "no biases, sequence length 2048; weight tying on the 1B only")
_OLMO_CONFIG = ("transformers 5.25 models/olmo/configuration_olmo.py (OlmoConfig defaults, the 7B's: vocab 50304, "
                "4096, 11008, 32 layers, 32 heads, 2048 positions, untied, no attention bias, clip_qkv None) and "
                "modeling_olmo.py (OlmoLayerNorm: 'LayerNorm but with no learnable weight or bias')")

ROWS: list[dict[str, Any]] = [
    {"name": "olmo-7b", "display_name": "OLMo-7B", "hf_id": "allenai/OLMo-7B-hf", "aliases": ["allenai/OLMo-7B"],
     "source": (f"{_PAPER}; {_OLMO_CONFIG}; code-index file 68382314670 (allenai/OLMo-7B-0724-hf, family OLMo-v1: "
                "total_params 6888095744, non_embed_params = total - 2 x 50304 x 4096, d_model 4096, d_ffn 11008, "
                "32 layers, OlmoMLP SwiGLU); code-index file 23372544128 (allenai/OLMo-7B: dimension 4096, 32 "
                "heads, total_params 6888095744); code-index file 24012452805 (OLMoForCausalLM, 6,888,095,744 "
                "parameters)"),
     "verification": ("OlmoConfig's defaults are the 7B's shapes; two embeddings of 50304 x 4096 (untied, as the "
                      "non-embedding count subtracts both); no norm parameters; allenai/OLMo-7B (hf_olmo, AI2's "
                      "remote code) is the same checkpoint before its transformers port; count = the published "
                      "total"),
     "measured_params": 6888095744,
     "config": {"architectures": ["OlmoForCausalLM"], "attention_bias": False, "clip_qkv": None,
                "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 2048,
                "model_type": "olmo", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
                "rope_theta": 10000.0, "tie_word_embeddings": False, "vocab_size": 50304}},
    {"name": "olmo-1b", "display_name": "OLMo-1B", "hf_id": "allenai/OLMo-1B-hf", "aliases": ["allenai/OLMo-1B"],
     "source": (f"{_PAPER}; {_OLMO_CONFIG}; code-index file 69646534085 (an OLMo-1B reference model: weight tying, "
                "no bias, non-parametric layer norm, ff_proj (16384, 2048) = gate and up of 8192, ff_out (2048, "
                "8192), 1,176,764,416 parameters); code-index file 65819277506 (a full fine-tune of it: "
                "trainable_parameters 1176764416)"),
     "verification": ("16 layers of 2048 (16 heads of 128), MLP 8192, vocab 50304 as the 7B, head tied to the "
                      "embedding (weight tying: one 50304 x 2048 matrix); no norm parameters; count = the "
                      "published total"),
     "measured_params": 1176764416,
     "config": {"architectures": ["OlmoForCausalLM"], "attention_bias": False, "clip_qkv": None,
                "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 2048,
                "model_type": "olmo", "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16,
                "rope_theta": 10000.0, "tie_word_embeddings": True, "vocab_size": 50304}},
]
