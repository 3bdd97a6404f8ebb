"""`trainplan export` (DeepSpeed, accelerate, HF TrainingArguments, LLaMA-Factory, launch lines): every
file read back with `--from` gives the same Job (setup, layout, ZeRO/FSDP knobs) and the same estimate,
and the frameworks' own parsers accept the files (the `frameworks` tests: DeepSpeed's DeepSpeedConfig,
accelerate's load_config_from_file, transformers' HfArgumentParser and HfTrainerDeepSpeedConfig,
LLaMA-Factory's argument dataclasses read as text from its 0.9.5 release with tools/framework_sources.py).
A framework that is not installed fails those tests (the `frameworks` extra), it does not skip them."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from trainplan.cli import build_parser, main
from trainplan.cli.flags import options_from_args
from trainplan.errors import TrainplanError
from trainplan.estimation import estimate
from trainplan.export import write
from trainplan.export.write import build_export, write_export
from trainplan.job.resolve import resolve_job
from trainplan.memory.sharding import ZeroConfig, fsdp_for
from trainplan.units import GIB

ROOT = Path(__file__).resolve().parents[1]


def job_of(argv: list[str]):
    """The Job `trainplan estimate ARGV` resolves (no calibration, no price: the setup is compared)."""
    args = build_parser("estimate").parse_args(["estimate", *argv])
    return resolve_job(options_from_args(args), calibration=None, priced=False)


def exported(argv: list[str], tmp_path: Path, formats: str | None = None) -> tuple[object, object, Path]:
    job = job_of(argv)
    exp = build_export(job, estimate(job), formats)
    out = tmp_path / "export"
    write_export(exp, str(out))
    return job, exp, out


def assert_same_job(job, back) -> None:
    assert back.setup == job.setup
    assert back.layout == job.layout
    assert (back.zero or ZeroConfig()) == (job.zero or ZeroConfig())
    assert (back.fsdp or fsdp_for(back.setup.framework)) == (job.fsdp or fsdp_for(job.setup.framework))
    a, b = estimate(job), estimate(back)
    assert b.memory.device_bytes == a.memory.device_bytes
    assert b.time.step_s == a.time.step_s


# (job flags, --format or None, the file read back, the flags that are not that file's business)
H100 = ["--gpu", "h100"]
ROUND_TRIPS = {
    # LLaMA-Factory: the launch line reads the YAML, the YAML the DeepSpeed JSON; the GPU type is the flag's
    "lf-full-zero3-2x8": (["--model", "llama-3.1-70b", "--method", "full", "--framework", "llamafactory", "--zero", "3",
                           "--offload", "optimizer", "--num-gpus", "16", "--nodes", "2", *H100, "--grad-accum", "2"],
                          None, "launch.sh", H100),
    "lf-full-zero3-offload-all-buckets": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "llamafactory",
                                           "--zero", "3", "--offload", "all", "--num-gpus", "8", *H100,
                                           "--reduce-bucket-size", "auto", "--prefetch-bucket-size", "auto",
                                           "--param-persistence-threshold", "auto"], None, "launch.sh", H100),
    "lf-lora-zero2-offload": (["--model", "llama-3.1-8b", "--method", "lora", "--lora-rank", "32", "--lora-targets",
                               "all-linear", "--framework", "llamafactory", "--zero", "2", "--offload", "optimizer",
                               "--num-gpus", "8", *H100, "--seq-len", "4096", "--batch-size", "2"],
                              None, "launch.sh", H100),
    "lf-qlora-1gpu": (["--model", "qwen2.5-7b", "--method", "qlora", "--lora-targets", "q_proj,k_proj,v_proj,o_proj",
                       "--lora-dropout", "0.1", "--framework", "llamafactory", *H100, "--batch-size", "4",
                       "--grad-ckpt", "none"], None, "llamafactory.yaml", H100),
    "lf-freeze-bottom": (["--model", "llama-3.1-8b", "--method", "freeze", "--freeze-layers", "-4", "--framework",
                          "llamafactory", "--num-gpus", "2", *H100, "--liger", "--loss", "fused"],
                         None, "launch.sh", H100),
    "lf-full-fsdp": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "llamafactory", "--fsdp", "full",
                      "--num-gpus", "8", *H100], None, "launch.sh", H100),
    "lf-orpo-lora": (["--model", "llama-3.1-8b", "--method", "lora", "--lora-targets", "all-linear", "--framework",
                     "llamafactory", "--stage", "orpo", "--num-gpus", "4", *H100], None, "launch.sh", H100),
    "lf-badam": (["--model", "llama-3.1-8b", "--method", "full", "--optimizer", "badam", "--framework", "llamafactory",
                  *H100], None, "llamafactory.yaml", H100),
    # DeepSpeed on its own: concrete batch triple and precision; the model and the run are the script's
    "ds-zero2": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "deepspeed", "--zero", "2",
                  "--num-gpus", "8", *H100, "--batch-size", "2", "--grad-accum", "4"],
                 "deepspeed,launch", "launch.sh", [*H100, "--model", "llama-3.1-8b"]),
    "ds-zero3-offload-params-bf16-pure": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "deepspeed",
                                           "--zero", "3", "--offload", "params", "--precision", "bf16-pure",
                                           "--num-gpus", "8", *H100], "deepspeed", "ds_config.json",
                                          [*H100, "--model", "llama-3.1-8b", "--num-gpus", "8"]),
    "ds-lora-zero3": (["--model", "llama-3.1-8b", "--method", "lora", "--lora-targets", "all-linear", "--framework",
                       "deepspeed", "--zero", "3", "--num-gpus", "8", *H100], "deepspeed,launch", "launch.sh",
                      [*H100, "--model", "llama-3.1-8b", "--method", "lora", "--lora-targets", "all-linear"]),
    # HF TrainingArguments (+ DeepSpeed / FSDP); sequence length and LoRA are the script's
    "hf-ddp": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "hf", "--num-gpus", "8", *H100,
                "--batch-size", "2", "--grad-accum", "4", "--precision", "bf16"], None, "launch.sh", H100),
    "hf-deepspeed-zero3-2x8": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "deepspeed", "--zero",
                                "3", "--num-gpus", "16", "--nodes", "2", *H100, "--seq-len", "4096", "--grad-ckpt",
                                "full"], None, "launch.sh", [*H100, "--seq-len", "4096"]),
    "hf-fsdp-full": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "hf", "--fsdp", "full",
                      "--num-gpus", "8", *H100, "--grad-ckpt", "full"], None, "launch.sh", H100),
    "hf-fsdp-hybrid-2x8": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "hf", "--fsdp", "hybrid",
                            "--num-gpus", "16", "--nodes", "2", *H100], None, "launch.sh", H100),
    "hf-lora": (["--model", "llama-3.1-8b", "--method", "lora", "--lora-targets", "all-linear", "--framework", "hf",
                 "--num-gpus", "4", *H100, "--grad-ckpt", "full"], None, "hf_args.json",
                [*H100, "--num-gpus", "4", "--method", "lora", "--lora-targets", "all-linear"]),
    "hf-qlora": (["--model", "llama-3.1-8b", "--method", "qlora", "--lora-targets", "all-linear", "--framework", "hf",
                  *H100], None, "launch.sh", [*H100, "--method", "qlora", "--lora-targets", "all-linear"]),
    # accelerate: FSDP2, HSDP as parallelism_config, the DeepSpeed plugin with the JSON
    "acc-fsdp2-2x8": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "fsdp", "--fsdp", "full",
                       "--num-gpus", "16", "--nodes", "2", *H100, "--grad-ckpt", "full", "--no-reshard-after-forward"],
                      None, "launch.sh", [*H100, "--model", "llama-3.1-8b"]),
    "acc-fsdp2-hybrid-offload": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "fsdp", "--fsdp",
                                  "hybrid", "--offload", "all", "--num-gpus", "16", "--nodes", "2", *H100],
                                 None, "accelerate.yaml", [*H100, "--model", "llama-3.1-8b"]),
    "acc-deepspeed-hf": (["--model", "llama-3.1-8b", "--method", "full", "--framework", "deepspeed", "--zero", "2",
                          "--num-gpus", "8", *H100], "accelerate,hf,deepspeed,launch", "launch.sh", H100),
}


@pytest.mark.parametrize("case", list(ROUND_TRIPS), ids=list(ROUND_TRIPS))
def test_round_trip(case, tmp_path):
    argv, formats, root, extra = ROUND_TRIPS[case]
    job, _exp, out = exported(argv, tmp_path, formats)
    back = job_of(["--from", str(out / root), *extra])
    assert_same_job(job, back)


def test_round_trip_peft_default_targets_become_explicit(tmp_path):
    """LLaMA-Factory has no "peft's default targets": the export writes them out (q_proj,v_proj for
    Llama, model/params.py DEFAULT_LORA_TARGETS), so the trainable parameters, memory and time agree."""
    argv = ["--model", "llama-3.1-8b", "--method", "lora", "--framework", "llamafactory", *H100]
    job, exp, out = exported(argv, tmp_path)
    lf = yaml.safe_load((out / "llamafactory.yaml").read_text())
    assert lf["lora_target"] == "q_proj,v_proj"
    assert any("peft's default" in n for n in exp.notes)
    back = job_of(["--from", str(out / "llamafactory.yaml"), *H100])
    assert back.setup.lora.targets == ("q_proj", "v_proj")
    a, b = estimate(job), estimate(back)
    assert (b.trainable_params, b.memory.device_bytes, b.time.step_s) == (a.trainable_params, a.memory.device_bytes,
                                                                          a.time.step_s)


def test_hf_trainer_with_zero_reads_back_as_the_deepspeed_engine(tmp_path):
    """--framework hf --zero 3: the HF Trainer handing the model to DeepSpeed reads back as framework
    deepspeed (importers/hf.py); the memory is the same (memory/engine.py applies the engine regime)."""
    argv = ["--model", "llama-3.1-8b", "--method", "full", "--framework", "hf", "--zero", "3", "--num-gpus", "8", *H100]
    job, exp, out = exported(argv, tmp_path)
    assert any("reads back as --framework deepspeed" in n for n in exp.notes)
    back = job_of(["--from", str(out / "launch.sh"), *H100])
    assert str(back.setup.framework) == "deepspeed" and back.layout == job.layout
    assert estimate(back).memory.device_bytes == estimate(job).memory.device_bytes


# ---------------------------------------------------------------------------------------------
# the files themselves: values derived by hand from the job


def test_deepspeed_json_values(tmp_path):
    argv = ["--model", "llama-3.1-8b", "--method", "full", "--framework", "deepspeed", "--zero", "3", "--offload",
            "all", "--num-gpus", "16", "--nodes", "2", *H100, "--batch-size", "2", "--grad-accum", "4",
            "--ulysses", "2", "--overlap-comm"]
    job, exp, out = exported(argv, tmp_path, "deepspeed,launch")
    ds = json.loads((out / "ds_config.json").read_text())
    # 16 GPUs / Ulysses 2 = 8 data-parallel ranks: 2 x 4 x 8
    assert (ds["train_micro_batch_size_per_gpu"], ds["gradient_accumulation_steps"], ds["train_batch_size"]) == (2, 4, 64)
    assert ds["sequence_parallel_size"] == 2
    assert ds["bf16"] == {"enabled": True} and ds["fp16"]["enabled"] is False
    z = ds["zero_optimization"]
    assert z["stage"] == 3 and z["offload_optimizer"]["device"] == "cpu" and z["offload_param"]["device"] == "cpu"
    assert z["overlap_comm"] is True and z["reduce_bucket_size"] == 500_000_000   # DeepSpeed's default, given
    assert (out / "hostfile").read_text().splitlines()[1:] == ["node0 slots=8", "node1 slots=8"]
    assert exp.commands == (("deepspeed \\\n  --hostfile hostfile \\\n  --num_nodes 2 \\\n  --num_gpus 8 \\\n"
                            "  --master_addr $MASTER_ADDR \\\n  --master_port 29500 \\\n  train.py \\\n"
                            "  --deepspeed ds_config.json"),)
    back = job_of(["--from", str(out / "launch.sh"), *H100, "--model", "llama-3.1-8b"])
    assert_same_job(job, back)


def test_llamafactory_yaml_values(tmp_path):
    argv = ["--model", "llama-3.1-8b", "--method", "qlora", "--lora-rank", "64", "--lora-alpha", "16",
            "--lora-targets", "all-linear", "--quant", "fp4", "--framework", "llamafactory", *H100, "--seq-len", "8192",
            "--packing", "--epochs", "2", "--attention", "flash"]
    _job, exp, out = exported(argv, tmp_path)
    lf = yaml.safe_load((out / "llamafactory.yaml").read_text())
    assert lf["finetuning_type"] == "lora" and lf["quantization_bit"] == 4 and lf["quantization_type"] == "fp4"
    assert lf["double_quantization"] is False       # LLaMA-Factory's default is True: written out
    assert (lf["lora_rank"], lf["lora_alpha"], lf["lora_target"]) == (64, 16, "all")
    assert lf["cutoff_len"] == 8193 and lf["packing"] is True    # packing takes one token off cutoff_len
    assert lf["num_train_epochs"] == 2.0 and lf["flash_attn"] == "fa2" and lf["template"] == "llama3"
    assert "deepspeed" not in lf and lf["bf16"] is True
    assert exp.commands == ("FORCE_TORCHRUN=1 \\\n  NPROC_PER_NODE=1 \\\n  llamafactory-cli train \\\n  llamafactory.yaml",)


def test_header_states_the_plan(tmp_path):
    argv = ["--model", "llama-3.1-8b", "--method", "full", "--framework", "deepspeed", "--zero", "3", "--num-gpus",
            "16", "--nodes", "2", *H100, "--samples", "10000", "--price-per-gpu-hour", "2.5"]
    args = build_parser("estimate").parse_args(["estimate", *argv])
    job = resolve_job(options_from_args(args), calibration=None)
    est = estimate(job)
    exp = build_export(job, est, None)
    text = exp.header
    assert f"{est.memory.device_bytes / GIB:.1f} GiB per GPU expected" in text
    assert f"of {est.memory.usable_bytes / GIB:.1f} GiB usable" in text
    assert "2 node(s) x 8 H100" in text and "DeepSpeed ZeRO-3" in text
    assert f"{est.time.step_s:.2f} s per optimizer step" in text
    assert f"{est.cost.total:,.2f} USD at 2.5 USD/GPU-hour" in text
    assert "YOUR_DATASET" in text and "$MASTER_ADDR" in text and "hostfile" in text
    launch = next(f for f in exp.files if f.name == "launch.sh").text
    assert launch.startswith("#!/usr/bin/env bash\n# Exported by `trainplan export`")
    hf = next(f for f in exp.files if f.name == "hf_args.json").text
    json.loads(hf)    # JSON takes no comment block


# ---------------------------------------------------------------------------------------------
# the command line


def test_cli_prints_writes_refuses_overwrite(tmp_path, capsys):
    flags = ["export", "--model", "llama-3.1-8b", "--method", "lora", "--framework", "llamafactory", "--zero", "2",
             "--nodes", "2", "--gpus-per-node", "4", *H100]
    assert main(flags) == 0
    printed = capsys.readouterr().out
    assert "# ---- llamafactory.yaml\n" in printed and "# ---- ds_config.json\n" in printed
    assert "NNODES=2" in printed and "NPROC_PER_NODE=4" in printed
    out = tmp_path / "run"
    assert main([*flags, "--out", str(out)]) == 0
    assert sorted(os.listdir(out)) == ["README.md", "ds_config.json", "launch.sh", "llamafactory.yaml"]
    assert os.access(out / "launch.sh", os.X_OK)
    capsys.readouterr()
    assert main([*flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainplan: error: --out") and "--force" in err and err.count("\n") == 1
    assert main([*flags, "--out", str(out), "--force", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [f["name"] for f in data["files"]] == ["llamafactory.yaml", "ds_config.json", "launch.sh"]
    assert data["estimate"]["fits"] is True and data["estimate"]["device_bytes"] > 0 and len(data["written"]) == 4


@pytest.mark.parametrize("flags, message", [
    (["--framework", "torchtune", "--zero", "3", "--num-gpus", "8", "--format", "torchtune"],
     "--format torchtune cannot run DeepSpeed ZeRO-3"),
    (["--num-gpus", "8", "--format", "nemo"], "--format 'nemo' is not one of"),
    # refused before any exporter runs: the framework's capabilities (job/validate.py)
    (["--framework", "llamafactory", "--num-gpus", "8", "--tp", "2"], "--framework llamafactory cannot run tensor parallelism"),
    (["--num-gpus", "8", "--format", "hf,llamafactory"], "two trainers' configs"),
    (["--num-gpus", "8", "--format", "deepspeed"], "the job runs no DeepSpeed ZeRO"),
    (["--framework", "llamafactory", "--zero", "3", "--num-gpus", "8", "--precision", "bf16-pure"],
     "pure_bf16 is incompatible with DeepSpeed ZeRO-3"),
    (["--framework", "unsloth"], "no exporter writes --framework unsloth"),
    (["--num-gpus", "8", "--nodes", "2", "--gpus-per-node", "8"], "is not the job's 8 GPUs"),
])
def test_cli_bad_combinations_one_line_exit_2(flags, message, capsys):
    assert main(["export", "--model", "llama-3.1-8b", *H100, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trainplan: error: ") and message in err and err.count("\n") == 1


def test_formats_default_to_the_framework():
    def names(argv):
        return write.default_formats(job_of(["--model", "llama-3.1-8b", *H100, *argv]))
    assert names(["--framework", "llamafactory", "--zero", "3", "--num-gpus", "8"]) == ("llamafactory", "deepspeed",
                                                                                           "launch")
    assert names(["--framework", "llamafactory", "--fsdp", "full", "--num-gpus", "8"]) == ("llamafactory",
                                                                                             "accelerate", "launch")
    assert names(["--framework", "hf", "--zero", "2", "--num-gpus", "8"]) == ("hf", "deepspeed", "launch")
    assert names(["--framework", "fsdp", "--fsdp", "full", "--num-gpus", "8"]) == ("accelerate", "launch")


def test_write_refuses_before_writing_anything(tmp_path):
    job = job_of(["--model", "llama-3.1-8b", "--framework", "hf", "--num-gpus", "2", *H100])
    exp = build_export(job, estimate(job), None)
    (tmp_path / "launch.sh").write_text("mine\n")
    with pytest.raises(TrainplanError, match="launch.sh exists"):
        write_export(exp, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["launch.sh"] and (tmp_path / "launch.sh").read_text() == "mine\n"


# ---------------------------------------------------------------------------------------------
# the frameworks' own parsers (the `frameworks` extra: deepspeed, accelerate, transformers)


def need(module: str):
    """The framework's module, or the test fails (never skips): CI installs the `frameworks` extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"{module} is not installed ({exc}): pip install 'trainplan[frameworks]' (see pyproject.toml)",
                    pytrace=False)


