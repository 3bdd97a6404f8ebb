"""DeepSpeed JSON (`ds_config`), on its own or named by another config (HF `deepspeed`,
LLaMA-Factory `deepspeed:`, axolotl, ms-swift, accelerate `deepspeed_config_file`).

Keys and defaults (DeepSpeed edaa722, shared/reference/framework_configs.md section 2):
deepspeed/runtime/config.py and constants.py (batch triple, bf16/fp16), runtime/zero/config.py
(`zero_optimization`: stage 0, reduce_bucket_size 5e8, stage3_prefetch_bucket_size 5e7,
stage3_max_live_parameters 1e9, stage3_param_persistence_threshold 1e5, overlap_comm None -> True
for stage 3 only; unprefixed stage-3 names are aliases), runtime/zero/offload_config.py
(offload_optimizer / offload_param `device` none|cpu|nvme). "auto" values are filled by
transformers/integrations/deepspeed.py from the TrainingArguments and the model (reduce_bucket_size
= h^2, stage3_prefetch_bucket_size = 0.9 h^2, stage3_param_persistence_threshold = 10 h).
"""

from __future__ import annotations

from typing import Any

from trainplan.importers.base import Collector, Imported, ReadContext, as_bool, as_int, is_auto

FORMAT = "deepspeed"
_MARKERS = ("zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "zero_allow_untested_optimizer",
            "fp16", "bf16", "bfloat16", "gradient_clipping", "steps_per_print", "wall_clock_breakdown")
_HF_MARKERS = ("per_device_train_batch_size", "model_name_or_path", "output_dir", "base_model", "stage",
               "finetuning_type", "compute_environment")
# stage-3 knobs: (canonical name, aliases, JobOptions field or None when trainplan keeps DeepSpeed's default)
_STAGE3 = (("stage3_prefetch_bucket_size", ("prefetch_bucket_size",), "prefetch_bucket_size"),
           ("stage3_max_live_parameters", ("max_live_parameters",), "max_live_parameters"),
           ("stage3_param_persistence_threshold", ("param_persistence_threshold",), "param_persistence_threshold"),
           ("stage3_max_reuse_distance", ("max_reuse_distance",), None),
           ("stage3_model_persistence_threshold", ("model_persistence_threshold",), None),
           ("stage3_gather_16bit_weights_on_model_save",
            ("gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save"), None))
# DeepSpeed optimizer types -> trainplan optimizers (runtime/config.py: ADAM_OPTIMIZER "adam", ADAMW "adamw",
# FusedAdam is what "Adam"/"AdamW" build on GPU; CPUAdam with offload_optimizer)
_OPTIMIZERS = {"adam": "adamw-fused", "adamw": "adamw-fused", "fusedadam": "adamw-fused", "cpuadam": "adamw",
               "lion": "lion", "fusedlion": "lion", "sgd": "sgd"}


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict):
        return 0
    if any(k in data for k in _HF_MARKERS):
        return 0
    # bf16/fp16 count only as DeepSpeed sections ({"enabled": ...}), not as TrainingArguments booleans
    markers = sum(k in data and (k not in ("fp16", "bf16", "bfloat16") or isinstance(data[k], dict)) for k in _MARKERS)
    return 3 * sum(k in data for k in ("zero_optimization", "train_micro_batch_size_per_gpu")) + markers


def _device(section: Any) -> str:
    if isinstance(section, dict):
        return str(section.get("device", "none")).lower()
    return "none"


