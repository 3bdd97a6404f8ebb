"""Recorded successes: a run in the ledger of the very setup an estimate, a plan or a fit is about
proves that it fits, whatever the model says. Read-only and cheap: nothing is read unless a ledger
is configured (--db, $TRAINPLAN_DB) or the default SQLite file exists, nothing is ever created or
migrated, an SQLite ledger is read with the standard library (no SQLAlchemy on the estimate path),
and the rows are read once per process and database (again only when the SQLite file changed).

The same setup (`memory_key`): what decides memory per GPU in trainplan's model, as resolved from
the run's recorded flags by the code `trainplan estimate` runs: the model (by name and shape), the
whole TrainingSetup (method, precision, quantization, LoRA, optimizer, micro-batch, sequence,
checkpointing, attention, framework and its implementation knobs), with gradient accumulation only
as "more than one" (what memory depends on; the exact count with pipeline stages) and the flash and
SDPA kernels as one (they keep the same tensors; eager is its own), the whole Layout
(GPU type and count, nodes, ZeRO/FSDP/offload, tp/pp/cp/ep) and the engine knobs (DeepSpeed, FSDP,
pipeline options). A run counts as a success when it measured memory or step time.

Headroom and a measurement: the headroom (default 10%) is the margin for the estimate's error and
is kept on every estimate, calibrated or not. A measured run of the same setup has no such error:
it fits whatever the estimate says, and shows the measurement and its date; when the measurement
itself leaves less than the headroom free, a note says so.
"""

from __future__ import annotations

import json
import os

from trainplan.frozen import fields, frozen, replace
from trainplan.ledger.paths import db_url, ledger_configured, redact, sqlite_file

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

VIEWS = (("device_bytes", "device"), ("peak_reserved_bytes", "reserved"), ("peak_allocated_bytes", "allocated"))


@frozen
class RecordedRun:
    """A run of the ledger that trained the setup asked about."""

    run_id: str
    created_at: str             # ISO 8601 as stored
    source: str
    memory_bytes: int | None    # measured per GPU, in `view`; None when only time was measured
    view: str                   # device | reserved | allocated | ""
    step_s: float | None = None
    ledger: str = ""            # the (redacted) database URL

    @property
    def date(self) -> str:
        return self.created_at[:10]

    def describe(self) -> str:
        mem = f" at {self.memory_bytes / 2**30:.1f} GiB per GPU ({self.view} view)" if self.memory_bytes else ""
        return f"ran{mem} on {self.date} (ledger run {self.run_id}, source {self.source})"

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "created_at": self.created_at, "date": self.date, "source": self.source,
                "memory_bytes": self.memory_bytes, "view": self.view, "step_s": self.step_s, "ledger": self.ledger}


def memory_key(setup: Any, layout: Any, *, zero: Any = None, fsdp: Any = None, parallel: Any = None) -> tuple:
    """What decides memory per GPU (module docstring), as a hashable key."""
    accum = setup.grad_accum if layout.pp > 1 else min(setup.grad_accum, 2)
    spec = setup.model
    model = (spec.name.lower(), spec.num_layers, spec.hidden_size, spec.intermediate_size, spec.vocab_size)
    attention = "flash" if str(setup.attention) in _SAME_TENSORS else str(setup.attention)
    rest = tuple(getattr(setup, f.name) for f in fields(setup) if f.name not in ("model", "grad_accum", "attention"))
    return (model, accum, attention, rest, layout, zero, fsdp, parallel)


# flash and sdpa keep the same tensors in trainplan's memory model (planner/request.py searches flash
# for both); eager keeps the s x s softmax and is its own setup
_SAME_TENSORS = frozenset({"flash", "sdpa"})


def _measured(measured: dict) -> tuple[int | None, str, float | None]:
    step = measured.get("step_s")
    step = float(step) if isinstance(step, int | float) and not isinstance(step, bool) and step > 0 else None
    for key, view in VIEWS:
        value = measured.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return int(value), view, step
    return None, "", step


def _options(setup: dict) -> Any:
    """The JobOptions of a run's recorded setup (its flags), or None when they no longer resolve."""
    from trainplan.job.options import BOOKKEEPING, OPTION_NAMES, JobOptions

    values = {k: v for k, v in setup.items() if k in OPTION_NAMES and k not in BOOKKEEPING}
    for key, value in values.items():
        if isinstance(value, list):
            values[key] = tuple(value)
    if not values.get("model"):
        return None
    try:
        return JobOptions(**values)
    except (TypeError, ValueError):
        return None


def key_of_setup(setup: dict) -> tuple | None:
    """The memory_key of a run's recorded setup, resolved as `trainplan estimate` resolves its flags
    (no price, no calibration); None when it does not resolve any more (a model since removed...)."""
    from trainplan.job.resolve import (
        build_fsdp,
        build_layout,
        build_parallel,
        build_setup,
        build_zero,
        resolve_gpu,
        resolve_model,
    )

    options = _options(setup)
    if options is None:
        return None
    try:
        spec = resolve_model(options.model)
        s = build_setup(options, spec)
        layout = build_layout(options, resolve_gpu(options.gpu))
        return memory_key(s, layout, zero=build_zero(options, spec), fsdp=build_fsdp(options, s.framework),
                          parallel=build_parallel(options))
    except (ValueError, TypeError, KeyError, AttributeError):     # TrainplanError is a ValueError
        return None


