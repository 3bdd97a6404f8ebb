"""Corrections fitted from measured runs, with their uncertainty: the terms, how they apply to an
estimate, and the file they are kept in. Standard library only, so that `trainplan estimate` can
look one up on every call without opening the ledger; fitting them is ledger/calibration_fit.py.

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
import os

from trainplan.frozen import field, frozen, replace
from trainplan.ledger.paths import (
    CALIBRATION_ENV,
    calibration_path,
    db_url,
    default_db_url,
    explicit_calibration_path,
    legacy_calibration_path,
    redact,
)
from trainplan.memory.overhead import RESERVE_FIXED_BYTES

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

FORMAT = "trainplan-calibration/1"
TERMS = ("alloc_scale", "reserve_fraction", "device_overhead_bytes", "time_factor")
LEVELS = (("framework", "gpu", "method"), ("framework", "method"), ("framework",), ())
THROUGHPUT = ("tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu")
DURATION = ("step_s", "gpu_hours", "run_s")   # run_s: a run timed whole (cases.timecase)
DEFAULT_MIN_RUNS = 3


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


def default_reserve_fraction(est: dict) -> float | None:
    """The reserve fraction an estimate implies: (reserved - fixed) / allocated - 1."""
    a, r = est.get("peak_allocated_bytes"), est.get("peak_reserved_bytes")
    return (r - RESERVE_FIXED_BYTES) / a - 1.0 if a and r else None



# --- applying ---------------------------------------------------------------------------------------

def _scaled(values: dict[str, Any], s: float, f: float | None, delta: float, t: float) -> dict[str, Any]:
    out = dict(values)
    alloc, res, dev = (values.get(k) for k in ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes"))
    if alloc:
        frac = f if f is not None else default_reserve_fraction(values)
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


def _target(path: str | None, db: str | None = None) -> tuple[str, str, bool]:
    """(the file to write, what names it in errors, whether missing folders may be made): only
    trainplan's own data directory is created; a path the user gave (--out, $TRAINPLAN_CALIBRATION)
    must be in an existing directory. Without one, the file is the ledger `db`'s own (paths)."""
    if path:
        return calibration_path(str(path)), "--out", False
    if os.environ.get(CALIBRATION_ENV):
        return calibration_path(None), f"${CALIBRATION_ENV}", False
    return calibration_path(None, db), "calibration file", True


def check_target(path: str | None = None, db: str | None = None) -> str:
    """The calibration file `save` would write, checked before any work (safeio.check_output_path:
    a regular file or a new name in an existing directory; never a symlink, FIFO or device)."""
    from trainplan.safeio import check_output_path

    target, what, make_parents = _target(path, db)
    return check_output_path(target, what=what, make_parents=make_parents)


def save(cal: Calibration, path: str | None = None, db: str | None = None) -> str:
    """Write the calibration JSON atomically (safeio.write_atomic) to `path`, else the ledger `db`'s
    own file in the data directory. The single file of older trainplans, when it was fitted from
    this same ledger, is removed then: this ledger's file replaces it (migrated)."""
    from trainplan.safeio import write_atomic

    target, what, make_parents = _target(path, db)
    written = write_atomic(target, json.dumps(to_json(cal), indent=2) + "\n", what=what,
                           make_parents=make_parents)
    if not path and not os.environ.get(CALIBRATION_ENV):
        legacy = legacy_calibration_path()
        old = _read(legacy)
        if old is not None and _fitted_from(old, db):
            try:
                os.remove(legacy)
            except OSError:
                pass
    return written


_CACHE: dict[str, tuple[float, Calibration | None]] = {}


def _read(target: str) -> Calibration | None:
    """The calibration in `target`, None when there is none or it is unreadable. One stat() per
    call; the file is parsed again only when it changed."""
    try:
        mtime = os.stat(target).st_mtime
    except OSError:
        return None
    cached = _CACHE.get(target)
    if cached and cached[0] == mtime:
        return cached[1]
    from trainplan.safeio import CONFIG_LIMIT_BYTES, parse_json, read_user_text

    try:   # a regular file only: a FIFO or a device at the path is unreadable, not a hang
        cal: Calibration | None = from_json(parse_json(read_user_text(target, what="calibration",
                                                                      limit_bytes=CONFIG_LIMIT_BYTES),
                                                       what="calibration", path=target))
    except (ValueError, KeyError, TypeError, AttributeError):   # TrainplanError is a ValueError
        cal = None
    _CACHE[target] = (mtime, cal)
    return cal


