"""Corrections fitted from measured runs, with their uncertainty; standard library only, so that
`trainplan estimate` can look one up on every call without opening the ledger.

Terms (each fitted per framework x GPU x method where at least `min_runs` runs support it, else
per framework x method, per framework, or over everything; alloc_scale never over everything, as
one framework's misses say nothing about another's):
- alloc_scale: multiplies the peak allocated (activations and everything the model misses);
  from log(measured / estimated allocated), the allocated implied by a reserved or device
  measurement through the two terms below when only those were measured.
- reserve_fraction: the caching allocator's reserve, reserved = allocated x (1 + f) + 256 MiB
  (trainplan.memory.overhead), from runs that measured both allocated and reserved.
- device_overhead_bytes: a correction to device - reserved (CUDA context, NCCL, paged states),
  from runs that measured both reserved and device.
- time_factor: multiplies throughput (divides step time), from log(measured / estimated).
Each term keeps the median of its samples (robust to an odd run) and their standard deviation
(sigma, in log space for factors): the band an estimate quotes is value x/- exp(sigma).
"""

from __future__ import annotations

import json
import math
import statistics
from trainplan.frozen import field, frozen, replace
from pathlib import Path
from typing import Any, Iterable

from trainplan.memory.overhead import RESERVE_FIXED_BYTES

FORMAT = "trainplan-calibration/1"
TERMS = ("alloc_scale", "reserve_fraction", "device_overhead_bytes", "time_factor")
LEVELS = (("framework", "gpu", "method"), ("framework", "method"), ("framework",), ())
THROUGHPUT = ("tokens_per_s_per_gpu", "tflops_per_gpu", "mfu")
DURATION = ("step_s", "gpu_hours")
DEFAULT_MIN_RUNS = 3


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


@frozen
class Term:
    value: float
    sigma: float
    n: int
    sources: tuple[str, ...]


@frozen
class Group:
    level: tuple[str, ...]
    key: tuple[str, ...]
    terms: dict[str, Term]

    @property
    def label(self) -> str:
        return " x ".join(self.key) if self.key else "all runs"


@frozen
class Calibration:
    groups: tuple[Group, ...]
    min_runs: int = DEFAULT_MIN_RUNS
    provenance: dict[str, Any] = field(default_factory=dict)

    def term(self, name: str, framework: str, gpu: str, method: str) -> tuple[Term, Group] | None:
        """The finest group holding `name` for this framework x GPU x method."""
        want = {"framework": framework, "gpu": gpu, "method": method}
        for level in LEVELS:
            key = tuple(str(want[k]) for k in level)
            for g in self.groups:
                if g.level == level and g.key == key and name in g.terms:
                    return g.terms[name], g
        return None


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


def _default_fraction(est: dict) -> float | None:
    a, r = est.get("peak_allocated_bytes"), est.get("peak_reserved_bytes")
    return (r - RESERVE_FIXED_BYTES) / a - 1.0 if a and r else None


def _implied_allocated(o: Observation, fraction: float | None, delta: float) -> float | None:
    """The allocated peak a measurement implies: measured directly, or back through the reserve
    (reserved = allocated x (1 + f) + fixed) and the device overhead (device = reserved + overhead)."""
    m, e = o.measured, o.estimate
    if m.get("peak_allocated_bytes"):
        return float(m["peak_allocated_bytes"])
    f = fraction if fraction is not None else _default_fraction(e)
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


# --- applying ---------------------------------------------------------------------------------------

