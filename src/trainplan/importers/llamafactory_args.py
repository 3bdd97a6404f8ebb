"""LLaMA-Factory train arguments read into settings, section by section (importers/llamafactory.py reads the
file and calls these): the finetuning method and its adapters, the stage and its reference model, precision,
sequence length and packing, kernels and checkpointing, the batch and the run length; the optimizer is
importers/llamafactory_optim.py.

Keys and defaults (hiyouga/LLaMA-Factory ff6d4d1; the defaults live in trainplan/job/defaults/llamafactory.py):
src/llamafactory/hparams/finetuning_args.py, data_args.py, model_args.py, training_args.py, parser.py
(`get_train_args` checks), model/adapter.py, model/model_utils/*.py, train/trainer_utils.py.

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

from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import (
    Collector,
    as_bool,
    as_float,
    as_int,
    names,
    read_evaluation,
    read_flash_version,
    read_length_grouping,
    read_modules_to_save,
)
from trainplan.job.defaults import defaults

_D = defaults("llamafactory")
_SRC = "LLaMA-Factory src/llamafactory/"
_STAGES = ("pt", "sft", "rm", "ppo", "dpo", "kto")
_METHODS = ("lora", "oft", "freeze", "full")
_ATTENTION = {"auto": None, "disabled": "eager", "eager": "eager", "sdpa": "sdpa", "fa2": "flash", "fa3": "flash"}
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
              note=f"use_ref_model = stage == 'dpo' and pref_loss not in (orpo, simpo) "
                   f"({_SRC}hparams/finetuning_args.py)")
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
        read_flash_version(c, attn, "flash_attn")
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
    read_length_grouping(c, get("group_by_length"), get("train_sampling_strategy"))
    compile_raw = get("torch_compile")
    if compile_raw is not None:
        c.set("compile", as_bool(compile_raw, "torch_compile", c.file), key="torch_compile", raw=compile_raw)


def _evaluation(c: Collector, get) -> None:
    """val_size: the samples split off for evaluation, a count above 1, else a share of the dataset
    (data/data_utils.py split_dataset: `int(val_size) if val_size > 1 else val_size` as train_test_split's test_size;
    loader.py splits only where val_size > 1e-6); they are evaluated as HF TrainingArguments' eval_strategy says
    (importers.base read_evaluation). An `eval_dataset` of its own is not sized here."""
    val = get("val_size")
    if val is not None and as_float(val, "val_size", c.file) > 1e-6:
        v = as_float(val, "val_size", c.file)
        c.set("val_size", float(int(v)) if v > 1 else v, key="val_size", raw=val,
              note="held out of the dataset, not trained on")
    if get("eval_dataset") is not None:
        c.skip("eval_dataset", get("eval_dataset"), "a separate evaluation dataset is not sized: its evaluations "
                                                    "are not counted (--val-size gives their samples)")
    read_evaluation(c, get)


def _batch(c: Collector, get) -> None:
    _value(c, get, "per_device_train_batch_size", "batch_size", as_int, minimum=1)
    _value(c, get, "gradient_accumulation_steps", "grad_accum", as_int, minimum=1)
    if _value(c, get, "num_train_epochs", "epochs", as_float) <= 0:
        raise TrainplanError(f"--from {c.file}: num_train_epochs must be positive, got {get('num_train_epochs')!r}")
    steps = get("max_steps")
    if steps is not None and as_int(steps, "max_steps", c.file) > 0:
        c.set("max_steps", as_int(steps, "max_steps", c.file), key="max_steps", raw=steps,
              note="max_steps > 0 overrides num_train_epochs (HF Trainer)")
