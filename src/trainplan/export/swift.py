"""ms-swift: the `swift sft|pt|rlhf` arguments as a YAML file (`swift sft swift_sft.yaml`), with the
DeepSpeed JSON or FSDP JSON it names, and the launch line (NPROC_PER_NODE/NNODES/NODE_RANK/
MASTER_ADDR/MASTER_PORT, which swift turns into torchrun's options).

Keys (modelscope/ms-swift 3602360, v4.6.0.dev0; shared/reference/framework_configs.md section 5), the
mirror of importers/swift.py:
- swift/cli/main.py parse_yaml_args: each key of the file becomes `--key value`; get_torchrun_args
  builds torchrun from NPROC_PER_NODE, NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT;
- swift/arguments/base_args/base_args.py `tuner_type` (v4; `train_type` in v3), `model`, `max_length`,
  `packing`; model_args.py `torch_dtype`, `attn_impl` (flash_attn, sdpa, eager) and
  _init_mixed_precision (fp32 weights get bf16/fp16 autocast from `bf16`/`fp16`); quant_args.py
  `quant_method` bnb, `quant_bits`, `bnb_4bit_quant_type`, `bnb_4bit_use_double_quant`;
- swift/arguments/tuner_args.py `lora_rank` 8, `lora_alpha` 32, `lora_dropout` 0.05, `target_modules`
  ['all-linear'], `use_dora`, `lora_dtype` (None: PEFT's fp32 adapters);
- swift/trainers/arguments.py `per_device_train_batch_size` 1, `gradient_accumulation_steps` (None:
  a global batch of at least 16, so it is always written), `gradient_checkpointing` True,
  `use_liger_kernel`; template_args.py `padding_free`, `sequence_parallel_size` (Ulysses over
  gcd(kv heads, size) ranks: swift/sequence_parallel/sequence_parallel.py);
- swift/arguments/sft_args.py _init_deepspeed (`deepspeed`: zero0-3 presets or a JSON path) and
  _init_fsdp (`fsdp`: the fsdp2 preset or a JSON path {"fsdp": "full_shard auto_wrap", "fsdp_config":
  {...}}; "do NOT use --gradient_checkpointing, use activation_checkpointing in fsdp_config"); FSDP and
  DeepSpeed are mutually exclusive. The presets' buckets (2e8, overlap_comm false) are not DeepSpeed's
  defaults, so a JSON with the job's own ZeRO settings is written instead (export/deepspeed.py).
- swift/arguments/rlhf_args.py `rlhf_type`, `beta` (`swift rlhf`).

Precision, as importers/swift.py reads it back: a full fine-tune without DeepSpeed/FSDP trains in
its load dtype (bf16-pure = `torch_dtype: bfloat16`); the HF regime (fp32 weights under bf16
autocast, "bf16") is `torch_dtype: float32` + `bf16: true`; DeepSpeed/FSDP add the fp32 master
("bf16" = `torch_dtype: bfloat16`); LoRA adapters are fp32 unless `lora_dtype` keeps them 16-bit.
"""

from __future__ import annotations

import json
import math
from typing import Any

from trainplan.enums import (
    GALORE_OPTIMIZERS,
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    Method,
    Offload,
    Optimizer,
    Precision,
    Quant,
    ZeroStage,
)
from trainplan.export import pieces
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.memory.sharding import fsdp_for

FORMAT = "swift"
FRAMEWORKS = (Framework.SWIFT,)
FILE = "swift_{}.yaml"          # swift_sft.yaml, swift_pt.yaml, swift_rlhf.yaml: the subcommand's
FSDP_FILE = "swift_fsdp.json"
_ATTN = {Attention.FLASH: "flash_attn", Attention.SDPA: "sdpa", Attention.EAGER: "eager"}
_RLHF = {"dpo": "dpo", "kto": "kto", "orpo": "orpo", "simpo": "simpo", "rm": "rm", "grpo": "grpo"}


