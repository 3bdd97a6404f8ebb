"""MoE layers as Hugging Face transformers runs them, and as DeepSpeed ZeRO-3 gathers them.

Which path a setup takes is decided here, by the framework (`runs_hf_moe`): HF Trainer and the
trainers built on it (LLaMA-Factory, ms-swift `swift sft`, axolotl, TRL, unsloth, DeepSpeed or plain
PyTorch loops over a transformers model) run transformers' own MoE block; Megatron-Core, torchtitan,
torchtune (and the rest) run grouped GEMMs with a token dispatcher, timed in trainplan.timing.moe.

transformers' experts (ExpertsImpl):
- LOOP, transformers 4.x (4.51-4.57 modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock.forward, the same
  in modeling_mixtral.py MixtralSparseMoeBlock.forward): `for expert_idx in expert_hit:` over the
  experts some token chose; per expert `torch.where(expert_mask[expert_idx])` (a nonzero, which
  waits for the GPU), `self.experts[expert_idx]` (a tensor used as a list index: `.item()`, another
  wait), a gather of its rows, three nn.Linear GEMMs at m = rows of that expert, SiLU, two
  multiplies, `index_add_` back. The host waits for the GPU twice per expert, so the CPU cannot
  queue work ahead: each forward kernel costs at least the launch floor. Backward (the autograd
  engine, no host waits) queues ahead: an expert's backward takes the longer of its kernels and
  its launches. The gather `hidden_states[top_x]` differentiates as `index_backward`: a zero
  tensor of the whole micro-batch (T x h) per expert, index_put_ into it, and the autograd engine
  adds it to the input's gradient (InputBuffer accumulate: read 2, write 1) for every expert but
  the first; measured on torch 2.13 (profiler: aten::new_zeros, aten::zero_, _index_put_impl_,
  add_ per use).
- GROUPED_MM, transformers v5's default (modeling_utils.py get_correct_experts_implementation:
  "grouped_mm" when none is requested; integrations/moe.py grouped_mm_experts_forward: one sort,
  a gather of T x k rows, torch grouped_mm over all experts, un-permute, sum over k): the same
  kernel shape and traffic as Megatron's grouped GEMM, so timed by trainplan.timing.moe.
  (On pre-Hopper GPUs with torch <= 2.8 it falls back to a torch.mm per expert after one host
  wait; not modelled separately.)
Which one runs is the setup's Implementation.experts_impl (--experts-implementation): GROUPED_MM by default,
as transformers 5 runs it and as LLaMA-Factory 0.9.5 (transformers <= 5.6), ms-swift 4.6 (< 5.20) and axolotl
install it today; LOOP for a run on transformers 4.x, which the published HF MoE runs are (Qwen3-MoE arrived in
4.51; v5 came later): the case reader sets it (cases.timecase) unless the case names transformers 5 or
grouped_mm. The note names the one not assumed.

Launch floor: LAUNCH_FLOOR_S = 10 us per kernel, the upper end of the 5-10 us a PyTorch eager op costs the
host (CUDA.jl's graphs documentation, cuda.juliagpu.org/dev/usage/graphs: 8 kernels ~ 50 us launched
one by one, ~6 us each from a thin host language; NVIDIA's Nsight Systems walkthrough measured ~20 us
for a PyTorch element-wise op on V100). Not fitted.

DeepSpeed ZeRO-3 and the experts (`z3_leaf_params`): ms-swift (swift/model/register.py
_deepspeed_set_z3_leaf_modules), LLaMA-Factory (model/model_utils/moe.py add_z3_leaf_module) and
axolotl (loaders/model.py _set_z3_leaf_modules, common/architectures.py MOE_ARCH_BLOCK) call
deepspeed.utils.set_z3_leaf_modules(model, [<SparseMoeBlock>]); a leaf's parameters, every expert
and the router, are fetched as one all-gather when the block runs (DeepSpeed
runtime/zero/partitioned_param_coordinator.py fetch_sub_module: params_to_fetch =
iter_params(module, recurse=z3_leaf_module(module)), then the compute stream waits for it). The
prefetch that hides other gathers pops at most stage3_prefetch_bucket_size elements ahead (HF fills
"auto" with 0.9 h^2: transformers integrations/deepspeed.py trainer_config_finalize; ms-swift's and
LLaMA-Factory's zero3 configs say "auto"), so all but one bucket of the leaf waits, in forward and
again in backward. transformers v5 stores each layer's experts as 3-D parameters of one module,
fetched whole the same way whichever trainer runs it.
"""

