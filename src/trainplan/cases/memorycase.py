"""Memory cases (`kind == "memory"`): the case as a JobOptions (the flags `trainplan estimate` takes)
plus the memory view its measurement corresponds to.

Framework flags come from the case: litgpt `--precision bf16-true`; torchtune's recipe flags
(compile, chunked CE, activation checkpointing, optimizer-in-backward, activation offloading,
8-bit / paged AdamW); Qwen finetune.py (HF Trainer + peft, the model loaded in bf16 by its remote
code, DeepSpeed where the case says so); PEFT's example scripts (fp32 weights, no mixed precision).
"""

from __future__ import annotations

import re

from trainplan.cases.common import (
    Skip,
    case_framework,
    case_gpu,
    case_grad_ckpt,
    case_model,
    lora_dropout,
    lora_targets,
    memory_optimizer,
    nodes_for,
    text,
)
from trainplan.enums import Framework
from trainplan.frozen import frozen
from trainplan.job.options import JobOptions
from trainplan.units import GIB

ALLOCATED, RESERVED, DEVICE = "peak_allocated_bytes", "peak_reserved_bytes", "device_bytes"
_DS_CONFIG = re.compile(r"ds_config_zero([0-3])")


@frozen
class MemoryMapping:
    options: JobOptions
    view: str                 # the estimate's view compared with the measurement
    measured_bytes: int | None
    notes: tuple[str, ...]


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


def _precision(case: dict, framework: Framework) -> tuple[str | None, bool | None, str | None]:
    """(--precision, --load-fp32, note) from the case's precision fields."""
    prec = case.get("precision") or {}
    weights, compute = text(prec.get("weights")), text(prec.get("compute"))
    fw = text(case.get("framework"))
    if "bf16-true" in fw or "16-true" in fw:
        pure = "fp16-pure" if "16-true" in fw and "bf16-true" not in fw else "bf16-pure"
        return pure, None, f"--precision {'bf16' if pure == 'bf16-pure' else '16'}-true: 16-bit weights and optimizer states"
    if "16-mixed" in fw:
        return ("fp16" if "bf16-mixed" not in fw else "bf16"), None, "mixed precision: fp32 weights under autocast"
    if framework is Framework.TORCHTUNE:
        return "bf16-pure", None, None
    if "fp8" in compute:
        return "fp8", None, None
    quant_type = text((case.get("quantization") or {}).get("type"))
    if case.get("method") == "qlora" and framework in (Framework.HF, Framework.AXOLOTL) \
            and not any(q in quant_type for q in ("gptq", "awq")):
        return None, True, ("peft prepare_model_for_kbit_training (QLoRA recipe) casts the non-quantized "
                            "weights (embeddings, head, norms) to fp32 (it leaves GPTQ models alone)")
    if weights.startswith("fp32") and compute.startswith("fp32"):
        return "fp32", None, "fp32 weights and compute (no mixed precision in the scripts)"
    if weights.startswith("fp32"):
        return "bf16", True, "frozen weights loaded in fp32 under mixed precision"
    if case.get("method") in ("full", "pretrain") and "bf16" in weights and not prec.get("master_weights") \
            and framework is Framework.HF \
            and not ((case.get("parallel") or {}).get("zero_stage") or _script_zero_stage(case)[0]):
        return "bf16-pure", None, "model loaded in bf16 and trained without an fp32 master copy"
    return None, None, None


def _torchtune_flags(case: dict) -> dict:
    """torchtune recipe flags stated in the case (framework text and optimizer)."""
    fw, opt = text(case.get("framework")), text(case.get("optimizer"))
    out: dict = {}
    if "chunked_ce=false" in fw:
        out["loss"] = "full"
    if "opt_in_bwd=true" in fw or "optimizer_in_bwd=true" in opt or "into backward" in opt:
        out["optimizer_in_backward"] = True
    elif "opt_in_bwd=false" in fw:
        out["optimizer_in_backward"] = False
    offload = text((case.get("parallel") or {}).get("offload"))
    if "act_offload=true" in fw or "activation offload" in offload:
        out["activation_offload"] = True
    return out


def _script_zero_stage(case: dict) -> tuple[int, str | None]:
    """The ZeRO stage of the DeepSpeed config a full-parameter case's script uses by default, when
    the case's notes name it (Qwen: "finetune_ds.sh defaults to DeepSpeed ds_config_zero3.json")."""
    found = _DS_CONFIG.search(text(case.get("notes")))
    if not found or case.get("method") not in ("full", "pretrain") or "deepspeed" not in text(case.get("framework")):
        return 0, None
    return int(found.group(1)), f"DeepSpeed ZeRO-{found.group(1)}: the script's default config named in the case notes"


