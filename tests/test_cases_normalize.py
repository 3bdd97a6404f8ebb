"""Published cases whose numbers and names are written as text are read as the schema's values
(cases.normalize), scored exactly as the same case written with JSON numbers, and a measured value
that is no number makes that case unpredicted with the reason, never the whole run fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trainplan.cases.accuracy import evaluate
from trainplan.cases.method_words import with_method
from trainplan.cases.normalize import normalized

DATA = Path(__file__).parent / "data"
CASES = [c for name in ("published_dev.json", "published_dev2.json")
         for c in json.loads((DATA / name).read_text(encoding="utf-8"))]
BY_ID = {c["id"]: c for c in CASES}
# a time case and a memory case of the development files, both predicted as written
TIME_ID = "universal-trainer-llama31-lora-1xh100-time"
MEMORY_ID = "universal-trainer-llama31-qlora-1xh100-mem"


@pytest.mark.parametrize(("text", "value"), [
    ("4k", 4096), ("4K", 4096), ("32k", 32768), ("1M", 1048576), ("8192", 8192), ("8,192", 8192), (" 2048 ", 2048),
])
def test_sequence_lengths_as_sources_write_them(text, value):
    case, notes = normalized({"seq_len": text})
    assert case["seq_len"] == value
    assert notes == [f"seq_len {text!r} read as {value}"]


@pytest.mark.parametrize(("key", "text", "value"), [
    ("tokens_per_s_per_gpu", "1,234.5", 1234.5), ("step_time_s", "9.6 s", 9.6), ("step_time_s", "9.6s/it", 9.6),
    ("mfu", "45%", 0.45), ("hfu", "62.7 %", 0.627), ("gpu_hours", "1 720 320", 1720320.0),
    ("tokens_total", "2e12", 2e12),
])
def test_measured_numbers_written_as_text(key, text, value):
    case, _ = normalized({"measured": {key: text}})
    assert case["measured"][key] == pytest.approx(value)


@pytest.mark.parametrize(("measured", "key", "value"), [
    # other names of the same quantity, in the canonical unit (1250 ms = 1.25 s; 41.5 % = 0.415; 10 days = 240 h)
    ({"step_time_ms": 1250}, "step_time_s", 1.25), ({"iter_time_s": "2.5 s"}, "step_time_s", 2.5),
    ({"seconds_per_iteration": 7}, "step_time_s", 7.0), ({"tgs": "3,842"}, "tokens_per_s_per_gpu", 3842.0),
    ({"tokens_per_s": 12000}, "tokens_per_s_reported", 12000.0), ({"mfu_percent": 41.5}, "mfu", 0.415),
    ({"gpu_days": 10}, "gpu_hours", 240.0), ({"total_tokens_per_s": 80000}, "tokens_per_s_total", 80000.0),
])
def test_measured_synonyms(measured, key, value):
    case, notes = normalized({"measured": dict(measured)})
    assert case["measured"][key] == pytest.approx(value)
    [(name, raw)] = measured.items()
    assert notes == [f"measured.{name} {raw!r} read as {key} {case['measured'][key]:g}"]


@pytest.mark.parametrize(("case", "key", "value"), [
    # HF Trainer's train_samples_per_second (all GPUs) x 4096 tokens a packed sample: 12.5 x 4096 = 51,200
    ({"seq_len": 4096, "seq_len_note": "packed to 4096", "measured": {"train_samples_per_second": 12.5}},
     "tokens_per_s_total", 51200.0),
    # per GPU, with the sequence length written as text: 2.5 x 4096 = 10,240
    ({"seq_len": "4k", "seq_len_note": "synthetic/packed pretraining sequences of full length",
      "measured": {"samples_per_s_per_gpu": "2.5"}}, "tokens_per_s_per_gpu", 10240.0),
    ({"seq_len": 2048, "seq_len_note": "The Pile, fixed 2048-token sequences", "measured": {"samples_per_s": 4}},
     "tokens_per_s_total", 8192.0),
])
def test_samples_per_second_of_full_sequences(case, key, value):
    out, _ = normalized(case)
    assert out["measured"][key] == pytest.approx(value)


@pytest.mark.parametrize("case", [
    # samples of unknown length: not read
    {"seq_len": 4096, "seq_len_note": "unpacked alpaca samples (max_seq_len 4096)", "measured": {"samples_per_s": 10}},
    {"seq_len": 4096, "measured": {"samples_per_s": 10}},
    {"seq_len": 4096, "seq_len_note": "packed", "measured": {"samples_per_s": 10, "tokens_per_s_total": 5.0}},
])
def test_samples_per_second_otherwise_left(case):
    out, _ = normalized(case)
    assert out["measured"].get("tokens_per_s_total", 5.0) == 5.0 and "tokens_per_s_per_gpu" not in out["measured"]


@pytest.mark.parametrize(("case", "step_s"), [
    # unpacked samples of any length: HF Trainer's train_samples_per_second counts the global batch's samples a
    # step, so 16 samples / 4.31 samples/s = 3.712 s a step (ms-swift 1.x's benchmark rows)
    ({"micro_batch": 1, "grad_accum": 16, "global_batch": 16, "seq_len": 2048, "seq_len_note": "max_length",
      "measured": {"samples_per_s": 4.31}}, 16 / 4.31),
    # per GPU: one rank's micro-batch x accumulation, 4 x 8 = 32 samples / 2.0 = 16 s
    ({"micro_batch": 4, "grad_accum": 8, "seq_len": 1024, "measured": {"samples_per_s_per_gpu": "2.0"}}, 16.0),
])
def test_samples_per_second_of_any_length_as_the_step_time(case, step_s):
    out, notes = normalized(case)
    assert out["measured"]["step_time_s"] == pytest.approx(step_s)
    assert "tokens_per_s_total" not in out["measured"] and any("read as step_time_s" in n for n in notes)


def test_a_synonym_never_overrides_the_canonical_key():
    case, notes = normalized({"measured": {"step_time_s": 2.0, "step_time_ms": 3000, "tokens_per_s": True}})
    assert case["measured"]["step_time_s"] == 2.0 and "tokens_per_s_reported" not in case["measured"]
    assert notes == []


@pytest.mark.parametrize("measured", [
    {"model_mem": "15 GiB"}, {"what": "12 s per step"}, {"tokens_per_s_per_gpu": "fast"},
    {"step_time_s": "45%"},     # a percentage is a fraction only for MFU / HFU
])
def test_text_that_is_not_a_reading_stays_as_written(measured):
    case, notes = normalized({"measured": dict(measured)})
    assert case["measured"] == measured
    assert notes == []


@pytest.mark.parametrize(("text", "method"), [
    ("LoRA", "lora"), ("QLoRA", "qlora"), ("Q-LoRA", "qlora"), ("Full", "full"), ("SFT", "full"),
    ("full fine-tune", "full"), ("Full-Parameter", "full"), ("Pre-training", "pretrain"), ("freeze", "freeze"),
])
def test_method_names(text, method):
    assert normalized({"method": text})[0]["method"] == method


def test_unknown_method_and_non_numbers_are_left_to_be_refused_where_used():
    case = {"method": "p-tuning v2", "seq_len": "long", "gpus": {"count": "eight"}, "micro_batch": "2.5"}
    assert normalized(case) == (case, [])


@pytest.mark.parametrize(("lora", "quantization", "method"), [
    ({"rank": 8, "alpha": 16}, None, "lora"), ({"rank": 64}, {"type": "bitsandbytes nf4", "bits": 4}, "qlora"),
    ({"rank": 64}, "4-bit (bnb)", "qlora"), ({"rank": 64}, {"type": "int8", "bits": 8}, "lora"),
    (None, None, "full"), ({}, None, "full"),
])
def test_a_method_not_stated_is_read_from_the_adapter(lora, quantization, method):
    case, notes = with_method({"method": None, "lora": lora, "quantization": quantization})
    assert case["method"] == method and notes and notes[0].startswith(f"method not given: read as {method}")
    assert with_method({"method": "freeze", "lora": None}) == ({"method": "freeze", "lora": None}, [])


@pytest.mark.parametrize("case_id", [TIME_ID, MEMORY_ID])
def test_a_case_without_its_method_scores_as_the_case_with_it(case_id):
    # both development cases are LoRA runs (the time case over bf16 weights, the memory case QLoRA over nf4)
    [plain] = evaluate([BY_ID[case_id]])
    [unstated] = evaluate([{**BY_ID[case_id], "method": None}])
    assert unstated.error == pytest.approx(plain.error, abs=1e-12) and unstated.method == plain.method


def test_the_input_is_not_changed():
    case = {"seq_len": "4k", "gpus": {"count": "8"}}
    normalized(case)
    assert case == {"seq_len": "4k", "gpus": {"count": "8"}}


def _as_text(case: dict) -> dict:
    """The case with every count, size and measured value written as text, the method capitalised."""
    out = copy.deepcopy(case)
    for key in ("seq_len", "micro_batch", "grad_accum", "global_batch"):
        if isinstance(out.get(key), int):
            out[key] = f"{out[key]:,}"
    if isinstance((out.get("gpus") or {}).get("count"), int):
        out["gpus"]["count"] = str(out["gpus"]["count"])
    for key, value in out["measured"].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out["measured"][key] = f"{value:,}"
    out["method"] = {"lora": "LoRA", "qlora": "QLoRA", "full": "Full"}.get(out["method"], out["method"])
    return out


@pytest.mark.parametrize("case_id", [TIME_ID, MEMORY_ID])
def test_a_case_written_as_text_scores_as_written_with_numbers(case_id):
    [plain] = evaluate([BY_ID[case_id]])
    [text] = evaluate([_as_text(BY_ID[case_id])])
    assert plain.predicted is not None and text.predicted is not None
    assert text.error == pytest.approx(plain.error, abs=1e-12)
    assert text.method == plain.method == BY_ID[case_id]["method"]
    assert any("read as" in n for n in text.notes)


def test_a_measured_value_that_is_no_number_skips_that_case_and_the_rest_scores():
    cases = [copy.deepcopy(BY_ID[TIME_ID]), copy.deepcopy(BY_ID[MEMORY_ID])]
    cases[0]["measured"] = {"tokens_per_s_per_gpu": "fast"}
    cases[1]["measured"] = {**cases[1]["measured"], "peak_mem_gib": -1}
    results = evaluate(cases + [BY_ID["universal-trainer-llama2-lora-1xh100-time"]])
    assert [r.predicted is None for r in results] == [True, True, False]
    assert "could not convert" in results[0].skipped or "not a positive number" in results[0].skipped
    assert results[1].skipped


@pytest.mark.parametrize(("text", "framework"), [
    ("FastChat (fastchat/train/train_lora.py) + DeepSpeed ZeRO-3", "hf"),   # a transformers Trainer
    ("alpaca-lora finetune.py", "hf"), ("Firefly", "hf"),
    ("OpenRLHF", "deepspeed"), ("GPT-NeoX", "megatron"), ("nanoGPT train.py", "pytorch"),
    ("PyTorch DDP", "pytorch"),
    ("QLoRA (artidoro/qlora, qlora.py)", "hf"), ("Chinese-LLaMA-Alpaca-2 run_sft.sh", "hf"),   # transformers Trainers
    ("LLaMA-Efficient-Tuning src/train_bash.py", "llamafactory"),   # LLaMA-Factory's name until v0.1.8
    ("llamafactory-cli train", "llamafactory"), ("360-LLaMA-Factory", "llamafactory"),
    ("tatsu-lab/stanford_alpaca train.py + FSDP", "hf"),                     # a transformers Trainer
    ("alignment-handbook (zephyr-7b-beta recipe, DeepSpeed ZeRO-3)", "trl"),  # trl's SFTTrainer
    ("LMFlow finetune.sh", "hf"), ("Pai-Megatron-Patch", "megatron"), ("FlagScale", "megatron"),
    ("MosaicML LLM Foundry", "fsdp"), ("llmfoundry scripts/train/train.py", "fsdp"),  # Composer's FSDP
])
def test_trainers_named_by_what_they_are_built_on(text, framework):
    from trainplan.cases.text import framework_of

    assert str(framework_of({"framework": text})) == framework


@pytest.mark.parametrize(("gpus", "count", "type_"), [
    ({"type": "8x A100 80GB", "count": None}, 8, "A100 80GB"), ({"type": "8 × H100"}, 8, "H100"),
    ({"type": "2*A100"}, 2, "A100"), ({"type": "A100-SXM4-80GB x 4", "count": None}, 4, "A100-SXM4-80GB"),
    ("16x H800", 16, "H800"),
])
def test_a_gpu_count_written_into_the_type(gpus, count, type_):
    case, notes = normalized({"gpus": gpus})
    assert (case["gpus"]["count"], case["gpus"]["type"]) == (count, type_)
    assert notes


def test_a_stated_count_is_kept_and_the_type_left_alone():
    case, notes = normalized({"gpus": {"type": "8x A100", "count": 16}})
    assert case["gpus"] == {"type": "8x A100", "count": 16} and notes == []


@pytest.mark.parametrize(("lora", "expected"), [
    ({"r": 8, "lora_alpha": 16}, {"rank": 8, "alpha": 16}),
    ({"lora_rank": "64", "lora_dropout": 0.05, "target_modules": ["q_proj"]},
     {"rank": 64, "dropout": 0.05, "targets": ["q_proj"]}),
    ({"rank": 4, "r": 99}, {"rank": 4, "r": 99}),      # the schema's own key wins
])
def test_lora_keys_as_peft_and_the_trainers_name_them(lora, expected):
    assert normalized({"lora": lora})[0]["lora"] == expected


@pytest.mark.parametrize(("text", "stage"), [("ZeRO-3", 3), ("zero2", 2), ("stage 1", 1), ("DeepSpeed ZeRO-3", 3)])
def test_zero_stage_as_text(text, stage):
    assert normalized({"parallel": {"zero_stage": text}})[0]["parallel"]["zero_stage"] == stage


def test_a_time_case_with_its_gpus_as_one_text_scores_as_before():
    case = copy.deepcopy(BY_ID[TIME_ID])
    [plain] = evaluate([case])
    case["gpus"] = f"{case['gpus']['count']}x {case['gpus']['type']}"
    [text] = evaluate([case])
    assert text.error == pytest.approx(plain.error, abs=1e-12)


def test_a_case_that_gives_only_hfu_is_predicted_in_the_sources_convention():
    """The schema's time metrics include `hfu`. llm-foundry's benchmark (the dev set's source of HFU)
    counts it as 4 x (2 N + attention with the full mask) per token under activation checkpointing
    (scripts/train/benchmarking collect_results.py hfu_w_attn): at 65,536 tokens, where the full mask
    doubles the attention the kernel runs, the HFU-only case must score as its tokens/s does."""
    case = copy.deepcopy(BY_ID["mpt-bench-7b-seq65536-8xh100_80gb-amp_bf16"])
    [by_tokens] = evaluate([case])
    case["measured"] = {"hfu": case["measured"]["hfu"], "what": "HFU"}
    [by_hfu] = evaluate([case])
    assert by_hfu.metric == "hfu" and by_tokens.metric == "tokens_per_s_per_gpu"
    assert by_hfu.error == pytest.approx(by_tokens.error, abs=0.02)
