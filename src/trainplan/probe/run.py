"""The measured trial: the setup's model with random weights on the local device, a few real
training steps on synthetic tokens, the peaks and times of the steady-state steps.

The building blocks are the trace's (trace/build.py: the HF model from its config.json, peft
LoRA, freeze, dtypes per precision regime, checkpointing; trace/optim.py: HF Trainer's optimizer
and parameter groups; trace/step.py: HF Trainer's step), run on real tensors of the probe's
device instead of fake ones. Step 1 is the warm-up: it allocates the optimizer state (and
cuBLAS workspaces, autotuning); the estimate is for a step with that state already there, so the
peaks and times are taken over steps 2..n. On the CPU the trace's CUDA emulation stays on
(autocast casts CUDA's op lists, dropout keeps CUDA's mask), so the CPU step keeps what a GPU step
keeps.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Callable

from trainplan.enums import Method, Precision
from trainplan.errors import TrainplanError
from trainplan.estimation import estimate
from trainplan.frozen import replace
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.training import TrainingSetup
from trainplan.probe.result import Measurement, Predicted, ProbeResult, request_json
from trainplan.units import fmt_gib

DEVICES = ("cuda", "cpu")
CPU_RAM_FRACTION = 0.5      # --device cpu refuses setups whose estimated peak exceeds this share of RAM
DEFAULT_GPU = "a100-80gb"   # the setup flags' default, used when the local GPU is not in the catalog


def check_request(*, device: str, steps: int) -> None:
    if device not in DEVICES:
        raise TrainplanError(f"--device {device!r} is not one of: {', '.join(DEVICES)}")
    if steps < 2:
        raise TrainplanError(f"--steps {steps}: need at least 2 (step 1 is the warm-up, not measured)")


def check_supported(setup: TrainingSetup, device: str) -> None:
    """Setups the probe cannot run here, as one-line errors before anything is built."""
    from trainplan.probe import bnb

    if setup.precision is Precision.FP8:
        raise TrainplanError("--precision fp8 needs Transformer Engine, which the probe does not drive; "
                             "probe bf16 and scale, or measure with your own script and `trainplan record`")
    if setup.method is Method.QLORA:
        bnb.require("--method qlora", device)
    if setup.optimizer in bnb.BNB_OPTIMIZERS:
        bnb.require(f"--optimizer {setup.optimizer}", device)


def check_cpu_fits(predicted_bytes: int) -> None:
    """--device cpu runs real tensors: refuse what would swap or exhaust the host."""
    import os

    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return
    if predicted_bytes > CPU_RAM_FRACTION * ram:
        raise TrainplanError(f"--device cpu: the estimated peak {fmt_gib(predicted_bytes)} is over half "
                             f"of this machine's {fmt_gib(ram)} of RAM; probe a smaller model, batch or "
                             f"sequence on the CPU, or run on a GPU")


def make_optimizer(setup: TrainingSetup, model, notes: list[str]):
    """HF Trainer's optimizer (trace/optim.py); bitsandbytes' for the 8-bit and Lion kinds."""
    from trainplan.probe import bnb
    from trainplan.trace import optim

    if setup.optimizer in bnb.BNB_OPTIMIZERS:
        return bnb.make_optimizer(setup.optimizer, optim.param_groups(model), optim._LR)
    return optim.make_optimizer(setup.optimizer, model, notes)


def _cpu_contexts(notes: list[str]) -> list[contextlib.AbstractContextManager]:
    """The trace's CUDA emulation, on real CPU tensors."""
    from trainplan.trace import cuda_emulation, step

    return [step.no_packed_sequence_detection(), step.grouped_mm_needs_bf16(),
            cuda_emulation.cuda_autocast(), cuda_emulation.cuda_dropout(),
            cuda_emulation.cuda_sdpa_dropout(notes)]


def _timed(fn: Callable[[], None], sync: Callable[[], None]) -> float:
    sync()
    started = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - started


def _oom_error(exc: BaseException, what: str) -> TrainplanError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return TrainplanError(f"out of memory during {what}: {first}")


def build_on(setup: TrainingSetup, *, device: str, index: int, notes: list[str]):
    """The setup's model with random weights on this process's device ("cuda:i" or "cpu")."""
    import torch

    from trainplan.probe import bnb
    from trainplan.trace import build

    on_gpu = device == "cuda"
    where = f"cuda:{index}" if on_gpu else "cpu"
    if on_gpu:
        torch.cuda.set_device(index)
    quantize = bnb.quantize_linears if on_gpu and setup.method is Method.QLORA else None
    try:
        model = build.build_model(setup, device=where, notes=notes, quantize=quantize)
    except torch.cuda.OutOfMemoryError as exc:
        raise _oom_error(exc, "model build") from None
    if on_gpu:
        torch.cuda.empty_cache()   # a loaded model never held the build's transients
    return model


def synthetic_batch(setup: TrainingSetup, *, device: str, index: int = 0, seed: int = 0):
    """Random token ids, batch x seq, on the device (labels are the ids, as a causal LM trains)."""
    import torch

    torch.manual_seed(seed)
    where = f"cuda:{index}" if device == "cuda" else "cpu"
    return torch.randint(0, setup.model.vocab_size, (setup.batch_size, setup.seq_len), device=where)


