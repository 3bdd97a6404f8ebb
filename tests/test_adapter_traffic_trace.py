"""The fp32 LoRA chain's bytes (trainplan.timing.traffic.adapter_chain_bytes) against what autograd runs: a
peft LoRA Linear with fp32 adapters (get_peft_model's autocast_adapter_dtype, its default) over a bf16 base
layer, every aten op of its forward and backward logged with the bytes of its tensor arguments and results
(TorchDispatchMode), the base layer's own ops taken out by running it with the adapter disabled.

Two shapes, one wider at the input and one at the output, give the per-input-element and per-output-element
bytes apart. The rank is 1 so that the adapter weights and the rank-sized intermediates are a fraction of a
percent of the traffic; no dropout (on CPU dropout is a bernoulli mask in the input's dtype, on CUDA one fused
kernel with a 1-byte mask, which is what the formula counts)."""

from __future__ import annotations

import pytest

import torch   # the trace extra (tests need it: never skipped)
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from trainplan.timing.traffic import adapter_chain_bytes

TOKENS = 256


class _Bytes(TorchDispatchMode):
    """Sum of the bytes every aten op reads (tensor arguments) and writes (tensor results); views and
    detaches move nothing."""

    FREE = ("aten.t.", "aten.detach.", "aten.view.", "aten._unsafe_view.", "aten.expand.")

    def __init__(self):
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not str(func).startswith(self.FREE):
            self.total += sum(a.numel() * a.element_size()
                              for a in tree_leaves((args, kwargs, out)) if isinstance(a, torch.Tensor))
        return out


def _traffic(in_features: int, out_features: int, *, adapter: bool) -> tuple[int, int]:
    """(forward, backward) bytes of a bf16 Linear with (or without) its fp32 LoRA adapter."""
    from peft import LoraConfig, get_peft_model

    class One(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(in_features, out_features, bias=False)

        def forward(self, x):
            return self.proj(x)

    torch.manual_seed(0)
    model = get_peft_model(One().to(torch.bfloat16), LoraConfig(r=1, lora_alpha=2, target_modules=["proj"],
                                                                lora_dropout=0.0))
    assert model.base_model.model.proj.lora_A["default"].weight.dtype == torch.float32   # peft's fp32 adapters
    x = torch.randn(TOKENS, in_features, dtype=torch.bfloat16, requires_grad=True)
    forward, backward = _Bytes(), _Bytes()
    if adapter:
        with forward:
            y = model(x)
    else:
        with model.disable_adapter(), forward:
            y = model(x)
    with backward:
        y.backward(torch.ones_like(y))
    return forward.total, backward.total


@pytest.mark.parametrize("in_features, out_features", [(512, 2048), (2048, 512)])
def test_fp32_chain_bytes_are_what_autograd_moves(in_features, out_features):
    (fwd_in, fwd_out), (bwd_in, bwd_out) = adapter_chain_bytes(fp32_chain=True, dropout=False)
    with_adapter = _traffic(in_features, out_features, adapter=True)
    base = _traffic(in_features, out_features, adapter=False)
    fwd, bwd = (a - b for a, b in zip(with_adapter, base))
    assert fwd / TOKENS == pytest.approx(fwd_in * in_features + fwd_out * out_features, rel=0.01)
    assert bwd / TOKENS == pytest.approx(bwd_in * in_features + bwd_out * out_features, rel=0.01)


def test_fp32_chain_by_hand():
    """The counts themselves (traffic.adapter_bytes_per_token's docstring): forward 2 + 4 (cast) + 4 (A) per
    input element and 4 (B) + 8 (scaling) + 10 (add) + 6 (cast back) per output element; backward 6 + 6 + 8 +
    8 per output element and 4 + 4 + 6 + 6 per input element; dropout 4 + 4 + 1 each way."""
    assert adapter_chain_bytes(fp32_chain=True, dropout=False) == ((10.0, 28.0), (20.0, 28.0))
    assert adapter_chain_bytes(fp32_chain=True, dropout=True) == ((19.0, 28.0), (29.0, 28.0))
