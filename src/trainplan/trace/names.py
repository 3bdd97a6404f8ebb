"""Module names as the user knows them (model.layers.3.mlp), from torch's ModTracker names."""

from __future__ import annotations


def clean_name(fqn: str) -> str:
    """ModTracker's name without the root class and peft's wrappers:
    'PeftModelForCausalLM.base_model.model.model.layers.3.mlp' -> 'model.layers.3.mlp'."""
    parts = fqn.split(".") if fqn else []
    if parts and parts[0][:1].isupper():
        parts = parts[1:]
    while parts[:2] == ["base_model", "model"]:
        parts = parts[2:]
    return ".".join(parts)
