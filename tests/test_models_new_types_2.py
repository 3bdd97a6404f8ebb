"""The second batch of model types (model/hfconfig/variants.py: deepseek, olmoe, granite, granitemoe, minicpm,
stablelm, cohere) and their catalog rows (tools/model_rows/new_types_2.py). Every count below is a figure its
source prints (the row's `source` and `verification` name it) or one worked out by hand from the modeling
file in the comment beside it, not trainplan's output."""

from __future__ import annotations

import json

import pytest

from model_counts import check_exact, check_rounded, check_same_shapes, check_transformers_count, spec
from trainplan.enums import NormKind
from trainplan.errors import TrainplanError
from trainplan.model.architecture import structure
from trainplan.model.hfconfig import spec_from_hf_config
from trainplan.model.params import PEFT_MOE_CONVERSION_MODEL_TYPES, active_params, count_params


# Counts of the released checkpoints (safetensors metadata or the loaded model's count).
EXACT = {
    "deepseek-moe-16b": 16_375_728_128,   # code-index 69468411049: deepseek-moe-16b-base and -chat total_params
    "olmoe-1b-7b-0924": 6_919_161_856,    # code-index 65753564317: OLMoE-1B-7B-0924 safetensors headers
    "granite-3.3-8b": 8_170_864_640,      # code-index 68624493177: granite-3.3-8b(-instruct), HF safetensors
    "minicpm-2b": 2_724_880_896,          # code-index 41738685489: chatllm.cpp serving MiniCPM, 2724880896 (2.7B)
    "stablelm-2-1.6b": 1_644_515_328,     # code-index 65849527990: stablelm-2-1_6b safetensors metadata
}


@pytest.mark.parametrize("name, total", sorted(EXACT.items()))
def test_exact_published_totals(name, total):
    check_exact(name, total)


# No count of these very checkpoints was found; what is printed for a checkpoint of the same shapes:
SAME_SHAPES = {
    # code-index 68688959620: ibm-granite/granite-guardian-3.1-2b (a Granite 3.1 2B fine-tune), 2533531648
    "granite-3.1-2b": 2_533_531_648,
    # code-index 68688959620: ibm-granite/granite-guardian-3.2-3b-a800m, 3298793472
    "granite-3.1-3b-a800m": 3_298_793_472,
}


@pytest.mark.parametrize("name, total", sorted(SAME_SHAPES.items()))
def test_counts_printed_for_the_same_shapes(name, total):
    check_same_shapes(name, total)


# Rounded sizes the model cards print: (figure, relative tolerance of its rounding)
ROUNDED = {
    "deepseek-moe-16b": (16.4e9, 0.005),      # README: 16.4B parameters
    "olmoe-1b-7b-0924": (6.9e9, 0.01),        # OLMoE paper / card: 6.9B (7B) total
    "granite-3.1-2b": (2.5e9, 0.02),          # code-index 1662083868, Granite 3.1 card: 2.5B
    "granite-3.1-8b": (8.1e9, 0.01),          # the same card: 8.1B
    "granite-3.1-3b-a800m": (3.3e9, 0.01),    # the same card: 3.3B
    "minicpm-2b": (2.7e9, 0.01),              # chatllm.cpp: 2.7B
    "stablelm-2-1.6b": (1.6e9, 0.03),         # Stable LM 2 1.6B
    "c4ai-command-r-v01": (35e9, 0.01),       # code-index 54354199734, card: a 35 billion parameter model
}


@pytest.mark.parametrize("name, published", sorted(ROUNDED.items()))
def test_rounded_published_totals(name, published):
    check_rounded(name, published)


def test_active_parameters():
    # DeepSeek-MoE 16B: 2.8B active (code-index 67161653560: num_params_active 2,828,650,496)
    assert active_params(spec("deepseek-moe-16b")) == 2_828_650_496
    # OLMoE-1B-7B: 1.3B active (code-index 68298970743: declared_active_parameters 1.3B)
    assert active_params(spec("olmoe-1b-7b-0924")) == pytest.approx(1.3e9, rel=0.02)
    # Granite 3.1 3B-A800M: 800M active (the card), without the 49155 x 1536 tied embedding
    s = spec("granite-3.1-3b-a800m")
    assert active_params(s) - 49155 * 1536 == pytest.approx(800e6, rel=0.01)
    # MiniCPM-2B: 2.4B non-embedding parameters (code-index 113725582)
    assert count_params(spec("minicpm-2b")).total - 122753 * 2304 == pytest.approx(2.4e9, rel=0.02)


def _layer_params(name: str) -> list[int]:
    s = spec(name)
    return [structure(s).layer(i).params for i in range(s.num_layers)]


