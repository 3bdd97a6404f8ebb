"""FlashAttention 3 and 4 (--flash-version): transformers' attn_implementation flash_attention_3 / _4, LLaMA-Factory's
flash_attn fa3, ms-swift's attn_impl and axolotl's attn_implementation of the same names.

Hand values: the FA3 paper's H100 SXM5 bf16 causal forward at head dim 128 and 16k tokens is 616 TFLOP/s for
FlashAttention-3 and 335 for FlashAttention-2 (arXiv 2407.08608v2 Fig. 5), of a 989.4 TFLOP/s dense peak: 62% and
34% (timing.attention ATTENTION_TFLOPS).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from trainplan.api import estimate
from trainplan.errors import TrainplanError

LORA_16K = {"model": "llama-3.1-8b", "gpu": "h100", "method": "lora", "seq_len": 16384, "framework": "llamafactory"}


def _kernel_note(est) -> str:
    (note,) = [n for n in est.time.assumptions if "attention kernel" in n]
    return note


def test_fa3_runs_at_its_published_rate_on_hopper():
    fa2, fa3 = estimate(**LORA_16K), estimate(**LORA_16K, flash_version=3)
    assert round(100 * 616 / 989.4) == 62 and round(100 * 335 / 989.4) == 34
    assert "attention kernel flash-attn-3: 62% forward" in _kernel_note(fa3)
    assert "attention kernel flash-attn-2: 34% forward" in _kernel_note(fa2)
    assert fa3.time.step_s < fa2.time.step_s
    assert fa3.memory.device_bytes == fa2.memory.device_bytes     # the same saved tensors (out, fp32 lse)


@pytest.mark.parametrize("kw, words", [
    ({"gpu": "a100-80gb", "flash_version": 3}, "runs on Hopper data-centre GPUs; 'a100-sxm4-80gb' is ampere"),
    ({"gpu": "b200", "flash_version": 3}, "runs on Hopper"),
    ({"flash_version": 4}, "runs on Blackwell data-centre GPUs; 'h100-sxm' is hopper"),
    ({"flash_version": 3, "attention": "sdpa"}, "the job runs --attention sdpa"),
    ({"flash_version": 3, "framework": "megatron"}, "--framework megatron runs its own attention kernels"),
])
def test_where_it_cannot_run_is_one_line(kw, words):
    with pytest.raises(TrainplanError, match=words):
        estimate(**{**LORA_16K, **kw})


def test_fa4_on_blackwell():
    assert "attention kernel flash-attn-4" in _kernel_note(estimate(**{**LORA_16K, "gpu": "b200"}, flash_version=4))


@pytest.mark.parametrize("name, text", [
    ("lf.yaml", "model_name_or_path: meta-llama/Llama-3.1-8B\nstage: sft\nfinetuning_type: lora\nflash_attn: fa3\n"
                "dataset: alpaca_en_demo\ncutoff_len: 4096\n"),
    ("args.yaml", "model_name_or_path: meta-llama/Llama-3.1-8B\nbf16: true\nattn_implementation: flash_attention_3\n"),
    ("train.sh", "swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type lora --attn_impl flash_attention_3 "
                 "--dataset alpaca\n"),
    ("axolotl.yaml", "base_model: meta-llama/Llama-3.1-8B\nattn_implementation: flash_attention_3\nsequence_len: 2048\n"
                     "micro_batch_size: 1\ndatasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n"),
])
def test_configs_read_the_version(tmp_path, name, text):
    from trainplan.importers import read_config

    path = tmp_path / name
    path.write_text(text)
    got = read_config(str(path)).values()
    assert (got["attention"], got["flash_version"]) == ("flash", 3)
    plain = text.replace("flash_attention_3", "flash_attention_2").replace("fa3", "fa2")
    path.write_text(plain)
    assert "flash_version" not in read_config(str(path)).values()


@pytest.mark.parametrize("fmt, key, value", [
    ("llamafactory", "flash_attn", "fa3"), ("swift", "attn_impl", "flash_attention_3"),
    ("axolotl", "attn_implementation", "flash_attention_3"),
])
def test_exports_write_it_and_read_it_back(tmp_path, fmt, key, value):
    from trainplan.cli import main
    from trainplan.importers import read_config

    out = tmp_path / fmt
    assert main(["export", "--model", "llama-3.1-8b", "--gpu", "h100", "--method", "lora", "--attention", "flash",
                 "--flash-version", "3", "--framework", fmt, "--format", fmt, "--out", str(out)]) == 0
    path = next(p for p in out.iterdir() if p.suffix in (".yaml", ".json"))
    data = json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
    found = data.get(key, data.get("args", {}).get(key) if isinstance(data.get("args"), dict) else None)
    assert found == value or f"{key}: {value}" in path.read_text()
    assert read_config(str(path)).values()["flash_version"] == 3


def test_llamafactory_has_no_fa4(capsys, tmp_path):
    from trainplan.cli import main

    code = main(["export", "--model", "llama-3.1-8b", "--gpu", "b200", "--method", "lora", "--attention", "flash",
                 "--flash-version", "4", "--framework", "llamafactory", "--format", "llamafactory",
                 "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "fa2 or fa3" in err


def test_a_case_naming_fa3_on_hopper_is_timed_with_it():
    from trainplan.cases import map_case

    cases = json.loads((Path(__file__).parent / "data" / "published_dev2.json").read_text())
    case = copy.deepcopy(next(c for c in cases if c["id"] == "universal-trainer-llama31-lora-1xh100-time"))
    assert map_case(case).job.setup.impl.flash_version == 2
    case["attention"] = "FlashAttention-3 (flash_attn_interface)"
    assert map_case(case).job.setup.impl.flash_version == 3
    case["gpus"] = {**case["gpus"], "type": "A100 80GB"}        # FA3 does not run there: the case's FA2
    assert map_case(case).job.setup.impl.flash_version == 2


@pytest.mark.parametrize(("value", "version"), [
    ("flash_attention_3", 3), ("flash_attention_4", 4), ("fa3", 3), ("kernels-community/flash-attn3", 3),
    ("FlashAttention-3 (hopper build)", 3), ("flash attention v2", 2), ("FA2", 2), ("sdpa", None),
    ("flash_attention_2", 2), ("sofa3", None), ("fa30", None),
])
def test_one_reading_of_the_flashattention_version(value, version):
    """Config settings (importers.base.read_flash_version) and case texts (cases.text.flash_version_of) read the
    version with job.capabilities.flash_version_named; a word that only ends in 'fa' names none."""
    from trainplan.cases.text import flash_version_of
    from trainplan.job.capabilities import flash_version_named

    assert flash_version_named(value) == version
    assert flash_version_of(value) == version
