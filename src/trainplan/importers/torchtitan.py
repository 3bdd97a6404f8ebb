"""torchtitan TOML job configs (`--job.config_file x.toml`, `CONFIG_FILE=x.toml ./run_train.sh`).

Keys and defaults (pytorch/torchtitan v0.2.2, 73a0e69, 2026-02-20, the last release reading TOML;
defaults in trainplan/job/defaults/torchtitan.py): torchtitan/config/job_config.py (JobConfig sections
[model] [training] [parallelism] [activation_checkpoint] [compile] [quantize.linear.float8|mx]
[optimizer]); older files (v0.1.0 torchtitan/config_manager.py) use [float8], training.compile and
model.converters = ["float8"], and before that training.batch_size. Model flavors:
torchtitan/models/<name>/__init__.py.

Rules read from the source:
- torchtitan/distributed/parallel_dims.py: data_parallel_shard_degree -1 = world / (replicate x cp x tp x
  pp); FSDP is on when dp_shard > 1 or cp > 1 (`fsdp_enabled`); dp_replicate > 1 with it is HSDP,
  without it DDP.
- torchtitan/train.py: gradient accumulation = global_batch_size / (local_batch_size x dp_replicate x
  dp_shard) (global -1: one step); model built under set_default_dtype(training.dtype) (default fp32).
- models/llama3/infra/parallelize.py apply_fsdp: MixedPrecisionPolicy(param_dtype=mixed_precision_param
  (bf16), reduce_dtype=fp32) over the fp32 sharded parameters, so AdamW states are fp32 too;
  reshard_after_forward "default" = `not pp_enabled`; distributed/utils.py maybe_enable_amp: with TP or
  PP but no FSDP, mixed precision is off (fp32 compute); DDP or one GPU use autocast.
- distributed/activation_checkpoint.py (the modes): see importers/torchtitan_sections.py, which reads
  the precision, [activation_checkpoint], [compile] and [optimizer] sections.
"""

from __future__ import annotations

import os
import re
from typing import Any

from trainplan.enums import PipeSchedule
from trainplan.errors import TrainplanError
from trainplan.importers.base import Collector, Imported, ReadContext, as_bool, as_int
from trainplan.importers.torchtitan_sections import _D, _checkpointing, _compile, _default, _optimizer, _precision
from trainplan.job.defaults import torchtitan as titan

FORMAT = "torchtitan"
_SECTIONS = {"job", "profiling", "metrics", "model", "optimizer", "lr_scheduler", "training", "parallelism",
             "checkpoint", "activation_checkpoint", "compile", "float8", "mx", "quantize", "comm",
             "memory_estimation", "fault_tolerance", "experimental", "validation", "debug"}
_FLAVORS = {
    ("llama3", "8b"): "llama-3.1-8b", ("llama3", "70b"): "llama-3.1-70b", ("llama3", "405b"): "llama-3.1-405b",
    ("qwen3", "0.6b"): "qwen3-0.6b", ("qwen3", "1.7b"): "qwen3-1.7b", ("qwen3", "4b"): "qwen3-4b",
    ("qwen3", "8b"): "qwen3-8b", ("qwen3", "14b"): "qwen3-14b", ("qwen3", "32b"): "qwen3-32b",
    ("qwen3", "30b-a3b"): "qwen3-30b-a3b", ("qwen3", "235b-a22b"): "qwen3-235b-a22b",
    ("deepseek_v3", "16b"): "deepseek-v2-lite", ("deepseek_v3", "671b"): "deepseek-v3",
}
_FLAVOR_NOTES = {("llama3", "8b"): "torchtitan llama3 8B is Llama 3.1 8B (its shipped config loads Llama-3.1-8B)",
                 ("deepseek_v3", "16b"): "the 16B flavor has DeepSeek-V2-Lite's shape (27 layers, 64 experts top-6, "
                                         "2 shared, MLA kv_lora_rank 512)"}
