"""Pictures (PNG or SVG by the file's extension), drawn with matplotlib's object API (no pyplot,
no global state), which is imported only when a picture is asked for:

- memory_breakdown: stacked bars of the memory components per model x method x precision;
- memory_vs_seq: device memory per GPU against sequence length, each GPU's capacity a line;
- plan_front: the plans' cost against time, the Pareto front joined, the top plans numbered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from trainplan.errors import TrainplanError
from trainplan.units import GIB

SUFFIXES = (".png", ".svg")


def _figure(width: float = 9.0, height: float = 5.0):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise TrainplanError("pictures need matplotlib: pip install 'trainplan[plot]'") from None
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def check_path(path: str) -> str:
    """A --plot path fit to write, checked before any work: .png or .svg, a regular file or a new
    name in an existing directory (safeio.check_output_path: never a symlink, FIFO or device)."""
    from trainplan.safeio import check_output_path

    if Path(path).suffix.lower() not in SUFFIXES:
        raise TrainplanError(f"--plot {path!r}: the file must end in .png or .svg")
    return check_output_path(path, what="--plot")


def _save(fig, path: str) -> str:
    """The figure written atomically (safeio.write_atomic) in the format its suffix names."""
    import io

    from trainplan.safeio import write_atomic

    buffer = io.BytesIO()
    fig.savefig(buffer, format=Path(check_path(path)).suffix.lower().lstrip("."), dpi=130)
    write_atomic(path, buffer.getvalue(), what="--plot")
    return path


def memory_breakdown(bars: Sequence[tuple[str, dict[str, int]]], path: str, *, title: str = "",
                     capacities: Sequence[tuple[str, int]] = ()) -> str:
    """bars: (label, components in bytes, summing to the device view); one stacked bar each."""
    fig = _figure(max(8.0, 0.55 * len(bars) + 5.0), 5.5)
    ax = fig.add_subplot()
    keys: list[str] = []
    for _, comps in bars:
        keys += [k for k in comps if k not in keys]
    bottoms = [0.0] * len(bars)
    x = range(len(bars))
    colors = _palette(len(keys))
    for key, color in zip(keys, colors):
        values = [comps.get(key, 0) / GIB for _, comps in bars]
        if any(values):
            ax.bar(x, values, bottom=bottoms, label=key.replace("_", " "), color=color, width=0.7)
            bottoms = [b + v for b, v in zip(bottoms, values)]
    _capacity_lines(ax, capacities)
    ax.set_xticks(list(x), [label for label, _ in bars], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("GiB per GPU (device view, one GPU)")
    ax.set_title(title or "Memory at the peak, by component")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def memory_vs_seq(series: Sequence[tuple[str, Sequence[int], Sequence[int | None]]], path: str, *,
                  capacities: Sequence[tuple[str, int]] = (), title: str = "") -> str:
    """series: (label, sequence lengths, device bytes or None); capacities: (GPU, bytes usable)."""
    fig = _figure(11.0, 5.0)
    ax = fig.add_subplot()
    for label, seqs, values in series:
        pts = [(s, v / GIB) for s, v in zip(seqs, values) if v is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=label)
    _capacity_lines(ax, capacities)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ticks = sorted({s for _, seqs, _ in series for s in seqs})
    ax.set_xticks(ticks, [f"{s // 1024}k" if s >= 1024 else str(s) for s in ticks])
    ax.yaxis.set_major_formatter(_plain_formatter())
    ax.set_xlabel("sequence length (tokens)")
    ax.set_ylabel("GiB per GPU (device view)")
    ax.set_title(title or "Memory per GPU against sequence length (one GPU holds the whole job)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def plan_front(points: Sequence[dict[str, Any]], path: str, *, currency: str, title: str = "") -> str:
    """points: {"cost", "time_s", "pareto": bool, "label": str, "rank": int | None}."""
    fig = _figure(8.5, 5.5)
    ax = fig.add_subplot()
    others = [p for p in points if not p["pareto"]]
    front = sorted((p for p in points if p["pareto"]), key=lambda p: p["cost"])
    ax.scatter([p["time_s"] / 3600 for p in others], [p["cost"] for p in others], s=10, color="lightgrey",
               label="other plans that fit")
    ax.plot([p["time_s"] / 3600 for p in front], [p["cost"] for p in front], marker="o", color="tab:blue",
            label="Pareto front (cost vs time)")
    for p in points:
        if p.get("rank"):
            ax.annotate(f"{p['rank']}: {p['label']}", (p["time_s"] / 3600, p["cost"]), fontsize=7,
                        textcoords="offset points", xytext=(4, 4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(_plain_formatter())
    ax.yaxis.set_major_formatter(_plain_formatter())
    ax.yaxis.set_minor_formatter(_plain_formatter())
    ax.set_xlabel("wall-clock (hours, with retries)")
    ax.set_ylabel(f"cost ({currency})")
    ax.set_title(title or "Plans: cost against time")
    ax.legend(fontsize=8)
    return _save(fig, path)


def _capacity_lines(ax, capacities: Sequence[tuple[str, int]]) -> None:
    """One dashed line per usable capacity (GPUs within 1% of each other share a line), in the legend."""
    groups: list[tuple[float, list[str]]] = []
    for name, capacity in sorted(capacities, key=lambda c: c[1]):
        gib = capacity / GIB
        if groups and abs(groups[-1][0] - gib) <= 0.01 * gib:
            groups[-1][1].append(name)
        else:
            groups.append((gib, [name]))
    styles = ["--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1))]
    for i, (gib, names) in enumerate(groups):
        ax.axhline(gib, linestyle=styles[i % len(styles)], linewidth=1.2, color="black",
                   label=f"usable: {', '.join(names)} ({gib:.1f} GiB)")


def _plain_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: f"{v:g}")


def _palette(n: int) -> list:
    base = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
            "#bab0ac", "#1f77b4", "#aec7e8", "#98df8a", "#c5b0d5", "#c49c94", "#dbdb8d", "#17becf", "#9edae5"]
    return [base[i % len(base)] for i in range(n)]
