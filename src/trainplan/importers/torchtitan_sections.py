"""torchtitan job config sections past the layout: [training] dtype and [model] converters (precision,
float8), [activation_checkpoint], [compile] and [optimizer]; and the framework default a key left out
takes (job/defaults/torchtitan.py). Read by importers/torchtitan.py.

Rules read from the source (pytorch/torchtitan v0.2.2, 73a0e69):
- models/llama3/infra/parallelize.py apply_fsdp: MixedPrecisionPolicy(param_dtype=mixed_precision_param
  (bf16), reduce_dtype=fp32) over the fp32 sharded parameters; distributed/utils.py maybe_enable_amp: with
  TP or PP but no FSDP, mixed precision is off (fp32 compute); DDP or one GPU use autocast.
- distributed/activation_checkpoint.py: mode "full" wraps every block; "selective" with an integer n
  wraps every n-th block (`_apply_layer_sac`); "op" applies the per-op policy (`_apply_op_sac`), which
  saves the outputs of the ops in the model's `_op_sac_save_list` (llama3: aten.mm, the SDPA/flash/
  cudnn/efficient attention kernels, flex and varlen attention, reduce_scatter_tensor, aten.max) except
  every second mm ("Saves output of all compute ops, except every second mm"), recomputing the rest.
"""

from __future__ import annotations

from trainplan.errors import TrainplanError
from trainplan.importers.base import Collector, as_bool, names
from trainplan.job.defaults import defaults
from trainplan.job.defaults import torchtitan as titan

_D = defaults("torchtitan")


def _default(c: Collector, field_name: str, note: str = "") -> None:
    d = _D[field_name]
    extra = "; ".join(x for x in (d.note, note) if x)
    c.default(field_name, d.value, key=d.key, note=f"{d.source}{'; ' + extra if extra else ''}")


def _precision(c: Collector, training: dict, model: dict, data: dict, d: dict) -> None:
    dtype = str(training.get("dtype", "float32")).lower()
    param = str(training.get("mixed_precision_param", "bfloat16")).lower()
    if dtype in ("bfloat16", "bf16"):
        c.set("precision", "bf16-pure", key="training.dtype", raw=training["dtype"],
              note="parameters, gradients and optimizer states in bf16, no fp32 copy (job_config.py Training.dtype)")
    elif param in ("float32", "fp32"):
        c.set("precision", "fp32", key="training.mixed_precision_param", raw=training["mixed_precision_param"])
    elif not d["fsdp"] and (d["tp"] > 1 or d["pp"] > 1):
        c.derived("precision", "fp32", key="training.mixed_precision_param",
                  note="TP/PP without FSDP: maybe_enable_amp turns mixed precision off (distributed/utils.py)")
    elif "mixed_precision_param" in training:
        c.set("precision", "bf16", key="training.mixed_precision_param", raw=training["mixed_precision_param"],
              note=_D["precision"].note)
    else:
        _default(c, "precision")
    converters = names(model.get("converters"))
    fp8 = [x for x in converters if "float8" in x.lower() or x.lower().endswith(".mx") or x.lower() == "mx"]
    legacy = isinstance(data.get("float8"), dict) and data["float8"].get("enable_float8_linear")
    if fp8 or legacy:
        raw = fp8 or "float8.enable_float8_linear"
        if dtype in ("bfloat16", "bf16"):
            c.skip("model.converters", raw, "float8 over pure-bf16 parameters is not modelled")
        else:
            c.set("precision", "fp8", key="model.converters", raw=raw,
                  note="torchao Float8Linear/MX matmuls; parameters stay fp32 under FSDP (bf16 compute copies)")
            q = data.get("quantize") if isinstance(data.get("quantize"), dict) else {}
            sub = (q.get("linear") or {}) if isinstance(q.get("linear"), dict) else {}
            float8 = {**(data.get("float8") or {}), **(sub.get("float8") or {})}
            recipe = float8.get("recipe_name")
            if recipe is not None and not any("mx" in x.lower() for x in converters):
                known = titan.FLOAT8_RECIPES.get(str(recipe).lower())
                if known is None:
                    c.skip("quantize.linear.float8.recipe_name", recipe, "a float8 recipe trainplan has no cost for")
                else:
                    c.set("fp8_recipe", known.value, key="quantize.linear.float8.recipe_name", raw=recipe)
            detail = {k: v for k, v in {**float8, **(sub.get("mx") or {})}.items()
                      if k in ("enable_fsdp_float8_all_gather", "filter_fqns")
                      or (k == "recipe_name" and "mx" in str(v))}
            if detail:
                c.skip("quantize.linear.float8", detail, "float8 all-gather, skipped modules and MX recipes are "
                       "not modelled (the LM head is kept in bf16, the recipe's default)")
    else:
        c.ignore(sum(1 for s in ("float8", "mx", "quantize") if s in data))   # settings of a converter not on


