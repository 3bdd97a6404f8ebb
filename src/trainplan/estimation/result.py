"""The answer for one job: parameters, memory per GPU, time and cost, with its assumptions."""

from __future__ import annotations

from trainplan.cost.bill import CostEstimate
from trainplan.enums import GALORE_OPTIMIZERS, Optimizer
from trainplan.estimation.advice import Suggestion
from trainplan.frozen import asdict, frozen
from trainplan.job.job import Job
from trainplan.job.sources import read_report, sources
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.memory.result import MemoryEstimate
from trainplan.model.params import ParamCounts, default_lora_targets
from trainplan.specs import GpuSpec
from trainplan.timing.estimate import TimeEstimate

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any


@frozen
class Estimate:
    job: Job
    params: ParamCounts
    trainable_params: int
    memory: MemoryEstimate
    time: TimeEstimate
    cost: CostEstimate | None = None     # None when the job has no price
    suggestions: tuple[Suggestion, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def setup(self) -> TrainingSetup:
        return self.job.setup

    @property
    def layout(self) -> Layout:
        return self.job.layout

    @property
    def gpu(self) -> GpuSpec:
        return self.job.gpu

    @property
    def workload(self) -> Workload:
        return self.job.workload

    def setup_dict(self) -> dict[str, Any]:
        s = self.setup
        out: dict[str, Any] = {
            "model": s.model.name, "method": str(s.method), "precision": str(s.precision),
            "optimizer": str(s.optimizer), "batch_size": s.batch_size, "grad_accum": s.grad_accum,
            "seq_len": s.seq_len, "grad_ckpt": str(s.grad_ckpt), "attention": str(s.attention),
            "framework": str(s.framework),
            "lora": None if s.lora is None else {"rank": s.lora.rank, "alpha": s.lora.alpha,
                                                 "dropout": s.lora.dropout,
                                                 "targets": list(s.lora.targets or default_lora_targets(s.model)),
                                                 "modules_to_save": list(s.lora.modules_to_save)},
            "quant": None if s.quant is None else {"kind": str(s.quant.kind), "double_quant": s.quant.double_quant},
            "freeze_layers": ((-1 if s.freeze_bottom else 1) * s.freeze_trainable_layers
                              if str(s.method) == "freeze" else None),
            "galore_rank": s.galore_rank if s.optimizer in GALORE_OPTIMIZERS else None,
            "apollo_rank": s.apollo_rank if s.optimizer is Optimizer.APOLLO_ADAMW else None,
            "implementation": {k: (str(v) if not isinstance(v, (bool, int, float)) else v)
                               for k, v in asdict(s.impl).items()},
            "gpu": self.gpu.id, "num_gpus": self.layout.num_gpus, "nodes": self.layout.nodes,
            "zero": int(self.layout.zero), "fsdp": str(self.layout.fsdp), "offload": str(self.layout.offload),
            "tp": self.layout.tp, "pp": self.layout.pp, "cp": self.layout.cp, "ep": self.layout.ep,
            "etp": self.layout.expert_tp,
            "dp": self.layout.dp, "headroom": self.memory.headroom,
        }
        w = self.workload
        out.update({"samples": w.samples, "tokens_per_sample": w.tokens_per_sample, "epochs": w.epochs,
                    "packing": w.packing, "retry_factor": w.retry_factor, "max_steps": w.steps,
                    "stage": self.job.options.stage if self.job.options else None,
                    "sequences_per_sample": s.sequences_per_sample, "reference_model": s.reference_model,
                    "grad_ckpt_every": s.grad_ckpt_every})
        out["sources"] = sources(self.job, everything=True)
        report = read_report(self.job)
        if report is not None:
            out["from"] = {k: v for k, v in report.items() if k != "settings"}
        return out

    def missing_cost(self) -> dict[str, Any] | None:
        """The `cost` JSON when no price is known: the keys with nulls, and how to give a price."""
        book = self.job.book
        if book is None:
            return None
        return {"currency": book.currency, "price_per_gpu_hour": None, "total": None, "provider": "",
                "per_hour": None, "per_step": None, "kind": book.kind_label, "missing": self.job.price_missing}

    def to_dict(self) -> dict[str, Any]:
        return {
            "setup": self.setup_dict(),
            "params": {"total": self.params.total, "trainable": self.trainable_params,
                       "components": self.params.as_dict()},
            "memory": self.memory.to_dict(),
            "time": self.time.to_dict(),
            "cost": self.cost.to_dict() if self.cost is not None else self.missing_cost(),
            "suggestions": [s.to_dict() for s in self.suggestions],
            "notes": list(self.notes),
        }
