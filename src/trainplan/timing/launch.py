"""CUDA_LAUNCH_BLOCKING=1: what synchronous kernel launches cost a training step.

The CUDA programming guide ("Asynchronous Concurrent Execution"): kernel launches return to the host
before the kernel completes, unless CUDA_LAUNCH_BLOCKING is 1, which "disables asynchronicity of kernel
launches" (a debugging setting). With it set, PyTorch's host thread waits for every kernel to finish
before it runs the Python and dispatcher code that prepares the next one, so:

* every kernel adds the host's per-op time to the step instead of hiding it behind the kernels
  queued ahead: launches x LAUNCH_FLOOR_S (trainplan.timing.hf_moe, 10 us an eager op);
* nothing overlaps compute: a collective is a kernel, so the host waits for each all-gather,
  reduce-scatter or all-reduce (FSDP/ZeRO prefetches included) before it launches the next compute
  kernel; a parameter copy that a collective or kernel waits for is on the same path (FSDP1 CPU
  offload's H2D copy before the unit's all-gather). Communication is all exposed, and offload copies
  count at their PCIe time (trainplan.timing.offload with nothing to hide them behind).

Without it, launches are asynchronous and the host runs ahead of the GPU, but never further than it can
enqueue: an eager stack's micro-batch takes at least its launches x LAUNCH_FLOOR_S (`host_bound_note`),
which shows for small models and few tokens (a 0.5B model at a few hundred tokens a micro-batch), where the
kernels are shorter than the host's time to issue them. Compiled and fused stacks (timing.efficiency
KernelStack.FUSED) launch fewer, larger kernels and are not held to it.

Who sets it: ljm565/universal-llm-trainer's every entry point (src/run/train.py `env_setup`:
`os.environ['CUDA_LAUNCH_BLOCKING'] = "1"`, before CUDA initialises; torch.multiprocessing.spawn's
ranks inherit it); users who copy it from a debugging recipe. `--launch-blocking` says so.

Launches per micro-batch: the decoder layers' ATen operations, each taken as one kernel, counted by
tools/count_launches.py (trainplan.trace.launches: TorchDispatchMode over a 2-layer minus a 1-layer
Llama with a padding mask, use_cache off, transformers 5.24 / peft 0.21 / torch 2.13 on the CPU; CUDA
fuses dropout into one kernel where the CPU runs three; tests/test_timing_launch.py recounts them): LAYER_LAUNCHES
below, per layer: forward, backward, and the recomputation full checkpointing adds. LoRA adds the
LoRA-on-every-linear counts' excess over the full fine-tune's per target module (peft lora.Linear:
input cast, dropout, lora_A, lora_B, scaling, add, and their gradients). Every decoder is counted as
Llama's; embeddings, LM head, loss and optimizer are left out (a few dozen launches); QLoRA adds
bitsandbytes' kernels per dequantisation (QLORA_DEQUANT_LAUNCHES: dequantize_blockwise for the
nested absmax, the `absmax += offset` add, dequantize_4bit; trainplan.timing.quantized).
"""

from __future__ import annotations

from trainplan.enums import GradCkpt, Method
from trainplan.frozen import frozen
from trainplan.job.training import TrainingSetup
from trainplan.model.architecture import structure
from trainplan.model.params import default_lora_targets, resolve_lora_targets
from trainplan.timing.hf_moe import LAUNCH_FLOOR_S
from trainplan.timing.quantized import dequant_uses


@frozen
class LayerLaunches:
    """ATen operations one decoder layer runs per micro-batch (tools/count_launches.py)."""

    forward: int
    backward: int
    recompute: int      # what full activation checkpointing adds to the backward (the forward rerun)


LAYER_LAUNCHES: dict[str, LayerLaunches] = {
    "full": LayerLaunches(forward=43, backward=74, recompute=41),
    "lora_all_linear": LayerLaunches(forward=106, backward=133, recompute=101),   # 7 target modules
}
LORA_ALL_LINEAR_TARGETS = 7
QLORA_DEQUANT_LAUNCHES = 3


def _per_layer(setup: TrainingSetup) -> float:
    """Launches of one decoder layer per micro-batch (forward, backward, recomputation; LoRA per
    adapted module, scaled from the all-linear count)."""
    full = LAYER_LAUNCHES["full"]
    ckpt = setup.grad_ckpt is GradCkpt.FULL
    n = full.forward + full.backward + (full.recompute if ckpt else 0)
    if setup.method in (Method.LORA, Method.QLORA) and setup.lora is not None:
        lora = LAYER_LAUNCHES["lora_all_linear"]
        extra = (lora.forward - full.forward) + (lora.backward - full.backward) + (
            (lora.recompute - full.recompute) if ckpt else 0)
        targets = setup.lora.targets or default_lora_targets(setup.model)
        adapted = sum(count for _, count in resolve_lora_targets(setup.model, targets)) / setup.model.num_layers
        n += extra * adapted / LORA_ALL_LINEAR_TARGETS
    return n


def launches_per_micro_batch(setup: TrainingSetup, stage_layers: int | None = None) -> float:
    """Kernels one micro-batch launches in its decoder layers (module docstring), plus QLoRA's
    dequantisations of every decoder linear (trainplan.timing.quantized.dequant_uses per linear). Under
    pipeline parallelism a rank launches only its stage's layers: `stage_layers` of them (the heaviest stage)."""
    layers = setup.model.num_layers
    share = min(1.0, stage_layers / layers) if stage_layers and layers else 1.0
    n = layers * _per_layer(setup)
    if setup.method is Method.QLORA and setup.quant is not None:
        linears = sum(count * len(kind.linears) for kind, count in structure(setup.model).layers)
        n += QLORA_DEQUANT_LAUNCHES * dequant_uses(setup) * linears
    return n * share


def launch_gap_s(launches: float) -> float:
    """Seconds the GPU waits on the host per micro-batch when every launch blocks."""
    return launches * LAUNCH_FLOOR_S


def launch_blocking_note(launches: float) -> str:
    return (f"CUDA_LAUNCH_BLOCKING=1: every kernel launch waits for its kernel, so about {launches:,.0f} "
            f"launches per micro-batch add {launch_gap_s(launches) * 1e3:.0f} ms of host time "
            f"({LAUNCH_FLOOR_S * 1e6:.0f} us each) and no communication or offload copy overlaps compute; "
            "unset it to train faster")


def host_bound_note(host_s: float, gpu_s: float) -> str:
    return (f"host-bound: the host enqueues a micro-batch's kernels in {host_s * 1e3:.1f} ms "
            f"({LAUNCH_FLOOR_S * 1e6:.0f} us an eager op), longer than the {gpu_s * 1e3:.1f} ms they run, "
            "so the GPU waits on the host "
            "(torch.compile or CUDA graphs launch fewer, larger kernels)")
