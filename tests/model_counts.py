"""The checks every model-catalog wave runs on its published parameter counts (tests/test_models_*.py keep the
tables and their sources; this is the one home of what each kind of figure asserts)."""

from __future__ import annotations

import json

import pytest

from trainplan import catalog
from trainplan.model.params import count_params


def spec(name: str):
    return catalog.resolve_model(name)


def check_exact(name: str, total: int, *, recorded: bool = True) -> None:
    """A count of the released checkpoint: trainplan's total is it, and the catalog row records it (unless
    `recorded` is False: the wave's rows carry no measured_params)."""
    s = spec(name)
    assert count_params(s).total == total
    if recorded:
        assert s.measured_params == total


def check_same_shapes(name: str, total: int) -> None:
    """A count printed for another checkpoint of the same shapes: the total matches, nothing is recorded."""
    assert count_params(spec(name)).total == total
    assert spec(name).measured_params is None


def check_rounded(name: str, published: tuple[float, float]) -> None:
    """A rounded figure (total, relative tolerance of its rounding) as model cards print it."""
    total, tolerance = published
    assert count_params(spec(name)).total == pytest.approx(total, rel=tolerance)


def meta_model(config: dict):
    """The model transformers' AutoModelForCausalLM builds from a config.json dict, on the meta device (no
    memory); `architectures` and `quantization_config` are not constructor arguments."""
    import torch
    import transformers

    config = dict(config)
    model_type = config.pop("model_type")
    for key in ("architectures", "quantization_config"):
        config.pop(key, None)
    hf_config = transformers.AutoConfig.for_model(model_type, **config)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(hf_config)


def check_transformers_count(name: str) -> None:
    """trainplan's count of a catalog row equals the parameters transformers builds from the row's config.json."""
    model = meta_model(json.loads(spec(name).hf_config_json))
    assert count_params(spec(name)).total == sum(p.numel() for p in model.parameters())
