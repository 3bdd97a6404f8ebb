"""Time estimates against published measurements (ground-truth schema, `kind == "time"`).

    python benchmarks/time_accuracy.py [cases.json] [--all] [--csv] [--fit]

Maps each time case to a TrainingSetup / Layout / GpuSpec / Workload as best it can, predicts the
metric the source reports (step time, tokens/s/GPU, GPU-hours) and prints: id, metric, predicted,
measured, error %, then median and p90 |error| overall and per source. Cases that cannot be mapped
are listed with the reason. `--all` also scores low-confidence cases (skipped by default because
their key settings are missing, per the ground-truth README). Nothing here is tuned per case.

`--fit` re-derives the constants of trainplan.timing.efficiency.EfficiencyModel: a Nelder-Mead search
minimising the sum of squared log errors over the fit set (FIT_SET below: MosaicML bf16 rows,
torchtune 3B flag rows, Qwen LoRA rows) and prints them with the errors on every case.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from trainplan.cases.common import Skip
from trainplan.cases.timecase import Mapped, map_case, predict
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.timing.efficiency import DEFAULT_MODEL, EfficiencyModel, KernelStack

DEFAULT_CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "published_dev.json"

# The mapping of a case to a setup lives in trainplan.cases (shared with `trainplan accuracy`).


def _source(case: dict) -> str:
    return (case.get("source") or {}).get("repo") or "unknown"


def run(path: Path, include_low: bool = False) -> tuple[list[tuple], list[tuple[str, str]]]:
    cases = [c for c in json.loads(path.read_text()) if c.get("kind") == "time"]
    rows, skipped = [], []
    for case in cases:
        if case.get("confidence") == "low" and not include_low:
            skipped.append((case["id"], "confidence low: key settings missing (ground-truth README); --all scores it"))
            continue
        try:
            mapped = map_case(case)
            value, est = predict(mapped)
        except (Skip, TrainplanError) as exc:
            skipped.append((case["id"], str(exc)))
            continue
        err = value / mapped.measured - 1.0
        rows.append((case["id"], _source(case), mapped.metric, value, mapped.measured, err, est.mfu, mapped.note))
    return rows, skipped


def summary(errors: list[float]) -> dict[str, float]:
    """n, median |error|, p90 |error| (nearest rank) and mean error."""
    ab = sorted(abs(e) for e in errors)
    return {"n": len(ab), "median_abs": statistics.median(ab),
            "p90_abs": ab[min(len(ab) - 1, math.ceil(0.9 * len(ab)) - 1)], "mean": statistics.fmean(errors)}


def _summary(errors: list[float]) -> str:
    if not errors:
        return "n=0"
    s = summary(errors)
    return f"n={s['n']:2d}  median |error| {s['median_abs']:6.1%}  p90 {s['p90_abs']:6.1%}  mean error {s['mean']:+6.1%}"


# --- fitting the efficiency constants -------------------------------------------------------------

FIT_FIELDS = ("sustained_lo", "sustained_hi", "kappa_fused", "kappa_eager", "t0_tokens",
              "attention_lo", "attention_hi")


def in_fit_set(case_id: str) -> bool:
    """MosaicML bf16 pre-training rows, torchtune 3B flag rows, Qwen LoRA (not QLoRA) rows."""
    if case_id.startswith("mpt-bench-"):
        return "fp8" not in case_id
    if case_id.startswith("torchtune-3b-flags-"):
        return True
    return case_id.startswith("qwen1-") and "-lora-" in case_id and "q-lora" not in case_id


def _model_from(x: list[float]) -> EfficiencyModel:
    v = dict(zip(FIT_FIELDS, x))
    return replace(DEFAULT_MODEL, sustained_lo=v["sustained_lo"], sustained_hi=v["sustained_hi"],
                   kappa={KernelStack.FUSED: v["kappa_fused"], KernelStack.EAGER: v["kappa_eager"]},
                   t0_tokens=v["t0_tokens"], attention_lo=v["attention_lo"], attention_hi=v["attention_hi"])


def feasible(x: list[float]) -> bool:
    """Constants (FIT_FIELDS order) the search may try: positive, sustained fractions <= 1.2,
    attention fractions <= 1."""
    return min(x) > 0 and x[0] <= 1.2 and x[1] <= 1.2 and x[5] <= 1 and x[6] <= 1


def _loss(x: list[float], mapped: list[Mapped]) -> float:
    if not feasible(x):
        return 1e9
    model = _model_from(x)
    total = 0.0
    for mp in mapped:
        value, _ = predict(replace(mp, options=replace(mp.options, model=model)))
        total += math.log(value / mp.measured) ** 2
    return total


def nelder_mead(f, x0: list[float], step: float = 0.15, iters: int = 1500) -> list[float]:
    """Plain Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5)."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] * (1 + step) if j == i else x0[j] for j in range(n)] for i in range(n)]
    scores = [f(p) for p in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=scores.__getitem__)
        simplex, scores = [simplex[i] for i in order], [scores[i] for i in order]
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        refl = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(refl)
        if fr < scores[0]:
            exp = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(exp)
            simplex[-1], scores[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < scores[-2]:
            simplex[-1], scores[-1] = refl, fr
        else:
            con = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(con)
            if fc < scores[-1]:
                simplex[-1], scores[-1] = con, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (p[j] - b) for j, b in enumerate(best)] for p in simplex[1:]]
                scores = [scores[0]] + [f(p) for p in simplex[1:]]
    return simplex[min(range(n + 1), key=scores.__getitem__)]


def fit(path: Path) -> EfficiencyModel:
    mapped = []
    for case in json.loads(path.read_text()):
        if case.get("kind") == "time" and in_fit_set(case["id"]):
            try:
                mapped.append(map_case(case))
            except Skip:
                continue
    m = DEFAULT_MODEL
    x0 = [m.sustained_lo, m.sustained_hi, m.kappa[KernelStack.FUSED], m.kappa[KernelStack.EAGER],
          m.t0_tokens, m.attention_lo, m.attention_hi]
    best = nelder_mead(lambda x: _loss(x, mapped), x0)
    print(f"fit on {len(mapped)} cases; sum of squared log errors {_loss(x0, mapped):.4f} -> {_loss(best, mapped):.4f}")
    for name, before, after in zip(FIT_FIELDS, x0, best):
        print(f"  {name:14s} {before:10.4g} -> {after:10.4g}")
    return _model_from(best)


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    path = Path(args[0]) if args else DEFAULT_CASES
    if "--fit" in argv:
        fit(path)
        return 0
    rows, skipped = run(path, include_low="--all" in argv)
    if "--csv" in argv:
        print("id,source,metric,predicted,measured,error")
        for r in rows:
            print(f"{r[0]},{r[1]},{r[2]},{r[3]:.6g},{r[4]:.6g},{r[5]:.4f}")
        return 0
    print(f"{'id':56s} {'metric':22s} {'predicted':>11s} {'measured':>11s} {'error':>8s} {'mfu':>6s}")
    for cid, _src, metric, pred, meas, err, mfu, note in rows:
        print(f"{cid[:56]:56s} {metric:22s} {pred:11.4g} {meas:11.4g} {err:+8.1%} {mfu:6.1%}"
              + (f"  ({note})" if note else ""))
    print()
    print(f"{'all':22s}", _summary([r[5] for r in rows]))
    for src in sorted({r[1] for r in rows}):
        print(f"{src[:22]:22s}", _summary([r[5] for r in rows if r[1] == src]))
    if skipped:
        print(f"\nskipped {len(skipped)}:")
        for cid, why in skipped:
            print(f"  {cid}: {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
