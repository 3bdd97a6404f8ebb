"""MoE as Hugging Face transformers runs it (4.x expert loop, v5 grouped_mm) and DeepSpeed ZeRO-3 leaf-module gathers."""

from __future__ import annotations

import pytest

from trainplan.enums import Framework, Method, ZeroStage
from trainplan.frozen import replace
from trainplan.job.training import Implementation, Layout, TrainingSetup
from trainplan.specs import GpuSpec, ModelSpec, MoeSpec
from trainplan.timing.comm import CommInputs, layout_comm
from trainplan.timing.links import Fabric, Link
from trainplan.timing.estimate import step_time
from trainplan.timing.hf_moe import (
    ExpertsImpl,
    experts_hit,
    loop_layer_time,
    runs_hf_moe,
    z3_leaf_params,
)
from trainplan.timing.moe import ExpertShape

# Qwen3-30B-A3B's expert shape (hidden 2048, 128 experts, top-8, moe_intermediate 768), 4 layers
QWEN3_MOE = ModelSpec(name="qwen3-moe-test", model_type="qwen3_moe", naming="llama", hidden_size=2048,
                      num_layers=4, num_heads=32, num_kv_heads=4, head_dim=128, intermediate_size=6144,
                      vocab_size=151936, tied_embeddings=False,
                      moe=MoeSpec(num_experts=128, top_k=8, expert_intermediate_size=768))
A100 = GpuSpec(id="a100-sxm4-80gb", name="A100 SXM4 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=2039e9,
               peak_flops_per_s={"bf16": 312e12, "fp16": 312e12}, interconnect="NVLink 3",
               gpu_gpu_bw_bytes_per_s=600e9, pcie="Gen4 x16", generation="ampere")


def test_framework_decides_the_path():
    for fw in (Framework.HF, Framework.DEEPSPEED, Framework.LLAMAFACTORY, Framework.SWIFT, Framework.AXOLOTL,
               Framework.UNSLOTH):
        assert runs_hf_moe(fw)
    for fw in (Framework.MEGATRON, Framework.TORCHTITAN):
        assert not runs_hf_moe(fw)


def test_experts_hit_uniform_routing():
    # 4 experts, top-2: a token misses a given expert with p = 1 - 2/4 = 0.5.
    # 1 token: 4 x (1 - 0.5) = 2 (it picks exactly two); 2 tokens: 4 x (1 - 0.25) = 3
    shape = ExpertShape(tokens=1, top_k=2, experts=4, local_experts=4, hidden=8, intermediate=4, fc1_out=8, ep=1)
    assert experts_hit(shape) == pytest.approx(2.0)
    assert experts_hit(ExpertShape(tokens=2, top_k=2, experts=4, local_experts=4, hidden=8, intermediate=4,
                                   fc1_out=8, ep=1)) == pytest.approx(3.0)


def test_loop_is_launch_bound_for_tiny_experts():
    # 2 tokens, top-2 of 4 experts: 3 experts hit (above). All kernels far below the 10 us floor:
    # forward 3 experts x 12 kernels (9 small + 3 GEMMs) x 10 us + the one-hot mask 10 us = 370 us;
    # backward 3 x (11 small + 3 dgrad + 3 wgrad = 17 launches) x 10 us = 510 us, plus the input-gradient
    # sums (3 - 1) x 3 x a T h = 2 x 3 x 2 x 2 x 8 = 192 bytes at 1e12 B/s (not floored)
    shape = ExpertShape(tokens=2, top_k=2, experts=4, local_experts=4, hidden=8, intermediate=4, fc1_out=8, ep=1)
    t = loop_layer_time(shape, act_bytes=2, grad_bytes=2, flops_per_s=1e15, bytes_per_s=1e12)
    assert t.experts_hit == pytest.approx(3.0)
    assert t.forward_s == pytest.approx(370e-6, rel=1e-6)
    assert t.backward_s == pytest.approx(510e-6 + 192e-12, rel=1e-6)
    assert t.kernels_per_expert == 29
    assert t.total_s(2.0) == pytest.approx(2 * 370e-6 + 510e-6, rel=1e-6)    # with a recompute forward


