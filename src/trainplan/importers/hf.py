"""HF `TrainingArguments` files (what `HfArgumentParser.parse_json_file/parse_yaml_file` take, with the
example scripts' `model_name_or_path`, `dtype`/`torch_dtype`, run_clm.py `block_size`) and TRL
`trl sft|dpo|grpo --config x.yaml` files (SFTConfig/DPOConfig/GRPOConfig + ModelConfig): framework "hf",
"trl" when a TRL-only key is there, "deepspeed" when either hands the model to DeepSpeed.

Sources (shared/reference/framework_configs.md sections 0, 3, 8b, 9): transformers v5.24.0 and v4.57.1
src/transformers/training_args.py (fields, `__post_init__`, `_process_fsdp_args`,
`_apply_legacy_fsdp_to_config`), trainer.py, trainer_utils.py, integrations/{deepspeed,liger}.py,
modeling_utils.py; huggingface/trl f2cd577 trl/trainer/{base,sft,dpo,grpo,model}_config.py,
{sft,dpo,grpo}_trainer.py, utils.py; accelerate 1.15.0 utils/fsdp_utils.py; peft 0.21.2 mapping_func.py.
Defaults live in job/defaults/hf.py and job/defaults/trl.py.

Precision: the dtype the model is loaded in decides; TrainingArguments `bf16` adds autocast.
- TRL loads the model in `dtype` (ModelConfig "float32", trl/trainer/utils.py create_model_from_path): fp32
  weights, gradients and AdamW states under bf16 autocast ("bf16"), a LoRA base in fp32 (load_fp32). With
  `dtype: bfloat16` a full fine-tune keeps bf16 weights, gradients and AdamW states ("bf16-pure"); LoRA
  adapters are upcast to fp32 (peft get_peft_model autocast_adapter_dtype=True) over a bf16 base ("bf16");
  QLoRA adapters are cast to bf16 by the trainers ({sft,dpo,grpo}_trainer.py), so "bf16-pure".
- A plain TrainingArguments file does not load the model: fp32 weights are assumed (v4.57 from_pretrained;
  v5 loads the checkpoint's dtype, in which case --precision bf16-pure is the run).
- DeepSpeed casts the module to 16 bits with fp32 master weights in its optimizer; FSDP under accelerate
  upcasts trainable parameters to fp32 when mixed precision is on (fsdp_utils.py fsdp2_prepare_model).
"""

from __future__ import annotations

import json
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.frozen import replace
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
from trainplan.job.defaults import Default
from trainplan.job.defaults import hf as hf_defaults
from trainplan.job.defaults import trl as trl_defaults

FORMAT = "hf"
_TRL_KEYS = {"use_peft", "lora_r", "lora_target_modules", "lora_modules_to_save", "lora_target_parameters",
             "use_dora", "use_rslora", "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type", "use_bnb_nested_quant",
             "max_length", "dataset_text_field", "packing", "packing_strategy", "padding_free", "loss_type", "beta",
             "num_generations", "max_completion_length", "use_vllm", "vllm_mode", "completion_only_loss",
             "assistant_only_loss", "dataset_kwargs", "model_init_kwargs", "precompute_ref_log_probs",
             "sync_ref_model", "activation_offloading", "dataset_train_split", "reward_funcs", "attn_implementation"}
_GRPO_KEYS = {"num_generations", "max_completion_length", "use_vllm", "vllm_mode", "reward_funcs", "reward_weights",
              "num_iterations", "generation_batch_size", "steps_per_generation", "scale_rewards"}
_DPO_KEYS = {"beta", "precompute_ref_log_probs", "sync_ref_model", "ref_model_sync_steps", "f_divergence_type",
             "ld_alpha", "use_weighting", "max_prompt_length", "rpo_alpha"}
_ARGS_KEYS = {"output_dir", "per_device_train_batch_size", "gradient_accumulation_steps", "num_train_epochs",
              "max_steps", "learning_rate", "lr_scheduler_type", "warmup_steps", "warmup_ratio", "optim",
              "weight_decay", "max_grad_norm", "bf16", "fp16", "tf32", "activation_checkpointing",
              "gradient_checkpointing", "gradient_checkpointing_kwargs", "torch_compile", "use_liger_kernel",
              "logging_steps", "save_strategy", "save_steps", "eval_strategy", "evaluation_strategy", "report_to",
              "per_device_eval_batch_size", "dataloader_num_workers", "ddp_find_unused_parameters", "fsdp",
              "fsdp_config", "deepspeed", "do_train", "overwrite_output_dir", "save_total_limit", "run_name",
              "remove_unused_columns", "group_by_length", "model_name_or_path", "dataset_name", "block_size"}
