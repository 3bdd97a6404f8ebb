"""What one step's time reads from the setup (with its workload and options) alone, and from the
GPU (with the options) alone, whatever the layout: worked out once per set of those records and kept.

The planner times many layouts of the same few setups on the same GPUs (a 256-GPU llama-3.1-70b
plan: 158 estimates of 23 setups on 13 GPUs), and every estimate re-derived the sequence shape, FLOPs
per token, parameter counts and gradient bytes of its setup, and the fabric, host and efficiency
notes of its GPU. Each value here comes from the function that owns it (timing.steps, timing.flops,
timing.parts, timing.comm, timing.traffic, timing.offload); this module only keeps the results,
keyed on the records' identity (trainplan.frozen.by_identity says why that is safe).
"""

from __future__ import annotations

from trainplan.enums import Framework, Precision
from trainplan.frozen import by_identity, replace
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.memory.sharding import ZeroConfig
from trainplan.model.architecture import moe_layer_count
from trainplan.specs import GpuSpec
from trainplan.timing import parts
from trainplan.timing.attention import padded_sdpa
from trainplan.timing.links import Fabric, fabric, is_consumer, pcie_link
from trainplan.timing.efficiency import DEFAULT_MODEL, Efficiency, bf16_ceiling_stands_in
from trainplan.timing.flops import flops_per_token
from trainplan.timing.offload import HostSpec, resolve_host
from trainplan.timing.options import TimingOptions
from trainplan.timing.steps import SequenceShape, length_group, sequence_shape
from trainplan.timing.traffic import checkpoint_bytes, grad_bytes, weight_bytes_gathered

# where a ZeRO stage is not DeepSpeed's: Megatron's distributed optimizer (its own overlap flags) and
# FSDP SHARD_GRAD_OP read as stage 2 (torch FSDP, llm-foundry, litgpt, torchtune, torchtitan)
_NOT_DEEPSPEED = frozenset({Framework.MEGATRON, Framework.FSDP, Framework.LITGPT, Framework.TORCHTUNE,
                            Framework.TORCHTITAN})
_DEEPSPEED_DEFAULTS = ZeroConfig()    # no --zero knobs given: DeepSpeed's own (a frozen record, built once)


