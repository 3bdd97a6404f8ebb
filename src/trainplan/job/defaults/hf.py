"""HF `TrainingArguments` defaults for the keys a config may leave out (transformers v5.24.0, with the
v4.57.1 spelling where it differs), read from the wheels:

- src/transformers/training_args.py `TrainingArguments` fields and `__post_init__`: batch, accumulation,
  epochs, `bf16`/`fp16` False, `optim` "adamw_torch_fused" when torch >= 2.8 (else "adamw_torch"),
  `activation_checkpointing` None -> False (v4.57: `gradient_checkpointing` False), `use_liger_kernel` False;
  `_process_fsdp_args`: `fsdp_config.version` 2, `reshard_after_forward` True (v5 only: v4.57 runs FSDP1).
- src/transformers/modeling_utils.py `_check_and_adjust_attn_implementation`: attn_implementation None -> sdpa.
- The model's dtype is the training script's choice, not a TrainingArguments key: `from_pretrained` loads
  fp32 in v4.57 and the checkpoint's dtype (`dtype="auto"`) in v5 (modeling_utils.py `from_pretrained`).
"""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "transformers v5.24.0 (v4.57.1 for legacy keys)"
_ARGS = "src/transformers/training_args.py TrainingArguments"

DEFAULTS: tuple[Default, ...] = (
    Default(field="batch_size", value=8, key="per_device_train_batch_size", source=_ARGS),
    Default(field="grad_accum", value=1, key="gradient_accumulation_steps", source=_ARGS),
    Default(field="epochs", value=3.0, key="num_train_epochs", source=_ARGS),
    Default(field="grad_ckpt", value="none", key="activation_checkpointing", raw=None,
            source=f"{_ARGS}.__post_init__ (None -> False; v4.57 gradient_checkpointing False)"),
    Default(field="precision", value="fp32", key="bf16/fp16", raw=False, source=_ARGS,
            note="no mixed precision: fp32 training when the script loads fp32 weights"),
    Default(field="optimizer", value="adamw-fused", key="optim", raw="adamw_torch_fused",
            source=f"{_ARGS}.optim (adamw_torch_fused for torch >= 2.8, adamw_torch before)"),
    Default(field="galore_rank", value=128, key="optim_args", raw="rank=128",
            source="src/transformers/trainer_optimizer.py _get_galore_optimizer: optim_args.pop('rank', 128)",
            note="optim galore_*: the projection rank"),
    Default(field="apollo_rank", value=128, key="optim_args", raw="rank=128",
            source="src/transformers/trainer_optimizer.py _get_apollo_optimizer: optim_args.pop('rank', 128)",
            note="optim apollo_adamw*: the projection rank"),
    Default(field="attention", value="sdpa", key="attn_implementation", raw=None,
            source="src/transformers/modeling_utils.py _check_and_adjust_attn_implementation (None -> sdpa)"),
    Default(field="loss", value="full", key="use_liger_kernel", raw=False, source=_ARGS,
            note="the model's own loss: full logits, upcast to fp32 for the cross-entropy"),
    Default(field="fsdp_version", value=2, key="fsdp_config.version", raw=2,
            source=f"{_ARGS}._process_fsdp_args (v5; v4.57 runs FSDP1)"),
    Default(field="reshard_after_forward", value=True, key="fsdp_config.reshard_after_forward", raw=True,
            source=f"{_ARGS}._process_fsdp_args"),
)
