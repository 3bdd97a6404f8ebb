"""Where the ledger keeps its files: standard library only and no pathlib (imported by `trainplan
estimate`, which looks up the calibration file); paths are returned as strings.

- data directory: $TRAINPLAN_DATA_DIR, else the user data directory (platformdirs when installed,
  else $XDG_DATA_HOME/trainplan or ~/.local/share/trainplan, which is what platformdirs gives on
  Linux)
- database: --db, else $TRAINPLAN_DB, else sqlite:///<data dir>/ledger.sqlite; a plain file path
  and a relative SQLite path are made absolute against the working directory (so the URL names one
  database wherever it is used later, e.g. by a spool flush run from another directory)
- calibration: `calibrate --out` / $TRAINPLAN_CALIBRATION (one file, whatever the ledger), else one
  file per ledger, keyed by the database's absolute URL: <data dir>/calibrations/<name>-<crc32>.json,
  so that a calibration fitted from a scratch ledger never replaces the team's. The single
  <data dir>/calibration.json of older trainplans is read for the ledger it was fitted from (its
  provenance names it) until `calibrate` writes that ledger's own file
- spool: <data dir>/spool.jsonl (runs that could not reach their database); entries that can never
  be written are moved to <data dir>/spool-set-aside.jsonl
"""

from __future__ import annotations

import os

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
    parts = _sqlite_parts(url)
    if parts:
        scheme, path, query = parts
        if path and path != ":memory:" and not path.startswith("file:") and not os.path.isabs(path):
            return f"{scheme}:///{os.path.abspath(path)}{query}"
    return url


def _sqlite_parts(url: str) -> tuple[str, str, str] | None:
    r"""(scheme, path, query) of `sqlite[+driver]:///path[?query]`, None for other URLs: the regex
    ^(sqlite(?:\+\w+)?):///([^?]*)(\?.*)?$ read with str methods (a regex compiled at import cost
    80 us of every one-shot command; tests/test_ledger_paths.py holds the two equal)."""
    scheme, sep, rest = url.partition(":///")
    driver = scheme[len("sqlite+"):]
    if not sep or not (scheme == "sqlite" or (scheme.startswith("sqlite+") and _word(driver))):
        return None
    path, mark, query = rest.partition("?")
    if mark:
        body = query[:-1] if query.endswith("\n") else query      # `$` also matches before a final newline
        if "\n" in body:
            return None
        return scheme, path, "?" + body
    return scheme, path, ""


def _word(text: str) -> bool:
    r"""`text` matches \w+ (letters, digits and _ of any script)."""
    return bool(text) and all(c == "_" or c.isalnum() for c in text)


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
    out, rest = [], url        # re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url) with str methods
    while True:
        i = rest.find("://")
        if i < 0:
            return "".join(out) + rest
        j = i + 3
        k = j
        while k < len(rest) and rest[k] not in ":/@":
            k += 1
        at = rest.find("@", k + 1) if k > j and k < len(rest) and rest[k] == ":" else -1
        if at < 0:            # no user:password@ here: keep the text and look after this '://'
            out.append(rest[:i + 1])
            rest = rest[i + 1:]
            continue
        out.append(rest[:k] + ":***@")
        rest = rest[at + 1:]


def explicit_calibration_path(given: str | None = None) -> str | None:
    """The one calibration file named by `given` (calibrate --out) or $TRAINPLAN_CALIBRATION, else None."""
    explicit = given or os.environ.get(CALIBRATION_ENV)
    return os.path.expanduser(explicit) if explicit else None


def calibration_file_name(url: str) -> str:
    """The file name of a ledger's calibration: a readable tail of its (redacted, absolute) URL and the
    CRC-32 of the whole URL (zlib: already loaded on the estimate path, unlike hashlib)."""
    import zlib

    key = redact(url)
    tail = _safe_name(key.rsplit("/", 1)[-1] or key)[-40:].strip("._") or "ledger"
    return f"{tail}-{zlib.crc32(key.encode()):08x}.json"


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _safe_name(text: str) -> str:
    """`text` with each run of characters outside [A-Za-z0-9._-] replaced by one '_'."""
    out = []
    for c in text:
        if c in _NAME_CHARS:
            out.append(c)
        elif not out or out[-1] != "\0":
            out.append("\0")
    return "".join(out).replace("\0", "_")


def calibration_path(given: str | None = None, db: str | None = None) -> str:
    """The calibration file of the ledger `db` (--db, else $TRAINPLAN_DB, else the default database),
    unless one file is named (`given`, $TRAINPLAN_CALIBRATION)."""
    return explicit_calibration_path(given) or os.path.join(data_dir(), "calibrations",
                                                            calibration_file_name(db_url(db)))


def legacy_calibration_path() -> str:
    """The single calibration file older trainplans wrote, whatever ledger it came from."""
    return os.path.join(data_dir(), "calibration.json")


def ledger_configured(given: str | None = None) -> bool:
    """True when a ledger is named (--db, $TRAINPLAN_DB) or the default SQLite file exists: recorded
    runs are looked up only then (never creating a database)."""
    return bool(given or os.environ.get(DB_ENV)) or os.path.exists(os.path.join(data_dir(), "ledger.sqlite"))


def sqlite_file(url: str) -> str | None:
    """The file of an SQLite URL (absolute, as db_url gives it); None for other databases and
    in-memory ones."""
    parts = _sqlite_parts(url)
    if not parts or is_in_memory(url) or parts[1].startswith("file:"):
        return None
    return parts[1]


def spool_path() -> str:
    return os.path.join(data_dir(), "spool.jsonl")
