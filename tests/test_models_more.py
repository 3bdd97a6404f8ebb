"""More benchmarked HF ids in the model catalog: InternLM2, Qwen1.5 14B/32B/72B, Qwen2-57B-A14B, SOLAR,
Yi-1.5 and DeepSeek-Coder-33B (tools/build_model_catalog.py, HF_CONFIG_MODELS). Every count below is the
published figure its source prints (the row's `source` and `verification` name it), not trainplan's output."""

from __future__ import annotations

import pytest

from model_counts import check_exact, check_rounded, check_same_shapes, check_transformers_count, spec
from trainplan import catalog
from trainplan.model.params import active_params, count_params


# Counts of the released checkpoints (safetensors metadata or a tensor count of the weights).
EXACT = {
    "internlm2-7b": 7_737_708_544,         # code-index 66695423343: InternLM2 checkpoint, 227 tensors
    "qwen1.5-14b": 14_167_290_880,         # code-index 65866616769: Qwen/Qwen1.5-14B card (safetensors)
    "qwen1.5-32b": 32_512_218_112,         # code-index 65739163886: Qwen/Qwen1.5-32B card (safetensors)
    "qwen2-57b-a14b": 57_408_658_944,      # code-index 66131465366: Qwen/Qwen2-57B-A14B card (safetensors)
    "solar-10.7b": 10_731_524_096,         # code-index 14269230532: SOLAR-10.7B-Instruct-v1.0 model_size
    "yi-1.5-9b": 8_829_407_232,            # code-index 66093221914: Yi-1.5-9B-Chat card (safetensors)
    "yi-1.5-34b": 34_388_917_248,          # code-index 65729927742: 01-ai/Yi-1.5-34B card (safetensors)
    "deepseek-coder-33b": 33_342_991_360,  # code-index 57751031036: deepseek-coder-33b-instruct snapshot
}


@pytest.mark.parametrize("name, total", sorted(EXACT.items()))
def test_exact_published_totals(name, total):
    check_exact(name, total)


# No checkpoint count of these uploads was found; what the sources do print:
SAME_SHAPES = {
    # code-index 12439498600: internlm/internlm2_5-20b-chat, 19,861,149,696 (the InternLM2 20B shapes)
    "internlm2-20b": 19_861_149_696,
    # code-index 69789550621: a tensor-dimension count from Qwen1.5-72B's original config.json
    "qwen1.5-72b": 72_287_920_128,
}


@pytest.mark.parametrize("name, total", sorted(SAME_SHAPES.items()))
def test_counts_printed_for_the_same_shapes(name, total):
    check_same_shapes(name, total)


# Rounded sizes in the model names (and tables that print them).
ROUNDED = {
    "internlm2-20b": (20e9, 0.01),      # InternLM2-20B
    "qwen1.5-14b": (14e9, 0.02),
    "qwen1.5-32b": (32e9, 0.02),
    "qwen1.5-72b": (72e9, 0.01),
    "qwen2-57b-a14b": (57e9, 0.01),
    "solar-10.7b": (10.7e9, 0.005),
    "yi-1.5-9b": (8.8e9, 0.005),        # code-index 54614452327: Yi-1.5-9B-Chat, 8.8B
    "yi-1.5-34b": (34e9, 0.02),
    "deepseek-coder-33b": (33e9, 0.02),
}


@pytest.mark.parametrize("name, published", sorted(ROUNDED.items()))
def test_rounded_published_totals(name, published):
    check_rounded(name, published)


def test_qwen2_57b_a14b_activates_14b():
    # Qwen2-57B-A14B: 14B activated per token (8 of 64 experts + the shared expert)
    assert active_params(spec("qwen2-57b-a14b")) == pytest.approx(14e9, rel=0.02)


