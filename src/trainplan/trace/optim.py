"""The optimizer of a setup, as HF Trainer builds it, with its state already created.

HF Trainer (`Trainer.create_optimizer`) makes two parameter groups: weights that decay, and biases
and norms that do not (`get_decay_parameter_names`); foreach optimizers allocate their temporaries
per group, so the grouping matters. TrainingArguments' weight_decay defaults to 0.0.
Implementations follow what runs on a GPU: AdamW with foreach=True (the CUDA default), AdamW
fused=True, SGD with momentum 0.9 (foreach), transformers' Adafactor with HF Trainer's settings
(scale_parameter=False, relative_step=False).
"""

from __future__ import annotations

import re

import torch
from torch import nn

from trainplan.enums import Optimizer
from trainplan.trace.errors import TraceUnsupported

_LR = 1e-5
_NO_DECAY = [re.compile(p) for p in (r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)",
                                     r"_norm(?:$|\.)")]
_UNSUPPORTED = {
    Optimizer.ADAMW_8BIT: "bitsandbytes AdamW8bit (bitsandbytes is not runnable on this CPU)",
    Optimizer.PAGED_ADAMW_8BIT: "bitsandbytes PagedAdamW8bit (bitsandbytes is not runnable on this CPU)",
    Optimizer.LION: "Lion (HF Trainer takes it from bitsandbytes, which is not runnable on this CPU)",
    Optimizer.BADAM: "BAdam's BlockOptimizer (pip badam) is not run by the trace: trace --method freeze "
                     "--freeze-layers -1 gives its bottom block without the fp32 block copy",
    Optimizer.GALORE_ADAMW: "GaLore's GaLoreAdamW (pip galore-torch) is not run by the trace",
    Optimizer.GALORE_ADAMW_8BIT: "GaLore's GaLoreAdamW8bit (galore-torch over bitsandbytes) is not run by the trace",
    Optimizer.MUON: "Muon (Moonlight's, as LLaMA-Factory, ms-swift and axolotl run it) is not run by the trace",
    Optimizer.ADAM_MINI: "Adam-mini (pip adam-mini) is not run by the trace",
    Optimizer.APOLLO_ADAMW: "APOLLO's APOLLOAdamW (pip apollo-torch) is not run by the trace",
}


def _decay_names(model: nn.Module, prefix: str = "") -> set[str]:
    """transformers trainer_pt_utils.get_parameter_names(model, [nn.LayerNorm], patterns)."""
    names: set[str] = set()
    for child_name, child in model.named_children():
        for name in _decay_names(child):
            full = f"{child_name}.{name}"
            if not isinstance(child, nn.LayerNorm) and not any(p.search(full.lower()) for p in _NO_DECAY):
                names.add(full)
    names.update(k for k in model._parameters if not any(p.search(k.lower()) for p in _NO_DECAY))
    return names


def param_groups(model: nn.Module) -> list[dict]:
    """HF Trainer's two groups (decay / no decay), empty groups dropped."""
    decay = _decay_names(model)
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in trainable if n in decay], "weight_decay": 0.0},
              {"params": [p for n, p in trainable if n not in decay], "weight_decay": 0.0}]
    return [g for g in groups if g["params"]]


def make_optimizer(kind: Optimizer, model: nn.Module, notes: list[str]) -> torch.optim.Optimizer:
    if kind in _UNSUPPORTED:
        raise TraceUnsupported(f"--optimizer {kind} cannot be traced: {_UNSUPPORTED[kind]}")
    groups = param_groups(model)
    if not groups:
        raise TraceUnsupported("the setup trains no parameter")
    if kind is Optimizer.ADAMW:
        return torch.optim.AdamW(groups, lr=_LR, foreach=True)
    if kind is Optimizer.ADAMW_FUSED:
        return torch.optim.AdamW(groups, lr=_LR, fused=True)
    if kind is Optimizer.SGD:
        return torch.optim.SGD(groups, lr=_LR, momentum=0.9, foreach=True)
    if kind is Optimizer.ADAFACTOR:
        from transformers.optimization import Adafactor

        return Adafactor(groups, lr=_LR, scale_parameter=False, relative_step=False, warmup_init=False)
    raise TraceUnsupported(f"--optimizer {kind} is not supported by trace")


def create_state(optimizer: torch.optim.Optimizer) -> None:
    """Run one optimizer step on zero gradients so the state exists (as from step 2 on), then drop
    the gradients."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    for param in params:
        param.grad = torch.zeros_like(param)
    optimizer.step()
    for param in params:
        param.grad = None


def state_tensors_of(optimizer: torch.optim.Optimizer, param: torch.Tensor, group: dict):
    """(tensor, on_device) for each state tensor of one parameter. AdamW keeps its `step` counter
    on the host unless fused or capturable (torch.optim.adam._init_group)."""
    host_step = not (group.get("fused") or group.get("capturable"))
    for key, value in optimizer.state.get(param, {}).items():
        if isinstance(value, torch.Tensor):
            yield value, not (key == "step" and host_step)