def _layout_flags(case: dict) -> dict:
    par = case.get("parallel") or {}
    count = int((case.get("gpus") or {}).get("count") or 1)
    fsdp_text = text(par.get("fsdp")).upper()
    zero = int(par.get("zero_stage") or 0)
    if par.get("zero_stage") is None:
        zero = _script_zero_stage(case)[0]
    fsdp = "none"
    if "SHARD_GRAD_OP" in fsdp_text:
        zero = 2                              # FSDP SHARD_GRAD_OP = ZeRO-2 semantics
    elif "HYBRID" in fsdp_text:
        fsdp = "hybrid"
    elif "FULL_SHARD" in fsdp_text or ("FSDP" in fsdp_text and count > 1):
        fsdp = "full"
    off = text(par.get("offload"))
    offload = "none"
    if "cpu_offload=true" in off or ("optimizer" in off and "param" in off):
        offload = "all"
    elif "optimizer" in off:
        offload = "optimizer"
    elif "param" in off:
        offload = "params"
    if count == 1 and offload == "none":
        zero, fsdp = 0, "none"                # ZeRO/FSDP on one GPU shard nothing (DeepSpeed regime kept below)
    return {"num_gpus": count, "nodes": nodes_for(count), "zero": zero, "fsdp": fsdp, "offload": offload,
            "tp": int(par.get("tp") or 1), "pp": int(par.get("pp") or 1), "cp": int(par.get("cp") or 1),
            "ep": int(par.get("ep") or 1)}


def _grad_accum(case: dict) -> int:
    """The case's accumulation steps; when not given, global batch / (micro-batch x data-parallel GPUs)."""
    if case.get("grad_accum"):
        return int(case["grad_accum"])
    dp = int((case.get("parallel") or {}).get("dp") or (case.get("gpus") or {}).get("count") or 1)
    global_batch, micro = case.get("global_batch"), int(case.get("micro_batch") or 1)
    if not global_batch:
        return 1
    return max(1, int(global_batch) // (micro * max(1, dp)))


def _quant(case: dict) -> tuple[str | None, bool, str | None]:
    q = case.get("quantization") or {}
    if case.get("method") != "qlora":
        return None, False, None
    kind = text(q.get("type"))
    note = None
    if "gptq" in kind or "int4" in kind or "awq" in kind:
        note = f"{q.get('type')}: 4-bit weights counted as nf4 (0.5 byte/param plus block constants)"
    quant = "fp4" if "fp4" in kind else "int8" if "int8" in kind else "nf4"
    return quant, bool(q.get("double_quant")), note


def map_memory_case(case: dict) -> MemoryMapping:
    """The memory case as a JobOptions and the view to compare; Skip with the reason otherwise."""
    lora = case.get("lora") or {}
    if lora.get("modules_to_save"):
        raise Skip(f"LoRA with modules_to_save {lora['modules_to_save']} (a trained copy of the embedding "
                   "and head) is not modelled")
    framework, compiled = case_framework(case)
    fw = text(case.get("framework"))
    if framework is Framework.TORCHTUNE and "packed=false" in fw:
        raise Skip("unpacked dataset: the peak is set by the longest batch, which the case does not give "
                   "(seq_len is only the maximum)")
    spec, how = case_model(case)
    gpu = case_gpu(case)
    if not case.get("seq_len") or not case.get("micro_batch"):
        raise Skip("sequence length or micro-batch not given")
    notes = [f"model: {how}"]
    precision, load_fp32, pnote = _precision(case, framework)
    notes += [pnote] if pnote else []
    zero_note = _script_zero_stage(case)[1] if (case.get("parallel") or {}).get("zero_stage") is None else None
    notes += [zero_note] if zero_note else []
    optimizer, onote = memory_optimizer(case.get("optimizer"))
    notes += [onote] if onote else []
    quant, double_quant, qnote = _quant(case)
    notes += [qnote] if qnote else []
    method = "full" if case["method"] == "pretrain" else case["method"]
    par = case.get("parallel") or {}
    if framework is Framework.HF and (par.get("zero_stage") or _script_zero_stage(case)[0]) \
            and int((case.get("gpus") or {}).get("count") or 1) == 1 and precision != "fp32":
        framework = Framework.DEEPSPEED
        notes.append("DeepSpeed on one GPU: 16-bit weights with fp32 master weights and Adam states, nothing sharded")
    flags: dict = {}
    if method in ("lora", "qlora"):
        if not lora.get("rank"):
            raise Skip("LoRA rank not given")
        targets, tnote = lora_targets(case)
        notes += [tnote] if tnote else []
        flags.update(lora_rank=int(lora["rank"]), lora_alpha=float(lora.get("alpha") or 2 * lora["rank"]),
                     lora_dropout=lora_dropout(case, framework), lora_targets=targets or None)
    if framework is Framework.TORCHTUNE:
        flags.update(_torchtune_flags(case))
        if compiled:
            notes.append("torch.compile: torchtune compiles each layer and the loss (compile_model, compile_loss)")
    attention = text(case.get("attention"))
    attn = "flash" if "flash" in attention else "sdpa" if "sdpa" in attention else \
        "eager" if "eager" in attention else None
    measured = case.get("measured") or {}
    view, why = memory_view(measured.get("what"))
    notes.append(why)
    gib_value = measured.get("peak_mem_gib")
    options = JobOptions(model=spec, method=method, precision=precision,
                      optimizer=None if optimizer is None else optimizer.value,
                      quant=quant, double_quant=double_quant, batch_size=int(case["micro_batch"]),
                      grad_accum=_grad_accum(case), seq_len=int(case["seq_len"]),
                      grad_ckpt=str(case_grad_ckpt(case.get("grad_ckpt")).value), attention=attn,
                      framework=framework.value, load_fp32=load_fp32, gpu=gpu, compile=compiled,
                      **_layout_flags(case), **flags)
    return MemoryMapping(options=options, view=view, notes=tuple(notes),
                         measured_bytes=None if gib_value is None else int(round(float(gib_value) * GIB)))

