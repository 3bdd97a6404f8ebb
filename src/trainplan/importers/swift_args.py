"""The arguments of `swift sft|pt|rlhf` (ms-swift on the HF Trainer; importers/swift.py reads the file or the
command line and hands them here) read into settings: the tuner and its LoRA/QLoRA keys, the model, sequence
length, packing and attention, the batch, checkpointing and kernels, the DeepSpeed / FSDP engine, precision,
the optimizer and the RLHF stage; with the argument helpers and default tables Megatron-SWIFT
(importers/swift_megatron.py) shares.

Keys and defaults (modelscope/ms-swift 3602360, v4.6.0.dev0): swift/arguments/base_args/*.py,
swift/arguments/{tuner,sft,rlhf}_args.py, swift/trainers/arguments.py, swift/config/*.json (the `--deepspeed
zeroN` and `--fsdp fsdp2` presets). Defaults and presets live in trainplan/job/defaults/swift.py.

The precision rule this reader encodes: the weights load in `torch_dtype` (None: the model's
config.json dtype, bf16 for current checkpoints: swift/model/model_meta.py) and bf16/fp16 mixed
precision follows it (fp32 weights get fp16 autocast: model_args.py _init_mixed_precision). A full
fine-tune upcasts nothing (pipelines/train/tuner.py: requires_grad_ only), so the Trainer's AdamW
holds bf16 states and there is no fp32 master ("bf16-pure"), unless DeepSpeed (fp32 master in its
bf16/ZeRO optimizer) or FSDP (accelerate's fsdp2_prepare_model upcasts trainable parameters to fp32)
runs it ("bf16"). LoRA: the base stays 16-bit and PEFT upcasts the adapters to fp32 (swift keeps
PEFT's autocast_adapter_dtype unless `lora_dtype` is set, tuners/peft.py; fp16 trainables are cast to
fp32 in tuner.py): "bf16"/"fp16", or "bf16-pure" with `lora_dtype: bfloat16`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers import deepspeed
from trainplan.importers.axolotl import default
from trainplan.importers.base import (
    Collector,
    Imported,
    ReadContext,
    as_bool,
    as_float,
    as_int,
    names,
    read_dataset,
    read_experts_impl,
    set_eval_strategy,
    read_flash_version,
    read_length_grouping,
    read_modules_to_save,
)
from trainplan.job.defaults import swift as defaults
from trainplan.importers.swift_optim import swift_galore, swift_optim

_DEFAULTS = {d.field: d for d in defaults.DEFAULTS}
_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16",
           "float32": "fp32", "fp32": "fp32", "float": "fp32"}
_STAGES = {"dpo": "dpo", "orpo": "orpo", "simpo": "simpo", "cpo": "simpo", "kto": "kto", "rm": "rm", "ppo": "ppo",
           "grpo": "grpo"}


def _get(c: Collector, args: dict, key: str, kind, **kw) -> Any:
    value = args.get(key)
    return None if value is None or value == "None" else kind(value, key, c.file, **kw)


def _put(c: Collector, args: dict, key: str, field_name: str, kind, table: dict | None, **kw) -> Any:
    """args[key] as field_name, or the framework default from `table` when it is unset."""
    value = _get(c, args, key, kind, **kw)
    if value is None and table is not None:
        default(c, field_name, table, defaults.VERSION)
    elif value is not None:
        c.set(field_name, value, key=key)
    return value


def _model_spec(args: dict):
    try:
        from trainplan.catalog import resolve_model
        return resolve_model(str(args["model"])) if args.get("model") else None
    except (TrainplanError, KeyError, ValueError):
        return None


def _tuner(c: Collector, args: dict, table: dict) -> str:
    key = "tuner_type" if "tuner_type" in args else "train_type" if "train_type" in args else None
    tuner = str(args[key]).lower() if key else table["method"].value
    quant, bits = str(args.get("quant_method") or "").lower(), str(args.get("quant_bits") or "")
    if key is None and tuner != "lora":
        default(c, "method", table, defaults.VERSION)
        return tuner
    if tuner not in ("full", "lora", "lora_llm", "adalora", "longlora"):
        c.skip(key, args[key], "a tuner trainplan does not model; full fine-tuning is assumed")
        return "full"
    spelling = " (v3 spelling train_type)" if key == "train_type" else ""
    if tuner == "full":
        c.set("method", "full", key=key, raw=args[key], note=spelling.strip())
        return "full"
    qlora = quant == "bnb" and bits in ("4", "8")
    note = {"lora_llm": "LoRA on the language model (multimodal: the rest per freeze_*)",
            "adalora": "AdaLoRA: LoRA whose ranks are pruned while training",
            "longlora": "LongLoRA's shifted sparse attention is not modelled"}.get(tuner, "") + spelling
    if key is None:
        default(c, "method", table, defaults.VERSION, value="qlora" if qlora else None)
    else:
        c.set("method", "qlora" if qlora else "lora", key=f"{key}+quant_method" if qlora else key, raw=args[key],
              note=note)
    if qlora and bits == "8":
        c.set("quant", "int8", key="quant_bits", raw=args["quant_bits"], note="bitsandbytes LLM.int8 base")
    elif qlora:
        _put(c, args, "bnb_4bit_quant_type", "quant", lambda v, *_: str(v).lower(), _DEFAULTS)
        _put(c, args, "bnb_4bit_use_double_quant", "double_quant", as_bool, _DEFAULTS)
    elif quant:
        c.skip("quant_method", f"{quant} {bits}".strip(), "only bitsandbytes 4/8-bit bases are modelled")
    lora_table = {**_DEFAULTS, **table}
    _put(c, args, "lora_rank", "lora_rank", as_int, lora_table, minimum=1)
    _put(c, args, "lora_alpha", "lora_alpha", as_float, lora_table)
    _put(c, args, "lora_dropout", "lora_dropout", as_float, lora_table)
    if args.get("target_regex"):
        c.skip("target_regex", args["target_regex"], "LoRA targets given as a regex are not modelled")
    elif args.get("target_modules") is None:
        default(c, "lora_targets", _DEFAULTS, defaults.VERSION)
    else:
        targets = names(args["target_modules"])
        c.set("lora_targets", "all-linear" if "all-linear" in targets else targets, key="target_modules",
              raw=args["target_modules"])
    _put(c, args, "use_dora", "dora", as_bool, None)
    return "qlora" if qlora else "lora"


def _common(c: Collector, args: dict, spec, table: dict) -> None:
    """The keys swift and Megatron-SWIFT share: model, sequence length, packing, attention."""
    if args.get("model"):
        c.set("model", str(args["model"]), key="model")
    packing = _get(c, args, "packing", as_bool)
    seq = _get(c, args, "max_length", as_int, minimum=1)
    pack_len = _get(c, args, "packing_length", as_int, minimum=1) if packing else None
    if pack_len or seq:
        c.set("seq_len", pack_len or seq, key="packing_length" if pack_len else "max_length")
    elif packing and spec is not None and spec.max_position_embeddings:
        c.derived("seq_len", spec.max_position_embeddings, key="max_length",
                  note="max_length unset: packs fill the model's max_model_len (base_args.py __post_init__: "
                       "packing_length = max_length = max_model_len)")
    else:
        c.skip("max_length", None, "unset: ms-swift truncates at the model's max_model_len "
               "(base_args.py __post_init__), a bound, not the samples' length; give --seq-len")
    _put(c, args, "packing", "packing", as_bool, _DEFAULTS)
    truncation = str(args.get("truncation_strategy") or "").strip().strip("'\"").lower()
    if truncation and truncation != "none":
        # template_args.py: 'delete' drops a sample over max_length; 'left' / 'right' (1.x 'truncation_left') cut it
        c.set("drop_long_samples", truncation == "delete", key="truncation_strategy", raw=truncation)
    read_dataset(c, args.get("dataset"), "dataset")
    read_length_grouping(c, args.get("group_by_length"), args.get("train_sampling_strategy"))
    read_experts_impl(c, args.get("experts_impl"), "experts_impl")      # base_args/model_args.py
    if packing:
        c.derived("padding_free", True, key="packing", note="packing implies padding_free (sft_args.py "
                  "_check_padding_free)")
    else:
        _put(c, args, "padding_free", "padding_free", as_bool, table)
    key = "attn_impl" if "attn_impl" in args else "attention_backend" if "attention_backend" in args else None
    if key is None:
        default(c, "attention", table, defaults.VERSION)
        return
    name = str(args[key]).lower()
    value = "flash" if name.startswith("flash") or name == "fused" else \
        "eager" if name in ("eager", "unfused", "local") else "sdpa" if name == "sdpa" else None
    if value is None:
        c.skip(key, args[key], "an attention kernel trainplan does not model")
    else:
        c.set("attention", value, key=key, raw=args[key])
        read_flash_version(c, name, key)


def _swift(c: Collector, args: dict, sub: str, world: int, ctx: ReadContext) -> None:
    c.set("framework", "swift", key=f"(swift {sub})", note="HF Trainer underneath (swift/trainers)")
    spec = _model_spec(args)
    method = _tuner(c, args, _DEFAULTS)
    if method in ("lora", "qlora") and args.get("modules_to_save"):
        read_modules_to_save(c, args["modules_to_save"], "modules_to_save")   # swift/arguments tuner_args
    _common(c, args, spec, _DEFAULTS)
    bs = _put(c, args, "per_device_train_batch_size", "batch_size", as_int, _DEFAULTS, minimum=1)
    rlhf = str(args.get("rlhf_type") or ("dpo" if sub == "rlhf" else "")).lower()
    if _put(c, args, "gradient_accumulation_steps", "grad_accum", as_int, None, minimum=1) is None:
        value = 1 if rlhf == "grpo" else max(1, math.ceil(16 / (bs or 1) / world))
        default(c, "grad_accum", _DEFAULTS, defaults.VERSION, value=value,
                extra=f" -> {value} with {world} GPU(s); give --grad-accum with --num-gpus")
    if _put(c, args, "max_epochs", "epochs", as_float, None) is None:
        _put(c, args, "num_train_epochs", "epochs", as_float, _DEFAULTS)
    steps = _get(c, args, "max_steps", as_int)
    if steps and steps > 0:
        c.set("max_steps", steps, key="max_steps")
    _evaluation(c, args)
    gc = _get(c, args, "gradient_checkpointing", as_bool)
    if gc is None:
        default(c, "grad_ckpt", _DEFAULTS, defaults.VERSION)
    else:
        c.set("grad_ckpt", "full" if gc else "none", key="gradient_checkpointing", raw=args["gradient_checkpointing"])
    if _get(c, args, "use_liger_kernel", as_bool):
        c.set("liger", True, key="use_liger_kernel", raw=True, note="Liger RoPE/RMSNorm/SwiGLU (liger_kernel "
              "apply_liger_kernel_to_* defaults, through transformers integrations/liger.py)")
        c.set("loss", "fused", key="use_liger_kernel", raw=True, note="fused_linear_cross_entropy=True by default")
    else:
        default(c, "loss", _DEFAULTS, defaults.VERSION)
    sp = _get(c, args, "sequence_parallel_size", as_int, minimum=1)
    if sp and sp > 1:
        ulysses = math.gcd(spec.num_kv_heads, sp) if spec is not None else sp
        c.set("ulysses", ulysses, key="sequence_parallel_size", raw=sp,
              note="Ulysses over gcd(num_key_value_heads, size) ranks, ring attention over the rest "
                   "(swift/sequence_parallel/sequence_parallel.py _init_device_mesh)")
        if ulysses < sp:
            c.set("cp", sp // ulysses, key="sequence_parallel_size", raw=sp, note="the ring-attention factor")
    engine = _engines(c, args, ctx)
    _precision(c, args, method, engine)
    galore = swift_galore(c, args)
    muon = str(args.get("optimizer")).lower() == "muon"
    if not galore:
        swift_optim(c, args, muon)
    if sub == "pt":
        c.set("stage", "pt", key="(swift pt)", note="pretraining: loss on every token (arguments/pretrain_args.py)")
    if rlhf:
        _rlhf(c, args, rlhf, method)
    if args.get("device_map") is not None:
        c.set("device_map", "auto", key="device_map", raw=args["device_map"])
    # use_galore read: its key, and `optimizer galore` (sft_args.py sets it from use_galore), are modelled
    read = {"use_galore"} | ({"optimizer"} if str(args.get("optimizer")).lower() == "galore" else set())
    _unmodelled(c, args, {k: why for k, why in _UNMODELLED.items()
                          if not (galore and k in read) and not (muon and k == "optimizer")})
    c.ignore(sum(1 for k in args if k not in _READ))
    if isinstance(engine, Imported):
        c.merge(engine)         # last: the DeepSpeed JSON's own values win, as the HF integration requires


def _evaluation(c: Collector, args: dict) -> None:
    """split_dataset_ratio (default 0): the share of the dataset held out for validation (swift/arguments/base_args/
    data_args.py; a val_dataset of its own sets it to 0 and is not sized here). Its evaluations run as eval_strategy
    says, which defaults to save_strategy ("steps"), every eval_steps, which defaults to save_steps (500: the HF
    default) (swift/arguments/sft_args.py _init_eval_strategy @3602360a)."""
    if args.get("val_dataset"):
        c.skip("val_dataset", args["val_dataset"], "a separate evaluation dataset is not sized: its evaluations "
                                                   "are not counted (--val-size gives their samples)")
        return
    ratio = _get(c, args, "split_dataset_ratio", as_float)
    if not ratio or ratio <= 0:
        return
    c.set("val_size", ratio, key="split_dataset_ratio", raw=args["split_dataset_ratio"],
          note="held out of the dataset, not trained on")
    strategy = str(args.get("eval_strategy") or args.get("save_strategy") or "steps").strip().lower()
    key = "eval_strategy" if args.get("eval_strategy") else "save_strategy"

    def every() -> tuple[Any, str, str]:
        if args.get("eval_steps"):
            return args["eval_steps"], "eval_steps", ""
        return args.get("save_steps") or 500, "save_steps", "eval_steps unset: save_steps (ms-swift _init_eval_strategy)"

    set_eval_strategy(c, strategy, key, every)


def _unmodelled(c: Collector, args: dict, table: dict[str, str]) -> None:
    for key, why in table.items():
        if args.get(key) not in (None, False, "false", "False", 0, "0", [], "", "None", "peft"):
            c.skip(key, args[key], why)


_UNMODELLED = {
    "freeze_parameters": "freezing a parameter subset is not modelled",
    "freeze_parameters_ratio": "freezing a fraction of the parameters is not modelled",
    "trainable_parameters": "training a parameter subset is not modelled",
    "optimizer": "an optimizer plugin (LoRA+, MuonClip, ...) is not modelled",
    "use_galore": "GaLore with embeddings projected, Q-GaLore or an Adafactor base is not modelled",
    "lisa_activated_layers": "LISA layer sampling is not modelled",
    "zero_hpz_partition_size": "ZeRO++ hpZ secondary partitions are not modelled",
    "tuner_backend": "the unsloth backend's kernels are not applied (give --framework unsloth)",
    "use_vllm": "vLLM rollout memory (vllm_gpu_memory_utilization, default 0.9) is not modelled",
}
_READ = {"experts_impl", "group_by_length", "train_sampling_strategy",
         "modules_to_save", "model", "tuner_type", "train_type", "quant_method", "quant_bits", "bnb_4bit_quant_type",
         "bnb_4bit_use_double_quant", "lora_rank", "lora_alpha", "lora_dropout", "target_modules", "target_regex",
         "use_dora", "packing", "packing_length", "max_length", "padding_free", "attn_impl",
         "per_device_train_batch_size", "gradient_accumulation_steps", "max_epochs", "num_train_epochs", "max_steps",
         "gradient_checkpointing", "use_liger_kernel", "sequence_parallel_size", "deepspeed", "fsdp", "fsdp_config",
         "deepspeed_autotp_size", "torch_dtype", "bf16", "fp16", "optim", "rlhf_type", "beta", "ref_model",
         "device_map", "lora_dtype", "dataset", "truncation_strategy", "galore_rank", "galore_target_modules",
         "galore_update_proj_gap", "galore_scale", "galore_proj_type", "galore_optim_per_parameter", *_UNMODELLED}


def _engines(c: Collector, args: dict, ctx: ReadContext) -> Imported | str:
    """The DeepSpeed config read (an Imported to merge last), 'fsdp', or 'none'."""
    autotp = _get(c, args, "deepspeed_autotp_size", as_int, minimum=1)
    if autotp and autotp > 1:
        c.set("tp", autotp, key="deepspeed_autotp_size", note="DeepSpeed AutoTP (sft_args.py _init_deepspeed)")
    ds, fsdp = args.get("deepspeed"), args.get("fsdp")
    if ds not in (None, "", "None"):
        if fsdp:
            raise TrainplanError(f"{c.file}: deepspeed and fsdp together: ms-swift refuses it (sft_args.py _init_fsdp)")
        name = str(ds) if not isinstance(ds, dict) else ""
        if name in defaults.DEEPSPEED_PRESETS:
            label = f"{defaults.PRESETS_SOURCE}{name}.json"
            return deepspeed.read(defaults.DEEPSPEED_PRESETS[name], label, ReadContext(included=True))
        if isinstance(ds, dict) or name.lstrip().startswith("{"):
            try:
                body = ds if isinstance(ds, dict) else json.loads(name)
            except json.JSONDecodeError as exc:
                raise TrainplanError(f"{c.file}: deepspeed is not JSON: {exc.msg}") from None
            return deepspeed.read(body, f"{c.file} (deepspeed)", ReadContext(base_dir=ctx.base_dir, included=True))
        imported = ctx.include(name)
        if imported is None:
            c.skip("deepspeed", name, "not a preset (zero0-3, zero2_offload, zero3_offload) and the file is not there")
            return "none"
        return imported
    if fsdp in (None, "", "None", False):
        return "none"
    body = defaults.FSDP_PRESETS.get(str(fsdp))
    source = f"{defaults.PRESETS_SOURCE}{fsdp}.json" if body is not None else str(fsdp)
    if body is None:
        resolved = ctx.resolve_path(str(fsdp))
        if resolved is None:
            c.skip("fsdp", fsdp, "not the fsdp2 preset and the file is not there")
            return "none"
        from trainplan.importers import _read_text, parse
        body = parse(_read_text(resolved), resolved)
        c.includes.append(resolved)
    cfg = body.get("fsdp_config") if isinstance(body, dict) else None
    cfg = {**(cfg if isinstance(cfg, dict) else {}), **(args["fsdp_config"] if isinstance(args.get("fsdp_config"),
                                                                                         dict) else {})}
    opts = str(body.get("fsdp", "full_shard auto_wrap") if isinstance(body, dict) else "").lower().split()
    c.set("fsdp", "hybrid" if any(o.startswith("hybrid") for o in opts) else "full", key="fsdp", raw=fsdp,
          note=f"fsdp {' '.join(opts)!r} from {source}")
    c.set("fsdp_version", as_int(cfg.get("fsdp_version", 2), "fsdp_config.fsdp_version", c.file),
          key="fsdp_config.fsdp_version", raw=cfg.get("fsdp_version"),
          note="" if "fsdp_version" in cfg else "sft_args.py _init_fsdp: 2")
    reshard = cfg.get("reshard_after_forward")
    reshard = as_bool(reshard, "reshard_after_forward", c.file) if reshard is not None else not any(
        o in ("shard_grad_op", "hybrid_shard_zero2") for o in opts)
    c.set("reshard_after_forward", reshard, key="fsdp_config.reshard_after_forward",
          raw=cfg.get("reshard_after_forward"))
    if "offload" in opts or any(as_bool(cfg.get(k, False), k, c.file) for k in ("offload_params", "cpu_offload")):
        c.set("offload", "all", key="fsdp offload", raw=True, note="FSDP CPU offload: parameters, gradients and "
              "the optimizer step on the CPU")
        c.set("offload_device", "cpu", key="fsdp offload", raw=True)
    if as_bool(cfg.get("activation_checkpointing", False), "activation_checkpointing", c.file):
        c.set("grad_ckpt", "full", key="fsdp_config.activation_checkpointing", raw=True,
              note="FSDP's activation checkpointing (swift turns gradient_checkpointing off beside it)")
    if as_bool(cfg.get("activation_cpu_offload", False), "activation_cpu_offload", c.file):
        c.set("activation_offload", True, key="fsdp_config.activation_cpu_offload", raw=True)
    return "fsdp"


def _precision(c: Collector, args: dict, method: str, engine: Imported | str) -> None:
    raw, key = args.get("torch_dtype"), "torch_dtype"
    bf16, fp16 = _get(c, args, "bf16", as_bool), _get(c, args, "fp16", as_bool)
    if raw in (None, "None", "auto"):
        d = _DEFAULTS["precision"]
        weights, why = "bf16", f"torch_dtype unset: {d.note} ({defaults.VERSION} {d.source}); "
    else:
        weights, why = _DTYPES.get(str(raw).lower().replace("torch.", "")), ""
        if weights is None:
            raise TrainplanError(f"{c.file}: torch_dtype must be bfloat16, float16 or float32, got {raw!r}")
    if weights == "fp32":       # model_args.py _init_mixed_precision: fp32 weights -> fp16 autocast unless told
        value = "bf16" if bf16 else "fp16" if fp16 is not False else "fp32"
        why += "fp32 weights and compute" if value == "fp32" else f"fp32 weights with {value} autocast"
    elif method != "full" and str(args.get("lora_dtype") or "").lower() in ("bfloat16", "float16"):
        value, key = f"{weights}-pure", "lora_dtype"
        why += "adapters kept 16-bit by lora_dtype (tuners/peft.py _cast_adapter_dtype_hook)"
    elif method != "full":
        value = weights
        why += "16-bit frozen base, fp32 adapters (PEFT autocast_adapter_dtype) and fp32 Adam states"
    elif engine == "none":
        value = f"{weights}-pure"
        why += "a full fine-tune of a 16-bit model: no fp32 master, AdamW states in the parameter dtype"
    else:
        value = weights
        why += ("accelerate's fsdp2_prepare_model upcasts the trainable parameters to fp32 (utils/fsdp_utils.py)"
                if engine == "fsdp" else "DeepSpeed's bf16/ZeRO optimizer keeps fp32 master weights and Adam states")
    if raw is None and bf16 is None and fp16 is None and key == "torch_dtype":
        c.default("precision", value, key=key, note=why)
    else:
        c.set("precision", value, key=key, raw=args.get(key), note=why)


def _rlhf(c: Collector, args: dict, rlhf: str, method: str) -> None:
    stage = _STAGES.get(rlhf)
    if stage is None:
        c.skip("rlhf_type", rlhf, "an RLHF algorithm trainplan does not model (GKD: a teacher model)")
        return
    if args.get("rlhf_type") is None:
        default(c, "stage", _DEFAULTS, defaults.VERSION)
    else:
        c.set("stage", stage, key="rlhf_type", raw=args["rlhf_type"],
              note="CPO: reference-free pairwise preference loss, as SimPO (which swift runs as CPO)"
              if rlhf == "cpo" else "")
    beta = _get(c, args, "beta", as_float)
    ref = rlhf in ("dpo", "kto", "ppo", "grpo") and method == "full" and not (rlhf == "grpo" and beta == 0.0)
    c.derived("ref_model", ref, key="rlhf_type",
              note="full DPO/KTO/PPO/GRPO load a reference copy; LoRA disables the adapter instead; ORPO/CPO/SimPO/RM "
                   "need none; GRPO with beta 0 neither (rlhf_args.py __post_init__)")
