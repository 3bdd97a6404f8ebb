"""The parts of one step's time that are not communication or the bubble: compute (linear layers,
attention by kernel, LoRA adapter traffic, the QLoRA fp32 path), the optimizer step (on the GPU, or
on the host's CPU when offloaded, with its PCIe traffic) and QLoRA dequantisation; and the MFU
numerator. trainplan.timing.estimate adds them up."""

from __future__ import annotations

from trainplan.enums import (
    GALORE_OPTIMIZERS,
    Attention,
    Framework,
    Fsdp,
    Method,
    MlpKind,
    Optimizer,
    Offload,
    Position,
    Precision,
    ZeroStage,
)
from trainplan.frozen import by_identity
from trainplan.job.training import Layout, LoraConfig, TrainingSetup
from trainplan.model.params import count_params, trainable_params
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.attention import attention_kernel
from trainplan.catalog.gpu_text import desktop_die
from trainplan.timing.links import pcie_link
from trainplan.timing.efficiency import Efficiency, EfficiencyModel, kernel_stack, matmul_efficiency, memory_bw
from trainplan.timing.flops import FlopsPerToken
from trainplan.timing.apollo import apollo_note, apollo_step
from trainplan.timing.galore import galore_note, galore_step
from trainplan.timing.muon import muon_note, muon_step
from trainplan.timing.loss import loss_bytes_per_token
from trainplan.timing.mask import dense_mask_s
from trainplan.timing.offload import HostSpec, offload_time, resolve_host
from trainplan.timing.options import TimingOptions
from trainplan.timing.quantized import (
    BNB_KERNELS,
    dequant_bytes,
    dequant_operand_bytes,
    dequant_uses,
    fp32_adapter_gemm_s,
    fp32_path,
    fp32_path_s,
)
from trainplan.timing.traffic import (
    adapter_bytes_per_token,
    eager_attention_bytes_per_token,
    optimizer_bytes_per_param,
    quantized_params,
)


def step_efficiency(setup: TrainingSetup, gpu: GpuSpec, *, tokens_per_micro_batch: float, seq_len: int,
                    options: TimingOptions) -> Efficiency:
    """The matmul and attention efficiency of the setup's step on `gpu` (one home for step_time and the
    planner's bounds): the kernel stack, the attention kernel the framework runs (timing.attention)."""
    return _step_efficiency(gpu, options, *efficiency_inputs(setup), tokens_per_micro_batch, seq_len)


def efficiency_inputs(setup: TrainingSetup) -> tuple:
    """The fields of the setup step_efficiency reads (in _step_efficiency's order): setups equal in them
    have the same efficiency at the same tokens per micro-batch and sequence length (a cache key)."""
    model = setup.model
    # Liger's kernels or hand-fused ones (Implementation.fused_kernels): the fused kernel stack either way
    return (setup.framework, setup.impl.liger_kernels or setup.impl.fused_kernels, setup.impl.te_attention,
            setup.precision, setup.attention, model.hidden_size, model.head_dim, model.position,
            setup.impl.padding_mask, setup.impl.flash_version)


@by_identity(2)
def _step_efficiency(gpu: GpuSpec, options: TimingOptions, framework: Framework, liger: bool,
                     te_attention: bool, precision: Precision, attention: Attention, hidden_size: int, head_dim: int,
                     position: Position, padding_mask: bool, flash_version: int, tokens_per_micro_batch: float,
                     seq_len: int) -> Efficiency:
    # the setup's fields it reads are arguments, so the cache key is what the result depends on: the
    # planner asks for it per layout, and layouts of one micro-batch on one GPU share it
    stack = kernel_stack(framework, compiled=options.compiled, liger=liger)
    dtype = "fp8" if precision is Precision.FP8 else precision.compute_dtype
    kernel = attention_kernel(framework, attention, gpu.generation, "fp32" if precision is Precision.FP32 else "bf16",
                              head_dim, position=position, consumer=desktop_die(gpu), padding_mask=padding_mask,
                              te=te_attention, flash_version=flash_version)
    return matmul_efficiency(gpu, dtype, hidden_size=hidden_size, tokens_per_micro_batch=tokens_per_micro_batch,
                             stack=stack, m=options.model, override=options.efficiency, attention_kernel=kernel,
                             seq_len=seq_len, head_dim=head_dim)


