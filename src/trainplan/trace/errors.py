"""Errors of the trace backend."""

from trainplan.errors import TrainplanError


class TraceUnsupported(TrainplanError):
    """The setup cannot be traced here (an optimizer, precision or option the CPU trace lacks)."""
