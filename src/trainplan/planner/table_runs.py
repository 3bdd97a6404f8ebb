"""The ledger's corrections in the resource table: the calibration `trainplan calibrate` fitted, and
runs recorded as having run, which override the model's "does not fit" with their measurement.

A recorded run counts for a cell on a GPU type when it trained the same model, method, precision
(and quantized base), framework and sequence length on that GPU type; its layout (GPU count, engine,
checkpointing, micro-batch) is what ran, and it wins when it used no more GPUs than the estimate asks
for. Its memory is the measured one (device view, else reserved, else allocated) and its date is shown.
The ledger is read only when one is configured (--db, $TRAINPLAN_DB) or the default file exists;
nothing is ever created or migrated, and a ledger that cannot be read gives no runs (ledger/recorded.py).
"""

from __future__ import annotations

import os
from typing import Any

from trainplan.enums import Fsdp, GradCkpt, Offload, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.training import TrainingSetup
from trainplan.memory import MemoryModel
from trainplan.planner.space import Shape
from trainplan.timing.estimate import estimate_time


@frozen
class Run:
    """One run of the ledger, as the table matches it."""

    run_id: int | None
    created_at: str              # ISO date (YYYY-MM-DD)
    model: str
    method: str
    precision: str
    quant: str                   # "" without a quantized base
    framework: str
    gpu: str
    num_gpus: int
    nodes: int
    batch_size: int
    grad_accum: int
    seq_len: int
    grad_ckpt: str
    zero: int
    fsdp: str
    offload: str
    tp: int
    pp: int
    memory_bytes: int            # measured: device view, else reserved, else allocated
    memory_kind: str             # device | reserved | allocated
    step_s: float | None = None


def active_calibration(db: str | None = None) -> Any:
    """The calibration `trainplan calibrate` fitted from the ledger `db` (or $TRAINPLAN_CALIBRATION's),
    None when there is none."""
    from trainplan.ledger.calibration import load_active

    return load_active(None, db)


def _ledger_url(db: str | None) -> str | None:
    """The ledger's URL when one is configured or the default file exists; None otherwise."""
    from trainplan.ledger.paths import DB_ENV, db_url, default_db_url

    given = db or os.environ.get(DB_ENV)
    url = db_url(given or default_db_url())
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1].split("?", 1)[0]
        if not path or path == ":memory:" or not os.path.isfile(path):
            return None
    return url


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def run_of(row: dict[str, Any]) -> Run | None:
    """A ledger row (store.read_runs) as a Run; None when it has no memory measurement."""
    measured = row.get("measured") or {}
    setup = row.get("setup") or {}
    for kind in ("device", "peak_reserved", "peak_allocated"):
        value = measured.get(f"{kind}_bytes")
        if value:
            memory, memory_kind = int(value), kind.replace("peak_", "")
            break
    else:
        return None
    created = row.get("created_at")
    date = created.date().isoformat() if hasattr(created, "date") else str(created or "")[:10]
    resolved = setup.get("resolved") or {}

    def pick(key: str, default: Any = None) -> Any:
        value = row.get(key)
        return value if value is not None else resolved.get(key, setup.get(key, default))

    return Run(run_id=row.get("id"), created_at=date, model=str(pick("model", "")).lower(), method=str(pick("method", "")),
               precision=str(pick("precision", "")), quant=str(setup.get("quant") or ("nf4" if pick("method") == "qlora"
                                                                                        else "")),
               framework=str(pick("framework", "hf")), gpu=str(pick("gpu", "")), num_gpus=_int(pick("num_gpus"), 1),
               nodes=_int(setup.get("nodes"), 1), batch_size=_int(pick("batch_size"), 1),
               grad_accum=_int(setup.get("grad_accum"), 1), seq_len=_int(pick("seq_len"), 0),
               grad_ckpt=str(pick("grad_ckpt", "none")), zero=_int(pick("zero"), 0), fsdp=str(pick("fsdp", "none")),
               offload=str(setup.get("offload") or "none"), tp=_int(pick("tp"), 1), pp=_int(pick("pp"), 1),
               memory_bytes=memory, memory_kind=memory_kind, step_s=measured.get("step_s"))


def recorded_runs(db: str | None, models: tuple[str, ...]) -> tuple[tuple[Run, ...], str]:
    """(the ledger's runs of `models` with a memory measurement, the ledger named for the notes). Read
    as ledger/recorded.py reads (SQLite read-only with the standard library, nothing created, migrated
    or flushed; a ledger that cannot be read gives no runs)."""
    from trainplan.ledger.paths import redact
    from trainplan.ledger.recorded import read_rows

    url = _ledger_url(db)
    if url is None:
        return (), ""
    runs = tuple(r for model in dict.fromkeys(m.lower() for m in models) for r in
                 (run_of(dict(row)) for row in read_rows(url, model)) if r is not None)
    return runs, redact(url)