class _Mpu:
    """What DeepSpeedConfig asks a model-parallel unit: the data-parallel world size."""

    def __init__(self, dp: int) -> None:
        self.dp = dp

    def get_data_parallel_world_size(self) -> int:
        return self.dp


def deepspeed_config(data: dict, dp: int, monkeypatch):
    """deepspeed.runtime.config.DeepSpeedConfig over `data` for `dp` data-parallel ranks (its world size
    comes from the mpu once torch.distributed answers a rank)."""
    cfg = need("deepspeed.runtime.config")
    monkeypatch.setattr(cfg.dist, "get_rank", lambda *a, **k: 0)
    return cfg.DeepSpeedConfig(data, mpu=_Mpu(dp))


def hf_fill(ds: dict, **trainer) -> dict:
    """transformers' own "auto" filling (integrations/deepspeed.py trainer_config_process)."""
    integ = need("transformers.integrations.deepspeed")
    hfds = integ.HfTrainerDeepSpeedConfig(json.loads(json.dumps(ds)))
    args = SimpleNamespace(world_size=1, per_device_train_batch_size=1, gradient_accumulation_steps=1,
                           max_grad_norm=1.0, learning_rate=1e-5, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
                           weight_decay=0.0, save_on_each_node=False, fp16=False, fp16_full_eval=False, bf16=False,
                           bf16_full_eval=False)
    for k, v in trainer.items():
        setattr(args, k, v)
    hfds.trainer_config_process(args)
    return hfds.config


