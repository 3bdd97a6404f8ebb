"""Model catalog rows (tools/build_model_catalog.py reads ROWS; same form as its HF_CONFIG_MODELS).

Wave 5b: models of published fine-tuning / throughput runs that the catalog could not resolve, for model_types
trainplan already reads: Falcon3-7B (llama, head_dim 256), Granite-3.0-8B (granite), Command R+ (cohere with
use_qk_norm: variants.cohere reads it, architecture.py counts one weight per head on q and k), Aya-23-35B (cohere)
and the text decoder of Mistral-Small-3.1 (mistral, the row of Devstral-Small) and GLM-4-32B-0414 (glm4, whose
tiny config joins the trace family grid: tests/fixtures/trace/tiny_glm4.json). Mistral-Small-24B-2501 and
Command-R-v01 already resolve (tools/model_rows/more_models.py, new_types_2.py); the Mistral-Small-3.1 / Devstral ids
get a row of their own here (the 2501 row lives in another file), with the 2501 row's shapes and the 3.1
text_config's rope_theta (1e9) and 131072 positions.

"code-index file N" is a public file found by content (the index names no repository).
"""

from __future__ import annotations

from typing import Any

_NO_PARAMS = "no effect on counts or memory"
_COHERE_AUDIT = ("code-index file 57096592385 (Cohere transformers audit: config sweep of open mirrors of the gated "
                 "CohereForAI configs)")
_COHERE_TABLE = "code-index file 55805448694 (Cohere config table: vocab_size, tie_embeddings per checkpoint)"
_MINDSPEED = "Ascend/MindSpeed-LLM@c77308a14bfc"
_MISTRAL3_CONFIG = ("huggingface/transformers, src/transformers/models/mistral3/configuration_mistral3.py"
                    "@0db25542f219")

