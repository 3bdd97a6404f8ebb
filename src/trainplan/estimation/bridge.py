"""Time and cost for one estimate: the glue between the request and timing/cost."""

from __future__ import annotations

from trainplan.cost.bill import cost_of
from trainplan.errors import TrainplanError
from trainplan.timing.estimate import TimingOptions, estimate_time


def time_and_cost(setup, layout, gpu, workload, req):
    """(TimeEstimate, CostEstimate, notes). Cost uses the given price or the cheapest catalog offer."""
    if req.efficiency is not None and not 0 < req.efficiency <= 1:
        raise TrainplanError(f"--efficiency must be a fraction in (0, 1], got {req.efficiency}")
    from trainplan.job.options import read_lengths

    options = TimingOptions(interconnect=req.interconnect, compiled=req.compile, efficiency=req.efficiency,
                            pp_interleave=req.vpp, sample_lengths=read_lengths(req.lengths_file))
    time = estimate_time(setup, layout, gpu, workload, options)
    cost = cost_of(time, gpu.id, price_per_gpu_hour=req.price_per_gpu_hour, currency=req.currency,
                   provider=req.provider, spot=req.spot)
    return time, cost, list(time.assumptions) + list(cost.notes)
