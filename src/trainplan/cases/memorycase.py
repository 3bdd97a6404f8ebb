"""Memory cases (`kind == "memory"`): the case as a JobOptions (the flags `trainplan estimate` takes)
plus the memory view its measurement corresponds to.

Every field is read the same way for every source (cases/text.py): the framework by its names, the
settings the framework text states (`compile=True`, `--precision bf16-true`, `opt_in_bwd=False`,
...), precision from what the weights, master copy and optimizer states are kept in, the layout from
the parallel fields, then the framework profile for what the case leaves unsaid.
"""

from __future__ import annotations

import re

from trainplan import catalog
from trainplan.cases import data
from trainplan.cases.common import Skip, case_model, lora_dropout, lora_targets, nodes_for, text
from trainplan.cases.optimizer_text import framework_optimizer, galore_flags, memory_optimizer
from trainplan.cases.text import (
    attention_of,
    ckpt_every_of,
    embedded_settings,
    experts_of,
    framework_or_assumed,
    gpu_of,
    grad_ckpt_of,
    kbit_prep_fp32,
    pipeline_of,
    precision_of,
    quant_of,
)
from trainplan.cases.trainers import trainer_defaults, trainer_facts
from trainplan.enums import LOW_RANK_OPTIMIZERS, Framework, Optimizer
from trainplan.frozen import fields, frozen
from trainplan.job.frameworks import RUNS_TRANSFORMERS
from trainplan.job.options import JobOptions
from trainplan.model.params import named_targets
from trainplan.specs import GpuSpec
from trainplan.units import GIB

ALLOCATED, RESERVED, DEVICE = "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes"
_DS_CONFIG = re.compile(r"ds_config_zero([0-3])")


@frozen
class MemoryMapping:
    options: JobOptions
    view: str                 # the estimate's view compared with the measurement
    measured_bytes: int | None
    notes: tuple[str, ...]
    gpu_stated: bool = True   # False: a stand-in GPU (memory per GPU does not depend on its model)
    impl_facts: tuple[tuple[str, object], ...] = ()   # what the trainer's code fixes that no flag sets
                                                       # (cases.trainers.TRAINER_FACTS: fused_ce, fused_kernels...)


_OPTION_FIELDS = frozenset(f.name for f in fields(JobOptions))


def memory_view(what: str | None) -> tuple[str, str]:
    """(view, why) for a case's `measured.what`.

    max_memory_allocated, active bytes and peft's TorchTracemalloc (built on max_memory_allocated)
    are the allocated view; max_memory_reserved the reserved view; nvidia-smi / NVML the device
    view. torchtune's log_memory_stats logs active, allocated and reserved peaks and its README
    does not say which: its own flags table reports the active peak, so the allocated view. A
    "GPU memory" figure whose method is not stated is read as what nvidia-smi shows (device).
    """
    w = text(what)
    if "reserved" in w and "allocated" not in w:
        return RESERVED, "measured max_memory_reserved: reserved view"
    if "nvidia-smi" in w or "nvml" in w:
        return DEVICE, "measured by nvidia-smi/NVML: device view"
    if "allocated" in w or "active" in w or "tracemalloc" in w:
        return ALLOCATED, "measured max_memory_allocated (or active bytes): allocated view"
    if "log_memory_stats" in w:
        return ALLOCATED, ("torchtune log_memory_stats peak (active/allocated/reserved not stated): "
                           "allocated view, as torchtune's flags table reports the active peak")
    return DEVICE, "method not stated: read as GPU memory seen by nvidia-smi (device view)"


_DS_CONFIG = re.compile(r"(?:ds_config_zero|zero_?stage[ _=:]*|\bzero|ds_z)([0-3])\b")


