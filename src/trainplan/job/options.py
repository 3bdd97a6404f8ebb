"""Parse user input (CLI flags, Python keyword arguments, config files) into a TrainingSetup,
a Layout and a Workload: names -> specs, strings -> enums, defaults from the framework profile."""

from __future__ import annotations

from trainplan.frozen import frozen
from enum import Enum
from typing import Any, TypeVar

from trainplan import catalog
from trainplan.enums import (Attention, Fsdp, Framework, GradCkpt, Loss, Method, Offload, Optimizer,
                             Precision, Quant, ZeroStage)
from trainplan.errors import TrainplanError
from trainplan.job.frameworks import implementation, profile
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.job.training import Layout, LoraConfig, QuantConfig, TrainingSetup, Workload

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


@frozen
class Request:
    """Everything a user can say about one estimate, with None where they said nothing."""

    model: str | ModelSpec
    method: str = "full"
    precision: str | None = None
    optimizer: str | None = None
    lora_rank: int = 16
    lora_alpha: float | None = None
    lora_dropout: float = 0.05
    lora_targets: str | tuple[str, ...] | None = None
    dora: bool = False
    quant: str | None = None
    double_quant: bool = False
    batch_size: int = 1
    grad_accum: int = 1
    seq_len: int = 2048
    grad_ckpt: str | None = None
    attention: str | None = None
    freeze_layers: int = 2
    framework: str = "hf"
    optimizer_in_backward: bool | None = None
    loss: str | None = None
    activation_offload: bool | None = None
    liger: bool | None = None
    load_fp32: bool | None = None
    gpu: str | GpuSpec = "a100-80gb"
    num_gpus: int = 1
    nodes: int = 1
    zero: int | str = 0
    fsdp: str = "none"
    offload: str = "none"
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    samples: int | None = None
    tokens_per_sample: int | None = None
    epochs: float = 1.0
    packing: bool = False
    retry_factor: float = 1.0
    provider: str | None = None
    price_per_gpu_hour: float | None = None
    currency: str | None = None
    spot: bool = False
    interconnect: str | None = None
    headroom: float = 0.10
    sequence_parallel: bool = True
    vpp: int = 1                      # virtual pipeline stages (interleaved 1F1B)
    uneven_pipeline: bool = False
    compile: bool | None = None       # torch.compile / fused kernels (time model)
    eval_fraction: float = 0.0        # evaluation tokens as a fraction of training tokens
    checkpoint_saves: int = 0
    disk_gb_per_s: float = 1.0        # checkpoint write bandwidth
    lengths_file: str | None = None   # sample lengths (tokens), one per line or a JSON list
    calibration: bool = True          # apply the fit of `trainplan calibrate` when one matches
    efficiency: float | None = None   # override the matmul efficiency (fraction of peak)


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


def build_setup(req: Request, spec: ModelSpec | None = None) -> TrainingSetup:
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


def build_layout(req: Request, gpu: GpuSpec) -> Layout:
    return Layout(gpu_id=gpu.id, num_gpus=req.num_gpus, nodes=req.nodes,
                  zero=parse_enum(ZeroStage, req.zero, "--zero"), fsdp=parse_enum(Fsdp, req.fsdp, "--fsdp"),
                  offload=parse_enum(Offload, req.offload, "--offload"),
                  tp=req.tp, pp=req.pp, cp=req.cp, ep=req.ep)


def build_workload(req: Request) -> Workload:
    if req.eval_fraction < 0 or req.checkpoint_saves < 0 or req.disk_gb_per_s <= 0:
        raise TrainplanError("--eval-fraction and --checkpoint-saves must be >= 0, --disk-gb-per-s > 0")
    return Workload(samples=req.samples, tokens_per_sample=req.tokens_per_sample, epochs=req.epochs,
                    packing=req.packing, retry_factor=req.retry_factor, eval_fraction=req.eval_fraction,
                    checkpoint_saves=req.checkpoint_saves, disk_bw_bytes_per_s=req.disk_gb_per_s * 1e9)


def read_lengths(path: str | None) -> tuple[int, ...] | None:
    """Sample lengths in tokens from a file: one integer per line, or a JSON list."""
    if path is None:
        return None
    import json
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


def check_headroom(headroom: float) -> float:
    if not 0.0 <= headroom < 1.0:
        raise TrainplanError(f"--headroom must be a fraction in [0, 1), got {headroom}")
    return headroom
