"""The README-style comment block of an export: what the plan assumed (model, method, framework, GPU
type and count, nodes, the layout), what trainplan expects of it (GiB per GPU as the device shows it,
against the usable memory after the headroom; step time, tokens/s; total time and cost when the
samples and a price are known), and the placeholders the user must fill in before launching."""

from __future__ import annotations

from trainplan.enums import Fsdp, Offload, ZeroStage
from trainplan.export.base import ExportContext
from trainplan.units import fmt_duration, gib


def layout_text(job) -> str:
    layout = job.layout
    parts = [f"{layout.nodes} node(s) x {layout.gpus_per_node} {job.gpu.name}" if layout.nodes > 1
             else f"{layout.num_gpus} x {job.gpu.name}"]
    if layout.zero is not ZeroStage.NONE:
        parts.append(f"DeepSpeed ZeRO-{int(layout.zero)}")
    if layout.fsdp is not Fsdp.NONE:
        version = (job.fsdp.version if job.fsdp is not None else None)
        parts.append(f"FSDP {layout.fsdp}" + (f" (v{version})" if version else ""))
    if layout.offload is not Offload.NONE:
        parts.append(f"offload {layout.offload}")
    for name in ("tp", "pp", "cp", "ep"):
        if getattr(layout, name) > 1:
            parts.append(f"{name} {getattr(layout, name)}")
    return ", ".join(parts)


def setup_text(job) -> str:
    s = job.setup
    parts = [s.model.name, str(s.method)]
    if s.lora is not None:
        parts.append(f"rank {s.lora.rank}")
    parts += [str(s.precision), str(s.optimizer), f"micro-batch {s.batch_size} x accumulation {s.grad_accum}",
              f"{s.seq_len} tokens", f"checkpointing {s.grad_ckpt}", f"attention {s.attention}"]
    return ", ".join(parts)


def lines(job, estimate, ctx: ExportContext, *, files: tuple[str, ...]) -> list[str]:
    """The block's lines, without comment marks."""
    out = ["Exported by `trainplan export`: the configs and launch line of one plan.",
           f"Setup:  {setup_text(job)} ({job.setup.framework})",
           f"Layout: {layout_text(job)}"]
    if estimate is not None:
        mem = estimate.memory
        margin = mem.usable_bytes - mem.device_bytes
        verdict = "fits" if mem.fits else "DOES NOT FIT"
        out.append(f"Memory: {gib(mem.device_bytes):.1f} GiB per GPU expected (device view, peak "
                   f"{gib(mem.peak_allocated_bytes):.1f} GiB allocated) of {gib(mem.usable_bytes):.1f} GiB usable "
                   f"({mem.headroom:.0%} headroom of {gib(mem.gpu_capacity_bytes):.1f} GiB): {verdict}, margin "
                   f"{gib(margin):+.1f} GiB")
        t = estimate.time
        tokens = t.tokens_per_s_per_gpu * job.layout.num_gpus
        out.append(f"Time:   {t.step_s:.2f} s per optimizer step, {t.tokens_per_s_per_gpu:,.0f} tokens/s per GPU "
                   f"({tokens:,.0f} in all)")
        known = job.workload.samples is not None or job.workload.steps is not None
        if known:
            out.append(f"Run:    {t.steps} steps, {fmt_duration(t.total_with_retries_s)}, "
                       f"{t.gpu_hours_with_retries:,.1f} GPU-hours")
        cost = estimate.cost
        if cost is not None and cost.total is not None:
            out.append(f"Cost:   {cost.total:,.2f} {cost.currency} at {cost.price_per_gpu_hour:g} {cost.currency}"
                       f"/GPU-hour ({cost.provider or 'your price'})")
        elif not known:
            out.append("Cost:   give --samples (or --max-steps) and a price for the run's time and cost")
    out += ["Before launching, fill in:",
            f"  - the dataset: {ctx.dataset}" + (" (a dataset_info.json name for LLaMA-Factory)"
                                                 if "llamafactory.yaml" in files else ""),
            f"  - the output folder: {ctx.output_dir}"]
    if job.layout.nodes > 1:
        out.append(f"  - {ctx.master_addr}: node 0's address; {ctx.node_rank}: 0 on node 0, 1, 2, ... on the others")
    if "hostfile" in files:
        out.append("  - hostfile: the hosts' names (node0, node1, ... are placeholders)")
    if "train.py" in " ".join(files) or any(f.endswith(".json") and f != "ds_config.json" for f in files):
        out.append("  - train.py: your HF Trainer script (HfArgumentParser over the JSON it is given)")
    return out


def comment(text_lines: list[str]) -> str:
    return "".join(f"# {line}".rstrip() + "\n" for line in text_lines)
