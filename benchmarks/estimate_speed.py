"""How fast an estimate answers (issue 12's targets), measured in one run on this machine:

1. a one-shot `trainplan estimate --model llama-3.1-70b --method lora --gpu h100 --json` (the
   installed `trainplan` executable) against a bare `python -c pass`: median wall time of each over
   N runs, the two taken in turn, and the ratio (target: at most 4x);
2. in-process `trainplan.estimate(...)` of the Llama-2-7B full fine-tune on one A100, which does not
   fit and so computes its suggestions too: calls per second (target: at least 500).

The executable's modules must have their .pyc (a first run writes them unless
PYTHONDONTWRITEBYTECODE is set; `pip install .` compiles them at install).

Usage: python benchmarks/estimate_speed.py [runs]
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 21
ARGS = ["estimate", "--model", "llama-3.1-70b", "--method", "lora", "--gpu", "h100", "--json"]


def _executable() -> str:
    beside = Path(sys.executable).with_name("trainplan")
    return str(beside) if beside.exists() else shutil.which("trainplan") or "trainplan"


def _medians_s(*cmds: list[str]) -> list[float]:
    """Median wall time of each command over RUNS runs, the commands taken in turn (one run of each,
    then again), so that the machine's drift (this VM's speed moves by 10-20% over minutes) falls on
    all of them alike and their ratio holds."""
    for cmd in cmds:             # warm the file cache (and the .pyc)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(RUNS):
        for cmd, out in zip(cmds, times):
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            out.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def calls_per_s(seconds: float = 3.0) -> float:
    import trainplan

    trainplan.estimate("llama-2-7b", method="full", gpu="a100")     # catalogs loaded once
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        trainplan.estimate("llama-2-7b", method="full", gpu="a100")
        n += 1
    return n / (time.perf_counter() - start)


def main() -> None:
    bare, est = _medians_s([sys.executable, "-c", "pass"], [_executable(), *ARGS])
    print(f"runs per command: {RUNS}")
    print(f"python -c pass                      {bare * 1000:7.1f} ms")
    print(f"trainplan {' '.join(ARGS)}  {est * 1000:7.1f} ms  ({est / bare:.2f}x bare; target <= 4x)")
    print(f"trainplan.estimate('llama-2-7b', method='full', gpu='a100') in process: {calls_per_s():,.0f} calls/s "
          "(target >= 500)")


if __name__ == "__main__":
    main()