# keys only other formats have (LLaMA-Factory, ms-swift, axolotl, DeepSpeed, accelerate, torchtune, torchtitan)
_FOREIGN = {"finetuning_type", "stage", "template", "cutoff_len", "lora_target", "lora_rank", "quantization_bit",
            "flash_attn", "dataset_dir", "pref_beta", "enable_liger_kernel", "disable_gradient_checkpointing",
            "pure_bf16", "dataset", "model", "tuner_type", "train_type", "rlhf_type", "attn_impl", "quant_bits",
            "quant_method", "target_modules", "base_model", "micro_batch_size", "sequence_len", "sample_packing",
            "adapter", "zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
            "compute_environment", "distributed_type", "optimizer", "checkpointer", "tokenizer", "loss", "training",
            "job", "parallelism"}
_DICT_KEYS = ("activation_checkpointing_kwargs", "gradient_checkpointing_kwargs", "model_init_kwargs",
              "liger_kernel_config", "deepspeed", "fsdp_config")     # the last two may also be file paths
# optim (training_args.py OptimizerNames) -> trainplan optimizer, with a note where it is a judgement
_OPTIM = {"adamw_torch": ("adamw", ""), "adamw_hf": ("adamw", "v4 alias of torch AdamW"),
          "adamw_torch_fused": ("adamw-fused", ""), "adamw_apex_fused": ("adamw-fused", "apex FusedAdam"),
          "adamw_bnb_8bit": ("adamw-8bit", ""), "adamw_8bit": ("adamw-8bit", "alias of adamw_bnb_8bit"),
          "adamw_torch_8bit": ("adamw-8bit", "torchao 8-bit AdamW states"), "paged_adamw_8bit": ("paged-adamw-8bit", ""),
          "paged_adamw_32bit": ("adamw", "bitsandbytes paged 32-bit AdamW: fp32 states in paged memory"),
          "adafactor": ("adafactor", ""), "lion_32bit": ("lion", ""), "paged_lion_32bit": ("lion", "paged states"),
          "sgd": ("sgd", "")}
_DTYPES = {"float32": "fp32", "fp32": "fp32", "float": "fp32", "bfloat16": "bf16", "bf16": "bf16",
           "float16": "fp16", "fp16": "fp16", "half": "fp16", "auto": "auto"}
# FSDPOption (trainer_utils.py) -> (trainplan fsdp, reshard_after_forward)
_FSDP = {"full_shard": ("full", True), "shard_grad_op": ("full", False), "hybrid_shard": ("hybrid", True),
         "hybrid_shard_zero2": ("hybrid", False), "no_shard": ("none", False)}
_UNREAD = (("auto_find_batch_size", "the micro-batch is found at run time (halved on OOM)"),
           ("optim_target_modules", "GaLore/APOLLO projection targets are not modelled"),
           ("use_cpu", "training on the CPU is not modelled"),
           ("parallelism_config", ("an accelerate ParallelismConfig object: read the accelerate config "
                                   "(parallelism_config_* keys) with --from instead")),
           ("lora_target_parameters", "LoRA on raw parameters (MoE experts) is not modelled"))


def detect(data: Any, path: str) -> int:
    if not isinstance(data, dict) or any(k in data for k in _FOREIGN):
        return 0
    if any(isinstance(data.get(k), dict) for k in ("bf16", "fp16")):    # DeepSpeed's {"enabled": ...}
        return 0
    return 2 * sum(k in data for k in _ARGS_KEYS) + 4 * sum(k in data for k in _TRL_KEYS)


def trainer(data: dict) -> str | None:
    """The TRL trainer a config is for ("sft", "dpo", "grpo"), None for plain TrainingArguments."""
    if any(k in data for k in _GRPO_KEYS):
        return "grpo"
    if any(k in data for k in _DPO_KEYS):
        return "dpo"
    return "sft" if any(k in data for k in _TRL_KEYS) else None


