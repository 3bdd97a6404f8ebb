"""What `trainplan plan` is asked, resolved: the job, one setup per method searched, the knobs the
planner may choose, the GPU types it may rent with their prices, and the constraints.

`resolve_plan` is the planner's edge: it reads the catalogs (models, GPUs, prices) and the date;
`planner.plan.plan` then searches without looking anything up.
"""

from __future__ import annotations

import datetime
import math

from trainplan import catalog
from trainplan.cost.bill import billable_gpus
from trainplan.cost.prices import DEFAULT_CURRENCY, NoPriceError, PriceBook, Pricing, resolve_pricing
from trainplan.cost.sources import options_book
from trainplan.enums import Attention, Fp8Recipe, Framework, GradCkpt, Method, Optimizer, Precision
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen, replace
from trainplan.job.frameworks import profile
from trainplan.job.capabilities import Capabilities, capabilities
from trainplan.job.job import Job, check_headroom
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup, parse_enum, resolve_job
from trainplan.job.training import TrainingSetup
from trainplan.job.validate import PLANNER_COUNT_LIMIT, check_int
from trainplan.memory.result import usable_bytes
from trainplan.planner.space import ANY, FREE, Fixed
from trainplan.planner.stack import check_stack, fixed_layout
from trainplan.specs import GpuSpec, PriceOffer

DEFAULT_GLOBAL_BATCH = 32     # sequences per optimizer step when --global-batch is not given
DEFAULT_MAX_GPUS = 64
SORTS = ("cost", "time")
# flash and sdpa keep the same tensors and run the same causal FLOPs in trainplan's model (memory/
# activations, flops.kernel_convention; tests/test_planner.py holds them equal), and sdpa falls back to
# eager attention where transformers has no SDPA path (Gemma-2): flash is never worse, so it is the
# one searched unless --attention says otherwise.
DEFAULT_ATTENTIONS = (Attention.FLASH,)
DEFAULT_GRAD_CKPTS = (GradCkpt.NONE, GradCkpt.FULL)


@frozen
class Rentable:
    """A GPU type the planner may use, with its usable memory and its price."""

    gpu: GpuSpec
    usable_bytes: int
    pricing: Pricing

    @property
    def price_per_gpu_hour(self) -> float:
        return self.pricing.price_per_gpu_hour

    @property
    def currency(self) -> str:
        return self.pricing.currency

    @property
    def offer(self) -> PriceOffer | None:
        return self.pricing.offer

    def billable(self, num_gpus: int) -> int:
        return billable_gpus(num_gpus, self.pricing.gpus_per_instance)


@frozen
class Rejection:
    gpu: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"gpu": self.gpu, "reason": self.reason}


@frozen
class MethodSearch:
    """One method the planner searches: its setup (the planner varies its knobs) and the optimizers allowed."""

    setup: TrainingSetup
    optimizers: tuple[Optimizer, ...]

    @property
    def method(self) -> Method:
        return self.setup.method


@frozen
class PlanRequest:
    """The plan's job (its layout and GPU are the planner's to choose), what it may vary, where it may
    run, and the constraints every plan keeps."""

    job: Job
    methods: tuple[MethodSearch, ...]
    grad_ckpts: tuple[GradCkpt, ...]
    attentions: tuple[Attention, ...]
    rentables: tuple[Rentable, ...]
    rejected: tuple[Rejection, ...] = ()     # GPU types without a usable price
    currency: str = DEFAULT_CURRENCY
    book: PriceBook = field(default_factory=PriceBook)   # where the prices come from, the kind compared
    max_gpus: int = DEFAULT_MAX_GPUS
    gpus_per_node: int = 8
    global_batch: int = DEFAULT_GLOBAL_BATCH
    budget: float | None = None
    deadline_hours: float | None = None
    sort: str = "cost"
    top: int = 10
    today: datetime.date = field(default_factory=datetime.date.today)   # dates the offers' staleness
    capabilities: Capabilities = ANY        # what the framework runs: the layouts searched
    fixed: Fixed = FREE                     # the layout knobs the user gave

    def __post_init__(self) -> None:
        for name in ("max_gpus", "gpus_per_node", "global_batch", "top"):
            check_int(name, getattr(self, name), 1, PLANNER_COUNT_LIMIT)
        for name, flag in (("budget", "--budget"), ("deadline_hours", "--deadline")):
            value = getattr(self, name)
            if value is not None and (not math.isfinite(value) or value <= 0):
                raise TrainplanError(f"{flag} must be a positive number, got {value!r}")
        if self.sort not in SORTS:
            raise TrainplanError(f"--sort must be one of {', '.join(SORTS)}, got {self.sort!r}")
        if not self.methods:
            raise TrainplanError("the plan needs at least one method")

    def search_for(self, method: Method) -> MethodSearch:
        return next(m for m in self.methods if m.method is method)


def resolve_gpus(names: tuple[str | GpuSpec, ...] | None) -> list[GpuSpec]:
    """Catalog GPUs by id or alias, or GpuSpecs as given (None or 'all': every GPU), without duplicates."""
    if not names or any(isinstance(n, str) and n.strip().lower() == "all" for n in names):
        return list(catalog.load_gpus().values())
    out: dict[str, GpuSpec] = {}
    for name in names:
        gpu = name if isinstance(name, GpuSpec) else catalog.resolve_gpu(name)
        out.setdefault(gpu.id, gpu)
    return list(out.values())


