"""The model_types qwen (1st generation), phi, gptj, gpt_bigcode, starcoder2 and mpt (model/hfconfig/early.py)
and their catalog rows (tools/model_rows/new_types.py).

Every total below is a figure its source prints (named in the comment and in the row's `source`), and every
per-layer count is worked out by hand from the modeling file; none is trainplan's own output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model_counts import check_exact, check_rounded, spec
from trainplan.cases.common import case_model
from trainplan.errors import TrainplanError
from trainplan.model.architecture import structure
from trainplan.model.hfconfig import spec_from_hf_config
from trainplan.model.params import count_params, default_lora_targets, lora_params

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "configs"


# Counts of the released checkpoints.
EXACT = {
    "qwen-1.8b": 1_836_828_672,     # code-index 61022819872: Qwen-1_8B bf16 weight_bytes 3,673,657,344 / 2
    "qwen-7b": 7_721_324_544,       # code-index 54872141627: Qwen-7B safetensors index total_size 15,442,649,088 / 2
    "qwen-72b": 72_287_920_128,     # mapengAdam/qianwen-72B model.safetensors.index.json: 144,575,840,256 / 2
    "phi-1.5": 1_418_270_720,       # code-index 70407034430: microsoft/phi-1_5 safetensors_total_params
    "phi-2": 2_779_683_840,         # code-index 48474337912: microsoft/phi-2 safetensors F16 parameters
    "gpt-j-6b": 6_050_882_784,      # code-index 37133021827: EleutherAI/gpt-j-6B loaded with transformers
    "starcoder": 15_517_456_384,    # code-index 69542685706: StarCoder-15B fine-tunes' parameter count
    "mpt-7b": 6_649_286_656,        # code-index 54028930474: MPT-7B pytorch_model index total_size 13,298,573,312 / 2
    "mpt-30b": 29_957_200_896,      # dandelionsllm/pandallm MPT-30B index total_size 59,914,401,792 / 2
}


@pytest.mark.parametrize("name, total", sorted(EXACT.items()))
def test_exact_published_totals(name, total):
    check_exact(name, total)


def test_qwen_14b_equals_qwen15_14b_of_the_same_shapes():
    # code-index 15085604462 / 65866616769: Qwen1.5-14B, 14,167,290,880; Qwen-14B has its shapes (5120, 40 layers,
    # 40 heads, 13696 per MLP branch, vocab 152064, q/k/v bias, untied) but no count of its own was found
    assert count_params(spec("qwen-14b")).total == 14_167_290_880
    assert spec("qwen-14b").measured_params is None


# Sizes the sources give rounded (StarCoder2: promptlayer.com/models/starcoder2-3b "3.03B"; the model names).
# An untied head (StarCoder2 configs leave tie_word_embeddings to its default) would miss each of these.
ROUNDED = {"starcoder2-3b": (3.03e9, 0.002), "starcoder2-7b": (7e9, 0.03), "starcoder2-15b": (15e9, 0.05)}


@pytest.mark.parametrize("name, published", sorted(ROUNDED.items()))
def test_rounded_published_totals(name, published):
    check_rounded(name, published)


def test_qwen_7b_layer_by_hand():
    # modeling_qwen.py: c_attn 4096 -> 3 x 4096 with bias = 4096 * 12288 + 12288 = 50,343,936; c_proj 4096 x 4096
    # = 16,777,216; w1, w2 4096 -> 22016 // 2 = 11008 and c_proj 11008 -> 4096: 3 x 45,088,768; ln_1 + ln_2 (RMS)
    # 8,192: 202,395,648 per layer. 32 layers + wte and lm_head 2 x 151936 x 4096 + ln_f 4096 = 7,721,324,544.
    s = spec("qwen-7b")
    layer = structure(s).layer(0)
    assert layer.params == 202_395_648
    assert [(lin.name, lin.out_features, lin.bias) for lin in layer.linears] == [
        ("c_attn", 12288, True), ("c_proj", 4096, False), ("w2", 11008, False), ("w1", 11008, False),
        ("c_proj", 4096, False)]
    assert not s.tied_embeddings and s.max_position_embeddings == 8192      # seq_length of the config


def test_qwen_lora_on_the_readme_targets():
    # Qwen's finetune.py targets c_attn, c_proj, w1, w2: all five linears. r = 8 per layer: c_attn 8 x (4096 + 12288)
    # + c_proj 8 x 8192 + w1, w2 8 x (4096 + 11008) each + mlp c_proj 8 x (11008 + 4096) = 559,104; x 32 layers
    assert lora_params(spec("qwen-7b"), ("c_attn", "c_proj", "w1", "w2"), 8) == 17_891_328


def test_qwen_needs_kv_channels_times_heads_equal_hidden():
    config = {**json.loads((FIXTURES / "qwen.json").read_text()), "kv_channels": 32}
    with pytest.raises(TrainplanError, match="kv_channels"):
        spec_from_hf_config(config, name="x")


def test_qwen_cases_take_the_fused_c_attn_of_modeling_qwen():
    # cases/common.py: a Qwen-1 case is the catalog's Qwen-1, q/k/v fused in c_attn as modeling_qwen.py builds it;
    # the README's LoRA targets c_attn/c_proj/w1/w2 reach every linear: one adapter on c_attn, r x (h + 3h)
    s, how = case_model({"id": "x", "model": {"hf_id": "Qwen/Qwen-7B-Chat", "name": "Qwen-7B(-Chat)"}})
    assert (s.intermediate_size, s.naming, s.qkv_bias, how) == (11008, "qwen", True, "catalog")


def test_phi_2_structure_by_hand():
    # modeling_phi.py: q/k/v/dense 4 x (2560^2 + 2560) = 26,224,640; fc1 2560 x 10240 + 10240 = 26,224,640; fc2
    # 10240 x 2560 + 2560 = 26,216,960; one input_layernorm with bias 5,120: 78,671,360 per layer
    s = spec("phi-2")
    assert structure(s).layer(0).params == 78_671_360
    assert count_params(s).lm_head == 2560 * 51200 + 51200      # lm_head bias=True
    assert (s.parallel_attn_mlp, s.norms_per_layer, s.hidden_dropout) == (True, 1, 0.1)
    assert default_lora_targets(s) == ("q_proj", "v_proj", "fc1", "fc2")     # peft's default for phi


def test_phi_qk_layernorm_is_refused():
    config = {**json.loads((FIXTURES / "phi.json").read_text()), "qk_layernorm": True}
    with pytest.raises(TrainplanError, match="qk_layernorm"):
        spec_from_hf_config(config, name="x")


def test_gptj_structure_by_hand():
    # modeling_gptj.py: q/k/v/out_proj 4 x 4096^2 = 67,108,864 (no bias); fc_in 4096 x 16384 + 16384 = 67,125,248;
    # fc_out 16384 x 4096 + 4096 = 67,112,960; ln_1 8,192: 201,355,264 per layer; lm_head 4096 x 50400 + 50400
    s = spec("gpt-j-6b")
    assert structure(s).layer(0).params == 201_355_264
    assert count_params(s).lm_head == 206_488_800
    assert (s.parallel_attn_mlp, s.norms_per_layer, s.qkv_bias, s.mlp_bias) == (True, 1, False, True)


def test_starcoder_multi_query_and_learned_positions():
    # modeling_gpt_bigcode.py: c_attn 6144 -> 6144 + 2 x 128 (one K/V head) with bias; wpe 8192 x 6144; tied head
    s = spec("bigcode/starcoderbase")
    assert s.name == "starcoder"
    st = structure(s)
    assert st.layer(0).linears[0].out_features == 6400 and s.num_kv_heads == 1
    assert st.position_params == 8192 * 6144 and st.lm_head is None
    assert (s.hidden_dropout, s.attention_dropout, s.embedding_dropout) == (0.1, 0.1, 0.1)


def test_starcoder2_7b_layer_by_hand():
    # modeling_starcoder2.py, use_bias: q 4608^2 + 4608 = 21,238,272; k, v 2 x (4608 x 512 + 512) = 4,719,616; o
    # 21,238,272; c_fc 4608 x 18432 + 18432 = 84,953,088; c_proj 18432 x 4608 + 4608 = 84,939,264; two LayerNorms
    # with bias 18,432: 217,106,944 per layer
    s = spec("starcoder2-7b")
    assert structure(s).layer(0).params == 217_106_944
    assert (s.num_kv_heads, s.sliding_window, s.tied_embeddings) == (4, 4096, True)


def test_mpt_7b_layer_by_hand():
    # modeling_mpt.py: Wqkv 4096 x 12288 + out_proj 4096^2 + up/down 2 x 4096 x 16384, no biases; norm_1/norm_2
    # weights only (bias = None): 201,334,784 per layer; ALiBi, so no position table
    s = spec("mpt-7b")
    st = structure(s)
    assert st.layer(0).params == 201_334_784
    assert st.position_params == 0 and st.final_norm_params == 4096 and st.lm_head is None


@pytest.mark.parametrize("change", [{"expansion_ratio": 2}, {"no_bias": False},
                                   {"attn_config": {"attn_type": "multiquery_attention"}},
                                   {"attn_config": {"alibi": False}}, {"attn_config": {"qk_ln": True}}])
def test_mpt_variants_transformers_does_not_build_are_refused(change):
    config = {**json.loads((FIXTURES / "mpt.json").read_text()), **change}
    with pytest.raises(TrainplanError, match="llm-foundry variant"):
        spec_from_hf_config(config, name="x")


ALIASES = {
    "qwen-1.8b": ("Qwen/Qwen-1_8B", "Qwen/Qwen-1_8B-Chat", "Qwen-1_8B"),
    "qwen-7b": ("Qwen-7B", "qwen-7b-chat", "Qwen/Qwen-7B-Chat"),
    "qwen-14b": ("Qwen/Qwen-14B-Chat",),
    "qwen-72b": ("Qwen/Qwen-72B-Chat",),
    "phi-1.5": ("microsoft/phi-1_5", "phi-1_5"),
    "gpt-j-6b": ("EleutherAI/gpt-j-6B",),
    "starcoder": ("bigcode/starcoder", "starcoderbase"),
    "mpt-7b": ("mosaicml/mpt-7b-instruct",),
}


@pytest.mark.parametrize("name, aliases", sorted(ALIASES.items()))
def test_aliases(name, aliases):
    for alias in aliases:
        assert spec(alias).name == name