class SetupFacts:
    """The layout-independent facts of one setup under one workload and timing options."""

    __slots__ = ("setup", "options", "_on", "shape", "head_notes", "micro_sequences", "hidden_size", "kv_dim",
                 "compute_bytes", "per_token", "mb_tokens", "dtype", "n_total", "n_train", "grad_bytes",
                 "weight_bytes", "moe_layers", "overlap_always", "zero", "checkpoint_bytes", "forward_flops",
                 "hardware_flops", "model_flops", "fwd_share", "run_notes")

    def __init__(self, setup: TrainingSetup, workload: Workload, options: TimingOptions) -> None:
        self.setup, self.options = setup, options
        self.micro_sequences: int = setup.micro_sequences
        self.hidden_size: int = setup.model.hidden_size
        self.kv_dim: int = setup.model.kv_dim
        self.compute_bytes: int = setup.precision.compute_bytes
        notes: list[str] = []
        shape = sequence_shape(seq_len=setup.seq_len, micro_batch=setup.micro_sequences,
                               tokens_per_sample=workload.tokens_per_sample, packing=workload.packing,
                               padding_free=setup.impl.padding_free, lengths=options.sample_lengths,
                               drop_long=options.drop_long_samples,
                               group=length_group(setup.micro_sequences, setup.grad_accum, options.group_by_length))
        if setup.sequences_per_sample > 1:       # a preference pair: two sequences per sample
            shape = replace(shape, samples_per_sequence=shape.samples_per_sequence / setup.sequences_per_sample)
            notes.append(f"preference pairs: {setup.sequences_per_sample} sequences (chosen, rejected) per sample")
        notes.append(shape.note)
        if padded_sdpa(setup.framework, setup.attention, setup.impl.padding_mask):
            notes.append("padding in the attention mask: transformers gives SDPA its 4D mask, so the memory-efficient "
                         "kernel runs over every s x s block (no causal skipping, no FlashAttention)")
        if setup.reference_forward:
            notes.append("a reference forward (no grad) per micro-batch" + (
                ": a frozen copy of the model" if setup.reference_model else ": the model with its adapters disabled"))
        self.shape: SequenceShape = shape
        self.head_notes: tuple[str, ...] = tuple(notes)      # the notes step_time starts from
        ft = self.per_token = flops_per_token(setup, seq_len=max(1, round(shape.attention_span)),
                                              mfu_convention=options.mfu_convention)
        # per token (FLOP): the forward, what runs, the MFU numerator; the forward's share of what runs
        self.forward_flops: float = ft.forward
        self.hardware_flops: float = ft.hardware
        self.model_flops: float = parts.model_flops_per_token(ft)
        self.fwd_share: float = ft.forward / ft.hardware
        self.mb_tokens: float = setup.micro_sequences * shape.padded_len
        self.dtype: str = "fp8" if setup.precision is Precision.FP8 else setup.precision.compute_dtype
        self.n_total, self.n_train = parts.param_counts(setup)
        self.grad_bytes: int = grad_bytes(setup)
        self.weight_bytes: float = weight_bytes_gathered(setup)
        self.moe_layers: int = moe_layer_count(setup.model)
        self.overlap_always: bool = setup.framework in _NOT_DEEPSPEED
        self.zero: ZeroConfig = options.zero or _DEEPSPEED_DEFAULTS
        # bytes per checkpoint save; 0.0 without saves, where estimate_time multiplies it by 0 saves
        self.checkpoint_bytes: float = (0.0 if not workload.checkpoint_saves else options.checkpoint_bytes
                                        if options.checkpoint_bytes is not None else
                                        checkpoint_bytes(setup, self.n_total, self.n_train))
        # estimate_time's notes after the run length: evaluation, checkpoints, retries
        run_notes = []
        if workload.eval_fraction:
            run_notes.append(f"evaluation: {workload.eval_fraction:.0%} of the training tokens, forward only")
        if workload.checkpoint_saves:
            run_notes.append(f"{workload.checkpoint_saves} checkpoint saves of {self.checkpoint_bytes / 1e9:.1f} GB at "
                             f"{workload.disk_bw_bytes_per_s / 1e9:.2g} GB/s")
        run_notes.append(f"retry factor {workload.retry_factor:g}" + (" (default: no failed attempts)"
                                                                       if workload.retry_factor == 1.0 else ""))
        self.run_notes: tuple[str, ...] = tuple(run_notes)
        # setups that differ only where the efficiency does not look (accumulation, recomputation, the
        # optimizer: most of a plan's) share one cache of what `on` returns
        self._on = _shared_on(options, (*parts.efficiency_inputs(setup), self.mb_tokens, shape.padded_len,
                                        shape.attention_span))

    def on(self, gpu: GpuSpec, cp: int) -> OnGpu:
        """What the step reads of `gpu` at context-parallel size `cp`."""
        key = (id(gpu), cp)
        hit = self._on.get(key)
        if hit is None:
            if len(self._on) >= 256:
                self._on.clear()
            hit = self._on[key] = (OnGpu(self, gpu, cp), gpu)    # the GPU kept: its id stays its own
        return hit[0]


class OnGpu:
    """The step's efficiency on a GPU at a context-parallel size (its tokens per micro-batch and sequence
    length per GPU, parts.step_efficiency) with the notes that state it, and the GPU's facts."""

    __slots__ = ("gpu_facts", "efficiency", "efficiency_notes")

    def __init__(self, facts: SetupFacts, gpu: GpuSpec, cp: int) -> None:
        self.gpu_facts = gpu_facts(gpu, facts.options)
        # the attention kernel's sequence: the context-parallel share of the span it runs over
        span = min(facts.shape.attention_span, facts.shape.padded_len / cp)
        eff = self.efficiency = parts.step_efficiency(facts.setup, gpu, tokens_per_micro_batch=facts.mb_tokens / cp,
                                                      seq_len=max(1, round(span)), options=facts.options)
        self.efficiency_notes: tuple[str, ...] = efficiency_notes(eff, gpu, facts.dtype)