def read(data: dict, path: str, ctx: ReadContext | None = None) -> Imported:
    c = Collector(FORMAT, path)
    if ctx is None or not ctx.included:     # named by an HF-style config, its framework runs the engine
        c.set("framework", "deepspeed", key="(a DeepSpeed config on its own)",
              note="the DeepSpeed engine: 16-bit weights and gradients with fp32 master weights and Adam states in "
                   "the optimizer (runtime/bf16_optimizer.py, zero/stage_1_and_2.py, zero/stage3.py)")
    used = {"zero_optimization", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "train_batch_size",
            "fp16", "bf16", "bfloat16", "optimizer", "sequence_parallel_size", "tensor_parallel",
            "activation_checkpointing", "data_types", "torch_autocast", "amp"}
    c.ignore(sum(1 for k in data if k not in used))
    _batch(c, data)
    _precision(c, data)
    _zero(c, data.get("zero_optimization"))
    opt = data.get("optimizer")
    if isinstance(opt, dict) and opt.get("type"):
        name = str(opt["type"]).lower().replace("_", "")
        if name in _OPTIMIZERS:
            c.set("optimizer", _OPTIMIZERS[name], key="optimizer.type", raw=opt["type"],
                  note="DeepSpeed builds FusedAdam for Adam/AdamW on the GPU (ops/adam/fused_adam.py)"
                  if _OPTIMIZERS[name] == "adamw-fused" else "")
        else:
            c.skip("optimizer.type", opt["type"], "an optimizer trainplan does not model; its default is kept")
    if data.get("sequence_parallel_size") not in (None, 1):
        c.set("ulysses", as_int(data["sequence_parallel_size"], "sequence_parallel_size", path, minimum=1),
              key="sequence_parallel_size", raw=data["sequence_parallel_size"],
              note="DeepSpeed Ulysses sequence parallelism (all-to-all over attention heads)")
    tp = data.get("tensor_parallel")
    if isinstance(tp, dict) and as_int(tp.get("autotp_size", 0) or 0, "tensor_parallel.autotp_size", path) > 1:
        c.set("tp", as_int(tp["autotp_size"], "tensor_parallel.autotp_size", path), key="tensor_parallel.autotp_size",
              raw=tp["autotp_size"], note="DeepSpeed AutoTP training (runtime/tensor_parallel/config.py)")
    ac = data.get("activation_checkpointing")
    if isinstance(ac, dict) and any(ac.get(k) for k in ("partition_activations", "cpu_checkpointing")):
        c.skip("activation_checkpointing", ac, "Megatron-DeepSpeed activation partitioning/CPU checkpointing: "
               "applies to Megatron-DeepSpeed models only, not modelled")
    grad_accum_dtype = (data.get("data_types") or {}).get("grad_accum_dtype") if isinstance(
        data.get("data_types"), dict) else None
    if grad_accum_dtype:
        c.skip("data_types.grad_accum_dtype", grad_accum_dtype,
               "gradient accumulation dtype other than the engine's default is not modelled")
    return c.result()


def _batch(c: Collector, data: dict) -> None:
    micro, accum, total = (data.get(k) for k in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                                                  "train_batch_size"))
    for key, field_name, value in (("train_micro_batch_size_per_gpu", "batch_size", micro),
                                   ("gradient_accumulation_steps", "grad_accum", accum)):
        if value is None:
            continue
        if is_auto(value):
            c.ignore()   # filled from TrainingArguments by the HF integration
            continue
        c.set(field_name, as_int(value, key, c.file, minimum=1), key=key, raw=value)
    if total is not None and is_auto(total):
        c.ignore()       # filled from TrainingArguments by the HF integration
    if total is not None and not is_auto(total) and micro is not None and not is_auto(micro):
        per_rank = as_int(micro, "train_micro_batch_size_per_gpu", c.file) * (
            as_int(accum, "gradient_accumulation_steps", c.file) if accum is not None and not is_auto(accum) else 1)
        total_n = as_int(total, "train_batch_size", c.file, minimum=1)
        if total_n % per_rank == 0:
            sp = data.get("sequence_parallel_size") or 1
            c.derived("num_gpus", total_n // per_rank * int(sp), key="train_batch_size",
                      note=f"train_batch_size {total_n} = micro x accumulation x data-parallel ranks "
                           "(runtime/config.py _batch_assertion)")
        else:
            c.skip("train_batch_size", total, f"not a multiple of micro-batch x accumulation = {per_rank}")


