"""trainplan: will this LLM training run fit, how long will it take, what will it cost.

The analytic core imports no torch, transformers, web or database code.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "estimate", "track"]


def __getattr__(name: str):
    if name == "estimate":
        from trainplan.api import estimate

        return estimate
    if name == "track":
        import importlib

        return importlib.import_module("trainplan.ledger.track")
    raise AttributeError(f"module 'trainplan' has no attribute {name!r}")
