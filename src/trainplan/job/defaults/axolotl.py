"""axolotl's defaults for the keys a config may leave out, and the DeepSpeed configs it ships.

Read from axolotl-ai-cloud/axolotl 067b021 (2026-07-24): the pydantic schema
`src/axolotl/utils/schemas/{config,peft,training,fsdp}.py` (AxolotlInputConfig and its mixins),
`src/axolotl/utils/schemas/validation.py` (validators that fill values), `src/axolotl/utils/config/
__init__.py` (resolve_dtype, normalize_config), `src/axolotl/loaders/model.py` (what reaches
`from_pretrained`) and `src/axolotl/utils/trainer.py` (setup_fsdp_envs).
"""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "axolotl-ai-cloud/axolotl 067b021 (2026-07-24)"

_PEFT = "src/axolotl/utils/schemas/peft.py LoraConfig"
_TRAIN = "src/axolotl/utils/schemas/training.py HyperparametersConfig"
_CFG = "src/axolotl/utils/schemas/config.py AxolotlInputConfig"

DEFAULTS: tuple[Default, ...] = (
    Default(field="method", value="full", key="adapter", raw=None, source=f"{_PEFT}.adapter",
            note="no adapter: every parameter is trained"),
    Default(field="lora_dropout", value=0.0, key="lora_dropout", source=f"{_PEFT}.lora_dropout",
            note="validate_lora_dropout fills 0.0 when an adapter is set"),
    Default(field="seq_len", value=512, key="sequence_len", source=f"{_CFG}.sequence_len"),
    Default(field="batch_size", value=1, key="micro_batch_size", source=f"{_TRAIN}.micro_batch_size",
            note="samples per GPU per forward"),
    Default(field="grad_accum", value=1, key="gradient_accumulation_steps",
            source=f"{_TRAIN}.gradient_accumulation_steps",
            note="or batch_size // micro_batch_size when only batch_size is given "
                 "(src/axolotl/utils/config/__init__.py normalize_config)"),
    Default(field="epochs", value=1.0, key="num_epochs", source=f"{_TRAIN}.num_epochs"),
    Default(field="grad_ckpt", value="none", key="gradient_checkpointing", raw=False,
            source=f"{_CFG}.gradient_checkpointing"),
    Default(field="activation_offload", value=False, key="activation_offloading", raw=False,
            source=f"{_CFG}.activation_offloading"),
    Default(field="optimizer", value="adamw-fused", key="optimizer", raw="adamw_torch_fused",
            source=f"{_TRAIN}.optimizer"),
    Default(field="packing", value=False, key="sample_packing", raw=None, source=f"{_CFG}.sample_packing"),
    Default(field="attention", value="sdpa", key="attn_implementation", raw=None,
            source="src/axolotl/loaders/model.py _set_attention_config",
            note="attn_implementation is passed to from_pretrained only when set: transformers then picks sdpa"),
    Default(field="loss", value="full", key="chunked_cross_entropy", raw=None,
            source=f"{_CFG}.chunked_cross_entropy",
            note="no chunked loss and no Liger/Cut Cross-Entropy plugin: the model's own cross-entropy"),
    Default(field="precision", value="bf16", key="bf16", raw="auto", source=f"{_CFG}.bf16",
            note="'auto' turns bf16 on where the GPU has it and the weights load in bf16 "
                 "(src/axolotl/utils/config/__init__.py resolve_dtype -> cfg.torch_dtype -> "
                 "loaders/model.py model_kwargs['dtype'])"),
    Default(field="quant", value="nf4", key="bnb_config_kwargs.bnb_4bit_quant_type", raw="nf4",
            source="src/axolotl/loaders/model.py _set_quantization_config",
            note="the BitsAndBytesConfig axolotl builds for adapter: qlora, before bnb_config_kwargs"),
    Default(field="double_quant", value=True, key="bnb_config_kwargs.bnb_4bit_use_double_quant", raw=True,
            source="src/axolotl/loaders/model.py _set_quantization_config"),
    Default(field="fsdp_version", value=1, key="fsdp_version", raw=None,
            source="src/axolotl/utils/schemas/validation.py check_fsdp_version_in_fsdp_config",
            note="an fsdp_config without a version is pinned to FSDP1"),
    Default(field="reshard_after_forward", value=True, key="fsdp_config.reshard_after_forward", raw=None,
            source="src/axolotl/utils/trainer.py setup_fsdp_envs; accelerate utils/dataclasses.py "
                   "FullyShardedDataParallelPlugin",
            note="axolotl exports FSDP_RESHARD_AFTER_FORWARD only when true; accelerate defaults to FULL_SHARD "
                 "(FSDP1) / reshard_after_forward=True (FSDP2)"),
)

# The DeepSpeed JSONs axolotl ships in deepspeed_configs/ (copied into a project by `axolotl fetch
# deepspeed_configs`), reduced to the keys the DeepSpeed reader uses. Read only when a config names
# one of them and the file is not where the config says.
_AUTO = {"gradient_accumulation_steps": "auto", "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}
_Z3 = {"stage": 3, "overlap_comm": True, "contiguous_gradients": True, "sub_group_size": 0,
       "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
       "stage3_param_persistence_threshold": "auto", "max_live_parameters": 0, "max_reuse_distance": 0,
       "gather_16bit_weights_on_model_save": True}
_CPU = {"device": "cpu", "pin_memory": True}
DEEPSPEED_CONFIGS: dict[str, dict] = {
    "zero1.json": {"zero_optimization": {"stage": 1, "overlap_comm": True}, "bf16": {"enabled": "auto"},
                   "fp16": {"enabled": "auto"}, **_AUTO},
    "zero2.json": {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"},
                                         "contiguous_gradients": True, "overlap_comm": True},
                   "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}, **_AUTO},
    "zero3.json": {"zero_optimization": _Z3, "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}, **_AUTO},
    "zero3_bf16.json": {"zero_optimization": _Z3, "bf16": {"enabled": True}, **_AUTO},
    "zero3_bf16_cpuoffload_all.json": {"zero_optimization": {**_Z3, "offload_optimizer": _CPU, "offload_param": _CPU},
                                       "bf16": {"enabled": True}, **_AUTO},
    "zero3_bf16_cpuoffload_params.json": {"zero_optimization": {**_Z3, "offload_param": _CPU},
                                          "bf16": {"enabled": True}, **_AUTO},
}
# the *_torch_compile.json variants add DeepSpeed's `compile: {backend: inductor}` section only
DEEPSPEED_CONFIGS["zero1_torch_compile.json"] = {**DEEPSPEED_CONFIGS["zero1.json"], "compile": {"disable": False}}
DEEPSPEED_CONFIGS["zero2_torch_compile.json"] = {**DEEPSPEED_CONFIGS["zero2.json"], "compile": {"disable": False}}
DEEPSPEED_CONFIGS_SOURCE = "axolotl-ai-cloud/axolotl 067b021 deepspeed_configs/"
