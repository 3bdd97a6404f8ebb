"""Runs that could not reach their database wait in a JSONL file in the data directory and are
written on the next successful connection to that database.

Each line: {"db": <redacted URL>, "run": <RunRecord JSON>}. Appends and flushes hold an exclusive
lock on the file (fcntl, where available), so concurrent recorders do not interleave lines. A line
is removed only after its run is committed (or found to be there already).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Callable, Iterator

from trainplan.ledger.paths import redact, spool_path
from trainplan.ledger.records import RunRecord


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


def append(url: str, records: list[RunRecord], path: Path | None = None) -> Path:
    """Add `records` for database `url` to the spool; returns the spool's path."""
    path = Path(path or spool_path())
    with _locked(path):
        with open(path, "a", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps({"db": redact(url), "run": rec.to_json()}, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
    return path


def pending(url: str | None = None, path: Path | None = None) -> list[dict]:
    """Spooled entries (for `url` only when given)."""
    path = Path(path or spool_path())
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue                      # a torn line from a crash: skipped, kept out of the ledger
        if url is None or entry.get("db") == redact(url):
            entries.append(entry)
    return entries


def flush(url: str, write: Callable[[list[RunRecord]], int], path: Path | None = None) -> int:
    """Hand the runs spooled for `url` to `write` (which stores them and returns how many it added),
    then drop them from the spool; returns `write`'s count."""
    path = Path(path or spool_path())
    if not path.exists():
        return 0
    with _locked(path):
        lines = path.read_text(encoding="utf-8").splitlines()
        mine, rest = [], []
        for line in lines:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            (mine if entry.get("db") == redact(url) else rest).append((line, entry))
        if not mine:
            return 0
        records = []
        for _line, entry in mine:
            try:
                records.append(RunRecord.from_json(entry["run"]))
            except Exception:             # an invalid spooled run must not block the others
                continue
        added = write(records)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(line + "\n" for line, _ in rest), encoding="utf-8")
        os.replace(tmp, path)
        return added
