"""CPU offload: the optimizer step on the host and the PCIe traffic of offloaded state, per framework.

CPU optimizer step (node level: every rank of a node steps its shard at once, on the same DRAM):

    params/s = min(DRAM bandwidth x HOST_BW_FRACTION / bytes per param, threads x per-core params/s)
    step_s   = params stepped on the node / params/s

- DeepSpeed ZeRO-Offload steps DeepSpeedCPUAdam (deepspeed/ops/adam/cpu_adam.py, csrc/adam/
  cpu_adam_impl.cpp Adam_Optimizer::Step_AVX): one vectorised pass over fp32 p, g, m, v (16 B read,
  12 B written), OpenMP over the rank's threads; then the fp32 master is cast to the 16-bit copy on
  the CPU (stage_1_and_2.py step: bit16_partition_buffer.copy_(fp32_partition); stage3.py the same
  into fp16_partitioned_groups_flat): 4 B read, 2 B written. 34 B per parameter.
- FSDP (FSDP1 CPUOffload(offload_params=True), FSDP2 CPUOffloadPolicy) steps the user's torch.optim
  optimizer on CPU tensors. torch/optim/optimizer.py _default_to_fused_or_foreach gives foreach only on
  the devices in _get_foreach_kernels_supported_devices (not CPU), so AdamW runs _single_tensor_adam
  (torch/optim/adam.py): param.mul_ (weight decay, 2 element accesses), exp_avg.lerp_ (3),
  exp_avg_sq.mul_ (2), addcmul_ (3), sqrt (2), / bias_correction2_sqrt (2), add_(eps) (2),
  param.addcdiv_ (4): 20 accesses per parameter, each a full pass; fused=True (the ATen CPU
  _fused_adamw_ kernel) is one pass: 7 accesses.
- Threads: torchrun (torch/distributed/run.py) and accelerate launch (accelerate/utils/launch.py) set
  OMP_NUM_THREADS=1 for each process when a node runs more than one; the deepspeed launcher leaves it
  unset (deepspeed/launcher/launch.py sets it only with --bind_cores_to_rank), so every rank's OpenMP
  uses all cores. A single process uses all cores.

PCIe traffic per GPU, and what hides it (time = bytes / PCIe x16 bandwidth per direction):
Which FSDP a framework runs, and whether it accumulates under no_sync, is trainplan.memory.sharding
fsdp_for's (one home with the memory model).
- FSDP1 (torch/distributed/fsdp/_flat_param.py, _runtime_utils.py): pre_unshard copies the CPU shard
  (its stored dtype) to the GPU with non_blocking=True on the pre-unshard stream, for the forward and
  again for the backward (FULL_SHARD reshards after forward; _post_forward returns early during a
  recompute in BACKWARD_PRE, so checkpointing adds no copy); _offload_grad copies each reduce-scattered
  gradient shard (cast to the parameter dtype) to _cpu_grad non_blocking on the post-backward stream
  after every synchronising backward, waited for once at the end of backward. Both overlap compute.
  Accumulation outside no_sync is not done on the CPU (prepare_gradient_for_backward: "Gradient
  accumulation outside no_sync() does not work with CPU offloading"): the copy repeats every micro-batch;
  under no_sync the unsharded gradient stays on the GPU until the last micro-batch.
- FSDP2 (torch/distributed/fsdp/_fully_shard/_fsdp_param.py, _fsdp_collectives.py): the sharded
  parameter is copied to the GPU with non_blocking=True in each all-gather (prefetched: overlapped);
  foreach_reduce copies the gradient shard to the CPU non_blocking only when no gradient is held yet
  and no post-accumulate-grad hook (optimizer in backward) exists: from the second micro-batch the copy
  is blocking and `grad += new` runs on the CPU, both exposed.
- DeepSpeed ZeRO-1/2 offload_optimizer (deepspeed/runtime/zero/stage_1_and_2.py): with accumulation
  each micro-batch copies the 16-bit gradient partition to a CPU buffer and, after the first, back to
  the GPU to add to it (async_accumulate_grad_in_cpu_via_gpu); at the boundary the fp32 gradient goes
  to the CPU (async_inplace_copy_grad_to_fp32_buffer_from_gpu); after the step the 16-bit partition
  comes back (bit16_partitions[...].copy_). With cpu_offload reduce_ipg_grads runs these on the compute
  stream unless overlap_comm, whose default is False below stage 3 (runtime/zero/config.py
  overlap_comm_valid): exposed. ZeRO-1 reduces only at the boundary.
- DeepSpeed ZeRO-3 (deepspeed/runtime/zero/stage3.py partition_grads): the gradient buffer lives on the
  CPU in grad_accum_dtype (default: the model dtype, engine.get_data_types); every micro-batch copies it
  down and up (first micro-batch: down, then up to the GPU), at the boundary the fp32 gradient goes down
  (_offload_grad_partition_at_boundary), all on reduce_and_partition_stream: overlapped with backward.
  offload_param: each sub-module's partition is copied up for every fetch, released after every
  forward (parameter_offload.py post_sub_module_forward_function), so a recompute fetches again: 2 or
  3 fetches per micro-batch, prefetched (overlapped). Without offload_param the updated 16-bit
  partition goes up after the step (exposed).
Overlapped traffic costs max(0, max(up, down) / bandwidth - compute of the micro-batch) plus the first
fetch of the pass, which nothing precedes (one layer's share).
"""

