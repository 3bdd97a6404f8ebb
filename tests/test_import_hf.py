"""HF TrainingArguments and TRL configs read with --from (trainplan.importers.hf)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.cli import main
from trainplan.errors import TrainplanError
from trainplan.importers import detect, read_config
from trainplan.importers import hf as reader
from trainplan.importers.base import Origin
from trainplan.job.options import JobOptions

HERE = Path(__file__).parent / "fixtures" / "configs" / "hf"


def unread(opts: JobOptions) -> dict:
    return {u.key: u for u in opts.unread}


def origin(opts: JobOptions, field: str) -> Origin:
    return {s.field: s for s in opts.provenance}[field].origin


def same_estimate(capsys, from_args: list[str], flag_args: list[str]) -> None:
    a = est(capsys, *from_args)
    b = est(capsys, *flag_args)
    skip = {"sources", "from", "max_steps"}   # bookkeeping; max_steps has no flag
    assert {k: v for k, v in a["setup"].items() if k not in skip} == \
        {k: v for k, v in b["setup"].items() if k not in skip}
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]


def write(tmp_path: Path, text: str, name: str = "cfg.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- fixtures, field by field -------------------------------------------------------------------------

def test_full_zero3_json_with_deepspeed_path():
    f = HERE / "full_zero3.json"
    assert detect(json.loads(f.read_text()), str(f)) == "hf"
    o = options(f)
    assert (o.framework, o.model, o.method) == ("deepspeed", "meta-llama/Llama-3.1-8B", "full")
    assert (o.batch_size, o.grad_accum, o.epochs) == (2, 8, 1.0)
    assert (o.seq_len, o.packing) == (4096, True)                    # run_clm.py block_size
    assert o.precision == "bf16" and o.grad_ckpt == "full" and o.optimizer == "adamw-fused"
    assert (o.zero, o.offload, o.overlap_comm) == (3, "none", True)
    assert (o.reduce_bucket_size, o.prefetch_bucket_size, o.param_persistence_threshold) == ("auto",) * 3
    assert o.max_live_parameters == 1_000_000_000
    assert o.loss == "full" and o.attention == "sdpa"
    assert str(HERE / "ds_zero3.json") in o.configs
    assert o.unread == ()
    assert origin(o, "optimizer") is Origin.FRAMEWORK_DEFAULT and origin(o, "zero") is Origin.FILE


def test_fsdp2_v5_yaml():
    o = options(HERE / "fsdp2_v5.yaml")
    assert o.framework == "hf" and o.model == ""                     # a TrainingArguments file names no model
    assert (o.fsdp, o.fsdp_version, o.reshard_after_forward, o.offload) == ("full", 2, True, "none")
    assert o.grad_ckpt == "full"        # fsdp_config.activation_checkpointing over activation_checkpointing: false
    assert (o.batch_size, o.grad_accum, o.epochs, o.precision, o.optimizer) == (4, 4, 2.0, "bf16", "adamw-fused")
    assert o.seq_len == 2048 and o.packing is False                  # not in the file: trainplan's defaults
    assert o.unread == ()


def test_fsdp_v4_string_with_offload():
    o = options(HERE / "fsdp_v4_offload.json")
    assert (o.fsdp, o.offload, o.reshard_after_forward) == ("full", "all", True)
    assert o.fsdp_version == 2 and origin(o, "fsdp_version") is Origin.FRAMEWORK_DEFAULT   # v5 translation
    assert (o.batch_size, o.grad_accum, o.epochs, o.grad_ckpt, o.precision) == (1, 16, 3.0, "full", "bf16")
    assert o.optimizer == "adamw-fused" and o.unread == ()


def test_trl_sft_lora_packing_liger():
    f = HERE / "trl_sft_lora.yaml"
    o = options(f)
    assert (o.framework, o.model, o.method) == ("trl", "Qwen/Qwen2.5-7B-Instruct", "lora")
    assert (o.lora_rank, o.lora_alpha, o.lora_dropout, o.lora_targets) == (32, 64, 0.05, "all-linear")
    assert (o.seq_len, o.packing, o.padding_free) == (4096, True, True)    # packing_strategy "bfd"
    assert (o.liger, o.loss, o.attention) == (True, "fused", "flash")
    assert (o.precision, o.load_fp32) == ("bf16", False)            # bf16 base, fp32 adapters
    assert o.grad_ckpt == "full" and origin(o, "grad_ckpt") is Origin.FRAMEWORK_DEFAULT   # TRL's default
    assert (o.batch_size, o.grad_accum, o.epochs, o.optimizer) == (2, 8, 1.0, "adamw-fused")
    assert o.stage is None and o.ref_model is None and o.unread == ()


def test_trl_sft_qlora():
    o = options(HERE / "trl_sft_qlora.yaml")
    assert (o.framework, o.method, o.quant, o.double_quant) == ("trl", "qlora", "nf4", True)
    assert o.lora_targets == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    assert (o.lora_rank, o.lora_alpha) == (16, 32)
    assert o.precision == "bf16-pure"   # bf16 non-quantized weights, adapters cast to bf16 by SFTTrainer
    assert (o.optimizer, o.loss, o.seq_len, o.packing) == ("paged-adamw-8bit", "chunked", 2048, False)
    assert origin(o, "loss") is Origin.FRAMEWORK_DEFAULT
    assert o.unread == ()


def test_trl_dpo_full_zero3():
    o = options(HERE / "trl_dpo.yaml")
    assert (o.framework, o.stage, o.ref_model, o.method) == ("deepspeed", "dpo", True, "full")
    assert (o.zero, o.seq_len, o.batch_size, o.grad_accum, o.precision) == (3, 2048, 1, 16, "bf16")
    assert o.loss == "full" and o.grad_ckpt == "full"
    assert o.unread == ()


def test_trl_grpo_lora_colocated_vllm():
    o = options(HERE / "trl_grpo.yaml")
    assert (o.framework, o.stage, o.method, o.ref_model) == ("trl", "grpo", "lora", False)   # beta 0.0 default
    assert (o.lora_rank, o.lora_alpha, o.lora_dropout) == (64, 128, 0.05)
    assert (o.batch_size, o.grad_accum, o.precision, o.load_fp32) == (8, 4, "bf16", False)
    assert set(unread(o)) == {"max_completion_length", "vllm_gpu_memory_utilization"}
    assert o.seq_len == 2048    # GRPO gives no total length: trainplan's default stays


def test_gradient_checkpointing_off_liger_compile():
    o = options(HERE / "no_gc.json")
    assert (o.framework, o.grad_ckpt, o.optimizer, o.precision) == ("hf", "none", "adamw", "bf16")
    assert (o.liger, o.loss, o.compile, o.max_steps) == (True, "fused", True, 2000)
    assert o.unread == () and o.ignored_keys == 7


# --- --from gives the same estimate as the same job in flags ------------------------------------------

def test_estimate_no_gc_equals_flags(capsys):
    same_estimate(capsys, ["--from", str(HERE / "no_gc.json"), "--model", "mistral-7b-v0.1"],
                  ["--model", "mistral-7b-v0.1", "--framework", "hf", "--precision", "bf16", "--optimizer", "adamw",
                   "--grad-ckpt", "none", "--liger", "--loss", "fused", "--compile", "--batch-size", "4",
                   "--grad-accum", "2", "--attention", "sdpa"])


def test_estimate_qlora_equals_flags(capsys):
    same_estimate(capsys, ["--from", str(HERE / "trl_sft_qlora.yaml")],
                  ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--framework", "trl", "--method", "qlora",
                   "--quant", "nf4", "--double-quant", "--precision", "bf16-pure", "--no-load-fp32",
                   "--lora-rank", "16", "--lora-alpha", "32", "--lora-dropout", "0.05",
                   "--lora-targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "--batch-size", "4",
                   "--grad-accum", "4", "--seq-len", "2048", "--grad-ckpt", "full", "--optimizer", "paged-adamw-8bit",
                   "--loss", "chunked", "--attention", "sdpa", "--epochs", "2",
                   "--dataset", "HuggingFaceH4/ultrachat_200k"])      # dataset_name, in the dataset catalog


def test_estimate_trl_lora_fp32_base_equals_flags(capsys, tmp_path):
    """TRL loads the model in float32 when dtype is left out: LoRA over an fp32 base (load_fp32)."""
    f = write(tmp_path, "model_name_or_path: Qwen/Qwen2.5-1.5B\nuse_peft: true\nlora_r: 8\n"
                        "lora_target_modules: [q_proj, v_proj]\nmax_length: 1024\nper_device_train_batch_size: 4\n")
    o = options(f)
    assert (o.precision, o.load_fp32, o.lora_alpha, o.grad_ckpt) == ("bf16", True, 32, "full")
    assert origin(o, "load_fp32") is Origin.FRAMEWORK_DEFAULT and origin(o, "precision") is Origin.FRAMEWORK_DEFAULT
    same_estimate(capsys, ["--from", str(f)],
                  ["--model", "qwen2.5-1.5b", "--framework", "trl", "--method", "lora", "--lora-rank", "8",
                   "--lora-alpha", "32", "--lora-dropout", "0.05", "--lora-targets", "q_proj,v_proj",
                   "--precision", "bf16", "--load-fp32", "--seq-len", "1024", "--batch-size", "4",
                   "--grad-ckpt", "full", "--loss", "chunked", "--attention", "sdpa", "--optimizer", "adamw-fused",
                   "--epochs", "3"])


def test_estimate_trl_full_bf16_is_pure(capsys, tmp_path):
    """dtype bfloat16 without DeepSpeed/FSDP: bf16 weights, gradients and AdamW states."""
    f = write(tmp_path, "model_name_or_path: Qwen/Qwen2.5-1.5B\ndtype: bfloat16\nmax_length: 2048\n"
                        "per_device_train_batch_size: 4\ngradient_accumulation_steps: 4\ndataset_text_field: text\n")
    o = options(f)
    assert (o.method, o.precision, o.framework) == ("full", "bf16-pure", "trl")
    same_estimate(capsys, ["--from", str(f)],
                  ["--model", "qwen2.5-1.5b", "--framework", "trl", "--precision", "bf16-pure", "--seq-len", "2048",
                   "--batch-size", "4", "--grad-accum", "4", "--grad-ckpt", "full", "--loss", "chunked",
                   "--attention", "sdpa", "--optimizer", "adamw-fused", "--epochs", "3"])


def test_flags_override_the_file(capsys):
    o = options(HERE / "trl_sft_qlora.yaml", batch_size=1, seq_len=4096)
    assert (o.batch_size, o.seq_len, o.method) == (1, 4096, "qlora")
    flag = {s.field: s for s in o.provenance}["batch_size"]
    assert flag.origin is Origin.FLAG and "per_device_train_batch_size=4" in flag.note
    a = est(capsys, "--from", str(HERE / "trl_sft_qlora.yaml"), "--batch-size", "1")
    assert a["setup"]["batch_size"] == 1 and a["setup"]["method"] == "qlora"


# --- precision and reference-model rules ----------------------------------------------------------------

@pytest.mark.parametrize("text, precision, load_fp32", [
    ("bf16: true\n", "bf16", None),                                       # plain HF: fp32 weights assumed
    ("fp16: true\n", "fp16", None),
    ("learning_rate: 1.0e-5\n", "fp32", None),                            # TrainingArguments bf16/fp16 False
    ("model_name_or_path: x\ndtype: bfloat16\nbf16: true\n", "bf16-pure", None),   # run_clm.py-style dtype
    ("use_peft: true\ndtype: bfloat16\n", "bf16", False),                 # TRL LoRA over a bf16 base
    ("use_peft: true\ndtype: auto\n", "bf16", False),
    ("use_peft: true\nload_in_4bit: true\n", "bf16", True),               # TRL default dtype float32
    ("dataset_text_field: text\nfp16: true\n", "fp16", None),             # TRL: fp16 turns bf16 off
    ("dataset_text_field: text\nbf16: false\n", "fp32", None),
])
def test_precision_rule(tmp_path, text, precision, load_fp32):
    o = options(write(tmp_path, text))
    assert (o.precision, o.load_fp32) == (precision, load_fp32)


def test_fsdp_upcasts_a_bf16_model(tmp_path):
    o = options(write(tmp_path, "dataset_text_field: text\ndtype: bfloat16\nfsdp: true\n"))
    assert (o.precision, o.fsdp, o.fsdp_version) == ("bf16", "full", 2)   # accelerate fsdp2_prepare_model


def test_inline_deepspeed_dict_and_mismatch(tmp_path):
    f = write(tmp_path, json.dumps({"per_device_train_batch_size": 4, "bf16": True, "deepspeed": {
        "train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}}),
        "args.json")
    o = options(f)
    assert (o.framework, o.zero, o.offload, o.offload_device) == ("deepspeed", 2, "optimizer", "cpu")
    assert o.batch_size == 2 and o.configs == (str(f),)
    u = unread(o)["deepspeed.train_micro_batch_size_per_gpu"]
    assert "per_device_train_batch_size=4" in u.why and "mismatch" in u.why
    prov = {s.field: s for s in o.provenance}
    assert prov["zero"].key == "deepspeed.zero_optimization.stage"


def test_deepspeed_json_string_and_missing_file(tmp_path):
    o = options(write(tmp_path, json.dumps({"bf16": True, "deepspeed": '{"zero_optimization": {"stage": 1}}'}), "a.json"))
    assert (o.framework, o.zero) == ("deepspeed", 1)
    o = options(write(tmp_path, "bf16: true\ndeepspeed: nowhere/ds.json\n"))
    assert o.framework == "deepspeed" and "deepspeed" in unread(o) and o.zero == 0


def test_dpo_and_grpo_reference_models(tmp_path):
    assert options(write(tmp_path, "beta: 0.1\nuse_peft: true\n")).ref_model is False
    assert options(write(tmp_path, "beta: 0.1\nprecompute_ref_log_probs: true\n")).ref_model is False
    assert options(write(tmp_path, "beta: 0.1\n")).ref_model is True
    o = options(write(tmp_path, "num_generations: 8\nbeta: 0.04\nuse_vllm: true\nvllm_mode: server\n"))
    assert (o.stage, o.ref_model) == ("grpo", True) and o.unread[0].key == "max_completion_length"
    o = options(write(tmp_path, "num_generations: 4\nbeta: 0.04\nuse_peft: true\n"))
    assert o.ref_model is False and "use_vllm" in unread(o)


def test_checkpointing_spellings(tmp_path):
    # v5: the new name wins over the deprecated alias; TRL's default True applies through the alias
    assert options(write(tmp_path, "activation_checkpointing: false\ngradient_checkpointing: true\n")).grad_ckpt == "none"
    assert options(write(tmp_path, "dataset_text_field: text\nactivation_checkpointing: false\n")).grad_ckpt == "none"
    assert options(write(tmp_path, "learning_rate: 1.0e-5\n")).grad_ckpt == "none"         # HF Trainer default
    o = options(write(tmp_path, "activation_checkpointing: true\n"
                                "activation_checkpointing_kwargs: {every_n_layers: 2, offload: true}\n"))
    assert (o.grad_ckpt, o.grad_ckpt_every, o.activation_offload) == ("full", 2, True)
    o = options(write(tmp_path, "dataset_text_field: text\nactivation_offloading: true\n"))
    assert o.activation_offload is True


def test_legacy_fsdp_strategies(tmp_path):
    o = options(write(tmp_path, 'fsdp: "shard_grad_op auto_wrap"\n'))
    assert (o.fsdp, o.reshard_after_forward, o.fsdp_version) == ("full", False, 2)
    o = options(write(tmp_path, 'fsdp: ["hybrid_shard", "auto_wrap"]\n'))
    assert (o.fsdp, o.reshard_after_forward, o.fsdp_version) == ("hybrid", True, 1)
    o = options(write(tmp_path, "fsdp: true\nfsdp_config: {fsdp_version: 2, fsdp_reshard_after_forward: false, "
                                "fsdp_offload_params: true, fsdp_cpu_offload: false}\n"))
    assert (o.reshard_after_forward, o.offload) == (False, "none")
    assert "fsdp_config.offload_params" in unread(o)       # accelerate's spelling, not read by transformers


def test_fsdp_config_file(tmp_path):
    (tmp_path / "fsdp.json").write_text('{"fsdp_version": 2, "cpu_offload": true}')
    o = options(write(tmp_path, "fsdp: true\nfsdp_config: fsdp.json\n"))
    assert (o.fsdp, o.offload) == ("full", "all") and str(tmp_path / "fsdp.json") in o.configs


@pytest.mark.parametrize("optim, value", [("adamw_torch_fused", "adamw-fused"), ("adamw_8bit", "adamw-8bit"),
                                          ("adamw_bnb_8bit", "adamw-8bit"), ("paged_adamw_8bit", "paged-adamw-8bit"),
                                          ("adafactor", "adafactor"), ("lion_32bit", "lion"), ("sgd", "sgd")])
def test_optimizers(tmp_path, optim, value):
    assert options(write(tmp_path, f"optim: {optim}\n")).optimizer == value


def test_keys_that_matter_but_are_not_modelled(tmp_path):
    # AdaLomo stays unmodelled (GaLore and APOLLO are read: tests/test_galore.py, tests/test_apollo.py)
    o = options(write(tmp_path, "optim: adalomo\noptim_target_modules: [attn, mlp]\nauto_find_batch_size: true\n"
                                "use_peft: true\nlora_modules_to_save: [lm_head, score]\nattn_implementation: flex_attention\n"
                                "fsdp: true\nfsdp_config: {auto_wrap_policy: SIZE_BASED_WRAP}\n"))
    assert set(unread(o)) == {"optim", "optim_target_modules", "auto_find_batch_size", "lora_modules_to_save",
                              "attn_implementation", "fsdp_config.auto_wrap_policy"}
    assert o.optimizer is None and o.attention is None     # trainplan's own defaults stay
    assert o.modules_to_save == "lm_head"                  # read; the classification head 'score' is not modelled
    o = options(write(tmp_path, "dataset_text_field: text\nmax_length: null\n"))
    assert "max_length" in unread(o) and o.seq_len == 2048


def test_sft_loss_types(tmp_path):
    assert options(write(tmp_path, "loss_type: nll\n")).loss == "full"
    assert options(write(tmp_path, "loss_type: chunked_nll\n")).loss == "chunked"
    o = options(write(tmp_path, "use_liger_kernel: true\nliger_kernel_config: {fused_linear_cross_entropy: false}\n"))
    assert (o.liger, o.loss) == (True, "full")


# --- detection and bad input --------------------------------------------------------------------------

def test_detection():
    assert reader.detect({"per_device_train_batch_size": 2, "bf16": True}, "x.json") > 0
    assert reader.trainer({"per_device_train_batch_size": 2}) is None
    assert reader.trainer({"packing": True}) == "sft"
    assert reader.trainer({"beta": 0.1}) == "dpo" and reader.trainer({"beta": 0.1, "num_generations": 8}) == "grpo"
    # LLaMA-Factory, ms-swift, axolotl and DeepSpeed files share TrainingArguments keys but are not ours
    for other in ({"stage": "sft", "finetuning_type": "lora", "per_device_train_batch_size": 1},
                  {"model": "Qwen/Qwen2.5-7B", "tuner_type": "lora", "per_device_train_batch_size": 1},
                  {"base_model": "x", "micro_batch_size": 2, "gradient_accumulation_steps": 4},
                  {"gradient_accumulation_steps": 4, "bf16": {"enabled": True}}):
        assert reader.detect(other, "x.yaml") == 0
    assert read_config(str(HERE / "trl_grpo.yaml")).format == "hf"


@pytest.mark.parametrize("text, message", [
    ("per_device_train_batch_size: eight\n", "per_device_train_batch_size must be an integer"),
    ("per_device_train_batch_size: 0\n", "per_device_train_batch_size must be at least 1"),
    ("bf16: maybe\n", "bf16 must be true or false"),
    ("bf16: true\nfp16: true\n", "bf16 and fp16 cannot both be true"),
    ("fsdp: full_shard turbo\n", "fsdp option 'turbo'"),
    ("load_in_4bit: true\nmax_length: 1024\n", "load_in_4bit needs use_peft"),
    ("use_peft: true\nload_in_4bit: true\nbnb_4bit_quant_type: int4\n", "bnb_4bit_quant_type must be nf4 or fp4"),
    ("dataset_text_field: text\ndtype: float64\n", "dtype must be auto"),
    ("activation_checkpointing_kwargs: '{oops'\nbf16: true\n", "activation_checkpointing_kwargs is not valid JSON"),
    ("fsdp: true\nfsdp_config: missing.json\n", "fsdp_config file 'missing.json' not found"),
])
def test_bad_values_name_file_and_key(tmp_path, text, message):
    f = write(tmp_path, text)
    with pytest.raises(TrainplanError) as err:
        options(f)
    assert str(f) in str(err.value) and message in str(err.value) and "\n" not in str(err.value)


def test_malformed_file(tmp_path):
    f = write(tmp_path, '{"per_device_train_batch_size": 2,', "bad.json")
    with pytest.raises(TrainplanError, match="bad.json': malformed JSON"):
        read_config(str(f))
    assert main(["estimate", "--from", str(f), "--json"]) != 0