@dataclass
class ScriptArguments:
    """The example scripts' model arguments (run_clm.py ModelArguments) beside TrainingArguments."""

    model_name_or_path: str | None = field(default=None)
    dtype: str | None = field(default=None)


def hf_parse(path: Path, monkeypatch):
    transformers = need("transformers")
    ta = need("transformers.training_args")
    monkeypatch.setattr(ta, "is_torch_bf16_gpu_available", lambda: True)    # the machine's GPU, not the file's
    monkeypatch.chdir(path.parent)
    parser = transformers.HfArgumentParser((ScriptArguments, transformers.TrainingArguments))
    return parser.parse_json_file(path.name)


def accelerate_load(path: Path):
    config_args = need("accelerate.commands.config.config_args")
    return config_args.load_config_from_file(str(path))


def lf_fields() -> set[str]:
    """Every key LLaMA-Factory 0.9.5's argument dataclasses accept (hparams/*.py, with HF's
    Seq2SeqTrainingArguments of transformers 5.8.0 under its TrainingArguments), read as text."""
    path = ROOT / "tools" / "framework_sources.py"
    spec = importlib.util.spec_from_file_location("framework_sources", path)
    fs = sys.modules.get("framework_sources") or importlib.util.module_from_spec(spec)
    if "framework_sources" not in sys.modules:
        sys.modules["framework_sources"] = fs
        spec.loader.exec_module(fs)
    try:
        tree = fs.tree("llamafactory")
    except fs.SourceUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    out: set[str] = set()
    for cls in ("finetuning_args.FinetuningArguments", "model_args.ModelArguments", "data_args.DataArguments",
                "training_args.TrainingArguments", "generating_args.GeneratingArguments"):
        out |= set(fs.fields(tree.cls("llamafactory.hparams." + cls)))
    return out


