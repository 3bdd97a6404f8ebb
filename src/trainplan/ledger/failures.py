"""Which ledger failures may pass by themselves (the only ones a recorder spools) and which will
not, as one-line errors.

Transient (LedgerUnavailable): an unreachable server, a timeout, a lock held beyond the busy
timeout, an SQLite file whose directory is not there (yet), a dropped connection. Permanent
(TrainplanError): a bad URL, a file that is not a database, a schema this trainplan cannot use,
a failed authentication, a missing database, a row the database refuses.
"""

from __future__ import annotations

from trainplan.errors import TrainplanError
from trainplan.ledger.paths import redact


def one_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class LedgerUnavailable(TrainplanError):
    """The database cannot be reached now (a transient failure): the one failure that spools."""


# Driver messages of failures that may pass: the server or file is not reachable now. Matched in
# lower case; PERMANENT wins (psycopg says "connection failed" before an authentication failure too).
TRANSIENT = ("connection refused", "could not connect", "timeout expired", "timed out", "could not translate host",
             "no route to host", "network is unreachable", "connection reset", "server closed the connection",
             "terminating connection", "the database system is starting up", "the database system is shutting down",
             "too many connections", "database is locked", "unable to open database file", "disk i/o error",
             "connection not open", "ssl syscall error")
PERMANENT = ("authentication failed", "does not exist", "no pg_hba.conf entry", "permission denied",
             "not a database", "no such table", "no such column", "has no column")


def is_transient(exc: BaseException) -> bool:
    """True for a failure that may pass by itself (see TRANSIENT); False for one that will not."""
    try:
        from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
        from sqlalchemy.exc import TimeoutError as PoolTimeout
    except ImportError:                      # pragma: no cover - without SQLAlchemy nothing is reachable
        return False
    if isinstance(exc, LedgerUnavailable | PoolTimeout | DisconnectionError):
        return True
    text = str(getattr(exc, "orig", None) or exc).lower()
    if any(p in text for p in PERMANENT):
        return False
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, OperationalError) and any(p in text for p in TRANSIENT)


def ledger_error(exc: BaseException, url: str, *, reading: bool = False) -> TrainplanError:
    """The one-line error for a database failure: LedgerUnavailable when transient."""
    if isinstance(exc, TrainplanError):
        return exc
    if is_transient(exc):
        return LedgerUnavailable(f"cannot reach the ledger database {redact(url)}: {one_line(exc)}")
    if reading:
        return TrainplanError(f"the ledger database {redact(url)} cannot be read: {one_line(exc)}")
    return TrainplanError(f"the ledger database {redact(url)} refused the write: {one_line(exc)}; "
                          "nothing was written")
