"""`trainplan plan`: the setups that fit, ranked by cost (or time), with the Pareto front of cost
against time and, for each GPU type that cannot carry the job, why.

The job is a Request (what to train, the data, the price flags); the planner varies the layout
(GPU type and count, tp/pp, DDP/ZeRO/FSDP, optimizer offload) and the knobs of planner_space, and
keeps the setup otherwise as given. The search itself is planner_search (branch and bound, exact
top k and front); every plan shown is re-run through `estimation.run` with the flags it prints, so
what `trainplan estimate <flags>` says is what the plan says.
"""

from __future__ import annotations

import math
import shlex
from trainplan.frozen import field, fields, frozen, replace
from typing import Any

from trainplan import catalog
from trainplan.cost.bill import DEFAULT_CURRENCY, check_price, choose_offer
from trainplan.enums import Framework, Method
from trainplan.errors import TrainplanError
from trainplan.estimation.result import Estimate
from trainplan.job.frameworks import profile
from trainplan.job.options import (Request, build_setup, build_workload, check_headroom, parse_enum, read_lengths,
                              resolve_model)
from trainplan.memory import ParallelConfig
from trainplan.memory.model import MemoryModel
from trainplan.planner.search import Family, Found, Outcome, Problem, Progress, Rentable, pareto_flags, search
from trainplan.planner.space import Knobs, Shape, micro_batches, node_counts, shardings, splits
from trainplan.specs import GpuSpec, PriceOffer
from trainplan.timing.estimate import TimingOptions
from trainplan.job.training import TrainingSetup

DEFAULT_GLOBAL_BATCH = 32     # sequences per optimizer step when --global-batch is not given
DEFAULT_MAX_GPUS = 64
SORTS = ("cost", "time")
# flash and sdpa keep the same tensors and run the same causal FLOPs in trainplan's model (memory/
# activations, flops.kernel_convention; tests/test_planner.py holds them equal), and sdpa falls back to
# eager attention where transformers has no SDPA path (Gemma-2): flash is never worse, so it is the
# one searched unless --attention says otherwise.
DEFAULT_ATTENTIONS = ("flash",)


@frozen
class PlanRequest:
    """The job (a Request: model, setup flags, data, price flags) and the planner's constraints."""

    job: Request
    methods: tuple[str, ...] = ()            # () = (job.method,)
    gpus: tuple[str | GpuSpec, ...] | None = None   # None = every GPU in the catalog
    prices: tuple[PriceOffer, ...] | None = None     # None = the price catalog (or job.price_per_gpu_hour)
    max_gpus: int = DEFAULT_MAX_GPUS
    gpus_per_node: int = 8
    global_batch: int = DEFAULT_GLOBAL_BATCH
    budget: float | None = None
    deadline_hours: float | None = None
    sort: str = "cost"
    top: int = 10

    def __post_init__(self) -> None:
        for name in ("max_gpus", "gpus_per_node", "global_batch", "top"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise TrainplanError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        for name, flag in (("budget", "--budget"), ("deadline_hours", "--deadline")):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise TrainplanError(f"{flag} must be a positive number, got {value!r}")
        if self.sort not in SORTS:
            raise TrainplanError(f"--sort must be one of {', '.join(SORTS)}, got {self.sort!r}")


@frozen
class Rejection:
    gpu: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"gpu": self.gpu, "reason": self.reason}


@frozen
class Plan:
    """One ranked plan: what it sets, its estimate, and the flags that reproduce it."""

    rank: int
    found: Found
    request: Request
    flags: str
    pareto: bool
    estimate: Estimate | None = None     # estimation.run of `request` (plan(..., details=True))

    @property
    def sets(self) -> dict[str, Any]:
        s, k = self.found.shape, self.found.knobs
        setup = self.found.setup
        return {"gpu": self.found.rentable.gpu.id, "num_gpus": s.num_gpus, "nodes": s.nodes,
                "engine": s.engine(), "tp": s.tp, "pp": s.pp, "zero": s.zero, "fsdp": s.fsdp, "offload": s.offload,
                "method": k.method, "optimizer": str(setup.optimizer), "grad_ckpt": str(setup.grad_ckpt),
                "attention": str(setup.attention), "batch_size": k.batch_size, "grad_accum": k.grad_accum}

    def to_dict(self) -> dict[str, Any]:
        f, est = self.found, self.estimate
        out: dict[str, Any] = {"rank": self.rank, "sets": self.sets}
        if est is not None:
            out.update({"setup": est.setup_dict(), "memory": est.memory.to_dict(),
                        "time": None if est.time is None else est.time.to_dict(),
                        "cost": None if est.cost is None else est.cost.to_dict()})
        else:
            usable = f.rentable.usable_bytes
            out.update({"memory": {"device_bytes": f.device_bytes, "usable_bytes": usable, "fits": True,
                                   "gpu_capacity_bytes": f.rentable.gpu.capacity_bytes},
                        "time": f.time.to_dict(), "cost": f.cost.to_dict()})
        out.update({"ranking": {"cost": f.cost_value, "time_s": f.time_s}, "pareto": self.pareto,
                    "flags": self.flags})
        return out