def check(job) -> None:
    """The jobs `swift sft` cannot run, one line each with the alternative."""
    setup, layout = job.setup, job.layout
    pieces.no_freeze(FORMAT, job)
    if layout.tp > 1 or layout.pp > 1 or layout.ep > 1:
        raise pieces.refuse(FORMAT, f"tensor/pipeline/expert parallelism (tp {layout.tp}, pp {layout.pp}, ep "
                                    f"{layout.ep}) runs in Megatron-SWIFT: use --format megatron (`megatron sft`)")
    if layout.cp > 1 and setup.model.num_kv_heads % layout.cp:
        raise pieces.refuse(FORMAT, f"sequence_parallel_size {layout.cp} does not divide the {setup.model.num_kv_heads}"
                                    " key/value heads: ms-swift runs the rest as ring attention; use --ulysses "
                                    f"{math.gcd(setup.model.num_kv_heads, layout.cp)}")
    if setup.precision is Precision.FP8:
        raise pieces.refuse(FORMAT, "fp8 training runs in Megatron-SWIFT (--fp8_format): use --format megatron")
    if setup.grad_ckpt in (GradCkpt.SELECTIVE, GradCkpt.OP) or setup.grad_ckpt_every > 1:
        raise pieces.refuse(FORMAT, "gradient_checkpointing is every layer or none in the HF Trainer: use --grad-ckpt "
                                    "full or none (selective recompute is Megatron's: --format megatron)")
    if setup.impl.loss is Loss.CHUNKED:
        raise pieces.refuse(FORMAT, "the HF Trainer has no chunked cross-entropy: use --loss fused (use_liger_kernel) "
                                    "or --loss full")
    if (setup.impl.loss is Loss.FUSED) != setup.impl.liger_kernels:
        raise pieces.refuse(FORMAT, "use_liger_kernel turns on the Liger kernels and the fused linear cross-entropy "
                                    "together: give --liger with --loss fused, or neither")
    if setup.impl.optimizer_in_backward:
        raise pieces.refuse(FORMAT, "the HF Trainer steps the optimizer after backward: drop --optimizer-in-backward "
                                    "(torchtune's optimizer_in_bwd: --format torchtune)")
    if setup.impl.activation_offload and layout.fsdp is Fsdp.NONE:
        raise pieces.refuse(FORMAT, "ms-swift offloads activations only through FSDP's activation_cpu_offload: "
                                    "add --fsdp full or drop --activation-offload")
    if layout.fsdp is not Fsdp.NONE and layout.offload not in (Offload.NONE, Offload.ALL):
        raise pieces.refuse(FORMAT, f"FSDP offloads parameters, gradients and optimizer together: use --offload all, "
                                    f"not {layout.offload}")
    if pieces.stage(job) not in ("sft", "pt", *_RLHF):
        raise pieces.refuse(FORMAT, f"--stage {pieces.stage(job)} has no ms-swift rlhf_type trainplan reads back: "
                                    f"use one of sft, pt, {', '.join(_RLHF)}")


def _precision(fmt: str, job) -> dict[str, Any]:
    """torch_dtype / bf16 / fp16 / lora_dtype for the job's precision (importers/swift.py _precision)."""
    setup, layout = job.setup, job.layout
    p, full = setup.precision, setup.method is Method.FULL
    if p is Precision.FP32:
        return {"torch_dtype": "float32", "bf16": False, "fp16": False}
    half = "bfloat16" if p in (Precision.BF16, Precision.BF16_PURE) else "float16"
    pure = p in (Precision.BF16_PURE, Precision.FP16_PURE)
    if not full:
        return {"torch_dtype": half, "lora_dtype": half} if pure else {"torch_dtype": half}
    if layout.zero is not ZeroStage.NONE:
        if p is Precision.FP16_PURE:
            raise pieces.refuse(fmt, "DeepSpeed keeps an fp32 master under fp16: use --precision fp16 (or bf16-pure)")
        return {"torch_dtype": half}          # bf16-pure: the DeepSpeed JSON's bf16_optimizer_states
    if layout.fsdp is not Fsdp.NONE:
        if pure:
            raise pieces.refuse(fmt, "FSDP upcasts the trained parameters to fp32 (accelerate fsdp2_prepare_model): "
                                     f"use --precision {p.value.removesuffix('-pure')}")
        return {"torch_dtype": half}
    if pure:
        return {"torch_dtype": half}          # trained in the load dtype, AdamW states in it too
    return {"torch_dtype": "float32", "bf16": p is Precision.BF16, "fp16": p is Precision.FP16}


def _fsdp(job) -> dict[str, Any]:
    """The FSDP JSON `--fsdp` names (the shape of swift/config/fsdp2.json), with the job's resharding."""
    layout, setup = job.layout, job.setup
    base = job.fsdp or fsdp_for(setup.framework)
    mode = "hybrid_shard" if layout.fsdp is Fsdp.HYBRID else "full_shard" if base.reshard_after_forward \
        else "shard_grad_op"
    words = [mode, "auto_wrap"] + (["offload"] if layout.offload is Offload.ALL else [])
    cfg: dict[str, Any] = {"fsdp_version": base.version, "reshard_after_forward": base.reshard_after_forward,
                           "auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "cpu_ram_efficient_loading": True,
                           "state_dict_type": "SHARDED_STATE_DICT",
                           "activation_checkpointing": setup.grad_ckpt is GradCkpt.FULL}
    if setup.impl.activation_offload:
        cfg["activation_cpu_offload"] = True
    return {"fsdp": " ".join(words), "fsdp_config": cfg}


