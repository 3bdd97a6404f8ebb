"""Model-card time cases: GPU-hours of a pre-training run from its total tokens (trainplan.cases.timecase
maps every other time case), and Mapped, what a time case maps to.

Moved from trainplan.cases.timecase (which imports it from here) to keep that module under ~400 lines.
"""

from __future__ import annotations

import math

from trainplan.cases.common import GPUS_PER_NODE, Skip, text
from trainplan.cases.text import schedule_in_text
from trainplan.enums import Attention, Framework, GradCkpt, Optimizer, ZeroStage
from trainplan.frozen import frozen, replace
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.memory import estimate_memory
from trainplan.memory.parallel import ParallelConfig
from trainplan.specs import GpuSpec
from trainplan.timing.estimate import TimingOptions

CARD_GPUS = 2048   # Llama 1 paper (Touvron et al. 2023a, section 2.4): 2048 A100-80GB for LLaMA-65B
CARD_BATCH_TOKENS = 16 * 2**20   # Llama 3 paper (Dubey et al. 2024, section 3.4.1): 16M-token batches


@frozen
class Mapped:
    setup: TrainingSetup
    layout: Layout
    gpu: GpuSpec
    workload: Workload
    options: TimingOptions
    metric: str
    measured: float | None
    note: str = ""



