"""What a user says about one job (CLI flags, Python keywords, a ledger record's setup), before
anything is looked up: the edge's input. `job/resolve.py` turns it into a Job."""

from __future__ import annotations

from trainplan.frozen import fields, frozen
from trainplan.specs import GpuSpec, ModelSpec


@frozen
class JobOptions:
    """Everything a user can say about one job, in their words (catalog names, choice strings), with None
    where they said nothing. `job.resolve.resolve_job` turns it into a Job; nothing downstream reads it."""

    model: str | ModelSpec
    method: str = "full"
    precision: str | None = None
    optimizer: str | None = None
    lora_rank: int = 16
    galore_rank: int = 128          # --optimizer galore-*: the projection rank (HF Trainer's default)
    apollo_rank: int = 128          # --optimizer apollo-adamw: the projection rank (HF Trainer's default)
    lora_alpha: float | None = None
    lora_dropout: float = 0.05
    lora_targets: str | tuple[str, ...] | None = None
    dora: bool = False
    modules_to_save: str | tuple[str, ...] | None = None
    quant: str | None = None
    double_quant: bool = False
    batch_size: int = 1
    grad_accum: int = 1
    seq_len: int = 2048
    grad_ckpt: str | None = None
    attention: str | None = None
    freeze_layers: int = 2
    framework: str = "hf"
    optimizer_in_backward: bool | None = None
    loss: str | None = None
    activation_offload: bool | None = None
    liger: bool | None = None
    flash_version: int | None = None   # FlashAttention 2, 3 or 4 under --attention flash (None: 2)
    experts_implementation: str | None = None   # transformers' MoE experts: grouped_mm (v5, default) | eager
    load_fp32: bool | None = None
    gpu: str | GpuSpec = "a100-80gb"
    num_gpus: int = 1
    nodes: int = 1
    zero: int | str = 0
    fsdp: str = "none"
    offload: str = "none"
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int | None = None          # expert tensor parallel (None: as tp, Megatron-Core's default)
    samples: int | None = None
    tokens_per_sample: int | None = None
    epochs: float = 1.0
    packing: bool = False
    retry_factor: float = 1.0
    provider: str | None = None
    price_per_gpu_hour: float | None = None   # one price for every GPU type
    currency: str | None = None
    spot: bool = False
    price: tuple[str, ...] = ()               # --price GPU=AMOUNT, per GPU type, in `currency`
    prices: str | None = None                 # --prices FILE: a user or team price file
    price_kind: str | None = None             # on-demand | spot | marketplace | reserved | any
    interconnect: str | None = None
    headroom: float = 0.10
    sequence_parallel: bool = True
    vpp: int = 1                      # virtual pipeline stages (interleaved 1F1B)
    tokens: float | None = None       # total training tokens (instead of --samples): samples = tokens / tokens per sample
    host_cpus: int | None = None      # CPU cores per node for an offloaded optimizer (None: the GPU's reference host)
    host_mem_gb_per_s: float | None = None   # host DRAM bandwidth per node, GB/s (None: the reference host's)
    fp8_recipe: str | None = None     # --precision fp8: trainplan.enums.Fp8Recipe (None: the framework's)
    pp_schedule: str | None = None    # pipeline schedule (trainplan.enums.PipeSchedule; None: the framework's)
    uneven_pipeline: bool = False
    pp_head_as_layer: bool | None = None   # embedding and loss as a layer each in the pipeline split (None: no)
    compile: bool | None = None       # torch.compile / fused kernels (time model)
    compile_loss: bool | None = None  # torch.compile over the loss too (None: as compile)
    eval_fraction: float = 0.0        # evaluation tokens as a fraction of training tokens
    val_size: float | None = None     # held-out evaluation samples: a count (>= 1) or a share of the data (< 1)
    eval_steps: float | None = None   # evaluate every N optimizer steps (< 1: that share of the run's steps)
    eval_each_epoch: bool = False     # evaluate after each epoch (HF eval_strategy "epoch")
    checkpoint_saves: int = 0
    disk_gb_per_s: float = 1.0        # checkpoint write bandwidth
    lengths_file: str | None = None   # sample lengths (tokens), one per line or a JSON list
    drop_long_samples: bool | None = None   # samples over --seq-len deleted, not truncated (None: the framework's)
    group_by_length: bool | None = None     # HF Trainer's length-grouped sampler (None: off, random batches)
    dataset: str | None = None        # catalog dataset(s) whose sample lengths the run trains on (comma-separated)
    calibration: bool = True          # apply the fit of `trainplan calibrate` when one matches
    efficiency: float | None = None   # override the matmul efficiency (fraction of peak)
    max_steps: int | None = None      # run length in optimizer steps (samples = steps x global batch)
    fsdp_version: int | None = None   # 1 (FullyShardedDataParallel) or 2 (fully_shard); None: the framework's
    reshard_after_forward: bool | None = None   # FSDP: free gathered params after forward (False = SHARD_GRAD_OP)
    ulysses: int = 1                  # Ulysses sequence parallelism (all-to-all over heads), DeepSpeed / ms-swift
    stage: str | None = None          # sft | pt | dpo | kto | orpo | simpo | rm | ppo | grpo (None: sft)
    ref_model: bool | None = None     # a frozen reference model on the GPU (None: from the stage)
    device_map: str | None = None     # "auto": one replica split layer-wise over the GPUs (accelerate big-model)
    padding_free: bool | None = None  # sequences concatenated without padding (flash-attention varlen)
    padding_mask: bool | None = None  # the batches' attention mask has padding (None: from --lengths-file)
    loss_upcast: bool | None = None       # cross-entropy on fp32 logits (None: the framework's)
    launch_blocking: bool | None = None   # CUDA_LAUNCH_BLOCKING=1 in the job's environment (timing.launch)
    comm_overlap: bool | None = None      # Megatron's TP/DP/PP communication overlap (timing.overlap; None: off)
    moe_a2a_overlap: bool | None = None   # Megatron's expert all-to-all overlap, combined 1F1B (None: off)
    moe_dispatcher: str | None = None     # alltoall | deepep: copies a token's dispatch sends (timing.dispatch)
    cpu_threads_per_rank: int | None = None   # OMP_NUM_THREADS per rank for a CPU optimizer (None: the launcher's)
    grad_ckpt_every: int | None = None  # checkpoint every n-th layer only (torchtitan selective_ac_option=n)
    # DeepSpeed zero_optimization knobs (None: DeepSpeed's defaults; "auto": what the HF integration fills)
    reduce_bucket_size: int | str | None = None
    prefetch_bucket_size: int | str | None = None     # stage3_prefetch_bucket_size
    max_live_parameters: int | None = None            # stage3_max_live_parameters
    param_persistence_threshold: int | str | None = None
    overlap_comm: bool | None = None
    offload_device: str | None = None                 # cpu | nvme (offload_optimizer / offload_param device)
    # where the values came from when configs were read (--from): bookkeeping, never computed from
    configs: tuple[str, ...] = ()     # the files read (with the ones they named)
    provenance: tuple = ()            # importers.base.Setting per value a file or a flag gave
    unread: tuple = ()                # importers.base.Unread: keys that matter but were not used
    ignored_keys: int = 0             # keys read that do not affect memory or time
    given: tuple[str, ...] = ()       # the fields given as flags (or API keywords) rather than defaulted


OPTION_NAMES = tuple(f.name for f in fields(JobOptions))
BOOKKEEPING = frozenset({"configs", "provenance", "unread", "ignored_keys", "given"})
