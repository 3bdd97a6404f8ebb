"""The one memory composition: per pipeline stage, persistent state + the step walk + the buffers the
layout adds, each part computed once and reused across layouts, stages and setups.

A GPU's allocated memory at a moment of the step (memory/peak.step_moments) is

    persistent state (sharding.shard_state)  +  the walk's moment (activations, gradients, logits,
    temporaries)  +  the layout's buffers alive in that phase (forward / backward / optimizer)
    +  the pipeline stash (other micro-batches' saved activations),

and its peak the largest such moment. Persistent state and stash are constant over the step and
the buffers constant within a phase, so the peak is the walk's largest moment of the phase with
the most (moment + buffers): `_peak` finds it, and both answers read it:

- `MemoryModel.stages`: the breakdown at that moment (the components add up to the allocated
  peak), the reserved and device views, the phase totals: what `estimate_memory` returns;
- `MemoryModel.stage_device_bytes`: the same peaks as numbers only, for the planner and `fit`,
  which ask tens of thousands of layouts.

What each part depends on (so what is cached, and keyed by):
- model state, regime and a GPU's parameters: the setup (not micro-batch or sequence) and tp/pp/ep;
- the step inputs (the per-layer saved tensors, gradients, logits): the setup without its
  optimizer, and tp/cp; built once per (setup, tp shard, cp), each distinct decoder-layer kind's
  inventory once (memory/build.step_inputs keeps a per-kind cache that suggestions share);
- the walk: the step inputs, the gradient share a GPU keeps, and the content of its pipeline stage
  (the middle stages of a uniform model walk once);
- nothing depends on the GPU type: its capacity only decides `fits`.
"""

from __future__ import annotations

from trainplan.enums import Framework, Loss, Method
from trainplan.frozen import frozen, replace
from trainplan.job.capabilities import offloaded_optimizer
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.build import split_layer, stage_slice, step_inputs
from trainplan.memory.logits import loss_parallel
from trainplan.memory.engine import engine_setup
from trainplan.memory.overhead import (
    Overhead,
    device_from_reserved,
    reserved_from_allocated,
)
from trainplan.memory.parallel import (
    ParallelConfig,
    activation_setup,
    check_layout,
    gpu_params,
    gpu_state,
    is_model_parallel,
)
from trainplan.memory.peak import FORWARD, OPTIMIZER, StepInputs, Walk, walk_of
from trainplan.memory.regime import Regime, resolve_regime
from trainplan.memory.sharding import (
    FsdpConfig,
    ShardedState,
    ZeroConfig,
    check_sharding,
    shard_level,
    shard_state,
)
from trainplan.memory.stages import Stage, pipeline_stages
from trainplan.memory.state import ModelState, model_state

IN_FLIGHT_KEY = "activations_in_flight"   # other micro-batches' activations stashed by the pipeline
_GROUP_NAMES = ("forward", "backward", "optimizer")   # memory/peak phase groups, in step order


@frozen
class Sharded:
    """One GPU's sharded state (sharding.shard_state) with the totals the composition adds."""

    state: ShardedState
    persistent: int                  # sum of state.persistent
    extras: tuple[int, int, int]     # buffers alive in forward, backward, optimizer (always-alive ones included)
    extras_at: tuple[dict[str, int], dict[str, int], dict[str, int]]
    temp: int                        # this GPU's share of the optimizer step's temporaries (0 when offloaded)
    unified: int                     # paged optimizer states outside the allocator


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


def _peak(walk: Walk, sh: Sharded) -> tuple[int, int]:
    """(walk moment + phase buffers, moment index) of the largest moment of the step."""
    best_total, best_index = -1, 0
    for g, index in enumerate(walk.peaks):
        if index is None:
            continue
        total = walk.totals[index] + sh.extras[g] + (sh.temp if g == OPTIMIZER else 0)
        if total > best_total:
            best_total, best_index = total, index
    return best_total, best_index


