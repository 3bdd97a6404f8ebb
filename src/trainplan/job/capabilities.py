"""What each framework can run, as trainplan models it: the layouts, optimizers and loss kernels, each
entry with its sources. The planner searches only these; a flag outside them is an error (job/validate.py).
The frameworks' defaults are job/frameworks.py's profiles."""

from __future__ import annotations

from trainplan.enums import LOW_RANK_OPTIMIZERS, MATRIX_OPTIMIZERS, Attention, Framework, Fsdp, Loss, Offload, Optimizer
from trainplan.frozen import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from trainplan.job.training import Layout, TrainingSetup
    from trainplan.specs import GpuSpec

_ALL_OPT = frozenset(Optimizer) - {Optimizer.BADAM, Optimizer.MUON, Optimizer.ADAM_MINI} - LOW_RANK_OPTIMIZERS
# GaLore runs where the trainer builds its optimizer from the model's own 2-D weights: HF Trainer `optim`
# galore_adamw[_8bit][_layerwise] (trainer.py, optim_target_modules), LLaMA-Factory use_galore, ms-swift
# use_galore, and a plain loop (GaLore's torchrun_main.py)
# APOLLO the same way: HF `optim` apollo_adamw[_layerwise] (trainer_optimizer.py _get_apollo_optimizer) and
# LLaMA-Factory use_apollo (train/trainer_utils.py _create_apollo_optimizer)
_GALORE_OPT = _ALL_OPT | LOW_RANK_OPTIMIZERS
# Muon: LLaMA-Factory use_muon (train/trainer_utils.py _create_muon_optimizer), ms-swift `--optimizer muon`
# (swift/optimizers/mapping.py), axolotl `optimizer: muon` (core/builders/base.py) and torch.optim.Muon; not the
# HF Trainer's own `optim` names (transformers 5.24 OptimizerNames has none), torchtitan, torchtune or Megatron
_MUON_OPT = _GALORE_OPT | {Optimizer.MUON}
_ATTN = frozenset(Attention)
_OFF_ZERO = (Offload.OPTIMIZER, Offload.PARAMS, Offload.ALL)


@frozen
class Capabilities:
    """The layouts, optimizers and kernels a framework runs, as trainplan models them.

    zero: DeepSpeed ZeRO stages (0 = none; Megatron's distributed optimizer is stage 1). fsdp: FSDP
    full and hybrid sharding. offload: the CPU offload kinds (optimizer = ZeRO-Offload or Megatron's
    optimizer_cpu_offload; params/all = ZeRO-3 offload_param; all = FSDP CPU offload). tp/pp/cp/ep:
    tensor, pipeline, context, expert parallelism. mp_zero1 / mp_fsdp: what shards the data-parallel
    copies when tp or pp > 1 (Megatron/DeepSpeed: the distributed optimizer; torchtitan/torchtune: FSDP2).
    """

    layouts: str                  # the layouts in words, for messages
    source: str                   # where these facts come from
    zero: tuple[int, ...] = (0,)
    fsdp: bool = False
    offload: tuple[Offload, ...] = ()
    tp: bool = False
    pp: bool = False
    cp: bool = False
    ep: bool = False
    mp_zero1: bool = False
    mp_fsdp: bool = False
    optimizers: frozenset[Optimizer] = _ALL_OPT
    losses: frozenset[Loss] = frozenset({Loss.FULL})
    liger: bool = False
    attentions: frozenset[Attention] = _ATTN
    quantized_base: bool = True   # adapters over a 4-bit (bitsandbytes) base: QLoRA
    instead: str = ""             # where to go for what it cannot run

    def cannot_run(self, framework: Framework, what: str) -> str:
        """The one-line refusal of `what` (e.g. "tensor parallelism (--tp 2)") under `framework`."""
        tail = f"; {self.instead}" if self.instead else ""
        return f"--framework {framework} cannot run {what}: it runs {self.layouts}{tail}"


