"""What `trainplan plan` shows: the top plans, each estimated in full as a Job (what `trainplan
estimate` with the plan's flags answers), and one line per GPU type that cannot carry the job."""

from __future__ import annotations

import datetime

from trainplan.catalog import ATYPICAL_PRICING, is_stale
from trainplan.cost.prices import STALE_AFTER_DAYS
from trainplan.estimation import estimate
from trainplan.ledger.calibration import short_note
from trainplan.memory.parallel import optimizer_refusal
from trainplan.planner.request import PlanRequest, Rejection
from trainplan.planner.result import RISKY_MARGIN, Plan, plan_job
from trainplan.planner.search import Found, Outcome, Problem, same_plan_key
from trainplan.planner.space import Knobs
from trainplan.report.flags import job_flags
from trainplan.units import fmt_duration, gib


def _order_key(sort: str):
    if sort == "time":
        return lambda f: (f.time_s, f.cost_value)
    return lambda f: (f.cost_value, f.time_s)


def plans_shown(pr: PlanRequest, found: tuple[Found, ...], flags: list[bool], *,
                details: bool = True) -> tuple[list[Plan], list[str]]:
    """The top `pr.top` plans (one of any two that differ only in the optimizer or the attention
    kernel and estimate the same), then the best plan of each GPU type that carries the job but has
    no row among them (ranked where it stands), each with its flags and, with `details`, its full
    estimate."""
    key = _order_key(pr.sort)
    order = sorted(range(len(found)), key=lambda i: key(found[i]))
    gpus = {f.rentable.gpu.id for f in found}
    seen: set = set()
    shown_keys: set = set()
    covered: set = set()
    chosen: list[tuple[int, int]] = []      # (index in found, rank among distinct plans)
    collapsed = 0
    distinct = 0
    for i in order:
        if len(chosen) >= pr.top and covered >= gpus:
            break
        f = found[i]
        same = same_plan_key(f)
        if same in seen:
            collapsed += same in shown_keys
            continue
        seen.add(same)
        distinct += 1
        gid = f.rentable.gpu.id
        if len(chosen) < pr.top or gid not in covered:
            chosen.append((i, distinct))
            shown_keys.add(same)
            covered.add(gid)
    notes: list[str] = []
    if collapsed:
        notes.append(f"{collapsed} plan(s) equal in cost and time to a shown one, differing only in the "
                     "optimizer or attention kernel, are left out (the first in the searched order is shown)")
    extra = len(chosen) - min(len(chosen), pr.top)
    if extra:
        notes.append(f"{extra} row(s) after the top {pr.top}: the best plan of each GPU type asked for that carries the "
                     "job, at its rank")
    notes += price_notes([found[i].rentable for i, _ in chosen], pr.today)
    plans = []
    for n, (i, rank) in enumerate(chosen):
        f = found[i]
        job = plan_job(pr, f)
        plans.append(Plan(rank=rank, found=f, job=job, flags=job_flags(job), pareto=flags[i],
                          estimate=estimate(job) if details else None, gpu_best=n >= pr.top))
    notes += ledger_notes(pr, plans)
    risky = [p.rank for p in plans if p.risky]
    if risky:
        notes.append(f"risky (!): plan(s) {', '.join(map(str, risky))} leave less than {RISKY_MARGIN:.0%} of the usable "
                     "memory free (usable = capacity x (1 - headroom)): a longer sample or allocator fragmentation "
                     "can run them out of memory")
    return plans, notes


def ledger_notes(pr: PlanRequest, plans: list[Plan]) -> list[str]:
    """What the ledger changed in the shown plans: the calibration of each GPU type x method group,
    and the plans recorded as having run."""
    notes = []
    cal = pr.job.calibration
    groups = dict.fromkeys((p.found.rentable.gpu.id, p.found.setup) for p in plans if p.found.calibrated)
    said = set()
    for gid, setup in groups:
        key = (gid, setup.method)
        if key in said:
            continue
        said.add(key)
        ranks = [p.rank for p in plans if p.found.calibrated and p.found.rentable.gpu.id == gid
                 and p.found.setup.method is setup.method]
        notes.append(f"plan(s) {', '.join(map(str, ranks))}: " + short_note(cal, framework=str(setup.framework), gpu=gid,
                                                                              method=str(setup.method)))
    for p in plans:
        run = p.found.measured
        if run is not None:
            notes.append(f"plan {p.rank}: recorded in the ledger: this setup {run.describe()}, so it fits although "
                         f"the estimate ({gib(p.found.device_bytes):.1f} GiB) is over the usable "
                         f"{gib(p.found.rentable.usable_bytes):.1f} GiB (the headroom is not applied to a measurement)")
    return notes


