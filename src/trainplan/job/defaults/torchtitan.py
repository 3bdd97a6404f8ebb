"""torchtitan defaults for the keys a TOML job config may leave out.

Read at pytorch/torchtitan v0.2.2 (73a0e69, 2026-02-20), the last release that reads TOML job configs:
torchtitan/config/job_config.py (the JobConfig dataclasses). The next commit on main, 9810191 "[BC
Breaking] Config System Refactor: TOML to Python Dataclass Registry" (2026-02-23), replaced TOML with
Python configs; torchtitan 0.3.0 on PyPI has no TOML reader. Older TOMLs (v0.1.0, 2025-06-17,
torchtitan/config_manager.py) spell a few keys differently ([float8], training.compile).
"""

from __future__ import annotations

from trainplan.enums import Fp8Recipe, PipeSchedule
from trainplan.job.defaults import Default

VERSION = "pytorch/torchtitan v0.2.2 (73a0e69, 2026-02-20)"
_JC = "torchtitan/config/job_config.py"

DEFAULTS: tuple[Default, ...] = (
    Default(field="batch_size", value=8, key="training.local_batch_size", source=f"{_JC} Training.local_batch_size"),
    Default(field="seq_len", value=2048, key="training.seq_len", source=f"{_JC} Training.seq_len"),
    Default(field="max_steps", value=10000, key="training.steps", source=f"{_JC} Training.steps"),
    Default(field="grad_accum", value=1, key="training.global_batch_size", raw=-1,
            source=f"{_JC} Training.global_batch_size = -1; torchtitan/train.py: local x data-parallel degree, "
                   "one accumulation step"),
    Default(field="precision", value="bf16", key="training.mixed_precision_param", raw="bfloat16",
            source=f"{_JC} Training.dtype = 'float32', mixed_precision_param = 'bfloat16', "
                   "mixed_precision_reduce = 'float32'",
            note="fp32 sharded parameters (and so fp32 AdamW states) with bf16 compute copies: "
                 "models/llama3/infra/parallelize.py apply_fsdp MixedPrecisionPolicy"),
    Default(field="grad_ckpt", value="full", key="activation_checkpoint.mode", raw="selective",
            source=f"{_JC} ActivationCheckpoint.mode = 'selective', selective_ac_option = '2'",
            note="selective with an integer option = every n-th transformer block fully checkpointed "
                 "(torchtitan/distributed/activation_checkpoint.py _apply_layer_sac)"),
    Default(field="grad_ckpt_every", value=2, key="activation_checkpoint.selective_ac_option", raw="2",
            source=f"{_JC} ActivationCheckpoint.selective_ac_option = '2'"),
    Default(field="loss", value="full", key="(loss)", raw="cross_entropy_loss",
            source="torchtitan/components/loss.py cross_entropy_loss: cross_entropy(pred.flatten(0, 1).float(), ...)",
            note="the whole logits tensor upcast to fp32; compiled with the loss when compile.components has it"),
    Default(field="compile", value=False, key="compile.enable", source=f"{_JC} Compile.enable"),
    Default(field="optimizer", value="adamw-fused", key="optimizer.name", raw="AdamW",
            source=f"{_JC} Optimizer.name = 'AdamW', implementation = 'fused'"),
    Default(field="fsdp_version", value=2, key="(FSDP)", raw="fully_shard",
            source="torchtitan/models/llama3/infra/parallelize.py apply_fsdp: torch.distributed.fsdp.fully_shard"),
    Default(field="reshard_after_forward", value=True, key="parallelism.fsdp_reshard_after_forward", raw="default",
            source="torchtitan/models/llama3/infra/parallelize.py apply_fsdp: 'default' -> not pp_enabled",
            note="without pipeline parallelism; with it, 'default' keeps the gathered parameters (False)"),
    Default(field="offload", value="none", key="training.enable_cpu_offload", raw=False,
            source=f"{_JC} Training.enable_cpu_offload"),
)


# parallelism.pipeline_parallel_schedule: torch.distributed.pipelining's schedule names (schedules.py
# get_schedule_class, matched case-insensitively) -> trainplan's; the first name of a schedule is the
# one an export writes
PIPELINE_SCHEDULES: dict[str, PipeSchedule] = {
    "GPipe": PipeSchedule.GPIPE, "1F1B": PipeSchedule.ONE_F_ONE_B, "Interleaved1F1B": PipeSchedule.INTERLEAVED,
    "LoopedBFS": PipeSchedule.INTERLEAVED, "InterleavedZeroBubble": PipeSchedule.ZB_H1,
    "ZBVZeroBubble": PipeSchedule.ZBV,
}
# quantize.linear.float8.recipe_name: torchao Float8Linear recipes (components/quantization/float8.py
# Config.recipe_name, default rowwise; older releases also accepted "tensorwise") -> trainplan's
FLOAT8_RECIPES: dict[str, Fp8Recipe] = {
    "tensorwise": Fp8Recipe.TORCHAO_TENSORWISE, "rowwise": Fp8Recipe.TORCHAO_ROWWISE,
    "rowwise_with_gw_hp": Fp8Recipe.TORCHAO_ROWWISE_GW_HP,
}


# Pipeline microbatches per step. Since 5e2033c (2025-04-07, PR #1073 "[PP] Add microbatch_size and remove
# num_microbatches config"; in every release from v0.1.0) the local batch runs as local /
# parallelism.pipeline_parallel_microbatch_size microbatches, default size 1. Before it,
# experimental.pipeline_parallel_microbatches defaulted to the pipeline degree (9dec370, 2024-12-26:
# parallelisms/pipelining_utils.py build_pipeline_schedule), and from 90567fc (2025-01-07, PR #781) to the
# number of stages, pp x stages per rank. Multi-stage schedules default to 2 stages per rank
# (pipelining_utils.generate_split_points then; distributed/pipeline_parallel.py at v0.2.2).
MICROBATCH_SIZE_SINCE = "2025-04-07"
STAGES_MICROBATCHES_SINCE = "2025-01-07"
LOOPED_STAGES_PER_RANK = 2


def pp_microbatches(local_batch: int, pp: int, stages_per_rank: int, as_of: str | None) -> tuple[int, str]:
    """(microbatches the local batch runs as, why) under torchtitan's default at the date `as_of`
    ("YYYY-MM-DD" or "YYYY-MM"; None: today's torchtitan)."""
    if as_of is None or as_of >= MICROBATCH_SIZE_SINCE:
        return local_batch, "parallelism.pipeline_parallel_microbatch_size = 1 (torchtitan since 2025-04-07)"
    n = pp * stages_per_rank if as_of >= STAGES_MICROBATCHES_SINCE else pp
    what = "the number of stages" if as_of >= STAGES_MICROBATCHES_SINCE else "the pipeline degree"
    n = max(1, min(local_batch, n))
    while local_batch % n:
        n -= 1
    return n, f"experimental.pipeline_parallel_microbatches = {what} (torchtitan before 2025-04-07)"


def schedule_named(name: str) -> PipeSchedule | None:
    return {k.lower(): v for k, v in PIPELINE_SCHEDULES.items()}.get(name.lower())


def schedule_name(schedule: PipeSchedule) -> str:
    return next(k for k, v in PIPELINE_SCHEDULES.items() if v is schedule)


def float8_recipe_name(recipe: Fp8Recipe) -> str | None:
    return next((k for k, v in FLOAT8_RECIPES.items() if v is recipe), None)
