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

Precision and the DeepSpeed/FSDP engine are read in importers/hf_engines.py (_EngineMixin), the optimizer
in importers/hf_optim.py (_OptimMixin).
"""

from __future__ import annotations

import json
import re
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
    read_evaluation,
    read_experts_impl,
    read_flash_version,
    read_length_grouping,
    read_modules_to_save,
)
from trainplan.importers.hf_engines import _EngineMixin
from trainplan.importers.hf_optim import _OptimMixin
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
# a script argument named like a sequence cap (when no key trainplan knows gave the length)
_LENGTH_KEY = re.compile(r"(?:^|_)(?:len|length|seq_?len|seq_?length|ctx|context|source_length|target_length)(?:_|$)")
_NOT_LENGTH = {"group_by_length", "length_column_name", "max_new_tokens", "generation_max_length", "eval_max_length",
               "max_completion_length", "max_prompt_length"}
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
_UNREAD = (("auto_find_batch_size", "the micro-batch is found at run time (halved on OOM)"),
           ("optim_target_modules", "GaLore/APOLLO projection targets: trainplan projects every decoder linear"),
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


class _Reader(_EngineMixin, _OptimMixin):
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
        read_evaluation(c, self.pop)
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
        if not c.has("seq_len"):
            # a training script's own argument that may cap the sequence (max_len, max_source_length,
            # seq_length, context_len): listed, not counted among the keys that change nothing
            for key in [k for k in self.rest if _LENGTH_KEY.search(k) and k not in _NOT_LENGTH]:
                c.skip(key, self.pop(key), "an argument of the training script that may set the sequence length; "
                                           "trainplan does not know the script: give --seq-len")
        c.ignore(len(self.rest))
        return c.result()

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
        elif "max_length" not in self.rest and "max_seq_length" not in self.rest and "model_max_length" in self.rest:
            # the cap of the training scripts derived from stanford_alpaca's train.py: a TrainingArguments
            # field given to the tokenizer (FastChat fastchat/train/train.py: "Maximum sequence length.
            # Sequences will be right padded (and possibly truncated)", tokenized with padding="max_length")
            self.value("seq_len", "model_max_length", self.n,
                       note="model_max_length: the training script's tokenizer cap (stanford_alpaca / FastChat "
                            "train.py); FastChat pads every sample to it")
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
        read_length_grouping(c, self.pop("group_by_length"), self.pop("train_sampling_strategy"))
        implied = any(self.pop(k) for k in ("torch_compile_backend", "torch_compile_mode"))
        raw = self.pop("torch_compile")
        if raw is not None or implied:
            c.set("compile", implied or self.b(raw, "torch_compile"), key="torch_compile", raw=raw,
                  note="torch_compile_backend/mode turn compile on (training_args.py)" if implied else "")
        mik = self.pop("model_init_kwargs") or {}
        read_experts_impl(c, mik.get("experts_implementation") if isinstance(mik, dict) else None,
                          "model_init_kwargs.experts_implementation")
        attn = self.pop("attn_implementation") or mik.get("attn_implementation")
        name = str(attn).lower().split("|")[-1]   # "paged|flash_attention_2", "kernels-community/flash-attn2"
        value = "flash" if "flash" in name else name if name in ("sdpa", "eager") else None
        if attn and value:
            c.set("attention", value, key="attn_implementation", raw=attn)
            read_flash_version(c, name, "attn_implementation")
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
                c.set("ref_model", True, key="beta", raw=beta,
                      note="a reference model for the KL term (grpo_trainer.py)")
            vllm, mode = self.pop("use_vllm"), str(self.pop("vllm_mode", "colocate")).lower()
            frac = self.pop("vllm_gpu_memory_utilization", 0.3)
            if vllm is None or not self.b(vllm, "use_vllm"):
                c.skip("use_vllm", bool(vllm), "generation with transformers generate() on the training GPUs "
                       "(KV cache of num_generations completions) is not modelled")
            elif mode == "colocate":
                c.skip("vllm_gpu_memory_utilization", frac, "colocated vLLM holds this fraction of every training "
                       "GPU for generation: not modelled")


def read(data: Any, path: str, ctx: ReadContext | None = None) -> Imported:
    if not isinstance(data, dict):
        raise TrainplanError(f"{path}: a TrainingArguments config is a mapping of keys")
    return _Reader(data, path, ctx).read()
