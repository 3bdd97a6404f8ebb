"""Where the ledger keeps its files: standard library only and no pathlib (imported by `trainplan
estimate`, which looks up the calibration file); paths are returned as strings.

- data directory: $TRAINPLAN_DATA_DIR, else the user data directory (platformdirs when installed,
  else $XDG_DATA_HOME/trainplan or ~/.local/share/trainplan, which is what platformdirs gives on
  Linux)
- database: --db, else $TRAINPLAN_DB, else sqlite:///<data dir>/ledger.sqlite; a plain file path
  and a relative SQLite path are made absolute against the working directory (so the URL names one
  database wherever it is used later, e.g. by a spool flush run from another directory)
- calibration: --calibration / $TRAINPLAN_CALIBRATION, else <data dir>/calibration.json
- spool: <data dir>/spool.jsonl (runs that could not reach their database); entries that can never
  be written are moved to <data dir>/spool-set-aside.jsonl
"""

from __future__ import annotations

import os
import re

from trainplan.settings import user_dir

DB_ENV = "TRAINPLAN_DB"
DATA_DIR_ENV = "TRAINPLAN_DATA_DIR"
CALIBRATION_ENV = "TRAINPLAN_CALIBRATION"


def data_dir() -> str:
    """The user data directory (not created here): settings.user_dir's rule for "data"."""
    return user_dir("data", DATA_DIR_ENV)


def default_db_url() -> str:
    return f"sqlite:///{os.path.join(data_dir(), 'ledger.sqlite')}"


def db_url(given: str | None = None) -> str:
    """--db, else $TRAINPLAN_DB, else the SQLite file in the data directory. postgresql:// and
    postgres:// URLs use psycopg 3 (the driver the 'ledger' extra installs). A plain path (no "://")
    is an SQLite file; SQLite paths are made absolute against the current directory."""
    url = given or os.environ.get(DB_ENV) or default_db_url()
    if "\0" in url:
        from trainplan.errors import TrainplanError

        raise TrainplanError(f"--db / ${DB_ENV} {url!r}: a database location cannot hold a NUL character")
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    if "://" not in url:
        return "sqlite:///" + os.path.abspath(os.path.expanduser(url))
    match = _SQLITE_FILE.match(url)
    if match:
        path, query = match.group(2), match.group(3) or ""
        if path and path != ":memory:" and not path.startswith("file:") and not os.path.isabs(path):
            return f"{match.group(1)}:///{os.path.abspath(path)}{query}"
    return url


_SQLITE_FILE = re.compile(r"^(sqlite(?:\+\w+)?):///([^?]*)(\?.*)?$")


def is_in_memory(url: str) -> bool:
    """True for SQLite URLs whose database lives in the process only (`sqlite://`,
    `sqlite:///:memory:`, a `mode=memory` URI): what is written there is gone at exit."""
    if not url.startswith("sqlite"):
        return False
    _scheme, sep, rest = url.partition("://")
    path = rest.removeprefix("/").split("?", 1)[0]
    return not sep or path in ("", ":memory:") or "mode=memory" in url or path.startswith("file::memory:")


def redact(url: str) -> str:
    """The URL without its password, for messages and the spool."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def calibration_path(given: str | None = None) -> str:
    return os.path.expanduser(given or os.environ.get(CALIBRATION_ENV) or os.path.join(data_dir(), "calibration.json"))


def spool_path() -> str:
    return os.path.join(data_dir(), "spool.jsonl")
