"""axolotl YAML (`axolotl train config.yml`).

Keys and defaults (axolotl-ai-cloud/axolotl 067b021, shared/reference/framework_configs.md section 4):
the schema in src/axolotl/utils/schemas/{config,peft,training,fsdp}.py, validators in
utils/schemas/validation.py, the dtype rule in utils/config/__init__.py (resolve_dtype), loading in
loaders/model.py, FSDP environment in utils/trainer.py (setup_fsdp_envs), the FSDP2 wrapper in
monkeypatch/accelerate/fsdp2.py, plugin keys in integrations/liger/args.py and
integrations/cut_cross_entropy/args.py. Defaults live in trainplan/job/defaults/axolotl.py.

The precision rule this reader encodes:
- the weights load in cfg.torch_dtype: bf16 when `bf16` (default 'auto' on a bf16 GPU), fp16 with
  `fp16` or `load_in_8bit`, fp32 otherwise (resolve_dtype; loaders/model.py model_kwargs["dtype"]);
- full fine-tune: nothing upcasts the trainable weights and torch's AdamW keeps its states in the
  parameter dtype, so bf16 weights, gradients and Adam states, no fp32 master ("bf16-pure"). FSDP2
  keeps that: axolotl swaps accelerate's fsdp2_prepare_model for its own, which does not upcast.
  FSDP1 goes through accelerate's Accelerator.prepare_model, which upcasts the flat parameters to
  fp32 under mixed precision, and DeepSpeed's bf16/ZeRO optimizers hold fp32 master weights and
  states: "bf16" (16-bit compute weights, fp32 master in the optimizer);
- LoRA/QLoRA: the frozen base in torch_dtype, adapters upcast to fp32 by PEFT's get_peft_model
  (autocast_adapter_dtype=True, peft mapping_func.py; axolotl passes peft_autocast_adapter_dtype only
  when set): "bf16", or "bf16-pure" with `peft_autocast_adapter_dtype: false`.
"""

from __future__ import annotations

import os
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers import deepspeed
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
from trainplan.job.defaults import axolotl as defaults

FORMAT = "axolotl"
_MARKERS = ("sequence_len", "micro_batch_size", "adapter", "lora_r", "lora_target_linear", "num_epochs",
            "sample_packing", "load_in_4bit", "load_in_8bit", "val_set_size", "dataset_prepared_path",
            "pad_to_sequence_len", "lora_model_dir", "special_tokens", "plugins", "chat_template")
_DEFAULTS = {d.field: d for d in defaults.DEFAULTS}

# transformers OptimizerNames (and axolotl's own) -> trainplan optimizers, with a note where it is a judgement
_PAGED = "bitsandbytes paged: states on the GPU until memory runs short"
HF_OPTIMIZERS: dict[str, tuple[str, str]] = {
    "adamw_torch": ("adamw", ""), "adamw_hf": ("adamw", ""), "adamw_torch_fused": ("adamw-fused", ""),
    "adamw_apex_fused": ("adamw-fused", ""), "adafactor": ("adafactor", ""), "sgd": ("sgd", ""),
    "adamw_bnb_8bit": ("adamw-8bit", "bitsandbytes AdamW8bit"), "adamw_8bit": ("adamw-8bit", "bitsandbytes AdamW8bit"),
    "adamw_torch_8bit": ("adamw-8bit", "torchao AdamW8bit"), "paged_adamw_8bit": ("paged-adamw-8bit", ""),
    "paged_adamw_32bit": ("adamw", f"fp32 AdamW, {_PAGED}"),
    "lion_32bit": ("lion", ""), "paged_lion_32bit": ("lion", _PAGED),
}
_UNMODELLED = {
    "tiled_mlp": "ALST tiled MLP (MLP activations computed in shards) is not modelled",
    "lora_target_parameters": "LoRA on 3-D expert parameters is not modelled",
    "peft_layers_to_transform": "LoRA on a subset of layers is not modelled",
    "unfrozen_parameters": "full fine-tuning of a parameter subset (regex) is not modelled",
    "selective_checkpointing": "saving chosen ops inside checkpointed layers is not modelled",
    "layer_offloading": "layer offloading to CPU is not modelled",
    "auto_find_batch_size": "the micro-batch is found at run time",
    "relora": "ReLoRA restarts are not modelled",
    "dpo_use_liger_kernel": "Liger's fused DPO loss is not modelled",
    "fp8": "TorchAO fp8 GEMMs over bf16 weights without an fp32 master: trainplan's fp8 assumes a master copy",
    "qat": "quantization-aware training is not modelled",
    "model_quantization_config": "a pre-quantized (MXFP4/FP8) base is not modelled",
    "gptq": "a GPTQ base is not modelled",
}