def _checkpointing(c: Collector, ac: dict) -> None:
    if "mode" not in ac:
        _default(c, "grad_ckpt")
        _default(c, "grad_ckpt_every")
        return
    mode = str(ac["mode"]).lower()
    option = str(ac.get("selective_ac_option", _D["grad_ckpt_every"].raw)).strip().lower()
    if mode == "none":
        c.set("grad_ckpt", "none", key="activation_checkpoint.mode", raw=ac["mode"])
    elif mode == "full":
        c.set("grad_ckpt", "full", key="activation_checkpoint.mode", raw=ac["mode"])
    elif mode == "selective" and option == "op":
        c.set("grad_ckpt", "op", key="activation_checkpoint.selective_ac_option", raw="op",
              note="per-op policy: saves matmul and attention outputs but every second mm, recomputes the rest "
                   "(distributed/activation_checkpoint.py _apply_op_sac, llama3 _op_sac_save_list)")
    elif mode == "selective" and option.isdigit():
        every = int(option)
        c.set("grad_ckpt", "full", key="activation_checkpoint.mode", raw=ac["mode"],
              note=f"selective_ac_option {option}: every {option}-th block fully checkpointed (_apply_layer_sac)")
        if every > 1:
            c.set("grad_ckpt_every", every, key="activation_checkpoint.selective_ac_option", raw=ac.get(
                "selective_ac_option", option))
    elif mode == "memory_budget":
        c.skip("activation_checkpoint.mode", ac["mode"], "the compiler's memory-budget partitioner is not modelled")
    else:
        raise TrainplanError(f"--from {c.file}: activation_checkpoint.mode {ac['mode']!r} / selective_ac_option "
                             f"{ac.get('selective_ac_option')!r} is not one torchtitan accepts")
    c.ignore(sum(1 for k in ac if k not in ("mode", "selective_ac_option")))


def _compile(c: Collector, data: dict, training: dict) -> None:
    comp = data.get("compile") if isinstance(data.get("compile"), dict) else {}
    if "enable" in comp:
        on = as_bool(comp["enable"], "compile.enable", c.file)
        parts = names(comp.get("components", ["model", "loss"]))
        c.set("compile", on and "model" in parts, key="compile.enable", raw=comp["enable"],
              note="per-block torch.compile after AC wrapping (parallelize.py apply_compile)" if on else "")
        if on and ("model" in parts) != ("loss" in parts):
            # compile.components (job_config.py Compile, default ["model", "loss"]): the loss compiled
            # on its own (components/loss.py build_cross_entropy_loss) or left eager
            c.set("compile_loss", "loss" in parts, key="compile.components", raw=list(parts))
    elif "compile" in training:
        c.set("compile", as_bool(training["compile"], "training.compile", c.file), key="training.compile",
              raw=training["compile"],
              note="the older key: from 2025-04 (bbb1b616) it compiled the loss too, as compile.components' "
                   "default does; releases from 2024-12-18 (e8977b00) to then compiled the model only "
                   "(--no-compile-loss for those)")
    else:
        _default(c, "compile")
    c.ignore(sum(1 for k in comp if k not in ("enable", "components")))


def _optimizer(c: Collector, opt: dict) -> None:
    name = str(opt.get("name", "AdamW"))
    impl = str(opt.get("implementation", "fused")).lower()
    if name.lower() in ("adamw", "adam"):
        value = "adamw-fused" if impl == "fused" else "adamw"
        if "name" in opt or "implementation" in opt:
            c.set("optimizer", value, key="optimizer.name/implementation", raw=f"{name} {impl}")
        else:
            _default(c, "optimizer")
    else:
        c.skip("optimizer.name", name, "an optimizer trainplan does not model")
    if "early_step_in_backward" in opt:
        c.set("optimizer_in_backward", as_bool(opt["early_step_in_backward"], "optimizer.early_step_in_backward",
                                               c.file), key="optimizer.early_step_in_backward",
              raw=opt["early_step_in_backward"])
    c.ignore(sum(1 for k in opt if k not in ("name", "implementation", "early_step_in_backward")))
