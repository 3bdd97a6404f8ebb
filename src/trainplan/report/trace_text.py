"""`trainplan trace` for people: the traced peak, its breakdown, the modules holding the most."""

from __future__ import annotations

from trainplan.job.training import TrainingSetup
from trainplan.report.tables import render_table
from trainplan.units import fmt_gib, gib


def render(setup: TrainingSetup, result) -> str:
    lines = [f"{setup.model.name}  {setup.method}  {setup.precision}  {setup.optimizer}  micro-batch "
             f"{setup.batch_size} x seq {setup.seq_len}  grad-ckpt {setup.grad_ckpt}  {setup.attention}",
             f"Traced with fake tensors in {result.wall_s:.1f} s ({result.mode} mode)", ""]
    total = result.peak_allocated_bytes or 1
    rows = [{"category": k, "GiB": round(gib(v), 3), "share": f"{100 * v / total:.1f}%"}
            for k, v in sorted(result.breakdown_bytes.items(), key=lambda kv: -kv[1]) if v]
    where = result.peak_phase + (f", in {result.peak_module}" if result.peak_module else "")
    if result.peak_in_recompute:
        where += " (recomputing a checkpointed layer)"
    lines.append(f"Peak allocated {fmt_gib(result.peak_allocated_bytes, 3)} at {where}:")
    lines.append(render_table(rows, ["category", "GiB", "share"], right=("GiB", "share")))
    lines.append(f"  with the CUDA allocator's 512-byte rounding: {fmt_gib(result.peak_cuda_allocated_bytes, 3)}")
    per_module = sorted(((name, sum(v for k, v in cats.items() if k in ("activations", "temporaries")))
                         for name, cats in result.per_module.items()), key=lambda kv: -kv[1])[:8]
    if per_module and per_module[0][1]:
        lines.append("")
        lines.append("Activations and temporaries at the peak, by module (top 8):")
        lines.append(render_table([{"module": n, "GiB": round(gib(b), 3)} for n, b in per_module if b],
                                  ["module", "GiB"], right=("GiB",)))
    if result.notes:
        lines.append("")
        lines.append("Notes:")
        lines += [f"  - {n}" for n in result.notes]
    return "\n".join(lines)
