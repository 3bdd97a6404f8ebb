"""When a setup does not fit: the single changes that would make it fit, what each saves and
what it costs (time, quality, money)."""

from __future__ import annotations

from trainplan.enums import Fsdp, GradCkpt, Method, Optimizer, Quant, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.job import Job
from trainplan.job.training import Layout, LoraConfig, QuantConfig, TrainingSetup
from trainplan.memory import MemoryEstimate, MemoryModel, estimate_memory
from trainplan.specs import GpuSpec


@frozen
class Suggestion:
    change: str            # the flag(s) to set
    device_bytes: int      # the new device-view peak per GPU
    saves_bytes: int
    fits: bool
    cost: str              # what the change costs

    def to_dict(self) -> dict:
        return {"change": self.change, "device_bytes": self.device_bytes, "saves_bytes": self.saves_bytes,
                "fits": self.fits, "cost": self.cost}


def _try(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, headroom: float,
         model: MemoryModel) -> MemoryEstimate | None:
    try:
        return estimate_memory(setup, layout, gpu, headroom=headroom, model=model)
    except TrainplanError:
        return None


def _setup_changes(setup: TrainingSetup) -> list[tuple[str, TrainingSetup, str]]:
    out: list[tuple[str, TrainingSetup, str]] = []
    if setup.grad_ckpt is not GradCkpt.FULL:
        out.append(("--grad-ckpt full", replace(setup, grad_ckpt=GradCkpt.FULL),
                    "about 30% more compute per step (one extra forward)"))
    if setup.batch_size > 1:
        b = max(1, setup.batch_size // 2)
        accum = setup.grad_accum * (setup.batch_size // b)
        out.append((f"--batch-size {b} --grad-accum {accum}",
                    replace(setup, batch_size=b, grad_accum=accum),
                    "same global batch; smaller matmuls run a little slower"))
    if setup.method in (Method.FULL, Method.FREEZE):
        lora = LoraConfig(rank=16, alpha=32, targets=("all-linear",))
        out.append(("--method lora --lora-targets all-linear", replace(setup, method=Method.LORA, lora=lora),
                    "trains ~1% of the weights: usually close to full fine-tuning quality, not always"))
    if setup.method is not Method.QLORA:
        lora = setup.lora or LoraConfig(rank=16, alpha=32, targets=("all-linear",))
        out.append(("--method qlora --quant nf4", replace(setup, method=Method.QLORA, lora=lora,
                                                          quant=QuantConfig(kind=Quant.NF4)),
                    "4-bit base weights: ~0.5 B/param; slower steps (dequantisation), small quality loss"))
    if setup.optimizer in (Optimizer.ADAMW, Optimizer.ADAMW_FUSED) and setup.method in (Method.FULL, Method.FREEZE):
        out.append(("--optimizer adamw-8bit", replace(setup, optimizer=Optimizer.ADAMW_8BIT),
                    "bitsandbytes 8-bit states: 2 B/param instead of 8; usually the same quality"))
    return out


def suggestions(job: Job, current: MemoryEstimate, model: MemoryModel) -> list[Suggestion]:
    """Single changes that lower the peak, those that make it fit first. `model`: the memory model of
    the estimate, whose cached parts the changes share (a new GPU type or count reuses the walk)."""
    setup, layout, gpu, headroom = job.setup, job.layout, job.gpu, job.headroom
    found: list[Suggestion] = []
    for change, new_setup, cost in _setup_changes(setup):
        est = _try(new_setup, layout, gpu, headroom, model)
        if est and est.device_bytes < current.device_bytes:
            found.append(Suggestion(change=change, device_bytes=est.device_bytes,
                                    saves_bytes=current.device_bytes - est.device_bytes, fits=est.fits, cost=cost))
    bigger = [g for g in job.gpus
              if g.capacity_bytes > gpu.capacity_bytes and g.vendor == gpu.vendor]
    for other in sorted(bigger, key=lambda g: g.capacity_bytes):
        est = _try(setup, replace(layout, gpu_id=other.id), other, headroom, model)
        if est and est.fits:
            found.append(Suggestion(change=f"--gpu {other.id}", device_bytes=est.device_bytes,
                                    saves_bytes=0, fits=True,
                                    cost=f"a {other.memory_bytes // 10**9} GB GPU (see `trainplan prices --gpu {other.id}`)"))
            break
    if layout.num_gpus == 1 or layout.zero < ZeroStage.PARAMETERS:
        for n in (2, 4, 8, 16, 32, 64, 128, 256):
            if n < layout.num_gpus:
                continue
            nodes = max(1, n // 8)
            more = replace(layout, num_gpus=n, nodes=nodes, zero=ZeroStage.PARAMETERS, fsdp=Fsdp.NONE)
            est = _try(setup, more, gpu, headroom, model)
            if est and est.fits:
                found.append(Suggestion(change=f"--num-gpus {n} --zero 3", device_bytes=est.device_bytes,
                                        saves_bytes=current.device_bytes - est.device_bytes, fits=True,
                                        cost=f"{n} GPUs: communication overhead, {n}x the hourly price"))
                break
    return sorted(found, key=lambda s: (not s.fits, -s.saves_bytes))
