"""The precision regime and the optimizer the parallel engine imposes on a setup."""

from __future__ import annotations

from trainplan.enums import MasterWeights, Precision
from trainplan.frozen import replace
from trainplan.job.capabilities import offloaded_optimizer
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.parallel import is_model_parallel
from trainplan.memory.sharding import shard_level


def engine_setup(setup: TrainingSetup, layout: Layout) -> tuple[TrainingSetup, tuple[str, ...]]:
    """The setup as the engine runs it, with a note for each way that differs from the one given.

    The optimizer: under DeepSpeed ZeRO-Offload the HF Trainer family steps DeepSpeedCPUAdam whatever its
    `optim` (job.capabilities.offloaded_optimizer).
    The precision: DeepSpeed (ZeRO), FSDP mixed precision and Megatron compute with 16-bit weights and keep the
    fp32 copy in the optimizer: DeepSpeedEngine converts the module with .bfloat16()/.half(), FSDP's
    MixedPrecision(param_dtype=bf16) gathers bf16 units, Megatron's Float16Module. An autocast
    profile is switched to that regime when one of them runs the job."""
    notes = []
    optimizer, said = offloaded_optimizer(setup, layout)
    if said:
        setup = replace(setup, optimizer=optimizer)
        notes.append(said)
    sharded = shard_level(layout)[0] > 0 or is_model_parallel(layout)
    if sharded and setup.impl.master_weights is MasterWeights.AUTOCAST \
            and setup.precision in (Precision.BF16, Precision.FP16):
        setup = replace(setup, impl=replace(setup.impl, master_weights=MasterWeights.OPTIMIZER))
        notes.append("ZeRO/FSDP/Megatron run 16-bit weights with fp32 master weights in the optimizer: the autocast "
                     "profile's fp32 model does not apply")
    return setup, tuple(notes)