def _matches(run: Run, setup: TrainingSetup, gpu_id: str) -> bool:
    quant = str(setup.quant.kind) if setup.quant is not None else ""
    return (run.model == setup.model.name.lower() and run.method == str(setup.method)
            and run.precision == str(setup.precision) and run.quant == quant and run.gpu == gpu_id
            and run.framework == str(setup.framework) and run.seq_len == setup.seq_len)


def _shape(run: Run) -> Shape:
    return Shape(num_gpus=run.num_gpus, nodes=max(1, run.nodes), tp=max(1, run.tp), pp=max(1, run.pp),
                 zero=ZeroStage(run.zero) if run.zero in (0, 1, 2, 3) else ZeroStage.NONE,
                 fsdp=Fsdp(run.fsdp) if run.fsdp in {f.value for f in Fsdp} else Fsdp.NONE,
                 offload=Offload(run.offload) if run.offload in {o.value for o in Offload} else Offload.NONE)


def apply_runs(tr: Any, setup: TrainingSetup, choice: Any, fm: MemoryModel) -> Any:
    """`choice` (a table.Choice), or the recorded run that used no more GPUs, as status "ran"."""
    runs = [r for r in tr.runs if _matches(r, setup, choice.gpu.id)]
    if not runs:
        return choice
    run = min(runs, key=lambda r: (r.num_gpus, -int(r.created_at.replace("-", "") or 0)))
    if choice.num_gpus is not None and run.num_gpus > choice.num_gpus:
        return choice
    from trainplan.planner.table_cells import time_and_cost

    shape = _shape(run)
    ckpt = GradCkpt(run.grad_ckpt) if run.grad_ckpt in {g.value for g in GradCkpt} else setup.grad_ckpt
    accum = max(1, tr.global_batch // max(1, shape.dp * run.batch_size))
    ran = replace(setup, grad_ckpt=ckpt, batch_size=run.batch_size, grad_accum=accum)
    layout = shape.layout(choice.gpu.id)
    try:
        raw = fm.device_bytes(ran, layout)
    except TrainplanError:
        raw = None
    out = replace(choice, status="ran", num_gpus=run.num_gpus, nodes=shape.nodes, engine=shape.engine(),
                  grad_ckpt=str(ckpt), batch_size=run.batch_size, grad_accum=accum, device_bytes=run.memory_bytes,
                  raw_device_bytes=raw, measured_at=run.created_at, run_id=run.run_id, calibrated="",
                  step_s=None, time_s=None, gpu_hours=None, cost=None, currency=None)
    try:
        t = estimate_time(ran, layout, choice.gpu, tr.workload, tr.timing)
    except TrainplanError:
        return out
    if run.step_s and t.step_s and accum == run.grad_accum:
        k = run.step_s / t.step_s
        t = replace(t, step_s=t.step_s * k, total_s=t.total_s * k, gpu_hours=t.gpu_hours * k)
    return replace(out, **time_and_cost(t, choice.pricing))


def notes(tr: Any, cells: list[Any], merged: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """What the table says about itself: merged columns, calibration, runs, the stand-in dataset."""
    out = []
    if merged:
        same = sorted({" and ".join(precisions) for _name, precisions in merged})
        out.append(f"{'; '.join(same)} give the same figures in every cell: one column each "
                   f"({', '.join(name for name, _p in merged)})")
    choices = [ch for c in cells for ch in c.choices]
    calibrated = [ch for ch in choices if ch.calibrated]
    if calibrated:
        groups = sorted({ch.calibrated.split("[", 1)[-1].split("]", 1)[0] for ch in calibrated})
        out.append(f"calibrated: {len(calibrated)} cell(s) use `trainplan calibrate`'s corrections of memory and "
                   f"time ({'; '.join(groups)}); --no-calibration for the raw model")
    ran = [ch for ch in choices if ch.status == "ran"]
    if ran:
        out.append(f"ran: {len(ran)} cell(s) recorded as run in the ledger {tr.ledger}: the measured memory "
                   "and its date replace the estimate")
    if any(ch.engine.endswith("offload") for ch in choices):
        out.append("CPU offload only where nothing fits without it (a slow CPU optimizer step; CPU RAM needed)")
    unpriced = [g.id for g, p in zip(tr.gpus, tr.pricings) if p is None]
    if unpriced:
        out.append(f"no price for {', '.join(unpriced)} ({tr.book.kind_label}, {tr.book.currency}): time only; "
                   "--price GPU=AMOUNT or --prices FILE")
    if not tr.samples_given:
        out.append(f"time and cost for {tr.workload.samples:,} samples of --seq-len tokens x {tr.workload.epochs:g} "
                   "epoch(s) (--samples, --epochs)")
    return out
