"""The result of a trace: frozen, base units (bytes, seconds), JSON-ready through to_dict()."""

from __future__ import annotations

from typing import Any

from trainplan.frozen import field, frozen


@frozen
class TraceResult:
    """Peak allocated memory of one steady-state training step and what it is made of.

    peak_allocated_bytes sums the storage sizes alive at the peak (what
    torch.cuda.max_memory_allocated counts, before the allocator's rounding);
    peak_cuda_allocated_bytes rounds each storage up to the CUDA caching allocator's 512-byte
    blocks. breakdown_bytes and per_module describe the storages alive at the peak.
    """

    model: str
    mode: str                                   # "fake" (the trace) or "real" (CPU reference run)
    peak_allocated_bytes: int
    peak_cuda_allocated_bytes: int
    breakdown_bytes: dict[str, int]             # category -> bytes at the peak
    peak_phase: str                             # forward / backward / optimizer
    peak_module: str                            # innermost module running at the peak ("" none)
    peak_in_recompute: bool                     # the peak came while recomputing a checkpointed layer
    per_module: dict[str, dict[str, int]]       # top-level module -> category -> bytes at the peak
    timeline: tuple[tuple[str, int], ...]       # (event, allocated bytes), in order
    live_tensors_at_peak: int
    notes: tuple[str, ...] = field(default=())  # what was emulated or stood in
    wall_s: float = 0.0

    def __post_init__(self) -> None:
        total = sum(self.breakdown_bytes.values())
        if total != self.peak_allocated_bytes:
            raise ValueError(f"breakdown sums to {total} bytes, peak is {self.peak_allocated_bytes}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "mode": self.mode,
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "peak_cuda_allocated_bytes": self.peak_cuda_allocated_bytes,
            "breakdown_bytes": dict(self.breakdown_bytes),
            "peak_phase": self.peak_phase,
            "peak_module": self.peak_module,
            "peak_in_recompute": self.peak_in_recompute,
            "per_module": {k: dict(v) for k, v in self.per_module.items()},
            "timeline": [[label, value] for label, value in self.timeline],
            "live_tensors_at_peak": self.live_tensors_at_peak,
            "notes": list(self.notes),
            "wall_s": self.wall_s,
        }
