"""One steady-state training step, as HF Trainer runs it, under the memory tracker.

optimizer.zero_grad(set_to_none=True) -> forward with the HF loss (`model(input_ids,
labels=input_ids).loss`; the output object, logits included, is dropped as Trainer.compute_loss
drops it) under autocast for mixed precision -> loss.backward() [a second micro-batch with
gradient accumulation] -> clip_grad_norm_(1.0, foreach)
when the framework clips (HF Trainer's max_grad_norm) -> optimizer.step().
"""

from __future__ import annotations

import contextlib
from unittest import mock

import torch
from torch import nn

from trainplan.trace.tracker import MemoryTracker

MAX_GRAD_NORM = 1.0   # transformers TrainingArguments.max_grad_norm default


@contextlib.contextmanager
def no_packed_sequence_detection():
    """Pitfall d: transformers' masking_utils.find_packed_sequence_indices reads position_ids
    values to detect packed sequences; under fake tensors it cannot, returns a mask and the model
    then builds a 4-D causal mask (and sdpa copies K/V for GQA) that an unpacked batch never
    builds. The trace feeds unpacked batches, so detection answers "not packed"."""
    from transformers import masking_utils

    with mock.patch.object(masking_utils, "find_packed_sequence_indices", lambda position_ids: None):
        yield


@contextlib.contextmanager
def grouped_mm_needs_bf16():
    """Pitfall f: torch's grouped-mm kernel takes bf16 only; for other weight dtypes route MoE
    experts to transformers' grouped-mm fallback op, which keeps the same tensors (input and
    weight saved, full-size grad_weight) and has a fake implementation."""
    from transformers.integrations import moe

    original = moe._can_use_grouped_mm

    def can_use(input, weight, offs) -> bool:
        return weight.dtype == torch.bfloat16 and input.dtype == torch.bfloat16 and original(
            input, weight, offs)

    with mock.patch.object(moe, "_can_use_grouped_mm", can_use):
        yield


class _NoMarks:
    """A tracker stand-in for a step run without accounting (the probe on a GPU)."""

    def mark(self, phase: str) -> None:
        pass


def _forward_loss(model: nn.Module, input_ids: torch.Tensor, autocast: torch.dtype | None,
                  device_type: str = "cpu", attention_mask: torch.Tensor | None = None):
    context = torch.autocast(device_type, dtype=autocast) if autocast else contextlib.nullcontext()
    with context:
        if attention_mask is None:
            return model(input_ids=input_ids, labels=input_ids).loss
        return model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids).loss


def _training_step(model: nn.Module, input_ids: torch.Tensor, autocast: torch.dtype | None,
                   grad_accum: int, tracker: MemoryTracker | _NoMarks, device_type: str = "cpu",
                   attention_mask: torch.Tensor | None = None) -> None:
    """HF Trainer.training_step: forward + loss (divided by the accumulation steps), backward; the
    loss (and with it the autograd graph) is gone when it returns."""
    loss = _forward_loss(model, input_ids, autocast, device_type, attention_mask)
    if grad_accum > 1:
        loss = loss / grad_accum
    tracker.mark("backward")
    loss.backward()


def run_step(model: nn.Module, optimizer: torch.optim.Optimizer, input_ids: torch.Tensor, *,
             autocast: torch.dtype | None, clip_grad: bool, tracker: MemoryTracker | None = None,
             grad_accum: int = 1, device_type: str = "cpu", micro_batches: int | None = None,
             attention_mask: torch.Tensor | None = None) -> None:
    """The measured step; the tracker (if any) marks its phases. With gradient accumulation, two
    micro-batches run by default (the trace): in the second (as in every later one) the gradients
    of the first are alive through forward and backward and accumulate in place. The probe runs
    all of them (`micro_batches=grad_accum`) and autocasts on its own device (`device_type`)."""
    tracker = tracker if tracker is not None else _NoMarks()
    tracker.mark("zero_grad")
    optimizer.zero_grad(set_to_none=True)
    for _ in range(micro_batches if micro_batches is not None else min(grad_accum, 2)):
        tracker.mark("forward")
        _training_step(model, input_ids, autocast, grad_accum, tracker, device_type, attention_mask)
    tracker.mark("optimizer")
    if clip_grad:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM, foreach=True)
    optimizer.step()
    tracker.mark("end")
