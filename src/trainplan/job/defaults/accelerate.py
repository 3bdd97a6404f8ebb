"""accelerate defaults for the keys a `accelerate config` YAML may leave out.

Read at huggingface/accelerate 16cb6eb (2026-07-24): src/accelerate/commands/config/config_args.py
(ClusterConfig: num_processes -1, num_machines 1), src/accelerate/commands/launch.py (the launch CLI:
--fsdp_version "1", --fsdp_reshard_after_forward "true", --fsdp_offload_params "false",
--fsdp_activation_checkpointing "false"; a YAML key missing from fsdp_config keeps these),
src/accelerate/utils/dataclasses.py (DeepSpeedPlugin: zero_stage from ACCELERATE_DEEPSPEED_ZERO_STAGE,
default 2; offload devices "none"; FullyShardedDataParallelPlugin: FSDP_VERSION default "1",
FSDP_SHARDING_STRATEGY default "FULL_SHARD").
"""

from __future__ import annotations

from trainplan.job.defaults import Default

VERSION = "huggingface/accelerate 16cb6eb (2026-07-24)"
_LAUNCH = "src/accelerate/commands/launch.py launch_command_parser"
_PLUGIN = "src/accelerate/utils/dataclasses.py"

DEFAULTS: tuple[Default, ...] = (
    Default(field="fsdp_version", value=1, key="fsdp_config.fsdp_version", raw="1",
            source=f"{_LAUNCH} --fsdp_version default '1'; {_PLUGIN} FullyShardedDataParallelPlugin "
                   "os.environ.get('FSDP_VERSION', '1')",
            note="transformers v5 defaults to 2 when it builds the plugin itself; under `accelerate launch` "
                 "the YAML's (or this) value is exported as FSDP_VERSION"),
    Default(field="fsdp", value="full", key="fsdp_config.fsdp_sharding_strategy", raw="FULL_SHARD",
            source=f"{_LAUNCH} --fsdp_sharding_strategy default 'FULL_SHARD'"),
    Default(field="reshard_after_forward", value=True, key="fsdp_config.fsdp_reshard_after_forward", raw="true",
            source=f"{_LAUNCH} --fsdp_reshard_after_forward default 'true' (FSDP1: FULL_SHARD)"),
    Default(field="grad_ckpt", value="none", key="fsdp_config.fsdp_activation_checkpointing", raw=False,
            source=f"{_LAUNCH} --fsdp_activation_checkpointing default 'false'"),
    Default(field="zero", value=2, key="deepspeed_config.zero_stage", raw=2,
            source=f"{_PLUGIN} DeepSpeedPlugin: int(os.environ.get('ACCELERATE_DEEPSPEED_ZERO_STAGE', 2))"),
    Default(field="grad_accum", value=1, key="deepspeed_config.gradient_accumulation_steps", raw=1,
            source=f"{_LAUNCH} --gradient_accumulation_steps: 'If unspecified, will default to `1`'"),
)
