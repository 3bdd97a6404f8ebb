"""CUDA_LAUNCH_BLOCKING=1 (trainplan.timing.launch): synchronous launches add the host's time per
kernel and leave nothing overlapped; the per-layer launch counts are recounted on transformers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainplan.cases.timecase import map_case
from trainplan.cli import main
from trainplan.enums import Framework, Fsdp, GradCkpt, Method, Offload, Precision
from trainplan.frozen import replace
from trainplan.i18n import translate
from trainplan.job.training import Implementation, Layout, LoraConfig, QuantConfig, TrainingSetup
from trainplan.model.params import count_params
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import TimingOptions, step_time
from trainplan.timing.launch import LAYER_LAUNCHES, launch_blocking_note, launches_per_micro_batch

# Llama-3.1-8B's shape (32 layers); parameters do not enter the launch count
LLAMA = ModelSpec(name="llama-3.1-8b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                  num_heads=32, num_kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=128256,
                  tied_embeddings=False)
ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
A100 = GpuSpec(id="a100-sxm4-80gb", name="A100 SXM4 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=2039e9,
               peak_flops_per_s={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
               interconnect="NVLink 3", gpu_gpu_bw_bytes_per_s=600e9, pcie="Gen4 x16", generation="ampere")
BLOCKING = Implementation(launch_blocking=True)
DEV2 = Path(__file__).parent / "data" / "published_dev2.json"


def _setup(**kw) -> TrainingSetup:
    kw.setdefault("precision", Precision.BF16)
    kw.setdefault("seq_len", 2048)
    kw.setdefault("model", LLAMA)
    return TrainingSetup(batch_size=1, **kw)


def test_launch_counts_per_micro_batch_by_hand():
    # full fine-tune: 32 layers x (43 forward + 74 backward) = 3,744; checkpointed: + 41 recompute = 5,056
    assert launches_per_micro_batch(_setup()) == 3744
    assert launches_per_micro_batch(_setup(grad_ckpt=GradCkpt.FULL)) == 5056
    # LoRA on all 7 linears, checkpointed: 32 x (106 + 133 + 101) = 10,880
    lora_all = _setup(method=Method.LORA, lora=LoraConfig(targets=ALL), grad_ckpt=GradCkpt.FULL)
    assert launches_per_micro_batch(lora_all) == 10880
    # on q_proj and v_proj: 2/7 of the all-linear excess (63 + 59 + 60 = 182): 32 x (158 + 52) = 6,720
    lora_qv = _setup(method=Method.LORA, lora=LoraConfig(targets=("q_proj", "v_proj")), grad_ckpt=GradCkpt.FULL)
    assert launches_per_micro_batch(lora_qv) == pytest.approx(6720)
    # QLoRA adds 3 bitsandbytes kernels per dequantisation: 7 linears x 32 layers x 3 uses (forward,
    # input gradient, recomputation) x 3 = 2,016
    qlora = replace(lora_all, method=Method.QLORA, quant=QuantConfig())
    assert launches_per_micro_batch(qlora) == 10880 + 2016


def test_blocking_adds_the_launch_floor_to_every_micro_batch():
    # one GPU, no communication: compute grows by 3,744 launches x 10 us = 37.44 ms per micro-batch,
    # 4 micro-batches: 0.14976 s
    base = _setup(grad_accum=4)
    layout = Layout(num_gpus=1)
    plain = step_time(base, layout, A100)
    blocked = step_time(replace(base, impl=BLOCKING), layout, A100)
    assert blocked.breakdown.compute_s - plain.breakdown.compute_s == pytest.approx(4 * 3744 * 10e-6, rel=1e-9)
    assert any("CUDA_LAUNCH_BLOCKING=1" in n for n in blocked.notes)
    assert not any("CUDA_LAUNCH_BLOCKING" in n for n in plain.notes)


def test_an_eager_step_is_no_faster_than_its_host_launches():
    # a 32-layer Llama 512 wide (about 0.1B parameters), full fine-tune, one 256-token sequence: 3,744 launches
    # x 10 us = 37.44 ms a micro-batch of host time, above the GPU's few ms (0.1B x 6 FLOPs x 256 tokens is
    # 0.15 TFLOP): the step is host-bound, 2 micro-batches 74.88 ms; Llama-3.1-8B at 2,048 tokens runs longer
    # on the GPU and the host does not show
    small = replace(LLAMA, name="llama-512", hidden_size=512, num_heads=8, num_kv_heads=8, head_dim=64,
                    intermediate_size=1408, vocab_size=32000)
    tiny = _setup(model=small, seq_len=256, grad_accum=2)
    step = step_time(tiny, Layout(num_gpus=1), A100)
    b = step.breakdown
    assert b.compute_s < 0.2 * 2 * 3744 * 10e-6        # the kernels themselves: a few ms
    assert b.compute_s + b.host_wait_s == pytest.approx(2 * 3744 * 10e-6, rel=1e-9)
    assert step.step_s == pytest.approx(b.compute_s + b.host_wait_s + b.optimizer_s, rel=1e-9)
    assert any(n.startswith("host-bound") for n in step.notes)
    long = step_time(_setup(grad_accum=2), Layout(num_gpus=1), A100)
    assert long.breakdown.compute_s > 2 * 3744 * 10e-6 * 10 and long.breakdown.host_wait_s == 0
    assert not any(n.startswith("host-bound") for n in long.notes)
    # torch.compile launches fused kernels (timing.efficiency.kernel_stack FUSED): no eager host floor
    compiled = step_time(tiny, Layout(num_gpus=1), A100, options=TimingOptions(compiled=True))
    assert compiled.breakdown.host_wait_s == 0
    assert not any(n.startswith("host-bound") for n in compiled.notes)


def test_a_pipeline_rank_launches_its_stages_layers_only():
    # a stage of 8 of the 32 layers launches 8 x 117 = 936 kernels a micro-batch, not the whole model's 3,744
    assert launches_per_micro_batch(_setup(), stage_layers=8) == 936
    assert launches_per_micro_batch(_setup(), stage_layers=None) == 3744
    # Megatron over 4 pipeline stages of 8 layers: the blocking gap is 936 x 10 us = 9.36 ms a micro-batch
    setup = replace(_setup(grad_accum=8), framework=Framework.MEGATRON)
    layout = Layout(num_gpus=4, pp=4)
    blocked = step_time(replace(setup, impl=BLOCKING), layout, A100)
    assert any("about 936 launches per micro-batch add 9 ms" in n for n in blocked.notes)


def test_blocking_exposes_all_communication():
    # DDP over 8 GPUs: the gradient all-reduce normally hides behind the backward except its last
    # bucket; with every launch blocking the whole wire time is exposed
    setup = _setup(grad_accum=2)
    layout = Layout(num_gpus=8)
    plain = step_time(setup, layout, A100)
    blocked = step_time(replace(setup, impl=BLOCKING), layout, A100)
    assert plain.comm.dp_s > 0 and plain.comm.dp_exposed_s < plain.comm.dp_s
    assert blocked.comm.dp_exposed_s == blocked.comm.dp_s
    assert blocked.breakdown.communication_s == pytest.approx(blocked.comm.total_s)


def test_blocking_leaves_fsdp_offload_copies_no_window():
    # FSDP1 CPU offload (HF: no_sync accumulation), 8 GPUs, bf16 weights and fp32 master: the rank's
    # CPU shard is params x 4 B / 8, copied up for forward and backward every micro-batch; with no
    # compute to hide behind, each micro-batch costs max(up, down) / PCIe (up = 2 x shard dominates),
    # plus the first unit's copy: ga x 2 x shard / PCIe + shard / 32 / PCIe, PCIe = 31e9 / 2 (a DGX A100's
    # GPU pairs share each PCIe switch's x16 link to the CPU, and all 8 ranks copy at once)
    setup = _setup(framework=Framework.HF, grad_accum=4)
    layout = Layout(gpu_id=A100.id, num_gpus=8, fsdp=Fsdp.FULL, offload=Offload.ALL)
    blocked = step_time(replace(setup, impl=BLOCKING), layout, A100)
    plain = step_time(setup, layout, A100)
    shard = count_params(LLAMA).total * 4 / 8
    pcie = 31e9 / 2
    assert blocked.breakdown.offload_s == pytest.approx(4 * 2 * shard / pcie + shard / 32 / pcie, rel=1e-6)
    assert plain.breakdown.offload_s < blocked.breakdown.offload_s


@pytest.mark.trace
def test_layer_launch_table_matches_a_recount_on_transformers():
    from trainplan.trace.launches import count_layer_launches
    for key, lora in (("full", False), ("lora_all_linear", True)):
        counted = count_layer_launches(lora)
        table = LAYER_LAUNCHES[key]
        assert (counted.forward, counted.backward, counted.recompute) == (
            table.forward, table.backward, table.recompute), key


def test_universal_llm_trainer_runs_with_launch_blocking_and_others_do_not():
    cases = [c for c in json.loads(DEV2.read_text()) if c["kind"] == "time"]
    ult = next(c for c in cases if c["id"] == "universal-trainer-llama31-lora-1xh100-time")
    assert map_case(ult).setup.impl.launch_blocking
    other = next(c for c in cases if c["id"].startswith("flashattn-training-gpt3-125m"))
    assert not map_case(other).setup.impl.launch_blocking


def test_cli_flag_and_its_chinese_note(capsys):
    argv = ["estimate", "--model", "llama-3.1-8b", "--method", "lora", "--gpu", "h100-80gb", "--num-gpus", "2",
            "--batch-size", "2", "--seq-len", "4096", "--json"]
    assert main(argv) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*argv, "--launch-blocking"]) == 0
    blocked = json.loads(capsys.readouterr().out)
    assert blocked["time"]["step_s"] > plain["time"]["step_s"]
    note = launch_blocking_note(6720)
    zh = translate(note, lang="zh")
    assert zh != note and "6,720" in zh and "67 ms" in zh
