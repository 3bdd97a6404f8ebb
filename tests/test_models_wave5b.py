"""Wave 5b of the model catalog: models of published fine-tuning / throughput runs (rows in
tools/model_rows/wave5b.py), for model_types trainplan already reads. Every count below is the published figure its
source prints (the row's `source` / `verification` name it), not trainplan's output; shapes are the ones the sources
state. Mistral-Small-24B-2501 and Command-R-v01 already had rows; the Mistral-Small-3.1 / 3.2 and Devstral-Small ids
resolve to a row of the 3.1 text decoder (vision tower not counted) with the 2501 row's shapes."""

from __future__ import annotations

import pytest

from model_counts import check_exact, check_rounded, check_same_shapes, spec
from trainplan.enums import NormKind
from trainplan.model.params import count_params


# --- every id of the wave resolves, to the entry that holds its shapes -----------------------------------------------

RESOLVES = {
    "tiiuae/Falcon3-7B-Base": "falcon3-7b",
    "tiiuae/Falcon3-7B-Instruct": "falcon3-7b",
    "ibm-granite/granite-3.0-8b-base": "granite-3.0-8b",
    "ibm-granite/granite-3.0-8b-instruct": "granite-3.0-8b",
    "CohereForAI/c4ai-command-r-plus": "c4ai-command-r-plus",
    "Command R+": "c4ai-command-r-plus", "Command-R-Plus": "c4ai-command-r-plus", "Command R": "c4ai-command-r-v01",
    "CohereForAI/aya-23-35B": "aya-23-35b",
    "mistralai/Mistral-Small-3.1-24B-Base-2503": "mistral-small-3.1-24b",
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": "mistral-small-3.1-24b",
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": "mistral-small-3.1-24b",
    "mistralai/Devstral-Small-2505": "mistral-small-3.1-24b",
    "mistralai/Devstral-Small-2507": "mistral-small-3.1-24b",
    # already in the catalog before this wave (the run names that prompted it)
    "mistralai/Mistral-Small-24B-Base-2501": "mistral-small-24b-2501",
    "mistralai/Mistral-Small-24B-Instruct-2501": "mistral-small-24b-2501",
    "CohereForAI/c4ai-command-r-v01": "c4ai-command-r-v01",
}


@pytest.mark.parametrize("hf_id, name", sorted(RESOLVES.items()))
def test_the_wave_ids_resolve(hf_id, name):
    assert spec(hf_id).name == name
    assert spec(hf_id.lower()).name == name


@pytest.mark.parametrize("alias, name", [("falcon3-7b-base", "falcon3-7b"), ("falcon3-7b-instruct", "falcon3-7b"),
                                         ("granite-3.0-8b-instruct", "granite-3.0-8b"),
                                         ("devstral-small", "mistral-small-3.1-24b")])
def test_short_aliases_resolve(alias, name):
    assert spec(alias).name == name


# --- exact published counts ------------------------------------------------------------------------------------------

EXACT = {
    # vramfit tests/fixtures/llama/extended-provenance.json: Hub safetensors total of Falcon3-7B-Base@bf3d7ed586cb;
    # code-index 69523409012: falcon3-7b-instruct 7,455,550,464 (the Instruct resolves to the same row)
    "tiiuae/Falcon3-7B-Base": 7_455_550_464,
    "tiiuae/Falcon3-7B-Instruct": 7_455_550_464,
}


@pytest.mark.parametrize("name, total", sorted(EXACT.items()))
def test_exact_published_totals(name, total):
    check_exact(name, total)


# --- rows without a count of their own: the count published for a checkpoint of the same shapes ---------------------

SAME_SHAPES = {
    # code-index 69539174828 / 43367020546: Devstral-Small-2507 (text-only fine-tune of Mistral-Small-3.1), exact
    # parameters / safetensors total 23,572,403,200; the row holds the 3.1 text decoder, so nothing is recorded
    "mistralai/Mistral-Small-3.1-24B-Base-2503": 23_572_403_200,
    # code-index 68399702759: Mistral-Small-3.2-24B-Instruct-2506 text parameters 23,572,403,200 (+ vision 438,958,080)
    "mistralai/Mistral-Small-3.2-24B-Instruct-2506": 23_572_403_200,
    # code-index 66166523910: granite-3.1-8b-instruct (Granite 3.0 trained further for 128K), 8,170,848,256
    "ibm-granite/granite-3.0-8b-base": 8_170_848_256,
}


@pytest.mark.parametrize("name, total", sorted(SAME_SHAPES.items()))
def test_counts_printed_for_the_same_shapes(name, total):
    check_same_shapes(name, total)


# --- rounded published figures: (total, relative tolerance of the rounding) ------------------------------------------

ROUNDED = {
    # lumenpearson/huggingface_c4ai-command-r-plus README: 104 billion parameters
    "CohereForAI/c4ai-command-r-plus": (104e9, 0.5 / 104),
    # Aya 23 (aryabumi2024aya): open weights of 8B and 35B models
    "CohereForAI/aya-23-35B": (35e9, 0.5 / 35),
    # code-index 24084730353: ScandEval, ibm-granite/granite-3.0-8b-base 8171 (millions)
    "ibm-granite/granite-3.0-8b-base": (8171e6, 0.5 / 8171),
}


@pytest.mark.parametrize("name, published", sorted(ROUNDED.items()))
def test_rounded_published_totals(name, published):
    check_rounded(name, published)
    assert spec(name).measured_params is None