from __future__ import annotations

from trainplan.enums import ExpertsImpl, Framework, Fsdp, ZeroStage
from trainplan.frozen import frozen
from trainplan.job.frameworks import RUNS_TRANSFORMERS
from trainplan.job.training import Layout, TrainingSetup
from trainplan.model.architecture import Group, moe_layer_count, structure
from trainplan.specs import GpuSpec
from trainplan.timing.efficiency import Efficiency, EfficiencyModel, memory_bw
from trainplan.timing.flops import FlopsPerToken
from trainplan.timing.moe import (
    ExpertShape,
    _passes,
    dense_charge_s,
    grouped_gemm_s,
    moe_expert_delta_s,
    routed_layers,
)

LAUNCH_FLOOR_S = 10e-6      # per kernel, PyTorch eager (see the module docstring)
MASK_BYTES = 8              # one_hot(selected_experts) is int64 (modeling_qwen3_moe.py)
HF_PREFETCH_BUCKET_PER_H2 = 0.9   # stage3_prefetch_bucket_size "auto" = 0.9 h^2 (transformers deepspeed.py)


# The trainers that run a transformers model (its MoE block: job.frameworks.RUNS_TRANSFORMERS), and
# those of them that make the block a ZeRO-3 leaf (see the module docstring for where each does).
HF_MOE_FRAMEWORKS = RUNS_TRANSFORMERS
Z3_LEAF_FRAMEWORKS = frozenset({Framework.LLAMAFACTORY, Framework.SWIFT, Framework.AXOLOTL})


def runs_hf_moe(framework: Framework) -> bool:
    """True when the framework runs transformers' MoE block (else Megatron-style grouped GEMMs)."""
    return framework in HF_MOE_FRAMEWORKS


def experts_hit(shape: ExpertShape) -> float:
    """Experts on this GPU that at least one of its routed rows chose: each token picks top_k distinct
    experts of `experts`, so a given expert is missed by one token with probability 1 - k / E and by
    all T x ep tokens that reach its GPU with (1 - k / E)^(T ep) (uniform routing)."""
    miss = (1.0 - shape.top_k / shape.experts) ** (shape.tokens * shape.ep)
    return shape.local_experts * (1.0 - miss)


@frozen
class LoopTime:
    """transformers 4.x expert loop: seconds per MoE layer and micro-batch on one GPU."""

    forward_s: float          # one forward (the recompute and a reference forward repeat it)
    backward_s: float         # input and weight gradients
    experts_hit: float
    rows_per_expert: float
    kernels_per_expert: int   # forward + backward launches

    def total_s(self, forward_passes: float) -> float:
        return forward_passes * self.forward_s + self.backward_s


def _kernel_s(moved_bytes: float, bytes_per_s: float, floor_s: float) -> float:
    return max(moved_bytes / bytes_per_s, floor_s)


