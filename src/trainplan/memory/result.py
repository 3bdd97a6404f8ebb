"""The memory estimate: three views of the peak and the breakdown that adds up to it."""

from __future__ import annotations

from trainplan.frozen import field, frozen


def usable_bytes(capacity_bytes: int, headroom: float) -> int:
    """What a setup may take of a GPU's capacity: capacity x (1 - headroom), to the byte below."""
    return int(capacity_bytes * (1 - headroom))


@frozen
class MemoryEstimate:
    components_bytes: dict[str, int]     # at the peak; sums to peak_allocated_bytes
    peak_allocated_bytes: int            # torch.cuda.max_memory_allocated view
    peak_reserved_bytes: int             # torch.cuda.max_memory_reserved view
    device_bytes: int                    # nvidia-smi view
    gpu_capacity_bytes: int
    usable_bytes: int                    # capacity x (1 - headroom)
    headroom: float
    peak_phase: str
    cpu_ram_bytes: int
    saved_activations_bytes: int = 0     # kept from forward to backward (at the loss)
    phases_bytes: dict[str, int] = field(default_factory=dict)   # allocated total per moment
    overhead_bytes: dict[str, int] = field(default_factory=dict)  # reserve, context, nccl, paged
    per_stage_bytes: tuple[int, ...] = ()  # device view of each pipeline stage's GPU (pp > 1 only)
    notes: tuple[str, ...] = ()
    measured: object = None              # ledger.recorded.RecordedRun: this setup ran (the verdict follows it)

    @property
    def fits(self) -> bool:
        """The estimate within the usable memory, or the same setup recorded as having run."""
        return self.device_bytes <= self.usable_bytes or self.measured is not None

    @property
    def margin_bytes(self) -> int:
        return self.usable_bytes - self.device_bytes

    def to_dict(self) -> dict:
        return {
            "components_bytes": dict(self.components_bytes),
            "peak_allocated_bytes": self.peak_allocated_bytes,
            "peak_reserved_bytes": self.peak_reserved_bytes,
            "device_bytes": self.device_bytes,
            "gpu_capacity_bytes": self.gpu_capacity_bytes,
            "usable_bytes": self.usable_bytes,
            "headroom": self.headroom,
            "fits": self.fits,
            "margin_bytes": self.margin_bytes,
            "peak_phase": self.peak_phase,
            "cpu_ram_bytes": self.cpu_ram_bytes,
            "saved_activations_bytes": self.saved_activations_bytes,
            "overhead_bytes": dict(self.overhead_bytes),
            "phases_bytes": dict(self.phases_bytes),
            "per_stage_bytes": list(self.per_stage_bytes),
            **({"fits_by": "measured run", "measured_run": self.measured.to_dict()} if self.measured is not None else {}),
        }
