"""TRL defaults for the keys a config may leave out (huggingface/trl f2cd577, 2026-07-24, VERSION file
1.10.0.dev0), for `trl sft|dpo|grpo --config x.yaml` files (TrlParser over ScriptArguments, the trainer's
config and ModelConfig). The TrainingArguments keys TRL does not override keep transformers' defaults
(job/defaults/hf.py).

- trl/trainer/base_config.py `_BaseConfig`: `gradient_checkpointing` True; `bf16` None -> `not fp16`.
- trl/trainer/model_config.py `ModelConfig`: `dtype` "float32", `use_peft` False, `lora_r` 16,
  `lora_alpha` 32, `lora_dropout` 0.05, `lora_target_modules` None (PEFT's per-architecture default),
  `bnb_4bit_quant_type` "nf4", `use_bnb_nested_quant` False.
- trl/trainer/utils.py `create_model_from_path`: `dtype` left out of model_init_kwargs -> "float32".
- trl/trainer/sft_config.py `SFTConfig`: `max_length` 1024, `packing` False, `packing_strategy` "bfd",
  `loss_type` None -> "chunked_nll" ("nll" with `use_liger_kernel`), `activation_offloading` False.
- trl/trainer/dpo_config.py `DPOConfig`: `max_length` 1024, `precompute_ref_log_probs` False, `beta` 0.1;
  dpo_trainer.py keeps a reference model unless PEFT or precomputed log-probs.
- trl/trainer/grpo_config.py `GRPOConfig`: `beta` 0.0 (grpo_trainer.py: no reference model),
  `max_completion_length` 512, `num_generations` 8, `use_vllm` False.
trl 1.16.0 (PyPI) differs: `loss_type` "nll" is the only cross-entropy and already chunked (a fused LM
head), "chunked_nll" its deprecated alias; Liger's fused linear cross-entropy is switched off in SFT.
"""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "huggingface/trl f2cd577 (2026-07-24, 1.10.0.dev0)"
_MODEL = "trl/trainer/model_config.py ModelConfig"
_BASE = "trl/trainer/base_config.py _BaseConfig"
_SFT = "trl/trainer/sft_config.py SFTConfig"

# SFT (the default trainer); DPO and GRPO override the fields below
DEFAULTS: tuple[Default, ...] = (
    Default(field="method", value="full", key="use_peft", raw=False, source=_MODEL),
    Default(field="lora_rank", value=16, key="lora_r", source=_MODEL),
    Default(field="lora_alpha", value=32.0, key="lora_alpha", raw=32, source=_MODEL),
    Default(field="lora_dropout", value=0.05, key="lora_dropout", source=_MODEL),
    Default(field="quant", value="nf4", key="bnb_4bit_quant_type", source=f"{_MODEL}; trl/trainer/utils.py "
            "get_quantization_config"),
    Default(field="double_quant", value=False, key="use_bnb_nested_quant", source=_MODEL),
    Default(field="load_fp32", value=True, key="dtype", raw="float32",
            source=f"{_MODEL}.dtype; trl/trainer/utils.py create_model_from_path (dtype defaults to float32)",
            note="the base model loads in fp32: frozen weights 4 bytes under LoRA"),
    Default(field="grad_ckpt", value="full", key="gradient_checkpointing", raw=True, source=_BASE),
    Default(field="precision", value="bf16", key="bf16", raw=None, source=f"{_BASE}.__post_init__ (None -> not fp16)",
            note="bf16 autocast over the fp32 weights TRL loads"),
    Default(field="seq_len", value=1024, key="max_length", source=_SFT),
    Default(field="packing", value=False, key="packing", source=_SFT),
    Default(field="loss", value="chunked", key="loss_type", raw=None,
            source=f"{_SFT}.__post_init__ (None -> chunked_nll; sft_trainer.py _patch_chunked_ce_lm_head, "
                   "256-token chunks, lm_head skipped on ignored tokens)"),
)

DPO_DEFAULTS: tuple[Default, ...] = (
    Default(field="seq_len", value=1024, key="max_length", source="trl/trainer/dpo_config.py DPOConfig"),
    Default(field="ref_model", value=True, key="precompute_ref_log_probs", raw=False,
            source="trl/trainer/dpo_trainer.py DPOTrainer.__init__ (ref_model None -> a second copy of the model "
                   "from model_init_kwargs, unless PEFT or precompute_ref_log_probs)"),
    Default(field="loss", value="full", key="use_liger_kernel", raw=False,
            source="trl/trainer/dpo_trainer.py (log-probs from the full logits; LigerFusedLinearDPOLoss only with "
                   "use_liger_kernel)"),
)

GRPO_DEFAULTS: tuple[Default, ...] = (
    Default(field="ref_model", value=False, key="beta", raw=0.0,
            source="trl/trainer/grpo_config.py GRPOConfig.beta; grpo_trainer.py (beta 0.0 -> ref_model None)"),
)
