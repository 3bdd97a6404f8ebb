"""The resource table's cells: for one model x method x precision on one GPU type, the setup that
runs it on the fewest GPUs (planner/table.py's docstring states the conventions), and the merging of
identical precision columns. Memory by the planner's fast path (MemoryModel.device_bytes, equal to
estimate_memory), time by timing.estimate_time, the calibration by ledger.calibration."""

from __future__ import annotations

from typing import Any

from trainplan.cost.bill import cost_of
from trainplan.cost.prices import Pricing
from trainplan.enums import GradCkpt
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.resolve import with_padding_mask
from trainplan.job.training import TrainingSetup
from trainplan.memory import MemoryModel, estimate_memory
from trainplan.memory.parallel import optimizer_refusal
from trainplan.planner.space import Shape, micro_batches, node_counts, shapes
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import estimate_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from trainplan.planner.table import TableRequest


@frozen
class Choice:
    """One cell on one GPU type: the setup chosen (or why none), per GPU at its count."""

    gpu: GpuSpec
    usable_bytes: int
    status: str = "none"                # fits | ran (a recorded run) | none (nothing up to --max-gpus)
    num_gpus: int | None = None
    nodes: int = 1
    engine: str = ""                    # planner.space.Shape.engine(): single GPU, DDP, ZeRO-3, ...
    grad_ckpt: str = ""
    batch_size: int | None = None       # micro-batch per GPU
    grad_accum: int | None = None
    device_bytes: int | None = None     # per GPU at num_gpus: calibrated when one matched, measured when ran
    raw_device_bytes: int | None = None  # the model's own estimate
    step_s: float | None = None
    time_s: float | None = None         # the run with retries
    gpu_hours: float | None = None
    cost: float | None = None
    currency: str | None = None
    pricing: Pricing | None = None
    calibrated: str = ""                # the calibration note, "" when none applied
    measured_at: str = ""               # the date of the recorded run (status "ran")
    run_id: int | None = None
    note: str = ""                      # e.g. why the time is unknown

    @property
    def fits(self) -> bool:
        return self.status in ("fits", "ran")


@frozen
class Cell:
    """One model x method x precision (x quantization): its one-GPU memory at the table's first knobs
    (the pictures' figure) and its choice on each GPU type."""

    model: ModelSpec
    method: str
    precision: str
    setup: TrainingSetup | None       # None: the combination does not exist (QLoRA in fp32)
    memory_bytes: int | None          # device view, one GPU, micro-batch 1, the framework's checkpointing
    choices: tuple[Choice, ...] = ()
    reason: str = ""
    quant: str = ""

    @property
    def column(self) -> str:
        return " ".join(x for x in (self.method, self.quant, self.precision) if x)