_HF_STACK = {"zero": (0, 1, 2, 3), "fsdp": True, "offload": _OFF_ZERO, "liger": True,
             "losses": frozenset({Loss.FULL, Loss.FUSED}), "optimizers": _GALORE_OPT}
_HF_SOURCE = ("transformers Trainer: `deepspeed` (integrations/deepspeed.py: ZeRO 0-3, offload_optimizer/offload_param) "
              "and `fsdp`/`fsdp_config` (FSDP1/2, cpu_offload) in training_args.py; `optim` OptimizerNames (adamw_torch"
              "[_fused], adamw_bnb_8bit, paged_adamw_8bit, adafactor, sgd, lion_8bit/32bit, "
              "galore_adamw[_8bit][_layerwise]); `use_liger_kernel` (fused linear cross-entropy). DeepSpeed AutoTP "
              "(`tensor_parallel.autotp_size`) and accelerate's "
              "`parallelism_config` tp/cp (>= 1.10.1) exist but are not Megatron TP: trainplan does not model them")
_TP = "for tensor/pipeline parallelism plan with --framework megatron or torchtitan"

CAPABILITIES: dict[Framework, Capabilities] = {
    Framework.HF: Capabilities(layouts="DDP, DeepSpeed ZeRO-0..3 with CPU offload, FSDP1/2", source=_HF_SOURCE,
                               instead=_TP, **_HF_STACK),
    Framework.TRL: Capabilities(layouts="DDP, DeepSpeed ZeRO-0..3 with CPU offload, FSDP1/2 (HF Trainer)",
                                source=_HF_SOURCE + "; TRL SFTConfig `loss_type` chunked_nll (trl/trainer/sft_config.py)",
                                instead=_TP, **{**_HF_STACK, "losses": frozenset(Loss)}),
    Framework.LLAMAFACTORY: Capabilities(
        layouts="DDP, DeepSpeed ZeRO-0..3 with CPU offload, FSDP1/2 (HF Trainer)",
        source="LLaMA-Factory ff6d4d1: HF Trainer underneath; `deepspeed:` examples/deepspeed/ds_z{0,2,3}[_offload]_config"
               ".json; FSDP from examples/accelerate/fsdp{,2}_config.yaml, fsdp_config_offload.yaml; HF `optim` plus "
               "use_badam/use_galore/...; `enable_liger_kernel`. Its Megatron path (USE_MCA=1 / use_megatron_bridge, "
               "no DeepSpeed) is Megatron-core: plan it with --framework megatron",
        instead="LLaMA-Factory's Megatron path (USE_MCA=1) is --framework megatron",
        **{**_HF_STACK, "optimizers": frozenset(Optimizer)}),
    Framework.SWIFT: Capabilities(
        layouts="DDP, DeepSpeed ZeRO-0..3 with CPU offload, FSDP2 (`swift sft`, HF Trainer)",
        source="ms-swift 3602360 `swift sft`: `deepspeed` zero0|zero1|zero2|zero3|zero2_offload|zero3_offload, `fsdp` "
               "fsdp2 (swift/config/fsdp2.json), HF `optim`, `use_liger_kernel`. `megatron sft` (Megatron-SWIFT, "
               "swift/megatron/arguments/megatron_args.py: tensor/pipeline/context/expert_model_parallel_size) is "
               "Megatron-core: plan it with --framework megatron",
        instead="ms-swift's `megatron sft` is --framework megatron", **{**_HF_STACK, "optimizers": _MUON_OPT}),
    Framework.AXOLOTL: Capabilities(
        layouts="DDP, DeepSpeed ZeRO-1..3 with CPU offload, FSDP1/2, context parallel (HF Trainer)",
        source="axolotl 067b021: deepspeed_configs/zero{1,2,3}[_bf16][_cpuoffload_all|_params].json, `fsdp_version` + "
               "`fsdp_config` (offload_params), `context_parallel_size` (ring-flash-attn), Liger and CutCrossEntropy "
               "plugins, `chunked_cross_entropy`; `tensor_parallel_size` is DeepSpeed AutoTP (not modelled)",
        cp=True, instead=_TP, **{**_HF_STACK, "losses": frozenset(Loss), "optimizers": _MUON_OPT}),
    Framework.UNSLOTH: Capabilities(
        layouts="one GPU or DDP", source="unsloth: single-GPU kernels, multi-GPU through accelerate/torchrun DDP; HF "
                                         "`optim` (notebooks: adamw_8bit); its own fused cross-entropy",
        liger=True, losses=frozenset({Loss.FULL, Loss.FUSED}), optimizers=_GALORE_OPT,
        instead="for sharded or model-parallel layouts plan with --framework hf, deepspeed or megatron"),
    Framework.DEEPSPEED: Capabilities(
        layouts="DDP, ZeRO-0..3 with CPU/NVMe offload, pipeline parallel with ZeRO-0/1",
        source="DeepSpeed edaa722: runtime/zero/config.py (stage 0-3), zero/offload_config.py (offload_optimizer, "
               "offload_param), runtime/pipe/engine.py (PipelineModule; ZeRO-2/3 are rejected with pipelines), "
               "`optimizer.type` adam/adamw/lion (ops/adam, ops/lion) or a client torch/bitsandbytes optimizer; "
               "AutoTP training (runtime/tensor_parallel) is not modelled",
        zero=(0, 1, 2, 3), offload=_OFF_ZERO, pp=True, mp_zero1=True, ep=True, liger=True, losses=frozenset(Loss),
        instead="for tensor parallelism plan with --framework megatron or torchtitan"),
    Framework.FSDP: Capabilities(
        layouts="DDP, FSDP full/hybrid with CPU offload",
        source="PyTorch FullyShardedDataParallel / fully_shard (ShardingStrategy FULL_SHARD, HYBRID_SHARD; "
               "CPUOffload(offload_params=True) moves parameters, gradients and the optimizer step); any torch optimizer",
        fsdp=True, offload=(Offload.ALL,), liger=True, losses=frozenset(Loss), instead=_TP),
    Framework.MEGATRON: Capabilities(
        layouts="DDP or the distributed optimizer, TP, PP, CP, EP",
        source="Megatron-LM megatron/training/arguments.py: --tensor/--pipeline/--context/--expert-model-parallel-size, "
               "--use-distributed-optimizer, --optimizer-cpu-offload, --optimizer adam|sgd (Apex/TE FusedAdam, "
               "decoupled weight decay); ms-swift `megatron sft` and LLaMA-Factory USE_MCA=1 run Megatron-core",
        zero=(0, 1), offload=(Offload.OPTIMIZER,), tp=True, pp=True, cp=True, ep=True, mp_zero1=True,
        optimizers=frozenset({Optimizer.ADAMW, Optimizer.ADAMW_FUSED, Optimizer.SGD}),
        attentions=frozenset({Attention.FLASH, Attention.EAGER}),
        # LoRA over 16-bit weights only: LLaMA-Factory's Megatron path "not with DeepSpeed or quantization"
        # (shared/reference/framework_configs.md, section 8), pretrain_gpt.py has no adapters at all
        quantized_base=False),
    Framework.TORCHTITAN: Capabilities(
        layouts="DDP, FSDP2/HSDP with CPU offload, TP, PP, CP, EP",
        source="torchtitan v0.2.2: distributed/parallel_dims.py (dp_replicate, dp_shard, tp, pp, cp, ep), "
               "training.enable_cpu_offload, components/optimizer.py build_optimizers (Adam, AdamW; implementation "
               "fused|foreach; anything else raises NotImplementedError), components/loss.py cross_entropy_loss",
        fsdp=True, offload=(Offload.ALL,), tp=True, pp=True, cp=True, ep=True, mp_fsdp=True,
        optimizers=frozenset({Optimizer.ADAMW, Optimizer.ADAMW_FUSED}),
        attentions=frozenset({Attention.FLASH, Attention.SDPA})),
    Framework.TORCHTUNE: Capabilities(
        layouts="one GPU, FSDP2 with CPU offload, TP, CP",
        source="torchtune bd2a0fc: recipes/full_finetune_distributed.py (fully_shard, fsdp_cpu_offload, "
               "tensor_parallel_dim, context_parallel_dim), no DeepSpeed; `optimizer._component_` instantiates any "
               "optimizer class (torchtune/config/_instantiate.py; configs use torch.optim.AdamW fused, bitsandbytes "
               "PagedAdamW8bit, torchao AdamW8bit); CEWithChunkedOutputLoss / LinearCrossEntropyLoss",
        fsdp=True, offload=(Offload.ALL,), tp=True, cp=True, mp_fsdp=True,
        losses=frozenset({Loss.FULL, Loss.CHUNKED}), instead="for pipeline parallelism plan with --framework torchtitan "
                                                             "or megatron"),
    Framework.LITGPT: Capabilities(
        layouts="one GPU, DDP, FSDP", source="litgpt finetune: Fabric strategies auto/ddp/fsdp (FSDPStrategy), "
                                             "`--optimizer` a torch.optim class (or bitsandbytes with --quantize), "
                                             "chunked_cross_entropy (litgpt/utils.py)",
        fsdp=True, losses=frozenset({Loss.FULL, Loss.CHUNKED}), instead=_TP,
        optimizers=frozenset({Optimizer.ADAMW, Optimizer.ADAMW_FUSED, Optimizer.SGD, Optimizer.ADAFACTOR,
                              Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT})),
    Framework.PYTORCH: Capabilities(
        layouts="one GPU or DDP", source="a plain PyTorch loop (torch.nn.parallel.DistributedDataParallel); "
                                         "sharded loops are --framework fsdp",
        # a plain loop also builds Adam-mini (pip adam-mini: Adam_mini(model.named_parameters(), ...))
        liger=True, losses=frozenset(Loss), optimizers=_MUON_OPT | {Optimizer.ADAM_MINI},
        instead="for sharding plan with --framework fsdp, deepspeed or hf"),
}