def loop_layer_time(shape: ExpertShape, *, act_bytes: int, grad_bytes: int, flops_per_s: float,
                    bytes_per_s: float, dgrad: float = 1.0, wgrad: float = 1.0,
                    floor_s: float = LAUNCH_FLOOR_S) -> LoopTime:
    """One MoE layer of the 4.x loop (module docstring): per expert hit, forward kernels each at least
    `floor_s` (the host waits twice per expert), backward the longer of its kernels and its launches;
    `dgrad` / `wgrad` scale the input- and weight-gradient passes (0: none, as for frozen experts)."""
    hit = experts_hit(shape)
    if hit <= 0:
        return LoopTime(0.0, 0.0, 0.0, 0.0, 0)
    a, T, h, f, k = act_bytes, shape.tokens, shape.hidden, shape.intermediate, shape.top_k
    m = shape.routed_rows / hit

    def gemm(m_, n_, k_, out_b):
        return grouped_gemm_s(m_, n_, k_, groups=1, in_bytes=a, out_bytes=out_b,
                              flops_per_s=flops_per_s, bytes_per_s=bytes_per_s)

    # forward, in code order: mask row (index, 16 k T), nonzero (8 k T), .item(), gather rows (2 m h),
    # gate and up GEMMs, SiLU (2 m f), x up (3 m f), down GEMM, routing weight (floor), x weight (2 m h),
    # index_add_ (3 m h)
    small_fwd = (2 * MASK_BYTES * k * T, MASK_BYTES * k * T, 0.0, 2 * a * m * h, 2 * a * m * f, 3 * a * m * f,
                 0.0, 2 * a * m * h, 3 * a * m * h)
    gemms_fwd = (gemm(m, f, h, a), gemm(m, f, h, a), gemm(m, h, f, a))
    per_expert_fwd = (sum(_kernel_s(b, bytes_per_s, floor_s) for b in small_fwd)
                      + sum(max(t, floor_s) for t in gemms_fwd))
    # one_hot(selected_experts) written and summed once per layer (expert_hit)
    forward_s = hit * per_expert_fwd + _kernel_s(2 * MASK_BYTES * T * k * shape.experts, bytes_per_s, floor_s)

    # backward: index_select (2 m h), x weight (2 m h) and its weight grad (2 m h), routing-weight
    # index backward (2 launches, tiny), x up (3 m f, twice), SiLU (3 m f), gate+up input grads summed
    # (3 m h), gather backward: zeros (T h) and index_put_ (3 m h); and the 6 GEMMs
    small_bwd = (2 * a * m * h, 2 * a * m * h, 2 * a * m * h, 0.0, 0.0, 3 * a * m * f, 3 * a * m * f,
                 3 * a * m * f, 3 * a * m * h, a * T * h, 3 * a * m * h)
    dgrad_gemms = 2 * gemm(m, h, f, a) + gemm(m, f, h, a)        # gate, up: dX (K = f); down: dX (K = h)
    wgrad_gemms = 2 * gemm(h, f, m, grad_bytes) + gemm(f, h, m, grad_bytes)   # dW = X^T dY (K = m)
    gpu_bwd = dgrad * (sum(b / bytes_per_s for b in small_bwd) + dgrad_gemms) + wgrad * wgrad_gemms
    launches_bwd = dgrad * (len(small_bwd) + 3) + wgrad * 3
    backward_s = hit * max(gpu_bwd, launches_bwd * floor_s)
    # the autograd engine adds each expert's dense T x h input gradient to the running sum
    backward_s += dgrad * max(0.0, hit - 1) * _kernel_s(3 * a * T * h, bytes_per_s, 0.0)
    return LoopTime(forward_s=forward_s, backward_s=backward_s, experts_hit=hit, rows_per_expert=m,
                    kernels_per_expert=len(small_fwd) + len(gemms_fwd) + len(small_bwd) + 6)


