"""Build the Hugging Face model of a TrainingSetup, with no weights: on `meta` for a fake trace, on
`cpu` (random init) for the real reference run. Same code path for both.

Order (as a training script does it): config -> model in the load dtype -> QLoRA stand-in ->
peft LoRA / freeze -> trainable parameters upcast to fp32 under mixed precision -> activation
checkpointing -> train mode. `swap_to_fake` then turns every parameter and buffer into a fake
tensor on `cpu`: peft cannot wrap a model built inside FakeTensorMode (pitfall b), so the wrapping
happens on meta and the swap comes last.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from typing import Callable

import torch
from torch import nn

from trainplan.enums import Attention, GradCkpt, Method, Precision
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.job.training import TrainingSetup
from trainplan.memory.regime import resolve_regime
from trainplan.model.params import (
    ALL_LINEAR,
    default_lora_targets,
    resolve_lora_targets,
    trained_layers,
)
from trainplan.trace import qlora
from trainplan.trace.errors import TraceUnsupported

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@frozen
class DtypePlan:
    """Which dtype each kind of parameter has, and the autocast dtype (None: no autocast)."""

    frozen: torch.dtype
    trainable: torch.dtype
    autocast: torch.dtype | None


def dtype_plan(setup: TrainingSetup) -> DtypePlan:
    """fp32: everything fp32. bf16/fp16 (mixed, HF Trainer): trainable weights fp32 (the master copy
    is the model), frozen weights 16-bit unless impl.load_fp32, forward under autocast.
    bf16-pure/fp16-pure: everything 16-bit, no autocast. QLoRA keeps its non-quantized weights in
    the compute dtype (bitsandbytes' bnb_4bit_compute_dtype)."""
    precision = setup.precision
    if precision is Precision.FP8:
        raise TraceUnsupported("--precision fp8 (Transformer Engine) cannot be traced on the CPU")
    if precision is Precision.FP32:
        return DtypePlan(frozen=torch.float32, trainable=torch.float32, autocast=None)
    compute = _DTYPES[precision.compute_dtype]
    if precision.is_pure:
        return DtypePlan(frozen=compute, trainable=compute, autocast=None)
    load_fp32 = getattr(setup.impl, "load_fp32", False) and setup.method is not Method.QLORA
    return DtypePlan(frozen=torch.float32 if load_fp32 else compute, trainable=torch.float32,
                     autocast=compute)


def hf_config(setup: TrainingSetup, notes: list[str]):
    """The transformers config of the setup's model, for training: use_cache off (pitfall e)."""
    from transformers import AutoConfig

    raw = setup.model.hf_config_json
    if not raw:
        raise TrainplanError(
            f"{setup.model.name} has no Hugging Face config.json attached; trace needs one "
            f"(give the model as a config.json path)")
    config_dict = dict(json.loads(raw))
    model_type = config_dict.pop("model_type", setup.model.model_type)
    for key in ("architectures", "auto_map", "quantization_config", "transformers_version"):
        config_dict.pop(key, None)
    try:
        config = AutoConfig.for_model(model_type, **config_dict)
    except ValueError as exc:
        raise TraceUnsupported(f"transformers cannot build model_type {model_type!r}: {exc}") from None
    config.use_cache = False
    if setup.attention is Attention.FLASH:
        notes.append("attention flash -> sdpa: FlashAttention-2 does not run on the CPU; the CPU "
                     "SDPA flash kernel keeps the same tensors for backward (q, k, v, out, lse)")
    return config


@contextlib.contextmanager
def _quiet_transformers():
    """transformers logs config remarks (eos_token_id outside a tiny vocabulary ...) at warning."""
    from transformers.utils import logging

    previous = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(previous)


def _attn_implementation(setup: TrainingSetup) -> str:
    return "eager" if setup.attention is Attention.EAGER else "sdpa"


def build_model(setup: TrainingSetup, *, device: str, notes: list[str],
                quantize: Callable[[nn.Module, TrainingSetup, list[str]], None] | None = None,
                ) -> nn.Module:
    """The model as it trains: on `meta` (fake trace), `cpu` (real reference run) or `cuda`
    (trainplan probe, random weights). `quantize` replaces the QLoRA stand-in
    (qlora.quantize_linears) by another quantizer: the probe passes real bitsandbytes layers."""
    from transformers import AutoModelForCausalLM

    if setup.grad_ckpt not in (GradCkpt.NONE, GradCkpt.FULL):
        raise TraceUnsupported(f"--grad-ckpt {setup.grad_ckpt}: Hugging Face models checkpoint whole "
                               f"decoder layers only (none or full)")
    plan = dtype_plan(setup)
    config = hf_config(setup, notes)
    with torch.device(device), warnings.catch_warnings(), _quiet_transformers():
        warnings.simplefilter("ignore")
        model = AutoModelForCausalLM.from_config(
            config, dtype=plan.frozen, attn_implementation=_attn_implementation(setup))
    _note_experts(model, notes)
    if setup.method is Method.QLORA:
        if setup.lora is not None and setup.lora.dora:
            raise TraceUnsupported("QLoRA with DoRA: peft computes DoRA's weight norm from the "
                                   "dequantized bitsandbytes weight, which the stand-in cannot give")
        (quantize or qlora.quantize_linears)(model, setup, notes)
    if setup.method in (Method.LORA, Method.QLORA):
        model = _apply_lora(model, setup)
    elif setup.method is Method.FREEZE:
        _train_only(model, trained_layers(setup))
    regime = resolve_regime(setup)
    if not (setup.method in (Method.LORA, Method.QLORA) and regime.adapter_bytes == 4 and plan.autocast is None):
        # peft's fp32 adapters stay fp32 (memory.regime.PEFT_FP32_ADAPTERS); its modules_to_save copies keep the
        # dtype they were copied in unless the framework casts every trainable parameter (Regime.copy_bytes)
        keep = set() if regime.copies_upcast else {id(p) for p in _saved_copies(model)}
        _cast_trainable(model, plan.trainable, keep=keep)
    if setup.grad_ckpt is GradCkpt.FULL:
        _enable_checkpointing(model)
    model.train()
    return model


def _note_experts(model: nn.Module, notes: list[str]) -> None:
    impl = getattr(model.config, "_experts_implementation", None)
    if impl and any("Experts" in type(m).__name__ for m in model.modules()):
        notes.append(f"MoE experts run with experts_implementation={impl!r} (no data-dependent "
                     f"shapes); non-bf16 weights use transformers' grouped-mm fallback op, which "
                     f"keeps the same tensors as the grouped-mm kernel")


def lora_target_modules(setup: TrainingSetup) -> str | list[str]:
    """peft target_modules: "all-linear" as is, otherwise module names resolved from names/roles."""
    assert setup.lora is not None
    targets = setup.lora.targets or default_lora_targets(setup.model)
    if any(t.lower() in (ALL_LINEAR, "all") for t in targets):
        return ALL_LINEAR
    return sorted({lin.name for lin, _ in resolve_lora_targets(setup.model, targets)})


def _saved_module_names(model: nn.Module, roles: tuple[str, ...]) -> list[str] | None:
    """peft modules_to_save for the roles: this model's own names of its input embedding and LM head."""
    wanted = {"embed_tokens": model.get_input_embeddings(), "lm_head": model.get_output_embeddings()}
    names = {id(module): name for name, module in model.named_modules()}
    return [names[id(wanted[role])].rsplit(".", 1)[-1] for role in roles] or None


def _apply_lora(model: nn.Module, setup: TrainingSetup) -> nn.Module:
    from peft import LoraConfig, get_peft_model

    lora = setup.lora
    assert lora is not None
    config = LoraConfig(r=lora.rank, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                        target_modules=lora_target_modules(setup), use_dora=lora.dora,
                        task_type="CAUSAL_LM", modules_to_save=_saved_module_names(model, lora.modules_to_save))
    if setup.method is Method.QLORA:
        config._register_custom_module(qlora.custom_lora_modules())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return get_peft_model(model, config)
    except ValueError as exc:
        raise TraceUnsupported(f"peft cannot apply LoRA to {setup.model.name}: {exc}") from None


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The ModuleList of decoder layers (model.layers, transformer.h ...)."""
    n_layers = model.config.num_hidden_layers
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) == n_layers:
            return module
    raise TraceUnsupported(f"cannot find the {n_layers} decoder layers of {type(model).__name__}")


def _train_only(model: nn.Module, layers: range) -> None:
    """LLaMA-Factory freeze tuning: every parameter of the last (or first) N decoder layers is trained."""
    for param in model.parameters():
        param.requires_grad_(False)
    for layer in list(decoder_layers(model))[layers.start:layers.stop]:
        for param in layer.parameters():
            param.requires_grad_(True)


def _cast_trainable(model: nn.Module, dtype: torch.dtype, keep: set[int] = frozenset()) -> None:
    for param in model.parameters():
        if param.requires_grad and param.dtype.is_floating_point and param.dtype != dtype and id(param) not in keep:
            param.data = param.data.to(dtype)


def _saved_copies(model: nn.Module) -> list[nn.Parameter]:
    """The parameters of peft's modules_to_save copies (ModulesToSaveWrapper.modules_to_save)."""
    return [p for m in model.modules() if type(m).__name__ == "ModulesToSaveWrapper"
            for p in m.modules_to_save.parameters()]


def _enable_checkpointing(model: nn.Module) -> None:
    """HF Trainer's activation checkpointing: whole decoder layers, use_reentrant=False."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    kwargs = {"use_reentrant": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if hasattr(base, "activation_checkpointing_enable"):
            base.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def swap_to_fake(model: nn.Module, fake_mode) -> None:
    """Replace every parameter and buffer by a fake tensor on `cpu` with the same shape, strides,
    dtype and requires_grad. Shared tensors (tied embeddings) stay shared: one fake tensor."""
    memo: dict[int, torch.Tensor] = {}

    def fake_of(tensor: torch.Tensor) -> torch.Tensor:
        with fake_mode:
            return torch.empty_strided(tensor.shape, tensor.stride(), dtype=tensor.dtype, device="cpu")

    for module in model.modules():
        for name, param in module._parameters.items():
            if param is None:
                continue
            if id(param) not in memo:
                memo[id(param)] = nn.Parameter(fake_of(param), requires_grad=param.requires_grad)
            module._parameters[name] = memo[id(param)]
        for name, buf in module._buffers.items():
            if buf is None:
                continue
            if id(buf) not in memo:
                memo[id(buf)] = fake_of(buf)
            module._buffers[name] = memo[id(buf)]