def hf_optimizer(c: Collector, value: Any, key: str) -> None:
    """An HF `optim` name (axolotl `optimizer`, ms-swift `optim`) as trainplan's optimizer."""
    name = str(value).strip().lower()
    if name in HF_OPTIMIZERS:
        mapped, note = HF_OPTIMIZERS[name]
        c.set("optimizer", mapped, key=key, raw=value, note=note)
    else:
        c.skip(key, value, "an optimizer trainplan does not model; the framework's AdamW is assumed")


def default(c: Collector, field_name: str, table: dict, version: str, value: Any = None, extra: str = "") -> None:
    """Emit a framework default from its defaults module (value, extra: when a rule picks the value)."""
    d = table[field_name]
    note = f"{d.note}; " if d.note else ""
    c.default(field_name, d.value if value is None else value, key=d.key,
              note=f"{note}{d.key} unset: {d.raw if d.raw is not None else d.value!r} ({version} {d.source}){extra}")


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict):
        return 0
    score = 2 * sum(k in data for k in _MARKERS)
    if "base_model" in data:      # axolotl's name for the model; no other format here has it
        return 20 + score
    return score if score >= 6 else 0


class _Keys:
    """The config's keys as read: which were looked at (the rest count as ignored), typed getters
    whose errors name the file and key, and "this key, else axolotl's default"."""

    def __init__(self, c: Collector, data: dict) -> None:
        self.c, self.data, self.used = c, data, set()

    def __call__(self, key: str, fallback: Any = None) -> Any:
        self.used.add(key)
        value = self.data.get(key)
        return fallback if value is None else value

    def flag(self, key: str) -> bool:
        return as_bool(self(key, False), key, self.c.file)

    def put(self, key: str, field_name: str, kind, note: str = "", **kw) -> Any:
        value = self(key)
        if value is None:
            if field_name in _DEFAULTS:
                default(self.c, field_name, _DEFAULTS, defaults.VERSION)
            return None
        value = kind(value, key, self.c.file, **kw)
        self.c.set(field_name, value, key=key, note=note)
        return value


def read(data: dict, path: str, ctx: ReadContext | None = None) -> Imported:
    ctx = ctx or ReadContext()
    c = Collector(FORMAT, path)
    get = _Keys(c, data)
    c.set("framework", "axolotl", key="(an axolotl config)",
          note="HF Trainer underneath (src/axolotl/core/builders), launched by accelerate")
    if get("base_model"):
        c.set("model", str(data["base_model"]), key="base_model")
    method = _method(c, get)
    _batches(c, get)
    _checkpointing(c, get)
    attention = _attention(c, get)
    if get.flag("sample_packing") and attention is not None and attention.startswith("flash"):
        c.derived("padding_free", True, key="sample_packing",
                  note="multipack under flash attention: each packed sample attends only within itself "
                       "(src/axolotl/monkeypatch/utils.py get_unpad_data: per-sample cu_seqlens)")
    _kernels(c, get)
    sets = get("datasets")
    if isinstance(sets, list):      # axolotl `datasets: [{path: tatsu-lab/alpaca, type: alpaca}, ...]`
        paths = [d.get("path") for d in sets if isinstance(d, dict)]
        if paths and all(isinstance(p, str) and p for p in paths):
            read_dataset(c, paths, "datasets")
    engine, ds = _distributed(c, get, ctx)
    _precision(c, get, method, engine, attention)
    _rl(c, get, method)
    if get("optimizer") is not None:
        hf_optimizer(c, data["optimizer"], "optimizer")
    else:
        default(c, "optimizer", _DEFAULTS, defaults.VERSION)
    if get("torch_compile") not in (None, False):
        c.set("compile", True, key="torch_compile", raw=data["torch_compile"],
              note="passed to TrainingArguments.torch_compile ('auto' is truthy there: core/builders/base.py)")
    for key, why in _UNMODELLED.items():
        if get(key) not in (None, False, [], {}, ""):
            c.skip(key, data[key], why)
    c.ignore(sum(1 for k in data if k not in get.used))
    if ds is not None:
        c.merge(ds)     # last: the DeepSpeed JSON's own values win, as the HF integration requires
    return c.result()


