"""Trace backend: the exact memory of one real Hugging Face training step, measured with PyTorch
fake tensors on the CPU, with no weights and no GPU (optional extra `trace`: torch, transformers,
peft).

`run_trace` (and everything that runs a step) imports torch when first used; TraceResult and
TraceUnsupported do not, so `import trainplan.trace` stays cheap and torch-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainplan.trace.errors import TraceUnsupported
from trainplan.trace.result import TraceResult

if TYPE_CHECKING:
    from trainplan.trace.plot import plot_timeline
    from trainplan.trace.run import run_trace

__all__ = ["TraceResult", "TraceUnsupported", "plot_timeline", "run_trace"]


def __getattr__(name: str):
    if name == "run_trace":
        from trainplan.trace.run import run_trace

        return run_trace
    if name == "plot_timeline":
        from trainplan.trace.plot import plot_timeline

        return plot_timeline
    raise AttributeError(f"module 'trainplan.trace' has no attribute {name!r}")
