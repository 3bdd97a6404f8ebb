"""Expert tensor parallelism (--etp): the routed experts' own tensor-parallel size, in the layout check,
the memory split, the expert GEMM shape, the readers and the exports.

Megatron-Core runs the experts at tp when expert_tensor_parallel_size is unset (arguments.py); Megatron-
Bridge's MoE recipes, ms-swift's `megatron sft` and torchtitan set 1."""

from __future__ import annotations

import pytest

from conftest import options_from as options
from test_timing_moe import QWEN3_MOE
from trainplan.enums import Method
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.importers.base import Origin
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.parallel import ParallelConfig, check_layout, gpu_params
from trainplan.memory.stages import Stage
from trainplan.model.params import count_params
from trainplan.timing.moe import expert_shape
from trainplan.timing.parts import params_on_gpu, sharded_params_on_gpu

SETUP = TrainingSetup(model=QWEN3_MOE, method=Method.FULL, batch_size=1, seq_len=4096)
EXPERTS = 4 * 128 * 3 * 2048 * 768          # 4 layers x 128 experts x gate/up/down 2048 x 768


def test_layout_expert_sizes():
    # unset: as tp; expert data parallel = GPUs / (pp x ep x expert tp)
    assert Layout(num_gpus=16, tp=2, ep=8).expert_tp == 2
    assert Layout(num_gpus=16, tp=2, ep=8).expert_dp == 1            # 16 / (1 x 8 x 2)
    assert Layout(num_gpus=16, tp=2, ep=8, etp=1).expert_dp == 2     # 16 / (1 x 8 x 1)
    assert Layout(num_gpus=256, tp=2, pp=8, ep=32, etp=1).expert_dp == 1
    with pytest.raises(TrainplanError, match="--etp must be a positive integer"):
        Layout(etp=0)


def test_check_layout_uses_expert_tp():
    cfg = ParallelConfig()
    # Megatron-Bridge's Qwen3-235B-A22B H100 layout: tp 2, pp 8, ep 32 on 256 GPUs needs expert tp 1
    # (a stage's 32 GPUs hold ep 32 x etp 1); with expert tp = tp it would need 64 GPUs a stage
    check_layout(SETUP, Layout(num_gpus=256, nodes=32, tp=2, pp=4, ep=32, etp=1), cfg)
    with pytest.raises(TrainplanError, match="--ep 32 x expert tensor parallel 2 = 64 must divide the 32 GPUs "
                                             "of a pipeline stage"):
        check_layout(SETUP, Layout(num_gpus=128, nodes=16, tp=2, pp=4, ep=32), cfg)
    # 768 expert intermediate: etp 5 does not divide it
    with pytest.raises(TrainplanError, match="--etp 5 does not divide the expert intermediate size 768"):
        check_layout(SETUP, Layout(num_gpus=40, tp=1, ep=8, etp=5), cfg)


def test_etp_on_a_dense_model_is_refused():
    dense = replace(SETUP, model=replace(QWEN3_MOE, moe=None))
    with pytest.raises(TrainplanError, match="--etp 2 needs a mixture-of-experts model"):
        check_layout(dense, Layout(num_gpus=2, etp=2), ParallelConfig())