def test_loop_bytes_without_the_floor():
    # 1000 tokens, one expert (top-1): m = 1000 rows, h = 10, f = 5, 2-byte activations and gradients.
    # Every GEMM moves 30,100 bytes: fc1 gate/up 2(1000x10 + 10x5) + 2 x 1000x5; down 2(1000x5 + 5x10)
    # + 2 x 1000x10; the weight gradients 2(10x1000 + 1000x5) + 2 x 10x5 (and the transpose).
    # Forward small kernels: mask 2x8x1x1000 = 16,000, nonzero 8,000, gather 40,000, SiLU 20,000,
    # x up 30,000, x weight 40,000, index_add 60,000 = 214,000; + 3 GEMMs 90,300 + the layer's one-hot
    # 16,000 = 320,300 bytes -> 320.3 us at 1e9 B/s.
    # Backward: index_select, x weight, its weight grad 3 x 40,000; x up twice and SiLU 3 x 30,000;
    # gate+up sum 60,000; zeros a T h 20,000; index_put 60,000 = 350,000; + 6 GEMMs 180,600
    # = 530,600 bytes -> 530.6 us (one expert: no gradient sums across experts)
    shape = ExpertShape(tokens=1000, top_k=1, experts=1, local_experts=1, hidden=10, intermediate=5,
                        fc1_out=10, ep=1)
    t = loop_layer_time(shape, act_bytes=2, grad_bytes=2, flops_per_s=1e30, bytes_per_s=1e9, floor_s=0.0)
    assert t.rows_per_expert == pytest.approx(1000.0)
    assert t.forward_s == pytest.approx(320.3e-6, rel=1e-9)
    assert t.backward_s == pytest.approx(530.6e-6, rel=1e-9)
    # frozen experts (LoRA elsewhere): no weight-gradient GEMMs, 530,600 - 90,300 = 440,300 bytes
    frozen = loop_layer_time(shape, act_bytes=2, grad_bytes=2, flops_per_s=1e30, bytes_per_s=1e9,
                             floor_s=0.0, wgrad=0.0)
    assert frozen.backward_s == pytest.approx(440.3e-6, rel=1e-9)


def test_z3_leaf_params():
    # per MoE layer: experts 3 x 2048 x 768 x 128 = 603,979,776 + router 2048 x 128 = 262,144
    # = 604,241,920; less one prefetch bucket 0.9 x 2048^2 = 3,774,873.6 -> 600,467,046.4; x 4 layers
    zero3 = Layout(num_gpus=16, zero=ZeroStage.PARAMETERS)
    swift = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, framework=Framework.SWIFT)
    assert z3_leaf_params(swift, zero3) == pytest.approx(4 * 600_467_046.4)
    # plain HF Trainer on transformers 4.x: each expert's nn.Linear is gathered and prefetched on its own
    hf = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, framework=Framework.HF)
    assert z3_leaf_params(hf, zero3, ExpertsImpl.LOOP) == 0.0
    # ... on v5 (the default) the experts are one module with 3-D weights, fetched whole whoever sets the leaf
    assert z3_leaf_params(hf, zero3) == pytest.approx(4 * 600_467_046.4)
    megatron = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, framework=Framework.MEGATRON)
    assert z3_leaf_params(megatron, zero3) == 0.0
    assert z3_leaf_params(swift, Layout(num_gpus=16, zero=ZeroStage.GRADIENTS)) == 0.0