ROWS: list[dict[str, Any]] = [
    {"name": "falcon3-7b", "display_name": "Falcon3-7B", "hf_id": "tiiuae/Falcon3-7B-Base",
     "aliases": ["tiiuae/Falcon3-7B-Instruct", "falcon3-7b-base", "falcon3-7b-instruct"],
     "source": ("tayoogunbiyi/vramfit, tests/fixtures/llama/falcon3-7b.json@3b434088df24 (tiiuae/Falcon3-7B-Base "
                "config.json at revision bf3d7ed586cb: LlamaForCausalLM, 28 layers, 3072, 12 heads, 4 kv heads, "
                "head_dim 256, MLP 23040, vocab 131072, untied, rope_theta 1000042, 32768 positions) and "
                "tests/fixtures/llama/extended-provenance.json (its Hub safetensors summary: 7,455,550,464 BF16); "
                "code-index file 69523409012 (a frozen model roster: falcon3-7b-instruct 7,455,550,464); "
                "Lightning-AI/litgpt, litgpt/config.py@26857050fe3f [Falcon3-7B-Base / -Instruct: the same shapes]; "
                "huggingface/blog, falcon3.md@03109ec9f045 (Falcon3-7B-Base: head dimension 256, Llama "
                "architecture, 131K vocabulary)"),
     "verification": ("config.json verbatim less torch_dtype / transformers_version; head_dim 256 != 3072 / 12, read "
                      "from the key; untied head (the count confirms it: tied would be 402,653,184 fewer); base and "
                      "Instruct publish the same count; a third-party table giving the 7B a vocabulary of 131080 "
                      "(code-index file 63193712310) is contradicted by the config and the count (+49,152); count = "
                      "the Hub's safetensors total of the Base"),
     "measured_params": 7455550464,
     "config": {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "eos_token_id": 11, "head_dim": 256, "hidden_act": "silu", "hidden_size": 3072,
                "initializer_range": 0.02, "intermediate_size": 23040, "max_position_embeddings": 32768,
                "mlp_bias": False, "model_type": "llama", "num_attention_heads": 12, "num_hidden_layers": 28,
                "num_key_value_heads": 4, "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
                "rope_theta": 1000042, "tie_word_embeddings": False, "use_cache": True, "vocab_size": 131072}},
    {"name": "granite-3.0-8b", "display_name": "Granite-3.0-8B", "hf_id": "ibm-granite/granite-3.0-8b-base",
     "aliases": ["ibm-granite/granite-3.0-8b-instruct", "granite-3.0-8b-instruct"],
     "source": ("MaxAkbar/IBM, ibm-granite/granite-3.0-8b-instruct/README.md@7845bf787a09 (the Granite-3.0-8B card: "
                "8B dense, embedding size 4096, 40 layers, attention head size 128, 32 heads, 8 KV heads, MLP 12800, "
                "SwiGLU, RMSNorm, shared input/output embeddings, sequence length 4096, 8.1B parameters, finetuned "
                "from granite-3.0-8b-base); ibm-granite/granite-3.1-language-models, README.md@aaea8f855f4e (Granite "
                "3.1 extends the context of the Granite 3.0 models from 4K to 128K by further training, adjusting "
                "RoPE theta); code-index file 66166523910 (model card of ibm-granite/granite-3.1-8b-instruct: "
                "8,170,848,256, safetensors metadata); code-index file 53141176458 (ibm-granite/granite-3.0-1b-a400m-"
                "instruct config: vocab_size 49155); code-index file 24084730353 (ScandEval leaderboard: "
                "ibm-granite/granite-3.0-8b-base, 8171 million parameters, vocabulary 49 thousand)"),
     "verification": ("the card's shapes in the GraniteConfig keys; vocab 49155 as the Granite 3.0 MoE config and "
                      "every Granite 3.1 config (3.1 is 3.0 trained further for long context: its 8B count "
                      "8,170,848,256 = these shapes with 49155 tokens); tied; the four multipliers and rope_theta are "
                      f"not in these sources (GraniteConfig defaults): {_NO_PARAMS}; no exact count of the 3.0 "
                      "upload found: published 8.1B (card) and 8171M (ScandEval)"),
     "config": {"architectures": ["GraniteForCausalLM"], "hidden_size": 4096, "intermediate_size": 12800,
                "max_position_embeddings": 4096, "model_type": "granite", "num_attention_heads": 32,
                "num_hidden_layers": 40, "num_key_value_heads": 8, "tie_word_embeddings": True,
                "vocab_size": 49155}},
    {"name": "c4ai-command-r-plus", "display_name": "C4AI-Command-R-Plus", "hf_id": "CohereForAI/c4ai-command-r-plus",
     "aliases": ["command-r-plus", "command-r+"],     # "Command R+": the card's and llama.cpp PR #6033's name
     "source": (f"{_COHERE_AUDIT} [c4ai-command-r-plus via the alpindale/c4ai-command-r-plus-GPTQ mirror: cohere, 64 "
                "layers, 12288, 96 / 8 heads, head dim 128, MLP 33792, rope_theta 75000000, use_qk_norm true, "
                "logit_scale 0.8333333333; CohereForCausalLM ties lm_head to the embedding]; "
                f"{_COHERE_TABLE} [c4ai-command-r-plus: vocab 256000, the same shapes, tie_embeddings true, norm eps "
                "1e-5]; https://github.com/ggml-org/llama.cpp/pull/6033 (Command R+ config: use_qk_norm=True, the "
                "one flag new over Command R); lumenpearson/huggingface_c4ai-command-r-plus, README.md@99272bd6962d "
                "(model card: 104 billion parameters, context length 128K)"),
     "verification": ("the audit's config values in the CohereConfig keys; the config table's use_qk_norm False is "
                      "contradicted by the mirror config the audit read and by the llama.cpp conversion thread "
                      "(CohereLayerNorm over (heads, head_dim) on q and k: 96 x 128 + 8 x 128 weights per layer); "
                      "tied as CohereConfig's default and the table; 128K = 131072 positions (card), "
                      f"{_NO_PARAMS}; no exact count of this upload found: published 104B"),
     "config": {"architectures": ["CohereForCausalLM"], "hidden_size": 12288, "intermediate_size": 33792,
                "layer_norm_eps": 1e-05, "logit_scale": 0.8333333333333334, "max_position_embeddings": 131072,
                "model_type": "cohere", "num_attention_heads": 96, "num_hidden_layers": 64,
                "num_key_value_heads": 8, "rope_theta": 75000000.0, "tie_word_embeddings": True,
                "use_qk_norm": True, "vocab_size": 256000}},
    {"name": "aya-23-35b", "display_name": "Aya-23-35B", "hf_id": "CohereForAI/aya-23-35B", "aliases": [],
     "source": (f"{_COHERE_AUDIT} [aya-23-35B via the Zoyd/CohereForAI_aya-23-35B-2_5bpw_exl2 mirror: cohere, 40 "
                "layers, 8192, 64 / 64 heads (MHA), head dim 128, MLP 22528, rope_theta 8000000, no q/k norm, "
                "logit_scale 0.0625; Command-R v01 / Aya-23-35B projections 8192 -> 8192, MLP 8192 -> 22528]; "
                "https://ritvik19.medium.com/papers-explained-151-aya-23-d01605c3ee80 (Aya 23 report summary: BPE "
                "tokenizer of 256k, Aya-23-35B a further fine-tuned Cohere Command R); "
                "awesome-llm-papers/awesome-llm-papers.github.io, _publications/aryabumi2024aya.markdown (Aya 23: "
                "open weights of 8B and 35B models)"),
     "verification": ("the shapes of the c4ai-command-r-v01 row (a fine-tune of Command R keeps every shape) in its "
                      "keys; vocab 256000 (256k tokenizer; the aya-23-8b row's config); tie_word_embeddings and "
                      "max_position_embeddings are not in these sources: CohereConfig defaults (tied, 8192) apply; "
                      "no exact count of this upload found: published 35B"),
     "config": {"architectures": ["CohereForCausalLM"], "hidden_size": 8192, "intermediate_size": 22528,
                "logit_scale": 0.0625, "model_type": "cohere", "num_attention_heads": 64, "num_hidden_layers": 40,
                "num_key_value_heads": 64, "rope_theta": 8000000.0, "use_qk_norm": False, "vocab_size": 256000}},
    {"name": "mistral-small-3.1-24b", "display_name": "Mistral-Small-3.1-24B (text decoder)",
     "hf_id": "mistralai/Mistral-Small-3.1-24B-Base-2503",
     "aliases": ["mistralai/Mistral-Small-3.1-24B-Instruct-2503", "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
                 "mistralai/Devstral-Small-2505", "mistralai/Devstral-Small-2507", "devstral-small"],
     "source": (f"{_MISTRAL3_CONFIG} (Mistral3Config, documented on mistralai/Mistral-Small-3.1-24B-Instruct-2503: "
                "its default text_config is a mistral config of 40 layers, 5120, 32 heads, 8 kv heads, head_dim "
                "128, MLP 32768, vocab 131072, rms 1e-5, rope_theta 1e9, 131072 positions, no sliding window); "
                "code-index file 68399702759 (mistralai/Mistral-Small-3.2-24B-Instruct-2506: the same text shapes, "
                "untied, text 23,572,403,200 + vision 438,958,080); code-index file 62981868691 (Mistral-Small-3.2 "
                "is built on Mistral-Small-3.1-24B-Base-2503); code-index file 59720901632 (Devstral-Small-2505: "
                "finetuned from Mistral-Small-3.1, text-only, the vision encoder removed before fine-tuning); "
                "code-index file 55316333825 (Devstral-Small-2505 config: head_dim 128, not 5120 / 32); code-index "
                "file 69539174828 (mistralai/Devstral-Small-2507: MistralForCausalLM, exact parameters "
                "23,572,403,200, 40 layers, 5120, 32 / 8 heads of 128); code-index file 43367020546 "
                "(Devstral-Small-2507 consolidated.safetensors: 23,572,403,200, separate output and tok_embeddings)"),
     "verification": ("the Mistral3Config default text_config in the MistralForCausalLM keys; the aliases cover the "
                      "text decoder only: for Mistral-Small-3.1 / 3.2 (model_type mistral3) the Pixtral vision tower "
                      "and projector (438,958,080 for 3.2) are not counted; Devstral-Small is the text-only fine-tune "
                      "(model_type mistral); untied head (a separate output tensor); the same shapes as the "
                      "mistral-small-24b-2501 row, whose rope_theta 1e8 and 32768 positions differ "
                      f"({_NO_PARAMS}); count = Devstral-Small-2507's safetensors total, not recorded as this "
                      "checkpoint's"),
     "config": {"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "head_dim": 128,
                "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 32768,
                "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32,
                "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 1000000000.0, "sliding_window": None, "tie_word_embeddings": False, "use_cache": True,
                "vocab_size": 131072}},
]


