"""LLaMA-Factory train configs (`llamafactory-cli train x.yaml`) read with --from: each fixture's
options field by field, what goes to unread, the DeepSpeed JSON a config names, bad input, and the
same estimate as the equivalent flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import estimate_json as est
from trainplan.errors import TrainplanError
from trainplan.importers import detect, parse, read_config
from trainplan.importers.base import Origin
from trainplan.importers.llamafactory import with_overrides
from trainplan.importers.merge import from_configs
from trainplan.job.defaults import defaults, version
from trainplan.job.options import OPTION_NAMES, JobOptions

HERE = Path(__file__).parent / "fixtures" / "configs" / "llamafactory"
FULL = HERE / "examples" / "train_full"


def values(path) -> dict:
    imported = read_config(str(path))
    assert imported.format == "llamafactory"
    return imported.values()


def write(tmp_path, text: str, name: str = "train.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


LORA_DEFAULTS = {"lora_dropout": 0.0, "lora_targets": "all-linear", "dora": False}
COMMON = {"framework": "llamafactory", "stage": "sft", "precision": "bf16", "packing": False, "attention": "sdpa",
          "grad_ckpt": "full", "liger": False, "loss": "full", "optimizer": "adamw-fused"}

EXPECTED = {
    "qwen3_lora_sft.yaml": {
        **COMMON, **LORA_DEFAULTS, "model": "Qwen/Qwen3-8B", "method": "lora", "lora_rank": 8, "lora_alpha": 16.0,
        "seq_len": 2048, "samples": 2000, "batch_size": 1, "grad_accum": 8, "epochs": 3.0},
    "llama3_qlora_sft.yaml": {
        **COMMON, "model": "meta-llama/Meta-Llama-3-8B-Instruct", "method": "qlora", "quant": "nf4",
        "double_quant": True, "lora_rank": 16, "lora_alpha": 32.0, "lora_dropout": 0.05, "dora": False,
        "lora_targets": ("q_proj", "k_proj", "v_proj", "o_proj"), "seq_len": 1024, "samples": 4500,
        "batch_size": 4, "grad_accum": 4, "epochs": 1.0, "optimizer": "paged-adamw-8bit", "val_size": 0.1},
    "llama3_freeze_sft.yaml": {
        **COMMON, "model": "meta-llama/Llama-3.1-8B-Instruct", "method": "freeze", "freeze_layers": 4,
        "seq_len": 2048, "samples": 2000, "batch_size": 1, "grad_accum": 8, "epochs": 3.0},
    "qwen3_lora_dpo.yaml": {
        **COMMON, **LORA_DEFAULTS, "model": "Qwen/Qwen3-8B", "method": "lora", "lora_rank": 8, "lora_alpha": 16.0,
        "stage": "dpo", "ref_model": True, "seq_len": 2048, "samples": 1000, "batch_size": 1, "grad_accum": 8,
        "epochs": 3.0},
    "qwen3_lora_liger_packing.yaml": {
        **COMMON, **LORA_DEFAULTS, "model": "Qwen/Qwen3-8B", "method": "lora", "lora_rank": 32, "lora_alpha": 64.0,
        "seq_len": 8191, "packing": True, "samples": 40000, "attention": "flash", "liger": True, "loss": "fused",
        "batch_size": 2, "grad_accum": 4, "epochs": 2.0},
    "llama3_lora_no_gc.yaml": {
        **COMMON, **LORA_DEFAULTS, "model": "meta-llama/Llama-3.1-8B", "method": "lora", "lora_rank": 8,
        "lora_alpha": 16.0, "dora": True, "grad_ckpt": "none", "seq_len": 512, "batch_size": 2, "grad_accum": 2,
        "epochs": 1.0, "optimizer": "adamw"},
    "qwen3_lora_sft_pure_bf16.json": {
        **COMMON, "model": "Qwen/Qwen3-8B", "method": "lora", "lora_rank": 64, "lora_alpha": 16.0,
        "lora_dropout": 0.1, "lora_targets": ("q_proj", "v_proj"), "dora": False, "precision": "bf16-pure",
        "seq_len": 3072, "samples": 2000, "batch_size": 4, "grad_accum": 2, "epochs": 2.0},
    "llama3_full_galore.yaml": {
        **COMMON, "model": "meta-llama/Meta-Llama-3-8B-Instruct",
        "method": "full", "precision": "bf16-pure", "seq_len": 2048, "samples": 2000, "batch_size": 1,
        "grad_accum": 1, "epochs": 3.0,
        # use_galore with optim unset: train/trainer_utils.py _create_galore_optimizer's GaLoreAdamW branch;
        # galore_layerwise: one optimizer per parameter in a post-accumulate-grad hook
        "optimizer": "galore-adamw", "galore_rank": 128, "optimizer_in_backward": True},
    "examples/train_full/qwen3_full_sft_ds3.yaml": {
        **COMMON, "model": "Qwen/Qwen3-8B", "method": "full", "seq_len": 2048, "samples": 2000, "batch_size": 1,
        "grad_accum": 2, "epochs": 3.0, "zero": 3, "reduce_bucket_size": "auto", "prefetch_bucket_size": "auto",
        "param_persistence_threshold": "auto", "max_live_parameters": 1_000_000_000, "overlap_comm": False},
    "examples/train_full/llama3_full_sft_ds2_offload.yaml": {
        **COMMON, "model": "meta-llama/Meta-Llama-3-8B-Instruct", "method": "full", "seq_len": 4096,
        "batch_size": 2, "grad_accum": 4, "epochs": 2.0, "max_steps": 600, "zero": 2, "offload": "optimizer",
        "offload_device": "cpu", "reduce_bucket_size": 500_000_000, "overlap_comm": False},
}
# galore_target mlp,self_attn: trainplan projects every decoder linear
UNREAD = {"llama3_full_galore.yaml": {"galore_target"}}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_options(name):
    imported = read_config(str(HERE / name))
    assert imported.format == "llamafactory"
    assert imported.values() == EXPECTED[name]
    assert {u.key for u in imported.unread} == UNREAD.get(name, set())
    assert imported.ignored > 0          # learning rate, logging, output paths...


def test_detected_over_the_other_readers():
    for path in [*HERE.glob("*.yaml"), *HERE.glob("*.json"), *FULL.glob("*.yaml")]:
        assert detect(parse(path.read_text(), str(path)), str(path)) == "llamafactory"
    for ds in (HERE / "examples" / "deepspeed").glob("*.json"):
        assert read_config(str(ds)).format == "deepspeed"
    from trainplan.importers import llamafactory
    assert llamafactory.detect({"per_device_train_batch_size": 1, "output_dir": "x", "bf16": True}, "x") == 0
    assert llamafactory.detect({"model_name_or_path": "m", "stage": "sft"}, "x") > 0
    assert llamafactory.detect(["llamafactory-cli", "train", "x.yaml"], "x") == 0


def test_deepspeed_named_relative_to_the_repo_root():
    imported = read_config(str(FULL / "qwen3_full_sft_ds3.yaml"))
    assert imported.includes == (str(HERE / "examples" / "deepspeed" / "ds_z3_config.json"),)
    zero = next(s for s in imported.settings if s.field == "zero")
    assert zero.key == "zero_optimization.stage" and zero.file.endswith("ds_z3_config.json")
    precision = next(s for s in imported.settings if s.field == "precision")
    assert "DeepSpeed casts the model to bf16" in precision.note


def test_deepspeed_shipped_but_missing(tmp_path):
    path = write(tmp_path, "model_name_or_path: Qwen/Qwen3-8B\nfinetuning_type: full\nbf16: true\n"
                           "deepspeed: examples/deepspeed/ds_z3_offload_config.json\n")
    imported = read_config(path)
    got = imported.values()
    assert (got["zero"], got["offload"], got["offload_device"]) == (3, "all", "cpu")
    assert all(s.origin is Origin.DERIVED for s in imported.settings if s.field in ("zero", "offload"))
    assert imported.unread == ()


def test_deepspeed_missing_and_inline(tmp_path):
    missing = read_config(write(tmp_path, "model_name_or_path: m\nfinetuning_type: full\ndeepspeed: my_ds.json\n"))
    assert [u.key for u in missing.unread] == ["deepspeed"] and "zero" not in missing.values()
    inline = read_config(write(tmp_path, "model_name_or_path: m\nfinetuning_type: full\ndeepspeed:\n"
                                         "  zero_optimization: {stage: 2}\n", "inline.yaml"))
    assert inline.values()["zero"] == 2
    next_to = tmp_path / "ds.json"
    next_to.write_text('{"zero_optimization": {"stage": 1}, "bf16": {"enabled": true}}')
    beside = read_config(write(tmp_path, "model_name_or_path: m\nfinetuning_type: full\ndeepspeed: ds.json\n"
                                         "bf16: true\n", "beside.yaml"))
    assert beside.values()["zero"] == 1 and beside.includes == (str(next_to),)


def test_defaults_when_the_file_leaves_keys_out(tmp_path):
    imported = read_config(write(tmp_path, "model_name_or_path: Qwen/Qwen3-8B\ntemplate: qwen3\ncutoff_len: 1024\n"))
    got = imported.values()
    assert got["method"] == "lora" and got["lora_rank"] == 8 and got["lora_alpha"] == 16.0
    assert got["lora_targets"] == "all-linear" and got["lora_dropout"] == 0.0
    assert got["batch_size"] == 8 and got["grad_accum"] == 1 and got["epochs"] == 3.0
    assert got["grad_ckpt"] == "full" and got["optimizer"] == "adamw-fused"
    assert "precision" not in got       # bf16/fp16/pure_bf16 unset: left to the framework profile
    origin = {s.field: s.origin for s in imported.settings}
    assert origin["method"] is Origin.FRAMEWORK_DEFAULT and origin["batch_size"] is Origin.FRAMEWORK_DEFAULT
    assert origin["lora_alpha"] is Origin.DERIVED and origin["seq_len"] is Origin.FILE


def test_stage_rules(tmp_path):
    def read(text):
        return read_config(write(tmp_path, "model_name_or_path: m\n" + text)).values()
    pt = read("stage: pt\nfinetuning_type: full\ncutoff_len: 4096\n")
    assert pt["packing"] is True and pt["seq_len"] == 4096     # packing None -> on for pt, cutoff not reduced
    dpo_full = read("stage: dpo\nfinetuning_type: full\n")
    assert dpo_full["stage"] == "dpo" and dpo_full["ref_model"] is True
    dpo_ref = read("stage: dpo\nref_model: meta-llama/Llama-3.1-8B\n")
    assert dpo_ref["ref_model"] is True
    orpo = read("stage: dpo\npref_loss: orpo\nfinetuning_type: full\n")
    assert orpo["stage"] == "orpo" and orpo["ref_model"] is False
    kto = read("stage: kto\nfinetuning_type: lora\n")
    assert kto["stage"] == "kto" and kto["ref_model"] is True     # a forward with the adapters disabled
    dpo_liger = read("stage: dpo\nenable_liger_kernel: true\n")
    assert dpo_liger["liger"] is True and dpo_liger["loss"] == "full"   # logits needed: no fused CE
    neat = read("neat_packing: true\ncutoff_len: 2048\n")
    assert neat["packing"] is True and neat["seq_len"] == 2047
    assert neat["padding_free"] is True          # block-diagonal: flash varlen per sample
    assert "padding_free" not in read("packing: true\ncutoff_len: 2048\n")


def test_badam_and_bottom_layers(tmp_path):
    def read(text):
        return read_config(write(tmp_path, "model_name_or_path: m\n" + text)).values()
    badam = read("finetuning_type: full\nuse_badam: true\nbadam_switch_mode: descending\n")
    assert (badam["method"], badam["optimizer"]) == ("full", "badam")
    assert read("finetuning_type: freeze\nfreeze_trainable_layers: -4\n")["freeze_layers"] == -4
    with pytest.raises(TrainplanError, match="freeze_trainable_layers must not be 0"):
        read("finetuning_type: freeze\nfreeze_trainable_layers: 0\n")


def test_kernels_and_precision_rules(tmp_path):
    def read(text):
        return read_config(write(tmp_path, "model_name_or_path: m\n" + text)).values()
    unsloth = read("use_unsloth: true\ndisable_gradient_checkpointing: true\nbf16: true\n")
    assert unsloth["grad_ckpt"] == "full" and unsloth["activation_offload"] is True
    assert unsloth["liger"] is True and unsloth["loss"] == "fused"
    assert read("use_unsloth_gc: true\n")["activation_offload"] is True
    assert read("disable_gradient_checkpointing: true\ngradient_checkpointing: true\n")["grad_ckpt"] == "full"
    assert read("flash_attn: disabled\n")["attention"] == "eager"
    assert read("flash_attn: auto\n")["attention"] == "sdpa"
    assert read("fp16: true\n")["precision"] == "fp16"
    assert read("fp8: true\nbf16: true\nfinetuning_type: full\n")["precision"] == "fp8"
    assert read("quantization_bit: 8\n")["quant"] == "int8"
    q4 = read("quantization_bit: 4\nquantization_type: fp4\ndouble_quantization: false\n")
    assert (q4["method"], q4["quant"], q4["double_quant"]) == ("qlora", "fp4", False)
    assert read("ray_num_workers: 4\n")["num_gpus"] == 4
    assert read("max_steps: -1\n").get("max_steps") is None
    z2 = tmp_path / "z2.json"
    z2.write_text('{"zero_optimization": {"stage": 2}}')
    assert read("pure_bf16: true\ndeepspeed: z2.json\n")["precision"] == "bf16"   # ZeRO-2 keeps fp32 partitions


@pytest.mark.parametrize("text, key", [
    ("finetuning_type: oft\n", "finetuning_type"),
    ("quantization_bit: 4\nquantization_method: hqq\n", "quantization_bit"),
    ("finetuning_type: freeze\nfreeze_trainable_modules: mlp,self_attn\n", "freeze_trainable_modules"),
    ("additional_target: embed_tokens,score\n", "additional_target"),       # score: not modelled
    ("optim: lomo\n", "optim"),
    ("finetuning_type: full\nuse_badam: true\nbadam_mode: ratio\n", "use_badam"),
    ("finetuning_type: full\nuse_apollo: true\n", "use_apollo"),
    ("finetuning_type: lora\nuse_muon: true\nloraplus_lr_ratio: 16\n", "use_muon"),     # LoRA+ comes first
    ("finetuning_type: full\nfsdp: full_shard auto_wrap\n", "fsdp"),
    ("shift_attn: true\n", "shift_attn"),
    ("auto_find_batch_size: true\n", "auto_find_batch_size"),
])
def test_keys_that_matter_but_are_not_modelled_go_to_unread(tmp_path, text, key):
    imported = read_config(write(tmp_path, "model_name_or_path: Qwen/Qwen3-8B\n" + text))
    assert key in {u.key for u in imported.unread}
    assert all(u.why and u.file for u in imported.unread)


@pytest.mark.parametrize("text, words", [
    ("lora_rank: eight\n", "lora_rank must be an integer"),
    ("finetuning_type: partial\n", "finetuning_type must be one of"),
    ("stage: sftt\n", "stage must be one of"),
    ("finetuning_type: full\nquantization_bit: 4\n", "quantization_bit needs finetuning_type lora"),
    ("bf16: true\nfp16: true\n", "bf16 and fp16"),
    ("bf16: maybe\n", "bf16 must be true or false"),
    ("per_device_train_batch_size: 0\n", "per_device_train_batch_size must be at least 1"),
    ("num_train_epochs: -1\n", "num_train_epochs must be positive"),
    ("flash_attn: fa9\n", "flash_attn must be"),
    ("cutoff_len: [1, 2]\n", "cutoff_len must be an integer"),
    ("finetuning_type: full\npure_bf16: true\ndeepspeed:\n  zero_optimization: {stage: 3}\n", "ZeRO-3"),
    ("use_unsloth: true\ndeepspeed:\n  zero_optimization: {stage: 3}\n", "ZeRO-3"),
])
def test_bad_values_name_the_file_and_key(tmp_path, text, words):
    path = write(tmp_path, "model_name_or_path: Qwen/Qwen3-8B\nfinetuning_type: lora\n" + text
                 if not text.startswith("finetuning_type") else "model_name_or_path: Qwen/Qwen3-8B\n" + text)
    with pytest.raises(TrainplanError) as err:
        read_config(path)
    message = str(err.value)
    assert words in message and path in message and "\n" not in message


def test_malformed_files(tmp_path):
    for name, text in (("bad.yaml", "model_name_or_path: m\nfinetuning_type: [lora\n"),
                       ("bad.json", '{"model_name_or_path": "m", "finetuning_type": }')):
        path = write(tmp_path, text, name)
        with pytest.raises(TrainplanError) as err:
            read_config(path)
        assert path in str(err.value) and "\n" not in str(err.value)
    v1 = write(tmp_path, "model: Qwen/Qwen3-4B\npeft_config: {name: lora, r: 8}\ndist_config: {name: fsdp2}\n",
               "v1.yaml")
    with pytest.raises(TrainplanError, match="v1 schema"):
        read_config(v1)


def test_trailing_key_value_overrides():
    data = {"model_name_or_path": "Qwen/Qwen3-8B", "lora_rank": 8, "bf16": True}
    out = with_overrides(data, ["lora_rank=32", "per_device_train_batch_size=2", "bf16=false", "lora_target=q_proj"],
                         "the command")
    assert out == {"model_name_or_path": "Qwen/Qwen3-8B", "lora_rank": 32, "bf16": False,
                   "per_device_train_batch_size": 2, "lora_target": "q_proj"}
    with pytest.raises(TrainplanError, match="not key=value"):
        with_overrides(data, ["lora_rank"], "the command")


def test_flags_override_the_file():
    options = from_configs([str(HERE / "qwen3_lora_sft.yaml")], JobOptions(model="", batch_size=4), {"batch_size": 4})
    assert options.batch_size == 4 and options.grad_accum == 8 and options.model == "Qwen/Qwen3-8B"
    flag = next(s for s in options.provenance if s.field == "batch_size")
    assert flag.origin is Origin.FLAG and "per_device_train_batch_size=1" in flag.note
    assert options.configs == (str(HERE / "qwen3_lora_sft.yaml"),)


def test_dpo_and_deepspeed_fixtures_at_options_level():
    dpo = from_configs([str(HERE / "qwen3_lora_dpo.yaml")], JobOptions(model=""), {})
    assert (dpo.stage, dpo.ref_model, dpo.method) == ("dpo", True, "lora")   # reference = adapters disabled
    z3 = from_configs([str(FULL / "qwen3_full_sft_ds3.yaml")], JobOptions(model=""), {})
    assert (z3.zero, z3.offload, z3.method, z3.framework) == (3, "none", "full", "llamafactory")
    assert len(z3.configs) == 2
    z2 = from_configs([str(FULL / "llama3_full_sft_ds2_offload.yaml")], JobOptions(model=""), {})
    assert (z2.zero, z2.offload, z2.offload_device, z2.max_steps) == (2, "optimizer", "cpu", 600)


BASE = ["--framework", "llamafactory", "--attention", "sdpa", "--grad-ckpt", "full", "--no-liger", "--loss", "full",
        "--optimizer", "adamw-fused", "--precision", "bf16"]
FLAGS = {
    "qwen3_lora_sft.yaml": [
        "--model", "Qwen/Qwen3-8B", "--method", "lora", "--lora-rank", "8", "--lora-alpha", "16", "--lora-dropout",
        "0", "--lora-targets", "all-linear", "--batch-size", "1", "--grad-accum", "8", "--seq-len", "2048",
        "--samples", "2000", "--epochs", "3"],
    "llama3_qlora_sft.yaml": [
        "--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--method", "qlora", "--quant", "nf4", "--double-quant",
        "--lora-rank", "16", "--lora-alpha", "32", "--lora-dropout", "0.05", "--lora-targets",
        "q_proj,k_proj,v_proj,o_proj", "--batch-size", "4", "--grad-accum", "4", "--seq-len", "1024",
        "--samples", "4500", "--epochs", "1", "--optimizer", "paged-adamw-8bit", "--val-size", "0.1"],
    "llama3_freeze_sft.yaml": [
        "--model", "meta-llama/Llama-3.1-8B-Instruct", "--method", "freeze", "--freeze-layers", "4",
        "--batch-size", "1", "--grad-accum", "8", "--seq-len", "2048", "--samples", "2000", "--epochs", "3"],
    "qwen3_lora_liger_packing.yaml": [
        "--model", "Qwen/Qwen3-8B", "--method", "lora", "--lora-rank", "32", "--lora-alpha", "64", "--lora-dropout",
        "0", "--lora-targets", "all-linear", "--batch-size", "2", "--grad-accum", "4", "--seq-len", "8191",
        "--packing", "--samples", "40000", "--epochs", "2", "--attention", "flash", "--liger", "--loss", "fused"],
    "llama3_lora_no_gc.yaml": [
        "--model", "meta-llama/Llama-3.1-8B", "--method", "lora", "--lora-rank", "8", "--lora-alpha", "16",
        "--lora-dropout", "0", "--lora-targets", "all-linear", "--dora", "--batch-size", "2", "--grad-accum", "2",
        "--seq-len", "512", "--epochs", "1", "--grad-ckpt", "none", "--optimizer", "adamw"],
    "llama3_badam_sft.yaml": [
        "--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--method", "full", "--optimizer", "badam",
        "--batch-size", "2", "--grad-accum", "8", "--seq-len", "1024", "--samples", "1000", "--epochs", "3"],
    "qwen3_freeze_bottom_sft.yaml": [
        "--model", "Qwen/Qwen3-8B", "--method", "freeze", "--freeze-layers=-2", "--grad-ckpt", "none",
        "--batch-size", "1", "--grad-accum", "8", "--seq-len", "2048", "--epochs", "2"],
    "qwen3_lora_sft_pure_bf16.json": [
        "--model", "Qwen/Qwen3-8B", "--method", "lora", "--lora-rank", "64", "--lora-alpha", "16", "--lora-dropout",
        "0.1", "--lora-targets", "q_proj,v_proj", "--batch-size", "4", "--grad-accum", "2", "--seq-len", "3072",
        "--samples", "2000", "--epochs", "2", "--precision", "bf16-pure"],
}


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_from_gives_the_same_estimate_as_the_flags(capsys, name):
    a = est(capsys, "--from", str(HERE / name))
    b = est(capsys, *BASE, *FLAGS[name])      # later flags win over BASE
    assert a["memory"] == b["memory"]
    assert a["time"]["step_s"] == b["time"]["step_s"]


def test_flag_over_file_matches_flags(capsys):
    a = est(capsys, "--from", str(HERE / "qwen3_lora_sft.yaml"), "--batch-size", "4")
    flags = list(FLAGS["qwen3_lora_sft.yaml"])
    flags[flags.index("--batch-size") + 1] = "4"
    b = est(capsys, *BASE, *flags)
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]


def test_defaults_module():
    assert version("llamafactory").startswith("hiyouga/LLaMA-Factory ff6d4d1")
    table = defaults("llamafactory")
    assert all(d.field in OPTION_NAMES and d.source for d in table.values())
    assert table["method"].value == "lora" and table["seq_len"].value == 2048 and table["lora_rank"].value == 8


def test_additional_target_trains_copies_of_the_embedding_and_head(tmp_path):
    """LLaMA-Factory's additional_target is peft's modules_to_save (model/adapter.py _setup_lora_tuning)."""
    imported = read_config(write(tmp_path, "model_name_or_path: Qwen/Qwen3-8B\nfinetuning_type: lora\n"
                                           "additional_target: embed_tokens,lm_head\n"))
    assert imported.values()["modules_to_save"] == "embed_tokens,lm_head"
    assert "additional_target" not in {u.key for u in imported.unread}
