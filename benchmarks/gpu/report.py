"""The error table of a measurement-matrix CSV: trainplan's estimate against each measured row,
then the median and max |error| per memory view (and the step time).

  python benchmarks/gpu/report.py benchmarks/data/gpu_matrix.csv [--markdown]

error = (estimated - measured) / measured, in %; rows whose status is not "ok" are listed apart.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

GIB = 2**30
MIB = 2**20
VIEWS = (("peak allocated", "peak_allocated_bytes", "error_peak_allocated_pct"),
         ("peak reserved", "peak_reserved_bytes", "error_peak_reserved_pct"),
         ("device (NVML)", "device_bytes", "error_device_pct"),
         ("step time", "step_s", "error_step_pct"))


def _num(value) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _unit(rows: list[dict]) -> tuple[str, int]:
    """GiB, or MiB when every measured peak is under 1 GiB (the tiny CPU grid)."""
    peaks = [_num(r.get("measured_peak_allocated_bytes")) or 0.0 for r in rows]
    return ("GiB", GIB) if any(p >= GIB for p in peaks) else ("MiB", MIB)


def _mem(value, scale: int) -> str:
    number = _num(value)
    return "-" if number is None else f"{number / scale:.2f}"


def _pct(value) -> str:
    number = _num(value)
    return "-" if number is None else f"{number:+.1f}%"


def summary(rows: list[dict]) -> list[dict]:
    """Per view: rows compared, median and max |error|, the median signed error (bias)."""
    ok = [r for r in rows if r.get("status") == "ok"]
    out = []
    for label, _, err_key in VIEWS:
        pairs = [(abs(e), e, r["setup"]) for r in ok for e in [_num(r.get(err_key))] if e is not None]
        if not pairs:
            out.append({"view": label, "n": 0, "median_abs_pct": None, "max_abs_pct": None, "bias_pct": None,
                        "worst": ""})
            continue
        worst = max(pairs)
        out.append({"view": label, "n": len(pairs), "median_abs_pct": statistics.median(p[0] for p in pairs),
                    "max_abs_pct": worst[0], "bias_pct": statistics.median(p[1] for p in pairs),
                    "worst": worst[2]})
    return out


def _table(header: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    if markdown:
        return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
            "| " + " | ".join(row) + " |" for row in body]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)   # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [line(header), line(["-" * w for w in widths])] + [line(r) for r in body]


def render(rows: list[dict], markdown: bool = False) -> str:
    ok = [r for r in rows if r.get("status") == "ok"]
    unit, scale = _unit(ok)
    header = ["setup", f"alloc {unit}", "est", "err", f"reserved {unit}", "est", "err", f"device {unit}", "est",
              "err", "step s", "est", "err"]
    body = []
    for r in ok:
        cells = [r["setup"]]
        for _, key, err_key in VIEWS[:3]:
            cells += [_mem(r.get(f"measured_{key}"), scale), _mem(r.get(f"estimated_{key}"), scale),
                      _pct(r.get(err_key))]
        step, est = _num(r.get("measured_step_s")), _num(r.get("estimated_step_s"))
        cells += ["-" if step is None else f"{step:.3f}", "-" if est is None else f"{est:.3f}",
                  _pct(r.get("error_step_pct"))]
        body.append(cells)
    lines = [f"{len(ok)} of {len(rows)} setups measured"]
    env = next((r for r in ok if r.get("gpu_name")), None)
    if env:
        lines.append(f"{env['gpu_name']}, driver {env.get('driver') or '-'}, CUDA {env.get('cuda') or '-'}, "
                     f"torch {env.get('torch')}, transformers {env.get('transformers')}, peft {env.get('peft')}, "
                     f"bitsandbytes {env.get('bitsandbytes') or '-'}")
    lines += [""] + _table(header, body, markdown)
    lines += ["", "error = (estimated - measured) / measured"]
    stats = summary(rows)
    lines += [""] + _table(["view", "rows", "median |err|", "max |err|", "bias", "worst setup"],
                           [[s["view"], str(s["n"]),
                             "-" if s["median_abs_pct"] is None else f"{s['median_abs_pct']:.1f}%",
                             "-" if s["max_abs_pct"] is None else f"{s['max_abs_pct']:.1f}%",
                             _pct(s["bias_pct"]), s["worst"]] for s in stats], markdown)
    others = [r for r in rows if r.get("status") != "ok"]
    if others:
        lines += ["", "Not measured:"] + [f"  {r['setup']}: {r['status']}" for r in others]
    return "\n".join(lines)


def read(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", type=Path)
    parser.add_argument("--markdown", action="store_true", help="markdown tables (for a closing note)")
    args = parser.parse_args(argv)
    if not args.csv.exists():
        print(f"report: error: {args.csv} does not exist", file=sys.stderr)
        return 2
    print(render(read(args.csv), markdown=args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
