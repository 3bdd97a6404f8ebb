"""`trainplan plan`: the setups that fit, ranked by cost (or time), with the Pareto front of cost
against time and, for each GPU type that cannot carry the job, why.

The request (planner/request.py, resolved at the edge) holds the job, one setup per method and
the knobs the planner may choose; the planner varies the layout (GPU type and count, tp/pp,
DDP/ZeRO/FSDP, optimizer offload) and those knobs, and keeps the setup otherwise as given. The
search is planner/search.py (branch and bound, exact top k and front); each plan shown is a Job
estimated in full (planner/explain.py), the same answer `trainplan estimate` gives for its flags.
The job's calibration and the ledger's recorded runs (unless --no-calibration) enter the search as
`trainplan estimate` applies them (planner/search.py, step 4), each plan's notes say which.
"""

from __future__ import annotations

from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.resolve import supported_attention, with_padding_mask
from trainplan.job.training import TrainingSetup
from trainplan.planner.explain import plans_shown, rejections
from trainplan.planner.request import DEFAULT_GLOBAL_BATCH, PlanRequest
from trainplan.planner.result import PlanResult
from trainplan.planner.search import Family, Problem, Progress, pareto_flags, search
from trainplan.planner.space import (
    Knobs,
    Shape,
    micro_batches,
    node_counts,
    shardings,
    splits,
)

__all__ = ["PlanRequest", "PlanResult", "plan"]


def _families(pr: PlanRequest) -> list[Family]:
    """Every (count, split, micro-batch, knobs) group that has at least one engine the framework runs
    and the fixed knobs allow."""
    spec = pr.job.setup.model
    out = []
    for n in node_counts(pr.max_gpus, pr.gpus_per_node):
        nodes = 1 if n <= pr.gpus_per_node else n // pr.gpus_per_node
        for tp, pp in splits(spec, n, pr.gpus_per_node, pr.global_batch, caps=pr.capabilities, fixed=pr.fixed):
            if not shardings(n, nodes, tp, pp, pr.capabilities, pr.fixed):
                continue
            per_rank = pr.global_batch // (n // (tp * pp))
            for mb in micro_batches(per_rank):
                for search_method in pr.methods:
                    for ckpt in pr.grad_ckpts:
                        for attention in pr.attentions:
                            out.append(Family(num_gpus=n, nodes=nodes, tp=tp, pp=pp, method=search_method.method,
                                              grad_ckpt=ckpt, attention=attention, batch_size=mb,
                                              grad_accum=per_rank // mb))
    return out


def _fixed_text(pr: PlanRequest) -> str:
    f = pr.fixed
    parts = [f"--{k} {int(v) if k == 'zero' else v}" for k, v in
             (("zero", f.zero), ("fsdp", f.fsdp), ("offload", f.offload), ("tp", f.tp), ("pp", f.pp)) if v is not None]
    return " ".join(parts) or "the search"


def plan(pr: PlanRequest, *, progress: Progress | None = None, details: bool = True, prune: bool = True) -> PlanResult:
    """Search, rank, explain (module docstring). `details`: estimate each shown plan in full
    (breakdown, notes), as `trainplan estimate` prints it. `prune=False` visits every group (the
    exhaustive walk the branch and bound must agree with)."""
    job = pr.job
    spec = job.setup.model
    setups: dict[Knobs, TrainingSetup] = {}

    def setup_for(k: Knobs) -> TrainingSetup:
        s = setups.get(k)
        if s is None:
            base = pr.search_for(k.method).setup
            s = with_padding_mask(replace(base, optimizer=k.optimizer, grad_ckpt=k.grad_ckpt,
                                          attention=supported_attention(spec, k.attention), batch_size=k.batch_size,
                                          grad_accum=k.grad_accum), job.workload, job.timing)
            setups[k] = s
        return s

    engines: dict[tuple, tuple[Shape, ...]] = {}

    def engines_for(f: Family) -> tuple[Shape, ...]:
        key = (f.num_gpus, f.nodes, f.tp, f.pp)
        if key not in engines:
            engines[key] = tuple(Shape(num_gpus=f.num_gpus, nodes=f.nodes, tp=f.tp, pp=f.pp, zero=z, fsdp=fs,
                                       offload=o)
                                 for z, fs, o in shardings(f.num_gpus, f.nodes, f.tp, f.pp, pr.capabilities, pr.fixed))
        return engines[key]

    families = tuple(_families(pr))
    if not families:
        raise TrainplanError(f"no layout of up to {pr.max_gpus} GPUs that --framework {job.setup.framework} runs "
                             f"keeps {_fixed_text(pr)} (with a data-parallel size dividing --global-batch "
                             f"{pr.global_batch})")

    problem = Problem(
        rentables=pr.rentables, families=families, engines=engines_for,
        optimizers=lambda m: pr.search_for(m).optimizers, setup_for=setup_for, workload=job.workload,
        options=job.timing, memory=job.memory_model(), global_batch=pr.global_batch, sort=pr.sort,
        top=pr.top, budget=pr.budget, deadline_s=None if pr.deadline_hours is None else pr.deadline_hours * 3600.0,
        calibration=job.calibration, ran=job.recorded.runs_of(spec.name) if job.recorded is not None else {},
        engine_knobs=(job.zero, job.fsdp, job.parallel))
    outcome = search(problem, progress=progress, prune=prune)
    found = tuple(outcome.found)
    flags = pareto_flags([(f.cost_value, f.time_s) for f in found])
    plans, notes = plans_shown(pr, found, flags, details=details)
    rejected = list(pr.rejected) + rejections(pr, problem, outcome)
    notes = [f"global batch {pr.global_batch} sequences per optimizer step (micro-batch x accumulation x data "
             "parallel)" + ("" if pr.global_batch != DEFAULT_GLOBAL_BATCH else ", the default (--global-batch)")] + notes
    if outcome.bound_violations:
        notes.append(f"the time bound failed {outcome.bound_violations} times: searched without pruning")
    return PlanResult(request=pr, plans=tuple(plans), found=found, pareto=tuple(flags), rejected=tuple(rejected),
                      outcome=outcome, currency=pr.currency, notes=tuple(notes))
