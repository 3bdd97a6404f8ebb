"""A run's optimizer read from its description: which optimizer holds its memory (cases.text's rules for the
other fields), GaLore's and APOLLO's rank and per-layer step, and the optimizer a framework builds for a name.
Nothing here knows a case or a source."""

from __future__ import annotations

import re
from typing import Any

from trainplan.cases.common import Skip, text
from trainplan.enums import Framework, Optimizer

# optimizers whose states are not Adam's, SGD's or Adafactor's shapes (low-rank projections, per-block
# learning rates, QK-clipped Muon, fused updates without states)
_UNMODELLED_OPTIMIZERS = ("muonclip", "lomo", "adalomo", "sophia")


def memory_optimizer(value: Any) -> tuple[Optimizer | None, str | None]:
    """The optimizer as it holds memory, with a note where the mapping is approximate. bitsandbytes'
    32-bit PagedAdamW keeps its states in CUDA unified memory like the 8-bit paged variant: outside
    PyTorch's allocator either way, so paged-adamw-8bit is the closest."""
    t = text(value)
    if not t.strip():
        return None, "optimizer not stated: the framework profile's default"
    if re.search(r"(?<![a-z])galore", t):
        eight = "8bit" in t or "8-bit" in t
        return (Optimizer.GALORE_ADAMW_8BIT if eight else Optimizer.GALORE_ADAMW), None
    if re.search(r"(?<![a-z])muon(?![a-z])", t):
        return Optimizer.MUON, None
    if re.search(r"(?<![a-z])apollo(?![a-z])", t):
        return Optimizer.APOLLO_ADAMW, None
    if re.search(r"(?<![a-z])adam[-_ ]?mini(?![a-z])", t):
        return Optimizer.ADAM_MINI, None
    unmodelled = [w for w in _UNMODELLED_OPTIMIZERS if re.search(r"(?<![a-z])" + w + r"(?![a-z])", t)]
    if unmodelled:
        raise Skip(f"optimizer {value!r}: {unmodelled[0]} keeps states trainplan does not model")
    if "paged" in t and "8bit" not in t and "8-bit" not in t:
        return Optimizer.PAGED_ADAMW_8BIT, ("32-bit paged AdamW counted as paged-adamw-8bit: paged states "
                                            "live outside PyTorch's allocator either way")
    if "paged" in t:
        return Optimizer.PAGED_ADAMW_8BIT, None
    if "8-bit" in t or "8bit" in t:
        return Optimizer.ADAMW_8BIT, None
    for word, opt in (("badam", Optimizer.BADAM), ("adafactor", Optimizer.ADAFACTOR), ("sgd", Optimizer.SGD),
                      ("lion", Optimizer.LION)):
        if word in t:
            return opt, None
    if "fused" in t or re.sub(r"[\s_-]+", "", t) in ("adam", "adamw"):     # "AdamW", "Adam W", "adam-w"
        return Optimizer.ADAMW_FUSED, None
    if "adam" in t:
        return Optimizer.ADAMW, None
    return None, f"optimizer {value!r} not recognised: the framework profile's default"


_GALORE_RANK = re.compile(r"rank[\s=:_]*(\d+)")
_PER_LAYER = re.compile(r"per[_ -]?layer|layer[_ -]?wise")


def galore_of(value: Any) -> tuple[int | None, bool]:
    """(the projection rank, a per-layer step) a GaLore optimizer's text states: "rank 1024", "rank=128";
    "per-layer" / "layerwise" (GaLore's galore_adamw8bit_per_layer, HF galore_adamw_layerwise, LLaMA-Factory
    galore_layerwise: a post-accumulate-grad hook steps each weight in the backward)."""
    t = text(value)
    rank = _GALORE_RANK.search(t)
    return (int(rank.group(1)) if rank else None), bool(_PER_LAYER.search(t))


def galore_flags(value: Any, notes: list[str], *, apollo: bool = False) -> dict[str, Any]:
    """The job flags a GaLore (or, with `apollo`, an APOLLO) optimizer's text gives (its rank,
    optimizer_in_backward), a note for each."""
    rank, per_layer = galore_of(value)
    name, key = ("APOLLO", "apollo_rank") if apollo else ("GaLore", "galore_rank")
    out: dict[str, Any] = {}
    if rank:
        out[key] = rank
        notes.append(f"{name} rank {rank} as the optimizer text states")
    else:
        notes.append(f"{name} rank not stated: 128 (HF Trainer's optim_args default)")
    if per_layer:
        out["optimizer_in_backward"] = True
        notes.append(f"{name} per layer: each weight steps in a post-accumulate-grad hook, its gradient freed at once")
    return out


def framework_optimizer(optimizer: Optimizer | None, framework: Framework) -> Optimizer | None:
    """The optimizer as the framework implements it: Megatron-Core has no torch AdamW, its Adam is
    Transformer Engine's FusedAdam (else Apex's; megatron/core/optimizer/__init__.py), so an Adam a
    Megatron run names is the fused one."""
    if framework is Framework.MEGATRON and optimizer is Optimizer.ADAMW:
        return Optimizer.ADAMW_FUSED
    return optimizer
