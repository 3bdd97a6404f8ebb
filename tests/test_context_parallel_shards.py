"""Context-parallel ranks hold the same weights: their gradients are reduced, and ZeRO/FSDP shard, over
data x context parallel (Layout.dp_cp), in the time model as in the memory model; ring attention in
a case's text is context parallelism over the ring's GPUs."""

from __future__ import annotations

import pytest

from trainplan.cases.memorycase import layout_flags
from trainplan.catalog import resolve_gpu, resolve_model
from trainplan.enums import Method, ZeroStage
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.sharding import shard_level
from trainplan.timing.comm import CommInputs, layout_comm
from trainplan.timing.links import Fabric, Link
from trainplan.timing.efficiency import DEFAULT_MODEL, memory_bw
from trainplan.timing.parts import optimizer_and_offload_s
from trainplan.timing.traffic import optimizer_bytes_per_param


def test_dp_cp_is_every_rank_of_one_model_replica_group():
    ring = Layout(num_gpus=8, cp=8)
    assert (ring.dp, ring.dp_cp) == (1, 8)
    assert Layout(num_gpus=64, tp=4, pp=2, cp=2).dp_cp == 8           # 64 / (4 x 2)
    assert shard_level(Layout(num_gpus=16, cp=2, zero=ZeroStage.PARAMETERS)) == (3, 16)


def test_gradients_are_reduced_over_the_context_parallel_ranks():
    # 8 GPUs, cp 8 (dp 1), DDP: ring all-reduce of 1e9 x 2 bytes over 8 ranks at 100 GB/s bus bandwidth
    # = 2 x 7/8 x 2e9 / 1e11 = 35 ms (nothing to reduce if only the data-parallel size 1 counted)
    fab = Fabric(intra=Link(name="test", bw_bytes_per_s=100e9), inter=Link(name="none", bw_bytes_per_s=1e9),
                 gpus_per_node=8, collective_fraction=1.0)
    x = CommInputs(trainable_params=1e9, gathered_params=1e9, grad_bytes=2, weight_bytes=2.0, micro_batches=1,
                   fwd_s=1.0, bwd_s=2.0, layers=32, activation_bytes=0.0, tp_collectives_per_layer=4)
    assert layout_comm(Layout(num_gpus=8, cp=8), fab, x).dp_s == pytest.approx(0.035)
    assert layout_comm(Layout(num_gpus=8), fab, x).dp_s == pytest.approx(0.035)     # the same 8 replicas


def test_the_optimizer_shard_spans_data_and_context_parallel():
    # ZeRO-1 on 8 GPUs: each rank steps 1/8 of the trainable parameters whether the 8 are dp 8 or
    # dp 4 x cp 2: n_train / 8 x bytes per parameter / bandwidth
    setup = TrainingSetup(model=resolve_model("llama-3.1-8b"), method=Method.FULL)
    gpu = resolve_gpu("h100")
    n = 8_030_261_248
    expected = n / 8 * optimizer_bytes_per_param(setup) / memory_bw(gpu, DEFAULT_MODEL)
    for layout in (Layout(gpu_id=gpu.id, num_gpus=8, zero=ZeroStage.OPTIMIZER),
                   Layout(gpu_id=gpu.id, num_gpus=8, cp=2, zero=ZeroStage.OPTIMIZER)):
        opt, _ = optimizer_and_offload_s(setup, layout, gpu, DEFAULT_MODEL, n, n, 1.0, [])
        assert opt == pytest.approx(expected)


@pytest.mark.parametrize("sp, cp", [("ring attention over 8 GPUs", 8), ("zigzag ring attention (4)", 4),
                                    ("ring attention", 8)])
def test_ring_attention_text_is_context_parallel(sp, cp):
    case = {"gpus": {"type": "A100 80GB", "count": 8}, "parallel": {"sp": sp, "dp": 1}}
    flags = layout_flags(case)
    assert flags["cp"] == cp and "ulysses" not in flags


def test_ulysses_stays_ulysses():
    flags = layout_flags({"gpus": {"type": "A100 80GB", "count": 8}, "parallel": {"sp": 4}})
    assert flags["ulysses"] == 4 and flags["cp"] == 1
