"""The planner's walk: branch and bound over (GPU type, layout, setup knobs).

1. Every *group* (GPU type, GPU count, tp, pp, method, checkpointing, attention, micro-batch) gets
   a lower bound on its step time: the linear layers' and attention's FLOPs at the efficiency
   trainplan.timing.efficiency gives for that GPU and micro-batch (timing.step_time's compute term; the
   optimizer step, communication and offload only add to it), times the accumulation steps, plus
   the pipeline bubble. From it, lower bounds on the run's time and bill.
2. Groups are visited cheapest bound first (fastest with --sort time). A group is skipped when its
   bound is over the budget or the deadline, or when it can neither enter the top k, nor the Pareto
   front, nor better its GPU type's best plan: its bound is worse than the k-th best plan found, an
   exact plan already dominates the bound, and its GPU type has a plan at least as good as the
   bound. Nothing skipped can beat what is shown, so the top k, the front and the best plan of each
   GPU type are exact.
3. A visited group tries each engine the framework runs (DDP, ZeRO-1/2/3, FSDP, Megatron; optimizer offload only
   when the same stage without it does not fit: the CPU step is slower) and optimizer: memory by
   the fast path (planner_memory, equal to estimate_memory), then time (timing.estimate_time) and
   the bill (cost.estimate_cost) of each that fits. A family none of whose variants fits one GPU
   type is skipped on every type with less usable memory (memory does not depend on the type).
4. The ledger's corrections (when the job carries them): the calibration of each GPU type x method
   group scales the memory (from the most loaded GPU's allocated, reserved and device views) and the
   step time, as `trainplan estimate` applies it; a setup recorded as having run on that GPU type
   and layout (ledger/recorded.py) fits whatever the memory model says. Memory then depends on the
   GPU type, so step 3's skip across types is left out; the time bounds are scaled by each group's
   time factor, so they stay lower bounds.
"""

from __future__ import annotations

import bisect
import heapq
import time as clock
from typing import Callable

from trainplan.cost.bill import CostEstimate, bill_of, estimate_cost
from trainplan.enums import Attention, GradCkpt, Method, Optimizer
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen, mutable
from trainplan.job.training import TrainingSetup, Workload
from trainplan.ledger.calibration import Calibration, calibrated_device, matches, scale_time, time_factor
from trainplan.ledger.recorded import RecordedRun, memory_key
from trainplan.memory.model import MemoryModel
from trainplan.memory.parallel import optimizer_refusal
from trainplan.planner.request import Rentable
from trainplan.planner.space import Knobs, Shape
from trainplan.specs import GpuSpec
from trainplan.timing.estimate import TimeEstimate, TimingOptions, estimate_time
from trainplan.timing.flops import flops_per_token
from trainplan.timing.parts import core_compute_s, step_efficiency
from trainplan.timing.pipeline import bubble_floor
from trainplan.timing.steps import length_group, sequence_shape, steps_per_epoch, total_steps
from trainplan.units import SECONDS_PER_HOUR

Progress = Callable[[int, int], None]


@frozen
class Family:
    """A group without its GPU type: the split and the knobs every engine variant shares."""

    num_gpus: int
    nodes: int
    tp: int
    pp: int
    method: Method
    grad_ckpt: GradCkpt
    attention: Attention
    batch_size: int
    grad_accum: int


@frozen
class Found:
    """One plan that fits, with its exact time and bill."""

    rentable: Rentable
    shape: Shape
    knobs: Knobs
    setup: TrainingSetup
    device_bytes: int
    time: TimeEstimate
    cost_value: float     # the bill of the run (of one step without --samples)
    time_s: float         # wall-clock of the run with retries (one step without --samples)
    measured: RecordedRun | None = None   # the ledger's run of this setup: it fits by measurement
    calibrated: bool = False              # device_bytes and time carry the calibration

    @property
    def cost(self) -> CostEstimate:
        """The bill with its notes, built for the plans shown (the search ranks by cost_value, its total)."""
        return estimate_cost(total_s=self.time.total_s, num_gpus=self.shape.num_gpus, pricing=self.rentable.pricing,
                             retry_factor=self.time.retry_factor)

    @property
    def margin_fraction(self) -> float:
        """Free memory per GPU as a fraction of the usable memory: (usable - device-view peak) / usable,
        usable = capacity x (1 - headroom); of the measured peak for a setup recorded as run."""
        usable = self.rentable.usable_bytes
        used = self.measured.memory_bytes if self.measured is not None and self.measured.memory_bytes \
            else self.device_bytes
        return (usable - used) / usable if usable else 0.0


