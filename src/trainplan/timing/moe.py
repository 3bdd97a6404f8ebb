"""Routed-expert time of an MoE layer: grouped GEMMs at their own shape plus token-dispatch traffic.

The dense matmul efficiency (trainplan.timing.efficiency) is a function of the hidden size and of
the tokens per micro-batch; routed experts run other matmuls. Megatron-Core's alltoall dispatcher
(megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher.token_dispatch /
token_combine, moe_utils.py permute / sort_chunks_by_idxs / unpermute) runs, per MoE layer:

    permute (tokens -> tokens x top_k rows, index_select) -> all-to-all over EP -> sort by local
    expert (when a rank holds more than one) -> grouped GEMM fc1 -> activation -> grouped GEMM fc2
    -> sort back -> all-to-all -> unpermute (x probs, scatter_add back to tokens)

so each routed expert sees  m = tokens x top_k x ep / experts  rows per micro-batch (balanced
routing: the published Megatron-Bridge MoE benchmarks force-balance tokens; dropless, no capacity
factor, Megatron's default moe_expert_capacity_factor=None), with experts / ep of them per GPU.

Grouped GEMM time (one GEMM of m x n x k, repeated per expert): compute and memory not overlapped,

    t = 2 m n k / (MAMF x sustained x peak) + (in_bytes (m k + k n) + out_bytes m n) / (0.8 x HBM BW)

Checked against the DeepGEMM FP8 tables (deepseek-ai/DeepGEMM README.md, first release, H800,
NVCC 12.8: 18 dense and 4 grouped contiguous shapes, M 64-8192, K 512-16384) with H100 FP8 MAMF
(0.709 x 1979 TFLOP/s) and 0.8 x 3.35 TB/s: median |error| 10%, worst 30%, no constant fitted
(tests/test_timing_moe.py checks two rows). Small K (Qwen3-30B-A3B fc2: K = 768) and small m per
expert are where it falls below peak.

Dispatch traffic (bytes per MoE layer and micro-batch on one GPU, T tokens, a activation bytes):
permute + unpermute 2 a h T (1 + k); the local-expert sort, both ways, 4 a h T k when a GPU holds
more than one expert; the gated activation a T k f (g + 1) (g = 2 for SwiGLU: fc1 writes 2f);
router softmax/top-k over T x E fp32 logits 8 T E; FP8 (Transformer Engine) casts of every GEMM
input, 3 bytes an element (bf16 read, fp8 write). The backward mirrors each op (reads the output
gradient, writes the input gradient) and the activation backward also rereads its input.
The dense efficiency's width factor (non-matmul traffic ~ h per token) is not applied to these
FLOPs: their non-matmul traffic is counted here instead.
"""

from __future__ import annotations

from trainplan.enums import Precision
from trainplan.frozen import frozen
from trainplan.job.training import Layout, TrainingSetup
from trainplan.model.architecture import Group, moe_layer_count, structure
from trainplan.specs import GpuSpec
from trainplan.timing.efficiency import Efficiency, EfficiencyModel, memory_bw
from trainplan.timing.flops import FlopsPerToken, linear_flops

ROUTER_LOGIT_BYTES = 4      # Megatron router logits in fp32 (moe_router_dtype / TopKRouter)
FP8_CAST_BYTES = 3          # per element cast: read bf16 (2), write fp8 (1)


def grouped_gemm_s(m: float, n: float, k: float, *, groups: float, in_bytes: float, out_bytes: float,
                   flops_per_s: float, bytes_per_s: float) -> float:
    """Seconds of `groups` GEMMs of m x n x k (see the module docstring): compute + memory."""
    if m <= 0 or groups <= 0:
        return 0.0
    flops = 2.0 * m * n * k * groups
    moved = groups * (in_bytes * (m * k + k * n) + out_bytes * m * n)
    return flops / flops_per_s + moved / bytes_per_s


