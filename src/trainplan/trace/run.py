"""run_trace: build the model without weights, run one steady-state step, account its memory.

Fake mode (the trace): the model is built on `meta`, wrapped (peft, checkpointing), then every
parameter and buffer becomes a fake tensor on `cpu`; the step runs inside FakeTensorMode, so no
memory is allocated and no kernel runs. Fake tensors on `cuda` do not work with a CPU build of
torch (autograd aborts, pitfall a): the trace runs on fake `cpu` tensors, with CPU autocast made
to cast as CUDA autocast does and dropout made to keep what CUDA's keeps (cuda_emulation).
Real mode (the reference the tests hold the trace to): the same code on real CPU tensors.
"""

from __future__ import annotations

import contextlib
import time

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from trainplan.job.training import TrainingSetup
from trainplan.trace import build, categories, cuda_emulation, optim, step
from trainplan.trace.names import clean_name
from trainplan.trace.result import TraceResult
from trainplan.trace.tracker import MemoryTracker, TrackerState

_PHASES = {"forward": "forward", "backward": "backward", "optimizer": "optimizer",
           "zero_grad": "optimizer", "end": "optimizer", "state": "forward"}


def _register_state(tracker: MemoryTracker, model, optimizer, input_ids) -> None:
    names = {id(p): n for n, p in model.named_parameters()}
    for module_name, module in model.named_modules():
        for param in module._parameters.values():
            if param is not None:
                tracker.register(param, "parameters", module_name)
        for buf in module._buffers.values():
            if buf is not None:
                tracker.register(buf, "parameters", module_name)
    for group in optimizer.param_groups:
        for param in group["params"]:
            owner = names.get(id(param), "").rpartition(".")[0]
            for value, on_device in optim.state_tensors_of(optimizer, param, group):
                tracker.register(value, "optimizer_state", owner, on_device=on_device)
    tracker.register(input_ids, "inputs", "")


def _label_gradients(tracker: MemoryTracker, model) -> None:
    for name, param in model.named_parameters():
        if param.grad is not None:
            tracker.kind_of_live(param.grad, "gradients", name.rpartition(".")[0])


def _where(module: str) -> str:
    """The user-facing name of a tracked module: TOP_LEVEL for the outermost, "" for none."""
    return clean_name(module) or (categories.TOP_LEVEL if module else "")


def _timeline(state: TrackerState, full: bool) -> tuple[tuple[str, int], ...]:
    points = list(state.timeline)
    if full:
        points.append((f"peak {_where(state.peak.module)}".rstrip(), state.peak_bytes,
                       state.peak.event))
        points.sort(key=lambda point: point[2])
    return tuple((label, value) for label, value, _ in points)


def _result(setup: TrainingSetup, state: TrackerState, *, mode: str, notes: list[str],
            wall_s: float, full_timeline: bool) -> TraceResult:
    event = state.peak.event
    return TraceResult(
        model=setup.model.name, mode=mode,
        peak_allocated_bytes=state.peak_bytes,
        peak_cuda_allocated_bytes=state.peak_cuda_bytes,
        breakdown_bytes=categories.breakdown(state.records, event),
        peak_phase=_PHASES.get(state.peak.phase, state.peak.phase),
        peak_module=_where(state.peak.module),
        peak_in_recompute=state.peak.recompute,
        per_module=categories.per_module(state.records, event),
        timeline=_timeline(state, full_timeline),
        live_tensors_at_peak=len(categories.live_at(state.records, event)),
        notes=tuple(notes), wall_s=round(wall_s, 3))


def _measure(setup: TrainingSetup, *, fake: bool, module_events: bool,
             notes: list[str]) -> TrackerState:
    fake_mode = FakeTensorMode() if fake else None
    model = build.build_model(setup, device="meta" if fake else "cpu", notes=notes)
    if fake_mode is not None:
        build.swap_to_fake(model, fake_mode)
    plan = build.dtype_plan(setup)
    clip = getattr(setup.impl, "foreach_grad_clip", False)
    with contextlib.ExitStack() as stack:
        if fake_mode is not None:
            stack.enter_context(fake_mode)
        stack.enter_context(step.no_packed_sequence_detection())
        stack.enter_context(step.grouped_mm_needs_bf16())
        stack.enter_context(cuda_emulation.cuda_autocast())
        stack.enter_context(cuda_emulation.cuda_dropout())
        stack.enter_context(cuda_emulation.cuda_sdpa_dropout(notes))
        stack.enter_context(cuda_emulation.cuda_grouped_mm_saves())
        optimizer = optim.make_optimizer(setup.optimizer, model, notes)
        optim.create_state(optimizer)
        torch.manual_seed(0)
        input_ids = torch.randint(0, setup.model.vocab_size, (setup.batch_size, setup.seq_len))
        mask = _padding_mask(setup, notes)
        tracker = MemoryTracker(module_events=module_events)
        with tracker:
            _register_state(tracker, model, optimizer, input_ids)
            step.run_step(model, optimizer, input_ids, autocast=plan.autocast, clip_grad=clip,
                          tracker=tracker, grad_accum=setup.grad_accum, attention_mask=mask)
            _label_gradients(tracker, model)
        del optimizer, model
    return tracker.state