def arguments(job, ctx: ExportContext, fmt: str = FORMAT) -> tuple[dict[str, Any], list[str]]:
    """The `swift sft` arguments of `job` (key order as swift's docs group them) and the notes."""
    setup, layout, work = job.setup, job.layout, job.workload
    notes: list[str] = []
    args: dict[str, Any] = {"model": pieces.model_name(job, ctx)}
    args["tuner_type"] = "full" if setup.method is Method.FULL else "lora"
    if setup.method is Method.QLORA:
        quant = setup.quant
        args.update(quant_method="bnb", quant_bits=8 if quant.kind is Quant.INT8 else 4)
        if quant.kind is not Quant.INT8:
            args.update(bnb_4bit_quant_type=quant.kind.value, bnb_4bit_use_double_quant=quant.double_quant)
        elif quant.double_quant:
            notes.append("int8 (LLM.int8) has no double quantization: bnb_4bit_use_double_quant is not written")
    if setup.lora is not None:
        lora = setup.lora
        args.update(lora_rank=lora.rank, lora_alpha=_number(lora.alpha), lora_dropout=lora.dropout)
        if not lora.targets:
            notes.append("the job leaves the LoRA targets to PEFT's default for the model; ms-swift's default "
                         "is all-linear, written here (give --lora-targets to choose)")
        args["target_modules"] = ["all-linear"] if not lora.targets or "all-linear" in lora.targets \
            else list(lora.targets)
        if lora.dora:
            args["use_dora"] = True
    args.update(_precision(fmt, job))
    args["attn_impl"] = _ATTN[setup.attention] if setup.impl.flash_version == 2 else pieces.attn_implementation(setup)
    args["max_length"] = setup.seq_len
    if work.packing:
        args["packing"] = True
        if not setup.impl.padding_free:
            notes.append("ms-swift packs without padding (packing implies padding_free: sft_args.py "
                         "_check_padding_free)")
    elif setup.impl.padding_free:
        args["padding_free"] = True
    args.update(per_device_train_batch_size=setup.batch_size, gradient_accumulation_steps=setup.grad_accum)
    args["num_train_epochs"] = _number(work.epochs)
    if work.steps:
        args["max_steps"] = work.steps
    args["gradient_checkpointing"] = setup.grad_ckpt is GradCkpt.FULL and layout.fsdp is Fsdp.NONE
    if setup.impl.liger_kernels:
        args["use_liger_kernel"] = True
    if pieces.expert_loop(setup):
        args["experts_impl"] = "eager"          # base_args/model_args.py: the per-expert loop (transformers 5)
    if job.timing.group_by_length:
        args["train_sampling_strategy"] = "group_by_length"
        notes.append(pieces.GROUP_BY_LENGTH_NOTE)
    if setup.impl.compiled:
        args["torch_compile"] = True
        notes.append("torch_compile is passed to the HF Trainer; trainplan's ms-swift reader does not read it "
                     "back (give --compile with --from)")
    if setup.optimizer in GALORE_OPTIMIZERS:
        # swift/optimizers/galore/utils.py get_optimizer: adamw_torch -> GaLoreAdamW, an 8-bit adamw -> GaLoreAdamW8bit;
        # galore_target_modules unset -> every linear but the head (pipelines/train/tuner.py find_all_linears)
        args.update(use_galore=True, galore_rank=setup.galore_rank, optim=pieces.galore_base_optim(setup.optimizer))
    elif setup.optimizer is Optimizer.MUON:
        args["optimizer"] = "muon"     # swift/optimizers/mapping.py optimizers_map: MuonOptimizerCallback
    else:
        args["optim"] = pieces.hf_optim(fmt, setup.optimizer)
    if layout.cp > 1:
        args["sequence_parallel_size"] = layout.cp
    if layout.zero is not ZeroStage.NONE:
        args["deepspeed"] = pieces.DS_FILE
    elif layout.fsdp is not Fsdp.NONE:
        args["fsdp"] = FSDP_FILE
    stage = pieces.stage(job)
    if stage in _RLHF:
        args["rlhf_type"] = _RLHF[stage]
        if stage == "grpo":
            args["beta"] = 0.0   # no reference model, as trainplan's grpo (TRL's beta 0); swift's default is 0.04
    args.update(dataset=[ctx.dataset], output_dir=ctx.output_dir)
    return args, notes


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def subcommand(job) -> str:
    stage = pieces.stage(job)
    return "rlhf" if stage in _RLHF else "pt" if stage == "pt" else "sft"


def export(job, estimate, ctx: ExportContext) -> Exported:
    check(job)
    args, notes = arguments(job, ctx)
    notes = pieces.framework_note(job, FORMAT, FRAMEWORKS) + notes
    header = f"ms-swift {subcommand(job)} arguments (swift/cli/main.py parse_yaml_args: each key is --key value)"
    if "deepspeed" in args or "fsdp" in args:
        header += "\nrun from this folder: the DeepSpeed/FSDP JSON is named by a relative path"
    name = FILE.format(subcommand(job))
    files = [ExportFile(name=name, text=pieces.yaml_text(args, header), format=FORMAT)]
    if "deepspeed" in args:
        files.append(ExportFile(name=pieces.DS_FILE, text=pieces.ds_config_text(job),
                                  format=f"{FORMAT}:deepspeed"))
    elif "fsdp" in args:
        files.append(ExportFile(name=FSDP_FILE, text=json.dumps(_fsdp(job), indent=2) + "\n",
                                format=f"{FORMAT}:fsdp"))
    command = pieces.lines([*pieces.torchrun_env(job.layout, ctx), "swift", subcommand(job), name])
    return Exported(files=tuple(files), commands=(command,), notes=tuple(notes))
