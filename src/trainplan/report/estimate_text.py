"""`trainplan estimate` for people: the breakdown in GiB with shares, fits or not, and why.

In the current language (trainplan.i18n): this module's own text through `_()` at the point of
output, the text made elsewhere (chain labels and formulas, notes, suggestion costs) through
`translate()`; the numbers, units and flag names stay as they are."""

from __future__ import annotations

from trainplan.estimation.result import Estimate
from trainplan.i18n import _, translate
from trainplan.model.params import default_lora_targets
from trainplan.report.tables import display_width, render_table
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
        method += " (" + _("rank {rank}, alpha {alpha}").format(rank=s.lora.rank, alpha=f"{s.lora.alpha:g}") \
            + (", DoRA" if s.lora.dora else "") + ", " + _("targets {targets}").format(targets=",".join(targets)) \
            + ((", " + _("trained copies {modules}").format(modules=",".join(s.lora.modules_to_save)))
               if s.lora.modules_to_save else "") + ")"
    return (f"{s.model.name}  {method}  {s.precision}  {s.optimizer}  "
            + _("micro-batch {batch} x seq {seq}").format(batch=s.batch_size, seq=s.seq_len)
            + "  " + _("grad-ckpt {mode}").format(mode=s.grad_ckpt) + f"  {s.attention}  [{s.framework}]")


def _aligned(pairs: list[tuple[str, str]], indent: str = "  ") -> list[str]:
    """label  value lines, the values in one column whatever the labels' language."""
    width = max(display_width(label) for label, _value in pairs)
    return [f"{indent}{label}{' ' * (width - display_width(label))}  {value}" for label, value in pairs]


def render(est: Estimate, *, explain: bool = False) -> str:
    m = est.memory
    lines = []
    lines.append(_header(est))
    lines.append(_("GPU: {gpu} x {n}").format(gpu=est.gpu.name, n=est.layout.num_gpus)
                 + (f" (dp {est.layout.dp}, zero {int(est.layout.zero)}, fsdp {est.layout.fsdp}, "
                    f"offload {est.layout.offload})" if est.layout.num_gpus > 1 else ""))
    lines.append(_("Parameters: {total} total ({total_exact}), trainable {trainable} ({trainable_exact})").format(
        total=fmt_count(est.params.total), total_exact=f"{est.params.total:,}",
        trainable=fmt_count(est.trainable_params), trainable_exact=f"{est.trainable_params:,}"))
    lines.append("")
    total = m.peak_allocated_bytes or 1
    rows = [{"component": _(_LABELS.get(k, k)), "GiB": round(gib(v), 2), "share": f"{100 * v / total:.1f}%"}
            for k, v in sorted(m.components_bytes.items(), key=lambda kv: -kv[1])]
    lines.append(_("Memory per GPU at the peak ({phase}):").format(phase=translate(m.peak_phase)))
    lines.append(render_table(rows, ["component", "GiB", "share"], right=("GiB", "share"),
                              headers=[_("component"), "GiB", _("share")]))
    lines.append("")
    lines += _aligned([(_("peak allocated (max_memory_allocated)"), fmt_gib(m.peak_allocated_bytes)),
                       (_("peak reserved  (max_memory_reserved)"), fmt_gib(m.peak_reserved_bytes)),
                       (_("device (nvidia-smi)"), fmt_gib(m.device_bytes))])
    lines.append("  " + _("GPU capacity {capacity}, usable with {headroom} headroom {usable}").format(
        capacity=fmt_gib(m.gpu_capacity_bytes), headroom=f"{m.headroom:.0%}", usable=fmt_gib(m.usable_bytes)))
    verdict = _("FITS") if m.fits else _("DOES NOT FIT")
    lines.append("  => " + _("{verdict}: margin {margin}").format(verdict=verdict, margin=fmt_gib(m.margin_bytes)))
    if m.measured is not None:      # ledger/recorded.py: this setup ran; the verdict follows the measurement
        lines.append("     " + m.measured.describe())
    if m.per_stage_bytes:
        stages = ", ".join(f"{gib(b):.1f}" for b in m.per_stage_bytes)
        lines.append("  " + _("pipeline stages (device GiB, first to last): {stages}").format(stages=stages))
    if m.cpu_ram_bytes:
        lines.append("  " + _("CPU RAM per node: {ram}").format(ram=fmt_gib(m.cpu_ram_bytes)))
    if est.suggestions:
        lines.append("")
        lines.append(_("Changes that lower the peak:"))
        rows = [{"change": t.change, "device GiB": round(gib(t.device_bytes), 2),
                 "saves GiB": round(gib(t.saves_bytes), 2), "fits": t.fits, "what it costs": translate(t.cost)}
                for t in est.suggestions]
        columns = ["change", "device GiB", "saves GiB", "fits", "what it costs"]
        lines.append(render_table(rows, columns, headers=[_(c) for c in columns]))
    if est.time is not None and hasattr(est.time, "chain"):
        lines.append("")
        lines.append(_("Time and cost, step by step:") if m.fits
                     else _("Time and cost, step by step (does not fit: cost shown for reference):"))
        chain = est.time.chain() + (est.cost.chain() if est.cost is not None else [])
        rows = [{"step": _(label), "value": _value(value, unit), "formula": translate(formula)}
                for label, value, unit, formula in chain]
        lines.append(render_table(rows, ["step", "value", "formula"], right=("value",),
                                  headers=[_("step"), _("value"), _("formula")]))
        lines += _cost_lines(est)
    lines += _from_lines(est, explain)
    if est.notes:
        lines.append("")
        lines.append(_("Assumptions and notes:"))
        lines += [f"  - {translate(n)}" for n in est.notes]
    return "\n".join(lines)


def _cost_lines(est: Estimate) -> list[str]:
    """Below the chain: the total, or why there is none, or how to give a price."""
    c = est.cost
    if c is None:
        return ["  " + _("cost: {why}").format(why=translate(est.job.price_missing))] if est.job.price_missing else []
    if c.total is None:
        return ["  " + _("cost: {per_hour} per hour, {per_step} per step; no total without --samples (and --epochs)")
                .format(per_hour=_value(c.per_hour, c.currency), per_step=_value(c.per_step, c.currency))]
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
                     "from": origin + (f": {where}" if where else ""), "note": translate(s.get("note", ""))})
    lines = ["", (_("Settings and where they came from ({files}):").format(
        files=", ".join(_short(f) for f in report["files"])) if report else _("Settings and where they came from:"))]
    columns = ["setting", "value", "from", "note"]
    lines.append(render_table(rows, columns, headers=[_(c) for c in columns]))
    if report and report["unread"]:
        lines.append("  " + _("keys that matter but were not used:"))
        lines += [f"    {u['key']} = {u['value']!r}: {translate(u['why'])}"
                  + (f" ({_short(u['file'])})" if u.get("file") else "") for u in report["unread"]]
    if report and report["ignored"]:
        lines.append("  " + _("{n} keys that do not change memory or time (learning rate, logging, paths, ...)")
                     .format(n=report["ignored"]))
    return lines


def _short(path: str) -> str:
    """A file path as the user would type it: relative to the working directory when under it."""
    import os

    if not os.path.isabs(path):
        return path
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path
