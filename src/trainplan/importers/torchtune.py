"""torchtune recipe configs (YAML), on their own or named by `tune run RECIPE --config FILE`.

Keys and defaults (pytorch/torchtune bd2a0fc, 2026-04-23, shared/reference/framework_configs.md section 6;
defaults in trainplan/job/defaults/torchtune.py): the recipes (recipes/{full,lora}_finetune_
{single_device,distributed}.py) read top-level keys with cfg.get/cfg.<key>; `model._component_` names a
model builder (torchtune/models/<family>/_model_builders.py: `llama3_1_8b`, `lora_llama3_1_8b`,
`qlora_llama3_1_8b` = lora builder with quantize_base=True).

Precision: the recipes build the model under `training.set_default_dtype(self._dtype)` with
`self._dtype = training.get_dtype(cfg.dtype)` and check it with `validate_expected_param_dtype` (base
weights for full, adapter params for LoRA): `dtype: bf16` means bf16 weights, bf16 LoRA adapters, bf16
gradients and bf16 AdamW states (torch.optim.AdamW allocates its states with zeros_like(param)); no fp32
master copy ("bf16-pure"). QLoRA: every base linear but the output head is a torchao NF4 tensor
(torchtune/models/llama3/_component_builders.py FrozenNF4Linear / LoRALinear(quantize_base=True)).
Loss: `LinearCrossEntropyLoss` (torchtune/modules/loss/cross_entropy_loss.py) projects and upcasts 8
chunks of the hidden states one by one, but autograd keeps every chunk's logits until backward, so it is
a chunked loss, not a fused one (Liger/CCE never keep logits); `CEWithChunkedOutputLoss` is the same
with the projection in the model.
"""

from __future__ import annotations

import os
import re
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import Collector, Imported, ReadContext, as_bool, as_float, as_int, names
from trainplan.job.defaults import defaults

FORMAT = "torchtune"
_D = defaults("torchtune")
_TOP = ("model", "tokenizer", "checkpointer", "dataset", "optimizer", "loss")
_MARK = re.compile(r"^torchtune\.")
# builder name (lora_/qlora_ stripped) -> catalog model
_BUILDERS = {
    "llama2_7b": "llama-2-7b", "llama2_13b": "llama-2-13b", "llama2_70b": "llama-2-70b",
    "llama3_8b": "llama-3-8b", "llama3_70b": "llama-3-70b",
    "llama3_1_8b": "llama-3.1-8b", "llama3_1_70b": "llama-3.1-70b", "llama3_1_405b": "llama-3.1-405b",
    "llama3_2_1b": "llama-3.2-1b", "llama3_2_3b": "llama-3.2-3b",
    "llama3_3_70b": "llama-3.1-70b",          # the same architecture (models/llama3_3/_model_builders.py)
    "mistral_7b": "mistral-7b-v0.1", "phi3_mini": "phi-3-mini-4k", "phi4_14b": "phi-4",
    "gemma2_2b": "gemma-2-2b", "gemma2_9b": "gemma-2-9b", "gemma2_27b": "gemma-2-27b",
    "qwen2_5_0_5b": "qwen2.5-0.5b", "qwen2_5_1_5b": "qwen2.5-1.5b", "qwen2_5_3b": "qwen2.5-3b",
    "qwen2_5_7b": "qwen2.5-7b", "qwen2_5_14b": "qwen2.5-14b", "qwen2_5_32b": "qwen2.5-32b",
    "qwen2_5_72b": "qwen2.5-72b",
    "qwen3_0_6b": "qwen3-0.6b", "qwen3_1_7b": "qwen3-1.7b", "qwen3_4b": "qwen3-4b", "qwen3_8b": "qwen3-8b",
    "qwen3_14b": "qwen3-14b", "qwen3_32b": "qwen3-32b",
}
# torchtune's attention module names -> HF module names (torchtune/models/convert_weights.py _FROM_HF)
_ATTN = {"q_proj": "q_proj", "k_proj": "k_proj", "v_proj": "v_proj", "output_proj": "o_proj"}
_MLP = ("gate_proj", "up_proj", "down_proj")   # w1, w3, w2
_DISTRIBUTED_KEYS = ("fsdp_cpu_offload", "fsdp_reshard_after_forward", "custom_sharded_layers",
                     "data_parallel_shard_dim", "data_parallel_replicate_dim", "tensor_parallel_dim",
                     "tensor_parallel_plan", "context_parallel_dim")