def _scaled(values: dict[str, Any], s: float, f: float | None, delta: float, t: float) -> dict[str, Any]:
    out = dict(values)
    alloc, res, dev = (values.get(k) for k in ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes"))
    if alloc:
        frac = f if f is not None else _default_fraction(values)
        new_alloc = alloc * s
        new_res = new_alloc * (1.0 + frac) + RESERVE_FIXED_BYTES if frac is not None else res
        out["peak_allocated_bytes"] = int(new_alloc)
        if new_res:
            out["peak_reserved_bytes"] = int(new_res)
        if dev and res and new_res:
            out["device_bytes"] = int(new_res + (dev - res) + delta)
    for key in THROUGHPUT:
        if values.get(key):
            out[key] = values[key] * t
    for key in DURATION:
        if values.get(key):
            out[key] = values[key] / t
    return out


def adjust(values: dict[str, Any], calibration: Calibration, *, framework: str, gpu: str,
           method: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
    """(calibrated values, low band, high band) for estimated `values`, None when no term matches."""
    found = {name: calibration.term(name, framework, gpu, method) for name in TERMS}
    if not any(found.values()):
        return None

    def pick(name: str, default: float | None, sign: int) -> float | None:
        hit = found[name]
        if hit is None:
            return default
        term = hit[0]
        if name in ("alloc_scale", "time_factor"):
            return term.value * math.exp(sign * term.sigma)
        return term.value + sign * term.sigma if name == "device_overhead_bytes" else max(0.0, term.value + sign * term.sigma)

    def at(sign: int) -> dict[str, Any]:
        return _scaled(values, pick("alloc_scale", 1.0, sign), pick("reserve_fraction", None, sign),
                       pick("device_overhead_bytes", 0.0, sign), pick("time_factor", 1.0, -sign))

    return at(0), at(-1), at(+1)


def describe(calibration: Calibration, *, framework: str, gpu: str, method: str) -> str:
    parts = []
    for name in TERMS:
        hit = calibration.term(name, framework, gpu, method)
        if hit:
            term, group = hit
            value = f"{term.value / 2**30:+.2f} GiB" if name == "device_overhead_bytes" else f"{term.value:.3g}"
            parts.append(f"{name} {value} ({group.label}, {term.n} runs)")
    return "; ".join(parts)


# --- observations ------------------------------------------------------------------------------------

def observation_from_row(row: dict[str, Any]) -> Observation | None:
    """A ledger row (trainplan.ledger.store.query_runs) as an Observation; None without an estimate."""
    if not row.get("estimate"):
        return None
    return Observation(source=row["source"], framework=str(row.get("framework")), gpu=str(row.get("gpu")),
                       method=str(row.get("method")), estimate=row["estimate"], measured=row["measured"] or {},
                       run_id=str(row.get("external_id") or row.get("id")))


# --- storage -------------------------------------------------------------------------------------------

def to_json(cal: Calibration) -> dict[str, Any]:
    return {"format": FORMAT, "min_runs": cal.min_runs, "provenance": cal.provenance,
            "groups": [{"level": list(g.level), "key": dict(zip(g.level, g.key)),
                        "terms": {name: {"value": t.value, "sigma": t.sigma, "n": t.n, "sources": list(t.sources)}
                                  for name, t in g.terms.items()}} for g in cal.groups]}


def from_json(data: dict[str, Any]) -> Calibration:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} file")
    groups = []
    for g in data["groups"]:
        level = tuple(g["level"])
        terms = {name: Term(value=float(t["value"]), sigma=float(t["sigma"]), n=int(t["n"]),
                            sources=tuple(t.get("sources", ()))) for name, t in g["terms"].items() if name in TERMS}
        groups.append(Group(level=level, key=tuple(str(g["key"][k]) for k in level), terms=terms))
    return Calibration(groups=tuple(groups), min_runs=int(data.get("min_runs", DEFAULT_MIN_RUNS)),
                       provenance=dict(data.get("provenance") or {}))


def save(cal: Calibration, path: str | Path | None = None) -> Path:
    """Write the calibration JSON (atomically) to `path` or the default in the data directory."""
    import os

    from trainplan.ledger.paths import calibration_path

    target = calibration_path(str(path) if path else None)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(to_json(cal), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return target


_CACHE: dict[str, tuple[float, Calibration | None]] = {}


def load_active(path: str | Path | None = None) -> Calibration | None:
    """The calibration `trainplan calibrate` wrote (or `path`), None when there is none or it is
    unreadable. One stat() per call; the file is parsed again only when it changed."""
    from trainplan.ledger.paths import calibration_path

    target = calibration_path(str(path) if path else None)
    try:
        mtime = target.stat().st_mtime
    except OSError:
        return None
    cached = _CACHE.get(str(target))
    if cached and cached[0] == mtime:
        return cached[1]
    try:
        cal: Calibration | None = from_json(json.loads(target.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        cal = None
    _CACHE[str(target)] = (mtime, cal)
    return cal


# --- the estimate's side -----------------------------------------------------------------------------

def _values(memory: Any, time: Any) -> dict[str, Any]:
    out = {"peak_allocated_bytes": memory.peak_allocated_bytes, "peak_reserved_bytes": memory.peak_reserved_bytes,
           "device_bytes": memory.device_bytes}
    if time is not None:
        out.update(tokens_per_s_per_gpu=time.tokens_per_s_per_gpu, tflops_per_gpu=time.tflops_per_gpu,
                   mfu=time.mfu, step_s=time.step_s, gpu_hours=time.gpu_hours or None)
    return out


def apply(estimate: Any, setup: Any, layout: Any, *,
          calibration: Calibration | None) -> tuple[dict[str, Any] | None, str | None]:
    """(calibrated values, note) for an estimate given as a dict of values (ESTIMATE_KEYS) or as
    (MemoryEstimate, TimeEstimate | None); (None, None) without a calibration or when none of its
    groups matches this setup. The calibration is given: nothing is read here."""
    cal = calibration
    if cal is None:
        return None, None
    values = dict(estimate) if isinstance(estimate, dict) else _values(*estimate)
    fw, gpu_id, method = str(setup.framework), str(layout.gpu_id), str(setup.method)
    got = adjust(values, cal, framework=fw, gpu=gpu_id, method=method)
    if got is None:
        return None, None
    mid, lo, hi = got
    parts = []
    if mid.get("device_bytes") != values.get("device_bytes"):
        parts.append(f"device {mid['device_bytes'] / 2**30:.1f} GiB (band {lo['device_bytes'] / 2**30:.1f}-"
                     f"{hi['device_bytes'] / 2**30:.1f}; raw {values['device_bytes'] / 2**30:.1f})")
    if values.get("step_s") and mid.get("step_s") != values.get("step_s"):
        parts.append(f"step {mid['step_s']:.3g} s (band {lo['step_s']:.3g}-{hi['step_s']:.3g}; "
                     f"raw {values['step_s']:.3g})")
    when = cal.provenance.get("created_at", "")
    note = (f"calibrated from {cal.provenance.get('runs_used', '?')} measured runs{' (' + when + ')' if when else ''}: "
            + "; ".join(parts) + f" [{describe(cal, framework=fw, gpu=gpu_id, method=method)}]; "
            "--no-calibration for the raw model")
    return mid, note


def calibrate_estimate(memory: Any, time: Any, setup: Any, layout: Any, *,
                       calibration: Calibration | None) -> tuple[Any, Any, str | None]:
    """(MemoryEstimate, TimeEstimate, note) with the matching calibration applied; unchanged and
    None without one. The breakdown still sums to the peak: the correction is its own component."""
    mid, note = apply((memory, time), setup, layout, calibration=calibration)
    if mid is None:
        return memory, time, None
    alloc = mid["peak_allocated_bytes"]
    components = dict(memory.components_bytes)
    if alloc != memory.peak_allocated_bytes:
        components["calibration"] = alloc - memory.peak_allocated_bytes
    overhead = dict(memory.overhead_bytes)
    overhead["allocator_reserve"] = mid["peak_reserved_bytes"] - alloc
    memory = replace(memory, components_bytes=components, peak_allocated_bytes=alloc,
                     peak_reserved_bytes=mid["peak_reserved_bytes"], device_bytes=mid["device_bytes"],
                     overhead_bytes=overhead)
    if time is not None and mid.get("step_s") and time.step_s:
        k = mid["step_s"] / time.step_s
        b = time.breakdown
        breakdown = replace(b, **{name: getattr(b, name) * k for name in b.as_dict()})
        train_s, eval_s = time.train_s * k, time.eval_s * k
        total_s = train_s + eval_s + time.checkpoint_s
        time = replace(time, step_s=time.step_s * k, breakdown=breakdown, train_s=train_s, eval_s=eval_s,
                       total_s=total_s, gpu_hours=total_s * time.num_gpus / 3600.0,
                       tokens_per_s_per_gpu=time.tokens_per_s_per_gpu / k, mfu=time.mfu / k, hfu=time.hfu / k,
                       tflops_per_gpu=time.tflops_per_gpu / k)
    return memory, time, note