_LOOPED = ("interleaved", "zbv", "dualpipe", "looped")
_TRAINING_READ = {"local_batch_size", "batch_size", "global_batch_size", "seq_len", "steps", "dtype",
                  "mixed_precision_param", "enable_cpu_offload", "compile", "data_parallel_replicate_degree",
                  "data_parallel_shard_degree", "tensor_parallel_degree", "pipeline_parallel_degree",
                  "context_parallel_degree", "expert_parallel_degree"}


def known_looped(schedule: str) -> bool:
    """A schedule with several model chunks per rank, other than ZB-V (always two)."""
    name = schedule.lower()
    return any(s in name for s in _LOOPED) and name != "zbvzerobubble"


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        return 0
    model = data["model"]
    if "flavor" not in model and "name" not in model:
        return 0
    hits = sum(isinstance(data.get(s), dict) for s in ("training", "parallelism", "activation_checkpoint", "job"))
    if not hits:
        return 0
    return 10 + hits + (2 if path.lower().endswith(".toml") else 0)


def read(data: dict, path: str, ctx: ReadContext | None = None) -> Imported:
    return read_job(data, path, ctx)


def read_job(data: dict, path: str, ctx: ReadContext | None = None, *, world: int | None = None) -> Imported:
    """The job config; `world` (GPUs the launcher starts, when known) resolves data_parallel_shard_degree -1."""
    c = Collector(FORMAT, path)
    for name, section in data.items():
        if name not in _SECTIONS or not isinstance(section, dict):
            c.ignore()
    c.set("framework", "torchtitan", key="(a torchtitan job config)",
          note="FSDP2 over fp32 sharded parameters with bf16 compute (MixedPrecisionPolicy)")
    model, training, par = (_section(c, data, s) for s in ("model", "training", "parallelism"))
    _model(c, model)
    dims = _parallel(c, par, training, data, world)
    _batch(c, training, par, dims)
    _precision(c, training, model, data, dims)
    _checkpointing(c, _section(c, data, "activation_checkpoint"))
    _compile(c, data, training)
    _default(c, "loss")
    _optimizer(c, _section(c, data, "optimizer"))
    c.ignore(sum(1 for k in training if k not in _TRAINING_READ))
    for name in ("job", "profiling", "metrics", "lr_scheduler", "checkpoint", "comm", "validation", "debug",
                 "memory_estimation", "fault_tolerance", "experimental"):
        c.ignore(len(data.get(name) or {}) if isinstance(data.get(name), dict) else 0)
    return c.result()


def _section(c: Collector, data: dict, name: str) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise TrainplanError(f"--from {c.file}: [{name}] must be a table, got {value!r}")
    return value


def _model(c: Collector, model: dict) -> None:
    name, flavor = str(model.get("name", "llama3")), str(model.get("flavor", "debugmodel"))
    base = re.sub(r"_(flex|varlen|flex_attn|varlen_attn|irope)$", "", flavor.lower())
    key = (name.lower(), base)
    if key in _FLAVORS:
        c.set("model", _FLAVORS[key], key="model.name/flavor", raw=f"{name} {flavor}", note=_FLAVOR_NOTES.get(key, ""))
        if base != flavor.lower():
            # the _flex / _varlen flavors mask attention block-causally over the documents the dataloader
            # packs into each sequence: each document attends within itself (padding-free packing); the
            # span is a document's, so --tokens-per-sample (the dataset's mean document length) sets it
            c.derived("packing", True, key="model.flavor", note="documents packed into seq_len windows")
            c.derived("padding_free", True, key="model.flavor",
                      note=f"{flavor}: flex/varlen attention with a block-causal document mask; give "
                           "--tokens-per-sample (the mean document length) for the attention span")
    else:
        c.skip("model.flavor", f"{name} {flavor}", "a model flavor trainplan has no catalog model for: give --model")
    c.ignore(sum(1 for k in model if k not in ("name", "flavor", "converters")))


