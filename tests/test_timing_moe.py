"""MoE routed-expert time: grouped GEMM roofline, dispatch traffic, expert-parallel all-to-all."""

from __future__ import annotations

import pytest

from trainplan.enums import Method, Precision, ZeroStage
from trainplan.frozen import replace
from trainplan.job.training import Layout, LoraConfig, TrainingSetup
from trainplan.model.params import count_params
from trainplan.specs import GpuSpec, ModelSpec, MoeSpec
from trainplan.timing.comm import CommInputs, layout_comm
from trainplan.timing.links import fabric
from trainplan.timing.efficiency import DEFAULT_MODEL, KernelStack, matmul_efficiency
from trainplan.timing.estimate import TimingOptions, step_time
from trainplan.timing.flops import flops_per_token
from trainplan.timing.moe import ExpertShape, expert_layer_time, expert_shape, grouped_gemm_s
from trainplan.timing.parts import params_on_gpu, sharded_params_on_gpu

H100 = GpuSpec(id="h100-sxm", name="H100 SXM", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=3350e9,
               peak_flops_per_s={"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12},
               interconnect="NVLink 4", gpu_gpu_bw_bytes_per_s=900e9, pcie="Gen5 x16", generation="hopper")
# Qwen3-30B-A3B's shape (config.json: hidden 2048, 48 layers, 128 experts, top-8, moe_intermediate 768)
QWEN3_MOE = ModelSpec(name="qwen3-moe-test", model_type="qwen3_moe", naming="llama", hidden_size=2048,
                      num_layers=4, num_heads=32, num_kv_heads=4, head_dim=128, intermediate_size=6144,
                      vocab_size=151936, tied_embeddings=False,
                      moe=MoeSpec(num_experts=128, top_k=8, expert_intermediate_size=768))


def test_grouped_gemm_matches_deepgemm_row():
    # DeepGEMM README (first release, H800 FP8): 8 groups, M 4096, N 7168, K 2048 -> 1093 TFLOPS.
    # FLOPs 2 x 8 x 4096 x 7168 x 2048 = 9.620e11 at 0.709 x 1979e12 = 1.4031e15 FLOP/s -> 0.6856 ms;
    # bytes 8 x (1 x (4096 x 2048 + 2048 x 7168) + 2 x 4096 x 7168) = 6.543e8 at 0.8 x 3.35e12 -> 0.2441 ms
    t = grouped_gemm_s(4096, 7168, 2048, groups=8, in_bytes=1, out_bytes=2,
                       flops_per_s=0.709 * 1979e12, bytes_per_s=0.8 * 3.35e12)
    assert t == pytest.approx(0.6856e-3 + 0.2441e-3, rel=2e-3)
    assert 9.620e11 / t / 1e12 == pytest.approx(1093, rel=0.15)       # 1035 TFLOP/s vs 1093 measured


def test_small_k_gemm_is_memory_heavy():
    # DeepGEMM dense M 4096, N 32768, K 512 -> 590 TFLOPS. FLOPs 2 x 4096 x 32768 x 512 = 1.374e11 -> 97.9 us;
    # bytes 4096 x 512 + 32768 x 512 + 2 x 4096 x 32768 = 2.873e8 -> 107.2 us; 1.374e11 / 205.1 us = 670 TFLOP/s
    t = grouped_gemm_s(4096, 32768, 512, groups=1, in_bytes=1, out_bytes=2,
                       flops_per_s=0.709 * 1979e12, bytes_per_s=0.8 * 3.35e12)
    assert t == pytest.approx(205.1e-6, rel=3e-3)
    assert 1.374e11 / t / 1e12 == pytest.approx(590, rel=0.15)


def test_tokens_per_expert_with_expert_parallel():
    # 8192 tokens x top-8 / 128 experts = 512 rows per expert; with EP 8 a rank's 16 experts
    # receive from 8 ranks: 512 x 8 = 4096
    shape = ExpertShape(tokens=8192, top_k=8, experts=128, local_experts=16, hidden=2048, intermediate=768,
                        fc1_out=1536, ep=8)
    assert shape.tokens_per_expert == 4096
    assert replace(shape, ep=1, local_experts=128).tokens_per_expert == 512


def test_expert_shape_from_the_model():
    setup = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, batch_size=2, seq_len=4096)
    shape = expert_shape(setup, Layout(num_gpus=8, ep=8), 8192.0)
    # gated MLP: fc1 writes gate and up, 2 x 768; 128 / 8 = 16 experts per GPU
    assert (shape.fc1_out, shape.local_experts, shape.tokens_per_expert) == (1536, 16, 4096)
    dense = replace(QWEN3_MOE, moe=None)
    assert expert_shape(replace(setup, model=dense), Layout(), 8192.0) is None


