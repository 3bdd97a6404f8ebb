"""torchtune defaults for the keys a recipe config may leave out.

Read at pytorch/torchtune bd2a0fc (2026-04-23, the last commit; the project is wound down):
the recipes' `cfg.get(key, default)` calls (recipes/{full,lora}_finetune_{single_device,distributed}.py),
the LoRA model builders (torchtune/models/llama3_1/_model_builders.py `lora_llama3_1_8b`; qwen2_5's
`lora_qwen2_5_7b_instruct` has the same defaults), the dataset builders (torchtune/datasets/_alpaca.py
`packed: bool = False`), torchtune/training/precision.py `get_dtype` and
torchtune/training/_distributed.py `shard_model` (FSDP2 `fully_shard`).
"""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "pytorch/torchtune bd2a0fc (2026-04-23)"
_RECIPE = "recipes/full_finetune_distributed.py, lora_finetune_*.py"
_BUILDER = "torchtune/models/llama3_1/_model_builders.py lora_llama3_1_8b"

DEFAULTS: tuple[Default, ...] = (
    Default(field="grad_ckpt", value="none", key="enable_activation_checkpointing", raw=False,
            source=f"{_RECIPE}: cfg.get('enable_activation_checkpointing', False)",
            note="the recipes default it off; the shipped configs turn it on"),
    Default(field="activation_offload", value=False, key="enable_activation_offloading", raw=False,
            source=f"{_RECIPE}: cfg.get('enable_activation_offloading', False)"),
    Default(field="optimizer_in_backward", value=False, key="optimizer_in_bwd", raw=False,
            source="recipes/full_finetune_distributed.py: cfg.get('optimizer_in_bwd', False)"),
    Default(field="compile", value=False, key="compile", raw=False,
            source="recipes/lora_finetune_distributed.py: cfg.get('compile', False)"),
    Default(field="precision", value="fp32", key="dtype", raw=None,
            source="torchtune/training/precision.py get_dtype: None -> torch.float32"),
    Default(field="packing", value=False, key="dataset.packed", raw=False,
            source="torchtune/datasets/_alpaca.py alpaca_dataset(packed=False) (every dataset builder)"),
    Default(field="lora_rank", value=8, key="model.lora_rank", source=_BUILDER),
    Default(field="lora_alpha", value=16.0, key="model.lora_alpha", source=_BUILDER),
    Default(field="lora_dropout", value=0.0, key="model.lora_dropout", source=_BUILDER),
    Default(field="fsdp_version", value=2, key="(distributed recipes)", raw="fully_shard",
            source="torchtune/training/_distributed.py shard_model: torch.distributed.fsdp.fully_shard"),
    Default(field="reshard_after_forward", value=True, key="fsdp_reshard_after_forward", raw=True,
            source=f"{_RECIPE}: cfg.get('fsdp_reshard_after_forward', True)"),
    Default(field="offload", value="none", key="fsdp_cpu_offload", raw=False,
            source=f"{_RECIPE}: cfg.get('fsdp_cpu_offload', False)"),
    Default(field="tp", value=1, key="tensor_parallel_dim", source=f"{_RECIPE}: cfg.get('tensor_parallel_dim', 1)"),
    Default(field="cp", value=1, key="context_parallel_dim", source=f"{_RECIPE}: cfg.get('context_parallel_dim', 1)"),
)
