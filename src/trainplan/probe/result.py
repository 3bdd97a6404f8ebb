"""What a probe measured, where, and how it compares with the estimate (no torch here).

Three memory views, as the estimate has them: `peak_allocated_bytes`
(torch.cuda.max_memory_allocated), `peak_reserved_bytes` (max_memory_reserved) and `device_bytes`
(what nvidia-smi / NVML shows for the process). A view that cannot be measured on the device (no
reserve or NVML on the CPU; NVML without nvidia-ml-py) is None, with a note saying why.
"""

from __future__ import annotations

import statistics
from typing import Any

from trainplan.frozen import asdict, field, frozen, replace
from trainplan.job.options import JobOptions
from trainplan.specs import GpuSpec, ModelSpec

MEMORY_VIEWS = ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes")


@frozen
class Measurement:
    """Peaks over the measured steps (2..n: optimizer state already allocated) and their times."""

    device: str                                 # "cuda" or "cpu"
    peak_allocated_bytes: int
    peak_reserved_bytes: int | None
    device_bytes: int | None
    warmup_s: float                             # step 1 (allocates the optimizer state), not timed
    step_times_s: tuple[float, ...]             # steps 2..n
    tokens_per_step: int                        # per GPU: batch x seq x micro-batches
    how: dict[str, str] = field(default_factory=dict)   # view -> how it was measured
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. unrounded CPU bytes, per-rank peaks

    def __post_init__(self) -> None:
        if not self.step_times_s:
            raise ValueError("a measurement needs at least one timed step (steps >= 2)")
        if self.peak_allocated_bytes < 0 or self.tokens_per_step <= 0:
            raise ValueError(f"peak {self.peak_allocated_bytes} B, tokens/step {self.tokens_per_step}: "
                             f"expected >= 0 and > 0")

    @property
    def step_s(self) -> float:
        """Median time of the measured steps (the warm-up excluded)."""
        return statistics.median(self.step_times_s)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.step_s

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "peak_allocated_bytes": self.peak_allocated_bytes,
                "peak_reserved_bytes": self.peak_reserved_bytes, "device_bytes": self.device_bytes,
                "step_s": self.step_s, "tokens_per_s": self.tokens_per_s,
                "warmup_s": self.warmup_s, "step_times_s": list(self.step_times_s),
                "tokens_per_step": self.tokens_per_step, "how": dict(self.how), **self.extra}


@frozen
class Predicted:
    """The estimate's numbers for the same setup (per GPU)."""

    peak_allocated_bytes: int
    peak_reserved_bytes: int
    device_bytes: int
    step_s: float | None
    tokens_per_s: float | None
    gpu: str
    fits: bool
    tflops_per_gpu: float | None = None
    mfu: float | None = None

    @classmethod
    def from_estimate(cls, est) -> Predicted:
        mem, time = est.memory, est.time
        return cls(peak_allocated_bytes=mem.peak_allocated_bytes, peak_reserved_bytes=mem.peak_reserved_bytes,
                   device_bytes=mem.device_bytes, step_s=None if time is None else time.step_s,
                   tokens_per_s=None if time is None else time.tokens_per_s_per_gpu, gpu=est.gpu.id,
                   fits=mem.fits, tflops_per_gpu=None if time is None else time.tflops_per_gpu,
                   mfu=None if time is None else time.mfu)

    def to_dict(self) -> dict[str, Any]:
        return {"peak_allocated_bytes": self.peak_allocated_bytes,
                "peak_reserved_bytes": self.peak_reserved_bytes, "device_bytes": self.device_bytes,
                "step_s": self.step_s, "tokens_per_s": self.tokens_per_s, "gpu": self.gpu,
                "fits": self.fits, "tflops_per_gpu": self.tflops_per_gpu, "mfu": self.mfu}


def error_pct(estimated: float | None, measured: float | None) -> float | None:
    """Signed error of an estimate, in % of the measurement: (estimated - measured) / measured.
    None when either side is missing or the measurement is zero."""
    if estimated is None or measured is None or measured == 0:
        return None
    return 100.0 * (estimated - measured) / measured


COMPARED = MEMORY_VIEWS + ("step_s", "tokens_per_s")


def errors(measured: Measurement, predicted: Predicted) -> dict[str, float | None]:
    """Error % per compared quantity (memory views, step time, tokens/s). A CPU step is no GPU
    step: on the CPU only the memory views are compared."""
    got = measured.to_dict()
    want = predicted.to_dict()
    compared = MEMORY_VIEWS if measured.device == "cpu" else COMPARED
    return {key: error_pct(want[key], got[key]) if key in compared else None for key in COMPARED}


@frozen
class ProbeResult:
    """One probe: the setup it ran, where, what it measured, what trainplan predicted."""

    setup: dict[str, Any]             # the resolved setup (Estimate.setup_dict())
    environment: dict[str, Any]
    measured: Measurement
    predicted: Predicted
    steps: int
    num_gpus: int = 1
    notes: tuple[str, ...] = ()
    request: dict[str, Any] = field(default_factory=dict)   # what was asked (JobOptions fields)
    recorded: str | None = None       # the ledger's fingerprint of the stored run, or None

    @property
    def error_pct(self) -> dict[str, float | None]:
        return errors(self.measured, self.predicted)

    def to_dict(self) -> dict[str, Any]:
        return {"setup": self.setup, "request": self.request, "environment": self.environment, "steps": self.steps,
                "num_gpus": self.num_gpus, "measured": self.measured.to_dict(),
                "estimated": self.predicted.to_dict(), "error_pct": self.error_pct,
                "recorded": self.recorded, "notes": list(self.notes)}


def request_json(req: JobOptions) -> dict[str, Any]:
    """The JobOptions as JSON: a ModelSpec by its name, a GpuSpec by its id."""
    fields = asdict(replace(req, model="", gpu=""))
    fields["model"] = req.model.name if isinstance(req.model, ModelSpec) else str(req.model)
    fields["gpu"] = req.gpu.id if isinstance(req.gpu, GpuSpec) else req.gpu
    return fields
