"""Megatron's expert all-to-all overlap (--moe-a2a-overlap, combined 1F1B): what it hides, where it runs."""

from __future__ import annotations

import pytest

import trainplan
from trainplan.errors import TrainplanError
from trainplan.job.training import Layout
from trainplan.timing.comm import CommTimes
from trainplan.timing.overlap import moe_a2a_overlap


def test_paired_micro_batches_hide_their_all_to_alls():
    # no pipelining, 8 micro-batches: F0, (F1 B0) ... (F7 B6), B7 -> 7 of 8 paired. 0.8 s of all-to-all a
    # step = 0.1 s a micro-batch, under 0.25 s of the other micro-batch's compute: 7 x 0.1 = 0.7 s hidden
    notes: list[str] = []
    comm = moe_a2a_overlap(CommTimes(ep_s=0.8), Layout(num_gpus=8, ep=8), micro_batches=8, virtual_stages=1,
                           compute_mb_s=0.25, notes=notes)
    assert comm.ep_hidden_s == pytest.approx(0.7)
    assert comm.exposed_s == pytest.approx(0.1)
    assert "7 of 8 micro-batch passes paired" in notes[0]
    # compute shorter than the all-to-all: only the compute's worth hides, 7 x 0.05 s
    short = moe_a2a_overlap(CommTimes(ep_s=0.8), Layout(num_gpus=8, ep=8), micro_batches=8, virtual_stages=1,
                            compute_mb_s=0.05, notes=[])
    assert short.ep_hidden_s == pytest.approx(0.35)


def test_interleaved_warm_up_runs_alone():
    # pp 2, v 4, 8 micro-batches: 32 chunk passes; warm-up (2 - 1) x 2 + (4 - 1) x 2 = 8 alone, 24 paired:
    # 24/32 x 8 x min(0.1, 1.0) = 0.6 s of 0.8 s hidden
    comm = moe_a2a_overlap(CommTimes(ep_s=0.8), Layout(num_gpus=16, pp=2, ep=8), micro_batches=8,
                           virtual_stages=4, compute_mb_s=1.0, notes=[])
    assert comm.ep_hidden_s == pytest.approx(0.6)
    assert comm.serialised().ep_hidden_s == 0.0      # synchronous launches hide nothing


MOE = dict(model="qwen3-30b-a3b", method="full", gpu="h100", num_gpus=16, nodes=2, ep=16, zero=1,
           framework="megatron", seq_len=4096, grad_accum=8, calibration=False)


def test_estimate_hides_all_to_all_and_says_so():
    on = trainplan.estimate(**MOE, moe_a2a_overlap=True).time
    off = trainplan.estimate(**MOE).time
    assert on.step.comm.ep_s == pytest.approx(off.step.comm.ep_s)
    assert on.step_s < off.step_s
    assert off.step_s - on.step_s == pytest.approx(on.step.comm.ep_hidden_s)
    assert any(n.startswith("Megatron expert all-to-all overlap (combined 1F1B): 7 of 8") for n in on.assumptions)


@pytest.mark.parametrize("kw, needle", [
    ({"framework": "deepspeed", "zero": 2}, "is Megatron's combined 1F1B schedule"),
    ({"ep": 1}, "needs --ep > 1"),
    ({"pp": 2, "ep": 8}, "runs only under the interleaved schedule: add --vpp > 1"),
])
def test_refused_where_megatron_does_not_run_it(kw, needle):
    with pytest.raises(TrainplanError, match=needle):
        trainplan.estimate(**{**MOE, **kw}, moe_a2a_overlap=True)


def test_notes_in_chinese():
    from trainplan.i18n import translate
    on = trainplan.estimate(**MOE, moe_a2a_overlap=True).time
    note = next(n for n in on.assumptions if n.startswith("Megatron expert all-to-all overlap"))
    zh = translate(note, lang="zh")
    assert zh.startswith("Megatron 专家 all-to-all 重叠（combined 1F1B）：8 次微批计算中有 7 次成对执行")
    etp = trainplan.estimate(**{**MOE, "tp": 2, "ep": 8}).notes
    note = next(n for n in etp if n.startswith("expert tensor parallel 2:"))
    # 16 GPUs / (pp 1 x ep 8 x expert tp 2) = 1 expert data-parallel rank
    assert translate(note, lang="zh") == ("专家张量并行 2：每个路由专家切分到 2 个 GPU 上，专家数据并行 1 路（同 tp：未设置 "
                                          "--etp 时 Megatron-Core 的默认值）")