MUST_SHOW = ["--model", "llama-3.1-70b", "--method", "full", "--framework", "llamafactory", "--zero", "3",
             "--offload", "optimizer", "--num-gpus", "16", "--nodes", "2", *H100, "--batch-size", "1",
             "--grad-accum", "2", "--samples", "50000", "--tokens-per-sample", "2048"]


@pytest.mark.frameworks
def test_must_show_70b_llamafactory_zero3_two_nodes(tmp_path, monkeypatch):
    """The issue's must-show: a 70B full fine-tune, LLaMA-Factory + DeepSpeed ZeRO-3 over 2 x 8 H100:
    the files, the frameworks' parsers accepting them, the round trip equal."""
    job, exp, out = exported(MUST_SHOW, tmp_path)
    assert sorted(os.listdir(out)) == ["README.md", "ds_config.json", "launch.sh", "llamafactory.yaml"]
    assert exp.commands == (("FORCE_TORCHRUN=1 \\\n  NNODES=2 \\\n  NODE_RANK=$NODE_RANK \\\n  NPROC_PER_NODE=8 \\\n"
                            "  MASTER_ADDR=$MASTER_ADDR \\\n  MASTER_PORT=29500 \\\n  llamafactory-cli train \\\n"
                            "  llamafactory.yaml"),)
    lf = yaml.safe_load((out / "llamafactory.yaml").read_text())
    unknown = set(lf) - lf_fields()
    assert not unknown, f"keys LLaMA-Factory's HfArgumentParser refuses: {sorted(unknown)}"
    assert (lf["finetuning_type"], lf["stage"], lf["deepspeed"], lf["bf16"]) == ("full", "sft", "ds_config.json", True)
    ds = json.loads((out / "ds_config.json").read_text())
    assert ds["train_batch_size"] == "auto" and ds["bf16"]["enabled"] == "auto"
    filled = hf_fill(ds, world_size=16, per_device_train_batch_size=lf["per_device_train_batch_size"],
                     gradient_accumulation_steps=lf["gradient_accumulation_steps"], bf16=lf["bf16"])
    assert (filled["train_micro_batch_size_per_gpu"], filled["gradient_accumulation_steps"],
            filled["train_batch_size"]) == (1, 2, 32)
    cfg = deepspeed_config(filled, 16, monkeypatch)
    assert cfg.zero_optimization_stage == 3 and cfg.bfloat16_config.enabled and cfg.train_batch_size == 32
    assert str(cfg.zero_config.offload_optimizer.device).endswith("cpu")
    assert cfg.zero_config.offload_param is None or str(cfg.zero_config.offload_param.device).endswith("none")
    back = job_of(["--from", str(out / "launch.sh"), *H100, "--samples", "50000", "--tokens-per-sample", "2048"])
    assert_same_job(job, back)
    assert estimate(back).time.total_s == estimate(job).time.total_s


