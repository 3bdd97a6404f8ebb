"""One estimate of one Job: estimate(job) -> Estimate (memory, time, cost, suggestions, notes)."""

from trainplan.estimation.estimate import estimate
from trainplan.estimation.result import Estimate

__all__ = ["Estimate", "estimate"]
