"""Time accuracy by feature (issue 13's tables): median and p90 |error| of the time cases of each
ground-truth file, grouped by what the run uses: CPU offload, pipeline parallel, FP8, QLoRA, long
context (>= 32k tokens), MoE, several nodes; raw and leave-one-source-out calibrated, as
`trainplan accuracy` computes them (trainplan.cases.accuracy.evaluate). A case counts in every group
it belongs to.

    python benchmarks/time_by_feature.py [cases.json ...]     (default: both files in tests/data)
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from trainplan.cases.accuracy import evaluate
from trainplan.cases.common import Skip
from trainplan.cases.timecase import map_case
from trainplan.enums import Method, Offload, Precision
from trainplan.errors import TrainplanError

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
FEATURES = {
    "offload": lambda m: m.layout.offload is not Offload.NONE,
    "pipeline": lambda m: m.layout.pp > 1,
    "fp8": lambda m: m.setup.precision is Precision.FP8,
    "qlora": lambda m: m.setup.method is Method.QLORA,
    "long context": lambda m: m.setup.seq_len >= 32768,
    "moe": lambda m: m.setup.model.moe is not None,
    "multi-node": lambda m: m.layout.nodes > 1,
}


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]


def rows(path: Path) -> list[tuple[str, int, float, float, float]]:
    cases = [c for c in json.loads(path.read_text()) if c.get("kind") == "time"]
    results = {r.id: r for r in evaluate(cases)}
    groups: dict[str, list[tuple[float, float]]] = {name: [] for name in ("all", *FEATURES)}
    for case in cases:
        r = results.get(case["id"])
        if r is None or r.error is None:
            continue
        try:
            mapped = map_case(case)
        except (Skip, TrainplanError):
            continue
        pair = (abs(r.error), abs(r.calibrated_error if r.calibrated_error is not None else r.error))
        groups["all"].append(pair)
        for name, test in FEATURES.items():
            if test(mapped):
                groups[name].append(pair)
    out = []
    for name, pairs in groups.items():
        if pairs:
            raw = [p[0] for p in pairs]
            out.append((name, len(pairs), statistics.median(raw), _p90(raw), statistics.median(p[1] for p in pairs)))
    return out


def main(paths: list[Path]) -> None:
    for path in paths:
        print(f"{path.name}: time cases by feature")
        print(f"  {'feature':14s} {'n':>3s}  {'median':>7s}  {'p90':>7s}  {'LOSO median':>11s}")
        for name, n, median, p90, loso in rows(path):
            print(f"  {name:14s} {n:3d}  {median:7.1%}  {p90:7.1%}  {loso:11.1%}")
        print()


if __name__ == "__main__":
    main([Path(p) for p in sys.argv[1:]] or [DATA / "published_dev.json", DATA / "published_dev2.json"])
