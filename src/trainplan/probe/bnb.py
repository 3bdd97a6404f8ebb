"""bitsandbytes on a GPU: real 4-bit / 8-bit linear layers for QLoRA and the 8-bit optimizers.

The quantization follows transformers' `replace_with_bnb_linear` + loading: every nn.Linear but
the output head becomes a `bnb.nn.Linear4bit` (NF4/FP4, double quantization as
`compress_statistics`, the QLoRA paper's block of 64) whose `Params4bit` weight is quantized when
it moves to the GPU; int8 becomes `bnb.nn.Linear8bitLt` (LLM.int8, threshold 6.0). The random
16-bit weights are quantized layer by layer and freed; the probe empties the cache afterwards, as
a model loaded from a checkpoint never held them all.
"""

from __future__ import annotations

from trainplan.enums import Optimizer, Quant
from trainplan.errors import TrainplanError
from trainplan.job.training import TrainingSetup

_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
LLM_INT8_THRESHOLD = 6.0   # transformers BitsAndBytesConfig.llm_int8_threshold default


def available() -> bool:
    try:
        import bitsandbytes  # noqa: F401
    except Exception:   # missing, or present without a usable CUDA library
        return False
    return True


def require(what: str, device: str) -> None:
    if device != "cuda":
        raise TrainplanError(f"{what} needs bitsandbytes on a CUDA device; --device cpu cannot run it "
                             f"(trainplan trace emulates its memory on the CPU)")
    if not available():
        raise TrainplanError(f"{what} needs bitsandbytes (pip install bitsandbytes), which is not "
                             f"importable here")


def _four_bit(linear, quant, compute_dtype):
    import bitsandbytes as bnb
    import torch

    device = linear.weight.device
    layer = bnb.nn.Linear4bit(linear.in_features, linear.out_features, bias=linear.bias is not None,
                              compute_dtype=compute_dtype, compress_statistics=quant.double_quant,
                              quant_type=quant.kind.value, quant_storage=torch.uint8, device="meta")
    layer.weight = bnb.nn.Params4bit(linear.weight.data, requires_grad=False, quant_type=quant.kind.value,
                                     compress_statistics=quant.double_quant, blocksize=quant.blocksize,
                                     module=layer)
    if linear.bias is not None:
        layer.bias = torch.nn.Parameter(linear.bias.data.to(compute_dtype), requires_grad=False)
    return layer.to(device)


def _eight_bit(linear):
    import bitsandbytes as bnb
    import torch

    device = linear.weight.device
    layer = bnb.nn.Linear8bitLt(linear.in_features, linear.out_features, bias=linear.bias is not None,
                                has_fp16_weights=False, threshold=LLM_INT8_THRESHOLD, device="meta")
    # Int8Params quantizes on a move from the host to the GPU only
    layer.weight = bnb.nn.Int8Params(linear.weight.data.cpu(), requires_grad=False, has_fp16_weights=False)
    if linear.bias is not None:
        layer.bias = torch.nn.Parameter(linear.bias.data, requires_grad=False)
    return layer.to(device)


def quantize_linears(model, setup: TrainingSetup, notes: list[str]) -> None:
    """Replace every nn.Linear but the output head by its bitsandbytes layer, in place."""
    import torch
    from torch import nn

    quant = setup.quant
    assert quant is not None
    compute_dtype = getattr(torch, _DTYPES[quant.compute_dtype])
    head = model.get_output_embeddings()
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear and child is not head:
                new = _eight_bit(child) if quant.kind is Quant.INT8 else _four_bit(child, quant, compute_dtype)
                setattr(parent, name, new)
                replaced += 1
    torch.cuda.empty_cache()
    import bitsandbytes

    notes.append(f"QLoRA: {replaced} linear layers quantized by bitsandbytes {bitsandbytes.__version__} "
                 f"({quant.kind.value}{', double quantization' if quant.double_quant else ''}, "
                 f"compute dtype {quant.compute_dtype})")


def make_optimizer(kind: Optimizer, groups: list[dict], lr: float):
    """HF Trainer's bitsandbytes optimizers: adamw_bnb_8bit, paged_adamw_8bit, lion_32bit."""
    import bitsandbytes as bnb

    if kind is Optimizer.ADAMW_8BIT:
        return bnb.optim.AdamW8bit(groups, lr=lr)
    if kind is Optimizer.PAGED_ADAMW_8BIT:
        return bnb.optim.PagedAdamW8bit(groups, lr=lr)
    if kind is Optimizer.LION:
        return bnb.optim.Lion(groups, lr=lr)
    raise TrainplanError(f"--optimizer {kind} is not a bitsandbytes optimizer")


BNB_OPTIMIZERS = frozenset({Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT, Optimizer.LION})
