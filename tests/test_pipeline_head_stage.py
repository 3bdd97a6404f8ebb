"""The last pipeline stage runs the LM head and the loss on top of its layers (Megatron-Core's post-process
stage; timing.pipeline.heaviest_stage_s), and Megatron's account_for_embedding/loss_in_pipeline_split
(--pp-head-as-layer) gives the first and the last stage one layer fewer (memory.stages.layers_per_stage)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainplan.export import megatron as megatron_export
from trainplan.export.base import ExportContext
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.memory.stages import layers_per_stage
from trainplan.timing.estimate import step_time
from trainplan.timing.pipeline import heaviest_stage_s


def test_the_embedding_and_the_loss_take_a_layers_place():
    # Megatron-Core get_num_layers_to_build: (94 + 2) / 8 = 12 a stage, the first and the last build 11
    assert layers_per_stage(94, 8, head_as_layer=True) == (11, 12, 12, 12, 12, 12, 12, 11)
    # Llama 3.1 405B (126 layers) over 16 stages: 128 / 16 = 8, first and last 7
    assert layers_per_stage(126, 16, head_as_layer=True) == (7,) + (8,) * 14 + (7,)
    # without it: 80 / 4 = 20 each; a remainder goes to the last stages
    assert layers_per_stage(80, 4) == (20, 20, 20, 20)
    assert layers_per_stage(94, 8) == (11, 11, 12, 12, 12, 12, 12, 12)
    assert layers_per_stage(94, 1, head_as_layer=True) == (94,)
    # torchtitan's generate_llm_fqn_per_model_part on 16 layers over 16 stages: 18 places, 1 a stage and 2 for the
    # first two; the first gives one to the embedding, the last its one to norm + output: a stage of the head only
    assert layers_per_stage(16, 16, head_as_layer=True) == (1, 2) + (1,) * 13 + (0,)
    # BLOOM's 70 layers over 72 stages ('type:transformer|embedding', one weighted layer a stage): the first stage
    # the embedding alone, the last the tied output embedding alone
    assert layers_per_stage(70, 72, head_as_layer=True) == (0,) + (1,) * 70 + (0,)
    # torchtitan's rule for a remainder: 30 + 2 = 32 over 6 stages, 6 for the first two, then 5; first and last less
    assert layers_per_stage(30, 6, head_as_layer=True) == (5, 6, 5, 5, 5, 4)


def test_the_step_follows_the_stage_with_the_head():
    # 8 layers over 4 ranks (2 each), a mean stage of 10 s (40 s in all) of which the head and loss are 4 s:
    # the layers take 36 s, 9 s a rank, and the last rank 9 + 4 = 13 s
    assert heaviest_stage_s(10.0, 4.0, (2, 2, 2, 2)) == pytest.approx(13.0)
    # with one layer fewer on the last rank (3, 2, 2, 1 of 8 layers): the first rank's 3 layers, 13.5 s, or the
    # last's 4.5 + 4 = 8.5 s: the first
    assert heaviest_stage_s(10.0, 4.0, (3, 2, 2, 1)) == pytest.approx(13.5)
    assert heaviest_stage_s(10.0, 4.0, (8,)) == 10.0


def test_layers_that_do_not_divide_are_taken_as_laid_out_to_even_the_ranks():
    # 9 layers over 4 ranks need a written layout; a mean stage of 10 s (40 s in all), head and loss 4 s: 4 s a
    # layer. One layer beside the head: 3, 3, 2 on the others (12 s) and 4 + 4 = 8 s; two: 3, 3, 2 ... the
    # heaviest is 12 s either way, where the remainder on the last rank (2, 2, 2, 3) would give 12 + 4 = 16 s
    assert heaviest_stage_s(10.0, 4.0, (2, 2, 2, 3), rebalanced=True) == pytest.approx(12.0)
    assert heaviest_stage_s(10.0, 4.0, (2, 2, 2, 3)) == pytest.approx(16.0)


def _job(**kw):
    base = dict(model="llama-3.1-70b", gpu="h100", framework="megatron", num_gpus=32, nodes=4, tp=8, pp=4,
                seq_len=4096, batch_size=1, grad_accum=32)
    return resolve_job(JobOptions(**{**base, **kw}), calibration=None, priced=False)


def test_the_last_stage_runs_the_head_on_top_of_its_layers():
    # Llama 3.1 70B: 80 layers, 20 a stage (Megatron's even split); its 128,256-token head, 2 x 8192 x 128,256 =
    # 2.1 GFLOP a token forward, and the loss run on the last rank beside its 20 layers of 1.7 GFLOP each
    job = _job()
    t = step_time(job.setup, job.layout, job.gpu, workload=job.workload, options=job.timing)
    note = next(n for n in t.notes if n.startswith("pipeline stages unequal: the last of 4 ranks"))
    share = int(note.split("), ")[1].split("%")[0])
    assert 5 <= share <= 20           # about two layers' work on top of 20
    # the same job split by torchtitan's rule (the head as a layer): 82 / 4 = 21, 21, 20, 19: the first rank leads
    tt = _job(pp_head_as_layer=True, uneven_pipeline=True)
    tb = step_time(tt.setup, tt.layout, tt.gpu, workload=tt.workload, options=tt.timing)
    assert tb.breakdown.compute_s < t.breakdown.compute_s


def test_megatron_flags_in_and_out(tmp_path):
    from conftest import options_from

    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 30 --hidden-size 1024 "
                      "--num-attention-heads 8 --seq-length 2048 --max-position-embeddings 2048 "
                      "--pipeline-model-parallel-size 4 --micro-batch-size 1 --global-batch-size 16 --bf16 "
                      "--vocab-size 32000 --account-for-embedding-in-pipeline-split "
                      "--account-for-loss-in-pipeline-split\n")
    assert options_from(script).pp_head_as_layer is True
    job = resolve_job(JobOptions(model="qwen3-235b-a22b", gpu="h100", framework="megatron", num_gpus=256, nodes=32,
                                 tp=2, ep=32, etp=1, pp=8, vpp=4, zero=1, seq_len=4096, grad_accum=128,
                                 pp_head_as_layer=True), calibration=None, priced=False)
    lm = next(f for f in megatron_export.export(job, None, ExportContext()).files if f.name == "megatron_lm.sh")
    text = " ".join(lm.text.split())
    assert "--account-for-embedding-in-pipeline-split" in text and "--account-for-loss-in-pipeline-split" in text
    # 96 slots over 8 x 4 chunks: Megatron takes the virtual stage count, not layers per virtual stage
    assert "--virtual-pipeline-model-parallel-size 4" in text and "--num-layers-per-virtual-pipeline-stage" not in text


def test_a_split_that_does_not_divide_is_a_one_line_error():
    done = subprocess.run([sys.executable, "-m", "trainplan", "estimate", "--model", "llama-3.1-70b", "--gpu", "h100",
                           "--num-gpus", "32", "--nodes", "4", "--pp", "4", "--vpp", "5", "--grad-accum", "16",
                           "--framework", "megatron", "--pp-head-as-layer"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "80 layers + the embedding and the loss" in done.stderr and "82 % 20 = 2" in done.stderr


def test_a_stage_of_the_embedding_or_the_loss_alone():
    """num_layers + 2 stages with the embedding and the loss as a layer each: the first stage holds the embedding
    only, the last the LM head and the loss only (memory.stages.layers_per_stage); the notes say so, and the
    step waits for the head's stage. One stage more than the places is a one-line error."""
    job = _job(model="llama-3.1-8b", num_gpus=34, nodes=17, tp=1, pp=34, grad_accum=68, pp_head_as_layer=True)
    from trainplan.estimation import estimate

    est = estimate(job)
    note = next(n for n in est.notes if n.startswith("pipeline 34 stages"))
    assert "0: the embedding only" in note and "33: the LM head and the loss only" in note
    t = step_time(job.setup, job.layout, job.gpu, workload=job.workload, options=job.timing)
    assert t.step_s > 0 and t.breakdown.bubble_s > 0
    done = subprocess.run([sys.executable, "-m", "trainplan", "estimate", "--model", "llama-3.1-8b", "--gpu", "h100",
                           "--num-gpus", "35", "--nodes", "5", "--pp", "35", "--grad-accum", "70",
                           "--framework", "megatron", "--pp-head-as-layer"], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "--pp 35 is more than the 32 layers + the embedding and the loss" in done.stderr


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(layers=st.integers(1, 160), pp=st.integers(1, 170), head=st.booleans())
def test_every_split_places_each_layer_once(layers, pp, head):
    """Whatever the split: every decoder layer on exactly one stage, no stage negative; with the embedding and the
    loss as a layer each and no more stages than places, every middle stage holds a layer and only the first and
    the last may hold none (the embedding, the loss)."""
    places = layers + 2 if head and pp > 1 else layers
    if pp > max(places, layers):
        return
    sizes = layers_per_stage(layers, pp, head_as_layer=head)
    assert len(sizes) == pp and sum(sizes) == layers and min(sizes) >= 0
    if head and 1 < pp <= places:
        assert all(n >= 1 for n in sizes[1:-1])
        assert max(sizes) - min(sizes[1:-1] or (0,)) <= 1 or pp <= 2