@pytest.mark.frameworks
@pytest.mark.parametrize("case", ["ds-zero2", "ds-zero3-offload-params-bf16-pure"])
def test_deepspeed_config_accepts_standalone_json(case, tmp_path, monkeypatch):
    argv, formats, _, _ = ROUND_TRIPS[case]
    job, _exp, out = exported(argv, tmp_path, formats)
    data = json.loads((out / "ds_config.json").read_text())
    cfg = deepspeed_config(data, job.layout.dp, monkeypatch)
    assert cfg.zero_optimization_stage == int(job.layout.zero)
    assert cfg.train_micro_batch_size_per_gpu == job.setup.batch_size
    assert cfg.gradient_accumulation_steps == job.setup.grad_accum
    assert cfg.train_batch_size == job.setup.batch_size * job.setup.grad_accum * job.layout.dp
    assert cfg.bfloat16_config.enabled
    if case.endswith("bf16-pure"):
        assert str(cfg.zero_config.offload_param.device).endswith("cpu")
        assert cfg.bfloat16_config.bf16_master_weights_and_grads and cfg.bfloat16_config.bf16_optimizer_states


@pytest.mark.frameworks
@pytest.mark.parametrize("case", ["hf-ddp", "hf-deepspeed-zero3-2x8", "hf-fsdp-full", "hf-fsdp-hybrid-2x8", "hf-lora"])
def test_hf_argument_parser_accepts_training_arguments(case, tmp_path, monkeypatch):
    argv, formats, _, _ = ROUND_TRIPS[case]
    job, _exp, out = exported(argv, tmp_path, formats)
    script, args = hf_parse(out / "hf_args.json", monkeypatch)
    assert script.model_name_or_path == job.setup.model.hf_id
    assert args.per_device_train_batch_size == job.setup.batch_size
    assert args.gradient_accumulation_steps == job.setup.grad_accum
    assert args.bf16 is True and str(args.optim).lower().endswith("adamw_torch_fused")
    if job.layout.zero:
        ds = args.hf_deepspeed_config.config    # transformers filled the "auto" values itself
        assert ds["zero_optimization"]["stage"] == int(job.layout.zero)
        assert ds["train_micro_batch_size_per_gpu"] == job.setup.batch_size and ds["bf16"]["enabled"] is True
    if str(job.layout.fsdp) != "none":
        assert args.fsdp_config["version"] == 1
        assert args.fsdp_config["activation_checkpointing"] is (str(job.setup.grad_ckpt) == "full")


