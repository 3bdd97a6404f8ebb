"""LLaMA-Factory defaults for the keys a train config (`llamafactory-cli train x.yaml`) may leave out.

Read at hiyouga/LLaMA-Factory ff6d4d1 (2026-08-18): src/llamafactory/hparams/finetuning_args.py
(FinetuningArguments, LoraArguments, FreezeArguments and `__post_init__`), hparams/data_args.py
(DataArguments), hparams/model_args.py (BaseModelArguments, QuantizationArguments), hparams/parser.py
(`get_train_args` post-processing), model/model_utils/checkpointing.py (`prepare_model_for_training`).
The trainer keys come from HF `Seq2SeqTrainingArguments`, which LF's TrainingArguments subclass
(hparams/training_args.py); LF pins transformers>=4.55.0,<=5.8.0 (pyproject.toml), so those defaults
are read from the transformers 5.8.0 wheel, src/transformers/training_args.py.
"""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "hiyouga/LLaMA-Factory ff6d4d1 (2026-08-18); transformers 5.8.0 for the HF trainer keys"
_FT = "src/llamafactory/hparams/finetuning_args.py"
_DATA = "src/llamafactory/hparams/data_args.py"
_MODEL = "src/llamafactory/hparams/model_args.py"
_HF = "transformers 5.8.0 src/transformers/training_args.py TrainingArguments"

DEFAULTS: tuple[Default, ...] = (
    Default(field="method", value="lora", key="finetuning_type", raw="lora",
            source=f"{_FT} FinetuningArguments.finetuning_type",
            note="LLaMA-Factory defaults to LoRA, not to a full fine-tune"),
    Default(field="stage", value="sft", key="stage", raw="sft", source=f"{_FT} FinetuningArguments.stage"),
    Default(field="lora_rank", value=8, key="lora_rank", source=f"{_FT} LoraArguments.lora_rank"),
    Default(field="lora_alpha", value=None, key="lora_alpha", raw=None,
            source=f"{_FT} FinetuningArguments.__post_init__: lora_alpha or lora_rank * 2",
            note="None -> 2 x lora_rank"),
    Default(field="lora_dropout", value=0.0, key="lora_dropout", source=f"{_FT} LoraArguments.lora_dropout"),
    Default(field="lora_targets", value="all-linear", key="lora_target", raw="all",
            source=f"{_FT} LoraArguments.lora_target; src/llamafactory/model/adapter.py _setup_lora_tuning: "
                   "'all' -> model_utils/misc.py find_all_linear_modules",
            note="every linear layer but the output head (and the vision tower of multimodal models)"),
    Default(field="dora", value=False, key="use_dora", source=f"{_FT} LoraArguments.use_dora"),
    Default(field="freeze_layers", value=2, key="freeze_trainable_layers",
            source=f"{_FT} FreezeArguments.freeze_trainable_layers", note="the last 2 layers are trainable"),
    Default(field="quant", value="nf4", key="quantization_type", raw="nf4",
            source=f"{_MODEL} QuantizationArguments.quantization_type"),
    Default(field="double_quant", value=True, key="double_quantization",
            source=f"{_MODEL} QuantizationArguments.double_quantization"),
    Default(field="seq_len", value=2048, key="cutoff_len", source=f"{_DATA} DataArguments.cutoff_len"),
    Default(field="packing", value=None, key="packing", raw=None,
            source="src/llamafactory/hparams/parser.py get_train_args: packing if not None else stage == 'pt'",
            note="None -> on for pre-training (stage pt) only"),
    Default(field="grad_ckpt", value="full", key="disable_gradient_checkpointing", raw=False,
            source="src/llamafactory/model/model_utils/checkpointing.py prepare_model_for_training: "
                   "gradient_checkpointing_enable unless disable_gradient_checkpointing",
            note="on by default (opt-out), every decoder layer with trainable parameters recomputed"),
    Default(field="attention", value="sdpa", key="flash_attn", raw="auto",
            source="src/llamafactory/model/model_utils/attention.py configure_attn_implementation: "
                   "'auto' leaves transformers' choice (sdpa)"),
    Default(field="liger", value=False, key="enable_liger_kernel", source=f"{_MODEL} enable_liger_kernel"),
    Default(field="loss", value="full", key="enable_liger_kernel", raw=False,
            source="transformers loss/loss_utils.py ForCausalLMLoss (LF's SFT trainer keeps the model's loss)",
            note="the whole logits tensor upcast to fp32"),
    Default(field="batch_size", value=8, key="per_device_train_batch_size",
            source=f"{_HF}.per_device_train_batch_size", note="every LF example sets 1"),
    Default(field="grad_accum", value=1, key="gradient_accumulation_steps",
            source=f"{_HF}.gradient_accumulation_steps"),
    Default(field="epochs", value=3.0, key="num_train_epochs", source=f"{_HF}.num_train_epochs"),
    Default(field="galore_rank", value=16, key="galore_rank", source=f"{_FT} GaloreArguments.galore_rank",
            note="use_galore: the projection rank"),
    Default(field="apollo_rank", value=16, key="apollo_rank", source=f"{_FT} ApolloArguments.apollo_rank",
            note="use_apollo: the projection rank"),
    Default(field="optimizer", value="adamw-fused", key="optim", raw="adamw_torch_fused",
            source=f"{_HF}.optim: adamw_torch_fused with torch >= 2.8 (adamw_torch before)"),
)
