"""LLaMA-Factory train configs: the flat YAML or JSON of `llamafactory-cli train x.yaml [key=value ...]`.

Keys and defaults (hiyouga/LLaMA-Factory ff6d4d1, 2026-08-18; shared/reference/framework_configs.md
section 1; the defaults live in trainplan/job/defaults/llamafactory.py): src/llamafactory/hparams/
parser.py (`read_args`: YAML via OmegaConf, JSON via json, trailing key=value via OmegaConf.from_cli;
`get_train_args` checks and post-processing), hparams/finetuning_args.py, data_args.py, model_args.py,
training_args.py (HF Seq2SeqTrainingArguments + Ray/FP8 keys). `deepspeed:` names a DeepSpeed JSON,
read with importers/deepspeed.py and laid over these settings (the engine's own keys win there).

Precision as LLaMA-Factory runs it (model/loader.py load_model, model/patcher.py patch_config,
model/adapter.py init_adapter, hparams/parser.py get_train_args):
- the checkpoint is loaded with `torch_dtype="auto"` (its own dtype, bf16 for Llama 3 / Qwen 3);
  `compute_dtype` is bf16 when `bf16` or `pure_bf16`, fp16 when `fp16` (parser.py), otherwise inferred
  from the checkpoint (extras/misc.py infer_optim_dtype); it is the QLoRA compute/storage dtype;
- init_adapter upcasts the trainable parameters to fp32 (full: every parameter, _setup_full_tuning;
  freeze: the trainable layers, _setup_freeze_tuning; LoRA: the adapters, _setup_lora_tuning), except
  with `pure_bf16` or BAdam (kept 16-bit) and under DeepSpeed ZeRO-3 without quantization (left to the
  engine); HF `bf16: true` then autocasts: full = fp32 weights + bf16 autocast, fp32 AdamW states;
- under DeepSpeed with bf16/fp16 enabled the engine casts every floating parameter to 16 bits
  (DeepSpeed runtime/engine.py _cast_module_mixed_precision; ZeRO-3 builds them in that dtype,
  zero/partition_parameters.py _set_dtype) and keeps fp32 master partitions and Adam states in its
  optimizer, so the fp32 upcast is undone: 16-bit weights + fp32 master copy;
- `pure_bf16`: bf16 weights, gradients and AdamW states, no fp32 copy; refused with ZeRO-3
  (parser.py); under ZeRO-1/2 the DeepSpeed optimizer still keeps fp32 partitions
  (zero/stage_1_and_2.py, master_weights_and_grads_dtype fp32).
"""

from __future__ import annotations

import json
import os
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import (
    Collector,
    Imported,
    ReadContext,
    as_bool,
    as_float,
    as_int,
    names,
    read_dataset,
    read_modules_to_save,
)
from trainplan.job.defaults import defaults

FORMAT = "llamafactory"
_D = defaults("llamafactory")
_SRC = "LLaMA-Factory src/llamafactory/"
# keys only LLaMA-Factory has (FinetuningArguments, DataArguments, ModelArguments)
_STRONG = frozenset({
    "finetuning_type", "cutoff_len", "lora_target", "quantization_bit", "quantization_method", "double_quantization",
    "disable_gradient_checkpointing", "enable_liger_kernel", "pure_bf16", "freeze_trainable_layers",
    "freeze_trainable_modules", "freeze_extra_modules", "neat_packing", "pref_loss", "pref_beta", "pref_ftx",
    "flash_attn", "use_unsloth", "use_unsloth_gc", "use_llama_pro", "additional_target", "plot_loss",
    "upcast_layernorm", "upcast_lmhead_output", "use_badam", "use_adam_mini", "use_galore", "use_apollo",
    "use_muon", "ref_model_adapters", "ref_model_quantization_bit", "reward_model_type", "use_reentrant_gc",
    "mask_history", "train_on_prompt", "tokenized_path", "use_dora", "pissa_init", "loraplus_lr_ratio",
    "oft_rank", "use_rslora", "create_new_adapter", "hyper_parallel_cp_size", "use_hyper_parallel", "shift_attn",
    "ray_num_workers", "mixture_of_depths", "use_kt", "use_mca", "use_megatron_bridge"})
_WEAK = frozenset({"template", "stage", "dataset", "dataset_dir", "max_samples", "lora_rank", "lora_alpha",
                   "lora_dropout", "do_train", "preprocessing_num_workers", "ddp_timeout", "trust_remote_code"})
