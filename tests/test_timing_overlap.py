"""DeepSpeed's overlap_comm in the time model: off (the default below ZeRO-3), its collectives run on
the compute stream and nothing hides behind the backward (deepspeed/runtime/zero/stage_1_and_2.py,
stage3.py, parameter_offload.py; the default is `stage == 3`, zero/config.py overlap_comm_valid)."""

from __future__ import annotations

import pytest

from trainplan.estimation import estimate
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job

# Llama-2-7B full fine-tune, ZeRO-2 over 8 H100 (NVLink 450 GB/s per direction x 0.8 collective fraction
# = 360 GB/s bus bandwidth): the bf16 gradient reduce-scatter moves 7/8 of 6,738,415,616 x 2 bytes,
# 11.79 GB / 360 GB/s = 32.756 ms per micro-batch, and so does the 16-bit parameter all-gather after the step.
RS_S = 6_738_415_616 * 2 * 7 / 8 / 360e9


def _comm(**kw):
    est = estimate(resolve_job(JobOptions(model="llama-2-7b", method="full", gpu="h100", num_gpus=8, zero=2,
                                          framework="deepspeed", **kw)))
    return est.time.step.comm, est.time.assumptions


def test_zero2_default_runs_the_reduction_on_the_compute_stream():
    comm, notes = _comm()
    assert comm.dp_s == pytest.approx(RS_S, rel=1e-9)
    assert comm.dp_exposed_s == pytest.approx(RS_S, rel=1e-9) and comm.exposed_s == pytest.approx(2 * RS_S, rel=1e-9)
    assert any(n.startswith("DeepSpeed overlap_comm off") for n in notes)


def test_overlap_comm_hides_the_reduction_but_its_last_bucket():
    comm, _ = _comm(overlap_comm=True)
    # behind the backward (longer than 32.8 ms) except the last 25 MiB bucket (timing/comm.py
    # DDP_BUCKET_BYTES): 26,214,400 B / 360 GB/s = 0.0728 ms exposed
    assert comm.dp_exposed_s == pytest.approx(26_214_400 / 360e9, rel=1e-9)
    assert comm.exposed_s == pytest.approx(RS_S + comm.dp_exposed_s, rel=1e-9)


def test_megatron_distributed_optimizer_is_not_deepspeed():
    est = estimate(resolve_job(JobOptions(model="llama-2-7b", method="full", gpu="h100", num_gpus=8, zero=1,
                                          framework="megatron")))
    assert not any(n.startswith("DeepSpeed overlap_comm off") for n in est.time.assumptions)
