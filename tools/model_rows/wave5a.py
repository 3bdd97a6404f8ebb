"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS).

Wave 5a: models that published throughput tables name and the catalog could not resolve. The GPT-3 family of
Brown et al. 2020 (eight sizes of Table 2.1, as transformers `gpt2` configs: GPT-3 is "the same model and
architecture as GPT-2"), OPT-30B and OPT-175B (`opt`, in the form of the catalog's OPT-1.3B ... OPT-66B rows) and
Nemotron-4-15B (`nemotron`, in the form of the catalog's Nemotron-3-8B / Nemotron-4-340B rows).

GPT-3, OPT-175B and Nemotron-4-15B have no Hugging Face upload (weights never released, or released only on
request): their `hf_id` repeats the catalog name, so exports name the model as trainplan does (what they do for a
spec without an hf_id). "code-index file N" is a public file found by content (the index names no repository).
"""

from __future__ import annotations

from typing import Any

# --- GPT-3 (Brown et al. 2020, arXiv 2005.14165) ----------------------------------------------------------------

_GPT3_PAPER = ("Brown et al. 2020, arXiv 2005.14165, Table 2.1 (n_params, n_layers, d_model, n_heads, d_head) and "
               "section 2.1 (the same model and architecture as GPT-2, alternating dense and locally banded sparse "
               "attention; n_ctx 2048; d_ff = 4 d_model): Table 2.1 and section 2.1 verbatim in code-index file "
               "62776818203, Table 2.1 in code-index file 45484487489, n_ctx 2048 and d_ff = 4 d_model in code-index "
               "file 65963167050; Table D.1 (Params (M) of each size) verbatim in code-index files 69493738626 and "
               "34914328103")
_MDS = ("microsoft/Megatron-DeepSpeed, examples_deepspeed/rebase/ds_pretrain_gpt_1.3B.sh@77ecb16759e0 ('the GPT-3 "
        "XXX below are configs from GPT-3 paper': num_layers, hidden_size, num_attn_heads of the eight sizes; "
        "seq-length and max-position-embeddings 2048; gpt2-vocab.json / gpt2-merges.txt)")
_GPT2_CONFIG = ("mlc-ai/mlc-llm, python/mlc_llm/model/model_preset.py@79d603f085f5 [gpt2: GPT-2's config.json, "
                "GPT2LMHeadModel, activation_function gelu_new, layer_norm_epsilon 1e-05, vocab_size 50257]")
_NEMO_PERF = "docs.nvidia.com/nemo-framework/user-guide/latest/performance/performance_summary.html"
_GPT3_NOTE = ("GPT-2's block (pre-LayerNorm with bias, biased Conv1D linears, GELU MLP of 4 d_model, learned "
              "positions, head tied to the token embedding) at the paper's sizes and 2048 positions, in GPT-2's "
              "config.json keys (n_inner absent: 4 x n_embd); vocab 50257, GPT-2's BPE (reversible tokenization "
              "as GPT-2); the locally banded sparse layers have the dense layers' parameters (trainplan models "
              "every layer's attention as dense); no checkpoint was released, so no exact count exists: the "
              "computed total rounds to Table D.1's Params (M) at the digits D.1 prints; alias gpt3-<size>: the "
              "spelling of NeMo's performance summary (GPT3-175B, " + _NEMO_PERF + ")")
_GPT3 = {"architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05,
         "model_type": "gpt2", "n_positions": 2048, "tie_word_embeddings": True, "vocab_size": 50257}


def _gpt3(name: str, display: str, published: str, d1: str, layers: int, hidden: int, heads: int, *,
          note: str = "") -> dict[str, Any]:
    return {
        "name": name, "display_name": display, "hf_id": name, "aliases": [name.replace("gpt-3", "gpt3")],
        "source": (f"{_GPT3_PAPER} [{display}: {published}, {layers} layers, d_model {hidden}; D.1: {d1}M]; "
                   f"{_MDS} [{display}: {layers} layers, {hidden}, {heads} heads]; {_GPT2_CONFIG}"),
        "verification": f"{_GPT3_NOTE}{note}",
        "config": {**_GPT3, "n_embd": hidden, "n_head": heads, "n_layer": layers},
    }


_METASEQ_SIZES = "facebookresearch/metaseq, metaseq/launcher/opt_job_constants.py@f7ffa5fd61cf"

GPT3_ROWS: list[dict[str, Any]] = [
    _gpt3("gpt-3-125m", "GPT-3 Small", "125M", "125", 12, 768, 12),
    _gpt3("gpt-3-350m", "GPT-3 Medium", "350M", "356", 24, 1024, 16,
          note=("; computed 355,871,744 = GPT-2 Medium's count (354,823,168) + 1024 more position rows x 1024, "
                "D.1's 356M: Table 2.1's '350M' names the size rather than rounding it")),
    _gpt3("gpt-3-760m", "GPT-3 Large", "760M", "760", 24, 1536, 16),
    _gpt3("gpt-3-1.3b", "GPT-3 XL", "1.3B", "1,320", 24, 2048, 16,
          note=("; heads: Table 2.1 prints 24 heads of d_head 128 for d_model 2048 (24 x 128 = 3072, one of the "
                "two rows where n_heads x d_head != d_model, code-index file 62776818203), which GPT-2's attention "
                "(n_embd divisible by n_head) cannot hold; 16 heads of 128 is Megatron-DeepSpeed's GPT-3 XL. The "
                "head count changes no parameter; an attention width of 3072 would add 24 x 4 x 2048 x 1024 "
                "weights (1,517M in all), not D.1's 1,320M")),
    _gpt3("gpt-3-2.7b", "GPT-3 2.7B", "2.7B", "2,650", 32, 2560, 32),
    _gpt3("gpt-3-6.7b", "GPT-3 6.7B", "6.7B", "6,660", 32, 4096, 32),
    _gpt3("gpt-3-13b", "GPT-3 13B", "13.0B", "12,850", 40, 5120, 40,
          note=("; d_model: Table 2.1 prints 5140 with 40 heads of d_head 128 (= 5120; 5140 is not divisible by "
                "40); 5120 is Megatron-DeepSpeed's GPT-3 13B and metaseq's 13b size (" + _METASEQ_SIZES + ", "
                "commented 'see table 2.1' of the GPT-3 paper, asserting n_heads x d_head == emb_size), and D.1's "
                "12,850M is its count (12,853,386,240; d_model 5140 would give 12,952,938,780, code-index file "
                "62776818203, which Table 2.1's 13.0B rounds)")),
    _gpt3("gpt-3-175b", "GPT-3 175B", "175.0B", "174,600", 96, 12288, 96,
          note="; computed 174,604,259,328, D.1's 174,600M; Table 2.1's 175.0B names the size"),
]

# --- OPT (Zhang et al. 2022, arXiv 2205.01068) ------------------------------------------------------------------

_OPT = {"activation_function": "relu", "architectures": ["OPTForCausalLM"], "do_layer_norm_before": True,
        "enable_bias": True, "max_position_embeddings": 2048, "model_type": "opt", "tie_word_embeddings": True,
        "vocab_size": 50272}
_FLEXGEN = ("FMInference/FlexiGen, flexgen/opt_config.py@1b9e9bd06a98 (get_opt_config: opt-30b and opt-175b with "
            "max_seq_len 2048 and ffn_embed_dim 4 x hidden; OptConfig defaults vocab_size 50272, relu, layer_norm_eps "
            "1e-5; input_dim = hidden_size for every size; opt-350m refused as 'a different architecture')")
_METASEQ_README = ("facebookresearch/metaseq, projects/OPT/README.md@f7ffa5fd61cf (Pretrained Model Weights: "
                   "OPT-30B 30B, OPT-175B 175B, the latter on request)")
_OPT_NOTE = ("the catalog's OPT-66B row's form (its config conventions: tied head, ReLU, pre-LN, biases on, "
             "word_embed_proj_dim = hidden_size, learned positions with OPT's 2 extra rows)")

OPT_ROWS: list[dict[str, Any]] = [
    {"name": "opt-30b", "display_name": "OPT-30B", "hf_id": "facebook/opt-30b", "aliases": [],
     "source": (f"{_METASEQ_SIZES} [MODEL_SIZES['30b']: 48 layers, emb 7168, 56 heads of 128; ffn_size = 4 x emb]; "
                f"{_FLEXGEN}; code-index file 1852763748 (model table citing huggingface.co/facebook/opt-30b/blob/"
                "main/config.json: 7168, 56 heads, 4 x 7168, 48 layers, max_model_len 2048, vocab 50272, relu); "
                "code-index file 34738700954 (OPT_30B_CONFIG: vocab 50272, 7168, max_position_embeddings 2050 = "
                f"2048 + OPT's offset 2, 56 heads, head_dim 128, ffn_dim 28672, 48 layers); {_METASEQ_README}"),
     "verification": (f"{_OPT_NOTE}; no verbatim copy of facebook/opt-30b's config.json was found: the values are "
                      "those the sources here agree on (vocab 50272 and 2048 positions, which the reference "
                      "left unverified for 30B, from FlexGen and the two config.json-derived tables); published "
                      "30B, no exact count found"),
     "config": {**_OPT, "ffn_dim": 28672, "hidden_size": 7168, "num_attention_heads": 56, "num_hidden_layers": 48,
                "word_embed_proj_dim": 7168}},
    {"name": "opt-175b", "display_name": "OPT-175B", "hf_id": "opt-175b", "aliases": [],
     "source": (f"{_METASEQ_SIZES} [MODEL_SIZES['175b']: 96 layers, emb 12288, 96 heads of 128; ffn_size = 4 x "
                f"emb]; {_FLEXGEN}; cli99/llm-analysis, llm_analysis/model_configs/facebook_opt-175b.json"
                "@b60b392f7478 (96 layers, 96 heads, 12288, vocab 50272, max_seq_len 2048, ffn 49152); "
                f"{_METASEQ_README}"),
     "verification": (f"{_OPT_NOTE}: OPT-175B has no public Hugging Face config (weights on request), so the "
                      "paper-size shapes (metaseq, FlexGen, llm-analysis agree) are written with the keys and "
                      "values of the OPT-66B / OPT-30B configs; published 175B, no exact count found"),
     "config": {**_OPT, "ffn_dim": 49152, "hidden_size": 12288, "num_attention_heads": 96, "num_hidden_layers": 96,
                "word_embed_proj_dim": 12288}},
]

# --- Nemotron-4-15B (Parmar et al. 2024, arXiv 2402.16819) -----------------------------------------------------

NEMOTRON_ROWS: list[dict[str, Any]] = [
    {"name": "nemotron-4-15b", "display_name": "Nemotron-4-15B", "hf_id": "nemotron-4-15b",
     "aliases": ["nemotron-15b", "nemotron4-15b"],
     "source": ("huggingface/transformers, src/transformers/models/nemotron/configuration_nemotron.py@ae005ce12a08 "
                "(NemotronConfig, whose defaults its docstring calls 'a Nemotron nemotron-15b style configuration': "
                "vocab_size 256000, hidden_size 6144, intermediate_size 24576, 32 layers, 48 heads, relu2, 4096 "
                "positions, norm_eps 1e-5, untied, rope_theta 10000, partial_rotary_factor 0.5, no attention or "
                "MLP bias; num_key_value_heads None = MHA); NVIDIA-NeMo/Megatron-Bridge, src/megatron/bridge/models/"
                "nemotron/nemotron_provider.py@dc805f5cf9e0 [Nemotron4ModelProvider15B: 32 layers, 6144, 48 heads, "
                "8 query groups, 24576, seq_length 4096; NemotronModelProvider: LayerNorm, squared_relu, rope with "
                "rotary_percent 0.5, add_bias_linear false, untied embeddings]; tests/unit_tests/models/nemotron/"
                "test_nemotron_provider.py [the same shapes]; code-index file 61211626093 (Nemotron-4 15B "
                "Technical Report, Table 1: 32 layers, hidden 6144, 48 heads, 8 KV heads, sequence 4096, "
                "vocabulary 256,000; section 2: 3.2 billion embedding and 12.5 billion non-embedding parameters, "
                "RoPE, squared ReLU, no bias terms, untied input-output embeddings, GQA)"),
     "verification": ("NemotronConfig's nemotron-15b defaults with the report's and Megatron-Bridge's 8 KV heads "
                      "(GQA; the class default would be MHA), in the form of the catalog's nemotron-4-340b row; "
                      "no Hugging Face upload of this model: hf_id repeats the catalog name; aliases: "
                      f"'Nemotron-15B' as NeMo's performance summary names it ({_NEMO_PERF}), nemotron4-15b as the "
                      "340B row's; computed non-embedding 12,483,047,424 (the report's 12.5B); embedding and head 2 "
                      "x 256,000 x 6,144 = 3,145,728,000, which the report prints as 3.2B"),
     "config": {"architectures": ["NemotronForCausalLM"], "attention_bias": False, "hidden_act": "relu2",
                "hidden_size": 6144, "intermediate_size": 24576, "max_position_embeddings": 4096, "mlp_bias": False,
                "model_type": "nemotron", "norm_eps": 1e-05, "num_attention_heads": 48, "num_hidden_layers": 32,
                "num_key_value_heads": 8, "partial_rotary_factor": 0.5, "rope_theta": 10000.0,
                "tie_word_embeddings": False, "vocab_size": 256000}},
]

ROWS: list[dict[str, Any]] = GPT3_ROWS + OPT_ROWS + NEMOTRON_ROWS
