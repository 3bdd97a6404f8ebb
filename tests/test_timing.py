"""Step time, steps and wall-clock (trainplan.timing, .steps, .comm, .efficiency)."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest

from trainplan.enums import (
    Attention,
    Framework,
    Fsdp,
    GradCkpt,
    Method,
    Offload,
    Optimizer,
    Precision,
    ZeroStage,
)
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.training import (
    Implementation,
    Layout,
    LoraConfig,
    QuantConfig,
    TrainingSetup,
    Workload,
)
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.comm import CommInputs, ring_cp_s
from trainplan.timing.efficiency import KernelStack, matmul_efficiency
from trainplan.timing.links import INTERCONNECTS, Fabric, allgather_s, fabric, internode_link, ring_allreduce_s
from trainplan.timing.flops import flops_per_token
from trainplan.timing.estimate import TimingOptions, estimate_time, step_time
from trainplan.timing.steps import (
    expected_batch_max,
    sequence_shape,
    steps_per_epoch,
    total_steps,
)

LLAMA2_7B = ModelSpec(name="llama-2-7b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                      num_heads=32, num_kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32000,
                      tied_embeddings=False)
SMALL = replace(LLAMA2_7B, name="small", hidden_size=1024, num_heads=8, num_kv_heads=8, head_dim=128,
                intermediate_size=2816,
                num_layers=16)
# hardware.md section 1: dense peaks, HBM bandwidth, NVLink (bidirectional per GPU)
A100 = GpuSpec(id="a100-sxm4-80gb", name="A100 SXM4 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=2039e9,
               peak_flops_per_s={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
               interconnect="NVLink 3", gpu_gpu_bw_bytes_per_s=600e9, pcie="Gen4 x16", generation="ampere")
H100 = GpuSpec(id="h100-sxm", name="H100 SXM", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=3350e9,
               peak_flops_per_s={"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12},
               interconnect="NVLink 4", gpu_gpu_bw_bytes_per_s=900e9, pcie="Gen5 x16", generation="hopper")


def _seed_setup(**kw) -> TrainingSetup:
    # the seed article: 7B full fine-tune, fp16, batch 32, 1024 tokens per sample
    kw.setdefault("precision", Precision.FP16_PURE)
    return TrainingSetup(model=LLAMA2_7B, method=kw.pop("method", Method.FULL), batch_size=32, seq_len=1024, **kw)


SEED_WORKLOAD = Workload(samples=10_000, tokens_per_sample=1024, epochs=3)


# --- steps ---------------------------------------------------------------------------------------

def test_seed_example_steps():
    # 10,000 / 32 = 312.5 -> 313 steps per epoch; x 3 epochs = 939 (the article's numbers)
    assert steps_per_epoch(10_000, 32) == 313
    assert total_steps(313, 3) == 939
    est = estimate_time(_seed_setup(), Layout(), A100, SEED_WORKLOAD)
    assert est.steps == 939
    assert est.train_s == pytest.approx(939 * est.step_s)
    assert est.gpu_hours == pytest.approx(est.total_s / 3600)


def test_global_batch_uses_grad_accum_and_data_parallel():
    setup = TrainingSetup(model=LLAMA2_7B, batch_size=4, grad_accum=2, seq_len=1024)
    st = step_time(setup, Layout(num_gpus=4), A100)
    assert st.global_batch == 4 * 2 * 4
    est = estimate_time(setup, Layout(num_gpus=4), A100, Workload(samples=1000))
    assert est.steps == 32                                    # ceil(1000 / 32)


def test_fractional_epochs_round_up():
    assert total_steps(313, 0.5) == 157


def test_zero_samples_is_an_error():
    with pytest.raises(TrainplanError, match="samples"):
        Workload(samples=0)
    with pytest.raises(TrainplanError, match="samples"):
        steps_per_epoch(0, 32)


def test_packing_reduces_steps_and_padding_costs_compute():
    # 1000 samples of 256 tokens packed into 1024-token sequences: 250 sequences
    packed = sequence_shape(seq_len=1024, micro_batch=4, tokens_per_sample=256, packing=True)
    assert packed.samples_per_sequence == 4
    assert steps_per_epoch(1000, 8, packed.samples_per_sequence) == 32     # ceil(250 / 8)
    # dynamic padding: lengths 1 and 2 equally likely, batch of 2 -> E[max] = 1 x 1/4 + 2 x 3/4
    assert expected_batch_max((1, 2), 2) == pytest.approx(1.75)
    padded = sequence_shape(seq_len=1024, micro_batch=8, tokens_per_sample=None, packing=False,
                            lengths=(100, 200, 300, 900))
    assert padded.real_tokens == 375
    assert padded.padded_len > padded.real_tokens


def test_padding_free_packing_attends_within_each_sample():
    # packed without padding-free: one causal span over the whole 8192-token pack
    assert sequence_shape(seq_len=8192, micro_batch=1, tokens_per_sample=512, packing=True).attention_span == 8192
    # padding-free (flash varlen over each sample's position ids): the sample's span, 16 samples a pack
    free = sequence_shape(seq_len=8192, micro_batch=1, tokens_per_sample=512, packing=True, padding_free=True)
    assert (free.padded_len, free.samples_per_sequence, free.attention_span) == (8192, 16, 512)
    # lengths 256 and 768: a token's causal span averages sum(L^2) / sum(L) = (65,536 + 589,824) / 1024 = 640
    mixed = sequence_shape(seq_len=8192, micro_batch=1, tokens_per_sample=None, packing=True, padding_free=True,
                           lengths=(256, 768))
    assert mixed.attention_span == 640
    # the step runs 8192 tokens a sequence with the attention FLOPs of 512-token sequences
    setup = replace(TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=8192), impl=Implementation(padding_free=True))
    st = step_time(setup, Layout(), A100, workload=Workload(tokens_per_sample=512, packing=True))
    assert st.per_token.attention_fwd == flops_per_token(setup, seq_len=512).attention_fwd
    assert st.tokens_per_step == 8192
    whole = step_time(replace(setup, impl=Implementation()), Layout(), A100,
                      workload=Workload(tokens_per_sample=512, packing=True))
    assert whole.per_token.attention_fwd == flops_per_token(setup, seq_len=8192).attention_fwd
    assert st.step_s < whole.step_s


# --- communication -------------------------------------------------------------------------------

def test_ring_allreduce_time():
    # 1 GB over 8 GPUs at a 100 GB/s bus: 2 x 7/8 x 1e9 / 1e11 = 17.5 ms
    assert ring_allreduce_s(1e9, 8, 100e9) == pytest.approx(0.0175)
    assert allgather_s(1e9, 8, 100e9) == pytest.approx(0.00875)
    assert ring_allreduce_s(1e9, 1, 100e9) == 0


def test_fabric_inside_and_across_nodes():
    fab = fabric(A100, Layout(num_gpus=16, nodes=2), interconnect="ib-hdr")
    assert fab.bus_bw(8) == pytest.approx(300e9 * 0.8)                 # NVLink3, one direction
    # across nodes the 8 members' HDR NICs carry the ring together: min(300, 8 x 25) GB/s
    assert fab.bus_bw(16, members_per_node=8) == pytest.approx(200e9 * 0.8)
    assert fab.bus_bw(16, members_per_node=1) == pytest.approx(25e9 * 0.8)
    eth = Fabric(intra=fab.intra, inter=INTERCONNECTS["ethernet-100"], gpus_per_node=8, collective_fraction=0.8)
    assert eth.bus_bw(16, 8) == pytest.approx(12.5e9 * 0.8)           # one shared 100 GbE NIC


def test_unknown_interconnect_is_an_error():
    with pytest.raises(TrainplanError, match="interconnect"):
        internode_link("carrier-pigeon")
    with pytest.raises(TrainplanError, match="interconnect"):
        internode_link("80GB")              # a memory size: a rate needs its kind or a network unit


@pytest.mark.parametrize("text, gb_per_s, per_node", [
    ("4x100g-roce", 50.0, True),            # 4 NICs x 100 Gb/s = 400 Gb/s = 50 GB/s for the node
    ("4 * 100Gb RoCE", 50.0, True),         # the same, as InternEvo's train_performance.md writes it
    ("8x200Gbps InfiniBand", 200.0, True),  # DGX A100: 8 x HDR = 1.6 Tb/s
    ("100GbE", 12.5, True),                 # one 100 GbE NIC for the node
    ("400g-ib-per-gpu", 50.0, False),       # one NDR NIC per GPU
])
def test_a_network_described_by_its_nics(text, gb_per_s, per_node):
    link = internode_link(text)
    assert link.bw_bytes_per_s == pytest.approx(gb_per_s * 1e9) and link.per_node == per_node
    # across nodes a ring's crossing is carried by the node's NICs together: 8 members of a node share
    # 4 x 100 Gb RoCE, so the bus bandwidth is the node's 50 GB/s x 0.8, as 8 per-GPU 50 Gb/s NICs would give
    fab = Fabric(intra=fabric(A100, Layout(num_gpus=16, nodes=2)).intra, inter=link, gpus_per_node=8,
                 collective_fraction=0.8)
    members = 8 if per_node else 1
    assert fab.bus_bw(16, members_per_node=members) == pytest.approx(gb_per_s * 1e9 * 0.8)


def test_slower_network_exposes_more_communication():
    setup = TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=2048, grad_accum=1)
    layout = Layout(num_gpus=16, nodes=2, fsdp=Fsdp.FULL)
    fast = step_time(setup, layout, A100, options=TimingOptions(interconnect="ib-hdr"))
    slow = step_time(setup, layout, A100, options=TimingOptions(interconnect="ethernet-25"))
    assert slow.breakdown.communication_s > fast.breakdown.communication_s
    assert slow.step_s > fast.step_s


def test_zero3_moves_one_and_a_half_times_ddp():
    # DDP: all-reduce = reduce-scatter + all-gather of the gradients; ZeRO-3: all-gather of the
    # weights in forward and again in backward + reduce-scatter of the gradients (ZeRO paper, 1.5x)
    setup = TrainingSetup(model=SMALL, batch_size=1, seq_len=1024, precision=Precision.BF16_PURE)
    ddp = step_time(setup, Layout(num_gpus=8), A100)
    z3 = step_time(setup, Layout(num_gpus=8, zero=ZeroStage.PARAMETERS), A100)
    assert z3.comm.total_s == pytest.approx(1.5 * ddp.comm.total_s)


def test_tensor_parallel_all_reduces_are_counted():
    setup = TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=2048)
    st = step_time(setup, Layout(num_gpus=2, tp=2), A100)
    # 4 all-reduces per layer (2 forward, 2 backward) of 2048 x 4096 x 2 bytes over NVLink3
    one = ring_allreduce_s(2048 * 4096 * 2, 2, 300e9 * 0.8)
    assert st.comm.tp_s == pytest.approx(32 * 4 * one)


@pytest.mark.parametrize("ckpt, collectives", [(GradCkpt.NONE, 4), (GradCkpt.OP, 5), (GradCkpt.FULL, 6)])
def test_op_level_checkpointing_reruns_the_tensor_parallel_all_gathers(ckpt, collectives):
    # torchtitan's op-level SAC saves reduce-scatter outputs, not all-gather outputs
    # (distributed/activation_checkpoint.py _get_default_save_ops): the backward reruns the attention and MLP
    # all-gathers, half an all-reduce's volume each: 4 + 1 = 5 per layer; full recomputation reruns all: 6
    setup = replace(TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=2048, grad_ckpt=ckpt),
                    framework=Framework.TORCHTITAN)
    st = step_time(setup, Layout(num_gpus=2, tp=2), A100)
    one = ring_allreduce_s(2048 * 4096 * 2, 2, 300e9 * 0.8)
    assert st.comm.tp_s == pytest.approx(32 * collectives * one)


def test_ulysses_all_to_alls_are_exposed_ring_exchange_is_hidden():
    # Llama-2-7B, 1 x 32768 tokens over 8 A100s as 8-way sequence parallelism, no recomputation (2 passes).
    # Ulysses (DeepSpeed DistributedAttention): per layer and pass all-to-alls of q and output (4096 local
    # tokens x 4096 x 2 bytes each) and of k, v (4096 x 2 x 4096 x 2): 134.2 MB, 7/8 of it over NVLink 3 at
    # 0.8 x 300 GB/s = 0.489 ms; x 32 layers x 2 passes = 31.3 ms, all of it on the step
    setup = TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=32768)
    uly_step = step_time(setup, Layout(num_gpus=8, cp=8, ulysses=True), A100)
    uly = uly_step.comm
    [note] = [n for n in uly_step.notes if n.startswith("Ulysses")]
    from trainplan.i18n import translate
    assert translate(note, lang="zh") == ("Ulysses 序列并行经由 NVLink 3：注意力前后对 q、k、v 和输出做 all-to-all，"
                                          "不与计算重叠")
    per_pass = 7 / 8 * (2 * 4096 * 4096 * 2 + 4096 * 2 * 4096 * 2) / (0.8 * 300e9)
    assert uly.cp_s == pytest.approx(32 * 2 * per_pass) and uly.cp_s == pytest.approx(0.0313, abs=1e-4)
    assert uly.cp_exposed_s == uly.cp_s
    # ring attention (Megatron / torchtitan context parallelism): the K/V exchange runs under attention
    ring = step_time(setup, Layout(num_gpus=8, cp=8), A100).comm
    assert ring.cp_s > 0 and ring.cp_exposed_s == 0
    # the ring's bytes by hand: per layer (forward + backward's K/V and their gradients) 3 x 7 sends of one
    # 4096-token block's K and V, 4096 x 2 x 4096 x 2 bytes = 67.1 MB, at 0.8 x 300 GB/s over NVLink 3
    assert ring.cp_s == pytest.approx(32 * 3 * 7 * 4096 * 2 * 4096 * 2 / (0.8 * 300e9))


def test_ring_context_parallel_exposes_what_a_send_takes_beyond_its_block():
    # by hand: sends of 1 GB at 100 GB/s = 10 ms; cp 4 (3 sends per pass); 2 layers whose attention takes
    # 80 ms forward and 80 ms backward per micro-batch: a block is 80 / 2 / 4 = 10 ms. Forward: 10 ms sends
    # under 10 ms blocks, hidden. Backward: K/V and their gradients, 20 ms per send under a 10 ms block,
    # 10 ms exposed each: 2 layers x 3 x 10 ms = 60 ms. On the wire: 2 layers x (1 + 2) x 3 x 10 ms = 180 ms;
    # with full recomputation the forward ring runs twice: 2 x 4 x 3 x 10 = 240 ms, the same 60 ms exposed
    x = CommInputs(trainable_params=0.0, gathered_params=0.0, grad_bytes=2, weight_bytes=2.0, micro_batches=1,
                   fwd_s=1.0, bwd_s=2.0, layers=2, activation_bytes=0.0, tp_collectives_per_layer=4,
                   kv_bytes=1e9, attention_fwd_s=0.08, attention_bwd_s=0.08)
    assert ring_cp_s(x, 4, 100e9) == pytest.approx((0.180, 0.060))
    assert ring_cp_s(replace(x, layer_passes=3), 4, 100e9) == pytest.approx((0.240, 0.060))
    # a block longer than its sends hides them all
    assert ring_cp_s(replace(x, attention_bwd_s=0.2), 4, 100e9)[1] == 0.0


def test_ring_context_parallel_sends_each_gpus_tp_shard_of_the_heads():
    # Megatron-Core's CP (docs/user-guide/features/context_parallel.md): "KV communication happens between a
    # GPU and its counterparts in other TP groups": with TP 2 each GPU sends half the heads' K and V. Both
    # layouts stay in one 8-GPU NVLink node (same bandwidth), the same micro-batch tokens: half the bytes
    setup = TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=32768)
    alone = step_time(setup, Layout(num_gpus=4, cp=4), A100).comm
    with_tp = step_time(setup, Layout(num_gpus=8, tp=2, cp=4), A100).comm
    assert with_tp.cp_s == pytest.approx(alone.cp_s / 2)


# --- pipeline bubble -----------------------------------------------------------------------------

@pytest.mark.parametrize("p, m, v", [(4, 8, 1), (2, 16, 1), (8, 8, 2)])
def test_pipeline_bubble_fraction(p, m, v):
    # 1F1B: bubble / step = (p - 1) / (v m + p - 1) (Narayanan et al. 2021)
    setup = TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=1024, grad_accum=m)
    st = step_time(setup, Layout(num_gpus=p, pp=p), A100, options=TimingOptions(pp_interleave=v))
    b = st.breakdown
    assert b.bubble_s / (b.compute_s + b.bubble_s) == pytest.approx((p - 1) / (v * m + p - 1))


# --- efficiency ----------------------------------------------------------------------------------

def _eff(gpu, hidden=4096, tokens=8192, stack=KernelStack.FUSED):
    return matmul_efficiency(gpu, "bf16", hidden_size=hidden, tokens_per_micro_batch=tokens, stack=stack).value


def test_efficiency_depends_on_what_matters():
    assert 0 < _eff(H100) < _eff(A100) < 0.869                # A100 easier to saturate; below MAMF
    assert _eff(A100, hidden=1024) < _eff(A100, hidden=8192)  # small matmuls run below peak
    assert _eff(A100, tokens=512) < _eff(A100, tokens=16384)  # few tokens per micro-batch
    assert _eff(A100, stack=KernelStack.EAGER) < _eff(A100)   # HF eager below fused stacks


def test_torchtitan_runs_eager_kernels_unless_compiled():
    # torchtitan v0.2.2: compile.enable defaults to False (config/job_config.py) and its llama3 decoder
    # is eager PyTorch (nn.RMSNorm, F.silu(w1 x) * w3 x, fp32 complex RoPE): the eager stack, kappa 11.4;
    # compiled, the fused one, kappa 4.9. By hand on H100 at h = 4096, 8192 tokens per micro-batch:
    # ridge = 989 / 3.35; sustained interpolated between the anchors (153, 0.94) and (295, 0.76);
    # E = 0.803 x sustained; tokens factor 8192 / (8192 + 390).
    ridge = 989e12 / 3350e9
    e_max = 0.803 * (0.94 + (0.76 - 0.94) / (295 - 153) * (ridge - 153))
    tokens = 8192 / (8192 + 390)
    setup = replace(TrainingSetup(model=LLAMA2_7B, batch_size=2, seq_len=4096), framework=Framework.TORCHTITAN)
    eager = step_time(setup, Layout(), H100).efficiency
    compiled = step_time(setup, Layout(), H100, options=TimingOptions(compiled=True)).efficiency
    assert eager.stack is KernelStack.EAGER and compiled.stack is KernelStack.FUSED
    assert eager.value == pytest.approx(e_max * tokens / (1 + 11.4 * e_max * ridge / 4096), rel=1e-9)
    assert compiled.value == pytest.approx(e_max * tokens / (1 + 4.9 * e_max * ridge / 4096), rel=1e-9)
    # Megatron's own fused kernels need no compile
    megatron = step_time(replace(setup, framework=Framework.MEGATRON), Layout(), H100).efficiency
    assert megatron.stack is KernelStack.FUSED


def test_meta_h100_variant_is_timed_on_its_own_memory_system():
    # torchtitan's Grand Teton benchmarks ran on H100s "equipped with 96GB HBM2e with 2.4 TB/sec peak memory
    # bandwidth" at 500 W (benchmarks/llama3_h100_202412_torchtitan.md); torchao measured 78% of peak on it
    # (roofline_utils.py pct_achievable_gemm_tops). Same dense peak, 2.4 instead of 3.35 TB/s: the ridge
    # 989 / 2.4 = 412 FLOP/byte lies past the H100 anchor and the line through (153, 0.94) and (295, 0.76)
    # gives 0.94 - 0.18 x (412.08 - 153) / 142 = 0.6116; E = 0.78 x 0.6116 = 0.477 (the SXM5: 0.803 x 0.76).
    from trainplan import catalog
    meta = catalog.resolve_gpu("h100-96gb")
    assert meta.id == "h100-sxm-96gb" and meta.memory_bw_bytes_per_s == 2.4e12 and meta.tdp_w == 500
    eff = matmul_efficiency(meta, "bf16", hidden_size=8192, tokens_per_micro_batch=8192, stack=KernelStack.FUSED)
    ridge = 989e12 / 2.4e12
    assert eff.ridge == pytest.approx(ridge) and eff.mamf_fraction == 0.78 and eff.mamf_known
    assert eff.sustained == pytest.approx(0.94 - 0.18 * (ridge - 153) / 142, rel=1e-9)
    assert eff.sustained == pytest.approx(0.6116, abs=1e-4)
    sxm = matmul_efficiency(H100, "bf16", hidden_size=8192, tokens_per_micro_batch=8192, stack=KernelStack.FUSED)
    assert eff.value / sxm.value < 0.80     # E 0.477 vs 0.610, and a larger memory-bound share at the wider ridge


def test_fp8_ceiling_unmeasured_falls_back_to_the_gpus_own_bf16_ceiling():
    # stas00 ml-engineering MAMF table: MI300X bf16 668.4 of 1300 TFLOP/s = 51.4%, FP8 not measured. The FP8
    # GEMMs use that 51.4%, not the 80% NVIDIA median a GPU with no measurement at all gets (an L40S).
    from trainplan import catalog
    from trainplan.timing.efficiency import mamf_fraction
    mi300x = catalog.resolve_gpu("mi300x")
    assert mamf_fraction(mi300x, "fp8") == (0.514, False)
    assert mamf_fraction(mi300x, "bf16") == (0.514, True)
    assert mamf_fraction(H100, "fp8") == (0.709, True)
    assert mamf_fraction(catalog.resolve_gpu("l40s"), "fp8") == (0.80, False)
    setup = replace(_seed_setup(), precision=Precision.FP8)
    notes = step_time(setup, Layout(gpu_id="mi300x"), mi300x).notes
    assert "no measured FP8 matmul ceiling for mi300x: its bf16 one, 51% of peak, assumed" in notes


def test_efficiency_override():
    st = step_time(_seed_setup(), Layout(), A100, options=TimingOptions(efficiency=0.5))
    assert st.efficiency.value == 0.5
    assert st.efficiency.overridden


def test_hf_lora_slower_per_flop_than_megatron_pretraining():
    lora = TrainingSetup(model=LLAMA2_7B, method=Method.LORA, lora=LoraConfig(rank=64, targets=("all-linear",)),
                         batch_size=1, seq_len=2048, framework=Framework.HF, grad_ckpt=GradCkpt.FULL)
    mega = TrainingSetup(model=LLAMA2_7B, batch_size=1, seq_len=2048, framework=Framework.MEGATRON,
                         attention=Attention.FLASH)
    a = step_time(lora, Layout(), A100)
    b = step_time(mega, Layout(), A100)
    # achieved FLOP/s during compute (the optimizer step of a 1-sequence batch is left out)
    assert a.hardware_flops_per_step / a.breakdown.compute_s < b.hardware_flops_per_step / b.breakdown.compute_s


# --- memory-bound parts --------------------------------------------------------------------------

def test_qlora_pays_for_dequantisation():
    cfg = LoraConfig(rank=16, targets=("all-linear",))
    lora = step_time(TrainingSetup(model=LLAMA2_7B, method=Method.LORA, lora=cfg, seq_len=2048), Layout(), A100)
    qlora = step_time(TrainingSetup(model=LLAMA2_7B, method=Method.QLORA, lora=cfg, quant=QuantConfig(),
                                    seq_len=2048), Layout(), A100)
    assert lora.breakdown.dequant_s == 0
    # 32 layers x 202,375,168 weights x 2.5625 B x 2 uses / (2.039 TB/s x 0.8)
    assert qlora.breakdown.dequant_s == pytest.approx(32 * 202_375_168 * 2.5625 * 2 / (2039e9 * 0.8))
    assert qlora.step_s > lora.step_s


def test_optimizer_step_is_memory_bound_and_shards_with_zero():
    setup = TrainingSetup(model=SMALL, optimizer=Optimizer.ADAMW_FUSED, seq_len=1024)
    one = step_time(setup, Layout(num_gpus=8), A100)
    sharded = step_time(setup, Layout(num_gpus=8, zero=ZeroStage.OPTIMIZER), A100)
    assert sharded.breakdown.optimizer_s == pytest.approx(one.breakdown.optimizer_s / 8)
    off = step_time(setup, Layout(num_gpus=1, offload=Offload.OPTIMIZER), A100)
    assert off.breakdown.offload_s > 0


def test_retry_eval_and_checkpoint():
    wl = Workload(samples=10_000, tokens_per_sample=1024, epochs=3, retry_factor=2.5, eval_fraction=0.1,
                  checkpoint_saves=3, disk_bw_bytes_per_s=1e9)
    est = estimate_time(_seed_setup(), Layout(), A100, wl)
    assert est.eval_s > 0
    # full fine-tune, pure fp16: weights 2 B + AdamW states 2 x 2 B per parameter
    assert est.checkpoint_s == pytest.approx(3 * 6_738_415_616 * 6 / 1e9)
    assert est.total_s == pytest.approx(est.train_s + est.eval_s + est.checkpoint_s)
    assert est.gpu_hours_with_retries == pytest.approx(2.5 * est.gpu_hours)
    assert est.total_with_retries_s == pytest.approx(2.5 * est.total_s)


def test_time_json_has_the_product_keys_and_a_chain():
    est = estimate_time(_seed_setup(), Layout(), A100, SEED_WORKLOAD)
    d = est.to_dict()
    for key in ("flops_per_step", "step_s", "steps", "total_s", "gpu_hours", "tokens_per_s_per_gpu", "mfu"):
        assert key in d
    assert 0 < est.mfu < 1 and 0 < est.hfu < 1     # HFU counts causal attention, MFU the full s^2
    labels = [row[0] for row in est.chain()]
    assert labels[0] == "tokens per step" and "GPU-hours" in labels
    assert est.breakdown.total_s == pytest.approx(est.step_s)


# --- published measurements (benchmarks/time_accuracy.py on the development set) ------------------

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "time_accuracy.py"


def _bench():
    spec = importlib.util.spec_from_file_location("time_accuracy", _BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["time_accuracy"] = mod          # dataclasses look their module up while building
    spec.loader.exec_module(mod)
    return mod


def test_dev_set_accuracy():
    mod = _bench()
    rows, _ = mod.run(mod.DEFAULT_CASES)             # tests/data/published_dev.json
    errors = [abs(r[5]) for r in rows]
    assert len(rows) >= 50
    assert statistics.median(errors) <= 0.20                    # issue 5: median |error| <= 20%
    llama2 = [r for r in rows if r[0].startswith("modelcard-llama2-")]
    assert len(llama2) == 3 and all(abs(r[5]) <= 0.25 for r in llama2)   # Llama 2 GPU-hours within 25%


def test_geforce_boxes_are_not_given_infiniband(capsys):
    """issue 13's must-show: a 7B full fine-tune on 32 x 4090 without --interconnect says what it
    assumed and does not assume InfiniBand: one 25 GbE NIC per node, shared by its 8 GPUs
    (25e9 / 8 bytes/s / 8 GPUs = 390.6 MB/s per GPU); an H100 keeps NDR (400 Gb/s per GPU)."""
    from trainplan.catalog import resolve_gpu
    from trainplan.cli import main

    rtx, h100 = resolve_gpu("4090"), resolve_gpu("h100")
    layout = Layout(gpu_id=rtx.id, num_gpus=32, nodes=4, zero=ZeroStage.PARAMETERS)
    fab = fabric(rtx, layout)
    assert fab.inter.name.startswith("Ethernet") and fab.inter.per_gpu_bytes_per_s(8) == pytest.approx(25e9 / 8 / 8)
    assert fabric(h100, Layout(gpu_id=h100.id, num_gpus=32, nodes=4)).inter.bw_bytes_per_s == pytest.approx(400e9 / 8)
    assert main(["estimate", "--model", "llama-2-7b", "--method", "full", "--gpu", "4090", "--num-gpus", "32",
                 "--nodes", "4", "--zero", "3"]) == 0
    out = capsys.readouterr().out
    assert "inter-node network assumed: Ethernet, 25 Gb/s per node; a guess for GeForce servers" in out
    assert "InfiniBand" not in out.replace("rarely have InfiniBand", "")


def test_l20_matmul_ceiling_is_its_measured_torch_matmul():
    # DefTruth/CUDA-Learn-Notes hgemm/README.md, L20 table: torch.matmul fp16 114.40 TFLOP/s at 4096 x 16384 x 2048,
    # of 119.5 TFLOP/s dense: 114.40 / 119.5 = 0.957. Ridge 119.5e12 / 864e9 = 138 FLOP/B, below A100's 153, so the
    # sustained fraction is at its 0.95 cap: a 4096-wide layer at 4096 tokens runs at 0.957 x 0.95 x width x tokens.
    from trainplan import catalog
    from trainplan.timing.efficiency import mamf_fraction
    l20 = catalog.resolve_gpu("l20")
    assert mamf_fraction(l20, "bf16") == (0.957, True)
    eff = matmul_efficiency(l20, "bf16", hidden_size=4096, tokens_per_micro_batch=4096, stack=KernelStack.FUSED)
    assert eff.ridge == pytest.approx(119.5e12 / 864e9) and eff.sustained == 0.95


def test_packed_padding_free_without_lengths_says_its_attention_is_an_upper_bound():
    from trainplan.timing.steps import sequence_shape

    unknown = sequence_shape(seq_len=8192, micro_batch=1, tokens_per_sample=None, packing=True, padding_free=True)
    assert unknown.samples_per_sequence == 1.0 and unknown.attention_span == 8192
    assert "sample lengths not given: each pack is timed as one sample, the most attention it can cost" in unknown.note
    # 2,000-token samples: 4.10 a pack, each attending within its own 2,000 tokens
    known = sequence_shape(seq_len=8192, micro_batch=1, tokens_per_sample=2000, packing=True, padding_free=True)
    assert known.attention_span == 2000 and known.samples_per_sequence == pytest.approx(4.096)
    assert "not given" not in known.note


def test_a_pcie_link_of_fewer_lanes_carries_that_share():
    """PCIe bandwidth is per lane: Gen4 x16 31 GB/s a direction (hardware.md 1.3), so an x8 card 15.5,
    a Gen5 x16 card 63; a GPU whose catalog entry names no width is taken as x16."""
    from trainplan import catalog
    from trainplan.timing.links import pcie_link

    base = catalog.resolve_gpu("rtx4090")
    assert pcie_link(replace(base, pcie="Gen4 x8")).bw_bytes_per_s == pytest.approx(15.5e9)
    assert pcie_link(replace(base, pcie="Gen4 x8")).name == "PCIe Gen4 x8"
    assert pcie_link(replace(base, pcie="Gen5 x16 (128 GB/s bidir)")).bw_bytes_per_s == pytest.approx(63e9)
    assert pcie_link(replace(base, pcie="Gen3")).bw_bytes_per_s == pytest.approx(15.75e9)
