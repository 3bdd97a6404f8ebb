"""Physical plausibility of a recorded measurement against the GPU it ran on and the estimate
trainplan makes for its setup. A measurement that cannot be true is refused (TrainplanError, one
line saying what to fix) before anything is written:

- memory above the GPU's capacity (GpuSpec.capacity_bytes: what the driver reports) -- unless
  `force` (a GPU variant with more memory than the catalog row): then a note;
- device memory (nvidia-smi / NVML) below peak reserved or peak allocated: the device view holds
  everything the caching allocator reserved plus the CUDA context;
- tokens/s per GPU whose implied model FLOP/s (tokens/s x the estimate's model FLOPs per token,
  6 x parameters where no time estimate exists) exceed the GPU's dense peak for the run's dtype.

Reserved below allocated is refused earlier, by records.check_measured (no GPU needed).
"""

from __future__ import annotations

from typing import Any

from trainplan.errors import TrainplanError
from trainplan.units import GIB

LABELS = {"peak_allocated_bytes": "peak allocated", "peak_reserved_bytes": "peak reserved",
          "device_bytes": "device"}


def _gib(value: float) -> str:
    return f"{value / GIB:,.2f} GiB"


def check_memory(measured: dict[str, Any], gpu: Any, *, force: bool = False) -> tuple[str, ...]:
    """Capacity and device-vs-reserved checks; returns notes (a forced capacity overrun)."""
    notes = []
    capacity = gpu.capacity_bytes
    for key, label in LABELS.items():
        value = measured.get(key)
        if value is None or value <= capacity:
            continue
        text = (f"measured {label} memory {_gib(value)} per GPU is above the capacity of the {gpu.id!r} GPU "
                f"({_gib(capacity)})")
        if not force:
            raise TrainplanError(f"{text}: check --gpu (the GPU the run used) and that the value is GiB per GPU, "
                                 "or pass --force if this GPU really has more memory; nothing was written")
        notes.append(f"{text}; recorded with --force")
    device = measured.get("device_bytes")
    for key in ("peak_reserved_bytes", "peak_allocated_bytes"):
        below = measured.get(key)
        if device is not None and below is not None and device < below:
            raise TrainplanError(f"device memory ({_gib(device)}, nvidia-smi/NVML) is below {LABELS[key]} "
                                 f"({_gib(below)}): the device view holds all PyTorch reserves plus the CUDA "
                                 "context; check which number is which (--device-gib, --peak-reserved-gib, "
                                 "--peak-allocated-gib); nothing was written")
    return tuple(notes)


def check_throughput(measured: dict[str, Any], gpu: Any, *, flops_per_token: float, peak_flops_per_s: float,
                     peak_dtype: str) -> None:
    """tokens/s per GPU against the GPU's dense peak: refused when the implied model FLOP/s exceed it."""
    tokens_per_s = measured.get("tokens_per_s_per_gpu")
    if tokens_per_s is None or flops_per_token <= 0 or peak_flops_per_s <= 0:
        return
    implied = tokens_per_s * flops_per_token
    if implied > peak_flops_per_s:
        raise TrainplanError(
            f"{tokens_per_s:,.6g} tokens/s per GPU means {implied / 1e12:,.0f} TFLOP/s of model FLOPs per GPU "
            f"({flops_per_token / 1e9:,.3g} GFLOP per token), above the {gpu.id!r} GPU's dense {peak_dtype} peak of "
            f"{peak_flops_per_s / 1e12:,.0f} TFLOP/s: check that --tokens-per-s is per GPU and per second (not for "
            "all GPUs or per step), and --gpu, --model; nothing was written")