@mutable
class Problem:
    """Everything the walk needs, resolved."""

    rentables: tuple[Rentable, ...]
    families: tuple[Family, ...]
    engines: Callable[[Family], tuple[Shape, ...]]
    optimizers: Callable[[Method], tuple[Optimizer, ...]]
    setup_for: Callable[[Knobs], TrainingSetup]
    workload: Workload
    options: TimingOptions
    memory: MemoryModel
    global_batch: int
    sort: str = "cost"
    top: int = 10
    budget: float | None = None
    deadline_s: float | None = None
    calibration: Calibration | None = None      # the ledger's corrections (None: the raw model)
    ran: dict = field(default_factory=dict)     # ledger.recorded.memory_key -> RecordedRun, of this model
    engine_knobs: tuple = (None, None, None)    # the job's (zero, fsdp, parallel): part of the memory key
    _groups: dict = field(default_factory=dict)   # (gpu id, method) -> whether a calibration term matches
    _views: dict = field(default_factory=dict)    # (knobs, shape) -> (allocated, reserved, device) views

    def calibrated_for(self, gpu_id: str, setup: TrainingSetup) -> bool:
        key = (gpu_id, setup.method)
        hit = self._groups.get(key)
        if hit is None:
            hit = self._groups[key] = matches(self.calibration, framework=str(setup.framework), gpu=gpu_id,
                                              method=str(setup.method))
        return hit

    @property
    def per_gpu_memory(self) -> bool:
        """Whether memory depends on the GPU type (a calibration or recorded runs)."""
        return self.calibration is not None or bool(self.ran)


@mutable
class Outcome:
    found: list[Found] = field(default_factory=list)
    groups: int = 0               # groups bounded
    visited: int = 0              # groups whose engines were tried
    candidates: int = 0           # (GPU, layout, knobs) candidates in the search space
    memory_checks: int = 0        # candidates whose memory was computed (fast path or cache)
    timed: int = 0                # candidates timed exactly
    elapsed_s: float = 0.0
    bound_violations: int = 0     # exact time under its bound: the bound is wrong (pruning turned off)
    no_time: dict[str, str] = field(default_factory=dict)   # GPU id -> why time cannot be estimated
    best_bound: dict[str, tuple[float, float]] = field(default_factory=dict)  # GPU id -> (cost, time) bounds


class ParetoFront:
    """Exact (cost, time) points no other point beats in both; sorted by cost, time falling."""

    def __init__(self) -> None:
        self.costs: list[float] = []
        self.times: list[float] = []

    def dominated(self, cost: float, time_s: float) -> bool:
        """True when a point with cost <= `cost` and time <= `time_s` exists."""
        i = bisect.bisect_right(self.costs, cost)
        return i > 0 and self.times[i - 1] <= time_s

    def add(self, cost: float, time_s: float) -> None:
        if self.dominated(cost, time_s):
            return
        i = bisect.bisect_left(self.costs, cost)
        j = i
        while j < len(self.costs) and self.times[j] >= time_s:
            j += 1
        self.costs[i:j] = [cost]
        self.times[i:j] = [time_s]


def pareto_flags(points: list[tuple[float, float]]) -> list[bool]:
    """True for each point that no other point beats in one coordinate without losing in the other."""
    order = sorted(range(len(points)), key=lambda i: points[i])
    flags = [False] * len(points)
    best_time = float("inf")
    k, n = 0, len(order)
    while k < n:                      # sorted by (cost, time): equal costs are one run
        cost = points[order[k]][0]
        j = k
        while j < n and points[order[j]][0] == cost:
            j += 1
        same = order[k:j]
        t_min = points[same[0]][1]
        if t_min < best_time:
            for i in same:
                flags[i] = points[i][1] == t_min
            best_time = t_min
        k = j
    return flags


@frozen
class _Bounds:
    steps: int
    retry: float
    per_micro_s: dict          # (rentable index, method, ckpt, attention, micro-batch) -> seconds


