"""DualPipe (DeepSeek-V3 technical report section 3.2.1 and Table 2; deepseek-ai/DualPipe README and
dualpipe/dualpipe.py): its bubble, its ranks' stages and parameters, its expert all-to-all overlap, its
requirements, and a case that names it."""

from __future__ import annotations

import pytest

import trainplan
from trainplan.cases import timecase
from trainplan.cases.normalize import normalized
from trainplan.cases.text import schedule_in_text
from trainplan.enums import PipeSchedule
from trainplan.errors import TrainplanError
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_parallel, build_setup
from trainplan.job.training import Layout
from trainplan.memory.stages import pipeline_stages
from trainplan.timing.pipeline import PassTimes, bubble_floor, bubble_fraction


def test_the_bubble_is_half_the_stages_less_one_of_f_and_b_plus_b_less_3w():
    # (p/2 - 1)(F&B + B - 3W), B the full backward (t_b + t_w), F&B = t_f + t_b + t_w: (p/2 - 1)(t_f + 2 t_b - t_w)
    # over m (t_f + t_b + t_w). p = 16, m = 120, equal passes: 7 x 2 / 360 = 0.03889 (1F1B: 15 / 120 = 0.125)
    equal = PassTimes(forward=1.0, backward_input=1.0, backward_weight=1.0)
    assert bubble_fraction(PipeSchedule.DUALPIPE, stages=16, micro_batches=120, passes=equal) == pytest.approx(14 / 360)
    # recomputation in t_b: t_f 1, t_b 2, t_w 1: 7 x (1 + 4 - 1) / (120 x 4) = 28 / 480
    ckpt = PassTimes(forward=1.0, backward_input=2.0, backward_weight=1.0)
    assert bubble_fraction(PipeSchedule.DUALPIPE, stages=16, micro_batches=120, passes=ckpt) == pytest.approx(28 / 480)
    # two stages: p/2 - 1 = 0, no bubble
    assert bubble_fraction(PipeSchedule.DUALPIPE, stages=2, micro_batches=4, passes=equal) == 0.0
    assert bubble_floor(PipeSchedule.DUALPIPE, stages=16, micro_batches=120) == 0.0


def test_rank_i_holds_stages_i_and_p_minus_1_minus_i():
    # Llama 3.2 1B: 16 layers over 4 stages of 4; rank 0 holds stage 0 (layers 0-3) and stage 3 (12-15), with the
    # embedding and the head; activations of p + 1 = 5 stage micro-batches over its two stages: 2.5 each
    opts = JobOptions(model="llama-3.2-1b", method="full", batch_size=1, seq_len=1024, grad_accum=8, pp=4,
                      num_gpus=4, pp_schedule="dualpipe")
    setup = build_setup(opts)
    stages = pipeline_stages(setup, Layout(gpu_id="h100-sxm", num_gpus=4, pp=4), build_parallel(opts))
    assert [s.layers for s in stages] == [(0, 1, 2, 3, 12, 13, 14, 15), (4, 5, 6, 7, 8, 9, 10, 11),
                                          (4, 5, 6, 7, 8, 9, 10, 11), (0, 1, 2, 3, 12, 13, 14, 15)]
    assert [(s.has_embedding, s.has_head) for s in stages] == [(True, True), (False, False), (False, False),
                                                               (True, True)]
    assert {s.in_flight for s in stages} == {2.5}


def test_dualpipe_holds_two_copies_of_the_parameters():
    kw = dict(model="llama-3.2-1b", method="full", precision="bf16", batch_size=1, seq_len=1024, grad_accum=8,
              pp=4, num_gpus=4, gpu="h100-sxm", calibration=False)
    one_f_one_b = trainplan.estimate(**kw)
    dual = trainplan.estimate(pp_schedule="dualpipe", **kw)
    # 1F1B's stage 1 holds 4 layers; DualPipe's rank 1 holds 8, the weights of two stages
    assert dual.memory.components_bytes["weights"] > one_f_one_b.memory.components_bytes["weights"]
    assert dual.time.step_s < one_f_one_b.time.step_s          # the bubble: 1 x 2 / 24 of 1F1B's 3 / 8


@pytest.mark.parametrize(("pp", "accum", "vpp"), [(3, 12, 1), (4, 7, 1), (4, 6, 1), (4, 8, 2)])
def test_its_requirements(pp, accum, vpp):
    # dualpipe.py DualPipe.step: `assert num_ranks % 2 == 0`, `num_chunks % 2 == 0 and num_chunks >= num_ranks * 2`
    with pytest.raises(TrainplanError, match="dualpipe needs an even --pp and an even --grad-accum"):
        trainplan.estimate(model="llama-3.2-1b", method="full", batch_size=1, seq_len=1024, grad_accum=accum,
                           pp=pp, num_gpus=pp * 2 if pp == 3 else pp, gpu="h100-sxm", vpp=vpp,
                           pp_schedule="dualpipe", uneven_pipeline=True, calibration=False)


def test_a_case_naming_dualpipe_hides_its_expert_all_to_alls():
    assert schedule_in_text("DualPipe, EP 64 over 8 nodes") is PipeSchedule.DUALPIPE
    assert schedule_in_text("dual-pipe") is PipeSchedule.DUALPIPE
    card = {"id": "dsv3", "kind": "time", "model": {"name": "DeepSeek-V3"}, "method": "pretrain",
            "precision": {"compute": "fp8"}, "global_batch": 15360, "seq_len": 4096,
            "gpus": {"type": "H800", "count": 2048}, "parallel": {"pp": 16, "ep": 64, "tp": 1, "other": "DualPipe"},
            "framework": "HAI-LLM", "measured": {"gpu_hours": 2664000, "tokens_total": 14.8e12}}
    one_f_one_b = {**card, "parallel": {"pp": 16, "ep": 64, "tp": 1}}
    dual = timecase.map_case(normalized(card)[0])
    plain = timecase.map_case(normalized(one_f_one_b)[0])
    assert dual.options.pp_schedule is PipeSchedule.DUALPIPE and plain.options.pp_schedule is None
    _, e_dual = timecase.predict(dual)
    _, e_plain = timecase.predict(plain)
    assert e_dual.step.breakdown.communication_s < e_plain.step.breakdown.communication_s
    assert e_dual.step.breakdown.bubble_s < e_plain.step.breakdown.bubble_s
    assert any(n.startswith("DualPipe's overlapped chunks") for n in e_dual.step.notes)
