"""LLaMA-Factory train YAML (`llamafactory-cli train llamafactory.yaml`), in the layout of its examples
(`### model`, `### method`, `### dataset`, `### output`, `### train`: comments only, the YAML is flat).

Keys and defaults (hiyouga/LLaMA-Factory ff6d4d1 ~ 0.9.5; shared/reference/framework_configs.md section 1;
job/defaults/llamafactory.py), the mirror of importers/llamafactory.py:
- src/llamafactory/hparams/finetuning_args.py: stage, finetuning_type (default lora), lora_rank (8),
  lora_alpha (None -> 2 x rank), lora_dropout (0.0), lora_target ("all"), use_dora, freeze_trainable_layers
  (negative: the first n), pref_loss (orpo/simpo: no reference model), use_badam + badam_mode;
- hparams/model_args.py: quantization_bit / quantization_method bnb / quantization_type nf4 /
  double_quantization (default True), flash_attn (auto, disabled, sdpa, fa2, fa3), enable_liger_kernel,
  use_unsloth_gc, disable_gradient_checkpointing (checkpointing is on unless this is set);
- hparams/data_args.py: cutoff_len (2048; packing takes one token off, DataArguments.__post_init__), packing;
- hparams/training_args.py (HF Seq2SeqTrainingArguments): per_device_train_batch_size,
  gradient_accumulation_steps, num_train_epochs (3.0), max_steps, bf16/fp16, pure_bf16 (refused with
  ZeRO-3, hparams/parser.py), fp8, optim, torch_compile, deepspeed (the DeepSpeed JSON's path, relative
  to where llamafactory-cli runs: written beside this file, launched from this folder).
Every key that decides memory or time is written explicitly (LF's defaults differ from trainplan's:
LoRA, rank 8, three epochs, double quantization on).
"""

from __future__ import annotations

from typing import Any

from trainplan.enums import (
    GALORE_OPTIMIZERS,
    LOW_RANK_OPTIMIZERS,
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    Method,
    Optimizer,
    Precision,
    Quant,
    ZeroStage,
)
from trainplan.errors import TrainplanError
from trainplan.export import hf, pieces
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.model.params import default_lora_targets

FORMAT = "llamafactory"
FRAMEWORKS = (Framework.LLAMAFACTORY,)
FILE = "llamafactory.yaml"
_ATTN = {Attention.FLASH: "fa2", Attention.SDPA: "sdpa", Attention.EAGER: "disabled"}
_STAGES = {"sft": ("sft", None), "pt": ("pt", None), "rm": ("rm", None), "kto": ("kto", None),
           "dpo": ("dpo", "sigmoid"), "ipo": ("dpo", "ipo"), "orpo": ("dpo", "orpo"), "simpo": ("dpo", "simpo")}
# chat templates (src/llamafactory/data/template.py register_template names) by catalog name prefix
_TEMPLATES = (("llama-3", "llama3"), ("llama-2", "llama2"), ("qwen3", "qwen3"), ("qwen2", "qwen"),
              ("qwen-2", "qwen"), ("mistral", "mistral"), ("mixtral", "mistral"), ("gemma-3", "gemma3"),
              ("gemma", "gemma"), ("deepseek", "deepseek3"), ("phi-4", "phi4"), ("glm-4", "glm4"))


def template(job) -> str:
    name = job.setup.model.name.lower()
    return next((t for prefix, t in _TEMPLATES if name.startswith(prefix)), "default")


def _refuse(what: str) -> None:
    raise TrainplanError(f"--format llamafactory: {what}")


def check(job) -> None:
    setup, layout = job.setup, job.layout
    if layout.tp > 1 or layout.pp > 1 or layout.cp > 1:
        _refuse(f"LLaMA-Factory's trainer runs data parallel (ZeRO/FSDP) layouts, not tp {layout.tp} / pp "
                f"{layout.pp} / cp {layout.cp} (use --format megatron or torchtitan)")
    if setup.precision in (Precision.FP32, Precision.FP16_PURE):
        _refuse(f"--precision {setup.precision} is not a LLaMA-Factory setting (bf16, fp16, pure_bf16 or fp8)")
    if setup.precision is Precision.BF16_PURE and layout.zero is ZeroStage.PARAMETERS:
        _refuse("pure_bf16 is incompatible with DeepSpeed ZeRO-3 (hparams/parser.py)")
    if setup.grad_ckpt in (GradCkpt.SELECTIVE, GradCkpt.OP) or setup.grad_ckpt_every > 1:
        _refuse("LLaMA-Factory checkpoints every decoder layer whole (model_utils/checkpointing.py): "
                "use --grad-ckpt full or none")
    if setup.impl.loss is Loss.CHUNKED:
        _refuse("a chunked cross-entropy is not a LLaMA-Factory option (enable_liger_kernel fuses it: --liger)")
    if setup.impl.optimizer_in_backward and setup.optimizer not in LOW_RANK_OPTIMIZERS:
        _refuse("the optimizer step in backward is torchtune's, not LLaMA-Factory's (but for galore_layerwise and "
                "apollo_layerwise)")
    if setup.impl.optimizer_in_backward and setup.grad_accum > 1:
        _refuse("layer-wise GaLore and APOLLO take no gradient accumulation (train/trainer_utils.py "
                "_create_galore_optimizer, _create_apollo_optimizer)")


