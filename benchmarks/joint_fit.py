"""Issue 13, item 7: the efficiency constants fitted jointly on both development sets, and how the
fit predicts each source when that source is left out of it.

    python benchmarks/joint_fit.py [--iters N]

Fits the seven constants of trainplan.timing.efficiency.EfficiencyModel that
`benchmarks/time_accuracy.py --fit` fits (FIT_FIELDS) on every predicted time case of
tests/data/published_dev.json and tests/data/published_dev2.json (confidence low excepted), with
each source weighted equally (the mean |log error| of its cases, summed over sources: one source's
33 rows cannot outvote the rest) and the same Nelder-Mead search. Prints the constants before and
after, the median and p90 |error| of each set under the shipped constants, the joint fit, and
leave-one-source-out (each source predicted by constants fitted without it). Nothing here is
written back: the shipped constants are whatever trainplan.timing.efficiency states; this script
says whether a refit would do better, and by how much on data it has not seen.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from time_accuracy import FIT_FIELDS, _model_from, feasible, nelder_mead, summary  # noqa: E402
from trainplan.cases.common import Skip  # noqa: E402
from trainplan.cases.timecase import map_case, predict  # noqa: E402
from trainplan.errors import TrainplanError  # noqa: E402
from trainplan.frozen import replace  # noqa: E402
from trainplan.timing.efficiency import DEFAULT_MODEL, KernelStack  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = {"dev": DATA / "published_dev.json", "dev2": DATA / "published_dev2.json"}


def load() -> list[tuple[str, str, str, object]]:
    """(set, source, case id, mapped case) for every time case the shipped model predicts."""
    rows = []
    for name, path in SETS.items():
        for case in json.loads(path.read_text()):
            if case.get("kind") != "time" or case.get("confidence") == "low":
                continue
            try:
                mapped = map_case(case)
                predict(mapped)
            except (Skip, TrainplanError):
                continue
            rows.append((name, (case.get("source") or {}).get("repo") or "unknown", case["id"], mapped))
    return rows


def errors(x: list[float], rows) -> list[float]:
    model = _model_from(x)
    out = []
    for *_, mapped in rows:
        value, _ = predict(replace(mapped, options=replace(mapped.options, model=model)))
        out.append(value / mapped.measured - 1.0)
    return out


def loss(x: list[float], rows) -> float:
    if not feasible(x):
        return 1e9
    by_source = defaultdict(list)
    for row, err in zip(rows, errors(x, rows)):
        by_source[row[1]].append(abs(math.log1p(err)))
    return sum(statistics.fmean(v) for v in by_source.values())


def stats(errs: list[float]) -> str:
    s = summary(errs)
    return f"n={s['n']:3d}  median |error| {s['median_abs']:6.1%}  p90 {s['p90_abs']:6.1%}"


def main(argv: list[str]) -> int:
    iters = int(argv[argv.index("--iters") + 1]) if "--iters" in argv else 400
    rows = load()
    m = DEFAULT_MODEL
    x0 = [m.sustained_lo, m.sustained_hi, m.kappa[KernelStack.FUSED], m.kappa[KernelStack.EAGER],
          m.t0_tokens, m.attention_lo, m.attention_hi]
    best = nelder_mead(lambda x: loss(x, rows), x0, iters=iters)
    print(f"joint fit on {len(rows)} time cases ({iters} Nelder-Mead iterations), source-weighted loss "
          f"{loss(x0, rows):.3f} -> {loss(best, rows):.3f}")
    for name, before, after in zip(FIT_FIELDS, x0, best):
        print(f"  {name:14s} {before:9.4g} -> {after:9.4g}")
    shipped, joint = errors(x0, rows), errors(best, rows)
    loso = [0.0] * len(rows)
    for source in sorted({r[1] for r in rows}):
        keep = [r for r in rows if r[1] != source]
        x = nelder_mead(lambda v: loss(v, keep), x0, iters=iters)
        held = [i for i, r in enumerate(rows) if r[1] == source]
        for i, err in zip(held, errors(x, [rows[i] for i in held])):
            loso[i] = err
    print(f"\n{'':14s} {'shipped constants':44s} {'joint fit':44s} leave-one-source-out")
    for name in SETS:
        idx = [i for i, r in enumerate(rows) if r[0] == name]
        print(f"{name:14s} " + "   ".join(stats([e[i] for i in idx]) for e in (shipped, joint, loso)))
    print("\nby source (median |error|: shipped / joint / leave-one-source-out)")
    for source in sorted({r[1] for r in rows}):
        idx = [i for i, r in enumerate(rows) if r[1] == source]
        med = [statistics.median(abs(e[i]) for i in idx) for e in (shipped, joint, loso)]
        print(f"  {source[:34]:34s} n={len(idx):2d}  " + " / ".join(f"{v:6.1%}" for v in med))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
