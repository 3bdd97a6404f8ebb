"""Data-parallel sharding of one GPU's model state (DDP, DeepSpeed ZeRO-1/2/3, PyTorch FSDP1/FSDP2,
Megatron's distributed optimizer), the buffers each engine adds and when they are alive, and what
offload moves to CPU RAM or NVMe.

Semantics and sources:
- DDP (torch/nn/parallel/distributed.py): the reducer allocates flat gradient buckets as large as
  the gradients at construction (`gradient_as_bucket_view=False`, the default).
- ZeRO (Rajbhandari et al. 2020; deepspeed/runtime/zero/stage_1_and_2.py, stage3.py): stage 1
  partitions the fp32 master weights and optimizer states over the data-parallel group, stage 2
  also the gradients, stage 3 also the 16-bit weights. With bf16 and ZeRO the gradients
  accumulate in bf16 (engine.get_data_types: grad_accum_dtype = model dtype when ZeRO is on), so
  the DeepSpeedZeroOptimizer wrapper is used (BF16_Optimizer only for ZeRO-1 with fp32
  accumulation). Stages 1-2: `backward()` allocates the ipg bucket(s) of reduce_bucket_size
  elements (two with overlap_comm); stage 2 keeps its gradient partition in `grads_in_partition`;
  `step()` builds an fp32 gradient partition (`single_grad_partition`) next to the master weights.
  Stage 3: a flat ipg bucket of reduce_bucket_size elements, parameters gathered per module with
  prefetch, at most stage3_max_live_parameters resident, tensors under
  stage3_param_persistence_threshold elements never partitioned, and the fp32 gradient built one
  sub-group (sub_group_size elements) at a time in `step()`. The updated 16-bit partitions are
  all-gathered in place into the flat buffer: allgather_bucket_size adds nothing here.
- FSDP (PyTorch FSDP1 FullyShardedDataParallel, FSDP2 fully_shard): one unit per decoder layer
  (transformer auto-wrap, as accelerate and torchtitan wrap), gathered in param_dtype (bf16)
  before use and freed after (FULL_SHARD / reshard_after_forward=True): the current unit plus one
  prefetched (FSDP1 limit_all_gathers and BACKWARD_PRE, FSDP2's default); in backward also the
  unit's unsharded gradient before its reduce-scatter. The root unit (embedding, final norm,
  head) is not resharded after forward ("the root FSDP state has its value specially set to
  False", fully_shard docs), and its gradients reduce-scatter only when the whole backward ends.
  SHARD_GRAD_OP / reshard_after_forward=False keeps every unit gathered from forward to backward.
  HYBRID_SHARD shards inside a node and replicates across nodes. CPU offload (FSDP1 CPUOffload,
  FSDP2 CPUOffloadPolicy) moves sharded parameters, gradients and the optimizer step together.
  Gradient accumulation without synchronisation (FSDP1 `no_sync()`, used by Lightning Fabric's
  `no_backward_sync` and by Accelerate's `accumulate()` unless `sync_each_batch`; FSDP2
  `set_requires_gradient_sync(False)`): the post-backward hook skips the reduce-scatter and keeps
  each unit's gradient unsharded (torch/distributed/fsdp/_runtime_utils.py `_post_backward_hook`:
  `if not state._sync_gradients: handle._use_unsharded_grad_views(); return`), so by the end of a
  micro-batch's backward every unit's full gradient is on every GPU. FSDP1 with use_orig_params
  (Fabric's and Accelerate's default) flattens frozen and trainable parameters of a unit into one
  flat parameter that requires grad when any of them does (_flat_param.py
  `_validate_tensors_to_flatten`): a LoRA unit's gradient covers its frozen weights too.
- Megatron (distrib_optimizer.md): the contiguous gradient buffer exists from the start and is
  not sharded; the distributed optimizer shards master weights and Adam over dp x cp ("6 + 12/d"
  bytes/param with bf16 params and fp32 grads). Expert parameters shard over dp x cp / ep.
"""

