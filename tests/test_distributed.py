"""Distributed memory: data parallel (DDP, ZeRO, FSDP), offload, tensor/pipeline/context/expert
parallel, bad layouts. Expected numbers derived by hand in the comments (ZeRO paper section 3.1;
Megatron-LM; DeepSpeed's own estimators)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import llama2_7b, tiny_llama
from trainplan.catalog import resolve_gpu, resolve_model
from trainplan.cli import main
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
from trainplan.frozen import replace
from trainplan.job.frameworks import implementation
from trainplan.job.training import Layout, LoraConfig, QuantConfig, TrainingSetup
from trainplan.memory import MemoryModel, ParallelConfig, ZeroConfig, estimate_memory
from trainplan.memory.deepspeed_ref import estimate_zero2_model_states_mem_needs
from trainplan.memory.megatron_ref import (
    compute_weight_and_optimizer_memory,
    megatron_args,
)
from trainplan.errors import TrainplanError
from trainplan.memory.parallel import check_layout, gpu_params
from trainplan.memory.stages import in_flight_microbatches, pipeline_stages
from trainplan.units import GIB

P7 = 6_738_415_616      # Llama-2-7B parameters
P70 = 68_976_648_192    # Llama-2-70B parameters
H100 = resolve_gpu("h100")


def _setup(model=None, framework=Framework.DEEPSPEED, **kw):
    kw.setdefault("precision", Precision.BF16)
    kw.setdefault("optimizer", Optimizer.ADAMW_FUSED)
    return TrainingSetup(model=model or llama2_7b(), framework=framework, impl=implementation(framework), **kw)


def _gpu0(setup, layout, **kw):
    """The first (or only) pipeline stage's memory."""
    return MemoryModel(**kw).stages(setup, layout)[0][0]


def _model_states_in_step(sm):
    grads = int(sm.state.gradients * sm.sharded.grad_scale)
    return sum(sm.sharded.persistent.values()) + grads + sum(sm.sharded.extras.at("optimizer step").values())


# --- data parallel -----------------------------------------------------------------------------

def test_per_gpu_memory_falls_from_zero0_to_zero3():
    # Llama-2-7B, 8 GPUs, DeepSpeed bf16, 1 x 2048 tokens with full checkpointing.
    # ZeRO-0 (DDP): 16 B/param + DDP buckets; ZeRO-1: 2 + 2 + 12/8; ZeRO-2: 2 + (2 + 12)/8; ZeRO-3: 16/8.
    setup = _setup(grad_ckpt=GradCkpt.FULL)
    device = [estimate_memory(setup, Layout(num_gpus=8, zero=z), H100).device_bytes for z in ZeroStage]
    assert device[0] > device[1] > device[2] > device[3]
    fsdp = estimate_memory(setup, Layout(num_gpus=8, fsdp=Fsdp.FULL), H100).device_bytes
    assert fsdp < device[1]


