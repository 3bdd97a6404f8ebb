"""Memory per GPU: model state + activations + logits, walked through one step to find the peak,
then the allocator's reserve and the CUDA context on top (three views).

Several GPUs: tensor/expert parallelism and the pipeline stage decide what one GPU holds
(parallel.py), the data-parallel engine shards it and adds its buffers (sharding.py), each
pipeline stage is walked on its own, and the most loaded GPU is the answer. One composition does
it all (model.py, MemoryModel): `estimate_memory` reads its breakdown, the planner its numbers.
"""

from __future__ import annotations

from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.model import MemoryModel, StageMemory
from trainplan.memory.overhead import Overhead
from trainplan.memory.parallel import ParallelConfig
from trainplan.memory.result import MemoryEstimate, usable_bytes
from trainplan.memory.sharding import (
    FsdpConfig,
    ZeroConfig,
    cpu_ram_bytes,
    cpu_ram_note,
)
from trainplan.memory.stages import Stage
from trainplan.specs import GpuSpec
from trainplan.units import gib

__all__ = ["FsdpConfig", "MemoryEstimate", "MemoryModel", "Overhead", "ParallelConfig", "StageMemory", "ZeroConfig",
           "estimate_memory"]


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
    if setup.model.moe is not None and layout.expert_tp > 1:
        notes.append(f"expert tensor parallel {layout.expert_tp}: each routed expert split over {layout.expert_tp} "
                     f"GPUs, {layout.expert_dp} expert data-parallel ranks"
                     + (" (as tp: Megatron-Core's default when --etp is unset)" if layout.etp is None else ""))
    if layout.pp > 1:
        schedule = "1F1B" if parallel.virtual_stages == 1 else f"interleaved 1F1B ({parallel.virtual_stages} chunks)"
        if parallel.dual_pipe:
            schedule = "DualPipe (rank i holds stages i and p-1-i: two copies of the parameters)"
        parts = [f"{i}: {_stage_holds(s.stage)}, {s.stage.in_flight:g} micro-batches, {gib(s.device):.1f} GiB"
                 for i, s in enumerate(stages)]
        notes.append(f"pipeline {layout.pp} stages, {schedule}, {setup.grad_accum} micro-batches: " + "; ".join(parts))
        if setup.grad_accum < layout.pp:
            notes.append(f"only {setup.grad_accum} micro-batches for {layout.pp} stages: most of the pipeline idles "
                         "(set --grad-accum >= --pp)")
    return notes


def _stage_holds(stage: Stage) -> str:
    """A pipeline stage's share as the note says it: its decoder layers, or the embedding or the loss alone."""
    if stage.layers:
        return f"{len(stage.layers)} layers"
    return "the embedding only" if stage.has_embedding else "the LM head and the loss only"


def estimate_memory(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, *, headroom: float = 0.10,
                    overhead: Overhead | None = None, zero: ZeroConfig | None = None,
                    fsdp: FsdpConfig | None = None, parallel: ParallelConfig | None = None,
                    model: MemoryModel | None = None) -> MemoryEstimate:
    """Peak memory of the most loaded GPU of `layout` (DeepSpeed/FSDP/Megatron knobs default as theirs).
    `model`: a MemoryModel whose caches to share (its overhead and knobs are then the ones used)."""
    if model is None:
        model = MemoryModel(overhead=overhead, zero=zero, fsdp=fsdp, parallel=parallel)
    stages, variant = model.stages(setup, layout)
    worst = max(stages, key=lambda s: s.device)
    cpu = max(cpu_ram_bytes(layout, s.sharded) for s in stages)
    notes = [variant.regime.description, *variant.notes]
    notes += _parallel_notes(variant.setup, layout, model.parallel, stages) + list(worst.sharded.notes)
    warning = cpu_ram_note(layout, cpu)
    if warning:
        notes.append(warning)
    capacity = gpu.capacity_bytes
    over = model.overhead
    return MemoryEstimate(
        components_bytes=worst.components,
        peak_allocated_bytes=worst.allocated,
        peak_reserved_bytes=worst.reserved,
        device_bytes=worst.device,
        gpu_capacity_bytes=capacity,
        usable_bytes=usable_bytes(capacity, headroom),
        headroom=headroom,
        peak_phase=worst.phase if len(stages) == 1 else f"{worst.phase}, pipeline stage {worst.stage.index}",
        cpu_ram_bytes=cpu,
        saved_activations_bytes=worst.saved_activations,
        phases_bytes=worst.phases,
        overhead_bytes={"allocator_reserve": worst.reserved - worst.allocated,
                        "cuda_context": over.cuda_context_bytes,
                        "nccl": over.nccl_bytes if layout.num_gpus > 1 else 0,
                        "paged_optimizer": worst.unified},
        per_stage_bytes=tuple(s.device for s in stages) if len(stages) > 1 else (),
        notes=tuple(notes),
    )