def _degree(c: Collector, par: dict, training: dict, key: str, *, old: dict | None = None) -> int | None:
    """A parallel degree from [parallelism] (or, in older files, [training] / [experimental])."""
    for section in (par, training, old or {}):
        if key in section:
            return as_int(section[key], f"parallelism.{key}", c.file, minimum=-1 if "shard" in key else 1)
    return None


def _parallel(c: Collector, par: dict, training: dict, data: dict, world: int | None) -> dict[str, Any]:
    old = data.get("experimental") if isinstance(data.get("experimental"), dict) else {}
    keys = {"dp_replicate": "data_parallel_replicate_degree", "dp_shard": "data_parallel_shard_degree",
            "tp": "tensor_parallel_degree", "pp": "pipeline_parallel_degree", "cp": "context_parallel_degree",
            "ep": "expert_parallel_degree"}
    d = {k: _degree(c, par, training, v, old=old) for k, v in keys.items()}
    d = {k: (v if v is not None else (-1 if k == "dp_shard" else 1)) for k, v in d.items()}
    if d["dp_shard"] == 0 or d["dp_shard"] < -1:
        raise TrainplanError(f"--from {c.file}: parallelism.data_parallel_shard_degree must be -1 or >= 1, "
                             f"got {d['dp_shard']}")
    others = d["dp_replicate"] * d["cp"] * d["tp"] * d["pp"]
    if d["dp_shard"] == -1:
        if world:
            d["dp_shard"] = max(1, world // others)
            d["known"] = True
        else:
            d["known"] = False
            c.skip("parallelism.data_parallel_shard_degree", -1, "-1: the GPUs the launcher starts divided by "
                   f"replicate x cp x tp x pp = {others}; the file alone does not say how many (--num-gpus or "
                   "--from the launch line gives them)")
    else:
        d["known"] = True
        if not world:
            c.derived("num_gpus", others * d["dp_shard"], key="parallelism.*_degree",
                      note="dp_replicate x dp_shard x cp x tp x pp (torchtitan/distributed/parallel_dims.py)")
        elif others * d["dp_shard"] != world:
            c.skip("parallelism.*_degree", others * d["dp_shard"], f"the degrees multiply to {others * d['dp_shard']} "
                   f"but the launcher starts {world} GPUs (parallel_dims.py _validate asserts they match)")
    for k in ("tp", "pp", "cp", "ep"):
        if d[k] > 1:
            c.set(k, d[k], key=f"parallelism.{keys[k]}", raw=d[k])
    if d["ep"] > 1:      # expert tensor parallel: "no effect ... when ep = 1" (the experts follow tp)
        etp = _degree(c, par, training, "expert_tensor_parallel_degree", old=old)
        if etp is None:
            c.default("etp", 1, key="parallelism.expert_tensor_parallel_degree",
                      note="torchtitan/config/job_config.py Parallelism.expert_tensor_parallel_degree")
        else:
            c.set("etp", etp, key="parallelism.expert_tensor_parallel_degree", raw=etp)
    fsdp_on = d["dp_shard"] == -1 or d["dp_shard"] > 1 or d["cp"] > 1
    d["fsdp"] = fsdp_on
    if fsdp_on:
        hybrid = d["dp_replicate"] > 1
        c.derived("fsdp", "hybrid" if hybrid else "full", key="parallelism.data_parallel_shard_degree",
                  note="HSDP: dp_replicate groups of FSDP shards (trainplan's hybrid shards within a node)" if hybrid
                  else "FSDP2 fully_shard over the dp_shard (x cp) ranks (parallel_dims.py fsdp_enabled)")
        _default(c, "fsdp_version")
        _reshard(c, par, d["pp"] > 1)
        cpu = training.get("enable_cpu_offload")
        if cpu is not None and as_bool(cpu, "training.enable_cpu_offload", c.file):
            c.set("offload", "all", key="training.enable_cpu_offload", raw=cpu,
                  note="FSDP2 CPUOffloadPolicy: parameters, gradients and the optimizer step on the CPU")
    elif d["dp_replicate"] > 1:
        c.ignore()   # DDP: replicated weights, trainplan's default data parallelism
    # older files keep the schedule under [experimental] (torchtitan before the [parallelism] move)
    where = par if "pipeline_parallel_schedule" in par else old
    schedule = str(where.get("pipeline_parallel_schedule", "1F1B"))
    key = f"{'parallelism' if where is par else 'experimental'}.pipeline_parallel_schedule"
    if d["pp"] > 1 and "pipeline_parallel_schedule" in where:
        known = titan.schedule_named(schedule)
        # a looped schedule's stages per rank come from explicit split points / layers per stage when the
        # file gives them, else torchtitan's default of 2 (job/defaults/torchtitan LOOPED_STAGES_PER_RANK)
        split = next((k for k in ("pipeline_parallel_split_points", "pipeline_parallel_layers_per_stage")
                      if k in par or k in old), None)
        if known is None:
            c.skip(key, schedule, "a schedule trainplan has no bubble for")
        elif split is not None and known_looped(schedule):
            c.skip(key, schedule, f"a looped schedule whose stages per rank {split} sets: give --vpp and "
                   f"--pp-schedule {known.value}")
        else:
            c.set("pp_schedule", known.value, key=key, raw=schedule)
            if known_looped(schedule):
                c.default("vpp", titan.LOOPED_STAGES_PER_RANK, key=key,
                          note="multi-stage schedules: 2 stages per rank without split points "
                               "(distributed/pipeline_parallel.py)")
    async_tp = par.get("enable_async_tensor_parallel")
    if d["tp"] > 1 and async_tp is not None and as_bool(async_tp, "parallelism.enable_async_tensor_parallel", c.file):
        c.skip("parallelism.enable_async_tensor_parallel", async_tp,
               "async TP (inductor's micro-pipelined all-gather / reduce-scatter matmuls) is not modelled: the "
               "tensor-parallel collectives are timed as vanilla TP's, exposed (torchtitan measured async TP "
               "1.04-1.16x faster: benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md)")
    used = set(keys.values()) | {"fsdp_reshard_after_forward", "pipeline_parallel_schedule",
                                 "expert_tensor_parallel_degree", "pipeline_parallel_microbatch_size",
                                 "enable_async_tensor_parallel"}
    c.ignore(sum(1 for k in par if k not in used))
    return d


def _reshard(c: Collector, par: dict, pp: bool) -> None:
    policy = par.get("fsdp_reshard_after_forward")
    if policy is None:
        d = _D["reshard_after_forward"]
        c.default("reshard_after_forward", not pp, key=d.key,
                  note=f"{d.source}; " + ("with pipeline parallelism: False (no per-microbatch all-gathers)" if pp
                                          else d.note))
        return
    value = {"always": True, "never": False, "default": not pp}.get(str(policy).lower())
    if value is None:
        raise TrainplanError(f"--from {c.file}: parallelism.fsdp_reshard_after_forward must be default, always or "
                             f"never, got {policy!r}")
    c.set("reshard_after_forward", value, key="parallelism.fsdp_reshard_after_forward", raw=policy,
          note="'default' = not pp_enabled (apply_fsdp)" if str(policy).lower() == "default" else "")


def _batch(c: Collector, training: dict, par: dict, d: dict) -> None:
    key = "local_batch_size" if "local_batch_size" in training else "batch_size"
    local = as_int(training[key], f"training.{key}", c.file, minimum=1) if key in training else _D["batch_size"].value
    accum: int | None = 1
    glob = training.get("global_batch_size", -1)
    glob_n = as_int(glob, "training.global_batch_size", c.file, minimum=-1)
    if glob_n > 0:
        if d["known"]:
            per_step = local * d["dp_replicate"] * max(1, d["dp_shard"])
            if glob_n % per_step:
                c.skip("training.global_batch_size", glob, f"not a multiple of local batch x data-parallel = {per_step}")
                accum = None
            else:
                accum = glob_n // per_step
        else:
            c.skip("training.global_batch_size", glob, "the accumulation steps need the data-parallel degree "
                   "(data_parallel_shard_degree -1): give --grad-accum")
            accum = None
    pp_mb = as_int(par.get("pipeline_parallel_microbatch_size", 1), "parallelism.pipeline_parallel_microbatch_size",
                   c.file, minimum=1)
    if d["pp"] > 1:
        if local % pp_mb:
            c.skip("parallelism.pipeline_parallel_microbatch_size", pp_mb, f"does not divide the local batch {local}")
            pp_mb = local
        c.derived("batch_size", pp_mb, key="parallelism.pipeline_parallel_microbatch_size",
                  note=f"pipeline parallel: local batch {local} runs as {local // pp_mb} microbatches of {pp_mb}")
        c.derived("grad_accum", (local // pp_mb) * (accum or 1), key=f"training.{key}",
                  note="pipeline microbatches x accumulation steps")
    else:
        if key in training:
            c.set("batch_size", local, key=f"training.{key}", raw=training[key])
        else:
            _default(c, "batch_size")
        if glob_n > 0 and accum is not None:
            c.derived("grad_accum", accum, key="training.global_batch_size",
                      note="global / (local x dp_replicate x dp_shard) (torchtitan/train.py)")
        elif glob_n <= 0:
            _default(c, "grad_accum")
    for k, field_name in (("seq_len", "seq_len"), ("steps", "max_steps")):
        if k in training:
            c.set(field_name, as_int(training[k], f"training.{k}", c.file, minimum=1), key=f"training.{k}",
                  raw=training[k])
        else:
            _default(c, field_name)


def apply_overrides(data: dict, args: list[str], where: str) -> tuple[dict, list[str]]:
    """torchtitan CLI overrides (`--training.steps 50`, `--compile.enable`, `--activation_checkpoint.mode=full`)
    laid over the TOML (torchtitan/config/manager.py: CLI over file). Returns the merged dict and the words
    that were not overrides."""
    import copy

    import yaml

    merged, rest, i = copy.deepcopy(data), [], 0
    while i < len(args):
        word = args[i]
        m = re.match(r"^--([a-z_0-9]+)\.([a-z_0-9.\-]+)(?:=(.*))?$", word)
        if not m or m.group(1) == "job" and m.group(2) == "config_file":
            rest.append(word)
            i += 1
            continue
        section, key, value = m.group(1), m.group(2).replace("-", "_"), m.group(3)
        if value is None:
            if i + 1 < len(args) and not args[i + 1].startswith("--"):
                value, i = args[i + 1], i + 1
            else:
                value = "true"
        parts = key.split(".")
        if parts[-1].startswith("no_") and value == "true":
            parts[-1], value = parts[-1][3:], "false"
        try:
            parsed = yaml.safe_load(value) if value else value
        except yaml.YAMLError:
            parsed = value
        node = merged.setdefault(section, {})
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        if not isinstance(node, dict):
                raise TrainplanError(f"--from {where}: {word} overrides a value that is not a table")
        node[parts[-1]] = parsed
        i += 1
    return merged, rest


def config_file_of(args: list[str], env: dict[str, str]) -> str | None:
    """The TOML a torchtitan launch names: --job.config_file X (or =X), else CONFIG_FILE (run_train.sh)."""
    for i, word in enumerate(args):
        if word == "--job.config_file" and i + 1 < len(args):
            return args[i + 1]
        if word.startswith("--job.config_file="):
            return word.split("=", 1)[1]
    return env.get("CONFIG_FILE")


def is_torchtitan(args: list[str], script: str) -> bool:
    return "torchtitan" in script or os.path.basename(script) == "run_train.sh" or any(
        w.startswith("--job.config_file") for w in args)
