"""Build src/trainplan/catalog/data/models.toml from the verified architecture reference and the
public config.json files of the models added after it (HF_CONFIG_MODELS).

    python tools/build_model_catalog.py [--reference PATH] [--out PATH]

Reads the reference JSON (default ../shared/reference/model_configs.json beside the repository),
keeps every decoder-only model whose main numbers are verified, and writes one [[model]] row each:
its catalog id, Hugging Face id, aliases, condensed sources, verification note, counts for the
tests, and a [model.config] table that is a config.json for that model_type (real HF key names).
The runtime reads only the generated TOML, never the reference.

TOML has no null: a config key whose value must be JSON null (DeepSeek-V2-Lite q_lora_rank) is
listed in the row's `config_null_keys` and put back as null by whoever reads the row.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REFERENCE = ROOT.parent / "shared" / "reference" / "model_configs.json"
DEFAULT_OUT = ROOT / "src" / "trainplan" / "catalog" / "data" / "models.toml"

# Entries left out, with the reason (printed when the catalog is built).
SKIP = {
    "InternLM2.5-20B": ("no trustworthy config copy: every main field is null; internlm/internlm2_5-20b(-chat) are "
                        "aliases of the internlm2-20b row (its count = the chat upload's safetensors count)"),
    "Baichuan2-13B": ("position scheme, tie flag, context and norm not verified here: the baichuan2-13b row of "
                      "tools/model_rows/more_models.py has them from the 13B remote code (ALiBi, untied NormHead)"),
    "OPT-30B": "vocab_size and max_position_embeddings not verified for 30B",
}

# Catalog ids where lower-casing the display name is not what users type.
IDS = {
    "GPT-2 (124M)": "gpt2", "GPT-2 Medium (355M)": "gpt2-medium",
    "GPT-2 Large (774M)": "gpt2-large", "GPT-2 XL (1.5B)": "gpt2-xl",
    "Mixtral-8x7B-v0.1": "mixtral-8x7b", "Mixtral-8x22B-v0.1": "mixtral-8x22b",
}

# Variants with the same architecture (HF ids of instruct/chat/base uploads) and common spellings.
ALIASES: dict[str, list[str]] = {
    "Llama-2-7B": ["meta-llama/Llama-2-7b-chat-hf", "llama2-7b"],
    "Llama-2-13B": ["meta-llama/Llama-2-13b-chat-hf", "llama2-13b"],
    "Llama-2-70B": ["meta-llama/Llama-2-70b-chat-hf", "llama2-70b"],
    "Llama-3-8B": ["meta-llama/Meta-Llama-3-8B-Instruct", "llama3-8b"],
    "Llama-3-70B": ["meta-llama/Meta-Llama-3-70B-Instruct", "llama3-70b"],
    "Llama-3.1-8B": ["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B",
                     "meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1-8b"],
    "Llama-3.1-70B": ["meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B",
                      "meta-llama/Meta-Llama-3.1-70B-Instruct", "llama3.1-70b"],
    "Llama-3.1-405B": ["meta-llama/Llama-3.1-405B-Instruct", "meta-llama/Meta-Llama-3.1-405B",
                       "llama3.1-405b"],
    "Llama-3.2-1B": ["meta-llama/Llama-3.2-1B-Instruct", "llama3.2-1b"],
    "Llama-3.2-3B": ["meta-llama/Llama-3.2-3B-Instruct", "llama3.2-3b"],
    "Mistral-7B-v0.1": ["mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b"],
    "Mixtral-8x7B-v0.1": ["mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b-v0.1"],
    "Mixtral-8x22B-v0.1": ["mixtral-8x22b-v0.1"],   # Instruct has vocab 32768: not an alias
    "Gemma-2-2B": ["google/gemma-2-2b-it"],
    "Gemma-2-9B": ["google/gemma-2-9b-it"],
    "Gemma-2-27B": ["google/gemma-2-27b-it"],
    "Gemma-3-1B": ["google/gemma-3-1b-pt"],
    "Gemma-3-4B": ["google/gemma-3-4b-it"],
    "Gemma-3-12B": ["google/gemma-3-12b-it"],
    "Gemma-3-27B": ["google/gemma-3-27b-it"],
    "Phi-3-mini-4k": ["phi-3-mini", "phi3-mini"],
    "Phi-3-medium-4k": ["phi-3-medium", "phi3-medium"],
    "DeepSeek-V2-Lite": ["deepseek-ai/DeepSeek-V2-Lite-Chat"],
    "DeepSeek-V3": ["deepseek-ai/DeepSeek-V3-Base", "deepseek-ai/DeepSeek-R1", "deepseek-r1"],
    "ChatGLM3-6B": ["chatglm3"],
    "GLM-4-9B-Chat": ["THUDM/glm-4-9b", "glm-4-9b"],
    "Baichuan2-7B": ["baichuan-inc/Baichuan2-7B-Chat"],
    "Yi-6B": ["01-ai/Yi-6B-Chat"],
    "Yi-34B": ["01-ai/Yi-34B-Chat"],
    "InternLM2.5-7B": ["internlm/internlm2_5-7b-chat", "internlm2_5-7b"],
    "GPT-2 (124M)": ["gpt2-small"],
    "BLOOM-7B1": ["bigscience/bloomz-7b1"],
    "BLOOM-176B": ["bigscience/bloomz", "bloom"],
    "Falcon-7B": ["tiiuae/falcon-7b-instruct"],
    "Falcon-40B": ["tiiuae/falcon-40b-instruct"],
}
for _size in ("70m", "160m", "410m", "1b", "1.4b", "2.8b", "6.9b", "12b"):
    ALIASES[f"Pythia-{_size.upper()}"] = [f"EleutherAI/pythia-{_size}-deduped"]
for _qwen in ("0.5B", "1.5B", "3B", "7B", "14B", "32B", "72B"):
    ALIASES[f"Qwen2.5-{_qwen}"] = [f"Qwen/Qwen2.5-{_qwen}-Instruct"]
for _qwen in ("0.6B", "1.7B", "4B", "8B", "14B", "32B", "30B-A3B"):
    ALIASES[f"Qwen3-{_qwen}"] = [f"Qwen/Qwen3-{_qwen}-Base"]
ALIASES["Qwen3-235B-A22B"] = ["Qwen/Qwen3-235B-A22B-Instruct-2507"]

# Aliases added after the reference (issue: benchmarked HF ids). Each is backed by ALIAS_NOTES below: the sources
# that show every parameter- and memory-relevant shape equal to the row's.
ALIASES["Llama-2-7B"].append("lmsys/vicuna-7b-v1.5")
ALIASES["Llama-2-13B"].append("lmsys/vicuna-13b-v1.5")
ALIASES["Llama-3.1-8B"].append("deepseek-ai/DeepSeek-R1-Distill-Llama-8B")
ALIASES["Llama-3.1-70B"] += ["meta-llama/Llama-3.3-70B-Instruct", "llama3.3-70b",
                             "deepseek-ai/DeepSeek-R1-Distill-Llama-70B"]
ALIASES["Qwen2.5-0.5B"] += ["Qwen/Qwen2-0.5B", "Qwen/Qwen2-0.5B-Instruct"]
ALIASES["Qwen2.5-1.5B"] += ["Qwen/Qwen2-1.5B", "Qwen/Qwen2-1.5B-Instruct"]
ALIASES["Qwen2.5-7B"] += ["Qwen/Qwen2.5-Coder-7B", "Qwen/Qwen2.5-Coder-7B-Instruct"]
ALIASES["Qwen2.5-32B"] += ["Qwen/Qwen2.5-Coder-32B", "Qwen/Qwen2.5-Coder-32B-Instruct"]
ALIASES["Qwen3-30B-A3B"].append("Qwen/Qwen3-30B-A3B-Instruct-2507")
ALIASES["Qwen2.5-32B"].append("Qwen/QwQ-32B")
ALIASES["Llama-3.1-70B"].append("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF")

# Wave 3 (checkpoints that published fine-tuning runs name); backed by ALIAS_NOTES like the block above.
for _qwen in ("0.5B", "1.5B", "3B", "14B"):
    ALIASES[f"Qwen2.5-{_qwen}"] += [f"Qwen/Qwen2.5-Coder-{_qwen}", f"Qwen/Qwen2.5-Coder-{_qwen}-Instruct"]
ALIASES["Qwen2.5-14B"].append("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
ALIASES["Qwen2.5-32B"].append("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B")
ALIASES["Qwen3-4B"] += ["Qwen/Qwen3-4B-Instruct-2507", "Qwen/Qwen3-4B-Thinking-2507"]
ALIASES["Qwen3-30B-A3B"] += ["Qwen/Qwen3-30B-A3B-Thinking-2507", "Qwen/Qwen3-Coder-30B-A3B-Instruct"]
ALIASES["Qwen3-235B-A22B"].append("Qwen/Qwen3-235B-A22B-Thinking-2507")
ALIASES["DeepSeek-V3"] += ["deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-R1-0528", "deepseek-ai/DeepSeek-V3.1",
                           "deepseek-ai/DeepSeek-V3.1-Base"]
ALIASES["ChatGLM3-6B"].append("THUDM/chatglm2-6b")

# Wave 4 (fine-tuning runs' HF ids; rows in tools/model_rows/wave4.py); backed by ALIAS_NOTES like the blocks above.
ALIASES["Llama-2-13B"] += ["WizardLMTeam/WizardLM-13B-V1.2", "WizardLM/WizardLM-13B-V1.2"]

# Wave 5 (fine-tuning runs' HF ids); backed by ALIAS_NOTES like the blocks above. A key that is the display name of a
# HF_CONFIG_MODELS or tools/model_rows row (LLaMA-30B, StarCoder, OpenHermes-2.5-Mistral-7B) reaches that row through
# hf_config_rows. Left out (not the same shapes, or not shown to be): allenai/Llama-3.1-Tulu-3-8B (vocab 128256 not
# shown; a third-party page prints 8,030,326,784 for its DPO stage, 8 vocabulary rows over Llama-3.1-8B's count),
# NousResearch/Hermes-3-Llama-3.1-8B (no copy of its config.json or exact count found),
# NousResearch/Nous-Hermes-2-Mixtral-8x7B-DPO (vocab 32002, no Mixtral row of that vocabulary).
ALIASES["Mistral-7B-v0.1"].append("HuggingFaceH4/zephyr-7b-beta")
ALIASES["DeepSeek-V2-Lite"] += ["deepseek-ai/DeepSeek-Coder-V2-Lite-Base",
                                "deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct"]
ALIASES.setdefault("LLaMA-30B", []).append("lmsys/vicuna-33b-v1.3")
ALIASES.setdefault("StarCoder", []).append("StarCoder-15B")
ALIASES.setdefault("OpenHermes-2.5-Mistral-7B", []).extend(["openchat/openchat_3.5",
                                                      "berkeley-nest/Starling-LM-7B-alpha"])

_MLC = "mlc-ai/mlc-llm, python/mlc_llm/model/model_preset.py@79d603f085f5"
_LITGPT = "Lightning-AI/litgpt, litgpt/config.py@26857050fe3f"
_TORCHTUNE = "pytorch/torchtune@bd2a0fc7c314"
_GPU_POOR = "RahulSChand/gpu_poor, public/all_configs.json@ad2fc0ef0e6c"
_LELIUGA = "leliuga/cohere-configurations@84408edf57f0"   # models/<name>/manifest.yaml: shapes of the GGUF conversion
_KERAS = "keras-team/keras-hub@71453d08f59e"
_FIREWORKS = "code-index file 66729435508 (Fireworks training catalog)"   # paramCount per base model
_HF_SIZES = "code-index file 14269230532 (model_size = the Hub's safetensors total)"

# What backs each alias above (appended to the row's verification).
ALIAS_NOTES: dict[str, list[str]] = {
    "Llama-2-7B": [(f"alias lmsys/vicuna-7b-v1.5: {_GPU_POOR} [lmsys/vicuna-7b-v1.5] and {_LELIUGA}, "
                   "models/vicuna-7B-v1.5/manifest.yaml give these shapes (32 layers, 4096, 32 heads, 32 kv heads, "
                   "11008, vocab 32000, context 4096); keras_hub/src/models/llama/llama_presets.py "
                   "[vicuna_1.5_7b_en: 6,738,415,616 = this count]")],
    "Llama-2-13B": [(f"alias lmsys/vicuna-13b-v1.5: {_GPU_POOR} [lmsys/vicuna-13b-v1.5] and {_LELIUGA}, "
                    "models/vicuna-13B-v1.5/manifest.yaml give these shapes (40 layers, 5120, 40 heads, 40 kv heads, "
                    "13824, vocab 32000, context 4096)")],
    "Llama-3.1-8B": [(f"alias deepseek-ai/DeepSeek-R1-Distill-Llama-8B: {_LITGPT} [R1-Distill-Llama-8B] equals its "
                     "[Llama-3.1-8B] entry field for field (vocab 128256, 131072 context, rope 500000 + llama3 "
                     "scaling factor 8)")],
    "Llama-3.1-70B": [(f"aliases meta-llama/Llama-3.3-70B-Instruct and deepseek-ai/DeepSeek-R1-Distill-Llama-70B: "
                      f"{_TORCHTUNE}, torchtune/models/llama3_3/_model_builders.py (llama3_3_70b = llama3_1_70b, "
                      f"'identical models apart from the checkpoints'); {_LITGPT} [Llama-3.3-70B-Instruct, "
                      "R1-Distill-Llama-70B] equal its [Llama-3.1-70B] entry field for field"),
                      (f"alias nvidia/Llama-3.1-Nemotron-70B-Instruct-HF: {_LITGPT} [Llama-3.1-Nemotron-70B-"
                       "Instruct-HF] equals its [Llama-3.1-70B{}] entry field for field (80 layers, 8192, 64 heads, "
                       "8 query groups, 28672, padded vocab 128256, rope 500000 + llama3 scaling factor 8)")],
    "Qwen2.5-0.5B": [(f"aliases Qwen/Qwen2-0.5B(-Instruct): same shapes and tie flag ({_TORCHTUNE}, "
                     f"torchtune/models/qwen2/_model_builders.py [qwen2_0_5b]; {_MLC} [qwen2_0_5b]; rwth-i6/"
                     "i6_experiments, users/juanola/experiments/e25_11_13_ctc/configurations/qwen2/qwen2_configs.py"
                     "@274eb95e3eb8 [Qwen2-0_5B: the base config.json]); Qwen2-0.5B's max_position_embeddings is "
                     "131072 (32768 here), which changes neither parameters nor memory")],
    "Qwen2.5-1.5B": [(f"aliases Qwen/Qwen2-1.5B(-Instruct): same shapes and tie flag ({_TORCHTUNE}, "
                     f"torchtune/models/qwen2/_model_builders.py [qwen2_1_5b]; {_MLC} [qwen2_1_5b: "
                     "max_position_embeddings 32768 for the Instruct upload, no effect on parameters or memory])")],
    "Qwen2.5-7B": [(f"aliases Qwen/Qwen2.5-Coder-7B(-Instruct): {_LITGPT} [Qwen2.5-Coder-7B] differs from "
                   "[Qwen2.5-7B] only in context (32768), which changes neither parameters nor memory; "
                   f"{_KERAS}, keras_hub/src/models/qwen/qwen_presets.py gives qwen2.5_coder_7b and qwen2.5_7b_en "
                   "the same count (6,993,420,288, itself not this row's count: corroborates equality only)")],
    "Qwen2.5-32B": [(f"aliases Qwen/Qwen2.5-Coder-32B(-Instruct): {_LITGPT} [Qwen2.5-Coder-32B] differs from "
                    "[Qwen2.5-32B] only in context (32768); keras_hub qwen_presets.py [qwen2.5_coder_32b: "
                    "32,763,876,352 = this count]"),
                    (f"alias Qwen/QwQ-32B: {_LITGPT} [QwQ-32B] equals its [Qwen2.5-32B{{}}] entry field for field "
                     "(64 layers, 5120, 40 heads, 8 query groups, 27648, padded vocab 152064, rope 1e6, 131072 "
                     "context)")],
    "Qwen3-30B-A3B": [(f"alias Qwen/Qwen3-30B-A3B-Instruct-2507: {_LITGPT} [Qwen3-30B-A3B-Instruct-2507] differs "
                      "from [Qwen3-30B-A3B] only in context (262144) and rope_theta (1e7), neither of which changes "
                      "parameters or memory")],
}

# Wave 3 aliases (block above ALIAS_NOTES); each note names what shows the shapes / count equal.
ALIAS_NOTES["Qwen2.5-0.5B"].append(
    f"aliases Qwen/Qwen2.5-Coder-0.5B(-Instruct): {_LITGPT} [Qwen2.5-Coder-0.5B] equals its [Qwen2.5-0.5B] entry "
    f"field for field; {_KERAS}, keras_hub/src/models/qwen/qwen_presets.py [qwen2.5_coder_0.5b, "
    "qwen2.5_coder_instruct_0.5b: 494,032,768 = this count, tied]")
ALIAS_NOTES["Qwen2.5-1.5B"].append(
    f"aliases Qwen/Qwen2.5-Coder-1.5B(-Instruct): {_LITGPT} [Qwen2.5-Coder-1.5B] differs from [Qwen2.5-1.5B] only "
    f"in context (32768); {_HF_SIZES} [unsloth/Qwen2.5-Coder-1.5B-Instruct: 1,543,714,304 = this count]; keras-hub's "
    "qwen2.5_coder_1.5b preset prints 1,543,434,240, 280,064 fewer, which no shape of this family gives (not used)")
ALIAS_NOTES["Qwen2.5-3B"] = [
    f"aliases Qwen/Qwen2.5-Coder-3B(-Instruct): {_LITGPT} [Qwen2.5-Coder-3B] equals its [Qwen2.5-3B] entry field "
    f"for field; {_KERAS}, keras_hub/src/models/qwen/qwen_presets.py [qwen2.5_coder_3b, qwen2.5_coder_instruct_3b: "
    "3,085,938,688 = this count, tied]"]
ALIAS_NOTES["Qwen2.5-14B"] = [
    f"aliases Qwen/Qwen2.5-Coder-14B(-Instruct): {_LITGPT} [Qwen2.5-Coder-14B] differs from [Qwen2.5-14B] only in "
    f"context (32768); code-index file 172820433 (Qwen2.5-Coder-14B-Instruct under PEFT: all params 14,770,033,664); "
    f"{_FIREWORKS} [Qwen 2.5-Coder 14B (Instruct): 14,770,033,664]",
    "alias deepseek-ai/DeepSeek-R1-Distill-Qwen-14B (distilled on Qwen2.5-14B): "
    f"{_FIREWORKS} [DeepSeek R1 Distill Qwen 14B: 14,770,033,664 = this count]; code-index file 147148655 (ollama "
    "deepseek-r1:14b: 14,770,033,664)"]
ALIAS_NOTES["Qwen2.5-32B"].append(
    "alias deepseek-ai/DeepSeek-R1-Distill-Qwen-32B (distilled on Qwen2.5-32B): "
    f"{_FIREWORKS} [DeepSeek R1 Distill Qwen 32B: 32,763,876,352 = this count]")
ALIAS_NOTES["Qwen3-4B"] = [
    f"aliases Qwen/Qwen3-4B-Instruct-2507 / -Thinking-2507: {_LITGPT} [Qwen3-4B-Instruct-2507, "
    "Qwen3-4B-Thinking-2507] differ from [Qwen3-4B] only in context (262144) and rope_theta (5e6); code-index file "
    f"68763826894 (Qwen3-4B-Instruct-2507: 4,022,468,096 = this count); {_FIREWORKS} gives Qwen 3 4B and Qwen 3 4B "
    "Instruct 2507 the same paramCount (4,411,424,256: the tied head counted twice)"]
ALIAS_NOTES["Qwen3-30B-A3B"] += [
    f"alias Qwen/Qwen3-30B-A3B-Thinking-2507: {_LITGPT} [Qwen3-30B-A3B-Thinking-2507] = its Instruct-2507 entry; "
    f"{_FIREWORKS} [Qwen 3 30B A3B Thinking 2507: 30,532,122,624 = this count]",
    f"alias Qwen/Qwen3-Coder-30B-A3B-Instruct: {_KERAS}, keras_hub/src/models/qwen3_moe/qwen3_moe_presets.py "
    "[qwen3_coder_instruct_30b_a3b_en: 30,532,122,624 = this count; 48 layers, 32 query / 4 kv heads, 128 experts, "
    f"8 active]; {_FIREWORKS} [Qwen 3 Coder 30B A3B Instruct: 30,532,122,624]"]
ALIAS_NOTES["Qwen3-235B-A22B"] = [
    f"alias Qwen/Qwen3-235B-A22B-Thinking-2507: {_LITGPT} [Qwen3-235B-A22B-Thinking-2507] differs from "
    f"[Qwen3-235B-A22B] only in context (262144) and rope_theta (5e6); {_FIREWORKS} [Qwen 3 235B A22B Thinking 2507: "
    "235,093,634,560 = this count]"]
ALIAS_NOTES["DeepSeek-V3"] = [
    f"alias deepseek-ai/DeepSeek-V3-0324: {_FIREWORKS} [Deepseek V3 03-24: 671,026,419,200 = DeepSeek V3's = this "
    "count]",
    "aliases deepseek-ai/DeepSeek-V3.1(-Base): akash-network/awesome-akash, DeepSeek-V3.1/README.md@6b006b4be899 "
    "(copy of the model card: 'The model structure of DeepSeek-V3.1 is the same as DeepSeek-V3'; 671B total, 37B "
    "activated; UE8M0 FP8 scales)",
    "alias deepseek-ai/DeepSeek-R1-0528: akash-network/awesome-akash, DeepSeek-R1-0528/README.md@176fdb83d2fc (copy "
    "of the model card: a minor version upgrade of DeepSeek R1, run as DeepSeek-R1); code-index file 23644742501 "
    "(recipes README: DeepSeek-R1-0528, 671B total, 37B active, 1 shared + 8 of 256 routed experts); the Fireworks "
    "catalog's "
    "674,352,502,272 for R1 05/28 and V3.1 is not used (3,326,083,072 over V3's; V3-0324 and R1 print V3's count)"]
ALIAS_NOTES["ChatGLM3-6B"] = [
    "alias THUDM/chatglm2-6b: code-index file 46625848263 (THUDM/chatglm2-6b config: every shape key equal to "
    "this row's, seq_length 32768 instead of 8192, which changes neither parameters nor memory); code-index file "
    "5812671115 (calflops table: chatglm2-6b 6,243,584,000 = this count); code-index file 17073814855 (ChatGLM2-6B: "
    "6,243,584,000, per-module)"]
ALIAS_NOTES["Llama-2-13B"].append(
    "aliases WizardLMTeam/WizardLM-13B-V1.2 and WizardLM/WizardLM-13B-V1.2 (the id under the WizardLMTeam "
    f"organisation, and the WizardLM/ id the sources name): {_GPU_POOR} [WizardLM/WizardLM-13B-V1.2, "
    "TheBloke/WizardLM-13B-V1.2-GPTQ: LlamaForCausalLM, 5120, 13824, 40 heads, 40 layers, vocab 32000] and "
    f"{_LELIUGA}, models/WizardLM-13B-V1.2/manifest.yaml (40 layers, 5120, 40 heads, 40 kv heads, 13824, vocab "
    "32000, context 4096) give these shapes; its Q2_K GGUF is 5,429,348,224 bytes, as Llama-2-13B's "
    "(models/Llama-2-13B/manifest.yaml): the same tensors")

# Wave 5 aliases (block above ALIAS_NOTES). The Q2_K GGUF sizes are llama.cpp's conversions as leliuga's manifests
# list them: equal bytes (up to a few bytes of metadata) are the same tensors.
ALIAS_NOTES.setdefault("Mistral-7B-v0.1", []).append(
    "alias HuggingFaceH4/zephyr-7b-beta (a DPO fine-tune of mistralai/Mistral-7B-v0.1, its card says): "
    f"{_LELIUGA}, models/zephyr-7B-beta/manifest.yaml gives these shapes (32 layers, 4096, 32 heads, 8 kv heads, "
    "14336, vocab 32000, context 32768), as models/Mistral-7B-v0.1/manifest.yaml does; its Q2_K GGUF is "
    "3,083,097,792 bytes, 64 (metadata) over Mistral-7B-v0.1's 3,083,097,728; "
    f"{_HF_SIZES} [HuggingFaceH4/zephyr-7b-beta: 7,241,732,096 = this count]")
ALIAS_NOTES.setdefault("DeepSeek-V2-Lite", []).append(
    "aliases deepseek-ai/DeepSeek-Coder-V2-Lite-Base and deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct: code-index "
    "file 69557407533 (notes on Coder-V2-Lite-Base read from its config.json and safetensors: 27 layers, layer 0 "
    "dense 10944, 2048, 16 heads, "
    "kv_lora_rank 512, q_lora_rank null, qk 128 + 64, v 128, 64 routed experts top-6 + 2 shared, "
    "moe_intermediate_size 1408, vocab 102,400, norm_topk_prob false, routed_scaling_factor 1.0; 15,706,484,224 "
    "parameters = this count); code-index file 57751031036 (the Hub snapshot of Coder-V2-Lite-Instruct: "
    "15,706,484,224 parameters, an embedding of 102,400 x 2048 in bf16); code-index file 70917048890 (the Lite "
    "checkpoints, V2 and Coder-V2: q_lora_rank null, greedy routing over 64 experts, YaRN factor 40)")
ALIAS_NOTES.setdefault("LLaMA-30B", []).append(
    f"alias lmsys/vicuna-33b-v1.3 (fine-tuned from LLaMA, its card says): {_GPU_POOR} [lmsys/vicuna-33b-v1.3: "
    "6656, 17920, 52 heads, 60 layers, vocab 32000, as huggyllama/llama-30b]; Lightning-AI/litgpt, "
    "litgpt/config.py@ec020646b961 [vicuna-33b-v1.3: 60 layers, 52 heads, 6656, 17920, vocab 32000, RMSNorm eps "
    f"1e-6, block_size 2048, no bias]; {_LELIUGA}, models/vicuna-33B/manifest.yaml (the same shapes, context 2048): "
    "its Q2_K GGUF is 13,502,545,312 bytes, as models/llama-30b-supercot's (a LLaMA-30B fine-tune)")
ALIAS_NOTES.setdefault("StarCoder", []).append(
    "alias StarCoder-15B, the name published tables give bigcode/starcoder: code-index file 30481576278 "
    "(WizardCoder's HumanEval table: StarCoder-15B 33.6, StarCoder's own figure); code-index file 2521243382 "
    "(StarCoder, 15.5B: starcoder-15b)")
ALIAS_NOTES.setdefault("OpenHermes-2.5-Mistral-7B", []).append(
    "aliases openchat/openchat_3.5 and berkeley-nest/Starling-LM-7B-alpha (trained from openchat_3.5, its card "
    f"says; both fine-tunes of Mistral-7B-v0.1 with vocab 32002): {_LELIUGA}, models/openchat_3.5/manifest.yaml and "
    "models/Starling-LM-7B-alpha/manifest.yaml give this row's shapes (32 layers, 4096, 32 heads, 8 kv heads, "
    "14336, vocab 32002) with context 8192 (32768 here), which changes neither parameters nor memory; "
    "openchat_3.5's Q2_K GGUF is 3,083,107,200 bytes, as OpenHermes-2.5-Mistral-7B's (Starling's: 64 more, "
    "metadata), so the head is untied as here; code-index file 2567470270 [berkeley-nest/Starling-LM-7B-alpha: "
    "7,241,748,480 = this count]")

# Config keys stated in the reference notes rather than in its fields.
EXTRA: dict[str, dict[str, Any]] = {
    "Gemma-2-2B": {"query_pre_attn_scalar": 256},
    "Gemma-2-9B": {"query_pre_attn_scalar": 256},
    "Gemma-2-27B": {"query_pre_attn_scalar": 144},
    "Gemma-3-1B": {"query_pre_attn_scalar": 256},
    "Gemma-3-4B": {"query_pre_attn_scalar": 256},
    "Gemma-3-12B": {"query_pre_attn_scalar": 256},
    "Gemma-3-27B": {"query_pre_attn_scalar": 168},
    "ChatGLM3-6B": {"original_rope": True},
    "GLM-4-9B-Chat": {"rope_ratio": 500},
}

# Caveats on a measured count, from the reference's measured_params.what.
MEASURED_NOTES: dict[str, list[str]] = {
    "Qwen3-0.6B": ["measured_params lists the tied lm_head twice; unique parameters = "
                   "computed_params"],
    "GPT-NeoX-20B": ["measured_params is a third-party figure 1,024 above the formula "
                     "(cause unknown)"],
}

ARCHITECTURES = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
    "mixtral": "MixtralForCausalLM", "gemma2": "Gemma2ForCausalLM",
    "gemma3_text": "Gemma3ForCausalLM", "phi3": "Phi3ForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
    "chatglm": "ChatGLMModel", "baichuan": "BaichuanForCausalLM",
    "internlm2": "InternLM2ForCausalLM", "gpt2": "GPT2LMHeadModel", "opt": "OPTForCausalLM",
    "bloom": "BloomForCausalLM", "falcon": "FalconForCausalLM",
    "gpt_neox": "GPTNeoXForCausalLM",
}

ESSENTIAL = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "vocab_size")

# --- models added from their public config.json (issue 19), after the reference rows ------------------
# Each: catalog id, display name, HF id, aliases, where the config and the counts come from, what was
# checked, the published exact parameter count where one exists (measured_params: a checkpoint's own
# count, keras-hub presets count the converted weights), and the config.json itself (None: JSON null).
# "code-index file N" is a public file found by content (the index names no repository).

_PHI35_LONG = [1.0800000429153442, 1.1100000143051147, 1.1399999856948853, 1.340000033378601, 1.5899999141693115,
               1.600000023841858, 1.6200000047683716, 2.620000123977661, 3.2300000190734863, 3.2300000190734863,
               4.789999961853027, 7.400000095367432, 7.700000286102295, 9.09000015258789, 12.199999809265137,
               17.670000076293945, 24.46000099182129, 28.57000160217285, 30.420001983642578, 30.840002059936523,
               32.590003967285156, 32.93000411987305, 42.320003509521484, 44.96000289916992, 50.340003967285156,
               50.45000457763672, 57.55000305175781, 57.93000411987305, 58.21000289916992, 60.1400032043457,
               62.61000442504883, 62.62000274658203, 62.71000289916992, 63.1400032043457, 63.1400032043457,
               63.77000427246094, 63.93000411987305, 63.96000289916992, 63.970001220703125, 64.02999877929688,
               64.06999969482422, 64.08000183105469, 64.12000274658203, 64.41000366210938, 64.4800033569336,
               64.51000213623047, 64.52999877929688, 64.83999633789062]
_PHI35_SHORT = [1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705] + [1.0499999523162842] * 5 + [
    1.0699999332427979, 1.0999999046325684, 1.1099998950958252, 1.1599998474121094, 1.1599998474121094,
    1.1699998378753662, 1.2899998426437378, 1.339999794960022, 1.679999828338623, 1.7899998426437378,
    1.8199998140335083, 1.8499997854232788, 1.8799997568130493, 1.9099997282028198, 1.9399996995925903,
    1.9899996519088745] + [2.0199997425079346] * 6 + [2.0299997329711914] * 9 + [
    2.0799996852874756, 2.0899996757507324, 2.189999580383301, 2.2199995517730713, 2.5899994373321533,
    2.729999542236328, 2.749999523162842, 2.8399994373321533]
_GPT_OSS = {"architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
            "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu",
            "hidden_size": 2880, "initial_context_length": 4096, "initializer_range": 0.02,
            "intermediate_size": 2880, "max_position_embeddings": 131072, "model_type": "gpt_oss",
            "num_attention_heads": 64, "num_experts_per_tok": 4, "num_key_value_heads": 8,
            "output_router_logits": False, "pad_token_id": 199999,
            "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                               "model.embed_tokens", "lm_head"],
                                    "quant_method": "mxfp4"},
            "rms_norm_eps": 1e-05,
            "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                             "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": False},
            "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
            "tie_word_embeddings": False, "use_cache": True, "vocab_size": 201088}
_GPT_OSS_NOTE = ("expert weights are MXFP4 in the released checkpoint (quantization_config); training loads them "
                 "dequantized to bf16 (transformers Mxfp4Config(dequantize=True), OpenAI's fine-tuning recipe), so "
                 "they count as 16-bit weights; transformers has no SDPA path for its attention sinks (eager)")
_LLAMA4_TEXT = {"attention_bias": False, "attention_chunk_size": 8192, "attention_dropout": 0.0, "attn_scale": 0.1,
                "attn_temperature_tuning": True, "bos_token_id": 200000, "eos_token_id": [200001, 200007, 200008],
                "floor_scale": 8192, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
                "initializer_range": 0.02, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
                "model_type": "llama4_text", "num_attention_heads": 40, "num_experts_per_tok": 1,
                "num_hidden_layers": 48, "num_key_value_heads": 8, "output_router_logits": False,
                "pad_token_id": 200018, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
                "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0, "vocab_size": 202048}
_GLM45 = {"architectures": ["Glm4MoeForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
          "bos_token_id": 151329, "eos_token_id": 151336, "head_dim": 128, "hidden_act": "silu",
          "initializer_range": 0.02, "max_position_embeddings": 131072, "model_type": "glm4_moe",
          "n_group": 1, "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 96,
          "num_experts_per_tok": 8, "num_key_value_heads": 8, "num_nextn_predict_layers": 1,
          "pad_token_id": 151329, "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
          "routed_scaling_factor": 2.5, "tie_word_embeddings": False, "topk_group": 1, "use_cache": True,
          "vocab_size": 151552}
_GLM45_SOURCE = ("NVIDIA-NeMo/Megatron-Bridge, tests/unit_tests/models/glm/test_glm45_bridge.py@067f987df03b "
                 "[glm45_355b_config, glm45_air_106b_config]; code-index file 4289690615 (GLM-4.5 with model_type "
                 "glm4_moe, num_nextn_predict_layers 1); zai-org/GLM-4.5, README.md@170f20b2c106 (355B / 106B total, "
                 "32B / 12B active)")
_KIMI_K2 = {"architectures": ["DeepseekV3ForCausalLM"],
            "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config",
                         "AutoModel": "modeling_deepseek.DeepseekV3Model",
                         "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM"},
            "aux_loss_alpha": 0.001, "bos_token_id": 163584, "eos_token_id": 163585, "first_k_dense_replace": 1,
            "hidden_act": "silu", "hidden_size": 7168, "initializer_range": 0.02, "intermediate_size": 18432,
            "kv_lora_rank": 512, "max_position_embeddings": 131072, "model_type": "kimi_k2",
            "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 384,
            "n_shared_experts": 1, "norm_topk_prob": True, "num_attention_heads": 64, "num_experts_per_tok": 8,
            "num_hidden_layers": 61, "num_key_value_heads": 64, "num_nextn_predict_layers": 0, "q_lora_rank": 1536,
            "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
            "rope_scaling": {"beta_fast": 1.0, "beta_slow": 1.0, "factor": 32.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                             "original_max_position_embeddings": 4096, "type": "yarn"},
            "rope_theta": 50000.0, "routed_scaling_factor": 2.827, "scoring_func": "sigmoid",
            "tie_word_embeddings": False, "topk_group": 1, "topk_method": "noaux_tc", "use_cache": True,
            "v_head_dim": 128, "vocab_size": 163840}

HF_CONFIG_MODELS: list[dict[str, Any]] = [
    {"name": "gemma-2b", "display_name": "Gemma-2B", "hf_id": "google/gemma-2b", "aliases": ["google/gemma-2b-it"],
     "source": ("salberdi-nvidia/Megatron-Bridge, tests/unit_tests/models/gemma/test_gemma_bridge.py@6476ea0fa68d "
                f"[gemma_2b_config_dict]; {_KERAS}, keras_hub/src/models/gemma/gemma_presets.py [gemma_2b_en]"),
     "verification": ("HF config dict (transformers 5 form: rope_parameters) restated with rope_theta; count = "
                      "keras-hub preset of the converted checkpoint"),
     "measured_params": 2506172416,
     "config": {"architectures": ["GemmaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 2, "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu", "hidden_size": 2048,
                "initializer_range": 0.02, "intermediate_size": 16384, "max_position_embeddings": 8192,
                "model_type": "gemma", "num_attention_heads": 8, "num_hidden_layers": 18, "num_key_value_heads": 1,
                "pad_token_id": 0, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "vocab_size": 256000}},
    {"name": "gemma-7b", "display_name": "Gemma-7B", "hf_id": "google/gemma-7b",
     "aliases": ["google/gemma-7b-it", "google/codegemma-7b", "google/codegemma-7b-it"],
     "source": ("salberdi-nvidia/Megatron-Bridge, tests/unit_tests/models/gemma/test_gemma_bridge.py@6476ea0fa68d "
                f"[gemma_7b_config_dict]; {_KERAS}, keras_hub/src/models/gemma/gemma_presets.py [gemma_7b_en]"),
     "verification": ("HF config dict (transformers 5 form: rope_parameters) restated with rope_theta; count = "
                      "keras-hub preset (8,537,680,896 = the Gemma report's 786,432,000 embedding + 7,751,248,896 "
                      "non-embedding); aliases google/codegemma-7b(-it): keras-hub gemma_presets.py [code_gemma_7b_en, "
                      "code_gemma_instruct_7b_en: 8,537,680,896, this count]; " + _LITGPT + " [CodeGemma-7b-it] "
                      "equals its [Gemma-7b] entry field for field"),
     "measured_params": 8537680896,
     "config": {"architectures": ["GemmaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 2, "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu", "hidden_size": 3072,
                "initializer_range": 0.02, "intermediate_size": 24576, "max_position_embeddings": 8192,
                "model_type": "gemma", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 16,
                "pad_token_id": 0, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "vocab_size": 256000}},
    {"name": "qwen2-7b", "display_name": "Qwen2-7B", "hf_id": "Qwen/Qwen2-7B", "aliases": ["Qwen/Qwen2-7B-Instruct"],
     "source": ("code-index file 7768956847 [Qwen2_7B: the base config.json]; Retruth/deontic, "
                "nlp_models/qwen2/README.md@a77cf87a7777 (Qwen2-7B-Instruct as loaded: same shapes); "
                f"{_KERAS}, keras_hub/src/models/qwen/qwen_presets.py "
                "[qwen2.5_math_7b_en: same shapes, 7,615,616,512]"),
     "verification": ("verbatim base config.json; the Instruct upload differs only in max_position_embeddings "
                      "(32768) and eos_token_id, which change neither parameters nor memory"),
     "config": {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
                "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
                "intermediate_size": 18944, "max_position_embeddings": 131072, "max_window_layers": 28,
                "model_type": "qwen2", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
                "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072,
                "tie_word_embeddings": False, "use_cache": True, "use_sliding_window": False, "vocab_size": 152064}},
    {"name": "qwen2-72b", "display_name": "Qwen2-72B", "hf_id": "Qwen/Qwen2-72B",
     "aliases": ["Qwen/Qwen2-72B-Instruct"],
     "source": ("code-index file 7768956847 [Qwen2_72B: the base config.json]; code-index file 57174331611 "
                f"[Qwen2_72B_Instruct]; {_KERAS}, keras_hub/src/models/qwen/qwen_presets.py [qwen2.5_instruct_72b_en: "
                "same shapes, 72,706,203,648]"),
     "verification": "verbatim base config.json; Instruct: max_position_embeddings 32768, rms_norm_eps 1e-06",
     "config": {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
                "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 8192, "initializer_range": 0.02,
                "intermediate_size": 29568, "max_position_embeddings": 131072, "max_window_layers": 80,
                "model_type": "qwen2", "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
                "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": 131072,
                "tie_word_embeddings": False, "use_cache": True, "use_sliding_window": False, "vocab_size": 152064}},
    {"name": "phi-3-mini-128k", "display_name": "Phi-3-mini-128k", "hf_id": "microsoft/Phi-3-mini-128k-instruct",
     "aliases": ["phi-3-mini-128k-instruct", "phi3-mini-128k", "microsoft/Phi-3.5-mini-instruct"],
     "source": (f"{_KERAS}, keras_hub/src/models/phi3/phi3_presets.py [phi3_mini_128k_instruct_en: 3,821,079,552]; "
                "code-index file 23232855458 (the LongRoPE factor lists, as in microsoft/Phi-3.5-mini-instruct); "
                "Azure/azureml-assets, assets/models/system/phi-3-mini-128k-instruct/description.md (3.8B)"),
     "verification": ("Phi-3-mini-4k shapes with max_position_embeddings 131072, original_max_position_embeddings "
                      "4096, sliding_window 262144 and rope_scaling longrope; the 48+48 LongRoPE factors are those "
                      "of the Phi-3.5-mini config (not checked against this repository's own file): trainplan reads "
                      "rope_scaling for nothing, they only let transformers build the rotary table; alias "
                      f"microsoft/Phi-3.5-mini-instruct: {_LITGPT} [Phi-3.5-mini-instruct] has the shapes of its "
                      "[Phi-3-mini-128k-instruct] (32 layers, 3072, 8192, padded vocab 32064, no bias) and differs "
                      "only in block_size and sliding window, which change neither parameters nor memory"),
     "measured_params": 3821079552,
     "config": {"architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 1, "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu",
                "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
                "max_position_embeddings": 131072, "model_type": "phi3", "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
                "pad_token_id": 32000, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
                "rope_scaling": {"long_factor": _PHI35_LONG, "short_factor": _PHI35_SHORT, "type": "longrope"},
                "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": False, "use_cache": True,
                "vocab_size": 32064}},
    {"name": "gpt-oss-20b", "display_name": "gpt-oss-20b", "hf_id": "openai/gpt-oss-20b", "aliases": ["gpt-oss:20b"],
     "source": ("EchoCog/gpt-oss-20b, config.json@52971a17bf2f (a copy of openai/gpt-oss-20b's; its "
                "quantization_config says gptq, the release says mxfp4); "
                f"{_KERAS}, keras_hub/src/models/gpt_oss/gpt_oss_presets.py [gpt_oss_20b_en: 20,914,757,184]"),
     "verification": _GPT_OSS_NOTE,
     "measured_params": 20914757184,
     "config": {**_GPT_OSS, "num_hidden_layers": 24, "num_local_experts": 32,
                "layer_types": ["sliding_attention", "full_attention"] * 12}},
    {"name": "gpt-oss-120b", "display_name": "gpt-oss-120b", "hf_id": "openai/gpt-oss-120b",
     "aliases": ["gpt-oss:120b"],
     "source": ("transformers 5.24 GptOssConfig defaults (the 120b configuration: 36 layers, 128 experts); the 20b "
                f"config.json for the shared keys; {_KERAS}, keras_hub/src/models/gpt_oss/gpt_oss_presets.py "
                "[gpt_oss_120b_en: 116,829,156,672]"),
     "verification": _GPT_OSS_NOTE,
     "measured_params": 116829156672,
     "config": {**_GPT_OSS, "num_hidden_layers": 36, "num_local_experts": 128,
                "layer_types": ["sliding_attention", "full_attention"] * 18}},
    {"name": "llama-4-scout", "display_name": "Llama-4-Scout-17B-16E", "hf_id": "meta-llama/Llama-4-Scout-17B-16E",
     "aliases": ["meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4-scout"],
     "source": ("code-index file 41112263523 (Llama4Config of Llama-4-Scout-17B-16E as loaded); code-index file "
                "56810493199 (the text config.json of a Scout fine-tune); transformers 5.24 Llama4TextConfig "
                "defaults (Scout)"),
     "verification": ("text_config only (the vision encoder and projector are not counted; vision_config left "
                      "out); attn_temperature_tuning is 4 in config.json, transformers 5 takes a bool: true; "
                      "moe_layers / no_rope_layers left to the defaults they equal; published 109B total "
                      "includes the vision encoder, 17B active"),
     "config": {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
                "tie_word_embeddings": False,
                "text_config": {**_LLAMA4_TEXT, "interleave_moe_layer_step": 1, "num_local_experts": 16,
                                "max_position_embeddings": 262144, "use_qk_norm": True,
                                "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                                 "original_max_position_embeddings": 8192, "rope_type": "llama3"}}}},
    {"name": "llama-4-maverick", "display_name": "Llama-4-Maverick-17B-128E",
     "hf_id": "meta-llama/Llama-4-Maverick-17B-128E",
     "aliases": ["meta-llama/Llama-4-Maverick-17B-128E-Instruct", "llama4-maverick"],
     "source": ("code-index file 115210306 (TensorRT-LLM test: Maverick's config with num_hidden_layers cut from 48 "
                "to 2); transformers 5.24 modeling_llama4.py ('the 128E model interleaves dense / sparse', 'does not "
                "use qk_norm')"),
     "verification": ("text_config of the 48-layer model (vision not counted); MoE every 2nd layer (128 experts + "
                      "shared), dense layers intermediate_size_mlp 16384, no q/k norm; published 400B total, "
                      "17B active"),
     "config": {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
                "tie_word_embeddings": False,
                "text_config": {**_LLAMA4_TEXT, "interleave_moe_layer_step": 2, "num_local_experts": 128,
                                "max_position_embeddings": 1048576, "use_qk_norm": False}}},
    {"name": "glm-4.5", "display_name": "GLM-4.5", "hf_id": "zai-org/GLM-4.5",
     "aliases": ["THUDM/GLM-4.5", "zai-org/GLM-4.6"],
     "source": _GLM45_SOURCE,
     "verification": ("Megatron-Bridge's GLM-4.5 dict (model_type written glm there) with model_type glm4_moe, "
                      "n_group / topk_group 1, norm_topk_prob; the MTP layer (layer 92) is not counted; alias "
                      "zai-org/GLM-4.6: code-index file 2748342403 (its config manifest: 92 layers, 5120, 12288, "
                      "96 heads, 8 kv heads, head_dim 128, 160 experts of 1536, 1 shared, top 8, 3 dense, q/k norm, "
                      "qkv bias, vocab 151552, untied, MTP 1) has these shapes with max_position_embeddings 202752 "
                      "(no effect on parameters or memory); code-index file 66729435508 (Fireworks catalog) gives "
                      "GLM-4.5 and GLM-4.6 the same paramCount"),
     "config": {**_GLM45, "first_k_dense_replace": 3, "hidden_size": 5120, "intermediate_size": 12288,
                "moe_intermediate_size": 1536, "n_routed_experts": 160, "num_hidden_layers": 92, "use_qk_norm": True}},
    {"name": "glm-4.5-air", "display_name": "GLM-4.5-Air", "hf_id": "zai-org/GLM-4.5-Air",
     "aliases": ["THUDM/GLM-4.5-Air"],
     "source": _GLM45_SOURCE,
     "verification": ("as GLM-4.5: Megatron-Bridge's Air dict with model_type glm4_moe (Glm4MoeConfig's defaults are "
                      "these shapes); the MTP layer (layer 46) is not counted"),
     "config": {**_GLM45, "first_k_dense_replace": 1, "hidden_size": 4096, "intermediate_size": 10944,
                "moe_intermediate_size": 1408, "n_routed_experts": 128, "num_hidden_layers": 46, "use_qk_norm": False}},
    {"name": "olmo-2-0425-1b", "display_name": "OLMo-2-0425-1B", "hf_id": "allenai/OLMo-2-0425-1B",
     "aliases": ["allenai/OLMo-2-0425-1B-Instruct"],
     "source": "code-index file 58554976702 (\"the real config.json from allenai/OLMo-2-0425-1B, verbatim\")",
     "verification": "verbatim config.json (published: 1B class; 1,484,916,736 as transformers builds it)",
     "config": {"architectures": ["Olmo2ForCausalLM"], "attention_bias": False, "eos_token_id": 100257,
                "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 8192, "model_type": "olmo2",
                "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16,
                "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_theta": 500000, "tie_word_embeddings": False,
                "vocab_size": 100352}},
    {"name": "ministral-8b", "display_name": "Ministral-8B-Instruct-2410",
     "hf_id": "mistralai/Ministral-8B-Instruct-2410",
     "aliases": ["ministral-8b-instruct-2410"],
     "source": "code-index file 20337672980 [ministral8b_config: the config.json]",
     "verification": ("verbatim config.json (model_type mistral; the interleaved sliding window of the release is "
                      "served by vLLM, transformers applies sliding_window 32768 on every layer); published 8.02B"),
     "config": {"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
                "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
                "intermediate_size": 12288, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 100000000.0, "sliding_window": 32768, "tie_word_embeddings": False, "use_cache": True,
                "vocab_size": 131072}},
    {"name": "magistral-small-2506", "display_name": "Magistral-Small-2506", "hf_id": "mistralai/Magistral-Small-2506",
     "aliases": ["magistral-small"],
     "source": (f"{_KERAS}, keras_hub/src/models/mistral/mistral_presets.py [magistral_small_2506_en: 23,572,403,200]; "
                "code-index file 59090948446 (the Mistral-Small 24B config.json fields Magistral shares); "
                "code-index file 65742008784 (Magistral-Small-24B: 40 layers, 5120, 32 heads, 8 kv, 32768, 131072)"),
     "verification": ("Mistral-Small 24B text decoder shapes; rope_theta and max_position_embeddings as in the "
                      "Mistral-Small config (no effect on counts or memory); count = keras-hub preset"),
     "measured_params": 23572403200,
     "config": {"architectures": ["MistralForCausalLM"], "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
                "intermediate_size": 32768, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 100000000.0, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 131072}},
    {"name": "seed-oss-36b", "display_name": "Seed-OSS-36B", "hf_id": "ByteDance-Seed/Seed-OSS-36B-Instruct",
     "aliases": ["ByteDance-Seed/Seed-OSS-36B-Base", "seed-oss-36b-instruct"],
     "source": ("code-index file 54501653118 (a trimmed copy of Seed-OSS-36B-Instruct's config.json); code-index file "
                "65742008784 [Seed-OSS-36B]; transformers 5.24 SeedOssConfig (dropout defaults 0.1); "
                "ByteDance-Seed/seed-oss, README.md (36B)"),
     "verification": ("shapes verbatim; attention_dropout and residual_dropout 0.1 as SeedOssConfig defaults "
                      "(trainplan counts the dropout masks HF training keeps)"),
     "config": {"architectures": ["SeedOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.1,
                "attention_out_bias": False, "bos_token_id": 0, "eos_token_id": 2, "head_dim": 128,
                "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 27648,
                "max_position_embeddings": 524288, "mlp_bias": False, "model_type": "seed_oss",
                "num_attention_heads": 80, "num_hidden_layers": 64, "num_key_value_heads": 8, "pad_token_id": 1,
                "residual_dropout": 0.1, "rms_norm_eps": 1e-06, "rope_scaling": {"rope_type": "default"},
                "rope_theta": 10000000.0, "tie_word_embeddings": False, "vocab_size": 155136}},
    {"name": "kimi-k2", "display_name": "Kimi-K2-Instruct", "hf_id": "moonshotai/Kimi-K2-Instruct",
     "aliases": ["moonshotai/Kimi-K2-Base", "kimi-k2-instruct"],
     "source": ("MoonshotAI/Kimi-K2, README.md@c6157be8531e (architecture table: 61 layers, 1 dense, 7168, 2048 per "
                "expert, 64 heads, 384 experts, 8 selected, 1 shared, 160K vocabulary; 1T total, 32B active); "
                "ParagEkbote/hf-model-inspector, model_inspection_report.md@92931b2da4eb (model_type kimi_k2, shapes); "
                "code-index files 4289690615, 55329353243 (the Kimi K2 text config keys)"),
     "verification": ("DeepSeek-V3 architecture under Moonshot's model_type kimi_k2 (remote code, so `trainplan "
                      "trace` cannot build it); quantization_config (fp8 blocks) left out: training dequantizes"),
     "config": _KIMI_K2},
    {"name": "internlm3-8b", "display_name": "InternLM3-8B-Instruct", "hf_id": "internlm/internlm3-8b-instruct",
     "aliases": ["internlm3-8b-instruct"],
     "source": ("code-index file 55463440875 (realConfigJSON: internlm3-8b-instruct's config.json); code-index file "
                "61273165626 (rope_scaling, rope_theta, max_position_embeddings verbatim); "
                "InternLM/InternLM, README.md (8 billion parameters)"),
     "verification": "config.json fields verbatim (transformers builds LlamaForCausalLM); published 8B class",
     "config": {"architectures": ["InternLM3ForCausalLM"], "bias": False, "head_dim": 128, "hidden_act": "silu",
                "hidden_size": 4096, "intermediate_size": 10240, "max_position_embeddings": 32768,
                "model_type": "internlm3", "num_attention_heads": 32, "num_hidden_layers": 48,
                "num_key_value_heads": 2, "qkv_bias": False, "rms_norm_eps": 1e-05,
                "rope_scaling": {"factor": 6.0, "rope_type": "dynamic"}, "rope_theta": 50000000,
                "tie_word_embeddings": False, "vocab_size": 128512}},
]

# --- benchmarked HF ids added after issue 19 (LLaMA 1, Mistral, Code Llama, TinyLlama, DeepSeek LLM / Coder, Qwen1.5,
# Qwen2.5-Math, SmolLM2, OLMo 2). "code-index file N" as above.

_LLAMA1_SHAPES = ("code-index file 7902833359 (PaddleNLP paddlenlp/transformers/llama/configuration.py, "
                  "LLAMA_PRETRAINED_INIT_CONFIGURATION [facebook/llama-{size}]: the HF config fields); "
                  f"{_GPU_POOR} [huggyllama/llama-{{size}}]")
_LLAMA1_NOTE = ("LLaMA 1 converted to HF (model_type llama): MHA (no num_key_value_heads), untied head, 2048 "
                "context; shapes agree in both sources{extra}; count = {count}")


def _llama1(size: str, hidden: int, layers: int, heads: int, inter: int, eps: float, measured: int,
            count_src: str, extra: str = "") -> dict[str, Any]:
    return {"name": f"llama-{size}", "display_name": f"LLaMA-{size.upper()}", "hf_id": f"huggyllama/llama-{size}",
            "aliases": [f"llama1-{size}"],
            "source": f"{_LLAMA1_SHAPES.format(size=size)}; {count_src}",
            "verification": _LLAMA1_NOTE.format(extra=extra, count=count_src.split(" (")[0]),
            "measured_params": measured,
            "config": {"architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
                       "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02,
                       "intermediate_size": inter, "max_position_embeddings": 2048, "model_type": "llama",
                       "num_attention_heads": heads, "num_hidden_layers": layers, "pad_token_id": 0,
                       "rms_norm_eps": eps, "tie_word_embeddings": False, "vocab_size": 32000}}


_LLAMA1_TABLE = "code-index file 15495356071 (table of actual LLaMA parameter counts: 7B, 13B, 30B)"
_PYLLAMA = "code-index file 49672585427 (pyllama printout of decapoda-research/llama-{size}-hf: trainable_params)"
_CODELLAMA = {"architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
              "initializer_range": 0.02, "max_position_embeddings": 16384, "model_type": "llama", "pretraining_tp": 1,
              "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000, "tie_word_embeddings": False,
              "use_cache": True}
_TOGETHER_COUNTS = "code-index file 4120541175 (togethercomputer/CodeLlama-* parameter counts)"
_SMOLLM2 = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
            "max_position_embeddings": 8192, "mlp_bias": False, "model_type": "llama", "pretraining_tp": 1,
            "rms_norm_eps": 1e-05, "rope_scaling": None, "tie_word_embeddings": True, "vocab_size": 49152}
_SMOLLM2_NOTE = ("mlc-llm's copy of the config.json less transformers.js_config, is_llama_config and rope_interleaved "
                 "(no effect on counts or memory); the -Instruct upload has the same shapes (litgpt builds both "
                 "from one entry)")
_SMOLLM1_NOTE = (f"{_MLC} [{{key}}: a SmolLM (v1) config.json] has this row's shapes, vocabulary and tie flag "
                 "with max_position_embeddings 2048 and rope_theta 10000, which change neither parameters nor memory "
                 "(--seq-len beyond 2048 is past SmolLM's training context)")
_OLMO2 = {"architectures": ["Olmo2ForCausalLM"], "hidden_act": "silu", "max_position_embeddings": 4096,
          "model_type": "olmo2", "rms_norm_eps": 1e-06, "rope_theta": 500000.0, "tie_word_embeddings": False,
          "use_cache": True, "vocab_size": 100352}
_DEEPSEEK_LLM = {"architectures": ["LlamaForCausalLM"], "max_position_embeddings": 4096, "model_type": "llama",
                 "tie_word_embeddings": False, "vocab_size": 102400}
_DEEPSEEK_LLM_SOURCE = ("deepseek-ai/DeepSeek-LLM, README.md@1b79a65a108b (LLaMA architecture; 7B MHA, 67B GQA; "
                        "sequence length 4096)")
_LLAMA_DEFAULTS_NOTE = ("rms_norm_eps, rope_theta and hidden_act are not in these sources: the LlamaConfig defaults "
                        "apply (no effect on counts or memory)")

HF_CONFIG_MODELS += [
    _llama1("7b", 4096, 32, 32, 11008, 1e-06, 6738415616, _LLAMA1_TABLE,
            " (scottlogic-alex/llm-memory-calculator, llama-sizes.md@93934b33eb75 prints the 7b/13b modules)"),
    _llama1("13b", 5120, 40, 40, 13824, 1e-06, 13015864320, _LLAMA1_TABLE,
            " (scottlogic-alex/llm-memory-calculator, llama-sizes.md@93934b33eb75 prints the 7b/13b modules)"),
    _llama1("30b", 6656, 60, 52, 17920, 1e-06, 32528943616, _PYLLAMA.format(size="30b")),
    _llama1("65b", 8192, 80, 64, 22016, 1e-05, 65285660672, _PYLLAMA.format(size="65b"),
            "; rms_norm_eps is 1e-05 for 65B only (PaddleNLP entry)"),
    {"name": "mistral-7b-v0.3", "display_name": "Mistral-7B-v0.3", "hf_id": "mistralai/Mistral-7B-v0.3",
     "aliases": ["mistralai/Mistral-7B-Instruct-v0.3"],
     "source": (f"{_MLC} [mistral_7b_v03: the config.json]; {_LITGPT} [Mistral-7B-v0.3, Mistral-7B-Instruct-v0.3]; "
                f"{_KERAS}, keras_hub/src/models/mistral/mistral_presets.py [mistral_0.3_7b_en, "
                "mistral_0.3_instruct_7b_en: 7,248,023,552]"),
     "verification": ("config.json verbatim; vocab 32768 (v0.1: 32000), rope_theta 1e6, no sliding window; litgpt "
                      "gives base and Instruct the same fields; count = keras-hub preset (v0.1 + 768 x 4096 x 2)"),
     "measured_params": 7248023552,
     "config": {"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
                "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
                "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False, "use_cache": True,
                "vocab_size": 32768}},
    {"name": "mistral-7b-instruct-v0.2", "display_name": "Mistral-7B-Instruct-v0.2",
     "hf_id": "mistralai/Mistral-7B-Instruct-v0.2", "aliases": ["mistral-7b-instruct-v0.2"],
     "source": (f"{_LITGPT} [Mistral-7B-Instruct-v0.2]; {_LELIUGA}, models/Mistral-7B-Instruct-v0.2/manifest.yaml; "
                "Azure/azureml-assets, assets/models/system/Mistral-7B-Instruct-v0-2/description.md@9be89f6a01f1 "
                f"(32k context, rope-theta 1e6, no sliding-window attention); {_KERAS}, keras_hub/src/models/mistral/"
                "mistral_presets.py [mistral_0.2_instruct_7b_en: 7,241,732,096]"),
     "verification": ("Mistral-7B-v0.1 shapes (litgpt and the manifest agree) with 32768 context, rope_theta 1e6 and "
                      "sliding_window null (full attention, unlike v0.1's 4096 window); count = keras-hub preset"),
     "measured_params": 7241732096,
     "config": {"architectures": ["MistralForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
                "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
                "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False, "vocab_size": 32000}},
    {"name": "mistral-nemo-2407", "display_name": "Mistral-Nemo-Base-2407", "hf_id": "mistralai/Mistral-Nemo-Base-2407",
     "aliases": ["mistralai/Mistral-Nemo-Instruct-2407", "mistral-nemo"],
     "source": ("kevinstephano/thunder_model_blocks, thunder_model_blocks/mistral/mistral_config.py@a23dd8fe87e9 "
                "(the Base config.json); sassoftware/sas-agentic-ai-accelerator, LLM-Definitions/mistral_nemo/"
                "Model-Card.md@f123b7a9bea8 (40 layers, 5120, head dim 128, 32 heads, 8 kv heads, vocab 2**17, "
                "theta 1M); code-index file 70911651117 [Mistral-Nemo-Instruct-2407: 12,247,782,400]; code-index "
                "file 53793124493 (llama.cpp n_params 12,247,782,400, n_ctx_train 1024000)"),
     "verification": ("Base config.json verbatim; the card's 'hidden dim 14,436' is a typo for the config's 14336 "
                      "(the count confirms 14336); the Instruct upload differs in max_position_embeddings (1024000), "
                      "which changes neither parameters nor memory"),
     "measured_params": 12247782400,
     "config": {"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
                "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120,
                "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 128000,
                "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8,
                "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False,
                "use_cache": True, "vocab_size": 131072}},
    {"name": "codellama-7b", "display_name": "CodeLlama-7B", "hf_id": "codellama/CodeLlama-7b-hf",
     "aliases": ["codellama/CodeLlama-7b-Instruct-hf"],
     "source": (f"{_MLC} [codellama_7b: the config.json]; {_LITGPT} [CodeLlama-7b-hf, CodeLlama-7b-Instruct-hf]; "
                f"{_LELIUGA}, models/CodeLlama-7B(-Instruct)/manifest.yaml; {_TOGETHER_COUNTS}; code-index file "
                "14596936751 (GGUF general.parameter_count 6,738,546,688)"),
     "verification": ("config.json verbatim (mlc-llm's context_window_size / prefill_chunk_size left out); Llama-2-7B "
                      "with vocab 32016 (infilling tokens), 16384 context, rope_theta 1e6; Instruct: same fields"),
     "measured_params": 6738546688,
     "config": {**_CODELLAMA, "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32, "vocab_size": 32016}},
    {"name": "codellama-13b", "display_name": "CodeLlama-13B", "hf_id": "codellama/CodeLlama-13b-hf",
     "aliases": ["codellama/CodeLlama-13b-Instruct-hf"],
     "source": (f"{_MLC} [codellama_13b: the config.json]; {_LITGPT} [CodeLlama-13b-hf]; {_LELIUGA}, "
                f"models/CodeLlama-13B(-Instruct)/manifest.yaml; {_TOGETHER_COUNTS}"),
     "verification": ("config.json verbatim; vocab 32016, 16384 context; the Instruct manifest gives the same shapes "
                      "and context (litgpt's 2048 block_size for 13b-Instruct is its own setting)"),
     "measured_params": 13016028160,
     "config": {**_CODELLAMA, "hidden_size": 5120, "intermediate_size": 13824, "num_attention_heads": 40,
                "num_hidden_layers": 40, "num_key_value_heads": 40, "vocab_size": 32016}},
    {"name": "codellama-34b", "display_name": "CodeLlama-34B", "hf_id": "codellama/CodeLlama-34b-hf",
     "aliases": ["codellama/CodeLlama-34b-Instruct-hf"],
     "source": (f"{_MLC} [codellama_34b]; {_GPU_POOR} [codellama/CodeLlama-34b-hf, -Instruct-hf]; {_LITGPT} "
                f"[CodeLlama-34b-hf]; {_LELIUGA}, models/CodeLlama-34B(-Instruct)/manifest.yaml; code-index file "
                "36031785305 (Phind-CodeLlama-34B, a fine-tune of the same shapes: 33,743,970,304)"),
     "verification": ("mlc-llm's config with vocab_size 32000 (gpu_poor, litgpt and the manifests agree; mlc-llm's "
                      "32016 is wrong for 34B, which has no infilling tokens); GQA 8 kv heads, 16384 context; "
                      "computed 33,743,970,304 = the Phind fine-tune's published count"),
     "config": {**_CODELLAMA, "hidden_size": 8192, "intermediate_size": 22016, "num_attention_heads": 64,
                "num_hidden_layers": 48, "num_key_value_heads": 8, "vocab_size": 32000}},
    {"name": "tinyllama-1.1b", "display_name": "TinyLlama-1.1B",
     "hf_id": "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
     "aliases": ["TinyLlama/TinyLlama-1.1B-Chat-v1.0", "tinyllama"],
     "source": (f"{_MLC} [tinyllama_1b_chat_v1.0: the config.json]; {_LITGPT} [tiny-llama-1.1b, tiny-llama-1.1b-chat]; "
                f"{_LELIUGA}, models/TinyLlama-1.1B-intermediate-step-1431k-3T and TinyLlama-1.1B-Chat-v1.0/"
                "manifest.yaml; code-index file 59208154669 (sum of numel of the 1431k-3T checkpoint: 1,100,048,384); "
                "code-index file 71366605573 (its safetensors metadata: F32 1100048384)"),
     "verification": ("Chat-v1.0 config.json verbatim; litgpt and the manifests give the 1431k-3T base the same "
                      "shapes (22 layers, 2048, 32 heads, 4 kv heads, 5632, vocab 32000, 2048 context); count = "
                      "checkpoint"),
     "measured_params": 1100048384,
     "config": {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 1, "eos_token_id": 2,
                "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
                "max_position_embeddings": 2048, "model_type": "llama", "num_attention_heads": 32,
                "num_hidden_layers": 22, "num_key_value_heads": 4, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
                "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False, "use_cache": True,
                "vocab_size": 32000}},
    {"name": "deepseek-llm-7b", "display_name": "DeepSeek-LLM-7B", "hf_id": "deepseek-ai/deepseek-llm-7b-base",
     "aliases": ["deepseek-ai/deepseek-llm-7b-chat"],
     "source": (f"{_LELIUGA}, models/deepseek-llm-7B-base and deepseek-llm-7B-chat/manifest.yaml; "
                f"{_DEEPSEEK_LLM_SOURCE}; code-index file 54293650437 (DeepSeek-LLM-7B: 6,910,365,696 parameters in "
                "273 tensors, 4096 / 30 layers / 32 heads / vocab 102,400)"),
     "verification": ("shapes from the GGUF manifests (base and chat equal); 273 tensors = 30 x 9 + embedding + norm + "
                      f"lm_head, so the head is untied; {_LLAMA_DEFAULTS_NOTE}; count = checkpoint"),
     "measured_params": 6910365696,
     "config": {**_DEEPSEEK_LLM, "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
                "num_hidden_layers": 30, "num_key_value_heads": 32}},
    {"name": "deepseek-llm-67b", "display_name": "DeepSeek-LLM-67B", "hf_id": "deepseek-ai/deepseek-llm-67b-base",
     "aliases": ["deepseek-ai/deepseek-llm-67b-chat"],
     "source": (f"{_LELIUGA}, models/deepseek-llm-67b-base and deepseek-llm-67b-chat/manifest.yaml; "
                f"{_DEEPSEEK_LLM_SOURCE}"),
     "verification": ("shapes from the GGUF manifests (base and chat equal: 95 layers, 8192, 64 heads, 8 kv heads, "
                      "22016, vocab 102400, 4096 context); untied head as the 7B (not verified for 67B); "
                      f"{_LLAMA_DEFAULTS_NOTE}; published 67B"),
     "config": {**_DEEPSEEK_LLM, "hidden_size": 8192, "intermediate_size": 22016, "num_attention_heads": 64,
                "num_hidden_layers": 95, "num_key_value_heads": 8}},
    {"name": "deepseek-coder-6.7b", "display_name": "DeepSeek-Coder-6.7B",
     "hf_id": "deepseek-ai/deepseek-coder-6.7b-base",
     "aliases": ["deepseek-ai/deepseek-coder-6.7b-instruct"],
     "source": (f"{_LELIUGA}, models/deepseek-coder-6.7B-base and deepseek-coder-6.7B-instruct/manifest.yaml; "
                "xorbitsai/inference, doc/source/models/builtin/llm/deepseek-coder.rst@2e14922c08ef (context 16384); "
                "code-index files 68827719748 and 68884777541 (model registry: base and instruct total_parameters "
                "6,740,512,768, 32 layers, 4096, 11008, 32 heads, 32 kv heads, vocab 32256)"),
     "verification": ("shapes from the GGUF manifests and the registry (base and instruct equal); the count matches "
                      "an untied head; rope_scaling (linear) left out: no effect on counts or memory; "
                      f"{_LLAMA_DEFAULTS_NOTE}"),
     "measured_params": 6740512768,
     "config": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
                "max_position_embeddings": 16384, "model_type": "llama", "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32, "tie_word_embeddings": False, "vocab_size": 32256}},
    {"name": "qwen1.5-7b", "display_name": "Qwen1.5-7B", "hf_id": "Qwen/Qwen1.5-7B",
     "aliases": ["Qwen/Qwen1.5-7B-Chat"],
     "source": ("huggingface/transformers, examples/pytorch/torchacc/qwen/Qwen1.5-7B/config.json@f092c38c0bf5 (a copy "
                "of the checkpoint's config.json) and model.safetensors.index.json (total_size 15,442,649,088 bytes "
                "of bf16 = 7,721,324,544 parameters); xorbitsai/inference qwen1.5-chat docs (context 32768)"),
     "verification": ("config.json verbatim; count = the checkpoint index; the Chat upload of each Qwen1.5 size has "
                      "the base shapes (README: base and chat per size)"),
     "measured_params": 7721324544,
     "config": {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
                "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
                "intermediate_size": 11008, "max_position_embeddings": 32768, "max_window_layers": 28,
                "model_type": "qwen2", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
                "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": False,
                "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}},
    {"name": "qwen1.5-moe-a2.7b", "display_name": "Qwen1.5-MoE-A2.7B", "hf_id": "Qwen/Qwen1.5-MoE-A2.7B",
     "aliases": ["Qwen/Qwen1.5-MoE-A2.7B-Chat"],
     "source": (f"{_MLC} [qwen2moe: the config.json]; code-index file 11134031260 (Qwen1.5-MoE-A2.7B-Chat-GPTQ-Int4 "
                f"config.json: the same fields); {_KERAS}, keras_hub/src/models/qwen_moe/qwen_moe_presets.py "
                "[qwen1.5_moe_2.7b_en: 14,315,784,192]"),
     "verification": ("config.json verbatim (the Chat upload has the same shapes); 60 experts of 1408, top 4, a "
                      "5632-wide shared expert with its sigmoid gate; count = keras-hub preset"),
     "measured_params": 14315784192,
     "config": {"architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
                "decoder_sparse_step": 1, "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 2048,
                "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 32768,
                "max_window_layers": 21, "model_type": "qwen2_moe", "moe_intermediate_size": 1408,
                "norm_topk_prob": False, "num_attention_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
                "num_hidden_layers": 24, "num_key_value_heads": 16, "output_router_logits": False,
                "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
                "shared_expert_intermediate_size": 5632, "sliding_window": 32768, "tie_word_embeddings": False,
                "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}},
    {"name": "qwen2.5-math-7b", "display_name": "Qwen2.5-Math-7B", "hf_id": "Qwen/Qwen2.5-Math-7B",
     "aliases": ["Qwen/Qwen2.5-Math-7B-Instruct", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"],
     "source": (f"{_LITGPT} [Qwen2.5-Math-7B, Qwen2.5-Math-7B-Instruct]; {_KERAS}, keras_hub/src/models/qwen/"
                "qwen_presets.py [qwen2.5_math_7b_en, qwen2.5_math_instruct_7b_en: 7,615,616,512]"),
     "verification": ("Qwen2.5-7B shapes with a 4096 context and rope_theta 10000 (litgpt), so its own row rather than "
                      "an alias; the keras-hub count equals the untied Qwen2.5-7B count; sliding-window keys left to "
                      "the Qwen2Config defaults (off); alias deepseek-ai/DeepSeek-R1-Distill-Qwen-7B (distilled on "
                      "this base): code-index file 20755046153 prints its tensors (embed and lm_head both 152064 x "
                      "3584: untied; 28 layers of 3584 / 512-wide k,v / 18944 with q/k/v biases) and 7,615,616,512 in "
                      "all = this count; its 131072 positions change neither parameters nor memory"),
     "measured_params": 7615616512,
     "config": {"architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu", "hidden_size": 3584,
                "intermediate_size": 18944, "max_position_embeddings": 4096, "model_type": "qwen2",
                "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
                "rope_theta": 10000.0, "tie_word_embeddings": False, "use_sliding_window": False,
                "vocab_size": 152064}},
    {"name": "smollm2-135m", "display_name": "SmolLM2-135M", "hf_id": "HuggingFaceTB/SmolLM2-135M",
     "aliases": ["HuggingFaceTB/SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM-135M",
                 "HuggingFaceTB/SmolLM-135M-Instruct"],
     "source": (f"{_MLC} [smollm2_135m]; {_LITGPT} [SmolLM2-135M]; {_TORCHTUNE}, torchtune/models/smol/"
                "_model_builders.py [smollm2_135m]; code-index file 71366605573 (SmolLM2-135M-Instruct: 134,515,008 "
                "params)"),
     "verification": (f"{_SMOLLM2_NOTE}; tied embeddings; count = the published figure; aliases "
                      f"HuggingFaceTB/SmolLM-135M(-Instruct): {_SMOLLM1_NOTE.format(key='smollm_135m')}; "
                      "code-index file 14269230532 (the Hub's safetensors total of unsloth/SmolLM-135M: "
                      "134,515,008 = this count)"),
     "measured_params": 134515008,
     "config": {**_SMOLLM2, "hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9,
                "num_hidden_layers": 30, "num_key_value_heads": 3, "rope_theta": 100000}},
    {"name": "smollm2-360m", "display_name": "SmolLM2-360M", "hf_id": "HuggingFaceTB/SmolLM2-360M",
     "aliases": ["HuggingFaceTB/SmolLM2-360M-Instruct", "HuggingFaceTB/SmolLM-360M",
                 "HuggingFaceTB/SmolLM-360M-Instruct"],
     "source": (f"{_MLC} [smollm2_360m]; {_LITGPT} [SmolLM2-360M]; {_TORCHTUNE}, torchtune/models/smol/"
                "_model_builders.py [smollm2_360m]"),
     "verification": (f"{_SMOLLM2_NOTE}; tied embeddings; aliases HuggingFaceTB/SmolLM-360M(-Instruct): "
                      f"{_SMOLLM1_NOTE.format(key='smollm_360m')}; code-index file 14269230532 (the Hub's "
                      "safetensors total of unsloth/SmolLM-360M: 361,821,120 = this row's count)"),
     "config": {**_SMOLLM2, "hidden_size": 960, "intermediate_size": 2560, "num_attention_heads": 15,
                "num_hidden_layers": 32, "num_key_value_heads": 5, "rope_theta": 100000}},
    {"name": "smollm2-1.7b", "display_name": "SmolLM2-1.7B", "hf_id": "HuggingFaceTB/SmolLM2-1.7B",
     "aliases": ["HuggingFaceTB/SmolLM2-1.7B-Instruct", "HuggingFaceTB/SmolLM-1.7B",
                 "HuggingFaceTB/SmolLM-1.7B-Instruct"],
     "source": (f"{_MLC} [smollm2_1_7b, commented out]; {_LITGPT} [SmolLM2-1.7B]; {_TORCHTUNE}, torchtune/models/"
                "smol/_model_builders.py [smollm2_1_7b: 24 layers, 32 heads, 32 kv heads, 2048, 8192, rope 130000]"),
     "verification": (f"{_SMOLLM2_NOTE}; tied embeddings; MHA; aliases HuggingFaceTB/SmolLM-1.7B(-Instruct): "
                      f"{_SMOLLM1_NOTE.format(key='smollm_1_7b')}; code-index file 68688959620 (SmolLM2-1.7B-"
                      "Instruct: 1,711,376,384 = this row's count)"),
     "config": {**_SMOLLM2, "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
                "num_hidden_layers": 24, "num_key_value_heads": 32, "rope_theta": 130000}},
    {"name": "olmo-2-1124-7b", "display_name": "OLMo-2-1124-7B", "hf_id": "allenai/OLMo-2-1124-7B",
     "aliases": ["allenai/OLMo-2-1124-7B-Instruct"],
     "source": f"{_MLC} [olmo2_7b: the config.json]; {_LITGPT} [OLMo-2-1124-7B, OLMo-2-1124-7B-Instruct]",
     "verification": ("config.json verbatim; litgpt agrees (q/k norm, 4096 context, vocab 100352) and gives the "
                      "Instruct upload the same fields"),
     "config": {**_OLMO2, "hidden_size": 4096, "intermediate_size": 11008, "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32}},
    {"name": "olmo-2-1124-13b", "display_name": "OLMo-2-1124-13B", "hf_id": "allenai/OLMo-2-1124-13B",
     "aliases": ["allenai/OLMo-2-1124-13B-Instruct"],
     "source": f"{_MLC} [olmo2_13b: the config.json]; {_LITGPT} [OLMo-2-1124-13B, OLMo-2-1124-13B-Instruct]",
     "verification": "config.json verbatim; litgpt agrees and gives the Instruct upload the same fields",
     "config": {**_OLMO2, "hidden_size": 5120, "intermediate_size": 13824, "num_attention_heads": 40,
                "num_hidden_layers": 40, "num_key_value_heads": 40}},
]

_MB_NEMOTRON = ("NVIDIA-NeMo/Megatron-Bridge, src/megatron/bridge/models/nemotron/nemotron_provider.py@dc805f5cf9e0 "
                "[{provider}; NemotronModelProvider: LayerNorm, squared_relu, rope with rotary_percent 0.5, "
                "add_bias_linear false, untied embeddings]; tests/unit_tests/models/nemotron/test_nemotron_provider.py "
                "[the same shapes]; huggingface/transformers, models/nemotron/configuration_nemotron.py "
                "(NemotronConfig: vocab_size 256000, relu2, norm_eps 1e-5, partial_rotary_factor 0.5)")
_NEMOTRON = {"architectures": ["NemotronForCausalLM"], "attention_bias": False, "hidden_act": "relu2",
             "max_position_embeddings": 4096, "mlp_bias": False, "model_type": "nemotron", "norm_eps": 1e-05,
             "partial_rotary_factor": 0.5, "rope_theta": 10000.0, "tie_word_embeddings": False, "vocab_size": 256000}
_NEMOTRON_NOTE = ("Megatron-Bridge's provider shapes in the HF NemotronForCausalLM form (its NemotronBridge maps "
                  "linear_fc1 -> up_proj, linear_fc2 -> down_proj, LayerNorm weight and bias); the vocabulary is "
                  "NemotronConfig's 256000 (the providers take it from the tokenizer)")

HF_CONFIG_MODELS += [
    {"name": "nemotron-3-8b", "display_name": "Nemotron-3-8B", "hf_id": "nvidia/nemotron-3-8b-base-4k",
     "aliases": ["nemotron-8b", "nemotron3-8b"],
     "source": _MB_NEMOTRON.format(provider="Nemotron3ModelProvider8B: 32 layers, 4096, 32 heads, MHA, 16384"),
     "verification": _NEMOTRON_NOTE,
     "config": {**_NEMOTRON, "hidden_size": 4096, "intermediate_size": 16384, "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 32}},
    {"name": "nemotron-4-340b", "display_name": "Nemotron-4-340B", "hf_id": "nvidia/Nemotron-4-340B-Base",
     "aliases": ["nvidia/Nemotron-4-340B-Instruct", "nemotron-340b", "nemotron4-340b"],
     "source": _MB_NEMOTRON.format(provider="Nemotron4ModelProvider340B: 96 layers, 18432, 96 heads, 8 query "
                                            "groups, 73728; its test: 'Should match nvidia/Nemotron-4-340B-Base/"
                                            "Instruct'"),
     "verification": _NEMOTRON_NOTE,
     "config": {**_NEMOTRON, "hidden_size": 18432, "intermediate_size": 73728, "num_attention_heads": 96,
                "num_hidden_layers": 96, "num_key_value_heads": 8}},
]


# --- more benchmarked HF ids (InternLM2, Qwen1.5 14B/32B/72B, Qwen2-57B-A14B, SOLAR, Yi-1.5, DeepSeek-Coder-33B).
# "code-index file N" as above; "model card" files are automated cards that print the Hub's safetensors metadata
# count of one revision.

_INTERNLM2 = {"architectures": ["InternLM2ForCausalLM"], "bias": False, "bos_token_id": 1, "eos_token_id": 2,
              "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 32768,
              "model_type": "internlm2", "pad_token_id": 2, "rms_norm_eps": 1e-05, "rope_theta": 1000000,
              "tie_word_embeddings": False, "use_cache": True, "vocab_size": 92544}
_INTERNEVO = "InternLM/InternEvo, configs/_base_/models/internlm2_{size}.py@0a4ffead3b58"
_QWEN15 = {"architectures": ["Qwen2ForCausalLM"], "hidden_act": "silu", "max_position_embeddings": 32768,
           "model_type": "qwen2", "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": False,
           "use_sliding_window": False, "vocab_size": 152064}
_QWEN15_SHAPES = ("code-index file 14914603482 (Baidu aiak_training_llm Qwen registry [qwen1.5-{size}: {shapes}, "
                  "vocab 152064, QKV bias, untied]); code-index file 5379367949 (table of the Qwen config.json "
                  "files [Qwen1.5-{size}: 32K context, untied])")
_QWEN15_NOTE = ("shapes from the two tables (they agree); rms_norm_eps and rope_theta as in the family's verbatim "
                "7B and 110B configs (1e-06, 1e6; qwen1.5-7b row, code-index file 7768956847 [Qwen1_5_110B]), no "
                "effect on counts or memory; the Chat upload has the base shapes (README: base and chat per size)")

HF_CONFIG_MODELS += [
    {"name": "internlm2-7b", "display_name": "InternLM2-7B", "hf_id": "internlm/internlm2-7b",
     "aliases": ["internlm/internlm2-chat-7b"],
     "source": (f"{_MLC} [internlm2: an InternLM2 7B config.json, transformers 4.37.1]; "
                f"{_INTERNEVO.format(size='7B')} (4096, 32 layers, 32 heads, 8 kv heads, mlp_ratio 3.5, vocab "
                "92544, no bias, rms 1e-5, rope_base 1e6); code-index file 66695423343 (audit of an InternLM2 "
                "checkpoint: 227 tensors, 7,737,708,544 elements)"),
     "verification": ("mlc-llm's config.json less attn_implementation (rope_scaling null: the InternLM2.5 row has "
                      "the same shapes with dynamic factor 2.0); InternEvo's InternLM2 7B model config agrees "
                      "(3.5 x 4096 = 14336); count = the checkpoint audit (227 tensors = 32 x 7 + embedding, norm, "
                      "output: untied); the -chat upload has the same shapes"),
     "measured_params": 7737708544,
     "config": {**_INTERNLM2, "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
                "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_scaling": None}},
    {"name": "internlm2-20b", "display_name": "InternLM2-20B", "hf_id": "internlm/internlm2-20b",
     "aliases": ["internlm/internlm2-chat-20b", "internlm/internlm2_5-20b", "internlm/internlm2_5-20b-chat"],
     "source": (f"{_INTERNEVO.format(size='20B')} (6144, 48 layers, 48 heads, 8 kv heads, mlp_ratio 8/3, vocab "
                "92544, no bias, rms 1e-5, rope_base 1e6); code-index file 41257639471 (InternLM2 20B, "
                "InternLM2ForCausalLM, 32K); code-index file 12439498600 (internlm/internlm2_5-20b-chat: "
                "19,861,149,696)"),
     "verification": ("InternEvo's InternLM2 20B model config in the HF InternLM2 form (8/3 x 6144 = 16384), with "
                      "the keys of the 7B config.json; rope_scaling not verified (left out: no effect on counts or "
                      "memory); published 20B; computed 19,861,149,696 = the InternLM2.5-20B-chat count (corroborates "
                      "the shapes, not this checkpoint's own count); aliases internlm/internlm2_5-20b(-chat): no "
                      "verbatim config.json found, but the chat upload's safetensors metadata count (code-index file "
                      "12439498600, read with HfApi.get_safetensors_metadata) is this row's 19,861,149,696 to the "
                      "parameter; the reference's InternLM2.5-20B entry has model_type internlm2"),
     "config": {**_INTERNLM2, "hidden_size": 6144, "intermediate_size": 16384, "num_attention_heads": 48,
                "num_hidden_layers": 48, "num_key_value_heads": 8}},
    {"name": "qwen1.5-14b", "display_name": "Qwen1.5-14B", "hf_id": "Qwen/Qwen1.5-14B",
     "aliases": ["Qwen/Qwen1.5-14B-Chat"],
     "source": (_QWEN15_SHAPES.format(size="14b", shapes="40 layers, 5120, 13696, 40 heads, MHA") + "; "
                "code-index file 65866616769 (model card of Qwen/Qwen1.5-14B@dce4b190d344: 14,167,290,880, "
                "safetensors metadata, 32,768 context); code-index file 22561498616 (base_model_hf "
                "Qwen/Qwen1.5-14B: 5120, 40 heads, 40 kv heads, 40 layers, 14,167,290,880)"),
     "verification": f"{_QWEN15_NOTE}; count = the checkpoint's safetensors metadata",
     "measured_params": 14167290880,
     "config": {**_QWEN15, "hidden_size": 5120, "intermediate_size": 13696, "num_attention_heads": 40,
                "num_hidden_layers": 40, "num_key_value_heads": 40}},
    {"name": "qwen1.5-32b", "display_name": "Qwen1.5-32B", "hf_id": "Qwen/Qwen1.5-32B",
     "aliases": ["Qwen/Qwen1.5-32B-Chat"],
     "source": (_QWEN15_SHAPES.format(size="32b", shapes="64 layers, 5120, 27392, 40 heads, 8 query groups") + "; "
                "code-index file 65739163886 (model card of Qwen/Qwen1.5-32B@cefef80dc06a: 32,512,218,112, "
                "safetensors metadata); code-index file 10962149826 (ollama show of the qwen2-architecture "
                "qwen:32b GGUF: 64 blocks, 5120, 27392, 40 heads, 8 kv heads, rms 1e-6, rope 1e6, 32768 context, "
                "parameter_count 32,512,218,112)"),
     "verification": (f"{_QWEN15_NOTE}; GQA with 8 kv heads (both tables and the GGUF); the GGUF metadata states "
                      "rms_norm_eps 1e-06 and rope 1e6 for this size; count = the checkpoint's safetensors "
                      "metadata"),
     "measured_params": 32512218112,
     "config": {**_QWEN15, "hidden_size": 5120, "intermediate_size": 27392, "num_attention_heads": 40,
                "num_hidden_layers": 64, "num_key_value_heads": 8}},
    {"name": "qwen1.5-72b", "display_name": "Qwen1.5-72B", "hf_id": "Qwen/Qwen1.5-72B",
     "aliases": ["Qwen/Qwen1.5-72B-Chat"],
     "source": (_QWEN15_SHAPES.format(size="72b", shapes="80 layers, 8192, 24576, 64 heads, MHA") + "; "
                "code-index file 69789550621 (research note: 'original configs give ... 72B: 80 layers, hidden "
                "width 8,192, FFN width 24,576, 64 query/KV heads', vocabulary 152,064, untied; its tensor-"
                "dimension count 72,287,920,128)"),
     "verification": (f"{_QWEN15_NOTE}; published 72B; no checkpoint count found: the note's count is computed "
                      "from the original config.json, independently of trainplan"),
     "config": {**_QWEN15, "hidden_size": 8192, "intermediate_size": 24576, "num_attention_heads": 64,
                "num_hidden_layers": 80, "num_key_value_heads": 64}},
    {"name": "qwen2-57b-a14b", "display_name": "Qwen2-57B-A14B", "hf_id": "Qwen/Qwen2-57B-A14B",
     "aliases": ["Qwen/Qwen2-57B-A14B-Instruct"],
     "source": ("code-index file 634555490 (TensorRT-LLM test: QWEN2_57B_A14B_CONFIG, the config.json); "
                "InternLM/InternEvo, configs/57B_qwen2_MoE.py@1f3c88505217 (3584, 28 heads, 4 kv heads, 28 layers, "
                "vocab 151936, 64 experts, top 8, mlp_ratio 5/7, 8 shared-expert widths); code-index file "
                "66131465366 (model card of Qwen/Qwen2-57B-A14B@f29d6a182178: 57,408,658,944, safetensors "
                "metadata, 131,072 context); code-index file 65924233478 (the -Instruct card: 57,408,658,944, "
                "32,768 context); code-index file 59924751875 (Hub info of Qwen/Qwen2-57B-A14B: safetensors total "
                "57408658944)"),
     "verification": ("config.json verbatim (torch_dtype / transformers_version left out); 64 experts of 2560, "
                      "top 8, a 20480-wide shared expert with its sigmoid gate; InternEvo's config agrees "
                      "(5/7 x 3584 = 2560, 8 x 2560 = 20480); count = the checkpoint's safetensors metadata; the "
                      "Instruct upload has the same count and differs in context (32768), which changes neither "
                      "parameters nor memory"),
     "measured_params": 57408658944,
     "config": {"architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
                "decoder_sparse_step": 1, "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 3584,
                "initializer_range": 0.02, "intermediate_size": 18944, "max_position_embeddings": 131072,
                "max_window_layers": 28, "model_type": "qwen2_moe", "moe_intermediate_size": 2560,
                "norm_topk_prob": False, "num_attention_heads": 28, "num_experts": 64, "num_experts_per_tok": 8,
                "num_hidden_layers": 28, "num_key_value_heads": 4, "output_router_logits": False,
                "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
                "shared_expert_intermediate_size": 20480, "sliding_window": 131072, "tie_word_embeddings": False,
                "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}},
    {"name": "solar-10.7b", "display_name": "SOLAR-10.7B-v1.0", "hf_id": "upstage/SOLAR-10.7B-v1.0",
     "aliases": ["upstage/SOLAR-10.7B-Instruct-v1.0", "solar-10.7b-instruct"],
     "source": (f"{_LELIUGA}, models/SOLAR-10.7B-v1.0 and SOLAR-10.7B-Instruct-v1.0/manifest.yaml (llama: 48 "
                "layers, 4096, 32 heads, 8 kv heads, 14336, vocab 32000, context 4096); code-index file "
                "14269230532 (upstage/SOLAR-10.7B-Instruct-v1.0: model_size 10,731,524,096)"),
     "verification": ("shapes from the GGUF manifests (base and Instruct equal); the count matches an untied head; "
                      f"{_LLAMA_DEFAULTS_NOTE}; count = the Instruct upload's (same shapes)"),
     "measured_params": 10731524096,
     "config": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
                "max_position_embeddings": 4096, "model_type": "llama", "num_attention_heads": 32,
                "num_hidden_layers": 48, "num_key_value_heads": 8, "tie_word_embeddings": False,
                "vocab_size": 32000}},
    {"name": "yi-1.5-9b", "display_name": "Yi-1.5-9B", "hf_id": "01-ai/Yi-1.5-9B",
     "aliases": ["01-ai/Yi-1.5-9B-Chat"],
     "source": ("code-index file 66093221914 (model card of 01-ai/Yi-1.5-9B-Chat@1a0fc698cf88: 8,829,407,232, "
                "safetensors metadata, 4,096 context); code-index file 55097465959 (Yi-1.5-9B-Chat: 48 layers, "
                "4096, 11008, 32 heads, 4 KV heads, vocab 64000, max_position_embeddings 4096, rope_theta 5e6, "
                "8,829,407,232); code-index file 69026940684 (model registry: Yi-1.5-9B-Chat-16K, the same shapes "
                "and count); code-index file 7768956847 [Yi_1_5_6B, Yi_1_5_34B: the family's verbatim configs]; "
                "xorbitsai/inference, doc/source/models/builtin/llm/yi-1.5.rst@0ef75196ad34 (Yi-1.5: continuously "
                "pre-trained on Yi; 01-ai/Yi-1.5-9B, context 4096)"),
     "verification": ("shapes of the Chat uploads, which Yi-1.5-9B shares (Yi-1.5 continues pre-training Yi; the "
                      "same registry gives Yi-9B these shapes and count, code-index file 68846515806); "
                      "rms_norm_eps 1e-06 and the other keys as in the 6B / 34B Yi-1.5 config.json (no effect on "
                      "counts or memory); count = the Chat upload's safetensors metadata"),
     "measured_params": 8829407232,
     "config": {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "hidden_act": "silu",
                "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 4096,
                "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 48, "num_key_value_heads": 4,
                "rms_norm_eps": 1e-06, "rope_theta": 5000000.0, "tie_word_embeddings": False, "vocab_size": 64000}},
    {"name": "yi-1.5-34b", "display_name": "Yi-1.5-34B", "hf_id": "01-ai/Yi-1.5-34B",
     "aliases": ["01-ai/Yi-1.5-34B-Chat"],
     "source": ("code-index file 7768956847 [Yi_1_5_34B: the config.json]; code-index file 57174331611 "
                "[yi_34B, 'yi-1.5-34B': the same fields]; code-index file 65729927742 (model card of "
                "01-ai/Yi-1.5-34B@58a29f6dca2a: 34,388,917,248, safetensors metadata); code-index file "
                "65732321371 (the -Chat card: 34,388,917,248)"),
     "verification": ("config.json verbatim (torch_dtype / transformers_version left out); the Yi-34B shapes "
                      "(that row's source is this config) with rms_norm_eps 1e-06; count = the checkpoint's "
                      "safetensors metadata; the Chat upload has the same count"),
     "measured_params": 34388917248,
     "config": {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 7168,
                "initializer_range": 0.02, "intermediate_size": 20480, "max_position_embeddings": 4096,
                "model_type": "llama", "num_attention_heads": 56, "num_hidden_layers": 60, "num_key_value_heads": 8,
                "pad_token_id": 0, "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
                "rope_theta": 5000000.0, "tie_word_embeddings": False, "use_cache": True, "vocab_size": 64000}},
    {"name": "deepseek-coder-33b", "display_name": "DeepSeek-Coder-33B",
     "hf_id": "deepseek-ai/deepseek-coder-33b-base",
     "aliases": ["deepseek-ai/deepseek-coder-33b-instruct"],
     "source": (f"{_LELIUGA}, models/deepseek-coder-33B-base and deepseek-coder-33B-instruct/manifest.yaml (llama: "
                "62 layers, 7168, 56 heads, 8 kv heads, 19200, vocab 32256, context 16384); code-index file "
                "57751031036 (parameter count of the deepseek-coder-33b-instruct snapshot 61dc97b922b1: "
                "33,342,991,360)"),
     "verification": ("shapes from the GGUF manifests (base and instruct equal); the count matches an untied head; "
                      f"rope_scaling left out as for the 6.7B row: no effect on counts or memory; "
                      f"{_LLAMA_DEFAULTS_NOTE}; count = the instruct snapshot's (same shapes)"),
     "measured_params": 33342991360,
     "config": {"architectures": ["LlamaForCausalLM"], "hidden_size": 7168, "intermediate_size": 19200,
                "max_position_embeddings": 16384, "model_type": "llama", "num_attention_heads": 56,
                "num_hidden_layers": 62, "num_key_value_heads": 8, "tie_word_embeddings": False,
                "vocab_size": 32256}},
]


# --- rows kept in tools/model_rows/*.py (one file per batch, each a ROWS list of the form above) ----------------
ROW_FILES = ("more_models.py", "new_types.py", "new_types_2.py", "wave4.py", "wave5a.py", "wave5b.py", "wave5c.py")


def _row_file(name: str) -> list[dict[str, Any]]:
    path = Path(__file__).resolve().parent / "model_rows" / name
    module_spec = importlib.util.spec_from_file_location(f"model_rows_{path.stem}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return list(module.ROWS)


def hf_config_rows() -> list[dict[str, Any]]:
    """The HF_CONFIG_MODELS rows, then those of ROW_FILES, in the catalog's form (JSON nulls listed in
    config_null_keys)."""
    out = []
    for model in HF_CONFIG_MODELS + [row for name in ROW_FILES for row in _row_file(name)]:
        config = {k: v for k, v in model["config"].items() if v is not None}
        nulls = [k for k, v in model["config"].items() if v is None]
        row = {k: v for k, v in model.items() if k != "config"}
        # ALIASES / ALIAS_NOTES keyed by a row's display name reach it as they reach a reference row
        wave = [a for a in ALIASES.get(row["display_name"], []) if a not in row["aliases"]]
        if wave:
            row["aliases"] = [*row["aliases"], *wave]
            row["verification"] = "; ".join([row["verification"], *ALIAS_NOTES.get(row["display_name"], [])])
        if nulls:
            row["config_null_keys"] = nulls
        row["config"] = config
        out.append(row)
    return out


def catalog_id(display: str) -> str:
    return IDS.get(display, display.lower().replace(" ", "-"))


def model_type(rec: dict[str, Any]) -> str:
    """The HF model_type of the catalog row (the reference annotates some)."""
    raw = str(rec["model_type"])
    if raw.startswith("falcon"):
        return "falcon"
    if raw.startswith("gemma3"):
        return "gemma3_text"   # multimodal checkpoints: the row holds the text_config
    return raw


def condense_source(text: str) -> str:
    """'github owner/repo, path @ commit (comment) ...' -> 'owner/repo path@commit [key]'."""
    index = re.match(r"GitHub code index \(find_string\) file id (\d+)", text)
    if index:
        return f"code-index file {index.group(1)}"
    page = re.match(r"stored page (\S+)", text)
    if page:
        return page.group(1)
    key = re.search(r"(?:preset )?key '([^']+)'", text)
    body = re.sub(r"^github ", "", text)
    while re.search(r"\([^()]*\)", body):
        body = re.sub(r"\s*\([^()]*\)", "", body)
    body = re.sub(r",?\s*(?:preset )?key '[^']+'.*$", "", body)
    body = re.sub(r"\s+@\s+", "@", body.strip().rstrip(",;"))
    return f"{body} [{key.group(1)}]" if key else body


def _rope_scaling(rec: dict[str, Any]) -> dict[str, Any] | None:
    scaling = rec.get("rope_scaling")
    if not scaling:
        return None
    return {k: v for k, v in scaling.items() if k != "applies_to"}   # annotation, not an HF key


def _llama_like(rec: dict[str, Any], mt: str) -> dict[str, Any]:
    hidden, heads = rec["hidden_size"], rec["num_attention_heads"]
    cfg: dict[str, Any] = {
        "hidden_size": hidden, "num_hidden_layers": rec["num_hidden_layers"],
        "num_attention_heads": heads, "num_key_value_heads": rec["num_key_value_heads"],
        "intermediate_size": rec["intermediate_size"], "vocab_size": rec["vocab_size"],
        "max_position_embeddings": rec["max_position_embeddings"],
        "tie_word_embeddings": rec["tie_word_embeddings"],
        "rms_norm_eps": rec["norm_eps"], "rope_theta": rec["rope_theta"],
        "rope_scaling": _rope_scaling(rec),
    }
    head_dim = rec.get("head_dim")
    explicit_head_dim = mt in ("llama", "mistral", "mixtral", "qwen3", "qwen3_moe", "gemma2",
                               "gemma3_text")
    if head_dim and (explicit_head_dim or head_dim * heads != hidden):
        cfg["head_dim"] = head_dim
    act_key = "hidden_activation" if mt.startswith("gemma") else "hidden_act"
    cfg[act_key] = rec["hidden_act"]
    if mt in ("llama", "qwen3", "qwen3_moe", "gemma2", "gemma3_text"):
        cfg["attention_bias"] = rec["attention_qkv_bias"]
    if mt == "llama":
        cfg["mlp_bias"] = rec["mlp_bias"]
    if mt in ("qwen2", "qwen3", "qwen3_moe"):
        cfg["use_sliding_window"] = rec["sliding_window"] is not None
    if mt == "internlm2":
        cfg["bias"] = rec["attention_qkv_bias"]
    if rec["sliding_window"] is not None:
        cfg["sliding_window"] = rec["sliding_window"]
    return cfg


def _moe_keys(rec: dict[str, Any], mt: str) -> dict[str, Any]:
    moe = rec["moe"]
    if mt == "mixtral":
        return {"num_local_experts": moe["num_local_experts"],
                "num_experts_per_tok": moe["num_experts_per_tok"],
                "router_aux_loss_coef": moe.get("router_aux_loss_coef")}
    if mt == "qwen3_moe":
        qwen = ("num_experts", "num_experts_per_tok", "moe_intermediate_size",
                "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob")
        return {k: moe[k] for k in qwen}
    keep = ("n_routed_experts", "n_shared_experts", "num_experts_per_tok",
            "moe_intermediate_size", "first_k_dense_replace", "moe_layer_freq", "n_group",
            "topk_group", "topk_method", "scoring_func", "norm_topk_prob",
            "routed_scaling_factor")
    cfg = {k: moe[k] for k in keep if k in moe}
    cfg.update({k: v for k, v in rec["mla"].items() if k != "note"})
    cfg["attention_bias"] = rec["attention_qkv_bias"]
    if rec.get("mtp"):
        cfg["num_nextn_predict_layers"] = rec["mtp"]["num_nextn_predict_layers"]
    return cfg


def _expect_4h(rec: dict[str, Any], why: str) -> None:
    if rec["intermediate_size"] != 4 * rec["hidden_size"]:
        raise ValueError(f"{rec['hf_repo_id']}: intermediate_size {rec['intermediate_size']} != "
                         f"4 x hidden_size {rec['hidden_size']}, but {why}")


def _classic(rec: dict[str, Any], mt: str) -> dict[str, Any]:
    h, layers, heads = rec["hidden_size"], rec["num_hidden_layers"], rec["num_attention_heads"]
    common = {"vocab_size": rec["vocab_size"], "tie_word_embeddings": rec["tie_word_embeddings"]}
    if mt == "gpt2":
        _expect_4h(rec, "the row leaves n_inner absent (-> 4 * n_embd)")
        return {**common, "n_embd": h, "n_layer": layers, "n_head": heads,
                "n_positions": rec["max_position_embeddings"],
                "activation_function": rec["hidden_act"], "layer_norm_epsilon": rec["norm_eps"]}
    if mt == "bloom":
        _expect_4h(rec, "BLOOM's MLP is always 4 * hidden")
        return {**common, "n_embed": h, "n_layer": layers, "n_head": heads,
                "layer_norm_epsilon": rec["norm_eps"]}
    if mt == "opt":
        return {**common, "hidden_size": h, "num_hidden_layers": layers,
                "num_attention_heads": heads, "ffn_dim": rec["intermediate_size"],
                "max_position_embeddings": rec["max_position_embeddings"],
                "word_embed_proj_dim": h, "do_layer_norm_before": True,
                "enable_bias": rec["mlp_bias"], "activation_function": rec["hidden_act"]}
    if mt == "gpt_neox":
        return {**common, "hidden_size": h, "num_hidden_layers": layers,
                "num_attention_heads": heads, "intermediate_size": rec["intermediate_size"],
                "max_position_embeddings": rec["max_position_embeddings"],
                "hidden_act": rec["hidden_act"], "layer_norm_eps": rec["norm_eps"],
                "rotary_pct": 0.25, "rotary_emb_base": rec["rope_theta"],
                "use_parallel_residual": rec["parallel_attn_mlp"]}
    _expect_4h(rec, "the row leaves ffn_hidden_size absent (-> 4 * hidden_size)")
    new_arch = rec["model_type"] == "falcon"   # Falcon-40B; the 7B is the legacy RefinedWebModel
    cfg = {**common, "hidden_size": h, "num_hidden_layers": layers, "num_attention_heads": heads,
           "new_decoder_architecture": new_arch, "multi_query": rec["num_key_value_heads"] == 1,
           "parallel_attn": rec["parallel_attn_mlp"], "bias": rec["mlp_bias"], "alibi": False,
           "layer_norm_epsilon": rec["norm_eps"], "activation": rec["hidden_act"]}
    if new_arch:
        cfg["num_kv_heads"] = rec["num_key_value_heads"]
    return cfg


def _chatglm(rec: dict[str, Any]) -> dict[str, Any]:
    kv, heads = rec["num_key_value_heads"], rec["num_attention_heads"]
    return {"hidden_size": rec["hidden_size"], "num_layers": rec["num_hidden_layers"],
            "num_attention_heads": heads, "kv_channels": rec["head_dim"],
            "multi_query_attention": kv != heads, "multi_query_group_num": kv,
            "ffn_hidden_size": rec["intermediate_size"], "padded_vocab_size": rec["vocab_size"],
            "seq_length": rec["max_position_embeddings"], "layernorm_epsilon": rec["norm_eps"],
            "rmsnorm": rec["norm_type"] == "RMSNorm", "post_layer_norm": True,
            "add_qkv_bias": rec["attention_qkv_bias"], "add_bias_linear": rec["mlp_bias"],
            "tie_word_embeddings": rec["tie_word_embeddings"]}


def hf_config(display: str, rec: dict[str, Any]) -> dict[str, Any]:
    mt = model_type(rec)
    if mt == "chatglm":
        body = _chatglm(rec)
    elif mt in ("gpt2", "bloom", "opt", "gpt_neox", "falcon"):
        body = _classic(rec, mt)
    else:
        body = _llama_like(rec, mt)
        if rec.get("moe"):
            body.update(_moe_keys(rec, mt))
    cfg = {"model_type": mt, "architectures": [ARCHITECTURES[mt]], **body, **EXTRA.get(display, {})}
    return {k: v for k, v in cfg.items() if v is not None}


def verification(display: str, rec: dict[str, Any]) -> str:
    parts = [rec["verification"]]
    if rec.get("tie_word_embeddings") is None:
        parts.append("tie_word_embeddings not verified: the config-class default applies")
    if rec["model_type"].startswith("gemma3 "):
        parts.append("multimodal checkpoint: this row is its text_config (vision tower not "
                     "counted)")
    if display == "DeepSeek-V2-Lite":
        parts.append("q_lora_rank is null in config.json (plain q_proj)")
    parts += MEASURED_NOTES.get(display, [])
    parts += ALIAS_NOTES.get(display, [])
    return "; ".join(parts)


def rows(reference: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for display, rec in reference.items():
        if display.startswith("_"):
            continue
        if display in SKIP or "encoder-decoder" in rec["model_type"]:
            print(f"skip {display}: {SKIP.get(display, 'encoder-decoder')}")
            continue
        if any(rec.get(k) is None for k in ESSENTIAL):
            print(f"skip {display}: a main field is null")
            continue
        computed = rec.get("computed_params") or {}
        measured = rec.get("measured_params") or {}
        row: dict[str, Any] = {
            "name": catalog_id(display), "display_name": display, "hf_id": rec["hf_repo_id"],
            "aliases": ALIASES.get(display, []),
            "source": "; ".join(condense_source(part) for s in rec["source"]
                                for part in s.split("; github ")),
            "verification": verification(display, rec),
            "measured_params": measured.get("total"),
            "computed_params": computed.get("total"),
            "computed_active_params": computed.get("active_per_token"),
        }
        config = hf_config(display, rec)
        if display == "DeepSeek-V2-Lite":
            config.pop("q_lora_rank", None)
            row["config_null_keys"] = ["q_lora_rank"]
        row["config"] = config
        out.append({k: v for k, v in row.items() if v is not None})
    return out + hf_config_rows()


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)   # a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_table(header: str, table: dict[str, Any], lines: list[str]) -> None:
    lines.append(header)
    nested = {k: v for k, v in table.items() if isinstance(v, dict)}
    lines += [f"{k} = {_toml_value(v)}" for k, v in table.items() if k not in nested]
    for key, sub in nested.items():
        _toml_table(f"[{header.strip('[]')}.{key}]", sub, lines)


def to_toml(models: list[dict[str, Any]]) -> str:
    lines = ["# Generated by tools/build_model_catalog.py from the architecture reference",
             "# (shared/reference/model_configs.json) and the public config.json files it lists in",
             "# HF_CONFIG_MODELS (the rows after the reference's); do not edit by hand: rebuild.",
             "# computed_params: the reference's exact count from these fields (tests check it).",
             "# config_null_keys: keys that are null in config.json (TOML has no null).", ""]
    for model in models:
        _toml_table("[[model]]", model, lines)
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, default=DEFAULT_REFERENCE)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    models = rows(json.loads(args.reference.read_text(encoding="utf-8")))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(to_toml(models), encoding="utf-8")
    print(f"wrote {len(models)} models to {args.out}")
    from trainplan import catalog
    from trainplan.catalog.store import write_snapshot

    catalog.clear_caches()
    print(f"wrote {write_snapshot(catalog.derived_snapshot_values())}")


if __name__ == "__main__":
    main()