def _fitted_from(cal: Calibration, db: str | None) -> bool:
    """Whether `cal` (of the single file older trainplans wrote) was fitted from the ledger `db`: its
    provenance names the (redacted) URL; one without a name is the default ledger's."""
    url = redact(db_url(db))
    named = cal.provenance.get("db")
    return named == url if named else url == redact(db_url(default_db_url()))


def load_active(path: str | None = None, db: str | None = None) -> Calibration | None:
    """The calibration of the ledger `db` (--db, else $TRAINPLAN_DB, else the default one), or of
    `path` / $TRAINPLAN_CALIBRATION when given; None when there is none or it is unreadable. Until
    `calibrate` writes a ledger's own file, the single file of older trainplans stands in for the
    ledger it was fitted from (and only for that one)."""
    explicit = explicit_calibration_path(str(path) if path else None)
    if explicit:
        return _read(explicit)
    cal = _read(calibration_path(None, db))
    if cal is not None:
        return cal
    old = _read(legacy_calibration_path())
    return old if old is not None and _fitted_from(old, db) else None


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
        time = scale_time(time, mid["step_s"] / time.step_s)
    return memory, time, note


def scale_time(time: Any, k: float) -> Any:
    """A TimeEstimate whose steps take `k` times as long (the calibrated time: k = 1 / time_factor)."""
    if k == 1.0:
        return time
    b = time.breakdown
    breakdown = replace(b, **{name: getattr(b, name) * k for name in b.as_dict()})
    train_s, eval_s = time.train_s * k, time.eval_s * k
    total_s = train_s + eval_s + time.checkpoint_s
    return replace(time, step_s=time.step_s * k, breakdown=breakdown, train_s=train_s, eval_s=eval_s,
                   total_s=total_s, gpu_hours=total_s * time.num_gpus / 3600.0,
                   tokens_per_s_per_gpu=time.tokens_per_s_per_gpu / k, mfu=time.mfu / k, hfu=time.hfu / k,
                   tflops_per_gpu=time.tflops_per_gpu / k)


def matches(calibration: Calibration | None, *, framework: str, gpu: str, method: str) -> bool:
    """Whether any term of `calibration` applies to this framework x GPU x method."""
    return calibration is not None and any(calibration.term(name, framework, gpu, method) for name in TERMS)


def time_factor(calibration: Calibration | None, *, framework: str, gpu: str, method: str) -> float:
    """The throughput factor that applies (1.0 without one): calibrated step = raw step / factor."""
    hit = None if calibration is None else calibration.term("time_factor", framework, gpu, method)
    return hit[0].value if hit else 1.0


def calibrated_device(views: tuple[int, int, int], calibration: Calibration, *, framework: str, gpu: str,
                      method: str) -> int:
    """The calibrated device-view peak of (allocated, reserved, device) of the most loaded GPU, as
    `calibrate_estimate` computes it (the planner's, fit's and the table's fast path)."""
    values = {"peak_allocated_bytes": views[0], "peak_reserved_bytes": views[1], "device_bytes": views[2]}
    got = adjust(values, calibration, framework=framework, gpu=gpu, method=method)
    return views[2] if got is None else int(got[0]["device_bytes"])


def short_note(calibration: Calibration, *, framework: str, gpu: str, method: str) -> str:
    """One line for a plan or a fit: which calibration applied, from how many runs, with which terms."""
    when = calibration.provenance.get("created_at", "")
    return (f"calibrated ({gpu}, {framework}, {method}) from {calibration.provenance.get('runs_used', '?')} measured "
            f"runs{' (' + when[:10] + ')' if when else ''}: {describe(calibration, framework=framework, gpu=gpu, method=method)}; "
            "--no-calibration for the raw model")
