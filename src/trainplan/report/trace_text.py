"""`trainplan trace` for people: the traced peak, its breakdown, the modules holding the most."""

from __future__ import annotations

from trainplan.i18n import _, translate
from trainplan.job.training import TrainingSetup
from trainplan.report.tables import render_table
from trainplan.units import fmt_gib, gib


def render(setup: TrainingSetup, result) -> str:
    lines = [f"{setup.model.name}  {setup.method}  {setup.precision}  {setup.optimizer}  "
             + _("micro-batch {batch} x seq {seq}").format(batch=setup.batch_size, seq=setup.seq_len)
             + "  " + _("grad-ckpt {mode}").format(mode=setup.grad_ckpt) + f"  {setup.attention}",
             _("Traced with fake tensors in {seconds} s ({mode} mode)").format(seconds=f"{result.wall_s:.1f}",
                                                                              mode=result.mode), ""]
    total = result.peak_allocated_bytes or 1
    rows = [{"category": _(k), "GiB": round(gib(v), 3), "share": f"{100 * v / total:.1f}%"}
            for k, v in sorted(result.breakdown_bytes.items(), key=lambda kv: -kv[1]) if v]
    where = translate(result.peak_phase)
    if result.peak_module:
        where = _("{phase}, in {module}").format(phase=where, module=result.peak_module)
    if result.peak_in_recompute:
        where = _("{where} (recomputing a checkpointed layer)").format(where=where)
    lines.append(_("Peak allocated {peak} at {where}:").format(peak=fmt_gib(result.peak_allocated_bytes, 3),
                                                              where=where))
    lines.append(render_table(rows, ["category", "GiB", "share"], right=("GiB", "share"),
                              headers=[_("category"), "GiB", _("share")]))
    lines.append(_("  with the CUDA allocator's 512-byte rounding: {peak}").format(
        peak=fmt_gib(result.peak_cuda_allocated_bytes, 3)))
    per_module = sorted(((name, sum(v for k, v in cats.items() if k in ("activations", "temporaries")))
                         for name, cats in result.per_module.items()), key=lambda kv: -kv[1])[:8]
    if per_module and per_module[0][1]:
        lines.append("")
        lines.append(_("Activations and temporaries at the peak, by module (top 8):"))
        lines.append(render_table([{"module": n, "GiB": round(gib(b), 3)} for n, b in per_module if b],
                                  ["module", "GiB"], right=("GiB",), headers=[_("module"), "GiB"]))
    if result.notes:
        lines.append("")
        lines.append(_("Notes:"))
        lines += [f"  - {translate(n)}" for n in result.notes]
    return "\n".join(lines)