def measure_steps(one_step: Callable[[], None], meter, *, setup: TrainingSetup, device: str, steps: int,
                  model, optimizer, input_ids, notes: list[str]) -> Measurement:
    """Step 1 (warm-up), then the meter over steps 2..n; on the CPU under the CUDA emulation."""
    import torch

    times: list[float] = []   # step 1 (warm-up) first, then steps 2..n
    with contextlib.ExitStack() as stack:
        if device == "cpu":
            for context in _cpu_contexts(notes):
                stack.enter_context(context)
        try:
            times.append(_timed(one_step, meter.sync))
            meter.start(model, optimizer, input_ids)
            stack.callback(meter.close)
            for _ in range(steps - 1):
                times.append(_timed(one_step, meter.sync))
                meter.after_step()
        except torch.cuda.OutOfMemoryError as exc:
            raise _oom_error(exc, f"step {len(times) + 1}") from None
        views, how, extra = meter.stop()
    return Measurement(device=device, warmup_s=times[0], step_times_s=tuple(times[1:]),
                       tokens_per_step=setup.batch_size * setup.seq_len * setup.grad_accum,
                       how=how, extra=extra, **views)


def hf_step(setup: TrainingSetup, model, optimizer, input_ids, *, device: str) -> Callable[[], None]:
    """HF Trainer's optimizer step (trace/step.py), every micro-batch of the accumulation run."""
    from trainplan.trace import build, step

    plan = build.dtype_plan(setup)
    clip = bool(getattr(setup.impl, "foreach_grad_clip", False))

    def one_step() -> None:
        step.run_step(model, optimizer, input_ids, autocast=plan.autocast, clip_grad=clip,
                      grad_accum=setup.grad_accum, micro_batches=setup.grad_accum,
                      device_type="cuda" if device == "cuda" else "cpu")

    return one_step


def new_meter(device: str, index: int = 0):
    """Created before the model: the NVML baseline is read before this process allocates."""
    from trainplan.probe.measure import CpuMeter, CudaMeter

    return CudaMeter(index) if device == "cuda" else CpuMeter()


def measure_local(setup: TrainingSetup, *, device: str, steps: int, index: int = 0,
                  seed: int = 0) -> tuple[Measurement, list[str]]:
    """Build, warm up with step 1, measure steps 2..n on this process's device."""
    notes: list[str] = []
    meter = new_meter(device, index)
    model = build_on(setup, device=device, index=index, notes=notes)
    optimizer = make_optimizer(setup, model, notes)
    input_ids = synthetic_batch(setup, device=device, index=index, seed=seed)
    one_step = hf_step(setup, model, optimizer, input_ids, device=device)
    measurement = measure_steps(one_step, meter, setup=setup, device=device, steps=steps, model=model,
                                optimizer=optimizer, input_ids=input_ids, notes=notes)
    return measurement, notes


def _resolve_gpu(req: JobOptions, device: str, notes: list[str]) -> JobOptions:
    """The estimate is made for the local GPU unless --gpu names one."""
    if req.gpu is not None:
        return req
    if device == "cuda":
        from trainplan.probe.measure import gpu_name, local_gpu_id

        name = gpu_name(0)
        gpu_id = local_gpu_id(name)
        if gpu_id is not None:
            return replace(req, gpu=gpu_id)
        notes.append(f"local GPU {name!r} is not in the catalog: estimated for {DEFAULT_GPU}; "
                     f"pass --gpu to choose")
    else:
        notes.append(f"--device cpu: estimated for {DEFAULT_GPU}; on the CPU only the allocated view "
                     f"compares, a CPU step time is no GPU step time")
    return replace(req, gpu=DEFAULT_GPU)


def _torch_or_error() -> None:
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise TrainplanError(f"probe needs the 'trace' extra (pip install 'trainplan[trace]'): {exc}") from None


def probe(req: JobOptions, *, device: str = "cuda", steps: int = 3, launcher: str = "auto") -> ProbeResult:
    """Estimate `req`, then run it for `steps` steps on this machine and measure it."""
    check_request(device=device, steps=steps)
    _torch_or_error()
    from trainplan.probe.measure import environment, require_cuda

    if device == "cuda":
        require_cuda()
    notes: list[str] = []
    req = _resolve_gpu(req, device, notes)
    est = estimate(resolve_job(req))
    setup = est.setup
    check_supported(setup, device)
    predicted = Predicted.from_estimate(est)
    if device == "cpu":
        check_cpu_fits(predicted.peak_allocated_bytes)
    if est.layout.num_gpus > 1:
        from trainplan.probe import launch

        measurement, more = launch.run_distributed(req, est, device=device, steps=steps, launcher=launcher)
    else:
        measurement, more = measure_local(setup, device=device, steps=steps)
    notes += more
    notes.append(f"steps: 1 warm-up (optimizer state allocated, not timed) + {steps - 1} measured")
    if device == "cpu":
        notes.append("cpu: step time includes the storage tracker's bookkeeping")
    env: dict[str, Any] = environment(device)
    return ProbeResult(setup=est.setup_dict(), environment=env, measured=measurement, predicted=predicted,
                       steps=steps, num_gpus=est.layout.num_gpus, notes=tuple(notes), request=request_json(req))