def _compute_bound_s(setup: TrainingSetup, gpu: GpuSpec, workload: Workload, options: TimingOptions,
                     flops_cache: dict) -> float:
    """Seconds of one micro-batch's linear layers and attention on one GPU without model parallelism:
    timing.step_time's compute term less its adapter traffic (a lower bound on the step's share)."""
    shape = sequence_shape(seq_len=setup.seq_len, micro_batch=setup.batch_size,
                           tokens_per_sample=workload.tokens_per_sample, packing=workload.packing,
                           padding_free=setup.impl.padding_free, lengths=options.sample_lengths,
                           group=length_group(setup.batch_size, setup.grad_accum, options.group_by_length))
    span = max(1, round(shape.attention_span))      # the attention's sequence (a packed sample's when padding-free)
    key = (setup.method, setup.grad_ckpt, setup.attention, setup.lora, span)
    ft = flops_cache.get(key)
    if ft is None:
        ft = flops_per_token(setup, seq_len=span, mfu_convention=options.mfu_convention)
        flops_cache[key] = ft
    tokens = setup.batch_size * shape.padded_len
    eff = step_efficiency(setup, gpu, tokens_per_micro_batch=tokens, seq_len=span, options=options)
    return core_compute_s(setup, gpu, ft, eff, tokens, options.model)    # what step_time's compute starts from


def _knobs(p: Problem, fam: Family, optimizer: Optimizer | None = None, first: bool = True) -> Knobs:
    return Knobs(method=fam.method, optimizer=p.optimizers(fam.method)[0] if first else optimizer,
                 grad_ckpt=fam.grad_ckpt, attention=fam.attention, batch_size=fam.batch_size,
                 grad_accum=fam.grad_accum)


def _steps(setup: TrainingSetup, workload: Workload, global_batch: int, options: TimingOptions) -> int:
    """Optimizer steps of the run, as timing.estimate_time counts them (0 without --samples)."""
    if workload.samples is None:
        return 0
    shape = sequence_shape(seq_len=setup.seq_len, micro_batch=setup.batch_size,
                           tokens_per_sample=workload.tokens_per_sample, packing=workload.packing,
                           padding_free=setup.impl.padding_free, lengths=options.sample_lengths,
                           group=length_group(setup.batch_size, setup.grad_accum, options.group_by_length))
    return total_steps(steps_per_epoch(workload.samples, global_batch, shape.samples_per_sequence), workload.epochs)


def _bound(p: Problem, fam: Family, ri: int, per_micro: dict, flops_cache: dict, steps: int) -> tuple[float, float]:
    """(cost, time) lower bounds of a group."""
    r = p.rentables[ri]
    key = (ri, fam.method, fam.grad_ckpt, fam.attention, fam.batch_size)
    base = per_micro.get(key)
    if base is None:
        setup = p.setup_for(_knobs(p, fam))
        base = _compute_bound_s(setup, r.gpu, p.workload, p.options, flops_cache)
        if p.calibration is not None and p.calibrated_for(r.gpu.id, setup):
            base /= time_factor(p.calibration, framework=str(setup.framework), gpu=r.gpu.id, method=str(setup.method))
        per_micro[key] = base
    compute = base / (fam.tp * fam.pp) * fam.grad_accum
    if fam.pp > 1:          # no pipeline, no bubble (bubble_floor is 0)
        compute += compute * bubble_floor(p.options.pp_schedule, stages=fam.pp, micro_batches=fam.grad_accum,
                                          virtual_stages=p.options.pp_interleave)
    run_s = compute * steps if steps else compute
    retry = p.workload.retry_factor
    cost = run_s / SECONDS_PER_HOUR * r.billable(fam.num_gpus) * r.price_per_gpu_hour * retry
    return cost, run_s * retry


def _exact(p: Problem, r: Rentable, shape: Shape, setup: TrainingSetup) -> tuple[TimeEstimate, float, float]:
    """The time, the bill (Found.cost's total: bill_of is estimate_cost's total without the record)
    and the wall-clock with retries, of the run, or of one step without --samples."""
    layout = shape.layout(r.gpu.id)
    t = estimate_time(setup, layout, r.gpu, p.workload, p.options)
    if p.calibration is not None and p.calibrated_for(r.gpu.id, setup):
        factor = time_factor(p.calibration, framework=str(setup.framework), gpu=r.gpu.id, method=str(setup.method))
        t = scale_time(t, 1.0 / factor)
    seconds = t.total_s if t.steps else t.step_s
    return t, bill_of(seconds, shape.num_gpus, r.pricing, t.retry_factor), seconds * t.retry_factor