def _padding_mask(setup: TrainingSetup, notes: list[str]):
    """The 4-D boolean (b, 1, s, s) mask transformers builds for SDPA when the batch has padding
    (masking_utils sdpa_mask), handed to the model as its attention_mask: transformers takes a 4-D mask
    as given (masking_utils _preprocess_mask_arguments), and a fake tensor cannot answer the
    data-dependent "any padding?" test (_ignore_causal_mask_sdpa) that a 2-D mask would need. Causal,
    so the step computes what a padded one would; None without a padding mask."""
    if not setup.impl.padding_mask:
        return None
    b, s = setup.batch_size, setup.seq_len      # the input_ids' shape
    notes.append(f"padding mask: a ({b}, 1, {s}, {s}) boolean mask given to the model, as transformers "
                 "builds it for SDPA when the batch has padding")
    return torch.ones(b, 1, s, s, dtype=torch.bool).tril()


_IMPL_DEFAULTS = {   # Implementation field -> (HF Trainer value the trace runs, what differs)
    "optimizer_in_backward": (False, "optimizer step fused into backward"),
    "activation_offload": (False, "activation offloading to the host"),
    "liger_kernels": (False, "Liger fused kernels"),
    "compiled": (False, "torch.compile (fused pointwise ops, min-cut saves)"),
    "padding_free": (False, "padding-free batches"),
    "grad_dtype_fp32_accum": (False, "fp32 gradient accumulation buffers"),
    "loss_upcast": (True, "16-bit cross-entropy"),
}


def _standard_notes(setup: TrainingSetup, clip: bool) -> list[str]:
    notes = ["CUDA emulation: autocast casts CUDA's op lists; dropout keeps CUDA's bool mask",
             "not seen on a CPU trace: CUDA context, cuBLAS/cuDNN workspaces, allocator "
             "fragmentation and reserve, kernel-internal buffers (e.g. FlashAttention backward)"]
    if clip:
        notes.append("step includes clip_grad_norm_(1.0, foreach=True) as HF Trainer does")
    if setup.grad_accum > 1:
        notes.append(f"grad_accum {setup.grad_accum}: two micro-batches traced; from the second on "
                     f"the gradients are alive through forward and backward")
    if setup.precision.compute_dtype == "fp16" and not setup.precision.is_pure:
        notes.append("fp16: GradScaler loss scaling not traced (in-place unscale, a few scalars)")
    notes.extend(_untraced_options(setup))
    return notes


def _untraced_options(setup: TrainingSetup) -> list[str]:
    """Notes for options the trace does not reproduce: it runs HF Trainer's step."""
    impl = setup.impl
    notes = [f"not traced: {what} (impl.{name}); the trace runs HF Trainer's default"
             for name, (default, what) in _IMPL_DEFAULTS.items()
             if getattr(impl, name, default) != default]
    if getattr(impl, "loss", None) is not None and impl.loss.value != "full":
        notes.append(f"not traced: loss {impl.loss.value}; the trace runs HF's full-logits loss")
    master = getattr(impl, "master_weights", None)
    if master is not None and master.value == "optimizer":
        notes.append("not traced: fp32 master weights inside the optimizer (DeepSpeed/Megatron); "
                     "the trace keeps trainable weights in fp32 in the model (HF Trainer)")
    if setup.framework.value != "hf":
        notes.append(f"framework {setup.framework.value} traced as HF Trainer + transformers + peft")
    return notes


def run_trace(setup: TrainingSetup, *, plot_path: str | None = None, timeline: bool = False,
              real_tensors: bool = False) -> TraceResult:
    """Trace one steady-state training step of `setup` with fake tensors (no weights, no GPU).

    timeline=True records a point per module forward/backward (otherwise per phase only);
    plot_path writes the timeline as PNG or SVG. real_tensors=True runs the same step on real CPU
    tensors instead (slow: for checking the trace on small models).
    """
    if plot_path is not None:   # a bad --plot path fails now, not after the trace
        from trainplan.trace.plot import check_plot_path

        check_plot_path(plot_path)
    started = time.perf_counter()
    clip = bool(getattr(setup.impl, "foreach_grad_clip", False))
    notes = _standard_notes(setup, clip)
    full = timeline or plot_path is not None
    state = _measure(setup, fake=not real_tensors, module_events=full, notes=notes)
    result = _result(setup, state, mode="real" if real_tensors else "fake", notes=notes,
                     wall_s=time.perf_counter() - started, full_timeline=full)
    if plot_path is not None:
        from trainplan.trace.plot import plot_timeline

        written = plot_timeline(result, plot_path)
        if written is None:
            result = _with_note(result, f"plot {plot_path} skipped: matplotlib is not installed")
    return result


def _with_note(result: TraceResult, note: str) -> TraceResult:
    from trainplan.frozen import replace

    return replace(result, notes=result.notes + (note,))
