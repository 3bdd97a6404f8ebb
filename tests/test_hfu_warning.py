"""The warning when a predicted HFU is above the GPU's best measured matmul (MAMF)."""

from __future__ import annotations

from trainplan.estimation import estimate
from trainplan.estimation.estimate import hfu_warning
from trainplan.frozen import replace
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job


def test_an_hfu_above_the_mamf_is_flagged():
    est = estimate(resolve_job(JobOptions(model="llama-2-7b", method="full", gpu="h100", num_gpus=8, zero=3)))
    # H100 SXM bf16 MAMF is 80.3% of the 989 TFLOP/s peak (timing/efficiency.py MAMF_FRACTION): a
    # predicted 45% is below it, 85% above
    assert est.time.step.efficiency.mamf_fraction == 0.803
    assert not any(n.startswith("warning: predicted HFU") for n in est.notes)
    assert hfu_warning(replace(est.time, hfu=0.45), "h100-sxm") == []
    (line,) = hfu_warning(replace(est.time, hfu=0.85), "h100-sxm", calibrated=True)
    assert line.startswith("warning: predicted HFU 85.0% is above h100-sxm's best measured matmul (80% ")
    assert line.endswith("the calibration is too optimistic")


def test_an_fp32_full_fine_tune_is_offered_qlora_in_bf16():
    # Llama-3.1-8B full fine-tune in fp32 on one H100 does not fit (fp32 weights, grads and Adam states
    # are 16 B/param = 128 GB before activations). The QLoRA suggestion used to build an fp32 QLoRA setup,
    # which TrainingSetup refuses (bitsandbytes computes in 16 bits), and the whole estimate failed.
    est = estimate(resolve_job(JobOptions(model="llama-3.1-8b", method="full", gpu="h100", precision="fp32")))
    assert not est.memory.fits
    qlora = [s for s in est.suggestions if s.change.startswith("--method qlora")]
    assert qlora and qlora[0].change.endswith("--precision bf16") and qlora[0].fits
