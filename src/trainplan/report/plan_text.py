"""`trainplan plan` and `trainplan fit` for people: tables in GiB, hours and money (no formulas)."""

from __future__ import annotations

from trainplan.i18n import _, translate
from trainplan.planner.fit import FitResult, Limit
from trainplan.planner.result import PlanResult
from trainplan.report.tables import render_table
from trainplan.units import fmt_duration, gib


def _when(seconds: float) -> str:
    return fmt_duration(seconds)


def _price_lines(result: PlanResult) -> list[str]:
    """The prices compared: their kind, currency, and where each came from (converted ones with the rate)."""
    prices = result.prices()
    if not prices["per_gpu"]:
        return []
    kind = prices["kind"]
    lines = ["", f"Prices compared ({kind} prices, per GPU-hour in {prices['currency']}; "
                 f"kind: {prices['kind_origin']}, currency: {prices['currency_origin']}):"]
    rows = []
    for p in prices["per_gpu"]:
        orig = p["original"]
        rows.append({"gpu": p["gpu"], "price": f"{p['price_per_gpu_hour']:,.4g} {p['currency']}",
                     "kind": p["kind"], "from": f"{p['provider']} {p['instance']}".strip() or p["origin"],
                     "as of": p["as_of"] or "-",
                     "converted from": "" if orig is None else f"{orig['price_per_gpu_hour']:g} {orig['currency']}"})
    lines.append(render_table(rows, right=("price",), headers=[_(c) for c in rows[0]]))
    for rate in prices["rates"]:
        lines.append(f"  rate: {rate['per_usd']:g} {rate['currency']} per USD ({rate['basis']}, {rate['as_of']}; "
                     f"{rate['origin']})" + ("; stale: set a current one with a [[rate]] in a price file"
                                             if rate["stale"] else ""))
    return lines


def render_plan(result: PlanResult) -> str:
    pr = result.request
    setup, w = pr.job.setup, pr.job.workload
    o = result.outcome
    lines = []
    data = (f"{w.samples:,} samples x {w.tokens_per_sample or setup.seq_len:,} tokens x {w.epochs:g} epoch(s)"
            if w.samples else "no --samples: cost and time of one optimizer step")
    lines.append(f"{setup.model.name}: seq {setup.seq_len:,}, global batch {pr.global_batch}, {data}")
    by = (_("cost of the run") if w.samples else _("cost of one step")) if pr.sort == "cost" else \
        (_("time of the run") if w.samples else _("time of one step"))
    lines.append(_("ranked by {by} ({currency})").format(by=by, currency=result.currency)
                 + _("; * = on the Pareto front of cost against time; ! = risky, under 5% of the usable memory free")
                 + (_("; c = calibrated from the ledger") if any(p.found.calibrated for p in result.plans) else "")
                 + (_("; ran = measured in the ledger") if any(p.found.measured for p in result.plans) else ""))
    opts = ", ".join(dict.fromkeys(str(o) for m in pr.methods for o in m.optimizers))
    fixed = [f"--{k} {int(v) if k == 'zero' else v}" for k, v in (("zero", pr.fixed.zero), ("fsdp", pr.fixed.fsdp),
             ("offload", pr.fixed.offload), ("tp", pr.fixed.tp), ("pp", pr.fixed.pp)) if v is not None]
    lines.append(f"--framework {setup.framework}: {pr.capabilities.layouts}; optimizers searched: {opts}"
                 + (f"; fixed: {' '.join(fixed)}" if fixed else ""))
    lines.append("")
    if not result.plans:
        lines.append(_("No setup fits within the constraints."))
    rows = []
    for p in result.plans:
        f = p.found
        s, k = f.shape, f.knobs
        rows.append({"#": f"{p.rank}{'*' if p.pareto else ''}{'!' if p.risky else ''}", "gpu": f.rentable.gpu.id, "GPUs": s.num_gpus,
                     "layout": s.engine(), "method": k.method, "optimizer": str(f.setup.optimizer),
                     "ckpt": str(f.setup.grad_ckpt), "micro x accum": f"{k.batch_size} x {k.grad_accum}",
                     "GiB/GPU": (f"ran {gib(f.measured.memory_bytes):.1f}" if f.measured is not None and
                                 f.measured.memory_bytes else f"{gib(f.device_bytes):.1f}")
                     + ("c" if f.calibrated and f.measured is None else "") + f"/{gib(f.rentable.usable_bytes):.1f}",
                     "time": _when(f.time_s), "cost": f"{f.cost_value:,.2f}"})
    if rows:
        lines.append(render_table(rows, right=("GPUs", "cost", "time", "GiB/GPU"), headers=[_(c) for c in rows[0]]))
        lines.append("")
        lines.append(_("To reproduce: trainplan estimate <flags>"))
        for p in result.plans:
            lines.append(f"{p.rank:>3}  {p.flags}")
    front = result.front()
    if front:
        lines.append("")
        lines.append(f"Pareto front: {len(front)} plans, from {front[0].cost_value:,.2f} {result.currency} in "
                     f"{_when(front[0].time_s)} ({front[0].rentable.gpu.id} x{front[0].shape.num_gpus}) to "
                     f"{front[-1].cost_value:,.2f} {result.currency} in {_when(front[-1].time_s)} "
                     f"({front[-1].rentable.gpu.id} x{front[-1].shape.num_gpus}); --json lists them, --plot draws them")
    lines += _price_lines(result)
    if result.rejected:
        lines.append("")
        lines.append(_("Cannot carry the job:"))
        width = max(len(r.gpu) for r in result.rejected)
        lines += [f"  {r.gpu:<{width}}  {r.reason}" for r in result.rejected]
    lines.append("")
    lines.append(f"Searched {o.candidates:,} setups ({o.groups:,} groups of GPU type x count x split x knobs, "
                 f"{o.visited:,} visited, {o.memory_checks:,} memory checks, {o.timed:,} timed) in {o.elapsed_s:.2f} s.")
    lines += [_("note: {text}").format(text=translate(n)) for n in result.notes]
    return "\n".join(translate(line) for line in lines)     # the lines built in English (no-op in English)