from __future__ import annotations

from trainplan.enums import Framework, Fsdp, Method, Offload, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.parallel import GpuParams, is_model_parallel
from trainplan.memory.regime import Regime
from trainplan.memory.state import ModelState
from trainplan.units import GIB, gib

PROCESS_BASELINE_CPU_BYTES = 3 * GIB   # python + torch + CUDA libraries per rank (assumption)
PINNED_BUFFER_CPU_BYTES = 1 * GIB      # pinned staging buffers per rank when offloading (assumption)
TYPICAL_NODE_CPU_BYTES = 1024 * GIB    # 8-GPU nodes carry 1-2 TiB (AWS p4d.24xlarge 1152 GiB, p5.48xlarge 2 TiB)


@frozen
class ZeroConfig:
    """DeepSpeed `zero_optimization` knobs, defaults from deepspeed/runtime/zero/config.py and
    offload_config.py (DeepSpeed docs, "ZeRO Optimizations for FP16 Training")."""

    reduce_bucket_size: int = 500_000_000         # elements
    allgather_bucket_size: int = 500_000_000      # elements (in-place all-gather: no extra memory)
    prefetch_bucket_size: int = 50_000_000        # stage3_prefetch_bucket_size, elements
    max_live_parameters: int = 1_000_000_000      # stage3_max_live_parameters
    max_reuse_distance: int = 1_000_000_000       # stage3_max_reuse_distance
    param_persistence_threshold: int = 100_000    # stage3_param_persistence_threshold
    sub_group_size: int = 1_000_000_000
    overlap_comm: bool | None = None              # None: True for stage 3, False for 1-2 (validator)
    contiguous_gradients: bool = True
    offload_device: str = "cpu"                   # "cpu" (ZeRO-Offload) or "nvme" (ZeRO-Infinity)
    nvme_param_buffers: int = 5                   # offload_param.buffer_count
    nvme_param_buffer_size: int = 100_000_000     # offload_param.buffer_size, elements
    nvme_optimizer_buffers: int = 4               # offload_optimizer.buffer_count

    def __post_init__(self) -> None:
        if self.offload_device not in ("cpu", "nvme"):
            raise TrainplanError(f"ZeRO offload device must be cpu or nvme, got {self.offload_device!r}")

    @classmethod
    def hf_auto(cls, hidden_size: int, **overrides) -> ZeroConfig:
        """What transformers' HfTrainerDeepSpeedConfig fills for "auto" (integrations/deepspeed.py):
        reduce_bucket_size = h^2, stage3_prefetch_bucket_size = 0.9 h^2, persistence threshold = 10 h."""
        h2 = hidden_size * hidden_size
        return cls(**{"reduce_bucket_size": h2, "prefetch_bucket_size": int(0.9 * h2),
                      "param_persistence_threshold": 10 * hidden_size, **overrides})

    def overlap(self, stage: int) -> bool:
        return self.overlap_comm if self.overlap_comm is not None else stage == 3


@frozen
class FsdpConfig:
    """PyTorch FSDP knobs (defaults: FSDP2 fully_shard, one unit prefetched)."""

    version: int = 2
    reshard_after_forward: bool = True    # False: SHARD_GRAD_OP (FSDP1) / reshard_after_forward=False
    prefetch_units: int = 1
    sync_every_microbatch: bool = True    # False: no_sync accumulation, unsharded gradients until the last
    whole_unit_grads: bool = False        # FSDP1 use_orig_params: a unit with any trainable param gets a full gradient

    def __post_init__(self) -> None:
        if self.version not in (1, 2):
            raise TrainplanError(f"FSDP version must be 1 or 2, got {self.version}")


