"""Where the ledger keeps its files: standard library only and no pathlib (imported by `trainplan
estimate`, which looks up the calibration file); paths are returned as strings.

- data directory: $TRAINPLAN_DATA_DIR, else the user data directory (platformdirs when installed,
  else $XDG_DATA_HOME/trainplan or ~/.local/share/trainplan, which is what platformdirs gives on
  Linux)
- database: --db, else $TRAINPLAN_DB, else sqlite:///<data dir>/ledger.sqlite
- calibration: --calibration / $TRAINPLAN_CALIBRATION, else <data dir>/calibration.json
- spool: <data dir>/spool.jsonl (runs that could not reach their database)
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
    postgres:// URLs use psycopg 3 (the driver the 'ledger' extra installs)."""
    url = given or os.environ.get(DB_ENV) or default_db_url()
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def redact(url: str) -> str:
    """The URL without its password, for messages and the spool."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


def calibration_path(given: str | None = None) -> str:
    return os.path.expanduser(given or os.environ.get(CALIBRATION_ENV) or os.path.join(data_dir(), "calibration.json"))


def spool_path() -> str:
    return os.path.join(data_dir(), "spool.jsonl")