def model_card_case(case, spec, gpu, method, precision, impl, options) -> Mapped:
    """Model-card GPU-hours: pre-training of `tokens_total` tokens at the card's sequence length.

    What the card (or the paper beside it) states is used: the GPU count, tensor/pipeline/context/expert
    parallelism, the global batch. The rest is assumed (stated, not fitted): a Megatron-class stack with
    selective recomputation, one sequence per micro-batch, 2048 GPUs on 8-GPU nodes (Meta's LLaMA-65B
    cluster), the card's global batch (else Llama 3's 16M tokens), tensor parallelism 8 inside the node
    for models of hidden size >= 8192 and otherwise just enough to give every data-parallel rank one
    sequence, expert parallelism over one node's 8 GPUs for an MoE model (the all-to-all inside NVLink) with
    the experts unsplit by tensor parallelism (expert tensor parallel 1, as Megatron-Bridge's MoE recipes set it),
    the distributed optimizer (ZeRO-1) across data parallel, gradient accumulation for the rest. Where that layout
    does not fit the GPU's memory (trainplan.memory) and the card states neither, tensor parallelism grows inside
    the node (doubling, up to 8) and then pipeline parallelism across nodes (depths that divide the layers, or powers
    of two with an uneven split: Megatron's --decoder-first/last-pipeline-num-layers), the
    first that fits: Narayanan et al. 2021 (Megatron-LM, SC21), takeaway 1, "use tensor model parallelism up to
    degree g when using g-GPU servers, then pipeline model parallelism across servers"; Llama 3 405B ran tensor 8
    and pipeline 16 on 80 GB H100s (Dubey et al. 2024, Table 4), not one 400 GB rank.
    Inter-node: 200 Gb/s per GPU for A100 (Llama 2 paper: RSC InfiniBand and production RoCE, '200 Gbps
    end-points'), 400 Gb/s NDR for H100.
    """
    m = case["measured"]
    seq = case["seq_len"]
    if not m.get("tokens_total"):
        raise Skip("GPU-hours without the run's total tokens")
    par = case.get("parallel") or {}
    count = int((case.get("gpus") or {}).get("count") or CARD_GPUS)
    cp = int(par.get("cp") or 1)
    if case.get("global_batch"):
        sequences = int(case["global_batch"])
    else:
        batch_tokens = m.get("global_batch_tokens") or CARD_BATCH_TOKENS
        sequences = 2 ** round(math.log2(batch_tokens / seq))       # "4M tokens" = 2^22 = 1024 x 4096

    def card_layout(pp: int, tp: int | None = None,
                    ckpt: GradCkpt = GradCkpt.SELECTIVE) -> tuple[TrainingSetup, Layout]:
        ranks = max(1, count // (pp * cp))
        tp = tp or int(par.get("tp") or (8 if spec.hidden_size >= 8192 else max(1, min(8, ranks // sequences))))
        dp = max(1, ranks // tp)
        ep = 1
        if spec.moe is not None:
            ep = int(par.get("ep") or min(GPUS_PER_NODE, spec.moe.num_experts))
            ep = max(1, min(ep, dp * cp, spec.moe.num_experts))
        setup = TrainingSetup(model=spec, method=method, precision=precision, optimizer=Optimizer.ADAMW_FUSED,
                              batch_size=1, seq_len=seq, grad_accum=max(1, sequences // dp),
                              grad_ckpt=ckpt, attention=Attention.FLASH, framework=Framework.MEGATRON,
                              impl=impl)
        return setup, Layout(gpu_id=gpu.id, num_gpus=count, nodes=max(1, count // GPUS_PER_NODE),
                             zero=ZeroStage.OPTIMIZER, tp=tp, pp=pp, cp=cp, ep=ep, etp=1)

    setup, layout = card_layout(int(par.get("pp") or 1))
    grown = ""
    if not (par.get("pp") or par.get("tp")) and not estimate_memory(setup, layout, gpu).fits:
        tps = [t for t in (2, 4, 8) if t > layout.tp and spec.num_heads % t == 0]
        depths = [d for d in range(2, spec.num_layers + 1) if count % (d * cp * 8) == 0
                   and (spec.num_layers % d == 0 or d & (d - 1) == 0)]    # uneven: Megatron's first/last stage sizes
        shapes = [(1, t) for t in tps] + [(d, 8) for d in depths]
        # then full recomputation, on the same shapes: 1F1B keeps about one micro-batch of every layer's
        # selective activations on the first stage whatever the depth, so depth alone may never fit
        for ckpt, (depth, width) in [(c, s) for c in (GradCkpt.SELECTIVE, GradCkpt.FULL) for s in [(1, layout.tp)]
                                     + shapes][1:]:
            candidate = card_layout(depth, width, ckpt)
            if estimate_memory(*candidate, gpu, parallel=ParallelConfig(uneven_pipeline=True)).fits:
                setup, layout = candidate
                grown = (" (tensor, then pipeline, parallelism grown until it fits the GPU"
                         + (", with full recomputation)" if ckpt is GradCkpt.FULL else ")"))
                break
        else:
            grown = " (no layout of tensor, pipeline and recomputation found that fits the GPU)"
    tp, pp, ep, grad_accum = layout.tp, layout.pp, layout.ep, setup.grad_accum
    interconnect = "ib-ndr" if gpu.generation == "hopper" else "roce-200"
    samples = int(m["tokens_total"] // seq)
    workload = Workload(samples=samples, tokens_per_sample=seq, packing=True)
    stated = [f"{k} {par[k]}" for k in ("tp", "pp", "cp", "ep") if par.get(k)]
    note = (f"{count} GPUs ({'stated' if (case.get('gpus') or {}).get('count') else 'assumed'}), tp {tp}, "
            f"pp {pp}, cp {cp}, ep {ep}, grad-accum {grad_accum}{grown}"
            + (f"; stated: {', '.join(stated)}" if stated else ""))
    # the pipeline schedule the card names (DualPipe for DeepSeek-V3), where its stated depth carries it
    schedule = schedule_in_text(" ".join(text(v) for v in (par.get("other"), case.get("framework"))))
    if schedule is not None and pp > 1 and par.get("pp"):
        options = replace(options, pp_schedule=schedule)
        note += f"; pipeline schedule {schedule.value} as the card names it"
    return Mapped(setup=setup, layout=layout, gpu=gpu, workload=workload,
                  options=replace(options, interconnect=interconnect), metric="gpu_hours", measured=m["gpu_hours"],
                  note=note)
