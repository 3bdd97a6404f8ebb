"""axolotl YAML (`axolotl train axolotl.yaml`), with the DeepSpeed JSON it names, and the launch
line (axolotl's default launcher is accelerate: `axolotl train cfg --launcher accelerate -- <accelerate
launch options>`, src/axolotl/cli/main.py).

Keys (axolotl-ai-cloud/axolotl 067b021 / 0.18.0; shared/reference/framework_configs.md section 4), the
mirror of importers/axolotl.py: the pydantic schema src/axolotl/utils/schemas/{config,peft,training,
fsdp}.py (AxolotlInputConfig), validators in utils/schemas/validation.py, plugin arguments in
integrations/liger/args.py and integrations/cut_cross_entropy/args.py:
- `adapter` lora|qlora (unset: full), `load_in_4bit` (qlora) / `load_in_8bit` (LoRA over LLM.int8),
  `bnb_config_kwargs`, `lora_r`, `lora_alpha`, `lora_dropout`, `lora_target_linear` /
  `lora_target_modules`, `peft_use_dora`, `peft_autocast_adapter_dtype`;
- `sequence_len` (default 512, always written), `sample_packing`, `micro_batch_size`,
  `gradient_accumulation_steps`, `num_epochs`, `max_steps`;
- `gradient_checkpointing`, `activation_offloading`; `attn_implementation` (the deprecated
  `flash_attention: true` is not written); `bf16`/`fp16`; `optimizer` (transformers names);
  `chunked_cross_entropy`, the Liger and Cut Cross-Entropy plugins; `torch_compile`;
- `deepspeed` (a JSON path), or `fsdp_version` + `fsdp_config` (offload_params, reshard_after_forward,
  activation_checkpointing, ...; no `fsdp_` prefix), `dp_replicate_size` (HSDP), `context_parallel_size`.
`tensor_parallel_size` needs DeepSpeed AutoTP and there is no pipeline parallelism: refused.

Precision, as importers/axolotl.py reads it back: a full fine-tune loads in cfg.torch_dtype (bf16 with
`bf16: true`) and is not upcast unless DeepSpeed or FSDP1 (accelerate's prepare_model) makes an fp32
master; LoRA adapters are fp32 (PEFT autocast_adapter_dtype) unless `peft_autocast_adapter_dtype: false`.
"""

from __future__ import annotations

from typing import Any

from trainplan.enums import (Framework, Fsdp, GradCkpt, Loss, Method, Offload, Optimizer, Precision, Quant,
                             ZeroStage)
from trainplan.export import pieces
from trainplan.export.base import ExportContext, Exported, ExportFile
from trainplan.memory.sharding import fsdp_for

FORMAT = "axolotl"
FRAMEWORKS = (Framework.AXOLOTL,)
FILE = "axolotl.yaml"
_RL = {"dpo": "dpo", "kto": "kto", "orpo": "orpo", "simpo": "simpo", "grpo": "grpo"}
LIGER = "axolotl.integrations.liger.LigerPlugin"
CCE = "axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin"


def _fsdp_version(job) -> int:
    return (job.fsdp or fsdp_for(job.setup.framework)).version


