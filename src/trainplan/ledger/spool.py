"""Runs that could not reach their database wait in a JSONL file in the data directory and are
written on the next successful connection to that database.

Each line: {"db": <absolute, redacted URL>, "run": <RunRecord JSON>}. Only transient failures
spool (the store decides which); the URL is absolute (paths.db_url), so a flush from any directory
writes into the database the run was recorded for. Appends and flushes hold an exclusive lock on
the file (fcntl, where available), so concurrent recorders do not interleave lines.

A flush hands the entries of its database to `write` one at a time: a written entry (or one found
there already) leaves the spool; a transient failure keeps it and the ones after it for later; an
entry that can never be written (not valid JSON, not a run, refused by the database) is moved to
the set-aside file with its reason, so it never blocks the entries behind it.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from trainplan.frozen import frozen
from trainplan.ledger.paths import data_dir, redact, spool_path
from trainplan.ledger.records import RunRecord, now_iso

SET_ASIDE_NAME = "spool-set-aside.jsonl"


def set_aside_path(path: Path | str | None = None) -> Path:
    """The set-aside file next to the spool `path` (default: in the data directory)."""
    return Path(path).with_name(SET_ASIDE_NAME) if path else Path(data_dir()) / SET_ASIDE_NAME


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        try:
            import fcntl
        except ImportError:              # pragma: no cover - Windows: no lock, appends are still line-sized
            yield
            return
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _append_lines(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
        f.flush()
        os.fsync(f.fileno())


def append(url: str, records: list[RunRecord], path: Path | None = None) -> Path:
    """Add `records` for database `url` (absolute: paths.db_url) to the spool; returns its path."""
    path = Path(path or spool_path())
    with _locked(path):
        _append_lines(path, [json.dumps({"db": redact(url), "run": rec.to_json()}, default=str) for rec in records])
    return path


def put_aside(url: str, records: list[RunRecord], reason: str, path: Path | None = None) -> Path:
    """Keep `records` that `url` refused in the set-aside file (a tracked run is never dropped)."""
    target = set_aside_path(path)
    with _locked(Path(path or spool_path())):
        _append_lines(target, [json.dumps({"db": redact(url), "run": rec.to_json(), "reason": reason,
                                           "set_aside_at": now_iso()}, default=str) for rec in records])
    return target


def _read(path: Path) -> list[tuple[str, Any]]:
    """(line, parsed entry or None when the line is not JSON) for each non-empty line."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            out.append((line, json.loads(line)))
        except json.JSONDecodeError:
            out.append((line, None))
    return out


def _db_of(entry: Any) -> str | None:
    return entry.get("db") if isinstance(entry, dict) and isinstance(entry.get("db"), str) else None


def pending(url: str | None = None, path: Path | None = None) -> list[dict]:
    """Spooled entries (for `url` only when given; lines that are not JSON objects are left out)."""
    return [e for _, e in _read(Path(path or spool_path()))
            if isinstance(e, dict) and (url is None or _db_of(e) == redact(url))]


def set_aside(url: str | None = None, path: Path | None = None) -> list[dict]:
    """Set-aside entries, with their `reason` (for `url` only when given)."""
    return [e if isinstance(e, dict) else {"line": line, "reason": "not valid JSON"}
            for line, e in _read(set_aside_path(path)) if url is None or _db_of(e) == redact(url)]


@frozen
class SpoolStatus:
    """What `trainplan runs` says about the spool: counts for this database and for all."""

    spooled: int
    spooled_other: int
    set_aside: int
    set_aside_other: int
    spool: str
    set_aside_file: str


def status(url: str, path: Path | None = None) -> SpoolStatus:
    path = Path(path or spool_path())
    mine, aside = pending(url, path), set_aside(url, path)
    return SpoolStatus(spooled=len(mine), spooled_other=len(pending(None, path)) - len(mine), set_aside=len(aside),
                       set_aside_other=len(set_aside(None, path)) - len(aside), spool=str(path),
                       set_aside_file=str(set_aside_path(path)))


@frozen
class FlushResult:
    written: int = 0                  # entries now in the database (added or found there)
    kept: int = 0                     # left in the spool after a transient failure
    set_aside: tuple[str, ...] = ()   # one reason per entry moved to the set-aside file
    set_aside_file: str = ""


def _unusable_key(db: str) -> str | None:
    """Why a spool line's database key names no database (lines of older trainplans), else None."""
    if "://" not in db:
        return f"spooled for {db!r}, which is not a database URL, by an older trainplan"
    scheme, rest = db.split("://", 1)
    if not scheme.startswith("sqlite"):
        return None
    file = rest.removeprefix("/").split("?", 1)[0]
    if not file or file == ":memory:" or "mode=memory" in rest:
        return f"spooled for the in-memory database {db!r}: it no longer exists"
    if not file.startswith("file:") and not os.path.isabs(file):
        return f"spooled for the relative SQLite URL {db!r} by an older trainplan: the directory it meant is unknown"
    return None


def flush(url: str, write: Callable[[RunRecord], Any], transient: type[BaseException] | tuple = (),
          path: Path | None = None) -> FlushResult:
    """Hand the runs spooled for `url` to `write`, one by one (see the module docstring). `write`
    raises `transient` when the database went away (the rest waits) and any other exception when
    it refuses the entry (set aside)."""
    path = Path(path or spool_path())
    if not path.exists():
        return FlushResult()
    key = redact(url)
    with _locked(path):
        keep: list[str] = []
        aside: list[tuple[str, Any, str]] = []
        written = kept = 0
        stopped = False
        for line, entry in _read(path):
            db = _db_of(entry)
            if db is None or not isinstance(entry.get("run"), dict):
                aside.append((line, entry, "not a spooled run (a torn line from a crash?)"))
                continue
            unusable = _unusable_key(db)
            if unusable:
                aside.append((line, entry, unusable))
                continue
            if db != key:
                keep.append(line)
                continue
            if stopped:
                keep.append(line)
                kept += 1
                continue
            try:
                record = RunRecord.from_json(entry["run"], where="spooled run")
                write(record)
                written += 1
            except transient:
                keep.append(line)
                kept += 1
                stopped = True
            except Exception as exc:      # refused for good: set aside, the others go on
                text = str(exc).strip().splitlines()
                reason = text[0].removesuffix("; nothing was written") if text else type(exc).__name__
                aside.append((line, entry, reason))
        if not written and not aside:
            return FlushResult(kept=kept)
        target = set_aside_path(path)
        if aside:
            _append_lines(target, [json.dumps({**(entry if isinstance(entry, dict) else {"line": line}),
                                               "reason": reason, "set_aside_at": now_iso()}, default=str)
                                   for line, entry, reason in aside])
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line in keep), encoding="utf-8")
        os.replace(tmp, path)
        return FlushResult(written=written, kept=kept, set_aside=tuple(r for _, _, r in aside),
                           set_aside_file=str(target))
