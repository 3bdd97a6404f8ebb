"""Memory per GPU: model state + activations + logits, walked through one step to find the peak,
then the allocator's reserve and the CUDA context on top (three views).

Several GPUs: tensor/expert parallelism and the pipeline stage decide what one GPU holds
(parallel.py), the data-parallel engine shards it and adds its buffers (sharding.py), each
pipeline stage is walked on its own, and the most loaded GPU is the answer.
"""

from __future__ import annotations

from trainplan.frozen import frozen, replace

from trainplan.enums import MasterWeights, Method, Precision
from trainplan.memory.build import stage_step_inputs, step_inputs
from trainplan.memory.overhead import Overhead, device_from_reserved, reserved_from_allocated
from trainplan.memory.parallel import (ParallelConfig, Stage, check_layout, gpu_params, gpu_state,
                                       is_model_parallel, pipeline_stages)
from trainplan.memory.peak import simulate_step
from trainplan.memory.regime import Regime, resolve_regime
from trainplan.memory.result import MemoryEstimate
from trainplan.memory.sharding import (FsdpConfig, ShardedState, ZeroConfig, check_sharding, cpu_ram_bytes,
                                       cpu_ram_note, shard_state, shard_level)
from trainplan.memory.state import ModelState, model_state
from trainplan.specs import GpuSpec
from trainplan.job.training import Layout, TrainingSetup
from trainplan.units import gib

__all__ = ["FsdpConfig", "MemoryEstimate", "Overhead", "ParallelConfig", "StageMemory", "ZeroConfig",
           "estimate_memory", "stage_memories"]

IN_FLIGHT_KEY = "activations_in_flight"   # other micro-batches' activations stashed by the pipeline


@frozen
class StageMemory:
    """The peak of one GPU of one pipeline stage (the only stage without pipeline parallelism)."""

    stage: Stage
    state: ModelState             # this GPU's share of the model state, before data-parallel sharding
    sharded: ShardedState
    components: dict[str, int]    # at the peak; sums to allocated
    allocated: int
    reserved: int
    device: int
    unified: int                  # paged optimizer states outside the allocator
    phase: str
    phases: dict[str, int]
    saved_activations: int


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


def _stage_memory(setup: TrainingSetup, layout: Layout, regime: Regime, state: ModelState, stage: Stage, *,
                  zero: ZeroConfig, fsdp: FsdpConfig, parallel: ParallelConfig, overhead: Overhead) -> StageMemory:
    params = gpu_params(setup, layout, stage, small_threshold=zero.param_persistence_threshold)
    split = layout.tp * layout.pp * layout.ep > 1
    mine = gpu_state(setup, regime, state, params) if split else state
    sharded = shard_state(setup, layout, mine, regime, params, zero, fsdp)
    f = sharded.state_fraction
    temp = 0 if not sharded.optimizer_on_gpu else mine.optimizer_temp if f == 1.0 else int(mine.optimizer_temp * f)
    walk = mine if temp == mine.optimizer_temp else replace(mine, optimizer_temp=temp)
    if is_model_parallel(layout):
        grad_elem = regime.adapter_bytes if setup.method in (Method.LORA, Method.QLORA) else regime.grad_bytes
        inputs = stage_step_inputs(setup, layout, regime, walk, sharded.persistent, grad_scale=sharded.grad_scale,
                                   stage=stage, layer_grads=tuple(p * grad_elem for p in params.layer_trainable),
                                   sequence_parallel=parallel.sequence_parallel)
    else:
        inputs = step_inputs(setup, regime, walk, sharded.persistent, grad_scale=sharded.grad_scale)
    _, moments = simulate_step(inputs)
    per_micro = next(m.components.get("activations", 0) for m in moments if m.phase == "backward (loss)")
    stash = int(per_micro * (stage.in_flight - 1))
    walked = []
    for m in moments:
        comps = dict(m.components)
        for key, value in sharded.extras.at(m.phase).items():
            comps[key] = comps.get(key, 0) + value
        if stash:
            comps[IN_FLIGHT_KEY] = stash
        walked.append((m.phase, comps, sum(comps.values())))
    phase, components, allocated = max(walked, key=lambda w: w[2])
    if setup.impl.empty_cache_per_step:
        reserved = reserved_from_allocated(allocated, Overhead(reserve_fraction=overhead.reserve_fraction / 2,
                                                               reserve_fixed_bytes=overhead.reserve_fixed_bytes))
    else:
        reserved = reserved_from_allocated(allocated, overhead)
    unified = mine.optimizer_paged if f == 1.0 else int(mine.optimizer_paged * f)
    device = device_from_reserved(reserved, layout.num_gpus, overhead, unified_bytes=unified)
    phases = {p: total for p, _, total in walked
              if not p.startswith("backward (layer") or p.endswith("(layer 0)")}
    return StageMemory(stage=stage, state=mine, sharded=sharded, components=components, allocated=allocated,
                       reserved=reserved, device=device, unified=unified, phase=phase, phases=phases,
                       saved_activations=per_micro + stash)