@frozen
class PlanResult:
    request: PlanRequest
    plans: tuple[Plan, ...]
    found: tuple[Found, ...]              # every plan evaluated exactly (the top k and the front among them)
    pareto: tuple[bool, ...]              # per `found`
    rejected: tuple[Rejection, ...]
    outcome: Outcome
    currency: str
    notes: tuple[str, ...] = field(default=())

    @property
    def searched(self) -> int:
        return self.outcome.candidates

    def front(self) -> list[Found]:
        return sorted((f for f, on in zip(self.found, self.pareto) if on), key=lambda f: (f.cost_value, f.time_s))

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        return {"plans": [p.to_dict() for p in self.plans],
                "rejected": [r.to_dict() for r in self.rejected],
                "searched": o.candidates,
                "pareto_front": [{"gpu": f.rentable.gpu.id, "num_gpus": f.shape.num_gpus, "engine": f.shape.engine(),
                                  "cost": f.cost_value, "time_s": f.time_s, "currency": self.currency,
                                  "flags": request_flags(plan_request(self.request.job, f,
                                                                      self.request.prices is not None), f.setup)}
                                 for f in self.front()],
                "sort": self.request.sort, "currency": self.currency,
                "ranked_by": "cost of the run" if self.request.job.samples else "cost of one optimizer step",
                "stats": {"groups": o.groups, "groups_visited": o.visited, "memory_checks": o.memory_checks,
                          "timed": o.timed, "plans_found": len(self.found), "search_s": o.elapsed_s},
                "notes": list(self.notes)}


# --- flags -----------------------------------------------------------------------------------------

_ALWAYS = frozenset({"model", "method", "precision", "optimizer", "batch_size", "grad_accum", "seq_len",
                     "grad_ckpt", "attention", "gpu", "num_gpus", "nodes", "zero", "fsdp", "offload", "tp", "pp"})
_STORE_TRUE = frozenset({"dora", "double_quant", "packing", "spot", "uneven_pipeline"})
_NEGATABLE = frozenset({"optimizer_in_backward", "activation_offload", "liger", "load_fp32", "compile",
                        "sequence_parallel"})


def request_flags(req: Request, setup: TrainingSetup | None = None) -> str:
    """The `trainplan estimate` flags that rebuild `req` (resolved defaults shown for the main knobs)."""
    default = Request(model=req.model)
    resolved = {} if setup is None else {"precision": str(setup.precision), "optimizer": str(setup.optimizer),
                                         "grad_ckpt": str(setup.grad_ckpt), "attention": str(setup.attention)}
    parts: list[str] = []
    for f in fields(Request):
        name, value = f.name, getattr(req, f.name)
        if value is None:
            value = resolved.get(name)
        if value is None or (value == getattr(default, name) and name not in _ALWAYS):
            continue
        flag = "--" + name.replace("_", "-")
        if name in _STORE_TRUE:
            parts.append(flag)
        elif name in _NEGATABLE:
            parts.append(flag if value else "--no-" + name.replace("_", "-"))
        elif name == "model":
            parts += [flag, shlex.quote(getattr(value, "name", str(value)))]
        elif name == "gpu":
            parts += [flag, getattr(value, "id", str(value))]
        elif name == "lora_targets":
            parts += [flag, shlex.quote(value if isinstance(value, str) else ",".join(value))]
        else:
            parts += [flag, shlex.quote(str(int(value) if name == "zero" else value))]
    return " ".join(parts)