def hf_experts_delta_s(setup: TrainingSetup, layout: Layout, gpu: GpuSpec, ft: FlopsPerToken, eff: Efficiency,
                       m: EfficiencyModel, tokens_mb_gpu: float, grad_bytes: int, notes: list[str],
                       experts: ExpertsImpl | None = None) -> float:
    """Seconds per micro-batch to add to the dense compute on one GPU for the routed experts: the
    framework's path (runs_hf_moe) timed, minus what the dense efficiency charged for their FLOPs."""
    if setup.model.moe is None:      # a dense model: no routed experts on either path, nothing to add
        return 0.0
    if not runs_hf_moe(setup.framework):
        return moe_expert_delta_s(setup, layout, gpu, ft, eff, m, tokens_mb_gpu, grad_bytes, notes)
    impl = experts or setup.impl.experts_impl
    leaf = z3_leaf_params(setup, layout, impl)
    if leaf:
        notes.append(f"DeepSpeed ZeRO-3 fetches each MoE block's experts whole ({leaf / 1e9:.2f}B parameters "
                     "per GPU, z3 leaf modules): those all-gathers wait, in forward and in backward, "
                     "beyond one prefetch bucket")
    elif (impl is ExpertsImpl.LOOP and layout.zero is ZeroStage.PARAMETERS and layout.fsdp is Fsdp.NONE
          and layout.num_gpus > 1):
        # deepspeed/utils/z3_leaf_module.py set_z3_leaf_modules: "the computation order of experts varies
        # across forward passes. This variability can disrupt ZeRO3's functionality ... [and] fine-grained
        # nested modules" carry "the overhead associated with hooks"
        notes.append(f"{setup.framework} does not make the MoE block a ZeRO-3 leaf: DeepSpeed fetches every "
                     "expert's linears one by one, each with its hooks and its own all-gather; the time of that "
                     "per-module fetching is not modelled (only the bytes are), so this step time is a lower "
                     "bound")
    other = ExpertsImpl.GROUPED_MM if impl is ExpertsImpl.LOOP else ExpertsImpl.LOOP
    if impl is ExpertsImpl.GROUPED_MM:
        delta = moe_expert_delta_s(setup, layout, gpu, ft, eff, m, tokens_mb_gpu, grad_bytes, notes)
        if delta:
            notes.append("transformers v5 grouped_mm experts (its default): timed as grouped GEMMs above")
        return delta
    routed = routed_layers(setup, layout, eff, tokens_mb_gpu)
    if routed is None:
        return 0.0
    shape, moe_layers = routed
    fwd, dgrad, wgrad = _passes(ft)
    loop = loop_layer_time(shape, act_bytes=setup.precision.compute_bytes, grad_bytes=grad_bytes,
                           flops_per_s=eff.peak_flops_per_s * eff.mamf_fraction * eff.sustained,
                           bytes_per_s=memory_bw(gpu, m),
                           dgrad=dgrad, wgrad=wgrad)
    charged = dense_charge_s(setup, layout, ft, eff, tokens_mb_gpu)
    per_layer = loop.total_s(fwd)
    notes.append(f"routed experts as transformers 4.x runs them (a Python loop over the {loop.experts_hit:.0f} "
                 f"experts hit, {loop.rows_per_expert:.0f} tokens each, {loop.kernels_per_expert} kernels an "
                 f"expert, at least {LAUNCH_FLOOR_S * 1e6:.0f} us each while the host waits on the GPU): "
                 f"{per_layer * 1e3:.1f} ms per MoE layer and micro-batch; v5's {other.value} would run them "
                 "as grouped GEMMs")
    return moe_layers * per_layer - charged


def z3_leaf_params(setup: TrainingSetup, layout: Layout, experts: ExpertsImpl | None = None) -> float:
    """Parameters per GPU (already / tp x pp) that DeepSpeed ZeRO-3 fetches whole when an MoE block
    runs, less the prefetch bucket that the module before it starts (module docstring); 0 when the
    experts' modules are gathered and prefetched one by one, or without ZeRO-3."""
    moe = setup.model.moe
    if moe is None or layout.zero is not ZeroStage.PARAMETERS or layout.fsdp is not Fsdp.NONE:
        return 0.0
    if not runs_hf_moe(setup.framework):
        return 0.0
    impl = experts or setup.impl.experts_impl
    if setup.framework not in Z3_LEAF_FRAMEWORKS and impl is ExpertsImpl.LOOP:
        return 0.0
    kind = next((kind for kind, _ in structure(setup.model).layers
                 if any(lin.group is Group.EXPERTS for lin in kind.linears)), None)
    if kind is None:
        return 0.0
    block = sum(lin.params for lin in kind.linears
                if lin.group in (Group.EXPERTS, Group.SHARED_EXPERTS, Group.ROUTER))
    bucket = HF_PREFETCH_BUCKET_PER_H2 * setup.model.hidden_size ** 2
    return moe_layer_count(setup.model) * max(0.0, block - bucket) / (layout.tp * layout.pp)