def test_alltoall_volume_per_rank():
    # EP 8 inside one node, TP 1: 2 layers, 1 micro-batch, dispatch 8192 tokens x 8 x 2048 x 2 B = 268.4 MB;
    # 4 all-to-alls per layer (dispatch + combine, forward + backward) x 7/8 x 268.4 MB / (450 GB/s x 0.8)
    layout = Layout(num_gpus=8, ep=8)
    fab = fabric(H100, layout)
    x = CommInputs(trainable_params=0, gathered_params=0, grad_bytes=4, weight_bytes=2, micro_batches=1,
                   fwd_s=0, bwd_s=0, layers=2, activation_bytes=0, tp_collectives_per_layer=4, moe_layers=2,
                   moe_dispatch_bytes=8192 * 8 * 2048 * 2)
    expected = 2 * 4 * 7 / 8 * (8192 * 8 * 2048 * 2) / (450e9 * 0.8)
    assert layout_comm(layout, fab, x).ep_s == pytest.approx(expected)
    # TP 2 (sequence parallel), expert TP 1: each rank dispatches its half of the tokens
    layout2 = Layout(num_gpus=16, tp=2, ep=8, etp=1)
    assert layout_comm(layout2, fabric(H100, layout2), x).ep_s == pytest.approx(expected / 2)


def test_expert_tensor_parallel_traffic():
    # TP 2 with expert TP 2 (Megatron's default when unset) on two 8-GPU nodes: the EP group is 8 ranks 2
    # apart, 4 in each node. Per rank 134.2 MB (half the 268.4 MB of tokens x top-k x h x 2 B):
    # all-to-all: NVLink part 3/8 x 134.2 MB / 360 GB/s = 0.140 ms, NIC part 4/8 x 134.2 MB / (50 GB/s x 0.8)
    # = 1.678 ms (the larger); expert-TP all-gather / reduce-scatter of the 2 ranks' 268.4 MB: 1/2 x 268.4 MB
    # / 360 GB/s = 0.373 ms. 2 layers x 4 passes x (1.678 + 0.373) ms
    per_rank = 8192 * 8 * 2048 * 2 / 2
    x = CommInputs(trainable_params=0, gathered_params=0, grad_bytes=4, weight_bytes=2, micro_batches=1,
                   fwd_s=0, bwd_s=0, layers=2, activation_bytes=0, tp_collectives_per_layer=4, moe_layers=2,
                   moe_dispatch_bytes=8192 * 8 * 2048 * 2)
    layout = Layout(num_gpus=16, nodes=2, tp=2, ep=8)
    fab = fabric(H100, layout)
    a2a = 4 / 8 * per_rank / (400e9 / 8 * 0.8)
    gather = 1 / 2 * 2 * per_rank / (450e9 * 0.8)
    comm = layout_comm(layout, fab, x)
    assert comm.ep_s == pytest.approx(2 * 4 * (a2a + gather))
    assert "expert parallel over InfiniBand NDR, 400 Gb/s per GPU; 4/8 of each all-to-all leaves the node " \
           "through each GPU's own NIC" in comm.links
    # expert TP 1: the EP group is one node's 8 consecutive ranks, no expert-TP collectives
    one = Layout(num_gpus=16, nodes=2, tp=2, ep=8, etp=1)
    assert layout_comm(one, fabric(H100, one), x).ep_s == pytest.approx(2 * 4 * 7 / 8 * per_rank / (450e9 * 0.8))


def test_dispatch_bytes_per_layer():
    # bf16 full fine-tune (one forward, one backward): T 8192, top-8, h 2048, f 768 (fc1 2 x 768), 128 experts, 16 local
    # permute + unpermute 2 x 2 x 2048 x 8192 x 9 = 603,979,776; local sort both ways 4 x 2 x 2048 x 65,536
    # = 1,073,741,824; activation 2 x 65,536 x 768 x 3 = 301,989,888; router 8 x 8192 x 128 = 8,388,608
    # forward 1,988,100,096; backward + activation input reread 2 x 65,536 x 1536 = 2,189,426,688
    setup = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, batch_size=2, seq_len=4096, precision=Precision.BF16)
    ft = flops_per_token(setup)
    shape = expert_shape(setup, Layout(num_gpus=8, ep=8), 8192.0)
    eff = matmul_efficiency(H100, "bf16", hidden_size=2048, tokens_per_micro_batch=8192, stack=KernelStack.FUSED)
    t = expert_layer_time(shape, ft, setup, H100, eff, DEFAULT_MODEL, grad_bytes=4)
    assert t.dispatch_bytes == 1_988_100_096 + 2_189_426_688
    assert t.dispatch_s == pytest.approx(t.dispatch_bytes / (3350e9 * 0.8))