def plan_request(job: Request, found: Found, prices_given: bool = False) -> Request:
    """The Request of one plan: the job with the planner's layout and knobs (and the price it used,
    when it came from a price list rather than the catalog)."""
    s, k, r = found.shape, found.knobs, found.rentable
    req = replace(job, method=k.method, optimizer=k.optimizer, grad_ckpt=k.grad_ckpt, attention=k.attention,
                  batch_size=k.batch_size, grad_accum=k.grad_accum,
                  gpu=r.gpu.id if catalog_gpu(r.gpu) else r.gpu, num_gpus=s.num_gpus, nodes=s.nodes,
                  zero=s.zero, fsdp=s.fsdp, offload=s.offload, tp=s.tp, pp=s.pp, cp=1, ep=1)
    if prices_given and job.price_per_gpu_hour is None:
        req = replace(req, price_per_gpu_hour=r.price_per_gpu_hour, currency=r.currency)
    return req


def catalog_gpu(gpu: GpuSpec) -> bool:
    return catalog.load_gpus().get(gpu.id) == gpu


# --- the job -----------------------------------------------------------------------------------------

def resolve_gpus(names: tuple[str | GpuSpec, ...] | None) -> list[GpuSpec]:
    """Catalog GPUs by id or alias, or GpuSpecs as given (None or 'all': every GPU), without duplicates."""
    if not names or any(isinstance(n, str) and n.strip().lower() == "all" for n in names):
        return list(catalog.load_gpus().values())
    out: dict[str, GpuSpec] = {}
    for name in names:
        gpu = name if isinstance(name, GpuSpec) else catalog.resolve_gpu(name)
        out.setdefault(gpu.id, gpu)
    return list(out.values())


def _offer(job: Request, gpu: GpuSpec, prices: tuple[PriceOffer, ...] | None) -> PriceOffer:
    """The offer `trainplan estimate` would take (cost.choose_offer), or the cheapest of `prices`."""
    if prices is None:
        return choose_offer(gpu.id, provider=job.provider, spot=job.spot, currency=job.currency)[0]
    mine = [o for o in prices if o.gpu_id == gpu.id and o.is_spot == job.spot
            and (not job.provider or o.provider == job.provider)
            and (not job.currency or o.currency == job.currency.upper())]
    if not mine:
        raise TrainplanError(f"no price for {gpu.id}")
    return min(mine, key=lambda o: (o.currency != DEFAULT_CURRENCY, o.price_per_gpu_hour))


def _rentables(job: Request, gpus: list[GpuSpec], headroom: float,
               prices: tuple[PriceOffer, ...] | None = None) -> tuple[list[Rentable], list[Rejection], str]:
    """Each GPU with its usable memory and price; GPUs without a price in the plan's currency are rejected."""
    rejected: list[Rejection] = []
    out: list[Rentable] = []
    if job.price_per_gpu_hour is not None:
        price = check_price(job.price_per_gpu_hour)
        currency = (job.currency or DEFAULT_CURRENCY).upper()
    else:
        price, currency = None, (job.currency or DEFAULT_CURRENCY).upper()
        if job.provider and prices is None:
            catalog.resolve_provider(job.provider)
    for gpu in gpus:
        usable = int(gpu.capacity_bytes * (1 - headroom))
        if price is not None:
            out.append(Rentable(gpu=gpu, usable_bytes=usable, price_per_gpu_hour=price, currency=currency,
                                gpus_per_instance=None))
            continue
        try:
            offer = _offer(job, gpu, prices)
        except TrainplanError:
            kind = "spot" if job.spot else "on-demand"
            where = f" at {job.provider}" if job.provider else ""
            rejected.append(Rejection(gpu=gpu.id, reason=f"no {kind} {currency} price{where} in the catalog "
                                                          "(give --price-per-gpu-hour to plan with it)"))
            continue
        if offer.currency != currency:
            rejected.append(Rejection(gpu=gpu.id, reason=f"priced only in {offer.currency} in the catalog "
                                                          f"(--currency {offer.currency} plans in {offer.currency})"))
            continue
        out.append(Rentable(gpu=gpu, usable_bytes=usable, price_per_gpu_hour=offer.price_per_gpu_hour,
                            currency=offer.currency, gpus_per_instance=offer.gpus_per_instance, offer=offer))
    return out, rejected, currency


def _optimizers(job: Request, method: str) -> tuple[str, ...]:
    """The framework's optimizer, and 8-bit AdamW as a variant for full and freeze (not for adapters,
    whose optimizer state is small)."""
    if job.optimizer:
        return (job.optimizer,)
    default = str(profile(parse_enum(Framework, job.framework, "--framework")).optimizer)
    if method in ("full", "freeze") and default in ("adamw", "adamw-fused"):
        return (default, "adamw-8bit")
    return (default,)


