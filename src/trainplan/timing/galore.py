"""GaLore's optimizer step on the GPU (Zhao et al. 2024, arXiv 2403.03507; galore_torch).

Per projected weight W (m x n, gradient G, basis P of r' = min(r, m, n) singular vectors; memory.state
has the shapes), one step runs (galore_projector.py `project` / `project_back`, adamw.py / adamw8bit.py):

    R = G P^T (or P^T G)          a GEMM of max(m, n) x r' x min(m, n), reading G
    Adam on R                      two states of max(m, n) x r' (8-bit for galore-adamw-8bit)
    U = N P (or P N), U * scale    a GEMM of max(m, n) x min(m, n) x r' writing m x n, then a scaled copy
    W += -lr U                     reads W and U, writes W (adamw8bit.py: clones W first, then adds U to it)

The GEMMs run in the gradient's dtype: fp32 when the model is kept in fp32 under autocast (HF Trainer's
mixed precision), at the fp32 peak since PyTorch leaves TF32 off for matmuls; the 16-bit dtype under pure
16-bit training. Each is timed as compute at the GPU's best-GEMM rate (MAMF x sustained, as the routed
experts' grouped GEMMs: trainplan.timing.moe.grouped_gemm_s) plus its operands' traffic. The other
trainable tensors take their plain Adam (8-bit) step (trainplan.timing.traffic.optimizer_bytes_per_param).

Not timed, said in a note: the SVD of each G every update_proj_gap steps (torch.linalg.svd in fp32,
default gap 200 in HF Trainer and LLaMA-Factory), whose cost is amortised over those steps.
"""

from __future__ import annotations

from trainplan.enums import Optimizer, Precision
from trainplan.frozen import frozen, replace
from trainplan.job.training import TrainingSetup
from trainplan.memory.state import TensorGroup, galore_shape, param_groups
from trainplan.specs import GpuSpec
from trainplan.timing.efficiency import EfficiencyModel, KernelStack, matmul_efficiency, memory_bw
from trainplan.timing.moe import grouped_gemm_s
from trainplan.timing.traffic import grad_bytes, optimizer_bytes_per_param, state_elem_bytes


@frozen
class LowRankStep:
    """One GaLore or APOLLO optimizer step on one GPU (timing.apollo builds APOLLO's)."""

    gemm_s: float           # the projections (GaLore: and the projections back)
    update_s: float         # Adam on the projected gradients, the full-size update and the weight's add
    plain_s: float          # the tensors left to plain Adam
    gemm_dtype: str

    @property
    def total_s(self) -> float:
        return self.gemm_s + self.update_s + self.plain_s


def best_gemm_rate(gpu: GpuSpec, dtype: str, hidden_size: int, m: EfficiencyModel) -> float:
    """FLOP/s of an optimizer's large GEMMs in `dtype`: the GPU's best-GEMM rate (MAMF x sustained, fused, at a
    token count that leaves no M-dimension penalty), as the routed experts' grouped GEMMs are timed."""
    eff = matmul_efficiency(gpu, dtype, hidden_size=hidden_size, tokens_per_micro_batch=1e9,
                            stack=KernelStack.FUSED, m=m)
    return eff.peak_flops_per_s * eff.mamf_fraction * eff.sustained


def gradient_dtype(setup: TrainingSetup) -> str:
    """The dtype a projection of the gradient runs in: fp32 for fp32 gradients (PyTorch leaves TF32 off for
    matmuls), else the 16-bit compute dtype (bf16 under FP8)."""
    if grad_bytes(setup) == 4:
        return "fp32"
    return setup.precision.compute_dtype if setup.precision is not Precision.FP8 else "bf16"


def projected_weights(setup: TrainingSetup, rank: int) -> tuple[tuple[tuple[TensorGroup, int], ...], int]:
    """(each trainable group a low-rank optimizer projects, with its projected-gradient elements a weight at `rank`
    (memory.state.galore_shape), and the parameters it leaves to plain Adam)."""
    projected, plain = [], 0
    for group in param_groups(setup).trainable:
        if group.projectable:
            projected.append((group, galore_shape(group.rows, group.cols, rank)[0]))
        else:
            plain += group.numel
    return tuple(projected), plain


def galore_step(setup: TrainingSetup, gpu: GpuSpec, m: EfficiencyModel) -> LowRankStep:
    """Seconds of one GaLore optimizer step over every trainable tensor on one GPU (module docstring)."""
    g = grad_bytes(setup)
    elem = state_elem_bytes(setup)
    dtype = gradient_dtype(setup)
    flops_per_s = best_gemm_rate(gpu, dtype, setup.model.hidden_size, m)
    bw = memory_bw(gpu, m)
    eight_bit = setup.optimizer is Optimizer.GALORE_ADAMW_8BIT
    state_bytes = 1 if eight_bit else elem       # per state element (8-bit: one byte, absmax apart)
    gemm = update = 0.0
    projected, plain = projected_weights(setup, setup.galore_rank)
    for group, low in projected:
        rows, cols = group.rows, group.cols
        big, small = max(rows, cols), min(rows, cols)
        r = low // big
        project = grouped_gemm_s(big, r, small, groups=group.count, in_bytes=g, out_bytes=g,
                                 flops_per_s=flops_per_s, bytes_per_s=bw)
        back = grouped_gemm_s(big, small, r, groups=group.count, in_bytes=g, out_bytes=elem,
                              flops_per_s=flops_per_s, bytes_per_s=bw)
        gemm += project + back
        # Adam on R: R read, m and v read and written, the normalised update written and read back
        adam = low * (2 * g + 4 * state_bytes + 2 * elem)
        # U * scale (read + write), then W += U (read W and U, write W); 8-bit: W cloned (read + write) first
        full = rows * cols * (2 * elem + 3 * elem + (2 * elem if eight_bit else 0))
        update += group.count * (adam + full) / bw
    base = Optimizer.ADAMW_8BIT if eight_bit else Optimizer.ADAMW_FUSED
    plain_s = plain * optimizer_bytes_per_param(replace(setup, optimizer=base)) / bw
    return LowRankStep(gemm_s=gemm, update_s=update, plain_s=plain_s, gemm_dtype=dtype)


def steps_said(steps: int) -> str:
    """How a low-rank optimizer's note says its steps per optimizer step (layer-wise: one per backward)."""
    return f"{steps} steps per optimizer step (one per backward: a per-parameter hook)" if steps > 1 else "one step"


def galore_note(setup: TrainingSetup, step: LowRankStep, steps: int) -> str:
    per = steps_said(steps)
    return (f"GaLore ({setup.optimizer}, rank {setup.galore_rank}): projections to and from the low-rank basis "
            f"{step.gemm_s * 1e3:.1f} ms in {step.gemm_dtype}, low-rank Adam and the full-size update "
            f"{step.update_s * 1e3:.1f} ms, plain Adam on the other tensors {step.plain_s * 1e3:.1f} ms; {per}; "
            "the basis SVD every update_proj_gap steps is not timed")