ALIASES = {
    "internlm2-7b": ("internlm/internlm2-7b", "internlm/internlm2-chat-7b"),
    "internlm2-20b": ("internlm/internlm2-20b", "internlm/internlm2-chat-20b"),
    "qwen1.5-14b": ("Qwen/Qwen1.5-14B", "Qwen/Qwen1.5-14B-Chat"),
    "qwen1.5-32b": ("Qwen/Qwen1.5-32B", "Qwen/Qwen1.5-32B-Chat"),
    "qwen1.5-72b": ("Qwen/Qwen1.5-72B", "Qwen/Qwen1.5-72B-Chat"),
    "qwen2-57b-a14b": ("Qwen/Qwen2-57B-A14B", "Qwen/Qwen2-57B-A14B-Instruct"),
    "solar-10.7b": ("upstage/SOLAR-10.7B-v1.0", "upstage/SOLAR-10.7B-Instruct-v1.0"),
    "yi-1.5-9b": ("01-ai/Yi-1.5-9B", "01-ai/Yi-1.5-9B-Chat"),
    "yi-1.5-34b": ("01-ai/Yi-1.5-34B", "01-ai/Yi-1.5-34B-Chat"),
    "deepseek-coder-33b": ("deepseek-ai/deepseek-coder-33b-base", "deepseek-ai/deepseek-coder-33b-instruct"),
}


@pytest.mark.parametrize("name, ids", sorted(ALIASES.items()))
def test_hf_id_and_alias_resolve(name, ids):
    hf_id, alias = ids
    s = spec(name)
    assert s.hf_id == hf_id and s.source and s.hf_config_json
    assert spec(hf_id).name == name
    assert spec(alias).name == name
    assert spec(alias.lower()).name == name


def test_model_types_and_shapes():
    assert spec("internlm2-7b").model_type == "internlm2" and not spec("internlm2-20b").qkv_bias
    assert spec("qwen2-57b-a14b").model_type == "qwen2_moe" and spec("qwen2-57b-a14b").moe is not None
    # Qwen1.5: 32B is GQA (8 kv heads), 14B and 72B are MHA; all untied with QKV bias
    assert [spec(f"qwen1.5-{s}").num_kv_heads for s in ("14b", "32b", "72b")] == [40, 8, 64]
    assert all(spec(f"qwen1.5-{s}").qkv_bias and not spec(f"qwen1.5-{s}").tied_embeddings
               for s in ("14b", "32b", "72b"))
    assert spec("yi-1.5-9b").num_kv_heads == 4 and spec("deepseek-coder-33b").num_layers == 62


def test_models_that_were_already_there():
    """The ids asked for that the catalog already had (rows or aliases) still resolve as before."""
    assert spec("internlm/internlm2_5-7b").name == "internlm2.5-7b"
    assert spec("Qwen/Qwen1.5-7B").name == "qwen1.5-7b"
    assert spec("Qwen/Qwen1.5-MoE-A2.7B").name == "qwen1.5-moe-a2.7b"
    assert spec("deepseek-ai/deepseek-coder-6.7b-base").name == "deepseek-coder-6.7b"
    # vicuna v1.5: aliases of the Llama-2 rows; keras-hub vicuna_1.5_7b_en counts 6,738,415,616
    assert spec("lmsys/vicuna-7b-v1.5").name == "llama-2-7b"
    assert count_params(spec("lmsys/vicuna-7b-v1.5")).total == 6_738_415_616
    assert spec("lmsys/vicuna-13b-v1.5").name == "llama-2-13b"


# --- against transformers: the rows' config.json on the meta device (extra 'trace') ----------------------

# model_types transformers ships (internlm2 is remote code on the Hub)
NATIVE = ["qwen1.5-14b", "qwen1.5-32b", "qwen1.5-72b", "qwen2-57b-a14b", "solar-10.7b", "yi-1.5-9b",
          "yi-1.5-34b", "deepseek-coder-33b"]


@pytest.mark.trace
@pytest.mark.parametrize("name", NATIVE)
def test_catalog_count_equals_transformers(name):
    check_transformers_count(name)
