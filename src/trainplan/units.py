"""Units: the only module that knows 1024 versus 1000.

Memory is held in bytes and printed in GiB (2**30). FLOPs and money are decimal.
"""

from __future__ import annotations

try:   # the C dates: on CPython 3.11/3.12 `import datetime` first runs its whole pure-Python twin (0.6 ms
    from _datetime import date  # noqa: F401 - of a one-shot estimate), then replaces it with these classes
except ImportError:   # pragma: no cover - an interpreter without the C module
    from datetime import date  # noqa: F401

KIB = 1024
MIB = 1024**2
GIB = 1024**3
GB = 10**9
TERA = 10**12
SECONDS_PER_HOUR = 3600.0


def gib(n_bytes: float) -> float:
    """Bytes -> GiB (binary)."""
    return n_bytes / GIB


def gib_to_bytes(n_gib: float) -> int:
    """GiB -> bytes, rounded to the byte."""
    return int(round(n_gib * GIB))


def gb_to_bytes(n_gb: float) -> int:
    """Decimal GB (vendor labels) -> bytes."""
    return int(round(n_gb * GB))


def tflops_to_flops(tflops: float) -> float:
    return tflops * TERA


def fmt_gib(n_bytes: float, digits: int = 2) -> str:
    return f"{n_bytes / GIB:.{digits}f} GiB"


def fmt_count(n: float) -> str:
    """Human count: 6.74B, 8.39M, 124K."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.2f}{suffix}"
    return f"{n:.0f}"


def fmt_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 86400:.1f} days"
