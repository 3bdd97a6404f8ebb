"""`--from` plumbing: parsing and format detection, several files and flags laid over each other,
what `--explain-from` and `setup.sources` say, and bad input as one line (exit 2), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainplan.cli import main
from trainplan.errors import TrainplanError
from trainplan.importers import read_config
from trainplan.importers.read import detect, parse

CONFIGS = Path(__file__).parent / "fixtures" / "configs"
Z2 = CONFIGS / "deepspeed" / "zero2_standalone.json"
LF_LORA = CONFIGS / "llamafactory" / "qwen3_lora_sft.yaml"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name, text, fmt", [
    ("a.yaml", "model_name_or_path: Qwen/Qwen3-8B\nfinetuning_type: lora\ncutoff_len: 1024\n", "llamafactory"),
    ("a.json", '{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 2}', "deepspeed"),
    ("a.yaml", "base_model: Qwen/Qwen3-8B\nadapter: lora\nsequence_len: 2048\nmicro_batch_size: 2\n", "axolotl"),
    ("a.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 8\n", "accelerate"),
    ("a.toml", '[model]\nname = "llama3"\nflavor = "8B"\n[training]\nlocal_batch_size = 2\nseq_len = 8192\n',
     "torchtitan"),
    ("a.sh", "torchrun --nproc_per_node 8 train.py --deepspeed ds.json\n", "launch"),
])
def test_each_format_is_recognised_by_its_own_keys(tmp_path, name, text, fmt):
    path = tmp_path / name
    path.write_text(text)
    assert detect(parse(text, str(path)), str(path)) == fmt


def test_a_launch_command_given_as_text():
    imported = read_config("NPROC_PER_NODE=4 NNODES=2 swift sft --model Qwen/Qwen3-8B --train_type lora")
    assert imported.file == "command line"
    v = imported.values()
    assert (v["num_gpus"], v["nodes"], v["method"]) == (8, 2, "lora")


def test_later_files_win_and_flags_win_over_all(capsys, tmp_path):
    z3 = tmp_path / "z3.json"
    z3.write_text('{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 2}')
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--from", str(Z2),
                       "--from", str(z3), "--grad-accum", "4", "--json")
    assert code == 0
    setup = json.loads(out)["setup"]
    assert (setup["zero"], setup["batch_size"], setup["grad_accum"], setup["num_gpus"]) == (3, 2, 4, 8)
    by_field = {s["field"]: s for s in setup["sources"]}
    assert by_field["zero"]["file"] == str(z3) and by_field["num_gpus"]["file"] == str(Z2)
    assert by_field["grad_accum"]["origin"] == "flag" and "gradient_accumulation_steps=8" in by_field["grad_accum"]["note"]
    assert setup["from"]["files"] == [str(Z2), str(z3)]


def test_explain_from_lists_every_setting_with_its_origin(capsys):
    code, out, _ = run(capsys, "estimate", "--from", str(LF_LORA), "--gpu", "h100", "--explain-from")
    assert code == 0
    table = out[out.index("Settings and where they came from"):]
    for needle in ("lora_rank", "file: lora_rank in", "framework default (hiyouga/LLaMA-Factory ff6d4d1", "llamafactory",
                   "trainplan default",
                   "keys that do not change memory or time"):
        assert needle in table, needle
    code, out, _ = run(capsys, "estimate", "--from", str(LF_LORA), "--gpu", "h100", "--json")
    sources = json.loads(out)["setup"]["sources"]
    rank = next(s for s in sources if s["field"] == "lora_rank")
    assert rank["origin"] == "file" and rank["key"] == "lora_rank" and rank["file"] == str(LF_LORA)
    alpha_default = [s for s in sources if s["origin"] == "framework default"]
    assert alpha_default and all(s["version"].startswith("hiyouga/LLaMA-Factory ff6d4d1") and s["note"]
                                 for s in alpha_default)


def test_keys_that_matter_but_were_not_used_are_listed(capsys, tmp_path):
    path = tmp_path / "ds.json"
    path.write_text('{"zero_optimization": {"stage": 3, "zero_quantized_weights": true}}')
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--num-gpus", "8",
                       "--from", str(path))
    assert code == 0 and "zero_quantized_weights" in out and "ZeRO++" in out
    code, out, _ = run(capsys, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--num-gpus", "8",
                       "--from", str(path), "--json")
    unread = json.loads(out)["setup"]["from"]["unread"]
    assert [u["key"] for u in unread] == ["zero_optimization.zero_quantized_weights"]


@pytest.mark.parametrize("name, text, words", [
    ("missing.yaml", None, "no such file"),
    ("bad.json", "{ not json", "malformed JSON"),
    ("bad.yaml", "a: [1, 2\nb: c\n", "malformed YAML"),
    ("bad.toml", "[model\n", "malformed TOML"),
    ("empty.yaml", "", "empty, or not a mapping"),
    ("list.yaml", "- 1\n- 2\n", "a list is not a training config"),
    ("other.yaml", "name: my-app\nversion: 3\n", "not a training config trainplan reads"),
    ("config.json", '{"model_type": "llama", "hidden_size": 64, "architectures": ["LlamaForCausalLM"]}',
     "model's config.json"),
])
def test_bad_sources_are_one_line(capsys, tmp_path, name, text, words):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    code, _, err = run(capsys, "estimate", "--model", "llama-3.1-8b", "--from", str(path))
    assert code == 2 and words in err and err.count("\n") == 1 and "Traceback" not in err


def test_sharding_without_a_gpu_count_asks_for_one(capsys, tmp_path):
    path = tmp_path / "ds.json"
    path.write_text('{"zero_optimization": {"stage": 3}}')
    code, _, err = run(capsys, "estimate", "--model", "llama-3.1-8b", "--from", str(path))
    assert code == 2 and "--num-gpus" in err and "zero_optimization.stage" in err


def test_configs_that_include_each_other_stop(tmp_path):
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(f"model_name_or_path: m\nfinetuning_type: lora\ndeepspeed: {b}\n")
    b.write_text(f"model_name_or_path: m\nfinetuning_type: lora\ndeepspeed: {a}\n")
    with pytest.raises(TrainplanError):
        read_config(str(a))


_SCALARS = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True) | st.text(max_size=12)
_KEYS = st.sampled_from(["zero_optimization", "stage", "train_micro_batch_size_per_gpu", "bf16", "enabled",
                         "finetuning_type", "lora_rank", "cutoff_len", "model_name_or_path", "per_device_train_batch_size",
                         "deepspeed", "fsdp", "gradient_checkpointing", "quantization_bit", "adapter", "base_model",
                         "offload_optimizer", "device", "num_processes", "sequence_len", "optim", "x"])
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
                       max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=6))
def test_any_config_reads_or_fails_with_one_clear_line(tmp_path, data):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    try:
        imported = read_config(str(path))
    except TrainplanError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc) or "--from" in str(exc)
        return
    assert imported.format and all(s.field for s in imported.settings)
