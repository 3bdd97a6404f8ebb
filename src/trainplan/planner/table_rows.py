"""The resource table as rows: one record per cell and GPU type in base units and stated units (csv,
json, the xlsx data sheet), the assumptions every cell shares, the price sources, the tier view,
and the pictures' data. Nothing here formats text for people (report/table_text.py does)."""

from __future__ import annotations

from typing import Any

from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.frameworks import profile
from trainplan.job.training import Layout
from trainplan.memory import MemoryModel, estimate_memory
from trainplan.model.params import count_params
from trainplan.units import GB, gib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from trainplan.planner.table import Cell, TableRequest, TableResult


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def long_rows(cells: tuple[Cell, ...] | list[Cell]) -> list[dict[str, Any]]:
    """One record per cell and GPU type: typed numbers with their unit in the key (GiB, h, s), the
    bytes alongside; `fits` a boolean, the price with its source and date."""
    rows = []
    for c in cells:
        base = {"model": c.model.name, "params_b": round(count_params(c.model).total / 1e9, 2), "method": c.method,
                "quant": c.quant or None, "precision": c.precision}
        if not c.choices:
            rows.append({**base, "gpu": None, "status": "n/a", "fits": False, "note": c.reason})
            continue
        for ch in c.choices:
            p = ch.pricing
            rows.append({**base, "gpu": ch.gpu.id, "status": ch.status, "fits": ch.fits, "num_gpus": ch.num_gpus,
                         "nodes": ch.nodes if ch.num_gpus else None, "engine": ch.engine or None,
                         "grad_ckpt": ch.grad_ckpt or None, "micro_batch": ch.batch_size, "grad_accum": ch.grad_accum,
                         "gib_per_gpu": _r(None if ch.device_bytes is None else gib(ch.device_bytes), 2),
                         "usable_gib": round(gib(ch.usable_bytes), 2),
                         "estimate_gib_per_gpu": _r(None if ch.raw_device_bytes is None else gib(ch.raw_device_bytes), 2),
                         "memory_bytes": ch.device_bytes, "step_s": _r(ch.step_s, 3),
                         "time_h": _r(None if ch.time_s is None else ch.time_s / 3600, 3),
                         "gpu_hours": _r(ch.gpu_hours, 2), "cost": _r(ch.cost, 2), "currency": ch.currency,
                         "price_per_gpu_hour": None if p is None else round(p.price_per_gpu_hour, 4),
                         "price_source": None if p is None else (p.provider or p.origin),
                         "price_as_of": None if p is None else (p.as_of or None),
                         "calibrated": bool(ch.calibrated), "measured_at": ch.measured_at or None,
                         "run_id": ch.run_id, "note": ch.note or None})
    return rows