from __future__ import annotations

import functools
import os

from trainplan.enums import Framework, Fsdp, GradCkpt, Method, Offload, Optimizer, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.capabilities import offloaded_optimizer
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.sharding import FsdpConfig, fsdp_for
from trainplan.specs import GpuSpec
from trainplan.timing.traffic import optimizer_bytes_per_param, state_elem_bytes, weight_bytes_gathered

HOSTS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "catalog", "data",
                          "hosts.toml")

# STREAM-like kernels reach 73-79% of the DDR wire rate (TI SPRAD45A table 3-3, SPRACV1B: copy, scale,
# add, triad); 75% is used for the host's DRAM.
HOST_BW_FRACTION = 0.75

# Per-core rates, params (elements) per second, measured with OMP_NUM_THREADS=1 on 1e8-element
# tensors (torch 2.13 CPU, deepspeed 0.19.8, AMD EPYC with AVX-512): DeepSpeedCPUAdam fp32 2.16e9,
# torch AdamW(fused=True) fp32 2.17e9 / bf16 1.64e9, torch AdamW default (single-tensor) fp32 0.22e9 /
# bf16 0.30e9 (DeepSpeed docs/_pages/training.md: CPU-Adam 5.1-6.5x torch Adam, multi-threaded),
# `a += b` fp32 5.0e9 / bf16 6.8e9. Older server cores (AVX2, lower per-core bandwidth) are slower.
FUSED_ADAM_PER_CORE = {4: 2.16e9, 2: 1.64e9}
SINGLE_TENSOR_ADAM_PER_CORE = {4: 0.22e9, 2: 0.30e9}
ADD_PER_CORE = {4: 5.0e9, 2: 6.8e9}

DS_CPU_ADAM_BYTES = 16.0 + 12.0      # fp32 p, g, m, v read; p, m, v written (cpu_adam_impl.cpp)
DS_CAST_TO_16BIT_BYTES = 4.0 + 2.0   # fp32 master read, 16-bit copy written (stage_1_and_2.py step)
TORCH_ADAMW_ACCESSES = 20.0          # _single_tensor_adam passes, weight decay on (module docstring)
TORCH_FUSED_ADAMW_ACCESSES = 7.0     # p, g, m, v read; p, m, v written
ADAM_FAMILY = (Optimizer.ADAMW, Optimizer.ADAMW_FUSED)


@frozen
class HostSpec:
    """The machine (or the cloud slice of one) that runs a node's CPU-offloaded work."""

    name: str
    cpu_cores: int                  # physical cores available to the node's ranks
    mem_bw_bytes_per_s: float       # DRAM wire rate (channels x MT/s x 8 B), before HOST_BW_FRACTION
    gpus: int = 8                   # GPUs it serves
    gpu_link_bytes_per_s: float | None = None   # CPU<->GPU per GPU and direction when not PCIe
    gpu_link: str = "PCIe"          # the CPU<->GPU link's name (NVLink-C2C on Grace hosts)
    gpus_per_pcie_uplink: int = 1   # GPUs behind one PCIe switch whose x16 link to the CPU they share
    guess: bool = False
    source: str = ""

    @functools.cached_property
    def described(self) -> str:
        """Its name, cores and the DRAM bandwidth the CPU optimizer gets (for the notes; formatted once
        per host, not per estimate)."""
        return (f"{self.name} ({self.cpu_cores} cores, {self.mem_bw_bytes_per_s / 1e9:.0f} GB/s DRAM x "
                f"{HOST_BW_FRACTION:.0%})")


