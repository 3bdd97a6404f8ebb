"""Turning what a user, a training script or a case file says into RunRecords, and writing them
(with the spool as the fallback when the database cannot be reached now, and only then).

A run recorded from setup flags (record, record --file, track, probe) is resolved and estimated by
the code `trainplan estimate` runs (job.resolve.resolve_job, estimation.estimate; uncalibrated), so
a flag `estimate` refuses is refused here too, and its measurements are checked against that GPU
and estimate (ledger.plausibility) before anything is written."""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from trainplan import __version__
from trainplan.cases import Skip, map_case, predict, source_of
from trainplan.cases.memorycase import memory_view
from trainplan.errors import TrainplanError
from trainplan.frozen import asdict, fields, frozen
from trainplan.ledger import plausibility, spool
from trainplan.ledger.paths import db_url, is_in_memory, redact
from trainplan.ledger.records import ESTIMATE_KEYS, RunRecord, check_measured
from trainplan.ledger.store import LedgerUnavailable, engine_for, write_runs
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.units import GIB

PACKAGES = ("torch", "transformers", "peft", "deepspeed", "accelerate", "bitsandbytes", "lightning")


class LedgerWarning(UserWarning):
    """The ledger could not be written; the run was spooled (kept for callers that filter it: save()
    itself no longer warns, it returns the message in SaveResult.warning)."""


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


def _resolved(job: Any) -> dict[str, Any]:
    s, lay = job.setup, job.layout
    return {"model": s.model.name, "method": str(s.method), "precision": str(s.precision),
            "optimizer": str(s.optimizer), "framework": str(s.framework), "gpu": lay.gpu_id,
            "num_gpus": lay.num_gpus, "batch_size": s.batch_size, "seq_len": s.seq_len,
            "grad_ckpt": str(s.grad_ckpt), "zero": int(lay.zero), "fsdp": str(lay.fsdp), "tp": lay.tp, "pp": lay.pp}


def estimate_values(mapping: Any) -> dict[str, Any]:
    """The values trainplan predicts for a CaseMapping (ESTIMATE_KEYS), uncalibrated."""
    values = predict(mapping)
    return {k: values.get(k) for k in ESTIMATE_KEYS}


def estimate_for(req: Any) -> Any:
    """The Estimate `trainplan estimate` makes for `req` (its resolution and checks: price flags
    included), without calibration: the ledger keeps the raw model's prediction."""
    from trainplan.estimation import estimate
    from trainplan.job.resolve import resolve_job

    return estimate(resolve_job(req, calibration=None))


def _values_of(est: Any) -> dict[str, Any]:
    mem = est.memory
    return {"peak_allocated_bytes": mem.peak_allocated_bytes, "peak_reserved_bytes": mem.peak_reserved_bytes,
            "device_bytes": mem.device_bytes, **est.time.comparable()}


def check_plausible(measured: dict[str, Any], est: Any, *, force: bool = False) -> tuple[str, ...]:
    """ledger.plausibility's checks of `measured` against the estimate's GPU and FLOPs per token."""
    notes = plausibility.check_memory(measured, est.gpu, force=force)
    t = est.time
    eff = t.step.efficiency
    plausibility.check_throughput(measured, est.gpu, flops_per_token=t.flops_per_step / t.tokens_per_step
                                  if t.tokens_per_step else 0.0, peak_flops_per_s=eff.peak_flops_per_s,
                                  peak_dtype=eff.peak_dtype)
    return notes


def record_from_options(req: Any, measured: dict[str, Any], *, source: str, notes: str = "",
                        env: dict[str, Any] | None = None, external_id: str | None = None,
                        created_at: str | None = None, force: bool = False, measured_here: bool = False) -> RunRecord:
    """A run of the setup `req` with its measurements, and the estimate trainplan makes for it now.
    TrainplanError (one line) for a setup `estimate` refuses or an implausible measurement
    (`force`: memory above the GPU's capacity is recorded, with a note). `measured_here`: the
    numbers come from trainplan's own instruments (probe, track), not typed by a person, so an
    implausible one is kept with the check's words as a note: nothing measured is lost."""
    est = estimate_for(req)
    job = est.job
    measured = check_measured(dict(measured))
    try:
        forced = check_plausible(measured, est, force=force)
    except TrainplanError as exc:
        if not measured_here:
            raise
        forced = (f"implausible as measured: {str(exc).split('; nothing was written')[0]}",)
    setup = setup_from_options(req)
    setup["resolved"] = _resolved(job)
    env = dict(env if env is not None else environment())
    for key, value in (("gpu", job.layout.gpu_id), ("gpu_count", job.layout.num_gpus),
                       ("framework", str(job.setup.framework))):
        env.setdefault(key, value)
    return RunRecord(source=source, setup=setup, measured=measured, estimate=_values_of(est),
                     environment=env, notes="; ".join(x for x in (notes, *forced) if x),
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
                            ("gpu_hours", "gpu_hours"), ("tflops_per_gpu", "tflops_per_gpu"), ("mfu", "mfu"),
                            ("hfu", "hfu")):
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
        setup["resolved"] = _resolved(mapping.job)
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
    updated: int = 0          # already present, notes or raw case text updated
    spooled: int = 0
    spool: Path | None = None
    warning: str | None = None


def open_ledger(url: str | None = None):
    """The migrated engine for `url` (runs spooled for it are written on its first connection)."""
    return engine_for(url)


def recordable_url(url: str | None = None) -> str:
    """The absolute database URL runs are written to; TrainplanError for an in-memory one."""
    url = db_url(url)
    if is_in_memory(url):
        raise TrainplanError(f"the ledger database {redact(url)!r} lives in memory: what is written there is lost "
                             "when trainplan exits; give a file (--db ledger.sqlite) or a server URL; "
                             "nothing was written")
    return url


def save(records: list[RunRecord], url: str | None = None, *, spool_on_failure: bool = False) -> SaveResult:
    """Write `records` (all or nothing). With `spool_on_failure`, a database that cannot be reached
    now (LedgerUnavailable) spools them (SaveResult.warning says so); every other failure is a
    TrainplanError with nothing written and nothing spooled."""
    url = recordable_url(url)
    try:
        counts = write_runs(open_ledger(url), records, url=url)
    except LedgerUnavailable as exc:
        if not spool_on_failure:
            raise
        path = spool.append(url, records)
        message = (f"trainplan: ledger not written ({exc}); {len(records)} run(s) spooled to {path}, "
                   "written on the next successful connection")
        return SaveResult(spooled=len(records), spool=path, warning=message)
    except TrainplanError:
        raise
    except Exception as exc:
        text = str(exc).splitlines()
        raise TrainplanError(f"cannot write to the ledger {redact(url)}: {text[0] if text else type(exc).__name__}; "
                             "nothing was written") from None
    return SaveResult(added=counts.added, present=counts.present, updated=counts.updated)