def test_memory_splits_experts_by_expert_tp():
    # one stage of 4 layers; tp 2, ep 8: experts / (ep 8 x etp); the attention and norms / tp as before
    stage = Stage(index=0, layers=tuple(range(4)), has_embedding=True, has_head=True, in_flight=1)
    at_tp = gpu_params(SETUP, Layout(num_gpus=16, tp=2, ep=8), stage)
    unsplit = gpu_params(SETUP, Layout(num_gpus=16, tp=2, ep=8, etp=1), stage)
    assert unsplit.trainable - at_tp.trainable == EXPERTS // 8 - EXPERTS // 16
    assert at_tp.expert_fraction * at_tp.trainable == pytest.approx(EXPERTS // 16)
    assert unsplit.expert_fraction * unsplit.trainable == pytest.approx(EXPERTS // 8)


def test_time_holds_and_shards_experts_by_expert_tp():
    total = count_params(QWEN3_MOE)
    layout = Layout(num_gpus=16, tp=2, ep=8, etp=1)
    dense, held = params_on_gpu(SETUP, layout, total.total, trainable=True)
    assert (dense, held) == ((total.total - EXPERTS) / 2, EXPERTS / 8)
    # distributed optimizer: dense over dp x cp = 8, experts over expert dp = 16 / (8 x 1) = 2
    zero1 = Layout(num_gpus=16, tp=2, ep=8, etp=1, zero=1)
    assert sharded_params_on_gpu(SETUP, zero1, total.total, trainable=True) == pytest.approx(
        (total.total - EXPERTS) / 2 / 8 + EXPERTS / 8 / 2)


def test_expert_shape_with_expert_tp():
    # 8192 tokens a micro-batch, tp 2 (sequence parallel): 4096 a rank x top-8 x ep 8 x etp 2 / 128 experts
    # = 4096 rows an expert slice, each 768 / 2 = 384 wide (fc1 2 x 384); the FLOPs a GPU runs are those of
    # etp 1 (2048 rows x the full 768)
    shape = expert_shape(SETUP, Layout(num_gpus=16, tp=2, ep=8), 8192.0)
    assert (shape.tokens_per_expert, shape.intermediate, shape.fc1_out) == (4096, 384, 768)
    one = expert_shape(SETUP, Layout(num_gpus=16, tp=2, ep=8, etp=1), 8192.0)
    assert (one.tokens_per_expert, one.intermediate, one.fc1_out) == (2048, 768, 1536)
    assert shape.tokens_per_expert * shape.fc1_out == one.tokens_per_expert * one.fc1_out


def test_readers_give_the_frameworks_expert_tp(tmp_path):
    # ms-swift megatron sft: expert_tensor_parallel_size defaults to 1 (megatron_args.py); stated wins
    o = options("NPROC_PER_NODE=8 megatron sft --model Qwen/Qwen3-30B-A3B --tensor_model_parallel_size 2 "
                "--expert_model_parallel_size 4")
    assert o.etp == 1
    assert next(s.origin for s in o.provenance if s.field == "etp") is Origin.FRAMEWORK_DEFAULT
    o = options("NPROC_PER_NODE=8 megatron sft --model Qwen/Qwen3-30B-A3B --tensor_model_parallel_size 2 "
                "--expert_model_parallel_size 4 --expert_tensor_parallel_size 2")
    assert o.etp == 2
    # torchtitan: expert_tensor_parallel_degree defaults to 1 with ep > 1 (job_config.py)
    f = tmp_path / "moe.toml"
    f.write_text('[model]\nname = "qwen3"\nflavor = "30B-A3B"\n[parallelism]\ndata_parallel_shard_degree = 8\n'
                 'tensor_parallel_degree = 2\nexpert_parallel_degree = 8\n')
    assert options(f).etp == 1


def test_case_reader_takes_the_expert_tp_the_layout_needs():
    from trainplan.cases.memorycase import layout_flags
    gpus = {"type": "H800", "count": 256}
    # tp 2, pp 32, ep 8: a stage's 8 GPUs hold ep 8 only at expert tp 1 (with tp's 2 it would need 16)
    assert layout_flags({"gpus": gpus, "parallel": {"tp": 2, "pp": 32, "ep": 8}})["etp"] == 1
    # tp 2, pp 8, ep 8: 32 GPUs a stage fit 8 x 2; nothing stated, nothing deduced (the framework's default)
    assert "etp" not in layout_flags({"gpus": gpus, "parallel": {"tp": 2, "pp": 8, "ep": 8}})
    assert layout_flags({"gpus": gpus, "parallel": {"tp": 2, "pp": 8, "ep": 8, "etp": 2}})["etp"] == 2
    # Megatron-Bridge's recipes set 1 (cases.trainers.TRAINER_DEFAULTS)
    bridge = {"gpus": gpus, "parallel": {"tp": 2, "pp": 8, "ep": 8}, "framework": "Megatron-Bridge 25.11"}
    assert layout_flags(bridge)["etp"] == 1
