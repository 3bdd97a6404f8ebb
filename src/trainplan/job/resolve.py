"""From what the user said (JobOptions) to a Job: names -> catalog specs, strings -> enums, defaults
from the framework profile, files read, the price chosen, the calibration loaded. All of a job's
I/O happens here; the estimate that follows is pure."""

from __future__ import annotations

import datetime
import json
from enum import Enum

from trainplan import catalog
from trainplan.cost.prices import NoPriceError, PriceBook, Pricing, resolve_pricing
from trainplan.cost.sources import market_gpus, options_book
from trainplan.enums import (
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    Method,
    Offload,
    Optimizer,
    Precision,
    Quant,
    ZeroStage,
)
from trainplan.errors import TrainplanError
from trainplan.job.frameworks import implementation, profile
from trainplan.job.job import Job, check_headroom
from trainplan.job.options import JobOptions
from trainplan.job.training import (
    Layout,
    LoraConfig,
    QuantConfig,
    TrainingSetup,
    Workload,
)
from trainplan.ledger.calibration import load_active
from trainplan.memory.parallel import ParallelConfig
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import TimingOptions

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any, TypeVar

    E = TypeVar("E", bound=Enum)


def parse_enum(cls: type[E], value: Any, flag: str) -> E:
    if isinstance(value, cls):
        return value
    try:
        return cls(int(value) if issubclass(cls, int) else str(value).lower())
    except (ValueError, TypeError):
        choices = ", ".join(str(m.value) for m in cls)
        raise TrainplanError(f"{flag} {value!r} is not one of: {choices}") from None


