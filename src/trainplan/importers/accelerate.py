"""accelerate config YAML (`accelerate config` / `accelerate launch --config_file f.yaml`).

Keys and defaults (huggingface/accelerate 16cb6eb, 2026-07-24, shared/reference/framework_configs.md
section 7; defaults in trainplan/job/defaults/accelerate.py): src/accelerate/commands/config/config_args.py
(ClusterConfig), commands/launch.py (the YAML fills every launch argument the command line leaves out;
`fsdp_config` keys keep their `fsdp_` prefix), utils/launch.py (nproc_per_node = num_processes //
num_machines: num_processes is the total over all machines), utils/dataclasses.py (DeepSpeedPlugin,
FullyShardedDataParallelPlugin; FSDP_SHARDING_STRATEGY = FULL_SHARD, SHARD_GRAD_OP, NO_SHARD,
HYBRID_SHARD, HYBRID_SHARD_ZERO2 numbered 1..5), parallelism_config.py.

Precision: `mixed_precision: bf16` makes Accelerator.prepare_model wrap the forward in autocast over the
model's own dtype (accelerator.py `autocast_context`, `convert_outputs_to_fp32`); the weights stay as the
script loaded them. Under FSDP the trainable parameters are upcast to fp32 first (accelerator.py
prepare_model for FSDP1, utils/fsdp_utils.py fsdp2_prepare_model: "Upcast to fp32 master weights;
MixedPrecisionPolicy.param_dtype handles compute cast"), so AdamW states are fp32. Under DeepSpeed the
engine's bf16 optimizer keeps fp32 master weights (DeepSpeedPlugin.set_mixed_precision writes bf16.enabled).
An accelerate config names no model: give --model, or another --from.
"""

from __future__ import annotations

from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import Collector, Imported, ReadContext, as_bool, as_int
from trainplan.job.defaults import defaults

FORMAT = "accelerate"
_D = defaults("accelerate")
_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")
_TYPES = {"NO", "MULTI_GPU", "DEEPSPEED", "FSDP", "MEGATRON_LM", "XLA", "MULTI_CPU", "MULTI_NPU", "MULTI_XPU",
          "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_HPU", "MULTI_NEURON", "TPU"}
# top-level keys read below (the rest, such as machine_rank, main_process_ip, rdzv_backend, same_network,
# gpu_ids, downcast_bf16 and the tpu_* keys, do not change memory or time)
_READ = {"distributed_type", "num_processes", "num_machines", "mixed_precision", "fp8_config", "dynamo_config",
         "use_cpu", "deepspeed_config", "fsdp_config", "parallelism_config", "megatron_lm_config"}


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict):
        return 0
    if "distributed_type" in data and ("compute_environment" in data or "num_processes" in data):
        return 20
    if "compute_environment" in data and any(k in data for k in ("mixed_precision", "num_machines")):
        return 15
    return 0


def read(data: dict, path: str, ctx: ReadContext | None = None) -> Imported:
    c = Collector(FORMAT, path)
    kind = str(data.get("distributed_type", "NO")).upper()
    if kind not in _TYPES:
        c.skip("distributed_type", data.get("distributed_type"), "not a distributed type accelerate knows")
    _processes(c, data)
    ds = data.get("deepspeed_config") if isinstance(data.get("deepspeed_config"), dict) else {}
    ds_file = ds.get("deepspeed_config_file") if kind == "DEEPSPEED" else None
    _precision(c, data)
    dynamo = data.get("dynamo_config")
    if isinstance(dynamo, dict) and dynamo.get("dynamo_backend"):
        backend = str(dynamo["dynamo_backend"]).upper()
        c.set("compile", backend not in ("NO", "NONE"), key="dynamo_config.dynamo_backend", raw=dynamo["dynamo_backend"],
              note="torch.compile of the model through accelerate's dynamo plugin")
        c.ignore(len(dynamo) - 1)
    elif dynamo is not None:
        c.ignore()
    if as_bool(data.get("use_cpu", False), "use_cpu", path):
        c.skip("use_cpu", True, "training on the CPU is not modelled")
    if kind == "DEEPSPEED":
        _deepspeed(c, ds, ds_file, ctx)
    elif ds:
        c.ignore(len(ds))
    fsdp = data.get("fsdp_config") if isinstance(data.get("fsdp_config"), dict) else {}
    if kind == "FSDP":
        _fsdp(c, fsdp)
    elif fsdp:
        c.ignore(len(fsdp))
    _parallelism(c, data.get("parallelism_config"), kind)
    if kind == "MEGATRON_LM":
        c.skip("distributed_type", "MEGATRON_LM", "accelerate's Megatron-LM plugin: give the Megatron layout as "
               "flags (--framework megatron --tp --pp)")
    if isinstance(data.get("megatron_lm_config"), dict) and data["megatron_lm_config"]:
        c.ignore(len(data["megatron_lm_config"]))
    c.ignore(sum(1 for k in data if k not in _READ))
    return c.result()


