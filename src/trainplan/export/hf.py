"""HF `TrainingArguments` JSON (`HfArgumentParser((ScriptArguments, TrainingArguments)).parse_json_file`),
with the example scripts' `model_name_or_path` and `dtype`, naming the DeepSpeed JSON or holding the
FSDP settings.

Keys (transformers v5.24.0 src/transformers/training_args.py; shared/reference/framework_configs.md
section 3), the mirror of importers/hf.py:
- per_device_train_batch_size, gradient_accumulation_steps, num_train_epochs, max_steps;
- `bf16` / `fp16` (autocast over the weights the script loads: `dtype` float32 for a full fine-tune
  with an fp32 model, bfloat16 for bf16 weights without an fp32 copy and for a LoRA base kept in 16 bits);
- `optim` (OptimizerNames: adamw_torch_fused, adamw_torch, adamw_bnb_8bit, paged_adamw_8bit, adafactor,
  lion_32bit, sgd);
- `activation_checkpointing` (v5; `gradient_checkpointing` is its deprecated alias) with
  `activation_checkpointing_kwargs` {every_n_layers, offload} (modeling_utils.py);
- `use_liger_kernel`, `torch_compile`, `attn_implementation` (a script/model argument);
- `deepspeed` (a path), `fsdp: true` + `fsdp_config` {version, reshard_after_forward, cpu_offload,
  activation_checkpointing} (`_process_fsdp_args`: keys without the `fsdp_` prefix).
A plain TrainingArguments file holds no sequence length and no LoRA (the script's and PEFT's): they
go to the notes, and to the flags given with `--from`.
"""

from __future__ import annotations

import json
from typing import Any

from trainplan.enums import (
    LOW_RANK_OPTIMIZERS,
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Method,
    Offload,
    Optimizer,
    Precision,
    ZeroStage,
)
from trainplan.errors import TrainplanError
from trainplan.export import deepspeed, pieces
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.memory.sharding import fsdp_for

FORMAT = "hf"
FRAMEWORKS = (Framework.HF, Framework.DEEPSPEED, Framework.FSDP, Framework.TRL)
FILE = "hf_args.json"
# trainplan optimizer -> HF OptimizerNames (training_args.py); importers/hf_optim.py _OPTIM is the reverse
OPTIM = {Optimizer.ADAMW_FUSED: "adamw_torch_fused", Optimizer.ADAMW: "adamw_torch",
         Optimizer.ADAMW_8BIT: "adamw_bnb_8bit", Optimizer.PAGED_ADAMW_8BIT: "paged_adamw_8bit",
         Optimizer.ADAFACTOR: "adafactor", Optimizer.LION: "lion_32bit", Optimizer.SGD: "sgd"}


def model_name(job, ctx: ExportContext) -> str:
    """What a config names as the model: the context's path, else the catalog's HF id, else its name."""
    spec = job.setup.model
    return ctx.model_path or getattr(spec, "hf_id", None) or spec.name


def galore_args(job) -> dict[str, Any]:
    """optim galore_adamw[_8bit][_layerwise] with optim_args rank and every linear as the target
    (transformers trainer_optimizer.py _get_galore_optimizer / _setup_low_rank_optimizer, "all-linear")."""
    setup = job.setup
    if setup.optimizer is Optimizer.APOLLO_ADAMW:      # _get_apollo_optimizer: the same low-rank setup
        name, rank = "apollo_adamw", setup.apollo_rank
    else:
        name, rank = "galore_adamw" + ("_8bit" if setup.optimizer is Optimizer.GALORE_ADAMW_8BIT else ""), \
            setup.galore_rank
    if setup.impl.optimizer_in_backward:
        name += "_layerwise"
    return {"optim": name, "optim_args": f"rank={rank}", "optim_target_modules": "all-linear"}


def optim(job) -> str:
    name = OPTIM.get(job.setup.optimizer)
    if name is None:
        raise TrainplanError(f"--format hf: optimizer {job.setup.optimizer} is not an HF `optim` "
                             "(badam is LLaMA-Factory's use_badam: use --format llamafactory; muon is LLaMA-Factory's "
                             "use_muon, ms-swift's and axolotl's optimizer muon: --format llamafactory, swift or "
                             "axolotl; adam-mini is LLaMA-Factory's use_adam_mini)")
    return name


def amp_flags(precision: Precision) -> dict[str, bool]:
    """TrainingArguments bf16 / fp16 for a precision (pure 16-bit: the weights' dtype, with autocast on)."""
    if precision in (Precision.BF16, Precision.BF16_PURE, Precision.FP8):
        return {"bf16": True}
    if precision in (Precision.FP16, Precision.FP16_PURE):
        return {"fp16": True}
    return {"bf16": False, "fp16": False}


def _dtype(job) -> str | None:
    """The `dtype` the script loads the model in, as importers/hf.py _precision reads it back (None under
    DeepSpeed, which casts the model itself)."""
    setup = job.setup
    if job.layout.zero is not ZeroStage.NONE:
        return None
    pure = setup.precision in (Precision.BF16_PURE, Precision.FP16_PURE)
    half = "float16" if setup.precision in (Precision.FP16, Precision.FP16_PURE) else "bfloat16"
    if setup.method in (Method.LORA, Method.QLORA):
        return None        # the base's dtype is the script's PEFT/quantization choice, as LoRA itself is
    if job.layout.fsdp is not Fsdp.NONE:
        return None        # accelerate upcasts the trainable parameters under FSDP
    return half if pure else "float32"