_OPTIMIZERS = {"torch.optim.adamw": "adamw", "torch.optim.adam": "adamw", "torch.optim.sgd": "sgd",
               "bitsandbytes.optim.pagedadamw8bit": "paged-adamw-8bit",
               "bitsandbytes.optim.adamw8bit": "adamw-8bit",
               "bitsandbytes.optim.pagedadamw": None, "bitsandbytes.optim.lion": "lion",
               "torchao.optim.adamw8bit": "adamw-8bit", "torchao.prototype.low_bit_optim.adamw8bit": "adamw-8bit"}
_USED = {"model", "tokenizer", "checkpointer", "dataset", "optimizer", "loss", "batch_size",
         "gradient_accumulation_steps", "epochs", "max_steps_per_epoch", "dtype", "optimizer_in_bwd",
         "enable_activation_checkpointing", "enable_activation_offloading", "ac_mode", "ac_option", "compile",
         "enable_fp8_training", "fp8_recipe_name", *_DISTRIBUTED_KEYS}


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict):
        return 0
    components = [v.get("_component_") for k, v in data.items() if k in _TOP and isinstance(v, dict)]
    if not any(isinstance(x, str) and _MARK.match(x) for x in components):
        return 0
    return 10 + len(components)


def read(data: dict, path: str, ctx: ReadContext | None = None) -> Imported:
    return read_recipe(data, path, ctx)


def read_recipe(data: dict, path: str, ctx: ReadContext | None = None, *, recipe: str | None = None) -> Imported:
    """The config; `recipe` (from `tune run RECIPE`) decides single device vs distributed."""
    c = Collector(FORMAT, path)
    c.set("framework", "torchtune", key="(a torchtune recipe config)",
          note="bf16 weights and AdamW states, no fp32 copy (dtype: bf16); recipes/*.py")
    c.ignore(sum(1 for k in data if k not in _USED))
    method = _model(c, data.get("model"), data.get("checkpointer"))
    _precision(c, data)
    _batch(c, data)
    _optimizer(c, data)
    _memory(c, data)
    _loss(c, data.get("loss"))
    _data(c, data)
    _distributed(c, data, path, recipe, method)
    return c.result()


def _default(c: Collector, field_name: str) -> None:
    d = _D[field_name]
    c.default(field_name, d.value, key=d.key, note=f"{d.source}{'; ' + d.note if d.note else ''}")


def _model(c: Collector, model: Any, checkpointer: Any) -> str:
    if not isinstance(model, dict) or not isinstance(model.get("_component_"), str):
        c.skip("model._component_", None if not isinstance(model, dict) else model.get("_component_"),
               "no model builder: give --model")
        return "full"
    comp = model["_component_"]
    builder = comp.rsplit(".", 1)[-1]
    method = "qlora" if builder.startswith("qlora_") or model.get("quantize_base") is True else \
        "lora" if builder.startswith("lora_") else "full"
    base = re.sub(r"^(q?lora_)", "", builder)
    base = re.sub(r"_(base|instruct)$", "", base)
    name = _BUILDERS.get(base)
    hint = _checkpoint_hint(checkpointer)
    if name:
        c.set("model", name, key="model._component_", raw=comp,
              note="llama3_3_70b has the Llama 3.1 70B architecture" if base == "llama3_3_70b" else "")
    elif hint:
        c.set("model", hint, key="checkpointer.checkpoint_dir", raw=checkpointer.get("checkpoint_dir"),
              note=f"builder {builder} is not in trainplan's table; the checkpoint folder's name is used")
    else:
        c.skip("model._component_", comp, "a model builder trainplan has no catalog model for: give --model")
    c.set("method", method, key="model._component_", raw=comp,
          note={"qlora": "qlora_* builders quantize every base linear but the output head to torchao NF4",
                "lora": "lora_* builder", "full": "a plain model builder: full fine-tune"}[method])
    if method == "qlora":
        c.set("quant", "nf4", key="model._component_", raw=comp, note="torchao to_nf4 (block 64)")
        c.set("double_quant", True, key="model._component_", raw=comp,
              note="torchao NF4 quantizes the per-block scales to int8 in blocks of 256 (scaler_block_size)")
    if method == "full":
        c.ignore(sum(1 for k in model if k != "_component_"))
        return method
    _lora(c, model)
    return method


