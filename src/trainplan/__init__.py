"""trainplan: will this LLM training run fit, how long will it take, what will it cost.

    import trainplan
    est = trainplan.estimate("llama-2-7b", method="lora", gpu="h100")     # trainplan.api

`estimate`, `plan`, `fit`, `table` and `resolve` (the typed Job) take the setup flags as keyword arguments (trainplan.api);
`track` records a real run into the ledger. The analytic core imports no torch, transformers, web or
database code; these names load on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"

_API = ("estimate", "plan", "fit", "table", "resolve")
__all__ = ["__version__", *_API, "track"]


def __getattr__(name: str):
    if name in _API:
        from trainplan import api

        return getattr(api, name)
    if name == "track":
        import importlib

        return importlib.import_module("trainplan.ledger.track")
    raise AttributeError(f"module 'trainplan' has no attribute {name!r}")
