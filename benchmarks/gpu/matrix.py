"""The measurement matrix: `trainplan probe` over a grid of setups on one GPU, one CSV row each.

Each setup runs in its own process (`python -m trainplan.cli probe ... --json --no-record`), so
peaks never mix, and its row holds the setup, the environment (GPU, driver, CUDA, library
versions), the three measured memory views, the step time and tokens/s, and trainplan's estimate
for the same setup beside them. The grid runs cheapest first; no new setup starts once the time
budget (default 430 s: the whole run inside 8 minutes on an H200) would be exceeded.

  python benchmarks/gpu/matrix.py --dry-run            # the grid with its estimates, runs nothing
  python benchmarks/gpu/matrix.py --out FILE.csv       # measure on the local GPU
  python benchmarks/gpu/matrix.py --tiny --out F.csv   # a tiny grid on the CPU, seconds (CI)
  python benchmarks/gpu/report.py FILE.csv             # the error table
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from trainplan.frozen import field, frozen

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
try:
    import trainplan  # noqa: F401
except ImportError:   # a checkout without an install: PYTHONPATH=src
    sys.path.insert(0, str(ROOT / "src"))

from trainplan.errors import TrainplanError  # noqa: E402
from trainplan.estimation import estimate  # noqa: E402
from trainplan.job.options import JobOptions  # noqa: E402
from trainplan.job.resolve import resolve_job  # noqa: E402

TINY = "tests/fixtures/trace"   # relative to the repository root, where every probe runs
GPU_BUDGET_S = 430.0          # start no setup that would end after this; 8 min = 480 s in all
TINY_BUDGET_S = 60.0
STARTUP_S = 9.0               # python + torch/transformers/peft imports + CUDA context, per process
TINY_STARTUP_S = 6.0
BUILD_S_PER_BPARAM = 1.5      # random init on the GPU (+ bitsandbytes quantization), per 1e9 params
SETUP_TIMEOUT_S = 150.0       # one setup may not take longer than this
GIB = 2**30

COLUMNS = (
    "setup", "status", "model", "method", "precision", "optimizer", "grad_ckpt", "attention", "batch_size",
    "seq_len", "quant", "lora_rank", "lora_targets",
    "gpu_name", "gpu_memory_bytes", "driver", "cuda", "torch", "transformers", "peft", "bitsandbytes",
    "measured_peak_allocated_bytes", "measured_peak_reserved_bytes", "measured_device_bytes",
    "measured_step_s", "measured_tokens_per_s",
    "estimated_gpu", "estimated_peak_allocated_bytes", "estimated_peak_reserved_bytes", "estimated_device_bytes",
    "estimated_step_s", "estimated_tokens_per_s",
    "error_peak_allocated_pct", "error_peak_reserved_pct", "error_device_pct", "error_step_pct",
    "wall_s", "command", "note")


@frozen
class Setup:
    """One grid point: probe flags (JobOptions field names)."""

    flags: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        f = self.flags
        model = Path(f["model"]).stem if f["model"].endswith(".json") else f["model"]
        parts = [model, f.get("method", "full"), f.get("precision", "bf16"), f.get("attention", "sdpa"),
                 f"ckpt={f.get('grad_ckpt', 'none')}", f"b{f.get('batch_size', 1)}x{f.get('seq_len', 2048)}"]
        if f.get("optimizer"):
            parts.append(f["optimizer"])
        return " ".join(parts)

    def cli_flags(self) -> list[str]:
        out: list[str] = []
        for key, value in self.flags.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                out.append(flag)
            elif value is not False and value is not None:
                out += [flag, str(value)]
        return out


def _s(model: str, method: str = "full", precision: str = "bf16", batch: int = 1, seq: int = 2048,
       **more) -> Setup:
    flags = {"model": model, "method": method, "precision": precision, "batch_size": batch, "seq_len": seq}
    flags.update({"grad_ckpt": "none", "attention": "sdpa", **more})
    return Setup(flags=flags)


def gpu_grid() -> list[Setup]:
    """Four sizes; full, LoRA, QLoRA; bf16 mixed and pure; checkpointing; sdpa/eager; batch and
    sequence steps. Run cheapest first (see order())."""
    q05, q15, l3, l8 = "qwen2.5-0.5b", "qwen2.5-1.5b", "llama-3.2-3b", "llama-3.1-8b"
    grid = [
        _s(q05, batch=4, seq=1024), _s(q05, precision="bf16-pure", batch=4, seq=1024),
        _s(q05, batch=4, seq=1024, grad_ckpt="full"), _s(q05, batch=4, seq=1024, attention="eager"),
        _s(q05, "lora", batch=4, seq=1024), _s(q05, "qlora", batch=4, seq=1024),
        _s(q05, precision="bf16-pure", batch=1, seq=512), _s(q05, precision="bf16-pure", batch=8, seq=1024),
        _s(q05, precision="bf16-pure", batch=2, seq=4096),
        _s(q15, batch=2, seq=2048), _s(q15, precision="bf16-pure", batch=2, seq=2048),
        _s(q15, batch=2, seq=2048, grad_ckpt="full"), _s(q15, batch=2, seq=1024, attention="eager"),
        _s(q15, "lora", batch=4, seq=2048), _s(q15, "qlora", batch=4, seq=2048),
        _s(l3, precision="bf16-pure", batch=2, seq=2048), _s(l3, batch=4, seq=2048, grad_ckpt="full"),
        _s(l3, "lora", batch=4, seq=2048), _s(l3, "lora", batch=8, seq=2048, grad_ckpt="full"),
        _s(l3, "qlora", batch=4, seq=2048),
        _s(l8, "lora", batch=2, seq=2048), _s(l8, "lora", batch=4, seq=4096, grad_ckpt="full"),
        _s(l8, "qlora", batch=4, seq=2048), _s(l8, precision="bf16-pure", batch=1, seq=2048, grad_ckpt="full"),
        _s(l8, batch=1, seq=2048),   # mixed precision full 8B: 16 B/param, the estimate says it does not fit
    ]
    return grid


def tiny_grid() -> list[Setup]:
    """Tiny configs (tests/fixtures/trace) that run on the CPU in seconds: two processes, about
    6 s each (the imports), between them full and LoRA, mixed and pure, sdpa and eager,
    checkpointing on and off."""
    llama, qwen = f"{TINY}/tiny_llama.json", f"{TINY}/tiny_qwen2.json"
    return [_s(llama, precision="bf16-pure", batch=2, seq=64, attention="eager"),
            _s(qwen, "lora", batch=2, seq=64, grad_ckpt="full")]


# -- estimates and cost ---------------------------------------------------------------------------

def estimate_of(setup: Setup, gpu: str):
    flags = dict(setup.flags)
    if flags["model"].endswith(".json"):
        flags["model"] = str(ROOT / flags["model"])
    return estimate(resolve_job(JobOptions(**flags, gpu=gpu)))


def expected_wall_s(est, steps: int, startup_s: float) -> float:
    """Seconds one setup should take: process start, model build, warm-up (about 3 steps' worth
    with cuBLAS initialisation) and the measured steps."""
    step_s = est.time.step_s if est.time is not None else 1.0
    return startup_s + BUILD_S_PER_BPARAM * est.params.total / 1e9 + (steps + 2) * step_s


def _skip_reason(setup: Setup, est, device: str) -> str | None:
    if setup.flags.get("method") == "qlora" and importlib.util.find_spec("bitsandbytes") is None:
        return "skipped: bitsandbytes is not installed"
    if device == "cuda" and est.memory.device_bytes > est.memory.gpu_capacity_bytes:
        return (f"skipped: estimated device peak {est.memory.device_bytes / GIB:.1f} GiB > "
                f"{est.memory.gpu_capacity_bytes / GIB:.1f} GiB")
    return None


def order(setups: list[Setup], gpu: str, steps: int, startup_s: float):
    """(setup, estimate, expected seconds), cheapest first."""
    planned = [(s, e, expected_wall_s(e, steps, startup_s)) for s in setups for e in [estimate_of(s, gpu)]]
    return sorted(planned, key=lambda p: p[2])


# -- running --------------------------------------------------------------------------------------

def probe_command(setup: Setup, device: str, steps: int) -> list[str]:
    return [sys.executable, "-m", "trainplan.cli", "probe", *setup.cli_flags(), "--device", device,
            "--steps", str(steps), "--json", "--no-record"]


def run_one(setup: Setup, device: str, steps: int, timeout_s: float) -> tuple[str, dict | None, float]:
    """(status, probe JSON or None, wall seconds) of one setup in its own process."""
    import trainplan

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(Path(trainplan.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")) if p)}
    started = time.perf_counter()
    try:
        proc = subprocess.run(probe_command(setup, device, steps), capture_output=True, text=True,
                              timeout=timeout_s, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return f"timeout after {timeout_s:.0f} s", None, time.perf_counter() - started
    wall = time.perf_counter() - started
    if proc.returncode == 0:
        return "ok", json.loads(proc.stdout), wall
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else f"exit {proc.returncode}"
    return ("oom: " if "out of memory" in last else "error: ") + last, None, wall


def _pct(value) -> str:
    return "" if value is None else f"{value:.2f}"


def csv_row(setup: Setup, est, status: str, result: dict | None, wall_s: float, device: str,
            steps: int, note: str = "") -> dict:
    f = setup.flags
    row = {"setup": setup.label, "status": status, "model": f["model"], "method": f.get("method"),
           "precision": f.get("precision"), "optimizer": str(est.setup.optimizer),
           "grad_ckpt": f.get("grad_ckpt"), "attention": f.get("attention"), "batch_size": f.get("batch_size"),
           "seq_len": f.get("seq_len"), "quant": "" if est.setup.quant is None else str(est.setup.quant.kind),
           "lora_rank": "" if est.setup.lora is None else est.setup.lora.rank,
           "lora_targets": "" if est.setup.lora is None else ",".join(est.setup_dict()["lora"]["targets"]),
           "wall_s": f"{wall_s:.1f}", "note": note,
           "command": shlex.join(["trainplan", "probe", *setup.cli_flags(), "--device", device,
                                  "--steps", str(steps)])}
    if result is None:
        row.update(estimated_gpu=est.gpu.id, estimated_peak_allocated_bytes=est.memory.peak_allocated_bytes,
                   estimated_peak_reserved_bytes=est.memory.peak_reserved_bytes,
                   estimated_device_bytes=est.memory.device_bytes,
                   estimated_step_s=None if est.time is None else est.time.step_s,
                   estimated_tokens_per_s=None if est.time is None else est.time.tokens_per_s_per_gpu)
        return row
    env, got, want, err = result["environment"], result["measured"], result["estimated"], result["error_pct"]
    row.update(gpu_name=env.get("gpu_name") or f"CPU {env.get('cpu', '')}".strip(),
               gpu_memory_bytes=env.get("gpu_memory_bytes"), driver=env.get("driver"), cuda=env.get("torch_cuda"),
               torch=env.get("torch"), transformers=env.get("transformers"), peft=env.get("peft"),
               bitsandbytes=env.get("bitsandbytes"),
               measured_peak_allocated_bytes=got["peak_allocated_bytes"],
               measured_peak_reserved_bytes=got["peak_reserved_bytes"], measured_device_bytes=got["device_bytes"],
               measured_step_s=got["step_s"], measured_tokens_per_s=got["tokens_per_s"],
               estimated_gpu=want["gpu"], estimated_peak_allocated_bytes=want["peak_allocated_bytes"],
               estimated_peak_reserved_bytes=want["peak_reserved_bytes"], estimated_device_bytes=want["device_bytes"],
               estimated_step_s=want["step_s"], estimated_tokens_per_s=want["tokens_per_s"],
               error_peak_allocated_pct=_pct(err["peak_allocated_bytes"]),
               error_peak_reserved_pct=_pct(err["peak_reserved_bytes"]),
               error_device_pct=_pct(err["device_bytes"]), error_step_pct=_pct(err["step_s"]))
    return row


def local_gpu() -> str:
    """The catalog id of the local GPU, read through NVML or nvidia-smi (the parent never opens a
    CUDA context); h200 when neither answers."""
    from trainplan.probe.measure import local_gpu_id

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
        name = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.TimeoutExpired):
        name = ""
    return (local_gpu_id(name) if name else None) or "h200"


def dry_run(planned, budget_s: float) -> None:
    print(f"{'#':>2}  {'setup':58} {'est alloc':>10} {'est device':>10} {'fits':>4} {'est step':>9} "
          f"{'exp wall':>8} {'cum':>6}")
    cum = 0.0
    for i, (setup, est, wall) in enumerate(planned, 1):
        cum += wall
        mark = "" if cum <= budget_s else "  (past the budget: not started)"
        time_s = est.time.step_s if est.time is not None else float("nan")
        print(f"{i:>2}  {setup.label:58} {est.memory.peak_allocated_bytes / GIB:>7.2f} GiB "
              f"{est.memory.device_bytes / GIB:>6.2f} GiB {'yes' if est.memory.fits else 'no':>4} "
              f"{time_s:>8.3f}s {wall:>7.1f}s {cum:>5.0f}s{mark}")


def run_grid(planned, *, device: str, steps: int, budget_s: float, out: Path) -> list[dict]:
    started = time.perf_counter()
    rows: list[dict] = []
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for i, (setup, est, expected) in enumerate(planned, 1):
            elapsed = time.perf_counter() - started
            skip = _skip_reason(setup, est, device)
            if skip is None and elapsed + expected > budget_s:
                skip = f"not started: {elapsed:.0f} s + expected {expected:.0f} s > budget {budget_s:.0f} s"
            if skip is not None:
                row = csv_row(setup, est, skip, None, 0.0, device, steps)
            else:
                timeout = max(10.0, min(SETUP_TIMEOUT_S, budget_s + 40.0 - elapsed))
                status, result, wall = run_one(setup, device, steps, timeout)
                row = csv_row(setup, est, status, result, wall, device, steps)
            rows.append(row)
            writer.writerow(row)
            handle.flush()
            print(f"[{time.perf_counter() - started:5.0f} s] {i:>2}/{len(planned)} {setup.label}: {row['status']}",
                  flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true", help="print the grid and its estimates; run nothing")
    parser.add_argument("--tiny", action="store_true", help="the tiny CPU grid (CI)")
    parser.add_argument("--device", choices=("cuda", "cpu"), help="default: cpu with --tiny, else cuda")
    parser.add_argument("--gpu", help="estimate for this GPU in --dry-run (default: the local GPU, else h200)")
    parser.add_argument("--steps", type=int, help="steps per setup, the first a warm-up (default 4; 3 with --tiny)")
    parser.add_argument("--budget-s", type=float, help=f"time budget (default {GPU_BUDGET_S:.0f}; "
                                                       f"{TINY_BUDGET_S:.0f} with --tiny)")
    parser.add_argument("--only", help="keep setups whose label contains this text")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "data" / "gpu_matrix.csv"), help="CSV to write")
    args = parser.parse_args(argv)
    device = args.device or ("cpu" if args.tiny else "cuda")
    steps = args.steps or (3 if args.tiny else 4)
    budget = args.budget_s or (TINY_BUDGET_S if args.tiny else GPU_BUDGET_S)
    setups = tiny_grid() if args.tiny else gpu_grid()
    if args.only:
        setups = [s for s in setups if args.only in s.label]
    gpu = args.gpu or ("a100-80gb" if args.tiny else local_gpu() if not args.dry_run else "h200")
    try:
        planned = order(setups, gpu, steps, TINY_STARTUP_S if args.tiny else STARTUP_S)
    except TrainplanError as exc:
        print(f"matrix: error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(planned)} setups on {device} (estimates for {gpu}), {steps} steps each, budget {budget:.0f} s")
    if args.dry_run:
        dry_run(planned, budget)
        return 0
    rows = run_grid(planned, device=device, steps=steps, budget_s=budget, out=Path(args.out))
    print(f"wrote {len(rows)} rows to {args.out}")
    sys.path.insert(0, str(HERE))
    import report

    print(report.render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
