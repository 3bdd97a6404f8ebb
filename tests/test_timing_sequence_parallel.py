"""Tensor parallelism without sequence parallelism: the norms and residual adds, outside Megatron's
tensor-parallel region, run on the whole sequence on every rank (timing.parts.replicated_outside_tp_s).
Values derived by hand from the layer's element counts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trainplan import catalog
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.timing import parts
from trainplan.timing.efficiency import Efficiency, KernelStack


def test_replicated_share_of_a_llama_layer():
    # Llama-2-7B: h 4096, gated MLP 11008, 32 heads and 32 KV heads of 128, RoPE.
    # outside tp: 2 norms x 2h + 2 residual adds x 3h = 10h = 40,960 elements a token
    # inside: SwiGLU 3 x 11008 = 33,024, RoPE 2 x 128 x (32 + 32) = 16,384
    spec = catalog.resolve_model("llama-2-7b")
    assert parts.replicated_share(spec) == pytest.approx(40960 / (40960 + 33024 + 16384))


def test_replicated_share_of_a_gpt2_layer():
    # GPT-2: h 768, GELU MLP 3072 (read and write 2 x 3072), learned positions (no RoPE)
    spec = catalog.resolve_model("gpt2")
    assert parts.replicated_share(spec) == pytest.approx(7680 / (7680 + 6144))


def test_replicated_seconds_by_hand():
    # 6 GFLOP of linears a token, 8192 tokens, 312 TFLOP/s at 60%: 0.262564 s of linears, of which
    # 1 - 0.87 is non-matmul; Llama-2-7B's share of it outside tp, done once more at tp 2 and 3 more at tp 4
    spec = catalog.resolve_model("llama-2-7b")
    ft = SimpleNamespace(linear_hardware=6e9)
    eff = Efficiency(value=0.6, attention=0.5, mamf_fraction=0.869, mamf_known=True, sustained=0.94, width=0.87,
                     tokens=0.9, ridge=153.0, stack=KernelStack.FUSED, peak_flops_per_s=312e12, peak_dtype="bf16",
                     attention_peak_flops_per_s=312e12)
    linear = 6e9 * 8192 / (312e12 * 0.6)
    share = 40960 / 90368
    assert parts.replicated_outside_tp_s(spec, ft, eff, 8192, 2) == pytest.approx(linear * 0.13 * share)
    assert parts.replicated_outside_tp_s(spec, ft, eff, 8192, 4) == pytest.approx(3 * linear * 0.13 * share)
    assert parts.replicated_outside_tp_s(spec, ft, eff, 8192, 1) == 0.0


def _step(**kw):
    job = resolve_job(JobOptions(model="llama-2-7b", gpu="a100-sxm4-80gb", num_gpus=8, tp=2, framework="megatron",
                                 **kw), calibration=None, priced=False)
    from trainplan.timing.estimate import estimate_time
    return estimate_time(job.setup, job.layout, job.gpu, job.workload, job.timing)


def test_without_sequence_parallelism_the_step_is_longer_and_says_why():
    on, off = _step(sequence_parallel=True), _step(sequence_parallel=False)
    assert off.step.breakdown.compute_s > on.step.breakdown.compute_s
    assert any(n.startswith("tensor parallel 2 without sequence parallelism: norms and residual adds")
               for n in off.step.notes)
    assert not any("without sequence parallelism" in n for n in on.step.notes)
