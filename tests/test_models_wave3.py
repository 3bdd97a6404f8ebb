"""Wave 3 of the model catalog: checkpoints that published fine-tuning runs name, for model_types trainplan already
reads (rows in tools/model_rows/more_models.py, aliases in tools/build_model_catalog.py). Every count below is the
published figure its source prints (the row's or alias note's `source` / `verification` name it), not trainplan's
output; a test fails if a shape, the tie flag or the alias target is wrong."""

from __future__ import annotations

import pytest

from model_counts import check_exact, check_rounded, spec
from trainplan import catalog
from trainplan.enums import Position
from trainplan.model.params import active_params, count_params


# --- new rows: exact published counts ------------------------------------------------------------------------------

EXACT = {
    # code-index 55173016543 (Qwen1.5-1.8B-Chat) and 65835899932 (model card, safetensors metadata)
    "Qwen/Qwen1.5-1.8B": 1_836_828_672,
    # code-index 58413280785: Hub API of Qwen/Qwen1.5-4B, safetensors 3,950,369,280 BF16
    "Qwen/Qwen1.5-4B": 3_950_369_280,
    # code-index 69624316134: GGUF of Qwen1.5-110B, 111,209,914,368 parameters
    "Qwen/Qwen1.5-110B": 111_209_914_368,
    # code-index 68846515806: 01-ai/Yi-9B total_parameters (safetensors) 8,829,407,232
    "01-ai/Yi-9B": 8_829_407_232,
    # code-index 70849976620: the Hub's safetensors count of (unsloth) Mistral-Small-24B-Instruct-2501
    "mistralai/Mistral-Small-24B-Base-2501": 23_572_403_200,
    # code-index 65929538350: magnum-v4-22b, a full fine-tune of Mistral-Small-Instruct-2409 (safetensors metadata)
    "mistralai/Mistral-Small-Instruct-2409": 22_247_282_688,
    # code-index 71242279836 / 68577184092: microsoft/Phi-4-mini-instruct, 3,836,021,760
    "microsoft/Phi-4-mini-instruct": 3_836_021_760,
    # code-index 5812671115 (calflops README table): baichuan-7B 7,000,559,616
    "baichuan-inc/Baichuan-7B": 7_000_559_616,
    # code-index 61133050907: DeepSeek-R1-Distill-Qwen-1.5B@ad9f0ae0864d, 1,777,088,000
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": 1_777_088_000,
    # code-index 56703136855: 'the fixed checkpoint's exact parameter count is 235,741,434,880'
    "deepseek-ai/DeepSeek-V2": 235_741_434_880,
}


@pytest.mark.parametrize("name, total", sorted(EXACT.items()))
def test_exact_published_totals(name, total):
    check_exact(name, total)


# Counts published for a stored tied head: the checkpoint keeps lm_head.weight although the config ties it, so the
# published total is the unique count plus one vocab x hidden matrix.
STORED_TIED_HEAD = {
    # code-index 14269230532: Qwen/Qwen1.5-0.5B model_size 619,570,176 (config: tie_word_embeddings true)
    "Qwen/Qwen1.5-0.5B": 619_570_176,
    # code-index 71571056092: Hub API safetensors.total of tiiuae/falcon-180B (FalconConfig ties by default)
    "tiiuae/falcon-180B": 179_522_565_120,
}


@pytest.mark.parametrize("name, stored", sorted(STORED_TIED_HEAD.items()))
def test_counts_with_the_stored_tied_head(name, stored):
    s = spec(name)
    assert s.tied_embeddings
    assert count_params(s).total + s.vocab_size * s.hidden_size == stored
    assert s.measured_params is None


# Rounded sizes in the names and cards (no exact count of these uploads was found).
ROUNDED = {
    "internlm/internlm-7b": (7e9, 0.05),             # InternLM-7B (xorbits: 7 billion)
    "internlm/internlm-20b": (20e9, 0.01),           # InternLM-20B (xorbits: 20 billion)
    "mistralai/Mistral-Large-Instruct-2407": (123e9, 0.005),   # code-index 24610818072: 123 B
    "baichuan-inc/Baichuan2-13B-Base": (13e9, 0.07),         # Baichuan2-13B (13.9B by this count)
    "moonshotai/Moonlight-16B-A3B": (16e9, 0.01),    # 16B total
}


@pytest.mark.parametrize("name, published", sorted(ROUNDED.items()))
def test_rounded_published_totals(name, published):
    check_rounded(name, published)


def test_counts_printed_for_the_same_shapes():
    # code-index 68881844135: the Mistral-Large-2411 config gives 122,610,069,504 (litgpt: 2407 has the same fields)
    assert count_params(spec("mistralai/Mistral-Large-Instruct-2407")).total == 122_610_069_504


