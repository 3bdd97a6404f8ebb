"""LLaMA-Factory train configs: the flat YAML or JSON of `llamafactory-cli train x.yaml [key=value ...]`.

Keys and defaults (hiyouga/LLaMA-Factory ff6d4d1, 2026-08-18; shared/reference/framework_configs.md
section 1; the defaults live in trainplan/job/defaults/llamafactory.py): src/llamafactory/hparams/
parser.py (`read_args`: YAML via OmegaConf, JSON via json, trailing key=value via OmegaConf.from_cli;
`get_train_args` checks and post-processing), hparams/finetuning_args.py, data_args.py, model_args.py,
training_args.py (HF Seq2SeqTrainingArguments + Ray/FP8 keys). `deepspeed:` names a DeepSpeed JSON,
read with importers/deepspeed.py and laid over these settings (the engine's own keys win there).

The train arguments are read section by section, with precision as LLaMA-Factory runs it, in
importers/llamafactory_args.py.
"""

from __future__ import annotations

import json
import os
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import Collector, Imported, ReadContext, as_int, read_dataset
from trainplan.importers.llamafactory_args import (
    _SRC,
    _batch,
    _evaluation,
    _kernels,
    _method,
    _precision,
    _sequence,
    _stage,
)
from trainplan.importers.llamafactory_optim import _optimizer

FORMAT = "llamafactory"
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
    _evaluation(c, get)
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
