"""Where each setting of a job came from: a config file's key (--from), the format's own default, a
flag, trainplan's framework profile, or trainplan's default. Pure: it reads the JobOptions'
provenance (importers/merge.py) and the resolved setup, nothing else."""

from __future__ import annotations

from trainplan.enums import GALORE_OPTIMIZERS, Optimizer
from trainplan.job.frameworks import profile
from trainplan.job.job import Job
from trainplan.job.options import JobOptions
from trainplan.model.params import default_lora_targets

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

# The settings that decide memory and time, in the order they are listed.
SETTINGS = ("model", "framework", "method", "stage", "precision", "fp8_recipe", "optimizer", "galore_rank",
            "apollo_rank", "lora_rank", "lora_alpha", "lora_dropout", "lora_targets", "dora", "modules_to_save", "quant", "double_quant",
            "freeze_layers", "batch_size", "grad_accum", "seq_len", "packing", "padding_free", "padding_mask",
            "dataset", "drop_long_samples", "group_by_length", "grad_ckpt", "grad_ckpt_every", "attention", "loss", "liger",
            "activation_offload",
            "optimizer_in_backward", "compile", "compile_loss", "num_gpus", "nodes", "zero", "fsdp", "fsdp_version",
            "reshard_after_forward", "offload", "offload_device", "tp", "sequence_parallel", "pp", "vpp",
            "pp_schedule", "pp_head_as_layer", "cp", "ulysses", "ep", "etp", "device_map", "ref_model", "samples",
            "max_steps", "epochs",
            "reduce_bucket_size", "prefetch_bucket_size", "param_persistence_threshold", "max_live_parameters",
            "overlap_comm", "loss_upcast", "launch_blocking", "comm_overlap", "moe_a2a_overlap", "moe_dispatcher",
            "cpu_threads_per_rank", "flash_version", "experts_implementation")
# options left None that resolution derives, and the value it derives
_DERIVED = {"lora_alpha": (lambda j: j.setup.lora.alpha if j.setup.lora else None, "2 x lora_rank"),
            "lora_targets": (lambda j: list(j.setup.lora.targets or default_lora_targets(j.setup.model))
                             if j.setup.lora else None, "peft's default targets for the architecture"),
            "stage": (lambda j: "sft", "supervised fine-tuning"),
            "etp": (lambda j: j.layout.expert_tp,
                    "the framework's: tp (Megatron-Core's default when expert_tensor_parallel_size is unset, "
                    "arguments.py); 1 under torchtitan with expert parallelism (job_config.py)"),
            "drop_long_samples": (lambda j: j.timing.drop_long_samples,
                                  "the framework's: ms-swift deletes samples over max_length (truncation_strategy "
                                  "'delete'), the others truncate them"),
            "group_by_length": (lambda j: j.timing.group_by_length,
                                "random batches: the HF Trainer's default sampler (train_sampling_strategy 'random')"),
            "pp_head_as_layer": (lambda j: j.parallel.head_as_layer,
                                 "the framework's pipeline split: torchtitan weighs the embedding and the output as a "
                                 "layer each, Megatron-Core splits the decoder layers alone"),
            "padding_mask": (lambda j: j.setup.impl.padding_mask,
                             "padding in the attention mask: unpacked samples of mixed lengths (--lengths-file), "
                             "more than one per micro-batch, under a transformers framework")}
# options left None that the framework profile fills, and the resolved value to show
_PROFILE = {"precision": lambda j: str(j.setup.precision), "optimizer": lambda j: str(j.setup.optimizer),
            "grad_ckpt": lambda j: str(j.setup.grad_ckpt), "attention": lambda j: str(j.setup.attention),
            "loss": lambda j: str(j.setup.impl.loss), "liger": lambda j: j.setup.impl.liger_kernels,
            "activation_offload": lambda j: j.setup.impl.activation_offload,
            "optimizer_in_backward": lambda j: j.setup.impl.optimizer_in_backward,
            "compile": lambda j: j.setup.impl.compiled,
            "compile_loss": lambda j: j.setup.impl.compiled_loss,
            "loss_upcast": lambda j: j.setup.impl.loss_upcast,
            "launch_blocking": lambda j: j.setup.impl.launch_blocking,
            "comm_overlap": lambda j: j.setup.impl.comm_overlap,
            "moe_a2a_overlap": lambda j: j.setup.impl.moe_a2a_overlap,
            "moe_dispatcher": lambda j: str(j.setup.impl.moe_dispatcher),
            "flash_version": lambda j: j.setup.impl.flash_version,
            "experts_implementation": lambda j: str(j.setup.impl.experts_impl)}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return getattr(value, "name", value) if not isinstance(value, (str, int, float, bool, type(None))) else value


def sources(job: Job, *, everything: bool = False) -> list[dict[str, Any]]:
    """One entry per setting: field, value, origin (file, framework default, derived, flag, framework
    profile, trainplan default), and the key/file/note where there is one. Without `everything`, only
    the settings a file or a flag gave."""
    options = job.options or JobOptions(model=job.setup.model)
    given = {s.field: s for s in options.provenance}
    flags = set(options.given)
    out = []
    for name in SETTINGS:
        if name == "galore_rank" and job.setup.optimizer not in GALORE_OPTIMIZERS:
            continue        # read only by a GaLore optimizer
        if name == "apollo_rank" and job.setup.optimizer is not Optimizer.APOLLO_ADAMW:
            continue
        if name in given:
            out.append(given[name].to_dict())
            continue
        if name in flags:
            value = getattr(options, name, None)
            out.append({"field": name, "value": _plain(getattr(value, "name", value) if name == "model" else value),
                        "origin": "flag", "key": "--" + name.replace("_", "-")})
            continue
        if not everything:
            continue
        value = getattr(options, name, None)
        if value is None and name in _DERIVED:
            derive, why = _DERIVED[name]
            out.append({"field": name, "value": _plain(derive(job)), "origin": "derived", "note": why})
        elif value is None and name in _PROFILE:
            out.append({"field": name, "value": _plain(_PROFILE[name](job)), "origin": "framework profile",
                        "note": profile(job.setup.framework).summary})
        else:
            out.append({"field": name, "value": _plain(value), "origin": "trainplan default"})
    return out


def read_report(job: Job) -> dict[str, Any] | None:
    """What the --from configs gave: files, settings, keys not used, keys ignored (None without --from)."""
    options = job.options
    if options is None or not options.configs:
        return None
    return {"files": list(options.configs), "settings": sources(job),
            "unread": [u.to_dict() for u in options.unread], "ignored": options.ignored_keys}