def _scaled(inputs: StepInputs, grad_scale: float) -> StepInputs:
    """The gradients one GPU keeps: int(bytes x share), as memory/build scales them."""
    if grad_scale == 1.0:
        return inputs
    grads = inputs.layer_grads
    if grads and grads.count(grads[0]) == len(grads):      # equal layers (most models): one product
        scaled = (int(grads[0] * grad_scale),) * len(grads)
    else:
        scaled = tuple(int(g * grad_scale) for g in grads)
    return replace(inputs, layer_grads=scaled,
                   head_grad=int(inputs.head_grad * grad_scale),
                   embedding_grad=int(inputs.embedding_grad * grad_scale))


@frozen
class _Variant:
    """One setup as the engine runs it (engine.engine_setup), with its regime and model state."""

    setup: TrainingSetup
    regime: Regime
    state: ModelState
    notes: tuple[str, ...]


class MemoryModel:
    """Peaks per GPU for many layouts of a few setups (see the module docstring).

    Not thread-safe; one instance per estimate, plan, fit or table. Keeps references to every setup
    it was asked about, so the id() keys below stay valid.
    """

    def __init__(self, *, overhead: Overhead | None = None, zero: ZeroConfig | None = None,
                 fsdp: FsdpConfig | None = None, parallel: ParallelConfig | None = None) -> None:
        self.overhead = overhead or Overhead()
        self.zero = zero or ZeroConfig()
        self.fsdp = fsdp                    # None: each setup's framework default (sharding.fsdp_for)
        self.parallel = parallel or ParallelConfig()
        half = Overhead(reserve_fraction=self.overhead.reserve_fraction / 2,
                        reserve_fixed_bytes=self.overhead.reserve_fixed_bytes)
        self._reserve = (self.overhead, half)   # empty_cache_per_step: the reserve falls back between steps
        self._setups: dict[int, tuple[TrainingSetup, int, int]] = {}
        self._intern: dict[tuple, int] = {}
        self._models: dict[int, tuple[object, int]] = {}
        self._runs: dict[tuple, tuple[TrainingSetup, _Variant]] = {}
        self._regimes: dict[tuple, tuple[Regime, ModelState]] = {}
        self._params: dict[tuple, tuple] = {}
        self._sharded: dict[tuple, Sharded] = {}
        self._inputs: dict[tuple, StepInputs] = {}
        self._walks: dict[tuple, Walk] = {}
        self._splits: dict[tuple, tuple] = {}
        self._ids: dict[int, tuple] = {}
        self._stages: dict[tuple, tuple[Stage, ...]] = {}
        self._floors: dict[tuple, int] = {}
        self._state_parts: dict[tuple, tuple] = {}
        self.layer_cache: dict = {}          # memory/build.step_inputs: one inventory per layer kind
        self.walks_computed = 0

    # -- keys ------------------------------------------------------------------------------------
    def _key_id(self, key: tuple) -> int:
        return self._intern.setdefault(key, len(self._intern))

    def _keys(self, setup: TrainingSetup) -> tuple[int, int]:
        """(state key, activation key): small ints naming what each cached part depends on. The model
        state depends on the optimizer; the step inputs (activations, gradients, logits) do not."""
        hit = self._setups.get(id(setup))
        if hit is not None and hit[0] is setup:
            return hit[1], hit[2]
        model = self._models.get(id(setup.model))
        if model is None or model[0] is not setup.model:
            model = (setup.model, len(self._models))
            self._models[id(setup.model)] = model
        common = (model[1], setup.method, setup.precision, setup.lora, setup.quant, setup.freeze_trainable_layers,
                  setup.framework, setup.impl)
        state_key = self._key_id(("state", setup.optimizer, setup.reference_model) + common)
        act_key = self._key_id(("acts", setup.micro_sequences, setup.seq_len, setup.grad_ckpt, setup.grad_ckpt_every,
                                setup.attention, setup.grad_accum > 1) + common)
        self._setups[id(setup)] = (setup, state_key, act_key)
        return state_key, act_key

    # -- cached parts ----------------------------------------------------------------------------
    def _variant(self, setup: TrainingSetup, state_key: int, layout: Layout) -> tuple[_Variant, bool, tuple]:
        """The setup as the engine runs it (per setup object) with the regime and state (per state key, engine
        and the optimizer offload runs), and the key of that variant."""
        engine = shard_level(layout)[0] > 0 or is_model_parallel(layout)
        vkey = (state_key, engine, *offloaded_optimizer(setup, layout))   # the optimizer offload runs and its note
        run_key = (id(setup), *vkey[1:])
        hit = self._runs.get(run_key)
        if hit is None or hit[0] is not setup:
            run, notes = engine_setup(setup, layout)
            rs = self._regimes.get(vkey)
            if rs is None:
                regime = resolve_regime(run)
                rs = (regime, model_state(run, regime))
                self._regimes[vkey] = rs
            hit = (setup, _Variant(setup=run, regime=rs[0], state=rs[1], notes=notes))
            self._runs[run_key] = hit
        return hit[1], engine, vkey

    def _stage_list(self, setup: TrainingSetup, layout: Layout) -> tuple[Stage, ...]:
        key = (setup.model.num_layers, layout.pp, setup.grad_accum)
        stages = self._stages.get(key)
        if stages is None:
            stages = pipeline_stages(setup, layout, self.parallel)
            self._stages[key] = stages
        return stages

    def _gpu_params(self, v: _Variant, vkey: tuple, layout: Layout, stage: Stage) -> tuple:
        key = (vkey, layout.tp, layout.ep, layout.expert_tp, layout.pp, stage.index)
        hit = self._params.get(key)
        if hit is None:
            params = gpu_params(v.setup, layout, stage, small_threshold=self.zero.param_persistence_threshold)
            split = layout.tp * layout.pp * layout.ep * layout.expert_tp > 1
            mine = gpu_state(v.setup, v.regime, v.state, params) if split else v.state
            hit = (params, mine)
            self._params[key] = hit
        return hit

    def _shard(self, v: _Variant, vkey: tuple, layout: Layout, stage: Stage, params, mine: ModelState) -> Sharded:
        key = (vkey, layout.num_gpus, layout.nodes, layout.zero, layout.fsdp, layout.offload, layout.tp,
               layout.pp, layout.cp, layout.ep, layout.expert_tp, stage.index, v.setup.grad_accum > 1)   # FSDP no_sync
        hit = self._sharded.get(key)
        if hit is None:
            sh = shard_state(v.setup, layout, mine, v.regime, params, self.zero, self.fsdp)
            f = sh.state_fraction
            temp = 0 if not sh.optimizer_on_gpu else mine.optimizer_temp if f == 1.0 else int(mine.optimizer_temp * f)
            at = tuple(sh.extras.at(name) for name in _GROUP_NAMES)
            hit = Sharded(state=sh, persistent=sum(sh.persistent.values()),
                          extras=tuple(sum(a.values()) for a in at), extras_at=at, temp=temp,
                          unified=mine.optimizer_paged if f == 1.0 else int(mine.optimizer_paged * f))
            self._sharded[key] = hit
        return hit

    def _whole_inputs(self, v: _Variant, engine: bool, act_key: int, layout: Layout, split_heads: bool) -> StepInputs:
        tp = layout.tp if split_heads else 1
        key = (act_key, engine, v.state.gradients, tp, layout.cp)
        hit = self._inputs.get(key)
        if hit is None:
            run = v.setup if tp == 1 and layout.cp == 1 else activation_setup(v.setup, layout, split_heads=split_heads)
            hit = replace(step_inputs(run, v.regime, v.state, {}, grad_scale=1.0, layer_cache=self.layer_cache),
                          optimizer_temp=0)
            if tp > 1 and run.framework is Framework.TORCHTITAN and run.impl.loss is Loss.FULL \
                    and not run.impl.compiled_loss:
                hit = replace(hit, logits=loss_parallel(hit.logits, tokens=run.batch_size * run.seq_len,
                                                         vocab=run.model.vocab_size))
            self._inputs[key] = hit
        return hit

    def _split(self, whole: StepInputs, tp: int) -> tuple:
        """The whole model's layers split `tp` ways (sequence parallelism), once per inputs and tp."""
        key = (id(whole), tp)
        hit = self._splits.get(key)
        if hit is None or hit[0] is not whole:
            cache: dict[int, object] = {}
            layers = tuple(cache.setdefault(id(layer), split_layer(layer, tp)) if id(layer) not in cache
                           else cache[id(layer)] for layer in whole.layers)
            hit = (whole, layers)
            self._splits[key] = hit
        return hit[1]

    def _layer_ids(self, layers: tuple) -> tuple[int, ...]:
        """Equal layers (==) share an id, so pipeline stages with equal content walk once."""
        hit = self._ids.get(id(layers))
        if hit is None or hit[0] is not layers:
            distinct: list = []
            ids = []
            for layer in layers:
                j = next((k for k, d in enumerate(distinct) if d is layer or d == layer), None)
                if j is None:
                    distinct.append(layer)
                    j = len(distinct) - 1
                ids.append(j)
            hit = (layers, tuple(ids))
            self._ids[id(layers)] = hit
        return hit[1]

    def _walk(self, v: _Variant, engine: bool, act_key: int, layout: Layout, stage: Stage, params,
              grad_scale: float) -> Walk:
        base = self._whole_inputs(v, engine, act_key, layout, split_heads=True)
        whole = split = None
        mp = is_model_parallel(layout)
        sp = self.parallel.sequence_parallel
        content = None
        if mp:
            whole = self._whole_inputs(v, engine, act_key, layout, split_heads=False) if sp else None
            split = self._split(whole, layout.tp) if whole is not None and layout.tp > 1 else None
            ids = self._layer_ids(split if split is not None else base.layers)
            layers = stage.layers     # consecutive (pipeline_stages): a slice of the ids
            mine = ids[layers[0]:layers[-1] + 1] if layers and layers[-1] - layers[0] + 1 == len(layers) \
                else tuple(ids[i] for i in layers)
            content = (layout.tp, layout.cp, layout.ep, sp, mine,
                       params.layer_trainable, stage.has_embedding, stage.has_head)
        key = (act_key, engine, v.state.gradients, grad_scale, content)
        hit = self._walks.get(key)
        if hit is None:
            if mp:
                grad_elem = v.regime.adapter_bytes if v.setup.method in (Method.LORA, Method.QLORA) \
                    else v.regime.grad_bytes
                layers, head_saved = base.layers, base.head_saved
                if whole is not None and layout.tp > 1:      # sequence parallelism: every saved tensor / tp
                    layers, head_saved = split, whole.head_saved // layout.tp
                base = stage_slice(base, layers=layers, head_saved=head_saved, stage=stage,
                                   layer_grads=tuple(p * grad_elem for p in params.layer_trainable),
                                   tied=v.setup.model.tied_embeddings)
            hit = walk_of(_scaled(base, grad_scale))
            self.walks_computed += 1
            self._walks[key] = hit
        return hit

    def _states(self, setup: TrainingSetup, layout: Layout):
        """(variant, engine, activation key, [(stage, params, state, sharded)]) for each pipeline stage;
        kept per (setup object, layout): the planner asks the floor, then the exact peak, of one pair."""
        key = (id(setup), layout)
        hit = self._state_parts.get(key)
        if hit is not None and hit[0] is setup:
            return hit[1]
        check_sharding(layout, self.zero)
        check_layout(setup, layout, self.parallel)
        state_key, act_key = self._keys(setup)
        v, engine, vkey = self._variant(setup, state_key, layout)
        out = []
        for stage in self._stage_list(v.setup, layout):
            params, mine = self._gpu_params(v, vkey, layout, stage)
            out.append((stage, params, mine, self._shard(v, vkey, layout, stage, params, mine)))
        result = (v, engine, act_key, out)
        self._state_parts[key] = (setup, result)
        return result

    def _parts(self, setup: TrainingSetup, layout: Layout):
        """(variant, [(stage, state, sharded, walk)]) for each pipeline stage of `layout`."""
        v, engine, act_key, states = self._states(setup, layout)
        return v, [(stage, mine, sh, self._walk(v, engine, act_key, layout, stage, params, sh.state.grad_scale))
                   for stage, params, mine, sh in states]

    # -- the answers -----------------------------------------------------------------------------
    def stage_device_bytes(self, setup: TrainingSetup, layout: Layout) -> tuple[int, ...]:
        """Device-view peak of one GPU of each pipeline stage (the `device` of each of `stages`)."""
        v, parts = self._parts(setup, layout)
        reserve = self._reserve[1 if v.setup.impl.empty_cache_per_step else 0]
        out = []
        for stage, _, sh, walk in parts:
            stash = int(walk.per_micro_activations * (stage.in_flight - 1))
            allocated = sh.persistent + stash + _peak(walk, sh)[0]
            reserved = reserved_from_allocated(allocated, reserve)
            out.append(device_from_reserved(reserved, layout.num_gpus, self.overhead, unified_bytes=sh.unified))
        return tuple(out)

    def device_floor(self, setup: TrainingSetup, layout: Layout) -> int:
        """A lower bound on `device_bytes` without the step walk: the most loaded GPU's persistent
        state and forward buffers, with no activations, gradients or pipeline stash. Every step has
        a forward moment and every moment's walk total is >= 0, so `_peak` is at least the forward
        buffers; reserved and device views grow with allocated. The planner rejects a layout on this
        bound alone when even it exceeds the GPU (most of a large model's small layouts)."""
        key = (self._keys(setup)[0], layout, setup.grad_accum > 1)    # what _shard's key holds of the setup
        hit = self._floors.get(key)
        if hit is None:
            v, _, _, states = self._states(setup, layout)
            reserve = self._reserve[1 if v.setup.impl.empty_cache_per_step else 0]
            hit = self._floors[key] = max(
                device_from_reserved(reserved_from_allocated(sh.persistent + sh.extras[FORWARD], reserve),
                                     layout.num_gpus, self.overhead, unified_bytes=sh.unified)
                for _, _, _, sh in states)
        return hit

    def device_bytes(self, setup: TrainingSetup, layout: Layout) -> int:
        """The most loaded GPU's device-view peak, for any GPU type."""
        return max(self.stage_device_bytes(setup, layout))

    def stages(self, setup: TrainingSetup, layout: Layout) -> tuple[tuple[StageMemory, ...], _Variant]:
        """Each pipeline stage's peak with its breakdown, and the setup as the engine runs it."""
        v, parts = self._parts(setup, layout)
        reserve = self._reserve[1 if v.setup.impl.empty_cache_per_step else 0]
        out = []
        for stage, mine, sh, walk in parts:
            stash = int(walk.per_micro_activations * (stage.in_flight - 1))
            _, index = _peak(walk, sh)
            moment, group = walk.moments[index], walk.groups[index]
            components = dict(sh.state.persistent)
            for key, value in moment.components.items():
                components[key] = components.get(key, 0) + value
            if group == OPTIMIZER and sh.temp:
                components["temporaries"] = components.get("temporaries", 0) + sh.temp
            for key, value in sh.extras_at[group].items():
                components[key] = components.get(key, 0) + value
            if stash:
                components[IN_FLIGHT_KEY] = stash
            allocated = sum(components.values())
            reserved = reserved_from_allocated(allocated, reserve)
            device = device_from_reserved(reserved, layout.num_gpus, self.overhead, unified_bytes=sh.unified)
            constant = sh.persistent + stash
            phases = {m.phase: constant + total + sh.extras[g] + (sh.temp if g == OPTIMIZER else 0)
                      for m, total, g in zip(walk.moments, walk.totals, walk.groups)
                      if not m.phase.startswith(("backward (layer", "forward (layer")) or m.phase.endswith("(layer 0)")}
            out.append(StageMemory(stage=stage, state=mine, sharded=sh.state, components=components,
                                   allocated=allocated, reserved=reserved, device=device, unified=sh.unified,
                                   phase=moment.phase, phases=phases,
                                   saved_activations=walk.per_micro_activations + stash))
        return tuple(out), v