@pytest.mark.parametrize("n", [8, 64])
def test_zero_stages_shard_exactly_what_they_should(n):
    # DeepSpeed regime: 2 B weights, 2 B grads, 4 B fp32 master, 8 B Adam per parameter.
    setup = _setup(grad_ckpt=GradCkpt.FULL)
    z1 = _gpu0(setup, Layout(num_gpus=n, nodes=n // 8, zero=ZeroStage.OPTIMIZER)).sharded
    assert z1.persistent["weights"] == 2 * P7                 # not sharded
    assert z1.persistent["master_weights"] == 4 * P7 // n      # 1/N
    assert z1.persistent["optimizer"] == 8 * P7 // n
    assert z1.grad_scale == 1.0
    z2 = _gpu0(setup, Layout(num_gpus=n, nodes=n // 8, zero=ZeroStage.GRADIENTS)).sharded
    assert z2.persistent["weights"] == 2 * P7 and z2.grad_scale == pytest.approx(1 / n)
    z3 = _gpu0(setup, Layout(num_gpus=n, nodes=n // 8, zero=ZeroStage.PARAMETERS)).sharded
    assert z3.persistent["weights"] == 2 * P7 // n
    assert z3.persistent["optimizer"] == 8 * P7 // n


def test_zero1_model_states_equal_deepspeed_estimator():
    # DeepSpeed's stage-2 estimator counts 4 B/param + 16 B/param / N, which is ZeRO-1 exactly:
    # 16-bit weights and grads replicated, fp32 master + Adam + the fp32 grad partition of step() / N.
    setup = _setup(grad_ckpt=GradCkpt.FULL)
    sm = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.OPTIMIZER))
    _, ds_gpu = estimate_zero2_model_states_mem_needs(P7, num_gpus_per_node=8, cpu_offload=False)
    assert _model_states_in_step(sm) == pytest.approx(ds_gpu, abs=16)


def test_zero_buffers_follow_the_config():
    # ZeRO-2: one ipg bucket of reduce_bucket_size 16-bit elements in backward (overlap_comm off by
    # default for stages 1-2): 5e8 x 2 B = 1e9 B. transformers "auto" sets h^2 = 4096^2.
    setup = _setup(grad_ckpt=GradCkpt.FULL)
    z2 = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS)).sharded
    assert z2.extras.backward["zero_reduce_buckets"] == 10**9
    assert z2.extras.optimizer["fp32_grad_partition"] == 4 * P7 // 8
    auto = ZeroConfig.hf_auto(4096)
    assert (auto.reduce_bucket_size, auto.prefetch_bucket_size, auto.param_persistence_threshold) == (
        16_777_216, 15_099_494, 40_960)
    z3 = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.PARAMETERS), zero=auto).sharded
    assert z3.extras.always["zero3_reduce_bucket"] == 2 * 16_777_216
    # Default stage3_max_live_parameters 1e9 caps what is gathered: 1e9 x 2 B.
    z3d = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.PARAMETERS)).sharded
    assert z3d.extras.forward["zero3_gathered_params"] == 2 * 10**9
    # Norm vectors (4096 elements) stay whole: 65 norms x 4096 x 2 B.
    assert z3d.extras.always["zero3_persistent_params"] == 65 * 4096 * 2


def test_70b_full_finetune_zero3_needs_more_than_8_h100():
    # Llama-2-70B, micro-batch 1 x 4096 tokens, full checkpointing, bf16, AdamW.
    # 8 GPUs: 16 B/param x 69.0e9 / 8 = 138 GB of model state per GPU > 80 GB.
    # 64 GPUs (8 nodes): 17.2 GB + ~2 GB gathered params + 1 GB bucket + ~6 GB checkpoints: fits.
    setup = _setup(resolve_model("llama-2-70b"), seq_len=4096, grad_ckpt=GradCkpt.FULL)
    eight = estimate_memory(setup, Layout(num_gpus=8, zero=ZeroStage.PARAMETERS), H100)
    assert not eight.fits
    assert eight.components_bytes["optimizer"] == 8 * P70 // 8
    sixty_four = estimate_memory(setup, Layout(num_gpus=64, nodes=8, zero=ZeroStage.PARAMETERS), H100)
    assert sixty_four.fits
    assert sixty_four.device_bytes < 40 * GIB
    offloaded = estimate_memory(setup, Layout(num_gpus=8, zero=ZeroStage.PARAMETERS, offload=Offload.ALL), H100)
    assert offloaded.fits                                        # everything but activations leaves the GPU
    assert offloaded.cpu_ram_bytes > 16 * P70                    # and lands in the node's RAM
    assert any("exceeds" in n for n in offloaded.notes)          # > 1 TiB: warned


