"""The Job: one training job with every choice resolved, the input of a pure estimate.

Parsing (CLI flags, Python keywords, config files, web forms) ends here: names are catalog specs,
strings are enums, the price is chosen, files are read, the calibration is loaded or left out.
`trainplan.estimation.estimate(job)` then looks nothing up and reads no file.
"""

from __future__ import annotations

from trainplan.cost.prices import PriceBook, Pricing
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen
from trainplan.job.options import JobOptions
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.ledger.calibration import Calibration
from trainplan.memory.model import MemoryModel
from trainplan.memory.parallel import ParallelConfig
from trainplan.memory.sharding import FsdpConfig, ZeroConfig
from trainplan.specs import GpuSpec
from trainplan.timing.estimate import TimingOptions

DEFAULT_HEADROOM = 0.10


def check_headroom(headroom: float) -> float:
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float)) or not 0.0 <= headroom < 1.0:
        raise TrainplanError(f"--headroom must be a fraction in [0, 1), got {headroom!r}")
    return float(headroom)


@frozen
class Job:
    """What to train (setup), how it is spread (layout) over which GPU, on how much data (workload),
    with each stage's options, the price it is billed at, the safety margin and the calibration."""

    setup: TrainingSetup
    layout: Layout
    gpu: GpuSpec
    workload: Workload = field(default_factory=Workload)
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    timing: TimingOptions = field(default_factory=TimingOptions)
    zero: ZeroConfig | None = None              # DeepSpeed knobs given (None: DeepSpeed's defaults)
    fsdp: FsdpConfig | None = None              # FSDP version/resharding given (None: the framework's)
    pricing: Pricing | None = None              # None: no price, no bill
    price_missing: str = ""                     # why there is no price and how to give one
    book: PriceBook | None = None               # where prices come from, the currency and kind compared
    headroom: float = DEFAULT_HEADROOM
    calibration: Calibration | None = None      # None: the raw model
    recorded: object = None                     # ledger.recorded.RecordedRuns: runs that prove a setup fits
    gpus: tuple[GpuSpec, ...] = ()              # GPU types a "what would make it fit" suggestion may name
    gpus_note: str = ""                         # which GPU types were left out of the suggestions, and why
    options: JobOptions | None = None           # what the user said: for display and the ledger, never computed from
    notes: tuple[str, ...] = ()                 # job/validate.check_job: legal combinations worth a word

    def memory_model(self) -> MemoryModel:
        """The memory composition with this job's engine knobs (one per estimate: it caches)."""
        return MemoryModel(parallel=self.parallel, zero=self.zero, fsdp=self.fsdp)

    def __post_init__(self) -> None:
        check_headroom(self.headroom)
        if self.layout.gpu_id != self.gpu.id:
            raise TrainplanError(f"the layout's GPU {self.layout.gpu_id!r} is not the job's GPU {self.gpu.id!r}")
