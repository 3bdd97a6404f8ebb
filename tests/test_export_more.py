"""The ms-swift, axolotl, torchtune, torchtitan and Megatron exporters (trainplan/export/{swift,axolotl,
torchtune,torchtitan,megatron}.py):

- round trip: the files (or the launch line that names them) read back with trainplan's own readers
  (`--from`: importers.read_config + importers.merge.apply) resolve to the exported job's setup and layout,
  per method and layout (full, LoRA, QLoRA; ZeRO-2/3 with offload, FSDP full/hybrid, TP/PP/CP where the
  framework has them), with only the flags a config does not hold (--gpu; --num-gpus/--nodes for axolotl);
  the read-back job estimates the same memory and step time;
- refusals: a job the framework cannot run is one line naming the alternative (exit 2 from the CLI);
- the frameworks' own definitions: the keys written are fields of the framework's argument classes read
  as text from its pinned PyPI release (tools/framework_sources.py: ms-swift 4.6.0 SftArguments and
  MegatronSftArguments, axolotl 0.18.0 AxolotlInputConfig and its plugins' args, torchtitan 0.2.2 JobConfig),
  torchtune 0.6.1's recipes read every key written and every `_component_` names a builder of the release
  that takes the keys beside it; the Megatron-LM arguments (no reader) are checked against hand-derived
  values;
- one end-to-end export per format through trainplan.export.write.build_export / write_export.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from trainplan.errors import TrainplanError
from trainplan.estimation import estimate
from trainplan.export.base import ExportContext
from trainplan.frozen import fields
from trainplan.importers import read_config
from trainplan.importers.merge import apply
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job

ROOT = Path(__file__).resolve().parents[1]
T7 = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def job_of(**kw):
    kw.setdefault("gpu", "h100")
    return resolve_job(JobOptions(**kw), calibration=None, priced=False)


def exporter(fmt: str):
    return importlib.import_module(f"trainplan.export.{fmt}")


def write(tmp_path: Path, exported) -> Path:
    for f in exported.files:
        (tmp_path / f.name).write_text(f.text)
    return tmp_path


def read_back(source: str, monkeypatch, folder: Path, **given):
    """The job `--from source` resolves to, run from the export folder, with `given` as flags."""
    monkeypatch.chdir(folder)
    options = apply([read_config(source)], JobOptions(model="", **given), given)
    return resolve_job(options, calibration=None, priced=False)


def differences(a, b) -> list[str]:
    out = [f"setup.{f.name}: {getattr(a.setup, f.name)!r} != {getattr(b.setup, f.name)!r}"
           for f in fields(a.setup) if getattr(a.setup, f.name) != getattr(b.setup, f.name)]
    out += [f"layout.{f.name}: {getattr(a.layout, f.name)!r} != {getattr(b.layout, f.name)!r}"
            for f in fields(a.layout) if f.name != "etp" and getattr(a.layout, f.name) != getattr(b.layout, f.name)]
    # etp unset means "as tp": an export states the size the experts run at, which reads back stated
    if a.layout.expert_tp != b.layout.expert_tp:
        out.append(f"layout.expert_tp: {a.layout.expert_tp} != {b.layout.expert_tp}")
    return out


def same_estimate(a, b) -> None:
    ea, eb = estimate(a), estimate(b)
    for name in ("components_bytes", "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes", "cpu_ram_bytes",
                 "phases_bytes", "per_stage_bytes"):
        assert getattr(ea.memory, name) == getattr(eb.memory, name), name
    assert ea.time.step_s == pytest.approx(eb.time.step_s, rel=1e-12)


# --- round trips ----------------------------------------------------------------------------------

SWIFT = {
    "full-bf16-pure-1gpu": {"method": "full", "num_gpus": 1},
    "full-hf-autocast": {"method": "full", "precision": "bf16", "num_gpus": 1},
    "full-zero2-offload": {"method": "full", "num_gpus": 8, "zero": 2, "offload": "optimizer"},
    "full-zero3-2nodes": {"method": "full", "num_gpus": 16, "nodes": 2, "zero": 3, "grad_ckpt": "none", "batch_size": 2,
                          "grad_accum": 4},
    "full-zero3-offload-all": {"method": "full", "num_gpus": 8, "zero": 3, "offload": "all", "precision": "bf16-pure"},
    "full-fsdp": {"method": "full", "num_gpus": 8, "fsdp": "full", "grad_ckpt": "full"},
    "full-fsdp-hybrid-offload": {"method": "full", "num_gpus": 16, "nodes": 2, "fsdp": "hybrid", "offload": "all",
                                 "grad_ckpt": "none"},
    "lora-zero3": {"method": "lora", "lora_targets": "q_proj,v_proj", "num_gpus": 8, "nodes": 2, "zero": 3,
                   "lora_rank": 64},
    "lora-ulysses": {"method": "lora", "lora_targets": "all-linear", "num_gpus": 8, "ulysses": 4, "zero": 2,
                     "batch_size": 2, "grad_accum": 4, "seq_len": 8192, "attention": "flash"},
    "lora-bf16-pure-liger": {"method": "lora", "lora_targets": "all-linear", "precision": "bf16-pure", "liger": True,
                             "loss": "fused", "optimizer": "adamw-8bit"},
    "qlora-nf4": {"method": "qlora", "lora_targets": "all-linear", "double_quant": True},
    "qlora-int8": {"method": "qlora", "quant": "int8", "lora_targets": T7, "lora_alpha": 16},
    "full-dpo-zero3": {"method": "full", "num_gpus": 8, "zero": 3, "stage": "dpo"},
}


@pytest.mark.parametrize("case", SWIFT)
def test_swift_round_trip_from_the_launch_line(case, tmp_path, monkeypatch):
    job = job_of(model="llama-3.1-8b", framework="swift", **SWIFT[case])
    exported = exporter("swift").export(job, None, ExportContext())
    back = read_back(exported.commands[0], monkeypatch, write(tmp_path, exported), gpu="h100")
    assert differences(job, back) == []
    name = exported.files[0].name
    assert name == ("swift_rlhf.yaml" if "stage" in SWIFT[case] else "swift_sft.yaml")
    assert back.options.configs[0] == "command line" and any(c.endswith(name) for c in back.options.configs)


def test_swift_yaml_alone_and_same_estimate(tmp_path, monkeypatch):
    job = job_of(model="llama-3.1-8b", framework="swift", method="lora", lora_targets="all-linear", num_gpus=8,
                 zero=2, batch_size=4, grad_accum=2)
    folder = write(tmp_path, exporter("swift").export(job, None, ExportContext()))
    back = read_back(str(folder / "swift_sft.yaml"), monkeypatch, folder, gpu="h100", num_gpus=8)
    assert differences(job, back) == []
    same_estimate(job, back)


def test_swift_launch_line_and_files(tmp_path):
    job = job_of(model="llama-3.1-8b", framework="swift", method="full", num_gpus=16, nodes=2, zero=3)
    exported = exporter("swift").export(job, None, ExportContext())
    assert exported.commands == (("NPROC_PER_NODE=8 NNODES=2 NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR "
                                 "MASTER_PORT=29500 swift sft swift_sft.yaml"),)
    args = yaml.safe_load(exported.files[0].text)
    # DeepSpeed's bf16 optimizer holds the fp32 master: the model loads in bf16 (swift reader: "bf16")
    assert (args["tuner_type"], args["torch_dtype"], args["deepspeed"]) == ("full", "bfloat16", "ds_config.json")
    assert args["gradient_accumulation_steps"] == 1      # always written: swift's None means ceil(16 / bs / world)
    ds = json.loads(exported.files[1].text)
    assert ds["zero_optimization"]["stage"] == 3 and ds["train_micro_batch_size_per_gpu"] == "auto"
    assert "sequence_parallel_size" not in ds
    one = exporter("swift").export(job_of(model="llama-3.1-8b", framework="swift", method="lora",
                                          lora_targets="all-linear"), None, ExportContext())
    assert one.commands == ("swift sft swift_sft.yaml",)
    pt = exporter("swift").export(job_of(model="llama-3.1-8b", framework="swift", stage="pt", num_gpus=4, zero=2),
                                  None, ExportContext())
    assert pt.commands == ("NPROC_PER_NODE=4 swift pt swift_pt.yaml",)
    assert [f.name for f in pt.files] == ["swift_pt.yaml", "ds_config.json"]


AXOLOTL = {
    "full-bf16-pure": {"method": "full"},
    "full-zero2-offload": {"method": "full", "num_gpus": 8, "zero": 2, "offload": "optimizer"},
    "full-zero3-2nodes": {"method": "full", "num_gpus": 16, "nodes": 2, "zero": 3},
    "full-fsdp1": {"method": "full", "num_gpus": 8, "fsdp": "full"},
    "full-fsdp2-pure-offload": {"method": "full", "num_gpus": 8, "fsdp": "full", "fsdp_version": 2,
                                "precision": "bf16-pure", "offload": "all"},
    "full-hsdp-2nodes": {"method": "full", "num_gpus": 16, "nodes": 2, "fsdp": "hybrid", "grad_ckpt": "none"},
    "lora-zero3-2nodes": {"method": "lora", "lora_targets": "q_proj,v_proj", "num_gpus": 16, "nodes": 2, "zero": 3},
    "lora-cp-liger": {"method": "lora", "lora_targets": "all-linear", "num_gpus": 8, "cp": 4, "zero": 2,
                      "batch_size": 2, "grad_accum": 4, "seq_len": 8192, "liger": True, "loss": "fused"},
    "lora-pure-chunked-offload": {"method": "lora", "lora_targets": "all-linear", "precision": "bf16-pure",
                                  "loss": "chunked", "grad_ckpt": "full", "activation_offload": True,
                                  "attention": "sdpa"},
    "qlora-nf4": {"method": "qlora", "lora_targets": "all-linear", "double_quant": True, "loss": "fused"},
    "qlora-fp4-single-quant": {"method": "qlora", "quant": "fp4", "lora_targets": T7},
    "lora-int8": {"method": "qlora", "quant": "int8", "lora_targets": "all-linear"},
    "full-dpo-zero3": {"method": "full", "num_gpus": 8, "zero": 3, "stage": "dpo"},
}


@pytest.mark.parametrize("case", AXOLOTL)
def test_axolotl_round_trip(case, tmp_path, monkeypatch):
    job = job_of(model="llama-3.1-8b", framework="axolotl", **AXOLOTL[case])
    exported = exporter("axolotl").export(job, None, ExportContext())
    folder = write(tmp_path, exported)
    counts = {"num_gpus": job.layout.num_gpus, "nodes": job.layout.nodes}   # the launcher's, not the YAML's
    back = read_back(str(folder / "axolotl.yaml"), monkeypatch, folder, gpu="h100", **counts)
    assert differences(job, back) == []


def test_axolotl_launch_and_same_estimate(tmp_path, monkeypatch):
    job = job_of(model="llama-3.1-8b", framework="axolotl", method="full", num_gpus=16, nodes=2, zero=3)
    exported = exporter("axolotl").export(job, None, ExportContext())
    assert exported.commands == (("axolotl train axolotl.yaml --launcher accelerate -- --num_processes 16 "
                                 "--num_machines 2 --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR "
                                 "--main_process_port 29500"),)
    data = yaml.safe_load(exported.files[0].text)
    assert (data["deepspeed"], data["bf16"], data["micro_batch_size"], data["sequence_len"]) == \
        ("ds_config.json", True, 1, 2048)
    folder = write(tmp_path, exported)
    back = read_back(str(folder / "axolotl.yaml"), monkeypatch, folder, gpu="h100", num_gpus=16, nodes=2)
    same_estimate(job, back)


TORCHTUNE = {
    "lora-single": {"method": "lora", "lora_targets": "q_proj,v_proj"},
    "qlora-single": {"method": "qlora", "lora_targets": T7, "double_quant": True, "lora_rank": 8, "lora_alpha": 16},
    "full-single": {"method": "full"},
    "full-single-optimizer-in-bwd": {"method": "full", "optimizer_in_backward": True, "optimizer": "adamw"},
    "full-fsdp-8": {"method": "full", "num_gpus": 8, "fsdp": "full"},
    "full-2nodes-offload-every-2": {"method": "full", "num_gpus": 16, "nodes": 2, "fsdp": "full", "offload": "all",
                                    "grad_ckpt_every": 2},
    "lora-fsdp-fp32": {"method": "lora", "lora_targets": T7, "num_gpus": 8, "fsdp": "full", "grad_ckpt": "none",
                       "precision": "fp32", "batch_size": 4, "grad_accum": 2, "seq_len": 4096},
    "full-tp2-offload-activations": {"method": "full", "num_gpus": 8, "fsdp": "full", "tp": 2, "optimizer": "adamw",
                                     "activation_offload": True},
    "qwen-lora-reshard-off": {"model": "qwen2.5-7b", "method": "lora", "lora_targets": "q_proj,k_proj,v_proj",
                              "num_gpus": 4, "fsdp": "full", "reshard_after_forward": False},
}


@pytest.mark.parametrize("case", TORCHTUNE)
def test_torchtune_round_trip_from_tune_run(case, tmp_path, monkeypatch):
    kw = {"model": "llama-3.1-8b", **TORCHTUNE[case]}
    job = job_of(framework="torchtune", **kw)
    exported = exporter("torchtune").export(job, None, ExportContext())
    back = read_back(exported.commands[0], monkeypatch, write(tmp_path, exported), gpu="h100")
    assert differences(job, back) == []


def test_torchtune_launch_lines_and_same_estimate(tmp_path, monkeypatch):
    tt = exporter("torchtune")
    two = job_of(model="llama-3.1-8b", framework="torchtune", num_gpus=16, nodes=2, fsdp="full")
    assert tt.export(two, None, ExportContext()).commands == (
        ("tune run --nproc_per_node 8 --nnodes 2 --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port "
        "29500 full_finetune_distributed --config torchtune.yaml"),)
    one = job_of(model="llama-3.1-8b", framework="torchtune", method="qlora", lora_targets=T7, double_quant=True)
    exported = tt.export(one, None, ExportContext())
    assert exported.commands == ("tune run lora_finetune_single_device --config torchtune.yaml",)
    data = yaml.safe_load(exported.files[0].text)
    assert data["model"] == {"_component_": "torchtune.models.llama3_1.lora_llama3_1_8b",
                             "lora_attn_modules": ["q_proj", "k_proj", "v_proj", "output_proj"],
                             "apply_lora_to_mlp": True, "apply_lora_to_output": False, "lora_rank": 16,
                             "lora_alpha": 32, "lora_dropout": 0.05, "quantize_base": True}
    assert (data["dtype"], data["tokenizer"]["max_seq_len"], data["enable_activation_checkpointing"]) == \
        ("bf16", 2048, True)
    back = read_back(exported.commands[0], monkeypatch, write(tmp_path, exported), gpu="h100")
    same_estimate(one, back)


def test_torchtune_all_linear_reads_back_as_the_same_modules(tmp_path, monkeypatch):
    job = job_of(model="llama-3.1-8b", framework="torchtune", method="lora", lora_targets="all-linear")
    exported = exporter("torchtune").export(job, None, ExportContext())
    assert any("all-linear" in n for n in exported.notes)
    back = read_back(exported.commands[0], monkeypatch, write(tmp_path, exported), gpu="h100")
    assert back.setup.lora.targets == tuple(T7.split(","))
    assert differences(job, back) == [f"setup.lora: {job.setup.lora!r} != {back.setup.lora!r}"]
    assert estimate(job).trainable_params == estimate(back).trainable_params   # the same adapters


TORCHTITAN = {
    "fsdp-8": {"num_gpus": 8, "fsdp": "full"},
    "single": {"num_gpus": 1},
    "ddp-8": {"num_gpus": 8},
    "70b-fsdp-tp8-op-8nodes": {"model": "llama-3.1-70b", "num_gpus": 64, "nodes": 8, "fsdp": "full", "tp": 8,
                               "grad_ckpt": "op", "batch_size": 2, "grad_accum": 4, "seq_len": 8192},
    "70b-pp4-4nodes": {"model": "llama-3.1-70b", "num_gpus": 32, "nodes": 4, "fsdp": "full", "pp": 4, "grad_accum": 8,
                       "grad_ckpt": "full"},
    "fp8-rowwise-gw-hp": {"num_gpus": 8, "fsdp": "full", "precision": "fp8", "fp8_recipe": "torchao-rowwise-gw-hp"},
    "70b-pp4-zbv": {"model": "llama-3.1-70b", "num_gpus": 32, "nodes": 4, "fsdp": "full", "pp": 4, "grad_accum": 8,
                    "grad_ckpt": "full", "pp_schedule": "zbv"},
    "hsdp-every-2-pure": {"num_gpus": 16, "nodes": 2, "fsdp": "hybrid", "grad_ckpt": "full", "grad_ckpt_every": 2,
                          "precision": "bf16-pure"},
    "qwen3-cp-fp32-offload-compile": {"model": "qwen3-8b", "num_gpus": 8, "fsdp": "full", "cp": 2, "offload": "all",
                                      "precision": "fp32", "compile": True},
    "fp8-foreach-early-step": {"num_gpus": 8, "fsdp": "full", "precision": "fp8", "optimizer": "adamw",
                               "optimizer_in_backward": True},
    "reshard-never": {"num_gpus": 8, "fsdp": "full", "reshard_after_forward": False},
}


@pytest.mark.parametrize("case", TORCHTITAN)
def test_torchtitan_round_trip_from_torchrun(case, tmp_path, monkeypatch):
    kw = {"model": "llama-3.1-8b", **TORCHTITAN[case]}
    job = job_of(framework="torchtitan", **kw)
    exported = exporter("torchtitan").export(job, None, ExportContext())
    back = read_back(exported.commands[0], monkeypatch, write(tmp_path, exported), gpu="h100")
    assert differences(job, back) == []
    assert back.timing.pp_schedule == job.timing.pp_schedule      # the schedule travels (70b-pp4-zbv)


def test_torchtitan_toml_alone_gives_the_gpu_count(tmp_path, monkeypatch):
    job = job_of(model="llama-3.1-8b", framework="torchtitan", num_gpus=8, fsdp="full", tp=2, grad_accum=2,
                 samples=10_000, tokens_per_sample=2048, compile=False)
    exported = exporter("torchtitan").export(job, estimate(job), ExportContext())
    toml = tomllib.loads(exported.files[0].text)
    # data_parallel_shard_degree 8 / tp 2 = 4; global batch = local 1 x accumulation 2 x shard 4; the
    # estimate's steps = 10000 samples / global batch 8
    assert not any("fused kernels" in n for n in exported.notes)      # --compile given: no mismatch
    unset = exporter("torchtitan").export(job_of(model="llama-3.1-8b", framework="torchtitan", num_gpus=8,
                                                 fsdp="full"), None, ExportContext())
    assert any("fused kernels" in n for n in unset.notes)
    assert toml["parallelism"]["data_parallel_shard_degree"] == 4
    assert toml["training"]["global_batch_size"] == 8
    assert toml["training"]["steps"] == estimate(job).time.steps == 1250
    folder = write(tmp_path, exported)
    back = read_back(str(folder / "torchtitan.toml"), monkeypatch, folder, gpu="h100")
    assert differences(job, back) == []
    same_estimate(job, back)
    assert exported.commands == (("torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file "
                                 "torchtitan.toml"),)


MEGATRON = {
    "70b-tp4-pp2-2nodes": {"model": "llama-3.1-70b", "num_gpus": 16, "nodes": 2, "tp": 4, "pp": 2, "zero": 1,
                           "grad_accum": 8, "grad_ckpt": "selective"},
    "8b-tp2-full-recompute": {"num_gpus": 8, "tp": 2, "grad_ckpt": "full", "seq_len": 4096},
    "8b-one-gpu": {"num_gpus": 1},
    "70b-vpp-fp8-offload": {"model": "llama-3.1-70b", "num_gpus": 32, "nodes": 4, "tp": 8, "pp": 4, "vpp": 5, "zero": 1,
                            "offload": "optimizer", "precision": "fp8"},
    "lora-tp2": {"method": "lora", "lora_targets": "all-linear", "num_gpus": 8, "tp": 2, "zero": 1},
    "8b-fp8-current-scaling": {"num_gpus": 8, "zero": 1, "precision": "fp8", "fp8_recipe": "te-current"},
    "moe-ep4-no-sp": {"model": "qwen3-30b-a3b", "num_gpus": 16, "nodes": 2, "tp": 2, "ep": 4, "zero": 1,
                      "sequence_parallel": False},
}


@pytest.mark.parametrize("case", MEGATRON)
def test_megatron_swift_line_round_trip(case, tmp_path, monkeypatch):
    kw = {"model": "llama-3.1-8b", **MEGATRON[case]}
    job = job_of(framework="megatron", **kw)
    exported = exporter("megatron").export(job, None, ExportContext())
    folder = write(tmp_path, exported)
    back = read_back(str(folder / "megatron_swift.sh"), monkeypatch, folder, gpu="h100")
    assert differences(job, back) == []
    assert back.parallel.sequence_parallel == job.parallel.sequence_parallel
    assert back.parallel.virtual_stages == job.parallel.virtual_stages


def _lm_args(text: str) -> dict[str, list[str]]:
    words = " ".join(line.rstrip("\\").strip() for line in text.splitlines() if not line.startswith("#")).split()
    words = words[words.index("pretrain_gpt.py") + 1:]
    out: dict[str, list[str]] = {}
    for word in words:
        if word.startswith("--"):
            key = word
            out[key] = []
        else:
            out[key].append(word)
    return out


def test_megatron_lm_arguments_by_hand():
    job = job_of(model="llama-3.1-70b", framework="megatron", num_gpus=32, nodes=4, tp=8, pp=4, vpp=5, zero=1,
                 grad_accum=8, grad_ckpt="full", seq_len=4096)
    exported = exporter("megatron").export(job, None, ExportContext())
    lm = next(f for f in exported.files if f.name == "megatron_lm.sh")
    assert "torchrun --nproc_per_node 8 --nnodes 4 --node_rank $NODE_RANK --master_addr $MASTER_ADDR " \
           "--master_port 29500 pretrain_gpt.py" in lm.text
    args = _lm_args(lm.text)
    # Llama-3.1-70B config.json: 80 layers, hidden 8192, intermediate 28672, 64 heads, 8 kv heads, untied,
    # no biases, rope, RMSNorm, SwiGLU; dp = 32 / (8 x 4) = 1, global batch = 1 x 8 x 1; 80 / (4 x 5) = 4
    expected = {"--tensor-model-parallel-size": ["8"], "--pipeline-model-parallel-size": ["4"],
                "--num-layers-per-virtual-pipeline-stage": ["4"], "--sequence-parallel": [],
                "--micro-batch-size": ["1"], "--global-batch-size": ["8"], "--seq-length": ["4096"],
                "--num-layers": ["80"], "--hidden-size": ["8192"], "--ffn-hidden-size": ["28672"],
                "--num-attention-heads": ["64"], "--group-query-attention": [], "--num-query-groups": ["8"],
                "--normalization": ["RMSNorm"], "--swiglu": [], "--position-embedding-type": ["rope"],
                "--untie-embeddings-and-output-weights": [], "--disable-bias-linear": [],
                "--recompute-granularity": ["full"], "--recompute-method": ["uniform"],
                "--recompute-num-layers": ["1"], "--use-distributed-optimizer": [], "--bf16": [],
                "--attention-backend": ["flash"], "--optimizer": ["adam"]}
    assert {k: args.get(k) for k in expected} == expected
    assert "--kv-channels" not in args and "--fp16" not in args and "--context-parallel-size" not in args
    fp8 = _lm_args(next(f for f in exporter("megatron").export(
        job_of(model="llama-3.1-8b", framework="megatron", num_gpus=8, tp=2, precision="fp8", grad_ckpt="selective"),
        None, ExportContext()).files if f.name == "megatron_lm.sh").text)
    assert (fp8["--bf16"], fp8["--fp8-format"], fp8["--recompute-granularity"], fp8["--global-batch-size"]) == \
        ([], ["hybrid"], ["selective"], ["4"])
    assert "--use-distributed-optimizer" not in fp8            # --zero 0: Megatron's plain optimizer


@pytest.mark.parametrize("fmt", ["swift", "axolotl", "torchtune", "torchtitan", "megatron"])
def test_a_job_of_another_framework_says_the_profile_changes(fmt):
    kw = {"torchtitan": {"num_gpus": 8, "fsdp": "full", "attention": "flash"}, "torchtune": {"precision": "bf16-pure"},
          "megatron": {"attention": "flash"}, "axolotl": {"precision": "bf16-pure"}}.get(fmt, {})
    other = exporter(fmt).export(job_of(model="llama-3.1-8b", framework="hf", **kw), None, ExportContext())
    assert any(f"read back as --framework {fmt}" in n for n in other.notes)
    own = exporter(fmt).export(job_of(model="llama-3.1-8b", framework=fmt, **kw), None, ExportContext())
    assert not any("read back as --framework" in n for n in own.notes)


def test_megatron_lora_and_mla_write_only_the_swift_line():
    lora = exporter("megatron").export(job_of(model="llama-3.1-8b", framework="megatron", method="lora",
                                              lora_targets="all-linear", num_gpus=8, tp=2, zero=1), None,
                                       ExportContext())
    assert [f.name for f in lora.files] == ["megatron_swift.sh"] and lora.commands == ("bash megatron_swift.sh",)
    mla = exporter("megatron").export(job_of(model="deepseek-v2-lite", framework="megatron", num_gpus=8, ep=8,
                                             zero=1), None, ExportContext())
    assert [f.name for f in mla.files] == ["megatron_swift.sh"]
    assert any("multi-latent attention" in n for n in mla.notes)


# --- refusals ---------------------------------------------------------------------------------------

REFUSED = [
    ("torchtune", {"framework": "torchtune", "num_gpus": 8, "zero": 2}, "--fsdp full"),
    ("torchtune", {"framework": "torchtune", "num_gpus": 8}, "no DDP"),
    ("torchtune", {"framework": "torchtune", "precision": "bf16"}, "bf16-pure"),
    ("torchtune", {"framework": "torchtune", "num_gpus": 8, "fsdp": "full", "pp": 2}, "torchtitan"),
    ("torchtune", {"framework": "torchtune", "model": "qwen3-8b"}, "no model builder"),
    ("torchtune", {"framework": "torchtune", "optimizer": "adafactor"}, "adafactor"),
    ("axolotl", {"framework": "axolotl", "num_gpus": 8, "tp": 2, "zero": 1}, "AutoTP"),
    ("axolotl", {"framework": "axolotl", "num_gpus": 8, "pp": 2}, "megatron"),
    ("axolotl", {"framework": "axolotl", "precision": "bf16"}, "bf16-pure"),
    ("axolotl", {"framework": "axolotl", "num_gpus": 8, "fsdp": "full", "reshard_after_forward": False}, "--zero 2"),
    ("torchtitan", {"framework": "torchtitan", "method": "lora", "num_gpus": 8, "fsdp": "full"}, "torchtune"),
    ("torchtitan", {"framework": "torchtitan", "num_gpus": 8, "zero": 3}, "--fsdp full"),
    ("torchtitan", {"framework": "torchtitan", "num_gpus": 8, "tp": 2}, "--fsdp full"),
    ("torchtitan", {"framework": "torchtitan", "model": "mistral-7b-v0.1", "num_gpus": 8, "fsdp": "full"}, "flavor"),
    ("torchtitan", {"framework": "torchtitan", "num_gpus": 8, "fsdp": "full", "tp": 8}, "drop --fsdp"),
    ("swift", {"framework": "swift", "num_gpus": 8, "tp": 2}, "megatron"),
    ("swift", {"framework": "swift", "loss": "chunked"}, "chunked"),
    ("swift", {"framework": "swift", "method": "freeze"}, "llamafactory"),
    ("megatron", {"framework": "deepspeed", "num_gpus": 8, "zero": 3}, "ZeRO-2/3"),
    ("megatron", {"framework": "megatron", "num_gpus": 8, "fsdp": "full"}, "--zero 1"),
    # a Megatron job cannot be QLoRA at all (Capabilities.quantized_base): an HF QLoRA job asked for Megatron args
    ("megatron", {"framework": "hf", "method": "qlora", "lora_targets": "all-linear"}, "QLoRA"),
    ("megatron", {"framework": "megatron", "precision": "bf16-pure"}, "--precision bf16"),
]


@pytest.mark.parametrize("fmt, kw, alternative", REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_a_job_the_framework_cannot_run_is_one_line(fmt, kw, alternative):
    job = job_of(**{"model": "llama-3.1-8b", **kw})
    with pytest.raises(TrainplanError) as err:
        exporter(fmt).export(job, None, ExportContext())
    message = str(err.value)
    assert message.startswith(f"--format {fmt}: ") and "\n" not in message and alternative in message


def test_cli_refusal_is_one_line_and_exit_2(capsys, tmp_path):
    from trainplan.cli import main

    code = main(["export", "--model", "llama-3.1-8b", "--framework", "torchtitan", "--method", "lora",
                 "--num-gpus", "8", "--fsdp", "full", "--gpu", "h100", "--format", "torchtitan",
                 "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("trainplan: error: --format torchtitan: ") and "\n" not in err
    assert not (tmp_path / "x").exists()


# --- the frameworks' own definitions (read as text from the pinned releases) --------------------------

def _sources():
    path = ROOT / "tools" / "framework_sources.py"
    if "framework_sources" in sys.modules:
        return sys.modules["framework_sources"]
    spec = importlib.util.spec_from_file_location("framework_sources", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["framework_sources"] = mod
    spec.loader.exec_module(mod)
    return mod


def tree(name: str):
    fs = _sources()
    try:
        return fs.tree(name)
    except fs.SourceUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


def class_fields(name: str, *qualnames: str) -> set[str]:
    fs, t = _sources(), tree(name)
    out: set[str] = set()
    for q in qualnames:
        out |= set(fs.fields(t.cls(q)))
    return out


@pytest.mark.frameworks
@pytest.mark.parametrize("case", ["full-zero3-2nodes", "full-fsdp", "lora-ulysses", "lora-bf16-pure-liger",
                                  "qlora-nf4", "full-hf-autocast"])
def test_swift_keys_are_sft_arguments(case):
    job = job_of(model="llama-3.1-8b", framework="swift", **SWIFT[case])
    exported = exporter("swift").export(job, None, ExportContext())
    keys = set(yaml.safe_load(exported.files[0].text))
    assert keys - class_fields("swift", "swift.arguments.sft_args.SftArguments") == set()
    for f in exported.files[1:]:
        body = json.loads(f.text)
        if f.name == "swift_fsdp.json":   # the shape of the fsdp2 preset ms-swift ships
            preset = tree("swift").json("swift/config/fsdp2.json")
            assert set(body) <= set(preset) and set(body["fsdp_config"]) <= set(preset["fsdp_config"])


@pytest.mark.frameworks
def test_swift_rlhf_keys_are_rlhf_arguments():
    job = job_of(model="llama-3.1-8b", framework="swift", **SWIFT["full-dpo-zero3"])
    keys = set(yaml.safe_load(exporter("swift").export(job, None, ExportContext()).files[0].text))
    assert keys - class_fields("swift", "swift.arguments.rlhf_args.RLHFArguments") == set()


@pytest.mark.frameworks
@pytest.mark.parametrize("case", list(MEGATRON))
def test_megatron_swift_keys_are_megatron_sft_arguments(case):
    job = job_of(framework="megatron", **{"model": "llama-3.1-8b", **MEGATRON[case]})
    args = exporter("megatron").swift_arguments(job, None, ExportContext())
    assert set(args) - class_fields("swift", "swift.megatron.arguments.sft_args.MegatronSftArguments") == set()


@pytest.mark.frameworks
@pytest.mark.parametrize("case", list(AXOLOTL))
def test_axolotl_keys_are_schema_fields(case):
    job = job_of(model="llama-3.1-8b", framework="axolotl", **AXOLOTL[case])
    data = yaml.safe_load(exporter("axolotl").export(job, None, ExportContext()).files[0].text)
    known = class_fields("axolotl", "axolotl.utils.schemas.config.AxolotlInputConfig",
                         "axolotl.integrations.liger.args.LigerArgs",
                         "axolotl.integrations.cut_cross_entropy.args.CutCrossEntropyArgs")
    assert set(data) - known == set()
    if "fsdp_config" in data:
        assert set(data["fsdp_config"]) - class_fields("axolotl", "axolotl.utils.schemas.fsdp.FSDPConfig") == set()
    for dataset in data["datasets"]:
        assert set(dataset) <= class_fields("axolotl", "axolotl.utils.schemas.datasets.SFTDataset")
    for plugin in data.get("plugins", []):
        module, _, name = plugin.rpartition(".")
        assert tree("axolotl").module(module) is not None and f"class {name}" in _text(tree("axolotl"), module)


def _text(t, module: str) -> str:
    """A module's source with its package's __init__ (where plugins define their classes)."""
    mod = t.module(module)
    text = mod.path.read_text() if mod is not None else ""
    for sub in ("plugin", "__init__"):
        extra = t.module(f"{module}.{sub}")
        if extra is not None:
            text += extra.path.read_text()
    return text


# torchtune recipe keys: what each recipe of 0.6.1 reads (cfg.get("key") or cfg.key), and the required ones
def _recipe_reads(recipe: str) -> tuple[set[str], set[str]]:
    t = tree("torchtune")
    module = ast.parse(t.need(f"recipes.{recipe}").path.read_text())
    got, attrs = set(), set()
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and \
                isinstance(node.func.value, ast.Name) and node.func.value.id == "cfg" and node.args and \
                isinstance(node.args[0], ast.Constant):
            got.add(node.args[0].value)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "cfg" \
                and node.attr != "get":
            attrs.add(node.attr)
    return got | attrs, attrs


# keyword arguments a builder passes on through **kwargs: instruct_dataset's load_dataset(source, data_files=...)
_PASSED_ON = {"data_files"}
# keys the bd2a0fc recipes read that came after 0.6.1 (the last PyPI release)
_AFTER_061 = {"data_parallel_replicate_dim", "context_parallel_dim"}


def _definition(t, module_name: str, name: str, depth: int = 0):
    """(module name, the ast node defining `name`), following `from .x import name` re-exports."""
    mod = t.module(module_name)
    if mod is None or depth > 4:
        return None
    body = ast.parse(mod.path.read_text()).body
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return module_name, node
        if isinstance(node, ast.Assign) and any(isinstance(x, ast.Name) and x.id == name for x in node.targets):
            return module_name, node
    package = module_name if mod.path.name == "__init__.py" else module_name.rpartition(".")[0]
    for node in body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            base = package
            for _ in range(max(0, node.level - 1)):
                base = base.rpartition(".")[0]
            target = f"{base}.{node.module}" if node.level else node.module
            return _definition(t, target, name, depth + 1)
    return None


def _builder_params(t, component: str) -> set[str]:
    """The parameters of a torchtune builder: a function, a class's __init__ (with its bases' when it
    takes **kwargs), or a functools.partial of a function; a missing one fails."""
    module_name, _, name = component.rpartition(".")
    found = _definition(t, module_name, name)
    assert found is not None, f"{component} is not defined in torchtune 0.6.1"
    where, node = found
    if isinstance(node, ast.Assign):
        assert isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "partial", component
        return _builder_params(t, f"{where}.{ast.unparse(node.value.args[0])}")
    if isinstance(node, ast.ClassDef):
        node = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
        if node is None:
            return {"**"}
    args = node.args
    return {a.arg for a in (*args.args, *args.kwonlyargs)} | ({"**"} if args.kwarg else set())


@pytest.mark.frameworks
@pytest.mark.parametrize("case", list(TORCHTUNE))
def test_torchtune_recipe_reads_every_key_and_components_exist(case):
    kw = {"model": "llama-3.1-8b", **TORCHTUNE[case]}
    job = job_of(framework="torchtune", **kw)
    tt = exporter("torchtune")
    data = yaml.safe_load(tt.export(job, None, ExportContext()).files[0].text)
    reads, required = _recipe_reads(tt.recipe(job))
    assert set(data) - reads - _AFTER_061 == set()
    assert required - set(data) == set()
    t = tree("torchtune")
    for section in ("model", "tokenizer", "checkpointer", "dataset", "loss", "metric_logger", "lr_scheduler",
                    "tensor_parallel_plan"):
        if section not in data:
            continue
        component = data[section]["_component_"]
        assert component.startswith("torchtune."), component
        params = _builder_params(t, component)
        kwargs = set(data[section]) - {"_component_"}
        if "**" not in params:
            assert kwargs <= params, (component, kwargs - params)
        else:                 # **kwargs (qwen2_5_tokenizer, instruct_dataset's load_dataset kwargs): the named ones
            assert {k for k in kwargs if k in params or k in _PASSED_ON} == kwargs, (component, kwargs - params)


@pytest.mark.frameworks
@pytest.mark.parametrize("case", list(TORCHTITAN))
def test_torchtitan_sections_and_keys_are_job_config_fields(case):
    fs, t = _sources(), tree("torchtitan")
    kw = {"model": "llama-3.1-8b", **TORCHTITAN[case]}
    job = job_of(framework="torchtitan", **kw)
    toml = tomllib.loads(exporter("torchtitan").export(job, None, ExportContext()).files[0].text)
    job_config = fs.fields(t.cls("torchtitan.config.job_config.JobConfig"))
    for section, table in toml.items():
        assert section in job_config, section
        known = set(fs.fields(job_config[section].value.cls))
        assert set(table) - known == set(), (section, set(table) - known)
    name, flavor = toml["model"]["name"], toml["model"]["flavor"]
    assert f'"{flavor}":' in t.need(f"torchtitan.models.{name}").path.read_text()
    for converter in toml["model"].get("converters", []):
        assert f'"{converter}"' in t.need("torchtitan.components.quantization.float8").path.read_text()
    mode = toml["activation_checkpoint"]["mode"]
    assert mode in ("none", "full", "selective")


# --- end to end through build_export / write_export -------------------------------------------------

E2E = [("swift", "swift", {"method": "lora", "lora_targets": "all-linear", "num_gpus": 16, "nodes": 2, "zero": 3},
        lambda files, cmds: cmds[0]),
       ("axolotl", "axolotl", {"method": "full", "num_gpus": 8, "zero": 2, "offload": "optimizer"},
        lambda files, cmds: "axolotl.yaml"),
       ("torchtune", "torchtune", {"method": "full", "num_gpus": 16, "nodes": 2, "fsdp": "full"},
        lambda files, cmds: cmds[0]),
       ("torchtitan", "torchtitan", {"num_gpus": 16, "nodes": 2, "fsdp": "full", "tp": 2, "compile": True},
        lambda files, cmds: cmds[0]),
       ("megatron", "megatron", {"model": "llama-3.1-70b", "num_gpus": 16, "nodes": 2, "tp": 4, "pp": 2},
        lambda files, cmds: "megatron_swift.sh")]


@pytest.mark.parametrize("fmt, framework, kw, source", E2E, ids=[e[0] for e in E2E])
def test_build_export_end_to_end(fmt, framework, kw, source, tmp_path, monkeypatch):
    from trainplan.export.write import build_export, write_export

    job = job_of(framework=framework, **{"model": "llama-3.1-8b", **kw})
    est = estimate(job)
    built = build_export(job, est, fmt)
    written = write_export(built, str(tmp_path))
    names = {os.path.basename(p) for p in written}
    assert {f.name for f in built.files} <= names and "README.md" in names
    assert "launch.sh" not in names          # these formats carry their own launch lines
    src = source(names, built.commands)
    src = src if " " in src else str(tmp_path / src)
    counts = {"num_gpus": job.layout.num_gpus, "nodes": job.layout.nodes} if fmt == "axolotl" else {}
    back = read_back(src, monkeypatch, tmp_path, gpu="h100", **counts)
    assert differences(job, back) == []
    same_estimate(job, back)


def test_megatron_exports_write_the_expert_tp():
    # Megatron-LM runs the experts at tp unless told (arguments.py): the line says 1 when the job's is 1,
    # and leaves it out when it is tp; Megatron-SWIFT defaults to 1 (megatron_args.py), so its line always
    # states it for an MoE model
    def lines(**kw):
        job = job_of(model="qwen3-30b-a3b", framework="megatron", num_gpus=16, nodes=2, tp=2, ep=8, zero=1,
                     seq_len=4096, **kw)
        files = {f.name: f.text for f in exporter("megatron").export(job, None, ExportContext()).files}
        return files
    one = lines(etp=1)
    assert _lm_args(one["megatron_lm.sh"])["--expert-tensor-parallel-size"] == ["1"]
    assert "--expert_tensor_parallel_size 1" in " ".join(one["megatron_swift.sh"].split())
    at_tp = lines()
    assert "--expert-tensor-parallel-size" not in _lm_args(at_tp["megatron_lm.sh"])
    assert "--expert_tensor_parallel_size 2" in " ".join(at_tp["megatron_swift.sh"].split())


def test_megatron_lm_line_carries_the_expert_all_to_all_overlap():
    job = job_of(model="qwen3-30b-a3b", framework="megatron", num_gpus=16, nodes=2, ep=16, zero=1, seq_len=4096,
                 grad_accum=8, moe_a2a_overlap=True)
    lm = next(f for f in exporter("megatron").export(job, None, ExportContext()).files if f.name == "megatron_lm.sh")
    assert "--overlap-moe-expert-parallel-comm" in _lm_args(lm.text)


def test_torchtitan_export_takes_expert_tp_1_or_tp():
    job = job_of(model="qwen3-30b-a3b", framework="torchtitan", num_gpus=16, nodes=2, tp=4, ep=4, etp=2,
                 fsdp="full", seq_len=4096)
    with pytest.raises(TrainplanError, match="expert tensor parallel 1 or tp \\(4\\), not 2"):
        exporter("torchtitan").export(job, None, ExportContext())