@frozen
class OffloadTime:
    """Seconds per optimizer step on one GPU, and the bytes behind them."""

    optimizer_s: float              # CPU optimizer step (+ the 16-bit cast), not overlapped
    traffic_s: float                # PCIe (+ CPU gradient accumulation) not hidden behind compute
    bytes_per_micro_batch: float    # PCIe bytes per GPU per micro-batch, both directions
    bytes_per_step: float           # PCIe bytes per GPU at the optimizer step, both directions
    notes: tuple[str, ...]


def _wire_rate(entry: dict) -> float:
    if "mem_bw_gb_per_s" in entry:
        return float(entry["mem_bw_gb_per_s"]) * 1e9
    return float(entry["mem_channels"]) * float(entry["mem_mt_per_s"]) * 1e6 * 8.0


@functools.lru_cache(maxsize=1)
def _table() -> tuple[dict[str, HostSpec], dict[str, HostSpec], HostSpec]:
    """(by GPU id, by instance name, generic guess) from catalog/data/hosts.toml, read once."""
    from trainplan.catalog.store import read

    data = read(HOSTS_FILE)
    by_gpu: dict[str, HostSpec] = {}
    generic = None
    for e in data.get("host", []):
        link = e.get("gpu_link_gb_per_s")
        spec = HostSpec(name=e["name"], cpu_cores=int(e["cpu_cores"]), mem_bw_bytes_per_s=_wire_rate(e),
                        gpus=int(e["gpus"]), gpu_link_bytes_per_s=float(link) * 1e9 if link else None,
                        gpu_link=str(e.get("gpu_link", "PCIe")),
                        gpus_per_pcie_uplink=int(e.get("gpus_per_pcie_uplink", 1)),
                        guess=bool(e.get("guess", False)), source=e["source"])
        for gpu_id in e["gpu_ids"]:
            by_gpu[gpu_id] = spec
        if spec.guess:
            generic = spec
    by_instance: dict[str, HostSpec] = {}
    for e in data.get("instance", []):
        share = float(e["vcpus"]) / float(e["host_vcpus"])
        cores = int(e["vcpus"]) // (1 if e.get("smt", True) is False else 2)
        by_instance[e["name"].lower()] = HostSpec(
            name=f"{e['name']} ({e['vcpus']} vCPUs)", cpu_cores=max(1, cores),
            mem_bw_bytes_per_s=_wire_rate(e) * share, gpus=int(e["gpus"]), source=e["source"],
            guess=share < 1.0)
    if generic is None:
        raise TrainplanError(f"{HOSTS_FILE}: no host with guess = true (the default for unknown GPUs)")
    return by_gpu, by_instance, generic


def host_for(gpu_id: str, instance: str | None = None) -> HostSpec:
    """The instance's host when the table knows it, else the GPU's reference system, else the guess."""
    by_gpu, by_instance, generic = _table()
    if instance and instance.lower() in by_instance:
        return by_instance[instance.lower()]
    return by_gpu.get(gpu_id, generic)


def resolve_host(gpu: GpuSpec, *, cpus: int | None = None, mem_bw_bytes_per_s: float | None = None,
                 instance: str | None = None) -> HostSpec:
    """host_for, with the user's core count and DRAM bandwidth (either) in place of the table's."""
    host = host_for(gpu.id, instance)
    if cpus is None and mem_bw_bytes_per_s is None:
        return host
    if (cpus is not None and cpus <= 0) or (mem_bw_bytes_per_s is not None and mem_bw_bytes_per_s <= 0):
        raise TrainplanError("--host-cpus and --host-mem-gb-per-s must be positive")
    return replace(host, name=host.name + " (user values)",
                   cpu_cores=cpus if cpus is not None else host.cpu_cores,
                   mem_bw_bytes_per_s=mem_bw_bytes_per_s if mem_bw_bytes_per_s is not None
                   else host.mem_bw_bytes_per_s, guess=False,
                   source="user" if cpus is not None and mem_bw_bytes_per_s is not None else host.source)


