"""Launch lines read with --from (importers/launch.py): GPU and node counts, and the configs they name."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.errors import TrainplanError
from trainplan.importers import launch, read_config
from trainplan.importers.base import Origin
from trainplan.importers.merge import from_configs
from trainplan.job.options import JobOptions

DIR = Path(__file__).parent / "fixtures" / "configs" / "launch"
TUNE = Path(__file__).parent / "fixtures" / "configs" / "torchtune"


def unread(opts: JobOptions) -> dict:
    return {u.key: u.value for u in opts.unread}


def included(opts: JobOptions) -> set[str]:
    return {Path(p).name for p in opts.configs}


def test_torchrun_two_nodes_with_deepspeed_json():
    o = options(DIR / "torchrun_two_nodes.sh")
    assert (o.num_gpus, o.nodes) == (16, 2)
    assert (o.model, o.framework, o.zero) == ("meta-llama/Llama-3.1-8B", "deepspeed", 3)
    assert (o.batch_size, o.grad_accum, o.seq_len, o.precision, o.grad_ckpt, o.epochs) == (4, 2, 4096, "bf16", "full", 2.0)
    assert included(o) == {"torchrun_two_nodes.sh", "ds_zero3.json"}


def test_deepspeed_hostfile():
    o = options(DIR / "deepspeed_hostfile.sh")
    assert (o.num_gpus, o.nodes) == (16, 2)       # --num_nodes 2: the first two hosts of three, 8 slots each
    assert (o.framework, o.zero, o.batch_size, o.grad_accum) == ("deepspeed", 3, 2, 8)
    assert {"hostfile", "ds_zero3.json"} <= included(o)
    every = from_configs([f"deepspeed --hostfile {DIR / 'hostfile'} --num_gpus 4 train.py"], JobOptions(model=""), {})
    assert (every.num_gpus, every.nodes) == (12, 3)


def test_accelerate_launch_flags_over_the_yaml():
    o = options(DIR / "accelerate_launch.sh")
    assert (o.num_gpus, o.nodes) == (16, 2)                 # flags win over num_processes: 8 in fsdp2.yaml
    assert (o.framework, o.fsdp, o.fsdp_version, o.precision, o.grad_ckpt) == ("fsdp", "full", 2, "bf16", "full")
    assert (o.model, o.batch_size, o.grad_accum, o.seq_len) == ("meta-llama/Llama-3.1-8B", 2, 4, 2048)
    assert "fsdp2.yaml" in included(o)


def test_accelerate_launch_flags_only():
    line = ("accelerate launch --use_deepspeed --zero_stage 3 --offload_optimizer_device cpu --num_processes 8 "
            "--mixed_precision bf16 train.py")
    o = from_configs([line], JobOptions(model=""), {})
    assert (o.framework, o.zero, o.offload, o.num_gpus, o.precision) == ("deepspeed", 3, "optimizer", 8, "bf16")
    assert "--config_file" in unread(o)


def test_llamafactory_cli_overrides():
    o = options(DIR / "llamafactory_cli.sh")
    assert (o.num_gpus, o.nodes, o.framework) == (4, 1, "llamafactory")
    assert (o.batch_size, o.seq_len, o.lora_rank, o.grad_accum) == (2, 4096, 16, 8)   # overrides over the YAML
    assert o.lora_alpha == 32.0            # LLaMA-Factory's default 2 x rank, of the overridden rank
    assert o.zero == 3 and {"lf_lora_sft.yaml", "ds_zero3.json"} <= included(o)


def test_tune_run_distributed_and_single_device(capsys):
    o = options(DIR / "tune_run.sh")
    assert (o.num_gpus, o.fsdp, o.framework, o.model) == (8, "full", "torchtune", "llama-3.1-70b")
    single = f"tune run lora_finetune_single_device --config {TUNE / 'llama3_1_8B_lora_single_device.yaml'} " \
             "tokenizer.max_seq_len=2048 batch_size=4"
    s = from_configs([single], JobOptions(model=""), {})
    assert (s.num_gpus, s.fsdp, s.seq_len, s.batch_size, s.method) == (1, "none", 2048, 4, "lora")
    a = est(capsys, "--from", single)
    b = est(capsys, "--model", "llama-3.1-8b", "--method", "lora", "--framework", "torchtune", "--precision",
            "bf16-pure", "--lora-rank", "8", "--lora-alpha", "16", "--lora-dropout", "0", "--lora-targets",
            "q_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "--batch-size", "4", "--grad-accum", "8",
            "--seq-len", "2048", "--grad-ckpt", "full", "--loss", "chunked", "--optimizer", "adamw-fused")
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]
    builtin = from_configs(["tune run --nproc_per_node 4 lora_finetune_distributed --config llama3_1/8B_lora"],
                           JobOptions(model=""), {})
    assert (builtin.num_gpus, builtin.method, builtin.fsdp) == (4, "lora", "full")
    assert unread(builtin) == {"--config": "llama3_1/8B_lora"}


def test_torchtitan_run_train_sh(tmp_path):
    o = options(DIR / "run_train.sh")
    assert (o.num_gpus, o.tp, o.max_steps, o.grad_ckpt, o.model) == (16, 2, 100, "full", "llama-3.1-8b")
    assert unread(o) == {}     # NGPU=16 resolves data_parallel_shard_degree -1 to 8
    (tmp_path / "go.sh").write_text(f"CONFIG_FILE={Path(__file__).parent / 'fixtures/configs/torchtitan/llama3_8b.toml'}"
                                    " ./run_train.sh\n")
    default = options(tmp_path / "go.sh")
    assert default.num_gpus == 8
    assert next(s for s in default.provenance if s.field == "num_gpus").origin is Origin.FRAMEWORK_DEFAULT


def test_script_line_estimate_equals_flags(capsys):
    line = ("CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --standalone --nproc-per-node=4 train.py "
            "--model_name_or_path meta-llama/Llama-3.1-8B --per_device_train_batch_size 2 "
            "--gradient_accumulation_steps 4 --bf16 --gradient_checkpointing --max_seq_length 2048 "
            "--optim adamw_torch_fused --num_train_epochs 1 --learning_rate 1e-5 --output_dir out")
    o = from_configs([line], JobOptions(model=""), {})
    assert (o.num_gpus, o.nodes, o.batch_size, o.grad_accum, o.precision, o.grad_ckpt) == (4, 1, 2, 4, "bf16", "full")
    a = est(capsys, "--from", line)
    b = est(capsys, "--model", "meta-llama/Llama-3.1-8B", "--num-gpus", "4", "--batch-size", "2", "--grad-accum", "4",
            "--precision", "bf16", "--grad-ckpt", "full", "--seq-len", "2048", "--optimizer", "adamw-fused",
            "--framework", "hf", "--attention", "sdpa", "--loss", "full")
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]


def test_env_counts_and_unread():
    o = from_configs(["CUDA_VISIBLE_DEVICES=0,1 deepspeed train.py --deepspeed missing.json"], JobOptions(model=""), {})
    assert o.num_gpus == 2
    gpu = from_configs(["torchrun --nnodes 1:4 --nproc_per_node gpu train.py"], JobOptions(model=""), {})
    assert set(unread(gpu)) >= {"--nproc_per_node", "--nnodes"}
    assert gpu.num_gpus == 1


def test_swift_lines_are_not_mine():
    assert launch.detect(["NPROC_PER_NODE=2", "swift", "sft", "--model", "Qwen/Qwen2.5-7B"], "x") == 0
    assert launch.detect(["megatron", "sft", "--model", "x"], "x") == 0
    assert launch.detect(["torchrun", "train.py"], "x") > 0


def test_flags_override_the_line():
    o = options(DIR / "torchrun_two_nodes.sh", num_gpus=32, nodes=4)
    assert (o.num_gpus, o.nodes, o.batch_size) == (32, 4, 4)


@pytest.mark.parametrize("line, needle", [
    ("accelerate config", "only `accelerate launch"),
    ("tune ls", "only `tune run"),
    ("llamafactory-cli chat x.yaml", "only `llamafactory-cli train"),
    ("torchrun --nproc_per_node eight train.py", "--nproc_per_node must be an integer"),
])
def test_bad_lines(line, needle):
    with pytest.raises(TrainplanError, match=needle):
        read_config(line)


def test_bad_hostfile_names_it(tmp_path):
    (tmp_path / "hosts").write_text("worker-1 slots=8\nworker-2 8 gpus\n")
    (tmp_path / "run.sh").write_text("deepspeed --hostfile hosts train.py\n")
    with pytest.raises(TrainplanError) as err:
        read_config(str(tmp_path / "run.sh"))
    assert "hosts" in str(err.value) and "bad entry" in str(err.value) and str(tmp_path / "run.sh") in str(err.value)


def test_override_helpers():
    from trainplan.importers import torchtitan, torchtune

    assert torchtune.apply_overrides({"a": {"b": 1}, "c": 2}, ["a.b=3", "~c", "d.e=true"], "x") == \
        {"a": {"b": 3}, "d": {"e": True}}
    merged, rest = torchtitan.apply_overrides({"training": {"steps": 10}}, [
        "--training.steps", "20", "--compile.enable", "--job.config_file", "x.toml", "--model.no-print_after_conversion"],
        "x")
    assert merged == {"training": {"steps": 20}, "compile": {"enable": True},
                      "model": {"print_after_conversion": False}}
    assert rest == ["--job.config_file", "x.toml"]
    old = from_configs(["python -m torch.distributed.launch --nproc_per_node 2 --use_env train.py --bf16"],
                       JobOptions(model=""), {})
    assert (old.num_gpus, old.precision) == (2, "bf16")
    # interpreter flags before -m (BigScience's `python -u -m torch.distributed.run`): still torchrun's ranks
    unbuffered = from_configs(["python -u -m torch.distributed.run --nproc_per_node 4 train.py --bf16"],
                              JobOptions(model=""), {})
    assert (unbuffered.num_gpus, unbuffered.precision) == (4, "bf16")


def test_cuda_launch_blocking_in_the_environment_is_read(capsys):
    line = ("CUDA_LAUNCH_BLOCKING=1 torchrun --standalone --nproc-per-node=2 train.py "
            "--model_name_or_path meta-llama/Llama-3.1-8B --per_device_train_batch_size 2 --bf16 "
            "--max_seq_length 2048 --output_dir out")
    o = from_configs([line], JobOptions(model=""), {})
    assert o.launch_blocking is True and o.num_gpus == 2
    src = next(s for s in o.provenance if s.field == "launch_blocking")
    assert (src.key, src.raw, src.origin) == ("CUDA_LAUNCH_BLOCKING", "1", Origin.FILE)
    off = from_configs(["CUDA_LAUNCH_BLOCKING=0 " + line.split(" ", 1)[1]], JobOptions(model=""), {})
    assert off.launch_blocking is False
    threads = from_configs(["OMP_NUM_THREADS=8 " + line.split(" ", 1)[1]], JobOptions(model=""), {})
    assert threads.cpu_threads_per_rank == 8 and threads.launch_blocking is None
    blocked = est(capsys, "--from", line)
    plain = est(capsys, "--from", line.split(" ", 1)[1])
    assert blocked["time"]["step_s"] > plain["time"]["step_s"]


def test_a_script_with_variables_and_setup_commands_reads_its_training_command():
    """The training command as bash runs it: $VARS and ${VARS} expanded, the `if` branch taken, the
    exported CUDA_VISIBLE_DEVICES in its environment; `pip install`, data preparation before and the
    evaluation after are not the training command, nor are `nohup` and the redirections."""
    o = options(DIR / "script_with_variables.sh")
    assert (o.model, o.framework, o.zero, o.num_gpus) == ("meta-llama/Llama-3.1-8B", "deepspeed", 3, 8)
    assert (o.batch_size, o.grad_accum, o.precision, o.grad_ckpt, o.epochs) == (4, 2, "bf16", "full", 2.0)
    assert included(o) == {"script_with_variables.sh", "ds_zero3.json"}


def test_an_exported_process_count_reaches_the_trainer_it_launches():
    """ms-swift reads NPROC_PER_NODE from its environment: exported on a line of its own, it counts; the
    `swift infer` after training is not read."""
    o = options(DIR / "swift_exported_nproc.sh")
    assert (o.model, o.framework, o.method, o.num_gpus, o.zero) == ("Qwen/Qwen2.5-7B-Instruct", "swift", "lora", 4, 2)
    assert (o.batch_size, o.grad_accum, o.seq_len) == (2, 8, 2048)


def test_a_single_gpu_script_after_pip_installs_reads_the_python_training_script():
    o = options(DIR / "single_gpu_python.sh")
    assert (o.model, o.num_gpus, o.batch_size, o.grad_accum, o.grad_ckpt) == ("Qwen/Qwen2-7B", 1, 1, 16, "full")


def test_a_script_that_runs_no_training_is_refused_in_one_line(tmp_path):
    script = tmp_path / "setup.sh"
    script.write_text("MODEL=x\npip install -r requirements.txt\necho $MODEL\n", encoding="utf-8")
    with pytest.raises(TrainplanError, match="not a training config"):
        options(script)


def test_fastchat_model_max_length_is_the_sequence_length(tmp_path):
    """FastChat's (and stanford_alpaca's) train.py caps the tokenizer with a TrainingArguments field of its
    own, model_max_length, padding every sample to it (fastchat/train/train.py, padding="max_length")."""
    script = tmp_path / "train_vicuna.sh"
    script.write_text("torchrun --nproc_per_node=4 fastchat/train/train_mem.py --model_name_or_path "
                      "lmsys/vicuna-7b-v1.5 --bf16 True --per_device_train_batch_size 2 --model_max_length 2048 "
                      "--gradient_checkpointing True --output_dir out\n", encoding="utf-8")
    o = options(script)
    assert (o.seq_len, o.num_gpus, o.batch_size) == (2048, 4, 2)


def test_a_script_argument_named_like_a_sequence_cap_is_listed_not_dropped(tmp_path):
    """An unknown script's own `--max_len` may set the sequence length: it is listed among the keys that
    matter but were not used (with what to do), not counted among those that change nothing."""
    script = tmp_path / "train.sh"
    script.write_text("torchrun --nproc_per_node 2 my_train.py --model_name_or_path Qwen/Qwen2-7B --max_len 3072 "
                      "--max_source_length 512 --group_by_length True --output_dir o\n", encoding="utf-8")
    o = options(script)
    assert set(unread(o)) == {"max_len", "max_source_length"}
    assert unread(o)["max_len"] == 3072


@pytest.mark.parametrize(("line", "statements"), [
    ("clear; srun python x.py", ["clear", " srun python x.py"]),
    ('echo "a;b"; torchrun --nproc_per_node 2 t.py', ['echo "a;b"', " torchrun --nproc_per_node 2 t.py"]),
    ("A='x;y'; B=2", ["A='x;y'", " B=2"]),
    ("if [[ $A == 1 ]]; then", ["if [[ $A == 1 ]]; then"]),          # a control line: _branch reads its `;`
    ("torchrun t.py  # later; not a statement", ["torchrun t.py  "]),
    ("echo \\; done", ["echo \\; done"]),                            # an escaped `;` is a word
])
def test_a_line_is_split_into_its_statements(line, statements):
    from trainplan.importers.shell import _statements
    assert _statements(line) == statements


def test_a_batch_script_is_read_by_its_shebang_or_slurm_name(tmp_path):
    text = "#!/usr/bin/env bash\n#SBATCH --nodes=2\ncd /work; torchrun --nproc_per_node 4 --nnodes 2 train.py " \
           "--model_name_or_path meta-llama/Llama-2-7b-hf --per_device_train_batch_size 2\n"
    for name in ("job", "job.slurm", "job.sbatch"):
        path = tmp_path / name
        path.write_text(text)
        o = options(path)
        assert (o.num_gpus, o.nodes, o.batch_size) == (8, 2, 2), name


@pytest.mark.parametrize(("first", "shell"), [
    ("#!/bin/bash", True), ("#!/bin/bash -e", True), ("#!/bin/bash -ex", True), ("#! /bin/sh -x", True),
    ("#!/usr/bin/env bash", True), ("#!/usr/bin/env -S bash -e", True), ("#!/usr/bin/env FOO=1 zsh", True),
    ("#!/usr/bin/env python3", False), ("#!/usr/bin/python -u", False), ("#!/bin/bash-like", False), ("#!", False),
])
def test_a_shebang_names_its_interpreter_in_its_first_word(first, shell):
    # the interpreter is the first word (what follows are its options); env runs its first word that is no option
    from trainplan.importers.read import _shebang_shell
    assert _shebang_shell(first + "\ntorchrun t.py\n") is shell


def test_an_option_whose_value_the_script_left_empty_takes_none():
    # `--master_addr $(scontrol ...)` expands to nothing here: the next option is not its value
    opts, rest = launch._options(["--nproc_per_node", "4", "--master_addr", "--master_port", "6000", "t.py"], set())
    assert opts == {"nproc_per_node": "4", "master_addr": True, "master_port": "6000"} and rest == ["t.py"]


def test_an_environment_value_may_span_lines():
    env, words = launch._command(["CMD=a\nb", "torchrun", "t.py"])
    assert env == {"CMD": "a\nb"} and words == ["torchrun", "t.py"]