def _method(c: Collector, get: _Keys) -> str:
    adapter, in4, in8 = get("adapter"), get.flag("load_in_4bit"), get.flag("load_in_8bit")
    if not adapter:
        if in4 or in8:
            raise TrainplanError(f"{c.file}: load_in_4bit/load_in_8bit need an adapter (axolotl refuses a "
                                 "quantized full fine-tune: schemas/peft.py validate_adapter)")
        default(c, "method", _DEFAULTS, defaults.VERSION)
        return "full"
    adapter = str(adapter).lower()
    if adapter == "qlora":
        if not in4:
            raise TrainplanError(f"{c.file}: adapter: qlora needs load_in_4bit: true (schemas/peft.py validate_qlora)")
        c.set("method", "qlora", key="adapter", raw="qlora", note="bitsandbytes 4-bit base (loaders/model.py)")
        bnb = get("bnb_config_kwargs", {})
        bnb = bnb if isinstance(bnb, dict) else {}
        for field_name, key in (("quant", "bnb_4bit_quant_type"), ("double_quant", "bnb_4bit_use_double_quant")):
            if key not in bnb:
                default(c, field_name, _DEFAULTS, defaults.VERSION)
            else:
                value = str(bnb[key]).lower() if field_name == "quant" else as_bool(bnb[key], key, c.file)
                c.set(field_name, value, key=f"bnb_config_kwargs.{key}", raw=bnb[key])
        method = "qlora"
    elif adapter == "lora" and in8:
        c.set("method", "qlora", key="adapter+load_in_8bit", raw="lora",
              note="LoRA over a bitsandbytes LLM.int8 base (loaders/model.py: load_in_8bit with adapter lora)")
        c.set("quant", "int8", key="load_in_8bit", raw=True)
        method = "qlora"
    elif adapter == "lora":
        c.set("method", "lora", key="adapter", raw="lora")
        method = "lora"
        if in4:
            c.skip("load_in_4bit", True, "axolotl quantizes to 4 bits only with adapter: qlora (loaders/model.py); "
                   "the base stays 16-bit")
    else:
        c.skip("adapter", adapter, "an adapter type trainplan does not model; full fine-tuning is assumed")
        return "full"
    if get.put("lora_r", "lora_rank", as_int, minimum=1) is None:
        c.skip("lora_r", None, "axolotl requires lora_r with an adapter; trainplan's default rank is used")
    get.put("lora_alpha", "lora_alpha", as_float)
    get.put("lora_dropout", "lora_dropout", as_float)
    modules = names(get("lora_target_modules"))
    if get.flag("lora_target_linear"):
        c.set("lora_targets", "all-linear", key="lora_target_linear", raw=True,
              note="every Linear but the output embedding (loaders/adapter.py find_all_linear_names)"
                   + (f", plus {', '.join(modules)}" if modules else ""))
    elif modules:
        c.set("lora_targets", modules, key="lora_target_modules", raw=get("lora_target_modules"))
    else:
        c.skip("lora_target_modules", None, "no LoRA targets given (lora_target_modules / lora_target_linear)")
    get.put("peft_use_dora", "dora", as_bool)
    if get("lora_modules_to_save"):   # PEFT modules_to_save (axolotl loaders/adapter.py load_lora)
        read_modules_to_save(c, get("lora_modules_to_save"), "lora_modules_to_save")
    return method


