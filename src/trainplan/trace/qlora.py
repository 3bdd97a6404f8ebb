"""QLoRA without bitsandbytes: stand-ins of the right dtype and size for 4-bit weights.

bitsandbytes has no CPU build here, so every nn.Linear that `replace_with_bnb_linear` would
quantize (all but the output head) becomes a `FourBitLinear`: the weight is a uint8 tensor of
ceil(out x in / 2) bytes (two NF4/FP4 codes per byte, bitsandbytes `Params4bit`), plus the
quantization constants (QLoRA paper, Dettmers et al. 2023, section 2: one absmax per block of 64;
with double quantization the absmax are 8-bit with one fp32 constant per 256 of them, plus the
256-entry code book); every layer's QuantState also holds the 16-entry 4-bit code book. The
matmul follows bitsandbytes `MatMul4Bit`: the weight is dequantized to the compute dtype for the
matmul (a transient out x in tensor), the input is not saved, and the backward dequantizes again.
peft's bnb LoRA layer clones the base output ("defensively", peft `tuners/lora/bnb.py`);
`FourBitLoraLinear` does the same.
"""

from __future__ import annotations

import math

import torch
from peft.tuners.lora.layer import Linear as LoraLinear
from torch import nn

from trainplan.enums import Quant
from trainplan.job.training import TrainingSetup
from trainplan.trace.errors import TraceUnsupported

_NF4_ENTRIES = 16           # the 4-bit code book (NF4/FP4 values) each QuantState holds
_CODEBOOK_ENTRIES = 256     # bitsandbytes dynamic-quantization code book for the nested absmax
_NESTED_BLOCKSIZE = 256     # bitsandbytes double-quant block size


class _MatMul4Bit(torch.autograd.Function):
    """bitsandbytes MatMul4Bit: dequantize, matmul; saves only the packed weight."""

    @staticmethod
    def forward(ctx, x, packed, bias, out_features: int, in_features: int):
        weight = packed.new_zeros((out_features, in_features), dtype=x.dtype)  # dequantize_4bit
        ctx.save_for_backward(packed)
        ctx.shape = (out_features, in_features)
        return nn.functional.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad_output):
        (packed,) = ctx.saved_tensors
        grad_x = None
        if ctx.needs_input_grad[0]:
            weight = packed.new_zeros(ctx.shape, dtype=grad_output.dtype)   # dequantize again
            grad_x = torch.matmul(grad_output, weight)
        return grad_x, None, None, None, None


class FourBitLinear(nn.Linear):
    """Stand-in for bitsandbytes Linear4bit: packed uint8 weight + absmax constants as buffers."""

    def __init__(self, linear: nn.Linear, *, compute_dtype: torch.dtype, blocksize: int,
                 double_quant: bool) -> None:
        nn.Module.__init__(self)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.compute_dtype = compute_dtype
        device = linear.weight.device
        n = linear.in_features * linear.out_features
        self.weight = nn.Parameter(torch.zeros(math.ceil(n / 2), 1, dtype=torch.uint8, device=device),
                                   requires_grad=False)
        self.bias = linear.bias
        blocks = math.ceil(n / blocksize)
        self.register_buffer("code", torch.zeros(_NF4_ENTRIES, dtype=torch.float32, device=device))
        if double_quant:
            self.register_buffer("absmax", torch.zeros(blocks, dtype=torch.uint8, device=device))
            self.register_buffer("nested_absmax", torch.zeros(
                math.ceil(blocks / _NESTED_BLOCKSIZE), dtype=torch.float32, device=device))
            self.register_buffer("nested_code", torch.zeros(
                _CODEBOOK_ENTRIES, dtype=torch.float32, device=device))
        else:
            self.register_buffer("absmax", torch.zeros(blocks, dtype=torch.float32, device=device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """bitsandbytes Linear4bit.forward: cast to the compute dtype, matmul, cast back."""
        inp_dtype = x.dtype
        x = x.to(self.compute_dtype)
        bias = None if self.bias is None else self.bias.to(self.compute_dtype)
        out = _MatMul4Bit.apply(x, self.weight, bias, self.out_features, self.in_features)
        return out.to(inp_dtype)


class FourBitLoraLinear(LoraLinear):
    """peft's bnb Linear4bit LoRA forward (tuners/lora/bnb.py), vanilla LoRA and DoRA paths."""

    def forward(self, x: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        result = self.base_layer(x, *args, **kwargs)
        result = result.clone()
        for active_adapter in self.active_adapters:
            if active_adapter not in self.lora_A.keys():
                continue
            lora_A, lora_B = self.lora_A[active_adapter], self.lora_B[active_adapter]
            dropout, scaling = self.lora_dropout[active_adapter], self.scaling[active_adapter]
            # on a GPU `torch.is_autocast_enabled()` asks about CUDA autocast, on for mixed precision:
            # the trace asks the CPU autocast that stands in for it
            requires_conversion = not torch.is_autocast_enabled("cpu")
            if requires_conversion:
                expected_dtype = result.dtype
                x = self._cast_input_dtype(x, lora_A.weight.dtype)
            if active_adapter not in self.lora_variant:
                output = lora_B(lora_A(dropout(x))) * scaling
                if requires_conversion:
                    output = output.to(expected_dtype)
                result = result + output
            else:
                result = self.lora_variant[active_adapter].forward(
                    self, active_adapter=active_adapter, x=x, result=result)
                if requires_conversion:
                    result = result.to(expected_dtype)
        return result


def custom_lora_modules() -> dict[type[nn.Module], type[nn.Module]]:
    return {FourBitLinear: FourBitLoraLinear}


def quantize_linears(model: nn.Module, setup: TrainingSetup, notes: list[str]) -> None:
    """Replace every nn.Linear but the output head by a FourBitLinear stand-in, in place."""
    quant = setup.quant
    assert quant is not None
    if quant.kind is Quant.INT8:
        raise TraceUnsupported("QLoRA with int8 (LLM.int8) weights is not emulated; use --quant nf4 or fp4")
    compute_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16,
                     "fp32": torch.float32}[quant.compute_dtype]
    head = model.get_output_embeddings()
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear and child is not head:
                setattr(parent, name, FourBitLinear(child, compute_dtype=compute_dtype,
                                                    blocksize=quant.blocksize,
                                                    double_quant=quant.double_quant))
                replaced += 1
    notes.append(
        f"QLoRA: bitsandbytes is not runnable here; {replaced} linear layers stand in as packed uint8 "
        f"weights (0.5 byte/param) + absmax constants (block {quant.blocksize}"
        f"{', double-quantized' if quant.double_quant else ''}), dequantized to "
        f"{quant.compute_dtype} per matmul as bitsandbytes MatMul4Bit does")
