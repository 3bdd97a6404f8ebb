"""Turning what a user, a training script or a case file says into RunRecords, and writing them
(with the spool as the fallback when the database cannot be reached)."""

from __future__ import annotations

import platform
import warnings
from importlib import metadata
from pathlib import Path
from typing import Any

from trainplan import __version__
from trainplan.cases import Skip, map_case, mapping_from_options, predict, source_of
from trainplan.cases.memorycase import memory_view
from trainplan.errors import TrainplanError
from trainplan.frozen import asdict, fields, frozen
from trainplan.ledger import spool
from trainplan.ledger.paths import db_url, redact
from trainplan.ledger.records import ESTIMATE_KEYS, RunRecord
from trainplan.ledger.store import add_runs, engine_for
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.units import GIB

PACKAGES = ("torch", "transformers", "peft", "deepspeed", "accelerate", "bitsandbytes", "lightning")


class LedgerWarning(UserWarning):
    """The ledger could not be written; the run was spooled."""


def package_versions() -> dict[str, str]:
    """Installed versions of the training stack (importlib.metadata: nothing is imported)."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def environment(**extra: Any) -> dict[str, Any]:
    env = {"trainplan": __version__, "python": platform.python_version(), "packages": package_versions()}
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


def setup_from_options(req: Any) -> dict[str, Any]:
    """The JobOptions' fields as JSON (what the user said); record_from_options adds `resolved`:
    the values the estimate resolved (profile defaults, catalog ids) that the indexed columns hold."""
    out: dict[str, Any] = {}
    for f in fields(req):
        value = getattr(req, f.name)
        if isinstance(value, ModelSpec):
            out["model_spec"] = _model_spec_json(value)
            value = value.name
        elif isinstance(value, GpuSpec):
            value = value.id
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def _model_spec_json(spec: Any) -> dict[str, Any]:
    data = asdict(spec)
    data.pop("hf_config_json", None)
    return {k: (str(v) if hasattr(v, "value") else v) for k, v in data.items()}


def _resolved(mapping: Any) -> dict[str, Any]:
    s, lay = mapping.job.setup, mapping.job.layout
    return {"model": s.model.name, "method": str(s.method), "precision": str(s.precision),
            "optimizer": str(s.optimizer), "framework": str(s.framework), "gpu": lay.gpu_id,
            "num_gpus": lay.num_gpus, "batch_size": s.batch_size, "seq_len": s.seq_len,
            "grad_ckpt": str(s.grad_ckpt), "zero": int(lay.zero), "fsdp": str(lay.fsdp), "tp": lay.tp, "pp": lay.pp}


def estimate_values(mapping: Any) -> dict[str, Any]:
    """The values trainplan predicts for a CaseMapping (ESTIMATE_KEYS), uncalibrated."""
    values = predict(mapping)
    return {k: values.get(k) for k in ESTIMATE_KEYS}


def record_from_options(req: Any, measured: dict[str, Any], *, source: str, notes: str = "",
                        env: dict[str, Any] | None = None, external_id: str | None = None,
                        created_at: str | None = None) -> RunRecord:
    """A run of the setup `req` with its measurements, and the estimate trainplan makes for it now."""
    mapping = mapping_from_options(req)
    setup = setup_from_options(req)
    setup["resolved"] = _resolved(mapping)
    env = dict(env if env is not None else environment())
    for key, value in (("gpu", mapping.job.layout.gpu_id), ("gpu_count", mapping.job.layout.num_gpus),
                       ("framework", str(mapping.job.setup.framework))):
        env.setdefault(key, value)
    return RunRecord(source=source, setup=setup, measured=measured, estimate=estimate_values(mapping),
                     environment=env, notes=notes,
                     external_id=external_id, created_at=created_at)


def _case_measured(case: dict, mapping: Any | None) -> dict[str, Any]:
    m = case.get("measured") or {}
    out: dict[str, Any] = {}
    if case["kind"] == "memory":
        view, why = memory_view(m.get("what"))
        if m.get("peak_mem_gib") is not None:
            out[view] = float(m["peak_mem_gib"]) * GIB
        out["memory_what"] = m.get("what")
        out["view"] = why
    else:
        for key, target in (("step_time_s", "step_s"), ("tokens_per_s_per_gpu", "tokens_per_s_per_gpu"),
                            ("gpu_hours", "gpu_hours"), ("tflops_per_gpu", "tflops_per_gpu"), ("mfu", "mfu")):
            if isinstance(m.get(key), int | float) and m[key] > 0:
                out[target] = m[key]
        if mapping is not None and mapping.measured:
            out[mapping.metric] = mapping.measured      # the normalised metric the case is scored on
    if mapping is not None:
        out["metric"] = mapping.metric
    return out


def record_from_case(case: dict, *, created_at: str | None = None) -> RunRecord:
    """A ground-truth case as a run: its mapped setup and estimate (none when it cannot be mapped,
    the reason in the notes), its measurement, the raw case JSON."""
    mapping, why = None, ""
    try:
        mapping = map_case(case)
    except Skip as exc:
        why = f"not estimated: {exc}"
    if mapping is not None and mapping.options is not None:
        setup = setup_from_options(mapping.options)
    else:
        setup = {"model": (case.get("model") or {}).get("name") or (case.get("model") or {}).get("hf_id") or case["id"],
                 "method": case.get("method"), "case_framework": case.get("framework"),
                 "case_gpus": case.get("gpus")}
    if mapping is not None:
        setup["resolved"] = _resolved(mapping)
    estimate = None
    if mapping is not None:
        try:
            estimate = estimate_values(mapping)
        except TrainplanError as exc:
            why = f"not estimated: {exc}"
    notes = "; ".join(x for x in ([why] + list(mapping.notes if mapping else [])) if x)
    env = {"gpu": (case.get("gpus") or {}).get("type"), "gpu_count": (case.get("gpus") or {}).get("count"),
           "framework": case.get("framework")}
    return RunRecord(source=source_of(case), setup=setup, measured=_case_measured(case, mapping), estimate=estimate,
                     environment=env, notes=notes, external_id=case["id"], raw=case, created_at=created_at)


@frozen
class SaveResult:
    added: int = 0
    present: int = 0
    spooled: int = 0
    spool: Path | None = None
    warning: str | None = None


def open_ledger(url: str | None = None):
    """The migrated engine for `url` (runs spooled for it are written on its first connection)."""
    return engine_for(url)


def save(records: list[RunRecord], url: str | None = None, *, spool_on_failure: bool = False) -> SaveResult:
    """Write `records`; with `spool_on_failure`, an unreachable database spools them (warning)."""

    try:
        engine = open_ledger(url)
        added, present = add_runs(engine, records)
        return SaveResult(added=added, present=present)
    except Exception as exc:
        if not spool_on_failure:
            if isinstance(exc, TrainplanError):
                raise
            raise TrainplanError(f"cannot write to the ledger {redact(db_url(url))}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        path = spool.append(db_url(url), records)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        message = (f"trainplan: ledger not written ({reason}); {len(records)} run(s) spooled to {path}, "
                   "written on the next successful connection")
        warnings.warn(message, LedgerWarning, stacklevel=2)
        return SaveResult(spooled=len(records), spool=path, warning=message)
