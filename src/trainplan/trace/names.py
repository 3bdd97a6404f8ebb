"""Module names as the user knows them (model.layers.3.mlp), from the tracker's full names."""

from __future__ import annotations

from trainplan.trace.modules import ROOT


def clean_name(fqn: str) -> str:
    """The module path without peft's wrappers; "" for the outermost model:
    'base_model.model.model.layers.3.mlp' -> 'model.layers.3.mlp', 'base_model.model' -> ''."""
    if not fqn or fqn == ROOT:
        return ""
    parts = fqn.split(".")
    if parts[0] == "base_model":            # PeftModel -> LoraModel (base_model) -> the HF model
        parts = parts[2:] if parts[1:2] == ["model"] else parts[1:]
    return ".".join(parts)
