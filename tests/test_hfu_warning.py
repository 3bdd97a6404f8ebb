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