def test_moe_term_only_for_moe_models():
    # the routed-expert term is stated for an MoE model, absent for a dense one and under --efficiency
    setup = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, batch_size=2, seq_len=4096,
                          precision=Precision.BF16)
    layout = Layout(num_gpus=8, ep=8)
    moe = step_time(setup, layout, H100)
    assert any("routed experts" in n for n in moe.notes)
    pinned = step_time(setup, layout, H100, options=TimingOptions(efficiency=moe.efficiency.value))
    assert not any("routed experts" in n for n in pinned.notes)
    dense = replace(setup, model=replace(QWEN3_MOE, moe=None))
    assert not any("routed experts" in n for n in step_time(dense, Layout(num_gpus=8), H100).notes)


def test_experts_are_held_and_sharded_by_expert_parallelism():
    # a GPU holds its 1/ep of the routed experts (and all of the rest): the optimizer steps those, and
    # with the distributed optimizer (ZeRO-1) everything is spread over the data-parallel ranks
    setup = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, batch_size=2, seq_len=4096)
    total = count_params(QWEN3_MOE)
    experts = total.experts                       # 4 layers x 128 experts x 3 x 2048 x 768
    assert experts == 4 * 128 * 3 * 2048 * 768
    dense, held = params_on_gpu(setup, Layout(num_gpus=8, ep=8), total.total, trainable=True)
    assert (dense, held) == (total.total - experts, experts / 8)
    zero1 = Layout(num_gpus=8, ep=8, zero=ZeroStage.OPTIMIZER)
    assert sharded_params_on_gpu(setup, zero1, total.total, trainable=True) == pytest.approx(total.total / 8)
    lora = replace(setup, method=Method.LORA, lora=LoraConfig(rank=8))   # frozen experts: none trained
    assert params_on_gpu(lora, Layout(num_gpus=8, ep=8), 1e6, trainable=True) == (1e6, 0.0)


def test_expert_gradients_reduce_over_the_expert_data_parallel_group():
    # 16 GPUs on 2 nodes, EP 8: the experts' data-parallel group is 16 / 8 = 2 ranks, one per node, so their
    # all-reduce crosses the InfiniBand NIC of one GPU: 2 x (2 - 1) / 2 x bytes / (400 Gb/s x 0.8); the dense
    # gradients reduce over all 16 with a node's 8 NICs (min(NVLink 450, 8 x 50 GB/s) x 0.8)
    layout = Layout(num_gpus=16, nodes=2, ep=8)
    fab = fabric(H100, layout)
    dense_p, expert_p = 1e9, 4e9
    x = CommInputs(trainable_params=dense_p + expert_p, gathered_params=dense_p + expert_p, grad_bytes=4,
                   weight_bytes=2, micro_batches=1, fwd_s=0, bwd_s=0, layers=1, activation_bytes=0,
                   tp_collectives_per_layer=4, expert_trainable_params=expert_p, expert_gathered_params=expert_p)
    dense_s = 2 * 15 / 16 * dense_p * 4 / (400e9 * 0.8)
    expert_s = 2 * 1 / 2 * expert_p * 4 / (50e9 * 0.8)
    comm = layout_comm(layout, fab, x)
    assert comm.dp_s == pytest.approx(dense_s + expert_s)
    assert any("expert data parallel (2 ranks)" in link for link in comm.links)