def test_optimizer_offload_moves_12_bytes_per_param_to_cpu():
    # ZeRO-Offload: fp32 master (4 B) + Adam m, v (8 B) per parameter leave the GPU; each of the 8
    # ranks holds 1/8 of them. The fp32 gradient partition (4 B/param / 8) goes with them.
    setup = _setup(grad_ckpt=GradCkpt.FULL)
    on_gpu = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS)).sharded
    off = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS, offload=Offload.OPTIMIZER)).sharded
    moved = 8 * (off.cpu_bytes["master_weights"] + off.cpu_bytes["optimizer"])
    assert moved == 12 * P7
    assert on_gpu.persistent["master_weights"] + on_gpu.persistent["optimizer"] == 12 * P7 // 8   # without offload
    assert "master_weights" not in off.persistent and "optimizer" not in off.persistent
    assert off.cpu_bytes["fp32_gradients"] == 4 * P7 // 8
    before = estimate_memory(setup, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS), H100)
    after = estimate_memory(setup, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS, offload=Offload.OPTIMIZER), H100)
    assert after.cpu_ram_bytes - before.cpu_ram_bytes >= 12 * P7
    assert before.device_bytes - after.device_bytes >= 12 * P7 // 8
    # foreach AdamW's full-size temporary (4 B/param / 8) goes with the step to the CPU (DeepSpeedCPUAdam)
    foreach = _setup(grad_ckpt=GradCkpt.FULL, optimizer=Optimizer.ADAMW)
    step = _gpu0(foreach, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS, offload=Offload.OPTIMIZER)).phases
    batch = 8 * foreach.tokens_per_micro_batch                 # the micro-batch's int64 token ids
    assert step["optimizer step"] == 2 * P7 + batch            # only the 16-bit weights remain


def test_lora_frozen_weights_sharded_under_zero3_and_fsdp_only():
    # LoRA r=16 on q,v: 8.4M trainable; the 6.7B frozen bf16 weights (13.5 GB) stay whole under
    # ZeRO-1/2 (they hold no optimizer state) and are partitioned by ZeRO-3 and FSDP.
    setup = _setup(method=Method.LORA, lora=LoraConfig(rank=16), grad_ckpt=GradCkpt.FULL)
    frozen = 2 * (P7 - 8_388_608)
    z2 = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS)).sharded.persistent["weights"]
    z3 = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.PARAMETERS)).sharded.persistent["weights"]
    fsdp = _gpu0(setup, Layout(num_gpus=8, fsdp=Fsdp.FULL)).sharded.persistent["weights"]
    assert z2 > frozen and z3 < frozen // 7 and fsdp == z3


def test_qlora_4bit_weights_shard_under_zero3():
    setup = _setup(resolve_model("llama-2-70b"), method=Method.QLORA, lora=LoraConfig(rank=16),
                   quant=QuantConfig(), grad_ckpt=GradCkpt.FULL, seq_len=4096)
    z2 = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.GRADIENTS)).sharded.persistent["weights"]
    z3 = _gpu0(setup, Layout(num_gpus=8, zero=ZeroStage.PARAMETERS)).sharded.persistent["weights"]
    assert z3 == pytest.approx(z2 / 8, rel=1e-6)
    assert z2 < 0.6 * P70                                     # ~0.5 B/param packed + bf16 embeddings


def test_fsdp_keeps_two_units_and_the_root_gathered():
    # Llama-2-7B decoder layer: 4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096 = 202,383,360 params;
    # two in flight in bf16; root = embedding + head (2 x 32000 x 4096) + final norm.
    setup = _setup(framework=Framework.FSDP, grad_ckpt=GradCkpt.FULL)
    sh = _gpu0(setup, Layout(num_gpus=8, fsdp=Fsdp.FULL)).sharded
    assert sh.extras.forward["fsdp_unsharded_units"] == 2 * 2 * 202_383_360
    assert sh.extras.forward["fsdp_root_unsharded"] == 2 * (2 * 32000 * 4096 + 4096)
    hybrid = _gpu0(setup, Layout(num_gpus=16, nodes=2, fsdp=Fsdp.HYBRID)).sharded
    assert hybrid.persistent["optimizer"] == 8 * P7 // 8      # sharded inside the 8-GPU node only


