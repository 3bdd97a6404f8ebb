"""A published case whose blocks are written in another form scores as the case written the schema's way: the
`parallel` block as text ("DeepSpeed ZeRO-3", "TP=2, PP=4"), the `model` as its name, a measured value as an
object of number and unit, or a time metric given as the schema's reported_value / reported_unit pair
(cases.normalize, cases.measured)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trainplan.cases.accuracy import evaluate
from trainplan.cases.memorycase import layout_flags
from trainplan.cases.normalize import normalized

DATA = Path(__file__).parent / "data"
BY_ID = {c["id"]: c for name in ("published_dev.json", "published_dev2.json")
         for c in json.loads((DATA / name).read_text(encoding="utf-8"))}


def _alike(case: dict, changed: dict) -> None:
    [plain] = evaluate([case])
    [other] = evaluate([changed])
    assert plain.error is not None, plain.skipped
    assert other.error == pytest.approx(plain.error, abs=1e-12), other.skipped


@pytest.mark.parametrize(("text", "block"), [
    ("DeepSpeed ZeRO-3", {"zero_stage": 3}),
    ("TP=2, PP=4", {"tp": 2, "pp": 4}),
    ("2-way TP, 4-way PP", {"tp": 2, "pp": 4}),
    ("tp8 pp4 cp2 ep8", {"tp": 8, "pp": 4, "cp": 2, "ep": 8}),
    ("tensor parallel size 4 + sequence parallel", {"tp": 4}),      # Megatron's SP flag has no degree
    ("Ulysses 8", {"sp": 8}),
    ("FSDP full shard", {"fsdp": "FULL_SHARD"}),
    ("hybrid shard", {"fsdp": "HYBRID_SHARD"}),
    ("DDP", {}),                                                     # no degree in "DDP"
    ("DeepSpeed stage-3 (zero3)", {"zero_stage": 3}),
])
def test_a_parallel_block_written_as_text(text, block):
    read, notes = normalized({"parallel": text})
    assert read["parallel"] == {"other": text, **block}
    assert notes == [f"parallel {text!r} read as {read['parallel']}"]


@pytest.mark.parametrize(("text", "zero", "fsdp", "offload"), [
    ("DeepSpeed ZeRO-3 + CPU offload", 3, "none", "optimizer"),    # ZeRO-Offload: the optimizer on the CPU
    ("ZeRO-2, no offload", 2, "none", "none"),
    ("FSDP full shard + CPU offload", 0, "full", "all"),           # FSDP CPUOffload: everything
    ("ZeRO-Infinity (ZeRO-3)", 3, "none", "all"),
])
def test_a_parallel_text_gives_the_layout(text, zero, fsdp, offload):
    flags = layout_flags({"gpus": {"count": 8}, **normalized({"parallel": text})[0]})
    assert (flags["zero"], flags["fsdp"], flags["offload"]) == (zero, fsdp, offload)


def test_a_model_written_as_its_name():
    read, notes = normalized({"model": "Llama-2-7B"})
    assert read["model"] == {"name": "Llama-2-7B", "params_b": 7.0}
    assert notes[0] == "model 'Llama-2-7B' read as the model's name"


@pytest.mark.parametrize(("value", "unit", "key", "read"), [
    (3593, "tokens/s/GPU", "tokens_per_s_per_gpu", 3593.0),
    (28744, "tokens/s", "tokens_per_s_reported", 28744.0),          # whose: the time reader decides
    (850, "ms/step", "step_time_s", 0.85),
    (3.71, "s/iter", "step_time_s", 3.71),
    (45, "MFU (%)", "mfu", 0.45),
    (0.45, "MFU", "mfu", 0.45),
    (180.5, "TFLOPS per GPU", "tflops_per_gpu", 180.5),
    ("1.3M", "GPU hours", "gpu_hours", 1.3e6),
])
def test_a_time_metric_given_as_reported_value_and_unit(value, unit, key, read):
    case, _ = normalized({"measured": {"reported_value": value, "reported_unit": unit}})
    assert case["measured"][key] == pytest.approx(read)


def test_a_reported_total_scoped_by_its_scope_field():
    case, _ = normalized({"measured": {"reported_value": 28744, "reported_unit": "tokens/s", "scope": "per_gpu"}})
    assert case["measured"]["tokens_per_s_per_gpu"] == 28744.0


def test_a_reported_memory_or_a_stated_time_metric_is_left_alone():
    memory = {"peak_mem_gib": 20.95, "reported_value": 22.5, "reported_unit": "GB"}
    assert normalized({"measured": dict(memory)})[0]["measured"] == memory
    both = {"step_time_s": 2.0, "reported_value": 3000, "reported_unit": "tokens/s/GPU"}
    assert normalized({"measured": dict(both)})[0]["measured"] == both


@pytest.mark.parametrize(("key", "written", "read"), [
    ("step_time_s", {"value": 0.85, "unit": "s"}, 0.85),
    ("step_time_s", {"value": 850, "unit": "ms"}, 0.85),
    ("tokens_per_s_per_gpu", {"value": "3,593", "unit": "tokens/s"}, 3593.0),
    ("mfu", {"value": 45, "unit": "%"}, 0.45),
])
def test_a_measured_value_written_as_number_and_unit(key, written, read):
    assert normalized({"measured": {key: written}})[0]["measured"][key] == pytest.approx(read)


def test_the_other_forms_score_as_the_schema_forms():
    time_case = BY_ID["qwen-docs-swift-qwen3-30b-a3b-full-zero3-16xa800-time"]
    step = time_case["measured"]["step_time_s"]
    reported = copy.deepcopy(time_case)
    reported["measured"] = {"reported_value": step, "reported_unit": "s/step"}
    _alike(time_case, reported)
    as_object = copy.deepcopy(time_case)
    as_object["measured"] = {"step_time_s": {"value": step, "unit": "s/step"}}
    _alike(time_case, as_object)
    memory_case = BY_ID["qwen-docs-swift-qwen3-8b-full-zero3-liger-4gpu-mem"]
    assert memory_case["parallel"]["zero_stage"] == 3
    _alike(memory_case, {**memory_case, "parallel": "DeepSpeed ZeRO-3"})
    named = BY_ID["universal-trainer-llama31-full-1xh100-mem"]
    _alike(named, {**named, "model": named["model"]["name"]})