def test_active_parameters_as_published():
    # DeepSeek-V2: 21B activated (code-index 57968981583 counts 21,375,800,320 with embedding, head and routers)
    assert active_params(spec("deepseek-ai/DeepSeek-V2")) == 21_375_800_320
    # Moonlight-16B-A3B: 3B activated
    assert active_params(spec("moonshotai/Moonlight-16B-A3B")) == pytest.approx(3e9, rel=0.05)


def test_shapes_the_sources_state():
    s = spec("baichuan-inc/Baichuan2-13B-Chat")   # 13B remote code: ALiBi, no position table; untied NormHead
    assert s.position == Position.ALIBI and not s.tied_embeddings and s.max_position_embeddings == 4096
    assert spec("baichuan-inc/Baichuan-7B").position != Position.ALIBI
    assert spec("internlm/internlm-7b").qkv_bias and not spec("internlm/internlm-20b").qkv_bias
    assert not spec("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B").tied_embeddings
    assert spec("Qwen/Qwen1.5-110B").num_kv_heads == 8 and spec("Qwen/Qwen1.5-4B").num_kv_heads == 20
    assert spec("microsoft/Phi-4-mini-instruct").tied_embeddings


ROWS = {
    "qwen1.5-0.5b": ("Qwen/Qwen1.5-0.5B", "Qwen/Qwen1.5-0.5B-Chat"),
    "qwen1.5-1.8b": ("Qwen/Qwen1.5-1.8B", "Qwen/Qwen1.5-1.8B-Chat"),
    "qwen1.5-4b": ("Qwen/Qwen1.5-4B", "Qwen/Qwen1.5-4B-Chat"),
    "qwen1.5-110b": ("Qwen/Qwen1.5-110B", "Qwen/Qwen1.5-110B-Chat"),
    "internlm-7b": ("internlm/internlm-7b", "internlm/internlm-chat-7b"),
    "internlm-20b": ("internlm/internlm-20b", "internlm/internlm-chat-20b"),
    "mistral-small-24b-2501": ("mistralai/Mistral-Small-24B-Base-2501", "mistralai/Mistral-Small-24B-Instruct-2501"),
    "falcon-180b": ("tiiuae/falcon-180B", "tiiuae/falcon-180B-chat"),
    "baichuan2-13b": ("baichuan-inc/Baichuan2-13B-Base", "baichuan-inc/Baichuan2-13B-Chat"),
    "moonlight-16b-a3b": ("moonshotai/Moonlight-16B-A3B", "moonshotai/Moonlight-16B-A3B-Instruct"),
    "deepseek-v2": ("deepseek-ai/DeepSeek-V2", "deepseek-ai/DeepSeek-V2-Chat"),
}


@pytest.mark.parametrize("name, ids", sorted(ROWS.items()))
def test_hf_id_and_alias_resolve(name, ids):
    hf_id, alias = ids
    s = spec(name)
    assert s.hf_id == hf_id and s.source and s.hf_config_json
    assert spec(hf_id).name == name
    assert spec(alias).name == name


# --- aliases of existing entries: the entry whose published count the alias's own published count equals ------------