def _families(pr: PlanRequest, spec, methods: tuple[str, ...]) -> list[Family]:
    job = pr.job
    ckpts = (job.grad_ckpt,) if job.grad_ckpt else ("none", "full")
    attentions = (job.attention,) if job.attention else DEFAULT_ATTENTIONS
    out = []
    for n in node_counts(pr.max_gpus, pr.gpus_per_node):
        nodes = 1 if n <= pr.gpus_per_node else n // pr.gpus_per_node
        for tp, pp in splits(spec, n, pr.gpus_per_node, pr.global_batch):
            per_rank = pr.global_batch // (n // (tp * pp))
            for mb in micro_batches(per_rank):
                for method in methods:
                    for ckpt in ckpts:
                        for attention in attentions:
                            out.append(Family(num_gpus=n, nodes=nodes, tp=tp, pp=pp, method=method, grad_ckpt=ckpt,
                                              attention=attention, batch_size=mb, grad_accum=per_rank // mb))
    return out


def plan(pr: PlanRequest, *, progress: Progress | None = None, details: bool = True, prune: bool = True) -> PlanResult:
    """Search, rank, explain (module docstring). `details`: re-run each shown plan through
    estimation.run for its full estimate (breakdown, notes), as `trainplan estimate` prints it.
    `prune=False` visits every group (the exhaustive walk the branch and bound must agree with)."""
    job = pr.job
    headroom = check_headroom(job.headroom)
    spec = resolve_model(job.model)
    methods = tuple(str(parse_enum(Method, m, "--methods")) for m in (pr.methods or (job.method,)))
    build_workload(job)
    rentables, rejected, currency = _rentables(job, resolve_gpus(pr.gpus), headroom, pr.prices)
    setups: dict[Knobs, TrainingSetup] = {}

    def setup_for(k: Knobs) -> TrainingSetup:
        s = setups.get(k)
        if s is None:
            s = build_setup(replace(job, method=k.method, optimizer=k.optimizer, grad_ckpt=k.grad_ckpt,
                                    attention=k.attention, batch_size=k.batch_size, grad_accum=k.grad_accum), spec)
            setups[k] = s
        return s

    engines: dict[tuple, tuple[Shape, ...]] = {}

    def engines_for(f: Family) -> tuple[Shape, ...]:
        key = (f.num_gpus, f.nodes, f.tp, f.pp)
        if key not in engines:
            engines[key] = tuple(Shape(num_gpus=f.num_gpus, nodes=f.nodes, tp=f.tp, pp=f.pp, zero=z, fsdp=fs,
                                       offload=o) for z, fs, o in shardings(f.num_gpus, f.nodes, f.tp, f.pp))
        return engines[key]

    parallel = ParallelConfig(sequence_parallel=job.sequence_parallel, virtual_stages=job.vpp,
                              uneven_pipeline=job.uneven_pipeline)
    problem = Problem(
        rentables=tuple(rentables), families=tuple(_families(pr, spec, methods)), engines=engines_for,
        optimizers=lambda m: _optimizers(job, m), setup_for=setup_for, workload=build_workload(job),
        options=TimingOptions(interconnect=job.interconnect, compiled=job.compile, efficiency=job.efficiency,
                              pp_interleave=job.vpp, sample_lengths=read_lengths(job.lengths_file)),
        memory=MemoryModel(parallel=parallel), global_batch=pr.global_batch, sort=pr.sort, top=pr.top,
        budget=pr.budget, deadline_s=None if pr.deadline_hours is None else pr.deadline_hours * 3600.0)
    outcome = search(problem, progress=progress, prune=prune)
    found = tuple(outcome.found)
    flags = pareto_flags([(f.cost_value, f.time_s) for f in found])
    from trainplan.planner.explain import plans_shown, rejections

    plans, notes = plans_shown(pr, found, flags, details=details)
    rejected += rejections(pr, problem, outcome)
    notes = [f"global batch {pr.global_batch} sequences per optimizer step (micro-batch x accumulation x data "
             "parallel)" + ("" if pr.global_batch != DEFAULT_GLOBAL_BATCH else ", the default (--global-batch)")] + notes
    if outcome.bound_violations:
        notes.append(f"the time bound failed {outcome.bound_violations} times: searched without pruning")
    return PlanResult(request=pr, plans=tuple(plans), found=found, pareto=tuple(flags), rejected=tuple(rejected),
                      outcome=outcome, currency=currency, notes=tuple(notes))