class GpuFacts:
    """The facts of one GPU under one set of timing options: the fabric (by GPUs per node) with what
    it assumed, and the host."""

    __slots__ = ("gpu", "options", "_host", "_by_node")

    def __init__(self, gpu: GpuSpec, options: TimingOptions) -> None:
        self.gpu, self.options = gpu, options
        self._host: tuple[HostSpec, float] | None = None
        self._by_node: dict[int, tuple[Fabric, str, str]] = {}

    def fabric(self, layout: Layout) -> tuple[Fabric, str, str]:
        """The links of `layout`'s groups (timing.links.fabric reads its GPUs per node) with the notes on
        what was assumed: the inter-node network ("" when --interconnect was given) and PCIe peer to
        peer on GeForce ("" where it does not apply)."""
        hit = self._by_node.get(layout.gpus_per_node)
        if hit is None:
            gpu, options = self.gpu, self.options
            fab = fabric(gpu, layout, interconnect=options.interconnect, intranode=options.intranode,
                         collective_fraction=options.model.collective_fraction)
            inter = ""
            if options.interconnect is None:
                guess = ("; a guess for GeForce servers, which rarely have InfiniBand" if is_consumer(gpu) else
                         "; the GPU's reference (DGX/HGX) design")
                inter = f"inter-node network assumed: {fab.inter.name}{guess} (--interconnect to change)"
            p2p = ""
            if is_consumer(gpu) and layout.gpus_per_node > 1 and options.intranode is None:
                p2p = ("GPU to GPU inside a node over PCIe peer-to-peer assumed; GeForce drivers may disable it, "
                       "and NCCL then copies through host memory (slower)")
            hit = self._by_node[layout.gpus_per_node] = (fab, inter, p2p)
        return hit

    def host(self) -> tuple[HostSpec, float]:
        """The node's host (timing.offload.resolve_host with the user's values) and the GPU's PCIe
        bandwidth, for an offloaded optimizer or parameters."""
        if self._host is None:
            opts = self.options
            self._host = (resolve_host(self.gpu, cpus=opts.host_cpus, mem_bw_bytes_per_s=opts.host_mem_bw_bytes_per_s),
                          pcie_link(self.gpu).bw_bytes_per_s)
        return self._host


def efficiency_notes(eff: Efficiency, gpu: GpuSpec, dtype: str) -> tuple[str, ...]:
    """What the matmul and attention efficiency of a step rest on, as step_time's notes say it."""
    notes = []
    stack = eff.stack
    if eff.peak_dtype != dtype:
        notes.append(f"{gpu.id} has no {dtype} tensor cores in the catalog: {dtype} matmuls timed at its "
                     f"{eff.peak_dtype} peak ({eff.peak_flops_per_s / 1e12:.1f} TFLOP/s)"
                     + (f"; bf16 without tensor cores is emulated: --precision fp16 runs at its fp16 peak "
                        f"({gpu.peak_flops('fp16') / 1e12:.1f} TFLOP/s)"
                        if dtype == "bf16" and gpu.supports("fp16") else ""))
    elif eff.peak_dtype == "fp32":
        notes.append("fp32 matmuls at the FP32 peak (PyTorch leaves TF32 off for matmuls by default)")
    if bf16_ceiling_stands_in(gpu, eff.peak_dtype):
        notes.append(f"no measured FP8 matmul ceiling for {gpu.id}: its bf16 one, {eff.mamf_fraction:.0%} of "
                     "peak, assumed")
    elif not eff.mamf_known:
        notes.append(f"no measured matmul ceiling for {gpu.id}: {eff.mamf_fraction:.0%} of peak assumed")
    ridge = eff.sustained_ridge or eff.ridge
    lo, hi = DEFAULT_MODEL.ridge_lo, DEFAULT_MODEL.ridge_hi
    if not eff.overridden and ridge > hi * 1.1:
        notes.append(f"{gpu.id}'s ridge point, {ridge:.0f} FLOP per byte of memory bandwidth, is above the "
                     f"{lo:.0f}-{hi:.0f} of the GPUs the sustained fraction was fitted on (A100, H100): its "
                     f"{eff.sustained:.0%} is extrapolated, the least certain factor of this estimate")
    notes.append(f"matmul efficiency {eff.value:.1%} of {eff.peak_dtype} peak ({stack.value} kernels"
                 + (", user override" if eff.overridden else "") + f"); attention kernel {eff.attention_kernel}: {eff.attention_fwd:.0%} forward, "
                 f"{eff.attention_bwd:.0%} backward of the 16-bit peak"
                 + (f" ({eff.attention_source})" if eff.attention_source else " (fitted, no published benchmark)"))
    return tuple(notes)


@by_identity(1, limit=256)
def _shared_on(options: TimingOptions, efficiency_key: tuple) -> dict[tuple[int, int], tuple[OnGpu, GpuSpec]]:
    """The cache of SetupFacts.on shared by setups with these efficiency inputs (parts.efficiency_inputs)
    and tokens per micro-batch and sequence."""
    return {}


@by_identity(3)
def setup_facts(setup: TrainingSetup, workload: Workload, options: TimingOptions) -> SetupFacts:
    """The SetupFacts of these records, kept while they are."""
    return SetupFacts(setup, workload, options)


@by_identity(2)
def gpu_facts(gpu: GpuSpec, options: TimingOptions) -> GpuFacts:
    """The GpuFacts of these records, kept while they are."""
    return GpuFacts(gpu, options)
