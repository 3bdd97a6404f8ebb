"""Wave 4 of the model catalog: Hugging Face ids of fine-tuning runs, for model_types trainplan already reads (rows in
tools/model_rows/wave4.py, the WizardLM alias in tools/build_model_catalog.py). Every count below is the published
figure its source prints (the row's or alias note's `source` / `verification` name it), not trainplan's output; a
test fails if a shape, the tie flag or the alias target is wrong. OLMo-7B, EXAONE-3.5-7.8B and Skywork-13B are left
out: their model_types (hf_olmo / olmo, exaone, skywork) are not ones trainplan reads (tools/model_rows/wave4.py)."""

from __future__ import annotations

import pytest

from model_counts import check_exact, spec
from trainplan import catalog
from trainplan.enums import NormKind, Position
from trainplan.model.params import count_params


# --- every id of the wave resolves, to the entry that holds its shapes -----------------------------------------------

RESOLVES = {
    "openlm-research/open_llama_7b": "open-llama-7b",
    "stabilityai/stablelm-zephyr-3b": "stablelm-3b-4e1t",
    "WizardLMTeam/WizardLM-13B-V1.2": "llama-2-13b",
    "teknium/OpenHermes-2.5-Mistral-7B": "openhermes-2.5-mistral-7b",
    "togethercomputer/RedPajama-INCITE-7B-Base": "redpajama-incite-7b",
    "baichuan-inc/Baichuan-13B-Chat": "baichuan-13b",
    "CohereForAI/aya-23-8B": "aya-23-8b",
}


@pytest.mark.parametrize("hf_id, name", sorted(RESOLVES.items()))
def test_the_wave_ids_resolve(hf_id, name):
    assert spec(hf_id).name == name
    assert spec(hf_id.lower()).name == name


# --- new rows: exact published counts ------------------------------------------------------------------------------

EXACT = {
    # code-index 65869676649 (stablelm-zephyr-3b@fe1fd5e36ccb, safetensors metadata) and 15710750240 (4e1t card)
    "stabilityai/stablelm-zephyr-3b": 2_795_443_200,
    # code-index 4120541175 (Together's model_param_count): RedPajama-INCITE-7B-Base, -Chat, -Instruct
    "togethercomputer/RedPajama-INCITE-7B-Base": 6_857_302_016,
    # code-index 21558147372 (Baichuan-13B README, model details); the Base index's total_size is twice this in bytes
    "baichuan-inc/Baichuan-13B-Chat": 13_264_901_120,
}


@pytest.mark.parametrize("name, total", sorted(EXACT.items()))
def test_exact_published_totals(name, total):
    check_exact(name, total)


def test_the_rows_aliases_resolve():
    assert spec("stabilityai/stablelm-3b-4e1t").name == "stablelm-3b-4e1t"
    for alias in ("togethercomputer/RedPajama-INCITE-7B-Chat", "togethercomputer/RedPajama-INCITE-7B-Instruct"):
        assert spec(alias).name == "redpajama-incite-7b"
    assert spec("baichuan-inc/Baichuan-13B-Base").name == "baichuan-13b"
    assert spec("WizardLM/WizardLM-13B-V1.2").name == "llama-2-13b"


# --- rows without a count of their own: the count published for a checkpoint of the same shapes ---------------------

SAME_SHAPES = {
    # OpenLLaMA-7B is LLaMA-7B's shapes (litgpt, gpu_poor); code-index 15495356071: LLaMA-7B 6,738,415,616
    "openlm-research/open_llama_7b": ("llama-7b", 6_738_415_616),
    # code-index 65997064212: a SLERP merge of OpenHermes-2.5-Mistral-7B, 7,241,748,480 (safetensors metadata)
    "teknium/OpenHermes-2.5-Mistral-7B": (None, 7_241_748_480),
    # the WizardLM alias: Llama-2-13B's count (code-index 4120541175: togethercomputer/llama-2-13b 13,015,864,320)
    "WizardLMTeam/WizardLM-13B-V1.2": ("llama-2-13b", 13_015_864_320),
}


@pytest.mark.parametrize("name, expected", sorted(SAME_SHAPES.items()))
def test_counts_printed_for_the_same_shapes(name, expected):
    other, total = expected
    s = spec(name)
    assert count_params(s).total == total
    assert s.measured_params is None
    if other is not None:
        assert count_params(spec(other)).total == total


def test_openhermes_is_mistral_7b_with_two_more_tokens():
    # vocab 32002 (ChatML tokens): embedding and untied head each 2 x 4096 larger than Mistral-7B-v0.1's
    hermes, base = spec("teknium/OpenHermes-2.5-Mistral-7B"), spec("mistralai/Mistral-7B-v0.1")
    assert hermes.name != base.name and hermes.vocab_size == 32002
    assert count_params(hermes).total - count_params(base).total == 2 * 2 * 4096
    assert hermes.sliding_window == 4096 and hermes.num_kv_heads == 8


def test_aya_23_8b_as_published():
    # Aya 23: open weights of an 8B model; no exact count of this upload was found (aya-expanse-8b, the same 8B line,
    # prints 8,028,033,024 in code-index 12439498600: corroboration only, not asserted as this checkpoint's)
    s = spec("CohereForAI/aya-23-8B")
    assert count_params(s).total == pytest.approx(8e9, rel=0.01)
    assert s.tied_embeddings and s.num_kv_heads == 8 and s.num_heads == 32 and s.parallel_attn_mlp
    assert s.norm_kind == NormKind.LAYER and not s.qk_norm


def test_shapes_the_sources_state():
    baichuan = spec("baichuan-inc/Baichuan-13B-Chat")   # README: ALiBi, 4,096; 13B remote config: no position table
    assert baichuan.position == Position.ALIBI and not baichuan.tied_embeddings
    assert baichuan.max_position_embeddings == 4096 and baichuan.vocab_size == 64000
    redpajama = spec("togethercomputer/RedPajama-INCITE-7B-Base")   # config.json: sequential residual, full rotary
    assert not redpajama.parallel_attn_mlp and redpajama.name != spec("EleutherAI/pythia-6.9b").name
    zephyr = spec("stabilityai/stablelm-zephyr-3b")   # LayerNorm with bias, no q/k/v bias, untied
    assert zephyr.norm_kind == NormKind.LAYER and not zephyr.qkv_bias and not zephyr.tied_embeddings
    open_llama = spec("openlm-research/open_llama_7b")
    assert open_llama.max_position_embeddings == 2048 and not open_llama.tied_embeddings