_V1 = frozenset({"peft_config", "dist_config", "quant_config", "kernel_config", "optim_config", "batching_strategy"})
_STAGES = ("pt", "sft", "rm", "ppo", "dpo", "kto")
_METHODS = ("lora", "oft", "freeze", "full")
_ATTENTION = {"auto": None, "disabled": "eager", "eager": "eager", "sdpa": "sdpa", "fa2": "flash", "fa3": "flash"}
# HF OptimizerNames (transformers 5.8.0 training_args.py) -> trainplan optimizers
_OPTIM = {"adamw_torch": "adamw", "adamw_torch_fused": "adamw-fused", "adamw_8bit": "adamw-8bit",
          "adamw_bnb_8bit": "adamw-8bit", "adamw_torch_8bit": "adamw-8bit", "paged_adamw_8bit": "paged-adamw-8bit",
          "adafactor": "adafactor", "sgd": "sgd", "lion_32bit": "lion"}
# optimizer families LLaMA-Factory builds itself (train/trainer_utils.py create_custom_optimizer)
_CUSTOM_OPTIM = ("use_galore", "use_apollo", "use_badam", "use_adam_mini", "use_muon")
# DeepSpeed configs LLaMA-Factory ships in examples/deepspeed/ at ff6d4d1: (zero stage, offload, autotp size)
_SHIPPED = {"ds_z0_config.json": (0, "none", 1), "ds_z2_config.json": (2, "none", 1),
            "ds_z2_offload_config.json": (2, "optimizer", 1), "ds_z2_autotp_config.json": (2, "none", 2),
            "ds_z3_config.json": (3, "none", 1), "ds_z3_offload_config.json": (3, "all", 1),
            "ds_z3_fp8_config.json": (3, "optimizer", 1)}
# keys that change memory or time but that trainplan does not model (key -> why), when set to a non-default
_UNMODELLED = {
    "freeze_extra_modules": "extra fully trained non-layer modules are not modelled",
    "use_llama_pro": "LLaMA Pro expanded blocks are not modelled",
    "shift_attn": "LongLoRA shifted sparse attention is not modelled",
    "mixture_of_depths": "mixture-of-depths is not modelled",
    "use_hyper_parallel": "HyperParallel training (and its hyper_parallel_cp_size) is not modelled",
    "use_mca": "the Megatron-core (mcore_adapter) path is not read",
    "use_megatron_bridge": "the Megatron-Bridge path is not read",
    "use_kt": "KTransformers CPU/GPU MoE offload is not modelled",
    "auto_find_batch_size": "the batch size found at run time cannot be known ahead",
    "fsdp": "FSDP through TrainingArguments: give --fsdp (LLaMA-Factory usually takes it from an accelerate config)",
    "fsdp_config": "FSDP through TrainingArguments: give --fsdp",
    "ref_model_quantization_bit": "a quantized reference model is not modelled",
    "reward_model": "the PPO reward model's memory is not modelled",
    "streaming": "streamed data: the run length comes from max_steps only",
}


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict):
        return 0
    keys = set(data)
    if keys & _V1 and "model" in keys:
        return 8 + 2 * len(keys & _V1)
    strong, weak = len(keys & _STRONG), len(keys & _WEAK)
    if not strong and not ("stage" in keys and "model_name_or_path" in keys):
        return 0
    return 20 + 10 * strong + 2 * weak + (5 if "model_name_or_path" in keys else 0)


def with_overrides(data: dict, pairs: list[str], where: str) -> dict:
    """The config with `llamafactory-cli train x.yaml key=value ...` laid over it (parser.py read_args:
    OmegaConf.from_cli, values typed as YAML scalars)."""
    import yaml
    out = dict(data)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise TrainplanError(f"{where}: {pair!r} is not key=value")
        try:
            value = yaml.safe_load(text) if text else None
        except yaml.YAMLError:
            value = text
        out[key.strip().lstrip("-")] = value
    return out


