"""Muon's optimizer step on the GPU (Moonlight examples/toy_train.py, as LLaMA-Factory, ms-swift and axolotl
run it; torch.optim.Muon the same arithmetic; memory.state has the states and temporaries).

Per 2-D decoder weight W (m x n, gradient G in the gradient's dtype, k = min(m, n), K = max(m, n)):

    buf = momentum * buf + G; G' = G + momentum * buf     the momentum and Nesterov update, elementwise
    X = bf16(G') / ||G'||, transposed to k x K            a copy in bf16 and a norm
    NS_STEPS times:                                        `zeropower_via_newtonschulz5`
        A = X X^T                                          a GEMM of k x k x K
        B = b A + c A A                                    a GEMM of k x k x k and two scaled sums
        X = a X + B X                                      a GEMM of k x K x k and a scaled sum
    W = W (1 - lr wd) - lr' X                              weight decay and the update, in place

The GEMMs run in bf16 whatever the model's dtype, each timed as compute at the GPU's best-GEMM rate (MAMF x
sustained, the routed experts' grouped-GEMM rule: trainplan.timing.moe.grouped_gemm_s) plus its operands'
traffic; the elementwise passes as memory traffic. The embeddings, head and vectors take Moonlight's own AdamW
loop, one unfused elementwise kernel per operation (eight of them, 20 element reads and writes), and so do routed
experts stored as one 3-D tensor (transformers 5): LLaMA-Factory gives Muon `param.ndim == 2` only; ms-swift's and
axolotl's `ndim >= 2` would hand Moonlight's Muon the 3-D tensor, which it flattens to (experts, rest) and
orthogonalises as one wide matrix, not modelled.

Every GPU orthogonalises every matrix: none of these implementations splits the work over data parallel ranks
(Moonlight's paper does, in a distributed Muon that trainplan does not model).
"""

from __future__ import annotations

from trainplan.frozen import frozen
from trainplan.job.training import TrainingSetup
from trainplan.memory.state import param_groups
from trainplan.specs import GpuSpec
from trainplan.timing.efficiency import EfficiencyModel, memory_bw
from trainplan.timing.galore import best_gemm_rate
from trainplan.timing.moe import grouped_gemm_s
from trainplan.timing.traffic import state_elem_bytes

# zeropower_via_newtonschulz5's iterations: ns_steps=5 in Moonlight's Muon, LLaMA-Factory's and axolotl's copies
# (Muon.__init__) and torch.optim.Muon (ns_steps=5)
NS_STEPS = 5
BF16 = 2
# Moonlight's AdamW loop per element: lerp_ (2 reads, 1 write), square (1, 1), lerp_ (2, 1), sqrt (1, 1),
# eps + (1, 1), divide (2, 1), weight decay mul_ (1, 1), add_ (2, 1)
ADAMW_LOOP_ACCESSES = 20


@frozen
class MuonStep:
    """One Muon optimizer step on one GPU."""

    gemm_s: float           # the Newton-Schulz GEMMs
    elementwise_s: float    # momentum, the bf16 copy and norm, the iterations' scaled sums, the weight update
    adamw_s: float          # the tensors Muon leaves to AdamW
    ns_flops: float

    @property
    def total_s(self) -> float:
        return self.gemm_s + self.elementwise_s + self.adamw_s


def newton_schulz_flops(rows: int, cols: int, steps: int = NS_STEPS) -> float:
    """FLOPs of orthogonalising one rows x cols matrix: per iteration 2 k^2 K (X X^T) + 2 k^3 (A A) + 2 k^2 K (B X)."""
    k, big = min(rows, cols), max(rows, cols)
    return steps * (4.0 * k * k * big + 2.0 * k ** 3)


def muon_step(setup: TrainingSetup, gpu: GpuSpec, m: EfficiencyModel) -> MuonStep:
    """Seconds of one Muon step over every trainable tensor on one GPU (module docstring)."""
    elem = state_elem_bytes(setup)
    flops_per_s = best_gemm_rate(gpu, "bf16", setup.model.hidden_size, m)
    bw = memory_bw(gpu, m)
    gemm = moved = flops = 0.0
    adamw = 0
    for group in param_groups(setup).trainable:
        if not group.projectable:
            adamw += group.numel
            continue
        k, big = min(group.rows, group.cols), max(group.rows, group.cols)
        n = group.count
        per_iteration = (grouped_gemm_s(k, k, big, groups=n, in_bytes=BF16, out_bytes=BF16,
                                        flops_per_s=flops_per_s, bytes_per_s=bw)
                         + grouped_gemm_s(k, k, k, groups=n, in_bytes=BF16, out_bytes=BF16,
                                          flops_per_s=flops_per_s, bytes_per_s=bw)
                         + grouped_gemm_s(k, big, k, groups=n, in_bytes=BF16, out_bytes=BF16,
                                          flops_per_s=flops_per_s, bytes_per_s=bw))
        gemm += NS_STEPS * per_iteration
        flops += n * newton_schulz_flops(group.rows, group.cols)
        mn, kk = k * big, k * k
        # momentum mul_ + add_ (5 x elem), Nesterov add (3 x elem), the bf16 copy (elem read, 2 written; none when
        # the gradient is bf16 already), the norm (a read) and the division (a read and a write)
        before = mn * (8 * elem + (elem + BF16 if elem != BF16 else 0) + 3 * BF16)
        # per iteration: b A and c (A A) (a read and a write each) and their sum (2 reads, 1 write) on k x k;
        # a X (read, write) and its sum with B X (2 reads, 1 write) on k x K
        iterations = NS_STEPS * (7 * kk + 5 * mn) * BF16
        # weight decay mul_ (read, write W) and add_ of the bf16 update (read W and X, write W)
        after = mn * (2 * elem + 2 * elem + BF16)
        moved += n * (before + iterations + after)
    return MuonStep(gemm_s=gemm, elementwise_s=moved / bw, adamw_s=adamw * ADAMW_LOOP_ACCESSES * elem / bw,
                    ns_flops=flops)


def muon_note(step: MuonStep, steps: int) -> str:
    per = f"{steps} steps per optimizer step (one per backward: a per-parameter hook)" if steps > 1 else "one step"
    return (f"Muon: {NS_STEPS} Newton-Schulz iterations on every 2-D weight, {step.ns_flops / 1e12:.2f} TFLOP in "
            f"bf16, {step.gemm_s * 1e3:.1f} ms; momentum, copies and the update {step.elementwise_s * 1e3:.1f} ms; "
            f"AdamW on the rest (embeddings, head, vectors, 3-D expert weights) {step.adamw_s * 1e3:.1f} ms; {per}; "
            "every GPU "
            "orthogonalises every matrix (no split over data parallel ranks)")
