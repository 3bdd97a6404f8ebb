"""When a setup does not fit: the single changes that would make it fit, what each saves and
what it costs (time, quality, money), and, when no single change of the setup fits on the same
GPUs, the pairs of setup changes that do (checkpointing + QLoRA, checkpointing + chunked loss, ...).

Only changes the job's framework can run are offered (job/capabilities.CAPABILITIES: its loss
kernels). Each change is what `trainplan estimate` computes with the flags it names added.
"""

from __future__ import annotations

from trainplan.enums import Fsdp, GradCkpt, Loss, Method, Optimizer, Precision, Quant, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.frameworks import profile
from trainplan.job.capabilities import capabilities
from trainplan.job.job import Job
from trainplan.job.training import Layout, LoraConfig, QuantConfig, TrainingSetup
from trainplan.memory import MemoryEstimate, MemoryModel
from trainplan.memory.result import usable_bytes
from trainplan.specs import GpuSpec


@frozen
class Suggestion:
    change: str            # the flag(s) to set
    device_bytes: int      # the new device-view peak per GPU
    saves_bytes: int
    fits: bool
    cost: str              # what the change costs
    changes: int = 1       # how many changes (2: a pair, offered when no single setup change fits)

    def to_dict(self) -> dict:
        return {"change": self.change, "device_bytes": self.device_bytes, "saves_bytes": self.saves_bytes,
                "fits": self.fits, "cost": self.cost, "changes": self.changes}


@frozen
class _Tried:
    device_bytes: int      # the most loaded GPU's device-view peak
    fits: bool


def _try(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, headroom: float, model: MemoryModel) -> _Tried | None:
    """The peak of a changed setup or layout: the memory model's numbers-only answer (the same peaks
    as estimate_memory's, without their breakdown), None where the change is not a legal setup."""
    try:
        device = model.device_bytes(setup, layout)
    except TrainplanError:
        return None
    return _Tried(device_bytes=device, fits=device <= usable_bytes(gpu.capacity_bytes, headroom))


@frozen
class _Change:
    flags: str
    slot: str              # two changes of one slot do not combine (lora and qlora are both the method)
    apply: object          # TrainingSetup -> TrainingSetup
    cost: str


def _adapter_precision(setup: TrainingSetup) -> dict:
    """A framework that trains full fine-tunes in their load dtype (ms-swift, axolotl) trains adapters
    under its mixed precision (build_setup: Profile.full_precision)."""
    prof = profile(setup.framework)
    if prof.full_precision is not None and setup.precision is prof.full_precision:
        return {"precision": prof.precision}
    return {}


