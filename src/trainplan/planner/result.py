"""What `trainplan plan` answers: the ranked plans, each as a Job with its estimate, the Pareto front
of cost against time, and the GPU types that cannot carry the job."""

from __future__ import annotations

from typing import Any

from trainplan.cost.currency import rate_is_stale
from trainplan.estimation.result import Estimate
from trainplan.frozen import frozen, replace
from trainplan.job.job import Job
from trainplan.planner.request import PlanRequest, Rejection
from trainplan.planner.search import Found, Outcome
from trainplan.report.flags import job_flags

# A plan is risky when its free memory per GPU, usable - device-view peak, is under this fraction of the
# usable memory (usable = capacity x (1 - --headroom)): the margin is on top of the headroom.
RISKY_MARGIN = 0.05


def plan_job(pr: PlanRequest, found: Found) -> Job:
    """The Job of one plan: the request's job on the plan's GPU, layout, knobs and price."""
    r = found.rentable
    return replace(pr.job, setup=found.setup, layout=found.shape.layout(r.gpu.id), gpu=r.gpu, pricing=r.pricing)


@frozen
class Plan:
    """One ranked plan: what it sets, its Job and estimate, and the flags that reproduce it."""

    rank: int
    found: Found
    job: Job
    flags: str
    pareto: bool
    estimate: Estimate | None = None     # estimation.estimate(job) (plan(..., details=True))
    gpu_best: bool = False               # shown as its GPU type's best plan, outside the top k

    @property
    def risky(self) -> bool:
        """Less than RISKY_MARGIN of the usable memory left free."""
        return self.found.margin_fraction < RISKY_MARGIN

    @property
    def sets(self) -> dict[str, Any]:
        s, k = self.found.shape, self.found.knobs
        setup = self.found.setup
        return {"gpu": self.found.rentable.gpu.id, "num_gpus": s.num_gpus, "nodes": s.nodes,
                "engine": s.engine(), "tp": s.tp, "pp": s.pp, "zero": int(s.zero), "fsdp": str(s.fsdp),
                "offload": str(s.offload), "method": str(k.method), "optimizer": str(setup.optimizer),
                "grad_ckpt": str(setup.grad_ckpt), "attention": str(setup.attention), "batch_size": k.batch_size,
                "grad_accum": k.grad_accum}

    def to_dict(self) -> dict[str, Any]:
        f, est = self.found, self.estimate
        out: dict[str, Any] = {"rank": self.rank, "sets": self.sets}
        if est is not None:
            out.update({"setup": est.setup_dict(), "memory": est.memory.to_dict(), "time": est.time.to_dict(),
                        "cost": None if est.cost is None else est.cost.to_dict()})
        else:
            usable = f.rentable.usable_bytes
            out.update({"memory": {"device_bytes": f.device_bytes, "usable_bytes": usable, "fits": True,
                                   "gpu_capacity_bytes": f.rentable.gpu.capacity_bytes},
                        "time": f.time.to_dict(), "cost": f.cost.to_dict()})
        out.update({"ranking": {"cost": f.cost_value, "time_s": f.time_s}, "pareto": self.pareto,
                    "margin_fraction": f.margin_fraction, "risky": self.risky, "gpu_best": self.gpu_best,
                    "calibrated": f.calibrated, "measured_run": None if f.measured is None else f.measured.to_dict(),
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
    notes: tuple[str, ...] = ()

    @property
    def searched(self) -> int:
        return self.outcome.candidates

    def front(self) -> list[Found]:
        return sorted((f for f, on in zip(self.found, self.pareto) if on), key=lambda f: (f.cost_value, f.time_s))

    def prices(self) -> dict[str, Any]:
        """The prices the ranking compares: one kind, in one currency, each GPU type's with its origin
        and, when converted, the rate."""
        book = self.request.book
        rows, rates = [], {}
        for r in self.request.rentables:
            p = r.pricing
            offer = p.offer
            rows.append({"gpu": r.gpu.id, "price_per_gpu_hour": p.price_per_gpu_hour, "currency": p.currency,
                         "kind": p.kind_label, "provider": p.provider, "instance": p.instance, "as_of": p.as_of,
                         "origin": p.origin, "gpus_per_instance": p.gpus_per_instance,
                         "original": None if p.conversion is None or offer is None else
                         {"price_per_gpu_hour": offer.price_per_gpu_hour, "currency": offer.currency}})
            if p.conversion is not None:
                for rate in p.conversion.rates:
                    rates[(rate.currency, rate.origin)] = {"currency": rate.currency, "per_usd": rate.per_usd,
                                                           "as_of": rate.as_of, "basis": rate.basis,
                                                           "source": rate.source, "origin": rate.origin,
                                                           "stale": rate_is_stale(rate, self.request.today)}
        return {"kind": book.kind_label, "kind_origin": book.kind_origin, "currency": book.currency,
                "currency_origin": book.currency_origin, "per_gpu": rows, "rates": list(rates.values())}

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        pr, fixed = self.request, self.request.fixed
        return {"plans": [p.to_dict() for p in self.plans],
                "stack": {"framework": str(pr.job.setup.framework), "layouts": pr.capabilities.layouts,
                          "optimizers": list(dict.fromkeys(str(o) for m in pr.methods for o in m.optimizers)),
                          "fixed": {k: (None if v is None else int(v) if k == "zero" else v) for k, v in
                                    (("zero", fixed.zero), ("fsdp", fixed.fsdp), ("offload", fixed.offload),
                                     ("tp", fixed.tp), ("pp", fixed.pp))},
                          "risky_margin": RISKY_MARGIN},
                "prices": self.prices(),
                "rejected": [r.to_dict() for r in self.rejected],
                "searched": o.candidates,
                "pareto_front": [{"gpu": f.rentable.gpu.id, "num_gpus": f.shape.num_gpus, "engine": f.shape.engine(),
                                  "cost": f.cost_value, "time_s": f.time_s, "currency": self.currency,
                                  "flags": job_flags(plan_job(self.request, f))}
                                 for f in self.front()],
                "sort": self.request.sort, "currency": self.currency,
                "ranked_by": "cost of the run" if self.request.job.workload.samples else "cost of one optimizer step",
                "stats": {"groups": o.groups, "groups_visited": o.visited, "memory_checks": o.memory_checks,
                          "timed": o.timed, "plans_found": len(self.found), "search_s": o.elapsed_s},
                "notes": list(self.notes)}
