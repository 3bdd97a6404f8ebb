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

from trainplan.enums import Framework, GradCkpt, MoeDispatcher, Offload, PipeSchedule
from trainplan.frozen import frozen
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.memory.stages import layers_per_stage
from trainplan.specs import GpuSpec
from trainplan.timing import parts
from trainplan.timing.comm import CommInputs, CommTimes, layout_comm, tp_collectives_per_layer
from trainplan.timing.context import SetupFacts, setup_facts
from trainplan.timing.dispatch import dispatch_copies
from trainplan.timing.efficiency import Efficiency, KernelStack
from trainplan.timing.flops import FlopsPerToken
from trainplan.timing.fp8 import fp8_step_delta_s
from trainplan.timing.hf_moe import hf_experts_delta_s, z3_leaf_params
from trainplan.timing.launch import host_bound_note, launch_blocking_note, launch_gap_s, launches_per_micro_batch
from trainplan.timing.loss import loss_note
from trainplan.timing.mask import dense_mask_note
from trainplan.timing.options import TimingOptions
from trainplan.timing.overlap import megatron_overlap, moe_a2a_overlap
from trainplan.timing.pipeline import PassTimes, bubble_fraction, bubble_note, default_schedule, heaviest_rank_mb
from trainplan.timing.quantized import fp32_adapter_note
from trainplan.timing.steps import SequenceShape, evaluation_share, global_batch, steps_per_epoch, total_steps
from trainplan.units import SECONDS_PER_HOUR, fmt_count, fmt_duration

_NO_WORKLOAD = Workload()     # step_time without a workload: one sample per sequence of seq_len tokens


@frozen
class StepBreakdown:
    """step_s as a sum of named parts, seconds per optimizer step on the most loaded GPU."""

    compute_s: float          # linear layers + attention + LoRA adapter traffic
    optimizer_s: float
    dequant_s: float
    offload_s: float
    communication_s: float    # exposed part only
    bubble_s: float
    host_wait_s: float = 0.0  # the GPU idle while an eager host enqueues kernels slower than they run

    @property
    def total_s(self) -> float:
        return (self.compute_s + self.optimizer_s + self.dequant_s + self.offload_s
                + self.communication_s + self.bubble_s + self.host_wait_s)

    def as_dict(self) -> dict[str, float]:
        return {"compute_s": self.compute_s, "optimizer_s": self.optimizer_s, "dequant_s": self.dequant_s,
                "offload_s": self.offload_s, "communication_s": self.communication_s,
                "bubble_s": self.bubble_s, "host_wait_s": self.host_wait_s}


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


def _stage_layers(setup: TrainingSetup, layout: Layout, options: TimingOptions) -> int | None:
    """The decoder layers a pipeline rank launches (the heaviest stage's, memory.stages.layers_per_stage); None
    without pipeline parallelism."""
    if layout.pp <= 1:
        return None
    return max(layers_per_stage(setup.model.num_layers, layout.pp, head_as_layer=options.pp_head_as_layer))


def step_time(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, *, workload: Workload | None = None,
              options: TimingOptions = TimingOptions()) -> StepTime:
    """Time of one optimizer step of `setup` spread as `layout` over `gpu`s."""
    return _step_time(setup, layout, gpu, options, setup_facts(setup, workload or _NO_WORKLOAD, options))