def _stage(job) -> tuple[str, str | None]:
    stage = (job.options.stage if job.options is not None and job.options.stage else "sft").lower()
    if stage not in _STAGES:
        _refuse(f"--stage {stage} is not a LLaMA-Factory stage (pt, sft, rm, dpo, kto; orpo/simpo as pref_loss)")
    return _STAGES[stage]


def _method(job, notes: list[str]) -> dict[str, Any]:
    setup = job.setup
    out: dict[str, Any] = {}
    if setup.optimizer is Optimizer.BADAM:   # job/resolve.py block_coordinate turned full into freeze
        return {"finetuning_type": "full", "use_badam": True, "badam_mode": "layer"}
    if setup.optimizer in GALORE_OPTIMIZERS:   # train/trainer_utils.py _create_galore_optimizer
        out = {"finetuning_type": "full", "use_galore": True, "galore_target": "all", "galore_rank": setup.galore_rank}
        if setup.impl.optimizer_in_backward:
            out["galore_layerwise"] = True
        return out
    if setup.optimizer is Optimizer.APOLLO_ADAMW:   # train/trainer_utils.py _create_apollo_optimizer
        out = {"finetuning_type": "full", "use_apollo": True, "apollo_target": "all", "apollo_rank": setup.apollo_rank}
        if setup.impl.optimizer_in_backward:
            out["apollo_layerwise"] = True
        return out
    if setup.method is Method.FREEZE:
        n = setup.freeze_trainable_layers
        return {"finetuning_type": "freeze", "freeze_trainable_layers": -n if setup.freeze_bottom else n}
    if setup.method is Method.FULL:
        return {"finetuning_type": "full"}
    lora = setup.lora
    out["finetuning_type"] = "lora"
    if setup.method is Method.QLORA:
        quant = setup.quant
        out["quantization_bit"] = 8 if quant.kind is Quant.INT8 else 4
        out["quantization_method"] = "bnb"
        if quant.kind is not Quant.INT8:
            out["quantization_type"] = str(quant.kind)
            out["double_quantization"] = quant.double_quant
    targets = lora.targets
    if not targets:
        targets = default_lora_targets(setup.model)
        notes.append(f"LoRA targets: peft's default for {setup.model.name} written out ({','.join(targets)}); "
                     "LLaMA-Factory's own default is all linear layers")
    out.update(lora_rank=lora.rank, lora_alpha=_number(lora.alpha), lora_dropout=lora.dropout,
               lora_target="all" if tuple(targets) == ("all-linear",) else ",".join(targets))
    if lora.dora:
        out["use_dora"] = True
    return out


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _precision(setup) -> dict[str, Any]:
    p = setup.precision
    if p is Precision.BF16_PURE:
        return {"bf16": True, "pure_bf16": True}
    if p is Precision.FP8:
        return {"bf16": True, "fp8": True}
    return {"fp16": True} if p is Precision.FP16 else {"bf16": True}


