"""MoE token dispatch (trainplan.timing.dispatch): Megatron's alltoall (a copy per routed expert) against
DeepEP (a copy per destination rank, per destination node across nodes; deepseek-ai/DeepEP
get_dispatch_layout), under balanced routing and NeMo AutoModel's FakeBalancedGate; and how a case
names them, with NeMo AutoModel read as the PyTorch FSDP2 stack it is."""

from __future__ import annotations

import math

import pytest

from trainplan.cases import map_case
from trainplan.cases.trainers import stated_moe_dispatch, trainer_facts
from trainplan.enums import Attention, Framework, MoeDispatcher, MoeRouting
from trainplan.job.frameworks import framework_in_text
from trainplan.job.training import Layout
from trainplan.specs import GpuSpec
from trainplan.timing.attention import AttentionKernel, attention_kernel
from trainplan.timing.dispatch import DispatchCopies, dispatch_copies
from trainplan.timing.links import fabric

H100 = GpuSpec(id="h100-sxm", name="H100 SXM", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=3350e9,
               peak_flops_per_s={"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12},
               interconnect="NVLink 4", gpu_gpu_bw_bytes_per_s=900e9, pcie="Gen5 x16", generation="hopper")


def test_megatron_alltoall_sends_a_copy_per_routed_expert():
    copies = dispatch_copies(MoeDispatcher.ALLTOALL, MoeRouting.BALANCED, experts=128, top_k=8, ep=8,
                             ranks_per_node=8)
    assert copies == DispatchCopies(rank_copies=8.0, node_copies=8.0, forwarded=False)


def test_deepep_under_balanced_routing_sends_a_token_once_to_each_rank_it_hits():
    # Qwen3-30B-A3B on one node: 128 experts, top 8, EP 8 (16 a rank). A rank misses all 8 of a token's experts
    # with probability (112/128)(111/127)...(105/121) = 0.33258, so a token reaches 8 x 0.66742 = 5.339 ranks
    # (every one on the node: one node copy)
    miss = math.prod((112 - i) / (128 - i) for i in range(8))
    copies = dispatch_copies(MoeDispatcher.DEEPEP, MoeRouting.BALANCED, experts=128, top_k=8, ep=8, ranks_per_node=8)
    assert miss == pytest.approx(0.33258, abs=1e-5)
    assert copies.rank_copies == pytest.approx(8 * (1 - miss)) and copies.rank_copies == pytest.approx(5.3394, abs=1e-4)
    assert copies.node_copies == pytest.approx(1.0)
    # DeepSeek-V3 over 8 nodes: 256 experts, top 8, EP 64, 32 experts a node: a node missed with probability
    # (224/256)(223/255)...(217/249), so 8 x (1 - that) nodes a token
    node_miss = math.prod((224 - i) / (256 - i) for i in range(8))
    v3 = dispatch_copies(MoeDispatcher.DEEPEP, MoeRouting.BALANCED, experts=256, top_k=8, ep=64, ranks_per_node=8)
    assert v3.node_copies == pytest.approx(8 * (1 - node_miss)) and v3.node_copies == pytest.approx(5.2947, abs=1e-4)


@pytest.mark.parametrize("experts, top_k, ep, ranks, nodes", [
    (128, 8, 8, 1.0, 1.0),       # Qwen3 MoE 30B, EP 8: experts 8t..8t+7 lie in one 16-expert rank
    (256, 8, 64, 2.0, 1.0),      # DeepSeek-V3, EP 64: two 4-expert ranks, one 32-expert node
    (384, 8, 32, 4 / 3, 1.0),    # Kimi K2, EP 32: 12 a rank; starts 0, 8, 16 cover 1, 2, 1 ranks
    (128, 4, 64, 2.0, 1.0),      # GPT-OSS 120B, EP 64: 2 a rank, a token's 4 experts on 2 ranks
])
def test_automodel_fake_gate_routes_a_token_to_consecutive_experts(experts, top_k, ep, ranks, nodes):
    copies = dispatch_copies(MoeDispatcher.DEEPEP, MoeRouting.CONSECUTIVE, experts=experts, top_k=top_k, ep=ep,
                             ranks_per_node=8)
    assert copies.rank_copies == pytest.approx(ranks) and copies.node_copies == pytest.approx(nodes)


def test_dispatch_time_with_top_k_copies_is_megatrons_all_to_all():
    for nodes in (1, 8):
        fab = fabric(H100, Layout(gpu_id="h100-sxm", num_gpus=8 * nodes, nodes=nodes, ep=8 * nodes))
        top_k = DispatchCopies(rank_copies=8.0, node_copies=8.0, forwarded=False)
        assert fab.dispatch_s(1e9, 8 * nodes, 1, top_k) == pytest.approx(fab.alltoall_s(8e9, 8 * nodes))


def test_deepep_dispatch_time_over_nodes_is_its_node_copies_over_the_nic():
    # EP 64 over 8 H100 nodes (NDR, 400 Gb/s = 50 GB/s a GPU; NVLink 4, 450 GB/s a direction; 0.8 of each),
    # 1 GB of tokens a GPU, 2 rank copies and 1 node copy a token: RDMA 1 x 56/64 x 1e9 / 40e9 = 21.875 ms,
    # NVLink 2 x 63/64 x 1e9 / 360e9 = 5.47 ms; both at once: 21.875 ms (Megatron's 8 copies: 175 ms)
    fab = fabric(H100, Layout(gpu_id="h100-sxm", num_gpus=64, nodes=8, ep=64))
    deepep = DispatchCopies(rank_copies=2.0, node_copies=1.0, forwarded=True)
    assert fab.dispatch_s(1e9, 64, 1, deepep) == pytest.approx(0.021875)
    assert fab.alltoall_s(8e9, 64) == pytest.approx(0.175)
    # one node: only the NVLink side, 5.339 copies x 7/8 x 1e9 / 360e9
    one = fabric(H100, Layout(gpu_id="h100-sxm", num_gpus=8, nodes=1, ep=8))
    balanced = DispatchCopies(rank_copies=5.339, node_copies=1.0, forwarded=True)
    assert one.dispatch_s(1e9, 8, 1, balanced) == pytest.approx(5.339 * 7 / 8 * 1e9 / 360e9)


def _case(framework: str, other: str | None = None) -> dict:
    return {"id": "dispatch-case", "kind": "time",
            "model": {"name": "Qwen3-30B-A3B", "hf_id": "Qwen/Qwen3-30B-A3B", "params_b": 30.5},
            "method": "pretrain", "precision": {"compute": "bf16"}, "micro_batch": 4, "grad_accum": 16,
            "global_batch": 512, "seq_len": 4096, "grad_ckpt": True, "gpus": {"type": "H100 80GB", "count": 8},
            "parallel": {"tp": 1, "pp": 1, "dp": 8, "ep": 8, "fsdp": "FSDP2", "other": other},
            "framework": framework, "measured": {"tokens_per_s_per_gpu": 12040.0}}


def test_a_case_that_names_deepep_and_automodels_fake_gate():
    said, _ = stated_moe_dispatch(_case("NeMo AutoModel (FSDP2; TE + DeepEP, fake_balanced_gate: true)"))
    assert said == {"moe_dispatcher": MoeDispatcher.DEEPEP, "moe_routing": MoeRouting.CONSECUTIVE}
    # Megatron's DeepEP with forced balancing: random logits, balanced routing
    said, _ = stated_moe_dispatch(_case("Megatron-Core", "--moe-router-force-load-balancing; DeepEP dispatcher"))
    assert said == {"moe_dispatcher": MoeDispatcher.DEEPEP}
    assert stated_moe_dispatch(_case("Megatron-Core"))[0] == {}
    impl = map_case(_case("NeMo AutoModel (FSDP2; TE + DeepEP, fake_balanced_gate: true)")).job.setup.impl
    assert impl.moe_dispatcher is MoeDispatcher.DEEPEP and impl.moe_routing is MoeRouting.CONSECUTIVE


def test_nemo_automodel_is_pytorch_fsdp2_with_transformer_engine_layers_not_megatron():
    assert framework_in_text("NeMo AutoModel (PyTorch FSDP2)")[0] is Framework.TORCHTITAN
    assert framework_in_text("NeMo 24.07")[0] is Framework.MEGATRON
    facts, _ = trainer_facts(_case("NeMo AutoModel (PyTorch FSDP2)"))
    # BackendConfig's TE linear and attention; Megatron's recipe overlap ("nemo") is not AutoModel's
    assert facts == {"fused_kernels": True, "te_attention": True}
    assert trainer_facts(_case("NeMo 24.07"))[0] == {"comm_overlap": True}
    job = map_case(_case("NeMo AutoModel (PyTorch FSDP2)")).job
    assert job.setup.framework is Framework.TORCHTITAN
    # TE's DotProductAttention runs cuDNN's fused attention on Hopper; torchtitan's own flash otherwise
    assert attention_kernel(Framework.TORCHTITAN, Attention.FLASH, "hopper", "bf16", 128, te=True) \
        is AttentionKernel.CUDNN
    assert attention_kernel(Framework.TORCHTITAN, Attention.FLASH, "hopper", "bf16", 128) is AttentionKernel.FA2


MOE_SCRIPT = """torchrun --nproc_per_node 8 pretrain_gpt.py \\
  --num-layers 4 --hidden-size 1024 --num-attention-heads 8 --ffn-hidden-size 2816 --seq-length 4096 \\
  --max-position-embeddings 4096 --swiglu --normalization RMSNorm --position-embedding-type rope \\
  --num-experts 16 --moe-router-topk 4 --moe-ffn-hidden-size 512 --expert-model-parallel-size 8 \\
  {dispatch} --micro-batch-size 2 --global-batch-size 64 --bf16 --vocab-size 32000
"""


@pytest.mark.parametrize("dispatch, expected", [
    ("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep", "deepep"),
    ("--moe-token-dispatcher-type flex", "deepep"),            # flex's backend: DeepEP unless stated
    ("--moe-enable-deepep", "deepep"),                         # the flag before --moe-flex-dispatcher-backend
    ("--moe-token-dispatcher-type alltoall", "alltoall"),
    ("", None),                                                # unstated: trainplan's default (alltoall)
])
def test_megatron_scripts_name_their_dispatcher(tmp_path, dispatch, expected):
    from conftest import options_from

    script = tmp_path / "moe.sh"
    script.write_text(MOE_SCRIPT.format(dispatch=dispatch))
    assert options_from(script).moe_dispatcher == expected


def test_the_deepep_estimate_and_its_megatron_line():
    from trainplan.export import megatron as megatron_export
    from trainplan.export.base import ExportContext
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import resolve_job

    base = dict(model="qwen3-30b-a3b", gpu="h100", framework="megatron", num_gpus=8, ep=8, seq_len=4096,
                batch_size=4, grad_accum=16)
    off = resolve_job(JobOptions(**base), calibration=None, priced=False)
    on = resolve_job(JobOptions(**base, moe_dispatcher="deepep"), calibration=None, priced=False)
    from trainplan.timing.estimate import step_time

    t_off = step_time(off.setup, off.layout, off.gpu, workload=off.workload, options=off.timing).comm.ep_s
    t_on = step_time(on.setup, on.layout, on.gpu, workload=on.workload, options=on.timing).comm.ep_s
    # one node: the NVLink side only, 5.339 rank copies a token instead of 8 (test above)
    assert t_on / t_off == pytest.approx(5.3394 / 8, rel=1e-4)
    lm = next(f for f in megatron_export.export(on, None, ExportContext()).files if f.name == "megatron_lm.sh")
    assert "--moe-token-dispatcher-type flex" in lm.text and "--moe-flex-dispatcher-backend deepep" in lm.text
    lm_off = next(f for f in megatron_export.export(off, None, ExportContext()).files if f.name == "megatron_lm.sh")
    assert "dispatcher" not in lm_off.text


@pytest.mark.parametrize("flags, message", [
    (["--model", "llama-3.1-8b", "--framework", "megatron"], "routed experts and --ep > 1"),
    (["--model", "qwen3-30b-a3b", "--framework", "megatron"], "routed experts and --ep > 1"),
    (["--model", "qwen3-30b-a3b", "--num-gpus", "8", "--ep", "8"], "--framework megatron or torchtitan"),
])
def test_deepep_where_it_cannot_run_is_a_one_line_error(flags, message):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "trainplan", "estimate", "--gpu", "h100", *flags,
                           "--moe-dispatcher", "deepep"], capture_output=True, text=True)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_megatron_bridge_runs_its_fused_cross_entropy():
    # Megatron-Bridge's GPTModelProvider cross_entropy_loss_fusion = True: the loss moves 3 x 2 bytes a logit
    # (a fused kernel over bf16 logits) instead of the 48 of an eager fp32 one (timing.loss)
    from trainplan.timing.loss import loss_bytes_per_logit

    job = map_case(_case("Megatron-Bridge 26.04 (Megatron-Core)")).job
    assert trainer_facts(_case("Megatron-Bridge 26.04"))[0]["fused_ce"] is True
    assert loss_bytes_per_logit(job.setup) == 6.0
    assert "fused_ce" not in trainer_facts(_case("Megatron-LM pretrain_gpt.py"))[0]
