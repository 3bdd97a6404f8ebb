"""axolotl YAML read into trainplan's options (`--from config.yml`): each fixture field by field,
the keys that went unread, the framework defaults filled in, and the same estimate as the flags
that say the same job."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.errors import TrainplanError
from trainplan.importers import axolotl, read_config
from trainplan.importers.base import Origin
from trainplan.job.defaults import axolotl as axolotl_defaults
from trainplan.job.options import OPTION_NAMES, JobOptions

FIX = Path(__file__).parent / "fixtures" / "configs" / "axolotl"


def values(o: JobOptions, *names: str) -> dict:
    return {n: getattr(o, n) for n in names}


def unread(o: JobOptions) -> set[str]:
    return {u.key for u in o.unread}


def origin(o: JobOptions, field: str) -> Origin:
    return next(s.origin for s in o.provenance if s.field == field)


def same_estimate(capsys, fixture: Path, *flags: str, extra: tuple[str, ...] = ()) -> None:
    a = est(capsys, "--from", str(fixture), *extra)
    b = est(capsys, *flags, *extra)
    assert a["memory"] == b["memory"]
    assert a["time"]["step_s"] == b["time"]["step_s"]


def write(tmp_path: Path, text: str, name: str = "config.yml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the fixtures ---------------------------------------------------------------------------------

def test_lora_8b():
    o = options(FIX / "lora-8b.yml")
    assert values(o, "model", "framework", "method", "lora_rank", "lora_alpha", "lora_dropout", "lora_targets",
                  "seq_len", "packing", "batch_size", "grad_accum", "epochs", "grad_ckpt", "attention", "precision",
                  "optimizer", "loss") == {
        "model": "meta-llama/Llama-3.1-8B", "framework": "axolotl", "method": "lora", "lora_rank": 32,
        "lora_alpha": 16.0, "lora_dropout": 0.05, "lora_targets": "all-linear", "seq_len": 4096, "packing": True,
        "batch_size": 2, "grad_accum": 4, "epochs": 4.0, "grad_ckpt": "full", "attention": "flash",
        "precision": "bf16", "optimizer": "adamw-fused", "loss": "full"}
    assert unread(o) == set()
    assert o.ignored_keys > 10                     # datasets, learning rate, wandb, logging ...
    assert origin(o, "precision") is Origin.FILE   # bf16: auto is in the file
    assert origin(o, "loss") is Origin.FRAMEWORK_DEFAULT


def test_lora_8b_same_estimate_as_flags(capsys):
    same_estimate(capsys, FIX / "lora-8b.yml",
                  "--model", "meta-llama/Llama-3.1-8B", "--framework", "axolotl", "--method", "lora",
                  "--lora-rank", "32", "--lora-alpha", "16", "--lora-dropout", "0.05", "--lora-targets", "all-linear",
                  "--seq-len", "4096", "--packing", "--batch-size", "2", "--grad-accum", "4", "--epochs", "4",
                  "--grad-ckpt", "full", "--attention", "flash", "--precision", "bf16", "--optimizer", "adamw-fused",
                  "--loss", "full")


def test_qlora():
    o = options(FIX / "qlora.yml")
    assert values(o, "model", "method", "quant", "double_quant", "lora_rank", "lora_alpha", "lora_targets",
                  "optimizer", "attention", "precision", "grad_ckpt") == {
        "model": "meta-llama/Meta-Llama-3-8B", "method": "qlora", "quant": "nf4", "double_quant": True,
        "lora_rank": 32, "lora_alpha": 16.0, "lora_targets": ("q_proj", "k_proj", "v_proj", "o_proj"),
        "optimizer": "paged-adamw-8bit", "attention": "flash", "precision": "bf16", "grad_ckpt": "full"}
    assert unread(o) == set()
    assert o.modules_to_save == "embed_tokens,lm_head"          # lora_modules_to_save: peft's trained copies
    assert origin(o, "quant") is Origin.FRAMEWORK_DEFAULT      # axolotl's BitsAndBytesConfig: nf4, double quant
    assert origin(o, "double_quant") is Origin.FRAMEWORK_DEFAULT
    attention = next(s for s in o.provenance if s.field == "attention")
    assert attention.key == "flash_attention"                  # the deprecated boolean


def test_qlora_same_estimate_as_flags(capsys):
    same_estimate(capsys, FIX / "qlora.yml",
                  "--model", "meta-llama/Meta-Llama-3-8B", "--framework", "axolotl", "--method", "qlora",
                  "--quant", "nf4", "--double-quant", "--lora-rank", "32", "--lora-alpha", "16", "--lora-dropout",
                  "0.05", "--lora-targets", "q_proj,k_proj,v_proj,o_proj", "--seq-len", "4096", "--packing",
                  "--batch-size", "2", "--grad-accum", "4", "--epochs", "4", "--grad-ckpt", "full",
                  "--attention", "flash", "--precision", "bf16", "--optimizer", "paged-adamw-8bit", "--loss", "full",
                  "--modules-to-save", "embed_tokens,lm_head")


def test_full_finetune_with_zero3_json():
    o = options(FIX / "fft-8b-zero3.yml", num_gpus=8)
    assert values(o, "method", "precision", "zero", "offload", "seq_len", "batch_size", "grad_accum", "packing",
                  "grad_ckpt", "num_gpus") == {
        "method": "full", "precision": "bf16", "zero": 3, "offload": "none", "seq_len": 8192, "batch_size": 1,
        "grad_accum": 8, "packing": True, "grad_ckpt": "full", "num_gpus": 8}
    # the DeepSpeed knobs of the included JSON (their memory model is being built: options level only)
    assert values(o, "reduce_bucket_size", "prefetch_bucket_size", "param_persistence_threshold",
                  "max_live_parameters", "overlap_comm") == {
        "reduce_bucket_size": "auto", "prefetch_bucket_size": "auto", "param_persistence_threshold": "auto",
        "max_live_parameters": 0, "overlap_comm": True}
    assert str(FIX / "deepspeed_configs" / "zero3_bf16.json") in o.configs
    imported = read_config(str(FIX / "fft-8b-zero3.yml"))
    assert "master" in next(s.note for s in imported.settings if s.field == "precision" and s.key == "bf16")
    assert unread(o) == set()


def test_shipped_deepspeed_config_when_the_file_is_not_there(tmp_path):
    path = write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\nsequence_len: 2048\nmicro_batch_size: 1\n"
                           "deepspeed: deepspeed_configs/zero2.json\n")
    o = options(path)
    assert values(o, "zero", "offload", "offload_device", "precision") == {
        "zero": 2, "offload": "optimizer", "offload_device": "cpu", "precision": "bf16"}
    assert any("067b021 deepspeed_configs/zero2.json" in f for f in o.configs)
    missing = options(write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\ndeepspeed: mine/ds.json\n", "b.yml"))
    assert "deepspeed" in unread(missing) and missing.zero == 0


def test_fsdp2():
    o = options(FIX / "fsdp2-8b.yml")
    assert values(o, "model", "method", "fsdp", "fsdp_version", "reshard_after_forward", "offload", "grad_ckpt",
                  "precision", "batch_size", "grad_accum", "epochs") == {
        "model": "Qwen/Qwen3-8B", "method": "full", "fsdp": "full", "fsdp_version": 2,
        "reshard_after_forward": True, "offload": "none", "grad_ckpt": "full", "precision": "bf16-pure",
        "batch_size": 4, "grad_accum": 2, "epochs": 2.0}
    assert unread(o) == set()
    # axolotl's own fsdp2_prepare_model does not upcast to fp32: no master copy
    assert "does not upcast" in next(s.note for s in o.provenance if s.field == "precision")


def test_legacy_fsdp_list_with_prefixed_keys():
    o = options(FIX / "qlora-fsdp-70b.yml", num_gpus=8)
    assert values(o, "model", "method", "quant", "fsdp", "fsdp_version", "reshard_after_forward", "offload",
                  "offload_device", "precision", "seq_len", "lora_rank") == {
        "model": "meta-llama/Meta-Llama-3-70B", "method": "qlora", "quant": "nf4", "fsdp": "full",
        "fsdp_version": 1, "reshard_after_forward": True, "offload": "all", "offload_device": "cpu",
        "precision": "bf16", "seq_len": 512, "lora_rank": 8}
    assert origin(o, "fsdp_version") is Origin.FRAMEWORK_DEFAULT     # no version: axolotl pins FSDP1
    assert unread(o) == set()


def test_liger_plugin_and_sample_packing():
    o = options(FIX / "liger-packing-3b.yml")
    assert values(o, "model", "method", "liger", "loss", "packing", "seq_len", "precision", "attention",
                  "grad_ckpt", "padding_free") == {
        "model": "meta-llama/Llama-3.2-3B", "method": "full", "liger": True, "loss": "fused", "packing": True,
        "seq_len": 4096, "precision": "bf16-pure", "attention": "flash", "grad_ckpt": "full", "padding_free": True}
    assert unread(o) == set()


def test_sample_packing_attends_per_sample_only_under_flash(tmp_path):
    # multipack under flash attention hands flash varlen per-sample cu_seqlens: padding-free; under SDPA
    # the samples share one block-diagonal 4D mask instead (not padding-free)
    f = tmp_path / "p.yml"
    f.write_text("base_model: meta-llama/Llama-3.2-3B\nsample_packing: true\nsequence_len: 4096\n"
                 "flash_attention: true\n")
    assert options(f).padding_free is True
    f.write_text("base_model: meta-llama/Llama-3.2-3B\nsample_packing: true\nsequence_len: 4096\n"
                 "sdp_attention: true\n")
    assert options(f).padding_free is None


def test_liger_same_estimate_as_flags(capsys):
    same_estimate(capsys, FIX / "liger-packing-3b.yml",
                  "--model", "meta-llama/Llama-3.2-3B", "--framework", "axolotl", "--method", "full",
                  "--liger", "--loss", "fused", "--packing", "--padding-free", "--seq-len", "4096", "--batch-size", "2",
                  "--grad-accum", "4", "--epochs", "1", "--grad-ckpt", "full", "--attention", "flash",
                  "--precision", "bf16-pure", "--optimizer", "adamw-fused", extra=("--gpu", "h100-80gb"))


def test_gradient_checkpointing_offload_long_context():
    o = options(FIX / "long-context-offload.yml")
    assert values(o, "method", "grad_ckpt", "activation_offload", "cp", "seq_len", "batch_size", "grad_accum",
                  "max_steps", "loss", "compile", "lora_dropout", "optimizer") == {
        "method": "lora", "grad_ckpt": "full", "activation_offload": True, "cp": 2, "seq_len": 32768,
        "batch_size": 1, "grad_accum": 8, "max_steps": 500, "loss": "chunked", "compile": True,
        "lora_dropout": 0.0, "optimizer": "adamw-fused"}
    assert origin(o, "grad_accum") is Origin.DERIVED             # batch_size // micro_batch_size
    assert origin(o, "lora_dropout") is Origin.FRAMEWORK_DEFAULT
    assert unread(o) == {"tiled_mlp"}


def test_long_context_same_estimate_as_flags(capsys):
    same_estimate(capsys, FIX / "long-context-offload.yml",
                  "--model", "meta-llama/Llama-3.1-8B-Instruct", "--framework", "axolotl", "--method", "lora",
                  "--lora-rank", "16", "--lora-alpha", "32", "--lora-dropout", "0", "--lora-targets", "all-linear",
                  "--seq-len", "32768", "--packing", "--batch-size", "1", "--grad-accum", "8", "--epochs", "1",
                  "--grad-ckpt", "full", "--activation-offload", "--attention", "flash", "--precision", "bf16",
                  "--optimizer", "adamw-fused", "--loss", "chunked", "--compile", "--cp", "2",
                  extra=("--num-gpus", "2"))


def test_dpo_lora_over_8bit_base():
    o = options(FIX / "dpo-lora-8bit.yml")
    assert values(o, "method", "quant", "stage", "ref_model", "optimizer", "packing", "precision") == {
        "method": "qlora", "quant": "int8", "stage": "dpo", "ref_model": False, "optimizer": "adamw-8bit",
        "packing": False, "precision": "bf16"}


def test_full_dpo_loads_a_reference_model(tmp_path):
    o = options(write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\nrl: dpo\nsequence_len: 1024\n"))
    assert (o.stage, o.ref_model) == ("dpo", True)
    o = options(write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\nrl: orpo\n", "orpo.yml"))
    assert (o.stage, o.ref_model) == ("orpo", False)


# --- rules and defaults ---------------------------------------------------------------------------

def test_defaults_fill_what_the_file_leaves_out(tmp_path):
    o = options(write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\ndatasets:\n  - path: x\n    type: alpaca\n"))
    assert values(o, "method", "seq_len", "batch_size", "grad_accum", "epochs", "grad_ckpt", "optimizer",
                  "packing", "attention", "loss", "precision") == {
        "method": "full", "seq_len": 512, "batch_size": 1, "grad_accum": 1, "epochs": 1.0, "grad_ckpt": "none",
        "optimizer": "adamw-fused", "packing": False, "attention": "sdpa", "loss": "full", "precision": "bf16-pure"}
    assert all(origin(o, f) is Origin.FRAMEWORK_DEFAULT for f in ("method", "seq_len", "grad_ckpt", "precision"))
    note = next(s.note for s in o.provenance if s.field == "seq_len")
    assert axolotl_defaults.VERSION in note and "schemas/config.py" in note
    # a full fine-tune under sdpa keeps embeddings, lm_head and norms in fp32: said, not modelled
    assert "attn_implementation" in unread(o)


def test_precision_rules(tmp_path):
    base = "base_model: meta-llama/Llama-3.1-8B\n"
    cases = {"bf16: false\nfp16: true\n": "fp16-pure", "bf16: false\n": "fp32",
             "adapter: lora\nlora_r: 8\nlora_alpha: 16\nlora_target_linear: true\n": "bf16",
             "adapter: lora\nlora_r: 8\nlora_alpha: 16\nlora_target_linear: true\npeft_autocast_adapter_dtype: false\n":
                 "bf16-pure",
             "fsdp_config:\n  offload_params: false\n": "bf16"}                  # FSDP1: accelerate upcasts
    for i, (text, expected) in enumerate(cases.items()):
        assert options(write(tmp_path, base + text, f"c{i}.yml")).precision == expected, text


def test_cut_cross_entropy_and_inline_deepspeed(tmp_path):
    o = options(write(tmp_path, "base_model: meta-llama/Llama-3.1-8B\nplugins:\n"
                                "  - axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin\n"
                                "deepspeed:\n  zero_optimization:\n    stage: 2\n  bf16:\n    enabled: auto\n"))
    assert values(o, "loss", "zero", "precision") == {"loss": "fused", "zero": 2, "precision": "bf16"}
    assert "attn_implementation" not in unread(o)       # a ZeRO engine casts the whole model to bf16


def test_gradient_checkpointing_spellings(tmp_path):
    base = "base_model: meta-llama/Llama-3.1-8B\n"
    o = options(write(tmp_path, base + "gradient_checkpointing: offload_disk\n"))
    assert (o.grad_ckpt, o.activation_offload) == ("full", True)
    o = options(write(tmp_path, base + "gradient_checkpointing: true\nactivation_offloading: legacy\n", "b.yml"))
    assert (o.grad_ckpt, o.activation_offload) == ("full", True)
    o = options(write(tmp_path, base + "gradient_checkpointing: false\n", "c.yml"))
    assert o.grad_ckpt == "none"


def test_keys_that_matter_but_are_not_understood(tmp_path):
    text = ("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nlora_r: 8\nlora_alpha: 16\nload_in_4bit: true\n"
            "lora_target_modules: [q_proj, v_proj]\nliger_rms_norm: true\noptimizer: came_pytorch\n"
            "unfrozen_parameters: ['^lm_head.weight$']\nplugins: [axolotl.integrations.spectrum.SpectrumPlugin]\n"
            "fsdp_config:\n  reshard_after_forward: false\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n")
    o = options(write(tmp_path, text))
    assert unread(o) == {"load_in_4bit", "liger_*", "optimizer", "unfrozen_parameters", "plugins",
                         "fsdp_config.reshard_after_forward", "fsdp_config.fsdp_sharding_strategy"}
    assert o.method == "lora"                  # adapter lora + load_in_4bit: axolotl does not quantize
    assert o.reshard_after_forward is True     # false is never exported to accelerate


def test_flags_override_the_file(capsys):
    a = est(capsys, "--from", str(FIX / "lora-8b.yml"), "--batch-size", "4")
    assert a["setup"]["batch_size"] == 4 and a["setup"]["grad_accum"] == 4
    o = options(FIX / "lora-8b.yml", batch_size=4)
    flag = next(s for s in o.provenance if s.field == "batch_size")
    assert flag.origin is Origin.FLAG and "micro_batch_size=2" in flag.note


@pytest.mark.parametrize("text, words", [
    ("base_model: x\nmicro_batch_size: [1\n", ("malformed YAML",)),
    ("base_model: meta-llama/Llama-3.1-8B\nmicro_batch_size: two\n", ("micro_batch_size", "integer")),
    ("base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nlora_r: 8\nlora_dropout: high\n", ("lora_dropout",)),
    ("base_model: meta-llama/Llama-3.1-8B\nadapter: qlora\nlora_r: 8\n", ("load_in_4bit",)),
    ("base_model: meta-llama/Llama-3.1-8B\nload_in_8bit: true\n", ("adapter",)),
    ("base_model: meta-llama/Llama-3.1-8B\nsample_packing: maybe\n", ("sample_packing",)),
])
def test_bad_input_names_the_file_and_key(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(TrainplanError) as err:
        read_config(str(path))
    message = str(err.value)
    assert "\n" not in message and str(path) in message
    assert all(w in message for w in words)


def test_detection():
    assert read_config(str(FIX / "qlora.yml")).format == "axolotl"
    assert axolotl.detect({"zero_optimization": {"stage": 2}}, "ds.json") == 0
    assert axolotl.detect({"model": "Qwen/Qwen2.5-7B", "tuner_type": "lora", "lora_rank": 8}, "s.yaml") == 0
    assert axolotl.detect(["swift", "sft"], "x") == 0


def test_defaults_module():
    assert axolotl_defaults.VERSION.startswith("axolotl-ai-cloud/axolotl 067b021")
    assert all(d.field in OPTION_NAMES and d.source for d in axolotl_defaults.DEFAULTS)
    assert {"zero3_bf16.json", "zero2.json", "zero3_bf16_cpuoffload_all.json"} <= set(
        axolotl_defaults.DEEPSPEED_CONFIGS)