def read(data: dict, path: str, ctx: ReadContext | None = None) -> Imported:
    if set(data) & _V1 and "model" in data:
        raise TrainplanError(f"--from {path}: the LLaMA-Factory v1 schema (USE_V1=1: peft_config, dist_config, ...) "
                             "is not read; give the v0 flat train arguments or flags")
    c = Collector(FORMAT, path)
    c.set("framework", "llamafactory", key="(a LLaMA-Factory train config)",
          note="HF Trainer; checkpoint dtype weights with the trainable parameters upcast to fp32 "
               f"({_SRC}model/adapter.py init_adapter)")
    used: set[str] = set()

    def get(key: str, default: Any = None) -> Any:
        used.add(key)
        return data.get(key, default)

    ds_imported, ds_shipped = _deepspeed(c, get("deepspeed"), ctx)
    zero = (ds_imported.values().get("zero") if ds_imported else ds_shipped[0] if ds_shipped else None)
    model = get("model_name_or_path")
    if model is None:
        c.skip("model_name_or_path", None, "no model named: give --model")
    else:
        c.set("model", str(model), key="model_name_or_path", raw=model)
    method = _method(c, get, zero)
    stage = _stage(c, get, method)
    _precision(c, get, zero, method)
    _sequence(c, get, stage)
    _kernels(c, get, stage, zero)
    _batch(c, get)
    # `dataset: a,b`: names in LLaMA-Factory's data/dataset_info.json (catalog.datasets reads them)
    read_dataset(c, get("dataset"), "dataset")
    _optimizer(c, get)
    for key, why in _UNMODELLED.items():
        used.add(key)
        value = data.get(key)
        if value not in (None, False, "", [], {}):
            c.skip(key, value, why)
    workers = get("ray_num_workers")
    if workers is not None and as_int(workers, "ray_num_workers", path, minimum=1) > 1:
        c.derived("num_gpus", as_int(workers, "ray_num_workers", path), key="ray_num_workers",
                  note=f"Ray training (USE_RAY=1): one accelerator per worker ({_SRC}train/tuner.py "
                       "_ray_training_function)")
    c.ignore(sum(1 for k in data if k not in used))
    if ds_imported is not None:
        c.merge(ds_imported)     # the engine's own settings (stage, offload, explicit batch/precision) win
    return c.result()


def _default(c: Collector, field_name: str, value: Any = None) -> None:
    d = _D[field_name]
    c.default(field_name, d.value if value is None else value, key=d.key,
              note=f"{d.source}{'; ' + d.note if d.note else ''}")


def _value(c: Collector, get, key: str, field_name: str, conv, **kw) -> Any:
    """The key's value converted and set, or the framework default when the file leaves it out."""
    raw = get(key)
    if raw is None:
        _default(c, field_name)
        return _D[field_name].value
    value = conv(raw, key, c.file, **kw)
    c.set(field_name, value, key=key, raw=raw)
    return value


def _method(c: Collector, get, zero: int | None) -> str:
    given = get("finetuning_type")
    ft = "lora" if given is None else str(given).lower()
    if ft not in _METHODS:
        raise TrainplanError(f"--from {c.file}: finetuning_type must be one of {', '.join(_METHODS)}, got {given!r}")
    bits, qmethod = get("quantization_bit"), str(get("quantization_method", "bnb")).lower()
    if bits is not None and ft in ("full", "freeze"):
        raise TrainplanError(f"--from {c.file}: quantization_bit needs finetuning_type lora or oft (LLaMA-Factory "
                             "model/adapter.py: quantized models can only be used for LoRA or OFT)")
    if ft == "oft":
        c.skip("finetuning_type", ft, "OFT adapters are not modelled")
        return ft
    n = None if bits is None else as_int(bits, "quantization_bit", c.file)
    if n is not None and (qmethod != "bnb" or n not in (4, 8)):
        c.skip("quantization_bit", {"quantization_bit": n, "quantization_method": qmethod},
               "only bitsandbytes 4/8-bit on-the-fly quantization is modelled")
        n = None
    if n is not None:
        c.set("method", "qlora", key="finetuning_type/quantization_bit", raw={"finetuning_type": ft,
              "quantization_bit": n}, note=f"LoRA over a bitsandbytes {n}-bit base "
              f"({_SRC}model/model_utils/quantization.py configure_quantization)")
        if n == 8:
            c.set("quant", "int8", key="quantization_bit", raw=n, note="BitsAndBytesConfig(load_in_8bit=True)")
        else:
            _value(c, get, "quantization_type", "quant", _quant_type)
            _value(c, get, "double_quantization", "double_quant", as_bool)
    elif given is None:
        _default(c, "method")
    else:
        c.set("method", ft, key="finetuning_type", raw=given)
    for key in ("quantization_type", "double_quantization"):
        get(key)
    if ft == "lora":
        _lora(c, get)
    elif ft == "freeze":
        _freeze(c, get)
    return "qlora" if n is not None else ft