def capabilities(framework: Framework) -> Capabilities:
    return CAPABILITIES[framework]


# The trainers whose DeepSpeed engine accelerate builds (HF Trainer and those built on it).
ACCELERATE_DEEPSPEED = frozenset({Framework.HF, Framework.LLAMAFACTORY, Framework.SWIFT, Framework.AXOLOTL,
                                  Framework.UNSLOTH, Framework.TRL})
# What accelerate leaves in its own family under optimizer offload: torch AdamW (as DeepSpeedCPUAdam in AdamW
# mode) and bitsandbytes Lion (as DeepSpeedCPULion). GaLore, APOLLO and Muon never reach ZeRO
# (memory.parallel.optimizer_refusal); BAdam's block optimizer is LLaMA-Factory's own and stays as modelled.
_OWN_UNDER_OFFLOAD = frozenset({Optimizer.ADAMW, Optimizer.ADAMW_FUSED, Optimizer.LION, Optimizer.BADAM})


def offloaded_optimizer(setup: TrainingSetup, layout: Layout) -> tuple[Optimizer, str | None]:
    """The optimizer a DeepSpeed ZeRO-Offload run of the HF Trainer family really steps, and a note when it is
    not the one asked for. accelerate's _prepare_deepspeed (accelerator.py) hands the trainer's optimizer to
    map_pytorch_optim_to_deepspeed (accelerate/utils/deepspeed.py) when offload_optimizer.device is not "none"
    and zero_force_ds_cpu_optimizer is unset or true: every class but torch Adagrad and bitsandbytes Lion comes
    back as DeepSpeedCPUAdam over the same parameter groups (adamw_mode only for torch AdamW). A DeepSpeed
    config with an `optimizer` section gets DeepSpeed's own optimizer instead (transformers
    integrations/deepspeed.py deepspeed_optim_sched: DummyOptim), Adam under offload as well. So 8-bit, Adafactor,
    SGD or Adam-mini states become fp32 Adam moments on the host, stepped by DeepSpeedCPUAdam."""
    framework, optimizer = setup.framework, setup.optimizer
    client = (layout.zero > 0 and layout.fsdp is Fsdp.NONE and layout.offload in (Offload.OPTIMIZER, Offload.ALL)
              and optimizer not in _OWN_UNDER_OFFLOAD and optimizer not in MATRIX_OPTIMIZERS)
    if client and framework is Framework.DEEPSPEED:
        # a script's own client optimizer reaches DeepSpeed as it is, and engine.py _configure_optimizer raises
        # ZeRORuntimeException for one that is not DeepSpeedCPUAdam or DeepSpeedCPULion unless the config says
        # zero_force_ds_cpu_optimizer: false
        return optimizer, (f"--optimizer {optimizer} under ZeRO optimizer offload: DeepSpeed refuses a client "
                           "optimizer other than DeepSpeedCPUAdam or DeepSpeedCPULion unless the config sets "
                           "zero_force_ds_cpu_optimizer: false (runtime/engine.py _configure_optimizer); estimated "
                           "with that setting, the optimizer stepping on CPU tensors")
    if not (client and framework in ACCELERATE_DEEPSPEED):
        return optimizer, None
    return Optimizer.ADAMW, (f"--optimizer {optimizer} under ZeRO optimizer offload: accelerate replaces it with "
                             "DeepSpeedCPUAdam (accelerate utils/deepspeed.py map_pytorch_optim_to_deepspeed), so the "
                             "host keeps fp32 Adam moments and steps them; zero_force_ds_cpu_optimizer: false in "
                             "the DeepSpeed config keeps the trainer's optimizer (trainplan does not read it)")