def core_compute_s(setup: TrainingSetup, gpu: GpuSpec, ft: FlopsPerToken, eff: Efficiency, tokens: float,
                   m: EfficiencyModel) -> float:
    """Seconds of the linear layers and the attention core for `tokens` padded tokens on one GPU: the
    part of compute_s the planner bounds a step by (never more than compute_s)."""
    linear = eff.linear_s(ft.linear_hardware * tokens)
    if setup.attention is Attention.EAGER:
        attn = ft.attention_hardware * tokens / (eff.attention_peak_flops_per_s * eff.value)
        attn += eager_attention_bytes_per_token(setup, ft.seq_len) * tokens / memory_bw(gpu, m)
    else:
        # forward and recomputation at the kernel's forward efficiency, backward at its backward
        # efficiency (trainplan.timing.attention); the fitted single value where none is published
        e_fwd, e_bwd = eff.attention_fwd_bwd
        attn = (ft.attention_fwd_hardware / e_fwd + ft.attention_bwd / e_bwd) * tokens / eff.attention_peak_flops_per_s
    return linear + attn


def replicated_share(model: ModelSpec) -> float:
    """The share of a layer's non-matmul traffic that runs outside Megatron's tensor-parallel region: the
    norms and the (bias-dropout-)residual adds (megatron/core/transformer/transformer_layer.py
    input_layernorm, self_attn_bda, pre_mlp_layernorm, mlp_bda) against the activation function and RoPE,
    which run on each rank's 1/tp of the heads and the MLP width. Elements read and written per token:
    a norm 2h, a residual add 3h (x, residual, out), a gated activation 3I (gate, up, out; else 2I), RoPE
    2 (q + k widths)."""
    h = model.hidden_size
    adds = 1 if model.parallel_attn_mlp else 2
    replicated = model.norms_per_layer * 2 * h + adds * 3 * h
    act = (3 if model.mlp_kind is MlpKind.GATED else 2) * model.intermediate_size
    rope = 2 * model.head_dim * (model.num_heads + model.num_kv_heads) if model.position is Position.ROPE else 0
    return replicated / (replicated + act + rope)


def replicated_outside_tp_s(model: ModelSpec, ft: FlopsPerToken, eff: Efficiency, tokens: float, tp: int) -> float:
    """Seconds a GPU adds per `tokens` (its share, already / tp) when tensor parallelism runs without
    sequence parallelism: the norms and residual adds run on the whole sequence on every rank instead of
    its 1/tp (Korthikanti et al. 2022, arXiv 2205.05198, section 4.2.2: what sequence parallelism splits).
    The linears' non-matmul time is their time x (1 - width) (timing.efficiency.width_factor); its
    replicated_share is done tp times over instead of once."""
    return eff.linear_s(ft.linear_hardware * tokens) * (1.0 - eff.width) * replicated_share(model) * (tp - 1)


def attention_kernel_s(ft: FlopsPerToken, eff: Efficiency, tokens: float) -> tuple[float, float]:
    """(forward, backward) seconds of the attention kernels for `tokens` padded tokens on one GPU: one
    forward pass (its rerun under recomputation apart) and the backward, as core_compute_s times them."""
    e_fwd, e_bwd = eff.attention_fwd_bwd
    return (ft.attention_fwd * tokens / (e_fwd * eff.attention_peak_flops_per_s),
            ft.attention_bwd * tokens / (e_bwd * eff.attention_peak_flops_per_s))


def loss_traffic_s(setup: TrainingSetup, gpu: GpuSpec, tokens: float, m: EfficiencyModel, *,
                   compiled: bool = False) -> float:
    """Seconds of the cross-entropy over `tokens` x vocabulary logits on one GPU, memory-bound (timing.loss)."""
    return loss_bytes_per_token(setup, compiled=compiled) * tokens / memory_bw(gpu, m)


def compute_s(setup: TrainingSetup, gpu: GpuSpec, ft: FlopsPerToken, eff: Efficiency, tokens: float,
              m: EfficiencyModel) -> float:
    """Seconds of compute for `tokens` padded tokens on one GPU (already divided by model parallel), the
    loss's traffic apart (loss_traffic_s: step_time adds it)."""
    adapters = adapter_bytes_per_token(setup) * tokens / memory_bw(gpu, m)
    # QLoRA with fp32 non-quantized weights: 4-byte elementwise traffic, casts, fp32 GEMMs; peft's fp32
    # adapters over a 16-bit model without autocast: their GEMMs at the fp32 peak (timing.quantized)
    # SDPA over transformers' 4D mask: the memory-efficient kernel reads it for every head (timing.mask)
    return (core_compute_s(setup, gpu, ft, eff, tokens, m) + adapters
            + fp32_path_s(setup, gpu, ft, eff, tokens, m, memory_bw(gpu, m))
            + fp32_adapter_gemm_s(setup, gpu, ft, eff, tokens, m)
            + dense_mask_s(setup, gpu, ft, tokens))


