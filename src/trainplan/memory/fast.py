"""The planner's fast path to `memory.estimate_memory(...).device_bytes`: the same numbers, computed
once per part instead of once per layout.

estimate_memory walks one training step per pipeline stage (memory/peak.simulate_step). The walk
costs milliseconds (a per-layer activation inventory), the planner asks tens of thousands of
layouts, and most of the work does not depend on the layout:

- model state, regime and each GPU's parameters depend on the setup and on tp/pp/ep only;
- the step inputs (the per-layer activation inventory, gradients, logits) depend on the setup
  (micro-batch, sequence, checkpointing, kernel; not the optimizer) and on tp/cp only, not on the GPU
  count or the sharding: built once per (setup, tp shard, cp);
- sharding (memory/sharding.shard_state) adds a constant to every moment of the walk (the
  persistent state) and a constant per phase (forward / backward / optimizer buffers), so the
  peak is  persistent + stash + max over phases (largest moment of the phase + that phase's
  buffers), with the walk itself cached per (step inputs, gradient share, pipeline stage content:
  the middle stages of a uniform model walk once);
- nothing in the memory model depends on the GPU type: its capacity only decides `fits`.

`FastMemory.device_bytes(setup, layout)` equals `estimate_memory(setup, layout, gpu).device_bytes`
exactly (tests/test_planner.py checks it on a sample of layouts). The step inputs come from
memory/build.step_inputs itself, once per (setup, tp shard, cp); `stage_inputs_once` mirrors the
few lines of memory/build.stage_step_inputs that cut them per pipeline stage, so that the
whole-model inventory is not redone per stage: a change there shows up in that test.
"""

from __future__ import annotations

from trainplan.frozen import frozen, replace

from trainplan.enums import Method
from trainplan.memory import engine_setup
from trainplan.memory.build import split_layer, stage_slice, step_inputs
from trainplan.memory.overhead import Overhead, device_from_reserved, reserved_from_allocated
from trainplan.memory.parallel import (ParallelConfig, Stage, activation_setup, check_layout, gpu_params,
                                       gpu_state, is_model_parallel, pipeline_stages)
from trainplan.memory.peak import StepInputs, simulate_step
from trainplan.memory.regime import Regime, resolve_regime
from trainplan.memory.sharding import FsdpConfig, ZeroConfig, check_sharding, shard_level, shard_state
from trainplan.memory.state import ModelState, model_state
from trainplan.job.training import Layout, TrainingSetup


def stage_inputs_once(base: StepInputs, whole: StepInputs | None, *, tp: int, stage: Stage, tied: bool,
                      layer_grads: tuple[int, ...], split: tuple | None = None) -> StepInputs:
    """memory/build.stage_step_inputs from the whole-model inputs of the TP shard (`base`) and, with
    sequence parallelism, of the unsplit model (`whole`, whose layers split `tp` ways may be given
    as `split`); unscaled gradients."""
    layers, head_saved = base.layers, base.head_saved
    if whole is not None and tp > 1:
        layers = split if split is not None else tuple(split_layer(layer, tp) for layer in whole.layers)
        head_saved = whole.head_saved // tp
    return stage_slice(base, layers=layers, head_saved=head_saved, stage=stage, layer_grads=layer_grads,
                       tied=tied)


def _scaled(inputs: StepInputs, grad_scale: float) -> StepInputs:
    """The gradients one GPU keeps: int(bytes x share), as memory/build scales them."""
    if grad_scale == 1.0:
        return inputs
    return replace(inputs, layer_grads=tuple(int(g * grad_scale) for g in inputs.layer_grads),
                   head_grad=int(inputs.head_grad * grad_scale),
                   embedding_grad=int(inputs.embedding_grad * grad_scale))


@frozen
class Walk:
    """The step walk without persistent state or layout buffers: the largest moment per phase."""

    forward: int
    backward: int
    optimizer: int | None        # None when the walk has no optimizer moment (optimizer in backward)
    per_micro_activations: int   # saved activations at the start of backward (the pipeline stash unit)