def _quant_type(value: Any, key: str, file: str) -> str:
    if str(value).lower() not in ("nf4", "fp4"):
        raise TrainplanError(f"--from {file}: {key} must be nf4 or fp4, got {value!r}")
    return str(value).lower()


def _lora(c: Collector, get) -> None:
    rank = _value(c, get, "lora_rank", "lora_rank", as_int, minimum=1)
    alpha = get("lora_alpha")
    if alpha in (None, 0):     # `self.lora_alpha or self.lora_rank * 2`
        c.derived("lora_alpha", 2.0 * rank, key="lora_alpha", note=f"{_D['lora_alpha'].source} = {2 * rank}")
    else:
        c.set("lora_alpha", as_float(alpha, "lora_alpha", c.file), key="lora_alpha", raw=alpha)
    _value(c, get, "lora_dropout", "lora_dropout", as_float)
    target = get("lora_target")
    if target is None:
        _default(c, "lora_targets")
    elif not names(target):
        raise TrainplanError(f"--from {c.file}: lora_target is empty")
    elif names(target) == ("all",):
        c.set("lora_targets", "all-linear", key="lora_target", raw=target, note=_D["lora_targets"].source)
    else:
        c.set("lora_targets", names(target), key="lora_target", raw=target)
    _value(c, get, "use_dora", "dora", as_bool)
    if get("additional_target"):     # PEFT modules_to_save (llamafactory/model/adapter.py _setup_lora_tuning)
        read_modules_to_save(c, get("additional_target"), "additional_target")


def _freeze(c: Collector, get) -> None:
    layers = get("freeze_trainable_layers")
    if layers is None:
        _default(c, "freeze_layers")
    elif as_int(layers, "freeze_trainable_layers", c.file) == 0:
        raise TrainplanError(f"--from {c.file}: freeze_trainable_layers must not be 0")
    else:
        n = as_int(layers, "freeze_trainable_layers", c.file)
        c.set("freeze_layers", n, key="freeze_trainable_layers", raw=layers,
              note="" if n > 0 else "negative: the first n layers train (the backward runs through every layer)")
    modules = get("freeze_trainable_modules")
    if modules is not None and names(modules) != ("all",):
        c.skip("freeze_trainable_modules", modules, "only some modules of the trainable layers are trained")


def _stage(c: Collector, get, method: str) -> str:
    stage = get("stage")
    if stage is None:
        _default(c, "stage")
        return "sft"
    stage = str(stage).lower()
    if stage not in _STAGES:
        raise TrainplanError(f"--from {c.file}: stage must be one of {', '.join(_STAGES)}, got {get('stage')!r}")
    pref_loss = str(get("pref_loss", "sigmoid")).lower()
    ours = {"orpo": "orpo", "simpo": "simpo"}.get(pref_loss, "dpo") if stage == "dpo" else stage
    c.set("stage", ours, key="stage" + ("/pref_loss" if stage == "dpo" else ""), raw=stage if stage != "dpo" else
          {"stage": stage, "pref_loss": pref_loss})
    ref = get("ref_model")
    if ours in ("orpo", "simpo"):
        c.set("ref_model", False, key="pref_loss", raw=pref_loss,
              note=f"use_ref_model = stage == 'dpo' and pref_loss not in (orpo, simpo) ({_SRC}hparams/finetuning_args.py)")
    elif ours in ("dpo", "kto", "ppo"):
        src = f"{_SRC}train/trainer_utils.py create_ref_model"
        if ref is not None:
            c.set("ref_model", True, key="ref_model", raw=ref, note=f"a separate frozen reference model ({src})")
        elif method in ("lora", "qlora"):
            # True = a reference forward per micro-batch; under LoRA it runs the policy with its adapters
            # disabled and no copy is held (job/resolve.preference)
            c.set("ref_model", True, key="ref_model", raw=None,
                  note=f"LoRA without ref_model: the reference is the policy with its adapters disabled, no second "
                       f"copy ({src} returns None)")
        else:
            c.set("ref_model", True, key="ref_model", raw=None,
                  note=f"full/freeze without ref_model: a frozen copy of the model itself is loaded ({src})")
    return stage