ALIASES = {
    # code-index 20755046153: DeepSeek-R1-Distill-Qwen-7B, untied, 7,615,616,512
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": ("qwen2.5-math-7b", 7_615_616_512),
    # code-index 66729435508 (Fireworks catalog) and 147148655 (ollama deepseek-r1:14b): 14,770,033,664
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B": ("qwen2.5-14b", 14_770_033_664),
    # code-index 66729435508: DeepSeek R1 Distill Qwen 32B, 32,763,876,352
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": ("qwen2.5-32b", 32_763_876_352),
    # code-index 66729435508: Llama 3.1 8B / R1 Distill Llama 8B 8,030,261,248; R1 Distill Llama 70B 70,553,706,496
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": ("llama-3.1-8b", 8_030_261_248),
    "deepseek-ai/DeepSeek-R1-Distill-Llama-70B": ("llama-3.1-70b", 70_553_706_496),
    # code-index 66729435508: DeepSeek R1, V3 and V3 03-24 all 671,026,419,200
    "deepseek-ai/DeepSeek-R1": ("deepseek-v3", 671_026_419_200),
    "deepseek-ai/DeepSeek-V3-0324": ("deepseek-v3", 671_026_419_200),
    # keras-hub qwen3_moe_presets.py [qwen3_coder_instruct_30b_a3b_en] and the Fireworks catalog: 30,532,122,624
    "Qwen/Qwen3-Coder-30B-A3B-Instruct": ("qwen3-30b-a3b", 30_532_122_624),
    "Qwen/Qwen3-30B-A3B-Thinking-2507": ("qwen3-30b-a3b", 30_532_122_624),
    # code-index 68763826894: Qwen3-4B-Instruct-2507, 4,022,468,096
    "Qwen/Qwen3-4B-Instruct-2507": ("qwen3-4b", 4_022_468_096),
    # code-index 66729435508: Qwen 3 235B A22B Thinking 2507, 235,093,634,560
    "Qwen/Qwen3-235B-A22B-Thinking-2507": ("qwen3-235b-a22b", 235_093_634_560),
    # keras-hub qwen_presets.py: qwen2.5_coder_0.5b 494,032,768, qwen2.5_coder_3b 3,085,938,688
    "Qwen/Qwen2.5-Coder-0.5B": ("qwen2.5-0.5b", 494_032_768),
    "Qwen/Qwen2.5-Coder-3B-Instruct": ("qwen2.5-3b", 3_085_938_688),
    # code-index 14269230532: unsloth/Qwen2.5-Coder-1.5B-Instruct, 1,543,714,304
    "Qwen/Qwen2.5-Coder-1.5B-Instruct": ("qwen2.5-1.5b", 1_543_714_304),
    # code-index 172820433: Qwen2.5-Coder-14B-Instruct, all params 14,770,033,664
    "Qwen/Qwen2.5-Coder-14B-Instruct": ("qwen2.5-14b", 14_770_033_664),
    # keras-hub gemma_presets.py: code_gemma_7b_en 8,537,680,896
    "google/codegemma-7b": ("gemma-7b", 8_537_680_896),
    # code-index 66729435508: GLM-4.5 and GLM-4.6 both 352,797,829,024
    "zai-org/GLM-4.6": ("glm-4.5", 352_797_829_024),
    # code-index 12439498600: internlm/internlm2_5-20b-chat safetensors metadata, 19,861,149,696
    "internlm/internlm2_5-20b-chat": ("internlm2-20b", 19_861_149_696),
    # code-index 5812671115 (calflops) and 17073814855: chatglm2-6b 6,243,584,000
    "THUDM/chatglm2-6b": ("chatglm3-6b", 6_243_584_000),
    # code-index 14269230532: the Hub's safetensors totals of unsloth/SmolLM-135M and unsloth/SmolLM-360M
    "HuggingFaceTB/SmolLM-135M": ("smollm2-135m", 134_515_008),
    "HuggingFaceTB/SmolLM-360M-Instruct": ("smollm2-360m", 361_821_120),
    # code-index 68688959620: SmolLM2-1.7B-Instruct 1,711,376,384 (the SmolLM-1.7B shapes, other context and rope)
    "HuggingFaceTB/SmolLM-1.7B": ("smollm2-1.7b", 1_711_376_384),
    # code-index 71142266638: microsoft/Phi-3.5-mini-instruct 3,821,079,552
    "microsoft/Phi-3.5-mini-instruct": ("phi-3-mini-128k", 3_821_079_552),
}


@pytest.mark.parametrize("alias, expected", sorted(ALIASES.items()))
def test_aliases_resolve_to_the_entry_with_their_published_count(alias, expected):
    name, total = expected
    s = spec(alias)
    assert s.name == name
    assert count_params(s).total == total


def test_aliases_without_an_exact_count_of_their_own():
    # DeepSeek-V3.1 card: 'The model structure of DeepSeek-V3.1 is the same as DeepSeek-V3'; R1-0528: 671B / 37B
    for alias in ("deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3.1-Base", "deepseek-ai/DeepSeek-R1-0528"):
        assert spec(alias).name == "deepseek-v3"
        assert count_params(spec(alias)).total == pytest.approx(671e9, rel=0.001)
    assert spec("Qwen/Qwen3-4B-Thinking-2507").name == "qwen3-4b"
    assert spec("internlm/internlm2_5-20b").name == "internlm2-20b"
    assert spec("google/codegemma-7b-it").name == "gemma-7b"
    for size in ("0.5B", "1.5B", "3B", "14B"):
        assert spec(f"Qwen/Qwen2.5-Coder-{size}").name == f"qwen2.5-{size.lower()}"


def test_distill_qwen_1_5b_is_not_the_tied_qwen2_5_1_5b():
    # code-index 61133050907: the distill (1,777,088,000) and its base Qwen2.5-Math-1.5B (1,543,714,304) differ by
    # exactly one untied 151936 x 1536 head
    distill, base = spec("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B"), spec("qwen2.5-1.5b")
    assert distill.name != base.name
    assert count_params(distill).total - count_params(base).total == 151936 * 1536

