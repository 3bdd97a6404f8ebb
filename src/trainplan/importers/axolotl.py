"""axolotl YAML (`axolotl train config.yml`).

Keys and defaults (axolotl-ai-cloud/axolotl 067b021, shared/reference/framework_configs.md section 4):
the schema in src/axolotl/utils/schemas/{config,peft,training,fsdp}.py, validators in
utils/schemas/validation.py, the dtype rule in utils/config/__init__.py (resolve_dtype), loading in
loaders/model.py, FSDP environment in utils/trainer.py (setup_fsdp_envs), the FSDP2 wrapper in
monkeypatch/accelerate/fsdp2.py, plugin keys in integrations/liger/args.py and
integrations/cut_cross_entropy/args.py. Defaults live in trainplan/job/defaults/axolotl.py.

The precision rule this reader encodes: importers/axolotl_sections.py.
"""

from __future__ import annotations

from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.axolotl_sections import _DEFAULTS, _distributed, _Keys, _precision, _rl, default, evaluation
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
    read_flash_version,
    read_length_grouping,
    read_modules_to_save,
)
from trainplan.importers.hf_optim import low_rank_optim
from trainplan.job.defaults import axolotl as defaults
from trainplan.job.defaults import defaults as job_defaults
from trainplan.job.defaults import hf as hf_defaults

FORMAT = "axolotl"
_MARKERS = ("sequence_len", "micro_batch_size", "adapter", "lora_r", "lora_target_linear", "num_epochs",
            "sample_packing", "load_in_4bit", "load_in_8bit", "val_set_size", "dataset_prepared_path",
            "pad_to_sequence_len", "lora_model_dir", "special_tokens", "plugins", "chat_template")

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


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict):
        return 0
    score = 2 * sum(k in data for k in _MARKERS)
    if "base_model" in data:      # axolotl's name for the model; no other format here has it
        return 20 + score
    return score if score >= 6 else 0


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
    evaluation(c, get)
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
    if str(get("optimizer")).strip().lower() == "muon":
        # core/builders/base.py: optimizer "muon" -> axolotl-contribs-mit MuonOptimizerFactory (muon/muon.py,
        # Moonlight's Muon: every trainable >= 2-D weight but embed_tokens/lm_head, AdamW on the rest); with a
        # device mesh (FSDP2) its DistMuonOptimizerFactory, which the layout check refuses
        c.set("optimizer", "muon", key="optimizer", raw=data["optimizer"],
              note="axolotl-contribs-mit MuonOptimizerFactory (Moonlight's Muon, AdamW on embeddings, head and "
                   "vectors)")
    elif get("optimizer") is not None and low_rank_optim(
            c, data["optimizer"], get("optim_args"), key="optimizer",
            default=lambda name: default(c, name, job_defaults("hf"), hf_defaults.VERSION)):
        get("optim_target_modules")     # core/builders/base.py: passed to TrainingArguments with `optim`
    elif get("optimizer") is not None:
        hf_optimizer(c, data["optimizer"], "optimizer")
    else:
        default(c, "optimizer", _DEFAULTS, defaults.VERSION)
    read_length_grouping(c, get("group_by_length"), get("train_sampling_strategy"))
    read_experts_impl(c, get("experts_implementation"), "experts_implementation")   # loaders/model.py
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
        read_flash_version(c, impl, key)
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
