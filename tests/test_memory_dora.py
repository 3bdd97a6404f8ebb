"""peft's DoRA in the memory and time models (memory.dora, timing.traffic.dora_bytes_per_token,
timing.flops): what each adapted linear keeps for backward, its weight-norm transient, its traffic and
the base linear it reruns with dropout, derived by hand from peft 0.21 tuners/lora/dora.py and
variants.py and held to the trace of the real step.

tiny_llama (tests/fixtures/trace): hidden 64, MLP 176, 4 heads x 16, two layers; LoRA rank 8 on all seven
linears: per layer the outputs sum to 4 x 64 + 2 x 176 + 64 = 672, the weights to 4 x 64^2 + 3 x 64 x 176
= 50,176 and the inputs squared (eye(in)) to 6 x 64^2 + 176^2 = 55,552. Micro-batch 4 x 256 = 1,024 tokens.
peft keeps LoRA's adapters (and DoRA's magnitude) in fp32 (a = 4) over the 16-bit model (c = 2)."""

from __future__ import annotations

import peft  # noqa: F401  (the dev extra installs it: missing, the tests fail)
import pytest
import torch  # noqa: F401  (the dev extra installs it: missing, the tests fail)

from trainplan.catalog import resolve_gpu
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup
from trainplan.job.training import Layout
from trainplan.memory import estimate_memory
from trainplan.timing.flops import flops_per_token
from trainplan.timing.traffic import dora_bytes_per_token
from trainplan.trace import run_trace

TINY = "tests/fixtures/trace/tiny_llama.json"
GPU = resolve_gpu("h200")
OUTS, WEIGHTS, EYES, TOKENS, LAYERS = 672, 50_176, 55_552, 1_024, 2


def setup(**kw):
    opts = dict(model=TINY, method="lora", precision="bf16-pure", batch_size=4, seq_len=256,
                lora_targets="all-linear", lora_rank=8, lora_dropout=0.0)
    return build_setup(JobOptions(**{**opts, **kw}))


def activations(**kw) -> int:
    return estimate_memory(setup(**kw), Layout(gpu_id=GPU.id), GPU).components_bytes["activations"]


@pytest.mark.parametrize(("kw", "per_layer"), [
    # pure bf16, dropout off: base_result (the base output, 2 B) and lora_B's fp32 output (4 B) per output
    # element and token, and three fp32 out-vectors of the magnitude: 672 x 1,024 x 6 + 3 x 672 x 4
    ({}, OUTS * TOKENS * 6 + 3 * OUTS * 4),
    # autocast: lora_B's output in bf16 (2 B): 672 x 1,024 x 4 + 8,064
    ({"precision": "bf16"}, OUTS * TOKENS * 4 + 3 * OUTS * 4),
    # dropout on, pure bf16: base_result rerun on the fp32 dropped input (4 B) and W's fp32 copy (50,176 x 4)
    ({"lora_dropout": 0.1}, OUTS * TOKENS * 8 + WEIGHTS * 4 + 3 * OUTS * 4),
    # dropout on, autocast: F.linear in bf16 (2 B) keeps W's bf16 copy (50,176 x 2)
    ({"precision": "bf16", "lora_dropout": 0.1}, OUTS * TOKENS * 4 + WEIGHTS * 2 + 3 * OUTS * 4),
])
def test_what_dora_keeps_for_backward(kw, per_layer):
    assert activations(dora=True, **kw) - activations(**kw) == LAYERS * per_layer


@pytest.mark.parametrize("kw", [{}, {"precision": "bf16"}, {"lora_dropout": 0.1},
                                {"precision": "bf16", "lora_dropout": 0.1}])
def test_the_peak_matches_the_trace(kw):
    # the same setups traced (one fake-tensor step of the real HF + peft model): the peak, at the loss
    # backward, within 0.2% (without DoRA's saves the estimate was 21-33% low)
    s = setup(dora=True, **kw)
    est = estimate_memory(s, Layout(gpu_id=GPU.id), GPU).peak_allocated_bytes
    assert est == pytest.approx(run_trace(s).peak_allocated_bytes, rel=0.002)