def test_fsdp1_no_sync_accumulation_keeps_every_units_whole_gradient():
    # litgpt (Fabric FSDPStrategy: FSDP1, use_orig_params, no_backward_sync while accumulating):
    # LoRA r=16 on q,v puts trainable adapters in every layer's flat parameter, so each of the 32
    # units gets a gradient for all 202,383,360 + 2 x 16 x (4096 + 4096) layer params, unsharded.
    lora = LoraConfig(rank=16)
    layer = 202_383_360 + 2 * 16 * (4096 + 4096)
    setup = _setup(framework=Framework.LITGPT, method=Method.LORA, lora=lora, grad_ckpt=GradCkpt.FULL,
                   precision=Precision.BF16_PURE, grad_accum=4)
    sh = _gpu0(setup, Layout(num_gpus=2, fsdp=Fsdp.FULL)).sharded
    assert sh.extras.backward["fsdp_unsynced_grads"] == 2 * 32 * layer
    assert "fsdp_frozen_grad_shards" not in sh.extras.backward
    assert sh.extras.optimizer["fsdp_frozen_grad_shards"] == 2 * 32 * (layer - 2 * 16 * 8192) // 2
    synced = _gpu0(replace(setup, grad_accum=1), Layout(num_gpus=2, fsdp=Fsdp.FULL)).sharded
    assert "fsdp_unsynced_grads" not in synced.extras.backward
    assert synced.extras.backward["fsdp_unsharded_grads"] == 2 * layer
    # torchtune (FSDP2, reduce-scatter every micro-batch): only the adapters' gradients
    tt = _gpu0(replace(setup, framework=Framework.TORCHTUNE), Layout(num_gpus=2, fsdp=Fsdp.FULL)).sharded
    assert "fsdp_unsynced_grads" not in tt.extras.backward
    assert tt.extras.backward["fsdp_unsharded_grads"] == 2 * 2 * 16 * 8192


# --- model parallel ----------------------------------------------------------------------------

