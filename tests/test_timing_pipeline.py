"""Pipeline bubbles per schedule (trainplan.timing.pipeline), values derived by hand."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplan.cases.text import virtual_stages
from trainplan.enums import PipeSchedule
from trainplan.errors import TrainplanError
from trainplan.job.defaults.torchtitan import schedule_named
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_timing, resolve_job
from trainplan.timing.pipeline import PassTimes, bubble_floor, bubble_fraction, default_schedule


def test_1f1b_and_gpipe_bubble_is_p_minus_1_over_m():
    # Narayanan et al. 2021 section 2.2.1: (p - 1) / m of the compute; p = 4, m = 8 -> 3/8
    for schedule in (PipeSchedule.ONE_F_ONE_B, PipeSchedule.GPIPE):
        assert bubble_fraction(schedule, stages=4, micro_batches=8) == pytest.approx(0.375)
    # the share of the step: 0.375 / 1.375 = 3 / 11 = 27.27%
    assert 0.375 / 1.375 == pytest.approx(3 / 11)


def test_interleaved_divides_by_the_chunks():
    # p = 8, m = 64, v = 5 (a Llama-3-70B Megatron recipe): 7 / 320 = 0.021875
    assert bubble_fraction(PipeSchedule.INTERLEAVED, stages=8, micro_batches=64, virtual_stages=5) == \
        pytest.approx(0.021875)


def test_zb_h1_is_a_third_of_1f1b_with_equal_passes():
    # Qi et al. 2024: (p - 1)(t_f + t_b - t_w) with t_f = t_b = t_w = 1, over m x 3: p = 4, m = 8 -> 3/24
    equal = PassTimes(forward=1.0, backward_input=1.0, backward_weight=1.0)
    assert bubble_fraction(PipeSchedule.ZB_H1, stages=4, micro_batches=8, passes=equal) == pytest.approx(0.125)
    assert bubble_fraction(PipeSchedule.ZB_H1, stages=4, micro_batches=8) == pytest.approx(0.375 / 3)


def test_zb_h1_without_weight_gradients_keeps_the_1f1b_bubble():
    # LoRA-like: t_w = 0 -> (p - 1)(t_f + t_b) / (m (t_f + t_b)) = (p - 1) / m = 3 / 8
    lora = PassTimes(forward=1.0, backward_input=1.0, backward_weight=0.0)
    assert bubble_fraction(PipeSchedule.ZB_H1, stages=4, micro_batches=8, passes=lora) == pytest.approx(0.375)
    # uneven passes: t_f 1, t_b 1.5, t_w 0.5 -> 3 x 2.0 / (8 x 3.0) = 0.25
    uneven = PassTimes(forward=1.0, backward_input=1.5, backward_weight=0.5)
    assert bubble_fraction(PipeSchedule.ZB_H1, stages=4, micro_batches=8, passes=uneven) == pytest.approx(0.25)


def test_zbv_and_no_pipeline_have_no_bubble():
    assert bubble_fraction(PipeSchedule.ZBV, stages=8, micro_batches=16) == 0.0
    assert bubble_fraction(PipeSchedule.ONE_F_ONE_B, stages=1, micro_batches=16) == 0.0


def test_default_schedule_follows_megatron():
    assert default_schedule(1) is PipeSchedule.ONE_F_ONE_B
    assert default_schedule(4) is PipeSchedule.INTERLEAVED
    assert schedule_named("zbvzerobubble") is schedule_named("ZBVZeroBubble") is PipeSchedule.ZBV


@settings(deadline=None)
@given(st.sampled_from(list(PipeSchedule)), st.integers(1, 64), st.integers(1, 512), st.integers(1, 8),
       st.floats(0.0, 4.0), st.floats(0.0, 4.0), st.floats(0.0, 4.0))
def test_the_planner_floor_never_exceeds_the_bubble(schedule, p, m, v, tf, tb, tw):
    passes = PassTimes(forward=tf, backward_input=tb, backward_weight=tw)
    exact = bubble_fraction(schedule, stages=p, micro_batches=m, virtual_stages=v, passes=passes)
    assert 0.0 <= bubble_floor(schedule, stages=p, micro_batches=m, virtual_stages=v) <= exact + 1e-12
    assert exact <= (p - 1) / m + 1e-12      # no schedule idles more than GPipe / 1F1B


def test_estimate_reports_the_schedule_and_its_bubble():
    # Llama-3.1-70B on 16 H100, tp 4 pp 4, 8 micro-batches: 1F1B's bubble is 3/8 of the compute,
    # so bubble_s / compute_s = 0.375 exactly
    base = dict(model="llama-3.1-70b", method="full", gpu="h100", num_gpus=16, nodes=2, framework="megatron",
                tp=4, pp=4, grad_accum=8)
    est = resolve_job(JobOptions(**base))
    from trainplan.estimation import estimate

    step = estimate(est).time.step.breakdown
    assert step.bubble_s / step.compute_s == pytest.approx(0.375)
    zbv = estimate(resolve_job(JobOptions(**base, pp_schedule="zbv"))).time.step.breakdown
    assert zbv.bubble_s == 0.0
    assert build_timing(JobOptions(**base, pp_schedule="ZB-H1")).pp_schedule is PipeSchedule.ZB_H1


def test_a_schedule_without_a_pipeline_or_unknown_is_refused():
    with pytest.raises(TrainplanError, match="--pp-schedule"):
        resolve_job(JobOptions(model="llama-2-7b", method="full", gpu="h100", pp_schedule="zbv"))
    with pytest.raises(TrainplanError, match="not one of"):
        resolve_job(JobOptions(model="llama-2-7b", method="full", gpu="h100", pp_schedule="bogus"))


def test_virtual_stages_read_from_the_case_text():
    assert virtual_stages({"other": "VP=5; DP derived as GPUs/(TP*PP*CP)"}) == 5
    assert virtual_stages({"other": "VP=n/a; DP derived"}) == 1
    assert virtual_stages({"vpp": 3}) == 3
    assert virtual_stages({"other": "virtual pipeline 4"}) == 4
    assert virtual_stages({}) == 1


def test_schedules_that_need_their_chunks_are_checked():
    base = dict(model="llama-3.1-70b", method="full", gpu="h100", num_gpus=16, nodes=2, framework="megatron",
                tp=4, pp=4, zero=1)
    with pytest.raises(TrainplanError, match="give --vpp 2 or more"):
        resolve_job(JobOptions(**base, pp_schedule="interleaved-1f1b"))
    with pytest.raises(TrainplanError, match="two model chunks per rank"):
        resolve_job(JobOptions(**base, pp_schedule="zbv", vpp=4))
    # interleaved with 2 chunks, 8 micro-batches: (4 - 1) / (2 x 8) = 0.1875 of the compute
    from trainplan.estimation import estimate

    step = estimate(resolve_job(JobOptions(**base, grad_accum=8, vpp=2, pp_schedule="interleaved-1f1b"))).time.step
    assert step.breakdown.bubble_s / step.breakdown.compute_s == pytest.approx(0.1875)