class Search:
    """The candidates of one cell: memory per (shape, checkpointing, micro-batch), computed once for
    every GPU type (memory does not depend on it), calibrated per GPU type when a calibration matches."""

    def __init__(self, tr: TableRequest, setup: TrainingSetup, fm: MemoryModel) -> None:
        self.tr, self.setup, self.fm = tr, setup, fm
        self.memo: dict[tuple, int] = {}
        self.setups: dict[tuple, TrainingSetup] = {}

    def setup_for(self, ckpt: GradCkpt, mb: int, accum: int) -> TrainingSetup:
        key = (ckpt, mb, accum)
        if key not in self.setups:
            self.setups[key] = with_padding_mask(replace(self.setup, grad_ckpt=ckpt, batch_size=mb, grad_accum=accum),
                                                 self.tr.workload, self.tr.timing)
        return self.setups[key]

    def device(self, shape: Shape, ckpt: GradCkpt, mb: int, gpu: GpuSpec, cal: bool) -> int:
        key = (shape, ckpt, mb, gpu.id if cal else None)
        if key not in self.memo:
            setup = self.setup_for(ckpt, mb, self.per_rank(shape) // mb)
            if cal:
                from trainplan.ledger.calibration import calibrate_estimate

                layout = shape.layout(gpu.id)
                mem = estimate_memory(setup, layout, gpu, headroom=self.tr.headroom, model=self.fm)
                self.memo[key] = calibrate_estimate(mem, None, setup, layout, calibration=self.tr.calibration)[0] \
                    .device_bytes
            else:
                self.memo[key] = self.fm.device_bytes(setup, shape.layout("any"))
        return self.memo[key]

    def per_rank(self, shape: Shape) -> int:
        return self.tr.global_batch // shape.dp

    def micro_batches(self, shape: Shape) -> tuple[int, ...]:
        per_rank = self.per_rank(shape)
        if self.tr.micro_batch is not None:
            return (self.tr.micro_batch,) if per_rank % self.tr.micro_batch == 0 else ()
        return micro_batches(per_rank)

    def largest_fitting(self, shape: Shape, ckpt: GradCkpt, gpu: GpuSpec, usable: int, cal: bool) -> int | None:
        """The largest micro-batch of `shape` that fits (memory grows with the micro-batch)."""
        best = None
        for mb in self.micro_batches(shape):
            if self.device(shape, ckpt, mb, gpu, cal) > usable:
                break
            best = mb
        return best


def _calibrated_for(tr: TableRequest, setup: TrainingSetup, gpu: GpuSpec) -> bool:
    if tr.calibration is None:
        return False
    from trainplan.ledger.calibration import adjust

    return adjust({"device_bytes": 1}, tr.calibration, framework=str(setup.framework), gpu=gpu.id,
                  method=str(setup.method)) is not None


def _shapes(tr: TableRequest, spec: ModelSpec, n: int, offload: bool) -> list[Shape]:
    return [s for s in shapes(spec, n, tr.gpus_per_node, tr.global_batch, caps=tr.caps, fixed=tr.fixed)
            if (s.offload != "none") == offload or tr.fixed.offload is not None]


def choose(tr: TableRequest, search: Search, gpu: GpuSpec, pricing: Pricing | None) -> Choice:
    usable = int(gpu.capacity_bytes * (1 - tr.headroom))
    cal = _calibrated_for(tr, search.setup, gpu)
    for offload in (False, True):
        for n in node_counts(tr.max_gpus, tr.gpus_per_node):
            found = []
            for shape in _shapes(tr, search.setup.model, n, offload):
                # GaLore and Muon: plain DDP only
                if optimizer_refusal(search.setup, num_gpus=shape.num_gpus, zero=shape.zero,
                                     fsdp=shape.fsdp) is not None:
                    continue
                for ckpt in tr.grad_ckpts:
                    mb = search.largest_fitting(shape, ckpt, gpu, usable, cal)
                    if mb is not None:
                        found.append((shape, ckpt, mb))
            if found:
                return _best(tr, search, gpu, pricing, usable, cal, found)
        if tr.fixed.offload is not None:
            break
    return Choice(gpu=gpu, usable_bytes=usable, pricing=pricing)


def _best(tr: TableRequest, search: Search, gpu: GpuSpec, pricing: Pricing | None, usable: int, cal: bool,
          found: list[tuple[Shape, GradCkpt, int]]) -> Choice:
    """The fastest of the candidates that fit at the fewest GPUs (the least memory without a time)."""
    timed = []
    for shape, ckpt, mb in found:
        setup = search.setup_for(ckpt, mb, search.per_rank(shape) // mb)
        try:
            t = estimate_time(setup, shape.layout(gpu.id), gpu, tr.workload, tr.timing)
        except TrainplanError as exc:      # e.g. no dense peak FLOP/s for this GPU in the catalog
            t, why = None, str(exc)
        else:
            why = ""
        timed.append((t.step_s if t else float("inf"), search.device(shape, ckpt, mb, gpu, cal), shape, ckpt, mb,
                      setup, t, why))
    _step, device, shape, ckpt, mb, setup, t, why = min(timed, key=lambda x: x[:2])
    raw = search.device(shape, ckpt, mb, gpu, False)
    note = ""
    if t is not None and cal:
        from trainplan.ledger.calibration import calibrate_estimate

        layout = shape.layout(gpu.id)
        mem = estimate_memory(setup, layout, gpu, headroom=tr.headroom, model=search.fm)
        _, t, note = calibrate_estimate(mem, t, setup, layout, calibration=tr.calibration)
    out = Choice(gpu=gpu, usable_bytes=usable, status="fits", num_gpus=shape.num_gpus, nodes=shape.nodes,
                 engine=shape.engine(), grad_ckpt=str(ckpt), batch_size=mb, grad_accum=search.per_rank(shape) // mb,
                 device_bytes=device, raw_device_bytes=raw, pricing=pricing, calibrated=note or "", note=why)
    return replace(out, **time_and_cost(t, pricing)) if t is not None else out


def time_and_cost(t: Any, pricing: Pricing | None) -> dict[str, Any]:
    cost = None if pricing is None else cost_of(t, pricing)
    return {"step_s": t.step_s, "time_s": t.total_with_retries_s if t.steps else None,
            "gpu_hours": t.gpu_hours_with_retries if t.steps else None,
            "cost": None if cost is None else cost.total, "currency": None if cost is None else cost.currency}


def _signature(c: Cell) -> tuple:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 6)

    return tuple((ch.status, ch.num_gpus, ch.engine, ch.grad_ckpt, ch.batch_size, ch.device_bytes, r(ch.time_s),
                  r(ch.cost)) for ch in c.choices) if c.setup is not None else (c.reason,)


def merge_identical(cells: list[Cell]) -> tuple[list[Cell], list[tuple[str, tuple[str, ...]]]]:
    """Precision columns of the same method (and quantization) whose every cell is identical (bf16
    and fp16 mixed precision take the same memory and, on most GPUs, the same time) become one
    column named 'bf16/fp16'."""
    columns: dict[tuple[str, str], list[str]] = {}
    for c in cells:
        columns.setdefault((c.method, c.quant), [])
        if c.precision not in columns[(c.method, c.quant)]:
            columns[(c.method, c.quant)].append(c.precision)
    by = {(c.model.name, c.method, c.quant, c.precision): c for c in cells}
    models = list(dict.fromkeys(c.model.name for c in cells))
    rename: dict[tuple[str, str, str], str] = {}
    drop: set[tuple[str, str, str]] = set()
    merged = []
    for (method, quant), precs in columns.items():
        groups: list[list[str]] = []
        for p in precs:
            sig = tuple(_signature(by[(m, method, quant, p)]) for m in models if (m, method, quant, p) in by)
            for g in groups:
                first = g[0]
                if tuple(_signature(by[(m, method, quant, first)]) for m in models
                         if (m, method, quant, first) in by) == sig:
                    g.append(p)
                    break
            else:
                groups.append([p])
        for g in groups:
            if len(g) > 1:
                name = "/".join(g)
                rename[(method, quant, g[0])] = name
                drop.update((method, quant, p) for p in g[1:])
                merged.append((" ".join(x for x in (method, quant, name) if x), tuple(g)))
    out = [replace(c, precision=rename.get((c.method, c.quant, c.precision), c.precision)) for c in cells
           if (c.method, c.quant, c.precision) not in drop]
    return out, merged