@frozen
class ExpertShape:
    """One MoE layer's routed experts as one GPU runs them for one micro-batch."""

    tokens: float            # tokens of the micro-batch on this GPU (after cp, sequence-parallel tp)
    top_k: int
    experts: int
    local_experts: float     # experts / ep
    hidden: int
    intermediate: int        # expert intermediate size (fc2 input)
    fc1_out: int             # fc1 output width: 2 x intermediate when gated
    ep: int
    etp: int = 1             # expert tensor parallel: intermediate and fc1_out are this GPU's 1/etp

    @property
    def tokens_per_expert(self) -> float:
        """m: rows each local expert multiplies (balanced routing; the expert tensor-parallel group
        gathers its members' tokens, so each slice of an expert sees etp ranks' rows)."""
        return self.tokens * self.top_k * self.ep * self.etp / self.experts

    @property
    def routed_rows(self) -> float:
        """Rows the GPU's experts see in total: tokens x top_k x etp (balanced, what it sends = receives,
        gathered over the expert tensor-parallel group)."""
        return self.tokens * self.top_k * self.etp


def expert_shape(setup: TrainingSetup, layout: Layout, tokens_mb_gpu: float) -> ExpertShape | None:
    """The routed-expert GEMM shape; None for a dense model. Each TP rank dispatches its 1/tp of the
    tokens (sequence parallelism); with expert tensor parallel etp > 1 (Layout.expert_tp) Megatron-Core's
    alltoall dispatcher gathers the etp ranks' received tokens (moe/token_dispatcher.py
    gather_from_sequence_parallel_region over the expert TP group) and each GPU runs its 1/etp of every
    local expert's intermediate width on all of them: the same FLOPs, narrower and taller GEMMs."""
    spec, moe = setup.model, setup.model.moe
    if moe is None:
        return None
    layer = next((kind for kind, _ in structure(spec).layers
                  if any(lin.group is Group.EXPERTS for lin in kind.linears)), None)
    if layer is None:
        return None
    experts = [lin for lin in layer.linears if lin.group is Group.EXPERTS]
    f = moe.expert_intermediate_size
    fc1_out = sum(lin.out_features for lin in experts if lin.in_features == spec.hidden_size)
    ep = max(1, min(layout.ep, moe.num_experts))
    etp = layout.expert_tp
    return ExpertShape(tokens=tokens_mb_gpu / layout.tp, top_k=moe.top_k, experts=moe.num_experts,
                       local_experts=moe.num_experts / ep, hidden=spec.hidden_size, intermediate=f // etp,
                       fc1_out=(fc1_out or f) // etp, ep=ep, etp=etp)


def expert_flops_per_token(setup: TrainingSetup) -> float:
    """Forward FLOPs per token of all routed experts (top_k copies), summed over layers."""
    st = structure(setup.model)
    total = 0.0
    for kind, count in st.layers:
        total += count * sum(linear_flops(lin, setup.model) for lin in kind.linears if lin.group is Group.EXPERTS)
    return total


@frozen
class ExpertTime:
    """Seconds per MoE layer and micro-batch on one GPU."""

    gemm_s: float
    dispatch_s: float
    tokens_per_expert: float
    dispatch_bytes: float

    @property
    def total_s(self) -> float:
        return self.gemm_s + self.dispatch_s


def _passes(ft: FlopsPerToken) -> tuple[float, float, float]:
    """(forward, input-gradient, weight-gradient) passes of the linears, as the FLOP count has them:
    recomputation and a reference forward add forward passes; LoRA/frozen experts no weight pass."""
    if ft.linear_fwd <= 0:
        return 1.0, 0.0, 0.0
    extra_fwd = max(0.0, ft.recompute - ft.recompute_attention) + max(
        0.0, ft.reference - ft.reference_attention - ft.lm_head_fwd)
    return (1.0 + extra_fwd / ft.linear_fwd, ft.linear_bwd_input / ft.linear_fwd,
            ft.linear_bwd_weight / ft.linear_fwd)


def expert_layer_time(shape: ExpertShape, ft: FlopsPerToken, setup: TrainingSetup, gpu: GpuSpec,
                      eff: Efficiency, m: EfficiencyModel, grad_bytes: int) -> ExpertTime:
    """Grouped GEMMs (forward, input and weight gradients) and dispatch traffic of one MoE layer."""
    fwd, dgrad, wgrad = _passes(ft)
    flops_per_s = eff.peak_flops_per_s * eff.mamf_fraction * eff.sustained
    bw = memory_bw(gpu, m)
    fp8 = setup.precision is Precision.FP8
    a = setup.precision.compute_bytes
    in_b = 1 if fp8 else a
    mm, h, f, f1, g = shape.tokens_per_expert, shape.hidden, shape.intermediate, shape.fc1_out, shape.local_experts

    def gemm(m_, n_, k_, out_b):
        return grouped_gemm_s(m_, n_, k_, groups=g, in_bytes=in_b, out_bytes=out_b,
                              flops_per_s=flops_per_s, bytes_per_s=bw)

    t_fwd = gemm(mm, f1, h, a) + gemm(mm, h, f, a)                 # fc1, fc2
    t_dgrad = gemm(mm, h, f1, a) + gemm(mm, f, h, a)               # dX = dY W
    t_wgrad = gemm(h, f1, mm, grad_bytes) + gemm(f, h, mm, grad_bytes)   # dW = X^T dY (K = m)
    gemm_s = fwd * t_fwd + dgrad * t_dgrad + wgrad * t_wgrad

    T, k = shape.tokens, shape.top_k
    rows = shape.routed_rows
    gated = f1 / f if f else 1.0
    permute = 2.0 * a * h * T * (1 + k) + (4.0 * a * h * rows if shape.local_experts > 1 else 0.0)
    activation = a * rows * f * (gated + 1.0)
    router = 2.0 * ROUTER_LOGIT_BYTES * T * shape.experts
    cast_fwd = FP8_CAST_BYTES * rows * (h + f) if fp8 else 0.0
    cast_bwd = FP8_CAST_BYTES * rows * (h + f1) if fp8 else 0.0
    fwd_bytes = permute + activation + router + cast_fwd
    bwd_bytes = permute + activation + router + cast_bwd + a * rows * f1
    backward = 1.0 if dgrad > 0 else 0.0
    moved = fwd * fwd_bytes + backward * bwd_bytes
    return ExpertTime(gemm_s=gemm_s, dispatch_s=moved / bw, tokens_per_expert=mm, dispatch_bytes=moved)


def routed_layers(setup: TrainingSetup, layout: Layout, eff: Efficiency,
                  tokens_mb_gpu: float) -> tuple[ExpertShape, float] | None:
    """(expert shape, MoE layers per pipeline stage) of a setup whose routed experts are timed at
    their own shape; None for a dense model, under an --efficiency override, or with no MoE layer."""
    shape = expert_shape(setup, layout, tokens_mb_gpu)
    layers = moe_layer_count(setup.model) / layout.pp
    if shape is None or eff.overridden or layers <= 0:
        return None
    return shape, layers


def dense_charge_s(setup: TrainingSetup, layout: Layout, ft: FlopsPerToken, eff: Efficiency,
                   tokens_mb_gpu: float) -> float:
    """What the dense matmul efficiency charged for the routed experts' FLOPs of one micro-batch on one
    GPU (the expert timings replace it)."""
    fwd, dgrad, wgrad = _passes(ft)
    expert_hw_flops = expert_flops_per_token(setup) * (fwd + dgrad + wgrad)
    return expert_hw_flops * tokens_mb_gpu / (layout.tp * layout.pp) / (eff.peak_flops_per_s * eff.value)


def moe_expert_delta_s(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, ft: FlopsPerToken, eff: Efficiency,
                       m: EfficiencyModel, tokens_mb_gpu: float, grad_bytes: int,
                       notes: list[str]) -> float:
    """Seconds per micro-batch to add to the dense compute time on one GPU: the routed experts timed
    here minus what the dense efficiency charged for their FLOPs (0 for dense models or when the
    matmul efficiency is overridden)."""
    routed = routed_layers(setup, layout, eff, tokens_mb_gpu)
    if routed is None:
        return 0.0
    shape, moe_layers = routed
    per_layer = expert_layer_time(shape, ft, setup, gpu, eff, m, grad_bytes)
    charged = dense_charge_s(setup, layout, ft, eff, tokens_mb_gpu)
    notes.append(f"routed experts: {shape.local_experts:g} per GPU, {per_layer.tokens_per_expert:.0f} tokens "
                 f"each per micro-batch (balanced, dropless); grouped GEMMs {per_layer.gemm_s * 1e3:.2f} ms + "
                 f"dispatch traffic {per_layer.dispatch_bytes / 1e9:.2f} GB ({per_layer.dispatch_s * 1e3:.2f} ms) "
                 "per MoE layer and micro-batch (Megatron alltoall dispatcher: permute, sort, unpermute)")
    return moe_layers * per_layer.total_s - charged
