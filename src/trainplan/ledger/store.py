"""The ledger database: engines, migrations on first use, inserts that skip duplicates, queries.

Concurrency: every write is one transaction; a run's fingerprint is unique, and inserts use
INSERT ... ON CONFLICT DO NOTHING (SQLite, PostgreSQL), so concurrent writers of the same run
store it once. SQLite runs in WAL mode with a busy timeout, and its transactions begin with
BEGIN IMMEDIATE so that writers queue instead of failing on a lock upgrade. A writer killed in the
middle of a transaction leaves nothing behind: SQLite rolls the journal back, PostgreSQL aborts
the transaction of a closed connection.
"""

from __future__ import annotations

import datetime as _dt
import warnings
from pathlib import Path
from typing import Any, Iterable

from trainplan import __version__
from trainplan.errors import TrainplanError
from trainplan.ledger import spool
from trainplan.ledger.paths import db_url, default_db_url, redact
from trainplan.ledger.records import MEASURE_KEYS, RunRecord, now_iso

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
HEAD = "0001_runs"
SQLITE_BUSY_MS = 60_000
PG_CONNECT_TIMEOUT_S = 5

_ENGINES: dict[str, Any] = {}


def _sqlite_events(engine) -> None:
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):   # pragma: no cover - exercised through every SQLite use
        dbapi_conn.isolation_level = None    # trainplan emits BEGIN itself (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):                     # pragma: no cover
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def engine_for(url: str | None = None):
    """A migrated engine for `url` (--db / $TRAINPLAN_DB / the default SQLite file), cached per
    process. TrainplanError with one line when the database cannot be reached."""
    url = db_url(url)
    if url in _ENGINES:
        return _ENGINES[url]
    try:
        from sqlalchemy import create_engine
        from sqlalchemy.exc import ArgumentError, SQLAlchemyError
    except ImportError:
        raise TrainplanError("the ledger needs the 'ledger' extra: pip install 'trainplan[ledger]'") from None
    kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        if url == default_db_url():           # the data directory is ours to create; a --db path is not
            Path(url.split("///", 1)[1]).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_MS / 1000}
    elif url.startswith("postgresql"):
        kwargs["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT_S}
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except (ArgumentError, ImportError, ValueError) as exc:
        raise TrainplanError(f"ledger database URL {redact(url)!r} is not usable: {_one_line(exc)}") from None
    if engine.dialect.name == "sqlite":
        _sqlite_events(engine)
    from alembic.util import CommandError

    try:
        migrate(engine)
    except SQLAlchemyError as exc:
        engine.dispose()
        raise TrainplanError(f"cannot reach the ledger database {redact(url)}: {_one_line(exc)}") from None
    except CommandError as exc:                # e.g. a schema newer than this trainplan knows
        engine.dispose()
        raise TrainplanError(f"ledger database {redact(url)} has a schema this trainplan cannot use "
                             f"(its head is {HEAD}): {_one_line(exc)}") from None
    _ENGINES[url] = engine
    _flush_spool(engine, url)
    return engine


def _flush_spool(engine, url: str) -> None:
    """Runs spooled for this database while it was unreachable: written now (never fatal)."""
    try:
        spool.flush(url, lambda records: add_runs(engine, records)[0])
    except Exception as exc:
        warnings.warn(f"trainplan: spooled runs not written yet: {exc}", RuntimeWarning, stacklevel=3)


def current_revision(engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def migrate(engine) -> None:
    """Alembic `upgrade head`, unless the database is already there."""
    if current_revision(engine) == HEAD:
        return
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def dispose_all() -> None:
    for engine in _ENGINES.values():
        engine.dispose()
    _ENGINES.clear()


_LENGTHS = {"model": 200, "method": 20, "precision": 20, "optimizer": 40, "framework": 40, "gpu": 80,
            "grad_ckpt": 20, "fsdp": 20, "external_id": 300}


def _row(rec: RunRecord) -> dict[str, Any]:
    created = _dt.datetime.fromisoformat(rec.created_at or now_iso())
    est = rec.estimate or {}
    row = {"fingerprint": rec.fingerprint, "created_at": created, "source": rec.source,
           "external_id": rec.external_id, "trainplan_version": __version__, **rec.index(),
           "setup": rec.setup, "environment": rec.environment, "measured": rec.measured,
           "estimate": rec.estimate, "raw": rec.raw, "notes": rec.notes}
    for key, length in _LENGTHS.items():
        if isinstance(row.get(key), str):
            row[key] = row[key][:length]
    for key in MEASURE_KEYS:
        row[f"meas_{key}"] = rec.measured.get(key)
        row[f"est_{key}"] = est.get(key)
    for key in ("peak_allocated_bytes", "peak_reserved_bytes", "device_bytes"):
        for prefix in ("meas_", "est_"):
            if row[prefix + key] is not None:
                row[prefix + key] = int(row[prefix + key])
    return row


def _insert(conn, row: dict[str, Any]) -> bool:
    """Insert one row unless its fingerprint is there; True if inserted."""
    from trainplan.ledger.schema import runs

    name = conn.dialect.name
    if name in ("sqlite", "postgresql"):
        if name == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            from sqlalchemy.dialects.postgresql import insert
        stmt = insert(runs).values(**row).on_conflict_do_nothing(index_elements=["fingerprint"]).returning(runs.c.id)
        return conn.execute(stmt).first() is not None
    from sqlalchemy import select
    from sqlalchemy.exc import IntegrityError

    if conn.execute(select(runs.c.id).where(runs.c.fingerprint == row["fingerprint"])).first():
        return False
    try:
        with conn.begin_nested():
            conn.execute(runs.insert().values(**row))
    except IntegrityError:
        return False
    return True


def add_runs(engine, records: Iterable[RunRecord]) -> tuple[int, int]:
    """Write `records` in one transaction: (added, already present). All or nothing."""
    rows = [_row(r) for r in records]
    added = 0
    with engine.begin() as conn:
        for row in rows:
            added += _insert(conn, row)
    return added, len(rows) - added


def count_runs(engine) -> int:
    from sqlalchemy import func, select

    from trainplan.ledger.schema import runs

    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(runs)).scalar_one())


FILTERS = ("model", "method", "framework", "gpu", "source", "precision")


def query_runs(engine, *, limit: int | None = None, **filters: str | None) -> list[dict[str, Any]]:
    """Runs as dicts (every column), newest first; filters match case-insensitively, `model`
    and `source` as substrings."""
    from sqlalchemy import func, select

    from trainplan.ledger.schema import runs

    stmt = select(runs).order_by(runs.c.created_at.desc(), runs.c.id.desc())
    for key, value in filters.items():
        if value is None:
            continue
        if key not in FILTERS:
            raise TrainplanError(f"unknown filter {key!r}; known: {', '.join(FILTERS)}")
        column = func.lower(runs.c[key])
        stmt = stmt.where(column.contains(value.lower()) if key in ("model", "source") else column == value.lower())
    if limit:
        stmt = stmt.limit(limit)
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(stmt)]
