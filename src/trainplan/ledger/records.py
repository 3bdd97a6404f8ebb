"""One measured run as the ledger stores it (standard library only): the setup, the environment,
the measurements, the estimate trainplan made at record time, a source and notes.

Measurements are validated before anything is written: positive, finite, below absurd bounds
(10 TiB per GPU, a day per step, ...), reserved not below allocated. The natural key
(`fingerprint`) hashes what identifies a run, never its notes or other free text: for an imported
case, its source, id and the case as written minus its free-text fields (notes, quotes, ...); for
any other run, the source, external id, setup, environment and measurements. Recording or
importing the same run twice adds nothing; a re-import with edited notes updates them.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.frozen import asdict, field, frozen
from trainplan.units import GIB

MEMORY_KEYS = ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes")
TIME_KEYS = ("step_s", "tokens_per_s_per_gpu")
MEASURE_KEYS = MEMORY_KEYS + TIME_KEYS
EXTRA_KEYS = ("gpu_hours", "tflops_per_gpu", "mfu", "hfu")
ESTIMATE_KEYS = MEMORY_KEYS + ("tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "hfu", "step_s", "gpu_hours")
INDEX_KEYS = ("model", "method", "precision", "optimizer", "framework", "gpu", "num_gpus", "batch_size",
              "seq_len", "grad_ckpt", "zero", "fsdp", "tp", "pp")

# Upper bounds beyond which a measurement is a mistake (units, not a real run).
MAX_BYTES = 10 * 1024 * GIB                 # 10 TiB per GPU
LIMITS = {"step_s": 86_400.0, "tokens_per_s_per_gpu": 1e8, "gpu_hours": 1e9, "tflops_per_gpu": 1e5, "mfu": 1.0,
          "hfu": 1.0}
RECORD_FIELDS = frozenset({"source", "setup", "measured", "estimate", "environment", "notes", "external_id",
                           "raw", "created_at"})


# Fields of a ground-truth case that are prose or judgement, not what identifies the case.
FREE_TEXT_KEYS = frozenset({"notes", "note", "quote", "where", "confidence", "arch_source", "comment",
                            "comments", "description"})


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TrainplanError(f"measurement {key} must be a number, got {value!r}; nothing was written")
    if not math.isfinite(value) or value <= 0:
        raise TrainplanError(f"measurement {key} must be a finite positive number, got {value!r}; "
                             "nothing was written")
    return float(value)


def check_created_at(value: Any) -> str | None:
    """An ISO 8601 date-time (the ledger's `created_at`), or TrainplanError saying how to write one."""
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise TypeError
        _dt.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise TrainplanError(f"created_at {value!r} is not an ISO 8601 date-time (e.g. 2026-01-31T12:00:00+00:00); "
                             "nothing was written") from None
    return value


def identity_of(raw: Any) -> Any:
    """`raw` without its free-text fields (FREE_TEXT_KEYS, keys ending in _note/_notes), recursively."""
    if isinstance(raw, dict):
        return {k: identity_of(v) for k, v in raw.items()
                if k not in FREE_TEXT_KEYS and not str(k).endswith(("_note", "_notes"))}
    if isinstance(raw, list):
        return [identity_of(v) for v in raw]
    return raw


def fingerprint_of(*, source: str, external_id: str | None, setup: Any, environment: Any, measured: Any,
                   raw: Any) -> str:
    """The natural key (sha256 hex): see the module docstring."""
    if raw is not None:
        key: dict[str, Any] = {"source": source, "external_id": external_id, "case": identity_of(raw)}
    else:
        key = {"source": source, "external_id": external_id, "setup": setup, "environment": environment,
               "measured": measured, "raw": None}
    return hashlib.sha256(_canonical(key).encode()).hexdigest()


def check_measured(measured: dict[str, Any]) -> dict[str, Any]:
    """The measurements, validated: TrainplanError (one line) on a negative, zero, absurd or
    non-numeric value, or when nothing is measured at all."""
    out: dict[str, Any] = {}
    for key, value in measured.items():
        if value is None:
            continue
        if key in MEMORY_KEYS:
            v = _number(key, value)
            if v > MAX_BYTES:
                raise TrainplanError(f"measurement {key} = {v / GIB:,.0f} GiB is above 10 TiB per GPU (a unit "
                                     "mistake?); nothing was written")
            if v < 1:
                raise TrainplanError(f"measurement {key} = {v:g} bytes is below one byte (GiB flags take "
                                     "GiB: 20.5 for 20.5 GiB); nothing was written")
            out[key] = int(v)
        elif key in LIMITS:
            v = _number(key, value)
            if v > LIMITS[key]:
                raise TrainplanError(f"measurement {key} = {v:g} is absurd (limit {LIMITS[key]:g}); nothing was written")
            out[key] = v
        else:
            out[key] = value            # descriptive extras: metric, memory_what, ...
    if not any(k in out for k in MEASURE_KEYS + EXTRA_KEYS):
        raise TrainplanError("no measurement given (peak allocated/reserved/device memory, step time or "
                             "tokens/s); nothing was written")
    alloc, reserved = out.get("peak_allocated_bytes"), out.get("peak_reserved_bytes")
    if alloc and reserved and reserved < alloc:
        raise TrainplanError(f"peak reserved ({reserved / GIB:.2f} GiB) is below peak allocated "
                             f"({alloc / GIB:.2f} GiB): PyTorch reserves at least what it allocates; "
                             "nothing was written")
    return out


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


@frozen
class RunRecord:
    """One run. `setup` holds the JobOptions fields (JSON); `estimate` the predicted values at record
    time (ESTIMATE_KEYS, None where not computable) or None when no setup could be estimated."""

    source: str
    setup: dict[str, Any]
    measured: dict[str, Any]
    estimate: dict[str, Any] | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    external_id: str | None = None
    raw: dict[str, Any] | None = None
    created_at: str | None = None       # ISO 8601, UTC; set when written if None

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source.strip() or len(self.source) > 200:
            raise TrainplanError(f"source must be a non-empty name of at most 200 characters, got {self.source!r}")
        if not isinstance(self.setup, dict) or not self.setup.get("model"):
            raise TrainplanError("a run's setup needs at least a model; nothing was written")
        if not isinstance(self.measured, dict):
            raise TrainplanError(f"a run's measured values must be an object, got {type(self.measured).__name__}; "
                                 "nothing was written")
        for name in ("environment", "estimate", "raw"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise TrainplanError(f"a run's {name} must be an object, got {type(value).__name__}; "
                                     "nothing was written")
        if not isinstance(self.notes, str):
            raise TrainplanError(f"a run's notes must be text, got {type(self.notes).__name__}; nothing was written")
        if self.external_id is not None and not isinstance(self.external_id, str):
            raise TrainplanError(f"a run's external_id must be text, got {self.external_id!r}; nothing was written")
        check_created_at(self.created_at)
        object.__setattr__(self, "measured", check_measured(dict(self.measured)))

    @property
    def fingerprint(self) -> str:
        """The natural key: sha256 over what identifies the run (not its notes, time or estimate)."""
        return fingerprint_of(source=self.source, external_id=self.external_id, setup=self.setup,
                              environment=self.environment, measured=self.measured, raw=self.raw)

    def index(self) -> dict[str, Any]:
        """The indexed columns, read from the resolved setup."""
        resolved = self.setup.get("resolved") or {}
        out = {}
        for key in INDEX_KEYS:
            value = resolved.get(key, self.setup.get(key))
            out[key] = value if value is None or isinstance(value, int | str) else str(value)
        return out

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str = "run") -> "RunRecord":
        if not isinstance(data, dict):
            raise TrainplanError(f"{where}: expected a JSON object")
        unknown = sorted(set(data) - RECORD_FIELDS)
        if unknown:
            raise TrainplanError(f"{where}: unknown field(s) {', '.join(unknown)}; nothing was written")
        for key in ("source", "setup", "measured"):
            if key not in data:
                raise TrainplanError(f"{where}: missing {key}; nothing was written")
        return cls(**data)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def measured_from_gib(*, peak_allocated_gib: float | None = None, peak_reserved_gib: float | None = None,
                      device_gib: float | None = None, step_s: float | None = None,
                      tokens_per_s: float | None = None) -> dict[str, Any]:
    """CLI units (GiB, seconds, tokens/s per GPU) -> the ledger's measurement keys (bytes)."""
    out: dict[str, Any] = {}
    for key, value in (("peak_allocated_bytes", peak_allocated_gib), ("peak_reserved_bytes", peak_reserved_gib),
                       ("device_bytes", device_gib)):
        if value is not None:
            flag = key.replace("_bytes", "_gib")
            _number(flag, value)
            if value * GIB > MAX_BYTES:
                raise TrainplanError(f"measurement {flag} = {value:g} GiB is above 10 TiB per GPU (a unit mistake?); "
                                     "nothing was written")
            if value * GIB < 1:
                raise TrainplanError(f"measurement {flag} = {value:g} GiB is below one byte (the flag takes GiB: "
                                     "20.5 for 20.5 GiB); nothing was written")
            out[key] = value * GIB
    if step_s is not None:
        out["step_s"] = _number("step_s", step_s)
    if tokens_per_s is not None:
        out["tokens_per_s_per_gpu"] = _number("tokens_per_s", tokens_per_s)
    return out


def residual(estimated: float | None, measured: float | None) -> float | None:
    """estimated / measured - 1, None when either is missing."""
    if not estimated or not measured:
        return None
    return estimated / measured - 1.0
