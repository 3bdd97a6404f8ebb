"""Fitting the calibration terms (ledger/calibration.py) from measured runs: each group's median
and spread, at the finest level the runs support."""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable

from trainplan.frozen import frozen
from trainplan.ledger.calibration import (
    DEFAULT_MIN_RUNS,
    DURATION,
    LEVELS,
    TERMS,
    THROUGHPUT,
    Calibration,
    Group,
    Term,
    default_reserve_fraction,
)
from trainplan.memory.overhead import RESERVE_FIXED_BYTES


@frozen
class Observation:
    """One measured run as calibration sees it: its group, what trainplan estimated, what was measured."""

    source: str
    framework: str
    gpu: str
    method: str
    estimate: dict[str, Any]           # ESTIMATE_KEYS of trainplan.ledger.records
    measured: dict[str, Any]           # memory views in bytes and/or time metrics
    run_id: str = ""

    def key(self, level: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(str(getattr(self, k)) for k in level)


# --- fitting ---------------------------------------------------------------------------------------

def _time_sample(est: dict, meas: dict) -> float | None:
    """log(measured / estimated throughput), from the first time metric both sides have."""
    for key in THROUGHPUT:
        if meas.get(key) and est.get(key):
            return math.log(meas[key] / est[key])
    for key in DURATION:
        if meas.get(key) and est.get(key):
            return math.log(est[key] / meas[key])
    return None


def _implied_allocated(o: Observation, fraction: float | None, delta: float) -> float | None:
    """The allocated peak a measurement implies: measured directly, or back through the reserve
    (reserved = allocated x (1 + f) + fixed) and the device overhead (device = reserved + overhead)."""
    m, e = o.measured, o.estimate
    if m.get("peak_allocated_bytes"):
        return float(m["peak_allocated_bytes"])
    f = fraction if fraction is not None else default_reserve_fraction(e)
    if f is None:
        return None
    reserved = m.get("peak_reserved_bytes")
    if not reserved and m.get("device_bytes") and e.get("device_bytes") and e.get("peak_reserved_bytes"):
        reserved = m["device_bytes"] - (e["device_bytes"] - e["peak_reserved_bytes"]) - delta
    if not reserved or reserved <= RESERVE_FIXED_BYTES:
        return None
    return (reserved - RESERVE_FIXED_BYTES) / (1.0 + f)


def _term(samples: list[tuple[float, str]], log: bool) -> Term:
    values = [v for v, _ in samples]
    mid = statistics.median(values)
    sigma = statistics.stdev(values) if len(values) > 1 else 0.0
    return Term(value=math.exp(mid) if log else mid, sigma=sigma, n=len(values),
                sources=tuple(sorted({s for _, s in samples})))


def fit_group(obs: list[Observation], min_runs: int) -> dict[str, Term]:
    """The terms these runs support (at least `min_runs` samples each)."""
    terms: dict[str, Term] = {}
    reserve = [((o.measured["peak_reserved_bytes"] - RESERVE_FIXED_BYTES) / o.measured["peak_allocated_bytes"] - 1.0,
                o.source) for o in obs
               if o.measured.get("peak_reserved_bytes") and o.measured.get("peak_allocated_bytes")]
    if len(reserve) >= min_runs:
        terms["reserve_fraction"] = _term(reserve, log=False)
    device = [((o.measured["device_bytes"] - o.measured["peak_reserved_bytes"])
               - (o.estimate["device_bytes"] - o.estimate["peak_reserved_bytes"]), o.source) for o in obs
              if o.measured.get("device_bytes") and o.measured.get("peak_reserved_bytes")
              and o.estimate.get("device_bytes") and o.estimate.get("peak_reserved_bytes")]
    if len(device) >= min_runs:
        terms["device_overhead_bytes"] = _term(device, log=False)
    fraction = terms["reserve_fraction"].value if "reserve_fraction" in terms else None
    delta = terms["device_overhead_bytes"].value if "device_overhead_bytes" in terms else 0.0
    scale = []
    for o in obs:
        implied = _implied_allocated(o, fraction, delta)
        if implied and o.estimate.get("peak_allocated_bytes"):
            scale.append((math.log(implied / o.estimate["peak_allocated_bytes"]), o.source))
    if len(scale) >= min_runs:
        terms["alloc_scale"] = _term(scale, log=True)
    time = [(s, o.source) for o in obs if (s := _time_sample(o.estimate, o.measured)) is not None]
    if len(time) >= min_runs:
        terms["time_factor"] = _term(time, log=True)
    return terms


def fit(obs: Iterable[Observation], *, min_runs: int = DEFAULT_MIN_RUNS,
        provenance: dict[str, Any] | None = None) -> Calibration:
    """Every group, at every level, that supports at least one term."""
    usable = [o for o in obs if o.estimate]
    groups = []
    for level in LEVELS:
        keys = sorted({o.key(level) for o in usable})
        for key in keys:
            members = [o for o in usable if o.key(level) == key]
            terms = fit_group(members, min_runs)
            if not level:
                # alloc_scale corrects what one framework's memory model misses: it does not carry over
                # to another framework. The allocator reserve, the device overhead and the time factor
                # are properties of the GPU stack and do.
                terms.pop("alloc_scale", None)
            if terms:
                groups.append(Group(level=level, key=key, terms=terms))
    prov = dict(provenance or {})
    prov.setdefault("runs_used", len(usable))
    prov.setdefault("sources", sorted({o.source for o in usable}))
    return Calibration(groups=tuple(groups), min_runs=min_runs, provenance=prov)


# --- what the runs support ------------------------------------------------------------------------------

@frozen
class Coverage:
    """One framework x GPU x method group of the runs (the finest level): the terms it got a value
    of its own for, and, for each term it did not, how many of its runs measure it and how many more
    it needs (`min_runs` in all)."""

    key: tuple[str, ...]                   # (framework, gpu, method)
    runs: int
    fitted: tuple[str, ...]
    missing: dict[str, tuple[int, int]]    # term -> (runs that measure it, runs still needed)
    falls_back_to: dict[str, str]          # term -> the coarser group's label it uses instead, "" when none

    @property
    def label(self) -> str:
        return " x ".join(self.key)

    def to_dict(self) -> dict[str, Any]:
        return {"group": dict(zip(LEVELS[0], self.key)), "runs": self.runs, "fitted": list(self.fitted),
                "missing": {name: {"runs": have, "needs": need, "falls_back_to": self.falls_back_to.get(name) or None}
                            for name, (have, need) in self.missing.items()}}


def _samples(obs: list[Observation]) -> dict[str, int]:
    """Runs of `obs` that give each term a sample (before any term is fitted)."""
    return {"alloc_scale": sum(1 for o in obs if _implied_allocated(o, None, 0.0) and o.estimate.get("peak_allocated_bytes")),
            "reserve_fraction": sum(1 for o in obs if o.measured.get("peak_reserved_bytes")
                                    and o.measured.get("peak_allocated_bytes")),
            "device_overhead_bytes": sum(1 for o in obs if o.measured.get("device_bytes")
                                         and o.measured.get("peak_reserved_bytes") and o.estimate.get("device_bytes")),
            "time_factor": sum(1 for o in obs if _time_sample(o.estimate, o.measured) is not None)}


def coverage(obs: Iterable[Observation], cal: Calibration) -> list[Coverage]:
    """Per finest group of `obs`: what `cal` fitted for it, what it could not and what that needs."""
    usable = [o for o in obs if o.estimate]
    out = []
    for key in sorted({o.key(LEVELS[0]) for o in usable}):
        members = [o for o in usable if o.key(LEVELS[0]) == key]
        mine = next((g for g in cal.groups if g.level == LEVELS[0] and g.key == key), None)
        fitted = tuple(mine.terms) if mine else ()
        counts = _samples(members)
        missing, fallback = {}, {}
        for name in TERMS:
            if name in fitted or not counts[name]:
                continue
            missing[name] = (counts[name], max(0, cal.min_runs - counts[name]))
            hit = cal.term(name, *key)
            fallback[name] = hit[1].label if hit else ""
        out.append(Coverage(key=key, runs=len(members), fitted=fitted, missing=missing, falls_back_to=fallback))
    return out


# --- observations ------------------------------------------------------------------------------------

def observation_from_row(row: dict[str, Any]) -> Observation | None:
    """A ledger row (trainplan.ledger.store.query_runs) as an Observation; None without an estimate."""
    if not row.get("estimate"):
        return None
    return Observation(source=row["source"], framework=str(row.get("framework")), gpu=str(row.get("gpu")),
                       method=str(row.get("method")), estimate=row["estimate"], measured=row["measured"] or {},
                       run_id=str(row.get("external_id") or row.get("id")))
