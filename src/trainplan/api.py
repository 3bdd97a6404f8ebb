"""The typed Python API: `trainplan.estimate(model, ...)` with the CLI's flags as keyword arguments."""

from __future__ import annotations

from typing import Any

from trainplan.estimation.result import Estimate, run
from trainplan.job.options import Request
from trainplan.specs import ModelSpec


def estimate(model: str | ModelSpec, **options: Any) -> Estimate:
    """Estimate memory, time and cost of one training setup.

    `options` are the setup flags with underscores: method="lora", precision="bf16",
    batch_size=4, seq_len=2048, gpu="h100", num_gpus=8, zero=3, samples=10000, ...
    """
    return run(Request(model=model, **options))