def walk_of(inputs: StepInputs) -> Walk:
    """Largest moment of each phase of memory/peak.simulate_step (grouped as PhaseExtras.at groups)."""
    _, moments = simulate_step(inputs)
    fwd = bwd = 0
    opt = None
    per_micro = 0
    for m in moments:
        total = m.total
        if m.phase.startswith("forward"):
            fwd = max(fwd, total)
        elif m.phase.startswith("optimizer"):
            opt = total if opt is None else max(opt, total)
        else:
            bwd = max(bwd, total)
        if m.phase == "backward (loss)":
            per_micro = m.components.get("activations", 0)
    return Walk(forward=fwd, backward=bwd, optimizer=opt, per_micro_activations=per_micro)


@frozen
class _Sharded:
    persistent: int
    extras: tuple[int, int, int]    # forward, backward, optimizer buffers (the always-alive ones included)
    grad_scale: float
    temp: int
    unified: int


@frozen
class _Variant:
    """One setup as the engine runs it (memory.engine_setup), with its regime and model state."""

    setup: TrainingSetup
    regime: Regime
    state: ModelState


class FastMemory:
    """Cached device-view peaks per GPU for many layouts of a few setups (see the module docstring).

    Not thread-safe; one instance per planner run. Keeps references to every setup it was asked
    about, so the id() keys below stay valid.
    """

    def __init__(self, *, overhead: Overhead | None = None, zero: ZeroConfig | None = None,
                 fsdp: FsdpConfig | None = None, parallel: ParallelConfig | None = None) -> None:
        self.overhead = overhead or Overhead()
        self.zero = zero or ZeroConfig()
        self.fsdp = fsdp                    # None: each setup's framework default (sharding.fsdp_for)
        self.parallel = parallel or ParallelConfig()
        self._setups: dict[int, tuple[TrainingSetup, int, int]] = {}
        self._intern: dict[tuple, int] = {}
        self._models: dict[int, tuple[object, int]] = {}
        self._runs: dict[tuple, tuple[TrainingSetup, _Variant]] = {}
        self._regimes: dict[tuple, tuple[Regime, ModelState]] = {}
        self._params: dict[tuple, tuple] = {}
        self._sharded: dict[tuple, _Sharded] = {}
        self._inputs: dict[tuple, StepInputs] = {}
        self._walks: dict[tuple, Walk] = {}
        self._splits: dict[tuple, tuple] = {}
        self._ids: dict[int, tuple] = {}
        self._stages: dict[tuple, tuple[Stage, ...]] = {}
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
        state_key = self._key_id(("state", setup.optimizer) + common)
        act_key = self._key_id(("acts", setup.batch_size, setup.seq_len, setup.grad_ckpt, setup.attention,
                                setup.grad_accum > 1) + common)
        self._setups[id(setup)] = (setup, state_key, act_key)
        return state_key, act_key

    # -- cached parts ----------------------------------------------------------------------------
    def _variant(self, setup: TrainingSetup, state_key: int, layout: Layout) -> tuple[_Variant, bool]:
        """The setup as the engine runs it (per setup object) with the regime and state (per state key)."""
        engine = shard_level(layout)[0] > 0 or is_model_parallel(layout)
        run_key = (id(setup), engine)
        hit = self._runs.get(run_key)
        if hit is None or hit[0] is not setup:
            run, _ = engine_setup(setup, layout)
            rs = self._regimes.get((state_key, engine))
            if rs is None:
                regime = resolve_regime(run)
                rs = (regime, model_state(run, regime))
                self._regimes[(state_key, engine)] = rs
            hit = (setup, _Variant(setup=run, regime=rs[0], state=rs[1]))
            self._runs[run_key] = hit
        return hit[1], engine

    def _stage_list(self, setup: TrainingSetup, layout: Layout) -> tuple[Stage, ...]:
        key = (setup.model.num_layers, layout.pp, setup.grad_accum)
        stages = self._stages.get(key)
        if stages is None:
            stages = pipeline_stages(setup, layout, self.parallel)
            self._stages[key] = stages
        return stages

    def _gpu_params(self, v: _Variant, vkey: tuple, layout: Layout, stage: Stage) -> tuple:
        key = (vkey, layout.tp, layout.ep, layout.pp, stage.index)
        hit = self._params.get(key)
        if hit is None:
            params = gpu_params(v.setup, layout, stage, small_threshold=self.zero.param_persistence_threshold)
            split = layout.tp * layout.pp * layout.ep > 1
            mine = gpu_state(v.setup, v.regime, v.state, params) if split else v.state
            hit = (params, mine)
            self._params[key] = hit
        return hit

    def _shard(self, v: _Variant, vkey: tuple, layout: Layout, stage: Stage, params, mine: ModelState) -> _Sharded:
        key = (vkey, layout.num_gpus, layout.nodes, layout.zero, layout.fsdp, layout.offload, layout.tp,
               layout.pp, layout.cp, layout.ep, stage.index, v.setup.grad_accum > 1)   # FSDP no_sync
        hit = self._sharded.get(key)
        if hit is None:
            sh = shard_state(v.setup, layout, mine, v.regime, params, self.zero, self.fsdp)
            f = sh.state_fraction
            temp = 0 if not sh.optimizer_on_gpu else mine.optimizer_temp if f == 1.0 else int(mine.optimizer_temp * f)
            extras = tuple(sum(sh.extras.at(phase).values()) for phase in ("forward", "backward", "optimizer"))
            hit = _Sharded(persistent=sum(sh.persistent.values()), extras=extras, grad_scale=sh.grad_scale,
                           temp=temp, unified=mine.optimizer_paged if f == 1.0 else int(mine.optimizer_paged * f))
            self._sharded[key] = hit
        return hit

    def _whole_inputs(self, v: _Variant, engine: bool, act_key: int, layout: Layout, split_heads: bool) -> StepInputs:
        tp = layout.tp if split_heads else 1
        key = (act_key, engine, v.state.gradients, tp, layout.cp)
        hit = self._inputs.get(key)
        if hit is None:
            run = v.setup if tp == 1 and layout.cp == 1 else activation_setup(v.setup, layout, split_heads=split_heads)
            hit = replace(step_inputs(run, v.regime, v.state, {}, grad_scale=1.0), optimizer_temp=0)
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
        """Equal layers (dataclass ==) share an id, so pipeline stages with equal content walk once."""
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
            content = (layout.tp, layout.cp, layout.ep, sp, tuple(ids[i] for i in stage.layers),
                       params.layer_trainable, stage.has_embedding, stage.has_head)
        key = (act_key, engine, v.state.gradients, grad_scale, content)
        hit = self._walks.get(key)
        if hit is None:
            if mp:
                grad_elem = v.regime.adapter_bytes if v.setup.method in (Method.LORA, Method.QLORA) \
                    else v.regime.grad_bytes
                base = stage_inputs_once(base, whole, tp=layout.tp, stage=stage, tied=v.setup.model.tied_embeddings,
                                         layer_grads=tuple(p * grad_elem for p in params.layer_trainable),
                                         split=split)
            hit = walk_of(_scaled(base, grad_scale))
            self.walks_computed += 1
            self._walks[key] = hit
        return hit

    # -- the answer ------------------------------------------------------------------------------
    def stage_device_bytes(self, setup: TrainingSetup, layout: Layout) -> tuple[int, ...]:
        """Device-view peak of one GPU of each pipeline stage (estimate_memory's per-stage values)."""
        check_sharding(layout, self.zero)
        check_layout(setup, layout, self.parallel)
        state_key, act_key = self._keys(setup)
        v, engine = self._variant(setup, state_key, layout)
        vkey = (state_key, engine)
        overhead = self.overhead
        half = Overhead(reserve_fraction=overhead.reserve_fraction / 2,
                        reserve_fixed_bytes=overhead.reserve_fixed_bytes)
        reserve = half if v.setup.impl.empty_cache_per_step else overhead
        out = []
        for stage in self._stage_list(v.setup, layout):
            params, mine = self._gpu_params(v, vkey, layout, stage)
            sh = self._shard(v, vkey, layout, stage, params, mine)
            walk = self._walk(v, engine, act_key, layout, stage, params, sh.grad_scale)
            stash = int(walk.per_micro_activations * (stage.in_flight - 1))
            peak = max(walk.forward + sh.extras[0], walk.backward + sh.extras[1])
            if walk.optimizer is not None:
                peak = max(peak, walk.optimizer + sh.temp + sh.extras[2])
            allocated = sh.persistent + stash + peak
            reserved = reserved_from_allocated(allocated, reserve)
            out.append(device_from_reserved(reserved, layout.num_gpus, overhead, unified_bytes=sh.unified))
        return tuple(out)

    def device_bytes(self, setup: TrainingSetup, layout: Layout) -> int:
        """estimate_memory(setup, layout, gpu).device_bytes, for any GPU."""
        return max(self.stage_device_bytes(setup, layout))