def test_leaf_gather_waits_in_forward_and_backward():
    # dp 2 inside a node at 100 GB/s bus bandwidth. 1e9 gathered params x 2 bytes: all-gather
    # (1/2) x 2e9 / 1e11 = 10 ms, of which the leaf's 0.5e9 params are 5 ms; reduce-scatter of 1e9 x 2
    # bytes 10 ms. Windows of 100 s hide the rest but one layer's tail (10 layers):
    # forward 5 ms / 10 = 0.5 ms; backward min(15 ms, 10 ms / 10) = 1 ms, of which the gather's
    # share 5 / 15; the leaf 2 x 5 ms -> 0.5 + 1/3 + 10 = 10.8333 ms. Without a leaf: forward 10 / 10 = 1 ms,
    # backward min(20, 1) = 1 ms at share 10 / 20 -> 1.5 ms
    fab = Fabric(intra=Link(name="test", bw_bytes_per_s=100e9), inter=Link(name="none", bw_bytes_per_s=1e9),
                 gpus_per_node=8, collective_fraction=1.0)
    x = CommInputs(trainable_params=1e9, gathered_params=1e9, grad_bytes=2, weight_bytes=2.0, micro_batches=1,
                   fwd_s=100.0, bwd_s=100.0, layers=10, activation_bytes=0.0, tp_collectives_per_layer=4,
                   leaf_params=0.5e9)
    layout = Layout(num_gpus=2, zero=ZeroStage.PARAMETERS)
    comm = layout_comm(layout, fab, x)
    assert comm.gather_s == pytest.approx(0.020)
    assert comm.gather_exposed_s == pytest.approx(0.0005 + 0.001 / 3 + 0.010)
    no_leaf = layout_comm(layout, fab, replace(x, leaf_params=0.0))
    assert no_leaf.gather_exposed_s == pytest.approx(0.001 + 0.0005)


def test_step_time_takes_the_framework_path():
    layout = Layout(num_gpus=16, nodes=2, zero=ZeroStage.PARAMETERS)
    on_4x = Implementation(experts_impl=ExpertsImpl.LOOP)
    swift = step_time(TrainingSetup(model=QWEN3_MOE, method=Method.FULL, seq_len=8192,
                                    framework=Framework.SWIFT, impl=on_4x), layout, A100)
    assert any("transformers 4.x" in n for n in swift.notes)
    assert any("z3 leaf modules" in n for n in swift.notes)
    # the default is transformers 5's grouped_mm: the experts timed as grouped GEMMs, much faster than the loop
    v5 = step_time(TrainingSetup(model=QWEN3_MOE, method=Method.FULL, seq_len=8192, framework=Framework.SWIFT),
                   layout, A100)
    assert any("transformers v5 grouped_mm experts (its default)" in n for n in v5.notes)
    assert not any("transformers 4.x" in n for n in v5.notes)
    assert v5.step_s < swift.step_s
    megatron = step_time(TrainingSetup(model=QWEN3_MOE, method=Method.FULL, seq_len=8192,
                                       framework=Framework.MEGATRON), Layout(num_gpus=16, nodes=2), A100)
    assert any("Megatron alltoall dispatcher" in n for n in megatron.notes)
    assert not any("transformers 4.x" in n for n in megatron.notes)


