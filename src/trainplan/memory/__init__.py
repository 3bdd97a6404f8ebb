"""Memory per GPU: model state + activations + logits, walked through one step to find the peak,
then the allocator's reserve and the CUDA context on top (three views)."""

from __future__ import annotations

from trainplan.memory.build import step_inputs
from trainplan.memory.overhead import Overhead, device_from_reserved, reserved_from_allocated
from trainplan.memory.peak import simulate_step
from trainplan.memory.regime import resolve_regime
from trainplan.memory.result import MemoryEstimate
from trainplan.memory.sharding import cpu_ram_bytes, shard_state
from trainplan.memory.state import model_state
from trainplan.specs import GpuSpec
from trainplan.training import Layout, TrainingSetup

__all__ = ["MemoryEstimate", "Overhead", "estimate_memory"]


def estimate_memory(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, *, headroom: float = 0.10,
                    overhead: Overhead | None = None) -> MemoryEstimate:
    overhead = overhead or Overhead()
    regime = resolve_regime(setup)
    state = model_state(setup, regime)
    sharded = shard_state(setup, layout, state, regime)
    inputs = step_inputs(setup, regime, state, sharded.persistent, grad_scale=sharded.grad_scale)
    peak, moments = simulate_step(inputs)
    components = dict(peak.components)
    for key, value in sharded.extra_gpu.items():
        components[key] = components.get(key, 0) + value
    allocated = sum(components.values())
    if setup.impl.empty_cache_per_step:
        reserved = reserved_from_allocated(allocated, Overhead(reserve_fraction=overhead.reserve_fraction / 2,
                                                               reserve_fixed_bytes=overhead.reserve_fixed_bytes))
    else:
        reserved = reserved_from_allocated(allocated, overhead)
    unified = state.optimizer_paged // (sharded.state_divisor or 1)
    device = device_from_reserved(reserved, layout.num_gpus, overhead, unified_bytes=unified)
    capacity = gpu.capacity_bytes
    notes = [regime.description] + list(sharded.notes)
    return MemoryEstimate(
        components_bytes=components,
        peak_allocated_bytes=allocated,
        peak_reserved_bytes=reserved,
        device_bytes=device,
        gpu_capacity_bytes=capacity,
        usable_bytes=int(capacity * (1 - headroom)),
        headroom=headroom,
        peak_phase=peak.phase,
        cpu_ram_bytes=cpu_ram_bytes(setup, layout, state, sharded),
        saved_activations_bytes=next(m.components.get("activations", 0) for m in moments
                                     if m.phase == "backward (loss)"),
        phases_bytes={m.phase: m.total for m in moments if not m.phase.startswith("backward (layer")
                      or m.phase.endswith("(layer 0)")},
        overhead_bytes={"allocator_reserve": reserved - allocated,
                        "cuda_context": overhead.cuda_context_bytes,
                        "nccl": overhead.nccl_bytes if layout.num_gpus > 1 else 0,
                        "paged_optimizer": unified},
        notes=tuple(notes),
    )
