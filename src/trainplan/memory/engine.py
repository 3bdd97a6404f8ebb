"""The precision regime the parallel engine imposes on a setup."""

from __future__ import annotations

from trainplan.enums import MasterWeights, Precision
from trainplan.frozen import replace
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.parallel import is_model_parallel
from trainplan.memory.sharding import shard_level


def engine_setup(setup: TrainingSetup, layout: Layout) -> tuple[TrainingSetup, str | None]:
    """DeepSpeed (ZeRO), FSDP mixed precision and Megatron compute with 16-bit weights and keep the
    fp32 copy in the optimizer: DeepSpeedEngine converts the module with .bfloat16()/.half(), FSDP's
    MixedPrecision(param_dtype=bf16) gathers bf16 units, Megatron's Float16Module. An autocast
    profile is switched to that regime when one of them runs the job."""
    sharded = shard_level(layout)[0] > 0 or is_model_parallel(layout)
    if not sharded or setup.impl.master_weights is not MasterWeights.AUTOCAST:
        return setup, None
    if setup.precision not in (Precision.BF16, Precision.FP16):
        return setup, None
    impl = replace(setup.impl, master_weights=MasterWeights.OPTIMIZER)
    return replace(setup, impl=impl), ("ZeRO/FSDP/Megatron run 16-bit weights with fp32 master weights in the "
                                       "optimizer: the autocast profile's fp32 model does not apply")
