"""`trainplan probe` for people: measured beside estimated, with the error of the estimate."""

from __future__ import annotations

from trainplan.i18n import _, translate
from trainplan.probe.result import ProbeResult
from trainplan.report.tables import render_table
from trainplan.units import GIB, MIB

_ROWS = (("peak allocated", "peak_allocated_bytes", "memory"),
         ("peak reserved", "peak_reserved_bytes", "memory"),
         ("device (NVML)", "device_bytes", "memory"),
         ("step time", "step_s", "seconds"),
         ("tokens/s per GPU", "tokens_per_s", "rate"))


def fmt_bytes(n: float | None) -> str:
    """GiB from 1 GiB up, MiB below (a tiny CPU model's peak is a few MiB)."""
    if n is None:
        return "n/a"
    return f"{n / GIB:.2f} GiB" if abs(n) >= GIB else f"{n / MIB:.2f} MiB"


def _fmt(value: float | None, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "memory":
        return fmt_bytes(value)
    if kind == "seconds":
        return f"{value:.4g} s"
    return f"{value:,.0f}"


def _fmt_error(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def comparison_rows(result: ProbeResult) -> list[dict[str, str]]:
    measured, predicted = result.measured.to_dict(), result.predicted.to_dict()
    errors = result.error_pct
    return [{"": _(label), "measured": _fmt(measured[key], kind), "estimated": _fmt(predicted[key], kind),
             "error": _fmt_error(errors[key])} for label, key, kind in _ROWS]


def render(result: ProbeResult) -> str:
    s, env = result.setup, result.environment
    where = env.get("gpu_name") or f"CPU ({env.get('cpu', '?')})"
    gpus = f" x {result.num_gpus}" if result.num_gpus > 1 else ""
    lines = [f"{s['model']}  {s['method']}  {s['precision']}  {s['optimizer']}  "
             + _("micro-batch {batch} x seq {seq}").format(batch=s["batch_size"], seq=s["seq_len"])
             + "  " + _("grad-ckpt {mode}").format(mode=s["grad_ckpt"]) + f"  {s['attention']}",
             _("Probed on {where}: {steps} steps (1 warm-up); estimate for {gpu}").format(
                 where=where + gpus, steps=result.steps, gpu=result.predicted.gpu),
             "",
             render_table(comparison_rows(result), ["", "measured", "estimated", "error"],
                          right=("measured", "estimated", "error"),
                          headers=["", _("measured"), _("estimated"), _("error")]),
             _("  error = (estimated - measured) / measured")]
    versions = ", ".join(f"{k} {env[k]}" for k in ("torch", "transformers", "peft", "bitsandbytes")
                         if env.get(k))
    if env.get("driver"):
        versions += f", driver {env['driver']}, CUDA {env.get('torch_cuda')}"
    lines.append(f"  {versions}")
    how = result.measured.how
    notes = [f"{key}: {text}" for key, text in how.items()] + list(result.notes)
    lines.append("")
    lines.append(_("Notes:"))
    lines += [f"  - {translate(note)}" for note in notes]
    return "\n".join(lines)