def test_zero3_without_leaf_modules_says_the_step_is_a_lower_bound():
    """HF Trainer does not call set_z3_leaf_modules: DeepSpeed then fetches each expert's linears one by one
    (its own docstring: the experts' varying order disrupts ZeRO-3's prefetch, fine-grained modules cost hook
    overhead), a time trainplan does not model: the estimate says its step is a lower bound. LLaMA-Factory
    sets the leaf, and its estimate times the leaf's all-gathers instead."""
    import contextlib
    import io

    from trainplan.cli import main as cli

    def notes(framework: str, *extra: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cli(["estimate", "--model", "qwen3-30b-a3b", "--method", "full", "--gpu", "a800", "--num-gpus", "16",
                 "--nodes", "2", "--zero", "3", "--seq-len", "8192", "--framework", framework, *extra])
        return out.getvalue()

    on_4x = notes("hf", "--experts-implementation", "eager")      # transformers 4.x's loop of nn.Linear experts
    assert "lower bound" in on_4x and "ZeRO-3 leaf" in on_4x
    lf = notes("llamafactory", "--experts-implementation", "eager")
    assert "lower bound" not in lf and "z3 leaf modules" in lf
    # transformers 5 keeps each layer's experts as 3-D parameters of one module: fetched whole, no lower bound
    v5 = notes("hf")
    assert "lower bound" not in v5 and "z3 leaf modules" in v5


def test_a_published_case_ran_transformers_4x_unless_it_says_5():
    import json
    from pathlib import Path

    from trainplan.cases import map_case

    cases = json.loads((Path(__file__).parent / "data" / "published_dev2.json").read_text())
    case = next(c for c in cases if c["id"] == "qwen-docs-swift-qwen3-30b-a3b-full-zero3-16xa800-time")
    assert map_case(case).job.setup.impl.experts_impl is ExpertsImpl.LOOP
    on_5 = {**case, "framework": case["framework"] + ", transformers 5.6.0"}
    assert map_case(on_5).job.setup.impl.experts_impl is ExpertsImpl.GROUPED_MM


@pytest.mark.parametrize("name, text, expected", [
    ("axolotl.yaml", "base_model: Qwen/Qwen3-30B-A3B\nexperts_implementation: eager\nsequence_len: 2048\n"
                     "micro_batch_size: 1\ndatasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n", "eager"),
    ("train.sh", "swift sft --model Qwen/Qwen3-30B-A3B --train_type lora --experts_impl eager --dataset alpaca "
                 "--max_length 2048\n", "eager"),
    ("sft.yaml", "model_name_or_path: Qwen/Qwen3-30B-A3B\nbf16: true\nmax_length: 2048\nmodel_init_kwargs:\n"
                 "  experts_implementation: sonicmoe\n", "grouped_mm"),
])
def test_configs_read_the_experts_implementation(tmp_path, name, text, expected):
    # axolotl loaders/model.py _configure_experts_implementation, ms-swift base_args/model_args.py experts_impl,
    # TRL model_init_kwargs to from_pretrained; axolotl's sonicmoe kernel is timed as grouped GEMMs
    from trainplan.importers import read_config

    path = tmp_path / name
    path.write_text(text)
    assert read_config(str(path)).values()["experts_implementation"] == expected


@pytest.mark.parametrize("fmt, key", [("swift", "experts_impl"), ("axolotl", "experts_implementation")])
def test_exports_write_the_loop_and_read_it_back(tmp_path, fmt, key):
    import yaml

    from trainplan.cli import main
    from trainplan.importers import read_config

    out = tmp_path / fmt
    assert main(["export", "--model", "qwen3-30b-a3b", "--method", "lora", "--experts-implementation", "eager",
                 "--framework", fmt, "--format", fmt, "--out", str(out)]) == 0
    path = next(p for p in out.iterdir() if p.suffix == ".yaml")
    assert yaml.safe_load(path.read_text())[key] == "eager"
    assert read_config(str(path)).values()["experts_implementation"] == "eager"


def test_experts_implementation_outside_transformers_is_one_line_and_a_dense_model_says_so(capsys):
    from trainplan.api import estimate
    from trainplan.cli import main

    code = main(["estimate", "--model", "qwen3-30b-a3b", "--framework", "megatron", "--experts-implementation",
                 "eager"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "runs its own grouped GEMMs" in err
    dense = estimate(model="llama-2-7b", experts_implementation="eager")
    assert any("llama-2-7b has no routed experts, so it changes nothing" in n for n in dense.notes)


def test_the_hf_export_says_where_the_loop_goes(tmp_path):
    from trainplan.cli import main

    out = tmp_path / "hf"
    assert main(["export", "--model", "qwen3-30b-a3b", "--method", "lora", "--experts-implementation", "eager",
                 "--format", "hf", "--out", str(out)]) == 0
    assert "from_pretrained(experts_implementation='eager')" in (out / "README.md").read_text()