def _precision(c: Collector, get, zero: int | None, method: str) -> None:
    pure, bf16, fp16, fp8 = (as_bool(get(k, False), k, c.file) for k in ("pure_bf16", "bf16", "fp16", "fp8"))
    for key in ("fp8_backend", "fp8_enable_fsdp_float8_all_gather"):
        get(key)
    if bf16 and fp16:
        raise TrainplanError(f"--from {c.file}: bf16 and fp16 cannot both be true")
    if pure and zero == 3:
        raise TrainplanError(f"--from {c.file}: pure_bf16 is incompatible with DeepSpeed ZeRO-3 "
                             "(LLaMA-Factory hparams/parser.py)")
    if fp8:
        if method == "qlora":
            raise TrainplanError(f"--from {c.file}: fp8 is not compatible with quantization_bit "
                                 "(LLaMA-Factory hparams/parser.py)")
        c.set("precision", "fp8", key="fp8", raw=True,
              note="FP8 matmuls through accelerate (LF hparams/training_args.py Fp8Arguments); weights stay bf16/fp32")
    elif pure and zero in (1, 2):
        c.set("precision", "bf16", key="pure_bf16", raw=True,
              note="pure_bf16 keeps the model in bf16, but the DeepSpeed ZeRO-1/2 optimizer holds fp32 master "
                   "partitions and Adam states (DeepSpeed zero/stage_1_and_2.py)")
    elif pure:
        c.set("precision", "bf16-pure", key="pure_bf16", raw=True,
              note=f"bf16 weights, gradients and AdamW states: trainable params not upcast ({_SRC}model/adapter.py "
                   "init_adapter)")
    elif bf16 or fp16:
        dtype = "bf16" if bf16 else "fp16"
        c.set("precision", dtype, key=dtype, raw=True,
              note=f"DeepSpeed casts the model to {dtype} and keeps fp32 master weights and Adam states in its "
                   "optimizer (DeepSpeed runtime/engine.py _cast_module_mixed_precision)" if zero is not None else
              f"trainable params upcast to fp32 ({_SRC}model/adapter.py init_adapter), {dtype} autocast")


def _sequence(c: Collector, get, stage: str) -> None:
    packing_raw, neat = get("packing"), as_bool(get("neat_packing", False), "neat_packing", c.file)
    packing = as_bool(packing_raw, "packing", c.file) if packing_raw is not None else None
    explicit = bool(packing) or neat      # DataArguments.__post_init__ sees only what the file says
    cutoff = get("cutoff_len")
    length = _D["seq_len"].value if cutoff is None else as_int(cutoff, "cutoff_len", c.file, minimum=2)
    if explicit:
        c.derived("seq_len", length - 1, key="cutoff_len", note=f"cutoff_len {length} - 1 with packing "
                  f"({_SRC}hparams/data_args.py DataArguments.__post_init__: avoid pad_to_multiple_of)")
    elif cutoff is None:
        _default(c, "seq_len")
    else:
        c.set("seq_len", length, key="cutoff_len", raw=cutoff)
    if neat:
        c.set("packing", True, key="neat_packing", raw=True,
              note="packing without cross-attention between the packed sequences (block-diagonal mask)")
        c.derived("padding_free", True, key="neat_packing",
                  note="each packed sample attends only within itself: flash varlen over per-sample cu_seqlens "
                       f"({_SRC}model/model_utils/packing.py get_unpad_data, block_diag_attn)")
    elif packing is not None:
        c.set("packing", packing, key="packing", raw=packing_raw)
    else:
        _default(c, "packing", stage == "pt")
    n = get("max_samples")
    if n is not None:
        per = as_int(n, "max_samples", c.file, minimum=1)
        sets = names(get("dataset")) or ("(one)",)
        total = per * len(sets)
        val = get("val_size")
        if val is not None and 0 < as_float(val, "val_size", c.file):
            v = as_float(val, "val_size", c.file)
            total = int(total * (1 - v)) if v < 1 else max(1, total - int(v))
        c.derived("samples", total, key="max_samples", note=f"at most {per} samples from each of {len(sets)} "
                  "dataset(s), less val_size: an upper bound (a smaller dataset gives fewer)")


