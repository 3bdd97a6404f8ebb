"""ms-swift's defaults for the keys a `swift sft|pt|rlhf` (or `megatron sft`) config leaves out, and
the DeepSpeed / FSDP presets it ships.

Read from modelscope/ms-swift 3602360 (2026-08-22, v4.6.0.dev0): `swift/arguments/base_args/
{base_args,model_args,template_args}.py`, `swift/arguments/{tuner_args,sft_args,rlhf_args}.py`,
`swift/trainers/arguments.py` (TrainArgumentsMixin over transformers' TrainingArguments),
`swift/config/*.json` (the presets `--deepspeed zero3` / `--fsdp fsdp2` name) and
`swift/megatron/arguments/megatron_args.py`. Keys swift leaves to transformers take transformers'
defaults (training_args.py, v5.24: `optim` adamw_torch_fused with torch >= 2.8, num_train_epochs 3).
"""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "modelscope/ms-swift 3602360 (2026-08-22, v4.6.0.dev0)"

_TUNER = "swift/arguments/tuner_args.py TunerArguments"
_TRAIN = "swift/trainers/arguments.py TrainArgumentsMixin"

DEFAULTS: tuple[Default, ...] = (
    Default(field="method", value="lora", key="tuner_type", raw="lora",
            source="swift/arguments/base_args/base_args.py BaseArguments.tuner_type",
            note="`train_type` in ms-swift v3 (renamed in v4, PR #7385)"),
    Default(field="lora_rank", value=8, key="lora_rank", source=f"{_TUNER}.lora_rank"),
    Default(field="lora_alpha", value=32.0, key="lora_alpha", source=f"{_TUNER}.lora_alpha"),
    Default(field="lora_dropout", value=0.05, key="lora_dropout", source=f"{_TUNER}.lora_dropout"),
    Default(field="lora_targets", value="all-linear", key="target_modules", raw=["all-linear"],
            source=f"{_TUNER}.target_modules"),
    Default(field="quant", value="nf4", key="bnb_4bit_quant_type",
            source="swift/arguments/base_args/quant_args.py QuantizeArguments.bnb_4bit_quant_type"),
    Default(field="double_quant", value=True, key="bnb_4bit_use_double_quant",
            source="swift/arguments/base_args/quant_args.py QuantizeArguments.bnb_4bit_use_double_quant"),
    Default(field="batch_size", value=1, key="per_device_train_batch_size",
            source=f"{_TRAIN}.per_device_train_batch_size"),
    Default(field="grad_accum", value=None, key="gradient_accumulation_steps", raw=None,
            source=f"{_TRAIN}.__post_init__",
            note="None -> max(1, ceil(16 / per_device_train_batch_size / world_size)): a global batch of at least "
                 "16; GRPO: 1 (swift/arguments/rlhf_args.py _set_default)"),
    Default(field="epochs", value=3.0, key="num_train_epochs",
            source="transformers training_args.py TrainingArguments.num_train_epochs (swift keeps it)"),
    Default(field="grad_ckpt", value="full", key="gradient_checkpointing", raw=True,
            source=f"{_TRAIN}.gradient_checkpointing"),
    Default(field="optimizer", value="adamw-fused", key="optim", raw="adamw_torch_fused",
            source="transformers training_args.py default_optim (torch >= 2.8; swift keeps it)"),
    Default(field="galore_rank", value=128, key="galore_rank", source=f"{_TRAIN}.galore_rank",
            note="use_galore: the projection rank"),
    Default(field="packing", value=False, key="packing", source="swift/arguments/base_args/base_args.py packing"),
    Default(field="padding_free", value=False, key="padding_free",
            source="swift/arguments/base_args/template_args.py TemplateArguments.padding_free",
            note="packing turns it on (swift/arguments/sft_args.py _check_padding_free)"),
    Default(field="attention", value="sdpa", key="attn_impl", raw=None,
            source="swift/arguments/base_args/model_args.py ModelArguments.attn_impl",
            note="None: the model config's implementation, which transformers sets to sdpa"),
    Default(field="loss", value="full", key="use_liger_kernel", raw=False, source=f"{_TRAIN}.use_liger_kernel"),
    Default(field="ulysses", value=1, key="sequence_parallel_size",
            source="swift/arguments/base_args/template_args.py TemplateArguments.sequence_parallel_size"),
    Default(field="precision", value="bf16", key="torch_dtype", raw=None,
            source="swift/model/model_meta.py get_model_info_meta; swift/model/utils.py get_default_torch_dtype",
            note="None: the dtype in the model's config.json (bfloat16 for current Llama/Qwen checkpoints; bf16 "
                 "on a bf16 GPU when the config has none); bf16/fp16 mixed precision follows it "
                 "(swift/arguments/base_args/model_args.py _init_mixed_precision)"),
    Default(field="seq_len", value=None, key="max_length", raw=None,
            source="swift/arguments/base_args/base_args.py BaseArguments.__post_init__",
            note="None -> the model's max_model_len: a truncation bound, and with packing the pack length"),
    Default(field="stage", value="dpo", key="rlhf_type", source="swift/arguments/rlhf_args.py RLHFArguments.rlhf_type",
            note="`swift rlhf` only"),
)