def test_alltoall_across_nodes_runs_at_one_nic_a_gpu():
    # EP 32 over 4 nodes of 8 H100s (InfiniBand NDR, 400 Gb/s a GPU): each GPU sends 24/32 of its buffer
    # to the other nodes through its own NIC (50 GB/s x 0.8) and 7/32 over NVLink (450 GB/s x 0.8) at
    # the same time, so the NIC part decides: 24/32 x 268.4 MB / 40 GB/s = 5.03 ms an all-to-all, 4 of them
    # per layer (dispatch + combine, forward + backward), 2 layers. A ring-style bus bandwidth (the node's 8
    # NICs together) would have made it 8 x faster.
    layout = Layout(num_gpus=32, nodes=4, ep=32)
    dispatch = 8192 * 8 * 2048 * 2
    x = CommInputs(trainable_params=0, gathered_params=0, grad_bytes=4, weight_bytes=2, micro_batches=1,
                   fwd_s=0, bwd_s=0, layers=2, activation_bytes=0, tp_collectives_per_layer=4, moe_layers=2,
                   moe_dispatch_bytes=dispatch)
    per_call = 24 / 32 * dispatch / (50e9 * 0.8)
    assert per_call == pytest.approx(5.03e-3, rel=1e-3)
    assert layout_comm(layout, fabric(H100, layout), x).ep_s == pytest.approx(2 * 4 * per_call)


def test_experts_without_expert_parallelism_reduce_with_the_rest():
    # ep 1: the routed experts are ordinary data-parallel parameters; 8 GPUs of one node, DDP: the 1e9 dense
    # and 4e9 expert fp32 gradients all-reduce together over NVLink, 2 x 7/8 x 20 GB / (450 GB/s x 0.8)
    layout = Layout(num_gpus=8)
    x = CommInputs(trainable_params=5e9, gathered_params=5e9, grad_bytes=4, weight_bytes=2, micro_batches=1,
                   fwd_s=0, bwd_s=0, layers=1, activation_bytes=0, tp_collectives_per_layer=4,
                   expert_trainable_params=4e9, expert_gathered_params=4e9)
    assert layout_comm(layout, fabric(H100, layout), x).dp_s == pytest.approx(2 * 7 / 8 * 20e9 / (450e9 * 0.8))


def test_moe_layers_have_no_mlp_tensor_parallel_collective():
    # tp 2 with sequence parallelism: attention and MLP each all-gather + reduce-scatter (one all-reduce's
    # traffic) a pass. 2 layers x 4 (forward and backward, attention and MLP) = 8 all-reduces of a dense
    # stack; MoE layers without a shared expert keep attention's only: 2 x 2 = 4, each 2 x 1/2 x 33.55 MB
    # (8192 tokens x 2048 x 2 B) / (450 GB/s x 0.8) = 93.2 us
    layout = Layout(num_gpus=8, tp=2, ep=4, etp=1)
    x = CommInputs(trainable_params=0, gathered_params=0, grad_bytes=4, weight_bytes=2, micro_batches=1,
                   fwd_s=0, bwd_s=0, layers=2, activation_bytes=8192 * 2048 * 2, tp_collectives_per_layer=4,
                   moe_layers=2, tp_free_moe_layers=2)
    per = 2 * 1 / 2 * 8192 * 2048 * 2 / (450e9 * 0.8)
    assert layout_comm(layout, fabric(H100, layout), x).tp_s == pytest.approx(4 * per)
    shared = replace(x, tp_free_moe_layers=0)       # a shared expert: its MLP is TP-split, gathers as dense
    assert layout_comm(layout, fabric(H100, layout), shared).tp_s == pytest.approx(8 * per)


def test_nvl72_domain_keeps_expert_all_to_all_on_nvlink():
    # GB200 NVL72: 72 GPUs on one NVLink fabric (catalog nvlink_domain_gpus), 4 to a compute tray. EP 64 of
    # 256 GPUs stays inside a rack: each GPU sends 63/64 of its buffer over NVLink 5 (1800 GB/s
    # bidirectional -> 900 one way) at the collective fraction 0.8, none of it over the NICs.
    from trainplan import catalog

    gb200 = catalog.resolve_gpu("gb200")
    assert gb200.nvlink_domain_gpus == 72 and catalog.resolve_gpu("h100-sxm").nvlink_domain_gpus == 0
    layout = Layout(gpu_id="gb200", num_gpus=256, nodes=64, ep=64)
    fab = fabric(gb200, layout)
    assert fab.gpus_per_node == 72
    assert fab.alltoall_s(1e9, 64) == pytest.approx(63 / 64 * 1e9 / (900e9 * 0.8))
    # a group wider than the rack leaves it through each GPU's own NIC (NDR 400 Gb/s = 50 GB/s)
    assert fab.alltoall_s(1e9, 128) == pytest.approx(56 / 128 * 1e9 / (50e9 * 0.8))
    # H100 nodes of 8: the same EP 64 crosses nodes
    h100 = fabric(catalog.resolve_gpu("h100-sxm"), Layout(gpu_id="h100-sxm", num_gpus=256, nodes=32, ep=64))
    assert h100.gpus_per_node == 8
