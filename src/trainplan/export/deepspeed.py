"""DeepSpeed JSON (`ds_config`): ZeRO stage, offload, bucket sizes, precision, the batch triple.

Keys and defaults (DeepSpeed edaa722 / 0.19.8; shared/reference/framework_configs.md section 2), the
mirror of importers/deepspeed.py:
- batch: deepspeed/runtime/config.py `_batch_assertion`: train_batch_size = micro x accumulation x the
  data-parallel world (world / sequence_parallel_size under Ulysses);
- precision: runtime/config.py `bf16` / `fp16` sections; `bf16_master_weights_and_grads` +
  `bf16_optimizer_states` (runtime/bf16_optimizer.py) for bf16 without an fp32 copy;
- `zero_optimization`: runtime/zero/config.py DeepSpeedZeroConfig (stage, reduce_bucket_size,
  stage3_prefetch_bucket_size, stage3_max_live_parameters, stage3_param_persistence_threshold,
  overlap_comm), runtime/zero/offload_config.py (offload_optimizer / offload_param {device, pin_memory}).
Bucket keys are written only when the job sets them (job.zero); left out, DeepSpeed's own defaults
apply, which are what the estimate assumes (memory/sharding.py ZeroConfig).

Under the HF Trainer (hf, llamafactory exports) the batch triple, gradient_clipping and bf16/fp16
`enabled` are "auto": transformers/integrations/deepspeed.py `trainer_config_process` copies them from
the TrainingArguments (a concrete value that disagrees stops the Trainer: `fill_match`). On its own
(`deepspeed train.py --deepspeed ds_config.json`) every value is concrete.
"""

from __future__ import annotations

import json
from typing import Any

from trainplan.enums import Framework, Offload, Optimizer, Precision, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.export.base import ExportContext, Exported, ExportFile

FORMAT = "deepspeed"
FRAMEWORKS = (Framework.DEEPSPEED, Framework.HF, Framework.TRL, Framework.LLAMAFACTORY, Framework.SWIFT,
              Framework.AXOLOTL)
FILE = "ds_config.json"
GRAD_CLIP = 1.0     # HF TrainingArguments.max_grad_norm (training_args.py); DeepSpeed gradient_clipping
# trainplan optimizer -> DeepSpeed optimizer.type (runtime/config.py ADAM/ADAMW/LION/... names; FusedAdam on GPU)
_DS_OPTIMIZERS = {Optimizer.ADAMW_FUSED: "AdamW", Optimizer.LION: "Lion"}


def check(job) -> None:
    """The layouts a DeepSpeed JSON can express (one line each)."""
    layout = job.layout
    if layout.tp > 1 or layout.pp > 1:
        raise TrainplanError(f"--format deepspeed: tensor/pipeline parallelism (tp {layout.tp}, pp {layout.pp}) is "
                             "Megatron's (use --format megatron); a DeepSpeed JSON holds ZeRO and Ulysses only")
    if str(layout.fsdp) != "none":
        raise TrainplanError("--format deepspeed: the job runs FSDP, not DeepSpeed ZeRO (use --format accelerate)")
    if layout.offload in (Offload.PARAMS, Offload.ALL) and layout.zero is not ZeroStage.PARAMETERS:
        raise TrainplanError("--format deepspeed: parameter offload needs ZeRO-3 (runtime/zero/config.py: "
                             "offload_param is stage 3 only)")
    if job.setup.precision is Precision.FP8:
        raise TrainplanError("--format deepspeed: fp8 training is not a ds_config setting (it comes from "
                             "accelerate/TransformerEngine); export with --precision bf16")


def config(job, *, auto: bool) -> dict[str, Any]:
    """The ds_config of `job`; `auto`: the keys the HF integration fills are "auto"."""
    check(job)
    setup, layout = job.setup, job.layout
    sp = layout.cp
    out: dict[str, Any] = {}
    if auto:
        out.update(train_micro_batch_size_per_gpu="auto", gradient_accumulation_steps="auto",
                   train_batch_size="auto", gradient_clipping="auto")
    else:
        dp_world = layout.num_gpus // sp
        out.update(train_micro_batch_size_per_gpu=setup.batch_size, gradient_accumulation_steps=setup.grad_accum,
                   train_batch_size=setup.batch_size * setup.grad_accum * dp_world, gradient_clipping=GRAD_CLIP)
    out.update(_precision(setup.precision, auto))
    out["zero_optimization"] = _zero(job)
    if not auto:
        name = _DS_OPTIMIZERS.get(setup.optimizer)
        if name is not None:
            out["optimizer"] = {"type": name, "params": {"lr": 1e-5, "weight_decay": 0.0}}
    # transformers sets this itself for its own optimizer (integrations/deepspeed.py deepspeed_optim_sched);
    # a script that builds a torch optimizer needs it under ZeRO
    out["zero_allow_untested_optimizer"] = True
    if sp > 1:
        out["sequence_parallel_size"] = sp
    out["steps_per_print"] = 100
    out["wall_clock_breakdown"] = False
    return out


def _precision(precision: Precision, auto: bool) -> dict[str, Any]:
    if precision is Precision.BF16_PURE:   # no fp32 copy: bf16 master weights, grads and optimizer states
        return {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True},
                "fp16": {"enabled": False}}
    if auto and precision in (Precision.BF16, Precision.FP16, Precision.FP16_PURE):
        return {"bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 16}}
    bf16 = precision is Precision.BF16
    fp16 = precision in (Precision.FP16, Precision.FP16_PURE)
    return {"bf16": {"enabled": bf16}, "fp16": {"enabled": fp16, "loss_scale": 0, "initial_scale_power": 16}}


def _zero(job) -> dict[str, Any]:
    layout, knobs = job.layout, job.zero
    stage = int(layout.zero)
    zero: dict[str, Any] = {"stage": stage}
    device = knobs.offload_device if knobs is not None else "cpu"
    if layout.offload in (Offload.OPTIMIZER, Offload.ALL):
        zero["offload_optimizer"] = {"device": device, "pin_memory": True}
    if layout.offload in (Offload.PARAMS, Offload.ALL):
        zero["offload_param"] = {"device": device, "pin_memory": True}
    if knobs is not None:     # the knobs the job sets (importers/deepspeed.py reads each back)
        zero["reduce_bucket_size"] = knobs.reduce_bucket_size
        if knobs.overlap_comm is not None:
            zero["overlap_comm"] = knobs.overlap_comm
        if stage == 3:
            zero.update(stage3_prefetch_bucket_size=knobs.prefetch_bucket_size,
                        stage3_max_live_parameters=knobs.max_live_parameters,
                        stage3_param_persistence_threshold=knobs.param_persistence_threshold)
    if stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True   # a loadable checkpoint at the end
    return zero


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def export(job, estimate, ctx: ExportContext, *, auto: bool = False) -> Exported:
    """The ds_config alone (concrete values), or with `auto` as the file an HF-Trainer config names."""
    notes = []
    if job.zero is None:
        notes.append("ZeRO bucket sizes left to DeepSpeed's defaults (reduce_bucket_size 5e8, "
                     "stage3_prefetch_bucket_size 5e7, ...), as the estimate assumes")
    if not auto and job.setup.optimizer not in _DS_OPTIMIZERS:
        notes.append(f"optimizer {job.setup.optimizer}: DeepSpeed does not build it; the training script does "
                     "(give --optimizer with --from)")
    return Exported(files=(ExportFile(name=FILE, text=dumps(config(job, auto=auto)), format=FORMAT),), notes=tuple(notes))
