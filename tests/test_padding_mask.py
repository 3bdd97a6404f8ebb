"""Attention under a padding mask and transformers' eager attention traffic (trainplan.timing.attention,
timing.flops, timing.traffic), with the arithmetic written out from the cited code and benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainplan.cases.trainers import trainer_facts
from trainplan.cases.timecase import map_case
from trainplan.catalog import resolve_model
from trainplan.enums import Attention, Framework, GradCkpt, Precision
from trainplan.frozen import replace
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.training import Implementation, TrainingSetup
from trainplan.timing.attention import AttentionKernel as K
from trainplan.timing.attention import attention_kernel, kernel_efficiency, padded_sdpa
from trainplan.timing.flops import flops_per_token
from trainplan.timing.traffic import eager_attention_bytes_per_token, eager_score_bytes

DEV2 = Path(__file__).parent / "data" / "published_dev2.json"
A100_PEAK_T = 312.0


@pytest.mark.parametrize("framework, attention, generation, expected", [
    # transformers hands SDPA its 4D mask when the 2D mask has a zero: no flash backend takes attn_mask
    (Framework.HF, Attention.SDPA, "hopper", K.MEM_EFFICIENT),
    (Framework.PYTORCH, Attention.SDPA, "ampere", K.MEM_EFFICIENT),
    # flash_attention_2 unpads the batch (varlen): the mask changes nothing
    (Framework.HF, Attention.FLASH, "ampere", K.FA2),
    # Megatron runs Transformer Engine's attention, not transformers': cuDNN on Hopper
    (Framework.MEGATRON, Attention.SDPA, "hopper", K.CUDNN),
])
def test_padding_mask_kernel(framework, attention, generation, expected):
    assert attention_kernel(framework, attention, generation, "bf16", 128, padding_mask=True) is expected


def test_without_a_mask_sdpa_runs_flash():
    assert attention_kernel(Framework.HF, Attention.SDPA, "ampere", "bf16", 128) is K.FA2
    assert not padded_sdpa(Framework.HF, Attention.SDPA, False)


def test_padded_sdpa_counts_every_block():
    # causal kernels visit (s + 1) / 2 keys per query, the masked memory-efficient kernel all s:
    # attention forward per token doubles by 2 s / (s + 1) = 16384 / 8193 at s = 8192
    spec = resolve_model("llama-3.1-8b")
    base = TrainingSetup(model=spec, seq_len=8192, attention=Attention.SDPA, precision=Precision.BF16_PURE)
    masked = replace(base, impl=Implementation(padding_mask=True))
    causal, full = flops_per_token(base), flops_per_token(masked)
    assert full.attention_fwd / causal.attention_fwd == pytest.approx(16384 / 8193, rel=1e-9)
    assert full.linear_fwd == causal.linear_fwd


def test_a100_memory_efficient_rows_are_the_published_times():
    # xformers #712 (A100 forward): b16 2-8192-8-128 in 5086.0 us: 4 x 2 x 8 x 8192^2 x 128 = 5.4976e11
    # FLOP -> 108.1 TFLOP/s; cutlass PR #992 backward f16 2-8192-8-128 15580.3 us: 2.5 x 5.4976e11 /
    # 15.5803 ms = 88.2 TFLOP/s, used as 0.8 x 88.2 against trainplan's 2-forward backward
    flops = 4 * 2 * 8 * 8192 ** 2 * 128
    assert flops / 5086.0e-6 / 1e12 == pytest.approx(108.1, abs=0.05)
    assert 2.5 * flops / 15580.3e-6 / 1e12 == pytest.approx(88.2, abs=0.05)
    e = kernel_efficiency(K.MEM_EFFICIENT, "ampere", 128, 8192)
    assert e.fwd == pytest.approx(108.1 / A100_PEAK_T, abs=1e-6)           # 0.34647
    assert e.bwd == pytest.approx(88.2 * 0.8 / A100_PEAK_T, abs=1e-6)      # 0.22615


def test_hopper_memory_efficient_row_is_derived_from_fa2s_h100_over_a100():
    # no H100 figure is published; the sm80 kernels scale as FA2's do (non-causal hd128 8k):
    # forward 108.1 x 370 / 222 = 180.17 TFLOP/s -> / 989.4 = 0.18210
    # backward 88.2 x 318 / 196 = 143.10 TFLOP/s -> x 0.8 / 989.4 = 0.11571
    e = kernel_efficiency(K.MEM_EFFICIENT, "hopper", 128, 8192)
    assert e.fwd == pytest.approx(108.1 * 370 / 222 / 989.4, abs=1e-6)
    assert e.fwd == pytest.approx(0.18210, abs=1e-5)
    assert e.bwd == pytest.approx(88.2 * 318 / 196 * 0.8 / 989.4, abs=1e-6)
    assert e.bwd == pytest.approx(0.11571, abs=1e-5)
    assert "derived" in e.source


def test_eager_score_bytes_follow_transformers_eager_attention():
    # fp16 (e = 2): forward 9e + 8 = 26, backward 8e + 12 = 28 (softmax fuses the half -> fp32 cast)
    llama = TrainingSetup(model=resolve_model("llama-3.1-8b"), attention=Attention.EAGER)
    assert eager_score_bytes(replace(llama, precision=Precision.FP16)) == (26.0, 28.0)
    # bf16: softmax(dtype=float32) first copies the scores to fp32 (SoftMax.cpp fuses Half only):
    # +8 forward (read 2 write 4, then read 4 not 2), +8 backward (fp32 grad written, read back): 34, 36
    assert eager_score_bytes(llama) == (34.0, 36.0)
    # Gemma-2's softcap adds 6e and 7e
    gemma2 = TrainingSetup(model=resolve_model("gemma-2-9b"), attention=Attention.EAGER)
    assert gemma2.model.attn_logit_softcapping
    assert eager_score_bytes(gemma2) == (46.0, 50.0)
    fp32 = replace(llama, precision=Precision.FP32)          # e = 4: 9 x 4 + 8, 8 x 4 + 12 (no cast)
    assert eager_score_bytes(fp32) == (44.0, 44.0)


def test_eager_bytes_per_token_by_hand():
    # llama-3.1-8b: 32 heads, 32 layers, full fine-tune (every layer has a backward), s = 1024,
    # full recomputation, bf16: heads x s x (34 x 32 + (36 + 34) x 32) = 32 x 1024 x 3328 = 109,051,904
    setup = TrainingSetup(model=resolve_model("llama-3.1-8b"), attention=Attention.EAGER, seq_len=1024,
                          grad_ckpt=GradCkpt.FULL)
    assert eager_attention_bytes_per_token(setup, 1024) == 109_051_904.0
    # without recomputation: 32 x 1024 x (34 x 32 + 36 x 32) = 73,400,320
    plain = replace(setup, grad_ckpt=GradCkpt.NONE)
    assert eager_attention_bytes_per_token(plain, 1024) == 73_400_320.0


def test_trainer_facts_are_read_from_the_trainer_name():
    facts, notes = trainer_facts({"framework": "universal-llm-trainer (custom PyTorch trainer), torch 2.5.1"})
    assert facts == {"padding_mask": True, "launch_blocking": True, "cpu_threads_per_rank": 32}
    assert "qa_dataset.py" in notes[0] and "CUDA_LAUNCH_BLOCKING" in notes[1] and "set_num_threads" in notes[2]
    two, _ = trainer_facts({"framework": "universal-llm-trainer", "gpus": {"count": 2}})
    assert two["cpu_threads_per_rank"] == 16     # total_cpu_use 32 // 2 spawned ranks
    assert trainer_facts({"framework": "HF Trainer + PEFT"}) == ({}, [])


def test_the_trainer_that_pads_every_sample_maps_to_a_padding_mask():
    case = next(c for c in json.loads(DEV2.read_text())
                if c["kind"] == "time" and c["source"]["repo"] == "ljm565/universal-llm-trainer"
                and c["method"] == "full")
    m = map_case(case)
    assert m.setup.impl.padding_mask and m.setup.attention is Attention.SDPA
    assert "qa_dataset.py" in m.note


def _job(tmp_path, lengths: str, **kw):
    path = tmp_path / "lengths.txt"
    path.write_text(lengths)
    given = {"batch_size": 4, **kw}
    return resolve_job(JobOptions(model="llama-3.1-8b", method="lora", gpu="a100-80gb", seq_len=2048,
                                  attention="sdpa", samples=100, lengths_file=str(path), **given),
                       calibration=None, priced=False)


def test_unpacked_batches_of_mixed_lengths_carry_a_padding_mask(tmp_path):
    assert _job(tmp_path, "300\n1200\n2000\n700\n").setup.impl.padding_mask
    assert not _job(tmp_path, "300\n1200\n2000\n700\n", packing=True).setup.impl.padding_mask
    assert not _job(tmp_path, "300\n1200\n2000\n700\n", batch_size=1).setup.impl.padding_mask
    assert not _job(tmp_path, "1000\n1000\n").setup.impl.padding_mask      # equal lengths: no padding


def test_the_padding_mask_slows_the_step_and_says_so(tmp_path):
    from trainplan.timing.estimate import estimate_time

    job = _job(tmp_path, "300\n1200\n2000\n700\n")
    masked = estimate_time(job.setup, job.layout, job.gpu, job.workload, job.timing)
    plain_setup = replace(job.setup, impl=replace(job.setup.impl, padding_mask=False))
    plain = estimate_time(plain_setup, job.layout, job.gpu, job.workload, job.timing)
    assert masked.step_s > plain.step_s
    assert masked.step.efficiency.attention_kernel == K.MEM_EFFICIENT.value
    assert any("memory-efficient kernel runs over every s x s block" in n for n in masked.assumptions)


def test_the_padding_mask_note_reads_in_chinese(tmp_path):
    from trainplan.i18n import translate
    from trainplan.timing.estimate import estimate_time

    job = _job(tmp_path, "300\n1200\n2000\n700\n")
    est = estimate_time(job.setup, job.layout, job.gpu, job.workload, job.timing)
    note = next(n for n in est.assumptions if n.startswith("padding in the attention mask"))
    assert translate(note, lang="zh") == ("注意力掩码中有填充：transformers 把 4D 掩码交给 SDPA，于是运行 memory-efficient "
                                          "内核，计算全部 s x s 块（不跳过因果遮蔽的一半，也不用 FlashAttention）")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(["qwen2.5-0.5b", "llama-3.1-8b", "phi-3-mini-4k", "gemma-7b"]),
       method=st.sampled_from(["full", "lora"]), gpu=st.sampled_from(["a100-80gb", "h100", "l40s"]),
       seq=st.sampled_from([512, 2048, 8192]), batch=st.integers(2, 8),
       ckpt=st.sampled_from([GradCkpt.NONE, GradCkpt.FULL]))
def test_a_padding_mask_never_makes_the_step_faster(model, method, gpu, seq, batch, ckpt):
    from trainplan.catalog import resolve_gpu
    from trainplan.enums import Method
    from trainplan.job.training import Layout, LoraConfig
    from trainplan.timing.estimate import step_time

    spec, g = resolve_model(model), resolve_gpu(gpu)
    setup = TrainingSetup(model=spec, method=Method(method), seq_len=seq, batch_size=batch, grad_ckpt=ckpt,
                          attention=Attention.SDPA, precision=Precision.BF16,
                          lora=LoraConfig(rank=16, alpha=32, dropout=0.0, targets=("all-linear",))
                          if method == "lora" else None)
    masked = replace(setup, impl=replace(setup.impl, padding_mask=True))
    layout = Layout(gpu_id=g.id)
    assert step_time(masked, layout, g).step_s >= step_time(setup, layout, g).step_s


def test_planner_setups_rederive_the_mask_per_micro_batch(tmp_path):
    # the planner and the table try other micro-batches: one sample per micro-batch pads nothing
    from trainplan.job.resolve import with_padding_mask

    job = _job(tmp_path, "300\n1200\n2000\n700\n")
    assert job.setup.impl.padding_mask
    one = with_padding_mask(replace(job.setup, batch_size=1), job.workload, job.timing)
    assert not one.impl.padding_mask
    back = with_padding_mask(replace(one, batch_size=8), job.workload, job.timing)
    assert back.impl.padding_mask
    assert with_padding_mask(job.setup, job.workload, job.timing) is job.setup     # unchanged: the same record


def test_memory_keeps_the_padding_mask_for_every_checkpointed_layer():
    # transformers builds one boolean (b, 1, s, s) mask per forward and hands it to every layer; under
    # full checkpointing it stays alive as the layers' input: 2 x 1024 x 1024 x 1 B = 2,097,152 B
    from trainplan.memory.attention import kept_masks_bytes
    from trainplan.memory.context import LayerContext
    from trainplan.model.architecture import structure

    spec = resolve_model("llama-3.1-8b")
    kinds = [kind for kind, _ in structure(spec).layers]
    ctx = LayerContext(tokens=2048, batch=2, seq=1024, residual_bytes=2, compute_bytes=2, autocast=False,
                       attention=Attention.SDPA, weights_trained=True)
    assert kept_masks_bytes(ctx, spec, kinds) == 0                       # no padding: SDPA is_causal, no mask
    assert kept_masks_bytes(replace(ctx, padding_mask=True), spec, kinds) == 2 * 1024 * 1024


def test_the_padding_mask_adds_the_kept_mask_to_a_lora_peak():
    # LoRA peaks in the backward, while the checkpointed layers' inputs are alive: the boolean
    # (2, 1, 4096, 4096) mask adds 2 x 4096 x 4096 = 33,554,432 B (a full fine-tune peaks at the
    # optimizer step, after the mask is gone)
    from trainplan.catalog import resolve_gpu
    from trainplan.enums import Method
    from trainplan.job.training import Layout, LoraConfig
    from trainplan.memory import estimate_memory

    gpu = resolve_gpu("a100-80gb")
    setup = TrainingSetup(model=resolve_model("llama-3.1-8b"), method=Method.LORA, batch_size=2, seq_len=4096,
                          lora=LoraConfig(rank=16, alpha=32, dropout=0.0, targets=("q_proj", "v_proj")),
                          grad_ckpt=GradCkpt.FULL, attention=Attention.SDPA, precision=Precision.BF16)
    masked = replace(setup, impl=replace(setup.impl, padding_mask=True))
    layout = Layout(gpu_id=gpu.id)
    base = estimate_memory(setup, layout, gpu).peak_allocated_bytes
    assert estimate_memory(masked, layout, gpu).peak_allocated_bytes == base + 33_554_432


def test_padding_mask_flag_overrides_the_derived_value(tmp_path):
    assert _job(tmp_path, "1000\n1000\n", padding_mask=True).setup.impl.padding_mask
    assert not _job(tmp_path, "300\n1200\n2000\n700\n", padding_mask=False).setup.impl.padding_mask


def test_a_given_padding_mask_holds_for_every_micro_batch_the_planner_tries(tmp_path):
    # a trainer that pads every sample to max length: --padding-mask holds at one sample per
    # micro-batch too (the derived rule alone would say no padding there)
    from trainplan.job.resolve import with_padding_mask

    job = _job(tmp_path, "1000\n1000\n", padding_mask=True)
    one = with_padding_mask(replace(job.setup, batch_size=1), job.workload, job.timing)
    assert one.impl.padding_mask
    off = _job(tmp_path, "300\n1200\n2000\n700\n", padding_mask=False)
    assert not with_padding_mask(replace(off.setup, batch_size=8), off.workload, off.timing).impl.padding_mask