@pytest.mark.frameworks
@pytest.mark.parametrize("case", ["acc-fsdp2-2x8", "acc-fsdp2-hybrid-offload", "acc-deepspeed-hf", "lf-full-fsdp",
                                  "hf-fsdp-full"])
def test_accelerate_loads_its_config(case, tmp_path):
    argv, formats, _, _ = ROUND_TRIPS[case]
    job, _exp, out = exported(argv, tmp_path, formats)
    cfg = accelerate_load(out / "accelerate.yaml")
    assert cfg.num_processes == job.layout.num_gpus and cfg.num_machines == job.layout.nodes
    kind = str(cfg.distributed_type).split(".")[-1]
    if job.layout.zero:
        assert kind == "DEEPSPEED" and cfg.deepspeed_config["deepspeed_config_file"] == "ds_config.json"
        assert "mixed_precision" not in yaml.safe_load((out / "accelerate.yaml").read_text())   # the JSON's
    else:
        assert kind == "FSDP" and str(cfg.mixed_precision).split(".")[-1].lower() == "bf16"
        version = (job.fsdp or fsdp_for(job.setup.framework)).version
        assert int(cfg.fsdp_config["fsdp_version"]) == version
    if job.layout.nodes > 1:
        assert cfg.main_process_ip == "$MASTER_ADDR" and cfg.main_process_port == 29500
    if case == "acc-fsdp2-hybrid-offload":
        assert cfg.parallelism_config == {"parallelism_config_dp_replicate_size": 2,
                                          "parallelism_config_dp_shard_size": 8}
        assert cfg.fsdp_config["fsdp_offload_params"] is True