def param_counts(setup: TrainingSetup) -> tuple[int, int]:
    """(total, trainable) parameters of the setup (trainplan.model.params)."""
    return _param_counts(setup.model, setup.lora, setup.method, setup.freeze_trainable_layers, setup.freeze_bottom)


@by_identity(2)
def _param_counts(model: ModelSpec, lora: LoraConfig | None, method: Method, freeze_trainable_layers: int,
                  freeze_bottom: bool) -> tuple[int, int]:
    # the planner's setups of one job share their model and LoRA records: kept per those objects and
    # the fields read, not per setup (model.params caches per value, hashing the model's ~40 fields)
    trainable = trainable_params(model, method, lora_targets=lora.targets if lora else (),
                                 lora_rank=lora.rank if lora else 0, dora=lora.dora if lora else False,
                                 freeze_layers=freeze_trainable_layers, freeze_bottom=freeze_bottom,
                                 modules_to_save=lora.modules_to_save if lora else ())
    return count_params(model).total, trainable


def params_on_gpu(setup: TrainingSetup, layout: Layout, n: float, *, trainable: bool) -> tuple[float, float]:
    """(dense, routed-expert) parameters of `n` (the setup's total or trainable count) that one GPU of
    the model-parallel group holds: the dense part / (tp x pp), the routed experts / (expert tp x pp x ep),
    as the memory model splits them (memory.parallel.linear_on_gpu). Trainable experts are those of a full
    fine-tune (LoRA's expert adapters and frozen layers are left in the dense part)."""
    mp = layout.tp * layout.pp
    experts = count_params(setup.model).experts if setup.model.moe is not None else 0
    if trainable and setup.method is not Method.FULL:
        experts = 0
    experts = min(experts, n)
    return (n - experts) / mp, experts / (layout.expert_tp * layout.pp * max(1, layout.ep))


def sharded_params_on_gpu(setup: TrainingSetup, layout: Layout, n: float, *, trainable: bool,
                          sharded: bool = True) -> float:
    """`n`'s parameters on one GPU, once sharded over data parallel when `sharded` (ZeRO-1+/FSDP: dense
    over dp x cp, routed experts over the expert data-parallel group, Layout.expert_dp)."""
    dense, experts = params_on_gpu(setup, layout, n, trainable=trainable)
    if not sharded:
        return dense + experts
    return dense / layout.dp_cp + experts / layout.expert_dp


