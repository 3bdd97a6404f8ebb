"""Ground-truth cases (the `shared/ground_truth` schema) as trainplan setups, and what trainplan
predicts for them. Used by `trainplan accuracy`, `trainplan import` and benchmarks/time_accuracy.py.

    mapping = map_case(case)          # CaseMapping, or Skip("why")
    values = predict(mapping)         # the eight predicted values (None where not computable)
"""

from __future__ import annotations

import math
from pathlib import Path

from trainplan.cases.common import CASE_FIELDS, MALFORMED, REQUIRED_FIELDS, Skip, case_kind, source_of
from trainplan.cases.memorycase import map_memory_case
from trainplan.cases.method_words import method_not_modelled, with_method
from trainplan.cases.normalize import normalized
from trainplan.cases.timecase import METRIC_KEYS, predicted_values
from trainplan.cases.timecase import map_case as map_time
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.job import Job
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.memory import estimate_memory
from trainplan.timing.estimate import estimate_time

__all__ = ["CASE_FIELDS", "PREDICTED_KEYS", "CaseMapping", "Skip", "load_cases", "map_case", "mapping_from_options",
           "predict", "source_of", "validate_cases"]

PREDICTED_KEYS = ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes", "tokens_per_s_per_gpu",
                  "tflops_per_gpu", "mfu", "hfu", "step_s", "gpu_hours", "run_s")
MEMORY_KEYS = PREDICTED_KEYS[:3]


@frozen
class CaseMapping:
    """One case as trainplan sees it: the setup and the one value it is scored on."""

    case_id: str
    kind: str                 # memory | time
    source: str
    method: str
    job: Job                  # without price or calibration: cases are scored raw
    metric: str               # one of PREDICTED_KEYS
    measured: float | None    # in the metric's unit (bytes, s, tokens/s, GPU-hours)
    options: JobOptions | None = None   # memory cases: the flags `trainplan estimate` takes
    notes: tuple[str, ...] = ()
    gpu_stated: bool = True             # False: a stand-in GPU, its capacity says nothing of the run


def load_cases(path: str | Path, *, strict: bool = True, what: str = "case file") -> list[dict]:
    """The cases of a JSON file (a list, or {"cases": [...]} with any other top-level keys as the file's own
    description: "about", "source"), validated; TrainplanError otherwise.
    `strict=False` (accuracy) tolerates fields outside the schema; an import refuses them. The file
    is read through safeio: a regular UTF-8 file of at most CASE_FILE_LIMIT_BYTES, nested at most
    MAX_DEPTH levels (a FIFO or a device is refused, never read)."""
    from trainplan.safeio import CASE_FILE_LIMIT_BYTES, parse_json, read_user_text

    data = parse_json(read_user_text(path, what=what, limit_bytes=CASE_FILE_LIMIT_BYTES), what=what, path=path)
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        data = data["cases"]
    if not isinstance(data, list):
        raise TrainplanError(f"{path}: expected a JSON list of cases (or an object whose \"cases\" is one)")
    validate_cases(data, str(path), strict=strict)
    return data


def validate_cases(cases: list, where: str = "cases", *, strict: bool = True) -> None:
    """Every case an object with unique ids; when `strict` (an import), with the schema's fields only,
    the required ones present and a known kind. Not strict (accuracy): a case that lacks a field or
    has an unknown kind is kept: its kind is read as other writers name it, or from its measured block
    (cases.common.case_kind), else it is reported as not predicted with the reason (cases.accuracy)."""
    seen: set[str] = set()
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            raise TrainplanError(f"{where}: case {i} is not a JSON object")
        unknown = sorted(set(case) - CASE_FIELDS)
        if unknown and strict:
            raise TrainplanError(f"{where}: case {case.get('id', i)!r} has unknown field(s) {', '.join(unknown)}; "
                                 "nothing was written")
        missing = [k for k in REQUIRED_FIELDS if not case.get(k)]
        if missing and (strict or "id" in missing):
            raise TrainplanError(f"{where}: case {case.get('id', i)!r} lacks {', '.join(missing)}")
        if not isinstance(case["id"], str):
            raise TrainplanError(f"{where}: case {i} has an id that is not a string: {case['id']!r:.60}")
        if strict and case["kind"] not in ("memory", "time"):
            raise TrainplanError(f"{where}: case {case['id']!r} has kind {case['kind']!r}, not memory or time")
        if case["id"] in seen:
            raise TrainplanError(f"{where}: case id {case['id']!r} appears twice")
        seen.add(case["id"])