# --- shapes the sources state ----------------------------------------------------------------------------------------

def _shape(name):
    s = spec(name)
    return (s.num_layers, s.hidden_size, s.num_heads, s.num_kv_heads, s.head_dim, s.vocab_size, s.tied_embeddings)


SHAPES = {
    # Falcon3-7B-Base config.json: head_dim 256 (not 3072 / 12), untied
    "tiiuae/Falcon3-7B-Base": (28, 3072, 12, 4, 256, 131072, False),
    # Granite-3.0-8B card: 40 layers of 4096, 32 heads of 128, 8 KV heads, shared embeddings; vocab of the 3.x line
    "ibm-granite/granite-3.0-8b-base": (40, 4096, 32, 8, 128, 49155, True),
    # Cohere audit / config table: Command R+ 64 layers, 12288, 96 / 8 heads of 128, vocab 256000, tied
    "CohereForAI/c4ai-command-r-plus": (64, 12288, 96, 8, 128, 256000, True),
    # Cohere audit: Aya-23-35B 40 layers, 8192, 64 / 64 heads of 128; 256k tokenizer; CohereConfig ties by default
    "CohereForAI/aya-23-35B": (40, 8192, 64, 64, 128, 256000, True),
    # Mistral3Config default text_config (Mistral-Small-3.1-24B-Instruct-2503): 40 layers, 5120, 32 / 8 heads of 128
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503": (40, 5120, 32, 8, 128, 131072, False),
}


@pytest.mark.parametrize("name, shape", sorted(SHAPES.items()))
def test_key_shapes(name, shape):
    assert _shape(name) == shape


def test_command_r_plus_normalises_q_and_k():
    # llama.cpp #6033 and the audit: Command R+ adds use_qk_norm=True to Command R's one bias-free LayerNorm per layer
    plus = spec("CohereForAI/c4ai-command-r-plus")
    assert plus.qk_norm and plus.parallel_attn_mlp and plus.norm_kind == NormKind.LAYER and not plus.qkv_bias
    assert plus.max_position_embeddings == 131072      # card: 128K context


def test_aya_23_35b_is_command_r_v01_shaped():
    # Aya-23-35B is a further fine-tuned Command R (Aya 23 report): the c4ai-command-r-v01 row's shapes
    aya, command_r = spec("CohereForAI/aya-23-35B"), spec("CohereForAI/c4ai-command-r-v01")
    assert aya.name != command_r.name and not aya.qk_norm
    assert _shape(aya.name) == _shape(command_r.name)
    assert count_params(aya).total == count_params(command_r).total


def test_mistral_small_3_1_text_decoder_is_the_2501_shapes():
    # Mistral3Config text_config vs the 2501 row: the same shapes; rope_theta 1e9 and 131072 positions
    text, small3 = spec("mistralai/Mistral-Small-3.1-24B-Base-2503"), spec("mistralai/Mistral-Small-24B-Base-2501")
    assert text.name != small3.name and text.model_type == "mistral"
    assert _shape(text.name) == _shape(small3.name)
    assert count_params(text).total == count_params(small3).total == 23_572_403_200
    assert text.sliding_window is None and text.max_position_embeddings == 131072


def test_granite_3_0_context_is_4k():
    # Granite-3.0-8B card: sequence length 4096 (3.1 extended it to 128K)
    assert spec("ibm-granite/granite-3.0-8b-base").max_position_embeddings == 4096
    assert spec("ibm-granite/granite-3.1-8b-base").name != spec("ibm-granite/granite-3.0-8b-base").name


# --- GLM-4-32B-0414 (glm4; its tiny config is in the trace family grid: tests/fixtures/trace/tiny_glm4.json) ---------

GLM_IDS = ["THUDM/GLM-4-32B-0414", "THUDM/GLM-4-32B-Base-0414", "zai-org/GLM-4-32B-0414",
           "zai-org/GLM-4-32B-Base-0414", "THUDM/GLM-Z1-32B-0414", "zai-org/GLM-Z1-32B-0414"]


@pytest.mark.parametrize("hf_id", GLM_IDS)
def test_glm_ids_resolve(hf_id):
    assert spec(hf_id).name == spec(hf_id.lower()).name == "glm-4-32b-0414"


@pytest.mark.parametrize("name, published", [
    # code-index 70334113230: lmstudio-community/GLM-4-32B-0414-GGUF, 32.566 (billion)
    ("THUDM/GLM-4-32B-0414", (32.566e9, 0.0005 / 32.566)),
    # code-index 17246164475: llama.cpp load of GLM-Z1-32B-0414, model params = 32.57 B
    ("THUDM/GLM-Z1-32B-0414", (32.57e9, 0.005 / 32.57)),
])
def test_glm_rounded_published_totals(name, published):
    check_rounded(name, published)


def test_glm_4_32b_shapes_no_qkv_bias_and_sandwich_norms():
    # MindSpeed-LLM GLM-4-32B-0414 scripts and the Z1 GGUF: 61 layers, 6144, 48 / 2 heads of 128, 151552, untied;
    # the 32B scripts drop the --add-qkv-bias of the 9B-0414 script; --post-norm (four norms per layer)
    glm = spec("THUDM/GLM-4-32B-0414")
    assert _shape(glm.name) == (61, 6144, 48, 2, 128, 151552, False)
    assert glm.model_type == "glm4" and not glm.qkv_bias and not glm.out_bias
    assert glm.norms_per_layer == 4 and glm.max_position_embeddings == 32768
