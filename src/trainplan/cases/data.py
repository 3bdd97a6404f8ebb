"""The data a published run trained on, read from its description: whether its packed samples attend
only within themselves, and which catalog dataset they came from.

Padding-free packing (each sample its own causal span in a packed sequence) goes by several names in
the frameworks and their READMEs: flash-attention "varlen" (XTuner `use_varlen_attn`, flash_attn_varlen_func),
"padding-free" / padding_free (TRL, ms-swift), LLaMA-Factory `neat_packing`, transformers'
DataCollatorWithFlattening, a "document mask" / "block-causal" mask (torchtune packed datasets,
torchtitan flex attention), cu_seqlens, Megatron `reset_attention_mask`. Any of them in the case's
attention, sequence-length note, framework or notes marks the run as padding-free.

The dataset: the first word of those fields (and the case's `dataset`, when it has one) that names a
catalog dataset (trainplan.catalog.datasets.dataset_in_word: ids, Hugging Face ids, aliases, repository names
that are not a plain word).
"""

from __future__ import annotations

import re

from trainplan.cases.common import text
from trainplan.catalog.datasets import DatasetStats, dataset_in_word

_PADDING_FREE = re.compile(r"varlen|padding[- _]?free|neat[_ ]packing|datacollatorwithflattening|cu_seqlens|"
                           r"document[- ](?:causal[- ])?mask|block[- ]causal|reset_attention_mask")
_FIELDS = ("dataset", "attention", "seq_len_note", "framework", "notes")
_WORD = re.compile(r"[a-z0-9][a-z0-9_./\-]*[a-z0-9]")


def _texts(case: dict) -> list[str]:
    out = [text(case.get(k)) for k in _FIELDS]
    out.append(text((case.get("parallel") or {}).get("other")))
    return [t for t in out if t]


def padding_free(case: dict) -> bool:
    """The case's packed samples attend only within themselves (module docstring)."""
    return any(_PADDING_FREE.search(t) for t in _texts(case))


def dataset(case: dict) -> DatasetStats | None:
    """The catalog dataset the case's text names first (module docstring), None when none."""
    for t in _texts(case):
        for word in _WORD.findall(t):
            found = dataset_in_word(word)
            if found is not None:
                return found
    return None
