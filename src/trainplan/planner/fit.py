"""`trainplan fit`: the largest micro-batch and the longest sequence that fit one layout.

Memory per GPU grows with the micro-batch and with the sequence length (every saved tensor and the
logits scale with tokens; nothing shrinks), so each limit is found by doubling until the setup no
longer fits, then bisecting between the last fit and the first miss: about 2 log2(limit) memory
estimates (planner_memory's fast path, equal to estimate_memory).

The ledger's corrections apply as in `trainplan estimate` (unless --no-calibration): the matching
calibration scales each device-view peak, and a value whose setup is recorded as having run on this
layout (ledger/recorded.py) fits by its measurement; the result's notes say which.
"""

from __future__ import annotations

from typing import Any, Callable

from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.job import Job
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.training import Layout, TrainingSetup
from trainplan.ledger.calibration import calibrated_device, matches, short_note
from trainplan.ledger.recorded import RecordedRun
from trainplan.specs import GpuSpec

MAX_BATCH_SEARCHED = 65536
MAX_SEQ_WITHOUT_CONTEXT = 1 << 20     # models without a stated context length: search up to 1M tokens


@frozen
class Limit:
    """The largest value that fits (0: not even the smallest), its memory, and where the search stopped."""

    value: int
    device_bytes: int | None      # per GPU at `value`
    next_device_bytes: int | None  # per GPU at the first value that does not fit (None: never failed)
    ceiling: int                  # the largest value searched
    step: int                     # values searched are multiples of this
    ceiling_reason: str = "the largest value searched"
    measured: RecordedRun | None = None   # `value` fits by this recorded run (its estimate does not)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "device_bytes": self.device_bytes, "next_device_bytes": self.next_device_bytes,
                "ceiling": self.ceiling, "at_ceiling": self.value == self.ceiling, "ceiling_reason": self.ceiling_reason,
                "step": self.step, "measured_run": None if self.measured is None else self.measured.to_dict()}


@frozen
class FitResult:
    setup: TrainingSetup
    layout: Layout
    gpu: GpuSpec
    usable_bytes: int
    headroom: float
    max_batch: Limit              # at the request's sequence length
    max_seq: Limit                # at the request's micro-batch
    calibrated: bool = False      # the device views carry the ledger's calibration
    notes: tuple[str, ...] = ()   # the calibration applied, values that fit by a recorded run

    def to_dict(self) -> dict[str, Any]:
        lay = self.layout
        return {"model": self.setup.model.name, "method": str(self.setup.method), "gpu": self.gpu.id,
                "num_gpus": lay.num_gpus, "nodes": lay.nodes, "zero": int(lay.zero), "fsdp": str(lay.fsdp),
                "offload": str(lay.offload), "tp": lay.tp, "pp": lay.pp, "cp": lay.cp, "ep": lay.ep,
                "seq_len": self.setup.seq_len, "batch_size": self.setup.batch_size,
                "gpu_capacity_bytes": self.gpu.capacity_bytes, "usable_bytes": self.usable_bytes,
                "headroom": self.headroom,
                "max_batch_size": self.max_batch.value, "max_seq_len": self.max_seq.value,
                "max_batch": self.max_batch.to_dict(), "max_seq": self.max_seq.to_dict(),
                "calibrated": self.calibrated, "notes": list(self.notes)}


def largest_fitting(device_at: Callable[[int], int | None], usable: int, *, ceiling: int, step: int = 1,
                    ran: Callable[[int], RecordedRun | None] | None = None) -> Limit:
    """Largest multiple of `step` in [step, ceiling] with device_at(v) <= usable, for a non-decreasing
    device_at (None: the value is not a valid setup, treated as not fitting). `ran(v)`: a recorded
    run of the setup at v, which then fits whatever device_at says."""
    proven: dict[int, RecordedRun] = {}

    def ok(v: int) -> tuple[bool, int | None]:
        d = device_at(v)
        if d is not None and d > usable and ran is not None:
            run = ran(v)
            if run is not None:
                proven[v] = run
                return True, d
        return d is not None and d <= usable, d

    fits, dev = ok(step)
    if not fits:
        return Limit(value=0, device_bytes=None, next_device_bytes=dev, ceiling=ceiling, step=step)
    lo, lo_dev = step, dev          # fits
    hi, hi_dev = None, None         # does not fit
    v = step
    while hi is None:
        v = min(v * 2, ceiling)
        fits, dev = ok(v)
        if fits:
            lo, lo_dev = v, dev
            if v == ceiling:
                return Limit(value=v, device_bytes=dev, next_device_bytes=None, ceiling=ceiling, step=step,
                             measured=proven.get(v))
        else:
            hi, hi_dev = v, dev
    while hi - lo > step:
        mid = (lo + hi) // 2 // step * step
        if mid <= lo:
            break
        fits, dev = ok(mid)
        if fits:
            lo, lo_dev = mid, dev
        else:
            hi, hi_dev = mid, dev
    return Limit(value=lo, device_bytes=lo_dev, next_device_bytes=hi_dev, ceiling=ceiling, step=step,
                 measured=proven.get(lo))


