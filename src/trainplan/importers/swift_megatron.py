"""Megatron-SWIFT: `megatron sft|pt|rlhf ...` lines, and ms-swift files with Megatron-only keys (importers/swift.py
detects them and hands them here): the parallel layout, the micro and global batch, recomputation, the
distributed optimizer, FP8 and the precision of mcore training.

Keys and defaults (modelscope/ms-swift 3602360): swift/megatron/arguments/megatron_args.py (num_microbatches,
the communication overlap flags); defaults in trainplan/job/defaults/swift.py (MEGATRON_DEFAULTS).
"""

from __future__ import annotations

from trainplan.importers.axolotl import default
from trainplan.importers.base import (
    MEGATRON_OVERLAP_FLAGS,
    Collector,
    as_bool,
    as_float,
    as_int,
    names,
    read_megatron_overlap,
)
from trainplan.importers.swift_args import (
    _DEFAULTS,
    _DTYPES,
    _READ,
    _common,
    _get,
    _model_spec,
    _put,
    _tuner,
    _unmodelled,
)
from trainplan.job.defaults import swift as defaults
from trainplan.timing.fp8 import megatron_recipe

_MEGATRON = {d.field: d for d in defaults.MEGATRON_DEFAULTS}


def _megatron(c: Collector, args: dict, world: int) -> None:
    c.set("framework", "megatron", key="(megatron sft)", note="Megatron-SWIFT (mcore) with its distributed optimizer")
    _tuner(c, args, _MEGATRON)
    _common(c, args, _model_spec(args), _MEGATRON)
    size = {}
    for key, field_name in (("tensor_model_parallel_size", "tp"), ("pipeline_model_parallel_size", "pp"),
                            ("context_parallel_size", "cp"), ("expert_model_parallel_size", "ep"),
                            ("virtual_pipeline_model_parallel_size", "vpp")):
        size[field_name] = _put(c, args, key, field_name, as_int, None, minimum=1) or 1
    _put(c, args, "sequence_parallel", "sequence_parallel", as_bool, _MEGATRON)
    if size["ep"] > 1 or "expert_tensor_parallel_size" in args:
        _put(c, args, "expert_tensor_parallel_size", "etp", as_int, _MEGATRON, minimum=1)
    micro = _put(c, args, "micro_batch_size", "batch_size", as_int, _MEGATRON, minimum=1) or 1
    gbs = _get(c, args, "global_batch_size", as_int, minimum=1) or _MEGATRON["grad_accum"].raw
    dp = max(1, world // (size["tp"] * size["pp"] * size["cp"]))
    if gbs % (micro * dp):
        c.skip("global_batch_size", gbs, f"not a multiple of micro_batch_size x data-parallel size {dp}")
    else:
        c.derived("grad_accum", gbs // (micro * dp), key="global_batch_size",
                  note=f"global_batch_size {gbs} / (micro_batch_size {micro} x data-parallel {dp}) "
                       "(megatron_args.py num_microbatches)" + ("" if "global_batch_size" in args else ": the default"))
    gran = str(args.get("recompute_granularity") or "").lower()
    if gran in ("full", "selective", "none"):
        c.set("grad_ckpt", gran, key="recompute_granularity")
        if gran == "full" and (str(args.get("recompute_method") or "uniform") != "uniform" or
                               _get(c, args, "recompute_num_layers", as_int) not in (None, 1)):
            c.skip("recompute_method", [args.get("recompute_method"), args.get("recompute_num_layers")],
                   "recomputing blocks of several layers is not modelled")
    else:
        default(c, "grad_ckpt", _MEGATRON, defaults.VERSION)
    if _get(c, args, "use_distributed_optimizer", as_bool) is False:
        c.set("zero", 0, key="use_distributed_optimizer", raw=args["use_distributed_optimizer"])
    else:
        default(c, "zero", _MEGATRON, defaults.VERSION)
    overlap = [k for k in MEGATRON_OVERLAP_FLAGS if _get(c, args, k, as_bool)]
    read_megatron_overlap(c, overlap, overlap[0] if overlap else "")
    if _get(c, args, "optimizer_cpu_offload", as_bool):
        c.set("offload", "optimizer", key="optimizer_cpu_offload", raw=True)
        c.set("offload_device", "cpu", key="optimizer_cpu_offload", raw=True)
    dtype = _DTYPES.get(str(args.get("torch_dtype") or "bfloat16").lower().replace("torch.", ""), "bf16")
    note = "16-bit weights, fp32 main grads, fp32 master weights and Adam states in the distributed optimizer"
    if args.get("fp8_format"):
        c.set("precision", "fp8", key="fp8_format", raw=args["fp8_format"],
              note="Transformer Engine fp8 GEMMs; " + note)
        recipe = args.get("fp8_recipe")
        if recipe is not None:
            known = megatron_recipe(str(recipe))
            if known is None:
                c.skip("fp8_recipe", recipe, "an FP8 recipe trainplan has no cost for")
            else:
                c.set("fp8_recipe", known.value, key="fp8_recipe", raw=recipe)
    elif args.get("torch_dtype"):
        c.set("precision", dtype, key="torch_dtype", raw=args["torch_dtype"], note=note)
    else:
        c.default("precision", "bf16", key="torch_dtype", note=f"{_DEFAULTS['precision'].note}; {note}")
    _put(c, args, "train_iters", "max_steps", as_int, None, minimum=1)
    _put(c, args, "num_train_epochs", "epochs", as_float, None)
    opt = str(args.get("optimizer") or "adam").lower()
    if opt in ("adam", "sgd"):
        c.set("optimizer", "adamw-fused" if opt == "adam" else "sgd", key="optimizer", raw=args.get("optimizer"),
              note="Megatron's fused Adam (Transformer Engine / Apex)" if opt == "adam" else "")
    else:
        c.skip("optimizer", opt, "an optimizer trainplan does not model")
    if names(args.get("recompute_modules")) not in ((), ("core_attn",)):
        c.skip("recompute_modules", args["recompute_modules"], "recomputing more than the attention core is not "
               "modelled")
    _unmodelled(c, args, _MEGATRON_UNMODELLED)
    c.ignore(sum(1 for k in args if k not in _MEGATRON_READ))


_MEGATRON_UNMODELLED = {
    "use_precision_aware_optimizer": "16-bit / fp8 optimizer states (exp_avg_dtype) are not modelled",
    "modules_to_save": "fully trained extra modules beside LoRA are not modelled",
    "freeze_parameters": "freezing a parameter subset is not modelled",
}
_MEGATRON_READ = _READ | set(_MEGATRON_UNMODELLED) | {
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size", "expert_model_parallel_size",
    "expert_tensor_parallel_size", "virtual_pipeline_model_parallel_size", "sequence_parallel", "micro_batch_size",
    "global_batch_size",
    "recompute_granularity", "recompute_method", "recompute_num_layers", "use_distributed_optimizer",
    "optimizer_cpu_offload", "fp8_format", "fp8_recipe", "train_iters", "attention_backend", "recompute_modules",
    *MEGATRON_OVERLAP_FLAGS}