def map_case(case: dict) -> CaseMapping:
    """The case as a setup; Skip (with the reason) when its fields do not allow one. Numbers and names
    written as text are read first (cases.normalize), each reading noted."""
    kind = case_kind(case)
    if kind is None:
        raise Skip(f"kind {case.get('kind')!r} is neither memory nor time")
    if kind != case.get("kind"):
        case = {**case, "kind": kind}       # as other writers name it (cases.common.case_kind)
    try:
        case, read = normalized(case)
        if why := method_not_modelled(case.get("method")):
            raise Skip(why)
        case, implied = with_method(case)
        read = [*read, *implied]
        mapping = _map_memory(case) if case.get("kind") == "memory" else _map_time(case)
        value = mapping.measured
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value <= 0):
            raise Skip(f"measured {mapping.metric} {value!r:.40} is not a positive number")
        return replace(mapping, notes=(*read, *mapping.notes)) if read else mapping
    except TrainplanError as exc:
        raise Skip(f"not a valid setup: {exc}") from None
    except MALFORMED as exc:
        raise Skip(f"malformed field ({type(exc).__name__}: {exc})") from None


def _map_memory(case: dict) -> CaseMapping:
    mm = map_memory_case(case)
    return mapping_from_options(mm.options, case_id=case["id"], kind="memory", metric=mm.view,
                                measured=mm.measured_bytes, source=source_of(case), method=str(case["method"]),
                                notes=mm.notes, gpu_stated=mm.gpu_stated, impl_facts=mm.impl_facts)


def mapping_from_options(options: JobOptions, *, case_id: str = "", kind: str = "memory",
                         metric: str = "device_bytes", measured: float | None = None, source: str = "",
                         method: str | None = None, notes: tuple[str, ...] = (),
                         gpu_stated: bool = True, impl_facts: tuple[tuple[str, object], ...] = ()) -> CaseMapping:
    """JobOptions (the flags `trainplan estimate` takes) as a CaseMapping, resolved the way `estimate`
    resolves them (framework profile, layout, workload, timing options), without price or calibration;
    `impl_facts`: Implementation fields a published run's trainer fixes that no flag sets (cases.trainers)."""
    job = resolve_job(options, calibration=None, priced=False)
    if impl_facts:
        job = replace(job, setup=replace(job.setup, impl=replace(job.setup.impl, **dict(impl_facts))))
    return CaseMapping(case_id=case_id, kind=kind, source=source, method=method or str(options.method), job=job,
                       metric=metric, measured=measured, options=options, notes=notes, gpu_stated=gpu_stated)


def _map_time(case: dict) -> CaseMapping:
    m = map_time(case)
    job = Job(setup=m.setup, layout=m.layout, gpu=m.gpu, workload=m.workload, timing=m.options)
    return CaseMapping(case_id=case["id"], kind="time", source=source_of(case), method=str(case["method"]), job=job,
                       metric=METRIC_KEYS[m.metric], measured=m.measured, notes=(m.note,) if m.note else ())


def predict(mapping: CaseMapping) -> dict[str, float | int | None]:
    """The predicted values (PREDICTED_KEYS): memory views in bytes, time per GPU.
    A part the model cannot compute for this setup is None (its reason goes to the notes)."""
    job = mapping.job
    out: dict[str, float | int | None] = dict.fromkeys(PREDICTED_KEYS)
    try:
        mem = estimate_memory(job.setup, job.layout, job.gpu, headroom=job.headroom, parallel=job.parallel)
        out.update(peak_allocated_bytes=mem.peak_allocated_bytes, peak_reserved_bytes=mem.peak_reserved_bytes,
                   device_bytes=mem.device_bytes)
    except TrainplanError:
        if mapping.kind == "memory":
            raise
    try:
        est = estimate_time(job.setup, job.layout, job.gpu, job.workload, job.timing)
        out.update(predicted_values(est))
    except TrainplanError:
        if mapping.kind == "time":
            raise
    return out