@frozen
class PhaseExtras:
    """Buffers a layout adds, by when they are alive: always, in forward, in backward, in step()."""

    always: dict[str, int] = field(default_factory=dict)
    forward: dict[str, int] = field(default_factory=dict)
    backward: dict[str, int] = field(default_factory=dict)
    optimizer: dict[str, int] = field(default_factory=dict)

    def at(self, phase: str) -> dict[str, int]:
        """The extras alive at a moment of the step walk (peak.simulate_step phase names)."""
        if phase.startswith("forward"):
            part = self.forward
        elif phase.startswith("optimizer"):
            part = self.optimizer
        else:
            part = self.backward
        out = dict(self.always)
        for key, value in part.items():
            out[key] = out.get(key, 0) + value
        return {k: v for k, v in out.items() if v}


@frozen
class ShardedState:
    persistent: dict[str, int]        # per GPU, for the whole step
    grad_scale: float                 # fraction of each gradient the walk keeps on this GPU
    extras: PhaseExtras
    state_fraction: float             # fraction of the optimizer states held on this GPU
    cpu_bytes: dict[str, int]         # per rank, in CPU RAM
    nvme_bytes: int                   # per rank, on NVMe (ZeRO-Infinity)
    optimizer_on_gpu: bool            # False when step() runs on the CPU (its temporaries too)
    notes: tuple[str, ...]

    @property
    def cpu_offloaded_bytes(self) -> int:
        return sum(self.cpu_bytes.values())


# What each framework's FSDP integration does by default (see the module docstring).
_FSDP1_NO_SYNC = FsdpConfig(version=1, sync_every_microbatch=False, whole_unit_grads=True)
FSDP_BY_FRAMEWORK = {Framework.LITGPT: _FSDP1_NO_SYNC, Framework.HF: _FSDP1_NO_SYNC,
                     Framework.LLAMAFACTORY: _FSDP1_NO_SYNC, Framework.SWIFT: _FSDP1_NO_SYNC,
                     Framework.AXOLOTL: _FSDP1_NO_SYNC, Framework.TRL: _FSDP1_NO_SYNC}


def fsdp_for(framework: Framework) -> FsdpConfig:
    """The FSDP behaviour a framework's integration gives (FSDP2, synchronising, otherwise)."""
    return FSDP_BY_FRAMEWORK.get(framework, FsdpConfig())