def test_deepseek_moe_layers_by_hand():
    """modeling_deepseek.py (code-index 67429243731): layer 0 a DeepseekMLP(10944) (first_k_dense_replace 1),
    the 27 others a DeepseekMoE; q/k/v/o 2048 x 2048 without bias (head_dim 2048 // 16 = 128)."""
    attention = 4 * 2048 * 2048                                          # 16,777,216
    norms = 2 * 2048                                                     # input and post-attention RMSNorm
    dense = attention + 3 * 2048 * 10944 + norms                         # 84,021,248
    # 64 experts of 3 x 2048 x 1408, MoEGate 64 x 2048, shared experts one MLP of 2 x 1408 = 2816
    moe = attention + 64 * 3 * 2048 * 1408 + 64 * 2048 + 3 * 2048 * 2816 + norms   # 587,862,016
    assert _layer_params("deepseek-moe-16b") == [dense] + [moe] * 27
    s = spec("deepseek-moe-16b")
    assert s.moe.shared_intermediate_size == 2816 and s.mla is None and s.head_dim == 128
    assert count_params(s).total == dense + 27 * moe + 2 * 102400 * 2048 + 2048   # untied head, final norm


def test_deepseek_layer_placement_and_dense_configs():
    base = json.loads(spec("deepseek-moe-16b").hf_config_json)
    # `layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq == 0` (DeepseekDecoderLayer)
    s = spec_from_hf_config({**base, "num_hidden_layers": 6, "first_k_dense_replace": 1, "moe_layer_freq": 2},
                            name="x")
    assert [s.moe.is_moe_layer(i) for i in range(6)] == [False, False, True, False, True, False]
    # n_routed_experts unset (the DeepseekConfig default None): every layer a DeepseekMLP
    dense = {k: v for k, v in base.items() if k != "n_routed_experts"}
    assert spec_from_hf_config(dense, name="d").moe is None
    # n_shared_experts null: no shared expert
    assert spec_from_hf_config({**base, "n_shared_experts": None}, name="n").moe.num_shared_experts == 0


def test_olmoe_layer_by_hand():
    """OlmoeDecoderLayer: q/k/v/o 2048 x 2048, q_norm RMSNorm(2048), k_norm RMSNorm(16 x 128), 64 experts of
    3 x 2048 x 1024 (fused gate_up and down), router 64 x 2048, two RMSNorms."""
    layer = 4 * 2048 * 2048 + 2048 + 2048 + 64 * 3 * 2048 * 1024 + 64 * 2048 + 2 * 2048   # 419,569,664
    assert _layer_params("olmoe-1b-7b-0924") == [layer] * 16


def test_granite_layers_by_hand():
    # Granite 3.1 8B: q 4096 x 4096, k/v 4096 x 1024 (8 kv heads of 128), o 4096 x 4096, MLP 3 x 4096 x 12800
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 12800 + 2 * 4096       # 199,237,632
    assert _layer_params("granite-3.1-8b") == [layer] * 40
    assert structure(spec("granite-3.1-8b")).lm_head is None                      # shared embeddings
    # Granite 3.1 3B-A800M: q/o 1536 x 1536, k/v 1536 x 512, 40 experts of 3 x 1536 x 512, router 40 x 1536
    moe = 2 * 1536 * 1536 + 2 * 1536 * 512 + 40 * 3 * 1536 * 512 + 40 * 1536 + 2 * 1536   # 100,727,808
    assert _layer_params("granite-3.1-3b-a800m") == [moe] * 32


def test_minicpm_layer_by_hand():
    # MiniCPMDecoderLayer: 36 heads of 2304 // 36 = 64 (MHA), MLP 3 x 2304 x 5760, two RMSNorms; tied head
    layer = 4 * 2304 * 2304 + 3 * 2304 * 5760 + 2 * 2304                          # 61,051,392
    assert _layer_params("minicpm-2b") == [layer] * 40
    assert structure(spec("minicpm-2b")).lm_head is None


def test_stablelm_layer_by_hand():
    """StableLmDecoderLayer: q/k/v 2048 x 2048 with bias (use_qkv_bias), o_proj without, MLP 3 x 2048 x 5632
    without bias, input_layernorm and post_attention_layernorm nn.LayerNorm (weight and bias)."""
    layer = 3 * (2048 * 2048 + 2048) + 2048 * 2048 + 3 * 2048 * 5632 + 2 * 2 * 2048   # 51,394,560
    assert _layer_params("stablelm-2-1.6b") == [layer] * 24
    s = spec("stablelm-2-1.6b")
    assert s.norm_kind is NormKind.LAYER and not s.parallel_attn_mlp and not s.tied_embeddings
    assert structure(s).final_norm_params == 2 * 2048