def _optimizers(options: JobOptions, allowed: tuple[str, ...]) -> tuple[Optimizer, ...]:
    """The optimizers searched: --optimizers (an explicit set), else --optimizer, else the framework's
    default only. Nothing else is switched in: 8-bit states are a quality decision the team makes.
    --optimizers wins over an optimizer read from a config (--from); with --optimizer it is an error."""
    if allowed and options.optimizer and "optimizer" in options.given:
        raise TrainplanError("give --optimizer (one) or --optimizers (the allowed set), not both")
    if allowed:
        return tuple(dict.fromkeys(parse_enum(Optimizer, o, "--optimizers") for o in allowed))
    if options.optimizer:
        return (parse_enum(Optimizer, options.optimizer, "--optimizer"),)
    return (profile(parse_enum(Framework, options.framework, "--framework")).optimizer,)


def _rentables(gpus: list[GpuSpec], headroom: float, book: PriceBook, today: datetime.date,
               precision: Precision, blackwell_only: bool = False) -> tuple[list[Rentable], list[Rejection]]:
    """Each GPU with its usable memory and its price of the kind compared (converted to the plan's
    currency); GPU types without one, or without tensor cores for the job's dtype, are rejected,
    saying what would change that."""
    rejected: list[Rejection] = []
    out: list[Rentable] = []
    dtype = precision.needs_tensor_dtype
    for gpu in gpus:
        usable = usable_bytes(gpu.capacity_bytes, headroom)
        if dtype is not None and not gpu.supports(dtype):
            other = "--precision fp16" if dtype == "bf16" and gpu.supports("fp16") else "another --precision"
            rejected.append(Rejection(gpu=gpu.id, reason=f"no {dtype} tensor cores ({precision} would run emulated "
                                                          f"or not at all): plan it with {other}"))
            continue
        if blackwell_only and gpu.generation.lower() != "blackwell":
            rejected.append(Rejection(gpu=gpu.id, reason="--fp8-recipe te-mxfp8 needs Blackwell tensor cores: "
                                                          "plan it with te-current or te-blockwise"))
            continue
        try:
            pricing = resolve_pricing(gpu.id, book, today=today, strict=True)
        except NoPriceError as exc:
            rejected.append(Rejection(gpu=gpu.id, reason=exc.short))
            continue
        out.append(Rentable(gpu=gpu, usable_bytes=usable, pricing=pricing))
    return out, rejected


def resolve_plan(options: JobOptions, *, methods: tuple[str, ...] = (), gpus: tuple[str | GpuSpec, ...] | None = None,
                 offers: tuple[PriceOffer, ...] | None = None, max_gpus: int = DEFAULT_MAX_GPUS,
                 gpus_per_node: int = 8, global_batch: int = DEFAULT_GLOBAL_BATCH, budget: float | None = None,
                 deadline_hours: float | None = None, sort: str = "cost", top: int = 10,
                 today: datetime.date | None = None, optimizers: tuple[str, ...] = ()) -> PlanRequest:
    """The PlanRequest of `options` (the job's flags) and the planner's constraints. A knob the
    options leave unsaid (checkpointing, attention, the layout) is the planner's to choose within
    what the framework runs; one they give is fixed. `optimizers`: the allowed set (--optimizers)."""
    today = today or datetime.date.today()
    framework = parse_enum(Framework, options.framework, "--framework")
    caps = capabilities(framework)
    fixed = fixed_layout(options)
    allowed = _optimizers(options, tuple(optimizers or ()))
    check_stack(framework, caps, fixed, options, allowed)
    headroom = check_headroom(options.headroom)
    chosen = tuple(parse_enum(Method, m, "--methods") for m in (methods or (options.method,)))
    # the planner chooses the split: the job's own layout is a placeholder (one GPU can hold no --tp 2)
    job = resolve_job(replace(options, method=str(chosen[0]), tp=1, pp=1), today=today, priced=False,
                      layout_given=False)      # the ledger's calibration and recorded runs, unless --no-calibration
    searches = []
    for method in dict.fromkeys(chosen):
        setup = job.setup if method is chosen[0] else build_setup(replace(options, method=str(method)), job.setup.model)
        searches.append(MethodSearch(setup=setup, optimizers=allowed))
    ckpts = (parse_enum(GradCkpt, options.grad_ckpt, "--grad-ckpt"),) if options.grad_ckpt else DEFAULT_GRAD_CKPTS
    attentions = (parse_enum(Attention, options.attention, "--attention"),) if options.attention \
        else tuple(a for a in DEFAULT_ATTENTIONS if a in caps.attentions) or (profile(framework).attention,)
    book = options_book(options, offers=offers)
    job = replace(job, book=book)
    rentables, rejected = _rentables(resolve_gpus(gpus), headroom, book, today, job.setup.precision,
                                     blackwell_only=job.setup.impl.fp8_recipe is Fp8Recipe.TE_MXFP8)
    return PlanRequest(job=job, methods=tuple(searches), grad_ckpts=ckpts, attentions=attentions,
                       rentables=tuple(rentables), rejected=tuple(rejected), currency=book.currency, book=book,
                       max_gpus=max_gpus,
                       gpus_per_node=gpus_per_node, global_batch=global_batch, budget=budget,
                       deadline_hours=deadline_hours, sort=sort, top=top, today=today, capabilities=caps,
                       fixed=fixed)
