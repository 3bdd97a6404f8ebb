"""`trainplan table`: the resource table. Models x methods x precisions (x the quantized base of
QLoRA) -> for each GPU type, the setup that runs the job on the fewest GPUs, as a team would run it.

Each cell (conventions, stated again in the table's assumptions block):
- The framework's own layouts only (job/capabilities.CAPABILITIES): GPU counts 1, 2, 4, then whole nodes
  (planner/space.node_counts), the engines it runs there (DDP, ZeRO-1/2/3, FSDP, Megatron splits:
  planner/space.shapes) with gradient checkpointing off and on (peft's k-bit preparation and
  LLaMA-Factory turn it on by default) and micro-batch x accumulation x data parallel = the global
  batch (--global-batch, default 32 sequences per optimizer step). CPU offload is tried only where
  nothing fits without it: it trades GPUs for a slow CPU optimizer step.
- The fewest GPUs that fit (device view <= capacity x (1 - headroom)); at that count the fastest
  candidate (the largest micro-batch that fits each engine x checkpointing, then the least step time).
- The memory shown is per GPU AT THAT COUNT; time and cost are the run's (default 10,000 samples of
  --seq-len tokens, --samples/--epochs), with --retry-factor, at the price of the kind compared.
- The matching calibration (`trainplan calibrate`, per framework x GPU x method) applies to memory and
  time, and a run recorded in the ledger for the same model, method, precision, GPU and sequence length
  on no more GPUs turns the cell into "ran" with its measurement and date (planner/table_runs.py).

`resolve_table` is the edge (catalog names, prices, calibration and ledger); `resource_table` computes.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from trainplan import catalog
from trainplan.cost.prices import NoPriceError, PriceBook, Pricing, resolve_pricing
from trainplan.cost.sources import options_book
from trainplan.enums import Framework, GradCkpt, Method, Optimizer, Precision, Quant
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen, replace
from trainplan.job.frameworks import profile
from trainplan.job.capabilities import Capabilities, capabilities
from trainplan.job.job import check_headroom
from trainplan.job.options import JobOptions
from trainplan.job.resolve import (
    build_parallel,
    build_setup,
    build_timing,
    build_workload,
    parse_enum,
    resolve_model,
)
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.job.validate import PLANNER_COUNT_LIMIT, check_int
from trainplan.memory import MemoryModel, ParallelConfig
from trainplan.planner.request import resolve_gpus
from trainplan.planner.space import FREE, Fixed
from trainplan.planner.stack import check_stack, fixed_layout
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import TimingOptions

DEFAULT_GPUS = ("a100-80gb", "h100", "rtx4090")
DEFAULT_METHODS = ("full", "lora", "qlora")
DEFAULT_GLOBAL_BATCH = 32     # sequences per optimizer step (the planner's default, the seed article's batch)
DEFAULT_SAMPLES = 10_000      # the run timed and billed when --samples is not given (the seed article's dataset)
SIZE_TOLERANCE = 0.15         # --sizes 7b: catalog models named "...-7b" or with 7B +-15% parameters


def _size_billions(token: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bm])\s*", token.lower())
    if not m:
        raise TrainplanError(f"--sizes {token!r}: expected a size such as 7b, 13b, 70b or 500m")
    return float(m.group(1)) / (1000.0 if m.group(2) == "m" else 1.0)


def models_of_size(token: str) -> list[str]:
    """Catalog models of one size: named '<family>-7b' (also '-7b-...'), else within +-15% of 7e9 params."""
    rows = catalog.model_rows()
    size = token.strip().lower()
    named = [r["name"] for r in rows if re.search(rf"(^|-){re.escape(size)}($|-)", r["name"].lower())]
    if named:
        return named
    target = _size_billions(token) * 1e9
    close = [r["name"] for r in rows if abs(r["params"] - target) <= SIZE_TOLERANCE * target]
    if not close:
        raise TrainplanError(f"--sizes {token}: no catalog model of that size (see `trainplan models`)")
    return close


@frozen
class CellSpec:
    """One model x method x precision (x quantization) of the table, its setup built (None: the
    combination does not exist, e.g. QLoRA in fp32, with the reason)."""

    model: ModelSpec
    method: str
    precision: str
    setup: TrainingSetup | None
    reason: str = ""
    quant: str = ""               # the quantized base of QLoRA (nf4, int8, ...), "" otherwise

    @property
    def column(self) -> str:
        return " ".join(x for x in (self.method, self.quant, self.precision) if x)


@frozen
class TableRequest:
    """The table, resolved: its cells' setups, the GPU types with their prices, what every cell shares,
    what the search may vary, and the corrections from the ledger."""

    cells: tuple[CellSpec, ...]
    gpus: tuple[GpuSpec, ...]
    pricings: tuple[Pricing | None, ...]      # per GPU type; None: no price known (no bill)
    book: PriceBook = field(default_factory=PriceBook)   # where the prices come from, the kind compared
    workload: Workload
    timing: TimingOptions
    parallel: ParallelConfig
    headroom: float = 0.10
    max_gpus: int = 64
    gpus_per_node: int = 8
    global_batch: int = DEFAULT_GLOBAL_BATCH
    framework: Framework = Framework.HF
    capabilities: Capabilities | None = None   # None: the framework's
    fixed: Fixed = FREE                        # --zero/--fsdp/--offload/--tp/--pp given: held in every cell
    grad_ckpts: tuple[GradCkpt, ...] = (GradCkpt.NONE, GradCkpt.FULL)
    micro_batch: int | None = None             # --batch-size given: the micro-batch of every cell
    samples_given: bool = True                 # False: DEFAULT_SAMPLES stands in for --samples
    calibration: Any = None                    # a ledger.calibration.Calibration, or None
    runs: tuple[Any, ...] = ()                 # table_runs.Run: successes recorded in the ledger
    ledger: str = ""                           # the ledger read (redacted URL), "" when none
    today: datetime.date = field(default_factory=datetime.date.today)

    def __post_init__(self) -> None:
        for name in ("max_gpus", "gpus_per_node", "global_batch"):
            check_int(name, getattr(self, name), 1, PLANNER_COUNT_LIMIT)
        if len(self.pricings) != len(self.gpus):
            raise TrainplanError("one pricing per GPU type")

    @property
    def dataset(self) -> bool:
        return self.workload.samples is not None

    @property
    def caps(self) -> Capabilities:
        return self.capabilities or capabilities(self.framework)


def table_models(models: tuple[str | ModelSpec, ...], sizes: tuple[str, ...],
                 fallback: str | ModelSpec | None) -> list[ModelSpec]:
    names: list[str | ModelSpec] = list(models)
    for token in sizes:
        names += models_of_size(token)
    if not names:
        if fallback in (None, ""):
            raise TrainplanError("give --models, --sizes or --model")
        return [resolve_model(fallback)]
    out: dict[str, ModelSpec] = {}
    for name in names:
        spec = resolve_model(name)
        out.setdefault(spec.name, spec)
    return list(out.values())


def _precisions(options: JobOptions, precisions: tuple[str, ...]) -> tuple[str, ...]:
    if precisions:
        return tuple(dict.fromkeys(str(parse_enum(Precision, p, "--precisions")) for p in precisions))
    if options.precision:
        return (str(parse_enum(Precision, options.precision, "--precision")),)
    return (str(profile(parse_enum(Framework, options.framework, "--framework")).precision),)


def _quants(options: JobOptions, quants: tuple[str, ...], methods: tuple[str, ...]) -> tuple[str, ...]:
    if quants and "qlora" not in methods:
        raise TrainplanError("--quants are the quantized bases of QLoRA: add qlora to --methods")
    given = quants or ((options.quant,) if options.quant else ("nf4",))
    return tuple(dict.fromkeys(str(parse_enum(Quant, q, "--quants")) for q in given))


def _pricing(gpu: GpuSpec, book: PriceBook, today: datetime.date) -> Pricing | None:
    """The price a cell on `gpu` is billed at: one kind for every column (a table compares GPU
    types), None when no source has it (unknown provider or currency names are still errors)."""
    try:
        return resolve_pricing(gpu.id, book, today=today, strict=True)
    except NoPriceError:
        return None


def _cell_specs(options: JobOptions, spec: ModelSpec, method: str, precisions: tuple[str, ...],
                quants: tuple[str, ...]) -> list[CellSpec]:
    out = []
    for quant in (quants if method == "qlora" else ("",)):
        for precision in precisions:
            cell = replace(options, model=spec, method=method, precision=precision, quant=quant or None,
                           num_gpus=1, nodes=1, zero=0, fsdp="none", offload="none", tp=1, pp=1, cp=1, ep=1)
            try:
                setup = build_setup(cell, spec)
            except TrainplanError as exc:
                out.append(CellSpec(model=spec, method=method, precision=precision, quant=quant, setup=None,
                                    reason=str(exc)))
                continue
            out.append(CellSpec(model=spec, method=method, precision=precision, quant=quant, setup=setup))
    return out


def resolve_table(options: JobOptions, *, models: tuple[str | ModelSpec, ...] = (), sizes: tuple[str, ...] = (),
                  methods: tuple[str, ...] = DEFAULT_METHODS, precisions: tuple[str, ...] = (),
                  quants: tuple[str, ...] = (), gpus: tuple[str | GpuSpec, ...] = DEFAULT_GPUS,
                  max_gpus: int = 64, gpus_per_node: int = 8, global_batch: int = DEFAULT_GLOBAL_BATCH,
                  today: datetime.date | None = None, calibration: Any = "active", db: str | None = None,
                  read_ledger: bool = True) -> TableRequest:
    """The TableRequest of `options` (the setup flags every cell shares) and the table's axes.
    `calibration`: "active" loads `trainplan calibrate`'s (when options.calibration), None leaves it out,
    a Calibration is used as given. The ledger (`db`, $TRAINPLAN_DB, the default file) is read only
    when it exists, and not with options.calibration off (the raw model) or `read_ledger=False`;
    nothing is created."""
    from trainplan.planner import table_runs

    headroom = check_headroom(options.headroom)
    today = today or datetime.date.today()
    framework = parse_enum(Framework, options.framework, "--framework")
    caps = capabilities(framework)
    fixed = fixed_layout(options)
    optimizer = parse_enum(Optimizer, options.optimizer, "--optimizer") if options.optimizer \
        else profile(framework).optimizer
    check_stack(framework, caps, fixed, options, (optimizer,))
    gpu_specs = tuple(resolve_gpus(tuple(gpus) or DEFAULT_GPUS))
    method_names = tuple(dict.fromkeys(str(parse_enum(Method, m, "--methods")) for m in methods))
    quant_names = _quants(options, tuple(quants), method_names)
    cells = []
    for spec in table_models(tuple(models), tuple(sizes), options.model):
        for method in method_names:
            cells += _cell_specs(options, spec, method, _precisions(options, tuple(precisions)), quant_names)
    book = options_book(options)
    samples_given = options.samples is not None or options.max_steps is not None or options.tokens is not None
    workload_options = options if samples_given else replace(options, samples=DEFAULT_SAMPLES)
    ckpts = (parse_enum(GradCkpt, options.grad_ckpt, "--grad-ckpt"),) if options.grad_ckpt \
        else (GradCkpt.NONE, GradCkpt.FULL)
    micro = options.batch_size if "batch_size" in options.given else None
    if calibration == "active":
        calibration = table_runs.active_calibration(db) if options.calibration else None
    runs, ledger = table_runs.recorded_runs(db, tuple(c.model.name for c in cells)) \
        if read_ledger and options.calibration else ((), "")
    return TableRequest(cells=tuple(cells), gpus=gpu_specs, book=book,
                        pricings=tuple(_pricing(g, book, today) for g in gpu_specs),
                        workload=build_workload(workload_options), timing=build_timing(options),
                        parallel=build_parallel(options), headroom=headroom, max_gpus=max_gpus,
                        gpus_per_node=gpus_per_node, global_batch=global_batch, framework=framework,
                        capabilities=caps, fixed=fixed, grad_ckpts=ckpts, micro_batch=micro,
                        samples_given=samples_given, calibration=calibration, runs=runs, ledger=ledger,
                        today=today)


@frozen
class TableResult:
    request: TableRequest
    cells: tuple[Cell, ...]
    notes: tuple[str, ...] = ()
    merged: tuple[tuple[str, tuple[str, ...]], ...] = ()   # (column kept, the columns it stands for)


def resource_table(tr: TableRequest) -> TableResult:
    """Every cell of the table, the ledger's runs applied, identical precision columns merged."""
    from trainplan.planner import table_runs

    fm = MemoryModel(parallel=tr.parallel)
    cells = []
    for c in tr.cells:
        if c.setup is None:
            cells.append(Cell(model=c.model, method=c.method, precision=c.precision, quant=c.quant, setup=None,
                              memory_bytes=None, reason=c.reason))
            continue
        search = Search(tr, c.setup, fm)
        choices = []
        for gpu, pricing in zip(tr.gpus, tr.pricings):
            choice = choose(tr, search, gpu, pricing)
            choices.append(table_runs.apply_runs(tr, c.setup, choice, fm))
        one = fm.device_bytes(c.setup, Layout(gpu_id=tr.gpus[0].id))
        cells.append(Cell(model=c.model, method=c.method, precision=c.precision, quant=c.quant, setup=c.setup,
                          memory_bytes=one, choices=tuple(choices)))
    cells, merged = merge_identical(cells)
    return TableResult(request=tr, cells=tuple(cells), notes=tuple(table_runs.notes(tr, cells, merged)),
                       merged=tuple(merged))


# the cells and the rows every writer prints (kept importable from here for planner.table's callers) (kept here for the callers of planner.table)
from trainplan.planner.table_cells import Cell, Choice, Search, choose, merge_identical
from trainplan.planner.table_rows import (
    breakdown_bars,
    capacities,
    first_cell,
    long_rows,
    pivot_rows,
    seq_series,
    tier_rows,
    tier_title,
)

__all__ = [
    "DEFAULT_GLOBAL_BATCH",
    "DEFAULT_GPUS",
    "DEFAULT_METHODS",
    "Cell",
    "CellSpec",
    "Choice",
    "TableRequest",
    "TableResult",
    "breakdown_bars",
    "capacities",
    "first_cell",
    "long_rows",
    "merge_identical",
    "models_of_size",
    "pivot_rows",
    "resolve_table",
    "resource_table",
    "seq_series",
    "tier_rows",
    "tier_title",
]
