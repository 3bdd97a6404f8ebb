"""Published torchtitan throughput rows outside both development sets (benchmarks/data/torchtitan_benchmarks.json):
each row's job written as a torchtitan TOML, read with `trainplan estimate --from`, on the GPU its hardware text
names (trainplan's GPU-name rule), against the tokens/s per GPU the file printed.

    python benchmarks/torchtitan_spot.py [--gpu-text]

Prints each row's prediction and error, then median and p90 |error|. `--gpu-text` shows which catalog GPU each
hardware text picked. Nothing here is fitted: the rows stand in for published runs the model was not built on.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "torchtitan_benchmarks.json"


def predict(row: dict, folder: Path) -> tuple[float | None, str]:
    from trainplan import catalog
    from trainplan.export.pieces import toml_text

    gpu = catalog.gpu_in_text(row["hardware"])
    path = folder / f"{row['id']}.toml"
    path.write_text(toml_text(row["torchtitan_toml"]))
    n = row["num_gpus"]
    cmd = [sys.executable, "-m", "trainplan", "estimate", "--from", str(path), "--gpu", gpu.id,
           "--num-gpus", str(n), "--nodes", str(max(1, n // 8)), *row["extra_flags"], "--json"]
    if row.get("interconnect"):
        cmd += ["--interconnect", row["interconnect"]]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode:
        return None, (done.stderr or done.stdout).strip().splitlines()[-1]
    return json.loads(done.stdout)["time"]["tokens_per_s_per_gpu"], gpu.id


def main(argv: list[str]) -> int:
    rows = json.loads(DATA.read_text())["rows"]
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows:
            value, info = predict(row, Path(tmp))
            measured = row["measured_tokens_per_s_per_gpu"]
            if value is None:
                print(f"{row['id']:22s} measured {measured:>8} not predicted: {info}")
                continue
            err = value / measured - 1
            errors.append(abs(err))
            gpu = f"  {info}" if "--gpu-text" in argv else ""
            print(f"{row['id']:22s} measured {measured:>8} predicted {value:9.1f} error {100 * err:+6.1f}%{gpu}")
    errors.sort()
    if errors:
        p90 = errors[max(0, int(round(0.9 * len(errors))) - 1)]
        print(f"\n{len(errors)}/{len(rows)} predicted; median |error| {100 * statistics.median(errors):.1f}%, "
              f"p90 {100 * p90:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