class _Reader:
    def __init__(self, data: dict, path: str, ctx: ReadContext | None) -> None:
        self.path, self.ctx, self.rest, self.kind = path, ctx, dict(data), trainer(data)
        self.c = Collector(FORMAT, path)
        self.hf = {d.field: d for d in hf_defaults.DEFAULTS}
        extra = {"dpo": trl_defaults.DPO_DEFAULTS, "grpo": trl_defaults.GRPO_DEFAULTS}.get(self.kind, ())
        self.trl = {d.field: d for d in (*trl_defaults.DEFAULTS, *extra)} if self.kind else {}
        if self.kind == "grpo":     # GRPO has no max_length, and its loss is its own
            self.trl.pop("seq_len"), self.trl.pop("loss")
        for i, key in enumerate(_DICT_KEYS):
            value = self.rest.get(key)
            if isinstance(value, str) and value.lstrip().startswith("{"):   # training_args.py _VALID_DICT_FIELDS
                try:
                    self.rest[key] = json.loads(value)
                except json.JSONDecodeError as exc:
                    raise TrainplanError(f"{path}: {key} is not valid JSON: {exc.msg}") from None
            elif i < 4 and value is not None and not isinstance(value, dict):
                raise TrainplanError(f"{path}: {key} must be a mapping, got {value!r}")

    def pop(self, key: str, default: Any = None) -> Any:
        return self.rest.pop(key, default)

    def b(self, value: Any, key: str) -> bool:
        return as_bool(value, key, self.path)

    def n(self, value: Any, key: str) -> int:
        return as_int(value, key, self.path, minimum=1)

    def x(self, value: Any, key: str) -> float:
        return as_float(value, key, self.path)

    def default(self, field_name: str, *, trl_first: bool = True) -> Default | None:
        d = (self.trl.get(field_name) if trl_first else None) or self.hf.get(field_name)
        if d is not None:
            version = trl_defaults.VERSION if self.trl.get(field_name) is d else hf_defaults.VERSION
            self.c.default(d.field, d.value, key=d.key, note=f"{d.key} not set: {d.source} ({version})"
                           + (f"; {d.note}" if d.note else ""), version=version)
        return d

    def value(self, field_name: str, key: str, convert, *, alias: str = "", note: str = "") -> Any:
        """A key's value into a field (key, else its alias), else the framework's default."""
        found = [k for k in (key, alias) if k and self.rest.get(k) is not None]
        for k in found[1:]:
            self.pop(k)
        if not found:
            d = self.default(field_name)
            return None if d is None else d.value
        raw = self.pop(found[0])
        value = convert(raw, found[0])
        self.c.set(field_name, value, key=found[0], raw=raw, note=note)
        return value

    def read(self) -> Imported:
        c, kind = self.c, self.kind
        engine = "deepspeed" if self.rest.get("deepspeed") not in (None, "", False, {}) else \
            "fsdp" if self._fsdp_items() is not None else None
        if engine == "deepspeed":
            c.set("framework", "deepspeed", key="deepspeed",
                  note="HF Trainer hands the model to the DeepSpeed engine (integrations/deepspeed.py deepspeed_init)")
        else:
            c.set("framework", "trl" if kind else "hf", key=f"({'TRL' if kind else 'TrainingArguments'} keys)",
                  note=f"a TRL {kind.upper()}Config (trl/trainer/{kind}_config.py)" if kind else "")
        if self.rest.get("model_name_or_path"):
            model = self.pop("model_name_or_path")
            c.set("model", str(model), key="model_name_or_path", raw=model)
        method = self._method()
        self.value("batch_size", "per_device_train_batch_size", self.n,
                   note="completions per micro-batch (GRPOConfig)" if kind == "grpo" else
                   "preference pairs per micro-batch: chosen and rejected run together" if kind == "dpo" else "")
        self.value("grad_accum", "gradient_accumulation_steps", self.n)
        self.value("epochs", "num_train_epochs", self.x)
        steps = self.pop("max_steps")
        if steps is not None and as_int(steps, "max_steps", self.path) > 0:
            c.set("max_steps", int(steps), key="max_steps", raw=steps)
        self._sequence()
        if self.rest.get("dataset_name"):         # TRL ScriptArguments.dataset_name (trl/scripts/utils.py)
            read_dataset(c, self.pop("dataset_name"), "dataset_name")
        self._precision(method, engine)
        self._optimizer()
        self._checkpointing()
        self._kernels(engine)
        self._stage(method)
        self._distributed(engine)
        for key, why in _UNREAD:
            value = self.pop(key)
            if value not in (None, False, "", []):
                c.skip(key, value, why)
        c.ignore(len(self.rest))
        return c.result()

    def _fsdp_items(self) -> list[str] | None:
        """The legacy fsdp options, [] for v5 `fsdp: true`, None when FSDP is off."""
        value = self.rest.get("fsdp")
        if value in (None, False, "", []):
            return None
        if isinstance(value, bool) or isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return [] if self.b(value, "fsdp") else None
        items = value.split() if isinstance(value, str) else value if isinstance(value, list) else None
        if items is None or not all(isinstance(i, str) for i in items):
            raise TrainplanError(f"{self.path}: fsdp must be true/false or options like \"full_shard auto_wrap\", "
                                 f"got {value!r}")
        for item in items:   # training_args.py _apply_legacy_fsdp_to_config: "Unknown `fsdp` option"
            if item not in _FSDP and item not in ("offload", "auto_wrap"):
                raise TrainplanError(f"{self.path}: fsdp option {item!r} is not one of "
                                     f"{', '.join([*_FSDP, 'offload', 'auto_wrap'])}")
        return items

    def _method(self) -> str:
        c = self.c
        peft = self.pop("use_peft")
        four, eight = (self.b(self.pop(k) or False, k) for k in ("load_in_4bit", "load_in_8bit"))
        if four and eight:   # model_config.py ModelConfig.__post_init__
            raise TrainplanError(f"{self.path}: load_in_4bit and load_in_8bit cannot both be true")
        on = peft is not None and self.b(peft, "use_peft")
        if (four or eight) and not on:   # transformers trainer_utils.py validate_quantization_for_training
            raise TrainplanError(f"{self.path}: {'load_in_4bit' if four else 'load_in_8bit'} needs use_peft: true "
                                 "(transformers' Trainer refuses to train a quantized model without adapters)")
        quant_keys = ("bnb_4bit_quant_type", "use_bnb_nested_quant", "bnb_4bit_quant_storage", "use_rslora",
                      "lora_task_type")
        if not on:
            if peft is None and self.kind:
                self.default("method")
            elif peft is not None:
                c.set("method", "full", key="use_peft", raw=peft)
            keys = ("lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "use_dora", "lora_modules_to_save",
                    "lora_target_parameters", *quant_keys)
            c.ignore(sum(self.pop(k) is not None for k in keys))
            return "full"
        method = "qlora" if four or eight else "lora"
        c.set("method", method, key="use_peft" + ("+load_in_4bit" if four else "+load_in_8bit" if eight else ""),
              raw=peft, note="PEFT LoraConfig from ModelConfig (trl/trainer/utils.py get_peft_config)")
        self.value("lora_rank", "lora_r", self.n)
        self.value("lora_alpha", "lora_alpha", self.x)
        self.value("lora_dropout", "lora_dropout", self.x)
        targets = self.pop("lora_target_modules")
        if targets:   # left out: trainplan's default is PEFT's per-architecture default too
            c.set("lora_targets", "all-linear" if str(targets).strip().lower() == "all-linear" else names(targets),
                  key="lora_target_modules", raw=targets)
        if self.rest.get("use_dora") is not None:
            c.set("dora", self.b(self.rest["use_dora"], "use_dora"), key="use_dora", raw=self.pop("use_dora"))
        saved = self.pop("lora_modules_to_save")    # TRL ModelConfig -> peft LoraConfig.modules_to_save
        if saved:
            read_modules_to_save(c, saved, "lora_modules_to_save")
        if eight:
            c.set("quant", "int8", key="load_in_8bit", raw=True, note="bitsandbytes LLM.int8 base weights")
        elif four:
            self.value("quant", "bnb_4bit_quant_type", self._quant)
            self.value("double_quant", "use_bnb_nested_quant", self.b)
        c.ignore(sum(self.pop(k) is not None for k in quant_keys))
        return method

    def _quant(self, value: Any, key: str) -> str:
        if str(value).strip().lower() not in ("nf4", "fp4"):
            raise TrainplanError(f"{self.path}: {key} must be nf4 or fp4, got {value!r}")
        return str(value).strip().lower()

    def _sequence(self) -> None:
        c = self.c
        if self.kind == "grpo":
            completion, prompt = self.pop("max_completion_length", 512), self.pop("max_prompt_length")
            if prompt is not None:   # GRPOConfig before TRL 0.28 capped the prompt
                c.derived("seq_len", self.n(prompt, "max_prompt_length") + self.n(completion, "max_completion_length"),
                          key="max_prompt_length+max_completion_length", note="a GRPO sequence is prompt + completion")
            else:
                c.skip("max_completion_length", completion, "a GRPO sequence is the prompt plus up to this many "
                       "completion tokens, and GRPOConfig does not cap the prompt: give --seq-len")
            return
        if "block_size" in self.rest and not self.kind:   # examples/pytorch/language-modeling/run_clm.py
            self.value("seq_len", "block_size", self.n, note="run_clm.py group_texts: blocks of block_size tokens")
            c.derived("packing", True, key="block_size", note="run_clm.py concatenates the texts: every sample is full")
            return
        if "max_length" in self.rest and self.rest["max_length"] is None:
            c.skip("max_length", self.pop("max_length"), "no truncation: the sequence length is the data's, give "
                   "--seq-len")
        else:
            old = "max_seq_length" in self.rest and "max_length" not in self.rest
            self.value("seq_len", "max_length", self.n, alias="max_seq_length",
                       note="max_seq_length: the SFTConfig name before TRL 0.16 (removed in 0.20)" if old else "")
        free = self.pop("padding_free")
        if self.kind == "sft":
            packing = self.value("packing", "packing", self.b)
            strategy = str(self.pop("packing_strategy", "bfd")).lower()
            if packing and strategy in ("bfd", "bfd_split"):    # sft_trainer.py SFTTrainer.__init__
                c.derived("padding_free", True, key="packing+packing_strategy",
                          note=f"packing_strategy {strategy!r} implies padding-free batches (sft_trainer.py)")
                free = None
        if free is not None:
            c.set("padding_free", self.b(free, "padding_free"), key="padding_free", raw=free)
        self.pop("max_prompt_length")   # DPOConfig before TRL 0.29: a cap inside max_length

    def _dtype(self) -> tuple[str | None, str, Any]:
        """(fp32|bf16|fp16|auto or None, the key, its raw value) of the dtype the model loads in."""
        mik = self.rest.get("model_init_kwargs") or {}
        for key, prefix in (("dtype", ""), ("torch_dtype", ""), ("dtype", "model_init_kwargs."),
                            ("torch_dtype", "model_init_kwargs.")):
            raw = mik.get(key) if prefix else self.pop(key)
            if raw is None or str(raw).lower() in ("none", "null"):
                continue
            name = str(raw).lower().removeprefix("torch.")
            if name not in _DTYPES:
                raise TrainplanError(f"{self.path}: {prefix}{key} must be auto, bfloat16, float16 or float32, "
                                     f"got {raw!r}")
            return _DTYPES[name], prefix + key, raw
        return None, "dtype", None

    def _precision(self, method: str, engine: str | None) -> None:
        c = self.c
        fp16, bf16 = self.pop("fp16"), self.pop("bf16")
        keys = [k for k, v in (("fp16", fp16), ("bf16", bf16)) if v is not None]
        fp16_on = fp16 is not None and self.b(fp16, "fp16")
        # TRL base_config.py __post_init__: bf16 None -> not fp16; TrainingArguments: False
        bf16_on = self.b(bf16, "bf16") if bf16 is not None else bool(self.kind) and not fp16_on
        if bf16_on and fp16_on:
            raise TrainplanError(f"{self.path}: bf16 and fp16 cannot both be true")
        amp = "bf16" if bf16_on else "fp16" if fp16_on else None
        wd, dkey, draw = self._dtype()
        notes = []
        if wd is None:
            wd = "fp32"
            if not self.kind:
                notes.append("the script loads the model: fp32 weights assumed (transformers v5 from_pretrained "
                             "loads the checkpoint's dtype, bf16 for most: then --precision bf16-pure)")
        elif engine != "deepspeed":
            keys.append(dkey)
            if wd == "auto":
                wd = "bf16"
                notes.append(f"{dkey} auto loads the checkpoint's dtype, assumed bf16")
        if engine == "deepspeed":
            value = amp or "fp32"
            notes.append("the DeepSpeed engine casts the model to 16 bits, fp32 master weights in its optimizer")
        elif amp and (engine == "fsdp" or wd == "fp32"):
            value = amp
            notes.append(f"{amp} autocast over fp32 trainable weights"
                         + (" (accelerate fsdp2_prepare_model upcasts them)" if wd != "fp32" else ""))
        elif method == "lora" and wd in ("bf16", "fp16"):
            value = amp or wd
            notes.append(f"{wd} base weights, LoRA adapters upcast to fp32 (peft autocast_adapter_dtype=True)")
        elif wd in ("bf16", "fp16"):
            value = f"{wd}-pure"
            notes.append(f"{wd} weights, gradients and AdamW states: no fp32 copy"
                         + ("; TRL casts the QLoRA adapters to bf16" if method == "qlora" else ""))
        elif method == "qlora":
            c.skip("bf16", bf16, "QLoRA computing in fp32 (bf16 and fp16 off, dtype float32) is not modelled")
            return
        else:
            value = "fp32"
        if method == "qlora" and wd == "fp32" and engine != "deepspeed":
            notes.append("TRL casts the QLoRA adapters to bf16: counted as fp32 here")
        note = "; ".join(notes)
        if not keys:
            d = self.trl.get("precision") or self.hf["precision"]
            version = trl_defaults.VERSION if self.kind else hf_defaults.VERSION
            c.default("precision", value, key=d.key, note=f"{d.key} not set: {d.source} ({version})"
                      + (f"; {note}" if note else ""), version=version)
        elif len(keys) == 1:
            c.set("precision", value, key=keys[0], raw={"fp16": fp16, "bf16": bf16}.get(keys[0], draw), note=note)
        else:
            c.derived("precision", value, key="+".join(keys), note=note)
        if method in ("lora", "qlora") and engine != "deepspeed":
            if draw is None and self.kind:
                self.default("load_fp32")
            else:
                c.set("load_fp32", wd == "fp32", key=dkey, raw=draw, note="the frozen base keeps its load dtype")

    def _optimizer(self) -> None:
        optim, adafactor = self.pop("optim"), self.pop("adafactor")
        if optim is None and adafactor is not None and self.b(adafactor, "adafactor"):
            self.c.set("optimizer", "adafactor", key="adafactor", raw=adafactor, note="v4.57 alias of optim adafactor")
        elif optim is None:
            self.default("optimizer")
        elif str(optim).lower().removeprefix("optimizernames.") in _OPTIM:
            value, note = _OPTIM[str(optim).lower().removeprefix("optimizernames.")]
            self.c.set("optimizer", value, key="optim", raw=optim, note=note)
        else:
            self.c.skip("optim", optim, "an optimizer trainplan does not model; trainplan's default is kept")

    def _checkpointing(self) -> None:
        c = self.c
        new, old = self.pop("activation_checkpointing"), self.pop("gradient_checkpointing")
        # training_args.py __post_init__: the deprecated gradient_checkpointing counts only when the new name is unset
        key, raw = ("activation_checkpointing", new) if new is not None else ("gradient_checkpointing", old)
        if raw is not None:
            on = self.b(raw, key)
            c.set("grad_ckpt", "full" if on else "none", key=key, raw=raw)
        else:
            on = self.default("grad_ckpt").value == "full"
        kwargs = self.pop("activation_checkpointing_kwargs") or self.pop("gradient_checkpointing_kwargs") or {}
        self.pop("gradient_checkpointing_kwargs")
        every = kwargs.get("every_n_layers")   # v5 modeling_utils.py activation_checkpointing_enable
        if on and every is not None and self.n(every, "activation_checkpointing_kwargs.every_n_layers") > 1:
            c.set("grad_ckpt_every", int(every), key="activation_checkpointing_kwargs.every_n_layers", raw=every)
        if on and kwargs.get("offload") and self.b(kwargs["offload"], "activation_checkpointing_kwargs.offload"):
            c.set("activation_offload", True, key="activation_checkpointing_kwargs.offload", raw=True,
                  note="checkpointed layer inputs held in pinned host memory (torch save_on_cpu)")
        offload = self.pop("activation_offloading")
        if offload is not None and self.b(offload, "activation_offloading"):
            c.set("activation_offload", True, key="activation_offloading", raw=offload,
                  note="trl/models/activation_offloading.py: saved activations moved to the CPU")

    def _kernels(self, engine: str | None) -> None:
        c, kind = self.c, self.kind
        liger_raw, config = self.pop("use_liger_kernel"), self.pop("liger_kernel_config") or {}
        loss_type = self.pop("loss_type")
        if liger_raw is not None and self.b(liger_raw, "use_liger_kernel"):
            c.set("liger", bool(config.get("rms_norm", True) or config.get("swiglu", True)), key="use_liger_kernel",
                  raw=liger_raw, note="transformers integrations/liger.py: Liger RMSNorm, SwiGLU, RoPE kernels")
            if kind == "sft" and str(loss_type).lower() == "chunked_nll":
                raise TrainplanError(f"{self.path}: loss_type chunked_nll does not work with use_liger_kernel "
                                     "(trl sft_trainer.py)")
            fused = config.get("fused_linear_cross_entropy", True) is not False   # Liger's default True
            c.set("loss", "fused" if fused else "full", key="use_liger_kernel", raw=liger_raw,
                  note=("Liger fused linear cross-entropy: no full logits" + (
                      f" (LigerFusedLinear{kind.upper()}Loss)" if kind in ("dpo", "grpo") else "")) if fused else "")
        elif kind == "sft" and loss_type is not None:
            name = str(loss_type).lower()
            if name not in ("nll", "dft", "chunked_nll"):
                raise TrainplanError(f"{self.path}: loss_type must be nll, dft or chunked_nll, got {loss_type!r}")
            c.set("loss", "chunked" if name == "chunked_nll" else "full", key="loss_type", raw=loss_type,
                  note="lm_head + cross-entropy in 256-token chunks (sft_trainer.py _patch_chunked_ce_lm_head)"
                  if name == "chunked_nll" else "full logits")
        elif kind != "grpo":
            self.default("loss")
        implied = any(self.pop(k) for k in ("torch_compile_backend", "torch_compile_mode"))
        raw = self.pop("torch_compile")
        if raw is not None or implied:
            c.set("compile", implied or self.b(raw, "torch_compile"), key="torch_compile", raw=raw,
                  note="torch_compile_backend/mode turn compile on (training_args.py)" if implied else "")
        mik = self.pop("model_init_kwargs") or {}
        attn = self.pop("attn_implementation") or mik.get("attn_implementation")
        name = str(attn).lower().split("|")[-1]   # "paged|flash_attention_2", "kernels-community/flash-attn2"
        value = "flash" if "flash" in name else name if name in ("sdpa", "eager") else None
        if attn and value:
            c.set("attention", value, key="attn_implementation", raw=attn)
        elif attn:
            c.skip("attn_implementation", attn, "an attention kernel trainplan does not model (sdpa kept)")
        else:
            self.default("attention", trl_first=False)
        for key, why in (("use_kernels", "Hub kernels (kernels-community) are not modelled"),
                         ("quantization_config", "an inline quantization config: use load_in_4bit/load_in_8bit")):
            if mik.get(key):
                c.skip(f"model_init_kwargs.{key}", mik[key], why)
        if mik.get("device_map") == "auto" and engine is None:
            c.set("device_map", "auto", key="model_init_kwargs.device_map", raw="auto",
                  note="one model split layer-wise over the visible GPUs")

    def _stage(self, method: str) -> None:
        c, peft = self.c, method in ("lora", "qlora")
        if self.kind == "dpo":
            c.derived("stage", "dpo", key="(DPOConfig keys)", note="trl/trainer/dpo_trainer.py")
            pre = self.pop("precompute_ref_log_probs")
            if peft:
                c.derived("ref_model", False, key="use_peft", note="the adapter is disabled for the reference pass "
                          "(dpo_trainer.py: no reference model with PEFT)")
            elif pre is not None and self.b(pre, "precompute_ref_log_probs"):
                c.set("ref_model", False, key="precompute_ref_log_probs", raw=pre,
                      note="reference log-probs computed before training: no reference model kept")
            else:
                self.default("ref_model")
        elif self.kind == "grpo":
            c.derived("stage", "grpo", key="(GRPOConfig keys)", note="trl/trainer/grpo_trainer.py")
            beta = self.pop("beta")
            if beta is None:
                self.default("ref_model")
            elif peft or self.x(beta, "beta") == 0.0:
                c.set("ref_model", False, key="use_peft" if peft else "beta", raw=beta,
                      note="the adapter is disabled for the reference pass (grpo_trainer.py)" if peft else
                      "beta 0.0: no KL term, no reference model (grpo_trainer.py)")
            else:
                c.set("ref_model", True, key="beta", raw=beta, note="a reference model for the KL term (grpo_trainer.py)")
            vllm, mode = self.pop("use_vllm"), str(self.pop("vllm_mode", "colocate")).lower()
            frac = self.pop("vllm_gpu_memory_utilization", 0.3)
            if vllm is None or not self.b(vllm, "use_vllm"):
                c.skip("use_vllm", bool(vllm), "generation with transformers generate() on the training GPUs "
                       "(KV cache of num_generations completions) is not modelled")
            elif mode == "colocate":
                c.skip("vllm_gpu_memory_utilization", frac, "colocated vLLM holds this fraction of every training "
                       "GPU for generation: not modelled")

    def _distributed(self, engine: str | None) -> None:
        ds, config, items = self.pop("deepspeed"), self.pop("fsdp_config"), self._fsdp_items()
        self.pop("fsdp")
        if engine == "deepspeed":
            self._deepspeed(ds)
            if items is not None:
                self.c.skip("fsdp", True, "FSDP together with DeepSpeed: the DeepSpeed config is used")
        elif items is not None:
            self._fsdp(items, config or {})
        self.c.ignore((engine != "fsdp" and config is not None)
                      + sum(self.pop(k) is not None for k in ("fsdp_min_num_params", "fsdp_transformer_layer_cls_to_wrap")))

    def _deepspeed(self, ds: Any) -> None:
        from trainplan.importers import deepspeed

        c = self.c
        if isinstance(ds, dict):
            sub = ReadContext(base_dir=self.ctx.base_dir, load=self.ctx.load, included=True) if self.ctx else \
                ReadContext(included=True)
            got = deepspeed.read(ds, self.path, sub)
            got = replace(got, settings=tuple(replace(s, key=f"deepspeed.{s.key}") for s in got.settings),
                          unread=tuple(replace(u, key=f"deepspeed.{u.key}") for u in got.unread))
        elif isinstance(ds, str):
            got = self.ctx.include(ds) if self.ctx is not None else None
            if got is None:
                c.skip("deepspeed", ds, "the DeepSpeed config file was not found: its ZeRO stage and offload are unknown")
                return
            c.includes.extend((got.file, *got.includes))
        else:
            raise TrainplanError(f"{self.path}: deepspeed must be a path or a mapping, got {ds!r}")
        mine = {s.field: s for s in c.settings}
        c.settings.extend(got.settings)    # after this file's: the DeepSpeed values are the engine's
        c.unread.extend(got.unread)
        c.ignored += got.ignored
        half = {"bf16": "bf16", "bf16-pure": "bf16", "fp16": "fp16", "fp16-pure": "fp16"}
        for s in got.settings:   # integrations/deepspeed.py fill_match: a mismatch stops the Trainer at start-up
            ours = mine.get(s.field) if s.field in ("batch_size", "grad_accum", "precision") else None
            if ours is None:
                continue
            a, b = (half.get(ours.value), half.get(s.value)) if s.field == "precision" else (ours.value, s.value)
            if a != b:
                c.skip(s.key, s.raw if s.raw is not None else s.value, f"differs from TrainingArguments {ours.key}="
                       f"{ours.value!r}: transformers stops with a DeepSpeed config mismatch (integrations/"
                       "deepspeed.py fill_match); the DeepSpeed value is used")

    def _fsdp(self, items: list[str], config: Any) -> None:
        c = self.c
        if isinstance(config, str):
            config = self._json_file(config, "fsdp_config")
        config = {k.removeprefix("fsdp_"): v for k, v in config.items()}   # training_args.py _process_fsdp_args
        strategies = [i for i in items if i in _FSDP]
        if "version" in config:
            if config["version"] not in (1, 2, "1", "2"):
                raise TrainplanError(f"{self.path}: fsdp_config.version must be 1 or 2, got {config['version']!r}")
            c.set("fsdp_version", int(config["version"]), key="fsdp_config.version", raw=config["version"])
        elif any(s not in ("full_shard", "shard_grad_op") for s in strategies):
            c.derived("fsdp_version", 1, key="fsdp", note=f"{strategies[0]} exists only in FSDP1 (v5 refuses it "
                      "with version 2; v4.57 always ran FSDP1)")
        else:
            self.default("fsdp_version")
            if items:
                c.settings[-1] = replace(c.settings[-1], note=c.settings[-1].note + "; v5 translates the legacy "
                                         "fsdp string for FSDP2 (v4.57 ran it as FSDP1)")
        mode, reshard = _FSDP[strategies[0]] if strategies else ("full", True)
        if "reshard_after_forward" in config:
            raw = config["reshard_after_forward"]
            if isinstance(raw, str) and raw.lower() in _FSDP:     # FSDP1: a sharding strategy name
                mode, reshard = _FSDP[raw.lower()]
            else:
                reshard = self.b(raw, "fsdp_config.reshard_after_forward")
            c.set("reshard_after_forward", reshard, key="fsdp_config.reshard_after_forward", raw=raw)
        elif strategies:
            c.set("reshard_after_forward", reshard, key="fsdp", raw=" ".join(items),
                  note=f"{strategies[0]} -> reshard_after_forward={reshard} (_apply_legacy_fsdp_to_config)")
        else:
            self.default("reshard_after_forward")
        c.set("fsdp", mode, key="fsdp", raw=" ".join(items) if items else True,
              note={"none": "FSDP NO_SHARD is plain data parallelism",
                    "hybrid": "shard inside a node, replicate across nodes"}.get(mode, ""))
        if "offload" in items or self.b(config.get("cpu_offload", False), "fsdp_config.cpu_offload"):
            c.set("offload", "all", key="fsdp" if "offload" in items else "fsdp_config.cpu_offload", raw=True,
                  note="FSDP CPU offload moves parameters, gradients and the optimizer step together")
        if config.get("offload_params"):
            c.skip("fsdp_config.offload_params", config["offload_params"], "accelerate's spelling: transformers "
                   "reads fsdp_config.cpu_offload (training_args.py _process_fsdp_args), so nothing is offloaded")
        if self.b(config.get("activation_checkpointing", False), "fsdp_config.activation_checkpointing"):
            c.set("grad_ckpt", "full", key="fsdp_config.activation_checkpointing", raw=True,
                  note="FSDP's checkpoint wrapper around every decoder layer")
        if str(config.get("auto_wrap_policy", "TRANSFORMER_BASED_WRAP")).upper() != "TRANSFORMER_BASED_WRAP":
            c.skip("fsdp_config.auto_wrap_policy", config["auto_wrap_policy"],
                   "trainplan models one FSDP unit per decoder layer (TRANSFORMER_BASED_WRAP)")
        used = {"version", "reshard_after_forward", "cpu_offload", "offload_params", "activation_checkpointing",
                "auto_wrap_policy"}
        c.ignore(sum(k not in used for k in config))

    def _json_file(self, name: str, key: str) -> dict:
        path = self.ctx.resolve_path(name) if self.ctx is not None else None
        if path is None:
            raise TrainplanError(f"{self.path}: {key} file {name!r} not found")
        from trainplan.safeio import CONFIG_LIMIT_BYTES, parse_json, read_user_text

        data = parse_json(read_user_text(path, what=key, limit_bytes=CONFIG_LIMIT_BYTES), what=key, path=path)
        if not isinstance(data, dict):
            raise TrainplanError(f"{path}: {key} must be a JSON mapping")
        self.c.includes.append(path)
        return data


def read(data: Any, path: str, ctx: ReadContext | None = None) -> Imported:
    if not isinstance(data, dict):
        raise TrainplanError(f"{path}: a TrainingArguments config is a mapping of keys")
    return _Reader(data, path, ctx).read()