def shard_level(layout: Layout) -> tuple[int, int]:
    """(stage 0-3, sharding group size): the group is dp x cp (context-parallel ranks hold the same
    weights); HYBRID_SHARD stops at the node."""
    dp = layout.dp_cp
    if layout.fsdp is Fsdp.FULL:
        return 3, dp
    if layout.fsdp is Fsdp.HYBRID:
        return 3, min(dp, max(1, layout.gpus_per_node // layout.tp))
    return int(layout.zero), dp


def check_sharding(layout: Layout, zero: ZeroConfig) -> None:
    """One-line TrainplanError for data-parallel choices that do not exist."""
    stage, _ = shard_level(layout)
    fsdp = layout.fsdp is not Fsdp.NONE
    name = "--fsdp" if fsdp else f"--zero {int(layout.zero)}"
    if stage and layout.num_gpus == 1 and layout.offload is Offload.NONE:
        raise TrainplanError(f"{name} shards model state over several GPUs but --num-gpus is 1: use --zero 0, "
                             "more GPUs, or add --offload optimizer (ZeRO-Offload on one GPU)")
    if layout.offload is not Offload.NONE and not stage:
        raise TrainplanError(f"--offload {layout.offload} needs DeepSpeed ZeRO (--zero 1-3) or --fsdp")
    if layout.offload in (Offload.PARAMS, Offload.ALL) and stage < 3:
        raise TrainplanError(f"--offload {layout.offload} needs ZeRO-3 or FSDP (--zero 3 / --fsdp full); "
                             f"got --zero {int(layout.zero)}")
    if fsdp and layout.offload is Offload.OPTIMIZER:
        raise TrainplanError("FSDP's CPU offload moves parameters, gradients and optimizer states together: "
                             "use --offload all (or --zero 1-3 for optimizer-only offload)")
    if fsdp and zero.offload_device == "nvme":
        raise TrainplanError("FSDP offloads to CPU RAM only; NVMe offload is DeepSpeed ZeRO-Infinity (--zero 3)")
    if layout.zero >= ZeroStage.GRADIENTS and layout.pp > 1:
        raise TrainplanError(f"--zero {int(layout.zero)} with --pp {layout.pp}: DeepSpeed's pipeline engine and "
                             "Megatron shard the optimizer only (ZeRO-1); use --zero 1")


def _part(value: int, fraction: float) -> int:
    return value if fraction == 1.0 else int(value * fraction)


def _fmt(n_bytes: float) -> str:
    return f"{gib(n_bytes):.2f} GiB"


def _bytes_per_param(state: ModelState, params: GpuParams) -> float:
    """Average stored bytes per parameter of this GPU's weights (16-bit, or packed 4-bit for QLoRA)."""
    total = params.trainable + params.frozen + params.quantized
    return state.weights / total if total else 0.0


def shard_state(setup: TrainingSetup, layout: Layout, state: ModelState, regime: Regime, params: GpuParams,
                zero: ZeroConfig, fsdp: FsdpConfig | None) -> ShardedState:
    """Shard one GPU's model state over the data-parallel group and add the engine's buffers.
    `fsdp` None: the framework's FSDP behaviour (fsdp_for)."""
    fsdp = fsdp or fsdp_for(setup.framework)
    stage, group = shard_level(layout)
    # Expert parameters are already / (ep x expert tp) on this GPU and shard over the expert data-parallel
    # group only, GPUs / (pp x ep x expert tp) = (dp x cp) x tp / (ep x expert tp) (Layout.expert_dp)
    e = params.expert_fraction
    fraction = (1.0 - e + e * layout.ep * layout.expert_tp / layout.tp) / group if stage else 1.0
    f_states = fraction if stage >= 1 else 1.0
    f_grads = fraction if stage >= 2 else 1.0
    f_weights = fraction if stage >= 3 else 1.0
    persistent = {
        "weights": _part(state.weights, f_weights),
        "quant_constants": _part(state.quant_constants, f_weights),
        "master_weights": _part(state.master_weights, f_states),
        "optimizer": _part(state.optimizer, f_states),
        "fp8_weight_cache": _part(state.fp8_cache, f_weights),
        "reference_model": _part(state.reference_weights, f_weights),   # prepared like the policy (sharded)
    }
    grad_scale = f_grads
    notes: list[str] = []
    extras = PhaseExtras()
    is_fsdp = layout.fsdp is not Fsdp.NONE
    megatron = is_model_parallel(layout) and not is_fsdp and stage <= 1
    if megatron:
        extras.always["grad_buffer"] = state.gradients
        grad_scale = 0.0
        what = "distributed optimizer" if stage else "no optimizer sharding"
        notes.append(f"Megatron: contiguous gradient buffer ({_fmt(state.gradients)}) from the start; {what}"
                     + (f" over dp x cp = {group}" if stage else ""))
    elif stage == 0 and layout.dp > 1:
        extras.always["ddp_buckets"] = state.gradients
        notes.append("DDP gradient buckets: one flat copy of the gradients (gradient_as_bucket_view=False)")
    elif is_fsdp:
        _fsdp_extras(extras, layout, state, regime, params, fsdp, notes)
        _fsdp_grad_extras(extras, setup, regime, params, fsdp, group, notes, pipelined=layout.pp > 1)
    elif stage:
        _zero_extras(extras, stage, state, regime, params, zero, f_states, layout.offload, notes)
        if stage == 3 and layout.offload in (Offload.NONE, Offload.PARAMS):
            # DeepSpeed ZeRO-3 allocates every trainable parameter's gradient partition when the
            # optimizer is set up (stage3.py _setup_for_real_optimizer: grad_partitions_flat_buffer =
            # torch.zeros(sum of partition_numel, dtype=gradient_accumulation_dtype, device=self.device),
            # the GPU unless the optimizer is offloaded; DeepSpeed 0.19.8): held from the first step on.
            persistent["gradients"] = _part(state.gradients, f_grads)
            grad_scale = 0.0
            notes.append("ZeRO-3: the gradient partitions of all trainable parameters are allocated at "
                         "initialisation (grad_partitions_flat_buffer), not as backward produces them")
    cpu, nvme, grad_scale = _offload(layout, zero, persistent, state, regime, f_states, f_grads, grad_scale,
                                     is_fsdp, notes)
    if stage:
        notes.append(f"model state sharded over {group} GPUs (stage {stage})")
    return ShardedState(persistent={k: v for k, v in persistent.items() if v}, grad_scale=grad_scale,
                        extras=extras, state_fraction=f_states, cpu_bytes=cpu, nvme_bytes=nvme,
                        optimizer_on_gpu=layout.offload in (Offload.NONE, Offload.PARAMS) and not (
                            is_fsdp and layout.offload is not Offload.NONE),
                        notes=tuple(notes))


def zero3_live_params(params: GpuParams, zero: ZeroConfig) -> int:
    """Gathered ZeRO-3 parameters at the forward/backward turn, where reuse keeps the most: the
    current module plus a prefetch bucket at least, at most max_live_parameters (and the reuse
    distance), never more than the stage holds."""
    held = params.layers_total + params.root
    cap = min(zero.max_live_parameters, zero.max_reuse_distance, held)
    return min(held, max(params.largest_tensor + zero.prefetch_bucket_size, cap))


def _zero_extras(extras: PhaseExtras, stage: int, state: ModelState, regime: Regime, params: GpuParams,
                 zero: ZeroConfig, f_states: float, offload: Offload, notes: list[str]) -> None:
    elem = regime.compute_bytes
    offloaded = offload is not Offload.NONE
    fp32_grads = 4 * state.trainable_params if regime.master_bytes else 0
    if stage < 3:
        buffers = (2 if zero.overlap(stage) else 1) if zero.contiguous_gradients else 0
        extras.backward["zero_reduce_buckets"] = buffers * zero.reduce_bucket_size * elem
        if not offloaded:
            extras.optimizer["fp32_grad_partition"] = _part(fp32_grads, f_states)
        notes.append(f"ZeRO-{stage}: {buffers} reduce bucket(s) of {zero.reduce_bucket_size:.3g} elements in backward"
                     + ("" if offloaded else "; fp32 gradient partition built in step()"))
        return
    live = zero3_live_params(params, zero)
    per_param = _bytes_per_param(state, params)
    extras.always["zero3_reduce_bucket"] = zero.reduce_bucket_size * elem
    extras.always["zero3_persistent_params"] = int(params.small * per_param)
    extras.forward["zero3_gathered_params"] = int(live * per_param)
    extras.backward["zero3_gathered_params"] = int(live * per_param)
    if state.trainable_params >= params.largest_tensor:     # a full module's 16-bit gradient before reduce
        extras.backward["zero3_unsharded_grad"] = params.largest_tensor * regime.grad_bytes
    if not offloaded and fp32_grads:
        extras.optimizer["fp32_grad_subgroup"] = 4 * min(zero.sub_group_size, int(state.trainable_params * f_states))
    notes.append(f"ZeRO-3: {live:.3g} parameters gathered at most (stage3_max_live_parameters "
                 f"{zero.max_live_parameters:.3g}, prefetch {zero.prefetch_bucket_size:.3g}), tensors under "
                 f"{zero.param_persistence_threshold:.3g} elements kept whole, reduce bucket "
                 f"{zero.reduce_bucket_size:.3g} elements")


def _fsdp_extras(extras: PhaseExtras, layout: Layout, state: ModelState, regime: Regime, params: GpuParams,
                 fsdp: FsdpConfig, notes: list[str]) -> None:
    elem = regime.compute_bytes
    per_param = min(float(elem), _bytes_per_param(state, params)) if params.quantized else float(elem)
    unit = int(params.largest_layer * per_param)
    if fsdp.reshard_after_forward:
        gathered = (1 + fsdp.prefetch_units) * unit
    else:
        gathered = int(params.layers_total * per_param)
    extras.forward["fsdp_unsharded_units"] = gathered
    extras.backward["fsdp_unsharded_units"] = gathered
    extras.forward["fsdp_root_unsharded"] = int(params.root * per_param)
    extras.backward["fsdp_root_unsharded"] = int(params.root * per_param)
    mode = "FULL_SHARD" if fsdp.reshard_after_forward else "SHARD_GRAD_OP"
    if layout.fsdp is Fsdp.HYBRID:
        mode = "HYBRID_SHARD"
    notes.append(f"FSDP{fsdp.version} {mode}: decoder-layer units gathered in bf16 "
                 f"({1 + fsdp.prefetch_units if fsdp.reshard_after_forward else 'all'} in flight), root unit "
                 "(embedding/norm/head) kept gathered through backward")


def _fsdp_grad_extras(extras: PhaseExtras, setup: TrainingSetup, regime: Regime, params: GpuParams,
                      fsdp: FsdpConfig, group: int, notes: list[str], *, pipelined: bool = False) -> None:
    """The gradients FSDP holds beyond each GPU's shard of the trainable ones: a unit's unsharded
    gradient before its reduce-scatter, whole units under use_orig_params, every unit's unsharded
    gradient at the end of an unsynchronised micro-batch.

    Pipeline parallelism over FSDP2 (torch.distributed.pipelining, torchtitan): the stage runs every
    micro-batch's backward with set_requires_gradient_sync(False) and set_reshard_after_backward(False)
    and reduce-scatters once, after the last (pipelining/stage.py backward_maybe_with_nosync); FSDP2's
    post-backward then keeps each unit's unsharded gradient, cast to the reduce dtype
    (_fsdp_param_group.py post_backward: to_accumulated_grad_if_needed, `unsharded_grad.to(self.reduce_dtype)`):
    the stage's whole gradient, unsharded, in fp32 under torchtitan's MixedPrecisionPolicy(reduce_dtype=float32),
    from the first backward to the last."""
    elem, shard_elem = regime.compute_bytes, regime.grad_bytes   # unsharded in param_dtype, shards in theirs
    whole = fsdp.version == 1 and fsdp.whole_unit_grads
    adapters = setup.method in (Method.LORA, Method.QLORA)     # layer_trainable counts the adapters only
    units = [params.largest_layer + t if whole and adapters and t else t for t in params.layer_trainable]
    root = params.root if whole and params.root_trainable else params.root_trainable
    extras.backward["fsdp_unsharded_grads"] = (max(units, default=0) + root) * elem
    frozen_in_units = sum(units) + root - sum(params.layer_trainable) - params.root_trainable
    fsdp2_pipeline = pipelined and fsdp.version == 2
    unsynced = (setup.grad_accum > 1 and not fsdp.sync_every_microbatch) or fsdp2_pipeline
    if frozen_in_units > 0:
        shards = frozen_in_units * shard_elem // max(1, group)
        extras.optimizer["fsdp_frozen_grad_shards"] = shards
        if not unsynced:      # under no_sync the unsharded gradients below are the larger moment
            extras.backward["fsdp_frozen_grad_shards"] = shards
        notes.append("FSDP1 use_orig_params: frozen and trainable parameters share each unit's flat parameter, "
                     "so its gradient covers the frozen weights too")
    if fsdp2_pipeline:   # reduce dtype fp32: torchtitan's mixed_precision_reduce default (job/defaults/torchtitan.py)
        extras.backward["fsdp_unsynced_grads"] = (sum(units) + root) * 4
        notes.append("pipeline over FSDP2: each stage keeps its whole gradient unsharded (in the reduce dtype) from "
                     "the first micro-batch's backward to the reduce-scatter after the last (torch.distributed."
                     "pipelining: gradient sync off for every micro-batch)")
    elif unsynced:
        extras.backward["fsdp_unsynced_grads"] = (sum(units) + root) * elem
        notes.append(f"FSDP gradient accumulation without sync (no_sync): each unit's gradient stays unsharded "
                     f"on every GPU until the last of {setup.grad_accum} micro-batches; syncing every micro-batch "
                     "(Accelerate GradientAccumulationPlugin(sync_each_batch=True)) or --grad-accum 1 avoids it "
                     "at one reduce-scatter per micro-batch")


def _offload(layout: Layout, zero: ZeroConfig, persistent: dict[str, int], state: ModelState, regime: Regime,
             f_states: float, f_grads: float, grad_scale: float, is_fsdp: bool,
             notes: list[str]) -> tuple[dict[str, int], int, float]:
    """Move state out of `persistent`; return (CPU bytes per rank, NVMe bytes per rank, grad scale)."""
    offload = layout.offload
    cpu: dict[str, int] = {}
    nvme = 0
    if offload is Offload.NONE:
        return cpu, nvme, grad_scale
    to_nvme = zero.offload_device == "nvme"
    if is_fsdp:        # FSDP CPU offload: sharded params, grads and the optimizer step on CPU
        for key in ("weights", "quant_constants", "master_weights", "optimizer"):
            cpu[key] = persistent.pop(key)
        cpu["gradients"] = _part(state.gradients, f_grads)
        notes.append("FSDP CPU offload: sharded parameters, gradients and optimizer step on the CPU")
        return cpu, nvme, 0.0
    if offload is Offload.PARAMS:          # ZeRO-3 parameter offload only: the optimizer stays on the GPU
        moved = {"weights": persistent.pop("weights"), "quant_constants": persistent.pop("quant_constants")}
    else:
        grads = 4 * state.trainable_params if regime.master_bytes else state.gradients
        moved = {"master_weights": persistent.pop("master_weights"), "optimizer": persistent.pop("optimizer"),
                 "fp32_gradients": _part(grads, f_states)}
        if offload is Offload.ALL:
            moved["weights"] = persistent.pop("weights")
            moved["quant_constants"] = persistent.pop("quant_constants")
        grad_scale = 0.0                   # 16-bit gradients leave the GPU bucket by bucket
    if to_nvme:
        nvme = sum(moved.values())
        sub = min(zero.sub_group_size, int(state.trainable_params * f_states))
        cpu["nvme_optimizer_swap_buffers"] = zero.nvme_optimizer_buffers * sub * 4 if "optimizer" in moved else 0
        cpu["nvme_param_swap_buffers"] = (zero.nvme_param_buffers * zero.nvme_param_buffer_size
                                          * regime.compute_bytes if "weights" in moved else 0)
        notes.append(f"ZeRO-Infinity: {_fmt(nvme)} per rank on NVMe, swapped through pinned CPU buffers")
    else:
        cpu.update(moved)
        label = "ZeRO-3 offload" if layout.zero >= ZeroStage.PARAMETERS else "ZeRO-Offload"
        notes.append(f"{label}: " + ", ".join(k for k, v in moved.items() if v) + " in CPU RAM"
                     + ("; the optimizer step runs on the CPU" if "optimizer" in moved else ""))
    return {k: v for k, v in cpu.items() if v}, nvme, grad_scale


def cpu_ram_bytes(layout: Layout, sharded: ShardedState) -> int:
    """CPU RAM per node: per-rank baseline, offloaded state, pinned staging buffers."""
    pinned = PINNED_BUFFER_CPU_BYTES if sharded.cpu_offloaded_bytes else 0
    return layout.gpus_per_node * (PROCESS_BASELINE_CPU_BYTES + sharded.cpu_offloaded_bytes + pinned)


def cpu_ram_note(layout: Layout, total: int) -> str | None:
    if total <= TYPICAL_NODE_CPU_BYTES:
        return None
    return (f"warning: {_fmt(total)} of CPU RAM per node ({layout.gpus_per_node} ranks) exceeds "
            f"{_fmt(TYPICAL_NODE_CPU_BYTES)}, a typical 8-GPU node (1-2 TiB): use more nodes or NVMe offload")