def _lora(c: Collector, model: dict) -> None:
    for key, field_name, conv in (("lora_rank", "lora_rank", as_int), ("lora_alpha", "lora_alpha", as_float),
                                  ("lora_dropout", "lora_dropout", as_float)):
        if key in model:
            c.set(field_name, conv(model[key], f"model.{key}", c.file), key=f"model.{key}", raw=model[key])
        else:
            _default(c, field_name)
    if "use_dora" in model:
        c.set("dora", as_bool(model["use_dora"], "model.use_dora", c.file), key="model.use_dora",
              raw=model["use_dora"])
    attn = names(model.get("lora_attn_modules"))
    unknown = [m for m in attn if m not in _ATTN]
    if unknown:
        c.skip("model.lora_attn_modules", list(unknown), "not one of q_proj, k_proj, v_proj, output_proj")
    targets = [_ATTN[m] for m in attn if m in _ATTN]
    mlp = as_bool(model.get("apply_lora_to_mlp", False), "model.apply_lora_to_mlp", c.file)
    if mlp:
        targets += _MLP
    if as_bool(model.get("apply_lora_to_output", False), "model.apply_lora_to_output", c.file):
        c.skip("model.apply_lora_to_output", True, "LoRA on the output projection (lm_head) is not modelled")
    if "lora_attn_modules" not in model:
        c.skip("model.lora_attn_modules", None, "required by the lora builders; missing")
    elif targets:
        c.set("lora_targets", tuple(targets), key="model.lora_attn_modules/apply_lora_to_mlp",
              raw={"lora_attn_modules": list(attn), "apply_lora_to_mlp": mlp},
              note="torchtune names -> HF: output_proj = o_proj, MLP w1/w3/w2 = gate_proj/up_proj/down_proj")
    c.ignore(sum(1 for k in model if k not in ("_component_", "lora_rank", "lora_alpha", "lora_dropout",
                                               "use_dora", "lora_attn_modules", "apply_lora_to_mlp",
                                               "apply_lora_to_output", "quantize_base")))


def _checkpoint_hint(checkpointer: Any) -> str | None:
    """An HF id from the checkpoint folder's name (/tmp/Meta-Llama-3.1-8B-Instruct/), when the catalog knows it."""
    if not isinstance(checkpointer, dict) or not isinstance(checkpointer.get("checkpoint_dir"), str):
        return None
    folder = os.path.basename(os.path.normpath(checkpointer["checkpoint_dir"]))
    names_ = (_catalog_name(org + folder) for org in ("", "meta-llama/", "Qwen/", "mistralai/", "google/", "microsoft/"))
    return next((n for n in names_ if n), None)


def _catalog_name(name: str) -> str | None:
    from trainplan import catalog

    try:
        return catalog.resolve_model(name).name
    except TrainplanError:
        return None


def _precision(c: Collector, data: dict) -> None:
    if "dtype" not in data or data["dtype"] is None:
        _default(c, "precision")
        return
    dtype = str(data["dtype"]).lower()
    if dtype == "bf16":
        c.set("precision", "bf16-pure", key="dtype", raw=data["dtype"],
              note="training.get_dtype: the model is built in bf16 and AdamW keeps bf16 states (no fp32 copy)")
    elif dtype == "fp32":
        c.set("precision", "fp32", key="dtype", raw=data["dtype"])
    else:
        c.skip("dtype", data["dtype"], "torchtune recipes accept bf16 or fp32 only (fp16 is rejected)")
    if data.get("enable_fp8_training") and as_bool(data["enable_fp8_training"], "enable_fp8_training", c.file):
        c.skip("enable_fp8_training", True, "torchao float8 linears over bf16 weights without an fp32 copy: "
               "not modelled (trainplan's fp8 keeps an fp32 master)")


def _batch(c: Collector, data: dict) -> None:
    for key, field_name in (("batch_size", "batch_size"), ("gradient_accumulation_steps", "grad_accum")):
        if data.get(key) is None:
            c.skip(key, None, "required by the recipes (cfg." + key + "); missing")
            continue
        c.set(field_name, as_int(data[key], key, c.file, minimum=1), key=key, raw=data[key])
    epochs = data.get("epochs")
    if epochs is not None:
        c.set("epochs", as_float(epochs, "epochs", c.file), key="epochs", raw=epochs)
    per_epoch = data.get("max_steps_per_epoch")
    if per_epoch is not None:
        n = as_int(per_epoch, "max_steps_per_epoch", c.file, minimum=1)
        total = n * (as_int(epochs, "epochs", c.file, minimum=1) if epochs is not None else 1)
        c.derived("max_steps", total, key="max_steps_per_epoch",
                  note=f"{n} optimizer steps per epoch x {epochs or 1} epochs: an upper bound, an epoch with fewer "
                       "batches ends sooner (recipes: break when idx // gradient_accumulation_steps reaches it)")