# Megatron-SWIFT (`megatron sft|pt|rlhf`): swift/megatron/arguments/megatron_args.py
_MEG = "swift/megatron/arguments/megatron_args.py MegatronArguments"
MEGATRON_DEFAULTS: tuple[Default, ...] = (
    Default(field="method", value="full", key="tuner_type", raw="full",
            source="swift/megatron/arguments/megatron_args.py MegatronTunerMixin.tuner_type"),
    Default(field="batch_size", value=1, key="micro_batch_size", source=f"{_MEG}.micro_batch_size"),
    Default(field="grad_accum", value=None, key="global_batch_size", raw=16, source=f"{_MEG}.global_batch_size",
            note="micro-batches per step = global_batch_size / (micro_batch_size x data-parallel size)"),
    Default(field="grad_ckpt", value="selective", key="recompute_granularity", raw="selective",
            source=f"{_MEG}.recompute_granularity", note="recompute_modules ['core_attn']: the attention core"),
    Default(field="sequence_parallel", value=False, key="sequence_parallel", raw=False,
            source=f"{_MEG}.sequence_parallel"),
    Default(field="padding_free", value=True, key="padding_free", source=f"{_MEG}.padding_free"),
    Default(field="etp", value=1, key="expert_tensor_parallel_size", source=f"{_MEG}.expert_tensor_parallel_size",
            note="the routed experts unsplit by tensor parallelism (Megatron-Core's own default would be tp)"),
    Default(field="attention", value="flash", key="attention_backend", raw="flash", source=f"{_MEG}.attention_backend"),
    Default(field="zero", value=1, key="use_distributed_optimizer", raw=True,
            source=f"{_MEG}.use_distributed_optimizer",
            note="Megatron's distributed optimizer shards fp32 master weights and Adam states over data parallel"),
)

# The presets `--deepspeed NAME` and `--fsdp fsdp2` resolve to (swift/arguments/sft_args.py
# _init_deepspeed / _init_fsdp map NAME to swift/config/NAME.json), reduced to the keys the readers
# use; the JSONs also carry fp16 loss-scale settings and "auto" gradient_clipping.
_AUTO = {"gradient_accumulation_steps": "auto", "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
         "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"}}
_NONE, _CPU = {"device": "none", "pin_memory": True}, {"device": "cpu", "pin_memory": True}
_Z012 = {"allgather_partitions": True, "allgather_bucket_size": 2e8, "overlap_comm": False, "reduce_scatter": True,
         "reduce_bucket_size": 2e8, "contiguous_gradients": True}
_Z3 = {"overlap_comm": False, "contiguous_gradients": True, "sub_group_size": 1e9, "reduce_bucket_size": "auto",
       "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto",
       "stage3_max_live_parameters": 1e9, "stage3_max_reuse_distance": 1e9,
       "stage3_gather_16bit_weights_on_model_save": True}
DEEPSPEED_PRESETS: dict[str, dict] = {
    "zero0": {"zero_optimization": {"stage": 0, **_Z012}, **_AUTO},
    "zero1": {"zero_optimization": {"stage": 1, "offload_optimizer": _NONE, **_Z012}, **_AUTO},
    "zero2": {"zero_optimization": {"stage": 2, "offload_optimizer": _NONE, **_Z012}, **_AUTO},
    "zero2_offload": {"zero_optimization": {"stage": 2, "offload_optimizer": _CPU, **_Z012}, **_AUTO},
    "zero3": {"zero_optimization": {"stage": 3, "offload_optimizer": _NONE, "offload_param": _NONE, **_Z3,
                                    "zero_quantized_weights": False, "zero_quantized_gradients": False}, **_AUTO},
    "zero3_offload": {"zero_optimization": {"stage": 3, "offload_optimizer": _CPU, "offload_param": _CPU, **_Z3},
                      **_AUTO},
}
FSDP_PRESETS: dict[str, dict] = {
    "fsdp2": {"fsdp": "full_shard auto_wrap",
              "fsdp_config": {"fsdp_version": 2, "reshard_after_forward": True, "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                              "cpu_ram_efficient_loading": True, "state_dict_type": "SHARDED_STATE_DICT",
                              "activation_checkpointing": True}},
}
PRESETS_SOURCE = "modelscope/ms-swift 3602360 swift/config/"