def config(job, ctx: ExportContext, *, ds_file: str | None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The YAML's sections (section title -> keys), and notes."""
    check(job)
    setup, layout, work = job.setup, job.layout, job.workload
    notes: list[str] = []
    stage, pref_loss = _stage(job)
    model: dict[str, Any] = {"model_name_or_path": hf.model_name(job, ctx), "trust_remote_code": True}
    if setup.impl.flash_version == 4:     # LLaMA-Factory's AttentionFunction: auto, disabled, sdpa, fa2, fa3
        raise TrainplanError("--format llamafactory: flash_attn takes fa2 or fa3 (extras/constants.py "
                             "AttentionFunction), not FlashAttention-4: export with --flash-version 3 or 2")
    model["flash_attn"] = _ATTN[setup.attention] if setup.impl.flash_version == 2 else "fa3"
    if setup.impl.liger_kernels:
        model["enable_liger_kernel"] = True
        fused = setup.impl.loss is Loss.FUSED
        if fused != (stage in ("pt", "sft")):
            _refuse(f"with enable_liger_kernel LLaMA-Factory fuses the loss for pt/sft only (model_utils/"
                    f"liger_kernel.py): --loss {setup.impl.loss} does not match stage {stage}")
    elif setup.impl.loss is Loss.FUSED:
        _refuse("a fused linear cross-entropy in LLaMA-Factory comes with enable_liger_kernel: add --liger")
    if setup.impl.activation_offload:
        model["use_unsloth_gc"] = True
    if setup.impl.load_fp32:
        notes.append("--load-fp32: LLaMA-Factory loads the checkpoint's dtype; not written")
    method: dict[str, Any] = {"stage": stage, "do_train": True, **_method(job, notes)}
    if pref_loss is not None:
        method["pref_loss"] = pref_loss
    if setup.grad_ckpt is GradCkpt.NONE:
        method["disable_gradient_checkpointing"] = True
    if ds_file is not None:
        method["deepspeed"] = ds_file
    elif layout.zero is not ZeroStage.NONE:
        _refuse("a ZeRO job needs the DeepSpeed JSON too: add deepspeed to --format")
    if layout.fsdp is not Fsdp.NONE:
        notes.append("FSDP: LLaMA-Factory takes it from the accelerate config (accelerate launch --config_file "
                     "accelerate.yaml src/train.py llamafactory.yaml)")
    data: dict[str, Any] = {"dataset": ctx.dataset, "template": template(job),
                            "cutoff_len": setup.seq_len + (1 if work.packing else 0)}
    if work.packing:
        data["packing"] = True
    elif stage == "pt":
        data["packing"] = False
    data.update(overwrite_cache=True, preprocessing_num_workers=16)
    output = {"output_dir": ctx.output_dir, "logging_steps": 10, "save_steps": 500, "plot_loss": True,
              "overwrite_output_dir": True, "save_only_model": False, "report_to": "none"}
    train: dict[str, Any] = {"per_device_train_batch_size": setup.batch_size,
                             "gradient_accumulation_steps": setup.grad_accum,
                             "learning_rate": 1.0e-5 if setup.method is Method.FULL else 1.0e-4,
                             "num_train_epochs": float(work.epochs)}
    if work.steps is not None:
        train["max_steps"] = work.steps
    train.update(lr_scheduler_type="cosine", warmup_ratio=0.1, **_precision(setup))
    if setup.optimizer in GALORE_OPTIMIZERS:
        train["optim"] = pieces.galore_base_optim(setup.optimizer)
    elif setup.optimizer is Optimizer.APOLLO_ADAMW:
        train["optim"] = "adamw_torch"  # the only optim _create_apollo_optimizer takes
    elif setup.optimizer is Optimizer.MUON:
        train["use_muon"] = True       # train/trainer_utils.py _create_muon_optimizer: `optim` is not used
    elif setup.optimizer is Optimizer.ADAM_MINI:
        train["use_adam_mini"] = True  # train/trainer_utils.py _create_adam_mini_optimizer
    elif setup.optimizer is not Optimizer.BADAM:
        train["optim"] = hf.optim(job)
    if setup.impl.compiled:
        train["torch_compile"] = True
    if pieces.expert_loop(setup):
        notes.append("--experts-implementation eager: LLaMA-Factory has no key for it; it runs transformers' "
                     "default (grouped_mm on transformers 5, the loop on 4.x)")
    if job.timing.group_by_length:
        train["train_sampling_strategy"] = "group_by_length"
        notes.append(pieces.GROUP_BY_LENGTH_NOTE)
    train["ddp_timeout"] = 180000000
    if work.samples is not None:
        notes.append(f"{work.samples} samples: the dataset's size (max_samples would cut it; not written)")
    return {"model": model, "method": method, "dataset": data, "output": output, "train": train}, notes


def render(sections: dict[str, dict[str, Any]]) -> str:
    import yaml

    parts = []
    for title, keys in sections.items():
        parts.append(f"### {title}\n" + yaml.safe_dump(keys, sort_keys=False, default_flow_style=False))
    return "\n".join(parts)


def export(job, estimate, ctx: ExportContext, *, ds_file: str | None = None) -> Exported:
    sections, notes = config(job, ctx, ds_file=ds_file)
    return Exported(files=(ExportFile(name=FILE, text=render(sections), format=FORMAT),), notes=tuple(notes))