def _processes(c: Collector, data: dict) -> None:
    machines = as_int(data.get("num_machines", 1), "num_machines", c.file, minimum=1)
    procs = data.get("num_processes")
    if "num_machines" in data:
        c.set("nodes", machines, key="num_machines", raw=data["num_machines"])
    if procs is None:
        return
    n = as_int(procs, "num_processes", c.file, minimum=-1)
    if n in (-1, 0):
        c.skip("num_processes", procs, "-1: given at launch (accelerate launch --num_processes); give --num-gpus")
    elif n % machines:
        c.skip("num_processes", procs, f"not a multiple of num_machines {machines} (it is the total over all machines)")
    else:
        c.set("num_gpus", n, key="num_processes", raw=procs,
              note="the total over all machines (utils/launch.py: nproc_per_node = num_processes // num_machines)")


def _precision(c: Collector, data: dict) -> None:
    mp = data.get("mixed_precision")
    if mp is None:
        return
    value = str(mp).lower()   # with a deepspeed_config_file, its explicit bf16/fp16 (merged after) win over this
    mapped = {"no": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8"}.get(value)
    if mapped is None:
        c.skip("mixed_precision", mp, "not one of no, fp16, bf16, fp8")
        return
    notes = {"fp32": "no autocast: the weights' own dtype (fp32 unless the script loads them in 16 bits)",
             "bf16": "autocast over the model's own (fp32) weights; FSDP upcasts trainable params to fp32",
             "fp16": "autocast with a GradScaler over the model's own (fp32) weights",
             "fp8": "FP8 matmuls (TransformerEngine/torchao/MS-AMP) under bf16 autocast"}
    c.set("precision", mapped, key="mixed_precision", raw=mp, note=notes[mapped])
    fp8 = data.get("fp8_config")
    if mapped == "fp8" and isinstance(fp8, dict) and fp8:
        c.skip("fp8_config", fp8, "the fp8 backend and recipe (te/torchao/msamp, format, amax history): trainplan "
               "models one tensorwise fp8 recipe")
    elif fp8:
        c.ignore()


def _deepspeed(c: Collector, ds: dict, ds_file: Any, ctx: ReadContext | None) -> None:
    c.set("framework", "deepspeed", key="distributed_type", raw="DEEPSPEED",
          note="the DeepSpeed engine: 16-bit weights with fp32 master weights and Adam states in the optimizer")
    if ds_file:
        included = ctx.include(str(ds_file)) if ctx is not None else None
        if included is None:
            c.skip("deepspeed_config.deepspeed_config_file", ds_file, "file not found: its ZeRO stage and offload "
                   "are not read")
        else:
            c.merge(included)
        c.ignore(sum(1 for k in ds if k != "deepspeed_config_file"))
        return
    stage = ds.get("zero_stage")
    if stage is None:
        d = _D["zero"]
        c.default("zero", d.value, key=d.key, note=d.source)
    else:
        c.set("zero", as_int(stage, "deepspeed_config.zero_stage", c.file, minimum=0), key="deepspeed_config.zero_stage",
              raw=stage)
    opt = str(ds.get("offload_optimizer_device", "none")).lower()
    par = str(ds.get("offload_param_device", "none")).lower()
    for key, dev in (("offload_optimizer_device", opt), ("offload_param_device", par)):
        if dev not in ("none", "cpu", "nvme"):
            c.skip(f"deepspeed_config.{key}", dev, "not one of none, cpu, nvme")
    devices = {d for d in (opt, par) if d in ("cpu", "nvme")}
    if devices:
        offload = "all" if opt in devices and par in devices else "optimizer" if opt in devices else "params"
        c.set("offload", offload, key="deepspeed_config.offload_optimizer_device/offload_param_device",
              raw={"offload_optimizer_device": opt, "offload_param_device": par})
        c.set("offload_device", "nvme" if "nvme" in devices else "cpu", key="deepspeed_config.offload_*_device",
              raw=sorted(devices))
    if "gradient_accumulation_steps" in ds:
        gas = ds["gradient_accumulation_steps"]
        if not (isinstance(gas, str) and gas.strip().lower() == "auto"):
            c.set("grad_accum", as_int(gas, "deepspeed_config.gradient_accumulation_steps", c.file, minimum=1),
                  key="deepspeed_config.gradient_accumulation_steps", raw=gas)
    known = {"zero_stage", "offload_optimizer_device", "offload_param_device", "gradient_accumulation_steps"}
    c.ignore(sum(1 for k in ds if k not in known))


def _strategy(value: Any, key: str, file: str) -> str:
    """An FSDP1 sharding strategy name from a name or its number (1..5)."""
    text = str(value).strip().upper()
    if text.isdigit() and 1 <= int(text) <= len(_STRATEGIES):
        return _STRATEGIES[int(text) - 1]
    if text in _STRATEGIES:
        return text
    raise TrainplanError(f"--from {file}: fsdp_config.{key} must be one of {', '.join(_STRATEGIES)} or 1-5, "
                         f"got {value!r}")


def _fsdp(c: Collector, fsdp: dict) -> None:
    c.set("framework", "fsdp", key="distributed_type", raw="FSDP",
          note="accelerate upcasts trainable parameters to fp32 and shards them; bf16 compute copies")
    if "fsdp_version" in fsdp:
        version = as_int(fsdp["fsdp_version"], "fsdp_config.fsdp_version", c.file, minimum=1)
        c.set("fsdp_version", version, key="fsdp_config.fsdp_version", raw=fsdp["fsdp_version"])
    else:
        version = _D["fsdp_version"].value
        c.default("fsdp_version", version, key=_D["fsdp_version"].key,
                  note=f"{_D['fsdp_version'].source}; {_D['fsdp_version'].note}")
    reshard = fsdp.get("fsdp_reshard_after_forward")
    strategy = fsdp.get("fsdp_sharding_strategy")
    if version == 1 and reshard is not None and not isinstance(reshard, bool) and \
            str(reshard).strip().lower() not in ("true", "false"):
        strategy = reshard if strategy is None else strategy     # FSDP1 takes a strategy name here
        reshard = None
    if strategy is not None:
        name = _strategy(strategy, "fsdp_sharding_strategy", c.file)
        if name == "NO_SHARD":
            c.set("fsdp", "none", key="fsdp_config.fsdp_sharding_strategy", raw=strategy,
                  note="NO_SHARD: replicated like DDP")
        else:
            c.set("fsdp", "hybrid" if name.startswith("HYBRID") else "full", key="fsdp_config.fsdp_sharding_strategy",
                  raw=strategy, note="SHARD_GRAD_OP = ZeRO-2-like: parameters kept gathered after forward"
                  if name.endswith(("GRAD_OP", "ZERO2")) else "")
            if reshard is None:
                c.set("reshard_after_forward", name in ("FULL_SHARD", "HYBRID_SHARD"),
                      key="fsdp_config.fsdp_sharding_strategy", raw=strategy)
    else:
        d = _D["fsdp"]
        c.default("fsdp", d.value, key=d.key, note=d.source)
    if reshard is not None:
        c.set("reshard_after_forward", as_bool(reshard, "fsdp_config.fsdp_reshard_after_forward", c.file),
              key="fsdp_config.fsdp_reshard_after_forward", raw=reshard)
    elif strategy is None:
        d = _D["reshard_after_forward"]
        c.default("reshard_after_forward", d.value, key=d.key, note=d.source)
    if "fsdp_offload_params" in fsdp and as_bool(fsdp["fsdp_offload_params"], "fsdp_config.fsdp_offload_params",
                                                 c.file):
        c.set("offload", "all", key="fsdp_config.fsdp_offload_params", raw=fsdp["fsdp_offload_params"],
              note="FSDP CPU offload moves parameters and gradients, and so the optimizer step, to the CPU")
    if "fsdp_activation_checkpointing" in fsdp:
        on = as_bool(fsdp["fsdp_activation_checkpointing"], "fsdp_config.fsdp_activation_checkpointing", c.file)
        c.set("grad_ckpt", "full" if on else "none", key="fsdp_config.fsdp_activation_checkpointing",
              raw=fsdp["fsdp_activation_checkpointing"],
              note="every wrapped transformer layer checkpointed (the script's own gradient_checkpointing also counts)")
    used = {"fsdp_version", "fsdp_reshard_after_forward", "fsdp_sharding_strategy", "fsdp_offload_params",
            "fsdp_activation_checkpointing"}
    c.ignore(sum(1 for k in fsdp if k not in used))


def _parallelism(c: Collector, pc: Any, kind: str) -> None:
    if not isinstance(pc, dict) or not pc:
        return
    size = {k: as_int(v, f"parallelism_config.{k}", c.file, minimum=1) for k, v in pc.items()
            if k.endswith("_size") and v is not None and not k.endswith("seq_length")}
    for key, field_name in (("parallelism_config_tp_size", "tp"), ("parallelism_config_cp_size", "cp"),
                            ("parallelism_config_sp_size", "ulysses")):
        if size.get(key, 1) > 1:
            c.set(field_name, size[key], key=f"parallelism_config.{key}", raw=pc[key],
                  note="DeepSpeed Ulysses sequence parallelism (sp_backend deepspeed)" if field_name == "ulysses" else "")
    if size.get("parallelism_config_dp_replicate_size", 1) > 1 and size.get("parallelism_config_dp_shard_size", 1) > 1:
        c.set("fsdp", "hybrid", key="parallelism_config.parallelism_config_dp_replicate_size",
              raw=pc["parallelism_config_dp_replicate_size"],
              note="dp_replicate x dp_shard: HSDP (trainplan's hybrid shards within a node)")
    total = 1
    for v in size.values():
        total *= v
    if total > 1 and not c.has("num_gpus"):
        c.derived("num_gpus", total, key="parallelism_config.*_size",
                  note="dp_replicate x dp_shard x tp x cp x sp (parallelism_config.py total_size must equal the "
                       "number of processes)")
    c.ignore(sum(1 for k in pc if k not in size))
