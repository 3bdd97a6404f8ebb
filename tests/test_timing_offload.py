"""CPU offload time (trainplan.timing.offload): the host's CPU optimizer step and the PCIe traffic of
DeepSpeed ZeRO-Offload and FSDP CPU offload, with values derived by hand."""

from __future__ import annotations

import pytest

from trainplan.enums import Framework, Fsdp, GradCkpt, Method, Offload, Optimizer, Precision, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.training import Implementation, Layout, TrainingSetup
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import TimingOptions, step_time
from trainplan.timing.offload import (
    HostSpec,
    cpu_step_s,
    host_for,
    offload_time,
    resolve_host,
    threads_per_rank,
)

LLAMA2_7B = ModelSpec(name="llama-2-7b", model_type="llama", naming="llama", hidden_size=4096, num_layers=32,
                      num_heads=32, num_kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32000,
                      tied_embeddings=False)
P7 = 6_738_415_616          # its parameters (models.toml computed_params for Llama-2-7B)
A100 = GpuSpec(id="a100-sxm4-80gb", name="A100 SXM4 80GB", vendor="NVIDIA", memory_bytes=80 * 10**9,
               reported_memory_bytes=None, memory_bw_bytes_per_s=2039e9,
               peak_flops_per_s={"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12},
               interconnect="NVLink 3", gpu_gpu_bw_bytes_per_s=600e9, pcie="Gen4 x16", generation="ampere")
HOST = HostSpec(name="test host", cpu_cores=64, mem_bw_bytes_per_s=400e9, gpus=8)
PCIE = 31e9                 # PCIe 4 x16 per direction (links.PCIE_BYTES_PER_S)


def _setup(**kw) -> TrainingSetup:
    kw.setdefault("precision", Precision.BF16)
    return TrainingSetup(model=LLAMA2_7B, method=Method.FULL, batch_size=1, seq_len=4096, **kw)


# --- the CPU optimizer step ------------------------------------------------------------------------

def test_deepspeed_cpu_adam_step_is_memory_bound_on_a_big_host():
    # 8 ranks x 1e9 params, DeepSpeedCPUAdam 28 B + 16-bit cast 6 B = 34 B per param.
    # DRAM: 400 GB/s x 0.75 = 300 GB/s -> 300e9 / 34 = 8.82e9 params/s; cores: 64 x 2.16e9 = 138e9.
    # step = 8e9 params x 34 B / 300e9 B/s = 0.9067 s
    s = cpu_step_s(1e9, 8, HOST, bytes_per_param=34.0, per_core_params_per_s=2.16e9, threads=64)
    assert s == pytest.approx(8e9 * 34 / 300e9, rel=1e-9)


def test_torch_adamw_under_torchrun_is_core_bound():
    # 8 ranks x 1 thread (OMP_NUM_THREADS=1) x 0.22e9 params/s (single-tensor fp32) = 1.76e9 params/s,
    # below the DRAM bound 300e9 / 80 B = 3.75e9: step = 8e9 / 1.76e9 = 4.545 s
    s = cpu_step_s(1e9, 8, HOST, bytes_per_param=80.0, per_core_params_per_s=0.22e9, threads=1)
    assert s == pytest.approx(8e9 / 1.76e9, rel=1e-9)


def test_threads_per_rank_follow_the_launcher():
    assert threads_per_rank(Framework.DEEPSPEED, 8, 128) == 128   # deepspeed launcher: OMP_NUM_THREADS unset
    assert threads_per_rank(Framework.HF, 8, 128) == 1            # torchrun / accelerate: 1 per process
    assert threads_per_rank(Framework.TORCHTUNE, 8, 128) == 1
    assert threads_per_rank(Framework.HF, 1, 128) == 128          # a single process keeps all cores


# --- host specs --------------------------------------------------------------------------------------

def test_reference_hosts_and_instances():
    dgx_h100 = host_for("h100-sxm")
    assert dgx_h100.cpu_cores == 112                                  # 2 x 56-core Xeon 8480C
    assert dgx_h100.mem_bw_bytes_per_s == pytest.approx(16 * 4800e6 * 8)   # 614.4 GB/s wire rate
    assert not dgx_h100.guess
    assert host_for("rtx4090").guess                                  # no reference system: a guess
    p4d = host_for("a100-sxm4-40gb", "p4d.24xlarge")
    assert p4d.cpu_cores == 48                                        # 96 vCPUs / 2 SMT threads
    assert p4d.mem_bw_bytes_per_s == pytest.approx(12 * 2933e6 * 8)   # 281.6 GB/s, the whole host
    g5 = host_for("a10g", "g5.xlarge")
    assert g5.cpu_cores == 2                                          # 4 vCPUs
    assert g5.mem_bw_bytes_per_s == pytest.approx(16 * 3200e6 * 8 * 4 / 192)   # its vCPU share: 8.53 GB/s
    assert g5.guess


def test_gh200_offloads_over_nvlink_c2c_to_its_own_grace():
    """One Grace per Hopper: 72 cores, 512 GB/s LPDDR5X, NVLink-C2C 900 GB/s bidirectional = 450 per direction."""
    host = host_for("gh200")
    assert (host.cpu_cores, host.gpus, host.mem_bw_bytes_per_s, host.gpu_link_bytes_per_s) == (72, 1, 512e9, 450e9)
    assert host.gpu_link == "NVLink-C2C" and host_for("h100-sxm").gpu_link == "PCIe"


def test_user_host_values_replace_the_table():
    host = resolve_host(A100, cpus=16, mem_bw_bytes_per_s=100e9)
    assert (host.cpu_cores, host.mem_bw_bytes_per_s) == (16, 100e9)
    assert resolve_host(A100, cpus=16).mem_bw_bytes_per_s == pytest.approx(16 * 3200e6 * 8)   # DGX A100's
    with pytest.raises(TrainplanError):
        resolve_host(A100, cpus=0)


# --- PCIe traffic --------------------------------------------------------------------------------------

def test_fsdp1_traffic_per_micro_batch():
    # FSDP1 (HF/accelerate: FSDP1 with no_sync accumulation), 8 GPUs, bf16 mixed precision: the CPU
    # shard is fp32 (4 B). shard = 8e9 x 4 B / 8 = 4e9 B, up twice (forward, backward) = 8e9 B per
    # micro-batch; the 4e9 B gradient shard goes down once per step (no_sync): 1e9 B per micro-batch
    setup = _setup(framework=Framework.HF, grad_accum=4)
    layout = Layout(num_gpus=8, fsdp=Fsdp.FULL, offload=Offload.ALL)
    off = offload_time(setup, layout, HOST, n_total=8e9, n_train=8e9, compute_mb_s=1.0, pcie_bytes_per_s=PCIE)
    assert off.bytes_per_micro_batch == pytest.approx(9e9)
    # overlapped: max(8e9, 4e9) / 31e9 = 0.258 s < 1 s of compute -> hidden; only the first unit's
    # copy is exposed: 4e9 B / 32 layers / 31e9 = 4.03 ms
    assert off.traffic_s == pytest.approx(4e9 / 32 / 31e9, rel=1e-9)
    short = offload_time(setup, layout, HOST, n_total=8e9, n_train=8e9, compute_mb_s=0.1, pcie_bytes_per_s=PCIE)
    # 0.1 s of compute: 4 micro-batches x (0.258 - 0.1) s exposed + the 4.03 ms
    assert short.traffic_s == pytest.approx(4 * (8e9 / 31e9 - 0.1) + 4e9 / 32 / 31e9, rel=1e-9)


def test_gpus_under_one_pcie_switch_share_its_link_to_the_cpu():
    # DGX A100: GPU pairs under one PCIe switch with one x16 Gen4 link to the CPU (hosts.toml). The same
    # FSDP1 job at 0.1 s of compute a micro-batch: 2 ranks copy at once, 31e9 / 2 = 15.5e9 B/s each:
    # 4 x (8e9 / 15.5e9 - 0.1) + 4e9 / 32 / 15.5e9
    assert host_for("a100-sxm4-80gb").gpus_per_pcie_uplink == 2
    assert host_for("h100-sxm").gpus_per_pcie_uplink == 1          # no shared uplink in the table
    setup = _setup(framework=Framework.HF, grad_accum=4)
    paired = replace(HOST, gpus_per_pcie_uplink=2)
    off = offload_time(setup, Layout(num_gpus=8, fsdp=Fsdp.FULL, offload=Offload.ALL), paired, n_total=8e9,
                       n_train=8e9, compute_mb_s=0.1, pcie_bytes_per_s=PCIE)
    assert off.traffic_s == pytest.approx(4 * (8e9 / 15.5e9 - 0.1) + 4e9 / 32 / 15.5e9, rel=1e-9)
    assert any("2 GPUs share each PCIe switch's x16 link to the CPU" in n for n in off.notes)
    # one GPU on the node has the link to itself
    alone = offload_time(replace(setup, grad_accum=4), Layout(num_gpus=1, fsdp=Fsdp.FULL, offload=Offload.ALL),
                         paired, n_total=8e9, n_train=8e9, compute_mb_s=0.1, pcie_bytes_per_s=PCIE)
    assert not any("share each PCIe switch" in n for n in alone.notes)


def test_fsdp2_gradients_block_and_add_on_the_cpu_after_the_first_micro_batch():
    # torchtune (FSDP2), same shard: micro-batches 2..4 copy the 4e9 B gradient shard blocking
    # (3 x 4e9 / 31e9 = 0.387 s) and add it on the CPU: 1e9 elements per rank at
    # min(300e9 / 12 B / 8 ranks = 3.125e9, 1 thread x 5.0e9) = 3.125e9 /s -> 3 x 0.32 s = 0.96 s
    setup = _setup(framework=Framework.TORCHTUNE, grad_accum=4)
    layout = Layout(num_gpus=8, fsdp=Fsdp.FULL, offload=Offload.ALL)
    off = offload_time(setup, layout, HOST, n_total=8e9, n_train=8e9, compute_mb_s=1.0, pcie_bytes_per_s=PCIE)
    expected = 3 * 4e9 / 31e9 + 3 * 1e9 / 3.125e9 + 4e9 / 32 / 31e9
    assert off.traffic_s == pytest.approx(expected, rel=1e-9)


def test_deepspeed_zero2_traffic_per_step():
    # ZeRO-2 + offload_optimizer, 8 GPUs, 4 micro-batches, bf16: partition 1e9 params per GPU.
    # down: 4 x 2 B (16-bit gradient) + 4 B (fp32 at the boundary) = 12 B; up: 3 x 2 B + 2 B (new
    # weights) = 8 B -> 20e9 B per step, on the compute stream: 20e9 / 31e9 = 0.645 s exposed
    setup = _setup(framework=Framework.DEEPSPEED, grad_accum=4)
    layout = Layout(num_gpus=8, zero=ZeroStage.GRADIENTS, offload=Offload.OPTIMIZER)
    off = offload_time(setup, layout, HOST, n_total=8e9, n_train=8e9, compute_mb_s=1.0, pcie_bytes_per_s=PCIE)
    assert off.bytes_per_step == pytest.approx(20e9)
    assert off.traffic_s == pytest.approx(20e9 / 31e9, rel=1e-9)
    # the CPU step: 8 ranks x 1e9 x 34 B / (400e9 x 0.75) = 0.9067 s (DeepSpeed: all 64 cores)
    assert off.optimizer_s == pytest.approx(8e9 * 34 / 300e9, rel=1e-9)
    one = offload_time(replace(setup, grad_accum=1), layout, HOST, n_total=8e9, n_train=8e9, compute_mb_s=1.0,
                       pcie_bytes_per_s=PCIE)
    assert one.bytes_per_step == pytest.approx(6e9)                 # 4 B down + 2 B up per parameter


def test_deepspeed_zero3_offload_all_traffic():
    # ZeRO-3 offload_param + offload_optimizer, full recomputation: per micro-batch the gradient
    # buffer goes down and up (2 B each) and the partition (8e9 / 8 x 2 B = 2e9 B) is fetched 3 times
    # (forward, recompute, backward): up 2e9 + 6e9 = 8e9 B, down 2e9 B; at the step the fp32
    # gradient goes down (4e9 B) and nothing comes back (the 16-bit copy stays on the CPU)
    setup = _setup(framework=Framework.DEEPSPEED, grad_accum=2, grad_ckpt=GradCkpt.FULL)
    layout = Layout(num_gpus=8, zero=ZeroStage.PARAMETERS, offload=Offload.ALL)
    off = offload_time(setup, layout, HOST, n_total=8e9, n_train=8e9, compute_mb_s=1.0, pcie_bytes_per_s=PCIE)
    assert off.bytes_per_micro_batch == pytest.approx(10e9)
    assert off.bytes_per_step == pytest.approx(4e9)
    # overlapped: 8e9 / 31e9 = 0.258 s < 1 s; only the first fetch is exposed: 2e9 / 32 / 31e9
    assert off.traffic_s == pytest.approx(2e9 / 32 / 31e9, rel=1e-9)


# --- wired into the step -----------------------------------------------------------------------------

def test_step_time_uses_the_host_and_says_so():
    # DeepSpeed ZeRO-2 offload of Llama-2-7B on 8 A100s, host stated by the user: 64 cores, 100 GB/s.
    # optimizer_s = 8 ranks x (P7 / 8) params x 34 B / (100e9 x 0.75) = P7 x 34 / 75e9 = 3.055 s
    setup = _setup(framework=Framework.DEEPSPEED, optimizer=Optimizer.ADAMW,
                   impl=Implementation())
    layout = Layout(num_gpus=8, zero=ZeroStage.GRADIENTS, offload=Offload.OPTIMIZER)
    st = step_time(setup, layout, A100, options=TimingOptions(host_cpus=64, host_mem_bw_bytes_per_s=100e9))
    assert st.breakdown.optimizer_s == pytest.approx(P7 * 34 / 75e9, rel=1e-6)
    assert any("DeepSpeedCPUAdam" in n for n in st.notes)
    default = step_time(setup, layout, A100)
    assert any("DGX A100" in n for n in default.notes)                # the GPU's reference host


def test_torchrun_single_thread_note_and_guessed_host():
    setup = _setup(framework=Framework.HF)
    layout = Layout(gpu_id="rtx4090", num_gpus=4, fsdp=Fsdp.FULL, offload=Offload.ALL)
    rtx = GpuSpec(id="rtx4090", name="GeForce RTX 4090", vendor="NVIDIA", memory_bytes=24 * 10**9,
                  reported_memory_bytes=None, memory_bw_bytes_per_s=1008e9,
                  peak_flops_per_s={"bf16": 165e12, "fp16": 165e12}, pcie="Gen4 x16", generation="ada")
    notes = " ".join(step_time(setup, layout, rtx).notes)
    assert "OMP_NUM_THREADS=1" in notes and "host assumed" in notes


def test_host_flags_reach_the_cpu_step():
    # --host-cpus 8 --host-mem-gb-per-s 50: Llama-2-7B (6,738,415,616 params) under ZeRO-2 optimizer offload
    # on one GPU: DeepSpeedCPUAdam 28 B + 6 B cast = 34 B per param over 50 GB/s x 75% achieved DRAM
    # bandwidth = 6.738e9 x 34 / 37.5e9 = 6.109 s (8 cores x 2.16e9 params/s per core is not the bound)
    from trainplan.errors import TrainplanError
    from trainplan.estimation import estimate
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import resolve_job

    base = dict(model="llama-2-7b", method="full", gpu="a100", zero=2, offload="optimizer", framework="deepspeed")
    est = estimate(resolve_job(JobOptions(**base, host_cpus=8, host_mem_gb_per_s=50.0)))
    assert est.time.step.breakdown.optimizer_s == pytest.approx(6_738_415_616 * 34 / 37.5e9, rel=1e-9)
    with pytest.raises(TrainplanError, match="--host-mem-gb-per-s"):
        resolve_job(JobOptions(**base, host_mem_gb_per_s=-1.0))


def test_threads_the_job_sets_replace_the_launchers():
    # OMP_NUM_THREADS / torch.set_num_threads given: that many per rank, capped by the node's cores
    # shared among its ranks
    assert threads_per_rank(Framework.HF, 8, 128, 16) == 16
    assert threads_per_rank(Framework.HF, 8, 64, 16) == 8
    assert threads_per_rank(Framework.DEEPSPEED, 1, 128, 4) == 4


def test_fsdp_cpu_adamw_with_the_threads_the_job_sets():
    # FSDP CPU offload of Llama-2-7B on 8 A100s, torch AdamW on fp32 CPU tensors (single-tensor path,
    # 20 passes x 4 B = 80 B a parameter), host 128 cores / 410 GB/s. torchrun's 1 thread per rank:
    # min(410e9 x 0.75 / 80 = 3.84e9, 8 x 0.22e9 = 1.76e9) -> P7 / 1.76e9 s; with 16 threads per rank
    # the cores give 128 x 0.22e9 = 28.2e9 and the DRAM bound 3.84e9 decides: P7 / 3.84375e9 s
    setup = _setup(framework=Framework.HF, optimizer=Optimizer.ADAMW)
    layout = Layout(num_gpus=8, fsdp=Fsdp.FULL, offload=Offload.ALL)
    host = TimingOptions(host_cpus=128, host_mem_bw_bytes_per_s=410e9)
    one = step_time(setup, layout, A100, options=host)
    many = step_time(replace(setup, impl=replace(setup.impl, cpu_threads_per_rank=16)), layout, A100, options=host)
    assert one.breakdown.optimizer_s == pytest.approx(P7 / 1.76e9, rel=1e-6)
    assert many.breakdown.optimizer_s == pytest.approx(P7 / (410e9 * 0.75 / 80), rel=1e-6)
    assert "CPU optimizer threads: 16 per rank, as the job sets them (OMP_NUM_THREADS / torch.set_num_threads)" \
        in many.notes
    assert not any("CPU optimizer threads" in n for n in one.notes)


def test_offload_notes_name_the_link_the_bytes_cross():
    from trainplan.api import estimate as api_estimate

    gh200 = api_estimate(model="llama-3.1-8b", method="full", gpu="gh200", zero=2, offload="optimizer")
    h100 = api_estimate(model="llama-3.1-8b", method="full", gpu="h100", zero=2, offload="optimizer")
    # 8.03B params: fp32 grads down + bf16 params up = 6 B/param = 48.18 GB, over C2C at 450 GB/s = 0.107 s
    assert any("48.18 GB per step over NVLink-C2C" in n for n in gh200.notes)
    assert any("48.18 GB per step over PCIe" in n for n in h100.notes)
