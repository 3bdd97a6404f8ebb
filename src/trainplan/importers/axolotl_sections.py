"""axolotl config keys past the method and batch: the layout and engine (tensor/context/expert
parallel, FSDP, DeepSpeed), the precision, and RL training; with the key reader (_Keys) and the
framework defaults a key left out takes (job/defaults/axolotl.py), shared by importers/axolotl.py and
the ms-swift readers (`default`).

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

from trainplan.importers import deepspeed
from trainplan.importers.base import (
    Collector,
    Imported,
    ReadContext,
    as_bool,
    as_float,
    as_int,
    names,
    set_eval_strategy,
)
from trainplan.job.defaults import axolotl as defaults

_DEFAULTS = {d.field: d for d in defaults.DEFAULTS}


def default(c: Collector, field_name: str, table: dict, version: str, value: Any = None, extra: str = "") -> None:
    """Emit a framework default from its defaults module (value, extra: when a rule picks the value)."""
    d = table[field_name]
    note = f"{d.note}; " if d.note else ""
    c.default(field_name, d.value if value is None else value, key=d.key,
              note=f"{note}{d.key} unset: {d.raw if d.raw is not None else d.value!r} ({version} {d.source}){extra}")


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


def evaluation(c: Collector, get: _Keys) -> None:
    """val_set_size (default 0): the share of the dataset held out for evaluation (a count above 1), evaluated as
    axolotl's trainer builder sets eval_strategy (core/builders/causal.py): none without a held-out set; "steps" with
    eval_steps, which evals_per_epoch sets to 1 / (evals_per_epoch x num_epochs) of the run where that is below 1
    (utils/config normalize_config); else the config's eval_strategy; else "epoch". A test_datasets set of its own is
    not sized here."""
    if get("test_datasets"):
        c.skip("test_datasets", get("test_datasets"), "a separate evaluation dataset is not sized: its evaluations "
                                                     "are not counted (--val-size gives their samples)")
        return
    raw = get("val_set_size")
    size = as_float(raw, "val_set_size", c.file) if raw is not None else 0.0
    if size <= 0:
        return
    c.set("val_size", float(int(size)) if size > 1 else size, key="val_set_size", raw=raw,
          note="held out of the dataset, not trained on")
    steps, per_epoch, strategy = get("eval_steps"), get("evals_per_epoch"), get("eval_strategy")
    if steps is None and per_epoch is not None:
        share = 1.0 / (as_float(per_epoch, "evals_per_epoch", c.file) * as_float(get("num_epochs", 1), "num_epochs",
                                                                                 c.file))
        if share < 1.0:
            c.derived("eval_steps", share, key="evals_per_epoch",
                      note="eval_steps = 1 / (evals_per_epoch x num_epochs), a share of the run's steps")
            return
    if steps is not None:
        set_eval_strategy(c, "steps", "eval_steps", lambda: (steps, "eval_steps", ""))
    elif strategy is None:
        c.set("eval_each_epoch", True, key="val_set_size", raw=None,
              note="a held-out set without eval_steps is evaluated after each epoch")
    else:       # transformers: eval_steps unset falls back to logging_steps
        set_eval_strategy(c, strategy, "eval_strategy", lambda: (get("logging_steps", 500), "logging_steps",
                                                                 "eval_steps unset: logging_steps (transformers "
                                                                 "TrainingArguments)"), epoch_note="")