def _optimizer(c: Collector, data: dict) -> None:
    opt = data.get("optimizer")
    if isinstance(opt, dict) and isinstance(opt.get("_component_"), str):
        comp = opt["_component_"]
        name = _OPTIMIZERS.get(comp.lower(), "?")
        if name == "adamw" and as_bool(opt.get("fused", False), "optimizer.fused", c.file):
            name = "adamw-fused"
        if name in (None, "?"):
            c.skip("optimizer._component_", comp, "an optimizer trainplan does not model")
        else:
            c.set("optimizer", name, key="optimizer._component_", raw=comp,
                  note="fused: True" if name == "adamw-fused" else "")
        c.ignore(sum(1 for k in opt if k not in ("_component_", "fused")))
    if "optimizer_in_bwd" in data:
        c.set("optimizer_in_backward", as_bool(data["optimizer_in_bwd"], "optimizer_in_bwd", c.file),
              key="optimizer_in_bwd", raw=data["optimizer_in_bwd"])
    else:
        _default(c, "optimizer_in_backward")


def _memory(c: Collector, data: dict) -> None:
    ac = data.get("enable_activation_checkpointing")
    ac_on = as_bool(ac, "enable_activation_checkpointing", c.file) if ac is not None else None
    mode = data.get("ac_mode")
    if ac_on is not True and mode in ("full", "selective"):
        # recipes/full_finetune_distributed.py: ac_mode applies only with enable_activation_checkpointing off
        option = data.get("ac_option")
        every = 1 if mode == "full" or option is None else as_int(option, "ac_option", c.file, minimum=0)
        c.set("grad_ckpt", "full", key="ac_mode", raw=mode,
              note="torchtune/training/activations.py: selective = every ac_option-th layer fully checkpointed")
        if every > 1:
            c.set("grad_ckpt_every", every, key="ac_option", raw=option)
    elif ac_on is None:
        _default(c, "grad_ckpt")
    else:
        c.set("grad_ckpt", "full" if ac_on else "none", key="enable_activation_checkpointing", raw=ac,
              note="training.set_activation_checkpointing wraps every TransformerSelfAttentionLayer" if ac_on else "")
    if "enable_activation_offloading" in data:
        c.set("activation_offload", as_bool(data["enable_activation_offloading"], "enable_activation_offloading",
                                            c.file), key="enable_activation_offloading",
              raw=data["enable_activation_offloading"])
    else:
        _default(c, "activation_offload")
    comp = data.get("compile")
    if isinstance(comp, dict):
        c.set("compile", as_bool(comp.get("model", True), "compile.model", c.file), key="compile.model",
              raw=comp, note="compile as a dict: model/loss/optimizer_step flags (full_finetune_distributed.py)")
    elif comp is not None:
        c.set("compile", as_bool(comp, "compile", c.file), key="compile", raw=comp,
              note="compiles the model per layer and the loss (training.compile_model, compile_loss)")
    else:
        _default(c, "compile")


def _loss(c: Collector, loss: Any) -> None:
    if not isinstance(loss, dict) or not isinstance(loss.get("_component_"), str):
        return
    comp = loss["_component_"]
    short = comp.rsplit(".", 1)[-1]
    if short in ("CEWithChunkedOutputLoss", "LinearCrossEntropyLoss"):
        c.set("loss", "chunked", key="loss._component_", raw=comp,
              note="LinearCrossEntropyLoss projects and upcasts 8 chunks but keeps every chunk's logits for "
                   "backward: chunked, not fused (modules/loss/cross_entropy_loss.py)"
              if short == "LinearCrossEntropyLoss" else "the model returns 8 logits chunks, each upcast "
              "separately (modules/loss/ce_chunked_output_loss.py)")
        chunks = loss.get("num_output_chunks", 8)
        if as_int(chunks, "loss.num_output_chunks", c.file, minimum=1) != 8:
            c.skip("loss.num_output_chunks", chunks, "trainplan models torchtune's 8 chunks")
    elif short == "CrossEntropyLoss":
        c.set("loss", "full", key="loss._component_", raw=comp)
    else:
        c.skip("loss._component_", comp, "a loss trainplan does not model")