@pytest.mark.frameworks
@pytest.mark.parametrize("case", [c for c in ROUND_TRIPS if c.startswith("lf-")])
def test_llamafactory_keys_are_its_arguments(case, tmp_path):
    argv, formats, _, _ = ROUND_TRIPS[case]
    job, _exp, out = exported(argv, tmp_path, formats)
    lf = yaml.safe_load((out / "llamafactory.yaml").read_text())
    unknown = set(lf) - lf_fields()
    assert not unknown, f"keys LLaMA-Factory's HfArgumentParser refuses: {sorted(unknown)}"
    # choices LLaMA-Factory checks (extras/constants.py AttentionFunction, finetuning_args.py, parser.py)
    assert lf["flash_attn"] in ("auto", "disabled", "sdpa", "fa2", "fa3")
    assert lf["finetuning_type"] in ("lora", "oft", "freeze", "full")
    assert lf["stage"] in ("pt", "sft", "rm", "ppo", "dpo", "kto")
    assert not (lf.get("pure_bf16") and int(job.layout.zero) == 3)
    assert lf.get("quantization_bit") is None or lf["finetuning_type"] == "lora"


def test_plan_export_writes_the_first_row_and_it_reads_back_to_that_plan(tmp_path, capsys):
    """issue 14: `plan --export DIR` of the LLaMA-Factory 70B full fine-tune: the first row's files
    (LLaMA-Factory YAML + its DeepSpeed JSON + the multi-node launch), read back with --from on the
    plan's GPU, give the plan's own GiB per GPU."""
    out = tmp_path / "plan1"
    argv = ["plan", "--model", "llama-3.1-70b", "--method", "full", "--framework", "llamafactory",
            "--samples", "50000", "--tokens-per-sample", "2048", "--gpus", "h100", "--top", "2",
            "--export", str(out), "--export-format", "llamafactory,launch", "--json"]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    first = result["plans"][0]
    assert result["export"]["rank"] == 1
    assert {"llamafactory.yaml", "ds_config.json", "launch.sh", "README.md"} <= {p.name for p in out.iterdir()}
    launch = (out / "launch.sh").read_text()
    nodes = first["setup"]["num_gpus"] // 8
    assert f"NNODES={nodes}" in launch and "NPROC_PER_NODE=8" in launch and "llamafactory-cli train" in launch
    assert main(["estimate", "--from", str(out / "llamafactory.yaml"), "--from", str(out / "launch.sh"),
                 "--gpu", "h100", "--json"]) == 0
    back = json.loads(capsys.readouterr().out)
    assert back["memory"]["device_bytes"] == first["memory"]["device_bytes"]
    assert (back["setup"]["zero"], back["setup"]["num_gpus"]) == (first["setup"]["zero"], first["setup"]["num_gpus"])


def test_plan_export_rank_not_shown_is_one_line(tmp_path, capsys):
    code = main(["plan", "--model", "llama-2-7b", "--method", "lora", "--gpus", "h100", "--top", "1",
                 "--export", str(tmp_path / "x"), "--export-rank", "7"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--export-rank 7: no such plan is shown" in err