def _targets(value: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    return tuple(value)


def resolve_model(model: str | ModelSpec) -> ModelSpec:
    return model if isinstance(model, ModelSpec) else catalog.resolve_model(str(model))


def resolve_gpu(gpu: str | GpuSpec) -> GpuSpec:
    return gpu if isinstance(gpu, GpuSpec) else catalog.resolve_gpu(str(gpu))


# transformers 5 refuses SDPA for these model types (soft-capped attention logits): eager it is.
_NO_SDPA = frozenset({"gemma2"})


def supported_attention(spec: ModelSpec, attention: Attention) -> Attention:
    if attention is Attention.SDPA and spec.model_type in _NO_SDPA:
        return Attention.EAGER
    return attention


def build_setup(req: JobOptions, spec: ModelSpec | None = None) -> TrainingSetup:
    spec = spec or resolve_model(req.model)
    framework = parse_enum(Framework, req.framework, "--framework")
    prof = profile(framework)
    method = parse_enum(Method, req.method, "--method")
    precision = parse_enum(Precision, req.precision, "--precision") if req.precision else prof.precision
    optimizer = parse_enum(Optimizer, req.optimizer, "--optimizer") if req.optimizer else prof.optimizer
    grad_ckpt = parse_enum(GradCkpt, req.grad_ckpt, "--grad-ckpt") if req.grad_ckpt else prof.grad_ckpt
    attention = parse_enum(Attention, req.attention, "--attention") if req.attention else prof.attention
    attention = supported_attention(spec, attention)
    loss = parse_enum(Loss, req.loss, "--loss") if req.loss else None
    impl = implementation(framework, loss=loss, optimizer_in_backward=req.optimizer_in_backward,
                          activation_offload=req.activation_offload, liger_kernels=req.liger,
                          load_fp32=req.load_fp32, compiled=req.compile)
    lora = quant = None
    if method in (Method.LORA, Method.QLORA):
        alpha = req.lora_alpha if req.lora_alpha is not None else 2.0 * req.lora_rank
        lora = LoraConfig(rank=req.lora_rank, alpha=alpha, dropout=req.lora_dropout,
                          targets=_targets(req.lora_targets), dora=req.dora)
    if method is Method.QLORA:
        kind = parse_enum(Quant, req.quant or "nf4", "--quant")
        quant = QuantConfig(kind=kind, double_quant=req.double_quant)
    elif req.quant:
        raise TrainplanError("--quant applies to --method qlora only")
    if precision is Precision.FP32 and method is Method.QLORA:
        raise TrainplanError("QLoRA with --precision fp32 is not a thing: 4-bit weights compute in "
                             "bf16/fp16; use --precision bf16")
    return TrainingSetup(model=spec, method=method, precision=precision, optimizer=optimizer,
                         batch_size=req.batch_size, seq_len=req.seq_len, grad_accum=req.grad_accum,
                         grad_ckpt=grad_ckpt, attention=attention, lora=lora, quant=quant,
                         freeze_trainable_layers=req.freeze_layers, framework=framework, impl=impl)


def build_layout(req: JobOptions, gpu: GpuSpec) -> Layout:
    return Layout(gpu_id=gpu.id, num_gpus=req.num_gpus, nodes=req.nodes,
                  zero=parse_enum(ZeroStage, req.zero, "--zero"), fsdp=parse_enum(Fsdp, req.fsdp, "--fsdp"),
                  offload=parse_enum(Offload, req.offload, "--offload"),
                  tp=req.tp, pp=req.pp, cp=req.cp, ep=req.ep)


def build_workload(req: JobOptions) -> Workload:
    if req.eval_fraction < 0 or req.checkpoint_saves < 0 or req.disk_gb_per_s <= 0:
        raise TrainplanError("--eval-fraction and --checkpoint-saves must be >= 0, --disk-gb-per-s > 0")
    return Workload(samples=req.samples, tokens_per_sample=req.tokens_per_sample, epochs=req.epochs,
                    packing=req.packing, retry_factor=req.retry_factor, eval_fraction=req.eval_fraction,
                    checkpoint_saves=req.checkpoint_saves, disk_bw_bytes_per_s=req.disk_gb_per_s * 1e9)


def read_lengths(path: str | None) -> tuple[int, ...] | None:
    """Sample lengths in tokens from a file: one integer per line, or a JSON list."""
    if path is None:
        return None
    from pathlib import Path

    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise TrainplanError(f"--lengths-file {path}: {exc.strerror}") from None
    try:
        values = json.loads(text) if text.lstrip().startswith("[") else [int(x) for x in text.split()]
    except (ValueError, json.JSONDecodeError):
        raise TrainplanError(f"--lengths-file {path}: expected integers, one per line, or a JSON list") from None
    if not values or any(not isinstance(v, int) or v <= 0 for v in values):
        raise TrainplanError(f"--lengths-file {path}: lengths must be positive integers")
    return tuple(values)


def check_efficiency(efficiency: float | None) -> float | None:
    if efficiency is not None and not 0 < efficiency <= 1:
        raise TrainplanError(f"--efficiency must be a fraction in (0, 1], got {efficiency}")
    return efficiency


def build_parallel(req: JobOptions) -> ParallelConfig:
    return ParallelConfig(sequence_parallel=req.sequence_parallel, virtual_stages=req.vpp,
                          uneven_pipeline=req.uneven_pipeline)


def build_timing(req: JobOptions) -> TimingOptions:
    """The time model's options; reads --lengths-file."""
    return TimingOptions(interconnect=req.interconnect, compiled=req.compile, efficiency=check_efficiency(req.efficiency),
                         pp_interleave=req.vpp, sample_lengths=read_lengths(req.lengths_file))


def suggestable_gpus(gpus: tuple[GpuSpec, ...], precision: Precision,
                     book: PriceBook | None) -> tuple[tuple[GpuSpec, ...], str]:
    """The GPU types a "what would make it fit" suggestion may name, and a note on those left out:
    not those without tensor cores for the job's dtype (no V100 for bf16), and, when the bill's
    currency has its own market (CNY), only GPUs priced in that currency."""
    dtype = precision.needs_tensor_dtype
    out = tuple(g for g in gpus if dtype is None or g.supports(dtype))
    why = [f"with {dtype} tensor cores"] if len(out) < len(gpus) else []
    market = market_gpus(book) if book is not None else None
    if market is not None:
        kept = tuple(g for g in out if g.id in market)
        if len(kept) < len(out):
            why.append(f"priced in {book.currency} (its market) in the catalog or your prices")
        out = kept
    return out, ("GPU suggestions name only GPUs " + " and ".join(why)) if why else ""


FROM_FILE: Any = type("FROM_FILE", (), {"__repr__": lambda self: "FROM_FILE"})()


def resolve_job(req: JobOptions, *, today: datetime.date | None = None, calibration: Any = FROM_FILE,
                priced: bool = True) -> Job:
    """The Job of `req`. `today` dates the price catalog's offers (default: the local date);
    `calibration`: FROM_FILE loads the one `trainplan calibrate` wrote (when req.calibration is on),
    None leaves it out, a Calibration is used as given. `priced=False` leaves the price out."""
    headroom = check_headroom(req.headroom)
    spec = resolve_model(req.model)
    gpu = resolve_gpu(req.gpu)
    setup = build_setup(req, spec)
    layout = build_layout(req, gpu)
    workload = build_workload(req)
    parallel = build_parallel(req)
    timing = build_timing(req)
    pricing: Pricing | None = None
    missing = ""
    book = options_book(req) if priced else None
    if book is not None:
        try:
            pricing = resolve_pricing(gpu.id, book, today=today or datetime.date.today())
        except NoPriceError as exc:
            missing = str(exc)
    if calibration is FROM_FILE:
        calibration = load_active() if req.calibration else None
    gpus, gpus_note = suggestable_gpus(tuple(catalog.load_gpus().values()), setup.precision, book)
    return Job(setup=setup, layout=layout, gpu=gpu, workload=workload, parallel=parallel, timing=timing,
               pricing=pricing, price_missing=missing, book=book, headroom=headroom, calibration=calibration,
               gpus=gpus, gpus_note=gpus_note, options=req)