def _precision(c: Collector, data: dict) -> None:
    bf16 = data.get("bf16", data.get("bfloat16"))
    fp16 = data.get("fp16")
    bf16_on = isinstance(bf16, dict) and not is_auto(bf16.get("enabled")) and as_bool(
        bf16.get("enabled", False), "bf16.enabled", c.file)
    fp16_on = isinstance(fp16, dict) and not is_auto(fp16.get("enabled")) and as_bool(
        fp16.get("enabled", False), "fp16.enabled", c.file)
    if bf16_on and isinstance(bf16, dict) and bf16.get("bf16_master_weights_and_grads") and \
            bf16.get("bf16_optimizer_states"):
        c.set("precision", "bf16-pure", key="bf16.bf16_optimizer_states", raw=True,
              note="bf16 master weights, gradients and optimizer states: no fp32 copy")
    elif bf16_on:
        c.set("precision", "bf16", key="bf16.enabled", raw=True)
    elif fp16_on:
        c.set("precision", "fp16", key="fp16.enabled", raw=True)
    elif any(isinstance(x, dict) and is_auto(x.get("enabled")) for x in (bf16, fp16)):
        c.ignore()       # "auto": the TrainingArguments' bf16/fp16 decide


def _zero(c: Collector, zero: Any) -> None:
    if not isinstance(zero, dict):
        return
    stage = zero.get("stage", 0)
    stage_n = as_int(stage, "zero_optimization.stage", c.file, minimum=0)
    c.set("zero", stage_n, key="zero_optimization.stage", raw=stage)
    opt_dev = _device(zero.get("offload_optimizer", zero.get("cpu_offload") and {"device": "cpu"}))
    par_dev = _device(zero.get("offload_param", zero.get("cpu_offload_param") and {"device": "cpu"}))
    devices = {d for d in (opt_dev, par_dev) if d != "none"}
    if devices:
        offload = "all" if opt_dev != "none" and par_dev != "none" else ("optimizer" if opt_dev != "none" else "params")
        c.set("offload", offload, key="zero_optimization.offload_optimizer/offload_param",
              raw={"offload_optimizer": opt_dev, "offload_param": par_dev})
        c.set("offload_device", "nvme" if "nvme" in devices else "cpu", key="offload_*.device", raw=sorted(devices))
    ratio = (zero.get("offload_optimizer") or {}).get("ratio") if isinstance(zero.get("offload_optimizer"), dict) \
        else None
    if ratio not in (None, 1, 1.0):
        c.skip("zero_optimization.offload_optimizer.ratio", ratio, "partial optimizer offload is not modelled")
    for key, field_name in (("reduce_bucket_size", "reduce_bucket_size"),):
        if key in zero:
            c.set(field_name, "auto" if is_auto(zero[key]) else as_int(zero[key], key, c.file, minimum=1),
                  key=f"zero_optimization.{key}", raw=zero[key])
    for canonical, aliases, field_name in _STAGE3:
        key = next((k for k in (canonical, *aliases) if k in zero), None)
        if key is None:
            continue
        if field_name is None:          # a stage-3 knob that changes neither memory nor time here
            c.ignore()
            continue
        value = zero[key]
        c.set(field_name, "auto" if is_auto(value) and field_name != "max_live_parameters" else
              as_int(value, key, c.file, minimum=0), key=f"zero_optimization.{key}", raw=value)
    if "overlap_comm" in zero:
        c.set("overlap_comm", as_bool(zero["overlap_comm"], "overlap_comm", c.file),
              key="zero_optimization.overlap_comm", raw=zero["overlap_comm"])
    for key, off in (("zero_quantized_weights", False), ("zero_quantized_gradients", False),
                     ("zero_hpz_partition_size", 1)):
        value = zero.get(key)
        if value is not None and (value is not off if isinstance(off, bool) else value != off):
            c.skip(f"zero_optimization.{key}", value, "ZeRO++ (quantized weights/gradients, hpZ) is not modelled")
    if zero.get("mics_shard_size", -1) not in (-1, None):
        c.skip("zero_optimization.mics_shard_size", zero["mics_shard_size"], "MiCS sharding groups are not modelled")
    known = {"stage", "offload_optimizer", "offload_param", "cpu_offload", "cpu_offload_param", "reduce_bucket_size",
             "overlap_comm", "zero_quantized_weights", "zero_quantized_gradients", "zero_hpz_partition_size",
             "mics_shard_size"} | {n for canonical, aliases, _ in _STAGE3 for n in (canonical, *aliases)}
    c.ignore(sum(1 for k in zero if k not in known))
