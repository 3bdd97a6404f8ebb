"""The data a published run trained on, read from its description: whether its packed samples attend
only within themselves, and which catalog dataset they came from.

Padding-free packing (each sample its own causal span in a packed sequence) goes by several names in
the frameworks and their READMEs: flash-attention "varlen" (XTuner `use_varlen_attn`, flash_attn_varlen_func),
"padding-free" / padding_free (TRL, ms-swift), LLaMA-Factory `neat_packing`, transformers'
DataCollatorWithFlattening, a "document mask" / "block-causal" mask (torchtune packed datasets,
torchtitan flex attention), cu_seqlens, Megatron `reset_attention_mask`. Any of them in the case's
attention, sequence-length note, framework or notes marks the run as padding-free. So does packing alone
where the framework only packs that way (PACKING_IS_PADDING_FREE): ms-swift, whose `packing` turns
`padding_free` on (swift/arguments/sft_args.py _check_padding_free; `megatron sft` the same), and
Megatron / NeMo fine-tuning, whose packed SFT and PEFT datasets carry each sample's cu_seqlens to the
attention ("each input sequence should be treated individually", NeMo docs features/optimizations/
sequence_packing; Megatron-Bridge docs/training/packed-sequences.md, PackedSeqParams in THD format);
Megatron pre-training packs documents under one causal mask (`--reset-attention-mask` off by default).
A name that is switched off (`use_varlen_attn=False`, "padding_free: false", "no varlen") does not count.

The dataset: the first word of those fields (and the case's `dataset`, when it has one) that names a
catalog dataset (trainplan.catalog.datasets.dataset_in_word: ids, Hugging Face ids, aliases, repository names
that are not a plain word).
"""

from __future__ import annotations

import re

from trainplan.cases.common import text
from trainplan.catalog.datasets import DatasetStats, dataset_in_word
from trainplan.enums import Framework

_PADDING_FREE = re.compile(r"varlen|padding[- _]?free|neat[_ ]packing|datacollatorwithflattening|cu_seqlens|"
                           r"document[- ](?:causal[- ])?mask|block[- ]causal|reset_attention_mask")
# a setting written off: `name=False`, `name: off`, "no name", "without name"
_OFF_AFTER = re.compile(r"\w*\s*[=:]\s*(?:false|off|no|0)\b")
_OFF_BEFORE = re.compile(r"\b(?:no|not|without|disabled?)\s+\S*$")
_FIELDS = ("dataset", "attention", "seq_len_note", "framework", "notes")
_PACKED = re.compile(r"\bpack(?:ed|ing)\b")
PACKING_IS_PADDING_FREE = frozenset({Framework.SWIFT, Framework.MEGATRON})
_WORD = re.compile(r"[a-z0-9][a-z0-9_./\-]*[a-z0-9]")


def _texts(case: dict) -> list[str]:
    out = [text(case.get(k)) for k in _FIELDS]
    out.append(text((case.get("parallel") or {}).get("other")))
    return [t for t in out if t]


def _said_on(t: str) -> bool:
    """A padding-free name in `t` that is not switched off (module docstring)."""
    return any(not _OFF_AFTER.match(t, m.end()) and not _OFF_BEFORE.search(t, 0, m.start())
               for m in _PADDING_FREE.finditer(t))


def padding_free(case: dict, framework: Framework | None = None) -> bool:
    """The case's packed samples attend only within themselves (module docstring): its words say so, or it
    packs under a framework that packs no other way (fine-tuning, for Megatron)."""
    texts = _texts(case)
    if any(_said_on(t) for t in texts):
        return True
    fine_tune = str(case.get("method")) != "pretrain"
    return framework in PACKING_IS_PADDING_FREE and fine_tune and any(_PACKED.search(t) for t in texts)


def dataset(case: dict) -> DatasetStats | None:
    """The catalog dataset the case's text names first (module docstring), None when none."""
    for t in _texts(case):
        for word in _WORD.findall(t):
            found = dataset_in_word(word)
            if found is not None:
                return found
    return None
