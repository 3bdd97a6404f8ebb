"""ms-swift: a YAML/JSON file of `swift sft|pt|rlhf` arguments, or the command line itself
(`NPROC_PER_NODE=8 swift sft --model ... --tuner_type lora ...`, `swift sft config.yaml --lora_rank 16`,
`megatron sft --tensor_model_parallel_size 2 ...`).

Keys and defaults (modelscope/ms-swift 3602360, v4.6.0.dev0; shared/reference/framework_configs.md
section 5): swift/arguments/base_args/*.py, swift/arguments/{tuner,sft,rlhf}_args.py,
swift/trainers/arguments.py, swift/cli/main.py (parse_yaml_args: a file's keys become `--key value`,
its `ENV:` map environment variables the shell has not set; later flags win; get_torchrun_args:
NPROC_PER_NODE/NNODES launch torchrun), swift/config/*.json (the `--deepspeed zeroN` and `--fsdp fsdp2`
presets), swift/megatron/arguments/megatron_args.py. v3 spelled `tuner_type` as `train_type`; both
are read. Defaults and presets live in trainplan/job/defaults/swift.py.

The `swift sft|pt|rlhf` arguments (and the precision rule) are read in importers/swift_args.py,
`megatron sft|pt|rlhf` ones in importers/swift_megatron.py.
"""

from __future__ import annotations

import os
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import Collector, Imported, ReadContext, as_int
from trainplan.importers.swift_args import _swift
from trainplan.importers.swift_megatron import _megatron

FORMAT = "swift"
_STRONG = ("tuner_type", "train_type", "rlhf_type", "quant_bits", "attn_impl", "target_modules", "ENV",
           "sequence_parallel_size", "freeze_vit", "tensor_model_parallel_size", "global_batch_size")
_WEAK = ("lora_rank", "torch_dtype", "max_length", "dataset", "packing", "padding_free", "use_liger_kernel",
         "deepspeed", "per_device_train_batch_size", "num_train_epochs", "gradient_checkpointing", "quant_method")
_SUBCOMMANDS = ("sft", "pt", "rlhf")
_MEGATRON_ONLY = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "expert_model_parallel_size",
                  "global_batch_size", "recompute_granularity", "train_iters")


def _launcher(words: list[str]) -> int | None:
    """Index of `swift`/`megatron` after the environment assignments, when a subcommand follows."""
    for i, word in enumerate(words):
        if "=" in word and not word.startswith("-") and word.split("=")[0].isidentifier():
            continue
        if os.path.basename(word) in ("swift", "megatron") and i + 1 < len(words) and words[i + 1] in _SUBCOMMANDS:
            return i
        return None
    return None


def detect(data: Any, path: str) -> int:
    if isinstance(data, list):
        return 20 if _launcher(data) is not None else 0
    if not isinstance(data, dict) or any(k in data for k in ("model_name_or_path", "base_model")):
        return 0
    # tuner_type/train_type exist in ms-swift only: they outweigh keys other formats share (use_dora, use_galore)
    score = 10 * sum(k in data for k in _STRONG) + 2 * sum(k in data for k in _WEAK)
    score += 30 if "tuner_type" in data or "train_type" in data else 0
    score += 4 if isinstance(data.get("model"), str) else 0
    return score if score >= 12 else 0


def _flags(words: list[str]) -> dict[str, Any]:
    """`--key v1 v2 --flag --k=v` as {key: "v" | [v1, v2] | True} (HfArgumentParser: a bare flag is true)."""
    out: dict[str, list[str]] = {}
    key = None
    for word in words:
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            key = name.replace("-", "_")
            out[key] = [value] if eq else []
        elif key is not None:
            out[key].append(word)
    return {k: True if not v else v[0] if len(v) == 1 else v for k, v in out.items()}


def read(data: Any, path: str, ctx: ReadContext | None = None) -> Imported:
    ctx = ctx or ReadContext()
    c = Collector(FORMAT, path)
    env: dict[str, str] = {}
    if isinstance(data, list):
        start = _launcher(data)
        if start is None:
            raise TrainplanError(f"--from {path}: not a `swift sft|pt|rlhf` or `megatron sft|pt|rlhf` command")
        env = dict(w.split("=", 1) for w in data[:start])
        tool, sub, rest = os.path.basename(data[start]), data[start + 1], data[start + 2:]
        args: dict[str, Any] = {}
        if rest and not rest[0].startswith("-") and rest[0].lower().endswith((".yaml", ".yml", ".json")):
            args = _config_file(c, rest[0], ctx, env)
            rest = rest[1:]
        args.update(_flags(rest))                   # flags after the file win (argparse: last one)
    else:
        args = dict(data)
        file_env = args.pop("ENV", None) or {}
        if not isinstance(file_env, dict):
            raise TrainplanError(f"{path}: ENV must be a mapping of environment variables")
        env = {str(k): str(v) for k, v in file_env.items()}
        tool = "megatron" if any(k in args for k in _MEGATRON_ONLY) else "swift"
        sub = "rlhf" if "rlhf_type" in args else "sft"
    world = _gpus(c, env, tool)
    if tool == "megatron":
        _megatron(c, args, world)
    else:
        _swift(c, args, sub, world, ctx)
    return c.result()


def _config_file(c: Collector, name: str, ctx: ReadContext, env: dict[str, str]) -> dict[str, Any]:
    from trainplan.importers import _read_text, parse

    resolved = ctx.resolve_path(name)
    if resolved is None:
        c.skip("config file", name, "the file the command names is not there; only the flags are read")
        return {}
    loaded = parse(_read_text(resolved), resolved)
    if not isinstance(loaded, dict):
        raise TrainplanError(f"--from {resolved}: not a mapping of ms-swift arguments")
    c.includes.append(resolved)
    file_env = loaded.pop("ENV", None) or {}
    if not isinstance(file_env, dict):
        raise TrainplanError(f"--from {resolved}: ENV must be a mapping of environment variables")
    for k, v in file_env.items():
        env.setdefault(str(k), str(v))          # parse_yaml_args: the shell's variables win
    return loaded


def _gpus(c: Collector, env: dict[str, str], tool: str) -> int:
    nproc, nnodes = env.get("NPROC_PER_NODE"), env.get("NNODES")
    visible = [d for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    nodes = as_int(nnodes, "NNODES", c.file, minimum=1) if nnodes else 1
    if nproc:
        per_node = as_int(nproc, "NPROC_PER_NODE", c.file, minimum=1)
        c.set("num_gpus", per_node * nodes, key="NPROC_PER_NODE" + ("*NNODES" if nnodes else ""), raw=nproc,
              note="torchrun --nproc_per_node/--nnodes from the environment (swift/cli/main.py get_torchrun_args)")
        if nnodes:
            c.set("nodes", nodes, key="NNODES", raw=nnodes)
        if len(visible) > per_node:
            c.skip("CUDA_VISIBLE_DEVICES", env["CUDA_VISIBLE_DEVICES"],
                   "more visible GPUs than processes: each rank splits its model over several (MP+DDP)")
        return per_node * nodes
    if len(visible) > 1 and tool == "swift" and not nnodes:
        c.set("num_gpus", len(visible), key="CUDA_VISIBLE_DEVICES", raw=env["CUDA_VISIBLE_DEVICES"])
        c.set("device_map", "auto", key="CUDA_VISIBLE_DEVICES", raw=env["CUDA_VISIBLE_DEVICES"],
              note="one process over several GPUs: swift splits the model with device_map 'auto' "
                   "(swift/utils/env.py is_mp, swift/model/utils.py get_default_device_map)")
    return 1