def _kernels(c: Collector, get, stage: str, zero: int | None) -> None:
    attn = get("flash_attn")
    if attn is not None and str(attn).lower() not in _ATTENTION:
        raise TrainplanError(f"--from {c.file}: flash_attn must be auto, disabled, sdpa, fa2 or fa3, got {attn!r}")
    if attn is None or _ATTENTION[str(attn).lower()] is None:
        _default(c, "attention")
    else:
        c.set("attention", _ATTENTION[str(attn).lower()], key="flash_attn", raw=attn)
    unsloth = as_bool(get("use_unsloth", False), "use_unsloth", c.file)
    unsloth_gc = as_bool(get("use_unsloth_gc", False), "use_unsloth_gc", c.file)
    if unsloth and zero == 3:
        raise TrainplanError(f"--from {c.file}: use_unsloth is incompatible with DeepSpeed ZeRO-3 "
                             "(LLaMA-Factory hparams/parser.py)")
    disable = as_bool(get("disable_gradient_checkpointing", False), "disable_gradient_checkpointing", c.file)
    hf_gc = get("gradient_checkpointing", get("activation_checkpointing"))
    hf_on = hf_gc is not None and as_bool(hf_gc, "gradient_checkpointing", c.file)
    if unsloth:
        c.set("grad_ckpt", "full", key="use_unsloth", raw=True,
              note=f"unsloth loads the model with use_gradient_checkpointing='unsloth' ({_SRC}model/model_utils/"
                   "unsloth.py _get_unsloth_kwargs)")
    elif disable and hf_on:
        c.set("grad_ckpt", "full", key="gradient_checkpointing", raw=hf_gc,
              note="the HF Trainer enables checkpointing itself although disable_gradient_checkpointing is set")
    elif disable:
        c.set("grad_ckpt", "none", key="disable_gradient_checkpointing", raw=True)
    elif hf_on:
        c.set("grad_ckpt", "full", key="gradient_checkpointing", raw=hf_gc)
    else:
        _default(c, "grad_ckpt")
    if unsloth or (unsloth_gc and not disable):
        c.set("activation_offload", True, key="use_unsloth" if unsloth else "use_unsloth_gc", raw=True,
              note=f"each checkpointed layer's input goes to CPU ({_SRC}model/model_utils/checkpointing.py "
                   "get_unsloth_gradient_checkpointing_func; unsloth's own 'unsloth' mode does the same)")
    liger_key = "enable_liger_kernel" if get("enable_liger_kernel") is not None else "use_liger_kernel"
    liger_raw = get(liger_key)
    liger = liger_raw is not None and as_bool(liger_raw, liger_key, c.file)
    if unsloth or liger:
        key, fused = ("use_unsloth", True) if unsloth else (liger_key, stage in ("pt", "sft"))
        c.set("liger", True, key=key, raw=True, note="unsloth's fused RMSNorm/SwiGLU/RoPE kernels" if unsloth else
              f"{_SRC}model/model_utils/liger_kernel.py apply_liger_kernel: apply_liger_kernel_to_<model>() with "
              "rope, rms_norm, swiglu on (linkedin/Liger-Kernel src/liger_kernel/transformers/monkey_patch.py)")
        c.set("loss", "fused" if fused else "full", key=key, raw=True,
              note="unsloth's fused cross-entropy" if unsloth else
              "fused_linear_cross_entropy=True (Liger's default): the logits are never materialized" if fused else
              f"stage {stage} needs the logits: LF passes fused_linear_cross_entropy=False, cross_entropy=True")
    else:
        if liger_raw is None:
            _default(c, "liger")
        else:
            c.set("liger", False, key=liger_key, raw=liger_raw)
        _default(c, "loss")
    compile_raw = get("torch_compile")
    if compile_raw is not None:
        c.set("compile", as_bool(compile_raw, "torch_compile", c.file), key="torch_compile", raw=compile_raw)


