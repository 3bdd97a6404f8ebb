"""`trainplan table`: the resource table. Models x methods x precisions -> peak memory per GPU, the
fewest GPUs of each chosen type that carry the job, and (with a dataset) time and cost there; and
the hardware tier view: one job across GPU types, side by side.

Conventions: memory is the device view (nvidia-smi) of one GPU holding the whole job; "fewest GPUs"
tries 1 GPU (no sharding), then 2, 4, ... GPUs (powers of two below a node, then whole nodes) with
ZeRO-3 (FSDP full under --framework fsdp) at the same micro-batch, up to --max-gpus. Time and cost
are those of that layout, the data-parallel global batch growing with the GPU count.

`resolve_table` is the edge (catalog names, prices, files); `resource_table` computes the cells.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from trainplan import catalog
from trainplan.cost.bill import cost_of
from trainplan.cost.prices import NoPriceError, PriceBook, Pricing, resolve_pricing
from trainplan.cost.sources import options_book
from trainplan.enums import Framework, Fsdp, Method, Precision, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen, replace
from trainplan.job.frameworks import profile
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
from trainplan.memory import MemoryModel, ParallelConfig, estimate_memory
from trainplan.model.params import count_params
from trainplan.planner.request import resolve_gpus
from trainplan.planner.space import node_counts
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import TimingOptions, estimate_time
from trainplan.units import GB, gib

DEFAULT_GPUS = ("a100-80gb", "h100", "rtx4090")
DEFAULT_METHODS = ("full", "lora", "qlora")
SIZE_TOLERANCE = 0.15      # --sizes 7b: catalog models named "...-7b" or with 7B +-15% parameters


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
    """One model x method x precision of the table, its setup built (None: the combination does not
    exist, e.g. QLoRA in fp32, with the reason)."""

    model: ModelSpec
    method: str
    precision: str
    setup: TrainingSetup | None
    reason: str = ""


@frozen
class TableRequest:
    """The table, resolved: its cells' setups, the GPU types with their prices, and what every cell shares."""

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

    def __post_init__(self) -> None:
        for name in ("max_gpus", "gpus_per_node"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise TrainplanError(f"--{name.replace('_', '-')} must be a positive integer, got {value!r}")
        if len(self.pricings) != len(self.gpus):
            raise TrainplanError("one pricing per GPU type")

    @property
    def dataset(self) -> bool:
        return self.workload.samples is not None


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
        return tuple(str(parse_enum(Precision, p, "--precisions")) for p in precisions)
    if options.precision:
        return (str(parse_enum(Precision, options.precision, "--precision")),)
    return (str(profile(parse_enum(Framework, options.framework, "--framework")).precision),)


def _pricing(gpu: GpuSpec, book: PriceBook, today: datetime.date) -> Pricing | None:
    """The price a cell on `gpu` is billed at: one kind for every column (a table compares GPU
    types), None when no source has it (unknown provider or currency names are still errors)."""
    try:
        return resolve_pricing(gpu.id, book, today=today, strict=True)
    except NoPriceError:
        return None


def resolve_table(options: JobOptions, *, models: tuple[str | ModelSpec, ...] = (), sizes: tuple[str, ...] = (),
                  methods: tuple[str, ...] = DEFAULT_METHODS, precisions: tuple[str, ...] = (),
                  gpus: tuple[str | GpuSpec, ...] = DEFAULT_GPUS, max_gpus: int = 64, gpus_per_node: int = 8,
                  today: datetime.date | None = None) -> TableRequest:
    """The TableRequest of `options` (the setup flags every cell shares) and the table's axes."""
    headroom = check_headroom(options.headroom)
    today = today or datetime.date.today()
    gpu_specs = tuple(resolve_gpus(tuple(gpus) or DEFAULT_GPUS))
    method_names = tuple(str(parse_enum(Method, m, "--methods")) for m in methods)
    cells = []
    for spec in table_models(tuple(models), tuple(sizes), options.model):
        for method in method_names:
            for precision in _precisions(options, tuple(precisions)):
                cell = replace(options, model=spec, method=method, precision=precision,
                               num_gpus=1, nodes=1, zero=0, fsdp="none", offload="none", tp=1, pp=1, cp=1, ep=1)
                try:
                    setup = build_setup(cell, spec)
                except TrainplanError as exc:
                    cells.append(CellSpec(model=spec, method=method, precision=precision, setup=None,
                                          reason=str(exc)))
                    continue
                cells.append(CellSpec(model=spec, method=method, precision=precision, setup=setup))
    book = options_book(options)
    return TableRequest(cells=tuple(cells), gpus=gpu_specs, book=book,
                        pricings=tuple(_pricing(g, book, today) for g in gpu_specs),
                        workload=build_workload(options), timing=build_timing(options),
                        parallel=build_parallel(options), headroom=headroom, max_gpus=max_gpus,
                        gpus_per_node=gpus_per_node)


def sharded_layout(setup: TrainingSetup, gpu: GpuSpec, num_gpus: int, gpus_per_node: int) -> Layout:
    """1 GPU: no sharding; more: ZeRO-3 (FSDP full under --framework fsdp), whole nodes above one node."""
    nodes = 1 if num_gpus <= gpus_per_node else num_gpus // gpus_per_node
    if num_gpus == 1:
        return Layout(gpu_id=gpu.id)
    fsdp = setup.framework is Framework.FSDP
    return Layout(gpu_id=gpu.id, num_gpus=num_gpus, nodes=nodes, zero=ZeroStage.NONE if fsdp else ZeroStage.PARAMETERS,
                  fsdp=Fsdp.FULL if fsdp else Fsdp.NONE)


@frozen
class Cell:
    """One model x method x precision: its memory on one GPU and its footprint on each GPU type."""

    model: ModelSpec
    method: str
    precision: str
    setup: TrainingSetup | None       # None: the combination does not exist (QLoRA in fp32)
    memory_bytes: int | None          # device view, one GPU
    per_gpu: tuple[dict[str, Any], ...]
    reason: str = ""

    @property
    def column(self) -> str:
        return f"{self.method} {self.precision}"


@frozen
class TableResult:
    request: TableRequest
    cells: tuple[Cell, ...]


def _per_gpu(tr: TableRequest, setup: TrainingSetup, fm: MemoryModel) -> list[dict[str, Any]]:
    counts = node_counts(tr.max_gpus, tr.gpus_per_node)
    devices: dict[int, int] = {}

    def device(n: int) -> int:
        if n not in devices:
            devices[n] = fm.device_bytes(setup, sharded_layout(setup, tr.gpus[0], n, tr.gpus_per_node))
        return devices[n]

    out = []
    for gpu, pricing in zip(tr.gpus, tr.pricings):
        usable = int(gpu.capacity_bytes * (1 - tr.headroom))
        n_min = next((n for n in counts if device(n) <= usable), None)
        row: dict[str, Any] = {"gpu": gpu.id, "usable_bytes": usable, "min_gpus": n_min,
                               "layout": None, "memory_at_min_bytes": None, "time_s": None, "gpu_hours": None,
                               "cost": None, "currency": None}
        if n_min is not None:
            lay = sharded_layout(setup, gpu, n_min, tr.gpus_per_node)
            row.update(layout="single GPU" if n_min == 1 else ("FSDP full" if lay.fsdp is Fsdp.FULL else "ZeRO-3"),
                       memory_at_min_bytes=device(n_min))
            if tr.dataset:
                row.update(_time_and_cost(tr, setup, lay, gpu, pricing))
        out.append(row)
    return out


def _time_and_cost(tr: TableRequest, setup: TrainingSetup, layout: Layout, gpu: GpuSpec,
                   pricing: Pricing | None) -> dict[str, Any]:
    """Time with retries and the bill of the run on `layout` (the bill None without a price)."""
    try:
        time = estimate_time(setup, layout, gpu, tr.workload, tr.timing)
    except TrainplanError as exc:          # e.g. no dense peak FLOP/s for this GPU in the catalog
        return {"time_s": None, "gpu_hours": None, "cost": None, "currency": None, "note": str(exc)}
    cost = None if pricing is None else cost_of(time, pricing)
    return {"time_s": time.total_with_retries_s, "gpu_hours": time.gpu_hours_with_retries,
            "cost": None if cost is None else cost.total, "currency": None if cost is None else cost.currency}


def resource_table(tr: TableRequest) -> TableResult:
    """Every model x method x precision cell of the table."""
    fm = MemoryModel(parallel=tr.parallel)
    cells = []
    for c in tr.cells:
        if c.setup is None:
            cells.append(Cell(model=c.model, method=c.method, precision=c.precision, setup=None, memory_bytes=None,
                              per_gpu=(), reason=c.reason))
            continue
        one = fm.device_bytes(c.setup, Layout(gpu_id=tr.gpus[0].id))
        cells.append(Cell(model=c.model, method=c.method, precision=c.precision, setup=c.setup, memory_bytes=one,
                          per_gpu=tuple(_per_gpu(tr, c.setup, fm))))
    return TableResult(request=tr, cells=tuple(cells))


def long_rows(cells: tuple[Cell, ...]) -> list[dict[str, Any]]:
    """One record per cell and GPU type (csv/json): numbers in base units, GiB alongside."""
    rows = []
    for c in cells:
        base = {"model": c.model.name, "params": count_params(c.model).total, "method": c.method,
                "precision": c.precision, "memory_bytes": c.memory_bytes,
                "memory_gib": None if c.memory_bytes is None else round(gib(c.memory_bytes), 2)}
        if not c.per_gpu:
            rows.append({**base, "gpu": None, "min_gpus": None, "note": c.reason})
            continue
        for g in c.per_gpu:
            rows.append({**base, **{k: v for k, v in g.items() if k != "usable_bytes"},
                         "memory_at_min_gib": None if g["memory_at_min_bytes"] is None
                         else round(gib(g["memory_at_min_bytes"]), 2)})
    return rows


def _short(gpu_id: str) -> str:
    return gpu_id.replace("-sxm4", "").replace("-sxm", "").replace("rtx", "")


def _cell_text(c: Cell, max_gpus: int, dataset: bool) -> str:
    if c.memory_bytes is None:
        return "n/a"
    parts = []
    for g in c.per_gpu:
        n = g["min_gpus"]
        text = f"{_short(g['gpu'])} x{n}" if n else f"{_short(g['gpu'])} >{max_gpus}"
        if dataset and n and g["time_s"] is not None:
            hours = g["time_s"] / 3600
            money = "" if g["cost"] is None else f", {g['cost']:,.{0 if g['cost'] >= 100 else 2}f} {g['currency']}"
            text += f" ({hours:,.1f} h{money})"
        parts.append(text)
    return f"{gib(c.memory_bytes):.1f} GiB; " + ", ".join(parts)


def pivot_rows(result: TableResult) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows = models, columns = method x precision (terminal, markdown, html, xlsx)."""
    columns = ["model", "params"]
    rows: dict[str, dict[str, Any]] = {}
    for c in result.cells:
        if c.column not in columns:
            columns.append(c.column)
        row = rows.setdefault(c.model.name, {"model": c.model.name,
                                             "params": f"{count_params(c.model).total / 1e9:.2f}B"})
        row[c.column] = _cell_text(c, result.request.max_gpus, result.request.dataset)
    return list(rows.values()), columns


def first_cell(tr: TableRequest) -> TableRequest:
    """The request cut to its first cell (the tier view's one job)."""
    return replace(tr, cells=tr.cells[:1])


def tier_rows(tr: TableRequest) -> list[dict[str, Any]]:
    """The same job (first model x method x precision) on each GPU type, side by side."""
    cell = resource_table(first_cell(tr)).cells[0]
    if cell.setup is None:
        raise TrainplanError(cell.reason)
    rows = []
    for gpu, g in zip(tr.gpus, cell.per_gpu):
        bw = gpu.memory_bw_bytes_per_s
        peak = gpu.peak_flops("bf16") or gpu.peak_flops("fp16")
        rows.append({"gpu": gpu.id, "memory_gib": round(gib(gpu.capacity_bytes), 1),
                     "bandwidth_gb_s": None if bw is None else round(bw / GB),
                     "peak_bf16_tflops": None if peak is None else round(peak / 1e12, 1),
                     "job_gib": round(gib(cell.memory_bytes), 1), "fits_one_gpu": cell.memory_bytes <= g["usable_bytes"],
                     "min_gpus": g["min_gpus"], "layout": g["layout"],
                     "gib_per_gpu": None if g["memory_at_min_bytes"] is None else round(gib(g["memory_at_min_bytes"]), 1),
                     "time_h": None if g["time_s"] is None else round(g["time_s"] / 3600, 2),
                     "cost": None if g["cost"] is None else round(g["cost"], 2), "currency": g["currency"]})
    return rows


def tier_title(tr: TableRequest) -> str:
    c = tr.cells[0]
    return f"{c.model.name}, {c.method}, {c.precision}: the same job on each GPU type"


# --- pictures' data ----------------------------------------------------------------------------------

SEQ_POINTS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


def capacities(tr: TableRequest) -> list[tuple[str, int]]:
    """(GPU id, usable bytes) of the table's GPU types."""
    return [(g.id, int(g.capacity_bytes * (1 - tr.headroom))) for g in tr.gpus]


def breakdown_bars(result: TableResult) -> list[tuple[str, dict[str, int]]]:
    """Each cell's device-view memory on one GPU as its named parts (estimate_memory's breakdown at the
    peak, plus the allocator reserve, CUDA context and paged states)."""
    tr = result.request
    gpu = tr.gpus[0]
    model = MemoryModel(parallel=tr.parallel)
    bars = []
    for c in result.cells:
        if c.setup is None:
            continue
        m = estimate_memory(c.setup, Layout(gpu_id=gpu.id), gpu, headroom=tr.headroom, model=model)
        parts = dict(m.components_bytes)
        parts.update({k: v for k, v in m.overhead_bytes.items() if v})
        bars.append((f"{c.model.name} {c.method} {c.precision}", parts))
    return bars


def seq_series(result: TableResult) -> list[tuple[str, list[int], list[int | None]]]:
    """Device bytes on one GPU at SEQ_POINTS (up to each model's context length) for each cell."""
    tr = result.request
    gpu = tr.gpus[0]
    fm = MemoryModel(parallel=tr.parallel)
    out = []
    for c in result.cells:
        if c.setup is None:
            continue
        top = c.model.max_position_embeddings or SEQ_POINTS[-1]
        seqs = [s for s in SEQ_POINTS if s <= top]
        values = []
        for s in seqs:
            try:
                values.append(fm.device_bytes(replace(c.setup, seq_len=s), Layout(gpu_id=gpu.id)))
            except TrainplanError:
                values.append(None)
        out.append((f"{c.model.name} {c.method} {c.precision}", seqs, values))
    return out
