"""Re-estimate every measured row of a measurement-matrix CSV with the current model (the CSV
keeps the estimate made when it was measured) and print the error per memory view.

  python benchmarks/gpu/reestimate.py benchmarks/data/gpu_h200.csv

error = (estimated - measured) / measured; rows whose status is not "ok" are left out. The rows
carry the probe's setup columns (model, method, precision, optimizer, grad_ckpt, attention,
batch_size, seq_len, quant, lora_rank, lora_targets) and the GPU trainplan resolved then.
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

from trainplan.cases import mapping_from_options
from trainplan.job.options import JobOptions
from trainplan.memory import estimate_memory

VIEWS = ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes")


def request_of(row: dict) -> JobOptions:
    lora = {}
    if row["method"] in ("lora", "qlora"):
        lora = {"lora_rank": int(row["lora_rank"] or 16), "lora_targets": row["lora_targets"] or None}
    return JobOptions(model=row["model"], method=row["method"], precision=row["precision"] or None,
                   optimizer=row["optimizer"] or None, grad_ckpt=row["grad_ckpt"] or None,
                   attention=row["attention"] or None, batch_size=int(row["batch_size"]),
                   seq_len=int(row["seq_len"]), quant=row["quant"] or None, gpu=row["estimated_gpu"], **lora)


def errors(rows: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {v: [] for v in VIEWS}
    for row in rows:
        m = mapping_from_options(request_of(row))
        mem = estimate_memory(m.job.setup, m.job.layout, m.job.gpu, parallel=m.job.parallel)
        for view in VIEWS:
            measured = float(row[f"measured_{view}"])
            out[view].append((getattr(mem, view) - measured) / measured)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", type=Path)
    args = ap.parse_args()
    rows = [r for r in csv.DictReader(args.csv.open(encoding="utf-8")) if r.get("status") == "ok"]
    print(f"{'view':22} {'rows':>4} {'median |err|':>13} {'max |err|':>10} {'bias':>7}")
    for view, errs in errors(rows).items():
        print(f"{view:22} {len(errs):4d} {statistics.median(abs(e) for e in errs) * 100:12.1f}% "
              f"{max(abs(e) for e in errs) * 100:9.1f}% {statistics.median(errs) * 100:+6.1f}%")


if __name__ == "__main__":
    main()
