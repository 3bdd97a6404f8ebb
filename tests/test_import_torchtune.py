"""torchtune recipe configs read with --from (importers/torchtune.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import estimate_json as est
from trainplan.errors import TrainplanError
from trainplan.importers import read_config
from trainplan.importers.base import Origin
from trainplan.importers.merge import from_configs
from trainplan.job.options import JobOptions

DIR = Path(__file__).parent / "fixtures" / "configs" / "torchtune"
LORA = DIR / "llama3_1_8B_lora_single_device.yaml"
QLORA = DIR / "llama3_1_8B_qlora_single_device.yaml"
FULL_70B = DIR / "llama3_1_70B_full_offload.yaml"
PACKED = DIR / "qwen2_5_7B_full_single_device_packed.yaml"
ATTN_MLP = "q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def options(*paths, **given) -> JobOptions:
    return from_configs([str(p) for p in paths], JobOptions(model="", **given), given)


def same(a: dict, b: dict) -> None:
    assert a["memory"] == b["memory"]
    assert a["time"]["step_s"] == b["time"]["step_s"]


def unread(opts: JobOptions) -> dict:
    return {u.key: u.value for u in opts.unread}


def origin(opts: JobOptions, field: str) -> Origin:
    return next(s.origin for s in opts.provenance if s.field == field)


def test_lora_single_device_fields():
    o = options(LORA)
    assert (o.model, o.method, o.framework, o.precision) == ("llama-3.1-8b", "lora", "torchtune", "bf16-pure")
    assert (o.lora_rank, o.lora_alpha, o.lora_dropout) == (8, 16.0, 0.0)
    assert o.lora_targets == tuple(ATTN_MLP.split(","))
    assert (o.batch_size, o.grad_accum, o.epochs, o.max_steps) == (2, 8, 1.0, None)
    assert (o.optimizer, o.optimizer_in_backward, o.grad_ckpt, o.activation_offload) == ("adamw-fused", False, "full", False)
    assert (o.loss, o.compile, o.packing, o.fsdp, o.num_gpus) == ("chunked", False, False, "none", 1)
    assert o.seq_len == 2048            # trainplan's default: the file does not truncate
    assert unread(o) == {"tokenizer.max_seq_len": None}
    assert o.ignored_keys > 10 and o.configs == (str(LORA),)


def test_lora_estimate_equals_flags(capsys):
    a = est(capsys, "--from", str(LORA), "--seq-len", "2048")
    b = est(capsys, "--model", "llama-3.1-8b", "--method", "lora", "--framework", "torchtune", "--precision", "bf16-pure",
            "--lora-rank", "8", "--lora-alpha", "16", "--lora-dropout", "0", "--lora-targets", ATTN_MLP,
            "--batch-size", "2", "--grad-accum", "8", "--seq-len", "2048", "--grad-ckpt", "full", "--loss", "chunked",
            "--optimizer", "adamw-fused", "--no-optimizer-in-backward", "--no-activation-offload", "--no-compile")
    same(a, b)


def test_qlora_fields_and_estimate(capsys):
    o = options(QLORA)
    assert (o.method, o.quant, o.double_quant) == ("qlora", "nf4", True)
    assert (o.lora_rank, o.lora_alpha, o.lora_dropout) == (16, 32.0, 0.05)
    assert o.lora_targets == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    assert (o.seq_len, o.batch_size, o.grad_accum, o.epochs, o.max_steps) == (4096, 4, 4, 2.0, 1000)
    assert (o.activation_offload, o.loss) == (True, "chunked")
    assert unread(o) == {}
    a = est(capsys, "--from", str(QLORA))
    b = est(capsys, "--model", "llama-3.1-8b", "--method", "qlora", "--quant", "nf4", "--double-quant",
            "--framework", "torchtune", "--precision", "bf16-pure", "--lora-rank", "16", "--lora-alpha", "32",
            "--lora-dropout", "0.05", "--lora-targets", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
            "--batch-size", "4", "--grad-accum", "4", "--seq-len", "4096", "--epochs", "2", "--grad-ckpt", "full",
            "--loss", "chunked", "--optimizer", "adamw-fused", "--activation-offload", "--no-compile",
            "--no-optimizer-in-backward")
    same(a, b)


def test_full_distributed_cpu_offload():
    o = options(FULL_70B, num_gpus=8)
    assert (o.model, o.method, o.precision) == ("llama-3.1-70b", "full", "bf16-pure")
    assert (o.fsdp, o.offload, o.fsdp_version, o.reshard_after_forward) == ("full", "all", 2, True)
    assert origin(o, "fsdp") is Origin.DERIVED and origin(o, "reshard_after_forward") is Origin.FRAMEWORK_DEFAULT
    assert (o.batch_size, o.grad_accum, o.seq_len, o.grad_ckpt) == (2, 1, 2048, "full")
    assert (o.num_gpus, o.tp, o.cp) == (8, 1, 1)
    assert unread(o) == {}


def test_full_compile_packed_estimate(capsys):
    o = options(PACKED)
    assert (o.model, o.method, o.optimizer, o.optimizer_in_backward) == ("qwen2.5-7b", "full", "paged-adamw-8bit", True)
    assert (o.compile, o.packing, o.seq_len, o.batch_size, o.grad_accum) == (True, True, 2048, 1, 1)
    # a packed dataset's samples attend within themselves (torchtune's block-causal document mask)
    assert o.padding_free is True and origin(o, "padding_free") is Origin.DERIVED
    a = est(capsys, "--from", str(PACKED))
    b = est(capsys, "--model", "qwen2.5-7b", "--framework", "torchtune", "--precision", "bf16-pure",
            "--optimizer", "paged-adamw-8bit", "--optimizer-in-backward", "--compile", "--packing", "--padding-free",
            "--seq-len", "2048",
            "--batch-size", "1", "--grad-ckpt", "full", "--loss", "chunked", "--no-activation-offload")
    same(a, b)


def test_flags_override_the_file():
    o = options(LORA, batch_size=4, seq_len=1024)
    assert (o.batch_size, o.seq_len, o.grad_accum) == (4, 1024, 8)
    flag = next(s for s in o.provenance if s.field == "batch_size")
    assert flag.origin is Origin.FLAG and "batch_size=2" in flag.note and str(LORA) in flag.note


def test_defaults_for_keys_left_out(tmp_path):
    f = tmp_path / "min.yaml"
    f.write_text("model:\n  _component_: torchtune.models.llama3_2.lora_llama3_2_1b\n  lora_attn_modules: [q_proj, v_proj]\n"
                 "tokenizer: {_component_: torchtune.models.llama3.llama3_tokenizer, max_seq_len: 1024}\n"
                 "batch_size: 4\ngradient_accumulation_steps: 1\nepochs: 1\n"
                 "loss: {_component_: torch.nn.CrossEntropyLoss}\n")
    o = options(f)
    assert (o.model, o.lora_rank, o.lora_alpha, o.lora_dropout, o.lora_targets) == (
        "llama-3.2-1b", 8, 16.0, 0.0, ("q_proj", "v_proj"))
    assert (o.grad_ckpt, o.precision, o.compile, o.activation_offload, o.loss) == ("none", "fp32", False, False, "full")
    for field in ("grad_ckpt", "precision", "lora_rank", "lora_dropout"):
        assert origin(o, field) is Origin.FRAMEWORK_DEFAULT


def test_unread_keys(tmp_path):
    f = tmp_path / "odd.yaml"
    f.write_text("model:\n  _component_: torchtune.models.code_llama2.lora_code_llama2_13b\n  lora_attn_modules: [q_proj, gate]\n"
                 "  apply_lora_to_output: true\n"
                 "checkpointer: {_component_: torchtune.training.FullModelHFCheckpointer, checkpoint_dir: /x/run-42}\n"
                 "optimizer: {_component_: torchao.optim.AdamW4bit}\nloss:\n  _component_: "
                 "torchtune.modules.loss.CEWithChunkedOutputLoss\n  num_output_chunks: 16\n"
                 "dtype: fp16\nenable_activation_checkpointing: false\nac_mode: selective\nac_option: 2\n"
                 "batch_size: 1\ngradient_accumulation_steps: 1\n")
    o = options(f)
    keys = unread(o)
    assert set(keys) == {"model._component_", "model.lora_attn_modules", "model.apply_lora_to_output",
                         "optimizer._component_", "loss.num_output_chunks", "dtype", "tokenizer.max_seq_len",
                         "(recipe)"}     # no tune run line, no distributed-only key, not named *single_device*
    assert (o.grad_ckpt, o.grad_ckpt_every, o.method) == ("full", 2, "lora")


def test_recipe_from_tune_run_line():
    o = options(Path(__file__).parent / "fixtures" / "configs" / "launch" / "tune_run.sh")
    assert (o.num_gpus, o.fsdp, o.offload) == (8, "full", "none")          # fsdp_cpu_offload=False override
    assert (o.batch_size, o.grad_accum, o.seq_len) == (1, 4, 4096)         # key=value overrides
    assert o.model == "llama-3.1-70b" and str(FULL_70B.resolve()) in {str(Path(p).resolve()) for p in o.configs}


@pytest.mark.parametrize("text, needle", [
    ("model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\nbatch_size: [2\n", "malformed YAML"),
    ("model: {_component_: torchtune.models.llama3_1.llama3_1_8b}\nbatch_size: two\n", "batch_size must be an integer"),
    ("model: {_component_: torchtune.models.llama3_1.lora_llama3_1_8b, lora_attn_modules: [q_proj], lora_rank: x}\n",
     "model.lora_rank must be an integer"),
    ("model: {_component_: torchtune.models.llama3_1.llama3_1_8b}\nenable_activation_checkpointing: maybe\n",
     "enable_activation_checkpointing must be true or false"),
])
def test_bad_input_names_the_file(tmp_path, text, needle):
    f = tmp_path / "bad.yaml"
    f.write_text(text)
    with pytest.raises(TrainplanError) as err:
        read_config(str(f))
    message = str(err.value)
    assert needle in message and str(f) in message and "\n" not in message