def _time_capable(p: Problem, out: Outcome) -> list[int]:
    """Indices of the GPUs whose time can be estimated (a dense peak in the catalog)."""
    ok = []
    probe = p.setup_for(_knobs(p, p.families[0]))
    for i, r in enumerate(p.rentables):
        try:
            _compute_bound_s(probe, r.gpu, p.workload, p.options, {})
            ok.append(i)
        except TrainplanError as exc:
            out.no_time[r.gpu.id] = str(exc)
    return ok


def search(p: Problem, *, progress: Progress | None = None, prune: bool = True) -> Outcome:
    """Branch and bound (module docstring). `prune=False` visits every group (for tests)."""
    start = clock.perf_counter()
    out = Outcome()
    if not p.families:
        return out
    rentables = _time_capable(p, out)
    steps = _steps(p.setup_for(_knobs(p, p.families[0])), p.workload, p.global_batch, p.options)
    per_micro: dict = {}
    flops_cache: dict = {}
    groups = []
    by_time = p.sort == "time"
    for fi, fam in enumerate(p.families):
        variants = len(p.engines(fam)) * len(p.optimizers(fam.method))
        for ri in rentables:
            cost, time_s = _bound(p, fam, ri, per_micro, flops_cache, steps)
            groups.append((time_s, cost, ri, fi) if by_time else (cost, time_s, ri, fi))
            out.candidates += variants
            gid = p.rentables[ri].gpu.id
            best = out.best_bound.get(gid, (cost, time_s))
            out.best_bound[gid] = (min(cost, best[0]), min(time_s, best[1]))
    groups.sort()
    out.groups = len(groups)
    front = ParetoFront()
    best_k: list[float] = []          # max-heap (negated) of the k best ranking values of distinct plans
    best_gpu: dict[int, float] = {}   # rentable index -> its best ranking value found
    least: dict[int, int] = {}        # family index -> a lower bound on its variants' memory, when none fitted a GPU
    fits_cache: dict = {}             # (id(knobs), id(shape)) -> (MemoryModel.device_bytes, shape)
    floors: dict = {}                 # (id(knobs), id(shape)) -> (MemoryModel.device_floor, shape)
    variants: dict = {}               # family -> its (knobs, setup) per optimizer
    seen: set = set()
    for n, (key1, key2, ri, fi) in enumerate(groups):
        if progress is not None and n % 512 == 0:
            progress(n, len(groups))
        cost_lb, time_lb = (key2, key1) if by_time else (key1, key2)
        if p.budget is not None and cost_lb > p.budget:
            if not by_time:
                break
            continue
        if p.deadline_s is not None and time_lb > p.deadline_s:
            if by_time:
                break
            continue
        if prune and len(best_k) >= p.top and key1 > -best_k[0] and key1 > best_gpu.get(ri, float("inf")) \
                and front.dominated(cost_lb, time_lb):
            continue
        if not p.per_gpu_memory and least.get(fi, -1) > p.rentables[ri].usable_bytes:
            continue                  # nothing of this family fits a larger GPU already: none fits here
        out.visited += 1
        smallest = _visit(p, out, ri, p.families[fi], fits_cache, floors, variants, front, best_k, seen, cost_lb,
                          time_lb, best_gpu)
        if smallest is not None:
            least[fi] = smallest
    if out.bound_violations and prune:
        again = search(p, progress=progress, prune=False)
        again.bound_violations = out.bound_violations
        return again
    out.elapsed_s = clock.perf_counter() - start
    if progress is not None:
        progress(len(groups), len(groups))
    return out


def same_plan_key(f: Found) -> tuple:
    """Plans with this key in common differ only in the optimizer or the attention kernel and cost and
    take the same: the output shows one of them, and the top k counts them once."""
    return (f.rentable.gpu.id, f.shape, f.knobs.method, f.knobs.grad_ckpt, f.knobs.batch_size, f.knobs.grad_accum,
            f.cost_value, f.time_s)