# GLM-4-32B-0414 (model_type glm4): dense.glm4 reads its config (count 32,566,081,536 = the published 32.566B).
ROWS += [
    {"name": "glm-4-32b-0414", "display_name": "GLM-4-32B-0414", "hf_id": "THUDM/GLM-4-32B-0414",
     "aliases": ["THUDM/GLM-4-32B-Base-0414", "zai-org/GLM-4-32B-0414", "zai-org/GLM-4-32B-Base-0414",
                 "THUDM/GLM-Z1-32B-0414", "zai-org/GLM-Z1-32B-0414"],
     "source": (f"{_MINDSPEED}, tests/0day/glm4-32b-0414/pretrain_glm4_32b_0414_8k_ptd.sh and tests/0day/"
                "glm4-base-32b-0414/pretrain_glm4_32b_base_0414_8k_ptd.sh (GLM-4-32B-0414 and -Base-0414, converted "
                "from the HF glm4 checkpoint: 61 layers, 6144, MLP 23040, 48 heads, 2 query groups, padded vocab "
                "151552, RMSNorm 1e-5, sandwich norms (post-norm), rotary on 0.5 of each head, untied embeddings, "
                "--disable-bias-linear without --add-qkv-bias, which the GLM-4-9B-0414 script sets); code-index "
                "file 17246164475 (llama.cpp load of GLM-Z1-32B-0414: glm4, 32768 training context, 6144, 61 layers, "
                "48 / 2 heads of 128, n_rot 64, rms eps 1e-5, n_ff 23040, rope base 10000, vocab 151552, 32.57 B "
                "params); code-index file 70334113230 (lmstudio-community/GLM-4-32B-0414-GGUF: 32.566 billion "
                "parameters, glm4, context 32768); THUDM/GLM-4, README.md (GLM-4-0414 series: GLM-4-32B-0414 with "
                "32 billion parameters; GLM-Z1-32B-0414 trained from GLM-4-32B-0414)"),
     "verification": ("the shapes in the Glm4Config keys (head_dim 128 = 6144 / 48; 2 kv heads); no q/k/v bias "
                      "(attention_bias false: the 32B scripts drop the qkv bias the 9B-0414 one adds), no o_proj "
                      "bias, four RMSNorms per layer; untied head; base, chat and Z1 reasoning checkpoints share the "
                      "shapes (MindSpeed scripts, the Z1 GGUF); no exact count found: published 32.566B (GGUF of "
                      "the chat model) and 32.57 B (Z1 GGUF)"),
     "config": {"architectures": ["Glm4ForCausalLM"], "attention_bias": False, "head_dim": 128, "hidden_act": "silu",
                "hidden_size": 6144, "intermediate_size": 23040, "max_position_embeddings": 32768,
                "model_type": "glm4", "num_attention_heads": 48, "num_hidden_layers": 61, "num_key_value_heads": 2,
                "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
                "tie_word_embeddings": False, "vocab_size": 151552}},
]
