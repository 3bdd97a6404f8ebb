"""How fast `trainplan estimate` answers, against a bare `python -c pass` measured in the same run.

Prints the median wall time of each over N runs and the ratio. Target: well under 0.5 s.
Usage: python benchmarks/estimate_speed.py [runs]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
ESTIMATE = [sys.executable, "-m", "trainplan.cli", "estimate", "--model", "llama-2-7b", "--method", "full",
            "--gpu", "a100-80gb", "--json"]
BARE = [sys.executable, "-c", "pass"]
IMPORT = [sys.executable, "-c", "import trainplan"]


def _median_s(cmd: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    bare = _median_s(BARE)
    imp = _median_s(IMPORT)
    est = _median_s(ESTIMATE)
    print(f"runs per command: {RUNS}")
    print(f"python -c pass            {bare * 1000:8.1f} ms")
    print(f"python -c 'import trainplan' {imp * 1000:5.1f} ms  ({imp / bare:.2f}x bare)")
    print(f"trainplan estimate --json {est * 1000:8.1f} ms  ({est / bare:.2f}x bare, "
          f"{(est - bare) * 1000:.1f} ms over bare)")


if __name__ == "__main__":
    main()