def test_tp2_halves_the_split_weights():
    # Column/row-parallel linears halve: (4 x 4096^2 + 3 x 4096 x 11008) / 2; the two norms (2 x 4096)
    # stay whole; the embedding and head are vocabulary-parallel: 32000 x 4096 / 2 each.
    setup = _setup(framework=Framework.MEGATRON)
    layout = Layout(num_gpus=2, tp=2)
    stage = pipeline_stages(setup, layout, ParallelConfig())[0]
    p = gpu_params(setup, layout, stage)
    linear = 4 * 4096**2 + 3 * 4096 * 11008
    assert p.largest_layer == linear // 2 + 2 * 4096
    assert p.trainable == 32 * (linear // 2 + 2 * 4096) + 2 * 32000 * 4096 // 2 + 4096
    weights = _gpu0(setup, layout).state.weights
    assert weights == 2 * p.trainable


def test_sequence_parallel_splits_every_saved_tensor():
    setup = _setup(framework=Framework.MEGATRON, attention=Attention.FLASH, seq_len=4096)
    one = _gpu0(setup, Layout(num_gpus=1)).saved_activations
    sp = _gpu0(setup, Layout(num_gpus=4, tp=4)).saved_activations
    no_sp = _gpu0(setup, Layout(num_gpus=4, tp=4), parallel=ParallelConfig(sequence_parallel=False)).saved_activations
    # with SP every tensor is / 4 (the lm_head's logits and input too): within rounding of one / 4
    assert sp == pytest.approx(one / 4, rel=0.01)
    assert sp < no_sp < one                                     # without SP norms and layer inputs stay whole


def test_context_parallel_splits_the_sequence():
    setup = _setup(framework=Framework.MEGATRON, attention=Attention.FLASH, seq_len=8192, grad_ckpt=GradCkpt.FULL)
    one = _gpu0(setup, Layout(num_gpus=1)).saved_activations
    cp4 = _gpu0(setup, Layout(num_gpus=4, cp=4, zero=ZeroStage.OPTIMIZER))
    assert cp4.saved_activations == pytest.approx(one / 4, rel=0.01)
    assert cp4.sharded.persistent["optimizer"] == 8 * P7 // 4   # distributed optimizer over dp x cp = 4


def test_pipeline_first_and_last_stages_differ_as_they_should():
    # Llama-2-7B, pp 4 (8 layers each), 8 micro-batches, 1F1B: stage i stashes 4 - i micro-batches;
    # the first stage holds the embedding, the last the final norm, the head and the logits.
    setup = _setup(framework=Framework.MEGATRON, attention=Attention.FLASH, grad_accum=8, seq_len=4096)
    layout = Layout(num_gpus=4, pp=4)
    stages = MemoryModel().stages(setup, layout)[0]
    first, last = stages[0], stages[-1]
    assert [s.stage.in_flight for s in stages] == [4, 3, 2, 1]
    assert first.stage.has_embedding and not first.stage.has_head
    assert last.stage.has_head and not last.stage.has_embedding
    per_micro = first.saved_activations / 4
    assert first.components["activations_in_flight"] == pytest.approx(3 * per_micro, rel=1e-6)
    assert "activations_in_flight" not in last.components
    assert "logits_loss" in last.components or last.phase.startswith("optimizer")
    p_first = gpu_params(setup, layout, first.stage)
    p_last = gpu_params(setup, layout, last.stage)
    assert p_first.root == 32000 * 4096                         # embedding
    assert p_last.root == 32000 * 4096 + 4096                   # head + final norm
    est = estimate_memory(setup, layout, H100)
    assert len(est.per_stage_bytes) == 4 and est.device_bytes == max(est.per_stage_bytes)


def test_tied_embeddings_are_copied_to_the_last_stage():
    setup = _setup(resolve_model("qwen2.5-0.5b"), framework=Framework.MEGATRON, grad_accum=4)
    layout = Layout(num_gpus=2, pp=2)
    first, last = pipeline_stages(setup, layout, ParallelConfig())
    vocab_h = 151936 * 896
    assert gpu_params(setup, layout, first).root == vocab_h
    assert gpu_params(setup, layout, last).root == vocab_h + 896


def test_in_flight_microbatches_1f1b_and_interleaved():
    assert [in_flight_microbatches(i, 4, 1, 8) for i in range(4)] == [4, 3, 2, 1]
    assert [in_flight_microbatches(i, 4, 1, 2) for i in range(4)] == [2, 2, 2, 1]
    # Megatron's interleaved penalty for the first stage: p (1 + (p - 1) / (p v)) = 4 x 1.375
    assert in_flight_microbatches(0, 4, 2, 8) == pytest.approx(4 * (1 + 3 / 8))


def test_expert_parallel_divides_the_experts():
    # Mixtral-8x7B: 8 experts x 3 x 4096 x 14336 per layer; ep 4 leaves 2 per GPU.
    setup = _setup(resolve_model("mixtral-8x7b"), framework=Framework.MEGATRON)
    one = gpu_params(setup, Layout(num_gpus=4), pipeline_stages(setup, Layout(num_gpus=4), ParallelConfig())[0])
    ep4 = gpu_params(setup, Layout(num_gpus=4, ep=4), pipeline_stages(setup, Layout(num_gpus=4, ep=4),
                                                                      ParallelConfig())[0])
    experts = 32 * 8 * 3 * 4096 * 14336
    assert one.trainable - ep4.trainable == experts - experts // 4


def test_megatron_weight_formula_agrees_with_trainplan():
    # Llama-3-70B, TP8 PP8 DP2, distributed optimizer: 6 + 12/2 B/param on the first stage.
    setup = _setup(resolve_model("llama-3-70b"), framework=Framework.MEGATRON, grad_accum=16,
                   grad_ckpt=GradCkpt.SELECTIVE, attention=Attention.FLASH, seq_len=8192)
    layout = Layout(num_gpus=128, nodes=16, tp=8, pp=8, zero=ZeroStage.OPTIMIZER)
    first = _gpu0(setup, layout)
    ours = sum(first.sharded.persistent.values()) + first.sharded.extras.always["grad_buffer"]
    ref = compute_weight_and_optimizer_memory(megatron_args(setup.model, seq_length=8192, micro_batch_size=1,
                                                            tp=8, pp=8, dp=2))
    assert ours == pytest.approx(ref, rel=0.01)


# --- bad layouts: one line on stderr, exit code 2 -----------------------------------------------

BAD = [
    (["--model", "llama-2-7b", "--num-gpus", "6", "--tp", "4"], "does not divide --num-gpus 6"),
    (["--model", "llama-2-7b", "--num-gpus", "3", "--tp", "3"], "32 attention heads"),
    (["--model", "llama-2-70b", "--num-gpus", "16", "--tp", "16"], "8 kv heads"),
    (["--model", "llama-2-7b", "--num-gpus", "3", "--pp", "3"], "32 layers"),
    (["--model", "mixtral-8x7b", "--num-gpus", "3", "--ep", "3"], "8 experts"),
    (["--model", "llama-2-7b", "--num-gpus", "2", "--ep", "2"], "is dense"),
    (["--model", "llama-2-7b", "--zero", "3"], "--num-gpus is 1"),
    (["--model", "llama-2-7b", "--fsdp", "full"], "--num-gpus is 1"),
    (["--model", "llama-2-7b", "--num-gpus", "8", "--zero", "2", "--offload", "params"], "needs ZeRO-3"),
    (["--model", "llama-2-7b", "--num-gpus", "4", "--pp", "2", "--zero", "2"], "use --zero 1"),
    (["--model", "llama-2-7b", "--offload", "optimizer"], "needs DeepSpeed ZeRO"),
]


@pytest.mark.parametrize("argv,expected", BAD, ids=[e for _, e in BAD])
def test_bad_layouts_exit_2_with_one_line(capsys, argv, expected):
    code = main(["estimate", *argv])
    _, err = capsys.readouterr()
    assert code == 2
    assert expected in err
    assert err.count("\n") == 1 and err.startswith("trainplan: error: ")


def test_single_gpu_zero_offload_is_allowed():
    # ZeRO-Offload's single-GPU use: ZeRO-2 + optimizer offload on one GPU.
    setup = _setup(grad_ckpt=GradCkpt.FULL)
    est = estimate_memory(setup, Layout(num_gpus=1, zero=ZeroStage.GRADIENTS, offload=Offload.OPTIMIZER), H100)
    assert est.fits and est.cpu_ram_bytes > 12 * P7


@pytest.mark.parametrize("layout", [
    Layout(num_gpus=8, zero=ZeroStage.PARAMETERS), Layout(num_gpus=8, fsdp=Fsdp.FULL),
    Layout(num_gpus=16, nodes=2, tp=2, pp=2, zero=ZeroStage.OPTIMIZER), Layout(num_gpus=8, tp=2, cp=2),
    Layout(num_gpus=8), Layout(num_gpus=8, zero=ZeroStage.GRADIENTS, offload=Offload.OPTIMIZER),
], ids=["zero3", "fsdp", "tp2pp2", "tp2cp2", "ddp", "zero2-offload"])
def test_distributed_components_add_up(layout):
    setup = _setup(grad_ckpt=GradCkpt.SELECTIVE, grad_accum=4, seq_len=1024)
    est = estimate_memory(setup, layout, H100)
    assert sum(est.components_bytes.values()) == est.peak_allocated_bytes
    assert est.peak_allocated_bytes <= est.peak_reserved_bytes <= est.device_bytes


def test_interleaved_and_uneven_pipelines():
    setup = _setup(framework=Framework.MEGATRON, grad_accum=8)
    layout = Layout(num_gpus=4, pp=4)
    stages = pipeline_stages(setup, layout, ParallelConfig(virtual_stages=2))
    assert stages[0].in_flight == pytest.approx(5.5)           # 4 x (1 + 3/8)
    uneven = pipeline_stages(setup, Layout(num_gpus=3, pp=3), ParallelConfig(uneven_pipeline=True))
    assert [len(s.layers) for s in uneven] == [10, 11, 11]     # 32 = 10 + 11 + 11, extras at the end
    est = estimate_memory(setup, Layout(num_gpus=3, pp=3), H100, parallel=ParallelConfig(uneven_pipeline=True))
    assert len(est.per_stage_bytes) == 3
    # uneven with virtual stages (Megatron's first/last-stage layer options or pipeline layout; torchtitan's
    # own split): 32 layers over 3 stages x 2 chunks, the stages as above; in flight, interleaved with 9
    # micro-batches (grad-accum divisible by pp): stage 0 (2 x 2 + 1 x 3 + 1) / 2 = 4 micro-batches
    cfg = ParallelConfig(uneven_pipeline=True, virtual_stages=2)
    both = pipeline_stages(replace(setup, grad_accum=9), Layout(num_gpus=3, pp=3), cfg)
    assert [len(s.layers) for s in both] == [10, 11, 11]
    assert both[0].in_flight == pytest.approx(4.0)
    check_layout(replace(setup, grad_accum=9), Layout(num_gpus=3, pp=3), cfg)
    with pytest.raises(TrainplanError, match="allow an uneven split"):
        check_layout(replace(setup, grad_accum=9), Layout(num_gpus=3, pp=3), ParallelConfig(virtual_stages=2))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2]), st.sampled_from([1, 2]),
       st.sampled_from([0, 1, 2, 3]), st.sampled_from([Method.FULL, Method.LORA, Method.FREEZE]),
       st.sampled_from(list(GradCkpt)), st.integers(1, 4), st.sampled_from([256, 512]))