def optimizer_and_offload_s(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, m: EfficiencyModel,
                             n_total: int, n_train: int, compute_mb: float, notes: list[str],
                             options: TimingOptions | None = None,
                             host: tuple[HostSpec, float] | None = None) -> tuple[float, float]:
    """(optimizer step, offload traffic) seconds per step on one GPU.

    On the GPU the step streams the optimizer bytes of its shard of the trainable parameters
    (trainplan.timing.traffic.optimizer_bytes_per_param; ZeRO-1+/FSDP shard it over data parallel).
    Offloaded: the host's CPU optimizer step and the PCIe traffic each framework makes, hidden where
    its copies run on their own streams (trainplan.timing.offload). `host`: the node's host and the
    GPU's PCIe bandwidth where the caller has them (timing.context keeps them per GPU and options).
    """
    shard_mp = layout.tp * layout.pp
    if setup.optimizer in GALORE_OPTIMIZERS:
        # every GPU steps every weight (GaLore runs under DDP only: memory.parallel.check_layout); a
        # per-parameter hook steps after every backward (LLaMA-Factory galore_layerwise, GaLore's *_per_layer)
        step = galore_step(setup, gpu, m)
        steps = setup.grad_accum if setup.impl.optimizer_in_backward else 1
        notes.append(galore_note(setup, step, steps))
        return step.total_s * steps, 0.0
    if setup.optimizer is Optimizer.APOLLO_ADAMW:
        # as GaLore: plain data parallel, one step per backward when layer-wise (apollo_adamw_layerwise)
        step = apollo_step(setup, gpu, m)
        steps = setup.grad_accum if setup.impl.optimizer_in_backward else 1
        notes.append(apollo_note(setup, step, steps))
        return step.total_s * steps, 0.0
    if setup.optimizer is Optimizer.MUON:
        # every GPU steps every weight (Muon runs under DDP only: memory.parallel.optimizer_refusal)
        step = muon_step(setup, gpu, m)
        steps = setup.grad_accum if setup.impl.optimizer_in_backward else 1
        notes.append(muon_note(step, steps))
        return step.total_s * steps, 0.0
    if layout.offload is Offload.NONE:
        optimizer_sharded = layout.zero >= ZeroStage.OPTIMIZER or layout.fsdp is not Fsdp.NONE
        n_opt = sharded_params_on_gpu(setup, layout, n_train, trainable=True, sharded=optimizer_sharded)
        # stepped in the backward (a post-accumulate-grad hook a parameter: torchtune optimizer_in_bwd,
        # torchtitan early_step_in_backward), the step runs after every backward, so once a micro-batch
        steps = setup.grad_accum if setup.impl.optimizer_in_backward else 1
        return steps * n_opt * optimizer_bytes_per_param(setup) / memory_bw(gpu, m), 0.0
    opts = options or TimingOptions()
    if host is None:
        host = (resolve_host(gpu, cpus=opts.host_cpus, mem_bw_bytes_per_s=opts.host_mem_bw_bytes_per_s),
                pcie_link(gpu).bw_bytes_per_s)
    off = offload_time(setup, layout, host[0], n_total=n_total / shard_mp, n_train=n_train / shard_mp,
                       compute_mb_s=compute_mb, pcie_bytes_per_s=host[1], fsdp_config=opts.fsdp)
    notes.extend(off.notes)
    if off.optimizer_s == 0.0:     # parameters offloaded, optimizer on the GPU (DeepSpeed ZeRO-3 offload_param)
        n_opt = sharded_params_on_gpu(setup, layout, n_train, trainable=True,
                                      sharded=layout.zero >= ZeroStage.OPTIMIZER)
        return n_opt * optimizer_bytes_per_param(setup) / memory_bw(gpu, m), off.traffic_s
    return off.optimizer_s, off.traffic_s


def dequant_s(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, m: EfficiencyModel, kernel: str | None,
               notes: list[str]) -> float:
    """QLoRA: every use of a quantised weight (forward, input gradient, recomputation) writes a
    16-bit copy: quantised weights x bytes per use x uses x micro-batches / bandwidth."""
    if setup.method is not Method.QLORA or setup.quant is None:
        return 0.0
    kernel = kernel or setup.quant.kind.value
    uses = dequant_uses(setup)
    # + the fp32 write where bitsandbytes computes in fp32 (timing.quantized.dequant_operand_bytes)
    per_use = dequant_bytes(kernel, setup.quant.double_quant) + dequant_operand_bytes(setup)
    nested = setup.quant.double_quant and kernel in BNB_KERNELS
    notes.append(f"{kernel} dequantisation: {per_use:.3g} bytes per weight per use"
                 + (" (double-quant absmax rebuilt each time)" if nested else "")
                 + f", {uses} uses per micro-batch (forward, input gradient" + (", recompute)" if uses == 3 else ")"))
    path = fp32_path(setup)
    if path is not None:
        notes.append(path.note())
    weights = quantized_params(setup.model) / (layout.tp * layout.pp)
    return weights * per_use * uses * setup.grad_accum / memory_bw(gpu, m)


def model_flops_per_token(ft: FlopsPerToken) -> float:
    """The MFU numerator per token (FLOP): the forward of the dense-equivalent model and the backward
    the method runs (input gradients of layers with a backward, weight gradients of trained weights),
    attention under the MFU convention, without recomputation or adapters. A full fine-tune runs the
    whole backward: 3 x forward, the community's 6N + attention (ft.model). Freeze tuning runs no
    backward below its lowest trained layer and LoRA no weight gradients of frozen weights: counting
    6N for them claimed FLOPs that never ran (an MFU of 1.045, 1,034 TFLOP/s on a 989 TFLOP/s H100)."""
    if ft.linear_bwd_weight == ft.linear_fwd and ft.lm_head_bwd == 2.0 * ft.lm_head_fwd:
        return ft.model
    attention_scale = ft.attention_fwd_mfu / ft.attention_fwd if ft.attention_fwd else 0.0
    return (ft.linear_fwd + ft.lm_head_fwd + ft.attention_fwd_mfu + ft.linear_bwd_input + ft.linear_bwd_weight
            + ft.lm_head_bwd + ft.attention_bwd * attention_scale)
