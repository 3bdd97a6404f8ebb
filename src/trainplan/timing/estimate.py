"""Time of one training step and of the whole run, as a sum of named parts.

step_s = compute (linear FLOPs / (peak x e) + attention FLOPs / (peak x e_attn) + memory-bound
         LoRA adapter traffic / bandwidth + QLoRA's fp32 path, trainplan.timing.quantized)
       + optimizer step (state bytes read and written / bandwidth, or the CPU step when offloaded)
       + QLoRA dequantisation (bytes per use x uses / bandwidth, trainplan.timing.quantized)
       + parameter offload traffic not hidden behind compute
       + exposed communication (trainplan.timing.comm)
       + pipeline bubble: compute x the schedule's bubble fraction (trainplan.timing.pipeline; 1F1B
         (p - 1) / m, interleaved (p - 1) / (v m), zero-bubble schedules less)

run: total_s = steps x step_s + evaluation + checkpoint saving (one attempt);
gpu_hours = total_s x GPUs / 3600; the retry factor (default 1.0) multiplies both for the
`*_with_retries` values and the bill (trainplan.cost).
"""

from __future__ import annotations

from trainplan.enums import Framework, GradCkpt, Precision
from trainplan.frozen import frozen, replace
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.memory.sharding import ZeroConfig
from trainplan.model.architecture import moe_layer_count
from trainplan.specs import GpuSpec
from trainplan.timing import parts
from trainplan.timing.comm import CommInputs, CommTimes, fabric, is_consumer, layout_comm
from trainplan.timing.efficiency import (
    Efficiency,
)
from trainplan.timing.flops import FlopsPerToken, flops_per_token
from trainplan.timing.fp8 import fp8_step_delta_s
from trainplan.timing.hf_moe import hf_experts_delta_s, z3_leaf_params
from trainplan.timing.options import TimingOptions
from trainplan.timing.pipeline import PassTimes, bubble_fraction, bubble_note, default_schedule
from trainplan.timing.steps import (
    SequenceShape,
    global_batch,
    sequence_shape,
    steps_per_epoch,
    total_steps,
)
from trainplan.timing.traffic import (
    checkpoint_bytes,
    grad_bytes,
    weight_bytes_gathered,
)
from trainplan.units import SECONDS_PER_HOUR, fmt_count, fmt_duration

# where a ZeRO stage is not DeepSpeed's: Megatron's distributed optimizer (its own overlap flags) and
# FSDP SHARD_GRAD_OP read as stage 2 (torch FSDP, llm-foundry, litgpt, torchtune, torchtitan)
_NOT_DEEPSPEED = frozenset({Framework.MEGATRON, Framework.FSDP, Framework.LITGPT, Framework.TORCHTUNE,
                            Framework.TORCHTITAN})


@frozen
class StepBreakdown:
    """step_s as a sum of named parts, seconds per optimizer step on the most loaded GPU."""

    compute_s: float          # linear layers + attention + LoRA adapter traffic
    optimizer_s: float
    dequant_s: float
    offload_s: float
    communication_s: float    # exposed part only
    bubble_s: float

    @property
    def total_s(self) -> float:
        return (self.compute_s + self.optimizer_s + self.dequant_s + self.offload_s
                + self.communication_s + self.bubble_s)

    def as_dict(self) -> dict[str, float]:
        return {"compute_s": self.compute_s, "optimizer_s": self.optimizer_s, "dequant_s": self.dequant_s,
                "offload_s": self.offload_s, "communication_s": self.communication_s,
                "bubble_s": self.bubble_s}


@frozen
class StepTime:
    """One optimizer step: FLOPs, efficiency, time breakdown (no dataset needed)."""

    per_token: FlopsPerToken
    shape: SequenceShape
    global_batch: int               # sequences per step
    tokens_per_step: float          # real (dataset) tokens per step, all GPUs
    hardware_flops_per_step: float  # what runs, all GPUs (padded tokens, recompute)
    model_flops_per_step: float     # 6N + attention on real tokens, all GPUs
    forward_flops_per_step: float
    efficiency: Efficiency
    breakdown: StepBreakdown
    comm: CommTimes
    num_gpus: int
    notes: tuple[str, ...]

    @property
    def step_s(self) -> float:
        return self.breakdown.total_s

    @property
    def peak_flops_per_s(self) -> float:
        return self.efficiency.peak_flops_per_s