def _batch(c: Collector, get) -> None:
    _value(c, get, "per_device_train_batch_size", "batch_size", as_int, minimum=1)
    _value(c, get, "gradient_accumulation_steps", "grad_accum", as_int, minimum=1)
    if _value(c, get, "num_train_epochs", "epochs", as_float) <= 0:
        raise TrainplanError(f"--from {c.file}: num_train_epochs must be positive, got {get('num_train_epochs')!r}")
    steps = get("max_steps")
    if steps is not None and as_int(steps, "max_steps", c.file) > 0:
        c.set("max_steps", as_int(steps, "max_steps", c.file), key="max_steps", raw=steps,
              note="max_steps > 0 overrides num_train_epochs (HF Trainer)")


def _optimizer(c: Collector, get) -> None:
    custom = [k for k in _CUSTOM_OPTIM if as_bool(get(k, False), k, c.file)]
    mode = get("badam_mode")
    if custom == ["use_badam"] and str(mode or "layer").lower() == "layer":
        c.set("optimizer", "badam", key="use_badam", raw=True,
              note="layer-wise BAdam (train/trainer_utils.py _create_badam_optimizer: BlockOptimizer over "
                   "the HF optimizer; badam_mode " + ("layer" if mode else "default layer") + ")")
        get("optim")
        return
    if custom:
        c.skip(custom[0], True, f"LLaMA-Factory's {custom[0][4:]} optimizer ({_SRC}train/trainer_utils.py "
               "create_custom_optimizer) is not modelled; the optimizer is left to trainplan")
        get("optim")
        return
    optim = get("optim")
    if optim is None:
        _default(c, "optimizer")
    elif str(optim).lower() in _OPTIM:
        c.set("optimizer", _OPTIM[str(optim).lower()], key="optim", raw=optim)
    else:
        c.skip("optim", optim, "an HF optimizer trainplan does not model; its default is kept")


def _deepspeed(c: Collector, value: Any, ctx: ReadContext | None) -> tuple[Imported | None, tuple | None]:
    """The DeepSpeed config `deepspeed:` names (a path, or an inline dict / JSON string as HF allows):
    its Imported, or for a missing file that LLaMA-Factory ships, (stage, offload, autotp) of that file."""
    if value is None:
        return None, None
    from trainplan.importers import deepspeed
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise TrainplanError(f"--from {c.file}: deepspeed is not valid JSON: {exc.msg}") from None
    if isinstance(value, dict):
        return deepspeed.read(value, f"{c.file} (deepspeed)", ReadContext(included=True)), None
    if not isinstance(value, str) or not value.strip():
        raise TrainplanError(f"--from {c.file}: deepspeed must be a path to a DeepSpeed JSON, got {value!r}")
    imported = _include(ctx, value)
    if imported is not None:
        if imported.format != "deepspeed":
            c.skip("deepspeed", value, f"{imported.file} is not a DeepSpeed config ({imported.format})")
            return None, None
        return imported, None
    base = os.path.basename(value)
    if base in _SHIPPED and value.replace("\\", "/").endswith(f"examples/deepspeed/{base}"):
        stage, offload, autotp = _SHIPPED[base]
        note = (f"{value} is not here; LLaMA-Factory ff6d4d1 ships it with ZeRO-{stage}"
                f"{', offload ' + offload + ' to cpu' if offload != 'none' else ''} (bucket knobs left to trainplan)")
        c.derived("zero", stage, key="deepspeed", note=note)
        if offload != "none":
            c.derived("offload", offload, key="deepspeed", note=note)
            c.derived("offload_device", "cpu", key="deepspeed", note=note)
        if autotp > 1:
            c.derived("tp", autotp, key="deepspeed", note=note + "; tensor_parallel.autotp_size")
        return None, (stage, offload, autotp)
    c.skip("deepspeed", value, "the DeepSpeed config is not found (relative to the config's folder, its parents or "
           "the working directory): ZeRO stage and offload unknown")
    return None, None


def _include(ctx: ReadContext | None, name: str) -> Imported | None:
    """`ctx.include`, then the config's parent folders: LF's examples name repo-root-relative paths
    (examples/deepspeed/ds_z3_config.json from examples/train_full/x.yaml)."""
    if ctx is None:
        return None
    found = ctx.include(name)
    if found is not None or os.path.isabs(name) or ctx.confined:   # an upload: its own folder only
        return found
    folder = ctx.base_dir
    for _ in range(3):
        parent = os.path.dirname(os.path.abspath(folder))
        if parent == folder:
            break
        folder = parent
        found = ReadContext(base_dir=folder, load=ctx.load, included=ctx.included).include(name)
        if found is not None:
            return found
    return None
