"""peft keeps LoRA adapters in fp32 over a pure 16-bit model (get_peft_model(autocast_adapter_dtype=True),
its default since peft 0.12): the frameworks that keep that default get 4-byte adapters in memory and an
fp32 adapter chain in time; LLaMA-Factory (autocast_adapter_dtype = not pure_bf16), torchtune and litgpt
(their own adapters) stay 16-bit. The memory side is held to the trace in tests/test_trace_agreement.py."""

from __future__ import annotations

import pytest

from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup
from trainplan.memory.regime import resolve_regime
from trainplan.timing.traffic import adapter_bytes_per_token


def _setup(framework: str):
    return build_setup(JobOptions(model="llama-3.2-1b", method="lora", precision="bf16-pure", framework=framework,
                                  lora_targets="q_proj", lora_dropout=0.05, grad_ckpt="none"))


@pytest.mark.parametrize("framework, adapter_bytes", [("hf", 4), ("axolotl", 4), ("swift", 4),
                                                      ("llamafactory", 2), ("torchtune", 2)])
def test_adapter_dtype_by_framework(framework, adapter_bytes):
    assert resolve_regime(_setup(framework)).adapter_bytes == adapter_bytes


def test_fp32_adapter_chain_traffic_by_hand():
    # Llama-3.2-1B: 16 layers, q_proj 2048 -> 2048; a forward and a backward, no recompute.
    # fp32 chain: forward 19 B per input element (cast 2 + 4, dropout 4 + 4 + 1, lora_A reads 4) and 28 per
    # output element; backward 29 per input element (A's input gradient 4, its weight gradient 4, dropout
    # 4 + 4 + 1, the cast back 4 + 2, the add to the base's input gradient 2 + 2 + 2) and 28 per output
    # element (the casts 6 + 6, scaling 8, B's two gradients 4 + 4):
    # (19 + 29 + 28 + 28) x 2048 x 16 = 3,407,872 B per token.
    assert adapter_bytes_per_token(_setup("hf")) == 104 * 2048 * 16
    # 16-bit adapters: 2 (1 + 2 dropout) = 6 per input and 8 per output element: 14 x 2048 x 16 x 3
    assert adapter_bytes_per_token(_setup("llamafactory")) == 14 * 2048 * 16 * 3