def test_model_parallel_invariants(tp, pp, cp, dp, zero, method, ckpt, batch, seq):
    n = tp * pp * cp * dp
    if (zero and n == 1) or (zero >= 2 and pp > 1):
        return
    lora = LoraConfig(rank=4) if method is Method.LORA else None
    setup = TrainingSetup(model=tiny_llama(), method=method, lora=lora, grad_ckpt=ckpt, batch_size=batch,
                          seq_len=seq, grad_accum=4, framework=Framework.MEGATRON,
                          impl=implementation(Framework.MEGATRON))
    layout = Layout(num_gpus=n, tp=tp, pp=pp, cp=cp, zero=ZeroStage(zero))
    est = estimate_memory(setup, layout, H100)
    assert sum(est.components_bytes.values()) == est.peak_allocated_bytes
    assert est.peak_allocated_bytes <= est.peak_reserved_bytes <= est.device_bytes
    if pp > 1:
        assert est.device_bytes == max(est.per_stage_bytes)
    bigger = estimate_memory(replace(setup, batch_size=batch + 1), layout, H100)
    assert bigger.peak_allocated_bytes >= est.peak_allocated_bytes


def test_pipeline_over_fsdp2_keeps_the_stages_whole_gradient_in_fp32():
    # torch.distributed.pipelining (torchtitan's PP) runs each micro-batch's backward with gradient sync off
    # (stage.py backward_maybe_with_nosync) and FSDP2 keeps every unit's unsharded gradient cast to the
    # reduce dtype, fp32 (_fsdp_param_group.py post_backward -> to_accumulated_grad_if_needed). Llama-2-7B
    # over pp 2: stage 0 holds 16 decoder layers of 202,383,360 params and the 32000 x 4096 embedding:
    # (16 x 202,383,360 + 131,072,000) x 4 bytes, whatever the micro-batch count
    setup = _setup(framework=Framework.TORCHTITAN, grad_ckpt=GradCkpt.FULL, grad_accum=2)
    sh = _gpu0(setup, Layout(num_gpus=4, pp=2, fsdp=Fsdp.FULL)).sharded
    assert sh.extras.backward["fsdp_unsynced_grads"] == (16 * 202_383_360 + 32000 * 4096) * 4
    one = _gpu0(replace(setup, grad_accum=1), Layout(num_gpus=4, pp=2, fsdp=Fsdp.FULL)).sharded
    assert one.extras.backward["fsdp_unsynced_grads"] == (16 * 202_383_360 + 32000 * 4096) * 4
    # without a pipeline FSDP2 reduce-scatters every micro-batch: one unit's gradient at a time
    flat = _gpu0(setup, Layout(num_gpus=4, fsdp=Fsdp.FULL)).sharded
    assert "fsdp_unsynced_grads" not in flat.extras.backward
