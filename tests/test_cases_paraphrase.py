"""A published case written in other words scores as the case written the schema's way: the method with words
beside it that say nothing more ("LoRA fine-tuning", "QLoRA (4-bit)", "pretraining (from scratch)"), a
micro-batch "per GPU", accumulation in "steps", DeepSpeed's stage as "ZeRO stage 3", a model family in lower
case, LoRA targets as a list written as text. Words that do say more (another adapter, an 8-bit base, a
layout) leave the method as written, to be refused where it is read (cases.normalize)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trainplan.cases.accuracy import evaluate
from trainplan.cases.normalize import normalized

DATA = Path(__file__).parent / "data"
CASES = [c for name in ("published_dev.json", "published_dev2.json")
         for c in json.loads((DATA / name).read_text(encoding="utf-8"))]
BY_ID = {c["id"]: c for c in CASES}


@pytest.mark.parametrize(("text", "method"), [
    ("LoRA fine-tuning", "lora"), ("lora (PEFT)", "lora"), ("LoRA SFT (peft)", "lora"),
    ("QLoRA (4-bit)", "qlora"), ("qlora nf4", "qlora"), ("4-bit LoRA", "qlora"),
    ("LoRA (4 bit, bitsandbytes)", "qlora"),
    ("full parameter SFT", "full"), ("Full fine-tuning (parameters)", "full"), ("full-parameter training", "full"),
    ("pretraining (from scratch)", "pretrain"), ("Pre-training from scratch", "pretrain"),
    ("continued pre-training (full)", "pretrain"), ("freeze tuning", "freeze"),
])
def test_a_method_with_words_that_say_nothing_more(text, method):
    case, notes = normalized({"method": text})
    assert case["method"] == method
    assert notes[0] == f"method {text!r} read as {method} (its other words say nothing more about the method)"


@pytest.mark.parametrize("text", [
    "LoRA (8-bit)",            # an int8 base: LoRA over LLM.int8 weights, not QLoRA
    "full (FSDP)",             # a layout word: the parallel block says the layout
    "LoRA + full embeddings",  # more than the adapters trains
    "full 4-bit",              # a 4-bit base under a full fine-tune is no method trainplan runs
    "lora qlora",              # two methods
    "fine-tuning",             # no method named
    "LoRA (all)",              # which modules: the lora block's targets say that
])
def test_a_method_with_words_that_say_more_is_left_as_written(text):
    case, notes = normalized({"method": text})
    assert case["method"] == text and notes == []


@pytest.mark.parametrize(("text", "stage"), [
    ("ZeRO stage 3", 3), ("ZeRO Stage-2", 2), ("zero-stage-1", 1), ("DeepSpeed ZeRO-3", 3), ("stage 2", 2),
])
def test_zero_stage_written_with_the_word_stage(text, stage):
    assert normalized({"parallel": {"zero_stage": text}})[0]["parallel"]["zero_stage"] == stage


@pytest.mark.parametrize(("key", "text", "value"), [
    ("micro_batch", "4 per GPU", 4), ("micro_batch", "4 sequences per device", 4), ("micro_batch", "8 samples/gpu", 8),
    ("grad_accum", "8 steps", 8), ("grad_accum", "16 micro-batches", 16), ("grad_accum", "4 accumulation steps", 4),
])
def test_counts_with_the_unit_their_field_means(key, text, value):
    assert normalized({key: text})[0][key] == value


@pytest.mark.parametrize(("key", "text"), [("global_batch", "64 per GPU"), ("seq_len", "8 steps"),
                                            ("micro_batch", "8 steps")])
def test_a_unit_another_field_means_is_not_read(key, text):
    assert normalized({key: text})[0][key] == text


def _scores_alike(case: dict, edit) -> tuple[float, float]:
    changed = copy.deepcopy(case)
    edit(changed)
    [plain] = evaluate([case])
    [other] = evaluate([changed])
    assert plain.error is not None and other.error is not None, (plain.skipped, other.skipped)
    return plain.error, other.error


def _set(key, value):
    def edit(case):
        case[key] = value
    return edit


def _with_unit(key, unit):
    def edit(case):
        case[key] = f"{case[key]} {unit}"
    return edit


def _model_name_lower(case):
    case["model"]["name"] = case["model"]["name"].lower()


def _zero_stage_words(case):
    case["parallel"]["zero_stage"] = f"ZeRO stage {case['parallel']['zero_stage']}"


def _targets_as_text(case):
    case["lora"]["targets"] = str(case["lora"]["targets"])


@pytest.mark.parametrize(("case_id", "edit"), [
    ("universal-trainer-llama31-lora-1xh100-time", _set("method", "LoRA fine-tuning (PEFT)")),
    ("universal-trainer-llama31-qlora-1xh100-mem", _set("method", "QLoRA (4-bit)")),
    ("universal-trainer-llama31-full-1xh100-time", _set("method", "full parameter SFT")),
    ("modelcard-llama2-7b-gpu-hours", _set("method", "pretraining (from scratch)")),
    ("universal-trainer-llama31-lora-1xh100-time", _with_unit("micro_batch", "per GPU")),
    ("universal-trainer-llama31-lora-1xh100-time", _with_unit("grad_accum", "steps")),
    ("qwen1-readme-72b-lora-deepspeed-zero3-len2048-mem", _zero_stage_words),
    # an MPT config's name in lower case is still MPT (ALiBi, LayerNorm, GELU MLP: cases.common._mpt)
    ("mpt-bench-7b-seq2048-8xa100_80gb-amp_bf16", _model_name_lower),
    ("universal-trainer-llama31-lora-1xh100-time", _targets_as_text),
])
def test_a_case_in_other_words_scores_as_written(case_id, edit):
    plain, other = _scores_alike(BY_ID[case_id], edit)
    assert other == pytest.approx(plain, abs=1e-12)


@pytest.mark.parametrize("framework", [None, "", "not stated", "Nanotron", "an in-house trainer"])
def test_a_case_naming_no_framework_with_a_profile_is_scored_on_the_stack_its_method_runs_in(framework):
    # a LoRA memory case (litgpt's table) and a pre-training time case (flash-attention's GPT-3 runs, whose
    # framework has no profile either way): predicted, with the stack assumed in the notes
    lora = copy.deepcopy(BY_ID["litgpt-restable-lora1gpu-phi-1.5-None-mbs1"])
    lora["framework"] = framework
    [result] = evaluate([lora])
    assert result.error is not None and result.method == "lora"
    assert any("the Hugging Face (transformers + peft) stack its LoRA adapters come from" in n for n in result.notes)
    pretrain = copy.deepcopy(BY_ID["flashattn-training-gpt3-125m-8xa100-80g"])
    [named] = evaluate([pretrain])
    pretrain["framework"] = framework
    [result] = evaluate([pretrain])
    assert result.error is not None and any("a Megatron-class stack assumed" in n for n in result.notes)
    assert any("a Megatron-class stack assumed" in n for n in named.notes)


@pytest.mark.parametrize("framework", ["Colossal-AI GeminiPlugin", "ColossalAI (LowLevelZeroPlugin)", "colossalai run"])
def test_colossal_ai_is_scored_on_deepspeeds_regime(framework):
    # its plugins shard a transformers model under ZeRO with fp32 master weights in the optimizer: DeepSpeed's
    # regime, said in the notes, for LoRA and full runs alike (not the fallbacks above)
    from trainplan.cases.text import framework_or_assumed
    for method in ("lora", "full", "pretrain"):
        found, note = framework_or_assumed({"framework": framework, "method": method})
        assert str(found) == "deepspeed" and note.startswith("Colossal-AI read as DeepSpeed's regime")
    pretrain = copy.deepcopy(BY_ID["flashattn-training-gpt3-125m-8xa100-80g"])
    pretrain["framework"] = framework
    [result] = evaluate([pretrain])
    assert result.error is not None and any(n.startswith("Colossal-AI read as DeepSpeed's regime") for n in result.notes)


@pytest.mark.parametrize(("key", "text", "value"), [
    ("tp", "TP=2", 2), ("pp", "PP8", 8), ("tp", "tensor parallel size 4", 4), ("cp", "context-parallel 2", 2),
    ("ep", "EP = 16", 16), ("sp", "Ulysses 8", 8), ("sp", "sequence_parallel_size 4", 4),
])
def test_a_parallel_degree_written_with_its_name(key, text, value):
    assert normalized({"parallel": {key: text}})[0]["parallel"][key] == value


def test_a_degree_under_another_name_is_not_read():
    assert normalized({"parallel": {"tp": "PP=2"}})[0]["parallel"]["tp"] == "PP=2"


@pytest.mark.parametrize(("text", "read"), [
    ("torch.bfloat16", "bf16"), ("float16", "fp16"), ("torch_dtype=float32", "torch_dtype=fp32"),
    ("bf16 (bit: bfloat16)", "bf16 (bit: bfloat16)"),      # says it already: left as written
])
def test_pytorch_dtype_names_in_the_precision_fields(text, read):
    assert normalized({"precision": {"weights": text}})[0]["precision"]["weights"] == read


@pytest.mark.parametrize("fsdp", ["fully sharded", "Full Shard", True, "yes"])
def test_fsdp_said_in_words_or_as_a_flag_is_full_sharding(fsdp):
    from trainplan.cases.memorycase import layout_flags
    assert layout_flags({"gpus": {"count": 8}, "parallel": {"fsdp": fsdp}})["fsdp"] == "full"
    assert layout_flags({"gpus": {"count": 8}, "parallel": {"fsdp": "shard grad op"}})["zero"] == 2


def _block_edit(block, key, write):
    def edit(case):
        case[block][key] = write(case[block][key])
    return edit


@pytest.mark.parametrize(("case_id", "edit"), [
    ("mbridge-2511-dgx-h100-llama-3-70b-fp8-cs-64gpu", _block_edit("parallel", "tp", lambda v: f"TP={v}")),
    ("torchtune-readme-llama3.1-8b-full-1xA6000-mem", _block_edit("precision", "weights", lambda v: "torch.bfloat16")),
    ("mpt-bench-7b-seq2048-8xa100_80gb-amp_bf16", _block_edit("parallel", "fsdp", lambda v: "fully sharded")),
])
def test_a_layout_or_dtype_in_other_words_scores_as_written(case_id, edit):
    plain, other = _scores_alike(BY_ID[case_id], edit)
    assert other == pytest.approx(plain, abs=1e-12)


@pytest.mark.parametrize(("text", "read"), [
    ("use_reentrant=False", "full"),                       # a checkpointing option: checkpointing is on
    ("gradient_checkpointing_kwargs={'use_reentrant': False}", "full"),
    ("not used", "none"), ("1", "full"), ("0", "none"),
    ("per-op SAC", "op"), ("SAC", "selective"),           # torchtitan's per-op policy; selective AC
])
def test_checkpointing_texts(text, read):
    from trainplan.cases.text import grad_ckpt_of
    assert grad_ckpt_of(text) == read


def test_sdpa_by_its_function_name():
    from trainplan.cases.text import attention_of
    assert attention_of("torch.nn.functional.scaled_dot_product_attention") == attention_of("SDPA") == "sdpa"


@pytest.mark.parametrize(("text", "count"), [
    ("8 nodes x 8 GPUs", 64), ("8x8", 64), ("2 nodes of 8 GPUs", 16), ("2 x 8 GPUs per node", 16),
    ("64 (8 nodes)", 64), ("64 GPUs (8 nodes x 8)", 64), ("64 H100", 64),
])
def test_a_gpu_count_as_nodes_times_gpus_or_with_an_aside(text, count):
    case, notes = normalized({"gpus": {"type": "H100", "count": text}})
    assert case["gpus"]["count"] == count and notes == [f"gpus.count {text!r} read as {count}"]


@pytest.mark.parametrize("text", ["8 nodes", "0x8", "eight"])
def test_a_gpu_count_not_given_in_gpus_is_left(text):
    # a count of nodes says no GPU count (GPUs a node differ); the rest is no number
    assert normalized({"gpus": {"type": "H100", "count": text}})[0]["gpus"]["count"] == text


@pytest.mark.parametrize(("key", "text", "value"), [
    ("seq_len", "2048 (packed)", 2048), ("seq_len", "4k (max length)", 4096), ("micro_batch", "4 (per device)", 4),
    ("global_batch", "512 (sequences)", 512),
])
def test_a_count_with_an_aside(key, text, value):
    assert normalized({key: text})[0][key] == value


@pytest.mark.parametrize(("key", "text", "value"), [
    ("rank", "r=16", 16), ("rank", "rank 16", 16), ("rank", "lora_r: 16", 16), ("alpha", "lora_alpha: 32", 32),
    ("alpha", "alpha=32", 32),
])
def test_a_lora_number_written_with_its_key(key, text, value):
    assert normalized({"method": "lora", "lora": {key: text}})[0]["lora"][key] == value


@pytest.mark.parametrize(("quantization", "read"), [
    # transformers' BitsAndBytesConfig keys, as a case may copy its quantization_config
    ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True}, ("nf4", True)),
    ({"type": "4bit", "bnb_4bit_use_double_quant": True}, ("nf4", True)),
    ({"load_in_8bit": True}, ("int8", False)),
    ({"type": "nf4", "double_quant": "no"}, ("nf4", False)),      # a "no" is no double quantization
    ({"type": "nf4", "double_quant": "yes"}, ("nf4", True)),
    ({"double_quant": False, "bits": 4}, ("nf4", False)),        # the key's name is not its value
])
def test_quantization_blocks_as_written(quantization, read):
    from trainplan.cases.text import quant_of
    assert quant_of({"method": "qlora", "quantization": quantization})[:2] == read


@pytest.mark.parametrize("text", ["not stated", "n/a", "N/A", "unknown", "-", "?", "not given (see notes)"])
def test_a_number_field_that_says_it_is_not_known_is_null(text):
    case, notes = normalized({"grad_accum": text, "parallel": {"tp": text}, "gpus": {"type": "8x A100", "count": text}})
    assert case["grad_accum"] is None and case["parallel"]["tp"] is None
    assert case["gpus"] == {"type": "A100", "count": 8}          # the count the type gives, once the field is null
    assert f"grad_accum {text!r} read as not stated" in notes


def test_no_zero_is_stage_0():
    assert normalized({"parallel": {"zero_stage": "none"}})[0]["parallel"]["zero_stage"] == 0
    assert normalized({"parallel": {"zero_stage": "not stated"}})[0]["parallel"]["zero_stage"] is None


def test_a_case_with_its_unknowns_written_as_text_scores_as_with_nulls():
    case = BY_ID["universal-trainer-llama31-lora-1xh100-time"]
    plain, other = _scores_alike({**case, "global_batch": None}, _set("global_batch", "unknown"))
    assert other == pytest.approx(plain, abs=1e-12)


@pytest.mark.parametrize(("text", "billions"), [("7B", 7.0), ("6.7 billion", 6.7), ("~7B", 7.0), ("7b (dense)", 7.0),
                                               ("125M", 0.125)])
def test_a_model_size_written_as_text(text, billions):
    assert normalized({"model": {"name": "Acme", "params_b": text}})[0]["model"]["params_b"] == billions


@pytest.mark.parametrize(("name", "billions"), [("Acme-7B-internal", 7.0), ("Foo 1.5B", 1.5),
                                               ("Mixtral-8x7B", None), ("Qwen3-30B-A3B", None), ("x-7B-13B", None)])
def test_a_size_not_stated_is_the_one_the_name_gives(name, billions):
    # one dense size in the name; an MoE's ("8x7B", an active "A3B") or two sizes give none
    assert normalized({"model": {"name": name, "params_b": None}})[0]["model"]["params_b"] == billions


def test_an_unknown_model_sized_by_its_name_or_its_text_scores_as_with_the_number():
    case = {**BY_ID["universal-trainer-llama31-lora-1xh100-time"],
            "model": {"name": "Acme-7B-internal", "hf_id": None, "params_b": 7.0}}
    for params in (None, "7B", "7 billion"):
        plain, other = _scores_alike(case, lambda c, p=params: c["model"].update(params_b=p))
        assert other == pytest.approx(plain, abs=1e-12)
    arch = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "intermediate": 14336, "vocab": 128256}
    plain, other = _scores_alike({**case, "model": {**case["model"], **arch}},
                                 lambda c: c["model"].update({k: str(v) for k, v in arch.items()}))
    assert other == pytest.approx(plain, abs=1e-12)


@pytest.mark.parametrize(("kind", "read"), [("Time", "time"), ("throughput", "time"), ("speed", "time"),
                                            ("Memory", "memory"), ("VRAM", "memory"), ("latency", None)])
def test_the_kind_as_other_writers_name_it(kind, read):
    from trainplan.cases.common import case_kind
    assert case_kind({"kind": kind}) == read


def test_a_kind_not_written_is_the_one_the_measured_block_gives():
    from trainplan.cases.common import case_kind
    assert case_kind({"measured": {"peak_mem_gib": 20.0}}) == "memory"
    assert case_kind({"measured": {"tokens_per_s_per_gpu": 3000.0}}) == "time"
    assert case_kind({"measured": {"peak_mem_gib": 20.0, "step_time_s": 1.0}}) is None      # both: not guessed
    for case_id in ("universal-trainer-llama31-lora-1xh100-time", "universal-trainer-llama31-qlora-1xh100-mem"):
        plain, other = _scores_alike(BY_ID[case_id], lambda c: c.pop("kind"))
        assert other == pytest.approx(plain, abs=1e-12)


@pytest.mark.parametrize(("lora", "block"), [
    (8, {"rank": 8}), ("16", {"rank": 16}),
    ("r=16, alpha=32, all-linear", {"rank": 16, "alpha": 32, "targets": "all-linear"}),
    ("lora_r: 64, lora_alpha: 128, dropout 0.05", {"rank": 64, "alpha": 128, "dropout": 0.05}),
])
def test_a_lora_block_written_as_its_rank_or_as_text(lora, block):
    case, _ = normalized({"method": "lora", "lora": lora})
    assert case["lora"] == block


def test_a_lora_block_as_text_scores_as_the_object():
    plain, other = _scores_alike(BY_ID["universal-trainer-llama31-lora-1xh100-time"],
                                 _set("lora", "r=8, alpha=16, dropout 0.05, all linear"))
    assert other == pytest.approx(plain, abs=1e-12)


@pytest.mark.parametrize(("offload", "zero3", "fsdp"), [
    ("ZeRO-Offload", "optimizer", "all"), ("ZeRO-Infinity", "all", "all"), (True, "optimizer", "all"),
    ("yes", "optimizer", "all"), ("CPU offload", "optimizer", "all"), ("no offload", "none", "none"),
])
def test_offload_said_without_what(offload, zero3, fsdp):
    # DeepSpeed's offload said without what is ZeRO-Offload (the optimizer on the CPU); FSDP's CPUOffload moves
    # parameters, gradients and optimizer states
    from trainplan.cases.memorycase import layout_flags
    assert layout_flags({"gpus": {"count": 8}, "parallel": {"zero_stage": 3, "offload": offload}})["offload"] == zero3
    assert layout_flags({"gpus": {"count": 8}, "parallel": {"fsdp": "FULL_SHARD", "offload": offload}})["offload"] == fsdp