def _data(c: Collector, data: dict) -> None:
    tok = data.get("tokenizer")
    max_len = tok.get("max_seq_len") if isinstance(tok, dict) else None
    if max_len is not None:
        c.set("seq_len", as_int(max_len, "tokenizer.max_seq_len", c.file, minimum=1), key="tokenizer.max_seq_len",
              raw=max_len, note="the truncation length: samples are at most this long (padded per batch)")
    else:
        c.skip("tokenizer.max_seq_len", None, "null: no truncation, sequences are as long as the data's; "
               "give --seq-len (or --lengths-file)")
    sets = data.get("dataset")
    sets = sets if isinstance(sets, list) else [sets] if isinstance(sets, dict) else []
    packed = [as_bool(s.get("packed", False), "dataset.packed", c.file) for s in sets if isinstance(s, dict)]
    if any(packed):
        c.set("packing", True, key="dataset.packed", raw=True,
              note="PackedDataset fills every sample to tokenizer.max_seq_len")
        c.derived("padding_free", True, key="dataset.packed",
                  note="each packed sample attends only within itself: a block-causal document mask, a flex "
                       "attention BlockMask where flex runs (torchtune/modules/attention_utils.py "
                       "packed_block_causal_mask, _SUPPORTS_FLEX_ATTENTION)")
    elif sets and all("packed" in s for s in sets if isinstance(s, dict)):
        c.set("packing", False, key="dataset.packed", raw=False)
    elif sets:
        _default(c, "packing")


def _distributed(c: Collector, data: dict, path: str, recipe: str | None, method: str) -> None:
    if recipe:
        distributed = "distributed" in recipe
        why = f"recipe {recipe}"
    else:
        present = [k for k in _DISTRIBUTED_KEYS if k in data]
        distributed = bool(present) and "single_device" not in os.path.basename(path)
        why = f"keys only the distributed recipes read ({', '.join(present)})"
    if not distributed:
        if not recipe and "single_device" not in os.path.basename(path):
            c.skip("(recipe)", None, "the recipe decides one GPU or FSDP2 over several: give the `tune run` line "
                   "(--from \"tune run RECIPE --config FILE\"), or --fsdp full")
        c.ignore(sum(1 for k in _DISTRIBUTED_KEYS if k in data))
        return
    c.derived("fsdp", "full", key="(recipe)", note=f"{why}: FSDP2 fully_shard over the data-parallel ranks")
    _default(c, "fsdp_version")
    if data.get("data_parallel_replicate_dim") not in (None, 1):
        as_int(data["data_parallel_replicate_dim"], "data_parallel_replicate_dim", c.file, minimum=1)
        c.set("fsdp", "hybrid", key="data_parallel_replicate_dim", raw=data["data_parallel_replicate_dim"],
              note="HSDP: replicas of sharded groups (trainplan's hybrid shards within a node)")
    if "fsdp_reshard_after_forward" in data:
        c.set("reshard_after_forward", as_bool(data["fsdp_reshard_after_forward"], "fsdp_reshard_after_forward",
                                               c.file), key="fsdp_reshard_after_forward",
              raw=data["fsdp_reshard_after_forward"])
    else:
        _default(c, "reshard_after_forward")
    if data.get("fsdp_cpu_offload") is None:
        _default(c, "offload")
    elif as_bool(data["fsdp_cpu_offload"], "fsdp_cpu_offload", c.file):
        c.set("offload", "all", key="fsdp_cpu_offload", raw=data["fsdp_cpu_offload"],
              note="FSDP2 CPUOffloadPolicy: sharded parameters, gradients and the optimizer step on the CPU")
    else:
        c.set("offload", "none", key="fsdp_cpu_offload", raw=data["fsdp_cpu_offload"])
    for key, field_name in (("tensor_parallel_dim", "tp"), ("context_parallel_dim", "cp")):
        if data.get(key) not in (None, 1):
            c.set(field_name, as_int(data[key], key, c.file, minimum=1), key=key, raw=data[key])
    shard = data.get("data_parallel_shard_dim")
    if shard not in (None, -1):
        c.skip("data_parallel_shard_dim", shard, "an explicit shard degree: trainplan shards over all the "
               "data-parallel GPUs; give --num-gpus to match")
    c.ignore(sum(1 for k in ("custom_sharded_layers", "tensor_parallel_plan") if k in data))


def apply_overrides(data: dict, overrides: list[str], where: str) -> dict:
    """OmegaConf-style `a.b=value` overrides (and `~a.b` deletions) over a config (torchtune/config/_parse.py)."""
    import copy

    import yaml

    merged = copy.deepcopy(data)
    for item in overrides:
        key, _, value = item.partition("=")
        delete = key.startswith("~")
        parts = key.lstrip("~").split(".")
        node = merged
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise TrainplanError(f"--from {where}: override {item} goes into {p}, which is not a mapping")
            node = nxt
        if delete:
            node.pop(parts[-1], None)
        else:
            try:
                node[parts[-1]] = yaml.safe_load(value) if value.strip() else value
            except yaml.YAMLError:
                node[parts[-1]] = value
    return merged