def _limit_text(name: str, lim: Limit, unit: str, usable: int) -> str:
    if lim.value == 0:
        need = "" if lim.next_device_bytes is None else f" ({gib(lim.next_device_bytes):.1f} GiB per GPU)"
        return f"{name}: nothing fits, not even {lim.step} {unit}{need}; {gib(usable):.1f} GiB usable"
    text = f"{name}: {lim.value:,} {unit} ({gib(lim.device_bytes):.1f} of {gib(usable):.1f} GiB usable)"
    if lim.value == lim.ceiling:
        text += f"; the search stops there ({lim.ceiling_reason})"
    elif lim.next_device_bytes is not None:
        text += f"; {lim.value + lim.step:,} needs {gib(lim.next_device_bytes):.1f} GiB"
    return text


def render_fit(r: FitResult) -> str:
    lay = r.layout
    where = f"{r.gpu.name} x {lay.num_gpus}" + (f" (zero {int(lay.zero)}, fsdp {lay.fsdp}, offload {lay.offload}, "
                                                f"tp {lay.tp}, pp {lay.pp})" if lay.num_gpus > 1 else "")
    s = r.setup
    lines = [
        f"{s.model.name} {s.method} {s.precision}, grad-ckpt {s.grad_ckpt}, {s.attention} on {where}",
        _limit_text(f"largest micro-batch at seq {s.seq_len:,}", r.max_batch, "sequences", r.usable_bytes),
        _limit_text(f"longest sequence at micro-batch {s.batch_size}", r.max_seq, "tokens", r.usable_bytes),
        f"(device view per GPU against capacity x (1 - headroom {r.headroom:g}); memory grows with both, so each "
        "limit is a bisection)"]
    return "\n".join([translate(line) for line in lines] + [_("note: {text}").format(text=translate(n)) for n in r.notes])