def stage_memories(setup: TrainingSetup, layout: Layout, *, overhead: Overhead | None = None,
                   zero: ZeroConfig | None = None, fsdp: FsdpConfig | None = None,
                   parallel: ParallelConfig | None = None) -> tuple[tuple[StageMemory, ...], Regime, list[str]]:
    """Every pipeline stage's peak (one stage without pipeline parallelism), the regime, and notes."""
    zero, parallel = zero or ZeroConfig(), parallel or ParallelConfig()   # fsdp None: the framework's
    check_sharding(layout, zero)
    check_layout(setup, layout, parallel)
    setup, switched = engine_setup(setup, layout)
    regime = resolve_regime(setup)
    state = model_state(setup, regime)
    stages = tuple(_stage_memory(setup, layout, regime, state, stage, zero=zero, fsdp=fsdp, parallel=parallel,
                                 overhead=overhead or Overhead())
                   for stage in pipeline_stages(setup, layout, parallel))
    notes = [switched] if switched else []
    return stages, regime, notes + _parallel_notes(setup, layout, parallel, stages)


def _parallel_notes(setup: TrainingSetup, layout: Layout, parallel: ParallelConfig,
                    stages: tuple[StageMemory, ...]) -> list[str]:
    notes = []
    if layout.tp > 1:
        sp = "with sequence parallelism (every saved tensor / tp)" if parallel.sequence_parallel else \
            "without sequence parallelism (norms, dropout masks, layer inputs replicated)"
        notes.append(f"tensor parallel {layout.tp}: Q/K/V/gate/up column-parallel, O/down row-parallel, embedding "
                     f"and head vocabulary-parallel, norms replicated; activations {sp}")
    if layout.cp > 1:
        notes.append(f"context parallel {layout.cp}: {setup.seq_len // layout.cp} tokens of each sequence per GPU")
    if layout.ep > 1:
        notes.append(f"expert parallel {layout.ep}: {setup.model.moe.num_experts // layout.ep} experts per GPU; "
                     "routed tokens assumed evenly balanced")
    if layout.pp > 1:
        schedule = "1F1B" if parallel.virtual_stages == 1 else f"interleaved 1F1B ({parallel.virtual_stages} chunks)"
        parts = [f"{i}: {len(s.stage.layers)} layers, {s.stage.in_flight:g} micro-batches, {gib(s.device):.1f} GiB"
                 for i, s in enumerate(stages)]
        notes.append(f"pipeline {layout.pp} stages, {schedule}, {setup.grad_accum} micro-batches: " + "; ".join(parts))
        if setup.grad_accum < layout.pp:
            notes.append(f"only {setup.grad_accum} micro-batches for {layout.pp} stages: most of the pipeline idles "
                         "(set --grad-accum >= --pp)")
    return notes


def estimate_memory(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, *, headroom: float = 0.10,
                    overhead: Overhead | None = None, zero: ZeroConfig | None = None,
                    fsdp: FsdpConfig | None = None, parallel: ParallelConfig | None = None) -> MemoryEstimate:
    """Peak memory of the most loaded GPU of `layout` (DeepSpeed/FSDP/Megatron knobs default as theirs)."""
    overhead = overhead or Overhead()
    stages, regime, extra_notes = stage_memories(setup, layout, overhead=overhead, zero=zero, fsdp=fsdp,
                                                 parallel=parallel)
    worst = max(stages, key=lambda s: s.device)
    cpu = max(cpu_ram_bytes(layout, s.sharded) for s in stages)
    notes = [regime.description] + extra_notes + list(worst.sharded.notes)
    warning = cpu_ram_note(layout, cpu)
    if warning:
        notes.append(warning)
    capacity = gpu.capacity_bytes
    return MemoryEstimate(
        components_bytes=worst.components,
        peak_allocated_bytes=worst.allocated,
        peak_reserved_bytes=worst.reserved,
        device_bytes=worst.device,
        gpu_capacity_bytes=capacity,
        usable_bytes=int(capacity * (1 - headroom)),
        headroom=headroom,
        peak_phase=worst.phase if len(stages) == 1 else f"{worst.phase}, pipeline stage {worst.stage.index}",
        cpu_ram_bytes=cpu,
        saved_activations_bytes=worst.saved_activations,
        phases_bytes=worst.phases,
        overhead_bytes={"allocator_reserve": worst.reserved - worst.allocated,
                        "cuda_context": overhead.cuda_context_bytes,
                        "nccl": overhead.nccl_bytes if layout.num_gpus > 1 else 0,
                        "paged_optimizer": worst.unified},
        per_stage_bytes=tuple(s.device for s in stages) if len(stages) > 1 else (),
        notes=tuple(notes),
    )
