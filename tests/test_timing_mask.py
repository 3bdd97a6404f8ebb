"""The dense 4D mask SDPA's memory-efficient kernel reads (trainplan.timing.mask), by hand."""

from __future__ import annotations

import pytest

from conftest import a100_80, tiny_llama
from trainplan.enums import Attention, Framework, GradCkpt, Method, Precision
from trainplan.frozen import replace
from trainplan.job.training import Implementation, Layout, LoraConfig, QuantConfig, TrainingSetup
from trainplan.timing.estimate import TimingOptions, step_time
from trainplan.timing.flops import flops_per_token
from trainplan.timing.mask import (
    MASK_BWD_BW_FRACTION,
    MASK_FWD_BW_FRACTION,
    dense_mask_s,
    mask_bytes_per_token_pass,
    mask_element_bytes,
)

A100 = a100_80()                  # 2039 GB/s
TINY = tiny_llama(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=4, head_dim=16,   # 2 layers x 4 heads
                  intermediate_size=128, vocab_size=100)


def _setup(**kw) -> TrainingSetup:
    kw.setdefault("impl", Implementation(padding_mask=True))
    kw.setdefault("attention", Attention.SDPA)
    kw.setdefault("grad_ckpt", GradCkpt.FULL)
    return TrainingSetup(model=TINY, method=kw.pop("method", Method.FULL), batch_size=2, seq_len=512,
                         precision=kw.pop("precision", Precision.BF16_PURE), framework=Framework.PYTORCH, **kw)


def test_bandwidth_fractions_from_the_published_benchmark():
    # pytorch PR #137036, SDPA efficient, B=4 H=16 M=N=16384: one mask read is 4 x 16 x 16384^2 x 2 B =
    # 34,359,738,368 B; it adds 47663.8069 - 31588.3846 = 16075.4223 us forward -> 2.13743 TB/s = 0.638032
    # of 3.35 TB/s, and 116762.6266 - 105105.9494 = 11656.6772 us backward -> 2.94765 TB/s = 0.879894
    assert MASK_FWD_BW_FRACTION == pytest.approx(0.638032, rel=1e-5)
    assert MASK_BWD_BW_FRACTION == pytest.approx(0.879894, rel=1e-5)


def test_mask_bytes_per_token_and_pass():
    # 2 layers x 4 heads x 512 keys x 2 B (bf16) = 8,192 B per token and pass
    assert mask_bytes_per_token_pass(_setup(), 512) == 8192
    # no padding in the mask, or no SDPA: nothing read (flash takes no mask; eager's add is in its own bytes)
    assert mask_bytes_per_token_pass(_setup(impl=Implementation()), 512) == 0.0
    assert mask_bytes_per_token_pass(_setup(attention=Attention.EAGER), 512) == 0.0
    assert mask_bytes_per_token_pass(_setup(attention=Attention.FLASH), 512) == 0.0
    # Megatron's TE attention takes no transformers mask
    assert mask_bytes_per_token_pass(replace(_setup(), framework=Framework.MEGATRON), 512) == 0.0


def test_mask_dtype_follows_the_attention():
    assert mask_element_bytes(_setup()) == 2
    assert mask_element_bytes(_setup(precision=Precision.FP32)) == 4
    # QLoRA over fp32 non-quantized weights, no autocast: the residual stream and the mask are fp32
    qlora = _setup(method=Method.QLORA, impl=Implementation(padding_mask=True, load_fp32=True),
                   lora=LoraConfig(rank=8, alpha=16, targets=("q_proj", "v_proj")), quant=QuantConfig())
    assert mask_element_bytes(qlora) == 4


def test_dense_mask_seconds_by_hand():
    # full recomputation: the forward and its rerun read the mask, then the backward once; 1,000 tokens
    # on A100 (2039 GB/s): 8,192,000 B x (2 / (0.638032 x 2039e9) + 1 / (0.879894 x 2039e9))
    setup = _setup()
    ft = flops_per_token(setup)
    expected = 8192 * 1000 * (2 / (0.638032 * 2039e9) + 1 / (0.879894 * 2039e9))
    assert dense_mask_s(setup, A100, ft, 1000) == pytest.approx(expected, rel=1e-5)
    assert expected == pytest.approx(1.71600e-5, rel=1e-4)
    # without checkpointing only the forward and the backward read it
    plain = replace(setup, grad_ckpt=GradCkpt.NONE)
    assert dense_mask_s(plain, A100, flops_per_token(plain), 1000) == pytest.approx(
        8192 * 1000 * (1 / (0.638032 * 2039e9) + 1 / (0.879894 * 2039e9)), rel=1e-5)


def test_step_adds_the_mask_reads_and_says_so(monkeypatch):
    options = TimingOptions(efficiency=0.5)
    layout = Layout(gpu_id=A100.id)
    masked = step_time(_setup(), layout, A100, options=options)
    expected = dense_mask_s(_setup(), A100, masked.per_token, 2 * 512)     # one micro-batch of 2 x 512 tokens
    assert expected > 0
    assert any("reads the 4D mask for every head" in n and "PR #137036" in n for n in masked.notes)
    # the step without the term: exactly the mask's seconds less compute
    monkeypatch.setattr("trainplan.timing.parts.dense_mask_s", lambda *a, **k: 0.0)
    without = step_time(_setup(), layout, A100, options=options)
    assert masked.breakdown.compute_s - without.breakdown.compute_s == pytest.approx(expected, rel=1e-9)
    unmasked = step_time(_setup(impl=Implementation()), layout, A100, options=options)
    assert not any("4D mask" in n for n in unmasked.notes)