def test_stablelm_parallel_residual_and_qk_layernorm():
    """StableLM 2 12B's switches: use_parallel_residual drops post_attention_layernorm, qk_layernorm adds a
    bias-free LayerNorm(head_dim) per head on q (32 heads) and on k (8 heads)."""
    base = json.loads(spec("stablelm-2-1.6b").hf_config_json)
    s = spec_from_hf_config({**base, "num_key_value_heads": 8, "use_qkv_bias": False, "qk_layernorm": True,
                             "use_parallel_residual": True}, name="x")
    attention = 2 * 2048 * 2048 + 2 * 2048 * 512            # head_dim 64: k/v 8 x 64 = 512 wide
    layer = attention + 3 * 2048 * 5632 + 2 * 2048 + (32 + 8) * 64   # one LayerNorm; q and k norm weights
    assert structure(s).layer(0).params == layer and s.norms_per_layer == 1 and s.parallel_attn_mlp


def test_cohere_layer_by_hand():
    """CohereDecoderLayer: one CohereLayerNorm (a weight of 8192, no bias) read by attention and MLP in
    parallel; q/k/v/o 8192 x 8192 (MHA), MLP 3 x 8192 x 22528; the final norm is a CohereLayerNorm too."""
    layer = 4 * 8192 * 8192 + 3 * 8192 * 22528 + 8192                            # 822,091,776
    assert _layer_params("c4ai-command-r-v01") == [layer] * 40
    st = structure(spec("c4ai-command-r-v01"))
    assert st.final_norm_params == 8192 and st.lm_head is None
    assert count_params(spec("c4ai-command-r-v01")).total == 40 * layer + 256000 * 8192 + 8192


def test_cohere_qk_norm_has_a_weight_per_head():
    # use_qk_norm: CohereLayerNorm((64 heads, 128)) on q and ((8 heads, 128)) on k, weights only
    base = json.loads(spec("c4ai-command-r-v01").hf_config_json)
    plain = spec_from_hf_config({**base, "num_key_value_heads": 8}, name="p")
    qk = spec_from_hf_config({**base, "num_key_value_heads": 8, "use_qk_norm": True}, name="q")
    assert structure(qk).layer(0).params - structure(plain).layer(0).params == (64 + 8) * 128


def test_minicpm_moe_is_refused():
    config = {**json.loads(spec("minicpm-2b").hf_config_json), "num_experts": 8, "num_experts_per_tok": 2}
    with pytest.raises(TrainplanError, match="num_experts"):
        spec_from_hf_config(config, name="minicpm-moe")


ALIASES = {
    "deepseek-moe-16b": ("deepseek-ai/deepseek-moe-16b-base", "deepseek-ai/deepseek-moe-16b-chat"),
    "olmoe-1b-7b-0924": ("allenai/OLMoE-1B-7B-0924", "allenai/OLMoE-1B-7B-0924-Instruct"),
    "granite-3.1-2b": ("ibm-granite/granite-3.1-2b-base", "ibm-granite/granite-3.1-2b-instruct"),
    "granite-3.1-8b": ("ibm-granite/granite-3.1-8b-base", "ibm-granite/granite-3.1-8b-instruct"),
    "granite-3.1-3b-a800m": ("ibm-granite/granite-3.1-3b-a800m-base", "ibm-granite/granite-3.1-3b-a800m-instruct"),
    "minicpm-2b": ("openbmb/MiniCPM-2B-sft-bf16", "openbmb/MiniCPM-2B-dpo-bf16"),
    "stablelm-2-1.6b": ("stabilityai/stablelm-2-1_6b", "stabilityai/stablelm-2-1_6b-chat"),
    "c4ai-command-r-v01": ("CohereForAI/c4ai-command-r-v01", "command-r-v01"),
}


@pytest.mark.parametrize("name, ids", sorted(ALIASES.items()))
def test_hf_id_and_alias_resolve(name, ids):
    hf_id, alias = ids
    s = spec(name)
    assert s.hf_id == hf_id and s.source and s.hf_config_json
    assert spec(hf_id).name == name and spec(alias).name == name and spec(alias.lower()).name == name


# --- against transformers: the rows' config.json on the meta device (extra 'trace') ----------------------

NATIVE = ["olmoe-1b-7b-0924", "granite-3.1-2b", "granite-3.1-8b", "granite-3.3-8b", "granite-3.1-3b-a800m",
          "stablelm-2-1.6b", "c4ai-command-r-v01"]


@pytest.mark.trace
@pytest.mark.parametrize("name", NATIVE)
def test_catalog_count_equals_transformers(name):
    check_transformers_count(name)


@pytest.mark.trace
@pytest.mark.parametrize("model_type", ["olmoe", "granitemoe"])
def test_peft_moe_conversion_follows_transformers(model_type):
    """peft 0.21 converts LoRA targets of the model types transformers maps to the qwen2_moe pattern
    (conversion_mapping._MODEL_TO_CONVERSION_PATTERN): OLMoE is one, Granite-MoE is not."""
    from transformers.conversion_mapping import _MODEL_TO_CONVERSION_PATTERN

    converted = _MODEL_TO_CONVERSION_PATTERN.get(model_type) == "qwen2_moe"
    assert (model_type in PEFT_MOE_CONVERSION_MODEL_TYPES) == converted
