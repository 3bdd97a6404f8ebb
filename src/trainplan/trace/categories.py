"""What the live memory at the peak is made of: categories and modules.

Every storage alive at the peak event is put in one category:
- parameters: parameters and buffers (QLoRA's packed weights and constants too);
- gradients: storages that are a parameter's .grad after backward (identified by identity);
- optimizer_state: the optimizer's state tensors (AdamW's host-side step counters count 0 bytes);
- activations: created during the forward pass (and the recomputation of checkpointed layers in
  backward), and the input batch; at a backward peak these are the tensors saved for backward;
- temporaries: created during backward or the optimizer step and not a gradient or state.
(torch.distributed._tools.mem_tracker uses the same split: ACT from forward, TEMP from backward.)
"""

from __future__ import annotations

from trainplan.trace.modules import ROOT
from trainplan.trace.names import clean_name
from trainplan.trace.tracker import StorageRecord

CATEGORIES: tuple[str, ...] = ("parameters", "gradients", "optimizer_state", "activations",
                               "temporaries")
_KIND_CATEGORY = {"parameters": "parameters", "gradients": "gradients",
                  "optimizer_state": "optimizer_state", "inputs": "activations"}
TOP_LEVEL = ROOT   # tensors made by the outermost model itself (the loss) or outside any module


def category(record: StorageRecord) -> str:
    if record.kind:
        return _KIND_CATEGORY[record.kind]
    if record.phase == "forward" or record.recompute:
        return "activations"
    return "temporaries"


def live_at(records: list[StorageRecord], event: int) -> list[StorageRecord]:
    return [r for r in records if r.born <= event and (r.died is None or r.died > event)]


def breakdown(records: list[StorageRecord], event: int) -> dict[str, int]:
    """Bytes per category among the storages alive at `event`; the values sum to the total."""
    totals = dict.fromkeys(CATEGORIES, 0)
    for record in live_at(records, event):
        totals[category(record)] += record.nbytes
    return totals


def top_level(fqn: str) -> str:
    """The per-module view's unit: a decoder layer ('model.layers.3'), else the first two levels
    ('model.embed_tokens', 'lm_head'), else TOP_LEVEL."""
    parts = clean_name(fqn).split(".") if fqn else []
    for index, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[: index + 1])
    return ".".join(parts[:2]) or TOP_LEVEL


def per_module(records: list[StorageRecord], event: int) -> dict[str, dict[str, int]]:
    """Bytes alive at `event` per top-level module and category: parameters, gradients and state
    belong to the module that owns the parameter, other tensors to the module that created them."""
    view: dict[str, dict[str, int]] = {}
    for record in live_at(records, event):
        if record.nbytes == 0:
            continue
        row = view.setdefault(top_level(record.module), {})
        cat = category(record)
        row[cat] = row.get(cat, 0) + record.nbytes
    return dict(sorted(view.items(), key=lambda item: -sum(item[1].values())))