def _changes(setup: TrainingSetup) -> list[_Change]:
    """The setup changes worth trying, least harm first (checkpointing and the loss kernel cost time
    only; the batch split a little speed; 8-bit states and adapters are quality decisions)."""
    out: list[_Change] = []
    if setup.grad_ckpt is not GradCkpt.FULL:
        out.append(_Change(flags="--grad-ckpt full", slot="ckpt", apply=lambda s: replace(s, grad_ckpt=GradCkpt.FULL),
                           cost="about 30% more compute per step (one extra forward)"))
    losses = capabilities(setup.framework).losses
    if setup.impl.loss is Loss.FULL:
        for loss, cost in ((Loss.CHUNKED, "logits and their fp32 copy in chunks: about the same speed"),
                           (Loss.FUSED, ("fused linear cross-entropy (Liger / Cut-CE): no full logits; about the "
                                         "same speed"))):
            if loss in losses:
                out.append(_Change(flags=f"--loss {loss}", slot="loss", cost=cost,
                                   apply=lambda s, loss=loss: replace(s, impl=replace(s.impl, loss=loss))))
    if setup.batch_size > 1:
        b = max(1, setup.batch_size // 2)
        out.append(_Change(flags=f"--batch-size {b} --grad-accum {setup.grad_accum * (setup.batch_size // b)}",
                           slot="batch", cost="same global batch; smaller matmuls run a little slower",
                           apply=lambda s, b=b: replace(s, batch_size=b, grad_accum=s.grad_accum * (s.batch_size // b))))
    if setup.optimizer in (Optimizer.ADAMW, Optimizer.ADAMW_FUSED) and setup.method in (Method.FULL, Method.FREEZE) \
            and Optimizer.ADAMW_8BIT in capabilities(setup.framework).optimizers:
        out.append(_Change(flags="--optimizer adamw-8bit", slot="optimizer",
                           apply=lambda s: replace(s, optimizer=Optimizer.ADAMW_8BIT),
                           cost="bitsandbytes 8-bit states: 2 B/param instead of 8; usually the same quality"))
    if setup.method is Method.FULL and setup.optimizer in (Optimizer.ADAMW, Optimizer.ADAMW_FUSED, Optimizer.ADAMW_8BIT,
                                                           Optimizer.PAGED_ADAMW_8BIT) \
            and Optimizer.GALORE_ADAMW_8BIT in capabilities(setup.framework).optimizers:
        # memory.parallel.optimizer_refusal: not under ZeRO or FSDP (_try answers None there, so it is not offered)
        out.append(_Change(flags="--optimizer galore-adamw-8bit", slot="optimizer",
                           apply=lambda s: replace(s, optimizer=Optimizer.GALORE_ADAMW_8BIT),
                           cost=f"GaLore: 8-bit Adam states of rank-{setup.galore_rank} gradient projections, every "
                                "weight still trained; projections each step and an SVD every update_proj_gap "
                                "steps (not timed); plain data parallel only"))
        out.append(_Change(flags="--optimizer galore-adamw-8bit --optimizer-in-backward", slot="optimizer",
                           apply=lambda s: replace(s, optimizer=Optimizer.GALORE_ADAMW_8BIT,
                                                   impl=replace(s.impl, optimizer_in_backward=True)),
                           cost="layer-wise GaLore: each weight steps in the backward and its gradient is freed at "
                                "once; one GPU and no gradient accumulation (HF Trainer, LLaMA-Factory)"))
    if setup.method in (Method.FULL, Method.FREEZE) and setup.optimizer in (Optimizer.ADAMW, Optimizer.ADAMW_FUSED) \
            and Optimizer.ADAM_MINI in capabilities(setup.framework).optimizers:
        out.append(_Change(flags="--optimizer adam-mini", slot="optimizer",
                           apply=lambda s: replace(s, optimizer=Optimizer.ADAM_MINI),
                           cost="Adam-mini: one second moment per neuron or head, so about half of AdamW's states; "
                                "its paper reports AdamW-level loss (arXiv 2406.16793)"))
    if setup.method in (Method.FULL, Method.FREEZE):
        lora = LoraConfig(rank=16, alpha=32, targets=("all-linear",))
        out.append(_Change(flags="--method lora --lora-targets all-linear", slot="method",
                           apply=lambda s, lora=lora: replace(s, method=Method.LORA, lora=lora, **_adapter_precision(s)),
                           cost="trains ~1% of the weights: usually close to full fine-tuning quality, not always"))
    if setup.method is not Method.QLORA and capabilities(setup.framework).quantized_base:
        lora = setup.lora or LoraConfig(rank=16, alpha=32, targets=("all-linear",))
        # bitsandbytes computes in 16 bits over the 4-bit weights: an fp32 job's QLoRA runs bf16
        sixteen = {"precision": Precision.BF16} if setup.precision is Precision.FP32 else {}
        flags = ("--method qlora --quant nf4" + ("" if setup.lora else " --lora-targets all-linear")
                 + (" --precision bf16" if sixteen else ""))
        out.append(_Change(flags=flags, slot="method",
                           apply=lambda s, lora=lora, sixteen=sixteen: replace(
                               s, method=Method.QLORA, lora=lora, quant=QuantConfig(kind=Quant.NF4),
                               **(sixteen or _adapter_precision(s))),
                           cost="4-bit base weights: ~0.5 B/param; slower steps (dequantisation), small quality loss"))
    return out


def _setup_changes(setup: TrainingSetup) -> list[tuple[str, TrainingSetup, str]]:
    out = []
    for c in _changes(setup):
        try:     # a change the setup cannot take (TrainingSetup refuses it) is not offered
            out.append((c.flags, c.apply(setup), c.cost))
        except TrainplanError:
            continue
    return out


def _pairs(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, headroom: float, model: MemoryModel,
           current: MemoryEstimate) -> list[Suggestion]:
    """Two setup changes together, those that fit, least harm first (the order of _changes)."""
    changes = _changes(setup)
    found = []
    for i, a in enumerate(changes):
        for b in changes[i + 1:]:
            if a.slot == b.slot:
                continue
            try:
                paired = b.apply(a.apply(setup))
            except TrainplanError:
                continue
            est = _try(paired, layout, gpu, headroom, model)
            if est and est.fits:
                found.append(Suggestion(change=f"{a.flags} {b.flags}", device_bytes=est.device_bytes,
                                        saves_bytes=current.device_bytes - est.device_bytes, fits=True,
                                        cost=f"{a.cost}; {b.cost}", changes=2))
    return found


def _more_gpus(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, headroom: float, model: MemoryModel,
               current: MemoryEstimate) -> list[Suggestion]:
    """The fewest GPUs (up to 256) over which the model state, sharded the way the framework shards it
    (DeepSpeed ZeRO-3, else FSDP full sharding), fits; none for a framework that runs neither (Megatron's
    distributed optimizer shards the optimizer states only: `trainplan plan` searches its TP/PP layouts)."""
    caps = capabilities(setup.framework)
    zero3 = ZeroStage.PARAMETERS in caps.zero
    sharded = layout.zero >= ZeroStage.PARAMETERS or layout.fsdp is not Fsdp.NONE
    if not (zero3 or caps.fsdp) or (sharded and layout.num_gpus > 1):
        return []
    flag = "--zero 3" if zero3 else "--fsdp full"
    group = layout.tp * layout.pp * layout.cp       # the GPUs one model copy spans: a count must be a multiple
    counts = {*(2 ** k for k in range(1, 9)), *(group * 2 ** k for k in range(9))}
    for n in sorted(c for c in counts if c <= 256 and c % group == 0):
        if n < layout.num_gpus:
            continue
        more = replace(layout, num_gpus=n, nodes=max(1, n // 8),
                       zero=ZeroStage.PARAMETERS if zero3 else ZeroStage.NONE, fsdp=Fsdp.NONE if zero3 else Fsdp.FULL)
        est = _try(setup, more, gpu, headroom, model)
        if est and est.fits and n == layout.num_gpus:     # the GPUs the job has, sharded
            return [Suggestion(change=flag, device_bytes=est.device_bytes,
                               saves_bytes=current.device_bytes - est.device_bytes, fits=True,
                               cost=f"the model state sharded over the {n} GPUs: more communication a step")]
        if est and est.fits:
            return [Suggestion(change=f"--num-gpus {n} {flag}", device_bytes=est.device_bytes,
                               saves_bytes=current.device_bytes - est.device_bytes, fits=True,
                               cost=f"{n} GPUs: communication overhead, {n}x the hourly price")]
    return []


def _offer_rank(gpu: GpuSpec) -> tuple[int, float]:
    """Among GPUs of one labelled memory size, the one the price catalog offers most cheaply in USD first, then those
    offered only in another currency, then those it does not list (an H200 before the China-only H20 141GB)."""
    from trainplan import catalog

    offers = catalog.gpu_offers(gpu.id)
    if not offers:
        return 2, 0.0
    return (0, offers[0].price_per_gpu_hour) if offers[0].currency == "USD" else (1, 0.0)


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
    pairs = [] if any(s.fits for s in found) else _pairs(setup, layout, gpu, headroom, model, current)
    bigger = [g for g in job.gpus
              if g.capacity_bytes > gpu.capacity_bytes and g.vendor == gpu.vendor]
    for other in sorted(bigger, key=lambda g: (g.memory_bytes, _offer_rank(g), g.capacity_bytes)):
        est = _try(setup, replace(layout, gpu_id=other.id), other, headroom, model)
        if est and est.fits:
            found.append(Suggestion(change=f"--gpu {other.id}", device_bytes=est.device_bytes,
                                    saves_bytes=0, fits=True,
                                    cost=f"a {other.memory_bytes // 10**9} GB GPU (see `trainplan prices --gpu {other.id}`)"))
            break
    found += _more_gpus(setup, layout, gpu, headroom, model, current)
    singles = sorted(found, key=lambda s: (not s.fits, -s.saves_bytes))
    if not pairs:
        return singles
    # no single setup change fits on these GPUs: the hardware changes that fit, then the pairs, then the rest
    return [s for s in singles if s.fits] + pairs + [s for s in singles if not s.fits]
