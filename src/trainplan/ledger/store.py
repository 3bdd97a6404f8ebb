"""The ledger database: engines, migrations on first use, inserts that skip duplicates, queries.

Concurrency: every write is one transaction; a run's fingerprint is unique, and inserts use
INSERT ... ON CONFLICT DO NOTHING (SQLite, PostgreSQL), so concurrent writers of the same run
store it once. SQLite runs in WAL mode with a busy timeout, and its transactions begin with
BEGIN IMMEDIATE so that writers queue instead of failing on a lock upgrade. A writer killed in the
middle of a transaction leaves nothing behind: SQLite rolls the journal back, PostgreSQL aborts
the transaction of a closed connection.

Failures are sorted by ledger.failures: LedgerUnavailable (transient: the one kind recorders
spool) or TrainplanError (permanent: nothing written, nothing spooled).
Reading tolerates bad rows: read_runs reports a row it cannot decode (a malformed created_at, a
value of the wrong type) by id and returns the others.
"""

from __future__ import annotations

import datetime as _dt
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trainplan import __version__
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.ledger import spool
from trainplan.ledger.failures import LedgerUnavailable, is_transient, ledger_error
from trainplan.ledger.failures import one_line as _one_line
from trainplan.ledger.paths import db_url, default_db_url, is_in_memory, redact
from trainplan.ledger.records import MEASURE_KEYS, RunRecord, check_created_at, now_iso

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
HEAD = "0002_case_identity"
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
        _enter_wal(cur)
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):                     # pragma: no cover
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _enter_wal(cur) -> None:
    """PRAGMA journal_mode=WAL, retried for up to the busy timeout. Leaving the rollback journal
    takes the exclusive lock from inside the pragma's own read transaction, and SQLite returns
    "database is locked" at once there instead of calling the busy handler (it would deadlock
    with another writer's reserved lock: sqlite.org/c3ref/busy_handler.html), so several first
    uses of a new file at once need this loop; once the file is in WAL mode the pragma takes no lock."""
    import sqlite3
    import time

    deadline_s = time.monotonic() + SQLITE_BUSY_MS / 1000
    wait_s = 0.005
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + wait_s > deadline_s:
                raise
        time.sleep(wait_s)
        wait_s = min(wait_s * 2, 0.2)


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
        if url == db_url(default_db_url()):   # the data directory is ours to create; a --db path is not
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
        if is_transient(exc):
            raise LedgerUnavailable(f"cannot reach the ledger database {redact(url)}: {_one_line(exc)}") from None
        raise TrainplanError(f"the ledger database {redact(url)} is not usable: {_one_line(exc)}") from None
    except CommandError as exc:                # e.g. a schema newer than this trainplan knows
        engine.dispose()
        raise TrainplanError(f"ledger database {redact(url)} has a schema this trainplan cannot use "
                             f"(its head is {HEAD}): {_one_line(exc)}") from None
    _ENGINES[url] = engine
    if not is_in_memory(url):
        _flush_spool(engine, url)
    return engine


def _flush_spool(engine, url: str) -> spool.FlushResult:
    """Runs spooled for this database while it was unreachable: written now, one by one; each one
    the database refuses is set aside with one line on stderr (never fatal, never a Python warning)."""
    def write(record: RunRecord) -> None:
        add_runs(engine, [record], url=url)

    try:
        result = spool.flush(url, write, transient=LedgerUnavailable)
    except OSError as exc:                     # the spool file itself is unreadable: say so, go on
        print(f"trainplan: the spool was not read: {exc.strerror or exc}", file=sys.stderr)
        return spool.FlushResult()
    if result.written:
        print(f"trainplan: {result.written} spooled run(s) written to the ledger {redact(url)}", file=sys.stderr)
    for reason in result.set_aside:
        print(f"trainplan: a spooled run was set aside ({reason}); kept in {result.set_aside_file}", file=sys.stderr)
    return result


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
    created = _dt.datetime.fromisoformat(check_created_at(rec.created_at) or now_iso())
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


def _update_free_text(conn, row: dict[str, Any]) -> bool:
    """The stored run of `row`'s fingerprint takes `row`'s notes and raw case (free text, outside the
    fingerprint) where they differ; True if updated."""
    from sqlalchemy import select

    from trainplan.ledger.schema import runs

    stored = conn.execute(select(runs.c.id, runs.c.notes, runs.c.raw)
                          .where(runs.c.fingerprint == row["fingerprint"])).first()
    if stored is None or (stored.notes == row["notes"] and stored.raw == row["raw"]):
        return False
    conn.execute(runs.update().where(runs.c.id == stored.id).values(notes=row["notes"], raw=row["raw"]))
    return True


@frozen
class WriteCounts:
    added: int = 0
    present: int = 0        # already there (updated ones included)
    updated: int = 0        # already there, notes or raw case text updated