def arguments(job, ctx: ExportContext, *, ds_file: str | None) -> tuple[dict[str, Any], list[str]]:
    """(the TrainingArguments + script keys, notes on what the file cannot hold)."""
    setup, layout, work = job.setup, job.layout, job.workload
    if setup.precision is Precision.FP8:
        raise TrainplanError("--format hf: fp8 is not a TrainingArguments setting (accelerate's mixed_precision "
                             "fp8): add --format accelerate, or export with --precision bf16")
    if layout.tp > 1 or layout.pp > 1:
        raise TrainplanError(f"--format hf: tp {layout.tp} / pp {layout.pp} is not an HF Trainer layout "
                             "(use --format megatron or torchtitan)")
    notes: list[str] = []
    args: dict[str, Any] = {"model_name_or_path": model_name(job, ctx), "output_dir": ctx.output_dir}
    dtype = _dtype(job)
    if dtype is not None:
        args["dtype"] = dtype
    if setup.attention is not Attention.SDPA:   # attn_implementation is a TRL ModelConfig key (importers/hf.py)
        notes.append(f"attention {setup.attention}: from_pretrained(attn_implementation="
                     f"{pieces.attn_implementation(setup)!r}) "
                     "in the script (give --attention with --from)")
    if pieces.expert_loop(setup):
        notes.append("experts eager: from_pretrained(experts_implementation='eager') in the script (transformers 5; "
                     "give --experts-implementation with --from)")
    args.update(per_device_train_batch_size=setup.batch_size, gradient_accumulation_steps=setup.grad_accum,
                num_train_epochs=work.epochs)
    if work.steps is not None:
        args["max_steps"] = work.steps
    args.update(amp_flags(setup.precision))
    if job.setup.optimizer in LOW_RANK_OPTIMIZERS:
        args.update(galore_args(job))
    else:
        args["optim"] = optim(job)
    args.update(learning_rate=1e-5 if setup.method is Method.FULL else 1e-4, lr_scheduler_type="cosine",
                warmup_steps=10, max_grad_norm=deepspeed.GRAD_CLIP, logging_steps=10, save_strategy="epoch",
                report_to="none")
    on = setup.grad_ckpt is not GradCkpt.NONE
    if setup.grad_ckpt in (GradCkpt.SELECTIVE, GradCkpt.OP):
        notes.append(f"--grad-ckpt {setup.grad_ckpt}: the HF Trainer checkpoints whole layers; written as full")
    kwargs: dict[str, Any] = {}
    if on and setup.grad_ckpt_every > 1:
        kwargs["every_n_layers"] = setup.grad_ckpt_every
    if on and setup.impl.activation_offload:
        kwargs["offload"] = True
    if layout.fsdp is Fsdp.NONE:
        args["activation_checkpointing"] = on
        if kwargs:
            args["activation_checkpointing_kwargs"] = kwargs
    if setup.impl.liger_kernels:
        args["use_liger_kernel"] = True
    if setup.impl.compiled:
        args["torch_compile"] = True
    if job.timing.group_by_length:
        args["train_sampling_strategy"] = "group_by_length"
        notes.append(pieces.GROUP_BY_LENGTH_NOTE)
    if ds_file is not None:
        args["deepspeed"] = ds_file
    elif layout.zero is not ZeroStage.NONE:
        raise TrainplanError("--format hf for a ZeRO job needs the DeepSpeed JSON too: add deepspeed to --format")
    if layout.fsdp is not Fsdp.NONE:
        args["fsdp"] = True
        args["fsdp_config"] = _fsdp_config(job, on)
        if kwargs:
            notes.append("activation checkpointing kwargs are not FSDP settings: left out")
    if layout.cp > 1:
        notes.append(f"context parallelism {layout.cp}: accelerate's parallelism_config, not a TrainingArguments "
                     "key (give --cp/--ulysses with --from)")
    if setup.method is not Method.FULL:
        notes.append(f"--method {setup.method}: PEFT's LoraConfig/BitsAndBytesConfig are the script's (give "
                     "--method and --lora-* with --from)")
    notes.append(f"sequence length {setup.seq_len}: the script's tokenizer/collator setting (give --seq-len with --from)")
    return args, notes


def _fsdp_config(job, checkpointing: bool) -> dict[str, Any]:
    """fsdp_config without the `fsdp_` prefix (training_args.py _process_fsdp_args)."""
    base = job.fsdp or fsdp_for(job.setup.framework)
    cfg: dict[str, Any] = {"version": base.version, "reshard_after_forward": base.reshard_after_forward,
                           "auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "activation_checkpointing": checkpointing,
                           "state_dict_type": "SHARDED_STATE_DICT", "cpu_ram_efficient_loading": True}
    if job.layout.offload is not Offload.NONE:
        cfg["cpu_offload"] = True
    if job.layout.fsdp is Fsdp.HYBRID:
        if base.version != 1:
            raise TrainplanError("--fsdp hybrid through HF TrainingArguments needs FSDP1 (hybrid_shard); with FSDP2 "
                                 "it is accelerate's parallelism_config: use --format accelerate")
        cfg["reshard_after_forward"] = "hybrid_shard" if base.reshard_after_forward else "hybrid_shard_zero2"
    return cfg


def export(job, estimate, ctx: ExportContext, *, ds_file: str | None = None) -> Exported:
    args, notes = arguments(job, ctx, ds_file=ds_file)
    if job.setup.framework is Framework.HF and job.layout.zero is not ZeroStage.NONE:
        notes.append("an HF Trainer config naming a DeepSpeed JSON reads back as --framework deepspeed "
                     "(importers/hf.py): the DeepSpeed engine's regime, which the estimate applies to ZeRO anyway")
    return Exported(files=(ExportFile(name=FILE, text=json.dumps(args, indent=2) + "\n", format=FORMAT),),
                    notes=tuple(notes))