def _batches(c: Collector, get: _Keys) -> None:
    get.put("sequence_len", "seq_len", as_int, minimum=1,
            note="the truncation length; without sample_packing or pad_to_sequence_len a batch pads only to its "
                 "longest sample, so this is the worst case")
    get("pad_to_sequence_len")
    get.put("sample_packing", "packing", as_bool)
    micro = get.put("micro_batch_size", "batch_size", as_int, minimum=1)
    total = get("batch_size")
    if get("gradient_accumulation_steps") is None and total is not None:
        accum = max(1, as_int(total, "batch_size", c.file, minimum=1) // (micro or 1))
        c.derived("grad_accum", accum, key="batch_size",
                  note="gradient_accumulation_steps = batch_size // micro_batch_size (utils/config/__init__.py "
                       "normalize_config; batch_size is per GPU before data parallelism)")
    else:
        get.put("gradient_accumulation_steps", "grad_accum", as_int, minimum=1)
    get.put("num_epochs", "epochs", as_float)
    steps = get("max_steps")
    if steps is not None and as_int(steps, "max_steps", c.file) > 0:
        c.set("max_steps", as_int(steps, "max_steps", c.file), key="max_steps", note="takes precedence over num_epochs")


def _checkpointing(c: Collector, get: _Keys) -> None:
    gc, offload = get("gradient_checkpointing"), get("activation_offloading")
    get("gradient_checkpointing_kwargs")
    if isinstance(gc, str) and gc.lower() in ("offload", "offload_disk"):
        c.set("grad_ckpt", "full", key="gradient_checkpointing", raw=gc)
        c.set("activation_offload", True, key="gradient_checkpointing", raw=gc,
              note=f"'{gc}' = gradient_checkpointing true + activation_offloading "
                   f"{'true' if gc.lower() == 'offload' else 'disk (to disk, not CPU)'} "
                   "(schemas/validation.py check_gradient_checkpointing_w_offload)")
        return
    if gc is None:
        default(c, "grad_ckpt", _DEFAULTS, defaults.VERSION)
    else:
        c.set("grad_ckpt", "full" if as_bool(gc, "gradient_checkpointing", c.file) else "none",
              key="gradient_checkpointing", raw=gc)
    if offload not in (None, False):
        c.set("activation_offload", True, key="activation_offloading", raw=offload,
              note="checkpointed layer inputs moved off the GPU (core/trainers/mixins/activation_checkpointing.py)")


def _attention(c: Collector, get: _Keys) -> str | None:
    impl, key = get("attn_implementation"), "attn_implementation"
    for flag, canonical in (("xformers_attention", "xformers"), ("sage_attention", "sage"),
                            ("flex_attention", "flex_attention"), ("flash_attention", "flash_attention_2"),
                            ("sdp_attention", "sdpa"), ("eager_attention", "eager")):
        if get(flag) and impl is None:   # schemas/config.py normalize_attn_implementation: first set flag wins
            impl, key = canonical, flag
    if impl is None:
        default(c, "attention", _DEFAULTS, defaults.VERSION)
        return None
    name = str(impl).split("@")[0].split(":")[0].lower()
    flash = name.startswith("flash") or "flash-attn" in name
    if name in ("eager", "sdpa"):
        c.set("attention", name, key=key, raw=impl)
    elif flash or name in ("flex_attention", "xformers", "sage") or "sage-attention" in name:
        c.set("attention", "flash", key=key, raw=impl,
              note="" if flash else f"{name}: memory-efficient attention without the score matrix, sized as flash")
    else:
        c.skip(key, impl, "an attention kernel trainplan does not model")
    return name


def _kernels(c: Collector, get: _Keys) -> None:
    plugins = [str(p) for p in names(get("plugins"))]
    liger = any("liger" in p.lower() for p in plugins)
    cce = any("cut_cross_entropy" in p.lower() for p in plugins) and \
        as_bool(get("cut_cross_entropy", True), "cut_cross_entropy", c.file)
    kernels = [k for k in ("liger_rope", "liger_rms_norm", "liger_glu_activation", "liger_swiglu", "liger_layer_norm")
               if get.flag(k)]
    flce = get.flag("liger_fused_linear_cross_entropy")
    if (kernels or flce) and not liger:
        c.skip("liger_*", kernels + (["liger_fused_linear_cross_entropy"] if flce else []),
               "Liger keys without axolotl.integrations.liger.LigerPlugin in plugins are not read")
        flce = False
    elif liger:
        if kernels:
            c.set("liger", True, key=",".join(kernels), raw=True, note="Liger RMSNorm/SwiGLU/RoPE kernels")
        if flce:
            c.set("loss", "fused", key="liger_fused_linear_cross_entropy", raw=True,
                  note="Liger fused linear cross-entropy: the logits are never materialized")
        elif get.flag("liger_cross_entropy"):
            c.skip("liger_cross_entropy", True, "Liger's cross-entropy kernel over materialized logits is not modelled")
    if cce:
        c.set("loss", "fused", key="plugins", raw="CutCrossEntropyPlugin",
              note="Cut Cross-Entropy (cut_cross_entropy defaults to true: integrations/cut_cross_entropy/args.py)")
    elif not flce and get.flag("chunked_cross_entropy"):
        c.set("loss", "chunked", key="chunked_cross_entropy", raw=True,
              note="8 chunks, each upcast to fp32 (monkeypatch/loss/chunked.py)")
        if get("chunked_cross_entropy_num_chunks") not in (None, 8):
            c.skip("chunked_cross_entropy_num_chunks", get("chunked_cross_entropy_num_chunks"),
                   "trainplan sizes the chunked loss with 8 chunks")
    elif not flce:
        default(c, "loss", _DEFAULTS, defaults.VERSION)
    for p in plugins:
        if "liger" not in p.lower() and "cut_cross_entropy" not in p.lower():
            c.skip("plugins", p, "a plugin trainplan does not model")


def _distributed(c: Collector, get: _Keys, ctx: ReadContext) -> tuple[str, Imported | None]:
    """The engine ('deepspeed', 'fsdp1', 'fsdp2' or 'none') and the DeepSpeed config read, after the layout keys."""
    for key, field_name, note in (("tensor_parallel_size", "tp", "DeepSpeed AutoTP / accelerate ParallelismConfig"),
                                  ("context_parallel_size", "cp", "ring-flash-attention over the sequence"),
                                  ("sequence_parallel_degree", "cp", "deprecated name of context_parallel_size"),
                                  ("expert_parallel_size", "ep", "")):
        if get(key) is not None and as_int(get(key), key, c.file, minimum=1) > 1:
            c.set(field_name, as_int(get(key), key, c.file), key=key, note=note)
    if get("dp_replicate_size") is not None and as_int(get("dp_replicate_size"), "dp_replicate_size", c.file) > 1:
        c.set("fsdp", "hybrid", key="dp_replicate_size", raw=get("dp_replicate_size"),
              note="replicas of an FSDP shard group (HSDP); trainplan's hybrid shards within a node")
    if get("dp_shard_size") is not None:
        c.skip("dp_shard_size", get("dp_shard_size"), "the FSDP shard group size is not modelled apart from "
               "hybrid sharding within a node")
    ds, fsdp_list, fsdp_cfg, top_version = get("deepspeed"), get("fsdp"), get("fsdp_config"), get("fsdp_version")
    if ds:
        return "deepspeed", _deepspeed(c, ds, ctx)
    if not fsdp_list and not fsdp_cfg:
        return "none", None
    # schemas/validation.py check_fsdp_config_kwargs_prefix: the fsdp_ prefix is stripped
    cfg = {(k[5:] if k.startswith("fsdp_") and k != "fsdp_version" else k): v
           for k, v in fsdp_cfg.items()} if isinstance(fsdp_cfg, dict) else {}
    version = top_version or cfg.get("fsdp_version") or cfg.get("version")
    if version is None:
        default(c, "fsdp_version", _DEFAULTS, defaults.VERSION)
    else:
        c.set("fsdp_version", as_int(version, "fsdp_version", c.file, minimum=1), key="fsdp_version")
    if not c.has("fsdp"):
        c.set("fsdp", "full", key="fsdp_config" if fsdp_cfg else "fsdp", raw=fsdp_list or "fsdp_config",
              note="axolotl exports ACCELERATE_USE_FSDP; the sharding is accelerate's FULL_SHARD "
                   "(utils/trainer.py setup_fsdp_envs)")
    for item in names(fsdp_list) if not isinstance(fsdp_list, bool) else ():
        if item.lower() not in ("full_shard", "auto_wrap"):
            c.skip("fsdp", item, "axolotl does not pass the legacy fsdp list on (setup_fsdp_envs reads fsdp_config)")
    raf = cfg.get("reshard_after_forward")
    if raf is not None and as_bool(raf, "fsdp_config.reshard_after_forward", c.file):
        c.set("reshard_after_forward", True, key="fsdp_config.reshard_after_forward", raw=raf)
    else:
        default(c, "reshard_after_forward", _DEFAULTS, defaults.VERSION)
        if raf is not None:
            c.skip("fsdp_config.reshard_after_forward", raf, "axolotl exports FSDP_RESHARD_AFTER_FORWARD only when "
                   "true, so accelerate reshards anyway")
    if str(cfg.get("sharding_strategy") or "FULL_SHARD").upper() not in ("FULL_SHARD", "1"):
        c.skip("fsdp_config.fsdp_sharding_strategy", cfg["sharding_strategy"], "not a field of axolotl's FSDPConfig "
               "(schemas/fsdp.py): dropped, accelerate's FULL_SHARD is used")
    if as_bool(cfg.get("offload_params", False), "fsdp_config.offload_params", c.file):
        c.set("offload", "all", key="fsdp_config.offload_params", raw=True,
              note="FSDP CPU offload: parameters and gradients on the CPU, the optimizer step there")
        c.set("offload_device", "cpu", key="fsdp_config.offload_params", raw=True)
    if as_bool(cfg.get("activation_checkpointing", False), "fsdp_config.activation_checkpointing", c.file):
        c.set("grad_ckpt", "full", key="fsdp_config.activation_checkpointing", raw=True,
              note="FSDP's checkpoint_wrapper on every wrapped layer (monkeypatch/accelerate/fsdp2.py)")
    return ("fsdp2" if str(version) == "2" else "fsdp1"), None


def _deepspeed(c: Collector, value: Any, ctx: ReadContext) -> Imported | None:
    if isinstance(value, dict):
        return deepspeed.read(value, f"{c.file} (deepspeed)", ReadContext(base_dir=ctx.base_dir, included=True))
    name = str(value)
    imported = ctx.include(name)
    if imported is not None:
        return imported
    shipped = defaults.DEEPSPEED_CONFIGS.get(os.path.basename(name))
    if shipped is not None and os.path.dirname(os.path.normpath(name)).endswith("deepspeed_configs"):
        label = defaults.DEEPSPEED_CONFIGS_SOURCE + os.path.basename(name)
        return deepspeed.read(shipped, label, ReadContext(base_dir=ctx.base_dir, included=True))
    c.skip("deepspeed", name, "the DeepSpeed config file is not there; ZeRO settings are not read")
    return None


def _precision(c: Collector, get: _Keys, method: str, engine: str, attention: str | None) -> None:
    bf16, fp16 = get("bf16"), get("fp16")
    fp16_on = fp16 is not None and as_bool(fp16, "fp16", c.file)
    if bf16 is None or str(bf16).lower() in ("auto", "full"):   # resolve_dtype: 'auto' is on unless fp16 is set
        bf16_on = fp16_on is False or str(bf16).lower() == "full"
    else:
        bf16_on = as_bool(bf16, "bf16", c.file)
    key = "bfloat16" if get.flag("bfloat16") else "bf16"
    if bf16_on or key == "bfloat16":
        dtype = "bf16"
    elif fp16_on or get.flag("load_in_8bit") or get.flag("float16"):
        dtype, key = "fp16", "fp16" if fp16_on else "load_in_8bit" if get.flag("load_in_8bit") else "float16"
    else:
        c.set("precision", "fp32", key="bf16/fp16", raw=[bf16, fp16], note="neither bf16 nor fp16: fp32 weights "
              "and compute (utils/config/__init__.py resolve_dtype)")
        return

    def put(value: str, note: str) -> None:
        if key in get.data:
            c.set("precision", value, key=key, raw=get.data[key], note=note)
        else:
            default(c, "precision", _DEFAULTS, defaults.VERSION, value=value, extra=f"; {note}")

    if method != "full":
        autocast = get("peft_autocast_adapter_dtype")
        if autocast is not None and not as_bool(autocast, "peft_autocast_adapter_dtype", c.file):
            c.set("precision", f"{dtype}-pure", key="peft_autocast_adapter_dtype", raw=autocast,
                  note="adapters kept in the base dtype: 16-bit adapters, gradients and Adam states")
        else:
            put(dtype, "frozen base in torch_dtype, adapters upcast to fp32 by PEFT (get_peft_model "
                       "autocast_adapter_dtype=True), AdamW states fp32")
    elif engine in ("deepspeed", "fsdp1"):
        put(dtype, "DeepSpeed's bf16/ZeRO optimizer (or FSDP1's fp32 upcast in accelerate's prepare_model) keeps "
                   "fp32 master weights and Adam states beside the 16-bit compute weights")
    else:
        put(f"{dtype}-pure", "full fine-tune of a model loaded in torch_dtype: no fp32 master, AdamW states in the "
                             "parameter dtype" + (" (axolotl's FSDP2 wrapper does not upcast: monkeypatch/accelerate/"
                                                  "fsdp2.py)" if engine == "fsdp2" else ""))
        if engine == "none" and attention in (None, "sdpa", "eager") and not get.flag("cut_cross_entropy"):
            c.skip("attn_implementation", get("attn_implementation"),
                   "full fine-tune with sdpa/eager attention: axolotl keeps embed_tokens, lm_head and the norms "
                   "in fp32 (loaders/model.py _configure_embedding_dtypes); trainplan sizes them in 16 bits")


def _rl(c: Collector, get: _Keys, method: str) -> None:
    rl = str(get("rl") or "").lower()
    get("rl_beta")
    if not rl:
        return
    stage = {"dpo": "dpo", "ipo": "dpo", "kto": "kto", "orpo": "orpo", "simpo": "simpo", "grpo": "grpo"}.get(rl)
    if stage is None:
        c.skip("rl", rl, "an RL trainer trainplan does not model")
        return
    c.set("stage", stage, key="rl", raw=rl, note="IPO is DPO with another loss" if rl == "ipo" else "")
    if rl == "orpo":
        ref, why = False, "ORPO is reference-free"
    elif method != "full" and not get("rl_adapter_ref_model"):
        ref, why = False, "the adapter is disabled for reference log-probs (TRL's autounwrap)"
    else:
        ref, why = True, ("train.py setup_reference_model loads a second copy of the model for every rl but ORPO "
                          "when there is no adapter (SimPO and GRPO with trl.beta 0 included)")
    c.derived("ref_model", ref, key="rl", note=why)
    trl = get("trl")
    if isinstance(trl, dict) and trl.get("use_vllm"):
        c.skip("trl.use_vllm", True, "vLLM generation memory for GRPO is not modelled")