def check(job) -> None:
    setup, layout = job.setup, job.layout
    pieces.no_freeze(FORMAT, job)
    if layout.tp > 1 or layout.pp > 1 or layout.ep > 1:
        raise pieces.refuse(FORMAT, f"tensor/pipeline/expert parallelism (tp {layout.tp}, pp {layout.pp}, ep "
                                    f"{layout.ep}): axolotl's tensor_parallel_size is DeepSpeed AutoTP only and it "
                                    "has no pipeline stages; use --format megatron or torchtitan, or ZeRO/FSDP")
    if setup.precision is Precision.FP8:
        raise pieces.refuse(FORMAT, "axolotl's fp8 (TorchAO) keeps no fp32 master, which trainplan's fp8 assumes: "
                                    "use --precision bf16 (or --format megatron for Transformer Engine fp8)")
    if setup.grad_ckpt in (GradCkpt.SELECTIVE, GradCkpt.OP) or setup.grad_ckpt_every > 1:
        raise pieces.refuse(FORMAT, "gradient_checkpointing is every layer or none in the HF Trainer: use --grad-ckpt "
                                    "full or none")
    if setup.impl.activation_offload and setup.grad_ckpt is GradCkpt.NONE:
        raise pieces.refuse(FORMAT, "activation_offloading moves checkpointed layer inputs: add --grad-ckpt full")
    if setup.impl.optimizer_in_backward:
        raise pieces.refuse(FORMAT, "the HF Trainer steps the optimizer after backward: drop --optimizer-in-backward "
                                    "(torchtune's optimizer_in_bwd: --format torchtune)")
    if setup.impl.liger_kernels and setup.impl.loss is Loss.CHUNKED:
        raise pieces.refuse(FORMAT, "the Liger plugin's loss is fused, not chunked: use --loss fused or drop --liger")
    if layout.fsdp is not Fsdp.NONE:
        if layout.offload not in (Offload.NONE, Offload.ALL):
            raise pieces.refuse(FORMAT, "FSDP offloads parameters, gradients and optimizer together "
                                        f"(fsdp_config.offload_params): use --offload all, not {layout.offload}")
        if not (job.fsdp or fsdp_for(setup.framework)).reshard_after_forward:
            raise pieces.refuse(FORMAT, "axolotl exports FSDP_RESHARD_AFTER_FORWARD only when true (utils/trainer.py "
                                        "setup_fsdp_envs): SHARD_GRAD_OP is not reachable; use --zero 2 instead")
        if layout.fsdp is Fsdp.HYBRID and layout.nodes == 1:
            raise pieces.refuse(FORMAT, "hybrid sharding replicates across nodes (dp_replicate_size): on one node "
                                        "use --fsdp full")
    if pieces.stage(job) not in ("sft", *_RL):
        raise pieces.refuse(FORMAT, f"--stage {pieces.stage(job)}: axolotl's `rl` takes {', '.join(_RL)}; "
                                    "pretraining is a pretraining_dataset, not a stage (use --stage sft)")


def _precision(job) -> dict[str, Any]:
    setup, layout = job.setup, job.layout
    p, full = setup.precision, setup.method is Method.FULL
    if p is Precision.FP32:
        if setup.method is Method.QLORA:
            raise pieces.refuse(FORMAT, "QLoRA computes in 16 bits: use --precision bf16")
        return {"bf16": False, "fp16": False}
    bf16 = p in (Precision.BF16, Precision.BF16_PURE)
    pure = p in (Precision.BF16_PURE, Precision.FP16_PURE)
    flags: dict[str, Any] = {"bf16": bf16, "fp16": not bf16}
    if not full:
        if pure:
            flags["peft_autocast_adapter_dtype"] = False
        return flags
    master = layout.zero is not ZeroStage.NONE or (layout.fsdp is not Fsdp.NONE and _fsdp_version(job) == 1)
    if master and pure:
        raise pieces.refuse(FORMAT, "DeepSpeed and FSDP1 keep an fp32 master copy: use --precision "
                                    f"{p.value.removesuffix('-pure')} (or FSDP2: --fsdp-version 2)")
    if not master and not pure:
        raise pieces.refuse(FORMAT, "axolotl trains a full fine-tune in the bf16/fp16 it loads, without an fp32 copy "
                                    f"(utils/config resolve_dtype), unless DeepSpeed or FSDP1: use --precision "
                                    f"{p}-pure, "
                                    "--zero 1-3 or --fsdp full --fsdp-version 1")
    return flags


def _lora(job) -> tuple[dict[str, Any], list[str]]:
    setup = job.setup
    out: dict[str, Any] = {}
    notes: list[str] = []
    if setup.method is Method.FULL:
        return out, notes
    if setup.method is Method.QLORA and setup.quant.kind is Quant.INT8:
        out.update(adapter="lora", load_in_8bit=True)
    elif setup.method is Method.QLORA:
        out.update(adapter="qlora", load_in_4bit=True,
                   bnb_config_kwargs={"bnb_4bit_quant_type": setup.quant.kind.value,
                                      "bnb_4bit_use_double_quant": setup.quant.double_quant})
    else:
        out["adapter"] = "lora"
    lora = setup.lora
    out.update(lora_r=lora.rank, lora_alpha=_number(lora.alpha), lora_dropout=lora.dropout)
    if "all-linear" in lora.targets:
        out["lora_target_linear"] = True
    elif lora.targets:
        out["lora_target_modules"] = list(lora.targets)
    else:
        notes.append("the job leaves the LoRA targets to PEFT's default for the model; axolotl needs "
                     "lora_target_modules or lora_target_linear: add them before training")
    if lora.dora:
        out["peft_use_dora"] = True
    return out, notes


def _kernels(job) -> dict[str, Any]:
    impl = job.setup.impl
    out: dict[str, Any] = {}
    plugins = []
    if impl.liger_kernels:
        plugins.append(LIGER)
        out.update(liger_rope=True, liger_rms_norm=True, liger_glu_activation=True)
        if impl.loss is Loss.FUSED:
            out["liger_fused_linear_cross_entropy"] = True
    elif impl.loss is Loss.FUSED:
        plugins.append(CCE)
        out["cut_cross_entropy"] = True
    if impl.loss is Loss.CHUNKED:
        out["chunked_cross_entropy"] = True
    return ({"plugins": plugins} if plugins else {}) | out


