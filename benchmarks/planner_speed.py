"""How fast the planner evaluates layouts, and how long `trainplan plan` takes for a 70B model over
every catalog GPU up to 256 GPUs. One process, one core (pure Python).

1. Memory per layout, exhaustively: every (setup, layout) the 70B plan searches (GPU counts 1..256 in
   node shapes, tp/pp splits, DDP/ZeRO/FSDP/offload, micro-batches, checkpointing, optimizers), each
   through the planner's fast path (planner_memory, equal to estimate_memory). Printed as layouts/s
   cold (fresh caches: the per-setup step inputs and walks included) and warm, against
   estimate_memory on a sample. A result holds for every GPU type (memory does not depend on the
   type, only the fit does): candidates/s counts each layout once per catalog GPU type.
2. The plan itself: `trainplan plan --model llama-3.1-70b --max-gpus 256` (branch and bound), wall
   time of the command (median of 3), and in process the search statistics and candidates/s of six
   plans, each a new request with its own memory model: the first of the process (the catalogs'
   and the time model's module-level caches cold) and the median of the other five.

Times are CPU seconds of this process (time.process_time; for the command, its user + system time),
which is what one core delivers even on a shared machine, with the wall clock alongside.

Usage: python benchmarks/planner_speed.py [model] [max_gpus]
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time

from trainplan import catalog
from trainplan.frozen import replace
from trainplan.job.options import JobOptions
from trainplan.job.resolve import build_setup, resolve_gpu
from trainplan.memory import estimate_memory
from trainplan.memory.model import MemoryModel
from trainplan.planner.plan import plan
from trainplan.planner.request import DEFAULT_GLOBAL_BATCH, resolve_plan
from trainplan.planner.space import Shape, micro_batches, node_counts, shardings, splits

MODEL = sys.argv[1] if len(sys.argv) > 1 else "llama-3.1-70b"
PLANS = 11       # plans timed in process: the first, then the median of the others
MAX_GPUS = int(sys.argv[2]) if len(sys.argv) > 2 else 256


def searched_pairs(model: str, max_gpus: int):
    """Every (setup, layout) of the plan's search space for `model`, full fine-tuning."""
    base = build_setup(JobOptions(model=model, method="full"))
    spec = base.model
    setups: dict = {}
    pairs = []
    for n in node_counts(max_gpus, 8):
        nodes = 1 if n <= 8 else n // 8
        for tp, pp in splits(spec, n, 8, DEFAULT_GLOBAL_BATCH):
            per_rank = DEFAULT_GLOBAL_BATCH // (n // (tp * pp))
            for mb in micro_batches(per_rank):
                for ckpt in ("none", "full"):
                    for opt in ("adamw-fused", "adamw-8bit"):
                        key = (mb, per_rank // mb, ckpt, opt)
                        if key not in setups:
                            setups[key] = build_setup(JobOptions(model=model, method="full", batch_size=mb,
                                                              grad_accum=per_rank // mb, grad_ckpt=ckpt,
                                                              optimizer=opt, attention="flash"), spec)
                        for z, f, o in shardings(n, nodes, tp, pp):
                            shape = Shape(num_gpus=n, nodes=nodes, tp=tp, pp=pp, zero=z, fsdp=f, offload=o)
                            pairs.append((setups[key], shape.layout("any")))
    return pairs


def sweep(pairs, fast: MemoryModel) -> float:
    """CPU seconds to compute the memory of every pair."""
    start = time.process_time()
    for setup, layout in pairs:
        fast.device_bytes(setup, layout)
    return time.process_time() - start


def child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def machine_probe_ms() -> float:
    """CPU time of a fixed pure-Python loop (3M additions): this VM's speed drifts by 10-20% over
    minutes, and every figure below drifts with it; printed to put them in context."""
    start = time.process_time()
    total = 0
    for i in range(3_000_000):
        total += i
    return (time.process_time() - start) * 1000


def main() -> None:
    probe = machine_probe_ms()
    gpus = len(catalog.load_gpus())
    # the plans first, in a process that has done nothing else (as `trainplan plan` is)
    plan_cpus = []
    for _ in range(PLANS):      # each a new request and its own memory model, as a command makes them
        start = time.process_time()
        result = plan(resolve_plan(JobOptions(model=MODEL, method="full"), max_gpus=MAX_GPUS), details=False)
        plan_cpus.append(time.process_time() - start)
    o = result.outcome
    first, typical = plan_cpus[0], statistics.median(plan_cpus[1:])

    pairs = searched_pairs(MODEL, MAX_GPUS)
    fast = MemoryModel()
    cold = sweep(pairs, fast)
    warm = sweep(pairs, fast)
    h100 = resolve_gpu("h100")
    sample = pairs[:: max(1, len(pairs) // 40)]
    start = time.process_time()
    for setup, layout in sample:
        estimate_memory(setup, replace(layout, gpu_id=h100.id), h100)
    ref = (time.process_time() - start) / len(sample)
    n = len(pairs)
    print(f"{MODEL}, full fine-tuning, up to {MAX_GPUS} GPUs: {n:,} (setup, layout) pairs searched")
    print(f"memory fast path, cold caches : {n / cold:10,.0f} layouts/s ({cold:.2f} s, "
          f"{fast.walks_computed:,} step walks)")
    print(f"memory fast path, warm caches : {n / warm:10,.0f} layouts/s ({warm:.2f} s)")
    print(f"estimate_memory, per layout   : {1 / ref:10,.0f} layouts/s ({ref * 1000:.1f} ms each, "
          f"{len(sample)} sampled)")
    print(f"GPU candidates (x {gpus} types) : {n * gpus / cold:10,.0f} candidates/s cold")

    walls, cpus = [], []
    cmd = [sys.executable, "-m", "trainplan.cli", "plan", "--model", MODEL, "--max-gpus", str(MAX_GPUS)]
    for _ in range(3):
        start, cpu = time.perf_counter(), child_cpu_s()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        cpus.append(child_cpu_s() - cpu)
    print(f"`trainplan plan --model {MODEL} --max-gpus {MAX_GPUS}`: {statistics.median(cpus):.2f} s CPU, "
          f"{statistics.median(walls):.2f} s wall (median of 3, process start and imports included)")
    print(f"  in process, request resolved and plan searched: {o.candidates:,} candidates over {gpus} GPU types "
          f"({o.groups:,} groups bounded, {o.visited:,} visited, {o.memory_checks:,} memory checks, {o.timed:,} timed)")
    print(f"    first plan of the process : {first * 1000:6.1f} ms CPU = {o.candidates / first:10,.0f} candidates/s")
    print(f"    median of the next {PLANS - 1}     : {typical * 1000:6.1f} ms CPU = {o.candidates / typical:10,.0f} "
          "candidates/s (target >= 150,000)")
    print(f"machine speed probe: {probe:.0f} ms before, {machine_probe_ms():.0f} ms after (a fixed 3M-step loop)")


if __name__ == "__main__":
    main()
