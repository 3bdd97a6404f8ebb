"""Methods, LoRA blocks and whole numbers as other writers give them (cases.normalize): peft's LoRA under
another name is scored as LoRA, a method outside the schema's five is refused with what is not modelled,
a LoRA case without its rank takes peft's default, and whole numbers written as floats or with a unit word
are read."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trainplan.cases import Skip, map_case
from trainplan.cases.accuracy import evaluate
from trainplan.cases.common import lora_targets
from trainplan.cases.method_words import method_not_modelled
from trainplan.cases.normalize import normalized

DATA = Path(__file__).parent / "data"
CASES = [c for name in ("published_dev.json", "published_dev2.json")
         for c in json.loads((DATA / name).read_text(encoding="utf-8"))]
BY_ID = {c["id"]: c for c in CASES}
RANK8_ID = "torchtune-readme-llama3.1-8b-lora-1x4090-tps"     # LoRA rank 8, alpha 16, q_proj + v_proj


@pytest.mark.parametrize(("text", "quantization", "method"), [
    ("rsLoRA", None, "lora"), ("PiSSA", None, "lora"), ("LoRA+", None, "lora"), ("OLoRA", None, "lora"),
    ("LoftQ", {"type": "bnb-nf4"}, "qlora"), ("LoRA-GA", None, "lora"),
    ("Continued pretraining", None, "pretrain"), ("Full SFT", None, "full"), ("LoRA SFT", None, "lora"),
])
def test_lora_under_other_names_and_other_spellings(text, quantization, method):
    case, notes = normalized({"method": text, "quantization": quantization, "lora": {"rank": 16}})
    assert case["method"] == method
    assert notes[0].startswith(f"method {text!r} read as {method}")


@pytest.mark.parametrize(("text", "what"), [
    ("VeRA", "other than LoRA"), ("IA3", "other than LoRA"), ("prefix-tuning", "other than LoRA"),
    ("P-Tuning v2", "other than LoRA"), ("GRPO (TRL)", "RL training with rollouts"),
    ("PPO", "RL training with rollouts"), ("RLHF", "RL training with rollouts"),
])
def test_methods_outside_the_five_are_refused_with_what_is_missing(text, what):
    assert what in method_not_modelled(text)
    case = {**copy.deepcopy(BY_ID[RANK8_ID]), "method": text}
    with pytest.raises(Skip, match=what):
        map_case(case)
    [result] = evaluate([case])
    assert result.predicted is None and what in result.skipped


@pytest.mark.parametrize("text", ["lora", "qlora", "full", "pretrain", "freeze", None, "LoRA"])
def test_the_five_are_not_refused(text):
    assert method_not_modelled(text) is None


def test_a_lora_variant_scores_as_lora():
    [plain] = evaluate([BY_ID[RANK8_ID]])
    [pissa] = evaluate([{**BY_ID[RANK8_ID], "method": "PiSSA"}])
    assert plain.predicted is not None and pissa.error == pytest.approx(plain.error, abs=1e-12)


def test_a_lora_case_without_its_rank_takes_peft_default_8():
    case, notes = normalized({"method": "lora", "lora": {"alpha": 16, "targets": ["q_proj"]}})
    assert case["lora"]["rank"] == 8 and any(n.startswith("LoRA rank not given: 8") for n in notes)
    case, _ = normalized({"method": "qlora", "lora": None})
    assert case["lora"] == {"rank": 8}
    assert normalized({"method": "full", "lora": None}) == ({"method": "full", "lora": None}, [])
    # the rank-8 development case scores the same without its rank
    unranked = copy.deepcopy(BY_ID[RANK8_ID])
    del unranked["lora"]["rank"]
    [plain] = evaluate([BY_ID[RANK8_ID]])
    [result] = evaluate([unranked])
    assert plain.predicted is not None and result.error == pytest.approx(plain.error, abs=1e-12)


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("micro_batch", 2.0, 2), ("seq_len", "2048 tokens", 2048), ("global_batch", "512 sequences", 512),
    ("grad_accum", 4.0, 4),
])
def test_whole_numbers_as_floats_or_with_a_unit_word(key, value, expected):
    case, notes = normalized({key: value})
    assert case[key] == expected and notes == [f"{key} {value!r} read as {expected}"]


def test_counts_with_a_unit_word_and_what_stays_as_written():
    assert normalized({"gpus": {"type": "A100", "count": "8 GPUs"}})[0]["gpus"]["count"] == 8
    for value in (2.5, "2.5", "max 1024", "8 apples", True):
        assert normalized({"micro_batch": value}) == ({"micro_batch": value}, [])


@pytest.mark.parametrize(("targets", "expected"), [
    (["q", "v"], ("q_proj", "v_proj")),
    ("q, k, v, o", ("q_proj", "k_proj", "v_proj", "o_proj")),
    (["attention"], ("q_proj", "k_proj", "v_proj", "o_proj")),
    (["ffn"], ("gate_proj", "up_proj", "down_proj")),
])
def test_lora_targets_as_tables_shorten_them(targets, expected):
    names, note = lora_targets({"lora": {"targets": targets}})
    assert names == expected and note.startswith("LoRA targets ")
    assert lora_targets({"lora": {"targets": ["q_proj", "v_proj"]}}) == (("q_proj", "v_proj"), None)


def test_a_time_case_without_its_micro_batch_runs_the_framework_default():
    # Qwen's finetune.py is a transformers Trainer: per_device_train_batch_size defaults to 8
    stated = {**copy.deepcopy(BY_ID["qwen1-readme-7b-lora-len2048-time"]), "micro_batch": 8, "global_batch": None}
    unstated = {**stated, "micro_batch": None}
    [with_it] = evaluate([stated])
    [without] = evaluate([unstated])
    assert with_it.predicted is not None and without.error == pytest.approx(with_it.error, abs=1e-12)
    assert any("micro-batch not stated: 8, the framework's default (per_device_train_batch_size" in n
               for n in without.notes)


def test_a_megatron_case_without_its_micro_batch_is_still_refused():
    # Megatron requires --micro-batch-size: no default to run (megatron/training/arguments.py)
    megatron = next(c for c in CASES if c["kind"] == "time" and "Megatron" in (c.get("framework") or "")
                    and c.get("micro_batch"))
    [result] = evaluate([{**megatron, "micro_batch": None, "global_batch": None}])
    assert result.predicted is None and "micro-batch" in result.skipped


@pytest.mark.parametrize(("text", "mode", "every"), [
    ("activation checkpointing on every 3rd block", "full", 3), ("every 2 layers", "full", 2),
    ("one block in 4", "full", 4), ("selective_ac_option=2", "full", 2),
    ("selective recompute of the attention in every layer", "selective", None),   # Megatron's, no number
    ("selective", "selective", None), (True, "full", None), (False, "none", None),
])
def test_checkpointing_of_every_nth_block(text, mode, every):
    # fms-fsdp's selective_checkpointing p checkpoints every 1/p-th block whole (fms_fsdp/policies/ac_handler.py)
    from trainplan.cases.text import ckpt_every_of, grad_ckpt_of

    assert grad_ckpt_of(text) == mode and ckpt_every_of(text) == every


def test_a_case_checkpointing_every_third_block_recomputes_a_third_of_the_forward():
    # the development case recomputes every layer; one layer in three adds a third of that forward again
    base = next(c for c in CASES if c["id"] == "qwen1-readme-7b-lora-len2048-time")
    import trainplan.cases as cases_api
    full = cases_api.map_case({**base, "grad_ckpt": True}).job.setup
    third = cases_api.map_case({**base, "grad_ckpt": "checkpointing on every 3rd layer"}).job.setup
    assert (full.grad_ckpt_every, third.grad_ckpt_every) == (1, 3)
    assert str(third.grad_ckpt) == "full"


@pytest.mark.parametrize(("text", "network"), [
    ("128 GPUs with 400Gbps", "400Gbps"), ("96 H100 with 800 Gbps", "800 Gbps"), ("4 * 100Gb RoCE", "4 * 100Gb RoCE"),
    ("NVLink 600 GB/s", None), ("PCIe 64 GB/s", None),      # bytes per second are a GPU's links, not the network
])
def test_a_network_stated_by_its_rate_in_bits(text, network):
    from trainplan.cases.stated import network_of

    assert network_of({"notes": text}) == network


def test_tinyllama_runs_flash_attention_fused_kernels():
    # jzhang38/TinyLlama bf12224 lit_gpt/model.py and pretrain/tinyllama.py: FusedRMSNorm, xformers SwiGLU, fused
    # rotary and FusedCrossEntropyLoss: the fused kernel stack and a fused loss, where plain lit-gpt runs eager
    import json as _json

    from trainplan.cases import timecase
    from trainplan.cases.trainers import trainer_facts
    from trainplan.timing.efficiency import KernelStack

    facts, notes = trainer_facts({"framework": "TinyLlama pretrain/tinyllama.py (lit-gpt on Lightning Fabric FSDP)"})
    assert facts == {"fused_kernels": True, "fused_ce": True} and "FusedRMSNorm" in notes[0]
    path = Path(__file__).parents[1] / "benchmarks" / "data" / "tinyllama_cases.json"
    [case] = _json.loads(path.read_text(encoding="utf-8"))["cases"]
    _, fused = timecase.predict(timecase.map_case(case))
    plain = {**case, "framework": "lit-gpt on Lightning Fabric FSDP"}
    _, eager = timecase.predict(timecase.map_case(plain))
    assert fused.step.efficiency.stack is KernelStack.FUSED and eager.step.efficiency.stack is KernelStack.EAGER
    assert fused.step_s < eager.step_s


@pytest.mark.parametrize("gpus", [{"type": None, "count": 1}, None, {"type": "  ", "count": 1}])
def test_a_time_case_without_its_gpu_says_so(gpus):
    [result] = evaluate([{**copy.deepcopy(BY_ID[RANK8_ID]), "gpus": gpus}])
    assert result.predicted is None and result.skipped.startswith("GPU type not stated")