def resolve_fit(options: JobOptions) -> Job:
    """The Job whose layout `fit` searches: no price (fit is about memory); the ledger's calibration
    and recorded runs unless --no-calibration."""
    return resolve_job(options, priced=False)


def fit(job: Job, *, batch_ceiling: int = MAX_BATCH_SEARCHED, seq_ceiling: int | None = None) -> FitResult:
    """The largest micro-batch (at the job's sequence length) and the longest sequence (at its
    micro-batch) that fit the job's layout with its headroom."""
    setup, layout, gpu, spec = job.setup, job.layout, job.gpu, job.setup.model
    fm = job.memory_model()
    fm.device_bytes(setup, layout)          # invalid layouts fail here, with their one-line reason
    usable = int(gpu.capacity_bytes * (1 - job.headroom))

    cal = job.calibration
    fw, method = str(setup.framework), str(setup.method)
    calibrated = matches(cal, framework=fw, gpu=gpu.id, method=method)

    def at(**change) -> Callable[[int], int | None]:
        def device(v: int) -> int | None:
            try:
                changed = replace(setup, **{k: v for k in change})
                if not calibrated:
                    return fm.device_bytes(changed, layout)
                stages, _ = fm.stages(changed, layout)
                worst = max(stages, key=lambda st: st.device)
                return calibrated_device((worst.allocated, worst.reserved, worst.device), cal, framework=fw,
                                         gpu=gpu.id, method=method)
            except TrainplanError:
                return None
        return device

    def ran(name: str) -> Callable[[int], RecordedRun | None] | None:
        if job.recorded is None or not job.recorded.runs_of(spec.name):
            return None
        return lambda v: job.recorded.success_for(replace(setup, **{name: v}), layout, zero=job.zero, fsdp=job.fsdp,
                                                  parallel=job.parallel)

    seq_top = seq_ceiling or spec.max_position_embeddings or MAX_SEQ_WITHOUT_CONTEXT
    if seq_top <= 0:
        raise TrainplanError(f"the sequence ceiling must be positive, got {seq_top}")
    seq_step = 2 * layout.cp if layout.cp > 1 else 1
    why = ("the --seq-len ceiling given" if seq_ceiling else "the model's context length"
           if spec.max_position_embeddings else f"{MAX_SEQ_WITHOUT_CONTEXT:,} tokens, no context length known")
    max_seq = largest_fitting(at(seq_len=True), usable, ceiling=max(seq_step, seq_top // seq_step * seq_step),
                              step=seq_step, ran=ran("seq_len"))
    max_batch = largest_fitting(at(batch_size=True), usable, ceiling=batch_ceiling, ran=ran("batch_size"))
    notes = [short_note(cal, framework=fw, gpu=gpu.id, method=method)] if calibrated else []
    for what, lim in (("micro-batch", max_batch), ("sequence", max_seq)):
        if lim.measured is not None:
            notes.append(f"the {what} limit {lim.value:,} fits by a recorded run: this setup {lim.measured.describe()} "
                         "(the headroom is not applied to a measurement)")
    return FitResult(setup=setup, layout=layout, gpu=gpu, usable_bytes=usable, headroom=job.headroom,
                     max_batch=replace(max_batch, ceiling_reason=f"{batch_ceiling:,} sequences"),
                     max_seq=replace(max_seq, ceiling_reason=why), calibrated=calibrated, notes=tuple(notes))
