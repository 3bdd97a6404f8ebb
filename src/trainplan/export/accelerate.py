"""accelerate config YAML (`accelerate launch --config_file accelerate.yaml ...`): FSDP1 and FSDP2, the
DeepSpeed plugin, several machines.

Keys (huggingface/accelerate 16cb6eb ~ 1.15.0; shared/reference/framework_configs.md section 7), the
mirror of importers/accelerate.py:
- src/accelerate/commands/config/config_args.py ClusterConfig: compute_environment, distributed_type
  (NO, MULTI_GPU, DEEPSPEED, FSDP), mixed_precision (no, fp16, bf16, fp8), num_processes (the total over
  all machines: utils/launch.py nproc_per_node = num_processes // num_machines), num_machines,
  machine_rank, main_process_ip, main_process_port, rdzv_backend, same_network;
- `deepspeed_config`: with `deepspeed_config_file` (the exported ds_config.json) nothing else that the
  file holds may be set, top-level mixed_precision included (utils/dataclasses.py
  `_deepspeed_config_checks`); zero3_init_flag and deepspeed_multinode_launcher are allowed beside it;
- `fsdp_config` (keys keep their `fsdp_` prefix): fsdp_version (the launch CLI's default is 1, so it is
  always written), fsdp_sharding_strategy (FSDP1) or fsdp_reshard_after_forward (FSDP2 bool),
  fsdp_offload_params, fsdp_activation_checkpointing, fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP,
  fsdp_state_dict_type, fsdp_cpu_ram_efficient_loading, fsdp_sync_module_states, fsdp_use_orig_params;
- `parallelism_config` (parallelism_config.py): HSDP with FSDP2 as dp_replicate (nodes) x dp_shard
  (GPUs per node), context parallelism as cp_size.
"""

from __future__ import annotations

from typing import Any

from trainplan.enums import Framework, Fsdp, GradCkpt, Offload, Precision, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.memory.sharding import fsdp_for

FORMAT = "accelerate"
FRAMEWORKS = (Framework.FSDP, Framework.HF, Framework.DEEPSPEED, Framework.TRL, Framework.LLAMAFACTORY,
              Framework.AXOLOTL)
FILE = "accelerate.yaml"
_MIXED = {Precision.BF16: "bf16", Precision.FP16: "fp16", Precision.FP8: "fp8", Precision.FP32: "no"}


def config(job, ctx: ExportContext, *, ds_file: str | None) -> tuple[dict[str, Any], list[str]]:
    setup, layout = job.setup, job.layout
    notes: list[str] = []
    if layout.tp > 1 or layout.pp > 1:
        raise TrainplanError(f"--format accelerate: tp {layout.tp} / pp {layout.pp} is not written here (use "
                             "--format megatron or torchtitan)")
    zero, fsdp = layout.zero is not ZeroStage.NONE, layout.fsdp is not Fsdp.NONE
    kind = "DEEPSPEED" if zero else "FSDP" if fsdp else "MULTI_GPU" if layout.num_gpus > 1 else "NO"
    out: dict[str, Any] = {"compute_environment": "LOCAL_MACHINE", "debug": False, "distributed_type": kind,
                           "downcast_bf16": "no", "enable_cpu_affinity": False, "machine_rank": 0}
    if layout.nodes > 1:
        out.update(main_process_ip=ctx.master_addr, main_process_port=ctx.master_port, rdzv_backend="static",
                   same_network=True)
    out.update(main_training_function="main", num_machines=layout.nodes, num_processes=layout.num_gpus)
    if zero:
        if ds_file is None:
            raise TrainplanError("--format accelerate for a ZeRO job needs the DeepSpeed JSON too: add deepspeed "
                                 "to --format")
        ds: dict[str, Any] = {"deepspeed_config_file": ds_file, "zero3_init_flag": layout.zero is ZeroStage.PARAMETERS}
        if layout.nodes > 1:
            ds["deepspeed_multinode_launcher"] = "standard"
        out["deepspeed_config"] = ds
    else:
        mixed = _MIXED.get(setup.precision)
        if mixed is None:
            notes.append(f"--precision {setup.precision}: the script loads the model in 16 bits; accelerate's "
                         "mixed_precision is bf16/fp16 autocast only (written as its 16-bit type)")
            mixed = "fp16" if setup.precision is Precision.FP16_PURE else "bf16"
        out["mixed_precision"] = mixed
    if fsdp:
        out["fsdp_config"] = _fsdp(job)
        if layout.fsdp is Fsdp.HYBRID and out["fsdp_config"]["fsdp_version"] == 2:
            out["parallelism_config"] = {"parallelism_config_dp_replicate_size": layout.nodes,
                                         "parallelism_config_dp_shard_size": layout.gpus_per_node}
    if layout.cp > 1:
        pc = out.setdefault("parallelism_config", {})
        pc["parallelism_config_cp_size"] = layout.cp
        if not fsdp:
            notes.append("context parallelism in accelerate runs with FSDP2 (parallelism_config.py)")
    out["tpu_env"] = []
    out["tpu_use_cluster"] = False
    out["tpu_use_sudo"] = False
    out["use_cpu"] = False
    return out, notes


def _fsdp(job) -> dict[str, Any]:
    layout = job.layout
    base = job.fsdp or fsdp_for(job.setup.framework)
    cfg: dict[str, Any] = {"fsdp_activation_checkpointing": job.setup.grad_ckpt is not GradCkpt.NONE,
                           "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                           "fsdp_cpu_ram_efficient_loading": True,
                           "fsdp_offload_params": layout.offload is not Offload.NONE}
    if base.version == 1:
        hybrid = layout.fsdp is Fsdp.HYBRID
        strategy = ("HYBRID_SHARD" if base.reshard_after_forward else "HYBRID_SHARD_ZERO2") if hybrid else \
            ("FULL_SHARD" if base.reshard_after_forward else "SHARD_GRAD_OP")
        cfg.update(fsdp_backward_prefetch="BACKWARD_PRE", fsdp_forward_prefetch=False, fsdp_sharding_strategy=strategy,
                   fsdp_state_dict_type="SHARDED_STATE_DICT", fsdp_sync_module_states=True, fsdp_use_orig_params=True)
    else:
        cfg.update(fsdp_reshard_after_forward=base.reshard_after_forward, fsdp_state_dict_type="SHARDED_STATE_DICT")
    cfg["fsdp_version"] = base.version
    return dict(sorted(cfg.items()))


def render(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def export(job, estimate, ctx: ExportContext, *, ds_file: str | None = None) -> Exported:
    data, notes = config(job, ctx, ds_file=ds_file)
    if job.layout.nodes > 1:
        notes.append("accelerate.yaml's machine_rank 0 and main_process_ip are node 0's: the launch line's "
                     "--machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR (expanded by the shell) override them")
    return Exported(files=(ExportFile(name=FILE, text=render(data), format=FORMAT),), notes=tuple(notes))