def _named_zero_stage(case: dict) -> tuple[int, str | None]:
    """The ZeRO stage a DeepSpeed config named in the case's text means ("ds_config_zero3.json",
    "--deepspeed zero3", "ds_z3_config.json"), for a full-parameter run whose framework uses DeepSpeed."""
    words = " ".join(text(case.get(k)) for k in ("framework", "notes")) + " " + text((case.get("parallel") or {}).get("other"))
    found = _DS_CONFIG.search(words)
    if not found or case.get("method") not in ("full", "pretrain") or "deepspeed" not in words:
        return 0, None
    return int(found.group(1)), f"DeepSpeed ZeRO-{found.group(1)}: the config the case's text names"


_DIST_OPT = re.compile(r"distributed[ _-]optimi[sz]er|use[_-]distributed[_-]optimizer")


def _distributed_optimizer(case: dict) -> int:
    """1 when the case's text names Megatron's distributed optimizer (--use-distributed-optimizer, NeMo and
    Megatron-Bridge `use_distributed_optimizer`): optimizer states and fp32 master weights sharded over data
    parallel, ZeRO-1 (megatron/core/optimizer/distrib_optimizer.py)."""
    words = " ".join(text(case.get(k)) for k in ("optimizer", "framework", "notes", "precision")) + " " + \
        text((case.get("parallel") or {}).get("other"))
    return 1 if _DIST_OPT.search(words) else 0


def layout_flags(case: dict) -> dict:
    """The case's layout as JobOptions fields (num_gpus, nodes, zero, fsdp, offload, tp, pp, cp, ep, ...),
    for the memory and the time readers alike."""
    par = case.get("parallel") or {}
    count = int((case.get("gpus") or {}).get("count") or 1)
    named = par.get("fsdp")
    # FSDP said as a flag (true, "yes", "enabled") or in words ("fully sharded", "shard grad op")
    fsdp_text = "FSDP" if named is True or text(named).strip() in ("yes", "on", "enabled", "true") else \
        re.sub(r"(?<=SHARD)[ -](?=GRAD)|(?<=GRAD)[ -](?=OP)|(?<=FULL)Y?[ _-](?=SHARD)|(?<=HYBRID)[ -](?=SHARD)", "_",
               text(named).upper())
    zero = int(par.get("zero_stage") or 0)
    if par.get("zero_stage") is None:
        zero = _named_zero_stage(case)[0] or _distributed_optimizer(case)
    fsdp = "none"
    if fsdp_text.strip() and zero == 1 and par.get("zero_stage") is None:
        zero = 0                              # FSDP named: it shards the optimizer itself
    if "SHARD_GRAD_OP" in fsdp_text:
        zero = 2                              # FSDP SHARD_GRAD_OP = ZeRO-2 semantics
    elif "HYBRID" in fsdp_text:
        fsdp = "hybrid"
    elif "FULL_SHARD" in fsdp_text or ("FSDP" in fsdp_text and count > 1):
        fsdp = "full"
    off = text(par.get("offload")) + (" cpu_offload=true" if "cpu_offload=true" in fsdp_text.lower() else "")
    offload = "none"
    if "cpu_offload=true" in off or ("optimizer" in off and "param" in off) or ("fsdp" in off and "offload" in off):
        offload = "all"
    elif "optimizer" in off:
        offload = "optimizer"
    elif "param" in off:
        offload = "params"
    elif re.search(r"zero[- ]?infinity|\bfull offload|\ball\b", off):
        offload = "all"                       # ZeRO-Infinity: parameters and optimizer states off the GPU
    elif par.get("offload") is True or re.search(r"zero[- ]?offload|\b(?:yes|true|on|cpu offload|offload(?:ed)?)\b",
                                                 off) and not re.search(r"\b(?:no|none|false|off|not)\b", off):
        # offload said without what: FSDP's CPUOffload moves parameters, gradients and optimizer states; under
        # DeepSpeed it is ZeRO-Offload, the optimizer states and step on the CPU (Ren et al. 2021)
        offload = "all" if fsdp != "none" else "optimizer" if zero or par.get("zero_stage") else "none"
    if count == 1 and offload == "none":
        zero, fsdp = 0, "none"                # ZeRO/FSDP on one GPU shard nothing (DeepSpeed regime kept below)
    out = {"num_gpus": count, "nodes": nodes_for(count), "zero": zero, "fsdp": fsdp, "offload": offload,
           "tp": int(par.get("tp") or 1), "pp": int(par.get("pp") or 1), "cp": int(par.get("cp") or 1),
           "ep": int(par.get("ep") or 1)}
    # expert tensor parallel: as stated, else the trainer's recipe default, else (absent) the framework's
    etp = par.get("etp") or trainer_defaults(case)[0].get("etp")
    stage = count // max(1, out["pp"])
    if not etp and out["ep"] > 1 and out["tp"] > 1 and stage % (out["ep"] * out["tp"]) and not stage % out["ep"]:
        etp = 1      # the experts at tp do not fit the stated layout (world % (etp x ep x pp)): the run set 1
    if etp:
        out["etp"] = int(etp)
    sp = par.get("sp")
    if isinstance(sp, int) and sp > 1 and out["cp"] == 1:     # Ulysses (DeepSpeed/ms-swift/XTuner sequence parallel)
        out["ulysses"] = sp
    elif out["cp"] == 1 and re.search(r"\bring\b", text(sp)):
        # ring attention (EasyContext / ring-flash-attn, zigzag or not) splits each sequence over the ring's
        # GPUs and passes K/V around it: context parallelism over them ("ring attention over 8 GPUs")
        size = re.search(r"\b(\d+)\b", text(sp))
        out["cp"] = int(size.group(1)) if size else count
    words = text(par.get("other")) + " " + text(case.get("framework"))
    if count > 1 and re.search(r"device_map\W*(=|:)?\W*['\"]?(auto|balanced|sequential)", words):
        out["device_map"] = "auto"          # one copy of the model split layer-wise over the GPUs
    return out


