"""`trainplan accuracy`: every case of a ground-truth file estimated, compared with its measurement,
raw and calibrated side by side.

Calibrated values come from leave-one-source-out fits: a case from source S is corrected with terms
fitted on the other sources' cases only, never on itself or its siblings.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable

from trainplan.cases import PREDICTED_KEYS, Skip, map_case, predict, source_of
from trainplan.cases.common import MALFORMED, case_kind
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.ledger.calibration import DEFAULT_MIN_RUNS, adjust
from trainplan.ledger.calibration_fit import Observation, fit


@frozen
class CaseResult:
    id: str
    kind: str
    source: str
    method: str
    confidence: str | None
    metric: str | None = None           # the predicted key compared with the measurement
    predicted: dict[str, Any] | None = None
    calibrated: dict[str, Any] | None = None
    measured: dict[str, Any] | None = None
    measured_value: float | None = None  # in the metric's unit
    error: float | None = None           # predicted / measured - 1
    calibrated_error: float | None = None
    skipped: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "predicted": self.predicted, "measured": self.measured,
                "error": self.error, "skipped": self.skipped, "metric": self.metric,
                "measured_value": self.measured_value, "calibrated": self.calibrated,
                "calibrated_error": self.calibrated_error, "source": self.source, "method": self.method,
                "confidence": self.confidence, "notes": list(self.notes)}


def _err(pred: float | None, meas: float | None) -> float | None:
    return pred / meas - 1.0 if pred and meas else None


def evaluate(cases: Iterable[dict], *, min_runs: int = DEFAULT_MIN_RUNS) -> list[CaseResult]:
    """Raw and leave-one-source-out calibrated predictions for every case."""
    staged: list[tuple[dict, Any, dict | None, str | None]] = []
    for case in cases:
        try:
            mapping = map_case(case)
            values = predict(mapping)
            staged.append((case, mapping, values, None))
        except Skip as exc:
            staged.append((case, None, None, str(exc)))
        except TrainplanError as exc:
            staged.append((case, None, None, f"estimate failed: {exc}"))
        except MALFORMED as exc:      # a field of a shape the estimate cannot take (cases.common.MALFORMED)
            staged.append((case, None, None, f"estimate failed on a malformed field ({type(exc).__name__}: {exc})"))
    obs = {case["id"]: Observation(source=m.source, framework=str(m.job.setup.framework), gpu=m.job.layout.gpu_id,
                                   method=str(m.job.setup.method), estimate=values, measured={m.metric: m.measured},
                                   run_id=case["id"])
           for case, m, values, _ in staged if m is not None and m.measured}
    fits = {}
    for source in sorted({o.source for o in obs.values()} | {source_of(c) for c, *_ in staged}):
        fits[source] = fit([o for o in obs.values() if o.source != source], min_runs=min_runs)
    results = []
    for case, m, values, skipped in staged:
        method = m.method if m is not None else str(case.get("method"))     # as read (cases.normalize)
        base = dict(id=case["id"], kind=case_kind(case) or str(case.get("kind")), source=source_of(case),
                    method=method, confidence=case.get("confidence"), measured=case.get("measured"))
        if m is None:
            results.append(CaseResult(**base, skipped=skipped))
            continue
        got = adjust(values, fits[m.source], framework=str(m.job.setup.framework), gpu=m.job.layout.gpu_id,
                     method=str(m.job.setup.method))
        warning = plausibility(m, values)
        calibrated = {k: got[0].get(k) for k in PREDICTED_KEYS} if got else dict(values)
        results.append(CaseResult(**base, metric=m.metric, predicted=values, calibrated=calibrated,
                                  measured_value=m.measured, error=_err(values.get(m.metric), m.measured),
                                  calibrated_error=_err(calibrated.get(m.metric), m.measured),
                                  notes=m.notes + ((warning,) if warning else ())))
    return results


def plausibility(mapping, values: dict[str, Any]) -> str | None:
    """A memory estimate above the memory of the GPU the run completed on: the run did not need more
    than its GPU has, so the setup is probably misread (a field, a unit, a framework default)."""
    if mapping.kind != "memory" or not mapping.measured or not mapping.gpu_stated:
        return None
    gpu = mapping.job.gpu
    predicted = values.get("device_bytes") or 0
    if predicted <= gpu.capacity_bytes:
        return None
    return (f"plausibility: the estimate ({predicted / 2**30:.1f} GiB on the device) exceeds the "
            f"{gpu.capacity_bytes / 2**30:.1f} GiB of the {gpu.id} this run completed on: the setup is probably misread")


def _stats(errors: list[float]) -> dict[str, Any]:
    if not errors:
        return {"n": 0, "median_abs": None, "p90_abs": None, "bias": None, "within_10pct": None}
    ab = sorted(abs(e) for e in errors)
    p90 = ab[min(len(ab) - 1, math.ceil(0.9 * len(ab)) - 1)]
    return {"n": len(ab), "median_abs": statistics.median(ab), "p90_abs": p90, "bias": statistics.fmean(errors),
            "within_10pct": sum(a <= 0.10 for a in ab) / len(ab)}


def _block(rows: list[CaseResult]) -> dict[str, Any]:
    return {"cases": len(rows), "predicted": sum(r.predicted is not None for r in rows),
            "skipped": sum(r.skipped is not None for r in rows),
            "raw": _stats([r.error for r in rows if r.error is not None]),
            "calibrated": _stats([r.calibrated_error for r in rows if r.calibrated_error is not None])}


def summarize(results: list[CaseResult]) -> dict[str, Any]:
    """Median and p90 |error|, bias (mean signed error), share within 10%: overall, by kind, by
    kind x method, by kind x source; raw and calibrated."""
    out: dict[str, Any] = {"all": _block(results), "by_kind": {}, "by_method": {}, "by_source": {}}
    for kind in sorted({r.kind for r in results}):
        of_kind = [r for r in results if r.kind == kind]
        out["by_kind"][kind] = _block(of_kind)
        out["by_method"][kind] = {m: _block([r for r in of_kind if r.method == m])
                                  for m in sorted({r.method for r in of_kind})}
        out["by_source"][kind] = {s: _block([r for r in of_kind if r.source == s])
                                  for s in sorted({r.source for r in of_kind})}
    out["calibration"] = "leave-one-source-out: each source's cases corrected by terms fitted on the other sources"
    return out


# --- text ------------------------------------------------------------------------------------------

def _fmt(metric: str | None, value: float | None) -> str:
    if value is None or metric is None:
        return "-"
    if metric.endswith("_bytes"):
        return f"{value / 2**30:.2f} GiB"
    if metric in ("mfu", "hfu"):
        return f"{value:.1%}"
    return f"{value:.4g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _stat_line(label: str, block: dict[str, Any]) -> str:
    def part(s: dict[str, Any]) -> str:
        if not s["n"]:
            return "n=0"
        return (f"n={s['n']:3d} median {s['median_abs']:6.1%} p90 {s['p90_abs']:6.1%} bias {s['bias']:+6.1%} "
                f"within 10% {s['within_10pct']:4.0%}")
    return (f"  {label[:34]:34s} predicted {block['predicted']:3d}/{block['cases']:<3d} | raw {part(block['raw'])} "
            f"| calibrated {part(block['calibrated'])}")


def render(results: list[CaseResult], summary: dict[str, Any]) -> str:
    lines = [f"{'case':58s} {'compared':22s} {'predicted':>11s} {'measured':>11s} {'error':>8s} {'calibr.':>8s}"]
    for r in results:
        if r.skipped:
            continue
        flag = " !" if any(n.startswith("plausibility:") for n in r.notes) else ""
        lines.append(f"{r.id[:58]:58s} {(r.metric or '')[:22]:22s} {_fmt(r.metric, (r.predicted or {}).get(r.metric)):>11s} "
                     f"{_fmt(r.metric, r.measured_value):>11s} {_pct(r.error):>8s} {_pct(r.calibrated_error):>8s}{flag}")
    lines += ["", "summary (|error| of the compared value; calibrated = leave-one-source-out)",
              _stat_line("all", summary["all"])]
    for kind, block in summary["by_kind"].items():
        lines.append(_stat_line(kind, block))
        for label, group in (("method", summary["by_method"][kind]), ("source", summary["by_source"][kind])):
            for name, sub in group.items():
                lines.append(_stat_line(f"  {kind} {label} {name}", sub))
    flagged = [(r.id, n) for r in results for n in r.notes if n.startswith("plausibility:")]
    if flagged:
        lines += ["", f"flagged ! ({len(flagged)}):"] + [f"  {i}: {n[len('plausibility: '):]}" for i, n in flagged]
    skipped = [r for r in results if r.skipped]
    if skipped:
        lines += ["", f"skipped {len(skipped)}:"] + [f"  {r.id}: {r.skipped}" for r in skipped]
    return "\n".join(lines)


def _primary(o: Observation) -> tuple[str, float] | None:
    """The measured value an observation is scored on: device, reserved, allocated, then time."""
    for key in ("device_bytes", "peak_reserved_bytes", "peak_allocated_bytes", "tokens_per_s_per_gpu",
                "step_s", "run_s", "gpu_hours", "tflops_per_gpu", "mfu", "hfu"):
        if o.measured.get(key) and o.estimate.get(key):
            return key, float(o.measured[key])
    return None


def leave_one_source_out(obs: list[Observation], *, min_runs: int = DEFAULT_MIN_RUNS) -> dict[str, Any]:
    """Fit on every source but one, predict that one: raw and calibrated |error| per source and overall."""
    rows = []
    for source in sorted({o.source for o in obs}):
        cal = fit([o for o in obs if o.source != source], min_runs=min_runs)
        for o in (o for o in obs if o.source == source):
            primary = _primary(o)
            if primary is None:
                continue
            key, meas = primary
            got = adjust(o.estimate, cal, framework=o.framework, gpu=o.gpu, method=o.method)
            calibrated = got[0][key] if got else o.estimate[key]
            kind = "memory" if key.endswith("_bytes") else "time"
            rows.append((source, kind, _err(o.estimate[key], meas), _err(calibrated, meas)))
    out: dict[str, Any] = {}
    for kind in ("memory", "time"):
        mine = [r for r in rows if r[1] == kind]
        out[kind] = {"all": {"raw": _stats([r[2] for r in mine]), "calibrated": _stats([r[3] for r in mine])},
                     "by_source": {s: {"raw": _stats([r[2] for r in mine if r[0] == s]),
                                       "calibrated": _stats([r[3] for r in mine if r[0] == s])}
                                   for s in sorted({r[0] for r in mine})}}
    return out
