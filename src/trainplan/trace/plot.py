"""Plot a trace's memory timeline (allocated GiB over the step's events) to PNG or SVG.

matplotlib is imported lazily and is optional: without it an SVG is still written (a small
hand-made polyline) and a PNG is skipped (plot_timeline returns None).
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from trainplan.trace.errors import TraceUnsupported
from trainplan.trace.result import TraceResult
from trainplan.units import GIB

_PHASE_LABELS = ("forward", "backward", "optimizer")
_WIDTH, _HEIGHT, _MARGIN = 800, 400, 50


def _title(result: TraceResult) -> str:
    return (f"{result.model}: peak {result.peak_allocated_bytes / GIB:.2f} GiB in {result.peak_phase}"
            f"{' ' + result.peak_module if result.peak_module else ''}")


def _svg(result: TraceResult) -> str:
    values = [value for _, value in result.timeline] or [0]
    top = max(max(values), result.peak_allocated_bytes, 1)
    n = max(len(values) - 1, 1)

    def x(i: int) -> float:
        return _MARGIN + i * (_WIDTH - 2 * _MARGIN) / n

    def y(value: int) -> float:
        return _HEIGHT - _MARGIN - value * (_HEIGHT - 2 * _MARGIN) / top

    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    marks = [f'<line x1="{x(i):.1f}" y1="{_MARGIN}" x2="{x(i):.1f}" y2="{_HEIGHT - _MARGIN}" '
             f'stroke="#bbb" stroke-dasharray="4"/><text x="{x(i) + 3:.1f}" y="{_MARGIN + 12}" '
             f'font-size="11">{label}</text>'
             for i, (label, _) in enumerate(result.timeline) if label in _PHASE_LABELS]
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}">',
        f'<text x="{_MARGIN}" y="20" font-size="14">{escape(_title(result))}</text>',
        f'<line x1="{_MARGIN}" y1="{y(top):.1f}" x2="{_WIDTH - _MARGIN}" y2="{y(top):.1f}" '
        f'stroke="#d33"/><text x="{_WIDTH - _MARGIN - 120}" y="{y(top) - 4:.1f}" font-size="11">'
        f'peak {top / GIB:.3f} GiB</text>',
        *marks,
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{points}"/>',
        f'<text x="{_MARGIN}" y="{_HEIGHT - 15}" font-size="11">events (module forward/backward)'
        f' - allocated GiB, 0 to {top / GIB:.3f}</text>',
        "</svg>"])


def _matplotlib(result: TraceResult, suffix: str) -> bytes:
    """The picture's bytes in the format of `suffix` (.png or .svg)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = [value / GIB for _, value in result.timeline]
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(range(len(values)), values, drawstyle="steps-post")
    for i, (label, _) in enumerate(result.timeline):
        if label in _PHASE_LABELS:
            ax.axvline(i, color="#bbb", linestyle="--")
            ax.text(i, max(values or [0]), label, fontsize=8, va="top")
    ax.axhline(result.peak_allocated_bytes / GIB, color="#d33", linewidth=0.8)
    ax.set_title(_title(result))
    ax.set_xlabel("event (module forward / backward)")
    ax.set_ylabel("allocated (GiB)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format=suffix.lstrip("."))
    plt.close(fig)
    return buffer.getvalue()


def check_plot_path(path: str | Path) -> Path:
    """The --plot path, checked before the trace runs: a .png or .svg name that is a regular file
    or a new name in an existing directory (safeio.check_output_path: never a symlink, FIFO,
    device or a missing directory)."""
    from trainplan.safeio import check_output_path

    target = Path(path)
    if target.suffix.lower() not in (".png", ".svg"):
        raise TraceUnsupported(f"--plot {str(path)!r}: use a .png or .svg file name")
    check_output_path(target, what="--plot")
    return target


def plot_timeline(result: TraceResult, path: str | Path) -> Path | None:
    """Write the timeline to `path` (.png or .svg), atomically (safeio.write_atomic). Returns the
    path, or None when skipped (a PNG without matplotlib)."""
    from trainplan.safeio import write_atomic

    target = check_plot_path(path)
    suffix = target.suffix.lower()
    try:
        data: bytes | str = _matplotlib(result, suffix)
    except ImportError:
        if suffix == ".png":
            return None
        data = _svg(result)
    write_atomic(target, data, what="--plot")
    return target