def _distributed(job) -> dict[str, Any]:
    layout, setup = job.layout, job.setup
    out: dict[str, Any] = {}
    if layout.cp > 1:
        out["context_parallel_size"] = layout.cp
    if layout.zero is not ZeroStage.NONE:
        out["deepspeed"] = pieces.DS_FILE
    elif layout.fsdp is not Fsdp.NONE:
        out["fsdp_version"] = _fsdp_version(job)
        out["fsdp_config"] = {"offload_params": layout.offload is Offload.ALL, "reshard_after_forward": True,
                              "auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "state_dict_type": "FULL_STATE_DICT",
                              "activation_checkpointing": setup.grad_ckpt is GradCkpt.FULL}
        if layout.fsdp is Fsdp.HYBRID:
            out["dp_replicate_size"] = layout.nodes
    return out


def config(job, ctx: ExportContext) -> tuple[dict[str, Any], list[str]]:
    setup, work, layout = job.setup, job.workload, job.layout
    data: dict[str, Any] = {"base_model": pieces.model_name(job, ctx)}
    lora, notes = _lora(job)
    data.update(lora)
    data["datasets"] = [{"path": ctx.dataset, "type": "alpaca"}]
    data["output_dir"] = ctx.output_dir
    data.update(sequence_len=setup.seq_len, sample_packing=work.packing)
    if work.packing:
        data["pad_to_sequence_len"] = True
    data.update(micro_batch_size=setup.batch_size, gradient_accumulation_steps=setup.grad_accum,
                num_epochs=_number(work.epochs))
    if work.steps:
        data["max_steps"] = work.steps
    # core/builders/base.py: optimizer "muon" -> axolotl-contribs-mit MuonOptimizerFactory
    data["optimizer"] = "muon" if setup.optimizer is Optimizer.MUON else pieces.hf_optim(FORMAT, setup.optimizer)
    data.update(_precision(job))
    data["attn_implementation"] = pieces.attn_implementation(setup)
    fsdp = layout.fsdp is not Fsdp.NONE
    if not fsdp:    # under FSDP the checkpointing is fsdp_config.activation_checkpointing
        data["gradient_checkpointing"] = setup.grad_ckpt is GradCkpt.FULL
    if setup.impl.activation_offload:
        data["activation_offloading"] = True
    data.update(_kernels(job))
    if setup.impl.compiled:
        data["torch_compile"] = True
    if pieces.expert_loop(setup):
        data["experts_implementation"] = "eager"     # loaders/model.py _configure_experts_implementation
    if job.timing.group_by_length:      # core/builders/causal.py: train_sampling_strategy "group_by_length"
        data["group_by_length"] = True
    stage = pieces.stage(job)
    if stage in _RL:
        data["rl"] = _RL[stage]
    data.update(_distributed(job))
    return data, notes


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def launch(job, ctx: ExportContext) -> str:
    """`axolotl train` with accelerate's options after `--` (num_processes is the total over all nodes)."""
    layout = job.layout
    words = ["axolotl", "train", FILE]
    if layout.num_gpus > 1:
        words += ["--launcher", "accelerate", "--", "--num_processes", str(layout.num_gpus)]
        if layout.nodes > 1:
            words += ["--num_machines", str(layout.nodes), "--machine_rank", ctx.node_rank, "--main_process_ip",
                      ctx.master_addr, "--main_process_port", str(ctx.master_port)]
    return pieces.lines(words)


def export(job, estimate, ctx: ExportContext) -> Exported:
    check(job)
    data, notes = config(job, ctx)
    notes = pieces.framework_note(job, FORMAT, FRAMEWORKS) + notes
    header = "axolotl config (src/axolotl/utils/schemas/config.py AxolotlInputConfig)"
    if "deepspeed" in data:
        header += "\nrun from this folder: the DeepSpeed JSON is named by a relative path"
    files = [ExportFile(name=FILE, text=pieces.yaml_text(data, header), format=FORMAT)]
    if "deepspeed" in data:
        files.append(ExportFile(name=pieces.DS_FILE, text=pieces.ds_config_text(job),
                                  format=f"{FORMAT}:deepspeed"))
    notes.append(f"the GPU count is the launcher's ({job.layout.num_gpus} processes in the launch line); "
                 "an axolotl YAML does not hold it")
    return Exported(files=tuple(files), commands=(launch(job, ctx),), notes=tuple(notes))
