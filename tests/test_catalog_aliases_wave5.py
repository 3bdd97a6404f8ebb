"""Wave 5 of the catalog aliases: Hugging Face ids of fine-tuning runs that are checkpoints of a catalog row's exact
shapes (the Wave 5 blocks of ALIASES / ALIAS_NOTES in tools/build_model_catalog.py, which name each source). Every
shape below is the figure its source prints, not trainplan's output; a test fails if a shape, the tie flag or the
alias target is wrong.

Left out (see the Wave 5 comment in tools/build_model_catalog.py): allenai/Llama-3.1-Tulu-3-8B and
NousResearch/Hermes-3-Llama-3.1-8B (vocabulary 128256 not shown), NousResearch/Nous-Hermes-2-Mixtral-8x7B-DPO
(vocab 32002: not Mixtral-8x7B's 32000). The GPU alias "A6000 Ada" (tools/build_hw_catalog.py) names the RTX 6000 Ada;
the last test keeps the Ampere RTX A6000 and the RTX 6000 Ada apart."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from model_counts import spec
from trainplan import catalog
from trainplan.errors import UnknownNameError
from trainplan.model.params import count_params

# --- every alias of the wave resolves, to the row that holds its shapes -------------------------------------------

RESOLVES = {
    "HuggingFaceH4/zephyr-7b-beta": "mistral-7b-v0.1",
    "deepseek-ai/DeepSeek-Coder-V2-Lite-Base": "deepseek-v2-lite",
    "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct": "deepseek-v2-lite",
    "lmsys/vicuna-33b-v1.3": "llama-30b",
    "StarCoder-15B": "starcoder",
    "openchat/openchat_3.5": "openhermes-2.5-mistral-7b",
    "berkeley-nest/Starling-LM-7B-alpha": "openhermes-2.5-mistral-7b",
}


@pytest.mark.parametrize("alias, name", sorted(RESOLVES.items()))
def test_the_wave_aliases_resolve(alias, name):
    assert spec(alias).name == name
    assert spec(alias.lower()).name == name


def test_each_alias_is_listed_on_its_row_with_its_source():
    entries = tomllib.loads(Path(catalog.DATA_DIR, "models.toml").read_text(encoding="utf-8"))["model"]
    by_name = {e["name"]: e for e in entries}
    for alias, name in RESOLVES.items():
        row = by_name[name]
        assert alias in row["aliases"]
        assert alias in row["verification"]   # the ALIAS_NOTES entry that backs it


# --- the shapes the cited sources print ---------------------------------------------------------------------------

def test_zephyr_7b_beta_is_mistral_7b():
    # leliuga manifests zephyr-7B-beta and Mistral-7B-v0.1: 32 layers, 4096, 32 heads, 8 kv heads, 14336, vocab 32000;
    # code-index 14269230532: HuggingFaceH4/zephyr-7b-beta model_size 7,241,732,096
    s = spec("HuggingFaceH4/zephyr-7b-beta")
    assert (s.num_layers, s.hidden_size, s.num_heads, s.num_kv_heads) == (32, 4096, 32, 8)
    assert (s.intermediate_size, s.vocab_size, s.tied_embeddings) == (14336, 32000, False)
    assert count_params(s).total == 7_241_732_096


@pytest.mark.parametrize("alias", ["deepseek-ai/DeepSeek-Coder-V2-Lite-Base",
                                   "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct"])
def test_deepseek_coder_v2_lite_is_deepseek_v2_lite(alias):
    # code-index 69557407533 (Coder-V2-Lite-Base's config.json): 27 layers, layer 0 dense 10944, 2048, 16 heads,
    # kv_lora_rank 512, q_lora_rank null, qk 128 + 64, v 128, 64 routed top-6 + 2 shared of 1408, vocab 102,400,
    # 15,706,484,224 parameters; code-index 57751031036: the Instruct snapshot holds 15,706,484,224
    s = spec(alias)
    assert (s.num_layers, s.hidden_size, s.num_heads, s.intermediate_size) == (27, 2048, 16, 10944)
    assert (s.vocab_size, s.tied_embeddings) == (102400, False)
    assert (s.moe.num_experts, s.moe.top_k, s.moe.expert_intermediate_size) == (64, 6, 1408)
    assert (s.moe.num_shared_experts, s.moe.first_dense_layers) == (2, 1)
    assert (s.mla.q_lora_rank, s.mla.kv_lora_rank) == (None, 512)
    assert (s.mla.qk_nope_head_dim, s.mla.qk_rope_head_dim, s.mla.v_head_dim) == (128, 64, 128)
    assert count_params(s).total == 15_706_484_224


def test_vicuna_33b_is_llama_30b():
    # gpu_poor [lmsys/vicuna-33b-v1.3] and litgpt [vicuna-33b-v1.3]: 60 layers, 6656, 52 heads (MHA), 17920,
    # vocab 32000, 2048 context; the LLaMA-30B count (pyllama printout) is the row's
    s = spec("lmsys/vicuna-33b-v1.3")
    assert (s.num_layers, s.hidden_size, s.num_heads, s.num_kv_heads) == (60, 6656, 52, 52)
    assert (s.intermediate_size, s.vocab_size, s.tied_embeddings) == (17920, 32000, False)
    assert s.max_position_embeddings == 2048
    assert count_params(s).total == 32_528_943_616


def test_starcoder_15b_is_starcoder():
    # the row's count: code-index 69542685706 prints 15,517,456,384 for StarCoder-15B fine-tunes
    s = spec("StarCoder-15B")
    assert (s.num_layers, s.hidden_size, s.num_heads, s.num_kv_heads) == (40, 6144, 48, 1)
    assert count_params(s).total == 15_517_456_384
    assert spec("starcoder2-15b").name != s.name


@pytest.mark.parametrize("alias", ["openchat/openchat_3.5", "berkeley-nest/Starling-LM-7B-alpha"])
def test_openchat_and_starling_are_openhermes_shapes(alias):
    # leliuga manifests openchat_3.5 and Starling-LM-7B-alpha: 32 layers, 4096, 32 heads, 8 kv heads, 14336,
    # vocab 32002; code-index 2567470270: Starling-LM-7B-alpha 7,241,748,480
    s = spec(alias)
    assert (s.num_layers, s.hidden_size, s.num_heads, s.num_kv_heads) == (32, 4096, 32, 8)
    assert (s.intermediate_size, s.vocab_size, s.tied_embeddings) == (14336, 32002, False)
    assert count_params(s).total == 7_241_748_480
    assert s.name != spec("mistralai/Mistral-7B-v0.1").name   # two more vocabulary rows than Mistral-7B


# --- names left out are not read as the row they are not ----------------------------------------------------------

@pytest.mark.parametrize("name, not_row", [
    ("allenai/Llama-3.1-Tulu-3-8B", "llama-3.1-8b"),
    ("NousResearch/Hermes-3-Llama-3.1-8B", "llama-3.1-8b"),
    ("NousResearch/Nous-Hermes-2-Mixtral-8x7B-DPO", "mixtral-8x7b"),
])
def test_names_left_out_are_not_aliases_of_the_base_row(name, not_row):
    # another wave may add a row of their own shapes; none of them is the base row
    try:
        assert spec(name).name != not_row
    except UnknownNameError:
        pass


# --- GPUs: the Ampere RTX A6000 and the RTX 6000 Ada stay apart ---------------------------------------------------

@pytest.mark.parametrize("name, gpu_id", [
    ("RTX A6000", "rtx-a6000"), ("NVIDIA RTX A6000", "rtx-a6000"), ("a6000", "rtx-a6000"),
    ("RTX 6000 Ada", "rtx6000-ada"), ("NVIDIA RTX 6000 Ada Generation", "rtx6000-ada"),
    ("A6000 Ada", "rtx6000-ada"), ("RTX A6000 Ada", "rtx6000-ada"),
])
def test_rtx_a6000_and_rtx_6000_ada_stay_apart(name, gpu_id):
    assert catalog.resolve_gpu(name).id == gpu_id