def assumptions(tr: TableRequest) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, template, fields) of what every cell shares; English msgids, translated when shown."""
    fw = profile(tr.framework)
    first = next((c.setup for c in tr.cells if c.setup is not None), None)
    seq = first.seq_len if first is not None else 0
    out = [("framework", "{framework}: {summary}", {"framework": str(tr.framework), "summary": fw.summary}),
           ("sequence length", "{seq} tokens per sequence", {"seq": seq}),
           ("global batch", "{batch} sequences per optimizer step = micro-batch x accumulation x data-parallel GPUs",
            {"batch": tr.global_batch})]
    if tr.micro_batch is None:
        out.append(("micro-batch", "the largest that fits (shown in each cell as micro-batch x accumulation)", {}))
    else:
        out.append(("micro-batch", "{mb} per GPU (--batch-size)", {"mb": tr.micro_batch}))
    if len(tr.grad_ckpts) > 1:
        out.append(("gradient checkpointing", "off, or on where it is needed or faster (marked ckpt)", {}))
    else:
        out.append(("gradient checkpointing", "{ckpt} in every cell (--grad-ckpt)", {"ckpt": str(tr.grad_ckpts[0])}))
    out += [("layouts", ("fewest GPUs of each type first, then the fastest; {layouts}; CPU offload only where "
                         "nothing fits without it"), {"layouts": tr.caps.layouts}),
            ("headroom", "{pct}% of each GPU's memory kept free (--headroom)", {"pct": round(tr.headroom * 100)})]
    w = tr.workload
    out.append(("run", "{samples} samples x {epochs} epoch(s), retry factor {retry}",
                {"samples": f"{w.samples:,}" if w.samples else "-", "epochs": f"{w.epochs:g}",
                 "retry": f"{w.retry_factor:g}"}))
    out.append(("prices", "{kind} prices in {currency}, per GPU-hour (sources below)",
                {"kind": tr.book.kind_label, "currency": tr.book.currency}))
    if tr.calibration is not None:
        when = getattr(tr.calibration, "provenance", {}).get("created_at", "")
        out.append(("calibration", "applied where a group matches (fitted {when})", {"when": when or "-"}))
    else:
        out.append(("calibration", "none found", {}))
    out.append(("ledger", "{ledger}", {"ledger": tr.ledger}) if tr.ledger else ("ledger", "none configured", {}))
    return out


def price_rows(tr: TableRequest) -> list[dict[str, Any]]:
    """The price of each GPU type with where it comes from and its date."""
    rows = []
    for gpu, p in zip(tr.gpus, tr.pricings):
        rows.append({"gpu": gpu.id, "price_per_gpu_hour": None if p is None else round(p.price_per_gpu_hour, 4),
                     "currency": None if p is None else p.currency, "provider": None if p is None else p.provider,
                     "instance": None if p is None else p.instance, "kind": None if p is None else p.pricing,
                     "source": None if p is None else p.source, "as_of": None if p is None else p.as_of})
    return rows


def columns_of(cells: tuple[Cell, ...] | list[Cell]) -> list[str]:
    return list(dict.fromkeys(c.column for c in cells))


def pivot_rows(result: TableResult) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows = models, columns = method x precision, each cell one line per GPU type joined by '; '."""
    from trainplan.report.table_text import choice_text

    columns = ["model", "params"] + columns_of(result.cells)
    rows: dict[str, dict[str, Any]] = {}
    for c in result.cells:
        row = rows.setdefault(c.model.name, {"model": c.model.name,
                                             "params": f"{count_params(c.model).total / 1e9:.2f}B"})
        row[c.column] = "n/a" if not c.choices else "; ".join(
            f"{ch.gpu.id}: {choice_text(ch, result.request.max_gpus)}" for ch in c.choices)
    return list(rows.values()), columns


def first_cell(tr: TableRequest) -> TableRequest:
    """The request cut to its first cell (the tier view's one job)."""
    return replace(tr, cells=tr.cells[:1])


def tier_rows(tr: TableRequest) -> list[dict[str, Any]]:
    """The same job (first model x method x precision) on each GPU type, side by side."""
    from trainplan.planner.table import resource_table

    cell = resource_table(first_cell(tr)).cells[0]
    if cell.setup is None:
        raise TrainplanError(cell.reason)
    rows = []
    for gpu, ch in zip(tr.gpus, cell.choices):
        bw = gpu.memory_bw_bytes_per_s
        peak = gpu.peak_flops("bf16") or gpu.peak_flops("fp16")
        rows.append({"gpu": gpu.id, "memory_gib": round(gib(gpu.capacity_bytes), 1),
                     "bandwidth_gb_s": None if bw is None else round(bw / GB),
                     "peak_bf16_tflops": None if peak is None else round(peak / 1e12, 1),
                     "job_gib": round(gib(cell.memory_bytes), 1), "fits_one_gpu": ch.num_gpus == 1,
                     "min_gpus": ch.num_gpus, "layout": ch.engine or None,
                     "gib_per_gpu": _r(None if ch.device_bytes is None else gib(ch.device_bytes), 1),
                     "time_h": _r(None if ch.time_s is None else ch.time_s / 3600, 2),
                     "cost": _r(ch.cost, 2), "currency": ch.currency})
    return rows


def tier_title(tr: TableRequest) -> str:
    c = tr.cells[0]
    return f"{c.model.name}, {c.column}: the same job on each GPU type"


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
        bars.append((f"{c.model.name} {c.column}", parts))
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
        out.append((f"{c.model.name} {c.column}", seqs, values))
    return out
