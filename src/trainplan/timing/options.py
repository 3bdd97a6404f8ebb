"""The time model's options: every link of the chain a user may override (None: the default,
stated in the notes). Set by job/resolve.build_timing from the user's flags and by the case readers."""

from __future__ import annotations

from trainplan.enums import PipeSchedule
from trainplan.frozen import field, frozen
from trainplan.memory.sharding import FsdpConfig, ZeroConfig
from trainplan.timing.efficiency import DEFAULT_MODEL, EfficiencyModel
from trainplan.timing.flops import AttnConvention


@frozen
class TimingOptions:
    """Every link of the chain a user may override (None: the default, stated in the notes)."""

    interconnect: str | None = None        # inter-node preset (trainplan.timing.links.INTERCONNECTS)
    intranode: str | None = None           # "nvlink" or "pcie"
    compiled: bool | None = None           # torch.compile / fused kernels (None: framework default)
    efficiency: float | None = None        # override the matmul efficiency (fraction of peak)
    mfu_convention: AttnConvention = AttnConvention.FULL
    pp_interleave: int = 1                 # virtual pipeline chunks per stage
    zero: ZeroConfig | None = None         # the job's DeepSpeed ZeRO knobs (overlap_comm; None: DeepSpeed's defaults)
    fsdp: FsdpConfig | None = None         # the job's FSDP behaviour (None: the framework's, memory.sharding.fsdp_for)
    pp_schedule: PipeSchedule | None = None    # None: the framework's (interleaved when pp_interleave > 1, else 1F1B)
    pp_head_as_layer: bool = False         # the embedding and the loss each take a layer's place in the split
    sequential_pipeline: bool = False      # device_map="auto": one GPU works at a time
    sequence_parallel: bool = True         # Megatron --sequence-parallel: norms and residual adds split over tp
    quant_kernel: str | None = None        # dequantisation kernel: nf4, fp4, int8, gptq
    checkpoint_bytes: int | None = None    # bytes written per checkpoint save
    host_cpus: int | None = None           # CPU cores of a node's host (None: catalog/data/hosts.toml)
    host_mem_bw_bytes_per_s: float | None = None   # its DRAM bandwidth (wire rate; None: hosts.toml)
    sample_lengths: tuple[int, ...] | None = None
    drop_long_samples: bool = False        # samples over seq_len deleted, not truncated (ms-swift's default)
    group_by_length: bool = False          # HF Trainer's length-grouped sampler (timing.steps.grouped_batch_max)
    model: EfficiencyModel = field(default_factory=lambda: DEFAULT_MODEL)