def threads_per_rank(framework: Framework, ranks_per_node: int, cores: int, stated: int = 0) -> int:
    """CPU threads one rank's optimizer runs on (module docstring: launchers and OMP_NUM_THREADS);
    `stated`: what the job sets itself (OMP_NUM_THREADS, torch.set_num_threads; 0: the launcher's),
    capped by the node's cores shared among its ranks."""
    if stated > 0:
        return max(1, min(stated, cores // max(1, ranks_per_node)))
    if ranks_per_node <= 1:
        return cores
    if framework is Framework.DEEPSPEED:
        return cores                 # OMP_NUM_THREADS unset: every rank's OpenMP uses all cores
    return 1                         # torchrun / accelerate launch: OMP_NUM_THREADS=1


def cpu_step_s(params_per_rank: float, ranks_per_node: int, host: HostSpec, *, bytes_per_param: float,
               per_core_params_per_s: float, threads: int) -> float:
    """Seconds for every rank of a node to step `params_per_rank` parameters on the host's CPU."""
    if params_per_rank <= 0:
        return 0.0
    cores_used = min(host.cpu_cores, ranks_per_node * threads)
    rate = min(host.mem_bw_bytes_per_s * HOST_BW_FRACTION / bytes_per_param, cores_used * per_core_params_per_s)
    return params_per_rank * ranks_per_node / rate


def _cpu_optimizer(setup: TrainingSetup, deepspeed: bool) -> tuple[float, float, str]:
    """(host bytes per parameter, per-core params/s, what runs) of the CPU optimizer step."""
    if deepspeed and setup.optimizer in ADAM_FAMILY:
        # the 16-bit copy is cast on the CPU whether it stays there (ZeRO-3 offload_param) or goes up
        return (DS_CPU_ADAM_BYTES + DS_CAST_TO_16BIT_BYTES, FUSED_ADAM_PER_CORE[4],
                "DeepSpeedCPUAdam (one fused pass over fp32 p, g, m, v, 28 B) + cast to the 16-bit copy (6 B)")
    e = state_elem_bytes(setup)
    if setup.optimizer is Optimizer.ADAMW_FUSED:
        return (TORCH_FUSED_ADAMW_ACCESSES * e, FUSED_ADAM_PER_CORE[e],
                f"torch AdamW(fused=True) on CPU tensors (one pass, {TORCH_FUSED_ADAMW_ACCESSES * e:g} B)")
    if setup.optimizer is Optimizer.ADAMW:
        return (TORCH_ADAMW_ACCESSES * e, SINGLE_TENSOR_ADAM_PER_CORE[e],
                f"torch AdamW single-tensor path on CPU tensors (foreach is off on CPU: "
                f"{TORCH_ADAMW_ACCESSES:g} element passes, {TORCH_ADAMW_ACCESSES * e:g} B)")
    # other optimizers: the GPU traffic model's bytes, at the single-tensor path's per-byte rate
    nbytes = optimizer_bytes_per_param(setup)
    per_core = SINGLE_TENSOR_ADAM_PER_CORE[e] * TORCH_ADAMW_ACCESSES * e / nbytes
    return nbytes, per_core, f"{setup.optimizer.value} on CPU tensors ({nbytes:g} B, single-tensor passes)"


def _overlapped_s(up_bytes: float, down_bytes: float, bw: float, compute_s: float) -> float:
    """Copies on their own streams, both directions at once: what the compute does not cover."""
    return max(0.0, max(up_bytes, down_bytes) / bw - compute_s)


def offload_time(setup: TrainingSetup, layout: Layout, host: HostSpec, *, n_total: float,
                 n_train: float, compute_mb_s: float, pcie_bytes_per_s: float,
                 fsdp_config: FsdpConfig | None = None) -> OffloadTime:
    """CPU optimizer step and exposed offload traffic of one GPU per optimizer step (module docstring).

    n_total / n_train: parameters of the model-parallel shard (already divided by tp x pp);
    compute_mb_s: compute of one micro-batch on this GPU; fsdp_config: the job's FSDP behaviour (None: the
    framework's)."""
    notes: list[str] = []
    bw = host.gpu_link_bytes_per_s or pcie_bytes_per_s
    ga = setup.grad_accum
    ranks = max(1, min(layout.gpus_per_node, host.gpus))   # ranks sharing one host's cores and DRAM
    # every rank copies at once (the same layer's shard, the same step): GPUs under one PCIe switch share
    # its link to the CPU
    sharing = min(host.gpus_per_pcie_uplink, ranks) if host.gpu_link_bytes_per_s is None else 1
    if sharing > 1:
        bw /= sharing
        notes.append(f"PCIe: {sharing} GPUs share each PCIe switch's x16 link to the CPU on {host.name}, "
                     f"{bw / 1e9:.1f} GB/s a GPU for their concurrent copies")
    fsdp = layout.fsdp is not Fsdp.NONE
    deepspeed = not fsdp
    dp, per_node = layout.dp_cp, layout.gpus_per_node     # the shards span data x context parallel
    dp_shard = max(1, min(dp, per_node) if layout.fsdp is Fsdp.HYBRID else dp)
    sharded_opt = fsdp or layout.zero >= ZeroStage.OPTIMIZER
    n_opt = n_train / (dp_shard if fsdp else (dp if sharded_opt else 1))
    stage3 = layout.zero is ZeroStage.PARAMETERS
    # FSDP offloads parameters and optimizer together; DeepSpeed's offload_param exists only in ZeRO-3
    params_offloaded = fsdp or (stage3 and layout.offload in (Offload.PARAMS, Offload.ALL))
    optimizer_on_cpu = layout.offload in (Offload.OPTIMIZER, Offload.ALL) or fsdp
    w16 = weight_bytes_gathered(setup)                     # 16-bit model dtype (fp32 under fp32)
    fetches = 2 + (1 if setup.grad_ckpt is GradCkpt.FULL and deepspeed else 0)
    up_mb = down_mb = up_step = down_step = 0.0
    exposed_s = 0.0
    if fsdp:
        e = state_elem_bytes(setup)                        # the CPU shard's dtype, copied as stored
        # frozen weights stay in the dtype they were loaded in (16-bit; 4-bit under QLoRA), trained ones in e
        frozen_bytes = weight_bytes_gathered(setup) if setup.method in (Method.LORA, Method.QLORA, Method.FREEZE) else e
        shard_bytes = ((n_total - n_train) * frozen_bytes + n_train * e) / dp_shard
        up_mb = 2 * shard_bytes
        down_mb = n_opt * e
        behaviour = fsdp_config or fsdp_for(setup.framework)   # the job's FSDP, else the framework's (memory.sharding)
        if behaviour.version == 2:
            in_backward = setup.impl.optimizer_in_backward    # a post-accumulate-grad hook: blocking copies
            blocking = ga if in_backward else ga - 1
            exposed_s += (_overlapped_s(up_mb, 0.0 if in_backward else down_mb, bw, compute_mb_s)
                          + (ga - 1) * _overlapped_s(up_mb, 0.0, bw, compute_mb_s))
            add_rate = min(host.mem_bw_bytes_per_s * HOST_BW_FRACTION / (3 * e) / ranks,
                           threads_per_rank(setup.framework, ranks, host.cpu_cores,
                                            setup.impl.cpu_threads_per_rank) * ADD_PER_CORE[e])
            exposed_s += (ga - 1) * n_opt / add_rate + blocking * down_mb / bw
            notes.append(f"FSDP2 CPU offload: the {shard_bytes / 1e9:.2f} GB parameter shard copied to the GPU "
                         f"for forward and backward (overlapped); gradients to the CPU, blocking and added "
                         f"on the CPU from the 2nd micro-batch ({max(0, ga - 1)} of {ga})")
        else:
            # under no_sync (the integrations' accumulation) only the last backward reduces and offloads
            syncs = ga if behaviour.sync_every_microbatch else 1
            exposed_s += (syncs * _overlapped_s(up_mb, down_mb, bw, compute_mb_s)
                          + (ga - syncs) * _overlapped_s(up_mb, 0.0, bw, compute_mb_s))
            down_mb *= syncs / ga
            notes.append(f"FSDP1 CPU offload: the {shard_bytes / 1e9:.2f} GB parameter shard copied to the GPU "
                         f"for forward and backward, the gradient shard to the CPU after {syncs} of {ga} "
                         "backward(s), overlapped with compute (torch fsdp _flat_param.py / _runtime_utils.py)")
        exposed_s += up_mb / 2 / max(1, setup.model.num_layers) / bw   # the first unit's copy precedes compute
    else:
        if optimizer_on_cpu and stage3:
            # every micro-batch the CPU gradient buffer goes down and up (the first: down, then up)
            up_mb = down_mb = w16 * n_opt
            down_step = 4.0 * n_opt                         # fp32 gradient at the boundary
            if layout.offload is not Offload.ALL:
                up_step = w16 * n_opt                       # updated 16-bit partition back to the GPU
        elif optimizer_on_cpu:
            stage2 = layout.zero is not ZeroStage.OPTIMIZER  # ZeRO-1 reduces only at the boundary
            acc_down = (ga if stage2 else 1) * w16 * n_opt if ga > 1 else 0.0
            acc_up = (ga - 1 if stage2 else 1) * w16 * n_opt if ga > 1 else 0.0
            down_step = acc_down + 4.0 * n_opt
            up_step = acc_up + w16 * n_opt
        if params_offloaded:
            fetch = fetches * n_total / max(1, dp) * w16
            up_mb += fetch
            exposed_s += fetch / fetches / max(1, setup.model.num_layers) / bw
        if stage3:   # the last micro-batch's backward also sends the fp32 gradient down
            exposed_s += ((ga - 1) * _overlapped_s(up_mb, down_mb, bw, compute_mb_s)
                          + _overlapped_s(up_mb, down_mb + down_step, bw, compute_mb_s) + up_step / bw)
            fetched = ", parameter fetches" if params_offloaded else ""
            notes.append(f"DeepSpeed ZeRO-3 offload: {(up_mb + down_mb) / 1e9:.2f} GB per micro-batch over "
                         f"{host.gpu_link} (gradient buffer{fetched}; overlapped with compute), "
                         f"{(up_step + down_step) / 1e9:.2f} GB at the step")
        else:
            exposed_s += (up_step + down_step) / bw
            notes.append(f"DeepSpeed {'ZeRO-' + str(int(layout.zero)) if layout.zero else 'ZeRO-Offload'} "
                         f"optimizer offload: {(up_step + down_step) / 1e9:.2f} GB per step over {host.gpu_link} "
                         "(gradient accumulation included) on the compute stream (overlap_comm off below ZeRO-3)"
                         + ("; offload_param needs ZeRO-3: parameters stay on the GPU"
                            if layout.offload in (Offload.PARAMS, Offload.ALL) else ""))
    optimizer_s = 0.0
    if optimizer_on_cpu:
        run, said = offloaded_optimizer(setup, layout)
        if said:
            notes.append(said)
        nbytes, per_core, what = _cpu_optimizer(replace(setup, optimizer=run), deepspeed)
        threads = threads_per_rank(setup.framework, ranks, host.cpu_cores, setup.impl.cpu_threads_per_rank)
        optimizer_s = cpu_step_s(n_opt, ranks, host, bytes_per_param=nbytes, per_core_params_per_s=per_core,
                                 threads=threads)
        notes.append(f"CPU optimizer: {what}; {ranks} rank(s) x {n_opt / 1e9:.3g}B params on {host.described}, "
                     f"{min(host.cpu_cores, ranks * threads)} threads"
                     + (" (OMP_NUM_THREADS=1 per rank under torchrun/accelerate)"
                        if threads == 1 and ranks > 1 and not setup.impl.cpu_threads_per_rank else "")
                     + (f"; host assumed ({host.source})" if host.guess else ""))
        if setup.impl.cpu_threads_per_rank:
            notes.append(f"CPU optimizer threads: {threads} per rank, as the job sets them "
                         "(OMP_NUM_THREADS / torch.set_num_threads)")
    return OffloadTime(optimizer_s=optimizer_s, traffic_s=exposed_s, bytes_per_micro_batch=up_mb + down_mb,
                       bytes_per_step=up_step + down_step, notes=tuple(notes))
