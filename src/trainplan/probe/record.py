"""Store a probe in the ledger of measured runs (issue 6) through the ledger's own capture API:
`ledger.capture.record_from_options` (the request, the resolved setup, the estimate trainplan
makes for it at record time) and `ledger.capture.save` (an unreachable database spools the run,
written on the next connection).

The ledger is optional (extra `ledger`: SQLAlchemy, Alembic). A probe never fails because of it:
a note says what happened. CPU probes are not recorded: the ledger holds GPU measurements, and
calibration must not learn from a CPU step.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.options import JobOptions
from trainplan.ledger.capture import environment, record_from_options, save
from trainplan.ledger.paths import db_url, redact
from trainplan.probe.result import ProbeResult

SOURCE = "trainplan probe"


def measured_for_ledger(result: ProbeResult) -> dict[str, Any]:
    """The ledger's measurement keys (None: not measured, left out by the ledger)."""
    m = result.measured
    return {"peak_allocated_bytes": m.peak_allocated_bytes, "peak_reserved_bytes": m.peak_reserved_bytes,
            "device_bytes": m.device_bytes, "step_s": m.step_s, "tokens_per_s_per_gpu": m.tokens_per_s}


def run_record(result: ProbeResult):
    """The ledger's RunRecord of a probe (validated by the ledger: positive, sane numbers)."""

    env = environment(**{k: v for k, v in result.environment.items() if not isinstance(v, dict)},
                      framework=f"hf ({SOURCE})", steps=result.steps, num_gpus=result.num_gpus)
    return record_from_options(JobOptions(**result.request), measured_for_ledger(result), source=SOURCE,
                               notes="; ".join(result.notes), env=env, measured_here=True)


def record(result: ProbeResult, db: str | None = None) -> ProbeResult:
    """The result with `recorded` set (the stored run's fingerprint) or a note saying why not."""
    if result.measured.device != "cuda":
        return _noted(result, "not recorded: CPU probes stay out of the ledger (it holds GPU measurements)")
    if importlib.util.find_spec("sqlalchemy") is None or importlib.util.find_spec("trainplan.ledger") is None:
        return _noted(result, "not recorded: the ledger needs the 'ledger' extra (pip install "
                              "'trainplan[ledger]'); the run is in --json")

    try:
        rec = run_record(result)
        saved = save([rec], db, spool_on_failure=True)   # only an unreachable database spools
    except TrainplanError as exc:
        return _noted(result, f"not recorded: {exc}")
    if saved.spooled:
        return _noted(result, f"not recorded yet: {saved.warning}")
    note = f"recorded in the ledger {redact(db_url(db))}" + ("" if saved.added else " (already there)")
    return replace(_noted(result, note), recorded=rec.fingerprint[:16])


def _noted(result: ProbeResult, note: str) -> ProbeResult:
    return replace(result, notes=result.notes + (note,))
