"""`trainplan estimate` for people: the breakdown in GiB with shares, fits or not, and why."""

from __future__ import annotations

from trainplan.estimation.result import Estimate
from trainplan.model.params import default_lora_targets
from trainplan.report.tables import render_table
from trainplan.units import fmt_count, fmt_gib, gib

_LABELS = {
    "weights": "weights", "quant_constants": "quantization constants", "master_weights": "fp32 master weights",
    "optimizer": "optimizer states", "fp8_weight_cache": "fp8 weight cache", "gradients": "gradients",
    "activations": "activations (saved for backward)", "autocast_weight_copies": "autocast 16-bit weight copies",
    "logits_loss": "logits + loss", "temporaries": "temporaries", "ddp_buckets": "DDP gradient buckets",
    "unsharded_params": "gathered (unsharded) params", "unsharded_grads": "unsharded grads",
}


def _value(v, unit: str = "") -> str:
    """A chain value with its unit: large and small floats in 4 significant digits, never a bare 0
    for a small positive number."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        text = str(v)
    elif isinstance(v, int):
        text = f"{v:.4g}" if abs(v) >= 1e9 else f"{v:,}"
    elif v == 0:
        text = "0"
    elif unit == "%":
        text = f"{v:.1f}"
    elif v.is_integer() and 100 <= abs(v) < 1e6:
        text = f"{v:,.0f}"
    elif abs(v) >= 1e6 or abs(v) < 1e-3:
        text = f"{v:.4g}"
    elif abs(v) < 100:
        text = f"{v:,.4g}" if abs(v) < 1 else f"{v:,.3f}".rstrip("0").rstrip(".")
    else:
        text = f"{v:,.1f}"
    return f"{text} {unit}" if unit else text


def _header(est: Estimate) -> str:
    s = est.setup
    method = str(s.method)
    if s.lora is not None:
        targets = s.lora.targets or default_lora_targets(s.model)
        method += (f" (rank {s.lora.rank}, alpha {s.lora.alpha:g}" + (", DoRA" if s.lora.dora else "")
                   + f", targets {','.join(targets)})")
    return (f"{s.model.name}  {method}  {s.precision}  {s.optimizer}  micro-batch {s.batch_size} x "
            f"seq {s.seq_len}  grad-ckpt {s.grad_ckpt}  {s.attention}  [{s.framework}]")


def render(est: Estimate, *, explain: bool = False) -> str:
    m = est.memory
    s = est.setup
    lines = []
    lines.append(_header(est))
    lines.append(f"GPU: {est.gpu.name} x {est.layout.num_gpus}"
                 + (f" (dp {est.layout.dp}, zero {int(est.layout.zero)}, fsdp {est.layout.fsdp}, "
                    f"offload {est.layout.offload})" if est.layout.num_gpus > 1 else ""))
    lines.append(f"Parameters: {fmt_count(est.params.total)} total ({est.params.total:,}), "
                 f"trainable {fmt_count(est.trainable_params)} ({est.trainable_params:,})")
    lines.append("")
    total = m.peak_allocated_bytes or 1
    rows = [{"component": _LABELS.get(k, k), "GiB": round(gib(v), 2), "share": f"{100 * v / total:.1f}%"}
            for k, v in sorted(m.components_bytes.items(), key=lambda kv: -kv[1])]
    lines.append(f"Memory per GPU at the peak ({m.peak_phase}):")
    lines.append(render_table(rows, ["component", "GiB", "share"], right=("GiB", "share")))
    lines.append("")
    lines.append(f"  peak allocated (max_memory_allocated)  {fmt_gib(m.peak_allocated_bytes)}")
    lines.append(f"  peak reserved  (max_memory_reserved)   {fmt_gib(m.peak_reserved_bytes)}")
    lines.append(f"  device (nvidia-smi)                    {fmt_gib(m.device_bytes)}")
    lines.append(f"  GPU capacity {fmt_gib(m.gpu_capacity_bytes)}, usable with {m.headroom:.0%} headroom "
                 f"{fmt_gib(m.usable_bytes)}")
    verdict = "FITS" if m.fits else "DOES NOT FIT"
    lines.append(f"  => {verdict}: margin {fmt_gib(m.margin_bytes)}")
    if m.per_stage_bytes:
        stages = ", ".join(f"{gib(b):.1f}" for b in m.per_stage_bytes)
        lines.append(f"  pipeline stages (device GiB, first to last): {stages}")
    if m.cpu_ram_bytes:
        lines.append(f"  CPU RAM per node: {fmt_gib(m.cpu_ram_bytes)}")
    if est.suggestions:
        lines.append("")
        lines.append("Single changes that lower the peak:")
        rows = [{"change": t.change, "device GiB": round(gib(t.device_bytes), 2),
                 "saves GiB": round(gib(t.saves_bytes), 2), "fits": t.fits, "what it costs": t.cost}
                for t in est.suggestions]
        lines.append(render_table(rows, ["change", "device GiB", "saves GiB", "fits", "what it costs"]))
    if est.time is not None and hasattr(est.time, "chain"):
        lines.append("")
        lines.append("Time and cost, step by step" + ("" if m.fits else " (does not fit: cost shown for reference)")
                     + ":")
        chain = est.time.chain() + (est.cost.chain() if est.cost is not None else [])
        rows = [{"step": label, "value": _value(value, unit), "formula": formula}
                for label, value, unit, formula in chain]
        lines.append(render_table(rows, ["step", "value", "formula"], right=("value",)))
        lines += _cost_lines(est)
    lines += _from_lines(est, explain)
    if est.notes:
        lines.append("")
        lines.append("Assumptions and notes:")
        lines += [f"  - {n}" for n in est.notes]
    return "\n".join(lines)


def _cost_lines(est: Estimate) -> list[str]:
    """Below the chain: the total, or why there is none, or how to give a price."""
    c = est.cost
    if c is None:
        return [f"  cost: {est.job.price_missing}"] if est.job.price_missing else []
    if c.total is None:
        return [f"  cost: {_value(c.per_hour, c.currency)} per hour, {_value(c.per_step, c.currency)} per step; "
                "no total without --samples (and --epochs)"]
    return []


def _from_lines(est: Estimate, explain: bool) -> list[str]:
    """What --from read: each setting with its key and file, the keys not used and why; with
    `explain`, every setting (framework profile and trainplan defaults too)."""
    from trainplan.job.sources import read_report, sources

    report = read_report(est.job)
    if report is None and not explain:
        return []
    rows = []
    for s in sources(est.job, everything=explain):
        where = s.get("key", "")
        if s.get("file"):
            where += f" in {_short(s['file'])}"
        value = s["value"]
        origin = s["origin"] + (f" ({s['version']})" if s.get("version") else "")
        rows.append({"setting": s["field"], "value": ",".join(map(str, value)) if isinstance(value, list) else value,
                     "from": origin + (f": {where}" if where else ""), "note": s.get("note", "")})
    lines = ["", "Settings and where they came from"
             + (f" ({', '.join(_short(f) for f in report['files'])})" if report else "") + ":"]
    lines.append(render_table(rows, ["setting", "value", "from", "note"]))
    if report and report["unread"]:
        lines.append("  keys that matter but were not used:")
        lines += [f"    {u['key']} = {u['value']!r}: {u['why']}" + (f" ({_short(u['file'])})" if u.get("file") else "")
                  for u in report["unread"]]
    if report and report["ignored"]:
        lines.append(f"  {report['ignored']} keys that do not change memory or time (learning rate, logging, paths, ...)")
    return lines


def _short(path: str) -> str:
    """A file path as the user would type it: relative to the working directory when under it."""
    import os

    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path
