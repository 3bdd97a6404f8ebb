"""Megatron's communication overlap (Implementation.comm_overlap), as NeMo's and Megatron-Bridge's recipes
switch it on (Megatron-LM leaves each knob off by default):

- Tensor parallel (`tp_comm_overlap`, Transformer Engine userbuffers, with sequence parallelism): "The TP
  communication without direct computation dependency are overlapped with the computation in bulk ... The
  other TP communications with direct computation dependency are overlapped in a pipelined fashion", the
  collective and its GEMM split into chunks (NeMo docs features/optimizations/communication_overlap,
  Tensor-parallel Communication Overlap). Counted exposed: one chunk of tp per collective, tp_s / tp.
- Data parallel (distributed optimizer with `overlap_grad_reduce` and `overlap_param_gather`): "The DP
  communication is chunked by the granularity of a Transformer layer and overlaps each communication chunk
  with computation. This overlap method exposes only one DP communication chunk ... When training with
  pipeline parallelism, the granularity of DP communication becomes the Transformer layers per virtual
  pipeline stage" (the same page; Megatron-Bridge docs/training/communication-overlap.md). Exposed: one
  chunk of each, plus whatever the compute they overlap cannot cover: the reduction runs under the last
  micro-batch's backward, the all-gather under the next step's first forward; no more than without overlap.
- Pipeline parallel: with virtual stages the sends and receives run under the interleaved schedule's
  compute (`overlap_p2p_comm`); without them they are batched and exposed. This one is Megatron-LM's own
  default, not only the recipes': megatron/training/arguments.py declares `--no-overlap-p2p-communication`
  (store_false, so overlap_p2p_comm defaults to True) and turns it off for a non-interleaved schedule;
  Megatron-Bridge does the same (src/megatron/bridge/training/comm_overlap.py, "PP overlap selection").
- Expert all-to-all (`--overlap-moe-expert-parallel-comm`, Megatron-Bridge `moe_a2a_overlap`; Megatron-Core
  docs "Combined 1F1B: Expert-Parallel All-to-All Overlap", core/pipeline_parallel/combined_1f1b.py): the
  forward of one micro-batch is co-scheduled layer by layer with the backward of another, "EP A2A in forward
  step is hidden by the attention/mlp computation in the backward step, and vice versa". Only micro-batches
  in the steady 1F1B phase are paired: without pipelining the first forward and the last backward run alone
  (1 of m unpaired); under the interleaved schedule the warm-up forwards and cool-down backwards,
  (pp - 1) x 2 + (v - 1) x pp model chunks of the m x v (Megatron's num_warmup_microbatches for the first
  stage). A paired micro-batch's all-to-alls hide behind the other micro-batch's compute, up to that compute.
"""

from __future__ import annotations

from trainplan.frozen import replace
from trainplan.job.training import Layout
from trainplan.timing.comm import CommTimes


def megatron_overlap(comm: CommTimes, layout: Layout, *, layers_stage: int, virtual_stages: int,
                     fwd_s: float, bwd_s: float, tp_dp: bool, notes: list[str]) -> CommTimes:
    """`comm` with what Megatron's overlap hides taken out of its exposed parts (see the module docstring):
    the pipeline sends always (Megatron-LM's default), the tensor- and data-parallel traffic when `tp_dp`
    (Implementation.comm_overlap). `fwd_s`, `bwd_s`: one micro-batch's forward and backward on this GPU."""
    chunks = max(1, virtual_stages if layout.pp > 1 and virtual_stages > 1 else layers_stage)
    pp_hidden = comm.pp_s if layout.pp > 1 and virtual_stages > 1 else 0.0
    out = replace(comm, pp_hidden_s=pp_hidden)
    tp_hidden = 0.0
    if tp_dp:
        tp_hidden = comm.tp_s * (1.0 - 1.0 / layout.tp) if layout.tp > 1 else 0.0
        dp_exposed = max(0.0, comm.dp_s - bwd_s) + comm.dp_s / chunks
        gather_exposed = max(0.0, comm.gather_s - fwd_s) + comm.gather_s / chunks
        out = replace(out, tp_hidden_s=tp_hidden, dp_exposed_s=min(comm.dp_exposed_s, dp_exposed),
                      gather_exposed_s=min(comm.gather_exposed_s, gather_exposed))
    if tp_hidden:
        notes.append(f"Megatron communication overlap: tensor-parallel collectives under the GEMMs, one chunk of "
                     f"{layout.tp} exposed ({comm.tp_s - tp_hidden:.3g} of {comm.tp_s:.3g} s per step)")
    if tp_dp and (comm.dp_s or comm.gather_s):
        notes.append(f"Megatron communication overlap: gradient reduction and parameter all-gather in {chunks} "
                     f"chunks, one exposed with what compute cannot cover "
                     f"({out.dp_exposed_s + out.gather_exposed_s:.3g} s per step)")
    if pp_hidden:
        notes.append(f"Megatron communication overlap: pipeline sends under the interleaved schedule's compute "
                     f"({pp_hidden:.3g} s per step hidden)")
    return out


def moe_a2a_overlap(comm: CommTimes, layout: Layout, *, micro_batches: int, virtual_stages: int,
                    compute_mb_s: float, notes: list[str], dual_pipe: bool = False) -> CommTimes:
    """`comm` with the expert all-to-alls that Megatron's combined 1F1B hides taken out (module docstring).
    `compute_mb_s`: one micro-batch's forward and backward on this GPU, the window a paired one hides in."""
    if comm.ep_s <= 0 or micro_batches < 1:
        return comm
    v = max(1, virtual_stages) if layout.pp > 1 else 1
    chunks = micro_batches * v
    alone = min(chunks, (layout.pp - 1) * 2 + (v - 1) * layout.pp if layout.pp > 1 and v > 1 else 1)
    paired = (chunks - alone) / chunks
    per_mb = comm.ep_s / micro_batches
    hidden = paired * micro_batches * min(per_mb, compute_mb_s)
    how = "DualPipe's overlapped chunks" if dual_pipe else "Megatron expert all-to-all overlap (combined 1F1B)"
    notes.append(f"{how}: {chunks - alone} of {chunks} micro-batch "
                 f"passes paired, {hidden:.3g} of {comm.ep_s:.3g} s of all-to-all per step under the other "
                 "micro-batch's compute")
    return replace(comm, ep_hidden_s=hidden)