def flash_version_named(value: str) -> int | None:
    """The FlashAttention major version (2, 3 or 4) a setting or a text names: transformers' attn_implementation
    flash_attention_3 / _4 (modeling_flash_attention_utils.py), LLaMA-Factory's flash_attn fa3, a kernels-hub path
    (kernels-community/flash-attn3), "FlashAttention-3", "FA3", "flash-attn v2"; None when it names none."""
    import re  # only for settings and free text

    m = re.search(r"(?<![a-z0-9])(?:flash[-_ ]?att(?:n|ention)|fa)[-_ ]?v?([234])(?![0-9])", value.lower())
    return int(m.group(1)) if m else None


def flash_refusal(framework: Framework, attention: Attention, version: int, gpu: GpuSpec | None) -> str | None:
    """Why FlashAttention `version` cannot run (None: it can; gpu None: not asked of a GPU, as the planner).
    FA3 and FA4 are transformers' attn_implementation flash_attention_3 / _4 (LLaMA-Factory fa3, ms-swift and
    axolotl the same names). flash-attn's hopper/ build (flash_attn_interface) runs on sm90 only; FA4
    (flash_attn.cute) is timed from its sm100 benchmarks (timing.attention), so on Blackwell data-centre GPUs;
    neither runs on GeForce or RTX dies (sm89, sm120)."""
    if version == 2:
        return None
    from trainplan.catalog.gpu_text import desktop_die
    from trainplan.job.frameworks import RUNS_TRANSFORMERS

    if attention is not Attention.FLASH:
        return (f"--flash-version {version} picks the FlashAttention of --attention flash; the job runs "
                f"--attention {attention}")
    if framework not in RUNS_TRANSFORMERS:
        return (f"--flash-version {version} is transformers' attn_implementation flash_attention_{version}; "
                f"--framework {framework} runs its own attention kernels")
    generations = ("hopper",) if version == 3 else ("blackwell",)   # trainplan has FA4 rates for sm100 only
    if gpu is not None and (gpu.generation.lower() not in generations or desktop_die(gpu)):
        return (f"--flash-version {version} (FlashAttention-{version}) runs on "
                f"{' and '.join(g.capitalize() for g in generations)} data-centre GPUs; {gpu.id!r} is "
                f"{gpu.generation}: use --flash-version 2")
    return None
