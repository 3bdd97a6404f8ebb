"""The changes an estimate suggests when a job does not fit keep to what its framework runs."""

from __future__ import annotations

from trainplan.estimation import estimate
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job


def _more_gpus(**kw) -> list[str]:
    est = estimate(resolve_job(JobOptions(model="llama-3.1-8b", gpu="a100-40gb", **kw)))
    assert not est.memory.fits
    return [s.change for s in est.suggestions if s.change.startswith("--num-gpus")]


def test_more_gpus_sharded_the_way_the_framework_shards():
    # Llama-3.1-8B full fine-tune does not fit one 40 GB A100 (16 B/param of model state alone). Sharding the
    # model state over more GPUs is DeepSpeed ZeRO-3 for the HF Trainer, FSDP for torchtitan (it has no ZeRO:
    # job/capabilities.py CAPABILITIES), and nothing for Megatron, whose distributed optimizer shards only the
    # optimizer states (its TP/PP layouts are `trainplan plan`'s)
    hf = _more_gpus(grad_ckpt="full")
    titan = _more_gpus(framework="torchtitan", grad_ckpt="full")
    megatron = _more_gpus(framework="megatron", grad_ckpt="full")
    assert len(hf) == 1 and hf[0].endswith("--zero 3")
    assert len(titan) == 1 and titan[0].endswith("--fsdp full")
    assert megatron == []


def test_megatron_is_never_offered_or_given_a_quantized_base():
    # Megatron (Megatron-Bridge, Megatron-SWIFT, pretrain_gpt.py) trains adapters over 16-bit weights only
    # (LLaMA-Factory's Megatron path: "not with DeepSpeed or quantization", framework_configs.md section 8)
    import pytest

    from trainplan.errors import TrainplanError

    est = estimate(resolve_job(JobOptions(model="llama-3.1-8b", gpu="a100-40gb", framework="megatron")))
    changes = [s.change for s in est.suggestions]
    assert any(c.startswith("--method lora") for c in changes)
    assert not any("qlora" in c for c in changes)
    with pytest.raises(TrainplanError, match=r"--framework megatron cannot run a 4-bit quantized base"):
        resolve_job(JobOptions(model="llama-3.1-8b", gpu="h100", framework="megatron", method="qlora"))


def test_a_bigger_gpu_of_one_memory_size_is_the_one_offered():
    # Llama-2-7B full fine-tune on one A100 80GB fits a 141 GB GPU: the H200 (USD offers in the price catalog,
    # cheapest $3.59 a GPU-hour) and the China-only H20 141GB (no offer listed, and a smaller driver total by the
    # catalog's 0.99 rule) are both "141 GB"; the offered one is named
    est = estimate(resolve_job(JobOptions(model="llama-2-7b", gpu="a100", method="full")))
    bigger = [s.change for s in est.suggestions if s.change.startswith("--gpu ")]
    assert bigger == ["--gpu h200-sxm"]


def test_adam_mini_is_offered_where_the_framework_builds_it():
    import pytest

    # Llama-3.2-3B full fine-tune in LLaMA-Factory does not fit a 24 GB RTX 4090. Adam-mini (use_adam_mini) keeps
    # one fp32 state per element where AdamW keeps two: 3,212,749,824 x 4 B = 11.97 GiB less at the backward peak
    # (less the vmean rows, a few MB), x 1.10 in the device view (the caching allocator's reserve rule); the HF
    # Trainer has no Adam-mini `optim`, so it is not offered there
    def changes(**kw):
        est = estimate(resolve_job(JobOptions(model="llama-3.2-3b", gpu="rtx4090", method="full", **kw)))
        assert not est.memory.fits
        return {s.change: s for s in est.suggestions}

    lf = changes(framework="llamafactory")
    assert "--optimizer adam-mini" in lf
    assert lf["--optimizer adam-mini"].saves_bytes == pytest.approx(3_212_749_824 * 4 * 1.10, rel=0.002)
    assert "--optimizer adam-mini" not in changes(framework="hf")


def test_more_gpus_over_a_model_copy_of_three():
    # Ulysses over 3 GPUs (one model copy spans 3): a GPU count that is not a multiple of 3 is no layout, so
    # the suggestion is the fewest multiple of 3 that fits, here the 3 the job has, sharded with ZeRO-3 (80 GB
    # H100: the 8B full fine-tune's ~130 GB of model state does not fit unsharded, 1/3 of it does)
    est = estimate(resolve_job(JobOptions(model="llama-3.1-8b", gpu="h100", num_gpus=3, ulysses=3, seq_len=2049)))
    assert not est.memory.fits
    sharded = [s for s in est.suggestions if s.change == "--zero 3"]
    assert len(sharded) == 1 and sharded[0].fits
    assert sharded[0].cost == "the model state sharded over the 3 GPUs: more communication a step"


def test_ulysses_needs_the_sequence_divisible_by_its_degree_only():
    import pytest

    from trainplan.errors import TrainplanError

    with pytest.raises(TrainplanError, match=r"--ulysses 3 needs --seq-len divisible by 3, got 2048"):
        estimate(resolve_job(JobOptions(model="llama-3.1-8b", gpu="h100", num_gpus=3, ulysses=3, seq_len=2048)))
    # a ring (--cp) needs 2 x cp: its load-balanced causal split gives each rank two chunks
    with pytest.raises(TrainplanError, match=r"--cp 3 needs --seq-len divisible by 2 x cp = 6"):
        estimate(resolve_job(JobOptions(model="llama-3.1-8b", gpu="h100", num_gpus=3, cp=3, seq_len=2049)))
    assert estimate(resolve_job(JobOptions(model="llama-3.1-8b", gpu="h100", num_gpus=4, ulysses=4,
                                           seq_len=4100, grad_ckpt="full"))).memory is not None
