"""APOLLO's optimizer step on the GPU (Zhu et al. 2024, arXiv 2412.05270; apollo_torch apollo.py APOLLOAdamW,
random_projector.py; memory.state has the shapes).

Per projected weight W (m x n, gradient G, a seeded random matrix P of r' = min(r, m, n) rows, GaLore's sides):

    R = G P^T (or P^T G)                    a GEMM of max(m, n) x r' x min(m, n), reading G
    Adam on R                                two states of max(m, n) x r', the normalised R' = m / (sqrt(v) + eps)
    s = ||R'|| / ||R|| along each channel    norms of the low-rank tensors
    U = G * s, the norm-growth limiter,      full-size passes: the product written, its norm read, divided,
    U *= sqrt(scale), W += -lr U, W decay    scaled, added to W (reading W and U), and W's weight decay

The GEMM runs in the gradient's dtype (fp32 under the HF Trainer's mixed precision, at the fp32 peak), timed as
compute at the GPU's best-GEMM rate plus its operands' traffic (trainplan.timing.moe.grouped_gemm_s); the rest as
memory traffic. The other trainable tensors take APOLLOAdamW's own Adam loop, one kernel per operation (eleven
passes, 22 element reads and writes). Not timed, said in a note: the random matrix drawn again every
update_proj_gap steps (torch.randn of r' x min(m, n), a few milliseconds amortised over 200 steps).
"""

from __future__ import annotations

from trainplan.job.training import TrainingSetup
from trainplan.specs import GpuSpec
from trainplan.timing.efficiency import EfficiencyModel, memory_bw
from trainplan.timing.galore import LowRankStep, best_gemm_rate, gradient_dtype, projected_weights, steps_said
from trainplan.timing.moe import grouped_gemm_s
from trainplan.timing.traffic import grad_bytes, state_elem_bytes

# APOLLOAdamW's plain-tensor branch per element: exp_avg mul_ (1 read, 1 write) and add_ (2, 1), exp_avg_sq mul_
# (1, 1) and addcmul_ (2, 1), sqrt (1, 1), add_ eps (1, 1), exp_avg / denom (2, 1), p.add_ (2, 1), weight decay (1, 1)
ADAM_LOOP_ACCESSES = 22


def apollo_step(setup: TrainingSetup, gpu: GpuSpec, m: EfficiencyModel) -> LowRankStep:
    """Seconds of one APOLLO step over every trainable tensor on one GPU (module docstring): the projections,
    low-rank Adam with the channel norms, the full-size scaling and update, Adam on the rest."""
    g = grad_bytes(setup)
    elem = state_elem_bytes(setup)
    dtype = gradient_dtype(setup)
    flops_per_s = best_gemm_rate(gpu, dtype, setup.model.hidden_size, m)
    bw = memory_bw(gpu, m)
    gemm = update = 0.0
    projected, plain = projected_weights(setup, setup.apollo_rank)
    for group, low in projected:
        rows, cols = group.rows, group.cols
        big, small = max(rows, cols), min(rows, cols)
        gemm += grouped_gemm_s(big, low // big, small, groups=group.count, in_bytes=g, out_bytes=g,
                               flops_per_s=flops_per_s, bytes_per_s=bw)
        # Adam on R (R read, m and v read and written, R' written) and the two channel norms (R and R' read)
        adam = low * (g + 4 * elem + elem + g + elem)
        # G * s (G read, U written), ||U|| (read), U / limiter and U * sqrt(scale) (a read and a write each),
        # W += -lr U (W and U read, W written), weight decay (W read and written)
        full = rows * cols * (2 * g + g + 4 * g + (2 * elem + g) + 2 * elem)
        update += group.count * (adam + full) / bw
    return LowRankStep(gemm_s=gemm, update_s=update, plain_s=plain * ADAM_LOOP_ACCESSES * elem / bw, gemm_dtype=dtype)


def apollo_note(setup: TrainingSetup, step: LowRankStep, steps: int) -> str:
    per = steps_said(steps)
    return (f"APOLLO (rank {setup.apollo_rank}): random projections {step.gemm_s * 1e3:.1f} ms in {step.gemm_dtype}, "
            f"low-rank Adam and the channel-wise scaling of the full gradient {step.update_s * 1e3:.1f} ms, Adam on "
            f"the other tensors {step.plain_s * 1e3:.1f} ms; {per}; the random matrix drawn every update_proj_gap "
            "steps is not timed")