def price_notes(rentables, today: datetime.date) -> list[str]:
    """Warnings on the prices behind the shown plans: marketplace listings and stale offers."""
    notes, seen = [], set()
    for r in rentables:
        o = r.offer
        if o is None or r.gpu.id in seen:
            continue
        seen.add(r.gpu.id)
        what = f"{r.gpu.id} at {o.price_per_gpu_hour:g} {o.currency}/GPU-hour ({o.provider}, {o.instance or o.pricing}"
        if o.pricing in ATYPICAL_PRICING:
            notes.append(f"{what}) is the cheapest listing a crawler saw on a marketplace, as of {o.as_of}: "
                         "not a price to count on")
        elif is_stale(o, today, STALE_AFTER_DAYS):
            notes.append(f"{what}) is dated {o.as_of!r}: check the current price")
        if o.gpus_per_instance > 1:
            notes.append(f"{r.gpu.id}: {o.provider} rents {o.gpus_per_instance}-GPU instances whole; plans are "
                         "billed for whole instances")
    return notes


def _smallest_footprint(pr: PlanRequest, problem: Problem) -> tuple[int, str]:
    """The least memory per GPU of any searched candidate (micro-batch 1 is the least of each
    family: memory grows with the micro-batch), and what it is."""
    best, what = None, ""
    for fam in problem.families:
        if fam.batch_size != 1:
            continue
        for opt in problem.optimizers(fam.method):
            knobs = Knobs(method=fam.method, optimizer=opt, grad_ckpt=fam.grad_ckpt, attention=fam.attention,
                          batch_size=fam.batch_size, grad_accum=fam.grad_accum)
            setup = problem.setup_for(knobs)
            for shape in problem.engines(fam):
                # not a shape GaLore or Muon runs on
                if optimizer_refusal(setup, num_gpus=shape.num_gpus, zero=shape.zero, fsdp=shape.fsdp) is not None:
                    continue
                device = problem.memory.device_bytes(setup, shape.layout("any"))
                if best is None or device < best:
                    methods = f"{fam.method}, " if len(pr.methods) > 1 else ""
                    best, what = device, (f"{shape.engine()} over {shape.num_gpus} GPUs ({methods}{setup.optimizer}, "
                                          f"checkpointing {setup.grad_ckpt}, micro-batch 1)")
    return (best if best is not None else 0), what


def rejections(pr: PlanRequest, problem: Problem, outcome: Outcome) -> list[Rejection]:
    """One line for each GPU type that cannot carry the job (no price is decided before the search)."""
    have = {f.rentable.gpu.id for f in outcome.found}
    missing = [r for r in problem.rentables if r.gpu.id not in have]
    out = []
    footprint = None
    for r in missing:
        gid = r.gpu.id
        if gid in outcome.no_time:
            out.append(Rejection(gpu=gid, reason="no dense peak FLOP/s in the catalog: time and cost cannot "
                                                 "be estimated"))
            continue
        if footprint is None:
            footprint = _smallest_footprint(pr, problem)
        least, what = footprint
        if r.usable_bytes < least:
            out.append(Rejection(gpu=gid, reason=(
                f"needs more than {pr.max_gpus} GPUs even with the smallest footprint searched, {what}: "
                f"{gib(least):.1f} GiB per GPU, {gib(r.usable_bytes):.1f} GiB usable")))
            continue
        bound = outcome.best_bound.get(gid)
        if bound and pr.budget is not None and bound[0] > pr.budget:
            out.append(Rejection(gpu=gid, reason=(
                f"costs at least {bound[0]:,.2f} {r.currency} in any layout, over the budget of {pr.budget:,.2f}")))
        elif bound and pr.deadline_hours is not None and bound[1] > pr.deadline_hours * 3600:
            out.append(Rejection(gpu=gid, reason=(
                f"takes at least {fmt_duration(bound[1])} in any layout, past the deadline of "
                f"{pr.deadline_hours:g} h")))
    return out
