"""ms-swift configs and command lines read into trainplan's options (`--from lora.yaml`,
`--from "NPROC_PER_NODE=8 swift sft ..."`): each fixture field by field, the keys that went unread,
swift's own defaults (LoRA, checkpointing on, the global-batch-16 accumulation rule), the DeepSpeed
presets, and the same estimate as the equivalent flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.errors import TrainplanError
from trainplan.importers import read_config, swift
from trainplan.importers.base import Origin
from trainplan.job.defaults import swift as swift_defaults
from trainplan.job.options import OPTION_NAMES, JobOptions

FIX = Path(__file__).parent / "fixtures" / "configs" / "swift"


def values(o: JobOptions, *names: str) -> dict:
    return {n: getattr(o, n) for n in names}


def unread(o: JobOptions) -> set[str]:
    return {u.key for u in o.unread}


def origin(o: JobOptions, field: str) -> Origin:
    return next(s.origin for s in o.provenance if s.field == field)


def same_estimate(capsys, source: str, *flags: str) -> None:
    a = est(capsys, "--from", source)
    b = est(capsys, *flags)
    assert a["memory"] == b["memory"]
    assert a["time"]["step_s"] == b["time"]["step_s"]


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the fixtures ---------------------------------------------------------------------------------

def test_lora_yaml():
    o = options(FIX / "lora.yaml")
    assert values(o, "model", "framework", "method", "lora_rank", "lora_alpha", "lora_dropout", "lora_targets",
                  "seq_len", "batch_size", "grad_accum", "epochs", "grad_ckpt", "attention", "precision",
                  "optimizer", "loss", "packing", "num_gpus") == {
        "model": "Qwen/Qwen2.5-7B-Instruct", "framework": "swift", "method": "lora", "lora_rank": 8,
        "lora_alpha": 32.0, "lora_dropout": 0.05, "lora_targets": "all-linear", "seq_len": 2048, "batch_size": 1,
        "grad_accum": 16, "epochs": 1.0, "grad_ckpt": "full", "attention": "sdpa", "precision": "bf16",
        "optimizer": "adamw-fused", "loss": "full", "packing": False, "num_gpus": 1}
    assert unread(o) == set()
    assert o.ignored_keys >= 10              # dataset, system, learning rate, eval/save steps ...
    assert origin(o, "grad_ckpt") is Origin.FRAMEWORK_DEFAULT     # swift: gradient_checkpointing=True
    assert origin(o, "lora_dropout") is Origin.FRAMEWORK_DEFAULT


def test_lora_yaml_same_estimate_as_flags(capsys):
    same_estimate(capsys, str(FIX / "lora.yaml"),
                  "--model", "Qwen/Qwen2.5-7B-Instruct", "--framework", "swift", "--method", "lora",
                  "--lora-rank", "8", "--lora-alpha", "32", "--lora-dropout", "0.05", "--lora-targets", "all-linear",
                  "--seq-len", "2048", "--batch-size", "1", "--grad-accum", "16", "--epochs", "1",
                  "--grad-ckpt", "full", "--attention", "sdpa", "--precision", "bf16", "--optimizer", "adamw-fused",
                  "--loss", "full", "--dataset", "AI-ModelScope/alpaca-gpt4-data-zh#500,"
                  "AI-ModelScope/alpaca-gpt4-data-en#500,swift/self-cognition#500")


def test_command_line_with_nproc_and_zero3_preset():
    o = options(FIX / "zero3.sh")
    assert values(o, "num_gpus", "nodes", "model", "method", "zero", "offload", "precision", "attention",
                  "batch_size", "grad_accum", "epochs", "seq_len", "grad_ckpt") == {
        "num_gpus": 8, "nodes": 1, "model": "Qwen/Qwen2.5-7B-Instruct", "method": "full", "zero": 3,
        "offload": "none", "precision": "bf16", "attention": "flash", "batch_size": 2, "grad_accum": 2,
        "epochs": 2.0, "seq_len": 4096, "grad_ckpt": "full"}
    # what swift/config/zero3.json says (bucket sizes are being modelled elsewhere: options level)
    assert values(o, "reduce_bucket_size", "prefetch_bucket_size", "param_persistence_threshold",
                  "max_live_parameters", "overlap_comm") == {
        "reduce_bucket_size": "auto", "prefetch_bucket_size": "auto", "param_persistence_threshold": "auto",
        "max_live_parameters": 1_000_000_000, "overlap_comm": False}
    assert any(c.endswith("swift/config/zero3.json") for c in o.configs)
    method = next(s for s in o.provenance if s.field == "method")
    assert method.key == "train_type"                          # the v3 spelling is read
    assert unread(o) == set()


def test_the_command_given_as_text_reads_the_same():
    text = " ".join(line.rstrip("\\").strip() for line in (FIX / "zero3.sh").read_text().splitlines()
                    if line.strip() and not line.startswith("#"))
    assert read_config(text).values() == read_config(str(FIX / "zero3.sh")).values()


def test_full_finetune_with_zero2_offload_yaml():
    o = options(FIX / "full-zero2-offload.yaml")
    assert values(o, "num_gpus", "method", "zero", "offload", "offload_device", "precision", "packing",
                  "padding_free", "seq_len", "grad_accum", "epochs", "attention") == {
        "num_gpus": 4, "method": "full", "zero": 2, "offload": "optimizer", "offload_device": "cpu",
        "precision": "bf16", "packing": True, "padding_free": True, "seq_len": 8192, "grad_accum": 4,
        "epochs": 3.0, "attention": "flash"}
    # gradient_accumulation_steps unset: max(1, ceil(16 / 1 / 4 GPUs)) = 4
    assert origin(o, "grad_accum") is Origin.FRAMEWORK_DEFAULT
    assert "with 4 GPU(s)" in next(s.note for s in o.provenance if s.field == "grad_accum")


def test_qlora_bnb():
    o = options(FIX / "qlora.yaml")
    assert values(o, "method", "quant", "double_quant", "lora_rank", "lora_alpha", "precision", "batch_size",
                  "grad_accum") == {
        "method": "qlora", "quant": "nf4", "double_quant": True, "lora_rank": 16, "lora_alpha": 32.0,
        "precision": "bf16", "batch_size": 2, "grad_accum": 8}
    assert unread(o) == set()


def test_qlora_same_estimate_as_flags(capsys):
    same_estimate(capsys, str(FIX / "qlora.yaml"),
                  "--model", "Qwen/Qwen2.5-7B-Instruct", "--framework", "swift", "--method", "qlora", "--quant",
                  "nf4", "--double-quant", "--lora-rank", "16", "--lora-alpha", "32", "--lora-dropout", "0.05",
                  "--lora-targets", "all-linear", "--seq-len", "2048", "--batch-size", "2", "--grad-accum", "8",
                  "--epochs", "1", "--grad-ckpt", "full", "--attention", "sdpa", "--precision", "bf16",
                  "--optimizer", "adamw-fused", "--loss", "full",
                  "--dataset", "AI-ModelScope/alpaca-gpt4-data-zh#500,swift/self-cognition#500")


def test_sequence_parallel():
    o = options(FIX / "sequence-parallel.sh")
    assert values(o, "num_gpus", "ulysses", "cp", "seq_len", "packing", "padding_free", "attention", "liger",
                  "loss", "zero", "method") == {
        "num_gpus": 8, "ulysses": 4, "cp": 1, "seq_len": 32768, "packing": True, "padding_free": True,
        "attention": "flash", "liger": True, "loss": "fused", "zero": 2, "method": "lora"}


def test_sequence_parallel_beyond_the_kv_heads_is_ring_attention():
    # Qwen2.5-7B has 4 key/value heads: 8-way SP is Ulysses 4 x ring 2 (sequence_parallel.py _init_device_mesh)
    o = options("NPROC_PER_NODE=8 swift sft --model Qwen/Qwen2.5-7B --sequence_parallel_size 8 --max_length 65536 "
                "--padding_free true --attn_impl flash_attn")
    assert (o.ulysses, o.cp) == (4, 2)


def test_full_dpo_has_a_reference_model():
    o = options(FIX / "dpo.sh")
    assert values(o, "stage", "ref_model", "method", "zero", "num_gpus", "precision") == {
        "stage": "dpo", "ref_model": True, "method": "full", "zero": 3, "num_gpus": 4, "precision": "bf16"}
    o = options("swift rlhf --rlhf_type dpo --model Qwen/Qwen2.5-7B-Instruct --max_length 2048")
    assert (o.stage, o.ref_model, o.method) == ("dpo", False, "lora")     # LoRA disables the adapter instead
    o = options("swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B-Instruct --tuner_type full --max_length 2048")
    assert (o.stage, o.ref_model, o.grad_accum) == ("grpo", True, 1)       # GRPO: accumulation 1, beta 0.04
    o = options("swift rlhf --rlhf_type grpo --beta 0 --model Qwen/Qwen2.5-7B-Instruct --tuner_type full "
                "--max_length 2048")
    assert o.ref_model is False
    o = options("swift rlhf --rlhf_type cpo --model Qwen/Qwen2.5-7B-Instruct --max_length 2048")
    assert (o.stage, o.ref_model) == ("simpo", False)


def test_megatron_sft():
    o = options(FIX / "megatron.sh")
    assert values(o, "framework", "method", "num_gpus", "tp", "pp", "sequence_parallel", "batch_size",
                  "grad_accum", "grad_ckpt", "zero", "max_steps", "seq_len", "packing", "padding_free",
                  "attention", "precision") == {
        "framework": "megatron", "method": "full", "num_gpus": 8, "tp": 2, "pp": 2, "sequence_parallel": True,
        "batch_size": 2, "grad_accum": 8, "grad_ckpt": "full", "zero": 1, "max_steps": 2000, "seq_len": 4096,
        "packing": True, "padding_free": True, "attention": "flash", "precision": "bf16"}
    assert unread(o) == set()
    # 32 global / (2 micro x data parallel 8 / (tp 2 x pp 2)) = 8
    assert origin(o, "grad_accum") is Origin.DERIVED
    defaults = options("NPROC_PER_NODE=4 megatron sft --model Qwen/Qwen2.5-7B-Instruct --max_length 2048")
    assert values(defaults, "method", "grad_ckpt", "sequence_parallel", "grad_accum", "padding_free") == {
        "method": "full", "grad_ckpt": "selective", "sequence_parallel": False, "grad_accum": 4,
        "padding_free": True}


def test_command_naming_a_yaml_file_flags_after_it_win():
    o = options(FIX / "sft-with-yaml.sh")
    assert values(o, "num_gpus", "lora_rank", "grad_accum", "model", "seq_len") == {
        "num_gpus": 2, "lora_rank": 16, "grad_accum": 8, "model": "Qwen/Qwen2.5-7B-Instruct", "seq_len": 2048}
    assert str(FIX / "lora.yaml") in o.configs


def test_command_naming_a_yaml_same_estimate_as_flags(capsys):
    same_estimate(capsys, str(FIX / "sft-with-yaml.sh"),
                  "--model", "Qwen/Qwen2.5-7B-Instruct", "--framework", "swift", "--method", "lora",
                  "--lora-rank", "16", "--lora-alpha", "32", "--lora-dropout", "0.05", "--lora-targets", "all-linear",
                  "--seq-len", "2048", "--batch-size", "1", "--grad-accum", "8", "--epochs", "1", "--num-gpus", "2",
                  "--grad-ckpt", "full", "--attention", "sdpa", "--precision", "bf16", "--optimizer", "adamw-fused",
                  "--loss", "full",
                  "--dataset", "AI-ModelScope/alpaca-gpt4-data-zh#500,AI-ModelScope/alpaca-gpt4-data-en#500,"
                  "swift/self-cognition#500")


# --- rules and defaults ---------------------------------------------------------------------------

def test_precision_rules():
    cmd = "swift sft --model Qwen/Qwen2.5-1.5B --max_length 1024 "
    assert options(cmd + "--tuner_type full").precision == "bf16-pure"       # bf16 model, AdamW in bf16
    assert options(cmd + "--tuner_type full --torch_dtype float32").precision == "fp16"   # fp32 -> fp16 autocast
    assert options(cmd + "--tuner_type full --torch_dtype float32 --bf16 true").precision == "bf16"
    assert options("NPROC_PER_NODE=2 " + cmd + "--tuner_type full --deepspeed zero2").precision == "bf16"
    assert options(cmd + "--tuner_type lora").precision == "bf16"               # fp32 adapters
    assert options(cmd + "--tuner_type lora --lora_dtype bfloat16").precision == "bf16-pure"
    assert options(cmd + "--tuner_type full --torch_dtype float16").precision == "fp16-pure"
    o = options("NPROC_PER_NODE=4 " + cmd + "--tuner_type full --fsdp fsdp2")
    assert values(o, "precision", "fsdp", "fsdp_version", "reshard_after_forward", "grad_ckpt") == {
        "precision": "bf16", "fsdp": "full", "fsdp_version": 2, "reshard_after_forward": True, "grad_ckpt": "full"}


def test_full_finetune_same_estimate_as_flags(capsys):
    same_estimate(capsys, "swift sft --model Qwen/Qwen2.5-1.5B --tuner_type full --max_length 1024 "
                          "--per_device_train_batch_size 4 --attn_impl flash_attn",
                  "--model", "Qwen/Qwen2.5-1.5B", "--framework", "swift", "--method", "full", "--seq-len", "1024",
                  "--batch-size", "4", "--grad-accum", "4", "--epochs", "3", "--grad-ckpt", "full", "--attention",
                  "flash", "--precision", "bf16-pure", "--optimizer", "adamw-fused", "--loss", "full")


def test_deepspeed_and_fsdp_files(tmp_path):
    (tmp_path / "ds.json").write_text(json.dumps({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"},
                                                                        "offload_optimizer": {"device": "cpu"}},
                                                  "bf16": {"enabled": "auto"}}))
    o = options(write(tmp_path, json.dumps({"model": "Qwen/Qwen2.5-7B-Instruct", "tuner_type": "full",
                                            "max_length": 2048, "deepspeed": "ds.json"}), "args.json"))
    assert values(o, "zero", "offload", "precision") == {"zero": 3, "offload": "all", "precision": "bf16"}
    assert str(tmp_path / "ds.json") in o.configs
    (tmp_path / "fsdp.json").write_text(json.dumps({"fsdp": "shard_grad_op auto_wrap offload",
                                                    "fsdp_config": {"fsdp_version": 2}}))
    o = options(write(tmp_path, "model: Qwen/Qwen2.5-7B-Instruct\ntuner_type: full\nmax_length: 2048\n"
                                "fsdp: fsdp.json\n", "f.yaml"))
    assert values(o, "fsdp", "fsdp_version", "reshard_after_forward", "offload", "precision") == {
        "fsdp": "full", "fsdp_version": 2, "reshard_after_forward": False, "offload": "all", "precision": "bf16"}
    o = options(write(tmp_path, "model: Qwen/Qwen2.5-7B\ntuner_type: full\nmax_length: 512\ndeepspeed: no.json\n",
                      "m.yaml"))
    assert "deepspeed" in unread(o) and o.precision == "bf16-pure"


def test_defaults_fill_what_the_file_leaves_out(tmp_path):
    o = options(write(tmp_path, "model: Qwen/Qwen2.5-7B-Instruct\ndataset: [a]\nmax_length: 4096\n"
                                "ENV:\n  NPROC_PER_NODE: 8\n"))
    assert values(o, "method", "lora_rank", "lora_alpha", "lora_dropout", "lora_targets", "batch_size",
                  "grad_accum", "epochs", "grad_ckpt", "optimizer", "precision", "num_gpus") == {
        "method": "lora", "lora_rank": 8, "lora_alpha": 32.0, "lora_dropout": 0.05, "lora_targets": "all-linear",
        "batch_size": 1, "grad_accum": 2, "epochs": 3.0, "grad_ckpt": "full", "optimizer": "adamw-fused",
        "precision": "bf16", "num_gpus": 8}
    assert all(origin(o, f) is Origin.FRAMEWORK_DEFAULT
               for f in ("method", "lora_rank", "lora_alpha", "grad_accum", "epochs", "grad_ckpt", "precision"))
    note = next(s.note for s in o.provenance if s.field == "lora_alpha")
    assert swift_defaults.VERSION in note and "tuner_args.py" in note


def test_max_length_unset(tmp_path):
    o = options(write(tmp_path, "model: Qwen/Qwen2.5-7B-Instruct\ntuner_type: lora\n"))
    assert "max_length" in unread(o)              # a truncation bound only: trainplan keeps its own seq_len
    o = options(write(tmp_path, "model: Qwen/Qwen3-8B\ntuner_type: lora\npacking: true\n", "p.yaml"))
    assert (o.seq_len, origin(o, "seq_len")) == (40960, Origin.DERIVED)    # packs fill max_model_len


def test_gpus_from_the_environment():
    o = options("CUDA_VISIBLE_DEVICES=0,1,2,3 swift sft --model Qwen/Qwen2.5-7B-Instruct --max_length 2048")
    assert (o.num_gpus, o.device_map) == (4, "auto")        # one process: the model split over the GPUs
    o = options("NNODES=2 NPROC_PER_NODE=8 swift sft --model Qwen/Qwen2.5-7B-Instruct --max_length 2048 "
                "--per_device_train_batch_size 1")
    assert (o.num_gpus, o.nodes, o.grad_accum) == (16, 2, 1)


def test_keys_that_matter_but_are_not_understood(tmp_path):
    text = ("model: Qwen/Qwen2.5-7B-Instruct\ntuner_type: lora\nmax_length: 2048\nquant_method: hqq\nquant_bits: 4\n"
            "modules_to_save: [embed_tokens, classifier]\nuse_galore: true\noptim: adamw_anyprecision\n"
            "target_regex: '.*proj'\nrlhf_type: gkd\n")
    o = options(write(tmp_path, text))
    assert unread(o) == {"quant_method", "modules_to_save", "use_galore", "optim", "target_regex", "rlhf_type"}
    assert o.method == "lora" and o.modules_to_save == "embed_tokens"    # classifier: not modelled
    o = options(write(tmp_path, "model: Qwen/Qwen2.5-7B-Instruct\ntuner_type: vera\nmax_length: 512\n", "v.yaml"))
    assert unread(o) == {"tuner_type"}


def test_flags_override_the_file(capsys):
    a = est(capsys, "--from", str(FIX / "lora.yaml"), "--seq-len", "4096", "--grad-accum", "2")
    assert (a["setup"]["seq_len"], a["setup"]["grad_accum"]) == (4096, 2)
    o = options(FIX / "lora.yaml", seq_len=4096)
    flag = next(s for s in o.provenance if s.field == "seq_len")
    assert flag.origin is Origin.FLAG and "max_length=2048" in flag.note


@pytest.mark.parametrize("text, words", [
    ("model: x\ntuner_type: [lora\n", ("malformed YAML",)),
    ("model: Qwen/Qwen2.5-7B\ntuner_type: lora\nlora_rank: eight\n", ("lora_rank", "integer")),
    ("model: Qwen/Qwen2.5-7B\ntuner_type: full\ntorch_dtype: int4\n", ("torch_dtype",)),
    ("model: Qwen/Qwen2.5-7B\ntuner_type: full\ndeepspeed: zero2\nfsdp: fsdp2\n", ("deepspeed", "fsdp")),
    ("model: Qwen/Qwen2.5-7B\ntuner_type: lora\nENV:\n  NPROC_PER_NODE: eight\n", ("NPROC_PER_NODE",)),
    ("model: Qwen/Qwen2.5-7B\ntuner_type: lora\nENV: [NPROC_PER_NODE]\n", ("ENV",)),
])
def test_bad_input_names_the_file_and_key(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(TrainplanError) as err:
        read_config(str(path))
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert all(w in message for w in words)


def test_bad_command_line_value():
    with pytest.raises(TrainplanError, match="command line.*per_device_train_batch_size"):
        read_config("swift sft --model Qwen/Qwen2.5-7B --per_device_train_batch_size $BS")


def test_detection():
    assert read_config(str(FIX / "lora.yaml")).format == "swift"
    assert read_config(str(FIX / "megatron.sh")).format == "swift"
    assert swift.detect(["NPROC_PER_NODE=8", "swift", "sft", "--model", "x"], "c") > 0
    assert swift.detect(["torchrun", "train.py"], "c") == 0
    assert swift.detect({"model_name_or_path": "x", "lora_rank": 8, "finetuning_type": "lora"}, "lf.yaml") == 0
    assert swift.detect({"base_model": "x", "adapter": "lora"}, "ax.yml") == 0


def test_defaults_module():
    assert swift_defaults.VERSION.startswith("modelscope/ms-swift 3602360")
    assert all(d.field in OPTION_NAMES and d.source for d in swift_defaults.DEFAULTS + swift_defaults.MEGATRON_DEFAULTS)
    assert set(swift_defaults.DEEPSPEED_PRESETS) == {"zero0", "zero1", "zero2", "zero2_offload", "zero3",
                                                     "zero3_offload"}
    z3o = swift_defaults.DEEPSPEED_PRESETS["zero3_offload"]["zero_optimization"]
    assert (z3o["stage"], z3o["offload_optimizer"]["device"], z3o["offload_param"]["device"]) == (3, "cpu", "cpu")
