"""One estimate: parameters, memory per GPU, time and cost of one setup, with its assumptions."""

from __future__ import annotations

from trainplan.frozen import asdict, field, frozen
from typing import Any

from trainplan.estimation.advice import Suggestion, suggestions
from trainplan.job.options import (Request, build_layout, build_setup, build_workload, check_headroom,
                              resolve_gpu, resolve_model)
from trainplan.memory import MemoryEstimate, ParallelConfig, estimate_memory
from trainplan.model.params import ParamCounts, count_params, default_lora_targets
from trainplan.job.frameworks import profile
from trainplan.specs import GpuSpec
from trainplan.job.training import Layout, TrainingSetup, Workload


@frozen
class Estimate:
    setup: TrainingSetup
    layout: Layout
    workload: Workload
    gpu: GpuSpec
    params: ParamCounts
    trainable_params: int
    memory: MemoryEstimate
    time: Any = None            # timing.TimeEstimate when the time model is available
    cost: Any = None            # cost.CostEstimate when a price is known
    suggestions: tuple[Suggestion, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def setup_dict(self) -> dict[str, Any]:
        s = self.setup
        out: dict[str, Any] = {
            "model": s.model.name, "method": str(s.method), "precision": str(s.precision),
            "optimizer": str(s.optimizer), "batch_size": s.batch_size, "grad_accum": s.grad_accum,
            "seq_len": s.seq_len, "grad_ckpt": str(s.grad_ckpt), "attention": str(s.attention),
            "framework": str(s.framework),
            "lora": None if s.lora is None else {"rank": s.lora.rank, "alpha": s.lora.alpha,
                                                 "dropout": s.lora.dropout,
                                                 "targets": list(s.lora.targets or default_lora_targets(s.model))},
            "quant": None if s.quant is None else {"kind": str(s.quant.kind), "double_quant": s.quant.double_quant},
            "freeze_layers": s.freeze_trainable_layers if str(s.method) == "freeze" else None,
            "implementation": {k: (str(v) if not isinstance(v, (bool, int, float)) else v)
                               for k, v in asdict(s.impl).items()},
            "gpu": self.gpu.id, "num_gpus": self.layout.num_gpus, "nodes": self.layout.nodes,
            "zero": int(self.layout.zero), "fsdp": str(self.layout.fsdp), "offload": str(self.layout.offload),
            "tp": self.layout.tp, "pp": self.layout.pp, "cp": self.layout.cp, "ep": self.layout.ep,
            "dp": self.layout.dp, "headroom": self.memory.headroom,
        }
        w = self.workload
        out.update({"samples": w.samples, "tokens_per_sample": w.tokens_per_sample, "epochs": w.epochs,
                    "packing": w.packing, "retry_factor": w.retry_factor})
        return out

    def to_dict(self) -> dict[str, Any]:
        memory = self.memory.to_dict()
        return {
            "setup": self.setup_dict(),
            "params": {"total": self.params.total, "trainable": self.trainable_params,
                       "components": self.params.as_dict()},
            "memory": memory,
            "time": None if self.time is None else self.time.to_dict(),
            "cost": None if self.cost is None else self.cost.to_dict(),
            "suggestions": [s.to_dict() for s in self.suggestions],
            "notes": list(self.notes),
        }


def run(req: Request) -> Estimate:
    headroom = check_headroom(req.headroom)
    spec = resolve_model(req.model)
    gpu = resolve_gpu(req.gpu)
    setup = build_setup(req, spec)
    layout = build_layout(req, gpu)
    workload = build_workload(req)
    parallel = ParallelConfig(sequence_parallel=req.sequence_parallel, virtual_stages=req.vpp,
                              uneven_pipeline=req.uneven_pipeline)
    memory = estimate_memory(setup, layout, gpu, headroom=headroom, parallel=parallel)
    tips = () if memory.fits else tuple(suggestions(setup, layout, gpu, memory, headroom))
    notes = [f"framework profile: {profile(setup.framework).summary}"]
    notes += list(memory.notes)
    notes += _assumption_notes(setup)
    time = cost = None
    try:
        from trainplan.estimation import bridge as timing_bridge
        time, cost, more = timing_bridge.time_and_cost(setup, layout, gpu, workload, req)
        notes += more
    except ImportError:
        notes.append("time and cost model not available in this build")
    if req.calibration:   # the fit `trainplan calibrate` stored, when one matches (a stat() when none)
        from trainplan.ledger.calibration import calibrate_all

        memory, time, cost, note = calibrate_all(memory, time, cost, setup, layout, gpu, req)
        if note:
            notes.append(note)
            tips = () if memory.fits else tuple(suggestions(setup, layout, gpu, memory, headroom))
    return Estimate(setup=setup, layout=layout, workload=workload, gpu=gpu, params=count_params(spec),
                    trainable_params=memory_trainable(setup), memory=memory, time=time, cost=cost,
                    suggestions=tips, notes=tuple(notes))


def memory_trainable(setup: TrainingSetup) -> int:
    from trainplan.memory.state import param_groups
    return param_groups(setup).trainable_params


def _assumption_notes(setup: TrainingSetup) -> list[str]:
    notes = [
        "activations follow what autograd saves in the Hugging Face modeling code on CUDA; "
        f"attention kernel {setup.attention}",
        f"loss: {setup.impl.loss}" + (" (fp32 upcast of the logits)" if setup.impl.loss_upcast else ""),
        "reserved = allocated x 1.10 + 256 MiB (caching allocator: the median of 16 measured H200 runs; "
        "calibrate with the ledger); "
        "device = reserved + 0.5 GiB CUDA context (+ NCCL buffers when multi-GPU)",
    ]
    if setup.model.model_type == "gemma2" and setup.attention.value == "eager":
        notes.append("gemma2: transformers refuses SDPA (soft-capped logits), so eager attention is "
                     "assumed unless --attention flash: the s x s softmax is kept per head")
    if setup.grad_accum > 1:
        notes.append("gradient accumulation > 1: gradients stay allocated through every micro-batch's forward")
    return notes
