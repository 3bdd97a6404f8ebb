"""Data-parallel sharding of the model state (DDP, ZeRO-1/2/3, FSDP) and CPU offload.

Semantics (ZeRO paper, Rajbhandari et al. 2020; DeepSpeed runtime/zero; PyTorch FSDP docs):
- DDP: every GPU holds everything; the reducer adds flat gradient buckets the size of the
  gradients (`gradient_as_bucket_view=False`, the default).
- ZeRO-1 partitions optimizer states (and fp32 master weights) over the data-parallel size,
  ZeRO-2 also gradients, ZeRO-3 also the 16-bit weights; FSDP FULL_SHARD ~ ZeRO-3,
  HYBRID_SHARD shards inside a node and replicates across nodes.
- ZeRO-3/FSDP gather one unit (decoder layer) at a time, plus one prefetched: two layers of
  unsharded 16-bit weights in flight, and one layer of unsharded gradients before reduce-scatter.
- Offload `optimizer` moves states + master weights to CPU RAM (ZeRO-Offload); `params` moves the
  weights too (ZeRO-3 / FSDP CPU offload); `all` both.
Tensor, pipeline, context and expert parallelism are issue 4 and not modelled yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainplan.architecture import structure
from trainplan.enums import Fsdp, Offload, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.memory.regime import Regime
from trainplan.memory.state import ModelState
from trainplan.training import Layout, TrainingSetup
from trainplan.units import GIB

PROCESS_BASELINE_CPU_BYTES = 3 * GIB   # python + torch + CUDA libraries per rank (assumption)
PINNED_BUFFER_CPU_BYTES = 1 * GIB      # pinned staging buffers per rank when offloading


@dataclass(frozen=True, kw_only=True)
class ShardedState:
    persistent: dict[str, int]   # per GPU
    grad_scale: float            # fraction of gradients each GPU keeps
    extra_gpu: dict[str, int]    # buffers that exist only because of the layout
    state_divisor: int
    cpu_offloaded_bytes: int     # per rank
    notes: tuple[str, ...]


def _shard_level(layout: Layout) -> tuple[int, int]:
    """(stage 0-3, sharding group size)."""
    if layout.fsdp is Fsdp.FULL:
        return 3, layout.dp
    if layout.fsdp is Fsdp.HYBRID:
        return 3, min(layout.dp, layout.gpus_per_node)
    return int(layout.zero), layout.dp


def shard_state(setup: TrainingSetup, layout: Layout, state: ModelState, regime: Regime) -> ShardedState:
    for key in ("tp", "pp", "cp", "ep"):
        if getattr(layout, key) != 1:
            raise TrainplanError(f"--{key} > 1 is not modelled yet (tensor/pipeline/context/expert "
                                 "parallelism are planned); use data parallelism with --zero or --fsdp")
    stage, group = _shard_level(layout)
    if stage and layout.num_gpus == 1:
        raise TrainplanError("ZeRO/FSDP shard over several GPUs: with --num-gpus 1 use --zero 0 "
                             "(or --offload with DeepSpeed ZeRO-Offload on one GPU via --zero 2 --num-gpus 1 is "
                             "not meaningful); set --num-gpus")
    offload = layout.offload
    if offload in (Offload.PARAMS, Offload.ALL) and stage < 3:
        raise TrainplanError("--offload params needs ZeRO-3 or FSDP (--zero 3 / --fsdp full)")
    d_states = group if stage >= 1 else 1
    d_grads = group if stage >= 2 else 1
    d_weights = group if stage >= 3 else 1
    notes = []
    persistent = {
        "weights": state.weights // d_weights,
        "quant_constants": state.quant_constants // d_weights,
        "master_weights": state.master_weights // d_states,
        "optimizer": state.optimizer // d_states,
        "fp8_weight_cache": state.fp8_cache // d_weights,
    }
    cpu = 0
    if offload in (Offload.OPTIMIZER, Offload.ALL):
        cpu += persistent.pop("optimizer") + persistent.pop("master_weights")
        cpu += state.gradients // d_grads if regime.master_bytes else 0   # fp32 grad copy on CPU
        notes.append("optimizer states and fp32 master weights offloaded to CPU RAM")
    if offload in (Offload.PARAMS, Offload.ALL):
        cpu += persistent.pop("weights")
        notes.append("parameters offloaded to CPU RAM; fetched layer by layer")
    extra: dict[str, int] = {}
    if layout.dp > 1 and stage == 0:
        extra["ddp_buckets"] = state.gradients
        notes.append("DDP gradient buckets: one flat copy of the gradients (gradient_as_bucket_view=False)")
    if stage >= 3:
        st = structure(setup.model)
        largest_layer = max(kind.params for kind, _ in st.layers)
        w = regime.compute_bytes if state.trainable_params else regime.frozen_weight_bytes
        extra["unsharded_params"] = 2 * largest_layer * w
        extra["unsharded_grads"] = largest_layer * regime.grad_bytes if state.trainable_params > largest_layer else 0
        notes.append("ZeRO-3/FSDP: two decoder layers gathered in flight (current + prefetch)")
    if stage:
        notes.append(f"model state sharded over {group} GPUs (stage {stage})")
    return ShardedState(persistent={k: v for k, v in persistent.items() if v},
                        grad_scale=1.0 / d_grads, extra_gpu=extra, state_divisor=d_states,
                        cpu_offloaded_bytes=cpu, notes=tuple(notes))


def cpu_ram_bytes(setup: TrainingSetup, layout: Layout, state: ModelState, sharded: ShardedState) -> int:
    """CPU RAM per node: per-rank baseline, offloaded state, pinned buffers."""
    ranks = layout.gpus_per_node
    pinned = PINNED_BUFFER_CPU_BYTES if sharded.cpu_offloaded_bytes else 0
    return ranks * (PROCESS_BASELINE_CPU_BYTES + sharded.cpu_offloaded_bytes + pinned)