# --- reading the ledger ------------------------------------------------------------------------------

def _sqlite_rows(path: str, model: str) -> list[dict]:
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        cur = con.execute("SELECT id, created_at, source, setup, measured FROM runs WHERE lower(model) = ? "
                          "ORDER BY created_at DESC, id DESC", (model,))
        rows = []
        for run_id, created, source, setup, measured in cur:
            try:
                rows.append({"id": run_id, "created_at": str(created), "source": str(source),
                             "setup": json.loads(setup), "measured": json.loads(measured)})
            except (TypeError, ValueError):
                continue
        return rows
    finally:
        con.close()


def _server_rows(url: str, model: str) -> list[dict]:
    from sqlalchemy import create_engine

    from trainplan.ledger.store import read_runs

    engine = create_engine(url, connect_args={"connect_timeout": 5} if url.startswith("postgresql") else {})
    try:
        rows = read_runs(engine, model=model).rows
    finally:
        engine.dispose()
    return [{**r, "created_at": str(r["created_at"])} for r in rows if str(r.get("model", "")).lower() == model]


def read_rows(url: str, model: str) -> list[dict]:
    """The ledger's runs of `model` (id, created_at, source, setup, measured), newest first, read
    without creating, migrating or flushing anything; [] when the ledger cannot be read."""
    path = sqlite_file(url)
    try:
        if path is not None:
            return _sqlite_rows(path, model) if os.path.isfile(path) else []
        if url.startswith("sqlite"):
            return []
        return _server_rows(url, model)
    except Exception:  # noqa: BLE001 - a ledger that cannot be read now proves nothing and stops nothing
        return []


class RecordedRuns:
    """The successes of one ledger, read lazily per model and cached (module docstring)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._by_model: dict[str, tuple[Any, dict[tuple, RecordedRun]]] = {}

    def _stamp(self) -> Any:
        path = sqlite_file(self.url)
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return -1
        wal = path + "-wal"
        return (st.st_mtime_ns, st.st_size, os.stat(wal).st_mtime_ns if os.path.exists(wal) else 0)

    def runs_of(self, model: str) -> dict[tuple, RecordedRun]:
        """memory_key -> the newest successful run of that setup, for `model` (a catalog name)."""
        model = model.lower()
        stamp = self._stamp()
        hit = self._by_model.get(model)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        out: dict[tuple, RecordedRun] = {}
        if stamp != -1:
            for row in read_rows(self.url, model):
                memory, view, step = _measured(row.get("measured") or {})
                if memory is None and step is None:
                    continue
                key = key_of_setup(row.get("setup") or {})
                if key is None or key in out:
                    continue
                out[key] = RecordedRun(run_id=str(row["id"]), created_at=row["created_at"], source=row["source"],
                                       memory_bytes=memory, view=view, step_s=step, ledger=redact(self.url))
        self._by_model[model] = (stamp, out)
        return out

    def success_for(self, setup: Any, layout: Any, *, zero: Any = None, fsdp: Any = None,
                    parallel: Any = None) -> RecordedRun | None:
        runs = self.runs_of(setup.model.name)
        if not runs:
            return None
        return runs.get(memory_key(setup, layout, zero=zero, fsdp=fsdp, parallel=parallel))


_LEDGERS: dict[str, RecordedRuns] = {}


def recorded_runs(db: str | None = None) -> RecordedRuns | None:
    """The successes of the configured ledger (--db, $TRAINPLAN_DB, else the default file when it
    exists); None when no ledger is configured. One per database per process."""
    if not ledger_configured(db):
        return None
    url = db_url(db)
    ledger = _LEDGERS.get(url)
    if ledger is None:
        ledger = _LEDGERS[url] = RecordedRuns(url)
    return ledger


def success_for(job: Any, db: str | None = None) -> RecordedRun | None:
    """The newest recorded success of `job`'s setup on its layout (memory_key), None when there is
    none or no ledger is configured. Uses the job's own handle (resolve_job) when it has one."""
    ledger = getattr(job, "recorded", None) or recorded_runs(db)
    if ledger is None:
        return None
    return ledger.success_for(job.setup, job.layout, zero=job.zero, fsdp=job.fsdp, parallel=job.parallel)


def with_measurement(memory: Any, run: RecordedRun) -> tuple[Any, str]:
    """(MemoryEstimate that fits by `run`'s measurement, the note saying so). The estimate's figures
    stay; only the verdict follows the measurement (module docstring: headroom and a measurement)."""
    out = replace(memory, measured=run)
    over = memory.device_bytes > memory.usable_bytes
    note = (f"measured: this setup {run.describe()}, so it fits"
            + (f" although the estimate ({memory.device_bytes / 2**30:.1f} GiB) is over the usable "
               f"{memory.usable_bytes / 2**30:.1f} GiB (capacity x (1 - headroom {memory.headroom:g})): the headroom "
               "is a margin for the estimate's error, not applied to a measurement of the same setup" if over else ""))
    if run.memory_bytes and run.view == "device" and run.memory_bytes > memory.usable_bytes:
        free = memory.gpu_capacity_bytes - run.memory_bytes
        note += (f"; the run left {max(free, 0) / 2**30:.1f} GiB free, under the {memory.headroom:.0%} headroom: a "
                 "longer sample or fragmentation could run it out of memory")
    return out, note
