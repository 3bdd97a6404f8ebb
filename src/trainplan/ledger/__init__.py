"""The ledger: measured training runs in a database (SQLite by default, any SQLAlchemy URL for
teams), with the estimate trainplan made for each setup at record time, so that residuals are
exact and reproducible. Calibration (trainplan.ledger.calibration) fits corrections from it.

Modules (SQLAlchemy and Alembic are imported only by the ones that need them):
- paths: the data directory, the default database URL, the spool and calibration files (stdlib)
- records: RunRecord, validation, the natural key (fingerprint), building records (stdlib)
- schema: the `runs` table; migrations/: its Alembic history (upgrade head on first use)
- store: engines, migrations, inserts that skip duplicates (and update notes), queries that report
  unreadable rows instead of failing
- failures: which database failures are transient (spooled) and which are errors
- spool: a JSONL file of runs whose database could not be reached, flushed one by one on the next
  connection; entries that can never be written are set aside (spool-set-aside.jsonl)
- plausibility: measurements against the GPU (capacity, device vs reserved, tokens/s vs peak)
- capture: records from setup flags (estimated as `trainplan estimate` does), cases, saving
- recorded: runs of the very setup asked about (read-only, stdlib sqlite3), which prove that it fits
- calibration, calibration_fit: the corrections fitted from the runs, one file per ledger
"""