@pytest.mark.parametrize(("kw", "phase"), [
    ({"batch_size": 1, "seq_len": 16}, "forward (layer 1 DoRA)"),
    ({"batch_size": 1, "seq_len": 16, "precision": "bf16"}, "forward (layer 1 DoRA)"),
    ({"batch_size": 1, "seq_len": 16, "grad_ckpt": "full"}, "backward (layer 0 DoRA recompute)"),
])
def test_short_sequences_peak_in_the_weight_norm(kw, phase):
    # with few tokens the weight-sized tensors of down_proj's weight norm (eye(176), B @ A, W + s BA) make
    # the peak, in the last layer's forward or in the recompute of a checkpointed one, as in the trace;
    # within 2.5% on a model this small (at 1B-7B sizes within 0.3%: benchmarks/trace_agreement.py)
    s = setup(dora=True, **kw)
    est = estimate_memory(s, Layout(gpu_id=GPU.id), GPU)
    traced = run_trace(s)
    assert est.peak_phase == phase and "down_proj.lora_magnitude_vector" in traced.peak_module
    assert est.peak_allocated_bytes == pytest.approx(traced.peak_allocated_bytes, rel=0.025)


def test_dora_traffic_per_token():
    # pure bf16 (a = 4, c = 2, w = 2; lora_B's output l = a, products p = 4): per output element a forward
    # 2l + 3c + 10p = 54 B and a backward 7p + 2l + 6c = 48 B: 672 x 2 x (54 + 48) = 137,088; per weight
    # element l + (w + a) + 6a = 34 B and per eye element 2a = 8 B, once a forward and micro-batch:
    # (50,176 x 34 + 55,552 x 8) x 2 / 1,024 tokens = 4,200
    assert dora_bytes_per_token(setup(dora=True)) == 137_088 + 4_200
    # autocast (l = c = 2): 2l + 3c + 10p = 50 B forward, 7p + 2l + 6c = 44 B backward: 672 x 2 x 94 =
    # 126,336; a weight element l + (l + a) + (w + a) + 6a = 38 B, an eye element 2a + 2c = 12 B:
    # (50,176 x 38 + 55,552 x 12) x 2 / 1,024 = 5,026
    assert dora_bytes_per_token(setup(dora=True, precision="bf16")) == 126_336 + 5_026
    # full recomputation runs the forward's share again: + 672 x 2 x 54 and the weight norm twice
    assert dora_bytes_per_token(setup(dora=True, grad_ckpt="full")) == 137_088 + 1344 * 54 + 2 * 4_200
    assert dora_bytes_per_token(setup()) == 0


def test_dora_with_dropout_reruns_the_base_linears():
    # F.linear(dropout(x), W) for every adapted linear: 2 x 50,176 FLOPs a token and layer forward, the same
    # again for its input gradient; with dropout off peft reuses the base output (none)
    plain, rerun = flops_per_token(setup(lora_dropout=0.1)), flops_per_token(setup(dora=True, lora_dropout=0.1))
    assert rerun.adapter_fwd - plain.adapter_fwd == 2 * WEIGHTS * LAYERS
    assert rerun.adapter_bwd - plain.adapter_bwd == 2 * WEIGHTS * LAYERS
    ckpt = flops_per_token(setup(dora=True, lora_dropout=0.1, grad_ckpt="full"))
    assert ckpt.recompute - flops_per_token(setup(lora_dropout=0.1, grad_ckpt="full")).recompute == 2 * WEIGHTS * LAYERS
    assert flops_per_token(setup(dora=True)).adapter_fwd == flops_per_token(setup()).adapter_fwd


def test_torchtune_dora_never_reruns_the_base_linear():
    # torchtune/modules/peft/dora.py DoRALinear.forward: dora_out = (m - 1) * base_out + m * lora_out * scaling
    # on the base output it computed, dropout or not; peft reruns F.linear(dropout(x), W) with dropout active
    peft_run = setup(dora=True, lora_dropout=0.1)
    tune = setup(dora=True, lora_dropout=0.1, framework="torchtune")
    assert flops_per_token(tune).adapter_fwd == flops_per_token(setup(lora_dropout=0.1, framework="torchtune")).adapter_fwd
    assert flops_per_token(peft_run).adapter_fwd > flops_per_token(setup(lora_dropout=0.1)).adapter_fwd


def test_qdora_dequantizes_the_weight_for_its_norm():
    # peft's dequantize_module_weight(base_layer) each forward: bitsandbytes NF4 reads 0.5 B and an fp32
    # absmax a 64-block and writes the 16-bit copy (2.5625 B a weight), which is then cast to the fp32 adapters'
    # dtype (2 + 4) where LoRA casts its bf16 weight (2 + 4): 2.5625 x 50,176 x 2 layers / 1,024 tokens more
    lora, qdora = setup(dora=True, precision="bf16"), setup(dora=True, precision="bf16", method="qlora")
    assert dora_bytes_per_token(qdora) - dora_bytes_per_token(lora) == pytest.approx(2.5625 * WEIGHTS * LAYERS / 1024)