def _variants(p: Problem, fam: Family, variants: dict) -> tuple[tuple[Knobs, TrainingSetup], ...]:
    """The family's (knobs, setup) for each optimizer, built once per search (`variants` keeps them)."""
    hit = variants.get(fam)
    if hit is None:
        hit = variants[fam] = tuple((k, p.setup_for(k)) for k in (_knobs(p, fam, opt, first=False)
                                                                  for opt in p.optimizers(fam.method)))
    return hit


def _visit(p: Problem, out: Outcome, ri: int, fam: Family, fits_cache: dict, floors: dict, variants: dict,
           front: ParetoFront, best_k: list[float], seen: set, cost_lb: float, time_lb: float,
           best_gpu: dict[int, float]) -> int | None:
    """Time the group's variants that fit; when none fits, a lower bound on the least memory of its
    variants (the exact peak where it was computed, else MemoryModel.device_floor), else None."""
    r = p.rentables[ri]
    usable = r.usable_bytes
    smallest: int | None = None
    fitted = False
    by_time = p.sort == "time"
    engines = p.engines(fam)
    for knobs, setup in _variants(p, fam, variants):
        fitting_stages: set[int] = set()
        calibrated = p.calibration is not None and p.calibrated_for(r.gpu.id, setup)
        for shape in engines:
            if shape.offload != "none" and (shape.zero if shape.num_gpus > 1 else 0) in fitting_stages:
                continue
            # GaLore and Muon: plain data parallel only
            if optimizer_refusal(setup, num_gpus=shape.num_gpus, zero=shape.zero, fsdp=shape.fsdp) is not None:
                continue
            key = (id(knobs), id(shape))      # `variants` keeps the knobs alive, each entry its shape
            out.memory_checks += 1
            hit = fits_cache.get(key)
            if hit is None:
                if not calibrated:
                    hit = floors.get(key)
                    if hit is None:
                        hit = floors[key] = (p.memory.device_floor(setup, shape.layout("any")), shape)
                    if hit[0] > usable and not p.ran:    # cannot fit: the exact peak is not needed
                        smallest = hit[0] if smallest is None else min(smallest, hit[0])
                        continue
                hit = fits_cache[key] = (p.memory.device_bytes(setup, shape.layout("any")), shape)
            device = hit[0]
            if calibrated:
                device = _calibrated(p, r, knobs, shape, setup)
            measured = None
            if device > usable and p.ran:
                zero, fsdp, parallel = p.engine_knobs
                measured = p.ran.get(memory_key(setup, shape.layout(r.gpu.id), zero=zero, fsdp=fsdp,
                                                parallel=parallel))
            if device > usable and measured is None:
                smallest = device if smallest is None else min(smallest, device)
                continue
            fitted = True
            if shape.offload == "none":
                fitting_stages.add(shape.zero)
            t, cost, time_s = _exact(p, r, shape, setup)
            out.timed += 1
            if cost < cost_lb * (1 - 1e-9) or time_s < time_lb * (1 - 1e-9):
                out.bound_violations += 1
            if (p.budget is not None and cost > p.budget) or (p.deadline_s is not None and time_s > p.deadline_s):
                continue
            found = Found(rentable=r, shape=shape, knobs=knobs, setup=setup, device_bytes=device, time=t,
                          cost_value=cost, time_s=time_s, measured=measured, calibrated=calibrated)
            out.found.append(found)
            front.add(cost, time_s)
            value = time_s if by_time else cost
            if value < best_gpu.get(ri, float("inf")):
                best_gpu[ri] = value
            key = same_plan_key(found)
            if key in seen:
                continue
            seen.add(key)
            if len(best_k) < p.top:
                heapq.heappush(best_k, -value)
            elif value < -best_k[0]:
                heapq.heapreplace(best_k, -value)
    return None if fitted else smallest


def _calibrated(p: Problem, r: Rentable, knobs: Knobs, shape: Shape, setup: TrainingSetup) -> int:
    """The calibrated device-view peak on `r`'s GPU type (the most loaded GPU's views, as estimate)."""
    key = (knobs, shape)
    views = p._views.get(key)
    if views is None:
        stages, _ = p.memory.stages(setup, shape.layout("any"))
        worst = max(stages, key=lambda st: st.device)
        views = p._views[key] = (worst.allocated, worst.reserved, worst.device)
    return calibrated_device(views, p.calibration, framework=str(setup.framework), gpu=r.gpu.id,
                             method=str(setup.method))