def step_time(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, *, workload: Workload | None = None,
              options: TimingOptions = TimingOptions()) -> StepTime:
    """Time of one optimizer step of `setup` spread as `layout` over `gpu`s."""
    m = options.model
    notes: list[str] = []
    wl = workload or Workload()
    shape = sequence_shape(seq_len=setup.seq_len, micro_batch=setup.micro_sequences,
                           tokens_per_sample=wl.tokens_per_sample, packing=wl.packing,
                           padding_free=setup.impl.padding_free, lengths=options.sample_lengths)
    if setup.sequences_per_sample > 1:       # a preference pair: two sequences per sample
        shape = replace(shape, samples_per_sequence=shape.samples_per_sequence / setup.sequences_per_sample)
        notes.append(f"preference pairs: {setup.sequences_per_sample} sequences (chosen, rejected) per sample")
    notes.append(shape.note)
    if setup.reference_forward:
        notes.append("a reference forward (no grad) per micro-batch" + (
            ": a frozen copy of the model" if setup.reference_model else ": the model with its adapters disabled"))
    ft = flops_per_token(setup, seq_len=max(1, round(shape.padded_len)), mfu_convention=options.mfu_convention)
    gb = global_batch(setup.micro_sequences, setup.grad_accum, layout.dp)
    model_parallel = layout.tp * layout.pp * layout.cp
    tokens_mb_gpu = setup.micro_sequences * shape.padded_len / layout.cp
    eff = parts.step_efficiency(setup, gpu, tokens_per_micro_batch=tokens_mb_gpu,
                                seq_len=max(1, round(shape.padded_len / layout.cp)), options=options)
    stack, dtype = eff.stack, "fp8" if setup.precision is Precision.FP8 else setup.precision.compute_dtype
    # compute per micro-batch on one GPU of the model-parallel group
    mb_tokens = setup.micro_sequences * shape.padded_len
    compute_mb = parts.compute_s(setup, gpu, ft, eff, mb_tokens / model_parallel, m)
    # routed experts as the framework runs them: transformers' MoE block (trainplan.timing.hf_moe) or
    # grouped GEMMs plus token-dispatch traffic (trainplan.timing.moe)
    compute_mb += hf_experts_delta_s(setup, layout, gpu, ft, eff, m, tokens_mb_gpu, grad_bytes(setup), notes)
    # FP8: the GEMMs left in bf16 and the quantisation traffic of the recipe (trainplan.timing.fp8)
    compute_mb += fp8_step_delta_s(setup, layout, gpu, ft, eff, m, tokens_per_micro_batch=tokens_mb_gpu,
                                   tokens=mb_tokens / model_parallel, notes=notes)
    fwd_share = ft.forward / ft.hardware
    compute_s = compute_mb * setup.grad_accum

    n_total, n_train = parts.param_counts(setup)
    optimizer_s, offload_s = parts.optimizer_and_offload_s(setup, layout, gpu, m, n_total, n_train, compute_mb, notes, options)
    dequant_s = parts.dequant_s(setup, layout, gpu, m, options.quant_kernel, notes)

    # communication
    fab = fabric(gpu, layout, interconnect=options.interconnect, intranode=options.intranode,
                 collective_fraction=m.collective_fraction)
    layers_stage = max(1, setup.model.num_layers // layout.pp)
    act_bytes = mb_tokens / layout.cp * setup.model.hidden_size * setup.precision.compute_bytes
    moe = setup.model.moe
    moe_layers = moe_layer_count(setup.model) // layout.pp
    x = CommInputs(
        trainable_params=n_train / (layout.tp * layout.pp), gathered_params=n_total / (layout.tp * layout.pp),
        grad_bytes=grad_bytes(setup), weight_bytes=weight_bytes_gathered(setup),
        micro_batches=setup.grad_accum, fwd_s=compute_mb * fwd_share, bwd_s=compute_mb * (1 - fwd_share),
        layers=layers_stage, activation_bytes=act_bytes,
        tp_collectives_per_layer=6 if setup.grad_ckpt is GradCkpt.FULL else 4,
        moe_layers=moe_layers, moe_dispatch_bytes=act_bytes * (moe.top_k if moe else 0),
        kv_bytes=mb_tokens / layout.cp * 2 * setup.model.kv_dim * setup.precision.compute_bytes,
        leaf_params=z3_leaf_params(setup, layout),
        overlap_comm=setup.framework in _NOT_DEEPSPEED or (options.zero or ZeroConfig()).overlap(int(layout.zero)))
    comm = layout_comm(layout, fab, x)
    notes += [f"{link}" for link in comm.links]
    if layout.nodes > 1 and options.interconnect is None:
        guess = ("; a guess for GeForce servers, which rarely have InfiniBand" if is_consumer(gpu) else
                 "; the GPU's reference (DGX/HGX) design")
        notes.append(f"inter-node network assumed: {fab.inter.name}{guess} (--interconnect to change)")
    if is_consumer(gpu) and layout.gpus_per_node > 1 and options.intranode is None:
        notes.append("GPU to GPU inside a node over PCIe peer-to-peer assumed; GeForce drivers may disable it, "
                     "and NCCL then copies through host memory (slower)")

    bubble_s = 0.0
    if layout.pp > 1 and options.sequential_pipeline:
        bubble_s = compute_s * (layout.pp - 1)
        notes.append(f"device_map=auto: the {layout.pp} GPUs hold consecutive layers and run one after another "
                     f"(accelerate big-model inference hooks), so the step takes {layout.pp}x one stage's compute")
    elif layout.pp > 1:
        v, mb = max(1, options.pp_interleave), setup.grad_accum
        schedule = options.pp_schedule or default_schedule(v)
        passes = PassTimes(forward=ft.forward, backward_input=ft.hardware - ft.forward - ft.linear_bwd_weight,
                           backward_weight=ft.linear_bwd_weight)
        fraction = bubble_fraction(schedule, stages=layout.pp, micro_batches=mb, virtual_stages=v, passes=passes)
        bubble_s = compute_s * fraction
        notes.append(bubble_note(schedule, fraction, stages=layout.pp, micro_batches=mb, virtual_stages=v,
                                 stated=options.pp_schedule is not None))

    breakdown = StepBreakdown(compute_s=compute_s, optimizer_s=optimizer_s, dequant_s=dequant_s,
                              offload_s=offload_s, communication_s=comm.exposed_s, bubble_s=bubble_s)
    if layout.tp > 1:
        notes.append(f"tensor parallel {layout.tp}: efficiency taken at the full hidden size (sequence "
                     "parallelism assumed; narrower per-GPU matmuls may run slower)")
    if eff.peak_dtype != dtype:
        notes.append(f"{gpu.id} has no {dtype} tensor cores in the catalog: {dtype} matmuls timed at its "
                     f"{eff.peak_dtype} peak ({eff.peak_flops_per_s / 1e12:.1f} TFLOP/s)"
                     + ("; bf16 without tensor cores is emulated: --precision fp16 uses the fp16 tensor cores"
                        if dtype == "bf16" and gpu.supports("fp16") else ""))
    elif eff.peak_dtype == "fp32":
        notes.append("fp32 matmuls at the FP32 peak (PyTorch leaves TF32 off for matmuls by default)")
    if not eff.mamf_known:
        notes.append(f"no measured matmul ceiling for {gpu.id}: {eff.mamf_fraction:.0%} of peak assumed")
    notes.append(f"matmul efficiency {eff.value:.1%} of {eff.peak_dtype} peak ({stack.value} kernels"
                 + (", user override" if eff.overridden else "") + f"); attention kernel {eff.attention_kernel}: {eff.attention_fwd:.0%} forward, "
                 f"{eff.attention_bwd:.0%} backward of the 16-bit peak"
                 + (f" ({eff.attention_source})" if eff.attention_source else " (fitted, no published benchmark)"))
    return StepTime(per_token=ft, shape=shape, global_batch=gb, tokens_per_step=gb * shape.real_tokens,
                    hardware_flops_per_step=gb * shape.padded_len * ft.hardware,
                    model_flops_per_step=gb * shape.real_tokens * parts.model_flops_per_token(ft),
                    forward_flops_per_step=gb * shape.padded_len * ft.forward,
                    efficiency=eff, breakdown=breakdown, comm=comm, num_gpus=layout.num_gpus,
                    notes=tuple(notes))


@frozen
class TimeEstimate:
    """How long the run takes. Keys of PRODUCT.md's `time` JSON plus the parts they come from."""

    flops_per_step: float           # model FLOPs (6N + attention) per optimizer step, all GPUs
    hardware_flops_per_step: float  # FLOPs that actually run (padding, recomputation), all GPUs
    step_s: float
    steps: int                      # 0 when no dataset size was given
    train_s: float                  # steps x step_s
    eval_s: float
    checkpoint_s: float
    total_s: float                  # one attempt: train + eval + checkpoints
    gpu_hours: float                # one attempt
    retry_factor: float
    num_gpus: int
    tokens_per_step: float
    tokens_per_s_per_gpu: float
    mfu: float
    hfu: float
    tflops_per_gpu: float           # model TFLOP/s per GPU (the MFU numerator)
    efficiency: float               # matmul efficiency used (fraction of dense peak)
    breakdown: StepBreakdown
    step: StepTime
    assumptions: tuple[str, ...]

    @property
    def total_with_retries_s(self) -> float:
        return self.total_s * self.retry_factor

    @property
    def gpu_hours_with_retries(self) -> float:
        return self.gpu_hours * self.retry_factor

    def to_dict(self) -> dict:
        return {"flops_per_step": self.flops_per_step, "step_s": self.step_s, "steps": self.steps,
                "total_s": self.total_s, "gpu_hours": self.gpu_hours,
                "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu, "mfu": self.mfu, "hfu": self.hfu,
                "tflops_per_gpu": self.tflops_per_gpu, "efficiency": self.efficiency,
                "hardware_flops_per_step": self.hardware_flops_per_step, "train_s": self.train_s,
                "eval_s": self.eval_s, "checkpoint_s": self.checkpoint_s, "retry_factor": self.retry_factor,
                "total_with_retries_s": self.total_with_retries_s,
                "gpu_hours_with_retries": self.gpu_hours_with_retries,
                "breakdown_s": self.breakdown.as_dict(), "assumptions": list(self.assumptions)}

    def chain(self) -> list[tuple[str, float, str, str]]:
        """The calculation as (label, value, unit, formula) rows: tokens -> FLOPs -> time."""
        st, ft, eff = self.step, self.step.per_token, self.step.efficiency
        achieved = eff.peak_flops_per_s * eff.value
        rows = [
            ("tokens per step", self.tokens_per_step, "tokens",
             f"{st.global_batch} sequences x {st.shape.real_tokens:.0f} tokens"),
            ("model FLOPs per token", parts.model_flops_per_token(ft), "FLOP",
             ("3 x forward" if parts.model_flops_per_token(ft) == ft.model else "forward + the backward the method runs")
             + f" ({fmt_count(ft.linear_fwd)} linear + {fmt_count(ft.lm_head_fwd)} head + "
             f"{fmt_count(ft.attention_fwd_mfu)} attention, {ft.mfu_convention.value} mask)"),
            ("model FLOPs per step", self.flops_per_step, "FLOP",
             f"{fmt_count(self.tokens_per_step)} tokens x {fmt_count(parts.model_flops_per_token(ft))} FLOPs"),
            ("hardware FLOPs per step", self.hardware_flops_per_step, "FLOP",
             f"forward {fmt_count(ft.forward)} + backward {fmt_count(ft.backward)} + recompute "
             f"{fmt_count(ft.recompute)} per token x {fmt_count(st.global_batch * st.shape.padded_len)} tokens"),
            ("achieved FLOP/s per GPU (linear layers)", achieved, "FLOP/s",
             f"{eff.peak_flops_per_s / 1e12:.1f} TFLOP/s {eff.peak_dtype} peak x {eff.value:.1%} "
             f"(MAMF {eff.mamf_fraction:.0%} x sustained {eff.sustained:.0%} x width {eff.width:.0%} "
             f"x tokens {eff.tokens:.0%})"),
            ("compute per step", self.breakdown.compute_s, "s",
             f"hardware FLOPs / {self.num_gpus} GPUs / achieved FLOP/s (+ attention, adapters)"),
        ]
        for label, key in (("optimizer step", "optimizer_s"), ("dequantisation", "dequant_s"),
                           ("offload traffic", "offload_s"), ("exposed communication", "communication_s"),
                           ("pipeline bubble", "bubble_s")):
            value = getattr(self.breakdown, key)
            if value:
                rows.append((label, value, "s", "see notes"))
        rows.append(("step time", self.step_s, "s", " + ".join(f"{k[:-2]} {v:.3g} s"
                                                               for k, v in self.breakdown.as_dict().items() if v)))
        rows.append(("tokens/s per GPU", self.tokens_per_s_per_gpu, "tokens/s",
                     f"{fmt_count(self.tokens_per_step)} tokens / {self.step_s:.3g} s / {self.num_gpus} GPUs"))
        rows.append(("MFU", 100 * self.mfu, "%", f"{self.tflops_per_gpu:.1f} model TFLOP/s per GPU / "
                                                 f"{eff.peak_flops_per_s / 1e12:.1f} peak (HFU {self.hfu:.1%})"))
        if self.steps:
            rows += [
                ("steps", self.steps, "steps", "ceil(samples / global batch) x epochs"),
                ("training time", self.train_s, "s", f"{self.steps} steps x {self.step_s:.3g} s"),
                ("total time (one attempt)", self.total_s, "s",
                 f"{fmt_duration(self.train_s)} training + {fmt_duration(self.eval_s)} evaluation + "
                 f"{fmt_duration(self.checkpoint_s)} checkpoints"),
                ("GPU-hours", self.gpu_hours, "GPU-h", f"{fmt_duration(self.total_s)} x {self.num_gpus} GPUs / 3600"),
            ]
            if self.retry_factor != 1.0:
                rows.append(("GPU-hours with retries", self.gpu_hours_with_retries, "GPU-h",
                             f"{self.gpu_hours:.4g} x retry factor {self.retry_factor:g}"))
        return rows


def estimate_time(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, workload: Workload,
                  options: TimingOptions = TimingOptions()) -> TimeEstimate:
    """Step time, steps and wall-clock of `setup` on `layout` for `workload` (see module docstring)."""
    st = step_time(setup, layout, gpu, workload=workload, options=options)
    notes = list(st.notes)
    steps = 0
    if workload.steps is not None:
        steps = workload.steps
        notes.append(f"steps = {steps} (max_steps given)"
                     + (f"; --samples {workload.samples} not used for the run length" if workload.samples else ""))
    elif workload.samples is not None:
        per_epoch = steps_per_epoch(workload.samples, st.global_batch, st.shape.samples_per_sequence)
        steps = total_steps(per_epoch, workload.epochs)
        if workload.tokens is not None:
            notes.append(f"--tokens {fmt_count(workload.tokens)}: {workload.samples:,} samples of "
                         f"{workload.tokens_per_sample or setup.seq_len:,} tokens")
        notes.append(f"steps = ceil({workload.samples} samples / {st.shape.samples_per_sequence:.3g} per "
                     f"sequence / {st.global_batch} per step) = {per_epoch} per epoch x {workload.epochs:g} "
                     f"epochs = {steps}")
    else:
        notes.append("no --samples (or --max-steps) given: time per step only")
    train_s = steps * st.step_s
    fwd_share = st.forward_flops_per_step / st.hardware_flops_per_step
    eval_s = workload.eval_fraction * train_s * fwd_share * st.breakdown.compute_s / st.step_s
    if workload.eval_fraction:
        notes.append(f"evaluation: {workload.eval_fraction:.0%} of the training tokens, forward only")
    n_total, n_train = parts.param_counts(setup)
    ckpt_bytes = options.checkpoint_bytes if options.checkpoint_bytes is not None else \
        checkpoint_bytes(setup, n_total, n_train)
    checkpoint_s = workload.checkpoint_saves * ckpt_bytes / workload.disk_bw_bytes_per_s
    if workload.checkpoint_saves:
        notes.append(f"{workload.checkpoint_saves} checkpoint saves of {ckpt_bytes / 1e9:.1f} GB at "
                     f"{workload.disk_bw_bytes_per_s / 1e9:.2g} GB/s")
    total_s = train_s + eval_s + checkpoint_s
    notes.append(f"retry factor {workload.retry_factor:g}" + (" (default: no failed attempts)"
                                                               if workload.retry_factor == 1.0 else ""))
    n = layout.num_gpus
    peak = st.efficiency.peak_flops_per_s
    return TimeEstimate(
        flops_per_step=st.model_flops_per_step, hardware_flops_per_step=st.hardware_flops_per_step,
        step_s=st.step_s, steps=steps, train_s=train_s, eval_s=eval_s, checkpoint_s=checkpoint_s,
        total_s=total_s, gpu_hours=total_s * n / SECONDS_PER_HOUR, retry_factor=workload.retry_factor,
        num_gpus=n, tokens_per_step=st.tokens_per_step,
        tokens_per_s_per_gpu=st.tokens_per_step / st.step_s / n,
        mfu=st.model_flops_per_step / st.step_s / n / peak,
        hfu=st.hardware_flops_per_step / st.step_s / n / peak,
        tflops_per_gpu=st.model_flops_per_step / st.step_s / n / 1e12,
        efficiency=st.efficiency.value, breakdown=st.breakdown, step=st, assumptions=tuple(notes))
