"""Probe: a short real trial of a setup on the local GPU (or, for tests, the CPU), measured beside
trainplan's estimate (optional extra `trace`: torch, transformers, peft; bitsandbytes for QLoRA and
8-bit optimizers; DeepSpeed for ZeRO launches).

`import trainplan.probe` stays torch-free; `probe()` imports torch when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainplan.probe.result import Measurement, Predicted, ProbeResult

if TYPE_CHECKING:
    from trainplan.probe.run import probe

__all__ = ["Measurement", "Predicted", "ProbeResult", "probe"]


def __getattr__(name: str):
    if name == "probe":
        from trainplan.probe.run import probe

        return probe
    raise AttributeError(f"module 'trainplan.probe' has no attribute {name!r}")