def fsdp_version(par: dict) -> int | None:
    """1 or 2 when the case's FSDP text names the version ("FSDP1 full shard", "FSDP2 fully_shard")."""
    found = re.search(r"\bFSDP\s*([12])\b", text(par.get("fsdp")), re.I)
    return int(found.group(1)) if found else None


def grad_accum(case: dict, framework: Framework | None = None) -> int:
    """The case's accumulation steps; when not given, global batch / (micro-batch x data-parallel GPUs).

    Megatron takes no accumulation setting: it runs global batch // (micro-batch x data-parallel size)
    micro-batches per step (megatron/core/num_microbatches_calculator.py,
    ConstantNumMicroBatchesCalculator.__init__), so for Megatron a stated global batch, micro-batch and
    data-parallel size decide it, and a grad-accumulation figure that disagrees with them is not what ran."""
    par = case.get("parallel") or {}
    global_batch, micro = case.get("global_batch"), int(case.get("micro_batch") or 1)
    dp = int(par.get("dp") or 0) or data_parallel(case)
    if framework is Framework.MEGATRON and global_batch and case.get("micro_batch"):
        return max(1, int(global_batch) // (micro * dp))
    if case.get("grad_accum"):
        return int(case["grad_accum"])
    if not global_batch:
        return 1
    return max(1, int(global_batch) // (micro * dp))


def data_parallel(case: dict) -> int:
    """The data-parallel size a case's layout leaves when it does not state one: GPUs / (tensor x
    pipeline x context x Ulysses sequence parallel), each rank of which takes its own micro-batches."""
    flags = layout_flags(case)
    model_parallel = flags["tp"] * flags["pp"] * flags["cp"] * flags.get("ulysses", 1)
    return max(1, flags["num_gpus"] // max(1, model_parallel))


def map_memory_case(case: dict) -> MemoryMapping:
    """The memory case as a JobOptions and the view to compare; Skip with the reason otherwise."""
    lora = case.get("lora") or {}
    framework, assumed = framework_or_assumed(case)
    said, said_notes = embedded_settings(case.get("framework"))
    defaults, default_notes = trainer_defaults(case)
    said = {**defaults, **said}
    seq_len = int(case.get("seq_len") or 0)
    if said.get("packing") is False:
        # the peak is set by the longest micro-batch: the longest sample of the catalog dataset the text
        # names (cases.data.dataset), padded; without one the case does not give it
        stats = data.dataset(case)
        if stats is None:
            raise Skip("unpacked dataset: the peak is set by the longest batch, which the case does not give "
                       "(seq_len is only the maximum)")
        seq_len = min(seq_len, stats.max_tokens) if seq_len else 0
        said_notes = [*said_notes, f"unpacked: the peak micro-batch is padded to the longest sample, "
                                   f"{seq_len:,} tokens; " + stats.describe()]
    spec, how = case_model(case)
    gpu, gnote, gpu_stated = _memory_gpu(case)
    if not case.get("seq_len") or not case.get("micro_batch"):
        raise Skip("sequence length or micro-batch not given")
    notes = [f"model: {how}", assumed or f"framework: {framework} (named in the case's framework text)"] + said_notes
    notes += [gnote] if gnote else []
    layout = layout_flags(case)
    par = case.get("parallel") or {}
    zero_named = int(par.get("zero_stage") or 0) or _named_zero_stage(case)[0]    # before the 1-GPU reset
    sharded = zero_named > 0 or layout["fsdp"] != "none"
    precision, load_fp32, pnote = precision_of(case, framework, sharded)
    precision = said.pop("precision", precision)
    notes += [pnote] if pnote else []
    zero_note = _named_zero_stage(case)[1] if (case.get("parallel") or {}).get("zero_stage") is None else None
    notes += [zero_note] if zero_note else []
    optimizer, onote = memory_optimizer(case.get("optimizer"))
    optimizer = framework_optimizer(optimizer, framework)
    notes += [onote] if onote else []
    quant, double_quant, qnote = quant_of(case)
    notes += [qnote] if qnote else []
    if load_fp32 is None and kbit_prep_fp32(case, framework):   # the rule shared with the time reader
        load_fp32 = True
        notes.append("QLoRA recipe (peft prepare_model_for_kbit_training) casts the non-quantized weights to fp32")
    method = "full" if case["method"] == "pretrain" else case["method"]
    if framework in (Framework.HF, Framework.PYTORCH) and zero_named and layout["num_gpus"] == 1 \
            and precision != "fp32":
        framework = Framework.DEEPSPEED
        notes.append("DeepSpeed on one GPU: 16-bit weights with fp32 master weights and Adam states, nothing sharded")
    flags: dict = {}
    if method in ("lora", "qlora"):
        if not isinstance(lora, dict) or not lora.get("rank"):
            raise Skip("LoRA rank not given")
        targets, tnote = lora_targets(case)
        targets = named_targets(spec, targets)      # litgpt's query/value/mlp as the model's module names
        notes += [tnote] if tnote else []
        flags.update(lora_rank=int(lora["rank"]), lora_alpha=float(lora.get("alpha") or 2 * lora["rank"]),
                     lora_dropout=lora_dropout(case, framework), lora_targets=targets or None,
                     dora=bool(case.get("dora")))
        if lora.get("modules_to_save"):     # peft's trained copies (model.params.saved_modules reads the names)
            saved = lora["modules_to_save"]
            flags["modules_to_save"] = saved if isinstance(saved, str) else tuple(str(n) for n in saved)
            notes.append(f"LoRA modules_to_save {lora['modules_to_save']}: fully trained copies beside the adapters")
    flags.update({k: v for k, v in said.items() if k in ("compile", "optimizer_in_backward", "activation_offload",
                                                         "loss", "liger")})
    if "activation offload" in text((case.get("parallel") or {}).get("offload")):
        flags["activation_offload"] = True
    if framework in RUNS_TRANSFORMERS and spec.moe is not None:
        flags["experts_implementation"] = str(experts_of(case))   # as the time reader: 4.x's loop unless v5
    facts, fact_notes = trainer_facts(case)     # what the trainer's code fixes (cases.trainers.TRAINER_FACTS)
    flags.update({k: v for k, v in facts.items() if k in _OPTION_FIELDS})
    impl_facts = tuple(sorted((k, v) for k, v in facts.items() if k not in _OPTION_FIELDS))
    notes += fact_notes
    if "optimizer" in said and optimizer is None:
        optimizer = Optimizer(said["optimizer"])
    if "into backward" in text(case.get("optimizer")) or "optimizer_in_bwd=true" in text(case.get("optimizer")):
        flags["optimizer_in_backward"] = True
    if optimizer in LOW_RANK_OPTIMIZERS:
        flags.update(galore_flags(case.get("optimizer"), notes, apollo=optimizer is Optimizer.APOLLO_ADAMW))
    measured = case.get("measured") or {}
    view, why = memory_view(measured.get("what"))
    notes.append(why)
    gib_value = measured.get("peak_mem_gib")
    grad_ckpt = grad_ckpt_of(case.get("grad_ckpt"), framework)
    if grad_ckpt is None and "grad_ckpt" in defaults:
        notes += default_notes
    grad_ckpt = grad_ckpt or said.get("grad_ckpt")
    micro, accum = int(case["micro_batch"]), grad_accum(case, framework)
    if layout["pp"] > 1:          # the time reader's rule: a pipelined run's micro-batches and schedule
        micro, accum, schedule, stages, pp_notes = pipeline_of(case, framework, layout["pp"], micro, accum)
        flags.update(vpp=stages, pp_schedule=schedule.value if schedule else None)
        notes += pp_notes
    options = JobOptions(model=spec, method=method, precision=precision,
                         optimizer=None if optimizer is None else optimizer.value,
                         quant=quant, double_quant=double_quant, batch_size=micro,
                         grad_accum=accum, seq_len=seq_len,
                         grad_ckpt=grad_ckpt, grad_ckpt_every=ckpt_every_of(case.get("grad_ckpt")),
                         attention=attention_of(case.get("attention")),
                         framework=framework.value, load_fp32=load_fp32, gpu=gpu, stage=case.get("stage"),
                         **layout, **flags)
    return MemoryMapping(options=options, view=view, notes=tuple(notes), gpu_stated=gpu_stated,
                         impl_facts=impl_facts,
                         measured_bytes=None if gib_value is None else int(round(float(gib_value) * GIB)))


_STAND_IN_GPU = "a100-sxm4-80gb"


def _memory_gpu(case: dict) -> tuple[GpuSpec, str | None, bool]:
    """The case's GPU; where it names none, a stand-in: the bytes a setup allocates per GPU do not
    depend on the GPU's model (only its capacity, which is then left unchecked). A sharded run that
    names neither its GPU type nor count leaves the sharding unknown: Skip."""
    gpus = case.get("gpus") or {}
    if str(gpus.get("type") or "").strip().lower() not in ("", "not stated", "unknown", "none"):
        return (*gpu_of(case), True)
    words = " ".join(text(v) for v in (case.get("framework"), (case.get("parallel") or {}).get("other")))
    if not gpus.get("count") and case.get("method") in ("full", "pretrain") and \
            any(w in words for w in ("deepspeed", "fsdp", "zero")):
        raise Skip("GPU type and count not stated for a sharded (DeepSpeed/FSDP) run: the sharding is unknown")
    gpu = catalog.resolve_gpu(_STAND_IN_GPU)
    return gpu, (f"GPU not stated: memory per GPU does not depend on the GPU's model; {gpu.id} stands in "
                 "(its capacity unchecked)"), False