def _step_time(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, options: TimingOptions,
               ctx: SetupFacts) -> StepTime:
    """step_time with the layout-independent facts of its setup, `ctx`, and of its GPU (timing.context)."""
    on = ctx.on(gpu, layout.cp)
    eff = on.efficiency
    m = options.model
    notes = list(ctx.head_notes)
    shape, ft = ctx.shape, ctx.per_token
    gb = global_batch(ctx.micro_sequences, setup.grad_accum, layout.dp)
    model_parallel = layout.tp * layout.pp * layout.cp
    mb_tokens = ctx.mb_tokens                    # micro_sequences x padded_len
    tokens_mb_gpu = mb_tokens / layout.cp
    # compute per micro-batch on one GPU of the model-parallel group
    compiled = bool(options.compiled)
    # the cross-entropy's traffic is compute-stream work too, said in a note where it counts (timing.loss)
    loss_mb = parts.loss_traffic_s(setup, gpu, mb_tokens / model_parallel, m, compiled=compiled)
    compute_mb = parts.compute_s(setup, gpu, ft, eff, mb_tokens / model_parallel, m) + loss_mb
    if (note := loss_note(setup, loss_mb, compute_mb, compiled=compiled)) is not None:
        notes.append(note)
    if (adapter_note := fp32_adapter_note(setup)) is not None:
        notes.append(adapter_note)
    if (mask_note := dense_mask_note(setup, gpu, ft, mb_tokens / model_parallel)) is not None:
        notes.append(mask_note)
    # routed experts as the framework runs them: transformers' MoE block (trainplan.timing.hf_moe) or
    # grouped GEMMs plus token-dispatch traffic (trainplan.timing.moe)
    compute_mb += hf_experts_delta_s(setup, layout, gpu, ft, eff, m, tokens_mb_gpu, ctx.grad_bytes, notes)
    if layout.tp > 1 and not options.sequence_parallel:
        replicated_mb = parts.replicated_outside_tp_s(setup.model, ft, eff, mb_tokens / model_parallel, layout.tp)
        compute_mb += replicated_mb
        notes.append(f"tensor parallel {layout.tp} without sequence parallelism: norms and residual adds run on the "
                     f"whole sequence on every rank ({parts.replicated_share(setup.model):.0%} of the non-matmul "
                     f"traffic), {replicated_mb * 1e3:.1f} ms per micro-batch; --sequence-parallel splits them")
    # FP8: the GEMMs left in bf16 and the quantisation traffic of the recipe (trainplan.timing.fp8)
    compute_mb += fp8_step_delta_s(setup, layout, gpu, ft, eff, m, tokens_per_micro_batch=tokens_mb_gpu,
                                   tokens=mb_tokens / model_parallel, notes=notes)
    if layout.pp > 1:
        # the last rank also runs the LM head and the loss (timing.pipeline.heaviest_rank_mb)
        tokens_stage = mb_tokens / (layout.tp * layout.cp)
        head_mb = (eff.linear_s((ft.lm_head_fwd + ft.lm_head_bwd) * tokens_stage)
                   + parts.loss_traffic_s(setup, gpu, tokens_stage, m, compiled=compiled))
        compute_mb = heaviest_rank_mb(setup, layout, options, compute_mb, head_mb, notes)
    fwd_share = ctx.fwd_share
    # CUDA_LAUNCH_BLOCKING=1 (trainplan.timing.launch): each launch waits for its kernel; nothing hides
    # behind compute, so the offload copies get no window and the collectives are all exposed
    blocking = setup.impl.launch_blocking
    hide_mb = compute_mb
    if blocking:
        # a pipeline rank launches its stage's layers only (the heaviest stage's, memory.stages.layers_per_stage)
        launches = launches_per_micro_batch(setup, _stage_layers(setup, layout, options))
        compute_mb += launch_gap_s(launches)
        hide_mb = 0.0
        notes.append(launch_blocking_note(launches))
    host_wait_mb = 0.0
    if not blocking and eff.stack is KernelStack.EAGER:
        # asynchronous launches: the GPU runs no faster than the host enqueues its kernels (trainplan.timing.launch)
        host_mb = launch_gap_s(launches_per_micro_batch(setup, _stage_layers(setup, layout, options)))
        if host_mb > compute_mb:
            notes.append(host_bound_note(host_mb, compute_mb))
            host_wait_mb = host_mb - compute_mb
            hide_mb = host_mb
    compute_s = compute_mb * setup.grad_accum

    n_total, n_train = ctx.n_total, ctx.n_train
    optimizer_s, offload_s = parts.optimizer_and_offload_s(
        setup, layout, gpu, m, n_total, n_train, hide_mb, notes, options,
        host=on.gpu_facts.host() if layout.offload is not Offload.NONE else None)
    dequant_s = parts.dequant_s(setup, layout, gpu, m, options.quant_kernel, notes)

    # communication
    fab, internode_note, p2p_note = on.gpu_facts.fabric(layout)
    layers_stage = max(1, setup.model.num_layers // layout.pp)
    act_bytes = mb_tokens / layout.cp * ctx.hidden_size * ctx.compute_bytes
    moe = setup.model.moe
    moe_layers = ctx.moe_layers // layout.pp
    train_gpu = parts.params_on_gpu(setup, layout, n_train, trainable=True)
    total_gpu = parts.params_on_gpu(setup, layout, n_total, trainable=False)
    kv_split = min(layout.tp, max(1, setup.model.num_kv_heads))
    attention_fwd_s, attention_bwd_s = parts.attention_kernel_s(ft, eff, mb_tokens / model_parallel)
    x = CommInputs(
        # what one GPU holds (routed experts / ep) and so reduces and gathers (parts.params_on_gpu)
        trainable_params=sum(train_gpu), gathered_params=sum(total_gpu),
        expert_trainable_params=train_gpu[1], expert_gathered_params=total_gpu[1],
        grad_bytes=ctx.grad_bytes, weight_bytes=ctx.weight_bytes,
        micro_batches=setup.grad_accum, fwd_s=compute_mb * fwd_share, bwd_s=compute_mb * (1 - fwd_share),
        layers=layers_stage, activation_bytes=act_bytes,
        tp_collectives_per_layer=tp_collectives_per_layer(setup.grad_ckpt),
        layer_passes=3 if setup.grad_ckpt is GradCkpt.FULL else 2,
        moe_layers=moe_layers, moe_dispatch_bytes=act_bytes * (moe.top_k if moe else 0),
        moe_copies=dispatch_copies(setup.impl.moe_dispatcher, setup.impl.moe_routing, experts=moe.num_experts,
                                   top_k=moe.top_k, ep=layout.ep,
                                   ranks_per_node=fab.members_per_node(layout.ep, layout.expert_tp))
        if moe and setup.impl.moe_dispatcher is MoeDispatcher.DEEPEP and layout.ep > 1 else None,
        tp_free_moe_layers=moe_layers if moe and not (moe.num_shared_experts or moe.shared_intermediate_size) else 0,
        # K and V of this GPU's heads: its TP shard (Megatron-Core splits the query groups over TP)
        kv_bytes=mb_tokens / layout.cp * 2 * ctx.kv_dim / kv_split * ctx.compute_bytes,
        attention_fwd_s=attention_fwd_s, attention_bwd_s=attention_bwd_s,
        leaf_params=z3_leaf_params(setup, layout),
        overlap_comm=ctx.overlap_always or ctx.zero.overlap(int(layout.zero)))
    comm = layout_comm(layout, fab, x)
    if setup.impl.comm_overlap or setup.framework is Framework.MEGATRON:
        comm = megatron_overlap(comm, layout, layers_stage=layers_stage, virtual_stages=max(1, options.pp_interleave),
                                fwd_s=x.fwd_s, bwd_s=x.bwd_s, tp_dp=setup.impl.comm_overlap, notes=notes)
    dual_pipe = layout.pp > 1 and options.pp_schedule is PipeSchedule.DUALPIPE
    if setup.impl.moe_a2a_overlap or dual_pipe:
        # DualPipe pairs a forward and a backward chunk as the combined 1F1B does, two chunks a rank
        comm = moe_a2a_overlap(comm, layout, micro_batches=setup.grad_accum,
                               virtual_stages=2 if dual_pipe else options.pp_interleave,
                               compute_mb_s=compute_mb, notes=notes, dual_pipe=dual_pipe)
    if blocking:
        comm = comm.serialised()
    notes += comm.links
    if layout.nodes > 1 and internode_note:
        notes.append(internode_note)
    if p2p_note:
        notes.append(p2p_note)

    bubble_s = 0.0
    if layout.pp > 1 and options.sequential_pipeline:
        bubble_s = compute_s * (layout.pp - 1)
        notes.append(f"device_map=auto: the {layout.pp} GPUs hold consecutive layers and run one after another "
                     f"(accelerate big-model inference hooks), so the step takes {layout.pp}x one stage's compute")
    elif layout.pp > 1:
        v, mb = max(1, options.pp_interleave), setup.grad_accum
        schedule = options.pp_schedule or default_schedule(v)
        passes = PassTimes(forward=ctx.forward_flops,
                           backward_input=ctx.hardware_flops - ctx.forward_flops - ft.linear_bwd_weight,
                           backward_weight=ft.linear_bwd_weight)
        fraction = bubble_fraction(schedule, stages=layout.pp, micro_batches=mb, virtual_stages=v, passes=passes)
        bubble_s = compute_s * fraction
        notes.append(bubble_note(schedule, fraction, stages=layout.pp, micro_batches=mb, virtual_stages=v,
                                 stated=options.pp_schedule is not None))

    breakdown = StepBreakdown(compute_s=compute_s, optimizer_s=optimizer_s, dequant_s=dequant_s,
                              offload_s=offload_s, communication_s=comm.exposed_s, bubble_s=bubble_s,
                              host_wait_s=host_wait_mb * setup.grad_accum)
    if layout.tp > 1 and options.sequence_parallel:
        notes.append(f"tensor parallel {layout.tp}: efficiency taken at the full hidden size (sequence "
                     "parallelism assumed; narrower per-GPU matmuls may run slower)")
    elif layout.tp > 1:
        notes.append(f"tensor parallel {layout.tp}: efficiency taken at the full hidden size (narrower per-GPU "
                     "matmuls may run slower)")
    notes += on.efficiency_notes
    return StepTime(per_token=ft, shape=shape, global_batch=gb, tokens_per_step=gb * shape.real_tokens,
                    hardware_flops_per_step=gb * shape.padded_len * ctx.hardware_flops,
                    model_flops_per_step=gb * shape.real_tokens * ctx.model_flops,
                    forward_flops_per_step=gb * shape.padded_len * ctx.forward_flops,
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
    def hfu_mfu_attention(self) -> float:
        """HFU with the attention core counted as MFU counts it (FlopsPerToken.hardware_mfu_attention):
        what a published HFU figure is compared with; `hfu` counts what the kernels run."""
        per_token = self.step.per_token
        return self.hfu * per_token.hardware_mfu_attention / per_token.hardware if per_token.hardware else self.hfu

    def comparable(self) -> dict[str, float | None]:
        """The values a measured run is compared with, by the ledger's and the cases' keys (HFU as published
        figures count it: hfu_mfu_attention; GPU-hours only for a run of known length)."""
        return {"tokens_per_s_per_gpu": self.tokens_per_s_per_gpu, "tflops_per_gpu": self.tflops_per_gpu,
                "mfu": self.mfu, "hfu": self.hfu_mfu_attention, "step_s": self.step_s,
                "gpu_hours": self.gpu_hours if self.steps else None}

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
                           ("pipeline bubble", "bubble_s"), ("waiting on the host's launches", "host_wait_s")):
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
    ctx = setup_facts(setup, workload, options)
    st = _step_time(setup, layout, gpu, options, ctx)
    step_s = st.step_s
    notes = list(st.notes)
    steps = per_epoch = 0
    if workload.steps is not None:
        steps = workload.steps
        notes.append(f"steps = {steps} (max_steps given)"
                     + (f"; --samples {workload.samples} not used for the run length" if workload.samples else ""))
    elif workload.samples is not None:
        # samples deleted for their length (sequence_shape drop_long) are not trained on
        samples = max(1, round(workload.samples * st.shape.kept))
        per_epoch = steps_per_epoch(samples, st.global_batch, st.shape.samples_per_sequence)
        steps = total_steps(per_epoch, workload.epochs)
        if workload.tokens is not None:
            notes.append(f"--tokens {fmt_count(workload.tokens)}: {workload.samples:,} samples of "
                         f"{workload.tokens_per_sample or setup.seq_len:,} tokens")
        notes.append(f"steps = ceil({samples} samples / {st.shape.samples_per_sequence:.3g} per "
                     f"sequence / {st.global_batch} per step) = {per_epoch} per epoch x {workload.epochs:g} "
                     f"epochs = {steps}")
    else:
        notes.append("no --samples (or --max-steps) given: time per step only")
    train_s = steps * step_s
    fwd_share = st.forward_flops_per_step / st.hardware_flops_per_step
    periodic, eval_note = evaluation_share(workload, steps, per_epoch, st.global_batch * st.shape.samples_per_sequence)
    notes += [eval_note] if eval_note else []
    eval_s = (workload.eval_fraction + periodic) * train_s * fwd_share * st.breakdown.compute_s / step_s
    checkpoint_s = workload.checkpoint_saves * ctx.checkpoint_bytes / workload.disk_bw_bytes_per_s
    total_s = train_s + eval_s + checkpoint_s
    notes += ctx.run_notes     # evaluation, checkpoints, retries (timing.context)
    n = layout.num_gpus
    peak = st.efficiency.peak_flops_per_s
    return TimeEstimate(
        flops_per_step=st.model_flops_per_step, hardware_flops_per_step=st.hardware_flops_per_step,
        step_s=step_s, steps=steps, train_s=train_s, eval_s=eval_s, checkpoint_s=checkpoint_s,
        total_s=total_s, gpu_hours=total_s * n / SECONDS_PER_HOUR, retry_factor=workload.retry_factor,
        num_gpus=n, tokens_per_step=st.tokens_per_step,
        tokens_per_s_per_gpu=st.tokens_per_step / step_s / n,
        mfu=st.model_flops_per_step / step_s / n / peak,
        hfu=st.hardware_flops_per_step / step_s / n / peak,
        tflops_per_gpu=st.model_flops_per_step / step_s / n / 1e12,
        efficiency=st.efficiency.value, breakdown=st.breakdown, step=st, assumptions=tuple(notes))
