"""The `trainplan estimate` flags that rebuild a job, for people to copy (display only: nothing reads
them back; tests/test_planner.py checks that they reproduce the plan's estimate)."""

from __future__ import annotations

import shlex

from trainplan.frozen import fields, replace
from trainplan.job.job import Job
from trainplan.job.options import BOOKKEEPING, JobOptions

# Always shown, even at their default: the knobs a plan chooses.
_ALWAYS = frozenset({"model", "method", "precision", "optimizer", "batch_size", "grad_accum", "seq_len",
                     "grad_ckpt", "attention", "gpu", "num_gpus", "nodes", "zero", "fsdp", "offload", "tp", "pp"})
_STORE_TRUE = frozenset({"dora", "double_quant", "packing", "spot", "uneven_pipeline"})
_NEGATABLE = frozenset({"optimizer_in_backward", "activation_offload", "liger", "load_fp32", "compile",
                        "sequence_parallel", "calibration"})


def options_flags(options: JobOptions) -> str:
    """Flags for every option that differs from its default (and the _ALWAYS ones that are set)."""
    default = JobOptions(model=options.model)
    parts: list[str] = []
    for f in fields(JobOptions):
        name, value = f.name, getattr(options, f.name)
        if name in BOOKKEEPING:
            continue
        if value is None or (value == getattr(default, name) and name not in _ALWAYS):
            continue
        flag = "--" + name.replace("_", "-")
        if name in _STORE_TRUE:
            parts.append(flag)
        elif name in _NEGATABLE:
            parts.append(flag if value else "--no-" + name.replace("_", "-"))
        elif name == "model":
            parts += [flag, shlex.quote(getattr(value, "name", str(value)))]
        elif name == "gpu":
            parts += [flag, getattr(value, "id", str(value))]
        elif name == "price":
            for item in value:
                parts += [flag, shlex.quote(item)]
        elif name in ("lora_targets", "modules_to_save"):
            parts += [flag, shlex.quote(value if isinstance(value, str) else ",".join(value))]
        else:
            parts += [flag, shlex.quote(str(int(value) if name == "zero" else value))]
    return " ".join(parts)


def job_options(job: Job) -> JobOptions:
    """The user's options of `job` with the knobs the job resolved written in (setup, layout, and a
    price from a price list, which no flag names)."""
    s, lay = job.setup, job.layout
    base = job.options if job.options is not None else JobOptions(model=s.model)
    out = replace(base, method=str(s.method), precision=str(s.precision), optimizer=str(s.optimizer),
                  grad_ckpt=str(s.grad_ckpt), attention=str(s.attention), batch_size=s.batch_size,
                  grad_accum=s.grad_accum, gpu=job.gpu.id, num_gpus=lay.num_gpus, nodes=lay.nodes,
                  zero=int(lay.zero), fsdp=str(lay.fsdp), offload=str(lay.offload), tp=lay.tp, pp=lay.pp,
                  cp=lay.cp, ep=lay.ep)
    pricing = job.pricing
    if pricing is not None and base.price_per_gpu_hour is None and pricing.origin == "price list":
        # offers handed over in code (no file or flag names them): the price itself becomes a flag
        out = replace(out, price=(*base.price, f"{job.gpu.id}={pricing.price_per_gpu_hour:.6g}"),
                      currency=pricing.currency)
    return out


def job_flags(job: Job) -> str:
    """The flags that rebuild `job` with `trainplan estimate`."""
    return options_flags(job_options(job))