def write_runs(engine, records: Iterable[RunRecord], *, url: str | None = None) -> WriteCounts:
    """Write `records` in one transaction, all or nothing. A failure is ledger_error's: LedgerUnavailable
    when transient, else TrainplanError."""
    from sqlalchemy.exc import SQLAlchemyError

    rows = [_row(r) for r in records]
    added = updated = 0
    try:
        with engine.begin() as conn:
            for row in rows:
                if _insert(conn, row):
                    added += 1
                else:
                    updated += _update_free_text(conn, row)
    except SQLAlchemyError as exc:
        raise ledger_error(exc, url or engine.url.render_as_string(hide_password=True)) from None
    return WriteCounts(added=added, present=len(rows) - added, updated=updated)


def add_runs(engine, records: Iterable[RunRecord], *, url: str | None = None) -> tuple[int, int]:
    """Write `records` in one transaction: (added, already present). All or nothing."""
    counts = write_runs(engine, records, url=url)
    return counts.added, counts.present


def count_runs(engine) -> int:
    from sqlalchemy import func, select

    from trainplan.ledger.schema import runs

    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(runs)).scalar_one())


FILTERS = ("model", "method", "framework", "gpu", "source", "precision")


@frozen
class ReadResult:
    rows: tuple[dict[str, Any], ...]
    unreadable: tuple[dict[str, Any], ...] = ()   # {"id": ..., "reason": ...} per row that could not be decoded


def _check_value(column, value: Any) -> Any:
    """`value` read from `column`, or TypeError/ValueError saying what is wrong with it."""
    from sqlalchemy import JSON, DateTime, Float, Integer, String

    kind = column.type
    if value is None:
        if not column.nullable or column.name in ("setup", "environment", "measured"):
            raise ValueError(f"{column.name} is empty")
        return None
    if isinstance(kind, DateTime):
        if isinstance(value, str):
            value = _dt.datetime.fromisoformat(value)
        if not isinstance(value, _dt.datetime):
            raise TypeError(f"{column.name} {value!r} is not a date-time")
    elif isinstance(kind, Integer):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{column.name} {value!r} is not an integer")
    elif isinstance(kind, Float):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{column.name} {value!r} is not a finite number")
        value = float(value)
    elif isinstance(kind, JSON):
        if not isinstance(value, dict):
            raise TypeError(f"{column.name} is not a JSON object")
    elif isinstance(kind, String) and not isinstance(value, str):
        raise TypeError(f"{column.name} {value!r} is not text")
    return value


def _checked(columns, mapping: Any) -> dict[str, Any]:
    return {c.name: _check_value(c, mapping[c.name]) for c in columns}


def _one_row(conn, table, run_id: Any) -> dict[str, Any]:
    """One row by id, decoded by SQLAlchemy and checked; ValueError saying what is wrong."""
    from sqlalchemy import select, type_coerce
    from sqlalchemy.exc import DBAPIError
    from sqlalchemy.types import NullType

    try:
        row = conn.execute(select(table).where(table.c.id == run_id)).one()
    except DBAPIError:
        raise
    except Exception as exc:                 # a value the column type cannot decode: which column?
        for column in table.c:
            try:
                conn.execute(select(column).where(table.c.id == run_id)).scalar()
            except DBAPIError:
                raise
            except Exception:
                raw = conn.execute(select(type_coerce(column, NullType())).where(table.c.id == run_id)).scalar()
                raise ValueError(f"{column.name} {raw!r} cannot be read ({_one_line(exc)})") from None
        raise ValueError(f"a value cannot be decoded ({_one_line(exc)})") from None
    return _checked(table.c, row._mapping)


def read_runs(engine, *, limit: int | None = None, **filters: str | None) -> ReadResult:
    """Runs as dicts (every column), newest first; filters match case-insensitively, `model`
    and `source` as substrings. A row that cannot be decoded (a malformed created_at, a value of
    the wrong type) is listed in `unreadable` with its id; the others are read."""
    from sqlalchemy import func, select
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

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
    rows, unreadable = [], []
    try:
        with engine.connect() as conn:
            try:
                fetched = [r._mapping for r in conn.execute(stmt)]
            except DBAPIError:
                raise
            except Exception:                # a row SQLAlchemy cannot decode: read them one by one
                fetched = None
            if fetched is not None:
                for mapping in fetched:
                    try:
                        rows.append(_checked(runs.c, mapping))
                    except (TypeError, ValueError) as exc:
                        unreadable.append({"id": mapping["id"], "reason": str(exc)})
            else:
                ids = [r.id for r in conn.execute(stmt.with_only_columns(runs.c.id))]
                for run_id in ids:
                    try:
                        rows.append(_one_row(conn, runs, run_id))
                    except (TypeError, ValueError) as exc:
                        unreadable.append({"id": run_id, "reason": str(exc)})
    except SQLAlchemyError as exc:
        raise ledger_error(exc, engine.url.render_as_string(hide_password=True), reading=True) from None
    return ReadResult(rows=tuple(rows), unreadable=tuple(unreadable))


def query_runs(engine, *, limit: int | None = None, **filters: str | None) -> list[dict[str, Any]]:
    """The readable runs of read_runs (the unreadable ones left out)."""
    return list(read_runs(engine, limit=limit, **filters).rows)
