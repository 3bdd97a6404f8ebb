"""What a published case states outside its own fields, read where the time mapping needs it: the dtype its
compute runs in, its cluster's network, the GPU count its batch arithmetic implies, whether it names Megatron.
"""

from __future__ import annotations

import re

from trainplan.cases.common import Skip, text
from trainplan.cases.memorycase import layout_flags
from trainplan.cases.text import framework_of
from trainplan.enums import Framework
from trainplan.timing.links import described_link


_FP16 = re.compile(r"\b(fp16|float16|half|16-mixed|16-true)\b")
_BF16 = re.compile(r"\b(bf16|bfloat16)\b")


def names_fp16(case: dict) -> bool:
    """The case's compute (or its one precision text) names fp16 and not bf16."""
    prec = case.get("precision")
    said = text(prec.get("compute") or prec.get("weights")) if isinstance(prec, dict) else text(prec)
    return bool(_FP16.search(said)) and not _BF16.search(said)


# a cluster's network as sources state it: "4 * 100Gb RoCE", "8x200Gbps InfiniBand", "400G IB per GPU"
_NETWORK = re.compile(r"(?:\b\d{1,2}\s*[x×*]\s*)?\b\d+(?:\.\d+)?\s*G(?:b|bit)?(?:ps|/s)?E?\s*"
                      r"(?:RoCE(?:v2)?|InfiniBand|IB|Ethernet|EFA)\b(?:\s*per\s*(?:GPU|node))?", re.IGNORECASE)


# ... or by its rate alone, in bits ("400Gbps", "800 Gb/s between nodes"): a node's network, kind not said;
# case-sensitive, so that a bandwidth in bytes ("64 GB/s" PCIe, "900 GB/s" NVLink) is not read as one
_NETWORK_RATE = re.compile(r"(?:\b\d{1,2}\s*[x×*]\s*)?\b\d+(?:\.\d+)?\s*Gb(?:ps|/s|it/s)(?![\w/])"
                           r"(?:\s*per\s*(?:GPU|node))?")


def network_of(case: dict) -> str | None:
    """The inter-node network the case's text describes by its NICs or its rate in bits
    (timing.links.described_link), or None."""
    said = " ".join(str(case.get(k) or "") for k in ("notes", "parallel", "framework", "gpus"))
    found = _NETWORK.search(said) or _NETWORK_RATE.search(said)
    return found.group(0) if found and described_link(found.group(0)) is not None else None


def names_megatron(case: dict) -> bool:
    try:
        return framework_of(case) is Framework.MEGATRON
    except Skip:        # no profile: map_case's Megatron-class assumption is for time, not for the batch split
        return False


def _positive(*values: object) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values)


def implied_gpus(case: dict) -> tuple[int, str] | None:
    """(GPU count, how): the data-parallel size (`parallel.dp`, else global batch / (micro-batch x
    accumulation) when those are stated and divide) times the model-parallel degrees; None otherwise (and
    for GPU-hours runs, which need no count)."""
    if (case.get("measured") or {}).get("gpu_hours"):
        return None
    global_batch, micro, accum = (case.get(k) for k in ("global_batch", "micro_batch", "grad_accum"))
    dp = (case.get("parallel") or {}).get("dp")
    if _positive(dp):
        how = f"parallel.dp {dp}"
    elif _positive(global_batch, micro, accum) and global_batch % (micro * accum) == 0:
        dp = global_batch // (micro * accum)
        how = f"global batch {global_batch} / (micro-batch {micro} x accumulation {accum}) = {dp} data-parallel"
    else:
        return None
    flags = layout_flags(case)
    model_parallel = flags["tp"] * flags["pp"] * flags["cp"] * flags.get("ulysses", 1)
    return dp * model_parallel, f"{dp * model_parallel}, {how} x {model_parallel} model-parallel (tp x pp x cp)"
